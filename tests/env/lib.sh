# Helpers for end-to-end tests that run against the environment of
# cluster-up.sh. Source it from a tests/e2e/test_*.sh script; it loads
# state.env and s3.env (so $KUBECONFIG, $S3_ENDPOINT, $S3_BUCKET, ... are set)
# and refuses to go on when no environment runs.
#
# Counters in the style of tests/cli/lib.sh: pass, fail, check_eq,
# check_contains, finish (prints "N passed, M failed", which tests/run.sh sums).
#
# Cluster helpers (every wait is bounded):
#   kc ARGS...                  kubectl as "admin" (system:masters)
#   kc_op ARGS...               kubectl as "operator" (operator-rbac.yaml)
#   env_get ARGS... JSONPATH    kc get ARGS -o jsonpath=JSONPATH, e.g.
#                               env_get -n ns job/x '{.status.succeeded}'
#   env_create_nodes N PREFIX [KEY=VALUE...]
#                               nodes PREFIX-0 .. PREFIX-(N-1), labelled, Ready
#   env_delete_nodes PREFIX     deletes them
#   env_kwok_result RESULT KEY=VALUE...
#                               from now on, running pods with all these labels
#                               fail, hang or succeed (a KWOK Stage; returns once
#                               KWOK has loaded it). Label a Job's pod template
#                               lodestore.io/kwok-result=fail|hang for the same
#                               effect without a call.
#   env_kwok_clear              removes the stages env_kwok_result added
#   env_wait_job NS JOB TYPE [SECONDS]
#                               waits for condition TYPE (Complete, Failed, ...)
#                               to be True on the Job
# Real nodes (tests/env/real-nodes.sh, docs/testing.md):
#   env_real_nodes_start N      N nodes with containerd and a kubelet each, unless the
#                               environment has real nodes already (LODE_REAL_NODES at
#                               cluster-up); sets REAL_NODES (their names, labelled
#                               lodestore.io/real-node=true); cluster-down stops them
#   env_real_nodes_stop         stops the nodes env_real_nodes_start started, if it did
#   env_real_node_root NODE     the directory of this machine whose srv/ is the real node
#                               NODE's /srv (its own, in its mount namespace); the rest of
#                               the node's / is this machine's
# S3 helpers (SigV4 through curl --aws-sigv4, TLS verified against the test CA):
#   env_s3 METHOD PATH [BODY-FILE [CURL ARGS...]]
#                               signed request (the payload hash is signed too);
#                               sets S3_CODE (HTTP status) and S3_BODY; PATH is
#                               /bucket/key?query; BODY-FILE "" for none
#   env_s3_as ACCESS SECRET METHOD PATH [BODY-FILE [CURL ARGS...]]
#                               the same with other keys
#   env_repository NS NAME [BUCKET]
#                               a BackupRepository NAME in NS on the environment's
#                               versitygw (prefix e2e/NS/NAME) and its Secret NAME-s3:
#                               the controller finds it Ready, so policies naming
#                               it run (a BUCKET that does not exist: not Ready)
#   env_crds                    applies crd/ (server-side) and waits (30 s) for the
#                               three CRDs to be established
#   env_controller_start NS LOG [ARGS...]
#                               starts $CTL (the caller's lode-controller) as "operator"
#                               for NS, metrics on a free port, output appended to
#                               $T_TMP/LOG.log, and waits (30 s) for its caches; sets
#                               CTL_PID (also added to PIDS, which the caller's cleanup
#                               stops) and CTL_PORT (/metrics). Returns 1, the log
#                               printed, when the caches do not sync
#   env_stop_pids               for a cleanup: signals every process in PIDS, then waits
#                               for each, so they stop together
#   env_lode_s3                 exports the versitygw credentials, region and CA for
#                               lode and the tools (AWS_ACCESS_KEY_ID,
#                               AWS_SECRET_ACCESS_KEY, AWS_REGION, LODE_CACERT)
# The S3 test tools (tests/e2e/s3/*.c, built into build/e2e):
#   env_build_tool NAME         builds tests/e2e/s3/NAME.c: faultproxy, or repo_fixture
#                               (links build/liblode.a: run make first); compiler
#                               messages on stderr
#   env_fault_proxy_start       starts build/e2e/faultproxy in front of versitygw on a
#                               free loopback port; sets PROXY_PID, PROXY_PORT and PROXY
#                               (http://127.0.0.1:PORT); returns 1 when it does not
#                               listen within 10 s (its log: $T_TMP/proxy.log). The
#                               caller stops it (kill "$PROXY_PID", or env_fault exit)
#   env_fault RULE              sets a fault of the proxy (clear, 503/N, exit, ...:
#                               tests/e2e/s3/faultproxy.c)
set -u
# shellcheck source=tests/env/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

