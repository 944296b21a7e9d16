#!/usr/bin/env bash
# lode schedule: the JSON contract of docs/schedule.md (parsed with jq), the page's
# daylight saving examples, the jitter offset, the alert limit, the human view and
# every exit code. Times are always given with --from: nothing depends on the clock
# except the one check that --from defaults to now.
source "$(dirname "$0")/lib.sh"
cd "$LODE_ROOT"

# policy NAME SCHEDULE_LINES... -> a policy file in $T_TMP (metadata.name p unless NAME has a /)
policy() {
    local name=$1 ns="" f="$T_TMP/$1.yaml"
    shift
    case "$name" in */*) ns=${name%%/*} name=${name#*/} f="$T_TMP/$name.yaml" ;; esac
    {
        echo "apiVersion: lodestore.io/v1alpha1"
        echo "kind: BackupPolicy"
        echo "metadata:"
        echo "  name: $name"
        [ -n "$ns" ] && echo "  namespace: $ns"
        echo "spec:"
        echo "  repository: main"
        echo "  paths: [/etc]"
        printf '%s\n' "$@"
    } >"$f"
    echo "$f"
}

# The jitter offset of docs/schedule.md ("Jitter"), computed independently of lode.
expect_offset() { # ns name host jitterSeconds
    python3 -c 'import hashlib,sys
ns,name,host,j=sys.argv[1:5]
d=hashlib.sha256(b"lodestore-jitter\0"+(ns+"/"+name).encode()+b"\0"+host.encode()).digest()
print(int.from_bytes(d[:8],"big") % int(j))' "$@"
}

kyiv=$(policy ops/kyiv "  schedule:" '    cron: "30 3 * * *"' "    timezone: Europe/Kyiv" "    jitter: 0s")
lh=$(policy lh "  schedule: {cron: \"15 2 * * *\", timezone: Australia/Lord_Howe, jitter: 0s}")
ny=$(policy ny "  schedule: {cron: \"@hourly\", timezone: America/New_York, jitter: 0s}")
ny30=$(policy ny30 "  schedule: {cron: \"*/30 * * * *\", timezone: America/New_York, jitter: 0s}")
half=$(policy half "  schedule: {cron: \"0,30 3 * * *\", timezone: Europe/Kyiv, jitter: 0s}")

# ---- JSON: the page's examples ----
run schedule "$kyiv" --host node-1 --from 2026-03-28T12:00:00Z --count 2 --output json
check_rc "kyiv spring: exit 0" 0
check_eq "kyiv spring: the whole document" "$(jq -c . <<<"$OUT")" \
    '{"policy":"ops/kyiv","host":"node-1","timezone":"Europe/Kyiv","offsetSeconds":0,"alertLimitSeconds":180000,"suspended":false,"runs":[{"slot":"2026-03-29T03:30","slotTime":"2026-03-29T01:00:00Z","runTime":"2026-03-29T01:00:00Z","note":"shifted"},{"slot":"2026-03-30T03:30","slotTime":"2026-03-30T00:30:00Z","runTime":"2026-03-30T00:30:00Z","note":null}],"notes":[]}'
check_eq "key order" "$(jq -c 'keys_unsorted' <<<"$OUT")" \
    '["policy","host","timezone","offsetSeconds","alertLimitSeconds","suspended","runs","notes"]'
check_eq "run key order" "$(jq -c '.runs[0] | keys_unsorted' <<<"$OUT")" '["slot","slotTime","runTime","note"]'

run schedule "$kyiv" --host node-1 --from 2026-10-24T12:00:00Z --count 2 --output json
check_eq "kyiv autumn: the first 03:30 only" "$(jq -c '[.runs[] | [.slot, .slotTime, .note]]' <<<"$OUT")" \
    '[["2026-10-25T03:30","2026-10-25T00:30:00Z","repeated"],["2026-10-26T03:30","2026-10-26T01:30:00Z",null]]'
run schedule "$kyiv" --host node-1 --from 2026-10-25T01:10:00Z --count 1 --output json
check_eq "kyiv autumn: from inside the second 03:xx, the next day" "$(jq -r '.runs[0].slotTime' <<<"$OUT")" \
    2026-10-26T01:30:00Z

run schedule "$lh" --host h --from 2026-10-03T12:00:00Z --count 2 --output json
check_eq "lord howe: 02:15 runs at 02:30 local" "$(jq -c '[.runs[] | [.slot, .slotTime, .note]]' <<<"$OUT")" \
    '[["2026-10-04T02:15","2026-10-03T15:30:00Z","shifted"],["2026-10-05T02:15","2026-10-04T15:15:00Z",null]]'
