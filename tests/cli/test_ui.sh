#!/usr/bin/env bash
# lode ui without a cluster: the door (token, Host, cross-origin writes, methods,
# body size), the response headers, the page or the no-page notice, and every
# JSON endpoint against the command whose answer it shares (validate, schedule,
# forget), including the daylight saving calendar of the page's seed examples.
# The cluster-backed endpoints (status, apply) are tested in tests/e2e/test_ui.sh.
source "$(dirname "$0")/lib.sh"
cd "$LODE_ROOT" || exit 2
PAGE=docs/examples/etc-and-home.yaml
export KUBECONFIG=$T_TMP/no-such-kubeconfig

# Flags.
run ui --listen nonsense
check_rc "--listen without a port: exit 2" 2
check_contains "--listen error names the form" "$ERR" "ADDR:PORT"
run ui --listen localhost:0
check_rc "--listen with a name: exit 2 (names are not resolved)" 2
check_contains "--listen name error says why" "$ERR" "not an IP address"
run ui extra
check_rc "an argument: exit 2" 2
run ui --help
check_rc "--help: exit 0" 0
check_contains "--help names the default address" "$OUT" "127.0.0.1:7480"

# Start it on a free port and wait (with a deadline) for the URL.
env -u LODE_REPOSITORY "$LODE" ui --listen 127.0.0.1:0 >"$T_TMP/ui.out" 2>"$T_TMP/ui.err" &
UI_PID=$!
trap 'kill $UI_PID 2>/dev/null; rm -rf "$T_TMP"' EXIT
for _ in $(seq 100); do
    grep -q '^http://' "$T_TMP/ui.out" 2>/dev/null && break
    kill -0 $UI_PID 2>/dev/null || break
    sleep 0.1
done
URL=$(head -n1 "$T_TMP/ui.out")
check_contains "prints one URL with a token on 127.0.0.1" "$URL" "http://127.0.0.1:"
PORT=$(sed -E 's|^http://127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$URL")
TOKEN=${URL##*token=}
check_eq "the token is 48 hex digits" "$(grep -cE '^[0-9a-f]{48}$' <<<"$TOKEN")" 1
check_contains "no cluster is a warning, not a failure" "$(cat "$T_TMP/ui.err")" "no cluster"
B=http://127.0.0.1:$PORT
AUTH=(-H "Authorization: Bearer $TOKEN")
JSON=(-H "Content-Type: application/json")

# code ARGS...: the HTTP status of one request.
code() { curl -s -o "$T_TMP/body" -w '%{http_code}' "$@"; }

# The door.
check_eq "no token: the page itself is served (it holds no data)" "$(code "$B/")" 200
check_eq "no token on the API: 401" "$(code "$B/api/info")" 401
# The wrong token differs from the real one in its last character whatever that is
# (replacing it by a fixed digit was the real token once in sixteen runs).
case $TOKEN in *0) WRONG=${TOKEN%?}1 ;; *) WRONG=${TOKEN%?}0 ;; esac
check_eq "a wrong token: 401" "$(code -H "Authorization: Bearer $WRONG" "$B/api/info")" 401
check_eq "a wrong token in the URL: 401" "$(code "$B/?token=abc")" 401
check_contains "... saying it is not this run's" "$(cat "$T_TMP/body")" "URL of an earlier run"
check_eq "another Host (DNS rebinding): 403" \
    "$(code "${AUTH[@]}" -H "Host: attacker.example:$PORT" "$B/api/info")" 403
check_contains "the Host refusal says why" "$(cat "$T_TMP/body")" "DNS rebinding"
check_eq "another Host with the token in the URL: 403" \
    "$(code -H "Host: attacker.example:$PORT" "$B/?token=$TOKEN")" 403
check_eq "localhost:PORT is the same address: 200" \
    "$(code "${AUTH[@]}" -H "Host: localhost:$PORT" "$B/api/info")" 200
check_eq "the token URL: the page" "$(code -D "$T_TMP/h" "$B/?token=$TOKEN")" 200
# A browser sends a host's cookies to every port of it: the token is never one.
check_eq "it sets no cookie" "$(grep -ci '^set-cookie' "$T_TMP/h")" 0
check_eq "a cookie holding the token does not open the API" \
    "$(code -H "Cookie: lode_ui_$PORT=$TOKEN" "$B/api/info")" 401
