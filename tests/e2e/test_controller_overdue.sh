#!/usr/bin/env bash
# The overdue clock's inputs, incomplete runs and deleted policies (docs/schedule.md, "The
# alert limit"; docs/operator.md, "Backup"), on the local control plane of tests/env with
# versitygw, as an operator would check them:
#   - the policy's status.enrolledHosts records when each selected host enrolled; a node
#     added to the nodeSelector later enrolls when it is added (not when it joined), one
#     taken out is removed, and a restarted controller keeps the times recorded;
#   - a run whose agent wrote an incomplete snapshot (exit 3; the pod's result is set here
#     by patching its status, as KWOK nodes run no agent) ends Succeeded with reason
#     incomplete, an Incomplete condition and Event, counted by
#     lodestore_runs_total{result="incomplete"}, and the forget runs after it;
#   - deleting a BackupPolicy deletes the Backups the controller made for it and their Jobs,
#     leaves a Backup made by hand (it is not owned), and deletes no snapshot.
# Every wait is bounded; the slowest waits for a minute boundary.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
LODE=${LODE:-$ROOT/build/lode}
case "$LODE" in /*) ;; *) LODE="$ROOT/$LODE" ;; esac
case "$CTL" in /*) ;; *) CTL="$ROOT/$CTL" ;; esac
out=$ROOT/build/e2e
NS=e2e-od-$(openssl rand -hex 3)
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

if [[ -x $LODE && -x $CTL && -f $ROOT/build/liblode.a ]] &&
    env_build_tool repo_fixture 2>"$T_TMP/cc.log"; then
    pass "build repo_fixture (lode, lode-controller and build/liblode.a from make)"
else
    fail "build repo_fixture (run make first)" "$(cat "$T_TMP/cc.log")"
    finish
    exit 1
fi

stop_controller() { # LOG: a graceful stop exits 0
    kill "$CTL_PID" 2>/dev/null
    wait "$CTL_PID" 2>/dev/null
    local rc=$?
    PIDS=()
    [[ $rc == 0 ]] && pass "the controller ($1) stops cleanly" ||
        fail "the controller ($1) stops cleanly" "exit $rc; $(grep -A30 -m1 'Sanitizer' "$T_TMP/$1.log")"
}
events() { # REASON OBJECT-NAME: messages of Events of that reason about the object
    kc -n "$NS" get events --field-selector "reason=$1,involvedObject.name=$2" \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}
has_event() { [[ -n $(events "$1" "$2") ]]; }
bk() { env_get -n "$NS" "backup/$1" "$2"; }
phase_reason() { bk "$1" '{.status.phase} {.status.reason}'; }
phase_reason_is() { [[ $(phase_reason "$1") == "$2" ]]; }
enrolled() { env_get -n "$NS" backuppolicy/enrol "{.status.enrolledHosts.$1}"; }
enrolled_hosts() { kc -n "$NS" get backuppolicy enrol -o json | jq -r '.status.enrolledHosts // {} | keys | join(" ")'; }
enrolled_hosts_are() { [[ $(enrolled_hosts) == "$1" ]]; }
pod_of() { kc -n "$NS" get pods -l "job-name=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
pod_running() { [[ $(kc -n "$NS" get pods -l "job-name=$1" -o jsonpath='{.items[0].status.phase}' 2>/dev/null) == Running ]]; }
runs() { curl -fsS "http://127.0.0.1:$CTL_PORT/metrics" |
    awk -v k="lodestore_runs_total{policy=\"$NS/$1\",result=\"$2\"}" '$1 == k {print $2}'; }
epoch() { date -u -d "$1" +%s; }

env_crds
kc create namespace "$NS" >/dev/null
env_create_nodes 2 "$NS-n" "role=$NS"
env_create_nodes 1 "$NS-o" "role=$NS-other"
env_kwok_result hang "lodestore.io/policy=enrol"
env_kwok_result hang "lodestore.io/policy=gone"
env_repository "$NS" main
# enrol: a yearly slot, so nothing runs but what the test starts; gone: every minute.
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: enrol}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: $NS}
  schedule: {cron: "0 0 1 1 *"}
---
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: gone}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: $NS}
  schedule: {cron: "* * * * *", jitter: 0s}
EOF

# ---- the snapshots: the incomplete run's, and two of the policy that will be deleted ----
env_lode_s3
export LODE_REPOSITORY=s3:${S3_ENDPOINT%/}/$S3_BUCKET/e2e/$NS/main
printf 'e2e-main' >"$T_TMP/key"
chmod 600 "$T_TMP/key" # lode refuses a key file open to others (docs/repository.md)
export LODE_KEY_FILE=$T_TMP/key
DATA=$ENV_DIR/s3/data/$S3_BUCKET/e2e/$NS/main
INC=$(date -u +%Y%m%dT%H%M%SZ)-00000000000000a1
G0=$(date -u +%Y%m%dT%H%M%SZ)-00000000000000b1
G1=$(date -u +%Y%m%dT%H%M%SZ)-00000000000000b2
printf '%s\n' init "snap $NS enrol $NS-n-0 $INC - 3600 incomplete" "snap $NS gone $NS-n-0 $G0 - 3600" \
    "snap $NS gone $NS-n-1 $G1 - 3600" | "$out/repo_fixture" "$T_TMP/key" >"$T_TMP/fixture.out" 2>&1
check_eq "fixture: the snapshots are written" "$(tail -n 1 "$T_TMP/fixture.out")" "ok 4"

# ---- enrolment ----
env_controller_start "$NS" first
if env_wait 30 "enrolledHosts of both selected nodes" enrolled_hosts_are "$NS-n-0 $NS-n-1"; then
    pass "status.enrolledHosts records the selected hosts, and only them"
else
    fail "status.enrolledHosts records the selected hosts" "$(env_get -n "$NS" backuppolicy/enrol '{.status}')"
fi
n0=$(enrolled "$NS-n-0")
check_contains "as RFC 3339 times" "$n0" "Z"

# A node that joined before it was selected: its enrolment is the selection, not the join.
joined=$(epoch "$(env_get "node/$NS-o-0" '{.metadata.creationTimestamp}')")
clock_past() { [[ $(date +%s) -gt $1 ]]; }
env_wait 5 "the clock to pass the node's creation" clock_past "$joined"
labelled=$(date +%s)
kc label node "$NS-o-0" "role=$NS" --overwrite >/dev/null
if env_wait 30 "the node added to the nodeSelector to enroll" enrolled_hosts_are "$NS-n-0 $NS-n-1 $NS-o-0"; then
    at=$(epoch "$(enrolled "$NS-o-0")")
    ((at >= labelled)) && pass "a node added to the nodeSelector enrolls when it is added, not when it joined" ||
        fail "a node added to the nodeSelector enrolls when it is added" "enrolled $at, joined $joined, labelled $labelled"
else
    fail "a node added to the nodeSelector enrolls" "$(env_get -n "$NS" backuppolicy/enrol '{.status}')"
fi
o0=$(enrolled "$NS-o-0")
kc label node "$NS-n-1" "role=$NS-other" --overwrite >/dev/null
env_wait 30 "the node taken out to lose its record" enrolled_hosts_are "$NS-n-0 $NS-o-0" &&
    pass "a node taken out of the nodeSelector loses its record" ||
    fail "a node taken out of the nodeSelector loses its record" "$(enrolled_hosts)"

stop_controller first
env_controller_start "$NS" second

# ---- an incomplete run (after the restart, so its status write shows the enrolment kept) ----
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: inc}
spec: {policy: enrol, host: $NS-n-0}
EOF
if env_wait 60 "the pod of inc to run" pod_running inc; then
    msg=$(jq -cn --arg p "$NS/enrol" --arg h "$NS-n-0" --arg id "$INC" '{snapshot: {id: $id,
        policy: $p, host: $h, time: "2026-12-04T08:00:00Z", incomplete: true, suspicious: false,
        files: 12, bytes: 4096, newBytes: 1024, uploadedBytes: 900},
        errors: [{path: "/etc/shadow-", message: "Permission denied"}]}')
    now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    patch=$(jq -cn --arg m "$msg" --arg t "$now" '{status: {phase: "Failed", containerStatuses: [{
        name: "backup", image: "lodestore.invalid/agent:e2e", imageID: "", ready: false,
        restartCount: 0, started: false, state: {terminated: {exitCode: 3, reason: "Error",
        message: $m, startedAt: $t, finishedAt: $t}}}]}}')
    kc -n "$NS" patch pod "$(pod_of inc)" --subresource=status --type=merge -p "$patch" >/dev/null
    if env_wait 60 "inc to end" phase_reason_is inc "Succeeded incomplete"; then
        pass "an agent's exit 3 with an incomplete snapshot: Succeeded, reason incomplete"
    else
        fail "an incomplete run ends Succeeded/incomplete" "$(phase_reason inc)" "$(bk inc '{.status.message}')"
    fi
    check_eq "the Job itself failed (exit 3)" "$(env_get -n "$NS" job/inc '{.status.conditions[?(@.type=="Failed")].status}')" True
    check_eq "Incomplete=True" "$(bk inc '{.status.conditions[?(@.type=="Incomplete")].status}')" True
    check_contains "the message names the first unread file" "$(bk inc '{.status.message}')" \
        "the first /etc/shadow-: Permission denied"
    check_eq "status.snapshot records it" "$(bk inc '{.status.snapshot.id} {.status.snapshot.incomplete}')" "$INC true"
    env_wait 20 "an Incomplete Event" has_event Incomplete inc &&
        pass "an incomplete snapshot gets a Warning Event" || fail "Incomplete Event"
    check_eq "lodestore_runs_total counts it as incomplete" "$(runs enrol incomplete)" 1
    check_eq "and as succeeded" "$(runs enrol succeeded)" 1
    has_ret() { [[ -n $(bk inc '{.status.retention.result}') ]]; }
    if env_wait 60 "inc's status.retention" has_ret; then
        check_eq "the forget ran after it" "$(bk inc '{.status.retention.result} {.status.retention.kept}')" "Done 1"
    else
        fail "the forget runs after an incomplete run" "$(tail -n 20 "$T_TMP/second.log")"
    fi
    check_eq "the incomplete snapshot is kept (no rules: keep everything)" \
        "$(cd "$DATA/snapshots/$NS/enrol/$NS-n-0" && ls)" "$INC.incomplete
$INC.json"
else
    fail "the pod of inc runs" "$(kc -n "$NS" get pods -o wide 2>&1)"
fi
check_eq "a restarted controller keeps the enrolment it recorded" \
    "$(enrolled "$NS-n-0") $(enrolled "$NS-o-0")" "$n0 $o0"

# ---- deleting a policy ----
# The policy's own run of a slot, its Job hanging; then a Backup made by hand for the same
# host, which waits behind it (one run at a time per host) and is marked finished here.
ran() { [[ -n $(kc -n "$NS" get jobs -l "lodestore.io/policy=gone,lodestore.io/host=$NS-n-0" -o name) ]]; }
if env_wait 75 "a run of gone with its Job" ran; then
    pass "the policy to be deleted has runs and Jobs"
else
    fail "the policy to be deleted runs" "$(kc -n "$NS" get backups,jobs 2>&1)"
fi
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: gone-hand}
spec: {policy: gone, host: $NS-n-0}
EOF
kc -n "$NS" patch backup gone-hand --subresource=status --type=merge \
    -p "{\"status\":{\"phase\":\"Succeeded\",\"completionTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}}" >/dev/null
snaps_before=$(cd "$DATA/snapshots/$NS/gone" && find . -type f | sort)
kc -n "$NS" delete backuppolicy gone --wait=false >/dev/null
own_gone() {
    [[ -z $(kc -n "$NS" get backups -l lodestore.io/policy=gone -o name) &&
        -z $(kc -n "$NS" get jobs -l lodestore.io/policy=gone -o name) ]]
}
if env_wait 60 "the policy's Backups and Jobs to go" own_gone; then
    pass "deleting a policy deletes the Backups the controller made and their Jobs"
else
    fail "deleting a policy deletes its Backups and Jobs" "$(kc -n "$NS" get backups,jobs 2>&1)"
fi
check_eq "a Backup made by hand (not owned by the policy) stays" \
    "$(kc -n "$NS" get backup/gone-hand -o name 2>&1)" "backup.lodestore.io/gone-hand"
check_eq "no snapshot of the deleted policy is deleted" \
    "$(cd "$DATA/snapshots/$NS/gone" && find . -type f | sort)" "$snaps_before"
check_eq "lode snapshots still lists them" \
    "$("$LODE" snapshots --policy "$NS/gone" --output json | jq -r '[.snapshots[].id] | sort | join(" ")')" "$G0 $G1"
stop_controller second
finish
