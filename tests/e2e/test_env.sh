#!/usr/bin/env bash
# Acceptance test of the local environment (tests/env/): run it after
# `make cluster-up`, or through `make env-test`. It checks what the controller
# and storage tests will rely on, then runs cluster-down and checks that nothing
# is left running or listening. Every wait is bounded.
set -u
# shellcheck source=tests/env/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../env/lib.sh"

ns=env-test-$(openssl rand -hex 3)

# --- processes and listeners ---------------------------------------------------
pids=("$ETCD_PID" "$APISERVER_PID" "$KCM_PID" "$KWOK_PID" "$S3_PID")
bins=("$ETCD_BIN" "$APISERVER_BIN" "$KCM_BIN" "$KWOK_BIN" "$S3_BIN")
running() { # how many of the recorded processes still run (a zombie does not)
	local i n=0
	for i in "${!pids[@]}"; do env_pid_is "${pids[$i]}" "${bins[$i]}" && n=$((n + 1)); done
	echo "$n"
}
alive=$(running)
check_eq "the five recorded processes run" "$alive" 5

# Every listening TCP socket the five processes own, as ADDR:PORT, from
# /proc (no ss or netstat needed).
listeners() {
	python3 - "$@" <<'EOF'
import os, sys
inodes = set()
for pid in sys.argv[1:]:
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        pass
out = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    with open(table) as f:
        next(f)
        for line in f:
            cols = line.split()
            if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                continue
            addr, port = cols[1].split(":")
            if len(addr) == 8:
                ip = ".".join(str(int(addr[i:i + 2], 16)) for i in (6, 4, 2, 0))
            else:
                ip = "ipv6:" + addr
            out.add(f"{ip}:{int(port, 16)}")
print("\n".join(sorted(out)))
EOF
}
got=$(listeners "${pids[@]}")
want=$(printf '127.0.0.1:%s\n' "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$S3_PORT" | sort)
check_eq "the only listeners are the four recorded ports on 127.0.0.1" "$got" "$want"

# --- kube-apiserver: version, TLS, tokens, RBAC ----------------------------------
check_eq "the apiserver reports the pinned version" \
	"$(kc version -o json | jq -r .serverVersion.gitVersion)" "v1.36.3"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ENV_DIR/pki/ca.crt" \
	-H "Authorization: Bearer not-a-token" "https://127.0.0.1:$APISERVER_PORT/api/v1/nodes")
check_eq "an unknown token is refused (401)" "$code" 401
curl -s -o /dev/null "https://127.0.0.1:$APISERVER_PORT/readyz"
check_eq "the apiserver certificate is not trusted without the test CA (curl exit 60)" "$?" 60
# can_op VERB GROUP RESOURCE [SUBRESOURCE]: "true" or "false", from a
# SelfSubjectAccessReview as the operator (exact group, works before a CRD exists).
can_op() {
	kc_op create --validate=false -o 'jsonpath={.status.allowed}' -f - <<EOF
apiVersion: authorization.k8s.io/v1
kind: SelfSubjectAccessReview
spec:
  resourceAttributes: {verb: "$1", group: "$2", resource: "$3", subresource: "${4:-}", namespace: default}
EOF
}
check_eq "operator may list nodes" "$(can_op list '' nodes)" true
check_eq "operator may watch pods" "$(can_op watch '' pods)" true
check_eq "operator may create jobs" "$(can_op create batch jobs)" true
check_eq "operator may create backups" "$(can_op create lodestore.io backups)" true
check_eq "operator may update backuppolicies/status" "$(can_op update lodestore.io backuppolicies status)" true
check_eq "operator may read secrets (repository credentials)" "$(can_op get '' secrets)" true
check_eq "operator may update leases" "$(can_op update coordination.k8s.io leases)" true
check_eq "operator may create events" "$(can_op create events.k8s.io events)" true
check_eq "operator may not delete nodes" "$(can_op delete '' nodes)" false
check_eq "operator may not create pods" "$(can_op create '' pods)" false
check_eq "operator may not write secrets" "$(can_op update '' secrets)" false
out=$(kc_op create namespace "$ns-denied" 2>&1)
check_contains "operator is forbidden to create a namespace" "$out" "Forbidden"

