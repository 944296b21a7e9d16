#!/usr/bin/env bash
# The image, built from the Dockerfile (tests/env/build-image.sh), run by plain Jobs on
# two real nodes (containerd and a kubelet each, tests/env/real-nodes.sh): what the image
# carries (lode, its version, tzdata), and what a kubelet and runc give a pod — the
# command, env from a Secret (secretKeyRef and envFrom), hostPath mounts read-only, the
# image's user or the pod's, capabilities, a read-only root, exit codes, the
# termination message, a missing Secret, a projected ServiceAccount token, the Job's
# deadline and a pod's deletion. Each node has its own /srv (its mount namespace), so
# the same hostPath shows each pod its own node's files. Every wait is bounded.
# Run it as  tests/env/with-cluster.sh bash tests/e2e/test_image.sh
# (it starts two real nodes unless the environment has them: LODE_REAL_NODES=2).
set -u
# shellcheck source=tests/env/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../env/lib.sh"

LODE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ns=image-$(openssl rand -hex 3)
IMAGE=lodestore.invalid/agent:e2e
node=()
# The node's files for this test: its /srv/$ns, seen from this machine.
node_dir() { echo "$(env_real_node_root "${node[$1]}")/srv/$ns"; }
cleanup() {
	# While the kubelets run, so they confirm their pods' deletion and the namespace goes.
	kc delete namespace "$ns" --timeout=60s >/dev/null 2>&1
	for i in "${!node[@]}"; do rm -rf "$(node_dir "$i")"; done
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
node=("${node[@]:0:2}")
check_eq "two real nodes are Ready" \
	"$(for n in "${node[@]}"; do env_get node "$n" '{.status.conditions[?(@.type=="Ready")].status} '; done)" \
	"True True "
IMAGE_VERSION=$(cat "$(bash "$ENV_HERE/build-image.sh")/version")
check_eq "the image carries the work tree's version" "$IMAGE_VERSION" \
	"$(git -C "$LODE_ROOT" describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)"

kc create namespace "$ns" >/dev/null

# Each node's /srv is its own: different files on each.
for i in 0 1; do
	d=$(node_dir "$i")
	mkdir -p "$d/data"
	echo "file of node $i" >"$d/data/hello"
	# Readable only by another user: only CAP_DAC_READ_SEARCH gets through.
	echo "private of node $i" >"$d/data/private"
	chown 4242:4242 "$d/data/private"
	chmod 0400 "$d/data/private"
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
          image: $IMAGE
          command: [sh, -c, $(jq -Rn --arg s "$script" '$s')]
$ctrx
EOF
}
term() { # JOB FIELD: a field of the terminated state of the Job's container
	env_get -n "$ns" pods -l "job-name=$1" "{.items[0].status.containerStatuses[0].state.terminated.$2}"
}

# --- the image's contents and the version passed in ------------------------------
job version "${node[0]}" 'lode version >/dev/termination-log && lode version --output json | grep -q "\"tzdata\""'
env_wait_job "$ns" version Complete 60 && pass "lode version runs in the image" ||
	fail "lode version runs in the image" "$(kc -n "$ns" get pods -o yaml | tail -n 20)"
check_contains "the image's lode reports the version passed in" "$(term version message)" "lode $IMAGE_VERSION"
check_contains "the image carries the tz database" "$(term version message)" "/usr/share/zoneinfo"
check_eq "the exit code reaches the pod status" "$(term version exitCode)" 0

# --- hostPath read-only, the image's user, a read-only root --------------------------
mounts='      volumes:
        - {name: data, hostPath: {path: /srv/'"$ns"'/data}}'
ro='          volumeMounts:
            - {name: data, mountPath: /host/srv/data, readOnly: true}
          securityContext: {readOnlyRootFilesystem: true}'
for i in 0 1; do
	job "read-$i" "${node[$i]}" 'exec >/dev/termination-log; cat /host/srv/data/hello; id -u
		touch /host/srv/data/new 2>/dev/null && echo host-rw || echo host-ro
		touch /newfile 2>/dev/null && echo root-rw || echo root-ro
		cat /host/srv/data/private 2>/dev/null || echo private-denied' "$mounts" "$ro"
done
for i in 0 1; do
	env_wait_job "$ns" "read-$i" Complete 60 || fail "read-$i completes" "$(kc -n "$ns" get pods -o yaml | tail -n 20)"
	msg=$(term "read-$i" message)
	check_eq "node $i's pod reads its own node's file, as the image's user 65532, read-only" "$msg" \
		"file of node $i
65532
host-ro
root-ro
private-denied"
done
check_eq "the mount was read-only: nothing was written on the node" \
	"$(ls "$(node_dir 0)/data")" "hello
