#!/usr/bin/env bash
# Cron next-run benchmark (docs/benchmarks.md, "Cron next-run"): Lodestore's
# sched_next() against robfig/cron v3 (Go, the engine of the Kubernetes CronJob),
# cron-parser 5.10.6 (npm) and croniter (Debian's python3-croniter), on the same
# expressions, zones and random start instants in one run. Prints ns per next run,
# the ratio peer/Lodestore per case, how many answers differ from Lodestore's, and
# the time to recompute 100,000 (policy, host) next run times against robfig.
#
# The peers are installed outside the work tree, under $CACHE (default
# ~/.cache/lodestore/bench): robfig from the Go module proxy (bench/cron/robfig has
# its go.mod and go.sum), cron-parser from npm, croniter with apt-get. A peer that
# cannot be installed is reported and left out; the C side always runs.
# Environment: BUILD (default build), N (start instants, default 20000), BUDGET_MS
# (time per pass for the slow peers, default 1000), PIN=1 to run every engine on
# CPU 1 with taskset (best on a quiet machine; on a busy shared one it only queues).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
N=${N:-20000}
BUDGET_MS=${BUDGET_MS:-1000}
PIN=${PIN:-0}
CACHE=${CACHE:-$HOME/.cache/lodestore/bench}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$CACHE" "$work/out"

[ -f "$BUILD/liblode.a" ] || {
    echo "bench/cron: build first (make)" >&2
    exit 2
}
cp "$BUILD/liblode.a" "$work/"
# shellcheck disable=SC2046
cc -std=c17 -O2 -g -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinternal -o "$work/bench_cron" \
    bench/cron/bench_cron.c "$work/liblode.a" $(pkg-config --libs openssl) -lm
pin=()
[ "$PIN" = 1 ] && command -v taskset >/dev/null && pin=(taskset -c 1)

# ---- the peers ----
have_robfig=0 have_node=0 have_py=0
if command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; then
    GO=$(command -v go || echo /usr/local/go/bin/go)
    if (cd bench/cron/robfig && GOFLAGS=-mod=mod "$GO" build -o "$CACHE/robfig-bench" .) 2>"$work/go.log"; then
        have_robfig=1
    else
        echo "bench/cron: robfig left out: $(tail -n 1 "$work/go.log")" >&2
    fi
else
    echo "bench/cron: robfig left out: no Go toolchain" >&2
fi
if command -v node >/dev/null; then
    if [ ! -f "$CACHE/node/node_modules/cron-parser/package.json" ] ||
        [ "$(node -p "require('$CACHE/node/node_modules/cron-parser/package.json').version")" != 5.10.6 ]; then
        npm install --prefix "$CACHE/node" --no-audit --no-fund --silent cron-parser@5.10.6 >"$work/npm.log" 2>&1 || true
    fi
    [ -f "$CACHE/node/node_modules/cron-parser/package.json" ] && have_node=1 ||
        echo "bench/cron: cron-parser left out: npm install failed" >&2
fi
PY=/usr/bin/python3
if ! "$PY" -c 'import croniter' 2>/dev/null; then
    { apt-get install -y -q python3-croniter || { apt-get update -q && apt-get install -y -q python3-croniter; }; } \
        >"$work/apt.log" 2>&1 || true
fi
"$PY" -c 'import croniter' 2>/dev/null && have_py=1 || echo "bench/cron: croniter left out: python3-croniter is not installable" >&2

# ---- cases and start instants ----
exprs=("*/5 * * * *" "0 3 * * *" "30 2 * * 0" "0 0 29 2 *" "30 3 * * *")
zones=(UTC America/New_York Europe/Kyiv Australia/Lord_Howe)
for z in "${zones[@]}"; do
    for e in "${exprs[@]}"; do
        printf '%s\t%s\n' "$e" "$z"
    done
done >"$work/cases"
"$work/bench_cron" starts "$N" 1 >"$work/starts"
: >"$work/c.tsv" >"$work/robfig.tsv" >"$work/node.tsv" >"$work/py.tsv"

echo "# cron next-run benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), load $(cut -d' ' -f1-3 /proc/loadavg)${pin:+, pinned to CPU 1}"
echo "# lode $(git describe --always --dirty 2>/dev/null); tzdata $(sed -n 's/^# version //p' /usr/share/zoneinfo/tzdata.zi 2>/dev/null)"
[ $have_robfig = 1 ] && echo "# robfig/cron v3.0.1, $("$GO" version | cut -d' ' -f3)"
[ $have_node = 1 ] && echo "# cron-parser $(node -p "require('$CACHE/node/node_modules/cron-parser/package.json').version"), node $(node --version)"
[ $have_py = 1 ] && echo "# croniter $(dpkg-query -W -f='${Version}' python3-croniter 2>/dev/null), $("$PY" --version)"
echo "# $N random start instants in 2024-2025, the same for every engine"
echo

