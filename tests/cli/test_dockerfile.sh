#!/usr/bin/env bash
# The image cannot be built on this machine (no container engine, no registry), so this
# checks what can be checked from here: that the runtime stage of the Dockerfile installs
# the Debian package of every shared library the two binaries load directly (libc6 is
# in the base image), runs as a non-root user, and carries tzdata and CA certificates.
source "$(dirname "$0")/lib.sh"
cd "$LODE_ROOT"
# The release build (make all), not the sanitised one the other CLI tests may run.
BUILD_DIR=${LODE_RELEASE_BUILD:-build}
runtime=$(awk '/^FROM debian:bookworm-slim/ {rt = 1} rt' Dockerfile)

for bin in "$BUILD_DIR/lode" "$BUILD_DIR/lode-controller"; do
    if [ ! -x "$bin" ]; then
        fail "$bin is built" "missing"
        continue
    fi
    for soname in $(readelf -d "$bin" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $5); print $5}'); do
        path=$(ldconfig -p | awk -v s="$soname" '$1 == s {print $NF; exit}')
        pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -n 1 | cut -d: -f1)
        [ -z "$pkg" ] && pkg=$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1)
        if [ "$pkg" = libc6 ]; then
            pass "$(basename "$bin"): $soname comes with the base image"
        elif grep -qw -- "$pkg" <<<"$runtime"; then
            pass "$(basename "$bin"): $soname ($pkg) is installed in the runtime stage"
        else
            fail "$(basename "$bin"): $soname" "package ${pkg:-unknown} is not in the Dockerfile's runtime stage"
        fi
    done
done
check_contains "the runtime stage has tzdata" "$runtime" "tzdata"
check_contains "the runtime stage has CA certificates" "$runtime" "ca-certificates"
check_contains "the image runs as a non-root user" "$runtime" "USER 65532:65532"
check_contains "both binaries are installed" "$(cat Dockerfile)" "build/lode-controller"
finish
