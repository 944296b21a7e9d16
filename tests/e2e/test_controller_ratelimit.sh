#!/usr/bin/env bash
# A slot whose runs queue behind the client-side rate limit says so (docs/operator.md,
# "Requests a run makes"): 15 hosts due at one instant (jitter 0s) and a controller held to
# one request a second (--qps 1 --burst 1), so the later runs start more than 5 s late with
# requests waiting. The policy gets one Warning RateLimited for the slot, naming the slot,
# the limit and the rule; the runs still all start, late.
# Every wait is bounded; the test waits for one minute boundary.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
NS=e2e-rl-$(openssl rand -hex 3)
HOSTS=15
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    kc delete ns "$NS" --wait=false >/dev/null 2>&1
    env_delete_nodes "$NS-n" >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT

env_crds
kc create namespace "$NS" >/dev/null
env_repository "$NS" main
env_create_nodes "$HOSTS" "$NS-n" "role=$NS"
env_controller_start "$NS" ctl --qps 1 --burst 1
repo_ready() { [[ $(env_get -n "$NS" backuprepository/main '{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
env_wait 60 "the repository to be Ready" repo_ready || fail "the repository is Ready" "$(tail -n 20 "$T_TMP/ctl.log")"

# One slot for every host: the first minute that starts at least 45 s from now (rounded up:
# rounded down, a policy made in a minute's first 15 s had its slot in the past, and no run).
slot=$((($(date +%s) + 45 + 59) / 60 * 60))
slot_utc=$(date -u -d "@$slot" +%Y-%m-%dT%H:%M:%SZ)
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: fleet}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {role: $NS}
  schedule: {cron: "$(date -u -d "@$slot" +%-M) $(date -u -d "@$slot" +%-H) * * *", jitter: 0s}
EOF

started() { [[ $(grep -c " started $NS/fleet-" "$T_TMP/ctl.log") -ge $HOSTS ]]; }
env_wait $((slot - $(date +%s) + 90)) "$HOSTS runs to start" started ||
    fail "every run of the slot starts" "$(grep -c " started $NS/fleet-" "$T_TMP/ctl.log") started"
late=$(grep -o " started $NS/fleet-[^ ]* skew_ms=[0-9]*" "$T_TMP/ctl.log" | awk -F= '$2 >= 5000' | wc -l)
[[ $late -ge 1 ]] && pass "runs start late behind the limit ($late of $HOSTS by 5 s or more)" ||
    fail "runs start late behind the limit" "$(grep -o 'skew_ms=[0-9]*' "$T_TMP/ctl.log" | tr '\n' ' ')"

# The Event queues behind the same limit: wait for it.
rate_limited() {
    kc -n "$NS" get events --field-selector reason=RateLimited \
        -o jsonpath='{range .items[*]}{.type} {.involvedObject.kind}/{.involvedObject.name} {.count} {.message}{"\n"}{end}'
}
env_wait 90 "the RateLimited Event" eval '[[ -n $(rate_limited) ]]' ||
    fail "a RateLimited Event" "$(kc -n "$NS" get events -o jsonpath='{range .items[*]}{.reason} {.message}{"\n"}{end}' | tail -n 8)"
ev=$(rate_limited)
check_eq "one RateLimited Event for the slot" "$(grep -c "slot at $slot_utc" <<<"$ev")" 1
check_contains "a Warning on the policy" "$ev" "Warning BackupPolicy/fleet 1 "
check_contains "it names the slot" "$ev" "runs of the slot at $slot_utc start late"
check_contains "it names the limit and what waits" "$ev" "(--qps 1, "
check_contains "it names the rule" "$ev" "runs x requests per run / jitter window <= --qps"
check_eq "the log says it once" "$(grep -c "event Warning RateLimited on BackupPolicy $NS/fleet: runs of the slot at $slot_utc" "$T_TMP/ctl.log")" 1
finish
