#!/usr/bin/env bash
# Object Lock through the controller, end to end (docs/security.md, "Object Lock"): a
# BackupRepository with spec.objectLock, on a versitygw bucket created with Object Lock
# enabled; the controller's backup Job runs `lode backup` in the image built from the
# Dockerfile on a real node (containerd and a kubelet, tests/env/real-nodes.sh), reaching
# versitygw on the host's network.
#
# What an auditor checks: the Job carries the lock (LODE_OBJECT_LOCK=MODE:DAYS) and
# every object the backup wrote reads back from the bucket retained in that mode until
# DAYS after its upload (the manifest, its file-list metadata, a pack); config.json,
# written by lode init, is not retained; the bucket's owner cannot delete or overwrite
# the manifest; and the snapshot restores. test_roles.sh checks the same of lode backup
# run by hand, and forget and gc keeping what is locked.
# Run it as  tests/env/with-cluster.sh bash tests/e2e/test_backup_lock_cluster.sh
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
CTL=${LODE_CONTROLLER:-$root/build/lode-controller}
[[ $CTL == /* ]] || CTL=$root/$CTL
ns=e2e-lk-$(openssl rand -hex 3)
bucket=$ns # S3 bucket names allow it: lower case, digits and hyphens
N=
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	kc delete namespace "$ns" --timeout=60s >/dev/null 2>&1
	if [[ -n $N ]]; then
		kc label node "$N" role- >/dev/null 2>&1
		rm -rf "$(env_real_node_root "$N")/srv/$ns"
	fi
	env_real_nodes_stop >/dev/null 2>&1
	rm -rf "$T_TMP"
}
trap cleanup EXIT

if ! env_real_nodes_start 1; then
	fail "a real node starts (containerd, kubelet)" "see $ENV_LOGS/kubelet-*.log and containerd-*.log"
	finish
	exit 1
fi
read -r -a nodes <<<"$REAL_NODES"
N=${nodes[0]}
pass "a real node is Ready: $N"

# ---- a bucket with Object Lock, and a repository in it ----
env_lode_s3
env_s3 PUT "/$bucket" "" -H "x-amz-bucket-object-lock-enabled: true"
check_eq "versitygw makes a bucket with Object Lock enabled" "$S3_CODE" 200
env_s3 GET "/$bucket?object-lock="
check_contains "... and says so" "$S3_BODY" "<ObjectLockEnabled>Enabled</ObjectLockEnabled>"
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$bucket/repo
export LODE_KEY_FILE=$T_TMP/key
unset LODE_POLICY_DOCUMENT
out=$("$LODE" init --generate-key 2>&1) || fail "lode init --generate-key" "$out"
kc apply --server-side -f "$root/crd/" >/dev/null
kc wait --for condition=established --timeout=30s crd/backuppolicies.lodestore.io \
	crd/backups.lodestore.io crd/backuprepositories.lodestore.io >/dev/null
kc create namespace "$ns" >/dev/null
kc -n "$ns" create secret generic s3 --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" \
	--from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" \
	--from-file=repository-key="$LODE_KEY_FILE" >/dev/null
kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupRepository
metadata: {name: locked}
spec:
  endpoint: $S3_ENDPOINT
  bucket: $bucket
  prefix: repo
  region: $S3_REGION
  caBundle: $(base64 -w0 <"$S3_CA_FILE")
  credentialsSecret: {name: s3}
  objectLock: {mode: GOVERNANCE, days: 2}
EOF

# ---- the node's files and one Backup by hand ----
kc label node "$N" "role=$ns" --overwrite >/dev/null
d=$(env_real_node_root "$N")/srv/$ns
rm -rf "$d"
mkdir -p "$d/etc"
echo "locked away" >"$d/etc/a"
head -c 200000 /dev/urandom >"$d/etc/b"
env_controller_start "$ns" ctl --agent-host-network || {
	fail "the controller starts"
	finish
	exit 1
}
ready() { [[ $(env_get -n "$ns" backuprepository/locked '{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
env_wait 60 "the repository to be Ready" ready ||
	fail "the BackupRepository is Ready" "$(kc -n "$ns" get backuprepository locked -o jsonpath='{.status}')"
kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: locked}
spec:
  repository: locked
  paths: [/srv/$ns]
  nodeSelector: {role: $ns}
  schedule: {cron: "0 0 1 1 *"}
  retention: {keepLast: 10}
  limits: {maxRuntime: 1h}
---
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: by-hand}
spec: {policy: locked, host: $N}
EOF
bk_done() { [[ $(env_get -n "$ns" backup/by-hand '{.status.phase}') =~ ^(Succeeded|Failed)$ ]]; }
env_wait 180 "the Backup to end" bk_done
check_eq "the Backup's Job succeeded" "$(env_get -n "$ns" backup/by-hand '{.status.phase}')" "Succeeded"
id=$(env_get -n "$ns" backup/by-hand '{.status.snapshot.id}')
job=$(env_get -n "$ns" backup/by-hand '{.status.jobName}')
[[ -n $id ]] || {
	fail "the Backup names its snapshot" "$(kc -n "$ns" get backup by-hand -o jsonpath='{.status}')" "$(tail -n 20 "$T_TMP/ctl.log")"
	finish
	exit 1
}
check_eq "the backup Job carries the lock: LODE_OBJECT_LOCK=GOVERNANCE:2" \
	"$(kc -n "$ns" get job "$job" -o json | jq -r '.spec.template.spec.containers[0].env[] | select(.name == "LODE_OBJECT_LOCK") | .value')" \
	"GOVERNANCE:2"

# ---- what the Job wrote, read back from the bucket ----
data=$ENV_DIR/s3/data/$bucket
man=$(cd "$data" && find repo/snapshots -name "$id.json" | head -n 1)
meta=$(cd "$data" && find repo/meta -name "$id.*" -type f | head -n 1)
pack=$(cd "$data" && find repo/data -name '*.pack' -type f | head -n 1)
check_eq "the Job wrote a manifest, its metadata and a pack" "$([[ -n $man && -n $meta && -n $pack ]] && echo yes)" yes
now=$(date -u +%s)
for k in "$man" "$meta" "$pack"; do
	[[ -n $k ]] || continue
	env_s3 GET "/$bucket/$k?retention="
	check_contains "$k: retained in GOVERNANCE mode" "$S3_BODY" "<Mode>GOVERNANCE</Mode>"
	until=$(grep -o '<RetainUntilDate>[^<]*' <<<"$S3_BODY" | sed 's/<RetainUntilDate>//')
	left=$(($(date -u -d "$until" +%s 2>/dev/null || echo 0) - now))
	if [[ $left -gt $((2 * 86400 - 900)) && $left -le $((2 * 86400 + 60)) ]]; then
		pass "$k: retained until two days after its upload"
	else
		fail "$k: retained until two days after its upload" "RetainUntilDate $until ($left s from now)"
	fi
done
env_s3 GET "/$bucket/repo/config.json?retention="
check_contains "config.json (lode init, no lock) has no retention" "$S3_BODY" "NoSuchObjectLockConfiguration"
env_s3 DELETE "/$bucket/$man"
check_eq "the bucket's owner cannot delete the locked manifest (403)" "$S3_CODE" 403
echo "forged" >"$T_TMP/forged"
env_s3 PUT "/$bucket/$man" "$T_TMP/forged"
check_eq "... nor overwrite it (403)" "$S3_CODE" 403
if out=$("$LODE" restore "$id" --target "$T_TMP/restored" 2>&1) &&
	diff -r "$d" "$T_TMP/restored/srv/$ns" >/dev/null; then
	pass "the locked snapshot restores, byte for byte"
else
	fail "the locked snapshot restores, byte for byte" "$out"
fi
finish
