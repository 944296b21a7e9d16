#!/usr/bin/env bash
# Build (or find in the cache) a command the chart test runs: helm, or promtool (which
# checks the chart's alert rules as Prometheus would load them).
#
#   tests/chart/build-tool.sh TOOL          builds if needed; prints the binary's path last
#   tests/chart/build-tool.sh TOOL --dir    prints the cache directory, without building
#
# Each tool is its own Go module under tests/chart/tools/TOOL/ (committed go.mod and
# go.sum, a `tool` directive), built like the environment's tools in
# tests/env/build-tools.sh: CGO_ENABLED=0, -trimpath, -ldflags "-s -w", under nice,
# into a fresh directory that becomes
#   ${LODE_CACHE:-$HOME/.cache/lodestore}/bin/TOOL-<version>/
# only once the binary is there. A directory with its ".complete" stamp is reused
# without asking Go anything, so a warm run takes a fraction of a second; a cold build
# takes minutes on two cores (docs/operator.md, "Testing the chart"). The lock is the
# one build-tools.sh takes, so these and the environment's tools never compile at the
# same time. The build logs to <cache>/logs/build-TOOL-<version>.log.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${LODE_CACHE:-$HOME/.cache/lodestore}
tool=${1:-}

# The module whose pinned version names the cache directory, and the package built.
case $tool in
helm) module=helm.sh/helm/v3 package=helm.sh/helm/v3/cmd/helm ;;
promtool) module=github.com/prometheus/prometheus package=github.com/prometheus/prometheus/cmd/promtool ;;
*)
	echo "usage: tests/chart/build-tool.sh helm|promtool [--dir]" >&2
	exit 2
	;;
esac
shift
mod=$here/tools/$tool

# The version pinned in the wrapper's go.mod (read from the file: a warm run never
# starts Go).
version=$(awk -v m="$module" '$1 == "require" { $1 = ""; $0 = $0 } $1 == m { print $2; exit }' "$mod/go.mod")
[[ -n $version ]] || {
	echo "build-tool: no requirement of $module in $mod/go.mod" >&2
	exit 1
}
dir=$cache/bin/$tool-$version

if [[ ${1:-} == --dir ]]; then
	echo "$dir"
	exit 0
fi
[[ $# -eq 0 ]] || {
	echo "usage: tests/chart/build-tool.sh helm|promtool [--dir]" >&2
	exit 2
}

cached() { [[ -f $dir/.complete && -x $dir/$tool ]]; }

if cached; then
	echo "build-tool: $tool $version cached in $dir" >&2
	echo "$dir/$tool"
	exit 0
fi

# Go lives in /usr/local/go on our machines, not always on PATH.
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
	PATH=$PATH:/usr/local/go/bin
fi
command -v go >/dev/null || {
	echo "build-tool: Go is needed (go1.26 with the module proxy; see the README)" >&2
	exit 1
}
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
export GOFLAGS="-trimpath -buildvcs=false -mod=readonly"

# The -X names each project's own release build sets, so that `TOOL --version` says
# what was built.
ldflags() {
	local flags="-s -w" kv minor n
	case $tool in
	helm)
		# From helm's Makefile: without them `helm version` says v3.x without the
		# patch level, and the Kubernetes version helm assumes for `helm template`
		# and `helm lint` (Capabilities.KubeVersion) stays at its built-in 1.20
		# instead of following the client-go it is built with (client-go v0.N.x
		# pairs with Kubernetes 1.N).
		kv=$(go list -m -f '{{.Version}}' k8s.io/client-go)
		kv=${kv#v0.}
		minor=${kv%%.*}
		flags+=" -X helm.sh/helm/v3/internal/version.version=$version"
		flags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
		for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
			flags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
		done
		;;
	promtool)
		# Prometheus 3.X.Y is published as the Go module version v0.3XX.Y; its
		# release build stamps the 3.X.Y through prometheus/common's version package.
		n=${version#v0.}
		minor=${n%%.*}
		flags+=" -X github.com/prometheus/common/version.Version=$((minor / 100)).$((minor % 100)).${n#*.}"
		flags+=" -X github.com/prometheus/common/version.Branch=release"
		;;
	esac
	echo "$flags"
}

mkdir -p "$cache/logs" "$cache/bin"
exec 9>"$cache/.build.lock"
flock 9
# Another caller may have built it while we waited for the lock.
if cached; then
	echo "build-tool: $tool $version cached in $dir" >&2
	echo "$dir/$tool"
	exit 0
fi

log=$cache/logs/build-$tool-$version.log
tmp=$(mktemp -d "$cache/bin/.$tool-$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "build-tool: building $tool $version (log: $log)" >&2
start=$(date +%s)
(
	cd "$mod"
	nice -n 10 go build -v -ldflags "$(ldflags)" -o "$tmp/$tool" "$package"
) >"$log" 2>&1 || {
	echo "build-tool: building $tool $version failed; last lines of $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
}
[[ -x $tmp/$tool ]] || {
	echo "build-tool: the build produced no $tool (see $log)" >&2
	exit 1
}
echo "$(($(date +%s) - start))" >"$tmp/.build-seconds"
touch "$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
echo "build-tool: built $tool $version in $(cat "$dir/.build-seconds") s into $dir" >&2
echo "$dir/$tool"
