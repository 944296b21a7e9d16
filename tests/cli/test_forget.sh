#!/usr/bin/env bash
# lode forget: JSON and human output, exit codes, and the messages for bad input.
source "$(dirname "$0")/lib.sh"

# policy NAME LINE...: writes a BackupPolicy whose spec ends with the given lines.
policy() {
    local f="$T_TMP/$1.yaml"
    shift
    {
        printf '%s\n' 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' \
            'metadata: {name: etc-and-home, namespace: ops}' 'spec:' '  repository: main' \
            '  paths: [/etc]'
        printf '%s\n' "$@"
    } >"$f"
    echo "$f"
}

SEED=$(policy seed '  schedule: {cron: "30 2 * * *", timezone: Europe/Kyiv}' \
    '  retention: {keepLast: 3, keepDaily: 7, keepWeekly: 4, keepMonthly: 6}')

# R10: 100 daily snapshots at 02:30 Kyiv time from 2026-01-01 (00:30Z in EET, 23:30Z
# the day before once EEST starts on 03-29 at 01:00Z), ids YYYYMMDD of the local day.
jq -n '[range(0; 100) | (1767227400 + . * 86400) as $t
        | (if $t >= 1774746000 then $t - 3600 else $t end) as $u
        | {id: (($u + 10800) | strftime("%Y%m%d")), time: ($u | todate)}]' >"$T_TMP/r10.json"

# ---- JSON ----
run forget --policy "$SEED" --snapshots "$T_TMP/r10.json" --output json
check_rc "json: exit 0" 0
check_eq "json: R10 keeps the 12 the page's rules give, newest first" \
    "$(jq -c '[.keep[].id]' <<<"$OUT")" \
    '["20260410","20260409","20260408","20260407","20260406","20260405","20260404","20260331","20260329","20260322","20260228","20260131"]'
check_eq "json: every reason, in the fixed order" "$(jq -c '.keep[0]' <<<"$OUT")" \
    '{"id":"20260410","reasons":["last","daily","weekly","monthly","newest-good"]}'
check_eq "json: the week's newest (a Sunday) is weekly and daily" "$(jq -c '.keep[5]' <<<"$OUT")" \
    '{"id":"20260405","reasons":["daily","weekly"]}'
check_eq "json: 88 forgotten, newest first, ids only" \
    "$(jq -c '[.forget | length, .[0], .[87]]' <<<"$OUT")" '[88,{"id":"20260403"},{"id":"20260101"}]'
check_eq "json: exactly the keys of docs/retention.md" "$(jq -c '[keys, (.keep[0] | keys), (.forget[0] | keys)]' <<<"$OUT")" \
    '[["forget","keep"],["id","reasons"],["id"]]'

run forget --policy "$SEED" --snapshots "$T_TMP/r10.json" --output json --dry-run
check_eq "json: --dry-run gives the same answer (a file is never deleted from)" \
    "$(jq -c . <<<"$OUT")" "$(jq -c . <<<"$("$LODE" forget --policy "$SEED" --snapshots "$T_TMP/r10.json" --output json)")"

# Input order does not matter; times with offsets are read as instants.
jq -c 'reverse' "$T_TMP/r10.json" >"$T_TMP/r10rev.json"
run forget --policy "$SEED" --snapshots "$T_TMP/r10rev.json" --output json
check_eq "json: the same answer for the list reversed" "$(jq -c '[.keep[].id]' <<<"$OUT")" \
    '["20260410","20260409","20260408","20260407","20260406","20260405","20260404","20260331","20260329","20260322","20260228","20260131"]'

# 23:30 UTC on 06-10 is already 06-11 in Kyiv; without a schedule the day is UTC's.
cat >"$T_TMP/kyiv.json" <<'J'
[{"id":"a","time":"2026-06-10T12:00:00Z"},{"id":"b","time":"2026-06-10T23:30:00Z"},
 {"id":"c","time":"2026-06-11T13:00:00+03:00"}]
J
K=$(policy kyiv '  schedule: {cron: "@daily", timezone: Europe/Kyiv}' '  retention: {keepDaily: 2}')
U=$(policy utc '  retention: {keepDaily: 2}')
run forget --policy "$K" --snapshots "$T_TMP/kyiv.json" --output json
check_eq "json: days in the schedule's zone" "$(jq -c '[.keep[] | [.id, .reasons]]' <<<"$OUT")" \
    '[["c",["daily","newest-good"]],["b",["newest-good"]],["a",["daily"]]]'
run forget --policy "$U" --snapshots "$T_TMP/kyiv.json" --output json
check_eq "json: days in UTC without a schedule" "$(jq -c '[[.keep[].id], [.forget[].id]]' <<<"$OUT")" \
    '[["c","b"],["a"]]'

