#!/usr/bin/env bash
# Brings up the local test environment, every listener on 127.0.0.1 at a port
# chosen free at start:
#   etcd                      (state store)
#   kube-apiserver            TLS from a throwaway CA, static tokens for "admin"
#                             (system:masters) and "operator" (RBAC from
#                             operator-rbac.yaml), RBAC authorization
#   kube-controller-manager   job, garbage-collector, namespace, ttl-after-finished
#   kwok                      fake nodes and pod lifecycles (Stage objects), for every
#                             node not labelled lodestore.io/real-node
#   real nodes (optional)     LODE_REAL_NODES=N: N nodes with containerd and a kubelet
#                             each (real-nodes.sh), started last
#   versitygw                 S3 over TLS with SigV4, posix backend, one bucket, keep-alive
# and writes state.env, kubeconfig and s3.env under ${LODE_ENV_DIR:-/tmp/lodestore-env}
# (common.sh describes the layout). A second run finds a healthy environment and
# reuses it; an unhealthy one is refused with the command that clears it.
# Before returning it runs a Job on a KWOK node to completion and deletes it in
# the foreground, which proves that the Job controller, KWOK and the garbage
# collector work; no trace of that probe is left.
#
# Environment: LODE_ENV_DIR, LODE_CACHE (binary cache), LODE_ENV_TIMEOUT
# (seconds allowed for each readiness wait, default 120), LODE_REAL_NODES (default 0).
set -euo pipefail
set +m # no job control: a daemon started with & must not lead a process group (setsid would fork)
# shellcheck source=tests/env/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

timeout_s=${LODE_ENV_TIMEOUT:-120}

# Every recorded kubelet and containerd of the real nodes runs (true when there are none).
real_nodes_alive() {
	local i=0 name v
	for name in ${REAL_NODES:-}; do
		v=REAL_NODE_${i}_KUBELET_PID
		env_pid_is "${!v}" "$REAL_NODE_KUBELET_BIN" || return 1
		v=REAL_NODE_${i}_CONTAINERD_PID
		env_pid_is "${!v}" "$REAL_NODE_CONTAINERD_BIN" || return 1
		i=$((i + 1))
	done
}

# healthy: every recorded process alive and answering. Used to decide reuse.
healthy() {
	# shellcheck disable=SC1090
	(
		source "$ENV_STATE"
		env_pid_is "$ETCD_PID" "$ETCD_BIN" &&
			env_pid_is "$APISERVER_PID" "$APISERVER_BIN" &&
			env_pid_is "$KCM_PID" "$KCM_BIN" &&
			env_pid_is "$KWOK_PID" "$KWOK_BIN" &&
			env_pid_is "$S3_PID" "$S3_BIN" &&
			real_nodes_alive &&
			curl -sf --max-time 5 --cacert "$ENV_DIR/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
				"https://127.0.0.1:$APISERVER_PORT/readyz" >/dev/null &&
			curl -s --max-time 5 -o /dev/null --cacert "$ENV_DIR/pki/ca.crt" "https://127.0.0.1:$S3_PORT/"
	)
}

if [[ -f $ENV_STATE ]]; then
	if healthy; then
		env_log "cluster-up: a healthy environment already runs in $ENV_DIR; reusing it"
		exit 0
	fi
	env_die "cluster-up: $ENV_DIR holds an environment that is not healthy; run 'make cluster-down' (tests/env/cluster-down.sh) first"
fi

