#!/usr/bin/env bash
# Stops the local test environment started by cluster-up.sh: each recorded PID
# that still runs its recorded binary gets SIGTERM, then SIGKILL if it has not
# exited within a bounded wait; then every recorded port is checked to accept
# no connection. The environment directory is removed except logs/, which is
# kept for a post-mortem (the next cluster-up replaces it). Exits non-zero if
# a process or a port is left behind. Safe to run when nothing runs.
#
# Environment: LODE_ENV_DIR; LODE_ENV_KEEP=1 keeps the whole directory.
set -uo pipefail
# shellcheck source=tests/env/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

if [[ ! -f $ENV_STATE ]]; then
	env_log "cluster-down: nothing recorded in $ENV_DIR; nothing to stop"
	exit 0
fi

# shellcheck disable=SC1090
source "$ENV_STATE"
status=0

# Reverse start order: clients of the apiserver first, etcd last.
stop() { # NAME PID BIN
	local name=$1 pid=$2 bin=$3 deadline
	env_pid_is "$pid" "$bin" || return 0
	kill -TERM "$pid" 2>/dev/null
	deadline=$((SECONDS + 20))
	while env_pid_is "$pid" "$bin" && ((SECONDS < deadline)); do
		sleep 0.1
	done
	if env_pid_is "$pid" "$bin"; then
		env_log "cluster-down: $name (pid $pid) ignored SIGTERM for 20s; killing it"
		kill -KILL "$pid" 2>/dev/null
		deadline=$((SECONDS + 10))
		while env_pid_is "$pid" "$bin" && ((SECONDS < deadline)); do
			sleep 0.1
		done
	fi
	if env_pid_is "$pid" "$bin"; then
		env_log "cluster-down: $name (pid $pid) is still running"
		status=1
	else
		env_log "cluster-down: stopped $name (pid $pid)"
	fi
}
# The real nodes first: their kubelets, containers, mounts and cgroups (real-nodes.sh).
if [[ -n ${REAL_NODES:-} ]]; then
	bash "$ENV_HERE/real-nodes.sh" down || status=1
fi
stop kwok "${KWOK_PID:-}" "${KWOK_BIN:-}"
stop kube-controller-manager "${KCM_PID:-}" "${KCM_BIN:-}"
stop versitygw "${S3_PID:-}" "${S3_BIN:-}"
stop kube-apiserver "${APISERVER_PID:-}" "${APISERVER_BIN:-}"
stop etcd "${ETCD_PID:-}" "${ETCD_BIN:-}"

for port in ${ETCD_PORT:-} ${ETCD_PEER_PORT:-} ${APISERVER_PORT:-} ${S3_PORT:-}; do
	if ! env_wait 10 "port $port to close" eval "! env_port_listening $port"; then
		env_log "cluster-down: port $port on 127.0.0.1 still accepts connections"
		status=1
	fi
done

if [[ $status != 0 ]]; then
	env_log "cluster-down: something was left behind; $ENV_DIR is kept"
	exit 1
fi
if [[ ${LODE_ENV_KEEP:-0} == 1 ]]; then
	mv "$ENV_STATE" "$ENV_STATE.stopped" # so that cluster-up starts afresh
else
	find "$ENV_DIR" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
fi
env_log "cluster-down: nothing left running; logs kept in $ENV_LOGS"
