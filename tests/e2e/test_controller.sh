#!/usr/bin/env bash
# The controller against the real control plane of tests/env (kube-apiserver, the Job
# controller of kube-controller-manager, KWOK nodes and pods). Every wait is bounded;
# the slowest step waits for the next minute boundary of a "* * * * *" schedule.
#
# What it checks, as an operator would:
#   - a minute schedule gives exactly one Backup and one Job per selected node per slot,
#     named from (policy, host, slot), pinned, read-only mounts, deadline = maxRuntime;
#   - nodeSelector leaves other nodes alone; Backups reach Succeeded from their Jobs;
#   - the policy's status: Valid, Ready, hosts, next run, observedGeneration;
#   - a policy the schema admits but the validator rejects gets Valid=False with the
#     validator's message;
#   - a node added later gets runs and a removed one none;
#   - the controller killed (SIGKILL) across a slot runs that slot once per node after
#     its restart (its one catch-up), and no slot twice;
#   - the kube-apiserver restarting across a slot, with etcd's history compacted past
#     the versions the controller's watches would resume from: every watch gets 410
#     Gone and relists (the controller's LIST count shows it), and the slot runs once
#     per node when it is back, nothing lost, nothing twice;
#   - two replicas with leader election: one leader, no duplicate run, and the standby
#     takes over when the leader is killed;
#   - a backup still running makes the next slot skipped (an Event, a metric), and that
#     slot is caught up once when the backup ends;
#   - with the clock past maxRuntime + 1h, a hung backup fails with time_limit and its Job
#     goes; a policy with maxAge and no backup shows Overdue as a condition and a metric;
#   - /metrics parses as Prometheus text.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
NS=e2e-$(openssl rand -hex 3)
LATE=$NS-late
HA=$NS-ha
PIDS=()

cleanup() {
    env_stop_pids
    kc delete ns "$NS" "$LATE" "$HA" --wait=false >/dev/null 2>&1
    for n in db web new ha slow; do env_delete_nodes "$NS-$n" >/dev/null 2>&1; done
    env_kwok_clear >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT

# start_controller NAME ARGS...: runs the controller as the least-privileged "operator"
# identity; sets PORT_<NAME> from its log once /metrics listens.
start_controller() {
    local name=$1
    shift
    "$CTL" --kubeconfig "$KUBECONFIG" --context operator --metrics-addr 127.0.0.1:0 \
        --agent-image lodestore.invalid/agent:e2e --log-level debug "$@" \
        >>"$T_TMP/$name.log" 2>&1 &
    PIDS+=($!)
    eval "PID_$name=$!"
    env_wait 20 "controller $name to listen" grep -q 'metrics on 127.0.0.1:' "$T_TMP/$name.log" || {
        cat "$T_TMP/$name.log"
        return 1
    }
    local port
    port=$(grep -o 'metrics on 127.0.0.1:[0-9]*' "$T_TMP/$name.log" | tail -n 1 | cut -d: -f2)
    eval "PORT_$name=$port"
}

count() { # NS SELECTOR -> number of Backups
    kc -n "$1" get backups -l "$2" -o name | wc -l
}
backups_are() { [[ $(count "$1" "$2") -eq $3 ]]; }
phase_count() { # NS POLICY PHASE
    kc -n "$1" get backups -l "lodestore.io/policy=$2" \
        -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c "^$3\$"
}
all_succeeded() { [[ $(phase_count "$1" "$2" Succeeded) -eq $3 ]]; }
cond() { # NS POLICY TYPE -> status
    env_get -n "$1" "backuppolicy/$2" "{.status.conditions[?(@.type==\"$3\")].status}"
}
cond_is() { [[ $(cond "$1" "$2" "$3") == "$4" ]]; }

kc apply --server-side -f "$ROOT/crd/" >/dev/null
kc wait --for condition=established --timeout=30s crd/backuppolicies.lodestore.io \
    crd/backups.lodestore.io crd/backuprepositories.lodestore.io >/dev/null
kc create namespace "$NS" >/dev/null
kc create namespace "$LATE" >/dev/null
kc create namespace "$HA" >/dev/null
# Policies run only with their BackupRepository Ready (docs/operator.md).
for ns in "$NS" "$LATE" "$HA"; do env_repository "$ns" main; done
env_create_nodes 3 "$NS-db" role=db
env_create_nodes 1 "$NS-web" role=web
env_create_nodes 1 "$NS-ha" role=ha
env_create_nodes 1 "$NS-slow" role=slow
env_kwok_result hang "lodestore.io/policy=slow"

start_controller main --namespace "$NS"
# Two replicas for the HA namespace; they run alongside the main flow's waits.
HA_FLAGS=(--namespace "$HA" --leader-elect --leader-election-namespace "$HA" --lease-duration 6s
    --renew-deadline 4s --retry-period 1s)
start_controller ha_a "${HA_FLAGS[@]}" --identity replica-a
start_controller ha_b "${HA_FLAGS[@]}" --identity replica-b
kc -n "$HA" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: ha}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: ha}
  schedule: {cron: "* * * * *", jitter: 0s}