Y=$(jq -Rs . <"$PAGE")
check_eq "a cross-origin POST: 403" "$(code "${AUTH[@]}" "${JSON[@]}" \
    -H "Origin: http://attacker.example" -d "{\"yaml\":$Y}" "$B/api/validate")" 403
check_eq "Sec-Fetch-Site cross-site: 403" "$(code "${AUTH[@]}" "${JSON[@]}" \
    -H "Sec-Fetch-Site: cross-site" -d "{\"yaml\":$Y}" "$B/api/validate")" 403
check_eq "a same-origin POST: 200" "$(code "${AUTH[@]}" "${JSON[@]}" \
    -H "Origin: http://127.0.0.1:$PORT" -H "Sec-Fetch-Site: same-origin" \
    -d "{\"yaml\":$Y}" "$B/api/validate")" 200
check_eq "a form POST (not JSON): 415" "$(code "${AUTH[@]}" \
    -H "Content-Type: application/x-www-form-urlencoded" -d "yaml=x" "$B/api/validate")" 415
check_eq "PUT: 405" "$(code "${AUTH[@]}" -X PUT "$B/api/validate")" 405
check_eq "a body over 8 MiB: 413" "$(head -c 9000000 /dev/zero | tr '\0' ' ' |
    code "${AUTH[@]}" "${JSON[@]}" --data-binary @- "$B/api/validate")" 413
check_eq "a body that is not JSON: 400" \
    "$(code "${AUTH[@]}" "${JSON[@]}" -d '{"yaml":' "$B/api/validate")" 400
check_eq "a body without yaml: 400" "$(code "${AUTH[@]}" "${JSON[@]}" -d '{}' "$B/api/validate")" 400
check_eq "an unknown endpoint: 404" "$(code "${AUTH[@]}" "$B/api/nothing")" 404
check_eq "an unknown file: 404" "$(code "${AUTH[@]}" "$B/etc/passwd")" 404

# Headers of the page.
code "${AUTH[@]}" -D "$T_TMP/h" "$B/" >/dev/null
H=$(tr -d '\r' <"$T_TMP/h")
check_contains "CSP: nothing by default" "$H" "Content-Security-Policy: default-src 'none'; script-src 'self'"
check_contains "CSP: no framing" "$H" "frame-ancestors 'none'"
check_contains "nosniff" "$H" "X-Content-Type-Options: nosniff"
check_contains "no referrer" "$H" "Referrer-Policy: no-referrer"
if [ "$(curl -s "${AUTH[@]}" "$B/api/info" | jq .pageBuilt)" = true ]; then
    check_contains "the page: HTML" "$(cat "$T_TMP/body")" "<!doctype html>"
    check_eq "the page names no other host" \
        "$(grep -cE '(src|href)="(https?:)?//' "$T_TMP/body")" 0
else
    check_contains "built without npm: the page says so" "$(cat "$T_TMP/body")" "built without the web page"
fi