start_time=$SECONDS
bash "$ENV_HERE/build-tools.sh"
k8s_dir=$(env_tool_dir k8s)
etcd_dir=$(env_tool_dir etcd)
kwok_dir=$(env_tool_dir kwok)
s3_dir=$(env_tool_dir versitygw)
# KWOK's stage definitions are read from its module in the Go module cache;
# the download is a no-op when the module is there (it is after a build, but
# the binary cache may outlive a cleaned module cache).
kwok_src=$(cd "$ENV_HERE/tools/kwok" && export GOTOOLCHAIN=local GOFLAGS=-mod=readonly &&
	go mod download sigs.k8s.io/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
[[ -d $kwok_src/kustomize/stage ]] || env_die "cluster-up: KWOK's stages are not in the module cache at $kwok_src"

# A directory without state.env is a leftover of a failed start or of
# cluster-down (which keeps logs): its processes are gone, so it is replaced.
rm -rf "$ENV_DIR"
mkdir -p "$ENV_LOGS" "$ENV_DIR/pki" "$ENV_DIR/etcd" "$ENV_DIR/s3/data" "$ENV_DIR/s3/meta" "$ENV_DIR/kwok"
chmod 700 "$ENV_DIR"
exec 2> >(tee -a "$ENV_LOGS/cluster-up.log" >&2)

# From here on a failure tears down whatever started, so nothing leaks.
up_ok=0
on_exit() {
	if [[ $up_ok != 1 ]]; then
		env_log "cluster-up failed; logs are in $ENV_LOGS; stopping what started"
		bash "$ENV_HERE/cluster-down.sh" || true
	fi
}
trap on_exit EXIT

record() { # KEY VALUE: appends to state.env, quoted for sh
	printf '%s=%q\n' "$1" "$2" >>"$ENV_STATE"
}

# --- identities, certificates, tokens ------------------------------------
pki=$ENV_DIR/pki
openssl_q() { openssl "$@" 2>>"$ENV_LOGS/openssl.log"; }
# P-256 keys: generated in milliseconds where RSA takes a noticeable fraction
# of a second each on a loaded machine.
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)
openssl_q req -x509 "${ec[@]}" -nodes -days 7 -subj /CN=lodestore-test-ca \
	-keyout "$pki/ca.key" -out "$pki/ca.crt"
server_cert() { # NAME CN
	openssl_q req "${ec[@]}" -nodes -subj "/CN=$2" -keyout "$pki/$1.key" -out "$pki/$1.csr"
	openssl_q x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 7 \
		-extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n') \
		-out "$pki/$1.crt"
}
server_cert apiserver kube-apiserver
server_cert s3 versitygw
openssl_q ecparam -name prime256v1 -genkey -noout -out "$pki/sa.key"
openssl_q ec -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
admin_token=$(openssl rand -hex 24)
operator_token=$(openssl rand -hex 24)
s3_access=lodeaccess$(openssl rand -hex 4)
s3_secret=$(openssl rand -hex 20)
printf '%s,admin,admin-uid,"system:masters"\n%s,operator,operator-uid\n' \
	"$admin_token" "$operator_token" >"$pki/tokens.csv"