# One case at a time, every engine in turn, so that a change in the machine's load
# during the run falls on all of them alike.
i=0
while IFS= read -r line; do
    mkdir -p "$work/out/$i"
    printf '%s\n' "$line" >"$work/case.$i"
    o=$work/out/$i
    "${pin[@]}" "$work/bench_cron" run "$work/case.$i" "$work/starts" "$o" | sed "s/^0/$i/" >>"$work/c.tsv"
    [ $have_robfig = 1 ] && "${pin[@]}" "$CACHE/robfig-bench" run "$work/case.$i" "$work/starts" "$o" |
        sed "s/^0/$i/" >>"$work/robfig.tsv"
    [ $have_node = 1 ] && NODE_PATH=$CACHE/node/node_modules "${pin[@]}" node bench/cron/node/bench.js \
        "$work/case.$i" "$work/starts" "$o" "$BUDGET_MS" | sed "s/^0/$i/" >>"$work/node.tsv"
    [ $have_py = 1 ] && "${pin[@]}" "$PY" bench/cron/python/bench.py "$work/case.$i" "$work/starts" "$o" \
        "$BUDGET_MS" | sed "s/^0/$i/" >>"$work/py.tsv"
    i=$((i + 1))
done <"$work/cases"

# differ PEER I: how many of the peer's answers differ from Lodestore's, "d/n".
differ() {
    local f="$work/out/$2/$1.0.txt"
    [ -f "$f" ] || { echo "-"; return; }
    local n
    n=$(wc -l <"$f")
    paste -d' ' <(head -n "$n" "$work/out/$2/c.0.txt") "$f" | awk '$1 != $2 {d++} END {printf "%d/%d", d, NR}'
}
ns_of() { awk -F'\t' -v i="$2" '$1 == i {print $2}' "$work/$1.tsv"; }
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0fx", a / b}' || echo -; }

printf '| expression | zone | Lodestore ns | robfig ns | ratio | differ | cron-parser ns | ratio | differ | croniter ns | ratio | differ |\n'
printf '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
i=0
min_robfig="" min_node="" max_dst=0
while IFS=$'\t' read -r e z; do
    c=$(ns_of c $i) r=$(ns_of robfig $i) n=$(ns_of node $i) p=$(ns_of py $i)
    printf '| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$e" "$z" "$c" \
        "${r:--}" "$(ratio "$r" "$c")" "$(differ robfig $i)" "${n:--}" "$(ratio "$n" "$c")" \
        "$(differ cron-parser $i)" "${p:--}" "$(ratio "$p" "$c")" "$(differ croniter $i)"
    [ -n "$r" ] && min_robfig=$(awk -v m="$min_robfig" -v x="$(awk -v a="$r" -v b="$c" 'BEGIN{print a/b}')" 'BEGIN {print (m == "" || x < m) ? x : m}')
    [ -n "$n" ] && min_node=$(awk -v m="$min_node" -v x="$(awk -v a="$n" -v b="$c" 'BEGIN{print a/b}')" 'BEGIN {print (m == "" || x < m) ? x : m}')
    [ "$z" != UTC ] && max_dst=$(awk -v m="$max_dst" -v x="$c" 'BEGIN {print (x > m) ? x : m}')
    i=$((i + 1))
done <"$work/cases"
echo
echo "\"differ\": answers unlike Lodestore's, over the starts that engine was timed on; in"
echo "UTC they must be 0 (the rules agree there), in DST zones they are the documented DST"
echo "differences (gaps, folds; see docs/schedule.md)."
echo

"${pin[@]}" "$work/bench_cron" entries 100000 >"$work/entries_c.tsv" 2>"$work/entries_c.txt"
c_ms=$(cut -f3 "$work/entries_c.tsv") c_init=$(cut -f4 "$work/entries_c.tsv")
echo "## recompute the next run of 100,000 (policy, host) entries (1,000 policies, 16 DST zones, jitter 15m)"
echo "Lodestore: $c_ms ms (schedules, zones and jitter offsets prepared once in $c_init ms)"
if [ $have_robfig = 1 ]; then
    "${pin[@]}" "$CACHE/robfig-bench" entries 100000 >"$work/entries_go.tsv" 2>"$work/entries_go.txt"
    g_ms=$(cut -f3 "$work/entries_go.tsv")
    echo "robfig:    $g_ms ms; ratio $(ratio "$g_ms" "$c_ms")"
    if ! cmp -s "$work/entries_c.txt" "$work/entries_go.txt"; then
        echo "note: the first entries' next runs differ between the two sides" >&2
    fi
fi
echo
# The targets are reported, not enforced: a benchmark is not a timed test, and a
# busy machine can miss one. Only a wrong answer (below) fails the run.
status=0
check() { # name ok-condition(awk) detail
    if awk "BEGIN {exit !($2)}"; then echo "target met: $1 ($3)"; else echo "TARGET NOT MET: $1 ($3)"; fi
}
[ -n "$min_robfig" ] && check ">= 10x robfig in every case" "$min_robfig >= 10" "lowest ratio ${min_robfig%.*}x"
[ -n "$min_node" ] && check ">= 500x cron-parser in every case" "$min_node >= 500" "lowest ratio ${min_node%.*}x"
check "< 100 ns per next run in a DST zone" "$max_dst < 100" "slowest DST case $max_dst ns"
check "100,000 entries under 20 ms" "$c_ms < 20" "$c_ms ms"
# UTC answers must agree with robfig exactly.
for ((j = 0; j < ${#exprs[@]}; j++)); do
    d=$(differ robfig $j)
    case "$d" in 0/* | -) ;; *) echo "UTC answers differ from robfig for ${exprs[$j]}: $d" >&2; status=1 ;; esac
done
exit $status
