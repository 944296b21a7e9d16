#!/usr/bin/env bash
# make demo: Lodestore on a local cluster, from a fresh machine.
#
#  1. the lode command on the page's example policy: validate (and a policy with
#     mistakes, every error in one run; a database node's policy with a dump hook and
#     excludes, and its mistakes), the next runs across the spring DST change
#     in Kyiv, and what retention keeps of 100 nightly snapshots;
#  2. a real control plane on 127.0.0.1 (tests/env: etcd, kube-apiserver, the Job
#     controller, KWOK, versitygw; built from their Go modules the first time, which
#     takes a while, then cached), the CRDs, a BackupRepository on the local S3
#     server, three real nodes (containerd and a kubelet each, tests/env/real-nodes.sh)
#     and a policy that runs every minute, with a dump made by a hook before each backup
#     and scratch files left out;
#  3. the controller, and the backups it runs on the three nodes, for real: each
#     node's kubelet runs the Jobs in the image built from the Dockerfile (buildah,
#     cached), and `lode backup` writes real snapshots into the local S3 server;
#     Backups, Jobs, the policy's status and the metrics;
#  4. the snapshots in S3 and a restore of one, compared with the node's files; a
#     Restore resource that puts one node's file onto another node, run by the
#     controller as a Job;
#  5. a node's files "encrypted" by ransomware: the next snapshot is flagged
#     suspicious; and retention applied by the controller through the storage API.
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

step "a database node: a dump before the backup, caches and temporary files left out"
live=$(mktemp --suffix=.yaml)
cat >"$live" <<'EOF'
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: db-live, namespace: ops}
spec:
  repository: main
  paths: [/etc, /var/backups, /var/lib/app]
  schedule: {cron: "30 2 * * *", timezone: Europe/Kyiv}
  hooks:
    before:
    - name: dump
      command: [/bin/sh, -c, "pg_dump -U app app > /var/backups/app.sql"]
      timeout: 10m
    after:
    - {name: notify, command: [/usr/local/bin/backup-done], onError: continue}
  exclude:
    patterns: ["*.tmp", "/var/lib/app/cache/**"]
    caches: true
    largerThan: 4GiB
EOF
cat "$live"
$lode validate "$live" && echo "valid"
sed -i -e 's|/var/lib/app/cache/|/opt/cache/|' -e 's|timeout: 10m|timeout: 2d|' "$live"
$lode validate "$live" || echo "(exit $?: a pattern outside the paths and a timeout too long)"
rm -f "$live"

step "lode schedule: the next runs for host node-1, across the spring DST change in Kyiv"
$lode schedule "$example" --host node-1 --from 2026-03-26T00:00:00Z --count 5

step "lode forget: what the example's retention keeps of 100 nightly snapshots"
$lode forget --dry-run --policy "$example" --snapshots docs/examples/snapshots.json | tail -n 16

step "a local control plane on 127.0.0.1 and three real nodes (the first run builds them from Go modules)"
# Each node has its own /srv (its mount namespace); the rest of its / is this machine's.
LODE_REAL_NODES=3 LODE_REAL_NODE_PREFIX=demo-node tests/env/cluster-up.sh
# The environment's helpers (kc, env_wait, the real nodes' directories).
# shellcheck disable=SC1091
source tests/env/lib.sh
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
    rm -rf "$T_TMP"
}
trap finish EXIT

step "the image, built from the Dockerfile (buildah, cached), in each node's containerd"
image=$(bash tests/env/build-image.sh)
echo "image $image (lode $(cat "$image/version")), imported as lodestore.invalid/agent:e2e"

step "a repository in the local S3 server: lode init"
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY AWS_REGION=$S3_REGION
export LODE_CACERT=$S3_CA_FILE LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/demo-$(date +%s)
export LODE_KEY_FILE=$T_TMP/repository-key
head -c 32 /dev/urandom | base64 >"$LODE_KEY_FILE"
chmod 600 "$LODE_KEY_FILE"
echo "LODE_REPOSITORY=$LODE_REPOSITORY"
$lode init

step "CRDs, the BackupRepository and its Secret, three nodes' own files, and a policy"
kc apply --server-side -f crd/ >/dev/null
kc wait --for condition=established --timeout=30s crd/backuppolicies.lodestore.io \
    crd/backups.lodestore.io crd/backuprepositories.lodestore.io crd/restores.lodestore.io >/dev/null
kc create namespace demo --dry-run=client -o yaml | kc apply -f - >/dev/null
kc -n demo create secret generic s3-credentials --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" \
    --from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" --from-file=repository-key="$LODE_KEY_FILE" \
    --dry-run=client -o yaml | kc apply -f - >/dev/null