# Suspicious and incomplete; no rules at all.
cat >"$T_TMP/flags.json" <<'J'
[{"id":"g1","time":"2026-06-01T00:00:00Z"},{"id":"g2","time":"2026-06-02T00:00:00Z","incomplete":false},
 {"id":"g3","time":"2026-06-03T00:00:00Z"},{"id":"i","time":"2026-06-04T00:00:00Z","incomplete":true},
 {"id":"x","time":"2026-06-05T00:00:00Z","suspicious":true,"incomplete":false}]
J
L=$(policy last1 '  retention: {keepLast: 1}')
run forget --policy "$L" --snapshots "$T_TMP/flags.json" --output json
check_eq "json: suspicious kept, incomplete takes the slot, two newest good kept" "$(jq -c . <<<"$OUT")" \
    '{"keep":[{"id":"x","reasons":["suspicious"]},{"id":"i","reasons":["last"]},{"id":"g3","reasons":["newest-good"]},{"id":"g2","reasons":["newest-good"]}],"forget":[{"id":"g1"}]}'
N=$(policy none)
run forget --policy "$N" --snapshots "$T_TMP/flags.json" --output json
check_eq "json: no rules keeps everything" "$(jq -c '[[.keep[] | .id + ":" + (.reasons | join(","))], .forget]' <<<"$OUT")" \
    '[["x:suspicious","i:no-rules","g3:newest-good,no-rules","g2:newest-good,no-rules","g1:no-rules"],[]]'

echo '[]' >"$T_TMP/empty.json"
run forget --policy "$SEED" --snapshots "$T_TMP/empty.json" --output json
check_eq "json: an empty list" "$(jq -c . <<<"$OUT")" '{"keep":[],"forget":[]}'

run forget --policy "$L" --snapshots - --output json <"$T_TMP/flags.json"
check_eq "json: the list from standard input" "$(jq -c '[.keep[].id]' <<<"$OUT")" '["x","i","g3","g2"]'

# ---- human output ----
run forget --policy "$SEED" --snapshots "$T_TMP/r10.json"
check_rc "text: exit 0" 0
check_contains "text: the rules and the zone" "$OUT" \
    "policy ops/etc-and-home: keep last 3, daily 7, weekly 4, monthly 6; periods in Europe/Kyiv"
check_eq "text: header" "$(grep '^ID' <<<"$OUT" | tr -s ' ')" "ID Time Action Reasons"
check_eq "text: a kept row, local time with the abbreviation" "$(grep '^20260410 ' <<<"$OUT" | tr -s ' ')" \
    "20260410 2026-04-10 02:30:00 EEST keep last, daily, weekly, monthly, newest-good"
check_eq "text: a row in winter time" "$(grep '^20260131 ' <<<"$OUT" | tr -s ' ')" \
    "20260131 2026-01-31 02:30:00 EET keep monthly"
check_eq "text: a forgotten row" "$(grep '^20260403 ' <<<"$OUT" | tr -s ' ')" \
    "20260403 2026-04-03 02:30:00 EEST forget"
check_eq "text: rows newest first" "$(grep -E '^2026' <<<"$OUT" | sed -n '1p;100p' | cut -c1-8 | paste -sd' ')" \
    "20260410 20260101"
check_eq "text: totals" "$(tail -n 1 <<<"$OUT")" "keep 12 snapshots, forget 88"
run forget --policy "$N" --snapshots "$T_TMP/flags.json"
check_contains "text: no rules said plainly" "$OUT" "no retention rules, every snapshot is kept"
check_eq "text: UTC without a schedule" "$(grep '^x ' <<<"$OUT" | tr -s ' ')" "x 2026-06-05 00:00:00 UTC keep suspicious"
check_eq "text: totals, nothing forgotten" "$(tail -n 1 <<<"$OUT")" "keep 5 snapshots, forget 0"
W=$(policy within '  retention: {keepWithin: 2d, keepLast: 1}')
run forget --policy "$W" --snapshots "$T_TMP/empty.json"
check_contains "text: keepWithin in the rules line" "$OUT" "keep last 1, within 48h; periods in UTC"
check_eq "text: totals for an empty list" "$(tail -n 1 <<<"$OUT")" "keep 0 snapshots, forget 0"
printf '[{"id":"a\\u001b[31m","time":"2026-06-01T00:00:00Z"}]' >"$T_TMP/ctl.json"
run forget --policy "$L" --snapshots "$T_TMP/ctl.json"
check_contains "text: control bytes in an id are not sent to the terminal" "$OUT" "a?[31m"

