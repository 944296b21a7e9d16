#!/usr/bin/env bash
# End-to-end test of internal/kube against the real kube-apiserver of tests/env/.
# Run it after `make cluster-up`, or as
#   tests/env/with-cluster.sh bash tests/e2e/test_kube.sh
# Without a running environment it fails (lib.sh refuses): it never counts a skip.
#
# It builds tests/e2e/kube/kube_e2e.c with the kube and util sources (ASan and
# UBSan on, so a leak or a bad access at exit is a failure), applies the test CRD,
# makes a namespace and a client certificate signed by the environment's CA, runs
# the program, and removes what it created. The program's "N passed, M failed" is
# added to this script's own checks.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

out=$root/build/e2e
mkdir -p "$out"
ns=kube-e2e-$(openssl rand -hex 3)
crd=$here/kube/crd.yaml

cleanup() {
	kc delete namespace "$ns" --wait=false >/dev/null 2>&1
	kc delete -f "$crd" --wait=false >/dev/null 2>&1
}
trap 'cleanup; rm -rf "$T_TMP"' EXIT

# --- build ---------------------------------------------------------------------
# shellcheck disable=SC2046
if cc -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I"$root/internal" -std=c17 -Wall -Wextra \
	-Werror -Wno-unused-parameter -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	-o "$out/kube_e2e" "$here/kube/kube_e2e.c" "$root"/internal/kube/*.c "$root"/internal/http/*.c "$root"/internal/util/*.c \
	$(pkg-config --cflags --libs libuv libcurl jansson yaml-0.1 openssl) -lm 2>"$T_TMP/cc.log"; then
	pass "build kube_e2e"
else
	fail "build kube_e2e" "$(cat "$T_TMP/cc.log")"
	finish
fi

# --- the namespace, the CRD, a client certificate --------------------------------
kc create namespace "$ns" >/dev/null
kc apply -f "$crd" >/dev/null
if kc wait --for condition=Established --timeout=30s crd/lodetests.e2e.lodestore.io >/dev/null; then
	pass "test CRD established"
else
	fail "test CRD established"
fi

pki=$LODE_ENV_DIR/pki
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-subj "/O=system:masters/CN=lode-e2e" -keyout "$T_TMP/client.key" -out "$T_TMP/client.csr" 2>/dev/null
openssl x509 -req -in "$T_TMP/client.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -days 1 \
	-extfile <(printf 'extendedKeyUsage=clientAuth\n') -out "$T_TMP/client.crt" 2>/dev/null
server=$(sed -n 's/^ *server: //p' "$KUBECONFIG" | head -n 1)
b64() { base64 -w0 <"$1"; }
cat >"$T_TMP/cert-kubeconfig" <<CFG
apiVersion: v1
kind: Config
current-context: cert
clusters:
- name: env
  cluster:
    server: $server
    certificate-authority-data: $(b64 "$pki/ca.crt")
users:
- name: lode-e2e
  user:
    client-certificate-data: $(b64 "$T_TMP/client.crt")
    client-key-data: $(b64 "$T_TMP/client.key")
contexts:
- name: cert
  context: {cluster: env, user: lode-e2e, namespace: $ns}
CFG

# --- run -------------------------------------------------------------------------
ETCD_URL=http://127.0.0.1:$ETCD_PORT E2E_NS=$ns CERT_KUBECONFIG=$T_TMP/cert-kubeconfig timeout 300 "$out/kube_e2e" >"$T_TMP/run.log" 2>&1
rc=$?
cat "$T_TMP/run.log"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$T_TMP/run.log" | tail -n 1)
if [[ -n $line ]]; then
	T_PASSED=$((T_PASSED + ${line%% passed*}))
	f=${line##*, }
	T_FAILED=$((T_FAILED + ${f%% failed}))
fi
if [[ $rc -ne 0 && ( -z $line || ${line##*, } == "0 failed" ) ]]; then
	fail "kube_e2e exited $rc without reporting a failure (crash, sanitizer or timeout)"
fi
finish