---
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: slow}
spec:
  repository: main
  paths: [/srv]
  nodeSelector: {role: slow}
  schedule: {cron: "* * * * *", jitter: 0s}
  limits: {maxRuntime: 1h}
EOF

# ---- a minute schedule on three nodes ----
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: minutely}
spec:
  repository: main
  paths: [/etc, /var/lib/app]
  nodeSelector: {role: db}
  schedule: {cron: "* * * * *", jitter: 0s}
  limits: {maxRuntime: 2h, nice: 10}
EOF
env_wait 90 "three Backups of the first slot" backups_are "$NS" lodestore.io/policy=minutely 3
slot=$(kc -n "$NS" get backups -l lodestore.io/policy=minutely -o jsonpath='{.items[0].spec.slot}')
check_eq "one Backup per selected node for the slot" \
    "$(kc -n "$NS" get backups -l lodestore.io/policy=minutely -o jsonpath='{range .items[*]}{.spec.host}{" "}{.spec.slot}{"\n"}{end}' | sort | tr '\n' ';')" \
    "$NS-db-0 $slot;$NS-db-1 $slot;$NS-db-2 $slot;"
check_eq "no Backup on the node the selector leaves out" "$(count "$NS" "lodestore.io/host=$NS-web-0")" 0

job=$(kc -n "$NS" get jobs -l "lodestore.io/host=$NS-db-1" -o jsonpath='{.items[0].metadata.name}')
bk=$(kc -n "$NS" get backups -l "lodestore.io/host=$NS-db-1" -o jsonpath='{.items[0].metadata.name}')
check_eq "the Job is named after its Backup" "$job" "$bk"
check_contains "the name is the policy and the slot" "$job" "minutely-$(tr -d ':T-' <<<"$slot")-"
check_eq "the Job is pinned to its node" "$(env_get -n "$NS" "job/$job" '{.spec.template.spec.nodeName}')" "$NS-db-1"
check_eq "the deadline is maxRuntime" "$(env_get -n "$NS" "job/$job" '{.spec.activeDeadlineSeconds}')" 7200
check_eq "no retries" "$(env_get -n "$NS" "job/$job" '{.spec.backoffLimit}')" 0
check_eq "the node's / mounted read-only at /host, a scratch /tmp, the node cache, the repository key and CA" \
    "$(env_get -n "$NS" "job/$job" '{range .spec.template.spec.containers[0].volumeMounts[*]}{.mountPath}={.readOnly} {end}')" \
    "/host=true /tmp= /var/cache/lodestore= /var/run/lodestore/repository=true /var/run/lodestore/ca=true "
check_eq "the agent is told the policy, the host, the root and the node cache" \
    "$(env_get -n "$NS" "job/$job" '{.spec.template.spec.containers[0].args}')" \
    "[\"--policy\",\"$NS/minutely\",\"--host\",\"$NS-db-1\",\"--root\",\"/host\",\"--output\",\"json\",\"--termination-log\",\"/dev/termination-log\",\"--cache-dir\",\"/var/cache/lodestore\"]"
check_eq "labels name policy, host and slot" \
    "$(env_get -n "$NS" "job/$job" '{.metadata.labels.lodestore\.io/policy} {.metadata.labels.lodestore\.io/host}')" \
    "minutely $NS-db-1"

env_wait 60 "the three Backups to succeed" all_succeeded "$NS" minutely 3 &&
    pass "Backups take their Jobs' outcome (Succeeded)" || fail "Backups take their Jobs' outcome"
