# Helpers for CLI tests: source this, call check_* and finish at the end.
# Each check prints "ok - NAME" or "not ok - NAME" with what differed; finish prints
# the closing "N passed, M failed" line that tests/run.sh sums and exits non-zero
# on any failure.
set -u
: "${LODE:?LODE must name the lode binary}"
: "${LODE_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
case "$LODE" in /*) ;; *) LODE="$LODE_ROOT/$LODE" ;; esac
T_PASSED=0
T_FAILED=0
T_TMP=$(mktemp -d)
trap 'rm -rf "$T_TMP"' EXIT

pass() { T_PASSED=$((T_PASSED + 1)); echo "ok - $1"; }
fail() { T_FAILED=$((T_FAILED + 1)); echo "not ok - $1"; shift; printf '    %s\n' "$@"; }

# run CMD...: runs lode with the arguments, leaving $OUT, $ERR and $RC.
run() {
    "$LODE" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
    RC=$?
    OUT=$(cat "$T_TMP/out")
    ERR=$(cat "$T_TMP/err")
}

check_rc() { # name expected
    if [ "$RC" -eq "$2" ]; then pass "$1"; else fail "$1" "exit $RC, want $2" "stdout: $OUT" "stderr: $ERR"; fi
}

check_eq() { # name got want
    if [ "$2" == "$3" ]; then pass "$1"; else fail "$1" "got:  $2" "want: $3"; fi
}

check_contains() { # name haystack needle
    if [[ "$2" == *"$3"* ]]; then pass "$1"; else fail "$1" "missing: $3" "in: $2"; fi
}

finish() {
    echo "$T_PASSED passed, $T_FAILED failed"
    [ "$T_FAILED" -eq 0 ]
}
