#!/usr/bin/env bash
# The machine contract of docs/commands.md, docs/policy.md, docs/schedule.md and docs/retention.md, checked from the outside as a script or CI
# job would use lode: exit codes, the exact JSON shapes, and the user's page's examples.
# Written apart from each command's own tests, from those pages alone.
source "$(dirname "$0")/lib.sh"
cd "$LODE_ROOT"
EX=docs/examples/etc-and-home.yaml

policy() { # name body... -> writes $T_TMP/name.yaml
    local f="$T_TMP/$1.yaml"
    shift
    printf '%s\n' "$@" >"$f"
    echo "$f"
}

# ---- validate ----
run validate "$EX"
check_rc "validate: the page's example is valid" 0
run validate --output json "$EX"
check_eq "validate json: shape for a valid file" "$(jq -c . <<<"$OUT")" \
    "{\"files\":[{\"file\":\"$EX\",\"valid\":true,\"errors\":[]}]}"

bad=$T_TMP/retension.yaml
sed 's/^  retention:/  retension:/' "$EX" >"$bad"
run validate "$bad"
check_rc "validate: a misspelled block is invalid (exit 1)" 1
check_eq "validate: the issue's exact line for spec.retension" "$(grep -F 'retension' <<<"$OUT$ERR" | head -n 1)" \
    "$bad:15:3: error: spec.retension: unknown field (did you mean \"retention\"?)"
run validate --output json "$bad"
check_rc "validate json: exit 1 when invalid" 1
check_eq "validate json: error object" "$(jq -c '.files[0].errors[0]' <<<"$OUT")" \
    '{"line":15,"column":3,"path":"spec.retension","message":"unknown field (did you mean \"retention\"?)"}'
check_eq "validate json: valid is false" "$(jq -c '.files[0].valid' <<<"$OUT")" false

run validate "$T_TMP/does-not-exist.yaml"
check_rc "validate: an unreadable file is an I/O error (exit 2)" 2
run validate --no-such-flag "$EX"
check_rc "validate: an unknown flag is a usage error (exit 2)" 2

