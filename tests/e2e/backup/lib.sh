# Helpers of the scripts that run lode's storage commands against versitygw
# (tests/e2e/test_backup.sh, test_backup_meta.sh, test_tamper.sh); sourced, never run.

# policy NAME PATHS-FLOW [LIMITS-YAML...]: writes a policy file of namespace e2e for
# the repository "main" into $T_TMP/NAME.yaml and prints its path.
policy() {
	local name=$1 paths=$2 f=$T_TMP/$1.yaml
	shift 2
	{
		printf 'apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\n'
		printf 'metadata: {name: %s, namespace: e2e}\n' "$name"
		printf 'spec:\n  repository: main\n  paths: %s\n' "$paths"
		if [[ $# -gt 0 ]]; then
			printf '  limits:\n'
			printf '    %s\n' "$@"
		fi
	} >"$f"
	echo "$f"
}

# run ARGS...: runs lode; its stdout, stderr and exit code in OUT, ERR and RC.
run() {
	"$LODE" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	RC=$?
	OUT=$(cat "$T_TMP/out")
	ERR=$(cat "$T_TMP/err")
}