# ---- usage and I/O errors: exit 2 ----
run forget --help
check_rc "usage: --help exits 0" 0
check_contains "usage: --help on stdout" "$OUT" "usage: lode forget --policy FILE --snapshots FILE"
run forget --snapshots "$T_TMP/r10.json"
check_rc "usage: --policy is required" 2
check_contains "usage: says which flag" "$ERR" "--policy FILE is required"
run forget --policy "$SEED"
check_rc "usage: --snapshots is required" 2
check_contains "usage: says which flag" "$ERR" "--snapshots FILE is required"
run forget --policy "$SEED" --snapshots "$T_TMP/r10.json" extra
check_rc "usage: a stray argument" 2
check_contains "usage: names it" "$ERR" 'unexpected argument "extra"'
run forget --policy "$SEED" --snapshots "$T_TMP/r10.json" --output yaml
check_rc "usage: an unknown --output" 2
run forget --policy "$SEED" --snapshots "$T_TMP/r10.json" --keep-last 3
check_rc "usage: an unknown flag" 2
run forget --policy - --snapshots -
check_rc "usage: both from standard input" 2
run forget --policy "$T_TMP/nope.yaml" --snapshots "$T_TMP/r10.json"
check_rc "io: an unreadable policy" 2
run forget --policy "$SEED" --snapshots "$T_TMP/nope.json"
check_rc "io: an unreadable snapshot list" 2
check_contains "io: names the file" "$ERR" "nope.json"
run forget --policy "$SEED" --snapshots "$T_TMP/r10.json" --zoneinfo "$T_TMP/no-zoneinfo"
check_rc "io: a zoneinfo directory that does not exist" 2

# A zone file that passes the policy's check (it starts like TZif) but cannot be read.
mkdir -p "$T_TMP/zi/Europe"
printf 'TZif2\0\0\0damaged' >"$T_TMP/zi/Europe/Kyiv"
run forget --policy "$SEED" --snapshots "$T_TMP/r10.json" --zoneinfo "$T_TMP/zi"
check_rc "io: a damaged zone file in the tz database" 2
check_contains "io: names the zone" "$ERR" 'time zone "Europe/Kyiv"'

# ---- invalid input: exit 1 ----
NOZONE=$(policy nozone '  schedule: {cron: "@daily", timezone: Europe/Nowhere}' '  retention: {keepLast: 1}')
run forget --policy "$NOZONE" --snapshots "$T_TMP/r10.json"
check_rc "invalid: a policy naming an unknown zone" 1
check_contains "invalid: says so with the line" "$ERR" "$NOZONE:7:"
BADP=$(policy badp '  retention: {keepLast: 0, keepDialy: 7}')
run forget --policy "$BADP" --snapshots "$T_TMP/r10.json"
check_rc "invalid: a policy with errors" 1
check_contains "invalid: policy errors as lode validate prints them" "$ERR" "$BADP:7:"
check_eq "invalid: nothing on stdout" "$OUT" ""

bad_list() { # name json expected-message
    printf '%s' "$2" >"$T_TMP/$1.json"
    run forget --policy "$SEED" --snapshots "$T_TMP/$1.json" --output json
    check_rc "invalid: $1 (exit 1)" 1
    check_eq "invalid: $1 message" "$ERR" "lode forget: $T_TMP/$1.json: $3"
    check_eq "invalid: $1 prints no JSON" "$OUT" ""
}
printf '[{"id":' >"$T_TMP/not-json.json"
run forget --policy "$SEED" --snapshots "$T_TMP/not-json.json" --output json
check_rc "invalid: not JSON (exit 1)" 1
check_contains "invalid: not JSON, with the line and column" "$ERR" "lode forget: $T_TMP/not-json.json: line 1, column 7: "
bad_list not-array '{"id":"a","time":"2026-06-01T00:00:00Z"}' \
    'expected an array of snapshots [{"id": ..., "time": ...}], found an object'
bad_list no-id '[{"time":"2026-06-01T00:00:00Z"}]' '[0]: "id" is missing'
bad_list no-time '[{"id":"a"}]' '[0]: "time" is missing'
bad_list bad-time '[{"id":"a","time":"2026-06-01T00:00:00"}]' \
    '[0].time: "2026-06-01T00:00:00" is not an RFC 3339 time (write it as 2026-03-29T01:00:00Z)'
bad_list epoch-time '[{"id":"a","time":1780281000}]' \
    '[0].time: expected an RFC 3339 string such as "2026-03-29T01:00:00Z", found a number'
bad_list id-number '[{"id":1,"time":"2026-06-01T00:00:00Z"}]' '[0].id: expected a string, found a number'
bad_list flag-string '[{"id":"a","time":"2026-06-01T00:00:00Z","incomplete":"false"}]' \
    '[0].incomplete: expected true or false, found a string'
bad_list unknown-key '[{"id":"a","time":"2026-06-01T00:00:00Z","incomplet":true}]' \
    '[0]: unknown key "incomplet" (did you mean "incomplete"?)'
bad_list dup-id '[{"id":"a","time":"2026-06-01T00:00:00Z"},{"id":"a","time":"2026-06-02T00:00:00Z"}]' \
    '[1].id: "a" is also the id of [0]'
printf '[{"id":"a","time":"2026-06-01T00:00:00Z"},{"id":"b"}]' >"$T_TMP/stdin.json"
run forget --policy "$SEED" --snapshots - --output json <"$T_TMP/stdin.json"
check_rc "invalid: from standard input (exit 1)" 1
check_eq "invalid: standard input is named" "$ERR" 'lode forget: <stdin>: [1]: "time" is missing'

finish
