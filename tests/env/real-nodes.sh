#!/usr/bin/env bash
# Real nodes for the local test environment: per node, Debian's containerd (with runc and
# the standard CNI plugins) and a kubelet built from the Kubernetes module, registered
# with the environment's apiserver. docs/testing.md ("Real nodes") says what they prove
# and what they cost.
#
#   tests/env/real-nodes.sh up N    starts N nodes (cluster-up.sh runs it when
#                                   LODE_REAL_NODES=N); returns once all are Ready
#   tests/env/real-nodes.sh down    stops them (cluster-down.sh runs it first): no
#                                   kubelet, containerd, shim or container left, nothing
#                                   mounted under the environment, no cgroup of theirs,
#                                   the kernel settings the kubelet changed put back
#
# Node i is named ${LODE_REAL_NODE_PREFIX:-lode-node}-i and labelled
# lodestore.io/real-node=true (KWOK leaves such nodes alone). Everything of it lives under
# $ENV_DIR/nodes/<name>/: containerd's root, state and socket, the kubelet's root
# directory, pod logs and certificates, the CNI configuration, the logs of both. Its
# kubelet listens on a port chosen free on 127.0.0.1; its pods' cgroups are under
# /lodestore-<name> in every cgroup v1 hierarchy, so two nodes never share one.
#
# Images are never pulled: containerd imports the pause image (tests/env/pause/pause.c,
# built static into a scratch image by buildah, cached by its source's hash) and
# Lodestore's image (tests/env/build-image.sh --oci-archive), the latter also under the
# name tests give their Jobs, lodestore.invalid/agent:e2e.
#
# Needs root, containerd and runc (Debian's, make setup), the CNI plugins in
# /usr/lib/cni, gcc, buildah, and a kernel with cgroup v1 (the kubelet is told
# failCgroupV1: false) or v2.
set -euo pipefail
set +m # no job control: a daemon started with & must not lead a process group
# shellcheck source=tests/env/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

timeout_s=${LODE_ENV_TIMEOUT:-120}
NODES_DIR=$ENV_DIR/nodes
AGENT_IMAGE_NAME=lodestore.invalid/agent:e2e
PAUSE_IMAGE_NAME=localhost/lodestore/pause:env
# The settings the kubelet sets at start (its "kernel tunables"); down puts back what
# they were before the first node started.
TUNABLES=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops
	kernel/keys/root_maxkeys kernel/keys/root_maxbytes)

record() { printf '%s=%q\n' "$1" "$2" >>"$ENV_STATE"; }

need() {
	local c
	[[ $(id -u) == 0 ]] || env_die "real-nodes: containerd and the kubelet need root"
	for c in containerd containerd-shim-runc-v2 runc ctr gcc buildah ip unshare nsenter; do
		command -v "$c" >/dev/null || env_die "real-nodes: $c is missing (make setup installs it)"
	done
	[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] ||
		env_die "real-nodes: the CNI plugins are missing from /usr/lib/cni (containernetworking-plugins)"
}

# The pause image as an OCI archive, built once per content of pause.c and compiler.
pause_archive() {
	local key out tmp c
	key=$( (cat "$ENV_HERE/pause/pause.c" && gcc --version | head -n 1) | sha256sum | cut -c1-16)
	out=$ENV_CACHE/image/pause-$key.oci.tar
	if [[ -s $out ]]; then
		echo "$out"
		return
	fi
	mkdir -p "$ENV_CACHE/image"
	tmp=$(mktemp -d "$ENV_CACHE/image/.pause.XXXXXX")
	gcc -std=c17 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -static -Os -s \
		-o "$tmp/pause" "$ENV_HERE/pause/pause.c" >&2
	local bah=(buildah --root "$tmp/storage" --runroot "$tmp/run" --storage-driver vfs)
	c=$("${bah[@]}" from scratch)
	"${bah[@]}" copy "$c" "$tmp/pause" /pause >/dev/null
	"${bah[@]}" config --entrypoint '["/pause"]' --user 65535:65535 "$c"
	"${bah[@]}" commit -q "$c" "$PAUSE_IMAGE_NAME" >/dev/null
	"${bah[@]}" push -q "$PAUSE_IMAGE_NAME" "oci-archive:$tmp/pause.oci.tar:$PAUSE_IMAGE_NAME" >&2
	mv "$tmp/pause.oci.tar" "$out"
	"${bah[@]}" rm -a >/dev/null 2>&1 || true
	"${bah[@]}" rmi -a -f >/dev/null 2>&1 || true
	rm -rf "$tmp"
	echo "$out"
}

