# Shared by cluster-up.sh, cluster-down.sh and lib.sh: where things live and
# the few primitives every script needs (a bounded wait, a free port, a check
# that a recorded PID is still the process we started). Sourced, not run.
#
# Layout of ${LODE_ENV_DIR:-/tmp/lodestore-env} while a cluster runs:
#   state.env       ports, PIDs and paths (KEY=value, sourceable by sh)
#   kubeconfig      contexts "admin" (default) and "operator"
#   s3.env          S3_ENDPOINT S3_REGION S3_BUCKET S3_ACCESS_KEY S3_SECRET_KEY S3_CA_FILE
#   pki/            the throwaway CA, server certificates, service-account key
#   logs/           one log per process, plus cluster-up.log; kept by cluster-down
#   etcd/ s3/ kwok/ data of etcd, versitygw's bucket directory, KWOK's stages

ENV_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Go lives in /usr/local/go on our machines, not always on PATH.
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
	PATH=$PATH:/usr/local/go/bin
fi
ENV_DIR=${LODE_ENV_DIR:-/tmp/lodestore-env}
ENV_STATE=$ENV_DIR/state.env
ENV_LOGS=$ENV_DIR/logs
ENV_CACHE=${LODE_CACHE:-$HOME/.cache/lodestore}

env_log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
env_die() {
	env_log "error: $*"
	exit 1
}

# env_wait SECONDS WHAT CMD...: runs CMD until it succeeds, at most SECONDS.
# Polling a condition with a deadline is the only synchronisation used here;
# the short pause between polls only bounds the CPU a wait costs.
env_wait() {
	local limit=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + limit))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			env_log "timed out after ${limit}s waiting for $what"
			return 1
		fi
		sleep 0.2
	done
}

# env_free_ports N: prints N distinct ports that are free on 127.0.0.1 now.
# The kernel picks them (bind to port 0); all N sockets stay open until every
# one is chosen, so the ports differ. Another process could take one before
# we bind it; the readiness wait then fails with the log naming the port.
env_free_ports() {
	python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# env_port_listening PORT: true when something accepts connections on it.
env_port_listening() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# env_pid_is PID BINARY: true when PID is alive and runs BINARY (a PID is
# reused after its process dies, so the executable is checked, not just kill -0).
env_pid_is() {
	local pid=$1 bin=$2 exe
	[[ -n $pid ]] || return 1
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
	[[ $exe == "$bin" ]]
}

# Cache directory of one tool family, named by the version pinned in its
# go.mod; the same rule as build-tools.sh (it defines tool_dir).
env_tool_dir() {
	bash "$ENV_HERE/build-tools.sh" --dir "$1"
}

# env_kwok_stage NAME RESULT KEY=VALUE...: prints a KWOK Stage that makes
# running pods carrying all the given labels fail (RESULT=fail: phase Failed,
# every container terminated with exit code 1), hang (RESULT=hang: they stay
# Running for a day, so only a deadline or a deletion ends them) or succeed
# (RESULT=succeed: exit code 0, even for a pod no Job owns). Its weight
# outranks KWOK's own pod-complete stage (weight 0), which would otherwise
# complete a Job's pod at once; KWOK picks among matching stages by weight.
env_kwok_stage() {
	local name=$1 result=$2 kv
	shift 2
	cat <<EOS
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: $name
  labels:
    lodestore.io/kwok-stage: "${ENV_STAGE_ORIGIN:-static}"
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  weight: 100
  selector:
    matchLabels:
EOS
	for kv in "$@"; do
		printf '      %s: "%s"\n' "${kv%%=*}" "${kv#*=}"
	done
	cat <<'EOS'
    matchExpressions:
      - key: .metadata.deletionTimestamp
        operator: DoesNotExist
      - key: .status.phase
        operator: In
        values: [Running]
EOS
	case $result in
	fail)
		cat <<'EOS'
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Failed
      conditions:
      - type: Ready
        status: "False"
        reason: PodFailed
        lastTransitionTime: {{ $now | Quote }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: false
        restartCount: 0
        state:
          terminated:
            exitCode: 1
            reason: Error
            message: failed by the lodestore test environment (KWOK stage)
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
EOS
		;;
	succeed)
		cat <<'EOS'
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Succeeded
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: false
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
EOS
		;;
	hang)
		cat <<'EOS'
  delay:
    durationMilliseconds: 86400000
  next:
    event:
      type: Normal
      reason: LodestoreHangOver
      message: the lodestore test environment let this pod hang for a day
EOS
		;;
	*)
		env_log "env_kwok_stage: result must be fail, hang or succeed, not '$result'"
		return 2
		;;
	esac
}