# post PATH BODY: the JSON answer, leaving $STATUS.
post() {
    STATUS=$(curl -s -o "$T_TMP/body" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" -d "$2" "$B$1")
    BODY=$(cat "$T_TMP/body")
}

# validate: the same answer as lode validate --output json.
post /api/validate "{\"yaml\":$Y}"
check_eq "validate the page's example: valid" "$(jq -c . <<<"$BODY")" \
    '{"file":"policy.yaml","valid":true,"errors":[]}'
sed 's/^  retention:/  retension:/' "$PAGE" >"$T_TMP/policy.yaml"
post /api/validate "{\"yaml\":$(jq -Rs . <"$T_TMP/policy.yaml")}"
check_eq "validate a typo: 200" "$STATUS" 200
(cd "$T_TMP" && "$LODE" validate --output json policy.yaml >cli.json)
check_eq "validate a typo: the CLI's errors, line and column" "$(jq -c . <<<"$BODY")" \
    "$(jq -c '.files[0]' "$T_TMP/cli.json")"
check_contains "with a did-you-mean" "$BODY" 'did you mean \"retention\"'

# schedule: each host's runs are lode schedule's.
post /api/schedule "{\"yaml\":$Y,\"hosts\":[\"node-1\",\"node-2\"],\"from\":\"2026-03-28T00:00:00Z\",\"count\":5}"
check_eq "schedule: 200" "$STATUS" 200
for h in node-1 node-2; do
    "$LODE" schedule "$PAGE" --host $h --from 2026-03-28T00:00:00Z --count 5 --output json >"$T_TMP/s.json"
    check_eq "schedule $h: the CLI's answer" \
        "$(jq -c --arg h $h '.hosts[] | select(.host == $h) | del(.runs[].runLocal, .runs[].abbrev)' <<<"$BODY")" \
        "$(jq -c . "$T_TMP/s.json")"
done
check_eq "schedule: local run time with its offset" "$(jq -r '.hosts[0].runs[2].runLocal' <<<"$BODY")" \
    "$(jq -r '.hosts[0].runs[2].runTime' <<<"$BODY" | xargs -I{} date -u -d {} +%s | xargs -I{} env TZ=Europe/Kyiv date -d @{} +%Y-%m-%dT%H:%M:%S%:z)"
check_eq "schedule: the limit and where it comes from" "$(jq -c .limit <<<"$BODY")" \
    '{"seconds":129600,"source":"alerts.maxAge"}'

# The page's seed examples in the calendar.
sched_days() { # cron zone
    sed -e "s|^    cron: .*|    cron: \"$1\"|" -e "s|^    timezone: .*|    timezone: $2|" -e '/^  alerts:/,$d' "$PAGE" >"$T_TMP/p.yaml"
    post /api/schedule "{\"yaml\":$(jq -Rs . <"$T_TMP/p.yaml"),\"hosts\":[\"node-1\"],\"from\":\"2026-01-01T00:00:00Z\"}"
    jq -r '.calendar.days[] | "\(.date) \(.kind): \(.text)"' <<<"$BODY"
}
D=$(sched_days "30 3 * * *" Europe/Kyiv)
check_contains "Kyiv 2026-03-29: shifted to 04:00" "$D" \
    "2026-03-29 shifted: clocks jump from 03:00 to 04:00: 03:30 does not exist, so the slot runs at 04:00"
check_contains "Kyiv 2026-10-25: the first 03:30 only" "$D" \
    "2026-10-25 repeated: clocks go back from 04:00 to 03:00: 03:30 happens twice and runs the first time only"
check_eq "Kyiv: two notes in the year" "$(wc -l <<<"$D")" 2
sched_days "30 3 * * *" Europe/Kyiv >/dev/null
check_eq "Kyiv daily without maxAge: the limit is derived (50h15m)" \
    "$(jq -c .limit <<<"$BODY")" '{"seconds":180900,"source":"schedule","longestGapSeconds":90000,"jitterSeconds":900}'
D=$(sched_days "@hourly" America/New_York)
check_contains "New York @hourly 2026-11-01: 01:00 repeated" "$D" \
    "2026-11-01 repeated: clocks go back from 02:00 to 01:00: 01:00 happens twice and runs the first time only (EDT)"
check_contains "New York @hourly 2026-03-08: 02:00 skipped" "$D" \
    "2026-03-08 skipped: clocks jump from 02:00 to 03:00: 02:00 does not exist and is skipped"
D=$(sched_days "15 2 * * *" Australia/Lord_Howe)
check_contains "Lord Howe 2026-10-04: 02:15 runs at 02:30" "$D" "2026-10-04 shifted: clocks jump from 02:00 to 02:30"
D=$(sched_days "30 3 * * *" UTC)
check_eq "UTC: no notes" "$D" ""

post /api/schedule "{\"yaml\":$Y,\"hosts\":[]}"
check_eq "schedule without hosts: 400" "$STATUS" 400
post /api/schedule "{\"yaml\":$Y,\"hosts\":[\"n\"],\"from\":\"yesterday\"}"
check_eq "schedule with a bad time: 400" "$STATUS" 400
post /api/schedule "{\"yaml\":$(jq -Rs . <"$T_TMP/policy.yaml"),\"hosts\":[\"n\"]}"
check_eq "schedule of an invalid policy: 422" "$STATUS" 422
check_eq "with the validate errors" "$(jq -c .errors[0].line <<<"$BODY")" 15
sed -e 's|^    cron: .*|    cron: "* * * * *"|' "$PAGE" >"$T_TMP/m.yaml"
post /api/schedule "{\"yaml\":$(jq -Rs . <"$T_TMP/m.yaml"),\"hosts\":[\"n\"],\"days\":14}"
check_eq "every minute for 14 days: cut at 500 runs" "$(jq '[(.hosts[0].runs | length), .hosts[0].truncated] | @csv' <<<"$BODY")" '"500,true"'

# retention: the same keep/forget as lode forget.
cat >"$T_TMP/snaps.json" <<'JSON'
[{"id":"a","time":"2026-03-01T01:00:00Z"},{"id":"b","time":"2026-03-02T01:00:00Z"},
 {"id":"c","time":"2026-03-02T02:00:00Z","suspicious":true},{"id":"d","time":"2026-03-03T01:00:00Z","incomplete":true},
 {"id":"e","time":"2026-03-10T01:00:00Z"},{"id":"f","time":"2026-04-01T01:00:00Z"}]
JSON
post /api/retention "{\"yaml\":$Y,\"snapshots\":$(cat "$T_TMP/snaps.json")}"
check_eq "retention: 200" "$STATUS" 200
"$LODE" forget --policy "$PAGE" --snapshots "$T_TMP/snaps.json" --output json >"$T_TMP/f.json"
check_eq "retention: lode forget's answer" "$(jq -c '{keep, forget}' <<<"$BODY")" "$(jq -c . "$T_TMP/f.json")"
check_eq "retention: each snapshot with its local time and reasons" \
    "$(jq -c '.snapshots[] | select(.id == "c") | [.local, .keep, .reasons]' <<<"$BODY")" \
    '["2026-03-02T04:00:00+02:00",true,["suspicious"]]'
# The history ends at a given time, so the count does not depend on the clock: the
# policy runs at 02:30 Kyiv (00:30 UTC in winter, 23:30 UTC in summer), so a window of
# 120 days that crosses the end of summer time holds 120 runs when it ends at noon UTC
# and 119 when it ends at 00:30 UTC, before that day's run (a host's run is at most
# 15 minutes of jitter and the minute of upload later) (docs/ui.md, "Retention").
post /api/retention "{\"yaml\":$Y,\"simulate\":{\"days\":120,\"host\":\"node-1\",\"until\":\"2026-12-05T00:30:00Z\"}}"
check_eq "a simulated history ending before the day's run: 119 runs in 120 days" "$(jq '.snapshots | length' <<<"$BODY")" 119
check_eq "... the newest is the day before's run" "$(jq -r '.snapshots[0].local[0:10]' <<<"$BODY")" 2026-12-04
post /api/retention "{\"yaml\":$Y,\"simulate\":{\"days\":120,\"host\":\"node-1\",\"until\":\"2026-12-04T00:00:00+02:00x\"}}"
check_eq "a malformed end of the history: 400" "$STATUS" 400
post /api/retention "{\"yaml\":$Y,\"simulate\":{\"days\":120,\"host\":\"node-1\",\"until\":\"2026-12-05T12:00:00Z\"}}"
check_eq "a simulated history: one snapshot a day for 120 days" "$(jq '.snapshots | length' <<<"$BODY")" 120
check_eq "it is marked simulated" "$(jq .simulated <<<"$BODY")" true
jq '[.snapshots[] | {id, time}]' <<<"$BODY" >"$T_TMP/sim.json"
"$LODE" forget --policy "$PAGE" --snapshots "$T_TMP/sim.json" --output json >"$T_TMP/f.json"
check_eq "the simulated history's keep and forget are lode forget's" \
    "$(jq -c '{keep, forget}' <<<"$BODY")" "$(jq -c . "$T_TMP/f.json")"
post /api/retention "{\"yaml\":$Y,\"catalog\":{\"host\":\"node-1\"}}"
check_eq "the repository's snapshots without a repository: 409" "$STATUS" 409
check_contains "saying how to give one" "$BODY" "--repo"
post /api/retention "{\"yaml\":$Y,\"catalog\":{}}"
check_eq "the repository's snapshots of no host: 400" "$STATUS" 400
post /api/retention "{\"yaml\":$Y,\"snapshots\":[{\"id\":\"a\"}]}"
check_eq "a snapshot without time: 400" "$STATUS" 400
check_contains "named as lode forget names it" "$BODY" "[0]"

# The snapshot browser (docs/ui.md, "Snapshots") without a repository: each request
# that is malformed is refused before the repository is asked, the rest say how to
# give one. With a repository (unknown snapshot, wrong key, a path it lacks):
# tests/e2e/test_ui.sh.
ID=20261203T031502Z-9f3c2a1b7d4e6058
post /api/browse/snapshots '{}'
check_eq "snapshots without a repository: 409" "$STATUS" 409
check_contains "saying how to give one" "$BODY" "--repo"
post /api/browse/ls "{\"snapshot\":\"$ID\",\"path\":\"/etc\"}"
check_eq "a directory without a repository: 409" "$STATUS" 409
post /api/browse/diff "{\"snapshot\":\"$ID\"}"
check_eq "a diff without a repository: 409" "$STATUS" 409
post /api/browse/ls '{"path":"/etc"}'
check_eq "a directory of no snapshot: 400" "$STATUS" 400
check_contains "naming what is missing" "$BODY" '\"snapshot\"'
for bad in etc /etc/../root /etc/./x 7; do
    post /api/browse/ls "{\"snapshot\":\"$ID\",\"path\":$(jq -n --arg p "$bad" 'if $p == "7" then 7 else $p end')}"
    check_eq "path $bad: 400 before any request" "$STATUS" 400
done
check_contains "saying what a path is" "$BODY" "absolute path without . or .. parts"
post /api/browse/diff "{\"snapshot\":\"$ID\",\"against\":\"\"}"
check_eq "a diff against an empty id: 400" "$STATUS" 400
post /api/browse/nope '{}'
check_eq "an unknown browse endpoint: 404" "$STATUS" 404
check_eq "the browser needs the token too: 401" \
    "$(code "${JSON[@]}" -d '{}' "$B/api/browse/snapshots")" 401
post /api/restore '{"yaml":"kind: Restore"}'
check_eq "a Restore without its object: 400" "$STATUS" 400
post /api/restore '{"object":{"apiVersion":"lodestore.io/v1alpha1","kind":"BackupPolicy","metadata":{"name":"x"}}}'
check_eq "another kind through the Restore endpoint: 400" "$STATUS" 400
check_contains "it writes Restores only" "$BODY" "kind: Restore"
post /api/restore '{"object":{"apiVersion":"lodestore.io/v1alpha1","kind":"Restore","metadata":{}}}'
check_eq "a Restore without a name: 400" "$STATUS" 400
post /api/restore '{"object":{"apiVersion":"lodestore.io/v1alpha1","kind":"Restore","metadata":{"name":"r"}},"dryRun":"yes"}'
check_eq "dryRun that is not a boolean: 400" "$STATUS" 400
post /api/restore '{"object":{"apiVersion":"lodestore.io/v1alpha1","kind":"Restore","metadata":{"name":"r"},"spec":{}}}'
check_eq "a Restore without a cluster: 503" "$STATUS" 503

# The cluster endpoints say there is no cluster.
check_eq "status without a cluster: 503" "$(code "${AUTH[@]}" "$B/api/status")" 503
check_contains "saying why" "$(cat "$T_TMP/body")" "no cluster"
post /api/apply "{\"yaml\":$Y}"
check_eq "apply without a cluster: 503" "$STATUS" 503
post /api/apply "{\"yaml\":$(jq -Rs . <"$T_TMP/policy.yaml")}"
check_eq "apply of an invalid policy: 422 before any cluster is asked" "$STATUS" 422

# Ctrl-C stops it cleanly.
kill -INT $UI_PID
for _ in $(seq 50); do kill -0 $UI_PID 2>/dev/null || break; sleep 0.1; done
wait $UI_PID
check_eq "SIGINT: exit 0" "$?" 0
finish
