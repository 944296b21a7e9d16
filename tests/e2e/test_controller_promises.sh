#!/usr/bin/env bash
# The controller keeps its promises (issue 10; docs/operator.md), on the local control
# plane of tests/env, as an operator would check them:
#   - a policy whose BackupRepository does not exist runs nothing and says why
#     (Ready=False RepositoryNotFound, a Warning Event), reports its slots Missed, and
#     starts by itself when the repository appears; one whose repository is not Ready
#     says RepositoryNotReady with the repository's reason;
#   - the Job carries the repository by reference, the policy as LODE_POLICY_DOCUMENT and
#     --termination-log; the agent's result (its container's termination message, set
#     here by patching the pod's status) becomes the Backup's status.snapshot, with a
#     Suspicious condition and Event; a run that reports nothing says so;
#   - hand-made Backups for a policy or a node that does not exist, or a node the policy
#     does not select, end Failed with unknown_policy, unknown_host, host_not_selected and
#     an Event, and lode status does not show them running;
#   - an invalid policy: Ready=False, Overdue=Unknown, the hosts it selects still counted;
#   - a node put back into the nodeSelector runs the slot it was out for as a catch-up;
#   - slots missed while the controller was down, before a slot that runs on time, are
#     counted (lodestore_host_missed_slots_total) and reported (a Missed Event);
#   - every Event's log line names its object (ns/name).
# Every wait is bounded; the slowest waits for a minute boundary.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
LODE=${LODE:-$ROOT/build/lode}
case "$LODE" in /*) ;; *) LODE="$ROOT/$LODE" ;; esac
NS=e2e-prom-$(openssl rand -hex 3)
PIDS=()
cleanup() {
    env_stop_pids
    kc delete ns "$NS" --wait=false >/dev/null 2>&1
    env_delete_nodes "$NS-n" >/dev/null 2>&1
    env_delete_nodes "$NS-o" >/dev/null 2>&1
    env_kwok_clear >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT

cond() { # POLICY TYPE FIELD: a field (status, reason, message) of a condition
    env_get -n "$NS" "backuppolicy/$1" "{.status.conditions[?(@.type==\"$2\")].$3}"
}
cond_is() { [[ "$(cond "$1" "$2" status) $(cond "$1" "$2" reason)" == "$3" ]]; }
events() { # REASON OBJECT-NAME: messages of Events of that reason about the object
    kc -n "$NS" get events --field-selector "reason=$1,involvedObject.name=$2" \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}
has_event() { [[ -n $(events "$1" "$2") ]]; }
bk() { env_get -n "$NS" "backup/$1" "$2"; }
phase_reason() { bk "$1" '{.status.phase} {.status.reason}'; }
phase_reason_is() { [[ $(phase_reason "$1") == "$2" ]]; }
backups_of() { # POLICY: "slot host trigger" lines
    kc -n "$NS" get backups -l "lodestore.io/policy=$1" \
        -o jsonpath='{range .items[*]}{.spec.slot} {.spec.host} {.spec.trigger}{"\n"}{end}'
}

env_crds
kc create namespace "$NS" >/dev/null
env_create_nodes 2 "$NS-n" "role=$NS"
env_create_nodes 1 "$NS-o" "role=$NS-other"
# The run whose result the test writes stays Running until then.
env_kwok_result hang "lodestore.io/policy=result"
env_repository "$NS" main
env_repository "$NS" broken lode-no-such-bucket-e2e
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: later}
spec:
  repository: later
  paths: [/etc]
  nodeSelector: {role: $NS}
  schedule: {cron: "* * * * *", jitter: 0s}
---
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: brokenp}
spec:
  repository: broken
  paths: [/etc]
  nodeSelector: {role: $NS}
---
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: result}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: $NS}
---
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: never}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: $NS}
  schedule: {cron: "0 0 30 2 *"}
  alerts: {maxAge: 1h}
---
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: result-now}
spec: {policy: result, host: $NS-n-0}
---
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: no-such-policy}
spec: {policy: nosuch, host: $NS-n-0}
---
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: no-such-host}
spec: {policy: result, host: $NS-nosuch}
---
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: not-selected}
spec: {policy: result, host: $NS-o-0}
EOF
env_controller_start "$NS" first

# ---- a repository that does not exist, or is not Ready ----
if env_wait 30 "later: Ready=False RepositoryNotFound" cond_is later Ready "False RepositoryNotFound"; then
    pass "a policy whose repository does not exist: Ready=False RepositoryNotFound"
else
    fail "a policy whose repository does not exist: Ready=False RepositoryNotFound" \
        "$(env_get -n "$NS" backuppolicy/later '{.status.conditions}')"
fi
check_contains "Ready names the missing repository" "$(cond later Ready message)" \
    "BackupRepository $NS/later does not exist"
env_wait 20 "a RepositoryNotFound Event" has_event RepositoryNotFound later &&
    pass "a Warning Event says the repository is missing" || fail "RepositoryNotFound Event"
if env_wait 60 "brokenp: RepositoryNotReady" cond_is brokenp Ready "False RepositoryNotReady"; then
    pass "a repository that is not Ready: Ready=False RepositoryNotReady"
else
    fail "a repository that is not Ready: Ready=False RepositoryNotReady" "$(cond brokenp Ready message)"
fi
check_contains "the repository's own reason is quoted" "$(cond brokenp Ready message)" "BucketMissing"

# ---- an invalid policy ----
env_wait 20 "never: Valid=False" cond_is never Valid "False Invalid" &&
    pass "an invalid policy: Valid=False" || fail "an invalid policy: Valid=False"
check_eq "an invalid policy: Ready=False Invalid" "$(cond never Ready status) $(cond never Ready reason)" \
    "False Invalid"
check_eq "an invalid policy: Overdue=Unknown" "$(cond never Overdue status)" Unknown
check_eq "an invalid policy still counts the hosts it selects" \
    "$(env_get -n "$NS" backuppolicy/never '{.status.hosts}')" 2
has_event Invalid never && pass "an invalid policy gets a Warning Event" || fail "Invalid Event"
lstatus() { "$LODE" status "$@" -n "$NS" --kubeconfig "$KUBECONFIG" --context admin 2>"$T_TMP/st.err"; }
check_eq "lode status: the invalid policy's hosts are the nodes it selects" \
    "$(lstatus never --output json | jq -c '[.policies[0].hosts[] | [.host, .selected]]')" \
    "[[\"$NS-n-0\",true],[\"$NS-n-1\",true]]"

# ---- Backups that nothing will run ----
for x in "no-such-policy:unknown_policy:UnknownPolicy" "no-such-host:unknown_host:UnknownHost" \
    "not-selected:host_not_selected:HostNotSelected"; do
    IFS=: read -r name reason event <<<"$x"
    if env_wait 30 "$name to fail" phase_reason_is "$name" "Failed $reason"; then
        pass "a hand-made Backup $name ends Failed with $reason"
    else
        fail "a hand-made Backup $name ends Failed with $reason" "got: $(phase_reason "$name")"
    fi
    check_contains "$name: an Event says why" "$(events "$event" "$name")" "cannot run"
done
"$LODE" status result -n "$NS" --kubeconfig "$KUBECONFIG" --context admin --output json \
    >"$T_TMP/st.json" 2>"$T_TMP/st.err"
check_contains "lode status counts hosts as kubectl does, the others apart" "$(lstatus result)" \
    "Hosts     2, 0 overdue; 2 more with Backups only (node gone or not selected)"
check_eq "lode status shows none of them running" \
    "$(jq -c --arg a "$NS-nosuch" --arg b "$NS-o-0" \
        '[.policies[0].hosts[] | select(.host == $a or .host == $b) | [.host, .running]]' "$T_TMP/st.json")" \
    "[[\"$NS-nosuch\",false],[\"$NS-o-0\",false]]"

# ---- the agent's result, from its termination message ----
pod_of() { kc -n "$NS" get pods -l "job-name=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
pod_running() { [[ $(kc -n "$NS" get pods -l "job-name=$1" -o jsonpath='{.items[0].status.phase}' 2>/dev/null) == Running ]]; }
if env_wait 60 "the pod of result-now to run" pod_running result-now; then
    job=result-now
    check_eq "the agent is told the policy, the host, the root and where to write its result" \
        "$(env_get -n "$NS" "job/$job" '{.spec.template.spec.containers[0].args}')" \
        "[\"--policy\",\"$NS/result\",\"--host\",\"$NS-n-0\",\"--root\",\"/host\",\"--output\",\"json\",\"--termination-log\",\"/dev/termination-log\",\"--cache-dir\",\"/var/cache/lodestore\"]"
    kc -n "$NS" get job "$job" -o json >"$T_TMP/job.json"
    envj() { jq -c --arg n "$1" '.spec.template.spec.containers[0].env[] | select(.name == $n) | del(.name)' "$T_TMP/job.json"; }
    check_eq "LODE_REPOSITORY by value" "$(envj LODE_REPOSITORY)" \
        "{\"value\":\"s3:${S3_ENDPOINT%/}/$S3_BUCKET/e2e/$NS/main\"}"
    check_eq "the access key by reference" "$(envj AWS_ACCESS_KEY_ID)" \
        '{"valueFrom":{"secretKeyRef":{"key":"AWS_ACCESS_KEY_ID","name":"main-s3"}}}'
    check_eq "the secret key by reference" "$(envj AWS_SECRET_ACCESS_KEY)" \
        '{"valueFrom":{"secretKeyRef":{"key":"AWS_SECRET_ACCESS_KEY","name":"main-s3"}}}'
    check_eq "the repository key as a file" "$(envj LODE_KEY_FILE)" \
        '{"value":"/var/run/lodestore/repository/key"}'
    check_eq "no secret value in the Job" "$(grep -c "$S3_SECRET_KEY" "$T_TMP/job.json")" 0
    want=$(kc -n "$NS" get backuppolicy result -o json |
        jq -cS '{apiVersion, kind, metadata: {namespace: .metadata.namespace, name: .metadata.name}, spec}')
    check_eq "the policy as LODE_POLICY_DOCUMENT" "$(envj LODE_POLICY_DOCUMENT | jq -r .value | jq -cS .)" "$want"

    runs() { curl -fsS "http://127.0.0.1:$CTL_PORT/metrics" |
        awk -v k="lodestore_runs_total{policy=\"$NS/result\",result=\"$1\"}" '$1 == k {print $2}'; }
    check_eq "a run made by hand counts as started once its Job is created" "$(runs started)" 1
    pod=$(pod_of "$job")
    msg=$(jq -cn --arg p "$NS/result" --arg h "$NS-n-0" '{snapshot: {id: "e2e-snap-1", policy: $p,
        host: $h, time: "2026-12-03T08:00:00Z", incomplete: false, suspicious: true, files: 12,
        bytes: 4096, newBytes: 1024, uploadedBytes: 900}}')
    now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    patch=$(jq -cn --arg m "$msg" --arg t "$now" '{status: {phase: "Succeeded", containerStatuses: [{
        name: "backup", image: "lodestore.invalid/agent:e2e", imageID: "", ready: false,
        restartCount: 0, started: false, state: {terminated: {exitCode: 0, reason: "Completed",
        message: $m, startedAt: $t, finishedAt: $t}}}]}}')
    kc -n "$NS" patch pod "$pod" --subresource=status --type=merge -p "$patch" >/dev/null
    if env_wait 60 "result-now to succeed" phase_reason_is result-now "Succeeded "; then
        pass "the run ends Succeeded when its pod does"
    else
        fail "the run ends Succeeded when its pod does" "$(phase_reason result-now)"
    fi
    check_eq "status.snapshot is the agent's report" \
        "$(kc -n "$NS" get backup result-now -o json | jq -cS .status.snapshot)" "$(jq -cS .snapshot <<<"$msg")"
    check_eq "Suspicious=True" "$(bk result-now '{.status.conditions[?(@.type=="Suspicious")].status}')" True
    check_eq "SnapshotReported=True" \
        "$(bk result-now '{.status.conditions[?(@.type=="SnapshotReported")].status}')" True
    check_eq "and as succeeded when it ends" "$(runs succeeded)" 1
    env_wait 20 "a Suspicious Event" has_event Suspicious result-now &&
        pass "a suspicious snapshot gets a Warning Event" || fail "Suspicious Event"
    check_contains "the Event names the snapshot" "$(events Suspicious result-now)" "e2e-snap-1"
else
    fail "the pod of the hand-made run runs" "$(kc -n "$NS" get pods -o wide 2>&1)"
fi

# ---- the repository appears: the policy starts by itself ----
missed_n0() { events Missed later | grep -c "on $NS-n-0 missed: its BackupRepository $NS/later does not exist"; }
has_missed() { [[ $(missed_n0) -ge 1 ]]; }
env_wait 75 "a slot reported missed for the missing repository" has_missed &&
    pass "a slot without its repository is reported Missed, and why" ||
    fail "a slot without its repository is reported Missed" "$(events Missed later)"
check_eq "nothing ran without the repository" "$(backups_of later | grep -c .)" 0
check_eq "no Job either" "$(kc -n "$NS" get jobs -l lodestore.io/policy=later -o name | wc -l)" 0
missed_slot=$(events Missed later | grep -o 'slot [0-9T:-]* on' | head -n 1 | cut -d' ' -f2)
env_repository "$NS" later
two_hosts_ran() { [[ $(backups_of later | cut -d' ' -f2 | sort -u | wc -l) -eq 2 ]]; }
if env_wait 75 "runs of the policy once its repository is there" two_hosts_ran; then
    pass "the policy starts by itself when its repository appears"
else
    fail "the policy starts by itself when its repository appears" "$(tail -n 20 "$T_TMP/first.log")"
fi
env_wait 30 "later: Ready=True" cond_is later Ready "True Scheduled" &&
    pass "and its Ready turns True" || fail "and its Ready turns True" "$(cond later Ready message)"
# A run for the slot reported missed is a catch-up (docs/operator.md: how trigger is chosen).
bad=$(backups_of later | awk -v s="$missed_slot" '$1 == s && $3 != "catch-up"')
check_eq "a run of a slot reported missed is labelled catch-up" "$bad" ""
done_later() { [[ $(kc -n "$NS" get backups -l lodestore.io/policy=later -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c Succeeded) -ge 1 ]]; }
if env_wait 60 "a run of later to succeed" done_later; then
    b=$(kc -n "$NS" get backups -l lodestore.io/policy=later \
        -o jsonpath='{range .items[?(@.status.phase=="Succeeded")]}{.metadata.name}{"\n"}{end}' | head -n 1)
    check_eq "a run that reported no snapshot says so" \
        "$(bk "$b" '{.status.conditions[?(@.type=="SnapshotReported")].status} {.status.conditions[?(@.type=="SnapshotReported")].reason}')" \
        "False NoResult"
    # On the policy, paced with its like (one agent image reports nothing on every host).
    noresult_names_b() { events NoResult later | grep -q "$b"; }
    env_wait 20 "a NoResult Event on the policy" noresult_names_b &&
        pass "and a Warning Event NoResult on the policy naming the Backup" ||
        fail "NoResult Event on the policy" "$(events NoResult later)"
else
    fail "a run of later succeeds"
fi

# ---- a node put back into the selector runs the slot it was out for, as a catch-up ----
h1=$NS-n-1
kc label node "$h1" "role=$NS-out" --overwrite >/dev/null
boundary=$((($(date +%s) / 60 + 1) * 60))
slot_passed() { [[ $(date +%s) -ge $((boundary + 3)) ]]; }
env_wait 70 "a slot to pass with $h1 out of the selector" slot_passed
out_slot=$(date -u -d "@$boundary" +%Y-%m-%dT%H:%M)
kc label node "$h1" "role=$NS" --overwrite >/dev/null
trigger_of_out_slot() { backups_of later | awk -v h="$h1" -v s="$out_slot" '$1 == s && $2 == h {print $3}'; }
ran_out_slot() { [[ -n $(trigger_of_out_slot) ]]; }
env_wait 30 "the run of $out_slot on $h1" ran_out_slot
check_eq "a node put back into the selector runs the slot it was out for as a catch-up" \
    "$(trigger_of_out_slot)" catch-up

# ---- slots missed while the controller is down, before one that runs on time ----
h=$NS-n-0
newest_slot() { backups_of later | awk -v h="$h" '$2 == h {print $1}' | sort | tail -n 1; }
s1=$(newest_slot)
t1=$(date -u -d "${s1}Z" +%Y-%m-%dT%H:%M:%SZ)
recorded() { [[ $(env_get -n "$NS" backuppolicy/later "{.status.startedSlots.$h}") == "$t1" ]]; }
env_wait 20 "slot $s1 recorded as started" recorded || fail "slot $s1 recorded" \
    "$(env_get -n "$NS" backuppolicy/later '{.status.startedSlots}')"
kill -9 "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
# Back "two and a half minutes later": the controller's clock runs ahead (a test flag), so
# the slots between are passed and the current one runs on time.
env_controller_start "$NS" second --clock-offset 150s
after_s1() { [[ $(newest_slot) > "$s1" ]]; }
if env_wait 30 "a run after the outage" after_s1; then
    s2=$(newest_slot)
    gap=$((($(date -u -d "${s2}Z" +%s) - $(date -u -d "${s1}Z" +%s)) / 60 - 1))
    check_eq "the run after the outage is on time (scheduled)" \
        "$(backups_of later | awk -v h="$h" -v s="$s2" '$2 == h && $1 == s {print $3}')" scheduled
    metric() { curl -fsS "http://127.0.0.1:$CTL_PORT/metrics" |
        awk -v k="lodestore_host_missed_slots_total{policy=\"$NS/later\",host=\"$h\"}" '$1 == k {print $2}'; }
    check_eq "every slot missed during the outage is counted ($gap)" "$(metric)" "$gap"
    gap_event() { events Missed later | grep -E "(slot|slots) .*on $h missed.*slot $s2 runs now" | head -n 1; }
    has_gap_event() { [[ -n $(gap_event) ]]; }
    env_wait 20 "a Missed Event for the outage" has_gap_event
    ev=$(gap_event)
    if [[ $gap -eq 1 ]]; then
        want="slot $(date -u -d "${s1}Z + 1 minute" +%Y-%m-%dT%H:%M) on $h missed"
    else
        want="$gap slots on $h missed"
    fi
    check_contains "a Missed Event reports them" "$ev" "$want"
else
    fail "a run after the outage" "$(tail -n 20 "$T_TMP/second.log")"
fi

# ---- every Event's log line names its object ----
lines=$(cat "$T_TMP/first.log" "$T_TMP/second.log" | grep -E ' (error|info|debug) event ')
check_eq "every Event's log line names its object" \
    "$(grep -vE " event (Normal|Warning) [A-Za-z]+ on (BackupPolicy|Backup) $NS/[a-z0-9.-]+: " <<<"$lines" | head -n 3)" ""
check_contains "the log says which policy started a backup" "$lines" \
    "event Normal BackupStarted on BackupPolicy $NS/later: "

# ---- a status nobody writes any more is marked stale by lode status ----
kill -TERM "$CTL_PID"
if wait "$CTL_PID"; then
    pass "the controller stops cleanly on SIGTERM (exit 0; with a sanitizer build: no error, no leak)"
else
    fail "the controller stops cleanly on SIGTERM" "$(grep -A30 -m1 'Sanitizer' "$T_TMP/second.log")"
fi
past=$(date -u -d '-10 minutes' +%Y-%m-%dT%H:%M:%SZ)
kc -n "$NS" patch backuppolicy later --subresource=status --type=merge \
    -p "{\"status\":{\"nextRun\":\"$past\"}}" >/dev/null
check_contains "lode status marks a status whose next run long passed as stale" "$(lstatus later)" \
    "stale: the status's next run ($past) passed 10m"

finish
