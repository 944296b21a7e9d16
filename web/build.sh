#!/usr/bin/env bash
# Builds the page into OUT (make calls it when web/ sources change):
#   web/build.sh OUT
# `npm ci` runs first when node_modules is missing or older than the lock file,
# so the packages are exactly the committed lock's. The Node.js version is
# checked against package.json's engines field first, with a message that says
# what to install.
# Without Node.js and npm it says so, leaves OUT empty and writes no stamp, so lode
# is built without the page (lode ui says so) and the next make tries again.
# With them, it writes OUT/.stamp last, which make uses as the page's target.
set -euo pipefail
out=$(realpath -m "$1")
cd "$(dirname "$0")"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "web/build.sh: Node.js and npm are not installed: lode is built without the page of lode ui (make setup installs them)" >&2
    rm -rf "$out"
    mkdir -p "$out"
    exit 0
fi
need=$(sed -nE 's/.*"node": ">=([0-9.]+)".*/\1/p' package.json)
have=$(node -p 'process.versions.node')
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
    echo "web/build.sh: Node.js $have is older than the $need the page needs (see README.md)" >&2
    exit 1
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
fi
npx tsc --noEmit
npx vite build --logLevel warn --emptyOutDir --outDir "$out"
touch "$out/.stamp"
