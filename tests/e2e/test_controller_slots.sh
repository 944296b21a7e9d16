#!/usr/bin/env bash
# A slot never runs twice, whatever is deleted (docs/operator.md, "How a backup runs"):
#   - a slot's Backup deleted by hand while the controller runs is not created again;
#   - a slot's Backup deleted while the controller is down is not created again after
#     its restart (the slot is recorded in the policy's status.startedSlots);
#   - the next slots still run, once each.
# Every wait is bounded; the test waits for three minute boundaries.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
NS=e2e-slots-$(openssl rand -hex 3)
PIDS=()
cleanup() {
    env_stop_pids
    kc delete ns "$NS" --wait=false >/dev/null 2>&1
    env_delete_nodes "$NS-n" >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT

# slot_of NAME: the Backup's spec.slot (empty when it does not exist)
slot_of() { env_get -n "$NS" "backup/$1" '{.spec.slot}' 2>/dev/null; }
# backup_after SLOT: the name of a Backup of the host whose slot is later than SLOT
backup_after() {
    kc -n "$NS" get backups -o jsonpath='{range .items[*]}{.spec.slot} {.metadata.name}{"\n"}{end}' |
        sort | awk -v s="$1" '$1 > s {print $2}' | tail -n 1
}
has_backup_after() { [[ -n $(backup_after "$1") ]]; }
exists() { kc -n "$NS" get backup "$1" >/dev/null 2>&1; }
started_events() { # NAME: BackupStarted and CaughtUp Events naming the Backup's slot
    kc -n "$NS" get events -o jsonpath='{range .items[*]}{.reason} {.message}{"\n"}{end}' |
        grep -E '^(BackupStarted|CaughtUp) ' | grep "slot $1 " | grep -c " $NS-n-0"
}
recorded() { # SLOT-TIME: the policy status records it as started on the host
    [[ $(env_get -n "$NS" backuppolicy/minutely '{.status.startedSlots.*}') == "$1" ]]
}

env_crds
kc create namespace "$NS" >/dev/null
env_repository "$NS" main
env_create_nodes 1 "$NS-n" "role=$NS"
env_controller_start "$NS" first
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: minutely}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: $NS}
  schedule: {cron: "* * * * *", jitter: 0s}
EOF

# What a person would look at when no Backup came: the policy's and the repository's
# conditions, the Events and the controller's last lines.
diag() {
    echo "policy: $(env_get -n "$NS" backuppolicy/minutely '{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}; {end}')"
    echo "repository: $(env_get -n "$NS" backuprepository/main '{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}; {end}')"
    kc -n "$NS" get events -o jsonpath='{range .items[*]}{.lastTimestamp} {.reason} {.message}{"\n"}{end}' | tail -n 8
    tail -n 25 "$T_TMP/$1.log"
}

# ---- deleted while the controller runs ----
env_wait 75 "a first Backup" has_backup_after "" || fail "a first Backup" "$(diag first)"
b1=$(backup_after "")
s1=$(slot_of "$b1")
t1=$(env_get -n "$NS" "backup/$b1" '{.metadata.annotations.lodestore\.io/slot-time}')
env_wait 15 "slot $s1 recorded in the policy status" recorded "$t1" &&
    pass "the started slot is recorded in status.startedSlots" ||
    fail "startedSlots" "$(env_get -n "$NS" backuppolicy/minutely '{.status}')"
kc -n "$NS" delete backup "$b1" --wait=true >/dev/null
env_wait 75 "the next slot's Backup" has_backup_after "$s1" || fail "the next slot runs"
if exists "$b1"; then
    fail "a deleted Backup's slot is not run again" "$b1 was created again (uid $(env_get -n "$NS" "backup/$b1" '{.metadata.uid}'))"
else
    pass "a deleted Backup's slot is not run again"
fi
check_eq "slot $s1 started once (Events)" "$(started_events "$s1")" 1
check_eq "slot $s1 started once (log)" "$(grep -c "started $NS/$b1 " "$T_TMP/first.log")" 1

# ---- deleted while the controller is down ----
b2=$(backup_after "$s1")
s2=$(slot_of "$b2")
kill -TERM "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
kc -n "$NS" delete backup "$b2" --wait=true >/dev/null
env_controller_start "$NS" second
env_wait 75 "the slot after $s2" has_backup_after "$s2" || fail "the slot after $s2 runs"
if exists "$b2"; then
    fail "a slot whose Backup was deleted during an outage is not run again" "$b2 was created again"
else
    pass "a slot whose Backup was deleted during an outage is not run again"
fi
check_eq "slot $s2 started once (Events)" "$(started_events "$s2")" 1
check_eq "the restarted controller did not start $b2" "$(grep -c "started $NS/$b2 " "$T_TMP/second.log")" 0
finish
