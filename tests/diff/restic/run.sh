#!/usr/bin/env bash
# Differential test: `lode forget` against `restic forget` 0.14 on generated
# histories where the two semantics coincide (docs/retention.md, "How Lodestore
# differs from `restic forget`").
#
#   1. diffrestic gen: random histories (zones with gaps, folds, 30- and 45-minute
#      offsets; outages; ISO week 53; incomplete and suspicious snapshots), in rule
#      sets of keepLast/keepWithin (h, d)/keepDaily/keepWeekly/keepMonthly. Times are
#      distinct, in the past, and two minutes or more from any keepWithin boundary.
#   2. Each non-suspicious snapshot goes into one local restic repository, host =
#      history, with the wall clock and offset of the policy's zone at its instant:
#      for the first $LODE_DIFF_REAL histories through `restic backup --time` under a
#      fixed-offset TZif file compiled with zic (restic ignores POSIX TZ strings); for
#      the rest written straight into the repository (diffrestic forge), because a
#      restic backup costs half a second. `restic snapshots` must list the real ones
#      with exactly the time strings the generator predicted.
#   3. `TZ=UTC restic forget --dry-run --json --group-by host` once per rule set, on a
#      copy of the repository that holds that rule set's snapshots.
#   4. `lode forget --output json` per history; diffrestic compare adds the suspicious
#      snapshots and the two newest good ones to restic's keep set (docs/retention.md
#      steps 1 and 5) and requires the same decisions and reasons.
#   5. diffrestic compare --tamper flips one decision per history and must catch all.
#
# Environment: LODE (the binary), BUILD (where liblode.a is), LODE_DIFF_HISTORIES
# (default 240), LODE_DIFF_GROUPS (rule sets, 24), LODE_DIFF_REAL (histories made with
# real backups, 4, each of 5-8 snapshots across a clock change; "all" for the literal
# recipe with every snapshot made by restic backup: about 7,000 backups at half a
# second each, an hour on two cores),
# LODE_DIFF_SEED, LODE_DIFF_JOBS (parallel restic processes, 2), LODE_DIFF_KEEP=1
# to keep the work directory.
set -u
cd "$(dirname "$0")/../../.."
BUILD=${BUILD:-build}
LODE=${LODE:-$BUILD/lode}
case "$LODE" in /*) ;; *) LODE=$PWD/$LODE ;; esac
HISTORIES=${LODE_DIFF_HISTORIES:-240}
NGROUPS=${LODE_DIFF_GROUPS:-24}
REAL=${LODE_DIFF_REAL:-4}
[ "$REAL" = all ] && REAL=$HISTORIES
SEED=${LODE_DIFF_SEED:-20261202}
JOBS=${LODE_DIFF_JOBS:-2}

passed=0
failed=0
work=$(mktemp -d)
if [ "${LODE_DIFF_KEEP:-0}" = 1 ]; then echo "# work directory: $work"; else trap 'rm -rf "$work"' EXIT; fi
start=$(date +%s)

ok() { passed=$((passed + 1)); echo "ok - $1"; }
notok() { failed=$((failed + 1)); echo "not ok - $1"; shift; printf '    %s\n' "$@"; }
finish() {
    echo "# $(($(date +%s) - start))s in all"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}
phase() { echo "# $1 after $(($(date +%s) - start))s"; }

# ---- tools ----
for tool in restic jq cc; do
    if ! command -v "$tool" >/dev/null; then
        notok "$tool is installed (run make setup)"
        finish
    fi
done
# zic lives in /usr/sbin, which is not on every PATH.
ZIC=$(command -v zic || echo /usr/sbin/zic)
[ -x "$ZIC" ] || {
    notok "zic is installed (tzdata's compiler; run make setup)"
    finish
}
ver=$(restic version)
case "$ver" in
"restic 0.14."* | "restic 0.15."*) ;;
*)
    # 0.16+ adds the "oldest snapshot" rule, 0.17 changes the JSON: not this oracle.
    notok "restic is 0.14 or 0.15 (no oldest-snapshot rule)" "found: $ver"
    finish
    ;;
esac
[ -x "$LODE" ] || {
    notok "lode is built" "no executable at $LODE"
    finish
}
[ -f "$BUILD/liblode.a" ] || {
    notok "liblode.a is built" "missing: $BUILD/liblode.a"
    finish
}
san=
case "$BUILD" in *san-*) san="-fsanitize=${BUILD##*san-}" ;; esac
# shellcheck disable=SC2046
if ! cc -std=c17 -O1 -g $san -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinternal \
    -o "$work/diffrestic" tests/diff/restic/diffrestic.c "$BUILD/liblode.a" \
    $(pkg-config --cflags --libs jansson openssl) -lm 2>"$work/cc.log"; then
    notok "diffrestic builds" "$(cat "$work/cc.log")"
    finish
fi
D=$work/diffrestic

# ---- 1. histories ----
mkdir -p "$work/h" "$work/r" "$work/data"
if ! "$D" gen "$work/h" "$SEED" "$HISTORIES" "$NGROUPS" "$REAL" 2>"$work/gen.log"; then
    notok "the histories are generated" "$(cat "$work/gen.log")"
    finish
fi
nsnap=$(jq -s 'map(.snapshots | length) | add' "$work"/h/*/meta.json)
echo "# $HISTORIES histories, $nsnap snapshots, $NGROUPS rule sets, seed $SEED"