kc -n demo apply -f - <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupRepository
metadata: {name: main}
spec:
  endpoint: $S3_ENDPOINT
  bucket: $S3_BUCKET
  prefix: ${LODE_REPOSITORY##*/}
  region: $S3_REGION
  caBundle: $(base64 -w0 <"$S3_CA_FILE")
  credentialsSecret: {name: s3-credentials}
EOF
for i in 0 1 2; do
    kc label node "demo-node-$i" role=db --overwrite >/dev/null
    d=$(env_real_node_root "demo-node-$i")/srv
    rm -rf "$d/etc" "$d/home" "$d/dump" "$d/restored"
    mkdir -p "$d/etc" "$d/home/ops/reports" "$d/dump"
    echo "scratch, left out by spec.exclude" >"$d/home/ops/reports/render.tmp"
    echo "demo-node-$i" >"$d/etc/hostname"
    printf 'listen 0.0.0.0:%d\nworkers %d\n' $((5432 + i)) $((4 + i)) >"$d/etc/db.conf"
    for r in $(seq 1 100); do
        seq 1 $((1500 + 10 * i)) | sed "s/^/report $r of demo-node-$i, line /" >"$d/home/ops/reports/report-$r.txt"
    done
done
policy=$(mktemp --suffix=.yaml)
cat >"$policy" <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: every-minute, namespace: demo}
spec:
  repository: main
  paths: [/srv/etc, /srv/home, /srv/dump]
  nodeSelector: {role: db}
  schedule: {cron: "* * * * *", timezone: Europe/Kyiv, jitter: 20s}
  retention: {keepLast: 2}
  limits: {maxRuntime: 1h, nice: 10}
  hooks:
    before:
    - name: dump
      command: [/bin/sh, -c, "{ echo \"-- the app database of \$(cat /srv/etc/hostname)\"; sed 's/^/-- /' /srv/etc/db.conf; echo 'CREATE TABLE reports (n int);'; } >/srv/dump/app.sql && echo dumped"]
      timeout: 1m
  exclude:
    patterns: ["*.tmp"]
EOF
$lode validate "$policy" && kc apply -f "$policy"
rm -f "$policy"
kc get nodes -l role=db -o wide

step "the controller"
log=$LODE_ENV_DIR/logs/lode-controller.log
$ctl --kubeconfig "$KUBECONFIG" --context operator --metrics-addr 127.0.0.1:0 \
    --agent-image lodestore.invalid/agent:e2e --agent-host-network --allow-node-backups demo \
    --hook-namespaces demo \
    >"$log" 2>&1 &
ctl_pid=$!
env_wait 20 "the controller to listen" grep -q 'metrics on 127.0.0.1:' "$log"
metrics_port=$(grep -o 'metrics on 127.0.0.1:[0-9]*' "$log" | cut -d: -f2)
head -n 3 "$log"

