#!/usr/bin/env bash
# The real API server and lode validate agree with the schema on every limit of
# crd/backuppolicies.yaml: the documents that tests/unit/policy/helper_crd_cases.c
# makes from the schema (at each bound and one past it, each pattern, enum and CEL
# rule) are sent to the apiserver of tests/env with `kubectl create --dry-run=server`
# and given to lode validate, and both must give each the verdict the schema gives
# it. A refusal must never carry a CEL runtime error (the "type conversion error"
# that a bad jitter used to add after the pattern's own message).
#
# Run after `make cluster-up`, or as
#   tests/env/with-cluster.sh bash tests/e2e/test_crd_limits.sh
# Without a running environment it fails (lib.sh refuses): a skip never counts.
set -u
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LODE=${LODE:-$ROOT/build/lode}
case "$LODE" in /*) ;; *) LODE="$ROOT/$LODE" ;; esac
BUILD=${BUILD:-$ROOT/build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
NS=crd-limits-$(openssl rand -hex 3)
cases=$T_TMP/cases

cleanup() {
	kc delete namespace "$NS" --wait=false >/dev/null 2>&1
	rm -rf "$T_TMP"
}
trap cleanup EXIT

if ! "$BUILD/tests/unit/policy/test_crd_limits" --write-cases "$cases" 2>"$T_TMP/gen.err"; then
	fail "write the cases with $BUILD/tests/unit/policy/test_crd_limits" "$(cat "$T_TMP/gen.err")"
	finish
	exit 1
fi
total=$(wc -l <"$cases/cases.tsv")
case_of() { # what: the number of the case with that description
	awk -F'\t' -v w="$1" '$3 == w {print $1; exit}' "$cases/cases.tsv"
}

kc apply --server-side -f "$ROOT/crd/backuppolicies.yaml" >/dev/null
kc wait --for condition=established --timeout=30s crd/backuppolicies.lodestore.io >/dev/null
kc create namespace "$NS" >/dev/null

# An update of the CRD takes effect a moment after it is stored: wait until a
# document only this version refuses is refused.
canary=$(case_of 'spec.limits.uploadRate: rule: nothing "0KiB/s"')
deadline=$((SECONDS + 60))
until ! kc -n "$NS" create --dry-run=server -f "$cases/$canary.json" >/dev/null 2>&1; do
	if ((SECONDS > deadline)); then
		fail "the API server still accepts 0KiB/s a minute after the CRD was applied"
		finish
		exit 1
	fi
	sleep 0.5
done

# The zones of valid documents exist in a zoneinfo of their own: the schema checks
# only a zone's spelling, lode validate also that it exists.
zi=$T_TMP/zoneinfo
mkdir -p "$zi"
while IFS= read -r z; do
	mkdir -p "$zi/$(dirname "$z")"
	cp /usr/share/zoneinfo/UTC "$zi/$z"
done <"$cases/zones.txt"

# Four requests at a time; each leaves its exit code and message in files.
mkdir -p "$T_TMP/api"
ask() { # n
	kc -n "$NS" create --dry-run=server -f "$cases/$1.json" -o name >"$T_TMP/api/$1.out" 2>"$T_TMP/api/$1.err"
	echo $? >"$T_TMP/api/$1.rc"
}
running=0
while IFS=$'\t' read -r n _ _; do
	ask "$n" &
	running=$((running + 1))
	if ((running == 4)); then
		wait
		running=0
	fi
done <"$cases/cases.tsv"
wait

api_wrong=0 lode_wrong=0 cel_errors=0 answered=0
while IFS=$'\t' read -r n verdict what; do
	[[ -f $T_TMP/api/$n.rc ]] || continue
	answered=$((answered + 1))
	rc=$(cat "$T_TMP/api/$n.rc")
	msg=$(cat "$T_TMP/api/$n.err")
	if [[ $verdict == valid && $rc -ne 0 ]] || [[ $verdict == invalid && $rc -eq 0 ]]; then
		api_wrong=$((api_wrong + 1))
		fail "API server on case $n ($what): kubectl exit $rc, the schema says $verdict" "${msg:0:600}"
	fi
	if [[ $verdict == invalid && $rc -ne 0 && $msg != *"is invalid"* ]]; then
		api_wrong=$((api_wrong + 1))
		fail "API server on case $n ($what): refused, but not as invalid" "${msg:0:600}"
	fi
	if grep -qiE 'type conversion|no such key|no such overload|overflow|error evaluating' <<<"$msg"; then
		cel_errors=$((cel_errors + 1))
		fail "API server on case $n ($what): a CEL runtime error in the message" "${msg:0:600}"
	fi
	"$LODE" validate --zoneinfo "$zi" "$cases/$n.json" >"$T_TMP/lode.out" 2>&1
	lrc=$?
	if [[ $verdict == valid && $lrc -ne 0 ]] || [[ $verdict == invalid && $lrc -ne 1 ]]; then
		lode_wrong=$((lode_wrong + 1))
		fail "lode validate on case $n ($what): exit $lrc, the schema says $verdict" \
			"$(head -c 600 "$T_TMP/lode.out")"
	fi
done <"$cases/cases.tsv"
check_eq "the API server answered all $total cases" "$answered" "$total"
check_eq "the API server gives every case the schema's verdict" "$api_wrong" 0
check_eq "lode validate gives every case the same verdict" "$lode_wrong" 0
check_eq "no refusal carries a CEL runtime error" "$cel_errors" 0

# The issue's two cases, by name.
n=$(case_of 'spec.schedule.jitter: pattern: does not match "1.5h"')
msg=$(cat "$T_TMP/api/$n.err")
check_contains "jitter 1.5h: the API server names the pattern" "$msg" 'spec.schedule.jitter: Invalid value: "1.5h": spec.schedule.jitter in body should match'
if [[ $msg == *"type conversion"* ]]; then
	fail "jitter 1.5h: no type conversion error after it" "$msg"
else
	pass "jitter 1.5h: no type conversion error after it"
fi
n=$(case_of 'spec.paths: maxItems: 65')
check_contains "65 paths: the API server says 64" "$(cat "$T_TMP/api/$n.err")" "must have at most 64 items"
"$LODE" validate "$cases/$n.json" >"$T_TMP/lode.out" 2>&1
check_contains "65 paths: lode validate says 64" "$(cat "$T_TMP/lode.out")" "65 paths, more than 64"
finish
