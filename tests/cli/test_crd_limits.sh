#!/usr/bin/env bash
# lode validate gives every document made from the CRD's schema the verdict the
# schema gives it: at each bound of crd/backuppolicies.yaml and one past it, for
# every pattern, enum and CEL rule (tests/unit/policy/helper_crd_cases.c makes the
# documents; tests/e2e/test_crd_limits.sh sends the same ones to the API server).
# The zone names of valid documents are made to exist in a zoneinfo directory of
# their own, since the schema checks only their spelling.
source "$(dirname "$0")/lib.sh"
cd "$LODE_ROOT" || exit 2
BUILD=${BUILD:-$(dirname "$LODE")}
case "$BUILD" in /*) ;; *) BUILD="$LODE_ROOT/$BUILD" ;; esac
gen=$BUILD/tests/unit/policy/test_crd_limits

if ! "$gen" --write-cases "$T_TMP/cases" 2>"$T_TMP/gen.err"; then
    fail "write the cases with $gen" "$(cat "$T_TMP/gen.err")"
    finish
    exit 1
fi
total=$(wc -l <"$T_TMP/cases/cases.tsv")
if [ "$total" -gt 150 ]; then
    pass "the schema gives $total cases"
else
    fail "the schema gives $total cases, fewer than 150: did the walk stop early?"
fi

zi=$T_TMP/zoneinfo
mkdir -p "$zi"
while IFS= read -r z; do
    mkdir -p "$zi/$(dirname "$z")"
    cp /usr/share/zoneinfo/UTC "$zi/$z"
done <"$T_TMP/cases/zones.txt"

wrong=0
while IFS=$'\t' read -r n verdict what; do
    "$LODE" validate --zoneinfo "$zi" "$T_TMP/cases/$n.json" >"$T_TMP/out" 2>&1
    rc=$?
    want=1
    [ "$verdict" = valid ] && want=0
    if [ "$rc" -ne "$want" ]; then
        wrong=$((wrong + 1))
        fail "case $n ($what): exit $rc, want $want" "$(head -c 600 "$T_TMP/out")"
    fi
done <"$T_TMP/cases/cases.tsv"
check_eq "lode validate gives all $total cases the schema's verdict" "$wrong" 0

# A refusal names the limit, with the CRD's number.
run validate "$T_TMP/cases/$(awk -F'\t' '$3 == "spec.paths: maxItems: 65" {print $1}' "$T_TMP/cases/cases.tsv").json"
check_contains "65 paths: the message says 64" "$OUT" "spec.paths: 65 paths, more than 64"
finish