f=$(policy star 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [/etc]' '  schedule:' '    cron: */15 * * * *')
run validate "$f"
check_rc "validate: an unquoted cron starting with * is invalid" 1
check_contains "validate: the error shows the quoted form" "$OUT$ERR" '"*/15 * * * *"'
check_contains "validate: the error is at the cron's line" "$OUT$ERR" "$f:8:"

f=$(policy many 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [etc]' '  schedule: {cron: "0 0 30 2 *", jitter: 25h}' \
    '  retention: {keepLast: "3", keepDayly: 2}' '  limits: {nice: 20, ioniceLevel: 4}')
run validate --output json "$f"
check_rc "validate: several errors, exit 1" 1
n=$(jq '.files[0].errors | length' <<<"$OUT")
if [ "${n:-0}" -ge 7 ]; then pass "validate: all errors of a document in one run ($n)"; else fail "validate: all errors in one run" "got ${n:-none}: $OUT"; fi
sorted=$(jq -c '[.files[0].errors[] | [.line, .column]] | . == sort' <<<"$OUT")
check_eq "validate: errors in document order" "$sorted" true

# ---- schedule: the page's DST examples ----
kyiv=$(policy kyiv 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p, namespace: ops}' spec: \
    '  repository: main' '  paths: [/etc]' '  schedule: {cron: "30 3 * * *", timezone: Europe/Kyiv, jitter: 0s}')
run schedule "$kyiv" --host node-1 --from 2026-03-28T12:00:00Z --count 2 --output json
check_rc "schedule: exit 0" 0
check_eq "schedule: Kyiv 03:30 in the spring gap runs at 04:00 local (shifted)" \
    "$(jq -c '.runs[0]' <<<"$OUT")" \
    '{"slot":"2026-03-29T03:30","slotTime":"2026-03-29T01:00:00Z","runTime":"2026-03-29T01:00:00Z","note":"shifted"}'
check_eq "schedule: header fields" "$(jq -c '[.policy, .host, .timezone, .offsetSeconds]' <<<"$OUT")" \
    '["ops/p","node-1","Europe/Kyiv",0]'
check_eq "schedule: key order of the contract" "$(jq -c 'keys_unsorted' <<<"$OUT")" \
    '["policy","host","timezone","offsetSeconds","alertLimitSeconds","suspended","runs","notes"]'
check_eq "schedule: run key order" "$(jq -c '.runs[0] | keys_unsorted' <<<"$OUT")" \
    '["slot","slotTime","runTime","note"]'
run schedule "$kyiv" --host node-1 --from 2026-10-24T12:00:00Z --count 2 --output json
check_eq "schedule: Kyiv 03:30 on 2026-10-25 runs at the first 03:30 only" \
    "$(jq -c '[.runs[] | [.slot, .slotTime, .note]]' <<<"$OUT")" \
    '[["2026-10-25T03:30","2026-10-25T00:30:00Z","repeated"],["2026-10-26T03:30","2026-10-26T01:30:00Z",null]]'

lh=$(policy lh 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [/etc]' '  schedule: {cron: "15 2 * * *", timezone: Australia/Lord_Howe, jitter: 0s}')
run schedule "$lh" --host h --from 2026-10-03T12:00:00Z --count 1 --output json
check_eq "schedule: Lord Howe 02:15 on 2026-10-04 runs at 02:30 local" \
    "$(jq -c '.runs[0] | [.slot, .slotTime, .note]' <<<"$OUT")" '["2026-10-04T02:15","2026-10-03T15:30:00Z","shifted"]'
check_eq "schedule: namespace defaults to default" "$(jq -r .policy <<<"$OUT")" "default/p"

ny=$(policy ny 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [/etc]' '  schedule: {cron: "@hourly", timezone: America/New_York, jitter: 0s}')
run schedule "$ny" --host h --from 2026-11-01T03:30:00Z --until 2026-11-01T07:30:00Z --output json
check_eq "schedule: New York @hourly on 2026-11-01: 00:00 EDT, 01:00 EDT, 02:00 EST" \
    "$(jq -c '[.runs[] | [.slot, .slotTime]]' <<<"$OUT")" \
    '[["2026-11-01T00:00","2026-11-01T04:00:00Z"],["2026-11-01T01:00","2026-11-01T05:00:00Z"],["2026-11-01T02:00","2026-11-01T07:00:00Z"]]'
check_eq "schedule: the repeated 01:00 is marked" "$(jq -r '.runs[1].note' <<<"$OUT")" repeated
run schedule "$ny" --host h --from 2026-11-01T06:10:00Z --count 1 --output json
check_eq "schedule: from inside the repeated hour, never the second 01:00" \
    "$(jq -r '.runs[0].slotTime' <<<"$OUT")" "2026-11-01T07:00:00Z"

halfhour=$(policy hh 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [/etc]' '  schedule: {cron: "0,30 3 * * *", timezone: Europe/Kyiv, jitter: 0s}')
run schedule "$halfhour" --host h --from 2026-03-28T12:00:00Z --count 2 --output json
check_eq "schedule: non-fixed schedules skip the gap" "$(jq -c '[.runs[].slot]' <<<"$OUT")" \
    '["2026-03-30T03:00","2026-03-30T03:30"]'
check_eq "schedule: skipped local times are listed" "$(jq -c '.notes' <<<"$OUT")" \
    '[{"slot":"2026-03-29T03:00","note":"skipped"},{"slot":"2026-03-29T03:30","note":"skipped"}]'

# Jitter: the offset of docs/schedule.md ("Jitter"), computed here independently.
expect_offset() { # ns name host jitterSeconds
    python3 -c 'import hashlib,sys
ns,name,host,j=sys.argv[1:5]
d=hashlib.sha256(b"lodestore-jitter\0"+(ns+"/"+name).encode()+b"\0"+host.encode()).digest()
print(int.from_bytes(d[:8],"big") % int(j))' "$@"
}
run schedule "$EX" --host node-1 --from 2026-03-26T00:00:00Z --count 3 --output json
want=$(expect_offset default etc-and-home node-1 900)
check_eq "schedule: jitter offset per docs/schedule.md (default/etc-and-home, node-1)" "$(jq .offsetSeconds <<<"$OUT")" "$want"
check_eq "schedule: runTime = slotTime + offset" \
    "$(jq -r '.runs[0] | ((.runTime | fromdate) - (.slotTime | fromdate))' <<<"$OUT")" "$want"
check_eq "schedule: alert limit is maxAge when set (36h)" "$(jq .alertLimitSeconds <<<"$OUT")" 129600

utcd=$(policy utcd 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [/etc]' '  schedule: {cron: "0 1 * * *"}')
run schedule "$utcd" --host h --from 2026-06-01T00:00:00Z --count 1 --output json
check_eq "schedule: UTC daily, default jitter 15m: limit 48h15m" "$(jq .alertLimitSeconds <<<"$OUT")" 173700
run schedule "$kyiv" --host h --from 2026-06-01T00:00:00Z --count 1 --output json
check_eq "schedule: daily in a DST zone, jitter 0: limit 50h (2 x 25h)" "$(jq .alertLimitSeconds <<<"$OUT")" 180000
run schedule "$utcd" --host h --count 1
check_rc "schedule: --from defaults to now" 0
run schedule "$utcd" --host h --from yesterday --count 1
check_rc "schedule: a bad --from is a usage error" 2

# ---- forget ----
pol=$(policy daily3 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [/etc]' '  retention: {keepDaily: 3}')
cat >"$T_TMP/r1.json" <<'J'
[{"id":"s1","time":"2026-05-01T10:00:00Z"},{"id":"s2","time":"2026-05-01T22:00:00Z"},
 {"id":"s3","time":"2026-05-02T09:00:00Z"},{"id":"s4","time":"2026-05-04T01:00:00Z"},
 {"id":"s5","time":"2026-05-04T23:59:00Z"},{"id":"s6","time":"2026-05-05T12:00:00Z"}]
J
run forget --policy "$pol" --snapshots "$T_TMP/r1.json" --output json
check_rc "forget: exit 0" 0
check_eq "forget: keepDaily 3 (R1), newest first with reasons" "$(jq -c . <<<"$OUT")" \
    '{"keep":[{"id":"s6","reasons":["daily","newest-good"]},{"id":"s5","reasons":["daily","newest-good"]},{"id":"s3","reasons":["daily"]}],"forget":[{"id":"s4"},{"id":"s2"},{"id":"s1"}]}'

pol=$(policy none 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [/etc]')
run forget --policy "$pol" --snapshots "$T_TMP/r1.json" --output json
check_eq "forget: no rules keeps everything" "$(jq -c '[.keep[].reasons] | unique' <<<"$OUT")" '[["newest-good","no-rules"],["no-rules"]]'
check_eq "forget: no rules forgets nothing" "$(jq -c '.forget' <<<"$OUT")" '[]'

pol=$(policy last1 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [/etc]' '  retention: {keepLast: 1}')
cat >"$T_TMP/r5.json" <<'J'
[{"id":"s1","time":"2026-06-01T00:00:00Z"},{"id":"s2","time":"2026-06-02T00:00:00Z"},
 {"id":"s3","time":"2026-06-03T00:00:00Z","incomplete":true},
 {"id":"s4","time":"2026-06-04T00:00:00Z","suspicious":true}]
J
run forget --policy "$pol" --snapshots "$T_TMP/r5.json" --output json
check_eq "forget: suspicious kept, incomplete takes a slot, two newest good kept" "$(jq -c . <<<"$OUT")" \
    '{"keep":[{"id":"s4","reasons":["suspicious"]},{"id":"s3","reasons":["last"]},{"id":"s2","reasons":["newest-good"]},{"id":"s1","reasons":["newest-good"]}],"forget":[]}'

cat >"$T_TMP/ties.json" <<'J'
[{"id":"x1","time":"2026-06-01T00:00:00Z"},{"id":"x2","time":"2026-06-02T00:00:00Z"},
 {"id":"a","time":"2026-06-03T01:00:00Z","incomplete":true},{"id":"b","time":"2026-06-03T01:00:00Z","incomplete":true}]
J
run forget --policy "$pol" --snapshots "$T_TMP/ties.json" --output json
check_eq "forget: equal times, the larger id is newer" "$(jq -c . <<<"$OUT")" \
    '{"keep":[{"id":"b","reasons":["last"]},{"id":"x2","reasons":["newest-good"]},{"id":"x1","reasons":["newest-good"]}],"forget":[{"id":"a"}]}'

pol=$(policy within 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [/etc]' '  retention: {keepWithin: 24h}')
cat >"$T_TMP/r6.json" <<'J'
[{"id":"a","time":"2026-03-22T12:00:00Z"},{"id":"b","time":"2026-03-22T11:00:00Z"},
 {"id":"c","time":"2026-03-21T12:00:00Z"},{"id":"d","time":"2026-03-21T11:59:59Z"},
 {"id":"e","time":"2026-03-20T12:00:00Z"}]
J
run forget --policy "$pol" --snapshots "$T_TMP/r6.json" --output json
check_eq "forget: keepWithin is inclusive, from the newest snapshot" "$(jq -c '[.keep[].id], [.forget[].id]' <<<"$OUT" | paste -sd' ')" \
    '["a","b","c"] ["d","e"]'

pol=$(policy monthly 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' 'metadata: {name: p}' spec: \
    '  repository: main' '  paths: [/etc]' '  schedule: {cron: "@daily", timezone: Europe/Kyiv}' '  retention: {keepMonthly: 2}')
cat >"$T_TMP/r3.json" <<'J'
[{"id":"s1","time":"2026-02-15T12:00:00Z"},{"id":"s2","time":"2026-03-31T20:30:00Z"},
 {"id":"s3","time":"2026-03-31T21:30:00Z"},{"id":"s4","time":"2026-04-10T12:00:00Z"},
 {"id":"s5","time":"2026-04-20T12:00:00Z"},{"id":"s6","time":"2026-04-25T12:00:00Z"}]
J
run forget --policy "$pol" --snapshots "$T_TMP/r3.json" --output json
check_eq "forget: months in the schedule's zone (21:30Z on 03-31 is April in Kyiv)" "$(jq -c '[.keep[].id]' <<<"$OUT")" \
    '["s6","s5","s2"]'

echo '{"not":"a list"}' >"$T_TMP/bad.json"
run forget --policy "$pol" --snapshots "$T_TMP/bad.json" --output json
check_rc "forget: a malformed snapshot list is invalid input (exit 1)" 1
run forget --policy "$pol" --snapshots "$T_TMP/missing.json"
check_rc "forget: a missing file is an I/O error (exit 2)" 2

finish