if [[ ! -f $ENV_STATE ]]; then
	echo "tests/env/lib.sh: no environment in $ENV_DIR; run 'make cluster-up' first" >&2
	exit 1
fi
# shellcheck disable=SC1090
source "$ENV_STATE"
# shellcheck disable=SC1090
source "$S3_ENV"
export KUBECONFIG S3_ENDPOINT S3_REGION S3_BUCKET S3_ACCESS_KEY S3_SECRET_KEY S3_CA_FILE

T_PASSED=0
T_FAILED=0
T_TMP=$(mktemp -d)
trap 'rm -rf "$T_TMP"' EXIT

pass() {
	T_PASSED=$((T_PASSED + 1))
	echo "ok - $1"
}
fail() {
	T_FAILED=$((T_FAILED + 1))
	echo "not ok - $1"
	shift
	printf '    %s\n' "$@"
}
check_eq() { # name got want
	if [[ $2 == "$3" ]]; then pass "$1"; else fail "$1" "got:  $2" "want: $3"; fi
}
check_contains() { # name haystack needle
	if [[ $2 == *"$3"* ]]; then pass "$1"; else fail "$1" "missing: $3" "in: $2"; fi
}
finish() {
	echo "$T_PASSED passed, $T_FAILED failed"
	[[ $T_FAILED -eq 0 ]]
}

# The discovery cache lives with the environment: the port changes each time.
kc() {
	"$KUBECTL" --kubeconfig "$KUBECONFIG" --cache-dir "$ENV_DIR/kube-cache" --context admin \
		--request-timeout 30s "$@"
}
kc_op() {
	"$KUBECTL" --kubeconfig "$KUBECONFIG" --cache-dir "$ENV_DIR/kube-cache" --context operator \
		--request-timeout 30s "$@"
}

env_get() {
	local jsonpath=${*: -1}
	kc get "${@:1:$#-1}" -o "jsonpath=$jsonpath"
}

env_create_nodes() {
	local n=$1 prefix=$2 i kv
	shift 2
	{
		echo 'apiVersion: v1'
		echo 'kind: List'
		echo 'items:'
		for ((i = 0; i < n; i++)); do
			echo '  - apiVersion: v1'
			echo '    kind: Node'
			echo '    metadata:'
			echo "      name: $prefix-$i"
			echo '      labels:'
			echo "        lodestore.io/env-nodes: \"$prefix\""
			echo "        kubernetes.io/hostname: \"$prefix-$i\""
			for kv in "$@"; do
				echo "        ${kv%%=*}: \"${kv#*=}\""
			done
		done
	} | kc apply -f - >/dev/null || return 1
	env_wait "$((30 + n / 10))" "$n nodes $prefix-* to be Ready" _env_nodes_ready "$prefix" "$n"
}
_env_nodes_ready() { # PREFIX N
	local ready
	ready=$(kc get nodes -l "lodestore.io/env-nodes=$1" \
		-o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
		grep -c '^True$')
	[[ $ready -eq $2 ]]
}

env_delete_nodes() {
	kc delete nodes -l "lodestore.io/env-nodes=$1" >/dev/null
}