kc create namespace "$ns" >/dev/null

# --- a CustomResourceDefinition and strict server-side validation ----------------
kc apply --server-side --validate=strict -f - >"$T_TMP/crd.out" 2>&1 <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.envtest.lodestore.io
spec:
  group: envtest.lodestore.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              properties:
                size: {type: integer, minimum: 1}
                cron: {type: string, x-kubernetes-validations: [{rule: "self.size() > 0", message: "cron must not be empty"}]}
            status:
              type: object
              properties:
                phase: {type: string}
EOF
check_eq "a CRD applies server-side with strict validation" "$?" 0
env_wait 30 "the Widget CRD to be established" \
	kc wait --for condition=Established --timeout 5s crd/widgets.envtest.lodestore.io
check_eq "the CRD is established" "$?" 0

widget() { # SPEC-LINES: applies a Widget, output in $OUT, status in $RC
	OUT=$(printf 'apiVersion: envtest.lodestore.io/v1\nkind: Widget\nmetadata: {name: w1, namespace: %s}\nspec:\n%s\n' \
		"$ns" "$1" | kc apply --server-side --validate=strict -f - 2>&1)
	RC=$?
}
widget '  size: 3'
check_eq "a valid custom resource is accepted" "$RC" 0
check_eq "the custom resource reads back" "$(env_get -n "$ns" widget/w1 '{.spec.size}')" 3
widget $'  size: 3\n  colour: red'
check_eq "a custom resource with an unknown field is refused" "$RC" 1
check_contains "the refusal names the unknown field" "$OUT" '.spec.colour: field not declared in schema'
widget '  size: 0'
check_eq "a value below the schema's minimum is refused" "$RC" 1
widget $'  size: 2\n  cron: ""'
check_contains "a CEL rule refuses a value" "$OUT" "cron must not be empty"
check_eq "the refused updates left the resource unchanged" "$(env_get -n "$ns" widget/w1 '{.spec.size}')" 3

# --- Jobs on KWOK nodes ------------------------------------------------------------
env_create_nodes 3 "$ns-node" lodestore.io/test=env
check_eq "three KWOK nodes become Ready" "$?" 0
check_eq "the nodes carry the given label" \
	"$(kc get nodes -l lodestore.io/test=env -o name | wc -l)" 3

job() { # NAME NODE [POD-LABELS] [SPEC-LINE]: a Job of one pod pinned to NODE
	kc apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: $ns}
spec:
  backoffLimit: 0
${4:-}
  template:
    metadata:
      labels: {${3:-app: env-test}}
    spec:
      nodeName: $2
      restartPolicy: Never
      containers:
        - {name: main, image: lodestore.invalid/backup}
EOF
}

job ok "$ns-node-0"
env_wait_job "$ns" ok Complete 60
check_eq "a Job pinned to a KWOK node completes" "$?" 0
check_eq "its pod succeeded" "$(env_get -n "$ns" job/ok '{.status.succeeded}')" 1
check_eq "its pod ran on the pinned node" \
	"$(env_get -n "$ns" pods -l job-name=ok '{.items[0].spec.nodeName}')" "$ns-node-0"

job bad "$ns-node-1" 'lodestore.io/kwok-result: fail'
env_wait_job "$ns" bad Failed 60
check_eq "a Job whose pods are labelled kwok-result=fail fails" "$?" 0
check_eq "it failed for its backoff limit" \
	"$(env_get -n "$ns" job/bad '{.status.conditions[?(@.type=="Failed")].reason}')" BackoffLimitExceeded
check_eq "its container exited with code 1" \
	"$(env_get -n "$ns" pods -l job-name=bad '{.items[0].status.containerStatuses[0].state.terminated.exitCode}')" 1

job stuck "$ns-node-2" 'lodestore.io/kwok-result: hang' '  activeDeadlineSeconds: 3'
env_wait_job "$ns" stuck Failed 60
check_eq "a hanging Job fails at its deadline" "$?" 0
check_eq "with reason DeadlineExceeded" \
	"$(env_get -n "$ns" job/stuck '{.status.conditions[?(@.type=="Failed")].reason}')" DeadlineExceeded