chmod 600 "$pki"/*.key "$pki/tokens.csv"

read -r etcd_port etcd_peer_port api_port s3_port <<<"$(env_free_ports 4)"

record LODE_ENV_DIR "$ENV_DIR"
record ETCD_PORT "$etcd_port"
record ETCD_PEER_PORT "$etcd_peer_port"
record APISERVER_PORT "$api_port"
record S3_PORT "$s3_port"
record ETCD_BIN "$etcd_dir/etcd"
record APISERVER_BIN "$k8s_dir/kube-apiserver"
record KCM_BIN "$k8s_dir/kube-controller-manager"
record KUBECTL "$k8s_dir/kubectl"
record KWOK_BIN "$kwok_dir/kwok"
record S3_BIN "$s3_dir/versitygw"
record KWOK_SRC "$kwok_src"
record ADMIN_TOKEN "$admin_token"
record OPERATOR_TOKEN "$operator_token"
record KUBECONFIG "$ENV_DIR/kubeconfig"
record S3_ENV "$ENV_DIR/s3.env"

# start NAME BIN ARGS...: runs a daemon in its own session (so a terminal's
# Ctrl-C or the end of make does not reach it), logs to logs/NAME.log and
# records its PID under NAME_PID.
start() {
	local name=$1 var=$2 bin=$3 pid
	shift 3
	setsid "$bin" "$@" </dev/null >"$ENV_LOGS/$name.log" 2>&1 &
	pid=$!
	record "${var}_PID" "$pid"
	env_log "started $name (pid $pid)"
}

alive_or_die() { # VAR NAME
	local pid
	pid=$(sed -n "s/^$1_PID=//p" "$ENV_STATE")
	kill -0 "$pid" 2>/dev/null || env_die "$2 exited; last lines of $ENV_LOGS/$2.log:
$(tail -n 15 "$ENV_LOGS/$2.log")"
}

# wait_for NAME VAR WHAT CMD...: the readiness wait, failing early if the
# process died (its log then says why).
wait_for() {
	local name=$1 var=$2 what=$3 deadline
	shift 3
	deadline=$((SECONDS + timeout_s))
	until "$@" >/dev/null 2>&1; do
		alive_or_die "$var" "$name"
		((SECONDS < deadline)) || env_die "$name not ready after ${timeout_s}s ($what); see $ENV_LOGS/$name.log"
		sleep 0.2
	done
	env_log "$name ready ($what)"
}

# --- etcd and versitygw (independent of each other: started together) -------
start etcd ETCD "$etcd_dir/etcd" \
	--name lodestore-test --data-dir "$ENV_DIR/etcd" \
	--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
	--listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
	--initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
	--initial-cluster "lodestore-test=http://127.0.0.1:$etcd_peer_port" \
	--unsafe-no-fsync --log-level warn

cat >"$ENV_DIR/s3.env" <<EOF
S3_ENDPOINT=https://127.0.0.1:$s3_port
S3_REGION=us-east-1
S3_BUCKET=lodestore-test
S3_ACCESS_KEY=$s3_access
S3_SECRET_KEY=$s3_secret
S3_CA_FILE=$pki/ca.crt
EOF
chmod 600 "$ENV_DIR/s3.env"
# --keep-alive: versitygw closes every connection by default, which AWS S3, MinIO and Ceph
# RGW do not; without it every request is a new TCP and TLS connection, which hides
# whether the clients reuse theirs (tests/e2e/s3/s3_e2e_reuse.c) and makes the
# controller's benchmark pay a handshake per request (bench/controller).
ROOT_ACCESS_KEY=$s3_access ROOT_SECRET_KEY=$s3_secret start versitygw S3 "$s3_dir/versitygw" \
	--port "127.0.0.1:$s3_port" --cert "$pki/s3.crt" --key "$pki/s3.key" --region us-east-1 --keep-alive \
	posix --sidecar "$ENV_DIR/s3/meta" "$ENV_DIR/s3/data"

etcd_health() { curl -sf --max-time 2 "http://127.0.0.1:$etcd_port/health" | grep -q '"health":"true"'; }
wait_for etcd ETCD "/health" etcd_health

# --- kube-apiserver ----------------------------------------------------------
start kube-apiserver APISERVER "$k8s_dir/kube-apiserver" \
	--etcd-servers "http://127.0.0.1:$etcd_port" \
	--bind-address 127.0.0.1 --secure-port "$api_port" --advertise-address 127.0.0.1 \
	--endpoint-reconciler-type none \
	--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
	--client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" \
	--authorization-mode RBAC \
	--service-account-issuer "https://127.0.0.1:$api_port" \
	--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
	--service-cluster-ip-range 10.0.0.0/24 \
	--disable-admission-plugins ServiceAccount --allow-privileged=true \
	--enable-priority-and-fairness=false --profiling=false

# The S3 side is checked while the apiserver starts.
s3_req() { # METHOD PATH: prints the HTTP status of a signed request without a body
	# curl 7.88 signs but does not send x-amz-content-sha256, which S3 requires;
	# given as a header, curl signs it too. This is the SHA-256 of nothing.
	curl -s --max-time 5 -o /dev/null -w '%{http_code}' --cacert "$pki/ca.crt" \
		-H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
		--aws-sigv4 "aws:amz:us-east-1:s3" --user "$s3_access:$s3_secret" -X "$1" "https://127.0.0.1:$s3_port$2"
}
s3_ready() { [[ $(s3_req GET /) == 200 ]]; }
wait_for versitygw S3 "signed ListBuckets" s3_ready
code=$(s3_req PUT /lodestore-test)
[[ $code == 200 ]] || env_die "creating bucket lodestore-test answered HTTP $code; see $ENV_LOGS/versitygw.log"

api_ready() {
	curl -sf --max-time 5 --cacert "$pki/ca.crt" -H "Authorization: Bearer $admin_token" \
		"https://127.0.0.1:$api_port/readyz" | grep -qx ok
}
wait_for kube-apiserver APISERVER "/readyz" api_ready

# --- kubeconfig for tests --------------------------------------------------------
cat >"$ENV_DIR/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: lodestore-test
    cluster:
      server: https://127.0.0.1:$api_port
      certificate-authority: $pki/ca.crt
users:
  - name: admin
    user:
      token: $admin_token
  - name: operator
    user:
      token: $operator_token
contexts:
  - name: admin
    context: {cluster: lodestore-test, user: admin}
  - name: operator
    context: {cluster: lodestore-test, user: operator}
current-context: admin
EOF
chmod 600 "$ENV_DIR/kubeconfig"
kc() {
	"$k8s_dir/kubectl" --kubeconfig "$ENV_DIR/kubeconfig" --cache-dir "$ENV_DIR/kube-cache" \
		--request-timeout 30s "$@"
}

# The controller manager needs nothing more than a ready apiserver.
start kube-controller-manager KCM "$k8s_dir/kube-controller-manager" \
	--kubeconfig "$ENV_DIR/kubeconfig" --leader-elect=false --secure-port 0 \
	--controllers job-controller,garbage-collector-controller,namespace-controller,ttl-after-finished-controller

# KWOK reads its stages as Stage objects (--enable-crds=Stage), so a test can
# add one while the cluster runs (lib.sh: env_kwok_result). The CRD and KWOK's
# own node and pod stages come from the kwok module in the Go module cache;
# lodestore's stages make a pod labelled lodestore.io/kwok-result=fail or
# =hang fail or hang.
{
	for f in node/fast/node-initialize.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
		cat "$kwok_src/kustomize/stage/$f"
		echo ---
	done
	env_kwok_stage lodestore-result-fail fail lodestore.io/kwok-result=fail
	echo ---
	env_kwok_stage lodestore-result-hang hang lodestore.io/kwok-result=hang
} >"$ENV_DIR/kwok/stages.yaml"
kc apply --server-side -f "$ENV_HERE/operator-rbac.yaml" \
	-f "$kwok_src/kustomize/crd/bases/kwok.x-k8s.io_stages.yaml" >>"$ENV_LOGS/cluster-up.log"
kc wait --for condition=Established --timeout "${timeout_s}s" crd/stages.kwok.x-k8s.io >>"$ENV_LOGS/cluster-up.log"
kc apply --server-side -f "$ENV_DIR/kwok/stages.yaml" >>"$ENV_LOGS/cluster-up.log"
# KWOK_WORKDIR keeps it from reading a user's ~/.kwok/kwok.yaml. KWOK manages every
# node but the real nodes, labelled lodestore.io/real-node (and so every pod but theirs):
# their own kubelets run those. KWOK's label selector never matches a node without any
# label, so every node a test makes carries one.
KWOK_WORKDIR=$ENV_DIR/kwok start kwok KWOK "$kwok_dir/kwok" \
	--kubeconfig "$ENV_DIR/kubeconfig" \
	--manage-nodes-with-label-selector '!lodestore.io/real-node' \
	--enable-crds Stage \
	--cidr 10.0.0.1/24 --node-ip 10.0.0.1

# --- the probe: a Job on a KWOK node runs to completion ----------------------------
kc apply -f - >>"$ENV_LOGS/cluster-up.log" <<EOF
apiVersion: v1
kind: Node
metadata:
  name: lodestore-env-probe
  labels: {kubernetes.io/hostname: lodestore-env-probe}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: lodestore-env-probe
  namespace: default
spec:
  backoffLimit: 0
  template:
    spec:
      nodeName: lodestore-env-probe
      restartPolicy: Never
      containers:
        - name: probe
          image: lodestore.invalid/probe
EOF
job_complete() {
	[[ $(kc get job lodestore-env-probe -o 'jsonpath={.status.conditions[?(@.type=="Complete")].status}') == True ]]
}
wait_for kwok KWOK "a probe Job completes on a KWOK node" job_complete
alive_or_die KCM kube-controller-manager
# Foreground deletion: the garbage collector deletes the pod before the Job.
# The node goes last: KWOK finalizes pod deletions only on nodes it manages.
kc delete job lodestore-env-probe --cascade=foreground --timeout "${timeout_s}s" >>"$ENV_LOGS/cluster-up.log"
kc delete node lodestore-env-probe --timeout "${timeout_s}s" >>"$ENV_LOGS/cluster-up.log"

if [[ ${LODE_REAL_NODES:-0} -gt 0 ]]; then
	bash "$ENV_HERE/real-nodes.sh" up "$LODE_REAL_NODES"
fi

up_ok=1
env_log "cluster-up: ready in $((SECONDS - start_time))s: apiserver https://127.0.0.1:$api_port, S3 https://127.0.0.1:$s3_port"
env_log "  KUBECONFIG=$ENV_DIR/kubeconfig  (contexts admin, operator); S3 credentials in $ENV_DIR/s3.env; logs in $ENV_LOGS"
