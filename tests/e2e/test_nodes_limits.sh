#!/usr/bin/env bash
# What a real kubelet enforces on the controller's Jobs (docs/testing.md, "Real nodes"),
# one real node, one repository, one controller:
#
# - a memory limit below the agent's need (the policy's spec.pod.resources; the Job's
#   default is 2Gi): the kernel kills the agent, the Job fails, the Backup's message
#   starts with OOMKilled, no snapshot;
# - the agent's process, seen from this machine while it runs: uid 0, no supplementary
#   groups, the one capability DAC_READ_SEARCH (effective, permitted, bounding), no new
#   privileges, seccomp on; and the same pod with that capability removed reads the
#   root-owned 0600 file no more, and says which file and why;
# - activeDeadlineSeconds: the Job's deadline (moved to "now", as the policy's maxRuntime
#   of at least 1h is too long to wait for) stops the pod and the Backup says max_runtime;
# - deleting a running backup pod: the kubelet's SIGTERM reaches the agent, which stops
#   its upload and exits 1 with its reason well within the grace period (not killed),
#   the Backup fails, and the next slot runs and succeeds;
# - the GC Job, bound to the node as a scheduler would: `lode gc` as user 65532 reads the
#   repository key from the Secret volume the kubelet wrote (mode 0440, group 65532: the
#   modes the controller sets) and collects what the failed runs left (a pack uploaded
#   before the SIGTERM, run records): afterwards `lode gc --dry-run` finds nothing more
#   and `lode check --read-data` no damage.
# Run it as  tests/env/with-cluster.sh bash tests/e2e/test_nodes_limits.sh
# (it starts one real node unless the environment has them: LODE_REAL_NODES=N).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
CTL=${LODE_CONTROLLER:-$root/build/lode-controller}
[[ $CTL == /* ]] || CTL=$root/$CTL
ns=e2e-limits-$(openssl rand -hex 3)
ctl_pid=
watch_pid=
cleanup() {
	[[ -n $watch_pid ]] && kill "$watch_pid" 2>/dev/null
	[[ -n $ctl_pid ]] && kill "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
	kc delete namespace "$ns" --timeout=60s >/dev/null 2>&1
	env_real_nodes_stop >/dev/null 2>&1
	# A failure's controller log stays with the environment's logs.
	((T_FAILED == 0)) || cp "$T_TMP/ctl.log" "$ENV_LOGS/test_nodes_limits-controller.log" 2>/dev/null
	rm -rf "$T_TMP"
}
trap cleanup EXIT

if ! env_real_nodes_start 1; then
	fail "a real node starts (containerd, kubelet)" "see $ENV_LOGS/kubelet-*.log and containerd-*.log"
	finish
	exit 1
fi
read -r node _ <<<"$REAL_NODES"
pass "a real node is Ready: $node"

# ---- the repository and the node's files ----
env_lode_s3
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/$ns
export LODE_KEY_FILE=$T_TMP/key
unset LODE_POLICY_DOCUMENT
out=$("$LODE" init --generate-key 2>&1) || fail "lode init --generate-key" "$out"
DATA=$ENV_DIR/s3/data/$S3_BUCKET/$ns
env_crds || fail "the CRDs are established"
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
  prefix: $ns
  region: $S3_REGION
  caBundle: $(base64 -w0 <"$S3_CA_FILE")
  credentialsSecret: {name: s3}
EOF
data=$T_TMP/node/data
mkdir -p "$data"
# 24 MiB: more than one pack (16 MiB), so a throttled run uploads a whole pack before the end.
head -c $((24 << 20)) /dev/urandom >"$data/big"
echo "root's own" >"$data/secret"
chmod 0600 "$data/secret"
echo "another user's" >"$data/theirs"
chown 4242:4242 "$data/theirs"
chmod 0400 "$data/theirs"
chmod 0700 "$T_TMP/node"

"$CTL" --kubeconfig "$KUBECONFIG" --context operator --metrics-addr 127.0.0.1:0 --namespace "$ns" \
	--agent-image lodestore.invalid/agent:e2e --agent-host-network --log-level debug \
	>>"$T_TMP/ctl.log" 2>&1 &
ctl_pid=$!
env_wait 30 "the controller's caches" grep -q 'caches synced' "$T_TMP/ctl.log" ||
	fail "the controller starts" "$(tail -n 20 "$T_TMP/ctl.log")"

policy() { # CRON [UPLOAD-RATE] [MEMORY-LIMIT]
	local pod=
	[[ -z ${3:-} ]] || pod="  pod: {resources: {requests: {memory: $3}, limits: {memory: $3}}}"
	kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: limits}
spec:
  repository: main
  paths: [$data]
  nodeSelector: {kubernetes.io/hostname: $node}
  schedule: {cron: "$1", jitter: 0s}
  retention: {keepLast: 10}
  limits: {maxRuntime: 1h${2:+, uploadRate: $2}}
$pod
EOF
}
manual() { # NAME: a Backup made by hand for the node
	kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: $1}
spec: {policy: limits, host: $node}
EOF
}
bfield() { env_get -n "$ns" "backup/$1" "{.status.$2}"; }
# One line of what a run's parts say now (the first line a failure prints, so CI's digest
# shows it): the Backup's phase, its Job's conditions and counts, its pods' phases.
run_state() { # BACKUP
	local job
	job=$(bfield "$1" jobName)
	printf 'at %s: backup %s; job %s: %s; pods: %s\n' "$(date -u +%T)" "$(bfield "$1" phase)" "$job" \
		"$(kc -n "$ns" get job "$job" -o jsonpath='{range .status.conditions[*]}{.type}={.status}({.reason}) {end}active={.status.active} failed={.status.failed} terminating={.status.terminating}' 2>&1)" \
		"$(kc -n "$ns" get pods -l "job-name=$job" -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase} deleting={.metadata.deletionTimestamp} finalizers={.metadata.finalizers}; {end}' 2>&1)"
}
phase_is() { [[ $(bfield "$1" phase) == "$2" ]]; }
pod_of() { kc -n "$ns" get pods -l "job-name=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
# The PID, on this machine, of the agent of this test's running backup (its command line
# names the policy after --policy).
agent_pid() { pgrep -n -f "^/usr/local/bin/lode backup --policy $ns/limits " || true; }
policy "0 0 1 1 *"

# ---- a memory limit below the agent's need (spec.pod.resources): OOMKilled ----
policy "0 0 1 1 *" "" 16Mi
manual oom
if env_wait 120 "the OOM Backup to fail" phase_is oom Failed; then
	pass "under a 16Mi limit the Backup fails"
else
	fail "under a 16Mi limit the Backup fails" "$(kc -n "$ns" get backup oom -o yaml)" "$(kc -n "$ns" get pods -o yaml | tail -n 30)"
fi
check_contains "its message starts with OOMKilled" "$(bfield oom message)" "OOMKilled: the agent went over its container's memory limit (exit code 137)"
check_eq "the container's limit was the policy's, its reason OOMKilled" \
	"$(kc -n "$ns" get pods -l job-name=oom -o json | jq -r '.items[0] | [.spec.containers[0].resources.limits.memory, .status.containerStatuses[0].state.terminated.reason] | join(" ")')" \
	"16Mi OOMKilled"
check_eq "no snapshot reported" "$(bfield oom snapshot.id)" ""

# ---- the agent's identity, and max_runtime through the Job's deadline ----
policy "0 0 1 1 *" 2MiB/s
manual deadline
env_wait 120 "the agent of the deadline run to be running" eval '[[ -n $(agent_pid) ]]' ||
	fail "the agent runs" "$(kc -n "$ns" get pods -o wide)"
pid=$(agent_pid)
st=$(cat "/proc/$pid/status" 2>/dev/null)
field() { awk -v k="$1:" '$1 == k { $1 = ""; sub(/^ /, ""); print }' <<<"$st"; }
check_eq "the agent runs as uid 0, gid 0, its only group root's own" \
	"$(field Uid) | $(field Gid) | $(field Groups)" "0 0 0 0 | 0 0 0 0 | 0"
# DAC_READ_SEARCH is capability 2 (bit 0x4).
check_eq "its capabilities: DAC_READ_SEARCH only (effective, permitted, bounding), none inheritable or ambient" \
	"$(field CapEff) $(field CapPrm) $(field CapBnd) $(field CapInh) $(field CapAmb)" \
	"0000000000000004 0000000000000004 0000000000000004 0000000000000000 0000000000000000"
job=$(bfield deadline jobName)
# Seccomp 2 is a filter (RuntimeDefault), 0 none: what the pod asks for is what it gets.
want_seccomp=0
[[ $(kc -n "$ns" get job "$job" -o json | jq -r '.spec.template.spec | (.securityContext.seccompProfile.type // .containers[0].securityContext.seccompProfile.type // "")') == RuntimeDefault ]] &&
	want_seccomp=2
check_eq "no new privileges; seccomp as the pod asks ($want_seccomp)" "$(field NoNewPrivs) $(field Seccomp)" "1 $want_seccomp"
started=$(date -d "$(env_get -n "$ns" "job/$job" '{.status.startTime}')" +%s)
kc -n "$ns" patch job "$job" --type=merge -p "{\"spec\":{\"activeDeadlineSeconds\":$(($(date +%s) - started + 2))}}" >/dev/null ||
	fail "the Job's activeDeadlineSeconds can be moved"
if env_wait 60 "the deadline Backup to fail" phase_is deadline Failed; then
	pass "at the Job's deadline the Backup fails"
else
	fail "at the Job's deadline the Backup fails" "$(kc -n "$ns" get backup deadline -o yaml)"
fi
check_eq "reason max_runtime" "$(bfield deadline reason)" "max_runtime"
check_contains "its message" "$(bfield deadline message)" "stopped at its maxRuntime of 1h; no snapshot was written"
env_wait 60 "the agent to be stopped" eval "[[ ! -d /proc/$pid ]]" && pass "the pod was stopped: its agent is gone" ||
	fail "the pod was stopped: its agent is gone" "$(cat "/proc/$pid/status" 2>&1 | head -n 3)"

# ---- deleting a running backup pod: SIGTERM reaches the agent; the next slot runs ----
policy "* * * * *" 2MiB/s
running_scheduled() {
	kc -n "$ns" get backups -o json | jq -r '[.items[] | select(.spec.trigger == "scheduled" and .status.phase == "Running")][0].metadata.name // empty'
}
# Up to a minute to the next slot, then the Job, its pod and the pause and agent
# containers on the node: on a loaded machine (the suite runs this beside the other
# scripts) the start alone has taken over 30 s, so the wait allows 150 s in all.
env_wait 150 "a scheduled Backup to run" eval '[[ -n $(running_scheduled) && -n $(agent_pid) ]]' ||
	fail "a scheduled Backup runs" "$(kc -n "$ns" get backups,jobs,pods -o wide 2>&1)" "$(tail -n 30 "$T_TMP/ctl.log")"
victim=$(running_scheduled)
vpod=$(pod_of "$(bfield "$victim" jobName)")
# Until its first pack is in the storage: the agent is in the middle of its upload.
packs() { find "$DATA/data" -type f 2>/dev/null | wc -l; }
env_wait 60 "the first pack to be uploaded" eval '[[ $(packs) -ge 1 ]]' ||
	fail "the agent uploads a pack" "$(ls -R "$DATA")"
kc -n "$ns" get pod "$vpod" -w -o json >"$T_TMP/watch.json" 2>/dev/null &
watch_pid=$!
t0=$(date +%s)
kc -n "$ns" delete pod "$vpod" --wait=false >/dev/null
# The pod's end goes through the kubelet (SIGTERM, the container's exit, the pod's phase),
# the Job controller (FailureTarget, then Failed once the pod is terminal) and the
# controller's Job watch: 1 to 3 s here; 54 s when the API server was restarted with
# etcd's history compacted just after the deletion (every watch broke and relisted, the
# Job controller's after its backoff), more on a loaded machine.
if env_wait 180 "the victim Backup to fail" phase_is "$victim" Failed; then
	pass "the Backup of the deleted pod fails ($(($(date +%s) - t0)) s after the deletion)"
else
	fail "the Backup of the deleted pod fails" "$(run_state "$victim")" \
		"$(grep -F "$victim" "$T_TMP/ctl.log" | tail -n 15)" "$(kc -n "$ns" get backup "$victim" -o yaml)"
fi
kill "$watch_pid" 2>/dev/null
watch_pid=
term=$(jq -c 'select(.status.containerStatuses[0].state.terminated != null) | .status.containerStatuses[0].state.terminated' "$T_TMP/watch.json" | tail -n 1)
check_eq "the agent exited 1 on SIGTERM (not killed)" "$(jq -r '.exitCode' <<<"$term")" 1
check_contains "it said why" "$(jq -r '.message' <<<"$term")" "stopped by a signal (SIGTERM or SIGINT) before the snapshot was written"
# (date -d "" is today's midnight: an empty or missing finishedAt must not read as one.)
fin=$(jq -r '.finishedAt // empty' <<<"$term" 2>/dev/null)
[[ -n $fin ]] && fin=$(date -d "$fin" +%s 2>/dev/null) || fin=0
if ((fin >= t0 - 1 && fin - t0 < 25)); then
	pass "it stopped $((fin - t0)) s after the deletion, within the 30 s grace"
else
	fail "it stopped within the grace period" "deleted at $t0, finished $fin"
fi
check_eq "the failed Backup reports no snapshot" "$(bfield "$victim" snapshot.id)" ""
policy "* * * * *"
next_ok() {
	kc -n "$ns" get backups -o json | jq -e --arg v "$(bfield "$victim" slotTime)" \
		'[.items[] | select(.spec.trigger == "scheduled" and .status.phase == "Succeeded" and .status.slotTime > $v)] | length > 0' >/dev/null
}
if env_wait 240 "a later slot's Backup to succeed" next_ok; then
	pass "the next slot runs and succeeds"
else
	fail "the next slot runs and succeeds" "$(kc -n "$ns" get backups -o json | jq -r '.items[] |
		"\(.metadata.name) \(.spec.trigger) \(.status.slotTime) \(.status.phase) \(.status.reason // "") \(.status.message // "" | .[:80])"' | tr '\n' ';')" \
		"$(kc -n "$ns" get backups,jobs,pods -o wide 2>&1)" "$(tail -n 30 "$T_TMP/ctl.log")"
fi
policy "0 0 1 1 *"
idle() { [[ -z $(kc -n "$ns" get pods -l lodestore.io/policy=limits -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -v '^Succeeded$\|^Failed$') ]]; }
env_wait 90 "the backups to end" idle || fail "the backups end" "$(kc -n "$ns" get pods)"

# ---- the capability removed: the same pod reads another user's 0400 file no more ----
# (uid 0 reads root's own 0600 file through its owner bits, capability or not; a file of
# another user needs DAC_READ_SEARCH.) The Job the controller made for the last good run,
# copied with its pod template (the CA bundle comes from its annotations) but without
# DAC_READ_SEARCH and without the labels that make it the controller's.
# Both files change, so the agent must read them (an unchanged file's chunks would come
# from the parent snapshot without opening it).
echo "another user's, changed" >"$data/theirs"
echo "root's own, changed" >"$data/secret"
good=$(kc -n "$ns" get backups -o json | jq -r '[.items[] | select(.status.phase == "Succeeded")][0].status.jobName')
kc -n "$ns" get job "$good" -o json | jq '{apiVersion, kind, metadata: {name: "nocap"},
	spec: {backoffLimit: 0, template: {metadata: {annotations: .spec.template.metadata.annotations},
	spec: (.spec.template.spec | .containers[0].securityContext.capabilities.add = [])}}}' >"$T_TMP/nocap.json"
kc -n "$ns" create -f "$T_TMP/nocap.json" >/dev/null
term_of() { env_get -n "$ns" pods -l "job-name=$1" "{.items[0].status.containerStatuses[0].state.terminated.$2}"; }
env_wait 120 "the Job without DAC_READ_SEARCH to end" eval '[[ -n $(term_of nocap exitCode) ]]' ||
	fail "the Job without DAC_READ_SEARCH ends"
msg=$(term_of nocap message)
check_eq "without DAC_READ_SEARCH: exit code 3, an incomplete snapshot" \
	"$(term_of nocap exitCode) $(jq -r '.snapshot.incomplete' <<<"$msg" 2>/dev/null)" "3 true"
check_eq "it names the one file it could not read, and why" \
	"$(jq -r '[.errors[] | "\(.path): \(.message)"] | join(", ")' <<<"$msg" 2>/dev/null | tr 'A-Z' 'a-z')" \
	"$(tr 'A-Z' 'a-z' <<<"$data/theirs"): permission denied"

# ---- GC on the node: the key from the Secret volume; what the failed runs left goes ----
"$LODE" snapshots --policy "$ns/limits" --output json >"$T_TMP/snaps.json" 2>&1
keep=$(jq -r '[.snapshots[].id] | sort | join(" ")' "$T_TMP/snaps.json")
[[ -n $keep ]] || fail "the successful run's snapshot is in the storage" "$(cat "$T_TMP/snaps.json")"
# Everything so far is a day old: past the GC window (maxRuntime 1h + 1h).
find "$DATA" -type f -exec touch -d '-1 day' {} +
kc -n "$ns" patch backuprepository main --type=merge -p '{"spec":{"gc":{"schedule":"* * * * *"}}}' >/dev/null
gcjob() { kc -n "$ns" get jobs -l lodestore.io/repository=main -o jsonpath='{.items[0].metadata.name}'; }
env_wait 90 "a GC Job's pod" eval '[[ -n $(gcjob) && -n $(pod_of "$(gcjob)") ]]' ||
	fail "a GC Job starts" "$(kc -n "$ns" get jobs,pods)" "$(tail -n 20 "$T_TMP/ctl.log")"
gjob=$(gcjob)
gpod=$(pod_of "$gjob")
kc -n "$ns" patch backuprepository main --type=merge -p '{"spec":{"gc":{"suspend":true}}}' >/dev/null
kc create --raw "/api/v1/namespaces/$ns/pods/$gpod/binding" -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "$gpod"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "$node"}}
EOF
gc_field() { env_get -n "$ns" backuprepository/main "{.status.gc.$1}"; }
env_wait 120 "status.gc to record $gjob" eval '[[ $(gc_field lastJob) == "$gjob" ]]' ||
	fail "the GC Job's result is recorded" "$(kc -n "$ns" get pod "$gpod" -o json | jq -c .status)"
check_eq "the GC Job Succeeded on the real node" "$(gc_field result): $(gc_field message)" "Succeeded: $(gc_field message)"
# The key file as the kubelet writes it for that pod: the GC Job's pod spec, on the same
# node, with a command that reports what it sees instead of lode gc.
kc -n "$ns" get job "$gjob" -o json | jq --arg node "$node" '{apiVersion, kind, metadata: {name: "keyprobe"},
	spec: {backoffLimit: 0, template: {metadata: {annotations: .spec.template.metadata.annotations},
	spec: (.spec.template.spec | .nodeName = $node | .containers[0].command = ["/bin/sh", "-c",
	"{ stat -L -c \"%a %u:%g\" \"$LODE_KEY_FILE\"; id -u; id -G; head -c 1 \"$LODE_KEY_FILE\" >/dev/null && echo readable; } >/dev/termination-log 2>&1"]
	| .containers[0].args = [])}}}' >"$T_TMP/keyprobe.json"
kc -n "$ns" create -f "$T_TMP/keyprobe.json" >/dev/null
env_wait 120 "the key probe to end" eval '[[ -n $(term_of keyprobe exitCode) ]]' || fail "the key probe ends"
check_eq "in the GC pod: the key file 0440 root:65532, the user 65532 in group 65532, the key readable" \
	"$(term_of keyprobe message | tr '\n' ' ')" "440 0:65532 65532 65532 readable "
check_eq "the GC pod ran as 65532 with fsGroup 65532, every capability dropped" \
	"$(kc -n "$ns" get pod "$gpod" -o json | jq -c '[.spec.securityContext.runAsUser, .spec.securityContext.fsGroup, .spec.containers[0].securityContext.capabilities.drop]')" \
	'[65532,65532,["ALL"]]'
if [[ $(gc_field packsDeleted) -ge 1 ]]; then
	pass "GC collected the pack the deleted run had uploaded ($(gc_field packsDeleted) packs, $(gc_field bytesFreed) bytes)"
else
	fail "GC collected the pack the deleted run had uploaded" "$(kc -n "$ns" get backuprepository main -o jsonpath='{.status.gc}')"
fi
out=$("$LODE" gc --dry-run --output json 2>&1)
check_eq "lode gc --dry-run afterwards: nothing more to delete" "$(jq -c '.packs.deleted' <<<"$out" 2>/dev/null)" 0
check_eq "no unfinished upload is left" \
	"$(env_s3 GET "/$S3_BUCKET?uploads&prefix=$ns/" && grep -c '<Upload>' <<<"$S3_BODY")" 0
check_eq "the snapshots are all there (the next slot's, the incomplete one)" \
	"$("$LODE" snapshots --policy "$ns/limits" --output json 2>&1 | jq -r '[.snapshots[].id] | sort | join(" ")')" "$keep"
out=$("$LODE" check --read-data 2>&1) && pass "lode check --read-data: no damage" || fail "lode check --read-data: no damage" "$out"

kill "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
ctl_pid=
kc delete namespace "$ns" --timeout=60s >/dev/null 2>&1 ||
	fail "the namespace and its pods go while the kubelet runs" "$(kc -n "$ns" get pods -o wide 2>&1)"
finish
