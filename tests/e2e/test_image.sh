#!/usr/bin/env bash
# The image, built from the Dockerfile (tests/env/build-image.sh), run by plain Jobs on
# nodes whose kubelet is tests/env/chroot-kubelet.py: what the image carries (lode, its
# version, tzdata), and what the stand-in gives a pod as a kubelet and runtime would —
# the command, env from a Secret (secretKeyRef and envFrom), hostPath mounts read-only,
# the image's user or the pod's, capabilities, a read-only root, exit codes, the
# termination message, a missing Secret, the Job's deadline and a pod's deletion.
# Every wait is bounded.
set -u
# shellcheck source=tests/env/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../env/lib.sh"

ns=image-$(openssl rand -hex 3)
prefix=img$(openssl rand -hex 2)
cleanup() {
	kc delete namespace "$ns" --wait=false >/dev/null 2>&1
	env_delete_nodes "$prefix" >/dev/null 2>&1
	env_chroot_kubelet_stop
	rm -rf "$T_TMP"
}
trap cleanup EXIT

if ! env_chroot_kubelet_start; then
	fail "the image builds and chroot-kubelet starts" "see $ENV_LOGS/chroot-kubelet.log and ~/.cache/lodestore/logs"
	finish
	exit 1
fi
pass "the image builds (or is cached) and chroot-kubelet starts"
check_eq "the image carries the work tree's version" "$IMAGE_VERSION" \
	"$(git -C "$LODE_ROOT" describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)"

kc create namespace "$ns" >/dev/null
env_create_nodes 2 "$prefix" lodestore.io/chroot-kubelet=true
check_eq "chroot-kubelet makes its two nodes Ready" \
	"$(kc get nodes -l "lodestore.io/env-nodes=$prefix" -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}')" \
	"True True "

# Each node's "/" is its own directory: different files on each.
for i in 0 1; do
	d=$(env_node_dir "$prefix-$i")
	mkdir -p "$d/srv/data"
	echo "file of node $i" >"$d/srv/data/hello"
	# Readable only by another user: only CAP_DAC_READ_SEARCH gets through.
	echo "private of node $i" >"$d/srv/data/private"
	chown 4242:4242 "$d/srv/data/private"
	chmod 0400 "$d/srv/data/private"
done

# job NAME NODE SCRIPT [POD-SPEC-YAML-LINES] [CONTAINER-YAML-LINES]: a Job of one pod
# that runs sh -c SCRIPT in the image on NODE.
job() {
	local name=$1 node=$2 script=$3 podx=${4:-} ctrx=${5:-}
	kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $name}
spec:
  backoffLimit: 0
  template:
    spec:
      nodeName: $node
      restartPolicy: Never
$podx
      containers:
        - name: main
          image: lodestore.invalid/lodestore:test
          command: [sh, -c, $(jq -Rn --arg s "$script" '$s')]
$ctrx
EOF
}
term() { # JOB FIELD: a field of the terminated state of the Job's container
	env_get -n "$ns" pods -l "job-name=$1" "{.items[0].status.containerStatuses[0].state.terminated.$2}"
}

# --- the image's contents and the version passed in ------------------------------
job version "$prefix-0" 'lode version >/dev/termination-log && lode version --output json | grep -q "\"tzdata\""'
env_wait_job "$ns" version Complete 60 && pass "lode version runs in the image" ||
	fail "lode version runs in the image" "$(tail -n 5 "$ENV_LOGS/chroot-kubelet.log")"
check_contains "the image's lode reports the version passed in" "$(term version message)" "lode $IMAGE_VERSION"
check_contains "the image carries the tz database" "$(term version message)" "/usr/share/zoneinfo"
check_eq "the exit code reaches the pod status" "$(term version exitCode)" 0

# --- hostPath read-only, the image's user, a read-only root --------------------------
mounts='      volumes:
        - {name: data, hostPath: {path: /srv/data}}'
ro='          volumeMounts:
            - {name: data, mountPath: /host/srv/data, readOnly: true}
          securityContext: {readOnlyRootFilesystem: true}'