step "backups of the next slot on the three nodes (each node starts within its 20s jitter)"
succeeded() { # N: at least N Backups Succeeded
    [[ $(kc -n demo get backups -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Succeeded$') -ge $1 ]]
}
env_wait 150 "three backups to succeed" succeeded 3
kc -n demo get backups -o wide
echo
kc -n demo get jobs
echo
kc -n demo get backuppolicy every-minute
echo
kc -n demo get backuppolicy every-minute -o jsonpath='{range .status.conditions[*]}{.type}={.status} ({.reason}): {.message}{"\n"}{end}'
echo
echo "What the first Backup of demo-node-0 recorded:"
kc -n demo get backups -o json | jq '[.items[] | select(.spec.host == "demo-node-0" and .status.phase == "Succeeded")][0].status.snapshot'

step "the snapshots in S3 (lode snapshots) and a restore of demo-node-1's"
$lode snapshots --policy demo/every-minute
id=$($lode snapshots --policy demo/every-minute --host demo-node-1 --output json | jq -r '.snapshots[-1].id')
target=$T_TMP/restore
$lode restore "$id" --target "$target"
(cd "$target" && find . -maxdepth 3 | sort | head -n 12)
d=$(env_real_node_root demo-node-1)/srv
if diff -r "$d/etc" "$target/srv/etc" && diff -r -x '*.tmp' "$d/home" "$target/srv/home" &&
    [[ ! -e $target/srv/home/ops/reports/render.tmp ]]; then
    echo "the restore of $id is byte for byte demo-node-1's /srv/etc and /srv/home, without the excluded *.tmp"
else
    echo "the restore of $id differs from demo-node-1's files" >&2
    exit 1
fi
echo "the dump the hook made before the backup, as the snapshot holds it:"
cat "$target/srv/dump/app.sql"

step "a Restore from the cluster: demo-node-1's db.conf and dump onto demo-node-0"
kc -n demo delete restore node-1-db --ignore-not-found >/dev/null # one of an earlier DEMO_KEEP run
rm -rf "$(env_real_node_root demo-node-0)/srv/restored"
restore=$(mktemp --suffix=.yaml)
cat >"$restore" <<EOF
apiVersion: lodestore.io/v1alpha1
kind: Restore
metadata: {name: node-1-db, namespace: demo}
spec:
  snapshot: {policy: every-minute, host: demo-node-1}
  include: [/srv/etc/db.conf, /srv/dump/app.sql]
  target: {node: demo-node-0, path: /srv/restored/from-demo-node-1}
EOF
cat "$restore"
kc apply -f "$restore"
rm -f "$restore"
restore_ended() { [[ $(kc -n demo get restore node-1-db -o jsonpath='{.status.phase}') =~ ^(Succeeded|Failed)$ ]]; }
env_wait 120 "the Restore to end" restore_ended
kc -n demo get restore node-1-db
kc -n demo get restore node-1-db -o jsonpath='{.status.reason}: {.status.message}{"\n"}'
got=$(env_real_node_root demo-node-0)/srv/restored/from-demo-node-1/srv
want=$(env_real_node_root demo-node-1)/srv
if [[ $(kc -n demo get restore node-1-db -o jsonpath='{.status.phase}') == Succeeded ]] &&
    cmp "$want/etc/db.conf" "$got/etc/db.conf" && [[ -s $got/dump/app.sql ]]; then
    echo "on demo-node-0, /srv/restored/from-demo-node-1/srv/etc/db.conf is demo-node-1's:"
    cat "$got/etc/db.conf"
    echo "and its dump (/srv/dump/app.sql):"
    cat "$got/dump/app.sql"
else
    echo "the Restore did not put demo-node-1's files onto demo-node-0" >&2
    kc -n demo get restore node-1-db -o jsonpath='{.status}' >&2
    exit 1
fi

step "ransomware on demo-node-2: 60 of its 100 reports encrypted in place"
d=$(env_real_node_root demo-node-2)/srv
for r in $(seq 1 60); do
    f=$d/home/ops/reports/report-$r.txt
    openssl enc -aes-256-cbc -pbkdf2 -pass pass:demo -in "$f" -out "$f.tmp" && mv "$f.tmp" "$f"
done
echo "waiting for the next slot's backup of demo-node-2"
suspicious_seen() { $lode snapshots --policy demo/every-minute --host demo-node-2 --output json | jq -e '[.snapshots[] | select(.suspicious)] | length > 0' >/dev/null; }
env_wait 150 "a suspicious snapshot of demo-node-2" suspicious_seen
$lode snapshots --policy demo/every-minute --host demo-node-2
echo
flagged() { kc -n demo get backups -o json | jq -e '[.items[] | .status.conditions[]? | select(.type == "Suspicious" and .status == "True")] | length > 0' >/dev/null; }
env_wait 60 "the Backup to carry the Suspicious condition" flagged
kc -n demo get backups -o json | jq -r '.items[] | select(.spec.host == "demo-node-2") | .metadata.name as $n | .status.conditions[]? | select(.type == "Suspicious" and .status == "True") | "\($n): Suspicious=True (\(.reason)): \(.message)"'

step "retention through the storage API: keepLast 2, applied by the controller after each backup"
echo "waiting for a slot more, so that each host has more snapshots than it keeps"
env_wait 150 "nine backups to succeed" succeeded 9
forgot() { [[ -n $(kc -n demo get events --field-selector reason=Forgot -o name) ]]; }
env_wait 60 "the controller to forget a snapshot" forgot
kc -n demo get events --field-selector reason=Forgot -o custom-columns=BACKUP:.involvedObject.name,MESSAGE:.message | head -n 4
echo
echo "The retention the controller recorded on the newest Backup of demo-node-0:"
kc -n demo get backups -o json | jq '[.items[] | select(.spec.host == "demo-node-0" and .status.retention != null)] | sort_by(.spec.slot) | .[-1].status.retention'
echo
$lode snapshots --policy demo/every-minute
echo
echo "lode forget --policy demo/every-minute --dry-run (what retention keeps now, and why):"
$lode forget --policy demo/every-minute --dry-run | head -n 20

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
