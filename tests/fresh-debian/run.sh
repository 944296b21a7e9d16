#!/usr/bin/env bash
# The README's first command on a freshly installed Debian 12, for real: a new root made
# by debootstrap (minbase, plus git and make), the Go toolchain the README asks for, a
# clean clone of this repository, then, chrooted, as a new user would:
#
#   make all          must stop at once with one line saying `make setup` (no pkg-config yet)
#   make setup all    must install the packages and build lode at the first try
#   build/lode validate docs/examples/etc-and-home.yaml   must say "valid"
#   make setup all    again: nothing to install, nothing to rebuild
#
#   tests/fresh-debian/run.sh [COMMIT]     (default HEAD; run as root)
#
# LODE_FRESH_GOALS=test runs `make setup test` instead of `make setup all` (with
# LODE_E2E=0: the end-to-end phase needs the local control plane, whose cold build
# takes tens of minutes more; docs/testing.md).
#
# Not part of `make test` nor .ci/run: it downloads a Debian base system (about 100 MB
# from LODE_DEBIAN_MIRROR, default http://deb.debian.org/debian) and the packages setup
# installs, and takes minutes (docs/testing.md, "A fresh Debian 12"). It needs root (for
# debootstrap and chroot) and Debian's debootstrap package. The Go toolchain is copied
# from this machine's (`go env GOROOT`) into the new root's /usr/local/go, as the README
# tells a user to unpack it; LODE_FRESH_GO=0 leaves Go out (setup must then warn).
# The root is made under LODE_FRESH_DIR (default /var/tmp) and removed at the end
# unless LODE_FRESH_KEEP=1. Prints "N passed, M failed" and the measured times.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
commit=${1:-HEAD}
mirror=${LODE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
with_go=${LODE_FRESH_GO:-1}
goals=${LODE_FRESH_GOALS:-all}
passed=0
failed=0

pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() {
	failed=$((failed + 1))
	echo "FAIL $1"
	shift
	[[ $# -gt 0 ]] && printf '%s\n' "$@" | sed 's/^/     /'
}
finish() {
	echo "fresh-debian: $passed passed, $failed failed"
	[[ $failed -eq 0 ]]
}

[[ $(id -u) -eq 0 ]] || { echo "fresh-debian: run as root (debootstrap and chroot need it)" >&2; exit 2; }
command -v debootstrap >/dev/null || {
	echo "fresh-debian: needs Debian's debootstrap: apt-get install debootstrap" >&2
	exit 2
}
rev=$(git -C "$ROOT" rev-parse --verify "$commit^{commit}") || exit 2
goroot=
if [[ $with_go == 1 ]]; then
	go=$(command -v go || echo /usr/local/go/bin/go)
	goroot=$("$go" env GOROOT 2>/dev/null) || {
		echo "fresh-debian: no Go toolchain here to copy (LODE_FRESH_GO=0 leaves Go out)" >&2
		exit 2
	}
fi

mkdir -p "${LODE_FRESH_DIR:-/var/tmp}"
dir=$(mktemp -d "${LODE_FRESH_DIR:-/var/tmp}/lodestore-fresh.XXXXXX")
rootfs=$dir/root
mounted=()
cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null; done
	if [[ ${LODE_FRESH_KEEP:-0} == 1 ]]; then
		echo "fresh-debian: the root is kept in $rootfs"
	else
		rm -rf --one-file-system "$dir"
	fi
}
trap cleanup EXIT

now() { date +%s; }

# ---- the base system ----
t0=$(now)
if debootstrap --variant=minbase --include=git,make bookworm "$rootfs" "$mirror" >"$dir/debootstrap.log" 2>&1; then
	pass "debootstrap: Debian 12 minbase with git and make"
else
	fail "debootstrap: Debian 12 minbase with git and make" "$(tail -n 15 "$dir/debootstrap.log")"
	finish
	exit 1
fi
t_debootstrap=$(($(now) - t0))

for m in proc sys dev dev/pts; do
	case $m in
	proc) mount -t proc proc "$rootfs/proc" ;;
	sys) mount -t sysfs sys "$rootfs/sys" ;;
	dev | dev/pts) mount --bind "/$m" "$rootfs/$m" ;;
	esac && mounted+=("$rootfs/$m")
done
# What belongs to this machine's network rather than to Debian goes in with the root:
# its resolver, and the certificate authorities it added locally (a TLS-intercepting
# proxy's, where there is one; the root's ca-certificates package, which setup
# installs, takes them into its bundle). Node.js reads only its own CAs unless
# NODE_EXTRA_CA_CERTS names more, so that is passed on when this machine sets it.
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
	mkdir -p "$rootfs/usr/local/share/ca-certificates"
	cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
