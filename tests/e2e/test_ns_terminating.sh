#!/usr/bin/env bash
# Writes into a namespace whose deletion has begun (docs/operator.md, "A policy being
# deleted"), on the local control plane of tests/env: the API server refuses every create
# there with 403 "because it is being terminated", which is no RBAC refusal. A policy held
# by a finalizer keeps the namespace Terminating; made invalid then, its Ready condition
# changes and the controller's Invalid Event is refused. The controller must take that as
# expected: a debug line, no error line, and /metrics counting it as code="terminating",
# never "403". Every wait is bounded.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
case "$CTL" in /*) ;; *) CTL="$ROOT/$CTL" ;; esac
NS=e2e-term-$(openssl rand -hex 3)
HOLD=e2e.lodestore.io/hold
PIDS=()
cleanup() {
    env_stop_pids
    kc -n "$NS" patch backuppolicy held --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null 2>&1
    kc delete ns "$NS" --wait=false >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT

[[ -x $CTL ]] || {
    fail "lode-controller is built (run make first)" "$CTL"
    finish
    exit 1
}
env_crds
kc create namespace "$NS" >/dev/null
env_repository "$NS" main
kc apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: held, namespace: $NS, finalizers: [$HOLD]}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: $NS-none}
EOF
env_controller_start "$NS" ctl
metric_lines() { curl -s "http://127.0.0.1:$CTL_PORT/metrics" | grep -E '^lodestore_api_requests_total\{'; }
ready_known() { [[ -n $(env_get -n "$NS" backuppolicy/held '{.status.conditions[?(@.type=="Ready")].status}') ]]; }
env_wait 60 "the policy's Ready condition" ready_known || fail "the policy gets a Ready condition"

kc delete ns "$NS" --wait=false >/dev/null
terminating() {
    [[ $(kc get ns "$NS" -o jsonpath='{.status.phase}') == Terminating &&
        -n $(env_get -n "$NS" backuppolicy/held '{.metadata.deletionTimestamp}') ]]
}
env_wait 60 "the namespace Terminating, the policy held" terminating ||
    fail "the namespace is Terminating with the policy held by its finalizer"
# Valid for the schema, refused by the controller's validator: Ready turns Invalid, and the
# Invalid Event is a create in the Terminating namespace.
kc -n "$NS" patch backuppolicy held --type=merge -p '{"spec":{"schedule":{"cron":"0 0 30 2 *"}}}' >/dev/null
refused_quietly() { grep -q 'an Event not written: its namespace is being deleted' "$T_TMP/ctl.log"; }
if env_wait 60 "the Event refused in the Terminating namespace" refused_quietly; then
    pass "a write refused because the namespace is being deleted: one debug line"
else
    fail "a write refused because the namespace is being deleted: one debug line" "$(tail -n 20 "$T_TMP/ctl.log")"
fi
check_eq "no error line about it" \
    "$(grep -c ' error .*\(could not be written\|forbidden\|being terminated\)' "$T_TMP/ctl.log")" 0
counted() { metric_lines | grep -q 'verb="CREATE",code="terminating",resource="events"'; }
env_wait 10 "the metric" counted
check_contains "/metrics counts it as code=\"terminating\"" "$(metric_lines)" \
    'verb="CREATE",code="terminating",resource="events"'
check_eq "/metrics has no 401 or 403" "$(metric_lines | grep -cE 'code="40[13]"')" 0
kill "$CTL_PID" 2>/dev/null
wait "$CTL_PID" 2>/dev/null
rc=$?
PIDS=()
check_eq "the controller stops cleanly" "$rc" 0
finish