no_pods() { [[ -z $(kc -n "$ns" get pods -l "job-name=$1" -o name) ]]; }
env_wait 60 "the hung pod to be deleted" no_pods stuck
check_eq "the Job controller's deletion of the hung pod completes" "$?" 0

env_kwok_result fail app=env-test-dyn
check_eq "a stage added at run time is loaded" "$?" 0
job dyn1 "$ns-node-0" 'app: env-test-dyn'
env_wait_job "$ns" dyn1 Failed 60
check_eq "pods matching the run-time stage fail" "$?" 0
env_kwok_clear
check_eq "the run-time stages are removed" "$?" 0
job dyn2 "$ns-node-0" 'app: env-test-dyn'
env_wait_job "$ns" dyn2 Complete 60
check_eq "after clearing them the same pods complete" "$?" 0

kc -n "$ns" delete job ok --cascade=background >/dev/null
env_wait 60 "the garbage collector to delete the pods of job ok" no_pods ok
check_eq "deleting a Job removes its pods (garbage collector)" "$?" 0

# --- S3 ------------------------------------------------------------------------------
key="env-test/$ns/hello.txt"
printf 'hello from %s\n' "$ns" >"$T_TMP/obj"
env_s3 PUT "/$S3_BUCKET/$key" "$T_TMP/obj"
check_eq "S3 PUT of an object (SigV4)" "$S3_CODE" 200
env_s3 GET "/$S3_BUCKET/$key"
check_eq "S3 GET answers 200" "$S3_CODE" 200
check_eq "S3 GET returns the bytes put" "$S3_BODY" "$(cat "$T_TMP/obj")"
# curl 7.88 does not percent-encode the query it signs: give it encoded.
env_s3 GET "/$S3_BUCKET?list-type=2&prefix=env-test%2F$ns%2F"
check_eq "S3 ListObjectsV2 answers 200" "$S3_CODE" 200
check_contains "ListObjectsV2 lists the key" "$S3_BODY" "<Key>$key</Key>"
check_contains "ListObjectsV2 counts one key" "$S3_BODY" "<KeyCount>1</KeyCount>"
env_s3_as "$S3_ACCESS_KEY" "wrong-$S3_SECRET_KEY" GET "/$S3_BUCKET/$key"
check_eq "a request signed with a wrong secret is refused (403)" "$S3_CODE" 403
check_contains "the refusal is a signature mismatch" "$S3_BODY" "SignatureDoesNotMatch"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$S3_CA_FILE" "$S3_ENDPOINT/$S3_BUCKET/$key")
check_eq "an unsigned request is refused (403)" "$code" 403
env_s3 DELETE "/$S3_BUCKET/$key"
check_eq "S3 DELETE answers 204" "$S3_CODE" 204
env_s3 GET "/$S3_BUCKET/$key"
check_eq "the deleted object is gone (404)" "$S3_CODE" 404

# --- namespace deletion, then cluster-down --------------------------------------------
kc delete namespace "$ns" --wait=false >/dev/null
ns_gone() { ! kc get namespace "$ns" >/dev/null 2>&1; }
env_wait 90 "namespace $ns to be finalized" ns_gone
check_eq "a namespace with Jobs and pods is deleted (namespace controller)" "$?" 0
kc delete crd widgets.envtest.lodestore.io >/dev/null
env_delete_nodes "$ns-node"

bash "$ENV_HERE/cluster-down.sh" >"$T_TMP/down.out" 2>&1
check_eq "cluster-down succeeds" "$?" 0
check_eq "no recorded process is left" "$(running)" 0
open=0
for port in "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$S3_PORT"; do
	env_port_listening "$port" && open=$((open + 1))
done
check_eq "no recorded port accepts connections" "$open" 0
check_eq "the state file is gone" "$([[ -e $ENV_STATE ]] && echo present || echo absent)" absent
check_eq "the logs are kept" "$([[ -s $ENV_LOGS/kube-apiserver.log ]] && echo kept || echo missing)" kept

finish
