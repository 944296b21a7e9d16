#!/usr/bin/env bash
# The image cannot be built on this machine (no container engine, no registry), so this
# checks what can be checked from here: that the runtime stage of the Dockerfile installs
# the Debian package of every shared library the two binaries load directly (libc6 is
# in the base image), runs as a non-root user, and carries tzdata and CA certificates.
source "$(dirname "$0")/lib.sh"
cd "$LODE_ROOT"
# The release build (make all), not the sanitised one the other CLI tests may run.
BUILD_DIR=${LODE_RELEASE_BUILD:-build}
# The runtime stage: from the last FROM on.
runtime=$(awk '/^FROM / {rt = ""} {rt = rt $0 "\n"} END {printf "%s", rt}' Dockerfile)

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
# Pinned bases (docs/security.md, "The image's bases"): a Debian point release, never a
# floating name such as debian:bookworm or latest; a digest may follow.
froms=$(awk '/^FROM / {print $2}' Dockerfile)
check_eq "the Dockerfile has two stages" "$(wc -l <<<"$froms")" 2
bad=$(grep -Ev '^debian:12\.[0-9]+(-slim)?(@sha256:[0-9a-f]{64})?$' <<<"$froms")
check_eq "every base is pinned to a Debian point release" "$bad" ""
check_eq "both stages use the same release" "$(sed -E 's/^debian:(12\.[0-9]+).*/\1/' <<<"$froms" | sort -u | wc -l)" 1
finish