# cgroup v1: the node's cgroup root in every hierarchy (cpuset needs its cpus and mems
# before a child can be made); cgroup v2: one directory.
cgroup_root_make() { # NAME
	local h
	if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
		mkdir -p "/sys/fs/cgroup/lodestore-$1"
		return
	fi
	for h in /sys/fs/cgroup/*/; do
		[[ -f $h/cgroup.procs ]] || continue
		mkdir -p "$h/lodestore-$1"
		if [[ -f $h/cpuset.cpus ]]; then
			cat "$h/cpuset.cpus" >"$h/lodestore-$1/cpuset.cpus"
			cat "$h/cpuset.mems" >"$h/lodestore-$1/cpuset.mems"
		fi
	done
}

# Removes the node's cgroups depth first; a cgroup that still holds a process stays
# (and is reported by the caller).
cgroup_root_remove() { # NAME
	local d
	for d in /sys/fs/cgroup/lodestore-"$1" /sys/fs/cgroup/*/lodestore-"$1"; do
		[[ -d $d ]] || continue
		find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
	true
}

cgroups_left() { # NAME: prints the node's cgroups still present
	local d
	for d in /sys/fs/cgroup/lodestore-"$1" /sys/fs/cgroup/*/lodestore-"$1"; do
		[[ -d $d ]] && echo "$d"
	done
	true
}

containerd_config() { # NAME DIR INDEX
	local name=$1 d=$2 i=$3
	cat <<EOF
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
oom_score = 0
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = ""
[debug]
  address = ""
  level = "warn"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE_NAME"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # Pods get an OOM score no lower than containerd's own: lowering one needs
  # CAP_SYS_RESOURCE, which some machines (this sandbox) do not grant even to root,
  # and runc would then fail every sandbox.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$d/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni"
    max_conf_num = 1
EOF
}

# Pods without hostNetwork get an address on a bridge of their own node, with no route
# out (no masquerading): docs/testing.md says why the agent uses the host's network.
cni_config() { # NAME DIR INDEX
	cat <<EOF
{
  "cniVersion": "1.0.0",
  "name": "lode-$3",
  "plugins": [
    {"type": "bridge", "bridge": "lode-br$3", "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.$3.0/24"}]],
              "dataDir": "$2/cni/ipam"}},
    {"type": "loopback"}
  ]
}
EOF
}

kubelet_config() { # NAME DIR PORT
	cat <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $3
readOnlyPort: 0
healthzPort: 0
# Its API (logs, exec) is closed: the kubelet refuses a loopback node IP, so the
# apiserver could only reach it at the machine's own address, where it does not listen.
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://$2/containerd.sock
imageServiceEndpoint: unix://$2/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /lodestore-$1
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
podLogsDir: $2/kubelet/pod-logs
volumePluginDir: $2/kubelet/volume-plugins
registerNode: true
staticPodPath: ""
resolvConf: ""
syncFrequency: 10s
nodeStatusUpdateFrequency: 5s
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
shutdownGracePeriod: 0s
EOF
}

kubeconfig() { # the kubelet acts as admin: there is no Node authorizer here
	cat <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: lodestore-test
    cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$ENV_DIR/pki/ca.crt"}
users:
  - name: kubelet
    user: {token: "$ADMIN_TOKEN"}
contexts:
  - name: kubelet
    context: {cluster: lodestore-test, user: kubelet}
current-context: kubelet
EOF
}

ctr_of() { # DIR ARGS...
	local d=$1
	shift
	ctr --address "$d/containerd.sock" --namespace k8s.io "$@"
}

node_ready() { # NAME
	[[ $("$KUBECTL" --kubeconfig "$KUBECONFIG" --request-timeout 10s get node "$1" \
		-o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

up() {
	local n=${1:?real-nodes up N} prefix=${LODE_REAL_NODE_PREFIX:-lode-node} i name d port t
	local kubelet_dir pause image image_name cpid names=()
	need
	# shellcheck disable=SC1090
	source "$ENV_STATE"
	kubelet_dir=$(env_tool_dir kubelet)
	bash "$ENV_HERE/build-tools.sh" kubelet >&2
	pause=$(pause_archive)
	image=$(bash "$ENV_HERE/build-image.sh" --oci-archive)
	# The archive names the image localhost/lodestore:<key>, <key> its directory's suffix.
	image_name=${image%/image.oci.tar}
	image_name=localhost/lodestore:${image_name##*/lodestore-}
	mkdir -p "$NODES_DIR"
	# The kubelet's device-plugin socket has a fixed path under /var/lib/kubelet; down
	# removes that directory only if it was not there before.
	if [[ ! -e /var/lib/kubelet && ! -f $NODES_DIR/var-lib-kubelet ]]; then
		touch "$NODES_DIR/var-lib-kubelet"
	fi
	if [[ ! -f $NODES_DIR/tunables ]]; then
		for t in "${TUNABLES[@]}"; do
			echo "$t $(cat "/proc/sys/$t")"
		done >"$NODES_DIR/tunables"
	fi
	# Each node's /srv is bound over this machine's in the node's mount namespace.
	mkdir -p /srv
	record REAL_NODE_KUBELET_BIN "$kubelet_dir/kubelet"
	record REAL_NODE_CONTAINERD_BIN "$(readlink -f "$(command -v containerd)")"
	for ((i = 0; i < n; i++)); do
		name=$prefix-$i
		names+=("$name")
		# Recorded before anything of the node starts, so that down (cluster-up's
		# cleanup after a failure) finds whatever did.
		record REAL_NODES "${names[*]}"
		d=$NODES_DIR/$name
		mkdir -p "$d/containerd" "$d/cni/ipam" "$d/kubelet/pod-logs"
		containerd_config "$name" "$d" "$i" >"$d/containerd.toml"
		cni_config "$name" "$d" "$i" >"$d/cni/10-lode.conflist"
		cgroup_root_make "$name"
		# The node's own mount namespace, where its /srv is $d/srv: containerd, its shims
		# and containers, and the kubelet (nsenter, below) live in it. Mounts of this
		# machine made later still appear in it (slave propagation); its own (the
		# containers' roots, Secret volumes, network namespaces) never leave it and go
		# with its last process.
		mkdir -p "$d/srv"
		setsid unshare --mount --propagation slave -- sh -c 'mount --bind "$1" /srv && exec containerd --config "$2"' \
			sh "$d/srv" "$d/containerd.toml" </dev/null >"$ENV_LOGS/containerd-$name.log" 2>&1 &
		cpid=$!
		record "REAL_NODE_${i}_CONTAINERD_PID" "$cpid"
		env_wait "$timeout_s" "containerd of $name" ctr_of "$d" version ||
			env_die "real-nodes: containerd of $name does not answer; see $ENV_LOGS/containerd-$name.log"
		ctr_of "$d" images import "$pause" >/dev/null
		ctr_of "$d" images import "$image" >/dev/null
		ctr_of "$d" images tag --force "$image_name" "$AGENT_IMAGE_NAME" >/dev/null
		port=$(env_free_ports 1)
		kubelet_config "$name" "$d" "$port" >"$d/kubelet.yaml"
		kubeconfig >"$d/kubeconfig"
		chmod 600 "$d/kubeconfig"
		setsid nsenter --mount="/proc/$cpid/ns/mnt" -- "$kubelet_dir/kubelet" --config "$d/kubelet.yaml" --kubeconfig "$d/kubeconfig" \
			--root-dir "$d/kubelet" --cert-dir "$d/kubelet/pki" --hostname-override "$name" \
			--node-labels "lodestore.io/real-node=true,kubernetes.io/hostname=$name" \
			</dev/null >"$ENV_LOGS/kubelet-$name.log" 2>&1 &
		record "REAL_NODE_${i}_KUBELET_PID" "$!"
		record "REAL_NODE_${i}_NAME" "$name"
		env_log "real-nodes: started $name (containerd and kubelet on 127.0.0.1:$port)"
	done
	for ((i = 0; i < n; i++)); do
		name=$prefix-$i
		if ! env_wait "$timeout_s" "node $name to be Ready" node_ready "$name"; then
			env_die "real-nodes: $name is not Ready; last lines of $ENV_LOGS/kubelet-$name.log:
