#!/usr/bin/env bash
# The backup Job of issue 22's fields, as the API server stores it (docs/policy.md,
# "spec.pod", "spec.hooks"; docs/retention.md, "Pinned snapshots"):
#   - spec.pod: the Job's pod carries the priority class, the pull secrets, the
#     tolerations (replacing the default) and the container's resources;
#   - a Backup made by hand with spec.pin: the agent is told --pin REASON;
#   - spec.hooks in a namespace the controller allows: SYS_CHROOT and a writable node
#     root; in one it does not: neither, and LODE_HOOKS_ALLOWED=0;
#   - a failed hook, as the agent reports it in its termination message: the Backup's
#     condition HookFailed names the hook and its exit code, and the policy gets a
#     Warning Event HookFailed;
#   - the CRD refuses what it can (a bad quantity, a bad pin);
#   - the node cache (docs/operator.md, "The node cache"): by default a hostPath
#     /var/cache/lodestore (DirectoryOrCreate) mounted writable at the same path and
#     named to the agent with --cache-dir; with --agent-cache-dir "" no volume and
#     --no-cache.
# Every wait is bounded.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
NS=e2e-pod-$(openssl rand -hex 3)
PIDS=()
cleanup() {
    env_stop_pids
    kc delete ns "$NS" --wait=false >/dev/null 2>&1
    env_delete_nodes "$NS-n" >/dev/null 2>&1
    env_kwok_clear >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT

job_exists() { kc -n "$1" get job "$2" >/dev/null 2>&1; }
pod_of() { kc -n "$NS" get pods -l "job-name=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
pod_running() { [[ $(kc -n "$NS" get pods -l "job-name=$1" -o jsonpath='{.items[0].status.phase}' 2>/dev/null) == Running ]]; }
bk() { env_get -n "$NS" "backup/$1" "$2"; }
phase_is() { [[ $(bk "$1" '{.status.phase}') == "$2" ]]; }
hook_event() { kc -n "$NS" get events --field-selector "reason=HookFailed,involvedObject.name=db" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep -q "$1"; }
jq_job() { kc -n "$1" get job "$2" -o json | jq -c "$3"; }

env_crds
kc create namespace "$NS" >/dev/null
env_repository "$NS" main
env_create_nodes 2 "$NS-n" "role=$NS"
# The run on n-0 stays Running until the test says how it ended (its termination message).
env_kwok_result hang "lodestore.io/host=$NS-n-0"
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
env_controller_start "$NS" denied --hook-namespaces other --agent-cache-dir ""
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
check_eq "the node cache: a hostPath made when missing" \
    "$(jq_job "$NS" before-upgrade "$pod.volumes[] | select(.name == \"node-cache\") | .hostPath")" \
    '{"path":"/var/cache/lodestore","type":"DirectoryOrCreate"}'
check_eq "the node cache: mounted writable for the agent" \
    "$(jq_job "$NS" before-upgrade "$c.volumeMounts[] | select(.name == \"node-cache\") | [.mountPath, (.readOnly // false)]")" \
    '["/var/cache/lodestore",false]'
check_eq "the node cache: the agent is told where" \
    "$(jq_job "$NS" before-upgrade "$c.args | index(\"--cache-dir\") as \$i | .[\$i + 1]")" '"/var/cache/lodestore"'
check_eq "no node cache (--agent-cache-dir \"\"): no volume, --no-cache" \
    "$(jq_job "$NO" second "[([$pod.volumes[] | select(.name == \"node-cache\")] | length), ($c.args | index(\"--no-cache\") != null), ($c.args | index(\"--cache-dir\"))]")" \
    '[0,true,null]'

# ---- a failed hook (issue 22): what the agent wrote, as a termination message ----
if env_wait 60 "the pod of before-upgrade to run" pod_running before-upgrade; then
    herr="hook dump failed with exit status 2; its last output: pg_dump: no such database"
    msg=$(jq -cn --arg e "$herr" '{snapshot: null, error: ("before-hook failed (onError: fail): " + $e),
        errors: [], hooks: [{name: "dump", phase: "before", result: "failed", exitCode: 2,
        continued: false, outputBytes: 26, outputTail: "pg_dump: no such database\n", error: $e}]}')
    now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    patch=$(jq -cn --arg m "$msg" --arg t "$now" '{status: {phase: "Failed", containerStatuses: [{
        name: "backup", image: "lodestore.invalid/agent:e2e", imageID: "", ready: false,
        restartCount: 0, started: false, state: {terminated: {exitCode: 1, reason: "Error",
        message: $m, startedAt: $t, finishedAt: $t}}}]}}')
    kc -n "$NS" patch pod "$(pod_of before-upgrade)" --subresource=status --type=merge -p "$patch" >/dev/null
    if env_wait 60 "before-upgrade to fail" phase_is before-upgrade Failed; then
        cond='{.status.conditions[?(@.type=="HookFailed")]'
        check_eq "a failed hook: HookFailed=True, reason HookFailed" \
            "$(bk before-upgrade "$cond.status}") $(bk before-upgrade "$cond.reason}")" "True HookFailed"
        check_contains "the condition names the hook, its exit code and what followed" \
            "$(bk before-upgrade "$cond.message}")" \
            "before-hook dump failed (exit code 2; onError: fail, so no backup ran): $herr"
        check_contains "the hook leads the run's message" "$(bk before-upgrade '{.status.message}')" \
            "before-hook dump failed (exit code 2"
        env_wait 30 "a HookFailed Event on the policy" hook_event "Backup $NS/before-upgrade on host $NS-n-0: before-hook dump failed" &&
            pass "the policy gets a Warning Event HookFailed naming the Backup and the host" ||
            fail "a HookFailed Event on the policy" "$(kc -n "$NS" get events --field-selector involvedObject.name=db 2>&1 | tail -n 5)"
    else
        fail "the run with a failed hook ends Failed" "$(bk before-upgrade '{.status}')"
    fi
else
    fail "the pod of before-upgrade runs" "$(kc -n "$NS" get pods -o wide 2>&1)"
fi

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
