#!/usr/bin/env bash
# lode forget --snapshots on 10^6 snapshots (docs/benchmarks.md, "lode forget on a
# million snapshots"): the whole command with JSON and with text output (CPU time
# and peak RSS, medians of RUNS), and the two readers of the list alone, each in
# its own process: the jansson tree the command used before and the one-pass
# scanner it uses now. The history is bench_retention's (one snapshot every ten
# minutes, ids that begin with their time, 10% incomplete, 1% suspicious; in
# storage order), 60 MB of JSON; the policy is the user's page's rules plus
# keepWithin 7d, in Europe/Kyiv.
# Environment: BUILD (default build, unsanitised), RUNS (default 5), N (default 1000000).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
N=${N:-1000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -f "$BUILD/liblode.a" ] && [ -x "$BUILD/lode" ] || {
    echo "bench/forget: build first (make)" >&2
    exit 2
}
cp "$BUILD/liblode.a" "$BUILD/lode" "$work/"
# shellcheck disable=SC2046
cc -std=c17 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinternal -o "$work/gen" \
    bench/retention/bench_retention.c "$work/liblode.a" $(pkg-config --libs jansson) -lm
# shellcheck disable=SC2046
cc -std=c17 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinternal -o "$work/read" \
    bench/forget/bench_forget_read.c "$work/liblode.a" $(pkg-config --libs jansson) -lm
"$work/gen" "$N" "$work/snapshots.json" 600 >/dev/null
printf '%s\n' 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: bench}' \
    'spec:' '  repository: main' '  paths: [/data]' \
    '  schedule: {cron: "30 2 * * *", timezone: Europe/Kyiv}' \
    '  retention: {keepLast: 3, keepWithin: 7d, keepDaily: 7, keepWeekly: 4, keepMonthly: 6}' \
    >"$work/policy.yaml"

echo "# lode forget benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# lode $(git describe --always --dirty 2>/dev/null); $N snapshots, $(($(stat -c %s "$work/snapshots.json") / 1024)) KiB of JSON"

median() { sort -g | sed -n "$(((RUNS + 1) / 2))p"; }

# whole command: CPU ms (user + system) and peak RSS KiB, medians of RUNS
for out in json text; do
    cpus=() rsss=()
    for ((i = 0; i < RUNS; i++)); do
        /usr/bin/time -f '%U %S %M' -o "$work/t" "$work/lode" forget --policy "$work/policy.yaml" \
            --snapshots "$work/snapshots.json" --output "$out" >"$work/out.$out"
        read -r u s m <"$work/t"
        cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%d", (u + s) * 1000}')")
        rsss+=("$m")
    done
    printf 'lode forget --output %-4s  cpu_ms=%s rss_peak_kib=%s\n' "$out" \
        "$(printf '%s\n' "${cpus[@]}" | median)" "$(printf '%s\n' "${rsss[@]}" | median)"
done
echo "kept=$(jq '.keep | length' "$work/out.json") forgotten=$(jq '.forget | length' "$work/out.json")"
for reader in jansson scan; do
    "$work/read" "$reader" "$work/snapshots.json"
done
