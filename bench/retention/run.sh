#!/usr/bin/env bash
# Retention benchmark (docs/benchmarks.md, "Retention"):
#   1. ret_evaluate() on 10^4, 10^5 and 10^6 snapshots, each in its own process, so
#      its peak RSS is its own: median of 5 runs, CPU time and wall clock, shuffled
#      input and input in storage order, and the engine's own memory.
#   2. The same 1,000-snapshot history (one a day for about three years) through
#      `restic forget --dry-run` and `lode forget`: restic's repository open time
#      (`restic cat config`: key derivation and config) is measured apart, and the
#      ratios are printed.
# Environment: BUILD (default build; the unsanitised build is what to measure),
# RUNS (timed runs of each command in part 2, default 5).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -f "$BUILD/liblode.a" ] && [ -x "$BUILD/lode" ] || {
    echo "bench/retention: build first (make)" >&2
    exit 2
}
# Copies, so a rebuild in the shared tree during the run cannot swap them.
cp "$BUILD/liblode.a" "$BUILD/lode" "$work/"
LODE=$work/lode
# shellcheck disable=SC2046
cc -std=c17 -O2 -g -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinternal -o "$work/bench" \
    bench/retention/bench_retention.c "$work/liblode.a" $(pkg-config --libs jansson) -lm

echo "# retention benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# lode $(git describe --always --dirty 2>/dev/null), $(restic version 2>/dev/null || echo 'restic missing')"
echo
echo "## ret_evaluate (Europe/Kyiv; keepLast 3, keepWithin 7d, keepDaily 7, keepWeekly 4, keepMonthly 6)"
for n in 10000 100000 1000000; do
    "$work/bench" "$n"
done

# ---- part 2: the same 1,000 snapshots through restic and lode ----
command -v restic >/dev/null || {
    echo "bench/retention: restic is not installed (make setup)" >&2
    exit 2
}
"$work/bench" 1000 "$work/snapshots.json" 86400 >"$work/engine1000.txt"
printf '%s\n' 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: bench}' \
    'spec:' '  repository: main' '  paths: [/data]' \
    '  retention: {keepLast: 3, keepWithin: 7d, keepDaily: 7, keepWeekly: 4, keepMonthly: 6}' \
    >"$work/policy.yaml"
flags="--keep-last 3 --keep-within 7d --keep-daily 7 --keep-weekly 4 --keep-monthly 6"

export RESTIC_REPOSITORY=$work/repo RESTIC_PASSWORD_FILE=$work/pw RESTIC_CACHE_DIR=$work/cache
echo bench >"$work/pw"
mkdir "$work/data" && echo x >"$work/data/f"
restic init -q >/dev/null
TZ=UTC restic backup -q --host template --time "2000-01-01 00:00:00" "$work/data" >/dev/null
restic cat masterkey >"$work/mk.json"
restic cat snapshot "$(restic snapshots --json | jq -r '.[0].id')" >"$work/template.json"
rm "$work/repo/snapshots/"* # only the bench history: a forget run reads every snapshot file
# shellcheck disable=SC2046
cc -std=c17 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinternal -o "$work/diffrestic" \
    tests/diff/restic/diffrestic.c "$work/liblode.a" $(pkg-config --cflags --libs jansson openssl) -lm
# restic is given the non-suspicious snapshots (it has no such notion), times in UTC.
jq -r '.[] | select(.suspicious | not) | ["bench", .time] | @tsv' "$work/snapshots.json" |
    "$work/diffrestic" forge "$work/mk.json" "$work/template.json" "$work/repo" 2>/dev/null

# measure K CMD...: "WALL_MS CPU_MS" per run of CMD, the medians of RUNS timings of K
# runs each, after one warm-up. CPU is user + system time, which a busy shared machine
# disturbs less than the wall clock; K > 1 lifts a short command above the 10 ms
# resolution of /usr/bin/time.
measure() {
    local k=$1 i walls=() cpus=()
    shift
    "$@" >/dev/null
    for ((i = 0; i < RUNS; i++)); do
        /usr/bin/time -f '%e %U %S' -o "$work/time" \
            bash -c 'for ((j = 0; j < $0; j++)); do "$@" >/dev/null || exit 1; done' "$k" "$@" || {
            echo "bench/retention: failed: $*" >&2
            exit 1
        }
        read -r e u s <"$work/time"
        walls+=("$e")
        cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}')")
    done
    printf '%s %s\n' \
        "$(printf '%s\n' "${walls[@]}" | sort -g | sed -n "$(((RUNS + 1) / 2))p")" \
        "$(printf '%s\n' "${cpus[@]}" | sort -g | sed -n "$(((RUNS + 1) / 2))p")" |
        awk -v k="$k" '{printf "%.1f %.1f", $1 * 1000 / k, $2 * 1000 / k}'
}
# shellcheck disable=SC2086
read -r rf_wall rf_cpu <<<"$(TZ=UTC measure 1 restic --no-cache forget --dry-run --json --group-by host $flags)"
read -r ro_wall ro_cpu <<<"$(measure 1 restic --no-cache cat config)"
read -r lf_wall lf_cpu <<<"$(measure 50 "$LODE" forget --policy "$work/policy.yaml" --snapshots "$work/snapshots.json" --output json)"
[ -n "$rf_cpu" ] && [ -n "$ro_cpu" ] && [ -n "$lf_cpu" ] || exit 1
engine_wall=$(sed -n 's/.* shuffled_wall_ms=\([0-9.]*\).*/\1/p' "$work/engine1000.txt")
engine_cpu=$(sed -n 's/.* shuffled_cpu_ms=\([0-9.]*\).*/\1/p' "$work/engine1000.txt")
# shellcheck disable=SC2086
kept_restic=$(TZ=UTC restic --no-cache forget --dry-run --json --group-by host $flags | jq '.[0].keep | length')
kept_lode=$("$LODE" forget --policy "$work/policy.yaml" --snapshots "$work/snapshots.json" --output json |
    jq '[.keep[] | select(.reasons | index("suspicious") | not)] | length')

echo
echo "## 1,000 snapshots, one a day: restic forget --dry-run vs lode forget (medians of $RUNS, ms)"
echo "                          wall    cpu"
printf 'restic forget --dry-run %6s %6s\n' "$rf_wall" "$rf_cpu"
printf 'restic cat config       %6s %6s   (repository open: key derivation, config)\n' "$ro_wall" "$ro_cpu"
printf 'lode forget             %6s %6s   (whole command: start, policy, JSON, output)\n' "$lf_wall" "$lf_cpu"
printf 'ret_evaluate           %7s %7s   (the engine alone)\n' "$engine_wall" "$engine_cpu"
echo "kept (not suspicious): restic=$kept_restic lode=$kept_lode"
awk -v rf="$rf_cpu" -v ro="$ro_cpu" -v lf="$lf_cpu" -v e="$engine_cpu" 'BEGIN {
    printf "ratio, CPU: restic forget / lode forget                 = %.0f\n", rf / lf
    printf "ratio, CPU: (restic forget - open) / lode forget        = %.0f\n", (rf - ro) / lf
    printf "ratio, CPU: (restic forget - open) / ret_evaluate       = %.0f\n", (rf - ro) / e
}'
