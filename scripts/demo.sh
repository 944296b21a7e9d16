#!/usr/bin/env bash
# make demo: Lodestore on a local cluster, from a fresh machine.
#
#  1. the lode command on the page's example policy: validate (and a policy with
#     mistakes, every error in one run), the next runs across the spring DST change
#     in Kyiv, and what retention keeps of 100 nightly snapshots;
#  2. a real control plane on 127.0.0.1 (tests/env: etcd, kube-apiserver, the Job
#     controller, KWOK, versitygw; built from their Go modules the first time, which
#     takes a while, then cached), the CRDs, a BackupRepository on the local S3
#     server, three KWOK nodes and a policy that runs every minute;
#  3. the controller, and the backups it runs on the three nodes: Backups, Jobs,
#     the policy's status and the metrics.
# The cluster is taken down at the end; DEMO_KEEP=1 leaves it (and the controller)
# running and prints how to reach it.
set -euo pipefail
cd "$(dirname "$0")/.."
lode=build/lode
ctl=build/lode-controller
example=docs/examples/etc-and-home.yaml
export LODE_ENV_DIR=${LODE_ENV_DIR:-/tmp/lodestore-demo}

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "lode version"
$lode version

step "lode validate $example"
$lode validate "$example" && echo "valid"

step "a policy with mistakes: every error in one run, each with its line and column"
bad=$(mktemp --suffix=.yaml)
sed -e 's/^  retention:/  retension:/' -e 's/nice: 10/nice: 20/' -e 's/jitter: 15m/jitter: 1h30m/' "$example" >"$bad"
$lode validate "$bad" || echo "(exit $?: invalid, as expected)"
rm -f "$bad"

step "lode schedule: the next runs for host node-1, across the spring DST change in Kyiv"
$lode schedule "$example" --host node-1 --from 2026-03-26T00:00:00Z --count 5

step "lode forget: what the example's retention keeps of 100 nightly snapshots"
$lode forget --dry-run --policy "$example" --snapshots docs/examples/snapshots.json | tail -n 16

step "a local control plane on 127.0.0.1 (the first run builds it from Go modules)"
tests/env/cluster-up.sh
# shellcheck disable=SC1091
source tests/env/common.sh
# shellcheck disable=SC1090
source "$ENV_DIR/state.env"
# shellcheck disable=SC1090
source "$ENV_DIR/s3.env"
kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG" --context admin "$@"; }
ctl_pid=
ui_pid=
ui_url=
finish() {
    if [[ -n $ctl_pid && ${DEMO_KEEP:-0} != 1 ]]; then kill "$ctl_pid" 2>/dev/null || true; fi
    if [[ -n $ui_pid && ${DEMO_KEEP:-0} != 1 ]]; then kill "$ui_pid" 2>/dev/null || true; fi
    if [[ ${DEMO_KEEP:-0} == 1 ]]; then
        echo
        echo "Left running: KUBECONFIG=$KUBECONFIG; controller pid $ctl_pid, metrics on 127.0.0.1:$metrics_port."
        [[ -n $ui_url ]] && echo "The web interface (lode ui, pid $ui_pid): $ui_url"
        echo "Stop it all with: kill $ctl_pid $ui_pid; LODE_ENV_DIR=$LODE_ENV_DIR make cluster-down"
    else
        tests/env/cluster-down.sh
    fi
}
trap finish EXIT

step "CRDs, a BackupRepository on the local S3 server, three nodes and a policy"
kc apply --server-side -f crd/ >/dev/null
kc wait --for condition=established --timeout=30s crd/backuppolicies.lodestore.io \
    crd/backups.lodestore.io crd/backuprepositories.lodestore.io >/dev/null
kc create namespace demo --dry-run=client -o yaml | kc apply -f - >/dev/null
kc -n demo create secret generic s3-credentials --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" \
    --from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" --dry-run=client -o yaml | kc apply -f - >/dev/null
kc -n demo apply -f - <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupRepository
metadata: {name: main}
spec:
  endpoint: $S3_ENDPOINT
  bucket: $S3_BUCKET
  region: $S3_REGION
  credentialsSecret: {name: s3-credentials}
EOF
for i in 1 2 3; do
    kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: demo-node-$i
  labels: {role: db, kubernetes.io/hostname: demo-node-$i, lodestore.io/env-nodes: demo}
EOF
done
policy=$(mktemp --suffix=.yaml)
cat >"$policy" <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: every-minute, namespace: demo}
spec:
  repository: main
  paths: [/etc, /home]
  nodeSelector: {role: db}
  schedule: {cron: "* * * * *", timezone: Europe/Kyiv, jitter: 20s}
  retention: {keepLast: 3}
  limits: {maxRuntime: 1h, nice: 10}
EOF
$lode validate "$policy" && kc apply -f "$policy"
rm -f "$policy"
kc get nodes -l lodestore.io/env-nodes=demo

step "the controller"
log=$LODE_ENV_DIR/logs/lode-controller.log
$ctl --kubeconfig "$KUBECONFIG" --context operator --metrics-addr 127.0.0.1:0 \
    --agent-image lodestore.invalid/agent:demo >"$log" 2>&1 &
ctl_pid=$!
env_wait 20 "the controller to listen" grep -q 'metrics on 127.0.0.1:' "$log"
metrics_port=$(grep -o 'metrics on 127.0.0.1:[0-9]*' "$log" | cut -d: -f2)
head -n 3 "$log"

step "backups of the next slot on the three nodes (each node starts within its 20s jitter)"
succeeded() {
    [[ $(kc -n demo get backups -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Succeeded$') -ge 3 ]]
}
env_wait 120 "three backups to succeed" succeeded
kc -n demo get backups -o wide
echo
kc -n demo get jobs
echo
kc -n demo get backuppolicy every-minute
echo
kc -n demo get backuppolicy every-minute -o jsonpath='{range .status.conditions[*]}{.type}={.status} ({.reason}): {.message}{"\n"}{end}'

step "metrics (excerpt)"
curl -fsS "http://127.0.0.1:$metrics_port/metrics" | grep -E '^lodestore_(host_next_run|host_last_success|runs_total|build_info)' | head -n 12

step "events"
kc -n demo get events --field-selector involvedObject.kind=BackupPolicy -o custom-columns=REASON:.reason,MESSAGE:.message | head -n 8

step "the web interface (lode ui; docs/ui.md)"
ui_log=$LODE_ENV_DIR/logs/lode-ui.log
$lode ui --listen 127.0.0.1:0 --kubeconfig "$KUBECONFIG" --context admin --namespace demo \
    >"$ui_log.url" 2>"$ui_log" &
ui_pid=$!
env_wait 20 "lode ui to print its URL" grep -q '^http://' "$ui_log.url"
ui_url=$(head -n 1 "$ui_log.url")
echo "Open $ui_url"
echo "(the fleet view, as the page shows it:)"
curl -fsS -H "Authorization: Bearer ${ui_url##*token=}" "${ui_url%%/?token=*}/api/status" |
    jq -r '.policies[] | .policy as $p | .hosts[] | "\($p)  \(.host)  last good \(.lastSuccess // "never")  overdue \(.overdue)"'
[[ ${DEMO_KEEP:-0} == 1 ]] || echo "DEMO_KEEP=1 make demo leaves it running."
