#!/usr/bin/env bash
# Restores from the cluster, end to end (docs/restoring.md): the controller runs each
# Restore as a Job of `lode restore` in the image built from the Dockerfile, on two real
# nodes (containerd and a kubelet each, tests/env/real-nodes.sh; each has its own /srv),
# from versitygw through a BackupRepository, reached on the host's network.
#
# What an operator restoring a broken node relies on: a node's paths come back into a
# directory of another node exactly (content, mode, owner, times, symlinks, xattrs), or
# only the paths asked for; a dry run lists and writes nothing; a snapshot that does not
# exist, a wrong key and a target that holds files each fail with their reason and
# write nothing; overwrite replaces; a second Restore into the same place waits for the
# first; deleting a Restore while it runs stops its Job and leaves nothing of it.
# Run it as  tests/env/with-cluster.sh bash tests/e2e/test_restore_cluster.sh
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
CTL=${LODE_CONTROLLER:-$root/build/lode-controller}
[[ $CTL == /* ]] || CTL=$root/$CTL
ns=e2e-rs-$(openssl rand -hex 3)
node=()
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	# No PV controller here removes the protection finalizers: the test does.
	kc -n "$ns" patch pvc claim --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
	kc delete pv "$ns" --wait=false >/dev/null 2>&1
	kc patch pv "$ns" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
	# While the kubelets run, so they confirm their pods' deletion and the namespace goes.
	kc delete namespace "$ns" --timeout=60s >/dev/null 2>&1
	if [[ ${#node[@]} -eq 2 ]]; then
		kc label node "${node[0]}" role- >/dev/null 2>&1
		rm -rf "$S/srv/data" "$S/srv/big" "$D/srv/restored" "$D/srv/pv-$ns"
	fi
	env_real_nodes_stop >/dev/null 2>&1
	rm -rf "$T_TMP"
}
trap cleanup EXIT

if ! env_real_nodes_start 2; then
	fail "two real nodes start (containerd, kubelet)" "see $ENV_LOGS/kubelet-*.log and containerd-*.log"
	finish
	exit 1
fi
read -r -a node <<<"$REAL_NODES"
if [[ ${#node[@]} -lt 2 ]]; then
	fail "two real nodes" "the environment has ${#node[@]}: $REAL_NODES (LODE_REAL_NODES=2)"
	finish
	exit 1
fi
node=("${node[@]:0:2}")
pass "two real nodes are Ready: ${node[*]}"

# ---- the repository, from this machine ----
prefix=$ns
env_lode_s3
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
export LODE_KEY_FILE=$T_TMP/key
unset LODE_POLICY_DOCUMENT
out=$("$LODE" init --generate-key 2>&1) || fail "lode init --generate-key" "$out"
kc apply --server-side -f "$root/crd/" >/dev/null
kc wait --for condition=established --timeout=30s crd/backuppolicies.lodestore.io \
	crd/backups.lodestore.io crd/backuprepositories.lodestore.io crd/restores.lodestore.io >/dev/null
kc create namespace "$ns" >/dev/null
kc -n "$ns" create secret generic s3 --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" \
	--from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" \
	--from-file=repository-key="$LODE_KEY_FILE" >/dev/null
head -c 32 /dev/urandom | base64 >"$T_TMP/wrong-key"
kc -n "$ns" create secret generic s3-wrong --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" \
	--from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" \
	--from-file=repository-key="$T_TMP/wrong-key" >/dev/null
repo() { # NAME ENDPOINT SECRET [EXTRA]
	kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupRepository
metadata: {name: $1}
spec:
  endpoint: $2
  bucket: $S3_BUCKET
  prefix: $prefix
  region: $S3_REGION
  caBundle: $(base64 -w0 <"$S3_CA_FILE")
  credentialsSecret: {name: $3}
  ${4:-}
EOF
}
repo main "$S3_ENDPOINT" s3
repo wrongkey "$S3_ENDPOINT" s3-wrong

# ---- two nodes: src has the files, dst receives them ----
src=${node[0]}
dst=${node[1]}
kc label node "$src" "role=$ns" >/dev/null
S=$(env_real_node_root "$src")
D=$(env_real_node_root "$dst")
rm -rf "$S/srv/data" "$S/srv/big" "$D/srv/restored" # a run killed before its cleanup
mkdir -p "$S/srv/data/sub dir/deeper" "$S/srv/data/empty" "$S/srv/big"
echo "the source node" >"$S/srv/data/hostname"
head -c 300000 /dev/urandom >"$S/srv/data/sub dir/blob"
echo "deep" >"$S/srv/data/sub dir/deeper/f"
: >"$S/srv/data/empty-file"
ln -s hostname "$S/srv/data/link"
ln -s "/nowhere/at all" "$S/srv/data/dangling"
echo "private" >"$S/srv/data/private"
chown 4242:4343 "$S/srv/data/private"
chmod 0400 "$S/srv/data/private"
chmod 0751 "$S/srv/data/sub dir"
chmod 4755 "$S/srv/data/hostname"
mkfifo "$S/srv/data/fifo"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.note", b"kept\0bytes")
os.setxattr(sys.argv[2], "user.dir", b"a dir xattr")' "$S/srv/data/hostname" "$S/srv/data/sub dir"
touch -h -d '2024-02-03 04:05:06.123456789' "$S/srv/data/link"
touch -d '2023-01-02 03:04:05.5' "$S/srv/data/sub dir/blob" "$S/srv/data/empty"
touch -d '2022-06-07 08:09:10' "$S/srv/data/sub dir/deeper" "$S/srv/data/sub dir"
# What delete-while-running restores: 40 files of 4 MiB.
for i in $(seq 1 40); do head -c $((4 << 20)) /dev/urandom >"$S/srv/big/f$i"; done

env_controller_start "$ns" ctl --agent-host-network || {
	fail "the controller starts"
	finish
	exit 1
}
ready() { [[ $(env_get -n "$ns" "backuprepository/$1" '{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
env_wait 60 "the repository to be Ready" ready main || fail "the BackupRepository is Ready" "$(kc -n "$ns" get backuprepository main -o yaml)"

for p in data big; do
	kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: $p}
spec:
  repository: main
  paths: [/srv/$p]
  nodeSelector: {role: $ns}
  schedule: {cron: "0 0 1 1 *"}
  retention: {keepLast: 10}
  limits: {maxRuntime: 1h}
EOF
	kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: $p-by-hand}
spec: {policy: $p, host: $src}
EOF
done
bk_done() { [[ $(env_get -n "$ns" "backup/$1" '{.status.phase}') == Succeeded ]]; }
for p in data big; do
	env_wait 180 "Backup $p-by-hand to succeed" bk_done "$p-by-hand" ||
		fail "Backup $p-by-hand succeeds" "$(kc -n "$ns" get backup "$p-by-hand" -o jsonpath='{.status}')" "$(tail -n 20 "$T_TMP/ctl.log")"
done
id=$(env_get -n "$ns" backup/data-by-hand '{.status.snapshot.id}')
bigid=$(env_get -n "$ns" backup/big-by-hand '{.status.snapshot.id}')
[[ -n $id && -n $bigid ]] && pass "the two Backups name their snapshots" || {
	fail "the two Backups name their snapshots" "$(kc -n "$ns" get backups -o wide)"
	finish
	exit 1
}

# ---- helpers ----
restore() { # NAME SPEC-YAML (indented under spec:)
	kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: Restore
metadata: {name: $1}
spec:
$2
EOF
}
field() { env_get -n "$ns" "restore/$1" "{.status.$2}"; }
phase_is() { [[ $(field "$1" phase) == "$2" ]]; }
ended() { [[ $(field "$1" phase) == Succeeded || $(field "$1" phase) == Failed ]]; }
wait_end() { # NAME
	env_wait 120 "Restore $1 to end" ended "$1" || fail "Restore $1 ends" \
		"$(kc -n "$ns" get restore "$1" -o jsonpath='{.status}')" "$(tail -n 20 "$T_TMP/ctl.log")"
}
events() { kc -n "$ns" get events --field-selector "involvedObject.kind=Restore,involvedObject.name=$1" -o jsonpath='{range .items[*]}{.reason}{" "}{end}'; }
# A tree's entries with what a restore must give back (not ctime, not the atime of dirs).
# A directory's size is the file system's business, not the restore's.
listing() { # DIR
	(cd "$1" && find . \( -type d -printf '%p d %m %U %G - %TY-%Tm-%Td %TT\n' \) -o \
		-printf '%p %y %m %U %G %s %TY-%Tm-%Td %TT %l\n' | sort &&
		python3 -c 'import os
for d, ds, fs in os.walk("."):
    for n in [d] + [os.path.join(d, f) for f in ds + fs]:
        for a in sorted(os.listxattr(n, follow_symlinks=False)):
            print(n, a, os.getxattr(n, a, follow_symlinks=False))' | sort -u)
}

# ---- a node's paths into a directory of another node, by policy and host ----
restore full "  snapshot: {policy: data, host: $src}
  setid: true
  target: {node: $dst, path: /srv/restored/full}"
wait_end full
check_eq "full: Succeeded, the newest good snapshot of the policy and host, onto the other node" \
	"$(field full phase) $(field full snapshot) $(field full target)" "Succeeded $id $dst:/srv/restored/full"
# diff says two FIFOs differ: the listing below compares the FIFO.
if out=$(diff -r --no-dereference -x fifo "$S/srv/data" "$D/srv/restored/full/srv/data" 2>&1); then
	pass "full: the files are the source node's, byte for byte"
else
	fail "full: the files are the source node's, byte for byte" "$out"
fi
check_eq "full: modes, owners, sizes, times, symlinks, FIFOs and xattrs come back" \
	"$(listing "$D/srv/restored/full/srv/data")" "$(listing "$S/srv/data")"
check_eq "full: the counts in the status" \
	"$(field full files) $(field full symlinks) $(field full other) $(field full errors)" \
	"5 2 1 0"
check_contains "full: status.duration and completionTime are set" "$(field full duration)/$(field full completionTime)" "s/20"
check_eq "full: nothing of the stage is left" "$(ls -A "$D/srv/restored/full")" "srv"
check_eq "full: Events Started and Restored" "$(events full | tr ' ' '\n' | grep -c -x -e Started -e Restored)" 2
cols=$(kc -n "$ns" get restore full)
check_contains "kubectl get restore: PHASE, SNAPSHOT, TARGET, AGE" "$cols" "PHASE"
check_contains "kubectl get restore shows the target" "$cols" "$dst:/srv/restored/full"
job=$(field full jobName)
spec=$(kc -n "$ns" get job "$job" -o json)
check_eq "the Job: uid 0, read-only root, no escalation, no SYS_ADMIN" \
	"$(jq -c '.spec.template.spec.containers[0].securityContext | [.runAsUser, .readOnlyRootFilesystem, .allowPrivilegeEscalation, (.capabilities.add | index("SYS_ADMIN"))]' <<<"$spec")" \
	'[0,true,false,null]'
check_eq "the Job: only the target is mounted from the node (the subPath of its /), read-write" \
	"$(jq -c '[.spec.template.spec.volumes[] | select(.hostPath) | .hostPath.path]' <<<"$spec") $(jq -c '[.spec.template.spec.containers[0].volumeMounts[] | select(.readOnly != true) | [.mountPath, .subPath]] | sort' <<<"$spec")" \
	'["/"] [["/restore","srv/restored/full"],["/tmp",null]]'
check_eq "the Job: credentials by reference, never by value" \
	"$(jq -c '[.spec.template.spec.containers[0].env[] | select(.name | startswith("AWS_") and . != "AWS_REGION") | (.value == null and .valueFrom.secretKeyRef.name == "s3")] | unique' <<<"$spec")" '[true]'

# ---- include paths, by snapshot id ----
restore some "  snapshot: {id: $id}
  repository: main
  include: [\"/srv/data/sub dir/deeper\", /srv/data/hostname]
  target: {node: $dst, path: /srv/restored/some}"
wait_end some
check_eq "include: Succeeded with the two paths' files" "$(field some phase) $(field some files)" "Succeeded 2"
check_eq "include: only those paths and the directories above them" \
	"$(cd "$D/srv/restored/some" && find . | sort | tr '\n' ' ')" \
	". ./srv ./srv/data ./srv/data/hostname ./srv/data/sub dir ./srv/data/sub dir/deeper ./srv/data/sub dir/deeper/f "
check_eq "include: the directory above keeps its mode and time" \
	"$(stat -c '%a %Y' "$D/srv/restored/some/srv/data/sub dir")" "$(stat -c '%a %Y' "$S/srv/data/sub dir")"

# ---- a dry run writes nothing ----
restore dry "  snapshot: {id: $id}
  repository: main
  dryRun: true
  target: {node: $dst, path: /srv/restored/dry}"
wait_end dry
check_eq "dry run: Succeeded, reason DryRun, the files it would write" \
	"$(field dry phase) $(field dry reason) $(field dry files)" "Succeeded DryRun 5"
check_contains "dry run: status.paths lists them" "$(field dry paths)" "/srv/data/sub dir/blob"
check_eq "dry run: nothing was written, not even the target" "$(ls -d "$D/srv/restored/dry" 2>&1 | grep -c 'No such file')" 1
check_contains "dry run: Event DryRun" "$(events dry)" "DryRun"

# ---- failures, each with its reason, writing nothing ----
bad=${id:0:${#id}-1}$([[ ${id: -1} == 0 ]] && echo 1 || echo 0)
restore missing "  snapshot: {id: $bad}
  repository: main
  target: {node: $dst, path: /srv/restored/missing}"
restore wrong "  snapshot: {id: $id}
  repository: wrongkey
  target: {node: $dst, path: /srv/restored/wrong}"
wait_end missing
wait_end wrong
check_eq "a snapshot that does not exist: Failed, SnapshotNotFound" \
	"$(field missing phase) $(field missing reason)" "Failed SnapshotNotFound"
check_contains "... its message names it" "$(field missing message)" "no snapshot $bad"
check_contains "... a Warning Event says so" "$(events missing)" "SnapshotNotFound"
check_eq "a wrong key: Failed, WrongKey" "$(field wrong phase) $(field wrong reason)" "Failed WrongKey"
check_contains "... its message says wrong key" "$(field wrong message)" "wrong key"
check_eq "... nothing was written" "$(find "$D/srv/restored/wrong" "$D/srv/restored/missing" -mindepth 1 | wc -l)" 0
restore nopolicy "  snapshot: {policy: nosuch, host: $src}
  target: {node: $dst, path: /srv/restored/nopolicy}"
wait_end nopolicy
check_eq "a policy that does not exist: Failed, PolicyNotFound, no Job" \
	"$(field nopolicy phase) $(field nopolicy reason) $(field nopolicy jobName)" "Failed PolicyNotFound "
out=$(restore badspec "  snapshot: {id: $id}
  target: {node: $dst, path: /srv/restored/badspec}" 2>&1)
check_contains "the API server refuses a snapshot id without a repository" "$out" "needs spec.repository"
out=$(restore badpath "  snapshot: {id: $id}
  repository: main
  target: {node: $dst, path: /srv/restored/../etc}" 2>&1)
check_contains "... and a target path with .." "$out" "without . or .. parts"

# ---- a target that is a regular file: refused at once, the file left alone ----
echo "a file, not a directory" >"$D/srv/restored/afile"
restore afile "  snapshot: {id: $id}
  repository: main
  target: {node: $dst, path: /srv/restored/afile}"
afile_failed() { [[ $(field afile phase) == Failed ]]; }
if env_wait 60 "the Restore onto a file to fail" afile_failed; then
	pass "a target that is a regular file: Failed within 60 s, not a pod waiting forever"
else
	fail "a target that is a regular file: Failed within 60 s" "$(kc -n "$ns" get restore afile -o jsonpath='{.status}')" \
		"$(kc -n "$ns" get pods -o wide 2>&1)"
fi
check_eq "... reason TargetUnusable" "$(field afile reason)" "TargetUnusable"
check_contains "... the message says it is not a directory" "$(field afile message)" "is not a directory"
check_eq "... the file is as it was" "$(cat "$D/srv/restored/afile")" "a file, not a directory"
# A file on the way to the target: the kubelet cannot make the target's directories.
restore underfile "  snapshot: {id: $id}
  repository: main
  target: {node: $dst, path: /srv/restored/afile/below}"
underfile_failed() { [[ $(field underfile phase) == Failed ]]; }
if env_wait 60 "the Restore below a file to fail" underfile_failed; then
	pass "a target below a regular file: Failed within 60 s"
else
	fail "a target below a regular file: Failed within 60 s" "$(kc -n "$ns" get restore underfile -o jsonpath='{.status}')" \
		"$(kc -n "$ns" get pods -o json | jq -c '[.items[].status.containerStatuses]')"
fi
check_contains "... with the reason the pod could not start" "$(field underfile reason) $(field underfile message)" "PodNotStarted"
check_eq "... the Job is gone" "$(kc -n "$ns" get job "$(field underfile jobName)" -o name 2>/dev/null)" ""

# ---- a target that holds files: refused unless asked ----
echo "already here" >"$D/srv/restored/full/keep"
restore exists "  snapshot: {id: $id}
  repository: main
  target: {node: $dst, path: /srv/restored/full}"
wait_end exists
check_eq "a target that is not empty: Failed, TargetNotEmpty" "$(field exists phase) $(field exists reason)" "Failed TargetNotEmpty"
check_contains "... the message says how to go on" "$(field exists message)" "overwrite"
echo "changed" >"$D/srv/restored/full/srv/data/sub dir/deeper/f"
restore over "  snapshot: {id: $id}
  repository: main
  overwrite: true
  include: [\"/srv/data/sub dir/deeper\"]
  target: {node: $dst, path: /srv/restored/full}"
wait_end over
check_eq "overwrite: true replaces the file in the way, keeps the rest" \
	"$(field over phase) $(cat "$D/srv/restored/full/srv/data/sub dir/deeper/f") $(cat "$D/srv/restored/full/keep")" \
	"Succeeded deep already here"

# ---- into a PersistentVolumeClaim ----
# The control plane has no scheduler and no PV controller: the test binds, as they would,
# a claim to a hostPath PV of the other node (statically: volumeName and claimRef, both
# Bound), and the Restore's pod to that node. The rest is the real kubelet's.
kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: claim}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: $ns
  resources: {requests: {storage: 1Gi}}
EOF
claim_uid=$(env_get -n "$ns" pvc/claim '{.metadata.uid}')
kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata: {name: $ns}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: /srv/pv-$ns, type: DirectoryOrCreate}
  claimRef: {namespace: $ns, name: claim, uid: $claim_uid}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [$dst]}
EOF
kc patch pv "$ns" --subresource=status --type=merge -p '{"status":{"phase":"Bound"}}' >/dev/null
kc -n "$ns" patch pvc claim --subresource=status --type=merge \
	-p '{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"}}}' >/dev/null
check_eq "the claim is Bound to the node's hostPath PV" "$(env_get -n "$ns" pvc/claim '{.status.phase} {.spec.volumeName}')" "Bound $ns"
restore inpvc "  snapshot: {id: $id}
  repository: main
  setid: true
  target: {persistentVolumeClaim: claim, path: /from-$src}"
pvc_pod() { kc -n "$ns" get pods -l "job-name=$(field inpvc jobName)" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
pvc_pod_made() { [[ -n $(field inpvc jobName) && -n $(pvc_pod) ]]; }
if env_wait 60 "the claim's Restore to have a pod" pvc_pod_made; then
	pod=$(pvc_pod)
	check_eq "the claim's restore pod names no node (a scheduler places it) and mounts the claim" \
		"$(env_get -n "$ns" "pod/$pod" '{.spec.nodeName}') $(kc -n "$ns" get pod "$pod" -o json | jq -c '[.spec.volumes[] | select(.persistentVolumeClaim) | .persistentVolumeClaim.claimName]')" \
		' ["claim"]'
	kc create --raw "/api/v1/namespaces/$ns/pods/$pod/binding" -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "$pod"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "$dst"}}
EOF
	wait_end inpvc
	check_eq "into a claim: Succeeded, its target pvc/claim:/from-$src" \
		"$(field inpvc phase) $(field inpvc target) $(field inpvc files)" "Succeeded pvc/claim:/from-$src 5"
	if out=$(diff -r --no-dereference -x fifo "$S/srv/data" "$D/srv/pv-$ns/from-$src/srv/data" 2>&1); then
		pass "into a claim: the files land in the volume, byte for byte"
	else
		fail "into a claim: the files land in the volume, byte for byte" "$out"
	fi
	check_eq "into a claim: modes, owners, times, symlinks and xattrs come back" \
		"$(listing "$D/srv/pv-$ns/from-$src/srv/data")" "$(listing "$S/srv/data")"
	check_eq "into a claim: nothing of the stage is left" "$(ls -A "$D/srv/pv-$ns/from-$src")" "srv"
else
	fail "the claim's Restore has a pod" "$(kc -n "$ns" get restore inpvc -o jsonpath='{.status}')" "$(kc -n "$ns" get jobs,pods 2>&1)"
fi

# ---- deleting a Restore while it runs; a second one into the same place waits ----
# The repository "slow" is the same bucket behind the fault proxy (it lives 10 minutes).
env_build_tool faultproxy || fail "the fault proxy builds"
env_fault_proxy_start || fail "the fault proxy starts"
PIDS+=("$PROXY_PID")
repo slow "$PROXY" s3 "allowPlainHTTP: true"
env_wait 60 "the repository behind the proxy to be Ready" ready slow ||
	fail "the repository behind the proxy is Ready" "$(kc -n "$ns" get backuprepository slow -o jsonpath='{.status}')"
restore slow "  snapshot: {id: $bigid}
  repository: slow
  target: {node: $dst, path: /srv/restored/slow}"
# Its stage fills with whole files; then every S3 request stalls, so it keeps running.
stage_has_files() { [[ -n $(find "$D/srv/restored/slow" -path '*/.lode-restore-staging-*' -type f -name 'f*' 2>/dev/null | head -n 1) ]]; }
if env_wait 120 "the slow restore's first files" stage_has_files; then
	env_fault stall/500
	pass "the slow restore writes its first files into its stage"
else
	fail "the slow restore writes its first files into its stage" "$(kc -n "$ns" get restore slow -o jsonpath='{.status}')"
fi
restore second "  snapshot: {id: $id}
  repository: main
  dryRun: true
  target: {node: $dst, path: /srv/restored/slow/inner}"
env_wait 30 "the second Restore to wait" eval "[[ \$(field second reason) == WaitingForTarget ]]"
check_eq "a Restore into the same place waits: Pending, WaitingForTarget" \
	"$(field second phase) $(field second reason) $(field slow phase)" "Pending WaitingForTarget Running"
check_contains "... its message names the one it waits for" "$(field second message)" "$ns/slow"
sjob=$(field slow jobName)
kc -n "$ns" delete restore slow --wait=false >/dev/null
gone() { ! kc -n "$ns" get job "$sjob" >/dev/null 2>&1 && [[ -z $(kc -n "$ns" get pods -l "job-name=$sjob" -o name) ]]; }
if env_wait 60 "the slow restore's Job and pod to go" gone; then
	pass "deleting a running Restore stops its Job"
else
	fail "deleting a running Restore stops its Job" "$(kc -n "$ns" get jobs,pods 2>&1)"
fi
empty() { [[ -z $(ls -A "$D/srv/restored/slow" 2>/dev/null) ]]; }
if env_wait 30 "the slow restore's stage to go" empty; then
	pass "... and nothing it wrote is left in the target"
else
	fail "... and nothing it wrote is left in the target" "$(find "$D/srv/restored/slow" | head)"
fi
env_fault clear
wait_end second
check_eq "the waiting Restore runs once the target is free" "$(field second phase) $(field second reason)" "Succeeded DryRun"

# ---- lode restore by hand, as before ----
if out=$("$LODE" restore "$id" --target "$T_TMP/by-hand" 2>&1) &&
	diff -r --no-dereference -x fifo "$S/srv/data" "$T_TMP/by-hand/srv/data" >/dev/null; then
	pass "lode restore by hand still gives back the node's files"
else
	fail "lode restore by hand still gives back the node's files" "$out"
fi
finish
