#!/usr/bin/env bash
# The backup for real, end to end: the controller's Jobs run `lode backup` in the image
# built from the Dockerfile, on three real nodes (containerd and a kubelet each,
# tests/env/real-nodes.sh), into versitygw through a BackupRepository (docs/operator.md,
# docs/repository.md). Each node has its own /srv (its mount namespace), so each backs
# up different files; the agent reaches versitygw on the host's network
# (--agent-host-network).
#
# What an operator checks: each node's slot gives one snapshot per host in S3, the
# Backup shows that snapshot (id, files, bytes), and `lode restore` of each snapshot
# gives back exactly that node's files; the Job's pod is the restricted one the docs
# describe (read-only root and /host, uid 0 with DAC_READ_SEARCH only).
# Then garbage collection for real (docs/gc.md): the controller forgets every snapshot
# of the old data after the nodes' files change, and its GC Job runs `lode gc` in the
# image on a real node while a throttled backup runs; status.gc and the Event say
# exactly what left the storage, and every node's newest snapshot still restores.
# Run it as  tests/env/with-cluster.sh bash tests/e2e/test_backup_cluster.sh
# (it starts three real nodes unless the environment has them: LODE_REAL_NODES=3).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
CTL=${LODE_CONTROLLER:-$root/build/lode-controller}
[[ $CTL == /* ]] || CTL=$root/$CTL
ns=e2e-bk-$(openssl rand -hex 3)
ctl_pid=
node=()
# The node's files: its /srv/$ns, seen from this machine.
node_dir() { echo "$(env_real_node_root "${node[$1]}")/srv/$ns"; }
cleanup() {
	[[ -n $ctl_pid ]] && kill "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
	# While the kubelets run, so they confirm their pods' deletion and the namespace goes.
	kc delete namespace "$ns" --timeout=60s >/dev/null 2>&1
	for i in "${!node[@]}"; do
		kc label node "${node[$i]}" role- >/dev/null 2>&1
		rm -rf "$(node_dir "$i")"
	done
	env_real_nodes_stop >/dev/null 2>&1
	rm -rf "$T_TMP"
}
trap cleanup EXIT

if ! env_real_nodes_start 3; then
	fail "three real nodes start (containerd, kubelet)" "see $ENV_LOGS/kubelet-*.log and containerd-*.log"
	finish
	exit 1
fi
read -r -a node <<<"$REAL_NODES"
if [[ ${#node[@]} -lt 3 ]]; then
	fail "three real nodes" "the environment has ${#node[@]}: $REAL_NODES (LODE_REAL_NODES=3)"
	finish
	exit 1
fi
node=("${node[@]:0:3}")
pass "three real nodes are Ready: ${node[*]}"

# ---- the repository: initialised from this machine, as an operator would ----
prefix=$ns
env_lode_s3
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
export LODE_KEY_FILE=$T_TMP/key
unset LODE_POLICY_DOCUMENT
# The key is one lode makes (docs/repository.md, "The repository key"): every command
# below, the Jobs' included, opens the repository without scrypt.
out=$("$LODE" init --generate-key 2>&1) && pass "lode init --generate-key" || fail "lode init --generate-key" "$out"
check_eq "the generated key: a new file, mode 600, 32 bytes in base64" \
	"$(stat -c %a "$LODE_KEY_FILE") $(base64 -d "$LODE_KEY_FILE" | wc -c)" "600 32"
check_eq "config.json: the generated key's kdf, no scrypt cost" \
	"$(jq -c '.kdf | [.algorithm, (keys | join(","))]' "$ENV_DIR/s3/data/$S3_BUCKET/$prefix/config.json")" \
	'["hmac-sha256","algorithm,salt"]'
cp "$LODE_KEY_FILE" "$T_TMP/key.copy"
out=$("$LODE" init --generate-key 2>&1)
check_eq "a second init --generate-key: exit 2, the key file untouched" \
	"$? $(cmp -s "$LODE_KEY_FILE" "$T_TMP/key.copy" && echo same)" "2 same"
check_contains "it says the key file exists" "$out" "writes a new file only"
out=$(env -u LODE_KEY_FILE "$LODE" init --generate-key 2>&1)
check_eq "init --generate-key with no key file named: exit 2" "$?" 2
check_contains "it says where the key would go" "$out" "--generate-key needs --key-file FILE or LODE_KEY_FILE"
out=$(LODE_KEY_FILE=$T_TMP/key2 "$LODE" init --generate-key 2>&1)
check_eq "init --generate-key where a repository exists: exit 1, no key file left behind" \
	"$? $(ls "$T_TMP/key2" 2>&1 >/dev/null | grep -c 'No such file')" "1 1"

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
metadata: {name: main}
spec:
  endpoint: $S3_ENDPOINT
  bucket: $S3_BUCKET
  prefix: $prefix
  region: $S3_REGION
  caBundle: $(base64 -w0 <"$S3_CA_FILE")
  credentialsSecret: {name: s3}
EOF

# ---- three nodes, each with its own files ----
for i in 0 1 2; do
	kc label node "${node[$i]}" "role=$ns" >/dev/null
	d=$(node_dir "$i")
	mkdir -p "$d/data/sub dir" "$d/data/empty" "$d/other"
	echo "node $i" >"$d/data/hostname"
	head -c $((300000 + i * 70000)) /dev/urandom >"$d/data/sub dir/blob-$i"
	: >"$d/data/empty-file"
	ln -s hostname "$d/data/link"
	echo "private $i" >"$d/data/private"
	chown 4242:4242 "$d/data/private"
	chmod 0400 "$d/data/private"
	echo "not in the policy" >"$d/other/x"
done

start_controller() {
	"$CTL" --kubeconfig "$KUBECONFIG" --context operator --metrics-addr 127.0.0.1:0 \
		--namespace "$ns" --agent-image lodestore.invalid/agent:e2e --agent-host-network --log-level debug \
		>>"$T_TMP/ctl.log" 2>&1 &
	ctl_pid=$!
	env_wait 30 "the controller's caches" grep -q 'caches synced' "$T_TMP/ctl.log"
}
start_controller || fail "the controller starts" "$(tail -n 20 "$T_TMP/ctl.log")"
env_wait 30 "the repository to be Ready" eval \
	"[[ \$(env_get -n $ns backuprepository/main '{.status.conditions[?(@.type==\"Ready\")].status}') == True ]]" ||
	fail "the BackupRepository is Ready" "$(kc -n "$ns" get backuprepository main -o yaml)"

# The policy of every phase: its schedule, keepLast and optional uploadRate.
policy() { # CRON KEEP-LAST [UPLOAD-RATE]
	kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: nightly}
spec:
  repository: main
  paths: [/srv/$ns/data]
  nodeSelector: {role: $ns}
  schedule: {cron: "$1", jitter: 0s}
  retention: {keepLast: $2}
  limits: {maxRuntime: 1h${3:+, uploadRate: $3}}
EOF
}
policy "* * * * *" 10

# ---- the first slot: one Backup per node, each Succeeded with its snapshot ----
succeeded() {
	[[ $(kc -n "$ns" get backups -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Succeeded$') -ge 3 ]]
}
if env_wait 150 "three Backups to succeed" succeeded; then
	pass "the slot's three Backups succeed"
else
	fail "the slot's three Backups succeed" "$(kc -n "$ns" get backups -o wide 2>&1)" \
		"$(kc -n "$ns" get backuppolicy nightly -o jsonpath='{.status.conditions}' 2>&1)" \
		"$(kc -n "$ns" get pods -o wide 2>&1)"
	finish
	exit 1
fi

# The policy's LAST RUN column: its newest Backup's phase (status.lastRun).
last_run_is() { [[ $(env_get -n "$ns" backuppolicy/nightly '{.status.lastRun.phase}') == "$1" ]]; }
if env_wait 30 "the policy's lastRun to be Succeeded" last_run_is Succeeded; then
	pass "the policy's status.lastRun names a Succeeded Backup"
else
	fail "the policy's status.lastRun names a Succeeded Backup" "$(kc -n "$ns" get bp nightly -o jsonpath='{.status.lastRun}')"
fi
check_contains "kubectl get bp shows LAST RUN" "$(kc -n "$ns" get bp nightly)" "LAST RUN"

# The Job the controller made: what docs/operator.md promises.
job=$(kc -n "$ns" get jobs -o jsonpath='{.items[0].metadata.name}')
pod_spec=$(kc -n "$ns" get job "$job" -o json)
check_eq "the agent runs as uid 0 with DAC_READ_SEARCH only, read-only root, no escalation" \
	"$(jq -c '.spec.template.spec.containers[0].securityContext | [.runAsUser, .capabilities.drop, .capabilities.add, .readOnlyRootFilesystem, .allowPrivilegeEscalation]' <<<"$pod_spec")" \
	'[0,["ALL"],["DAC_READ_SEARCH"],true,false]'
check_eq "the node's / is mounted read-only at /host" \
	"$(jq -c '[.spec.template.spec.containers[0].volumeMounts[] | select(.mountPath == "/host") | .readOnly]' <<<"$pod_spec")" '[true]'
# The hardening of docs/security.md ("Backup and GC pods"), as the API server stored it.
check_eq "the pod runs under RuntimeDefault seccomp, without a token or service links" \
	"$(jq -c '.spec.template.spec | [.securityContext.seccompProfile.type, .automountServiceAccountToken, .enableServiceLinks]' <<<"$pod_spec")" \
	'["RuntimeDefault",false,false]'
check_eq "the agent has memory and CPU requests and a memory limit" \
	"$(jq -c '.spec.template.spec.containers[0].resources | [(.requests.cpu != null), (.requests.memory != null), (.limits.memory != null), .limits.cpu]' <<<"$pod_spec")" \
	'[true,true,true,null]'
# These nodes report no runtime handlers: IfPossible, and the Backup is told once.
check_eq "the host mount is recursively read-only where possible (the node reports no support)" \
	"$(jq -c '[.spec.template.spec.containers[0].volumeMounts[] | select(.mountPath == "/host") | .recursiveReadOnly]' <<<"$pod_spec")" '["IfPossible"]'
check_contains "a Warning Event says the node cannot mount recursively read-only" \
	"$(kc -n "$ns" get events --field-selector reason=RecursiveReadOnlyUnavailable -o jsonpath='{.items[*].message}')" \
	"does not report recursive read-only mounts"
# A node that reports support gets Enabled; the API server takes that spec (dry run).
jq '.metadata = {name: "rro-dry-run", namespace: .metadata.namespace} | del(.status) |
	del(.spec.selector, .spec.template.metadata.labels["controller-uid"], .spec.template.metadata.labels["batch.kubernetes.io/controller-uid"]) |
	.spec.template.metadata.labels |= with_entries(select(.key | test("controller-uid|job-name") | not)) |
	.spec.template.spec.containers[0].volumeMounts |= map(if .mountPath == "/host" then .recursiveReadOnly = "Enabled" else . end)' \
	<<<"$pod_spec" >"$T_TMP/rro-job.json"
if out=$(kc create --dry-run=server -f "$T_TMP/rro-job.json" 2>&1); then
	pass "the API server accepts recursiveReadOnly: Enabled on the backup Job"
else
	fail "the API server accepts recursiveReadOnly: Enabled on the backup Job" "$out"
fi
check_eq "credentials come by reference, never by value" \
	"$(jq -c '[.spec.template.spec.containers[0].env[] | select(.name | startswith("AWS_") and . != "AWS_REGION") | (.value == null and .valueFrom.secretKeyRef.name == "s3")] | unique' <<<"$pod_spec")" \
	'[true]'

kc -n "$ns" get backups -o json >"$T_TMP/backups.json"
"$LODE" snapshots --policy "$ns/nightly" --output json >"$T_TMP/snaps.json" 2>"$T_TMP/snaps.err" ||
	fail "lode snapshots" "$(cat "$T_TMP/snaps.err")"
# The next slot may have run meanwhile (the schedule is every minute): compare sets.
check_eq "every host has its snapshots in S3" \
	"$(jq -r '[.snapshots[].host] | unique | join(" ")' "$T_TMP/snaps.json")" "${node[*]}"
check_eq "no snapshot is incomplete or suspicious" \
	"$(jq -c '[.snapshots[] | .incomplete or .suspicious] | unique' "$T_TMP/snaps.json")" '[false]'
for i in 0 1 2; do
	h=${node[$i]}
	# The first Backup of the host that succeeded, and its snapshot.
	bid=$(jq -r --arg h "$h" '[.items[] | select(.spec.host == $h and .status.phase == "Succeeded")] | sort_by(.spec.slot) | .[0].status.snapshot.id // ""' "$T_TMP/backups.json")
	if [[ -z $bid ]]; then
		fail "$h: the Backup names its snapshot" "$(jq --arg h "$h" '.items[] | select(.spec.host == $h) | .status' "$T_TMP/backups.json")"
		continue
	fi
	id=$(jq -r --arg id "$bid" '.snapshots[] | select(.id == $id) | .id' "$T_TMP/snaps.json")
	check_eq "$h: the Backup's snapshot is in S3, under its host" \
		"$(jq -r --arg id "$bid" '.snapshots[] | select(.id == $id) | .host' "$T_TMP/snaps.json")" "$h"
	check_eq "$h: the Backup counts the snapshot's files" \
		"$(jq -r --arg id "$bid" '.items[] | select(.status.snapshot.id == $id) | .status.snapshot.files' "$T_TMP/backups.json")" \
		"$(jq -r --arg id "$bid" '.snapshots[] | select(.id == $id) | .files' "$T_TMP/snaps.json")"
	[[ -n $id ]] || continue
	t=$T_TMP/restore-$i
	if out=$("$LODE" restore "$id" --target "$t" 2>&1); then
		pass "$h: lode restore"
	else
		fail "$h: lode restore" "$out"
		continue
	fi
	d=$(node_dir "$i")
	if out=$(diff -r --no-dereference "$d/data" "$t/srv/$ns/data" 2>&1); then
		pass "$h: the restore is that node's files, byte for byte"
	else
		fail "$h: the restore is that node's files, byte for byte" "$out"
	fi
	check_eq "$h: modes, owners and the symlink come back" \
		"$(cd "$t/srv/$ns/data" && stat -c '%n %a %u' private hostname && readlink link)" \
		"$(cd "$d/data" && stat -c '%n %a %u' private hostname && readlink link)"
	check_eq "$h: paths outside the policy are not in the snapshot" "$(ls "$t/srv/$ns")" "data"
done

# ---- GC for real: the controller's GC Job runs `lode gc` in the image while a backup runs ----
# (docs/gc.md, "Run by the controller"). Every file of every node changes and keepLast
# drops to 1, so the controller forgets every snapshot of the old data and their packs
# are used by nothing; once aged past the window (versitygw's posix backend takes
# LastModified from the file's mtime), the GC Job frees exactly them, while a backup
# throttled by uploadRate is running on node 0. There is no scheduler here: the test
# binds the GC pod to a real node, as kube-scheduler would.
DATA=$ENV_DIR/s3/data/$S3_BUCKET/$prefix
# No backup pod is pending or running.
backups_idle() {
	[[ -z $(kc -n "$ns" get pods -l lodestore.io/policy=nightly -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -v '^Succeeded$\|^Failed$') ]]
}
snaps() { "$LODE" snapshots --policy "$ns/nightly" --output json 2>"$T_TMP/snaps.err"; }
# objects DIR...: "size key" of every object file under the repository's DIRs, sorted.
objects() { (cd "$DATA" && find "$@" -type f -printf '%s %p\n' 2>/dev/null); }
# Pausing the policy: a yearly schedule (a changed schedule counts from now).
policy "0 0 1 1 *" 10
env_wait 60 "the running backups to end" backups_idle || fail "the backups end" "$(kc -n "$ns" get pods)"
snaps | jq -r '.snapshots[].id' | sort >"$T_TMP/old-ids"
for i in 0 1 2; do
	d=$(node_dir "$i")
	echo "node $i, second life" >"$d/data/hostname"
	head -c $((310000 + i * 70000)) /dev/urandom >"$d/data/sub dir/blob-$i"
	echo "private $i, second life" >"$d/data/private"
done
policy "* * * * *" 1
# Each host's snapshots are new ones: the controller forgot every snapshot of the old
# data (retention keeps the two newest good ones whatever keepLast says: two slots).
only_new() {
	local s
	s=$(snaps) || return 1
	[[ $(jq -r '[.snapshots[].host] | unique | join(" ")' <<<"$s") == "${node[*]}" ]] &&
		[[ -z $(jq -r '.snapshots[].id' <<<"$s" | grep -Fxf "$T_TMP/old-ids") ]]
}
if env_wait 210 "new snapshots only, the old ones forgotten" only_new; then
	pass "keepLast 1: the controller forgot every snapshot of the old data ($(grep -c . "$T_TMP/old-ids") of them)"
else
	fail "keepLast 1: the controller forgot every snapshot of the old data" "$(snaps)"
fi
policy "0 0 1 1 *" 1
env_wait 90 "the running backups to end" backups_idle || fail "the backups end" "$(kc -n "$ns" get pods)"
# Everything so far is a day old: past the GC window (maxRuntime 1h + 1h).
find "$DATA" -type f -exec touch -d '-1 day' {} +
objects data meta runs >"$T_TMP/before"
# The backup that runs during GC: 24 MiB more on node 0 at 1 MiB/s.
head -c $((24 << 20)) /dev/urandom >"$(node_dir 0)/data/big"
kc -n "$ns" patch backuprepository main --type=merge -p '{"spec":{"gc":{"schedule":"* * * * *"}}}' >/dev/null
# keepLast 10: the other nodes' backups of these minutes forget nothing while GC runs. A
# manifest a forget deletes under GC leaves its source skipped (docs/gc.md, "When
# something is wrong"), which is right, and not what this phase checks.
policy "* * * * *" 10 1MiB/s
gcjob() { kc -n "$ns" get jobs -l lodestore.io/repository=main -o jsonpath='{.items[0].metadata.name}'; }
pod_of() { kc -n "$ns" get pods -l "job-name=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
bk_running() { # the name of node 0's running backup pod
	kc -n "$ns" get pods -l "lodestore.io/policy=nightly,lodestore.io/host=${node[0]}" \
		-o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}' | head -n 1
}
ready_to_bind() { [[ -n $(gcjob) && -n $(pod_of "$(gcjob)") && -n $(bk_running) ]]; }
if ! env_wait 150 "a GC Job's pod and node 0's backup running" ready_to_bind; then
	fail "a GC Job starts while node 0's backup runs" "$(kc -n "$ns" get jobs,pods)" "$(tail -n 20 "$T_TMP/ctl.log")"
	finish
	exit 1
fi
job=$(gcjob)
gcpod=$(pod_of "$job")
bkpod=$(bk_running)
kc create --raw "/api/v1/namespaces/$ns/pods/$gcpod/binding" -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "$gcpod"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "${node[1]}"}}
EOF
gc_field() { env_get -n "$ns" backuprepository/main "{.status.gc.$1}"; }
gc_recorded() { [[ $(gc_field lastJob) == "$job" ]]; }
if env_wait 120 "status.gc to record $job" gc_recorded; then
	pass "the GC Job ran lode gc in the image and its result is in status.gc"
else
	fail "the GC Job ran lode gc in the image" "$(kc -n "$ns" get pod "$gcpod" -o json | jq -c .status)" \
		"$(tail -n 20 "$ENV_LOGS/kubelet-${node[1]}.log")"
fi
if [[ $(gc_field result) == Succeeded ]]; then
	pass "status.gc.result Succeeded"
else
	fail "status.gc.result Succeeded" "got: $(gc_field result): $(gc_field message)" \
		"$(kc -n "$ns" logs "$gcpod" 2>&1 | tail -n 20)"
fi
bk_done() { [[ $(env_get -n "$ns" "pod/$bkpod" '{.status.phase}') == Succeeded ]]; }
env_wait 120 "node 0's backup to succeed" bk_done || fail "node 0's backup succeeds" "$(kc -n "$ns" get pod "$bkpod" -o json | jq -c .status)"
policy "0 0 1 1 *" 1
kc -n "$ns" patch backuprepository main --type=merge -p '{"spec":{"gc":{"suspend":true}}}' >/dev/null
cstate() { kc -n "$ns" get pod "$1" -o jsonpath='{.status.containerStatuses[0].state.terminated.startedAt} {.status.containerStatuses[0].state.terminated.finishedAt}'; }
read -r gs gf <<<"$(cstate "$gcpod")"
read -r bs bf <<<"$(cstate "$bkpod")"
if [[ -n $gf && -n $bf && $(date -d "$gs" +%s) -ge $(date -d "$bs" +%s) && $(date -d "$gf" +%s) -lt $(date -d "$bf" +%s) ]]; then
	pass "GC ran while the backup ran (GC $gs..$gf inside the backup's $bs..$bf), blocking nothing"
else
	fail "GC ran while the backup ran" "GC: $gs..$gf" "backup: $bs..$bf"
fi
objects data meta runs >"$T_TMP/after"
# Freed: the objects present before GC that are gone (the backup during GC only adds).
awk 'NR == FNR { after[$2]; next } !($2 in after)' "$T_TMP/after" "$T_TMP/before" >"$T_TMP/freed"
freed_packs=$(grep -c ' data/' "$T_TMP/freed")
freed_bytes=$(awk '{ n += $1 } END { print n + 0 }' "$T_TMP/freed")
[[ $freed_packs -gt 0 ]] && pass "GC freed $freed_packs packs ($freed_bytes bytes with meta and run records)" ||
	fail "GC freed packs" "$(cat "$T_TMP/freed")"
check_eq "status.gc.packsDeleted and bytesFreed are what left the storage" \
	"$(gc_field packsDeleted) $(gc_field bytesFreed)" "$freed_packs $freed_bytes"
events() { kc -n "$ns" get events --field-selector "reason=$1,involvedObject.name=main" -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'; }
has_event() { [[ -n $(events "$1") ]]; }
env_wait 20 "a GarbageCollected Event" has_event GarbageCollected || fail "a GarbageCollected Event"
check_contains "the Event says what was freed" "$(events GarbageCollected)" \
	"GC Job $job: deleted $freed_packs of "
check_contains "the Event's bytes" "$(events GarbageCollected)" " $freed_bytes bytes freed"
# Nothing referenced is lost: every snapshot left (node 0's made during GC included)
# restores exactly, and every pack reads back.
snaps >"$T_TMP/kept.json"
check_eq "every host keeps snapshots" "$(jq -r '[.snapshots[].host] | unique | join(" ")' "$T_TMP/kept.json")" \
	"${node[*]}"
for i in 0 1 2; do
	h=${node[$i]}
	# Newest first: the newest is of the node's files as they are now; the older one
	# (made before big was written on node 0) is checked by check --read-data below.
	id=$(jq -r --arg h "$h" '.snapshots[] | select(.host == $h) | .id' "$T_TMP/kept.json" | head -n 1)
	t=$T_TMP/after-gc-$i
	if out=$("$LODE" restore "$id" --target "$t" 2>&1) &&
		out=$(diff -r --no-dereference "$(node_dir "$i")/data" "$t/srv/$ns/data" 2>&1); then
		pass "$h: after GC, the newest snapshot restores byte for byte"
	else
		fail "$h: after GC, the newest snapshot restores byte for byte" "$out"
	fi
done
out=$("$LODE" check --read-data 2>&1) && pass "lode check --read-data: no damage after GC" ||
	fail "lode check --read-data: no damage after GC" "$out"
finish
