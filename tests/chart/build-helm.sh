#!/usr/bin/env bash
# Build (or find in the cache) the helm command the chart test runs.
#
#   tests/chart/build-helm.sh           builds if needed; prints the binary's path last
#   tests/chart/build-helm.sh --dir     prints the cache directory, without building
#
# Helm is its own Go module under tests/chart/tools/helm/ (committed go.mod and
# go.sum, a `tool` directive), built like the environment's tools in
# tests/env/build-tools.sh: CGO_ENABLED=0, -trimpath, -ldflags "-s -w", under
# nice, into a fresh directory that becomes
#   ${LODE_CACHE:-$HOME/.cache/lodestore}/bin/helm-<version>/
# only once the binary is there. A directory with its ".complete" stamp is
# reused without asking Go anything, so a warm run takes a fraction of a
# second; a cold build takes minutes on two cores (docs/operator.md, "Testing
# the chart"). The lock is the one build-tools.sh takes, so helm and the
# environment's tools never compile at the same time. The build logs to
# <cache>/logs/build-helm-<version>.log.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mod=$here/tools/helm
cache=${LODE_CACHE:-$HOME/.cache/lodestore}

# The version of helm.sh/helm/v3 pinned in the wrapper's go.mod (read from the
# file: a warm run never starts Go).
version=$(awk '$1 == "require" { $1 = ""; $0 = $0 } $1 == "helm.sh/helm/v3" { print $2; exit }' "$mod/go.mod")
[[ -n $version ]] || {
	echo "build-helm: no requirement of helm.sh/helm/v3 in $mod/go.mod" >&2
	exit 1
}
dir=$cache/bin/helm-$version

if [[ ${1:-} == --dir ]]; then
	echo "$dir"
	exit 0
fi
[[ $# -eq 0 ]] || {
	echo "usage: tests/chart/build-helm.sh [--dir]" >&2
	exit 2
}

cached() { [[ -f $dir/.complete && -x $dir/helm ]]; }

if cached; then
	echo "build-helm: helm $version cached in $dir" >&2
	echo "$dir/helm"
	exit 0
fi

# Go lives in /usr/local/go on our machines, not always on PATH.
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
	PATH=$PATH:/usr/local/go/bin
fi
command -v go >/dev/null || {
	echo "build-helm: Go is needed (go1.26 with the module proxy)" >&2
	exit 1
}
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
export GOFLAGS="-trimpath -buildvcs=false -mod=readonly"

mkdir -p "$cache/logs" "$cache/bin"
exec 9>"$cache/.build.lock"
flock 9
# Another caller may have built it while we waited for the lock.
if cached; then
	echo "build-helm: helm $version cached in $dir" >&2
	echo "$dir/helm"
	exit 0
fi

log=$cache/logs/build-helm-$version.log
tmp=$(mktemp -d "$cache/bin/.helm-$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "build-helm: building helm $version (log: $log)" >&2
start=$(date +%s)
(
	cd "$mod"
	# The names come from helm's Makefile: without them `helm version` says
	# v3.x without the patch level, and the Kubernetes version helm assumes
	# for `helm template` and `helm lint` (Capabilities.KubeVersion) stays at
	# its built-in 1.20 instead of following the client-go it is built with
	# (client-go v0.N.x pairs with Kubernetes 1.N).
	kv=$(go list -m -f '{{.Version}}' k8s.io/client-go)
	kv=${kv#v0.}
	minor=${kv%%.*}
	flags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
	flags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
	for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
		flags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
	done
	nice -n 10 go build -v -ldflags "$flags" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm
) >"$log" 2>&1 || {
	echo "build-helm: building helm $version failed; last lines of $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
}
[[ -x $tmp/helm ]] || {
	echo "build-helm: the build produced no helm (see $log)" >&2
	exit 1
}
echo "$(($(date +%s) - start))" >"$tmp/.build-seconds"
touch "$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
echo "build-helm: built helm $version in $(cat "$dir/.build-seconds") s into $dir" >&2
echo "$dir/helm"
