#!/usr/bin/env bash
# Builds Lodestore's image from the Dockerfile without a container engine, or finds it
# in the cache, and prints the directory that holds its root file system:
#
#   tests/env/build-image.sh            build or find; prints the image directory
#   tests/env/build-image.sh --key      prints the cache key of the work tree, builds nothing
#   tests/env/build-image.sh --oci-archive
#                                       build or find; prints the path of the image as an
#                                       OCI archive (image.oci.tar in its directory, named
#                                       localhost/lodestore:<key>), what containerd imports
#
# How: Debian's buildah builds the Dockerfile with `--isolation chroot` (no daemon, no
# namespaces beyond a mount namespace), `--pull-never`. The Dockerfile's FROM names
# (pinned Debian point releases, debian:12.N and debian:12.N-slim) are one Debian 12 base
# made here with debootstrap (variant minbase, from the mirror this machine's apt uses),
# committed into buildah's local storage and tagged under every FROM name (tag_bases),
# so nothing is pulled from a registry.
#
# The cache, outside the work tree, in ${LODE_CACHE:-$HOME/.cache/lodestore}:
#   buildah/                 buildah's storage (overlay driver) and run directory
#   image/base-bookworm.id   the base image's id, once committed
#   image/lodestore-<key>/   rootfs/ (the image's files), config.json (the image's OCI
#                            config: user, entrypoint, env), version, .build-seconds,
#                            .complete (written last); image.oci.tar once asked for
# <key> is the SHA-256 of the build's inputs: the base image id, the version passed in,
# and the name, mode and content of every file of the build context (the files git
# tracks or would track, less .dockerignore's), the Dockerfile included. The same inputs
# give the same directory without running buildah at all; a changed input builds again,
# and buildah's layer cache (--layers) reuses the package-installing steps.
# The four most recently used image directories are kept, older ones are removed.
#
# The version passed in (--build-arg VERSION) is `git describe --tags --always --dirty`,
# what the Makefile computes; the build context has no .git.
#
# Needs root (buildah's chroot isolation mounts), buildah and debootstrap (make setup).
# A lock in the cache serialises two builders. Logs: <cache>/logs/build-image-<key>.log.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${LODE_CACHE:-$HOME/.cache/lodestore}
imgcache=$cache/image
driver=${LODE_BUILDAH_DRIVER:-overlay}
bah=(buildah --root "$cache/buildah/storage" --runroot "$cache/buildah/run" --storage-driver "$driver")

