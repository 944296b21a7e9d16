#!/usr/bin/env bash
# The whole test command (make test), in four phases, with one closing line that sums
# them all:
#   1. unit and CLI tests against the ASan+UBSan build (tests/run.sh);
#   2. the unit tests again under valgrind, unsanitised (leaks and uninitialised reads);
#   3. every libFuzzer target over its committed seed corpus: a regression check that
#      each parser still takes its seeds without a crash (`make fuzz` is the search);
#   4. the end-to-end tests against the local control plane (tests/env: etcd,
#      kube-apiserver, kube-controller-manager, KWOK, versitygw on 127.0.0.1), brought
#      up and down around them. LODE_E2E=0 leaves this phase out and says so.
# Exit status: 0 only when every phase passed.
set -u
cd "$(dirname "$0")/.."
SAN_BUILD=${SAN_BUILD:-build/san-address,undefined}
total_p=0
total_f=0
log=$(mktemp)
# Every failing test's name and last lines, repeated at the very end: CI often shows only
# the tail of this run's output, and a failure printed 2,000 lines earlier is lost there.
export FAIL_DIGEST
FAIL_DIGEST=$(mktemp)
trap 'rm -f "$log" "$FAIL_DIGEST"' EXIT

phase() { # name cmd...
    local name=$1 line p f t0=$SECONDS
    shift
    echo "== $name"
    "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    echo "== $name: $((SECONDS - t0)) s"
    line=$(grep -E '^tests: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        p=0
        f=1
        echo "!! $name printed no count" >&2
        { echo "--- $name printed no count; its last lines:"; tail -n 12 "$log"; } >>"$FAIL_DIGEST"
    else
        p=$(sed -E 's/^tests: ([0-9]+) passed.*/\1/' <<<"$line")
        f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    total_p=$((total_p + p))
    total_f=$((total_f + f))
}

phase "unit and CLI tests (ASan, UBSan)" env BUILD="$SAN_BUILD" LODE="$SAN_BUILD/lode" tests/run.sh
phase "unit tests under valgrind" env VALGRIND=1 BUILD=build LODE=build/lode tests/run.sh
phase "fuzz targets over their seed corpora" tests/fuzz/check.sh build/fuzz
if [ "${LODE_E2E:-1}" = 0 ]; then
    echo "== end-to-end tests: left out (LODE_E2E=0); they are not counted as passed"
else
    phase "end-to-end tests against the local control plane" \
        tests/env/with-cluster.sh env E2E=1 BUILD="$SAN_BUILD" LODE="$SAN_BUILD/lode" \
        LODE_CONTROLLER="$SAN_BUILD/lode-controller" tests/run.sh
fi
echo
if [ -s "$FAIL_DIGEST" ]; then
    echo "== what failed"
    cat "$FAIL_DIGEST"
    echo
fi
echo "tests: $total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
