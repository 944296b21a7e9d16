#!/usr/bin/env bash
# The backup Job of issue 22's fields, as the API server stores it (docs/policy.md,
# "spec.pod", "spec.hooks"; docs/retention.md, "Pinned snapshots"):
#   - spec.pod: the Job's pod carries the priority class, the pull secrets, the
#     tolerations (replacing the default) and the container's resources;
#   - a Backup made by hand with spec.pin: the agent is told --pin REASON;
#   - spec.hooks in a namespace the controller allows: SYS_CHROOT and a writable node
#     root; in one it does not: neither, and LODE_HOOKS_ALLOWED=0;
#   - the CRD refuses what it can (a bad quantity, a bad pin).
# Every wait is bounded.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
NS=e2e-pod-$(openssl rand -hex 3)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    kc delete ns "$NS" --wait=false >/dev/null 2>&1
    env_delete_nodes "$NS-n" >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT

job_exists() { kc -n "$1" get job "$2" >/dev/null 2>&1; }
jq_job() { kc -n "$1" get job "$2" -o json | jq -c "$3"; }

env_crds
kc create namespace "$NS" >/dev/null
env_repository "$NS" main
env_create_nodes 2 "$NS-n" "role=$NS"
kc apply -f - >/dev/null <<EOF
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: $NS-low}
value: 10
EOF
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: db}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: $NS}
  hooks:
    before:
    - {name: dump, command: [/bin/true]}
  pod:
    priorityClassName: $NS-low
    imagePullSecrets: [regcred]
    tolerations:
    - {key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}
    resources:
      requests: {cpu: 100m, memory: 128Mi}
      limits: {memory: 1Gi}
EOF
hand() { # NAME NODE: a Backup made by hand, pinned
    kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: $1}
spec:
  policy: db
  host: $2
  pin: {reason: before the 3.2 upgrade}
EOF
}
# The namespace allowed hooks first, then a controller that allows another one only.
env_controller_start "$NS" allowed --hook-namespaces "other,$NS"
hand before-upgrade "$NS-n-0"
env_wait 30 "the Job of the Backup made by hand" job_exists "$NS" before-upgrade ||
    fail "the Job is created" "$(tail -n 20 "$T_TMP/allowed.log")"
kill -TERM "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
env_controller_start "$NS" denied --hook-namespaces other
hand second "$NS-n-1"
env_wait 30 "the Job where hooks are not allowed" job_exists "$NS" second ||
    fail "the Job is created (hooks not allowed)" "$(tail -n 20 "$T_TMP/denied.log")"
NO=$NS

pod='.spec.template.spec'
c='.spec.template.spec.containers[0]'
check_eq "the priority class" "$(jq_job "$NS" before-upgrade "$pod.priorityClassName")" "\"$NS-low\""
check_eq "the pull secrets" "$(jq_job "$NS" before-upgrade "$pod.imagePullSecrets")" '[{"name":"regcred"}]'
check_eq "the tolerations replace the default" "$(jq_job "$NS" before-upgrade "$pod.tolerations")" \
    '[{"effect":"NoSchedule","key":"node-role.kubernetes.io/control-plane","operator":"Exists"}]'
check_eq "the memory request and limit" \
    "$(jq_job "$NS" before-upgrade "[$c.resources.requests.memory, $c.resources.limits.memory, $c.resources.requests.cpu]")" \
    '["128Mi","1Gi","100m"]'
check_eq "the agent is told to pin, with the reason" \
    "$(jq_job "$NS" before-upgrade "$c.args | index(\"--pin\") as \$i | .[\$i + 1]")" '"before the 3.2 upgrade"'
check_eq "hooks allowed: SYS_CHROOT added" \
    "$(jq_job "$NS" before-upgrade "$c.securityContext.capabilities.add | index(\"SYS_CHROOT\") != null")" true
# readOnly false is the default, which the API server leaves out.
check_eq "hooks allowed: the node's root writable" \
    "$(jq_job "$NS" before-upgrade "$c.volumeMounts[] | select(.name == \"host-root\") | (.readOnly // false)")" false
check_eq "hooks not allowed: no SYS_CHROOT" \
    "$(jq_job "$NO" second "$c.securityContext.capabilities.add | index(\"SYS_CHROOT\") != null")" false
check_eq "hooks not allowed: the node's root read-only" \
    "$(jq_job "$NO" second "$c.volumeMounts[] | select(.name == \"host-root\") | .readOnly")" true
check_eq "hooks not allowed: the agent is told so" \
    "$(jq_job "$NO" second "$c.env[] | select(.name == \"LODE_HOOKS_ALLOWED\") | .value")" '"0"'

# What the CRD refuses at admission.
out=$(kc -n "$NS" apply -f - 2>&1 <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: bad}
spec:
  repository: main
  paths: [/etc]
  pod: {resources: {limits: {memory: 1GB}}}
EOF
)
check_contains "a bad quantity is refused by the API server" "$out" "spec.pod.resources.limits.memory"
out=$(kc -n "$NS" apply -f - 2>&1 <<EOF
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: bad-pin}
spec: {policy: db, host: $NS-n-0, pin: {reason: ""}}
EOF
)
check_contains "an empty pin reason is refused by the API server" "$out" "spec.pin.reason"
finish