log() { printf '%s build-image: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# The files of the build context, NUL-separated, sorted: what git tracks or would
# track (untracked files not ignored count: a new source file is part of the build),
# that exists, less the .dockerignore patterns (directory prefixes).
context_files() {
	local ignore=()
	if [[ -f $root/.dockerignore ]]; then
		mapfile -t ignore < <(sed -e 's/#.*//' -e 's:/*$::' -e '/^[[:space:]]*$/d' "$root/.dockerignore")
	fi
	(cd "$root" && git ls-files -co --exclude-standard -z) | python3 -c '
import os, sys
ignore = sys.argv[1:]
names = sorted(set(n for n in sys.stdin.buffer.read().decode().split("\0") if n))
for n in names:
    if any(n == p or n.startswith(p + "/") for p in ignore):
        continue
    if os.path.lexists(n):
        sys.stdout.write(n + "\0")
' "${ignore[@]}"
}

version() {
	git -C "$root" describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev
}

# Prints the key of the current work tree for the given base image id.
input_key() { # BASE-ID
	(
		echo "lodestore-image-format 1"
		echo "base $1"
		echo "version $(version)"
		cd "$root"
		context_files | python3 -c '
import hashlib, os, stat, sys
for n in sys.stdin.buffer.read().decode().split("\0"):
    if not n:
        continue
    st = os.lstat(n)
    if stat.S_ISLNK(st.st_mode):
        digest = "link:" + os.readlink(n)
    else:
        with open(n, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    print(oct(st.st_mode & 0o777), digest, n)
'
	) | sha256sum | cut -c1-16
}

# The Debian mirror of this machine's apt sources (deb822 .sources or sources.list),
# or LODE_DEBIAN_MIRROR. debootstrap writes it into the base's sources.list, so the
# Dockerfile's apt-get uses the same mirror.
debian_mirror() {
	if [[ -n ${LODE_DEBIAN_MIRROR:-} ]]; then
		echo "$LODE_DEBIAN_MIRROR"
		return
	fi
	local m
	m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '
		/^URIs:/ { uri = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") { print uri; exit } }')
	[[ -n $m ]] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }')
	[[ -n $m ]] || die "no Debian bookworm mirror in /etc/apt/sources.list*; set LODE_DEBIAN_MIRROR"
	echo "$m"
}

# Prints the base image's id, making the base first if it is not in the storage.
base_image() {
	local id tmp start
	if [[ -f $imgcache/base-bookworm.id ]]; then
		id=$(cat "$imgcache/base-bookworm.id")
		if "${bah[@]}" inspect --type image "$id" >/dev/null 2>&1; then
			echo "$id"
			return
		fi
	fi
	command -v debootstrap >/dev/null || die "debootstrap is needed (make setup)"
	tmp=$(mktemp -d "$imgcache/.base.XXXXXX")
	start=$SECONDS
	log "making the Debian 12 base with debootstrap (log: $cache/logs/build-image-base.log)"
	if ! nice -n 10 debootstrap --variant=minbase bookworm "$tmp/rootfs" "$(debian_mirror)" \
		>"$cache/logs/build-image-base.log" 2>&1; then
		tail -n 20 "$cache/logs/build-image-base.log" >&2
		rm -rf "$tmp"
		die "debootstrap failed"
	fi
	# Downloaded packages and package lists are not part of an image (the Dockerfile
	# runs apt-get update itself).
	rm -rf "$tmp/rootfs/var/cache/apt/archives/"*.deb "$tmp/rootfs/var/lib/apt/lists/"*
	tar -C "$tmp/rootfs" --numeric-owner -cf "$tmp/base.tar" .
	local c
	c=$("${bah[@]}" from scratch)
	"${bah[@]}" add "$c" "$tmp/base.tar" / >/dev/null
	"${bah[@]}" config --cmd /bin/bash \
		--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
	id=$("${bah[@]}" commit -q "$c" docker.io/library/debian:bookworm)
	"${bah[@]}" rm "$c" >/dev/null
	"${bah[@]}" tag docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim
	rm -rf "$tmp"
	echo "$id" >"$imgcache/base-bookworm.id"
	log "base image $id made in $((SECONDS - start)) s"
	echo "$id"
}

# The Dockerfile pins its bases by Debian point release (debian:12.N, debian:12.N-slim;
# docs/security.md, "The image's bases"): the local base stands in under every name its
# FROM lines give, so --pull-never finds them.
tag_bases() { # BASE-ID
	local from
	for from in $(awk 'toupper($1) == "FROM" { print $2 }' "$root/Dockerfile"); do
		"${bah[@]}" tag "$1" "docker.io/library/${from%@*}" >/dev/null
	done
}

build() { # KEY DIR
	local key=$1 dir=$2 tmp start ctx c m v
	v=$(version)
	tmp=$(mktemp -d "$imgcache/.lodestore-$key.XXXXXX")
	start=$SECONDS
	local blog=$cache/logs/build-image-$key.log
	log "building lodestore $v (key $key; log: $blog)"
	# The context is a copy of exactly the files the key covers.
	ctx=$tmp/context
	mkdir -p "$ctx"
	(cd "$root" && context_files | tar --null -T - -cf -) | tar -C "$ctx" -xf -
	if ! nice -n 10 "${bah[@]}" bud --isolation chroot --pull-never --layers \
		--build-arg VERSION="$v" -f "$ctx/Dockerfile" -t "localhost/lodestore:$key" "$ctx" \
		>"$blog" 2>&1; then
		tail -n 30 "$blog" >&2
		rm -rf "$tmp"
		die "buildah bud failed"
	fi
	rm -rf "$ctx"
	"${bah[@]}" inspect --type image "localhost/lodestore:$key" |
		python3 -c 'import json, sys; json.dump(json.load(sys.stdin)["OCIv1"]["config"], sys.stdout, indent=1)' \
			>"$tmp/config.json"
	c=$("${bah[@]}" from --pull-never "localhost/lodestore:$key")
	m=$("${bah[@]}" mount "$c")
	cp -a "$m" "$tmp/rootfs"
	"${bah[@]}" umount "$c" >/dev/null
	"${bah[@]}" rm "$c" >/dev/null
	echo "$v" >"$tmp/version"
	echo "$((SECONDS - start))" >"$tmp/.build-seconds"
	touch "$tmp/.complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	log "built in $(cat "$dir/.build-seconds") s into $dir"
}

# Keeps the four most recently used image directories (and their tags in buildah's
# storage); removes the others and the layers nothing uses any more.
prune() {
	local old d
	mapfile -t old < <(ls -1dt "$imgcache"/lodestore-*/ 2>/dev/null | tail -n +5)
	[[ ${#old[@]} -gt 0 ]] || return 0
	for d in "${old[@]}"; do
		d=${d%/}
		"${bah[@]}" rmi "localhost/lodestore:${d##*/lodestore-}" >/dev/null 2>&1 || true
		rm -rf "$d"
		log "removed the old image $d"
	done
}

main() {
	command -v buildah >/dev/null || die "buildah is needed (make setup)"
	[[ $(id -u) == 0 ]] || die "buildah's chroot isolation needs root here"
	mkdir -p "$imgcache" "$cache/logs"
	local base key dir
	if [[ ${1:-} == --key ]]; then
		[[ -f $imgcache/base-bookworm.id ]] || die "no base image yet"
		input_key "$(cat "$imgcache/base-bookworm.id")"
		return
	fi
	exec 8>"$imgcache/.lock"
	flock 8
	base=$(base_image)
	key=$(input_key "$base")
	dir=$imgcache/lodestore-$key
	if [[ -f $dir/.complete && -d $dir/rootfs ]]; then
		touch "$dir"
		log "lodestore $(cat "$dir/version") cached in $dir"
	else
		tag_bases "$base"
		build "$key" "$dir"
		prune
	fi
	if [[ ${1:-} == --oci-archive ]]; then
		# Written beside the image, under the lock; a partial archive never has the name.
		if [[ ! -s $dir/image.oci.tar ]]; then
			"${bah[@]}" push -q "localhost/lodestore:$key" \
				"oci-archive:$dir/.image.oci.tar:localhost/lodestore:$key" >&2
			mv "$dir/.image.oci.tar" "$dir/image.oci.tar"
		fi
		echo "$dir/image.oci.tar"
		return
	fi
	echo "$dir"
}

main "$@"
