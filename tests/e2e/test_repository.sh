#!/usr/bin/env bash
# BackupRepository end to end: the CRD's admission rules, and the real controller
# (as the "operator" identity) resolving repositories against versitygw of tests/env/:
# Ready=True for a good one, and Ready=False with the reason for a missing bucket, wrong
# keys, an untrusted certificate, nothing listening, a missing Secret, a Secret without
# the keys; a repaired repository turns Ready. Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_repository.sh
set -u
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
NS=repo-e2e-$(openssl rand -hex 3)
PID=
cleanup() {
	[[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	kc delete ns "$NS" --wait=false >/dev/null 2>&1
	rm -rf "$T_TMP"
}
trap cleanup EXIT

env_crds
kc create namespace "$NS" >/dev/null
ca_b64=$(base64 -w0 <"$S3_CA_FILE")

# ---- admission ----
repo() { # NAME ENDPOINT BUCKET SECRET [EXTRA YAML LINE]
	printf 'apiVersion: lodestore.io/v1alpha1\nkind: BackupRepository\n'
	printf 'metadata: {name: %s, namespace: %s}\n' "$1" "$NS"
	printf 'spec:\n  endpoint: %s\n  bucket: %s\n  prefix: e2e/%s\n' "$2" "$3" "$1"
	printf '  credentialsSecret: {name: %s}\n' "$4"
	[[ -n ${5:-} ]] && printf '%s\n' "$5"
	return 0
}
out=$(repo bad-http http://s3.example.com b-x s | kc apply -f - 2>&1)
check_contains "plain http to a remote host is refused at admission" "$out" "allowPlainHTTP"
out=$(repo vhost https://s3.example.com b-x s "  pathStyle: false" | kc apply -f - 2>&1)
check_contains "virtual-hosted addressing is refused at admission" "$out" "path-style"
out=$(repo ok-http http://127.0.0.1:9 b-x s | kc apply -f - 2>&1)
check_contains "plain http to loopback is admitted" "$out" "created"
kc -n "$NS" delete backuprepository ok-http >/dev/null

# ---- the controller ----
kc -n "$NS" create secret generic s --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" \
	--from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" --from-literal=repository-key=k >/dev/null
kc -n "$NS" create secret generic wrong --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" \
	--from-literal=AWS_SECRET_ACCESS_KEY=not-the-secret >/dev/null
kc -n "$NS" create secret generic partial --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" >/dev/null
{
	repo good "$S3_ENDPOINT" "$S3_BUCKET" s "  caBundle: $ca_b64"
	echo ---
	repo nobucket "$S3_ENDPOINT" lode-no-such-bucket s "  caBundle: $ca_b64"
	echo ---
	repo denied "$S3_ENDPOINT" "$S3_BUCKET" wrong "  caBundle: $ca_b64"
	echo ---
	repo untrusted "$S3_ENDPOINT" "$S3_BUCKET" s
	echo ---
	repo unreachable http://127.0.0.1:9 "$S3_BUCKET" s
	echo ---
	repo nosecret "$S3_ENDPOINT" "$S3_BUCKET" absent "  caBundle: $ca_b64"
	echo ---
	repo partial "$S3_ENDPOINT" "$S3_BUCKET" partial "  caBundle: $ca_b64"
} | kc apply -f - >/dev/null

"$CTL" --kubeconfig "$KUBECONFIG" --context operator --metrics-addr 127.0.0.1:0 \
	--agent-image lodestore.invalid/agent:e2e --namespace "$NS" --log-level debug \
	>"$T_TMP/ctl.log" 2>&1 &
PID=$!

ready() { # NAME -> "Status Reason"
	env_get -n "$NS" "backuprepository/$1" \
		'{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason}'
}
ready_is() { [[ $(ready "$1") == "$2" ]]; }
for pair in "good:True BucketReachable" "nobucket:False BucketMissing" "denied:False AccessDenied" \
	"untrusted:False TLS" "unreachable:False Unreachable" "nosecret:False SecretMissing" \
	"partial:False SecretIncomplete"; do
	name=${pair%%:*}
	want=${pair#*:}
	if env_wait 60 "$name to be $want" ready_is "$name" "$want"; then
		pass "repository $name: Ready $want"
	else
		fail "repository $name: Ready $want" "got: $(ready "$name")" \
			"$(kc -n "$NS" get backuprepository "$name" -o jsonpath='{.status}')"
	fi
done
msg=$(env_get -n "$NS" backuprepository/nobucket '{.status.conditions[0].message}')
check_contains "the reason's message says what the server said" "$msg" "NoSuchBucket"
gen=$(env_get -n "$NS" backuprepository/good '{.metadata.generation} {.status.observedGeneration}')
check_eq "observedGeneration follows the spec" "${gen#* }" "${gen% *}"
cols=$(kc -n "$NS" get backuprepositories good)
check_contains "printer columns show Ready and the reason" "$cols" "BucketReachable"

# A repaired repository turns Ready without waiting for its backoff to run out.
kc -n "$NS" patch backuprepository denied --type merge \
	-p '{"spec":{"credentialsSecret":{"name":"s"}}}' >/dev/null
if env_wait 30 "denied to turn Ready" ready_is denied "True BucketReachable"; then
	pass "a spec change re-checks at once: the repaired repository is Ready"
else
	fail "a spec change re-checks at once" "got: $(ready denied)"
fi
if grep -q "ERROR: AddressSanitizer\|runtime error" "$T_TMP/ctl.log"; then
	fail "the controller ran clean" "$(grep -A5 'ERROR\|runtime error' "$T_TMP/ctl.log" | head -20)"
else
	pass "the controller ran clean"
fi
finish
