#!/usr/bin/env bash
# lode apply and lode status against the real control plane of tests/env. Every wait
# is a polled condition with a deadline; the slowest waits for the first minute
# boundary of a "* * * * *" schedule.
#
# What it checks, as a user would:
#   - lode apply creates, then configures, a policy (kubectl sees it, owned by the
#     field manager lodestore-cli, with strings and integers as written);
#     --output json, standard input, the namespace from the file or the flag;
#   - lode apply --dry-run=server: the server's answer (created or configured, its
#     defaults in the JSON) and nothing stored, no new generation; the schema's 422,
#     RBAC's 403 and a missing namespace refuse a dry run as they refuse an apply;
#   - an invalid file is refused locally (exit 1) and never reaches the cluster;
#     a file lode accepts but the CRD's schema refuses is exit 1 with the
#     server's field; 401 and 403 are exit 2;
#   - lode status on a policy whose Backups and status are made by hand (no
#     controller): the last success per host, the age, the limit, overdue from the
#     age or from the status's overdueHosts, the next run per host with its jitter
#     offset (computed here independently), exit 1 when a host is overdue and 0
#     when none is; the JSON shape with jq; not found is exit 2; a user who may
#     not list nodes still gets the hosts with Backups;
#   - with the real controller: a minute policy applied by lode apply, its
#     Backups succeeding on three KWOK nodes, and lode status showing three hosts
#     with a last success, none overdue, exit 0.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LODE=${LODE:-$ROOT/build/lode}
case "$LODE" in /*) ;; *) LODE="$ROOT/$LODE" ;; esac
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
NS=cli-$(openssl rand -hex 3)
CNS=$NS-ctl
PIDS=()

cleanup() {
    [[ -n ${CRD_NARROWED:-} ]] && restore_crd
    env_stop_pids
    kc delete ns "$NS" "$CNS" --wait=false >/dev/null 2>&1
    kc delete clusterrolebinding "$NS-reader" >/dev/null 2>&1
    env_delete_nodes "$NS-n" >/dev/null 2>&1
    env_delete_nodes "$NS-x" >/dev/null 2>&1
    env_delete_nodes "$NS-c" >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT

# lode ARGS...: the lode binary as admin; sets OUT, ERR, RC.
lode() {
    "$LODE" "$@" --kubeconfig "$KUBECONFIG" --context admin >"$T_TMP/out" 2>"$T_TMP/err"
    RC=$?
    OUT=$(cat "$T_TMP/out")
    ERR=$(cat "$T_TMP/err")
}
check_rc() { # name want
    if [[ $RC -eq $2 ]]; then pass "$1"; else fail "$1" "exit $RC, want $2" "stdout: $OUT" "stderr: $ERR"; fi
}
utc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
# The jitter offset of docs/schedule.md ("Jitter"), computed independently of lode.
offset() { # ns name host jitterSeconds
    python3 -c 'import hashlib,sys
ns,name,host,j=sys.argv[1:5]
d=hashlib.sha256(b"lodestore-jitter\0"+(ns+"/"+name).encode()+b"\0"+host.encode()).digest()
print(int.from_bytes(d[:8],"big")%int(j))' "$@"
}
# A kubeconfig for another identity: kubeconfig_for FILE TOKEN NAMESPACE
kubeconfig_for() {
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$ENV_DIR/pki/ca.crt"}
users:
- name: u
  user: {token: "$2"}
contexts:
- name: x
  context: {cluster: c, user: u, namespace: $3}
current-context: x
EOF
}
# backup NAME POLICY HOST PHASE [COMPLETION-EPOCH] [nolabel]: a Backup made by hand, with
# its status set through the status subresource as the controller would.
backup() {
    local name=$1 policy=$2 host=$3 phase=$4 done=${5:-} labels
    labels="labels: {lodestore.io/policy: $policy}"
    [[ ${6:-} == nolabel ]] && labels="labels: {}"
    kc -n "$NS" apply -f - >/dev/null <<EOF || return 1
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: $name, $labels}
spec: {policy: $policy, host: $host, slot: "", trigger: manual}
EOF
    local st="{\"phase\":\"$phase\""
    [[ -n $done ]] && st+=",\"completionTime\":\"$(utc "$done")\""
    st+="}"
    kc -n "$NS" patch backup "$name" --subresource=status --type=merge -p "{\"status\":$st}" >/dev/null
}

kc apply --server-side -f "$ROOT/crd/" >/dev/null
kc wait --for condition=established --timeout=30s crd/backuppolicies.lodestore.io \
    crd/backups.lodestore.io crd/backuprepositories.lodestore.io >/dev/null
kc create namespace "$NS" >/dev/null
kc create namespace "$CNS" >/dev/null

# ---- lode apply: created, then configured ----
cat >"$T_TMP/p1.yaml" <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata:
  name: p1
  annotations:
    answer: NO
    padded: 007
spec:
  repository: main
  paths: [/etc]
  schedule: {cron: "30 2 * * *", timezone: Europe/Kyiv}
  retention: {keepLast: 3}
  limits: {nice: 10}
EOF
lode apply -f "$T_TMP/p1.yaml" -n "$NS"
check_rc "apply a new policy: exit 0" 0
check_eq "apply a new policy: created" "$OUT" "backuppolicy.lodestore.io/p1 created"
check_eq "kubectl sees it" "$(env_get -n "$NS" backuppolicy/p1 '{.spec.schedule.cron}')" "30 2 * * *"
check_eq "owned by the field manager lodestore-cli" \
    "$(kc -n "$NS" get backuppolicy p1 -o json --show-managed-fields | jq -r '[.metadata.managedFields[] | select(.operation == "Apply") | .manager] | join(",")')" \
    "lodestore-cli"
check_eq "a plain NO stays the string NO, 007 the string 007" \
    "$(kc -n "$NS" get backuppolicy p1 -o json | jq -c '[.metadata.annotations.answer, .metadata.annotations.padded]')" \
    '["NO","007"]'
check_eq "integers stay integers" \
    "$(kc -n "$NS" get backuppolicy p1 -o json | jq -c '[.spec.retention.keepLast, .spec.limits.nice] | map(type)')" \
    '["number","number"]'
sed 's/keepLast: 3/keepLast: 4/' "$T_TMP/p1.yaml" >"$T_TMP/p1b.yaml"
lode apply -f "$T_TMP/p1b.yaml" -n "$NS"
check_rc "apply a change: exit 0" 0
check_eq "apply a change: configured" "$OUT" "backuppolicy.lodestore.io/p1 configured"
check_eq "the change reached the cluster" "$(env_get -n "$NS" backuppolicy/p1 '{.spec.retention.keepLast}')" 4
check_eq "a new generation" "$(env_get -n "$NS" backuppolicy/p1 '{.metadata.generation}')" 2
"$LODE" apply -f - -n "$NS" --kubeconfig "$KUBECONFIG" --context admin --output json \
    <"$T_TMP/p1.yaml" >"$T_TMP/out" 2>"$T_TMP/err"
RC=$? OUT=$(cat "$T_TMP/out") ERR=$(cat "$T_TMP/err")
check_rc "apply -f - --output json: exit 0" 0
check_eq "apply --output json: action and object" \
    "$(jq -c '[.action, .object.metadata.namespace, .object.metadata.name, .object.spec.retention.keepLast, (.object.metadata | has("managedFields"))]' <<<"$OUT")" \
    "[\"configured\",\"$NS\",\"p1\",3,false]"
check_eq "apply --output json: dryRun is false" "$(jq -c .dryRun <<<"$OUT")" false

# ---- lode apply --dry-run=server: the server's answer, nothing stored ----
sed 's/name: p1/name: p-dry/' "$T_TMP/p1.yaml" >"$T_TMP/dry.yaml"
lode apply -f "$T_TMP/dry.yaml" -n "$NS" --dry-run=server
check_rc "dry run of a new policy: exit 0" 0
check_eq "dry run of a new policy: created (server dry run)" "$OUT" \
    "backuppolicy.lodestore.io/p-dry created (server dry run)"
check_eq "dry run of a new policy: nothing stored" \
    "$(kc -n "$NS" get backuppolicy p-dry -o name 2>&1)" \
    "Error from server (NotFound): backuppolicies.lodestore.io \"p-dry\" not found"
lode apply -f "$T_TMP/dry.yaml" -n "$NS" --dry-run=server --output json
check_rc "dry run --output json: exit 0" 0
check_eq "dry run --output json: action, dryRun, the object as the server would store it" \
    "$(jq -c '[.action, .dryRun, .object.metadata.name, .object.metadata.generation, (.object.metadata.uid | length > 0), .object.spec.retention.keepLast]' <<<"$OUT")" \
    '["created",true,"p-dry",1,true,3]'
gen=$(env_get -n "$NS" backuppolicy/p1 '{.metadata.generation}')
sed 's/keepLast: 3/keepLast: 9/' "$T_TMP/p1.yaml" >"$T_TMP/p1-dry.yaml"
lode apply -f "$T_TMP/p1-dry.yaml" -n "$NS" --dry-run=server --output json
check_rc "dry run of a change: exit 0" 0
check_eq "dry run of a change: configured, with the change in the answer" \
    "$(jq -c '[.action, .dryRun, .object.spec.retention.keepLast]' <<<"$OUT")" '["configured",true,9]'
check_eq "dry run of a change: the stored policy is unchanged" \
    "$(env_get -n "$NS" backuppolicy/p1 '{.spec.retention.keepLast}')" 3
check_eq "dry run of a change: no new generation" \
    "$(env_get -n "$NS" backuppolicy/p1 '{.metadata.generation}')" "$gen"
lode apply -f "$T_TMP/p1-dry.yaml" -n "$NS" --dry-run=server
check_eq "dry run of a change: configured (server dry run)" "$OUT" \
    "backuppolicy.lodestore.io/p1 configured (server dry run)"
lode apply -f "$T_TMP/dry.yaml" -n "$NS-nowhere" --dry-run=server
check_rc "dry run into a namespace that does not exist: exit 2" 2
check_contains "dry run into a missing namespace: the server's words" "$ERR" "not found"
{
    sed -n '1,4p' "$T_TMP/p1.yaml"
    echo "  namespace: $NS"
    sed -n '5,$p' "$T_TMP/p1.yaml"
} | sed 's/name: p1/name: p2/' >"$T_TMP/p2.yaml"
lode apply -f "$T_TMP/p2.yaml"
check_rc "a file that names its namespace: exit 0" 0
check_eq "the file's namespace is used without --namespace" "$(env_get -n "$NS" backuppolicy/p2 '{.metadata.name}')" p2
lode apply -f "$T_TMP/p2.yaml" -n default
check_rc "the file's namespace against another --namespace: exit 2" 2

# ---- refused: locally, by the schema, by authentication and RBAC ----
sed 's/^  retention:/  retension:/; s/name: p1/name: p-typo/' "$T_TMP/p1.yaml" >"$T_TMP/typo.yaml"
lode apply -f "$T_TMP/typo.yaml" -n "$NS"
check_rc "an invalid file: exit 1" 1
check_eq "an invalid file: the validate line" "$ERR" \
    "$T_TMP/typo.yaml:12:3: error: spec.retension: unknown field (did you mean \"retention\"?)"
check_eq "an invalid file never reaches the cluster" \
    "$(kc -n "$NS" get backuppolicy p-typo -o name 2>/dev/null)" ""

# A file lode accepts but the cluster's CRD refuses. lode and crd/ agree on every
# limit (tests/e2e/test_crd_limits.sh proves it), so this needs a cluster whose CRD
# is not this lode's, as after an upgrade of one without the other: here a CRD that
# allows a jitter of at most 3 characters, for the time of this check.
narrow_crd() {
    awk '/^ *jitter:$/ {j = 1} j && /maxLength: 12$/ {sub(/12$/, "3"); j = 0} {print}' \
        "$ROOT/crd/backuppolicies.yaml" >"$T_TMP/narrow-crd.yaml"
    CRD_NARROWED=1
    kc apply --server-side --force-conflicts -f "$T_TMP/narrow-crd.yaml" >/dev/null
}
restore_crd() {
    kc apply --server-side --force-conflicts -f "$ROOT/crd/backuppolicies.yaml" >/dev/null
    CRD_NARROWED=
}
# The jitter of schema.yaml below in a file kubectl reads as lode does (kubectl reads
# YAML 1.1, where p1.yaml's annotation NO is not a string).
cat >"$T_TMP/probe.json" <<EOF
{"apiVersion": "lodestore.io/v1alpha1", "kind": "BackupPolicy", "metadata": {"name": "probe"},
 "spec": {"repository": "main", "paths": ["/etc"], "schedule": {"cron": "30 2 * * *", "jitter": "0001s"}}}
EOF
# Waits until the API server accepts (want 0) or refuses (want 1) the file in a dry run.
wait_dry_run() { # want file
    local deadline=$((SECONDS + 60)) got
    while :; do
        kc -n "$NS" create --dry-run=server -f "$2" >/dev/null 2>&1
        got=$(($? != 0))
        [[ $got -eq $1 ]] && return 0
        ((SECONDS > deadline)) && return 1
        sleep 0.5
    done
}
sed 's/name: p1/name: p-schema/; s/timezone: Europe\/Kyiv}/timezone: Europe\/Kyiv, jitter: 0001s}/' \
    "$T_TMP/p1.yaml" >"$T_TMP/schema.yaml"
"$LODE" validate "$T_TMP/schema.yaml" >/dev/null 2>&1
lode_rc=$?
narrow_crd
if [[ $lode_rc -ne 0 ]]; then
    fail "the schema-only case is valid for lode (the check below would prove nothing)"
elif ! wait_dry_run 1 "$T_TMP/probe.json"; then
    fail "the narrowed CRD took no effect within a minute"
else
    lode apply -f "$T_TMP/schema.yaml" -n "$NS"
    check_rc "refused by the CRD's schema (422): exit 1, the input is invalid" 1
    check_contains "422: the server's field and message" "$ERR" \
        "$T_TMP/schema.yaml: error: spec.schedule.jitter: Too long"
    check_eq "422: nothing created" "$(kc -n "$NS" get backuppolicy p-schema -o name 2>/dev/null)" ""
    lode apply -f "$T_TMP/schema.yaml" -n "$NS" --dry-run=server
    check_rc "a dry run the CRD's schema refuses (422): exit 1" 1
    check_contains "a dry run's 422: the server's field and message" "$ERR" \
        "$T_TMP/schema.yaml: error: spec.schedule.jitter: Too long"
fi
restore_crd
if wait_dry_run 0 "$T_TMP/probe.json"; then
    pass "the CRD of crd/ is back"
else
    fail "the CRD of crd/ is back: the API server still refuses a jitter of 5 characters"
fi

kubeconfig_for "$T_TMP/wrong.kubeconfig" not-the-token "$NS"
"$LODE" apply -f "$T_TMP/p1.yaml" --kubeconfig "$T_TMP/wrong.kubeconfig" >"$T_TMP/out" 2>"$T_TMP/err"
RC=$? OUT=$(cat "$T_TMP/out") ERR=$(cat "$T_TMP/err")
check_rc "a token the server does not know (401): exit 2" 2
check_contains "401: said" "$ERR" "HTTP 401"
kc -n "$NS" create serviceaccount nobody >/dev/null
kubeconfig_for "$T_TMP/nobody.kubeconfig" "$(kc -n "$NS" create token nobody)" "$NS"
"$LODE" apply -f "$T_TMP/p1.yaml" --kubeconfig "$T_TMP/nobody.kubeconfig" >"$T_TMP/out" 2>"$T_TMP/err"
RC=$? OUT=$(cat "$T_TMP/out") ERR=$(cat "$T_TMP/err")
check_rc "an identity without RBAC (403): exit 2" 2
check_contains "403: the server's message" "$ERR" 'cannot patch resource "backuppolicies"'
"$LODE" apply -f "$T_TMP/p1.yaml" --dry-run=server --kubeconfig "$T_TMP/nobody.kubeconfig" \
    >"$T_TMP/out" 2>"$T_TMP/err"
RC=$? OUT=$(cat "$T_TMP/out") ERR=$(cat "$T_TMP/err")
check_rc "a dry run by an identity without RBAC (403): exit 2" 2
check_contains "a dry run's 403: the server's message" "$ERR" 'cannot patch resource "backuppolicies"'

# ---- lode status on hand-made Backups and status (no controller here) ----
env_create_nodes 3 "$NS-n" "lodestore.io/cli-test=$NS"
env_create_nodes 1 "$NS-x" "lodestore.io/cli-test=$NS-other"
cat >"$T_TMP/hand.yaml" <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: hand}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {lodestore.io/cli-test: $NS}
  schedule: {cron: "0 3 * * *", jitter: 10m}
  alerts: {maxAge: 2h}
EOF
lode apply -f "$T_TMP/hand.yaml" -n "$NS"
check_rc "apply the hand policy: exit 0" 0
now=$(date +%s)
backup hand-n0-a hand "$NS-n-0" Succeeded $((now - 5400))
backup hand-n0-b hand "$NS-n-0" Succeeded $((now - 1800)) nolabel # by hand, unlabelled
backup hand-n1-a hand "$NS-n-1" Succeeded $((now - 10800))
backup hand-n1-b hand "$NS-n-1" Failed $((now - 3600))
backup hand-gone hand "$NS-gone" Succeeded $((now - 18000))
backup other-n2 p1 "$NS-n-2" Succeeded $((now - 60))   # another policy's: not counted
backup hand-n2-run hand "$NS-n-2" Running

lode status hand -n "$NS" --output json
check_rc "status: a host past its limit: exit 1" 1
json=$OUT
check_eq "status JSON: the top level" "$(jq -c '[keys_unsorted, (.policies | length)]' <<<"$json")" \
    '[["time","policies"],1]'
check_eq "status JSON: the policy's fields" "$(jq -c '.policies[0] | keys_unsorted' <<<"$json")" \
    '["policy","valid","ready","schedule","timezone","alertLimitSeconds","overdue","nextRun","tzdataVersion","conditions","errors","hosts"]'
check_eq "status JSON: the host's fields" "$(jq -c '.policies[0].hosts[0] | keys_unsorted' <<<"$json")" \
    '["host","selected","lastSuccess","ageSeconds","running","overdue","nextRun","suspicious","lastSuspicious"]'
check_eq "status JSON: the policy" \
    "$(jq -c '.policies[0] | [.policy, .valid, .ready, .schedule, .timezone, .alertLimitSeconds, .overdue]' <<<"$json")" \
    "[\"$NS/hand\",true,false,\"0 3 * * *\",\"UTC\",7200,1]"
check_eq "status JSON: the hosts, sorted: selected nodes and a host with Backups only" \
    "$(jq -c '[.policies[0].hosts[] | [.host, .selected]]' <<<"$json")" \
    "[[\"$NS-gone\",false],[\"$NS-n-0\",true],[\"$NS-n-1\",true],[\"$NS-n-2\",true]]"
host() { jq -c --arg h "$1" ".policies[0].hosts[] | select(.host == \$h) | $2" <<<"$json"; }
check_eq "n-0: the newest success, from an unlabelled Backup" "$(host "$NS-n-0" '[.lastSuccess, .overdue, .running]')" \
    "[\"$(utc $((now - 1800)))\",false,false]"
t=$(jq -r .time <<<"$json")
t=$(date -u -d "$t" +%s)
check_eq "n-0: the age counts from the last success" "$(host "$NS-n-0" .ageSeconds)" $((t - now + 1800))
check_eq "n-1: a later failure does not count; 3h > 2h: overdue" "$(host "$NS-n-1" '[.lastSuccess, .overdue]')" \
    "[\"$(utc $((now - 10800)))\",true]"
check_eq "n-2: no success yet, a new node: not overdue; running; another policy's Backup ignored" \
    "$(host "$NS-n-2" '[.lastSuccess, .ageSeconds, .overdue, .running]')" "[null,null,false,true]"
check_eq "gone: not selected, no next run, never overdue" "$(host "$NS-gone" '[.nextRun, .overdue]')" "[null,false]"
# The next run: the first 03:00 UTC slot whose run time (slot + offset) is after the time.
nextrun_ok=1
for h in "$NS-n-0" "$NS-n-1" "$NS-n-2"; do
    off=$(offset "$NS" hand "$h" 600)
    day=$(((t - off) / 86400 * 86400))
    slot=$((day + 3 * 3600))
    ((slot <= t - off)) && slot=$((slot + 86400))
    want=$(utc $((slot + off)))
    got=$(host "$h" .nextRun | tr -d '"')
    [[ $got == "$want" ]] || { nextrun_ok=0; fail "next run of $h" "got:  $got" "want: $want"; }
done
[[ $nextrun_ok == 1 ]] && pass "next run per host: the slot plus the host's jitter offset"
check_eq "the policy's next run is the earliest host's" "$(jq -r '.policies[0].nextRun' <<<"$json")" \
    "$(jq -r '[.policies[0].hosts[].nextRun | select(. != null)] | min' <<<"$json")"

lode status hand -n "$NS"
check_rc "status text: exit 1" 1
check_contains "status text: the header" "$OUT" "Policy $NS/hand"
check_contains "status text: the limit in words" "$OUT" "overdue after 2h without a successful backup (alerts.maxAge)"
check_contains "status text: no status yet" "$OUT" "none yet: the controller has not reported"
check_eq "status text: the table's columns" "$(grep -E '^ +HOST' <<<"$OUT" | tr -s ' ' | sed 's/^ //')" \
    "HOST LAST-SUCCESS AGE LIMIT OVERDUE NEXT-RUN"
check_eq "status text: n-1 is overdue" "$(grep -E "^ +$NS-n-1 " <<<"$OUT" | grep -c ' YES ')" 1
check_contains "status text: n-0's last success in the zone" "$OUT" "$(date -u -d "@$((now - 1800))" '+%Y-%m-%d %H:%M:%S') UTC"
lode status hand -n "$NS" --utc
check_contains "status --utc: times with Z" "$OUT" "$(utc $((now - 1800)))"

# The controller's status, written by hand: its limit (10h) wins for the current
# generation, and the host it lists as overdue stays overdue.
gen=$(env_get -n "$NS" backuppolicy/hand '{.metadata.generation}')
created=$(env_get -n "$NS" backuppolicy/hand '{.metadata.creationTimestamp}')
status_patch() { # OVERDUE-HOSTS-JSON OVERDUE-COUNT
    kc -n "$NS" patch backuppolicy hand --subresource=status --type=merge -p "$(jq -nc \
        --argjson gen "$gen" --arg created "$created" --argjson od "$1" --argjson n "$2" --arg now "$(utc "$(date +%s)")" '
        {status: {observedGeneration: $gen, hosts: 3, running: 1, overdue: $n, alertLimitSeconds: 36000,
          tzdataVersion: "0000z", overdueHosts: $od,
          conditions: [
            {type: "Valid", status: "True", reason: "Valid", message: "the policy passed validation", lastTransitionTime: $now},
            {type: "Ready", status: "True", reason: "Scheduled", message: "3 hosts scheduled", lastTransitionTime: $now},
            {type: "Overdue", status: (if $n > 0 then "True" else "False" end), reason: "ByHand", message: "written by the test", lastTransitionTime: $now}]}}')" >/dev/null
}
status_patch "[{\"host\":\"$NS-n-2\",\"since\":\"$created\"}]" 1
lode status hand -n "$NS" --output json
check_rc "status with a listed overdue host: exit 1" 1
json=$OUT
check_eq "the status's limit (10h) for the current generation" "$(jq '.policies[0].alertLimitSeconds' <<<"$json")" 36000
check_eq "with 10h, n-1 (3h) is no longer overdue; n-2, listed, is" \
    "$(jq -c '[.policies[0].hosts[] | select(.overdue) | .host]' <<<"$json")" "[\"$NS-n-2\"]"
check_eq "ready from the Ready condition; conditions passed through" \
    "$(jq -c '.policies[0] | [.ready, [.conditions[] | .type + "=" + .status], .tzdataVersion]' <<<"$json")" \
    '[true,["Valid=True","Ready=True","Overdue=True"],"0000z"]'
lode status hand -n "$NS"
check_contains "status text: the Ready condition" "$OUT" "Ready     True   Scheduled: 3 hosts scheduled"
check_contains "status text: a tz database mismatch is noted" "$OUT" "the controller uses tz database 0000z"

status_patch "[{\"host\":\"$NS-n-1\",\"since\":\"$(utc $((now - 10800)))\"}]" 1
backup hand-n1-c hand "$NS-n-1" Succeeded $((now - 60))
lode status hand -n "$NS" --output json
check_rc "a listed host with a newer success than the listing: exit 0" 0
check_eq "a newer success refutes a stale listing" "$(jq '.policies[0].overdue' <<<"$OUT")" 0

status_patch "[]" 0
lode status hand -n "$NS"
check_rc "nothing overdue: exit 0" 0

lode status -n "$NS" --output json
check_eq "without POLICY: every policy of the namespace" "$(jq -c '[.policies[].policy]' <<<"$OUT")" \
    "[\"$NS/hand\",\"$NS/p1\",\"$NS/p2\"]"
lode status -A --output json
check_contains "--all-namespaces: the policy is among the cluster's" "$(jq -c '[.policies[].policy]' <<<"$OUT")" "\"$NS/hand\""

# A policy the schema admits but the validator rejects (kubectl, not lode apply, put it
# there): it backs nothing up, so the check fails.
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: never}
spec: {repository: main, paths: [/etc], schedule: {cron: "0 0 30 2 *"}}
EOF
lode status never -n "$NS" --output json
check_rc "an invalid policy in the cluster: exit 1" 1
check_eq "an invalid policy: valid false, the validator's path, no next run" \
    "$(jq -c '.policies[0] | [.valid, [.errors[].path], .nextRun]' <<<"$OUT")" '[false,["spec.schedule.cron"],null]'
lode status never -n "$NS"
check_contains "an invalid policy, text: said" "$OUT" "this policy is invalid and runs nothing"
check_contains "an invalid policy, text: the error" "$OUT" "error: spec.schedule.cron: "

lode status nope -n "$NS"
check_rc "an unknown policy: exit 2" 2
check_contains "an unknown policy: not found" "$ERR" "backuppolicy \"nope\" not found in namespace \"$NS\""

# A user who may read the namespace's policies and Backups but not nodes.
kc -n "$NS" create role reader --verb=get,list --resource=backuppolicies.lodestore.io,backups.lodestore.io >/dev/null
kc -n "$NS" create rolebinding reader --role=reader --serviceaccount="$NS:nobody" >/dev/null
"$LODE" status hand --kubeconfig "$T_TMP/nobody.kubeconfig" --output json >"$T_TMP/out" 2>"$T_TMP/err"
RC=$? OUT=$(cat "$T_TMP/out") ERR=$(cat "$T_TMP/err")
check_rc "without the right to list nodes: still an answer (exit 0)" 0
check_contains "without nodes: a warning says what is missing" "$ERR" "cannot list nodes"
check_eq "without nodes: the hosts with Backups, selection unknown" \
    "$(jq -c '[.policies[0].hosts[] | [.host, .selected]]' <<<"$OUT")" \
    "[[\"$NS-gone\",null],[\"$NS-n-0\",null],[\"$NS-n-1\",null],[\"$NS-n-2\",null]]"

# ---- with the real controller ----
env_create_nodes 3 "$NS-c" "lodestore.io/cli-test=$CNS"
env_repository "$CNS" main # runs start only with the policy's repository Ready
"$CTL" --kubeconfig "$KUBECONFIG" --context operator --metrics-addr 127.0.0.1:0 \
    --agent-image lodestore.invalid/agent:e2e --namespace "$CNS" >"$T_TMP/ctl.log" 2>&1 &
PIDS+=($!)
cat >"$T_TMP/minutely.yaml" <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: minutely}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {lodestore.io/cli-test: $CNS}
  schedule: {cron: "* * * * *", jitter: 0s}
  alerts: {maxAge: 1h}
EOF
lode apply -f "$T_TMP/minutely.yaml" -n "$CNS"
check_rc "apply the minute policy: exit 0" 0
succeeded() {
    [[ $(kc -n "$CNS" get backups -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Succeeded$') -ge 3 ]]
}
hosts_succeeded() {
    "$LODE" status minutely -n "$CNS" --kubeconfig "$KUBECONFIG" --context admin --output json >"$T_TMP/st.json" 2>/dev/null
    [[ $(jq '[.policies[0].hosts[] | select(.lastSuccess != null)] | length' "$T_TMP/st.json") -eq 3 ]]
}
ready() { [[ $(env_get -n "$CNS" backuppolicy/minutely '{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
if env_wait 100 "three Backups to succeed" succeeded && env_wait 20 "lode status to see them" hosts_succeeded &&
    env_wait 30 "the controller's Ready condition" ready; then
    lode status minutely -n "$CNS" --output json
    check_rc "the controller's policy: nothing overdue, exit 0" 0
    check_eq "three hosts, each with a last success, none overdue" \
        "$(jq -c '[.policies[0].hosts[] | [.host, .selected, (.lastSuccess != null), .overdue]]' <<<"$OUT")" \
        "[[\"$NS-c-0\",true,true,false],[\"$NS-c-1\",true,true,false],[\"$NS-c-2\",true,true,false]]"
    check_eq "valid and ready, the limit from the controller's status" \
        "$(jq -c '.policies[0] | [.valid, .ready, .alertLimitSeconds]' <<<"$OUT")" '[true,true,3600]'
    t=$(date -u -d "$(jq -r .time <<<"$OUT")" +%s)
    check_eq "the next run of a minute schedule without jitter: the next minute" \
        "$(jq -c '[.policies[0].hosts[].nextRun] | unique' <<<"$OUT")" "[\"$(utc $(((t / 60 + 1) * 60)))\"]"
    lode status minutely -n "$CNS"
    check_contains "text: the controller's Valid condition" "$OUT" "Valid     True   Valid: the policy passed validation"
else
    fail "the controller ran the minute policy" "$(tail -n 20 "$T_TMP/ctl.log")" \
        "$(kc -n "$CNS" get backups 2>&1)"
fi

finish
