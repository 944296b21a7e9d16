#!/usr/bin/env bash
# Builds the page into OUT (make calls it when web/ sources change):
#   web/build.sh OUT
# `npm ci` runs first when node_modules is missing or older than the lock file,
# so the packages are exactly the committed lock's. The Node.js version is
# checked against package.json's engines field first, with a message that says
# what to install.
set -euo pipefail
out=$(realpath -m "$1")
cd "$(dirname "$0")"
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
