#!/usr/bin/env bash
# lode version: the version of lode and of the tz database in use, as text and
# JSON; --zoneinfo and LODE_ZONEINFO choose the database; exit codes.
source "$(dirname "$0")/lib.sh"

# A database of our own, so the version it reports is known.
mkdir -p "$T_TMP/zi"
printf '# version 2099z\n# (a test copy)\n' >"$T_TMP/zi/tzdata.zi"

run version --zoneinfo "$T_TMP/zi"
check_rc "text: exit 0" 0
check_eq "text: two lines" "$(wc -l <<<"$OUT")" 2
check_contains "text: first line names lode" "$(head -n 1 <<<"$OUT")" "lode "
check_eq "text: second line is the tz database" "$(sed -n 2p <<<"$OUT")" \
    "tz database 2099z ($T_TMP/zi)"
version=$(head -n 1 <<<"$OUT" | cut -d' ' -f2)
check_eq "text: the version is not empty" "$([ -n "$version" ] && echo yes)" yes

run version --output json --zoneinfo "$T_TMP/zi"
check_rc "json: exit 0" 0
check_eq "json: document" "$(jq -c . <<<"$OUT")" \
    "{\"version\":\"$version\",\"tzdata\":\"2099z\",\"zoneinfo\":\"$T_TMP/zi\"}"

LODE_ZONEINFO="$T_TMP/zi" run version --output json
check_eq "LODE_ZONEINFO chooses the database" "$(jq -r .tzdata <<<"$OUT")" 2099z

# A +VERSION file when there is no tzdata.zi; "unknown" when there is neither.
mkdir -p "$T_TMP/zi2" "$T_TMP/zi3"
printf '2098a\n' >"$T_TMP/zi2/+VERSION"
run version --output json --zoneinfo "$T_TMP/zi2"
check_eq "+VERSION is read" "$(jq -r .tzdata <<<"$OUT")" 2098a
run version --output json --zoneinfo "$T_TMP/zi3"
check_rc "no version file: exit 0" 0
check_eq "no version file: unknown" "$(jq -r .tzdata <<<"$OUT")" unknown

# The system database, when there is one, reports the version its tzdata.zi names.
if [ -f /usr/share/zoneinfo/tzdata.zi ]; then
    want=$(head -n 1 /usr/share/zoneinfo/tzdata.zi | sed 's/^# version //')
    LODE_ZONEINFO= run version --output json
    check_eq "system database: its version" "$(jq -r .tzdata <<<"$OUT")" "$want"
    check_eq "system database: its directory" "$(jq -r .zoneinfo <<<"$OUT")" /usr/share/zoneinfo
fi

# --version at the top level is the same command.
run --version --zoneinfo "$T_TMP/zi"
check_rc "lode --version: exit 0" 0
check_contains "lode --version: prints the version" "$OUT" "lode $version"

# Errors: exit 2.
run version --zoneinfo "$T_TMP/missing"
check_rc "missing zoneinfo: exit 2" 2
check_contains "missing zoneinfo: says so" "$ERR" "$T_TMP/missing"
run version --zoneinfo "$T_TMP/zi/tzdata.zi"
check_rc "zoneinfo is a file: exit 2" 2
run version --output xml
check_rc "bad --output: exit 2" 2
run version extra
check_rc "extra argument: exit 2" 2
check_contains "extra argument: names it" "$ERR" "extra"
run version --bogus
check_rc "unknown flag: exit 2" 2
run version --help
check_rc "--help: exit 0" 0
check_contains "--help: usage" "$OUT" "usage: lode version"

finish