env_wait 30 "Ready=True" cond_is "$NS" minutely Ready True &&
    pass "policy Ready=True" || fail "policy Ready=True" "$(kc -n "$NS" get backuppolicy minutely -o yaml)"
check_eq "policy Valid=True" "$(cond "$NS" minutely Valid)" True
check_eq "status counts the selected hosts" "$(env_get -n "$NS" backuppolicy/minutely '{.status.hosts}')" 3
check_eq "status observes the generation" "$(env_get -n "$NS" backuppolicy/minutely '{.status.observedGeneration}')" \
    "$(env_get -n "$NS" backuppolicy/minutely '{.metadata.generation}')"
check_contains "status gives the next run" "$(env_get -n "$NS" backuppolicy/minutely '{.status.nextRun}')" "Z"

# ---- the validator behind the schema ----
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: never}
spec:
  repository: main
  paths: [/etc]
  schedule: {cron: "0 0 30 2 *"}
EOF
env_wait 20 "Valid=False" cond_is "$NS" never Valid False &&
    pass "a policy that passed the schema but fails the validator: Valid=False" ||
    fail "Valid=False for a never-firing cron"
check_contains "Valid carries the validator's message" \
    "$(env_get -n "$NS" backuppolicy/never '{.status.conditions[?(@.type=="Valid")].message}')" \
    "spec.schedule.cron"

# ---- killed across a slot: one run per node for the missed slot, no duplicate ----
# Meanwhile a node joins and one leaves: the missed slot runs on the nodes there now.
env_create_nodes 1 "$NS-new" role=db
kc delete node "$NS-db-0" >/dev/null
kill -9 "$PID_main"
wait "$PID_main" 2>/dev/null
boundary=$(( ($(date +%s) / 60 + 1) * 60 ))
past_boundary() { [[ $(date +%s) -ge $((boundary + 2)) ]]; }
env_wait 70 "a slot to pass while the controller is down" past_boundary
missed=$(date -u -d "@$boundary" +%Y-%m-%dT%H:%M)
start_controller main2 --namespace "$NS"
runs_of_missed() { kc -n "$NS" get backups -l lodestore.io/policy=minutely -o jsonpath='{range .items[*]}{.spec.slot} {.spec.host}{"\n"}{end}' | grep -c "^$missed "; }
three_runs() { [[ $(runs_of_missed) -ge 3 ]]; }
env_wait 30 "the runs of the slot missed while down" three_runs
check_eq "exactly one run per node for the slot missed while down" "$(runs_of_missed)" 3
check_eq "the node added later runs, the removed one does not" \
    "$(kc -n "$NS" get backups -l lodestore.io/policy=minutely -o jsonpath='{range .items[*]}{.spec.slot} {.spec.host}{"\n"}{end}' | grep "^$missed " | cut -d' ' -f2 | sort | tr '\n' ' ')" \
    "$NS-db-1 $NS-db-2 $NS-new-0 "
dups=$(kc -n "$NS" get backups -l lodestore.io/policy=minutely -o jsonpath='{range .items[*]}{.spec.host} {.spec.slot}{"\n"}{end}' | sort | uniq -d | wc -l)
check_eq "no slot ran twice on a host" "$dups" 0

# ---- the metrics ----
metrics=$(curl -fsS "http://127.0.0.1:$PORT_main2/metrics")
bad=$(grep -v '^#' <<<"$metrics" | grep -Ev '^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? -?[0-9.eE+-]+$|^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? (NaN|\+Inf|-Inf)$' | head -n 3)
check_eq "/metrics is Prometheus text" "$bad" ""
check_contains "/metrics has the hosts' next runs" "$metrics" "lodestore_host_next_run_timestamp_seconds{policy=\"$NS/minutely\",host=\"$NS-db-1\"}"
# The watch events by resource: main2's three Backups of the missed slot come back through
# its Backup watch (decoded or not, as its own writes).
backup_watch_events() {
    curl -fsS "http://127.0.0.1:$PORT_main2/metrics" |
        awk '/^lodestore_watch_events_total\{resource="backups",/ { n += $NF } END { print n + 0 }'
}
three_backup_events() { [[ $(backup_watch_events) -ge 3 ]]; }
env_wait 20 "the Backup watch to count the three runs" three_backup_events &&
    pass "lodestore_watch_events_total counts the Backup watch's events" ||
    fail "lodestore_watch_events_total for backups" "$(backup_watch_events)"
