#!/usr/bin/env bash
# Build (or find in the cache) restic at the version pinned in
# bench/tools/restic/go.mod, the peer of bench/backup and bench/storage.
#
#   bench/tools/build-restic.sh          builds if needed, prints the binary's path
#   bench/tools/build-restic.sh --dir    prints the cache directory, without building
#
# Like tests/env/build-tools.sh: a wrapper module with a committed go.mod and
# go.sum (GOFLAGS=-mod=readonly, so a build never changes them), the binary in
# ${LODE_CACHE:-$HOME/.cache/lodestore}/bin/restic-<version>/ outside the work
# tree, reused once it holds a ".complete" stamp. A cold build takes about two
# minutes on two cores (it runs under nice); it takes its own lock, not the test
# tools', so it never waits behind a Kubernetes build.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${LODE_CACHE:-$HOME/.cache/lodestore}
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
	PATH=$PATH:/usr/local/go/bin
fi
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
export GOFLAGS="-trimpath -buildvcs=false -mod=readonly"

version=$(awk '$1 == "github.com/restic/restic" { print $2; exit }' "$here/restic/go.mod")
[[ -n $version ]] || { echo "build-restic: no restic requirement in $here/restic/go.mod" >&2; exit 1; }
dir="$cache/bin/restic-$version"
if [[ ${1:-} == --dir ]]; then
	echo "$dir"
	exit 0
fi
if [[ -f $dir/.complete && -x $dir/restic ]]; then
	echo "$dir/restic"
	exit 0
fi
command -v go >/dev/null || { echo "build-restic: Go is needed (go1.26 with the module proxy)" >&2; exit 1; }
mkdir -p "$cache/logs" "$cache/bin"
exec 9>"$cache/.build-restic.lock"
flock 9
if [[ -f $dir/.complete && -x $dir/restic ]]; then
	echo "$dir/restic"
	exit 0
fi
log="$cache/logs/build-restic-$version.log"
tmp=$(mktemp -d "$cache/bin/.restic-$version.XXXXXX")
echo "build-restic: building restic $version (log: $log)" >&2
start=$(date +%s)
# restic's own build sets main.version the same way (its build.go).
if ! (cd "$here/restic" && nice -n 10 go build -v -ldflags "-s -w -X main.version=${version#v}" \
	-o "$tmp/restic" github.com/restic/restic/cmd/restic) >"$log" 2>&1; then
	rm -rf "$tmp"
	echo "build-restic: the build failed; last lines of $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
fi
echo "$(($(date +%s) - start))" >"$tmp/.build-seconds"
touch "$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
echo "build-restic: built restic $version in $(cat "$dir/.build-seconds") s into $dir" >&2
echo "$dir/restic"
