#!/usr/bin/env bash
# Build (or find in the cache) the programs the local test environment runs.
#
#   tests/env/build-tools.sh [k8s|etcd|kwok|versitygw|kubelet]...   (default: the first four)
#   tests/env/build-tools.sh --dir TOOL     prints the tool's cache directory
#
# Each tool family is its own Go module under tests/env/tools/<name>/ with a
# committed go.mod and go.sum, so that minimal version selection never mixes the
# dependencies of one family into another. The binaries go to
#   ${LODE_CACHE:-$HOME/.cache/lodestore}/bin/<tool>-<version>/
# outside the work tree; a directory holding a ".complete" stamp and every
# binary is reused as is, so a warm run takes a fraction of a second (it reads
# the go.mod files and looks at the cache). A cold build of everything
# takes tens of minutes on two cores (docs/testing.md has the measured figures),
# so builds run under `nice` and one at a time (a lock serialises concurrent
# callers). Each build logs to <cache>/logs/build-<tool>-<version>.log.
# The kubelet, which only the real nodes need (real-nodes.sh), is built from the k8s
# module too, after the control plane, so Go's build cache already holds most of it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${LODE_CACHE:-$HOME/.cache/lodestore}

# Go lives in /usr/local/go on our machines, not always on PATH.
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
	PATH=$PATH:/usr/local/go/bin
fi
command -v go >/dev/null || { echo "build-tools: Go is needed (go1.26 with the module proxy)" >&2; exit 1; }
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
export GOFLAGS="-trimpath -buildvcs=false -mod=readonly"

# The module whose version names a tool's cache directory.
module_of() {
	case $1 in
	k8s | kubelet) echo k8s.io/kubernetes ;;
	etcd) echo go.etcd.io/etcd/server/v3 ;;
	kwok) echo sigs.k8s.io/kwok ;;
	versitygw) echo github.com/versity/versitygw ;;
	*) return 1 ;;
	esac
}

# The Go module directory under tools/ a tool is built in.
module_dir_of() {
	case $1 in
	kubelet) echo k8s ;;
	*) echo "$1" ;;
	esac
}

# The packages to build: full import paths, listed in the module's tool
# directives (or, for etcd, the wrapper's own main package).
packages_of() {
	case $1 in
	k8s) echo k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kubectl ;;
	kubelet) echo k8s.io/kubernetes/cmd/kubelet ;;
	etcd) echo lodestore.invalid/envtools/etcd ;;
	kwok) echo sigs.k8s.io/kwok/cmd/kwok ;;
	versitygw) echo github.com/versity/versitygw/cmd/versitygw ;;
	esac
}

# The names the binaries get; build_one checks they all exist before stamping.
binaries_of() {
	case $1 in
	k8s) echo kube-apiserver kube-controller-manager kubectl ;;
	kubelet) echo kubelet ;;
	etcd) echo etcd ;;
	kwok) echo kwok ;;
	versitygw) echo versitygw ;;
	esac
}

# Prints the version of the tool's pinned module, read from its go.mod (a
# direct requirement, "MODULE VERSION" alone or after "require"); reading the
# file rather than asking `go list` keeps a warm run fast.
tool_version() {
	local v
	v=$(awk -v m="$(module_of "$1")" '$1 == "require" { $1 = ""; $0 = $0 } $1 == m { print $2; exit }' \
		"$here/tools/$(module_dir_of "$1")/go.mod")
	[[ -n $v ]] || {
		echo "build-tools: no requirement of $(module_of "$1") in tools/$1/go.mod" >&2
		return 1
	}
	echo "$v"
}

# Prints the cache directory of a tool, without building.
tool_dir() {
	echo "$cache/bin/$1-$(tool_version "$1")"
}

ldflags_of() {
	local tool=$1 version=$2 flags="-s -w"
	if [[ $tool == k8s || $tool == kubelet ]]; then
		# The names come from kubernetes' hack/lib/version.sh. Without them
		# /version reports v0.0.0-master. The build date is the release's
		# time on the module proxy, so two builds of one version agree.
		local when major minor rest p
		when=$(cd "$here/tools/k8s" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
		major=${version#v}
		major=${major%%.*}
		rest=${version#v*.}
		minor=${rest%%.*}
		for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			flags+=" -X $p.gitVersion=$version -X $p.gitMajor=$major -X $p.gitMinor=$minor"
			flags+=" -X $p.gitTreeState=clean -X $p.gitCommit=unknown -X $p.buildDate=$when"
		done
	fi
	echo "$flags"
}

cached() { # TOOL DIR
	local b
	[[ -f $2/.complete ]] || return 1
	for b in $(binaries_of "$1"); do
		[[ -x $2/$b ]] || return 1
	done
}

build_one() {
	local tool=$1 version dir log tmp start b
	version=$(tool_version "$tool")
	dir="$cache/bin/$tool-$version"
	if cached "$tool" "$dir"; then
		echo "build-tools: $tool $version cached in $dir"
		return 0
	fi
	mkdir -p "$cache/logs" "$cache/bin"
	log="$cache/logs/build-$tool-$version.log"
	tmp=$(mktemp -d "$cache/bin/.$tool-$version.XXXXXX")
	echo "build-tools: building $tool $version (log: $log)"
	start=$(date +%s)
	# shellcheck disable=SC2046 # packages_of is a word list
	if ! (cd "$here/tools/$(module_dir_of "$tool")" && nice -n 10 go build -v -ldflags "$(ldflags_of "$tool" "$version")" \
		-o "$tmp/" $(packages_of "$tool")) >"$log" 2>&1; then
		rm -rf "$tmp"
		echo "build-tools: building $tool $version failed; last lines of $log:" >&2
		tail -n 20 "$log" >&2
		return 1
	fi
	for b in $(binaries_of "$tool"); do
		if [[ ! -x $tmp/$b ]]; then
			echo "build-tools: the $tool build produced no $b (see $log)" >&2
			rm -rf "$tmp"
			return 1
		fi
	done
	echo "$(($(date +%s) - start))" >"$tmp/.build-seconds"
	touch "$tmp/.complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	echo "build-tools: built $tool $version in $(cat "$dir/.build-seconds") s into $dir"
}

main() {
	if [[ ${1:-} == --dir ]]; then
		module_of "${2:-}" >/dev/null || { echo "build-tools: unknown tool '${2:-}'" >&2; exit 2; }
		tool_dir "$2"
		return
	fi
	local tools=("$@") t
	[[ ${#tools[@]} -gt 0 ]] || tools=(k8s etcd kwok versitygw)
	for t in "${tools[@]}"; do
		module_of "$t" >/dev/null || { echo "build-tools: unknown tool '$t'" >&2; exit 2; }
	done
	mkdir -p "$cache"
	# One builder at a time: a second caller waits, then finds the stamps. The
	# lock (shared with other tools that use this cache) is taken only when
	# something is missing, so a warm run never waits behind someone's build.
	local missing=0
	for t in "${tools[@]}"; do
		cached "$t" "$(tool_dir "$t")" || missing=1
	done
	if [[ $missing == 1 ]]; then
		exec 9>"$cache/.build.lock"
		flock 9
	fi
	for t in "${tools[@]}"; do
		build_one "$t"
	done
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
