#!/usr/bin/env bash
# lode apply and lode status without a cluster: usage errors (exit 2), an invalid
# file refused with `lode validate`'s lines (exit 1) before any connection is made,
# and kubeconfig and connection failures (exit 2). What needs a real API server is
# in tests/e2e/test_cli_cluster.sh.
#
# "No network" is checked, not assumed: a local TCP listener records every
# connection, a valid file sent to it is the positive control (it connects, and the
# TLS handshake then fails: exit 2), and an invalid file must leave it untouched.
source "$(dirname "$0")/lib.sh"
cd "$LODE_ROOT" || exit 2
PAGE=docs/examples/etc-and-home.yaml
BAD=tests/fixtures/policies/bad/ten-mistakes.yaml

# kubeconfig FILE SERVER [NAMESPACE]: a kubeconfig with one context "x" and a token.
kubeconfig() {
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "$2"}
users:
- name: u
  user: {token: not-a-real-token}
contexts:
- name: x
  context: {cluster: c, user: u${3:+, namespace: $3}}
current-context: x
EOF
}

# ---- the listener that counts connections ----
python3 - "$T_TMP/conns" "$T_TMP/port" <<'EOF' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[2] + ".tmp", "w").write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
s.settimeout(60)  # a bound on its life even if the script dies
while True:
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    with open(sys.argv[1], "a") as f:
        f.write("connection\n")
    c.close()
EOF
LISTENER=$!
trap 'kill "$LISTENER" 2>/dev/null; wait "$LISTENER" 2>/dev/null; rm -rf "$T_TMP"' EXIT
for _ in $(seq 400); do [ -s "$T_TMP/port" ] && break; sleep 0.05; done # bounded: 20 s
if [ ! -s "$T_TMP/port" ]; then
    fail "the connection-counting listener started" "no port after 20 s"
    finish
    exit 1
fi
PORT=$(cat "$T_TMP/port")
connections() { if [ -f "$T_TMP/conns" ]; then wc -l <"$T_TMP/conns"; else echo 0; fi; }

kubeconfig "$T_TMP/listener.kubeconfig" "https://127.0.0.1:$PORT" team
kubeconfig "$T_TMP/unreachable.kubeconfig" "https://127.0.0.1:1" team
printf 'this: [is not a kubeconfig\n' >"$T_TMP/garbage.kubeconfig"

# ---- lode apply: usage ----
run apply
check_rc "apply without -f: exit 2" 2
check_contains "apply without -f: says what is missing" "$ERR" "no file given"
run apply -f
check_rc "apply -f without a value: exit 2" 2
run apply -f "$PAGE" -f "$PAGE"
check_rc "apply with two -f: exit 2" 2
run apply -f "$PAGE" extra
check_rc "apply with a stray argument: exit 2" 2
check_contains "apply with a stray argument: names it" "$ERR" '"extra"'
run apply --bogus -f "$PAGE"
check_rc "apply with an unknown flag: exit 2" 2
run apply -f "$PAGE" --output yaml
check_rc "apply --output yaml: exit 2" 2
run apply -f "$PAGE" --namespace ""
check_rc "apply with an empty --namespace: exit 2" 2
# --dry-run takes kubectl's values; "server" is tested against the real API server
# (tests/e2e/test_cli_cluster.sh). The others are refused before any connection.
run apply -f "$PAGE" --dry-run --kubeconfig "$T_TMP/listener.kubeconfig"
check_rc "apply --dry-run without a value: exit 2" 2
check_contains "apply --dry-run without a value: says --dry-run=server" "$ERR" "--dry-run=server"
run apply --dry-run -f "$PAGE" --kubeconfig "$T_TMP/listener.kubeconfig"
check_rc "apply --dry-run -f FILE: the flag does not swallow -f (exit 2)" 2
check_contains "apply --dry-run -f FILE: says --dry-run needs a value" "$ERR" "needs a value"
run apply -f "$PAGE" --dry-run=client --kubeconfig "$T_TMP/listener.kubeconfig"
check_rc "apply --dry-run=client: exit 2" 2
check_contains "apply --dry-run=client: points at lode validate" "$ERR" "lode validate"
run apply -f "$PAGE" --dry-run=all --kubeconfig "$T_TMP/listener.kubeconfig"
check_rc "apply --dry-run=all: exit 2" 2
check_contains "apply --dry-run=all: names the values" "$ERR" "server or none"
check_eq "apply --dry-run refusals: no connection" "$(connections)" 0
run apply --help
check_rc "apply --help: exit 0" 0
check_contains "apply --help: usage on stdout" "$OUT" "usage: lode apply -f FILE"
run --help
check_contains "lode --help lists apply" "$OUT" "  apply "
check_contains "lode --help lists status" "$OUT" "  status "