# ---- 2. the restic repository ----
export RESTIC_REPOSITORY=$work/repo RESTIC_PASSWORD_FILE=$work/pw RESTIC_CACHE_DIR=$work/cache
echo lodestore-diff >"$work/pw"
echo "a tiny file" >"$work/data/f"
if ! restic init -q >"$work/init.log" 2>&1; then
    notok "restic init" "$(cat "$work/init.log")"
    finish
fi
if ! "$ZIC" -d "$work/zoneinfo" "$work/h/fixed.zi" 2>"$work/zic.log"; then
    notok "zic compiles the fixed-offset zones" "$(cat "$work/zic.log")"
    finish
fi
# The template for forged snapshots (host "template", never in a forget run).
TZ=UTC restic backup -q --host template --time "2020-01-01 00:00:00" "$work/data" >/dev/null 2>"$work/b.log" || {
    notok "restic backup" "$(cat "$work/b.log")"
    finish
}
phase "repository ready"
# Real backups: each line is "Fixed/P0300 host YYYY-MM-DD HH:MM:SS".
export ZI=$work/zoneinfo DATA=$work/data
if ! xargs -P "$JOBS" -n 4 sh -c 'TZ="$ZI/$0" restic backup -q --host "$1" --time "$2 $3" "$DATA" >/dev/null' \
    <"$work/h/real.tsv" 2>"$work/real.log"; then
    notok "restic backup --time under fixed-offset zones" "$(head -n 5 "$work/real.log")"
    finish
fi
nreal=$(wc -l <"$work/h/real.tsv")
phase "$nreal real backups"
# restic must record each real backup with the wall clock and offset the generator
# predicted; the forged ones are held to the same strings by the comparison, which
# requires every snapshot in restic's answer exactly once.
for ((i = 0; i < REAL && i < HISTORIES; i++)); do
    jq -r '.host as $h | .snapshots[] | select(.suspicious | not) | [$h, .recorded] | @tsv' \
        "$work/h/$(printf %03d "$i")/meta.json"
done | sort >"$work/expected.tsv"
restic snapshots --json | jq -r '.[] | select(.hostname != "template") | [.hostname, .time] | @tsv' |
    sort >"$work/listed.tsv"
if cmp -s "$work/expected.tsv" "$work/listed.tsv"; then
    ok "restic backup --time under fixed-offset zones records the predicted time of all $nreal snapshots"
else
    notok "restic backup --time records the predicted wall clock and offset" \
        "$(diff "$work/expected.tsv" "$work/listed.tsv" | head -n 10)"
fi
restic cat masterkey >"$work/masterkey.json" 2>"$work/mk.log" &&
    restic cat snapshot "$(restic snapshots --json --host template | jq -r '.[0].id')" >"$work/template.json" 2>>"$work/mk.log" || {
    notok "restic cat masterkey and snapshot" "$(cat "$work/mk.log")"
    finish
}

# ---- 3. per rule set: a copy of the repository, its forged snapshots, restic forget ----
# A forget run reads every snapshot file of its repository, so each rule set gets a
# copy (same keys and data, its own snapshots) instead of sharing one big one.
while IFS=$'\t' read -r g flags hosts; do
    cat >"$work/r/job-$g.sh" <<JOB
set -e
cp -r "$work/repo" "$work/repo-$g"
"$D" forge "$work/masterkey.json" "$work/template.json" "$work/repo-$g" <"$work/h/forge-$g.tsv"
RESTIC_REPOSITORY="$work/repo-$g" TZ=UTC restic --no-cache forget --dry-run --json --group-by host \
    $flags $hosts >"$work/r/group-$g.json"
JOB
done <"$work/h/groups.tsv"
if ! ls "$work"/r/job-*.sh | xargs -P "$JOBS" -n 1 sh -c 'bash "$0" 2>"${0%.sh}.err" || { echo "${0##*/}: $(cat "${0%.sh}.err")"; exit 1; }' >"$work/jobs.log" 2>&1; then
    notok "forged snapshots and restic forget for every rule set" "$(head -n 10 "$work/jobs.log")"
    finish
fi
phase "$(cat "$work"/h/forge-*.tsv | wc -l) forged snapshots and $(wc -l <"$work/h/groups.tsv") restic forget runs"

# ---- 4. lode forget, and the comparison ----
for hd in "$work"/h/[0-9]*; do
    if ! "$LODE" forget --policy "$hd/policy.yaml" --snapshots "$hd/snapshots.json" --output json \
        >"$hd/lode.json" 2>"$hd/lode.err"; then
        notok "lode forget on history ${hd##*/}" "$(cat "$hd/lode.err")"
        echo '{}' >"$hd/lode.json"
    fi
done
phase "lode forget"
"$D" compare "$work/h" "$work/r" >"$work/compare.log" 2>&1
cat "$work/compare.log"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$work/compare.log" | tail -n 1)
if [ -z "$line" ]; then
    notok "diffrestic compare ran" "$(tail -n 5 "$work/compare.log")"
else
    passed=$((passed + ${line%% passed*}))
    f=${line##*passed, }
    failed=$((failed + ${f%% failed}))
fi

# ---- 5. the comparison fails when the outputs differ ----
if out=$("$D" compare "$work/h" "$work/r" --tamper 2>&1); then
    ok "the comparison catches a flipped decision ($(tail -n 1 <<<"$out"))"
else
    notok "the comparison catches a flipped decision in every history" "$(tail -n 5 <<<"$out")"
fi
finish