for i in 0 1; do
	job "read-$i" "$prefix-$i" 'exec >/dev/termination-log; cat /host/srv/data/hello; id -u
		touch /host/srv/data/new 2>/dev/null && echo host-rw || echo host-ro
		touch /newfile 2>/dev/null && echo root-rw || echo root-ro
		cat /host/srv/data/private 2>/dev/null || echo private-denied' "$mounts" "$ro"
done
for i in 0 1; do
	env_wait_job "$ns" "read-$i" Complete 60 || fail "read-$i completes" "$(tail -n 5 "$ENV_LOGS/chroot-kubelet.log")"
	msg=$(term "read-$i" message)
	check_eq "node $i's pod reads its own node's file, as the image's user 65532, read-only" "$msg" \
		"file of node $i
65532
host-ro
root-ro
private-denied"
done
check_eq "the mount was read-only: nothing was written on the node" \
	"$(ls "$(env_node_dir "$prefix-0")/srv/data")" "hello
private"

# --- root with only CAP_DAC_READ_SEARCH, as the backup Job runs ---------------------------
caps='          volumeMounts:
            - {name: data, mountPath: /host/srv/data, readOnly: true}
          securityContext:
            runAsUser: 0
            readOnlyRootFilesystem: true
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL], add: [DAC_READ_SEARCH]}'
job caps "$prefix-1" 'exec >/dev/termination-log; id -u; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status
	cat /host/srv/data/private; touch /host/srv/data/x 2>/dev/null || echo host-ro' "$mounts" "$caps"
env_wait_job "$ns" caps Complete 60 || fail "caps completes"
check_eq "uid 0 with only DAC_READ_SEARCH reads a file another user owns, and nothing more" \
	"$(term caps message | tr '\t' ' ')" "0
CapEff: 0000000000000004
NoNewPrivs: 1
private of node 1
host-ro"
job caps-nonroot "$prefix-1" 'exec >/dev/termination-log; grep ^CapEff /proc/self/status' "$mounts" \
	"${caps/runAsUser: 0/runAsUser: 1000}"
env_wait_job "$ns" caps-nonroot Complete 60 || fail "caps-nonroot completes"
check_eq "a non-root user loses added capabilities at exec, as in a real container" \
	"$(term caps-nonroot message | tr '\t' ' ')" "CapEff: 0000000000000000"

# --- env from a Secret: secretKeyRef and envFrom; $(VAR) expansion; fieldRef ------------
kc -n "$ns" create secret generic creds --from-literal=AWS_ACCESS_KEY_ID=AKIDTEST \
	--from-literal=other='with spaces' >/dev/null
envx='          env:
            - {name: KEY, valueFrom: {secretKeyRef: {name: creds, key: AWS_ACCESS_KEY_ID}}}
            - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
            - {name: BOTH, value: "$(KEY)@$(NODE)"}
          envFrom:
            - {prefix: S_, secretRef: {name: creds}}'
job env "$prefix-0" 'exec >/dev/termination-log; echo "$KEY|$BOTH|$S_other|$S_AWS_ACCESS_KEY_ID"' "" "$envx"
env_wait_job "$ns" env Complete 60 || fail "env completes"
check_eq "env: secretKeyRef, fieldRef, \$(VAR) and envFrom with a prefix" "$(term env message)" \
	"AKIDTEST|AKIDTEST@$prefix-0|with spaces|AKIDTEST"

job env-missing "$prefix-0" 'echo "$X" >/dev/termination-log' "" \
	'          env:
            - {name: X, valueFrom: {secretKeyRef: {name: later, key: k}}}'
waiting() {
	[[ $(env_get -n "$ns" pods -l job-name=env-missing '{.items[0].status.containerStatuses[0].state.waiting.reason}') == \
		CreateContainerConfigError ]]
}
env_wait 30 "a pod with a missing Secret to wait" waiting &&
	pass "a missing Secret keeps the pod waiting (CreateContainerConfigError)" ||
	fail "a missing Secret keeps the pod waiting"
