#!/usr/bin/env bash
# lode-controller --metrics-addr (docs/operator.md): /healthz answers on the address
# given and on no other, IPv6 with or without brackets (the chart's $(POD_IP) of an IPv6
# pod has none), and a host that is not an IP address is refused. No cluster: the
# kubeconfig names an API server nothing listens on, which the controller reports and
# retries while its endpoints answer.
source "$(dirname "$0")/lib.sh"
CTL=${LODE_CONTROLLER:-$(dirname "$LODE")/lode-controller}
cat >"$T_TMP/kubeconfig" <<'EOF'
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
EOF
PID=
stop() { [[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; PID=; }
trap 'stop; rm -rf "$T_TMP"' EXIT

# start ADDR: runs the controller; PORT is the port it listens on (from its log line).
start() {
	KUBECONFIG=$T_TMP/kubeconfig "$CTL" --metrics-addr="$1" >"$T_TMP/ctl.log" 2>&1 &
	PID=$!
	PORT=
	for _ in $(seq 200); do # up to 20 s
		PORT=$(sed -nE 's/.*metrics on .*:([0-9]+)$/\1/p' "$T_TMP/ctl.log" | head -n1)
		[[ -n $PORT ]] && return 0
		kill -0 "$PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
health() { curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$1:$PORT/healthz"; }

start "127.0.0.1:0"
check_eq "127.0.0.1: it starts" "$?" 0
check_eq "... /healthz answers there" "$(health 127.0.0.1)" 200
check_eq "... and not on ::1" "$(health '[::1]')" 000
stop
start "[::1]:0"
check_eq "[::1]:0 (brackets): it starts" "$?" 0
check_eq "... /healthz answers on ::1" "$(health '[::1]')" 200
check_eq "... and not on 127.0.0.1" "$(health 127.0.0.1)" 000
stop
start "::1:0"
check_eq "::1:0 (no brackets, as \$(POD_IP) gives an IPv6 pod's): it starts" "$?" 0
check_eq "... /healthz answers on ::1" "$(health '[::1]')" 200
stop
KUBECONFIG=$T_TMP/kubeconfig "$CTL" --metrics-addr="[::1]x:0" >"$T_TMP/bad.log" 2>&1
check_eq "a host that is not an IP address: exit non-zero" "$([[ $? -ne 0 ]] && echo yes)" yes
check_contains "... saying so" "$(cat "$T_TMP/bad.log")" "is not an IP address to listen on"
finish
