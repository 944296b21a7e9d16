#!/usr/bin/env bash
# The backup on real nodes (tests/env/real-nodes.sh, docs/testing.md "Real nodes"): a
# kubelet and containerd with runc run the controller's Jobs from the image built from
# the Dockerfile, so the pod spec the controller writes is what a real cluster executes:
# the image's entrypoint and user, the capabilities (root with DAC_READ_SEARCH only,
# enforced by runc), the read-only root and the read-only bind of the node's "/", the
# Secret volumes the kubelet writes, the termination message, and hostNetwork
# (--agent-host-network), through which the agent reaches versitygw on 127.0.0.1.
#
# What an operator checks: a policy's slot gives one snapshot per real node, each Backup
# Succeeded with it, and `lode restore` of each gives back the node's files byte for byte,
# a 0400 file of another user included. Both back up the same directory of this
# machine (under /tmp, which the nodes share); tests/e2e/test_backup_cluster.sh covers
# nodes with different files (each node's own /srv).
# Run it as  tests/env/with-cluster.sh bash tests/e2e/test_backup_nodes.sh
# (it starts two real nodes unless the environment has them: LODE_REAL_NODES=2).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
CTL=${LODE_CONTROLLER:-$root/build/lode-controller}
[[ $CTL == /* ]] || CTL=$root/$CTL
ns=e2e-nodes-$(openssl rand -hex 3)
ctl_pid=
cleanup() {
	[[ -n $ctl_pid ]] && kill "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
	# While the kubelets run, so they confirm their pods' deletion and the namespace goes.
	kc delete namespace "$ns" --timeout=60s >/dev/null 2>&1
	env_real_nodes_stop >/dev/null 2>&1
	rm -rf "$T_TMP"
}
trap cleanup EXIT

t0=$SECONDS
if ! env_real_nodes_start 2; then
	fail "two real nodes start (containerd, kubelet)" "see $ENV_LOGS/kubelet-*.log and containerd-*.log"
	finish
	exit 1
fi
pass "two real nodes are Ready ($((SECONDS - t0)) s): $REAL_NODES"
read -r node0 node1 _ <<<"$REAL_NODES"
image_version=$(cat "$(bash "$ENV_HERE/build-image.sh" 2>/dev/null)/version")

# ---- a plain Job: the image's lode runs under a real kubelet ----
kc create namespace "$ns" >/dev/null
kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: version}
spec:
  backoffLimit: 0
  template:
    spec:
      nodeName: $node0
      restartPolicy: Never
      containers:
        - name: lode
          image: lodestore.invalid/agent:e2e
          command: [/bin/sh, -c, "/usr/local/bin/lode version >/dev/termination-log"]
EOF
if env_wait_job "$ns" version Complete 120; then
	pass "lode version runs in the image on $node0"
else
	fail "lode version runs in the image on $node0" "$(kc -n "$ns" get pods -o yaml | tail -n 40)"
fi
# The kubelet's API is closed here (docs/testing.md), so the output comes back as the
# termination message, which the kubelet reads from the container's file.
check_contains "the termination message carries the image's version" \
	"$(env_get -n "$ns" pods -l job-name=version '{.items[0].status.containerStatuses[0].state.terminated.message}')" \
	"$image_version"
check_contains "the container ran in containerd" \
	"$(env_get -n "$ns" pods -l job-name=version '{.items[0].status.containerStatuses[0].containerID}')" \
	"containerd://"

# ---- the repository, initialised from this machine ----
env_lode_s3
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/$ns
export LODE_KEY_FILE=$T_TMP/key
unset LODE_POLICY_DOCUMENT
out=$("$LODE" init --generate-key 2>&1) && pass "lode init --generate-key" || fail "lode init --generate-key" "$out"
env_crds || fail "the CRDs are established"
kc -n "$ns" create secret generic s3 --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" \
	--from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" \
	--from-file=repository-key="$LODE_KEY_FILE" >/dev/null
kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupRepository
metadata: {name: main}
spec:
  endpoint: $S3_ENDPOINT
  bucket: $S3_BUCKET
  prefix: $ns
  region: $S3_REGION
  caBundle: $(base64 -w0 <"$S3_CA_FILE")
  credentialsSecret: {name: s3}
EOF

# ---- the nodes' files: on this machine's file system, which both nodes share ----
data=$T_TMP/node/srv/data
mkdir -p "$data/sub dir" "$data/empty" "$T_TMP/node/srv/other"
echo "real node" >"$data/hostname"
head -c 700000 /dev/urandom >"$data/sub dir/blob"
: >"$data/empty-file"
ln -s hostname "$data/link"
echo "private" >"$data/private"
chown 4242:4242 "$data/private"
chmod 0400 "$data/private"
echo "not in the policy" >"$T_TMP/node/srv/other/x"

"$CTL" --kubeconfig "$KUBECONFIG" --context operator --metrics-addr 127.0.0.1:0 --namespace "$ns" \
	--agent-image lodestore.invalid/agent:e2e --agent-host-network --log-level debug \
	>>"$T_TMP/ctl.log" 2>&1 &
ctl_pid=$!
env_wait 30 "the controller's caches" grep -q 'caches synced' "$T_TMP/ctl.log" ||
	fail "the controller starts" "$(tail -n 20 "$T_TMP/ctl.log")"
kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: nightly}
spec:
  repository: main
  paths: [$data]
  nodeSelector: {lodestore.io/real-node: "true"}
  schedule: {cron: "* * * * *", jitter: 0s}
  retention: {keepLast: 10}
  limits: {maxRuntime: 1h}
EOF

succeeded() {
	[[ $(kc -n "$ns" get backups -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Succeeded$') -ge 2 ]]
}
if env_wait 180 "two Backups to succeed" succeeded; then
	pass "the slot's Backups succeed on both real nodes"
else
	fail "the slot's Backups succeed on both real nodes" "$(kc -n "$ns" get backups -o wide 2>&1)" \
		"$(kc -n "$ns" get pods -o wide 2>&1)" "$(tail -n 20 "$T_TMP/ctl.log")"
	finish
	exit 1
fi

pod=$(kc -n "$ns" get pods -l "lodestore.io/host=$node0" -o json | jq '[.items[] | select(.status.phase == "Succeeded")][0]')
check_eq "the backup pod ran on the host's network, in containerd, exit code 0" \
	"$(jq -c '[.spec.hostNetwork, (.status.containerStatuses[0].containerID | startswith("containerd://")), .status.containerStatuses[0].state.terminated.exitCode]' <<<"$pod")" \
	'[true,true,0]'

kc -n "$ns" get backups -o json >"$T_TMP/backups.json"
"$LODE" snapshots --policy "$ns/nightly" --output json >"$T_TMP/snaps.json" 2>"$T_TMP/snaps.err" ||
	fail "lode snapshots" "$(cat "$T_TMP/snaps.err")"
check_eq "every real node has its snapshots in S3" \
	"$(jq -r '[.snapshots[].host] | unique | join(" ")' "$T_TMP/snaps.json")" "$(tr ' ' '\n' <<<"$node0 $node1" | sort | paste -sd' ')"
check_eq "no snapshot is incomplete or suspicious" \
	"$(jq -c '[.snapshots[] | .incomplete or .suspicious] | unique' "$T_TMP/snaps.json")" '[false]'
for h in "$node0" "$node1"; do
	id=$(jq -r --arg h "$h" '[.items[] | select(.spec.host == $h and .status.phase == "Succeeded")] | sort_by(.spec.slot) | .[0].status.snapshot.id // ""' "$T_TMP/backups.json")
	if [[ -z $id ]]; then
		fail "$h: the Backup names its snapshot" "$(jq --arg h "$h" '.items[] | select(.spec.host == $h) | .status' "$T_TMP/backups.json")"
		continue
	fi
	t=$T_TMP/restore-$h
	if ! out=$("$LODE" restore "$id" --target "$t" 2>&1); then
		fail "$h: lode restore" "$out"
		continue
	fi
	if out=$(diff -r --no-dereference "$data" "$t$data" 2>&1); then
		pass "$h: the restore is the node's files, byte for byte"
	else
		fail "$h: the restore is the node's files, byte for byte" "$out"
	fi
	check_eq "$h: the 0400 file of uid 4242 (read through DAC_READ_SEARCH), modes and the symlink" \
		"$(cd "$t$data" && stat -c '%n %a %u' private hostname && readlink link)" \
		"$(cd "$data" && stat -c '%n %a %u' private hostname && readlink link)"
	check_eq "$h: paths outside the policy are not in the snapshot" "$(ls "$t$T_TMP/node/srv")" "data"
done

# ---- the nodes go as they came, when this test started them ----
kill "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
ctl_pid=
kc delete namespace "$ns" --timeout=60s >/dev/null 2>&1 ||
	fail "the namespace and its pods go while the kubelets run" "$(kc -n "$ns" get pods -o wide 2>&1)"
if [[ $ENV_REAL_NODES_OURS == 1 ]]; then
	if out=$(env_real_nodes_stop 2>&1); then
		pass "the real nodes stop: no kubelet, containerd, shim, mount or cgroup of theirs left"
	else
		fail "the real nodes stop: no kubelet, containerd, shim, mount or cgroup of theirs left" "$out"
	fi
fi
finish
