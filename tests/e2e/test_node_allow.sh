#!/usr/bin/env bash
# Who may back up a node (docs/security.md, "Who may back up a node"): a policy outside
# the controller's --allow-node-backups runs nothing, Ready=False with reason NotAllowed
# and the reason in its message, while one inside runs. Three policies on one node, one
# controller allowing its namespace under /srv only, and a second controller for another
# namespace that its allowlist does not name. Waits for one minute boundary.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
NS=e2e-allow-$(openssl rand -hex 3)
NS2=$NS-other
PIDS=()
cleanup() {
	env_stop_pids
	kc delete ns "$NS" "$NS2" --wait=false >/dev/null 2>&1
	env_delete_nodes "$NS-n" >/dev/null 2>&1
	rm -rf "$T_TMP"
}
trap cleanup EXIT

policy() { # NS NAME PATHS
	kc -n "$1" apply -f - >/dev/null <<EOP
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: $2}
spec:
  repository: main
  paths: $3
  nodeSelector: {role: $NS}
  schedule: {cron: "* * * * *", jitter: 0s}
EOP
}
cond() { env_get -n "$1" "backuppolicy/$2" "{.status.conditions[?(@.type==\"Ready\")].$3}"; }
ready_is() { [[ $(cond "$1" "$2" status) == "$3" && $(cond "$1" "$2" reason) == "$4" ]]; }
backups_of() { kc -n "$1" get backups -l "lodestore.io/policy=$2" -o name | wc -l; }
has_backup() { [[ $(backups_of "$1" "$2") -ge 1 ]]; }

env_crds
kc create namespace "$NS" >/dev/null
kc create namespace "$NS2" >/dev/null
env_repository "$NS" main
env_repository "$NS2" main
env_create_nodes 1 "$NS-n" "role=$NS"

out=$("$CTL" --allow-node-backups "ns:relative" --kubeconfig /nonexistent 2>&1)
check_contains "a prefix that is not absolute is refused at start" "$out" "must be absolute"

env_controller_start "$NS" inside --allow-node-backups "$NS:/srv,/var/lib/app" ||
	fail "the controller starts with --allow-node-backups"
env_controller_start "$NS2" outside --allow-node-backups "$NS" ||
	fail "a second controller starts"
policy "$NS" srv '[/srv/data, /var/lib/app]'
policy "$NS" etc '[/srv/data, /etc]'
policy "$NS2" any '[/srv/data]'

env_wait 30 "the policy outside the prefixes to be NotAllowed" ready_is "$NS" etc False NotAllowed &&
	pass "a path outside the allowed prefixes: Ready=False, NotAllowed" ||
	fail "a path outside the allowed prefixes: Ready=False, NotAllowed" "$(cond "$NS" etc message)"
check_contains "... and the message names the path and the flag" "$(cond "$NS" etc message)" \
	"/etc is outside the path prefixes namespace $NS may back up"
env_wait 30 "the policy of a namespace not listed to be NotAllowed" ready_is "$NS2" any False NotAllowed &&
	pass "a namespace not listed: Ready=False, NotAllowed" ||
	fail "a namespace not listed: Ready=False, NotAllowed" "$(cond "$NS2" any message)"
check_contains "... and the message says the namespace may not" "$(cond "$NS2" any message)" \
	"namespace $NS2 may not run node backups"

# A slot passes: the allowed policy runs, the others create nothing.
if env_wait 90 "the allowed policy's first Backup" has_backup "$NS" srv; then
	pass "a policy inside the allowlist runs"
else
	fail "a policy inside the allowlist runs" "$(cond "$NS" srv message)" "$(tail -n 20 "$T_TMP/inside.log")"
fi
check_eq "the policy outside the prefixes created no Backup" "$(backups_of "$NS" etc)" 0
check_eq "the policy of the namespace not listed created no Backup" "$(backups_of "$NS2" any)" 0
jobs_of() { kc -n "$1" get jobs -l "lodestore.io/policy=$2" -o name | wc -l; }
check_eq "... nor a Job" "$(($(jobs_of "$NS" etc) + $(jobs_of "$NS2" any)))" 0
finish
