#!/usr/bin/env bash
# spec.suspend (docs/policy.md, "spec.suspend") against the local control plane:
#   - a suspended minutely policy starts no Backup across a slot, and its status shows
#     Suspended=True, Ready=False (Suspended), no next run, the alert limit kept;
#   - resumed, it starts one catch-up at once (spec.trigger catch-up, Event CaughtUp) for
#     the last slot passed while suspended, and reports no slot missed.
# Every wait is bounded; the test waits for one minute boundary.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
NS=e2e-suspend-$(openssl rand -hex 3)
PIDS=()
cleanup() {
    env_stop_pids
    kc delete ns "$NS" --wait=false >/dev/null 2>&1
    env_delete_nodes "$NS-n" >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT

cond() { env_get -n "$NS" backuppolicy/minutely "{.status.conditions[?(@.type==\"$1\")].$2}"; }
backups() { kc -n "$NS" get backups -o name 2>/dev/null | wc -l; }
events() { kc -n "$NS" get events -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' | grep -c "^$1\$"; }
is_suspended() { [[ $(cond Suspended status) == True ]]; }
has_backup() { [[ $(backups) -ge 1 ]]; }

env_crds
kc create namespace "$NS" >/dev/null
env_repository "$NS" main
env_create_nodes 1 "$NS-n" "role=$NS"
env_controller_start "$NS" ctl
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: minutely}
spec:
  suspend: true
  repository: main
  paths: [/etc]
  nodeSelector: {role: $NS}
  schedule: {cron: "* * * * *", jitter: 0s}
EOF

env_wait 30 "the Suspended condition" is_suspended &&
    pass "a suspended policy shows Suspended=True" ||
    fail "Suspended condition" "$(env_get -n "$NS" backuppolicy/minutely '{.status}')"
check_eq "Ready is False with reason Suspended" "$(cond Ready status) $(cond Ready reason)" "False Suspended"
check_eq "a suspended policy has no next run" "$(env_get -n "$NS" backuppolicy/minutely '{.status.nextRun}')" ""
check_eq "the alert limit the schedule gives stays (2 x 60s + 0s)" \
    "$(env_get -n "$NS" backuppolicy/minutely '{.status.alertLimitSeconds}')" 120
# A whole minute boundary passes: nothing starts, nothing is reported missed.
start=$(date +%s)
env_wait $((65 - start % 60 + 5)) "a minute boundary" bash -c "[ \$(( \$(date +%s) / 60 )) -gt $((start / 60)) ]"
sleep_until=$(( $(date +%s) + 5 ))
env_wait 10 "the controller's pass after the slot" bash -c "[ \$(date +%s) -ge $sleep_until ]"
check_eq "no Backup starts while suspended" "$(backups)" 0
check_eq "no slot is reported missed while suspended" "$(events Missed)" 0

kc -n "$NS" patch backuppolicy minutely --type merge -p '{"spec":{"suspend":false}}' >/dev/null
env_wait 20 "the catch-up Backup" has_backup &&
    pass "resumed, a Backup starts at once" || fail "resumed, a Backup starts" "$(tail -n 20 "$T_TMP/ctl.log")"
b=$(kc -n "$NS" get backups -o jsonpath='{.items[0].metadata.name}')
check_eq "the run is a catch-up" "$(env_get -n "$NS" "backup/$b" '{.spec.trigger}')" catch-up
check_eq "one CaughtUp Event" "$(events CaughtUp)" 1
check_eq "still no slot reported missed" "$(events Missed)" 0
# Policy status writes are paced (three, then one per 10 s per policy: docs/operator.md).
resumed() { [[ "$(cond Suspended status) $(cond Suspended reason)" == "False Active" ]]; }
env_wait 25 "Suspended to turn False" resumed
check_eq "Suspended is False once resumed" "$(cond Suspended status) $(cond Suspended reason)" "False Active"
finish
