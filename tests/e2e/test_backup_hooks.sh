#!/usr/bin/env bash
# spec.hooks end to end (docs/policy.md, "spec.hooks"): lode backup against versitygw of
# tests/env/, with the node's root "/" (so the hooks see this machine's programs):
#   - a before-hook writes a dump that the snapshot then contains (restored and compared);
#   - its nice value and I/O priority are the policy's, read from the hook's /proc;
#   - a before-hook that times out: onError fail means no snapshot and says why; onError
#     continue goes on;
#   - an after-hook is told of a failure (LODE_BACKUP_RESULT, LODE_BACKUP_ERROR) and of a
#     success (LODE_SNAPSHOT);
#   - a command that does not exist; LODE_HOOKS_ALLOWED=0 (a namespace the operator did
#     not allow) runs no hook at all.
# Run it as  tests/env/with-cluster.sh bash tests/e2e/test_backup_hooks.sh
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"
LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
trap 'rm -rf "$T_TMP"' EXIT

export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/hooks-e2e-$(openssl rand -hex 4)
env_lode_s3
export LODE_KEY_FILE=$T_TMP/key
printf 'correct horse battery staple\n' >"$LODE_KEY_FILE"
chmod 600 "$LODE_KEY_FILE" # lode refuses a key file open to others
run() { # NAME: runs the rest, keeps stdout/stderr/exit in OUT ERR RC
	local name=$1
	shift
	"$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.err"
	RC=$?
	OUT=$(cat "$T_TMP/$name.out")
	ERR=$(cat "$T_TMP/$name.err")
}
data=$T_TMP/data
mkdir -p "$data"
echo keep >"$data/file"
# policy NAME HOOKS-YAML: a policy of $data with those hooks and nice/ionice limits
policy() {
	cat >"$T_TMP/$1.yaml" <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: $1, namespace: db}
spec:
  repository: main
  paths: [$data]
  limits: {nice: 11, ioniceClass: best-effort, ioniceLevel: 6}
  hooks:
$2
EOF
	echo "$T_TMP/$1.yaml"
}
backup() { run "$1" "$LODE" backup --policy "$2" --host h1 --root / --output json; }

run init "$LODE" init
check_eq "lode init exits 0" "$RC" 0

# ---- a dump written by a before-hook is in the snapshot; nice and ioprio inherited ----
p=$(policy dump "    before:
    - name: dump
      command: [/bin/sh, -c, \"echo 'CREATE TABLE t;' > $data/db.sql; cut -d' ' -f19 /proc/self/stat > $data/nice; python3 -c 'import ctypes; print(ctypes.CDLL(None).syscall(252, 1, 0))' > $data/ioprio; echo dumped\"]
    after:
    - name: tell
      command: [/bin/sh, -c, 'echo \"\$LODE_BACKUP_RESULT \$LODE_SNAPSHOT\" > $T_TMP/told']")
run validate "$LODE" validate "$p"
check_eq "the hooks policy is valid" "$RC" 0
backup dump "$p"
check_eq "backup with hooks exits 0" "$RC" 0
id=$(jq -r .snapshot.id <<<"$OUT")
check_eq "the hooks in the JSON" "$(jq -c '[.hooks[] | [.name, .phase, .result, .exitCode]]' <<<"$OUT")" \
	'[["dump","before","succeeded",0],["tell","after","succeeded",0]]'
check_contains "the hook's output is in the agent's log" "$ERR" "hook dump: dumped"
check_eq "the after-hook is told the result and the snapshot" "$(cat "$T_TMP/told")" "succeeded $id"
check_eq "the hook ran at the policy's nice" "$(cat "$data/nice")" 11
check_eq "the hook ran at the policy's I/O priority (best-effort 6)" "$(cat "$data/ioprio")" $(((2 << 13) | 6))
run restore "$LODE" restore "$id" --target "$T_TMP/r"
check_eq "restore exits 0" "$RC" 0
check_eq "the snapshot contains the dump" "$(cat "$T_TMP/r$data/db.sql")" "CREATE TABLE t;"

# ---- a before-hook that times out: fail, then continue ----
p=$(policy slowfail "    before:
    - {name: slow, command: [/bin/sleep, '30'], timeout: 1s}
    after:
    - name: tell
      command: [/bin/sh, -c, 'echo \"\$LODE_BACKUP_RESULT: \$LODE_BACKUP_ERROR\" > $T_TMP/told2']")
t0=$SECONDS
backup slowfail "$p"
check_eq "a before-hook timing out with onError fail: exit 1" "$RC" 1
check_eq "no snapshot" "$(jq .snapshot <<<"$OUT")" null
check_contains "the error says which hook and why" "$(jq -r .error <<<"$OUT")" \
	"before-hook failed (onError: fail): hook slow timed out after 1s and was killed"
[[ $((SECONDS - t0)) -lt 15 ]] && pass "the hook was killed at its timeout" || fail "the hook was killed at its timeout"
check_contains "the after-hook is told of the failure" "$(cat "$T_TMP/told2")" "failed: before-hook failed"
p=$(policy slowgo "    before:
    - {name: slow, command: [/bin/sleep, '30'], timeout: 1s, onError: continue}")
backup slowgo "$p"
check_eq "a before-hook timing out with onError continue: exit 0" "$RC" 0
check_eq "it is reported timed out and continued" "$(jq -c '.hooks[0] | [.result, .continued]' <<<"$OUT")" '["timedOut",true]'

# ---- a command that does not exist ----
p=$(policy missing "    before:
    - {name: nope, command: [/no/such/pg_dump]}")
backup missing "$p"
check_eq "a missing command fails the run" "$RC" 1
check_contains "it says the command could not run" "$(jq -r .error <<<"$OUT")" "hook nope could not run (exit status 127)"

# ---- a namespace the operator did not allow ----
p=$(policy denied "    before:
    - {name: dump, command: [/bin/sh, -c, 'touch $T_TMP/ran']}")
LODE_HOOKS_ALLOWED=0 backup denied "$p"
check_eq "hooks not allowed: exit 1" "$RC" 1
check_contains "it says where to allow them" "$(jq -r .error <<<"$OUT")" "spec.hooks are not allowed in namespace db"
[[ ! -e $T_TMP/ran ]] && pass "no hook ran" || fail "no hook ran"
finish