for res in backuppolicies backups jobs nodes pods; do
    check_contains "/metrics has the $res watch's events" "$metrics" \
        "lodestore_watch_events_total{resource=\"$res\",decoded=\"false\"}"
done
check_eq "/healthz" "$(curl -fsS "http://127.0.0.1:$PORT_main2/healthz")" ok
env_wait 20 "/readyz" curl -fsS "http://127.0.0.1:$PORT_main2/readyz" && pass "/readyz once synced" || fail "/readyz"

# ---- a slot skipped behind a running backup, caught up when it ends ----
skipped_event() { [[ -n $(kc -n "$HA" get events --field-selector reason=Skipped -o name) ]]; }
env_wait 90 "a Skipped event for the slow policy" skipped_event &&
    pass "a slot behind a running backup is skipped with an Event" || fail "Skipped event"
leader_port() {
    local p
    for p in "$PORT_ha_a" "$PORT_ha_b"; do
        curl -fsS "http://127.0.0.1:$p/metrics" 2>/dev/null | grep -q '^lodestore_leader 1$' && { echo "$p"; return 0; }
    done
    return 1
}
LP=$(leader_port)
check_contains "the missed slot is counted" "$(curl -fsS "http://127.0.0.1:$LP/metrics")" \
    "lodestore_host_missed_slots_total{policy=\"$HA/slow\",host=\"$NS-slow-0\"} 1"
# Now let the hung backup finish: the last skipped slot runs once; earlier ones never.
env_kwok_clear
env_kwok_result succeed "lodestore.io/policy=slow"
kc -n "$HA" annotate pods -l lodestore.io/policy=slow --overwrite "lodestore.io/kwok-poke=$RANDOM" >/dev/null
catch_up_slot() {
    kc -n "$HA" get backups -l lodestore.io/policy=slow -o jsonpath='{range .items[*]}{.spec.slot} {.spec.trigger}{"\n"}{end}' | awk '$2 == "catch-up" {print $1}'
}
has_catch_up() { [[ -n $(catch_up_slot) ]]; }
env_wait 60 "the skipped slot to be caught up" has_catch_up
skipped=$(kc -n "$HA" get events --field-selector reason=Skipped -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep -o 'slot [0-9T:-]*' | cut -d' ' -f2 | sort -u)
cu=$(catch_up_slot)
last_skipped=$(tail -n 1 <<<"$skipped")
check_eq "one catch-up when the running backup ends, for the last skipped slot" "$cu" "$last_skipped"
slow_slots=$(kc -n "$HA" get backups -l lodestore.io/policy=slow -o jsonpath='{range .items[*]}{.spec.slot}{"\n"}{end}')
replayed=$(grep -Fxf <(head -n -1 <<<"$skipped") <<<"$slow_slots" | wc -l)
check_eq "earlier skipped slots are never replayed" "$replayed" 0

# ---- two replicas: one leader, no duplicate, failover ----
leaders=0
for p in "$PORT_ha_a" "$PORT_ha_b"; do
    curl -fsS "http://127.0.0.1:$p/metrics" | grep -q '^lodestore_leader 1$' && leaders=$((leaders + 1))
done
check_eq "two replicas, one leader" "$leaders" 1
check_eq "no slot ran twice with two replicas" \
    "$(kc -n "$HA" get backups -o jsonpath='{range .items[*]}{.spec.policy} {.spec.host} {.spec.slot}{"\n"}{end}' | sort | uniq -d | wc -l)" 0
if [[ $LP == "$PORT_ha_a" ]]; then victim=$PID_ha_a; heir=$PORT_ha_b; heir_pid=$PID_ha_b; else victim=$PID_ha_b; heir=$PORT_ha_a; heir_pid=$PID_ha_a; fi
kill -9 "$victim"
killed_at=$(date -u +%Y-%m-%dT%H:%M)
heir_leads() { curl -fsS "http://127.0.0.1:$heir/metrics" | grep -q '^lodestore_leader 1$'; }
env_wait 30 "the standby to take the Lease" heir_leads && pass "the standby takes over when the leader dies" ||
    fail "failover"