# ---- lode apply: an invalid file is refused before anything else ----
run validate "$BAD"
want_lines=$OUT
run apply -f "$BAD" --kubeconfig "$T_TMP/listener.kubeconfig"
check_rc "invalid file: exit 1" 1
check_eq "invalid file: the lines of lode validate, on stderr" "$ERR" "$want_lines"
check_eq "invalid file: nothing on stdout" "$OUT" ""
check_eq "invalid file: no connection was made" "$(connections)" 0
run apply -f "$BAD" --dry-run=server --kubeconfig "$T_TMP/listener.kubeconfig"
check_rc "invalid file, --dry-run=server: exit 1" 1
check_eq "invalid file, --dry-run=server: the lines of lode validate" "$ERR" "$want_lines"
check_eq "invalid file, --dry-run=server: no connection was made" "$(connections)" 0
run apply -f "$BAD" --kubeconfig "$T_TMP/unreachable.kubeconfig"
check_rc "invalid file, unreachable server: exit 1, not 2" 1
run apply -f "$BAD" --kubeconfig "$T_TMP/missing.kubeconfig"
check_rc "invalid file, missing kubeconfig: exit 1 (the kubeconfig is not read)" 1
run apply -f - --kubeconfig "$T_TMP/listener.kubeconfig" <"$BAD"
check_rc "invalid file on stdin: exit 1" 1
check_eq "invalid file on stdin: named <stdin>" "$ERR" "${want_lines//$BAD/<stdin>}"
sed 's/^  name: etc-and-home/  name: etc-and-home\n  namespace: ops/' "$PAGE" >"$T_TMP/ns.yaml"
run apply -f "$T_TMP/ns.yaml" --namespace other --kubeconfig "$T_TMP/listener.kubeconfig"
check_rc "file namespace ops, --namespace other: exit 2" 2
check_contains "namespace conflict: names both" "$ERR" '"ops" but --namespace says "other"'
check_eq "namespace conflict: no connection" "$(connections)" 0
run apply -f "$T_TMP/missing.yaml" --kubeconfig "$T_TMP/listener.kubeconfig"
check_rc "unreadable policy file: exit 2" 2
check_eq "unreadable policy file: no connection" "$(connections)" 0

# ---- lode apply: kubeconfig and connection failures ----
run apply -f "$PAGE" --kubeconfig "$T_TMP/missing.kubeconfig"
check_rc "valid file, missing kubeconfig: exit 2" 2
check_contains "missing kubeconfig: names the file" "$ERR" "$T_TMP/missing.kubeconfig"
run apply -f "$PAGE" --kubeconfig "$T_TMP/garbage.kubeconfig"
check_rc "valid file, unparsable kubeconfig: exit 2" 2
run apply -f "$PAGE" --kubeconfig "$T_TMP/unreachable.kubeconfig" --context nope
check_rc "unknown context: exit 2" 2
check_contains "unknown context: named" "$ERR" '"nope"'
run apply -f "$PAGE" --kubeconfig "$T_TMP/unreachable.kubeconfig"
check_rc "valid file, unreachable server: exit 2" 2
check_contains "unreachable server: says so" "$ERR" "cannot talk to the Kubernetes API server"
check_contains "unreachable server: the context's namespace is used" "$ERR" "/namespaces/team/backuppolicies/etc-and-home"
run apply -f "$PAGE" --kubeconfig "$T_TMP/listener.kubeconfig"
check_rc "valid file, a server that is not TLS: exit 2" 2
check_eq "valid file: the positive control connected" "$(connections)" 1
KUBECONFIG="$T_TMP/unreachable.kubeconfig" run apply -f "$PAGE" -n elsewhere
check_rc "\$KUBECONFIG is used when --kubeconfig is absent: exit 2" 2
check_contains "--namespace is used when the file names none" "$ERR" "/namespaces/elsewhere/"

# ---- lode status: usage ----
run status a b
check_rc "status with two policies: exit 2" 2
run status -A -n x
check_rc "status -A with -n: exit 2" 2
run status -A some-policy
check_rc "status -A with a POLICY: exit 2" 2
run status --bogus
check_rc "status with an unknown flag: exit 2" 2
run status --output yaml
check_rc "status --output yaml: exit 2" 2
run status --help
check_rc "status --help: exit 0" 0
check_contains "status --help: the exit codes" "$OUT" "1 a host is overdue"

# ---- lode status: kubeconfig and connection failures ----
run status --kubeconfig "$T_TMP/missing.kubeconfig"
check_rc "status, missing kubeconfig: exit 2" 2
run status --kubeconfig "$T_TMP/garbage.kubeconfig"
check_rc "status, unparsable kubeconfig: exit 2" 2
run status --kubeconfig "$T_TMP/unreachable.kubeconfig"
check_rc "status, unreachable server: exit 2" 2
check_contains "status, unreachable server: says so" "$ERR" "cannot talk to the Kubernetes API server"
check_contains "status: the context's namespace is listed" "$ERR" "/namespaces/team/backuppolicies"
run status p1 -A --kubeconfig "$T_TMP/unreachable.kubeconfig"
check_rc "status -A POLICY is refused before the network: exit 2" 2
check_contains "status -A POLICY: the usage message" "$ERR" "drop --all-namespaces"

finish