check_eq "namespace defaults to default" "$(jq -r .policy <<<"$OUT")" default/lh

run schedule "$ny" --host h --from 2026-11-01T03:30:00Z --until 2026-11-01T07:00:00Z --output json
check_eq "new york @hourly: 00:00 EDT, 01:00 EDT, 02:00 EST (until is inclusive)" \
    "$(jq -c '[.runs[] | [.slot, .slotTime, .note]]' <<<"$OUT")" \
    '[["2026-11-01T00:00","2026-11-01T04:00:00Z",null],["2026-11-01T01:00","2026-11-01T05:00:00Z","repeated"],["2026-11-01T02:00","2026-11-01T07:00:00Z",null]]'
run schedule "$ny" --host h --from 2026-11-01T06:10:00Z --count 1 --output json
check_eq "new york: from inside the repeated hour, never the second 01:00" "$(jq -r '.runs[0].slotTime' <<<"$OUT")" \
    2026-11-01T07:00:00Z
run schedule "$ny" --host h --from 2026-11-01T05:00:00Z --count 1 --output json
check_eq "strictly after --from" "$(jq -r '.runs[0].slotTime' <<<"$OUT")" 2026-11-01T07:00:00Z

# ---- notes: skipped local times ----
run schedule "$half" --host h --from 2026-03-28T12:00:00Z --count 2 --output json
check_eq "several fixed times: the gap's are skipped" "$(jq -c '[.runs[].slot]' <<<"$OUT")" \
    '["2026-03-30T03:00","2026-03-30T03:30"]'
check_eq "skipped times are listed" "$(jq -c '.notes' <<<"$OUT")" \
    '[{"slot":"2026-03-29T03:00","note":"skipped"},{"slot":"2026-03-29T03:30","note":"skipped"}]'
run schedule "$ny30" --host h --from 2026-03-08T05:00:00Z --until 2026-03-08T08:00:00Z --output json
check_eq "new york */30 in the spring gap" "$(jq -c '[.runs[].slot]' <<<"$OUT")" \
    '["2026-03-08T00:30","2026-03-08T01:00","2026-03-08T01:30","2026-03-08T03:00","2026-03-08T03:30","2026-03-08T04:00"]'
check_eq "new york */30: 02:00 and 02:30 skipped" "$(jq -c '[.notes[].slot]' <<<"$OUT")" \
    '["2026-03-08T02:00","2026-03-08T02:30"]'
run schedule "$ny30" --host h --from 2026-03-08T05:00:00Z --until 2026-03-08T06:59:59Z --output json
check_eq "a gap after the range is not noted" "$(jq -c '.notes' <<<"$OUT")" '[]'

# ---- jitter and the alert limit ----
EX=docs/examples/etc-and-home.yaml
run schedule "$EX" --host node-1 --from 2026-03-26T00:00:00Z --count 5 --output json
want=$(expect_offset default etc-and-home node-1 900)
check_eq "offset per docs/schedule.md (default/etc-and-home, node-1)" "$(jq .offsetSeconds <<<"$OUT")" "$want"
check_eq "runTime = slotTime + offset for every run" \
    "$(jq -c '[.runs[] | (.runTime | fromdate) - (.slotTime | fromdate)] | unique' <<<"$OUT")" "[$want]"
check_eq "alert limit is alerts.maxAge (36h)" "$(jq .alertLimitSeconds <<<"$OUT")" 129600
for host in node-2 worker-a db-0.example; do
    run schedule "$EX" --host "$host" --from 2026-03-26T00:00:00Z --count 1 --output json
    check_eq "offset for $host" "$(jq .offsetSeconds <<<"$OUT")" "$(expect_offset default etc-and-home "$host" 900)"
done
j24=$(policy team/j24 "  schedule: {cron: \"0 1 * * *\", jitter: 24h}")
run schedule "$j24" --host node-1 --from 2026-06-01T00:00:00Z --count 1 --output json
check_eq "offset with a 24h jitter, namespaced" "$(jq .offsetSeconds <<<"$OUT")" "$(expect_offset team j24 node-1 86400)"