later_run() {
    kc -n "$HA" get backups -l lodestore.io/policy=ha -o jsonpath='{range .items[*]}{.spec.slot}{"\n"}{end}' |
        awk -v k="$killed_at" '$1 > k {f=1} END {exit !f}'
}
env_wait 90 "a run by the new leader" later_run && pass "the new leader runs the next slot" ||
    fail "the new leader runs the next slot"
kill -TERM "$heir_pid"
wait "$heir_pid" 2>/dev/null
check_eq "a leader stopped with SIGTERM hands the Lease over (no holder left)" \
    "$(env_get -n "$HA" lease/lodestore-controller '{.spec.holderIdentity}')" ""

# ---- the API server restarts across a slot, and the watches resume into 410 Gone ----
# The apiserver is stopped and started again with its own command line (read from
# /proc), so its port and certificates stay; the watches break and must resume. It
# comes after the leader-election checks: a leader that cannot renew its Lease exits.
# While it is down, etcd's revision is moved on (a key Kubernetes never reads) and its
# history compacted up to there, as on a cluster that has run for a while: the version
# every watch would resume from is then gone from etcd and older than the restarted
# apiserver's watch cache, so each resume is answered 410 Gone and the reflector must
# relist; a relist that lost or repeated a change would lose or double a run.
etcd_api() { # PATH JSON: etcd's JSON gateway; prints the answer
    curl -fsS -X POST "http://127.0.0.1:$ETCD_PORT$1" -d "$2"
}
expire_etcd_history() {
    local rev key value
    key=$(printf 'lodestore-e2e/%s' "$NS" | base64 -w0)
    value=$(date +%s | base64 -w0)
    rev=$(etcd_api /v3/kv/put "{\"key\":\"$key\",\"value\":\"$value\"}" | jq -r .header.revision) &&
        [[ $rev =~ ^[0-9]+$ ]] &&
        etcd_api /v3/kv/compaction "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null &&
        etcd_api /v3/kv/deleterange "{\"key\":\"$key\"}" >/dev/null
}
# The controller's successful LISTs so far (its reflectors list at start and after a 410).
lists_of() { # PORT
    curl -fsS "http://127.0.0.1:$1/metrics" |
        awk '/^lodestore_api_requests_total\{verb="LIST",code="200"[,}]/ { n += $NF } END { print n + 0 }'
}
restart_apiserver_across_slot() {
    local pid=$APISERVER_PID args=() boundary cwd
    mapfile -d '' args <"/proc/$pid/cmdline"
    cwd=$(readlink "/proc/$pid/cwd")
    boundary=$(( ($(date +%s) / 60 + 1) * 60 ))
    # Stop it a few seconds before the boundary, start it a few seconds after.
    wait_until() { [[ $(date +%s) -ge $1 ]]; }
    env_wait 70 "a few seconds before the slot" wait_until $((boundary - 4))
    # SIGTERM; it drains its watches, which can take long on a loaded machine: after
    # 15 s it is killed outright, which is a restart too (a crash).
    kill "$pid"
    env_wait 15 "the apiserver to stop" bash -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid"
    env_wait 15 "the apiserver to be gone" bash -c "! kill -0 $pid 2>/dev/null"
    if expire_etcd_history; then
        pass "etcd's history compacted while the apiserver is down"
    else
        fail "etcd's history compacted while the apiserver is down" "ETCD_PORT=${ETCD_PORT:-unset}"
    fi
    env_wait 20 "the slot to pass" wait_until $((boundary + 3))
    (cd "$cwd" && exec "${args[@]}") >>"$ENV_DIR/logs/kube-apiserver.log" 2>&1 &
    APISERVER_PID=$!
    sed -i "s/^APISERVER_PID=.*/APISERVER_PID=$APISERVER_PID/" "$ENV_STATE"
    env_wait 60 "the apiserver to be ready" kc get --raw /readyz
    OUTAGE_SLOT=$(date -u -d "@$boundary" +%Y-%m-%dT%H:%M)
}
LISTS_BEFORE=$(lists_of "$PORT_main2")
restart_apiserver_across_slot
# Four reflectors (policies, Backups, Jobs, nodes), each one LIST page here.
relisted() { [[ $(lists_of "$PORT_main2") -ge $((LISTS_BEFORE + 4)) ]]; }
env_wait 60 "the controller's reflectors to relist after 410 Gone" relisted &&
    pass "every watch resumed into 410 Gone and relisted (LISTs: $LISTS_BEFORE before, $(lists_of "$PORT_main2") after)" ||
    fail "every watch resumed into 410 Gone and relisted" "LISTs before: $LISTS_BEFORE, now: $(lists_of "$PORT_main2")"