$(tail -n 15 "$ENV_LOGS/kubelet-$name.log")"
		fi
	done
	env_log "real-nodes: ${names[*]} Ready"
}

stop_pid() { # WHAT PID BIN: SIGTERM, SIGKILL after 20 s; false if it still runs
	local what=$1 pid=$2 bin=$3 deadline
	env_pid_is "$pid" "$bin" || return 0
	kill -TERM "$pid" 2>/dev/null
	deadline=$((SECONDS + 20))
	while env_pid_is "$pid" "$bin" && ((SECONDS < deadline)); do sleep 0.1; done
	if env_pid_is "$pid" "$bin"; then
		env_log "real-nodes: $what (pid $pid) ignored SIGTERM for 20s; killing it"
		kill -KILL "$pid" 2>/dev/null
		env_wait 10 "$what to die" eval "! env_pid_is $pid $bin"
	fi
	! env_pid_is "$pid" "$bin"
}

# PIDs of the shims of the containerd whose socket is SOCK (a shim outlives its
# containerd when a task is left; its command line names the socket).
shims_of() { # SOCK
	local p
	for p in $(pgrep -f '^[^ ]*containerd-shim' || true); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "-address $1 " && echo "$p"
	done
	true
}

mounts_under() { # DIR: mount points under DIR, deepest first
	awk -v d="$1/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

down() {
	local status=0 i name d pid t v pid_var
	# shellcheck disable=SC1090
	source "$ENV_STATE"
	[[ -n ${REAL_NODES:-} ]] || return 0
	i=0
	for name in $REAL_NODES; do
		d=$NODES_DIR/$name
		pid_var=REAL_NODE_${i}_KUBELET_PID
		stop_pid "kubelet of $name" "${!pid_var:-}" "$REAL_NODE_KUBELET_BIN" || status=1
		# The kubelet is gone, so nothing restarts a container: kill every task (pods'
		# containers and their pause sandboxes) and delete it with its container.
		if ctr_of "$d" version >/dev/null 2>&1; then
			for t in $(ctr_of "$d" tasks ls -q 2>/dev/null); do
				ctr_of "$d" tasks kill --signal SIGKILL "$t" >/dev/null 2>&1 || true
			done
			for t in $(ctr_of "$d" tasks ls -q 2>/dev/null); do
				env_wait 10 "task $t to stop" eval "ctr_of '$d' tasks ls | awk '\$1 == \"$t\" && \$3 == \"STOPPED\"' | grep -q ." || true
				ctr_of "$d" tasks delete --force "$t" >/dev/null 2>&1 || true
			done
			for t in $(ctr_of "$d" containers ls -q 2>/dev/null); do
				ctr_of "$d" containers delete "$t" >/dev/null 2>&1 || true
			done
		fi
		pid_var=REAL_NODE_${i}_CONTAINERD_PID
		stop_pid "containerd of $name" "${!pid_var:-}" "$REAL_NODE_CONTAINERD_BIN" || status=1
		for pid in $(shims_of "$d/containerd.sock"); do
			env_log "real-nodes: a shim of $name (pid $pid) outlived containerd; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		done
		env_wait 10 "the shims of $name to exit" eval "[[ -z \$(shims_of '$d/containerd.sock') ]]" || status=1
		for t in $(mounts_under "$d"); do
			umount "$t" 2>/dev/null || umount -l "$t" 2>/dev/null || true
		done
		if [[ -n $(mounts_under "$d") ]]; then
			env_log "real-nodes: still mounted under $d: $(mounts_under "$d" | tr '\n' ' ')"
			status=1
		fi
		cgroup_root_remove "$name"
		if [[ -n $(cgroups_left "$name") ]]; then
			env_log "real-nodes: cgroups of $name left: $(cgroups_left "$name" | tr '\n' ' ')"
			status=1
		fi
		if ip link show "lode-br$i" >/dev/null 2>&1; then
			ip link delete "lode-br$i" || status=1
		fi
		# The kubelet links each container's log from this fixed directory.
		if [[ -d /var/log/containers ]]; then
			find /var/log/containers -maxdepth 1 -lname "$d/*" -delete
		fi
		i=$((i + 1))
	done
	if [[ $status == 0 && -f $NODES_DIR/var-lib-kubelet ]]; then
		rm -rf /var/lib/kubelet "$NODES_DIR/var-lib-kubelet"
	fi
	if [[ -f $NODES_DIR/tunables ]]; then
		while read -r t v; do
			[[ $(cat "/proc/sys/$t") == "$v" ]] || echo "$v" >"/proc/sys/$t"
		done <"$NODES_DIR/tunables"
	fi
	[[ $status == 0 ]] || return 1
	# The Node objects go too (when the apiserver still answers), and the state forgets
	# the nodes, so a later `up` starts afresh in the same environment.
	for name in $REAL_NODES; do
		"$KUBECTL" --kubeconfig "$KUBECONFIG" --request-timeout 10s delete node "$name" \
			--ignore-not-found >/dev/null 2>&1 || true
	done
	sed -i '/^REAL_NODE/d' "$ENV_STATE"
	env_log "real-nodes: $REAL_NODES stopped; nothing of theirs runs or is mounted"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	case ${1:-} in
	up) up "${2:-}" ;;
	down) down ;;
	*)
		echo "usage: $0 up N | down" >&2
		exit 2
		;;
	esac
fi
