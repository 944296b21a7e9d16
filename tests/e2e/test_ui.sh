#!/usr/bin/env bash
# lode ui against the real control plane of tests/env: the fleet endpoint gives what
# lode status gives; apply runs a server-side dry run first (nothing stored), then
# applies, and lists the changes field by field; the snapshot browser lists, opens and
# diffs real snapshots on versitygw, with every error path (an unknown snapshot, a bad
# path, no key, a wrong key); the page (Debian's chromium) applies a policy, shows an
# overdue host, and browses a suspicious snapshot to a Restore it applies
# (tests/ui/cluster.mjs, tests/ui/snapshots.mjs).
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LODE=${LODE:-$ROOT/build/lode}
case "$LODE" in /*) ;; *) LODE="$ROOT/$LODE" ;; esac
NS=ui-$(openssl rand -hex 3)
UI_PID=
U_PID=

cleanup() {
    [ -n "$UI_PID" ] && kill "$UI_PID" 2>/dev/null && wait "$UI_PID" 2>/dev/null
    [ -n "$U_PID" ] && kill "$U_PID" 2>/dev/null && wait "$U_PID" 2>/dev/null
    kc delete ns "$NS" --wait=false >/dev/null 2>&1
    env_delete_nodes "$NS-n" >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT
utc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
# backup NAME HOST PHASE COMPLETION-EPOCH: a Backup with its status, as the controller writes it.
backup() {
    kc -n "$NS" apply -f - >/dev/null <<EOF2 || return 1
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: $1, labels: {lodestore.io/policy: fleet}}
spec: {policy: fleet, host: $2, slot: "", trigger: manual}
EOF2
    kc -n "$NS" patch backup "$1" --subresource=status --type=merge \
        -p "{\"status\":{\"phase\":\"$3\",\"completionTime\":\"$(utc "$4")\"}}" >/dev/null
}

env_crds
kc create namespace "$NS" >/dev/null
env_create_nodes 2 "$NS-n" role=ui

# A policy whose hosts are n-0 (a success 10 minutes ago) and n-1 (3 hours ago, limit 1h).
cat >"$T_TMP/fleet.yaml" <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: fleet, namespace: $NS}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: ui}
  schedule: {cron: "0 * * * *", timezone: UTC}
  alerts: {maxAge: 1h}
EOF
"$LODE" apply -f "$T_TMP/fleet.yaml" --context admin >/dev/null
now=$(date +%s)
backup b0 "$NS-n-0" Succeeded $((now - 600))
backup b1 "$NS-n-1" Succeeded $((now - 3 * 3600))
# An older Backup of n-0 whose snapshot the agent marked suspicious (as the controller
# copies it from the agent's termination message).
backup b2 "$NS-n-0" Succeeded $((now - 1200))
kc -n "$NS" patch backup b2 --subresource=status --type=merge \
    -p '{"status":{"snapshot":{"id":"20261203T080000Z-00000000000000aa","suspicious":true}}}' >/dev/null

# A repository with three real snapshots of n-0, for the retention view's catalog.
env_lode_s3
export LODE_KEY_FILE=$T_TMP/key
REPO=s3:$S3_ENDPOINT/$S3_BUCKET/$NS
head -c 32 /dev/urandom | base64 >"$LODE_KEY_FILE"
chmod 600 "$LODE_KEY_FILE" # lode refuses a key file open to others (docs/repository.md)
mkdir -p "$T_TMP/root/etc"
"$LODE" init --repo "$REPO" >/dev/null
sed 's/alerts: {maxAge: 1h}/alerts: {maxAge: 1h}\n  retention: {keepLast: 2}/' "$T_TMP/fleet.yaml" >"$T_TMP/fleet-ret.yaml"
for i in 1 2 3; do
    echo "$i" >"$T_TMP/root/etc/generation"
    "$LODE" backup --repo "$REPO" --policy "$T_TMP/fleet-ret.yaml" --host "$NS-n-0" --root "$T_TMP/root" >/dev/null
done

"$LODE" ui --listen 127.0.0.1:0 --context admin --namespace "$NS" --repo "$REPO" >"$T_TMP/ui.out" 2>"$T_TMP/ui.err" &
UI_PID=$!
for _ in $(seq 100); do
    grep -q '^http://' "$T_TMP/ui.out" 2>/dev/null && break
    kill -0 $UI_PID 2>/dev/null || break
    sleep 0.1
done
URL=$(head -n1 "$T_TMP/ui.out")
check_contains "lode ui prints its URL" "$URL" "http://127.0.0.1:"
B=${URL%%/?token=*}
AUTH=(-H "Authorization: Bearer ${URL##*token=}")
JSON=(-H "Content-Type: application/json")
check_eq "with a cluster, no warning" "$(cat "$T_TMP/ui.err")" ""

# The retention view reads the repository's catalog: lode forget's answer on it.
check_eq "/api/info names the repository" "$(curl -s "${AUTH[@]}" "$B/api/info" | jq -r .repository)" "$REPO"
YR=$(jq -Rs . "$T_TMP/fleet-ret.yaml")
curl -s "${AUTH[@]}" "${JSON[@]}" -d "{\"yaml\":$YR,\"catalog\":{\"host\":\"$NS-n-0\"}}" "$B/api/retention" >"$T_TMP/ret.json"
"$LODE" forget --repo "$REPO" --policy "$T_TMP/fleet-ret.yaml" --host "$NS-n-0" --dry-run --output json >"$T_TMP/forget.json"
check_eq "the catalog's three snapshots, as the repository has them" \
    "$(jq -c '[.source, (.snapshots | length)]' "$T_TMP/ret.json")" '["catalog",3]'
check_eq "keep and forget on the real snapshots are lode forget's" \
    "$(jq -c '{keep, forget}' "$T_TMP/ret.json")" "$(jq -c '.hosts[0] | {keep, forget}' "$T_TMP/forget.json")"
curl -s "${AUTH[@]}" "${JSON[@]}" -d "{\"yaml\":$YR,\"catalog\":{\"host\":\"$NS-n-9\"}}" "$B/api/retention" >"$T_TMP/ret9.json"
check_eq "a host without snapshots: an empty history" "$(jq -c '[.source, (.snapshots | length)]' "$T_TMP/ret9.json")" '["catalog",0]'

# The fleet endpoint is lode status.
curl -s "${AUTH[@]}" "$B/api/status" >"$T_TMP/ui-status.json"
"$LODE" status --context admin -n "$NS" --output json >"$T_TMP/cli-status.json"
view='[.policies[] | {policy, valid, alertLimitSeconds, overdue, hosts: [.hosts[] | {host, selected, lastSuccess, overdue, nextRun}]}]'
check_eq "/api/status gives lode status's policies and hosts" \
    "$(jq -c "$view" "$T_TMP/ui-status.json")" "$(jq -c "$view" "$T_TMP/cli-status.json")"
check_eq "the suspicious snapshot is counted on its host, with its id" \
    "$(jq -c '[.policies[0].hosts[] | [.host, .suspicious, .lastSuspicious]]' "$T_TMP/ui-status.json")" \
    "[[\"$NS-n-0\",1,\"20261203T080000Z-00000000000000aa\"],[\"$NS-n-1\",0,null]]"
check_contains "lode status says it in words" \
    "$("$LODE" status --context admin -n "$NS")" "$NS-n-0: 1 suspicious snapshot, the newest 20261203T080000Z-00000000000000aa"
check_eq "n-1 is overdue, n-0 is not" \
    "$(jq -c '[.policies[0].hosts[] | [.host, .overdue]]' "$T_TMP/ui-status.json")" \
    "[[\"$NS-n-0\",false],[\"$NS-n-1\",true]]"
check_eq "it names the namespace and the server" \
    "$(jq -r '[.namespace, (.server | startswith("https://127.0.0.1:"))] | @tsv' "$T_TMP/ui-status.json")" "$NS	true"

# apply: a dry run stores nothing; apply stores; a change is listed field by field.
P=$(sed 's/name: fleet/name: api-made/' "$T_TMP/fleet.yaml" | jq -Rs .)
curl -s "${AUTH[@]}" "${JSON[@]}" -d "{\"yaml\":$P,\"dryRun\":true}" "$B/api/apply" >"$T_TMP/r.json"
check_eq "dry run: would be created" "$(jq -r '[.dryRun, .action, .namespace] | @tsv' "$T_TMP/r.json")" "true	created	$NS"
check_contains "dry run: lists the spec" "$(jq -c '.changes' "$T_TMP/r.json")" '{"path":"spec.alerts.maxAge","old":null,"new":"1h"}'
check_eq "dry run: nothing stored" "$(kc -n "$NS" get backuppolicy api-made -o name 2>/dev/null)" ""
curl -s "${AUTH[@]}" "${JSON[@]}" -d "{\"yaml\":$P,\"dryRun\":false}" "$B/api/apply" >"$T_TMP/r.json"
check_eq "apply: created" "$(jq -r '[.dryRun, .action] | @tsv' "$T_TMP/r.json")" "false	created"
check_eq "apply: the cluster has it, owned by lodestore-cli" \
    "$(kc -n "$NS" get backuppolicy api-made -o json --show-managed-fields | jq -r '[.spec.alerts.maxAge, ([.metadata.managedFields[] | select(.operation == "Apply") | .manager] | join(","))] | @tsv')" \
    "1h	lodestore-cli"
P2=$(sed 's/name: fleet/name: api-made/; s/maxAge: 1h/maxAge: 2h/' "$T_TMP/fleet.yaml" | jq -Rs .)
curl -s "${AUTH[@]}" "${JSON[@]}" -d "{\"yaml\":$P2}" "$B/api/apply" >"$T_TMP/r.json"
check_eq "a change, dry run by default: exactly that change" \
    "$(jq -c '[.dryRun, .action, .changes]' "$T_TMP/r.json")" \
    '[true,"configured",[{"path":"spec.alerts.maxAge","old":"1h","new":"2h"}]]'
check_eq "still 1h in the cluster" "$(kc -n "$NS" get backuppolicy api-made -o jsonpath='{.spec.alerts.maxAge}')" "1h"
curl -s "${AUTH[@]}" "${JSON[@]}" -d "{\"yaml\":$P,\"dryRun\":true}" "$B/api/apply" >"$T_TMP/r.json"
check_eq "the same policy again: unchanged" "$(jq -c '[.action, .changes]' "$T_TMP/r.json")" '["unchanged",[]]'
# lode's validator enforces every limit of the CRD (docs/policy.md), so a value the
# cluster would refuse is refused before any request, at its line and column.
BAD=$(sed 's/name: fleet/name: api-bad/; s/maxAge: 1h/maxAge: 00000000000001h/' "$T_TMP/fleet.yaml" | jq -Rs .)
code=$(curl -s -o "$T_TMP/r.json" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" -d "{\"yaml\":$BAD,\"dryRun\":false}" "$B/api/apply")
check_eq "a value past the CRD's limit: 422 from lode's validator" "$code" 422
check_eq "the error is at the field's line and column" \
    "$(jq -c '[.valid, .errors[0].path, (.errors[0].line > 0)]' "$T_TMP/r.json")" \
    '[false,"spec.alerts.maxAge",true]'
check_eq "nothing was stored" "$(kc -n "$NS" get backuppolicy api-bad -o name 2>/dev/null)" ""
# What only the API server knows refuses the dry run, and nothing is applied: a
# namespace that does not exist.
GONE=$(sed 's/name: fleet/name: api-gone/' "$T_TMP/fleet.yaml" | sed "s/namespace: $NS/namespace: $NS-absent/" | jq -Rs .)
code=$(curl -s -o "$T_TMP/r.json" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" -d "{\"yaml\":$GONE,\"dryRun\":false}" "$B/api/apply")
check_eq "a namespace the cluster does not have: refused (502)" "$code" 502
check_contains "the refusal comes from the dry run" "$(jq -c . "$T_TMP/r.json")" "server-side dry run"
check_eq "and nothing is stored" "$(kc -n "$NS" get backuppolicy api-bad -o name 2>/dev/null)" ""

# The snapshot browser: a policy whose second snapshot changes 44 of its 61 files and
# deletes 11, which the anomaly rules mark suspicious (docs/anomaly.md, mass-change).
cat >"$T_TMP/web.yaml" <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: web, namespace: $NS}
spec:
  repository: main
  paths: [/etc, /home]
EOF
W=$T_TMP/web
mkdir -p "$W/etc/ssh" "$W/home/ann"
for i in $(seq 60); do echo "conf $i" >"$W/etc/f$i.conf"; done
echo x >"$W/etc/ssh/sshd_config"
ln -s /etc/f1.conf "$W/etc/link"
FIRST=$("$LODE" backup --repo "$REPO" --policy "$T_TMP/web.yaml" --host node-a --root "$W" --output json 2>/dev/null | jq -r .snapshot.id)
for i in $(seq 45); do head -c 3000 /dev/urandom >"$W/etc/f$i.conf"; done
rm "$W"/etc/f5*.conf
echo new >"$W/home/ann/new.txt"
SUS=$("$LODE" backup --repo "$REPO" --policy "$T_TMP/web.yaml" --host node-a --root "$W" --output json 2>"$T_TMP/sus.err" | jq -r .snapshot.id)
check_contains "the second snapshot is suspicious" "$(cat "$T_TMP/sus.err")" "mass-change"
# bpost PATH BODY [BASE AUTH-HEADER]: the browser's JSON answer, leaving $STATUS and $BODY.
bpost() {
    STATUS=$(curl -s -o "$T_TMP/body" -w '%{http_code}' -H "${4:-${AUTH[1]}}" "${JSON[@]}" -d "$2" "${3:-$B}$1")
    BODY=$(cat "$T_TMP/body")
}
bpost /api/browse/snapshots '{}'
check_eq "the snapshots: 200" "$STATUS" 200
check_eq "the suspicious one and its parent, marked" \
    "$(jq -c --arg a "$SUS" --arg b "$FIRST" '[.snapshots[] | select(.id == $a or .id == $b) | [.id == $a, .namespace, .policy, .host, .suspicious]]' <<<"$BODY")" \
    "[[true,\"$NS\",\"web\",\"node-a\",true],[false,\"$NS\",\"web\",\"node-a\",false]]"
bpost /api/browse/ls "{\"snapshot\":\"$SUS\",\"path\":\"/\"}"
check_eq "/ of a snapshot: its top directories" "$(jq -c '[.entries[] | [.name, .type]]' <<<"$BODY")" '[["etc","dir"],["home","dir"]]'
check_eq "with the snapshot's facts" "$(jq -c '[.snapshot.parent, .snapshot.paths, .snapshot.files]' <<<"$BODY")" "[\"$FIRST\",[\"/etc\",\"/home\"],51]"
bpost /api/browse/ls "{\"snapshot\":\"$SUS\",\"path\":\"/etc/\"}"
check_eq "/etc/ lists the snapshot's entries there, in path order" \
    "$(jq -c '[.path, .count, .entries[0].path, ([.entries[].name] | index("f55.conf")), ([.entries[].name] | index("ssh") != null)]' <<<"$BODY")" \
    '["/etc",51,"/etc/f1.conf",null,true]'
check_eq "a changed file with its new size, a symlink with its target" \
    "$(jq -c '[(.entries[] | select(.name == "f1.conf") | [.type, .size]), (.entries[] | select(.name == "link") | [.type, .target])]' <<<"$BODY")" \
    '[["file",3000],["symlink","/etc/f1.conf"]]'
bpost /api/browse/diff "{\"snapshot\":\"$SUS\"}"
check_eq "the diff against the parent: counts" "$(jq -c --arg f "$FIRST" '[.against.id == $f, .counts]' <<<"$BODY")" \
    '[true,{"added":1,"removed":11,"changed":46,"counted":55}]'
check_eq "what the rules counted is the manifest's changed and deleted files" \
    "$(jq -c '[.counts.counted, (.counters.changedFiles + .counters.deletedFiles)]' <<<"$BODY")" '[55,55]'
check_eq "a deleted file and a changed one" \
    "$(jq -c '[.changes[] | select(.path == "/etc/f55.conf" or .path == "/etc/f1.conf") | [.path, .change, .counted, ((.what // []) | index("content") != null)]]' <<<"$BODY")" \
    '[["/etc/f1.conf","changed",true,true],["/etc/f55.conf","removed",true,false]]'
bpost /api/browse/diff "{\"snapshot\":\"$FIRST\"}"
check_eq "a first snapshot: no parent, no changes" "$(jq -c '[.against, .changes]' <<<"$BODY")" '[null,[]]'
bpost /api/browse/diff "{\"snapshot\":\"$FIRST\",\"against\":\"$SUS\"}"
check_eq "against another snapshot, the other way round" "$(jq -c '.counts | [.added, .removed]' <<<"$BODY")" '[11,1]'
# The error paths, each with the status docs/ui.md gives.
GONE_ID=20200101T000000Z-00000000000000ff
bpost /api/browse/ls "{\"snapshot\":\"$GONE_ID\",\"path\":\"/etc\"}"
check_eq "an unknown snapshot: 404" "$STATUS" 404
check_contains "naming it" "$BODY" "no snapshot $GONE_ID"
bpost /api/browse/diff "{\"snapshot\":\"$SUS\",\"against\":\"$GONE_ID\"}"
check_eq "a diff against an unknown snapshot: 404" "$STATUS" 404
bpost /api/browse/ls '{"snapshot":"not-an-id","path":"/etc"}'
check_eq "a malformed id: 400" "$STATUS" 400
bpost /api/browse/ls "{\"snapshot\":\"$SUS\",\"path\":\"/etc/f55.conf\"}"
check_eq "a path the snapshot lacks: 404" "$STATUS" 404
check_contains "saying so" "$BODY" "has no /etc/f55.conf"
bpost /api/browse/ls "{\"snapshot\":\"$SUS\",\"path\":\"/etc/../root\"}"
check_eq "a path with ..: 400" "$STATUS" 400
# Another lode ui: U_PID, U_B (its base URL), U_AUTH (its Authorization header).
ui_other() {
    [ -n "$U_PID" ] && kill "$U_PID" 2>/dev/null && wait "$U_PID" 2>/dev/null
    "$@" >"$T_TMP/u.out" 2>"$T_TMP/u.err" &
    U_PID=$!
    for _ in $(seq 100); do
        grep -q '^http://' "$T_TMP/u.out" 2>/dev/null && break
        kill -0 $U_PID 2>/dev/null || break
        sleep 0.1
    done
    local u
    u=$(head -n1 "$T_TMP/u.out")
    U_B=${u%%/?token=*}
    U_AUTH="Authorization: Bearer ${u##*token=}"
}
ui_other env -u LODE_KEY_FILE "$LODE" ui --listen 127.0.0.1:0 --context admin --repo "$REPO"
bpost /api/browse/snapshots '{}' "$U_B" "$U_AUTH"
check_eq "without a key the list still works (the catalog needs none)" "$STATUS" 200
check_eq "and /api/info says there is no key" "$(curl -s -H "$U_AUTH" "$U_B/api/info" | jq -c '[.repository != null, .repositoryKey]')" '[true,false]'
bpost /api/browse/ls "{\"snapshot\":\"$SUS\",\"path\":\"/etc\"}" "$U_B" "$U_AUTH"
check_eq "looking inside without a key: 409" "$STATUS" 409
check_contains "saying how to give one" "$BODY" "--key-file"
head -c 32 /dev/urandom | base64 >"$T_TMP/wrong-key"
chmod 600 "$T_TMP/wrong-key"
ui_other "$LODE" ui --listen 127.0.0.1:0 --context admin --repo "$REPO" --key-file "$T_TMP/wrong-key"
bpost /api/browse/ls "{\"snapshot\":\"$SUS\",\"path\":\"/etc\"}" "$U_B" "$U_AUTH"
check_eq "a wrong key: 409" "$STATUS" 409
check_contains "saying it is the wrong key" "$BODY" "wrong key"
bpost /api/browse/diff "{\"snapshot\":\"$SUS\"}" "$U_B" "$U_AUTH"
check_eq "a diff with a wrong key: 409" "$STATUS" 409
kill "$U_PID" && wait "$U_PID" 2>/dev/null
U_PID=
# A Restore through the page's endpoint: the API server's dry run stores nothing, and
# what it refuses comes back.
R=$(jq -cn --arg ns "$NS" --arg id "$FIRST" '{apiVersion: "lodestore.io/v1alpha1", kind: "Restore", metadata: {name: "api-restore", namespace: $ns}, spec: {snapshot: {id: $id}, repository: "main", target: {node: "node-b", path: "/var/restore/x"}}}')
bpost /api/restore "{\"object\":$R,\"dryRun\":true}"
check_eq "a Restore's dry run: would be created" "$(jq -r '[.dryRun, .action, .namespace] | @tsv' <<<"$BODY")" "true	created	$NS"
check_eq "and nothing is stored" "$(kc -n "$NS" get restore api-restore -o name 2>/dev/null)" ""
bpost /api/restore "{\"object\":$(jq -c 'del(.spec.repository)' <<<"$R"),\"dryRun\":true}"
check_eq "a Restore by id without its repository: 422 from the API server" "$STATUS" 422
check_contains "with the CRD's rule" "$BODY" "the API server refused the Restore"

# The page.
timeout 300 node "$ROOT/tests/ui/cluster.mjs" "$URL" "$NS" "$NS-n-1" "$SUS" "$FIRST" >"$T_TMP/page.out" 2>&1
rc=$?
grep -E '^(ok|not ok|    )' "$T_TMP/page.out"
T_PASSED=$((T_PASSED + $(grep -c '^ok' "$T_TMP/page.out")))
T_FAILED=$((T_FAILED + $(grep -c '^not ok' "$T_TMP/page.out")))
if [ $rc -ne 0 ] && [ "$(grep -c '^not ok' "$T_TMP/page.out")" -eq 0 ]; then
    fail "the page test ran to its end" "$(tail -5 "$T_TMP/page.out")"
fi
check_eq "the page applied its policy; the later edit was only a dry run" \
    "$(kc -n "$NS" get backuppolicy from-the-page -o jsonpath='{.spec.retention.keepLast}')" "3"
kc -n "$NS" get restores -o json >"$T_TMP/restores.json"
check_eq "the page applied one Restore, of the parent, with the files the rules counted" \
    "$(jq -c '[.items[] | [.spec.snapshot.id, .spec.repository, .spec.target.path, (.spec.include | length), (.spec.include | index("/etc/f55.conf") != null)]]' "$T_TMP/restores.json")" \
    "[[\"$FIRST\",\"main\",\"/var/restore/ui-test\",55,true]]"
finish