runs_of_outage() { kc -n "$NS" get backups -l lodestore.io/policy=minutely -o jsonpath='{range .items[*]}{.spec.slot} {.spec.host}{"\n"}{end}' | grep -c "^$OUTAGE_SLOT "; }
outage_done() { [[ $(runs_of_outage) -ge 3 ]]; }
env_wait 60 "the runs of the slot during the outage" outage_done
check_eq "the slot during an apiserver outage runs once per node" "$(runs_of_outage)" 3
check_eq "still no slot twice on a host after the watches broke and relisted" \
    "$(kc -n "$NS" get backups -l lodestore.io/policy=minutely -o jsonpath='{range .items[*]}{.spec.host} {.spec.slot}{"\n"}{end}' | sort | uniq -d | wc -l)" 0
curl -fsS "http://127.0.0.1:$PORT_main2/healthz" >/dev/null && pass "the controller lived through the outage" ||
    fail "the controller lived through the outage"

# ---- time_limit and overdue, with the controller's clock three hours ahead ----
env_kwok_result hang "lodestore.io/policy=stuck"
kc -n "$LATE" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: stuck}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: db}
  schedule: {cron: "0 * * * *", jitter: 0s, catchUpWindow: 1d}
  limits: {maxRuntime: 1h}
---
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: watched}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: web}
  alerts: {maxAge: 1h}
EOF
start_controller late --namespace "$LATE" --clock-offset 3h
failed_time_limit() {
    [[ $(kc -n "$LATE" get backups -l lodestore.io/policy=stuck -o jsonpath='{range .items[*]}{.status.reason}{"\n"}{end}' | grep -c '^time_limit$') -ge 1 ]]
}
env_wait 60 "a hung backup to fail with time_limit" failed_time_limit &&
    pass "a backup active past maxRuntime + 1h fails with time_limit" || fail "time_limit" "$(kc -n "$LATE" get backups -o yaml | tail -40)"
bk=$(kc -n "$LATE" get backups -l lodestore.io/policy=stuck -o jsonpath='{range .items[?(@.status.reason=="time_limit")]}{.metadata.name}{"\n"}{end}' | head -n 1)
gone() { ! kc -n "$LATE" get job "$1" >/dev/null 2>&1 || [[ -n $(env_get -n "$LATE" "job/$1" '{.metadata.deletionTimestamp}') ]]; }
env_wait 30 "its Job to be deleted" gone "$bk" && pass "the stuck Job is cleaned up" || fail "the stuck Job is cleaned up"
check_contains "the status says why" "$(env_get -n "$LATE" "backup/$bk" '{.status.message}')" "maxRuntime of 1h"

env_wait 30 "Overdue=True" cond_is "$LATE" watched Overdue True &&
    pass "a host without a backup past maxAge: Overdue=True" || fail "Overdue=True"
check_contains "Overdue names the host" "$(env_get -n "$LATE" backuppolicy/watched '{.status.conditions[?(@.type=="Overdue")].message}')" "$NS-web-0"
check_eq "the overdue count" "$(env_get -n "$LATE" backuppolicy/watched '{.status.overdue}')" 1
check_contains "overdue as a metric" "$(curl -fsS "http://127.0.0.1:$PORT_late/metrics")" \
    "lodestore_host_overdue{policy=\"$LATE/watched\",host=\"$NS-web-0\"} 1"
check_eq "the on-time controller sees no overdue host where backups succeed" \
    "$(cond "$NS" minutely Overdue)" False

# ---- graceful stop ----
kill -TERM "$PID_late"
if wait "$PID_late"; then pass "SIGTERM stops the controller cleanly (exit 0)"; else fail "SIGTERM exit status"; fi

finish