private"

# --- root with only CAP_DAC_READ_SEARCH, as the backup Job runs ---------------------------
caps='          volumeMounts:
            - {name: data, mountPath: /host/srv/data, readOnly: true}
          securityContext:
            runAsUser: 0
            readOnlyRootFilesystem: true
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL], add: [DAC_READ_SEARCH]}'
job caps "${node[1]}" 'exec >/dev/termination-log; id -u; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status
	cat /host/srv/data/private; touch /host/srv/data/x 2>/dev/null || echo host-ro' "$mounts" "$caps"
env_wait_job "$ns" caps Complete 60 || fail "caps completes"
check_eq "uid 0 with only DAC_READ_SEARCH reads a file another user owns, and nothing more" \
	"$(term caps message | tr '\t' ' ')" "0
CapEff: 0000000000000004
NoNewPrivs: 1
private of node 1
host-ro"
job caps-nonroot "${node[1]}" 'exec >/dev/termination-log; grep ^CapEff /proc/self/status' "$mounts" \
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
job env "${node[0]}" 'exec >/dev/termination-log; echo "$KEY|$BOTH|$S_other|$S_AWS_ACCESS_KEY_ID"' "" "$envx"
env_wait_job "$ns" env Complete 60 || fail "env completes"
check_eq "env: secretKeyRef, fieldRef, \$(VAR) and envFrom with a prefix" "$(term env message)" \
	"AKIDTEST|AKIDTEST@${node[0]}|with spaces|AKIDTEST"

job env-missing "${node[0]}" 'echo "$X" >/dev/termination-log' "" \
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
# The ServiceAccount admission plugin is off here (docs/testing.md), so the pod asks for
# what it would add: the projected token, CA and namespace; the kubelet gets the token
# from the TokenRequest API. On the host's network, the API server is 127.0.0.1.
kc -n "$ns" create configmap api-ca --from-file=ca.crt="$ENV_DIR/pki/ca.crt" >/dev/null
sa_pod="      hostNetwork: true
      serviceAccountName: default
      volumes:
        - name: sa
          projected:
            sources:
              - serviceAccountToken: {path: token, expirationSeconds: 3600}
              - configMap: {name: api-ca, items: [{key: ca.crt, path: ca.crt}]}
              - downwardAPI: {items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]}"
sa_ctr="          volumeMounts:
            - {name: sa, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}
          env:
            - {name: KUBERNETES_SERVICE_HOST, value: 127.0.0.1}
            - {name: KUBERNETES_SERVICE_PORT, value: \"$APISERVER_PORT\"}"
job in-cluster "${node[0]}" 'exec >/dev/termination-log 2>&1; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo
	lode status -n "$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)" >/dev/null && echo api-ok' \
	"$sa_pod" "$sa_ctr"
env_wait_job "$ns" in-cluster Complete 60 || fail "in-cluster completes" "$(term in-cluster message)"
check_eq "lode in the image reaches the API server with the pod's ServiceAccount token" \
	"$(term in-cluster message)" "$ns
api-ok"

# --- failure, deadline, deletion --------------------------------------------------------
job fails "${node[1]}" 'echo broke >&2; exit 7' "" '          terminationMessagePolicy: FallbackToLogsOnError'
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
      nodeName: ${node[0]}
      restartPolicy: Never
      terminationGracePeriodSeconds: 2
      containers:
        - {name: main, image: $IMAGE, command: [sleep, "$marker"]}
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
  nodeName: ${node[1]}
  restartPolicy: Never
  containers:
    - {name: main, image: $IMAGE, command: [sh, -c, "trap 'exit 0' TERM; sleep $marker & wait"]}
EOF
env_wait 30 "the pod's process to run" sleeping || fail "the pod's process runs"
check_eq "a running pod is Running" "$(env_get -n "$ns" pod deleted '{.status.phase}')" Running
kc -n "$ns" delete pod deleted --timeout 30s >/dev/null && pass "a deleted pod goes away" ||
	fail "a deleted pod goes away"
# sh exits on TERM; its child sleep is in the same process group, which got TERM too.
env_wait 30 "the process to be killed" eval '! sleeping' && pass "a deleted pod's processes are killed" ||
	fail "a deleted pod's processes are killed" "$(pgrep -af "sleep $marker")"

# The pods' mounts (roots, Secret volumes) are in the nodes' mount namespaces only.
check_eq "no mount of a pod reaches this machine's mount table" \
	"$(awk -v d="$ENV_DIR/nodes/" 'index($5, d) == 1' /proc/self/mountinfo | wc -l)" 0
finish