env_kwok_result() {
	local result=$1 name
	shift
	[[ $# -gt 0 ]] || {
		echo "env_kwok_result: give at least one KEY=VALUE label" >&2
		return 2
	}
	name=lodestore-dyn-$result-$(printf '%s\n' "$@" | sha1sum | cut -c1-12)
	ENV_STAGE_ORIGIN=dynamic env_kwok_stage "$name" "$result" "$@" >"$T_TMP/stage.yaml" || return 2
	kc apply --server-side -f "$T_TMP/stage.yaml" >/dev/null || return 1
	_env_kwok_sync
}

env_kwok_clear() {
	kc delete stages.kwok.x-k8s.io -l lodestore.io/kwok-stage=dynamic >/dev/null || return 1
	_env_kwok_sync
}

# KWOK watches Stage objects and publishes its set of pod stages as a whole,
# in the order the apiserver sent them. So when a stage created after ours
# acts on a pod, ours is in force too. The probe stage makes one probe pod on a
# probe node succeed; each poll that finds it not yet done touches the pod,
# because KWOK looks at a pod again only when the pod changes.
_env_kwok_sync() {
	local token ok=0
	token=$(openssl rand -hex 6)
	{
		ENV_STAGE_ORIGIN=sync env_kwok_stage "lodestore-sync-$token" succeed "lodestore.io/kwok-probe=$token"
		cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: lodestore-kwok-sync-$token
  labels: {lodestore.io/kwok-probe: "$token"}
EOF
	} | kc apply -f - >/dev/null || return 1
	kc apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata:
  name: lodestore-kwok-sync-$token
  namespace: default
  labels: {lodestore.io/kwok-probe: "$token"}
spec:
  nodeName: lodestore-kwok-sync-$token
  restartPolicy: Never
  containers:
    - name: probe
      image: lodestore.invalid/probe
EOF
	if env_wait 30 "KWOK to load a new stage" _env_kwok_probe_done "$token"; then
		ok=1
	fi
	kc -n default delete pod "lodestore-kwok-sync-$token" --grace-period=0 --force >/dev/null 2>&1
	kc delete node "lodestore-kwok-sync-$token" >/dev/null
	kc delete stages.kwok.x-k8s.io "lodestore-sync-$token" >/dev/null
	[[ $ok == 1 ]]
}
_env_kwok_probe_done() {
	local phase
	phase=$(kc -n default get pod "lodestore-kwok-sync-$1" -o 'jsonpath={.status.phase}')
	[[ $phase == Succeeded ]] && return 0
	kc -n default annotate --overwrite pod "lodestore-kwok-sync-$1" "lodestore.io/kwok-poke=$RANDOM" >/dev/null
	return 1
}

env_wait_job() {
	local ns=$1 job=$2 type=$3 limit=${4:-60}
	env_wait "$limit" "job $ns/$job to be $type" _env_job_is "$ns" "$job" "$type"
}
_env_job_is() {
	[[ $(kc -n "$1" get job "$2" -o "jsonpath={.status.conditions[?(@.type==\"$3\")].status}") == True ]]
}

env_s3_as() {
	local access=$1 secret=$2 method=$3 path=$4 body=${5:-} sha
	shift 4
	[[ $# -gt 0 ]] && shift
	# curl 7.88 signs but does not send x-amz-content-sha256, which S3 servers
	# require; passed as a header, curl includes it in the signature.
	if [[ -n $body ]]; then
		sha=$(sha256sum "$body" | cut -d' ' -f1)
		set -- --data-binary "@$body" "$@"
	else
		sha=$(printf '' | sha256sum | cut -d' ' -f1)
	fi
	S3_CODE=$(curl -s --max-time 30 --cacert "$S3_CA_FILE" --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		--user "$access:$secret" -H "x-amz-content-sha256: $sha" -X "$method" \
		-o "$T_TMP/s3body" -w '%{http_code}' "$@" "$S3_ENDPOINT$path")
	S3_BODY=$(cat "$T_TMP/s3body" 2>/dev/null)
}
env_s3() {
	env_s3_as "$S3_ACCESS_KEY" "$S3_SECRET_KEY" "$@"
}

env_real_nodes_start() {
	[[ -z ${REAL_NODES:-} ]] || return 0
	# Ours even when up fails half-way: env_real_nodes_stop stops what started.
	ENV_REAL_NODES_OURS=1
	bash "$ENV_HERE/real-nodes.sh" up "$1"
	local rc=$?
	# shellcheck disable=SC1090
	source "$ENV_STATE"
	return $rc
}
env_real_node_root() {
	echo "$ENV_DIR/nodes/$1"
}
env_real_nodes_stop() {
	[[ $ENV_REAL_NODES_OURS == 1 ]] || return 0
	bash "$ENV_HERE/real-nodes.sh" down
	ENV_REAL_NODES_OURS=0
	REAL_NODES=
}

env_repository() {
	local ns=$1 name=$2 bucket=${3:-$S3_BUCKET}
	kc -n "$ns" create secret generic "$name-s3" --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" \
		--from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" \
		--from-literal=repository-key="e2e-$name" >/dev/null || return 1
	kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupRepository
metadata: {name: $name}
spec:
  endpoint: $S3_ENDPOINT
  bucket: $bucket
  prefix: e2e/$ns/$name
  credentialsSecret: {name: $name-s3}
  caBundle: $(base64 -w0 <"$S3_CA_FILE")
EOF
}

env_lode_s3() {
	export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY AWS_REGION=$S3_REGION
	export LODE_CACERT=$S3_CA_FILE
}

ENV_ROOT=$(cd "$ENV_HERE/../.." && pwd)
env_build_tool() {
	local out=$ENV_ROOT/build/e2e src=$ENV_ROOT/tests/e2e/s3/$1.c
	local flags=(-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I"$ENV_ROOT/internal" -std=c17 -Wall
		-Wextra -Werror -Wno-unused-parameter -Wno-format-truncation -g -O1)
	mkdir -p "$out"
	# shellcheck disable=SC2046
	case $1 in
	faultproxy) cc "${flags[@]}" -o "$out/$1" "$src" $(pkg-config --cflags --libs libcurl) ;;
	repo_fixture)
		cc "${flags[@]}" -o "$out/$1" "$src" "$ENV_ROOT/build/liblode.a" \
			$(pkg-config --cflags --libs libuv libcurl jansson openssl expat libzstd) -lm
		;;
	*)
		echo "env_build_tool: no tool $1" >&2
		return 2
		;;
	esac
}