kc -n "$ns" create secret generic later --from-literal=k=arrived >/dev/null
env_wait_job "$ns" env-missing Complete 60 || fail "env-missing completes once the Secret exists"
check_eq "once the Secret exists the pod runs with it" "$(term env-missing message)" "arrived"

# --- the pod's service account reaches the API server, as lode backup --policy NS/NAME needs
kc apply --server-side -f "$LODE_ROOT/crd/" >/dev/null
kc wait --for condition=established --timeout=30s crd/backuppolicies.lodestore.io >/dev/null
kc -n "$ns" create serviceaccount default >/dev/null
kc -n "$ns" create role read-policies --verb=get,list --resource=backuppolicies.lodestore.io >/dev/null
kc -n "$ns" create rolebinding read-policies --role=read-policies --serviceaccount="$ns:default" >/dev/null
job in-cluster "$prefix-0" 'exec >/dev/termination-log 2>&1; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo
	lode status -n "$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)" >/dev/null && echo api-ok'
env_wait_job "$ns" in-cluster Complete 60 || fail "in-cluster completes" "$(term in-cluster message)"
check_eq "lode in the image reaches the API server with the pod's ServiceAccount token" \
	"$(term in-cluster message)" "$ns
api-ok"

# --- failure, deadline, deletion --------------------------------------------------------
job fails "$prefix-1" 'echo broke >&2; exit 7' "" '          terminationMessagePolicy: FallbackToLogsOnError'
env_wait_job "$ns" fails Failed 60 || fail "fails fails"
check_eq "a failing command: exit code in the pod status" "$(term fails exitCode)" 7
check_eq "FallbackToLogsOnError: the log's tail is the message" "$(term fails message)" "broke"
check_eq "the pod is Failed" "$(env_get -n "$ns" pods -l job-name=fails '{.items[0].status.phase}')" Failed

marker=$((100000 + RANDOM))
sleeping() { pgrep -f "sleep $marker" >/dev/null; }
kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: deadline}
spec:
  backoffLimit: 0
  activeDeadlineSeconds: 4
  template:
    spec:
      nodeName: $prefix-0
      restartPolicy: Never
      terminationGracePeriodSeconds: 2
      containers:
        - {name: main, image: x, command: [sleep, "$marker"]}
EOF
env_wait 30 "the deadline pod's process to run" sleeping && pass "the pod's process runs" ||
	fail "the pod's process runs"
env_wait_job "$ns" deadline Failed 60 || fail "the deadline Job fails"
check_eq "the Job's deadline fails it" \
	"$(env_get -n "$ns" job deadline '{.status.conditions[?(@.type=="Failed")].reason}')" DeadlineExceeded
env_wait 30 "the process to be killed" eval '! sleeping' && pass "its process is killed" ||
	fail "its process is killed" "$(pgrep -af "sleep $marker")"
gone() { [[ -z $(kc -n "$ns" get pods -l "job-name=$1" -o name) ]]; }
env_wait 30 "the deadline pod to be deleted" gone deadline && pass "the pod is deleted" || fail "the pod is deleted"

marker=$((200000 + RANDOM))
kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: deleted}
spec:
  nodeName: $prefix-1
  restartPolicy: Never
  containers:
    - {name: main, image: x, command: [sh, -c, "trap 'exit 0' TERM; sleep $marker & wait"]}
EOF
env_wait 30 "the pod's process to run" sleeping || fail "the pod's process runs"
check_eq "a running pod is Running" "$(env_get -n "$ns" pod deleted '{.status.phase}')" Running
kc -n "$ns" delete pod deleted --timeout 30s >/dev/null && pass "a deleted pod goes away" ||
	fail "a deleted pod goes away"
# sh exits on TERM; its child sleep is in the same process group, which got TERM too.
env_wait 30 "the process to be killed" eval '! sleeping' && pass "a deleted pod's processes are killed" ||
	fail "a deleted pod's processes are killed" "$(pgrep -af "sleep $marker")"

leftover=$(grep -c "$CHROOT_KUBELET_STATE" /proc/mounts)
check_eq "no mount of a pod reaches the host" "$leftover" 0
finish