utcd=$(policy utcd "  schedule: {cron: \"0 1 * * *\"}")
run schedule "$utcd" --host h --from 2026-06-01T00:00:00Z --count 1 --output json
check_eq "UTC daily, default jitter 15m: 48h15m" "$(jq .alertLimitSeconds <<<"$OUT")" 173700
check_eq "timezone defaults to UTC" "$(jq -r .timezone <<<"$OUT")" UTC
kyivd=$(policy kyivd "  schedule: {cron: \"30 2 * * *\", timezone: Europe/Kyiv}")
run schedule "$kyivd" --host h --from 2026-06-01T00:00:00Z --count 1 --output json
check_eq "daily in a DST zone: 50h15m" "$(jq .alertLimitSeconds <<<"$OUT")" 180900
feb=$(policy feb "  schedule: {cron: \"0 0 29 2 *\", jitter: 0s}")
run schedule "$feb" --host h --from 2026-06-01T00:00:00Z --count 2 --output json
check_eq "Feb 29: 2028 then 2032" "$(jq -c '[.runs[].slotTime]' <<<"$OUT")" '["2028-02-29T00:00:00Z","2032-02-29T00:00:00Z"]'
check_eq "Feb 29: the limit is twice four years" "$(jq .alertLimitSeconds <<<"$OUT")" $((2 * 1461 * 86400))