env_fault_proxy_start() {
	PROXY_PORT= PROXY=
	rm -f "$T_TMP/proxy.port"
	"$ENV_ROOT/build/e2e/faultproxy" "$S3_ENDPOINT" "$S3_CA_FILE" "$T_TMP/proxy.port" 2>"$T_TMP/proxy.log" &
	PROXY_PID=$!
	env_wait 10 "the fault proxy" test -s "$T_TMP/proxy.port" || return 1
	PROXY_PORT=$(cat "$T_TMP/proxy.port")
	PROXY=http://127.0.0.1:$PROXY_PORT
}

env_fault() {
	curl -s --max-time 5 -o /dev/null "$PROXY/__fault/$1"
}

env_crds() {
	kc apply --server-side -f "$ENV_ROOT/crd/" >/dev/null || return 1
	kc wait --for condition=established --timeout=30s crd/backuppolicies.lodestore.io \
		crd/backups.lodestore.io crd/backuprepositories.lodestore.io >/dev/null
}

env_stop_pids() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
}

env_controller_start() {
	local ns=$1 log=$T_TMP/$2.log
	shift 2
	"$CTL" --kubeconfig "$KUBECONFIG" --context operator --metrics-addr 127.0.0.1:0 \
		--namespace "$ns" --agent-image lodestore.invalid/agent:e2e --log-level debug "$@" \
		>>"$log" 2>&1 &
	CTL_PID=$!
	PIDS+=("$CTL_PID")
	env_wait 30 "the controller's caches" grep -q 'caches synced' "$log" || {
		cat "$log"
		return 1
	}
	CTL_PORT=$(grep -o 'metrics on 127.0.0.1:[0-9]*' "$log" | tail -n 1 | cut -d: -f2)
}