fi
node_ca=()
[[ -n ${NODE_EXTRA_CA_CERTS:-} ]] && node_ca=("NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS")
if [[ -n $goroot ]]; then
	mkdir -p "$rootfs/usr/local"
	cp -a "$goroot" "$rootfs/usr/local/go"
fi

# The clone comes from a bundle of the commit, so the new root needs no access to this
# machine's files; a clone of a bundle is as clean as one from a server.
git -C "$ROOT" bundle create "$rootfs/root/lodestore.bundle" --all >"$dir/bundle.log" 2>&1 || {
	fail "a bundle of the repository" "$(cat "$dir/bundle.log")"
	finish
	exit 1
}
# in_root SCRIPT: runs SCRIPT in the new root under bash -e, as root with a login PATH
# (no /usr/local/go/bin: setup must find Go where the README says to put it).
in_root() {
	chroot "$rootfs" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 "${node_ca[@]}" \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -ec "$1"
}
if in_root "git clone -q /root/lodestore.bundle /root/lodestore && cd /root/lodestore && git checkout -q $rev" \
	>"$dir/clone.log" 2>&1; then
	pass "a clean clone of $rev"
else
	fail "a clean clone of $rev" "$(cat "$dir/clone.log")"
	finish
	exit 1
fi

# ---- before setup: one clear line ----
out=$(in_root 'cd /root/lodestore && make all' 2>&1)
rc=$?
if [[ $rc -ne 0 && $(grep -c . <<<"$out") -le 2 && $out == *"make setup"* ]]; then
	pass "make all before setup stops with one line saying make setup"
	echo "     $out"
else
	fail "make all before setup stops with one line saying make setup" "exit $rc" "$(head -n 10 <<<"$out")"
fi

# ---- the README's first command ----
t0=$(now)
in_root "cd /root/lodestore && LODE_E2E=0 make setup $goals" >"$dir/setup-all.log" 2>&1
rc=$?
t_setup_all=$(($(now) - t0))
if [[ $rc -eq 0 ]]; then
	pass "make setup $goals at the first try (${t_setup_all} s)"
else
	fail "make setup $goals at the first try" "exit $rc" "$(tail -n 15 "$dir/setup-all.log")" \
		"the failed checks:" "$(grep -E -A4 '^not ok|^failed:' "$dir/setup-all.log" | head -n 60)"
fi
if [[ $goals == test ]]; then
	line=$(grep -E '^tests: [0-9]+ passed, [0-9]+ failed' "$dir/setup-all.log" | tail -n 1)
	[[ $line =~ ^tests:\ [1-9][0-9]*\ passed,\ 0\ failed ]] &&
		pass "make setup test: $line" || fail "make setup test: every test passed" "${line:-no closing line}"
fi
undefined=$(grep -c 'undefined reference' "$dir/setup-all.log")
[[ $undefined -eq 0 ]] && pass "no undefined reference at link" || fail "no undefined reference at link" "$undefined of them"
if [[ $with_go == 1 ]]; then
	grep -q '^setup: Go [0-9.]* at /usr/local/go/bin/go' "$dir/setup-all.log" &&
		pass "setup finds Go in /usr/local/go and says it is new enough" ||
		fail "setup finds Go in /usr/local/go and says it is new enough" "$(grep '^setup' "$dir/setup-all.log")"
else
	grep -q 'WARNING: Go .* is not installed' "$dir/setup-all.log" &&
		pass "setup says Go is missing and what that stops" ||
		fail "setup says Go is missing and what that stops" "$(grep '^setup' "$dir/setup-all.log")"
fi

out=$(in_root 'cd /root/lodestore && build/lode validate docs/examples/etc-and-home.yaml' 2>&1)
rc=$?
[[ $rc -eq 0 && $out == *": valid" ]] && pass "lode validate docs/examples/etc-and-home.yaml says valid" ||
	fail "lode validate docs/examples/etc-and-home.yaml says valid" "exit $rc" "$out"
[[ -x $rootfs/root/lodestore/build/lode-controller ]] && pass "build/lode-controller is built too" ||
	fail "build/lode-controller is built too"

t0=$(now)
out=$(in_root 'cd /root/lodestore && make setup all' 2>&1)
rc=$?
t_again=$(($(now) - t0))
if [[ $rc -eq 0 && $out == *"packages present"* && $out != *"cc "* ]]; then
	pass "make setup all again: nothing installed, nothing rebuilt (${t_again} s)"
else
	fail "make setup all again: nothing installed, nothing rebuilt" "exit $rc" "$(tail -n 5 <<<"$out")"
fi

echo "fresh-debian: debootstrap ${t_debootstrap} s; make setup $goals ${t_setup_all} s (packages and build); make setup all again ${t_again} s"
echo "fresh-debian: $(nproc) cores, mirror $mirror, commit $rev"
finish