# ---- a suspended policy (docs/policy.md, "spec.suspend") ----
susp=$(policy susp "  suspend: true
  schedule: {cron: \"0 3 * * *\", jitter: 0s}")
run schedule "$susp" --host h --from 2026-06-01T00:00:00Z --count 1 --output json
check_eq "suspended: said in JSON, the slots still listed" "$(jq -c '[.suspended, (.runs | length)]' <<<"$OUT")" '[true,1]'
check_eq "suspended: the alert limit stays" "$(jq .alertLimitSeconds <<<"$OUT")" 172800
run schedule "$susp" --host h --from 2026-06-01T00:00:00Z --count 1
check_contains "suspended: said in words" "$OUT" "Suspended (spec.suspend: true): none of these slots runs"

# ---- a policy without a schedule ----
manual=$(policy manual)
run schedule "$manual" --host h --from 2026-06-01T00:00:00Z --count 3 --output json
check_rc "no schedule: exit 0" 0
check_eq "no schedule: no runs, no limit" "$(jq -c . <<<"$OUT")" \
    '{"policy":"default/manual","host":"h","timezone":"UTC","offsetSeconds":0,"alertLimitSeconds":null,"suspended":false,"runs":[],"notes":[]}'
run schedule "$manual" --host h --from 2026-06-01T00:00:00Z --count 3
check_contains "no schedule: said in words" "$OUT" "has no schedule: it runs only when started by hand"
check_contains "no schedule: never overdue" "$OUT" "No alert limit"
manual_age=$(policy manual-age "  alerts: {maxAge: 10d}")
run schedule "$manual_age" --host h --from 2026-06-01T00:00:00Z --count 3 --output json
check_eq "no schedule with maxAge: the limit is maxAge" "$(jq .alertLimitSeconds <<<"$OUT")" 864000

# ---- the human view ----
run schedule "$kyivd" --host node-1 --from 2026-03-27T12:00:00Z --count 3
off=$(expect_offset default kyivd node-1 900)
check_rc "text: exit 0" 0
check_contains "text: header" "$OUT" 'Schedule "30 2 * * *" in Europe/Kyiv'
check_contains "text: this host's offset" "$OUT" "this host runs $((off / 60))m$((off % 60))s after each slot"
check_contains "text: local time with abbreviation" "$OUT" "Sun 2026-03-29 02:30 EET"
check_contains "text: UTC" "$OUT" "2026-03-29 00:30:00Z"
check_contains "text: after the change" "$OUT" "Mon 2026-03-30 02:30 EEST"
check_contains "text: the limit in words" "$OUT" "Overdue after 50h15m without a backup"
run schedule "$kyiv" --host node-1 --from 2026-03-28T12:00:00Z --count 2
check_contains "text: shifted slot at 04:00 EEST" "$OUT" "Sun 2026-03-29 04:00 EEST"
check_contains "text: shifted note" "$OUT" \
    "note: on 2026-03-29 clocks jump from 03:00 EET to 04:00 EEST: the 03:30 slot does not exist and runs at 04:00"
run schedule "$kyiv" --host node-1 --from 2026-10-24T12:00:00Z --count 2
check_contains "text: repeated note" "$OUT" \
    "note: on 2026-10-25 clocks go back from 04:00 EEST to 03:00 EET: 03:00 to 04:00 happens twice"
run schedule "$half" --host h --from 2026-03-28T12:00:00Z --count 2
check_contains "text: skipped note" "$OUT" \
    "note: on 2026-03-29 clocks jump from 03:00 EET to 04:00 EEST: 03:00 and 03:30 do not exist and are skipped"
run schedule "$feb" --host h --from 2026-06-01T00:00:00Z --count 1
check_contains "text: a long limit also in years" "$OUT" "(about 8.0 years)"
every=$(policy every "  schedule: {cron: \"* * * * *\", timezone: Antarctica/Troll, jitter: 0s}")
run schedule "$every" --host h --from 2026-03-29T00:30:00Z --count 40
check_contains "text: a long run of skipped minutes is summarised" "$OUT" \
    "the 120 slots from 01:00 to 02:59 do not exist and are skipped"

# ---- other inputs ----
run schedule - --host node-1 --from 2026-03-28T12:00:00Z --count 1 --output json <"$kyiv"
check_eq "policy on standard input" "$(jq -r '.runs[0].slot' <<<"$OUT")" 2026-03-29T03:30
kiev=$(policy kiev "  schedule: {cron: \"30 3 * * *\", timezone: Europe/Kiev, jitter: 0s}")
run schedule "$kiev" --host h --from 2026-03-28T12:00:00Z --count 1 --output json
check_eq "a backward link (Europe/Kiev) works" "$(jq -c '[.timezone, .runs[0].slotTime]' <<<"$OUT")" \
    '["Europe/Kiev","2026-03-29T01:00:00Z"]'
run schedule "$kyiv" --host h --from 2026-03-29T04:00:00+03:00 --count 1 --output json
check_eq "--from with an offset" "$(jq -r '.runs[0].slotTime' <<<"$OUT")" 2026-03-30T00:30:00Z
run schedule "$kyiv" --host h --count 3 --output json
now=$(date -u +%s)
check_rc "--from defaults to now" 0
check_eq "--from now: the first run is in the future" \
    "$(jq --argjson now "$now" '(.runs[0].slotTime | fromdate) > ($now - 5)' <<<"$OUT")" true
run schedule "$kyiv" --host h --from 2026-03-28T12:00:00Z --count 100000 --output json
check_eq "--count 100000 gives 100000 runs" "$(jq '.runs | length' <<<"$OUT")" 100000

# ---- exit codes ----
run schedule --help
check_rc "--help: exit 0" 0
check_contains "--help: usage" "$OUT" "usage: lode schedule FILE --host H"
run schedule
check_rc "no FILE: exit 2" 2
check_contains "no FILE: says so" "$ERR" "the policy FILE is required"
run schedule "$kyiv" --count 1
check_rc "no --host: exit 2" 2
check_contains "no --host: says so" "$ERR" "--host H is required"
run schedule "$kyiv" --host h
check_rc "neither --count nor --until: exit 2" 2
check_contains "neither: says so" "$ERR" "give either --count N or --until T"
run schedule "$kyiv" --host h --count 1 --until 2027-01-01T00:00:00Z
check_rc "both --count and --until: exit 2" 2
for bad in 0 -1 abc 100001 1.5 ""; do
    run schedule "$kyiv" --host h --count "$bad"
    check_rc "--count \"$bad\": exit 2" 2
done
check_contains "--count: what is allowed" "$ERR" "--count must be a whole number from 1 to 100000"
run schedule "$kyiv" --host h --from yesterday --count 1
check_rc "bad --from: exit 2" 2
check_contains "bad --from: RFC 3339" "$ERR" "RFC 3339"
run schedule "$kyiv" --host h --from 2026-06-01T00:00:00Z --until 2026-05-01T00:00:00Z
check_rc "--until before --from: exit 2" 2
run schedule "$kyiv" --host h --from 2026-06-01T00:00:00Z --until 2026-13-01T00:00:00Z
check_rc "bad --until: exit 2" 2
run schedule "$every" --host h --from 2026-01-01T00:00:00Z --until 2027-01-01T00:00:00Z
check_rc "--until with too many runs: exit 2" 2
check_contains "--until with too many runs: says so" "$ERR" "more than 100000 runs"
run schedule "$kyiv" --host h --count 1 --output xml
check_rc "bad --output: exit 2" 2
run schedule "$kyiv" --host h --count 1 --bogus
check_rc "unknown flag: exit 2" 2
run schedule "$kyiv" "$kyiv" --host h --count 1
check_rc "two files: exit 2" 2
run schedule "$T_TMP/missing.yaml" --host h --count 1
check_rc "missing file: exit 2" 2
run schedule "$kyiv" --host h --count 1 --zoneinfo "$T_TMP/no-such-dir"
check_rc "bad --zoneinfo: exit 2" 2
badcron=$(policy badcron "  schedule: {cron: \"0 0 30 2 *\"}")
run schedule "$badcron" --host h --count 1
check_rc "invalid policy: exit 1" 1
check_contains "invalid policy: the cron message" "$ERR" "can never fire: February has no day 30"
badzone=$(policy badzone "  schedule: {cron: \"0 1 * * *\", timezone: Mars/Olympus}")
run schedule "$badzone" --host h --count 1
check_rc "unknown zone: exit 1" 1

finish
