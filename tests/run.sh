#!/usr/bin/env bash
# Runs every test binary and script and prints one closing line:
#   tests: N passed, M failed
# N and M count test cases, summed from cmocka's "[  PASSED  ] k test(s)." and
# "[  FAILED  ] k test(s)" lines and from the scripts' "N passed, M failed" lines.
# A binary that crashes, leaks (valgrind) or prints no count is one failure, so a
# broken test can never vanish from the total.
#
# Environment: BUILD (where test binaries are), LODE (the lode binary the CLI tests
# run), VALGRIND=1 to run the unit binaries under valgrind (CLI scripts are then
# skipped: they ran in the sanitised pass). TESTS_FILTER: a substring of the paths to run.
# FAIL_DIGEST: a file to which each failing test's name and the last lines of its
# output are appended, so that tests/all.sh can repeat them where a log's tail shows.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export LODE=${LODE:-$BUILD/lode}
export LODE_ROOT=$PWD
passed=0
failed=0
failures=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT

count_output() { # name status seconds
    local name=$1 status=$2 secs=${3:-0} p f
    p=$(grep -Eo '\[  PASSED  \] [0-9]+ test' "$log" | awk '{s+=$4} END {if (NR) print s}')
    f=$(grep -Eo '\[  FAILED  \] [0-9]+ test' "$log" | awk '{s+=$4} END {if (NR) print s}')
    if [ -z "$p$f" ]; then
        # A script: its own closing line.
        local line
        line=$(grep -E '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
        if [ -n "$line" ]; then
            p=$(sed -E 's/^([A-Za-z-]+: )?([0-9]+) passed.*/\2/' <<<"$line")
            f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
        fi
    fi
    p=${p:-0}
    f=${f:-0}
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1 # crashed, leaked or exited non-zero without counting a failure
    fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
        f=1 # ran nothing: that is a defect, not a pass
        echo "!! $name ran no test" >&2
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$f" -ne 0 ]; then
        failures+=("$name")
        cat "$log"
        if [ -n "${FAIL_DIGEST:-}" ]; then
            # What failed, with the indented diagnostics under each failure (CI keeps
            # only the tail of the output), then the last lines for a crash.
            {
                echo "--- $name: $p passed, $f failed; what failed:"
                awk '/^not ok/ { show = 1; n = 0; print; next }
                     show && /^[ \t#]/ && n < 6 { print; n++; next }
                     { show = 0 }' "$log" | head -n 40
                echo "--- $name: its last lines:"
                tail -n 6 "$log"
            } >>"$FAIL_DIGEST"
        fi
    fi
    # The seconds each test took, so a slow one is seen where it is (docs/testing.md).
    printf '%-60s %4d passed %3d failed %5ds\n' "$name" "$p" "$f" "$secs"
}

# E2E=1: only the end-to-end scripts (tests/e2e/test_*.sh), which need the local
# control plane that tests/env/with-cluster.sh brings up around this run.
if [ "${E2E:-0}" = 1 ]; then
    # Two lanes at once (E2E_LANES=1: one after the other): the scripts that run Jobs on
    # real nodes (they call env_real_nodes_start) beside most others. Each script works
    # in namespaces of its own, and its controller watches only those; the lanes share
    # the control plane, which they barely load, and the real nodes belong to one lane.
    # Most of both lanes is waiting for minute slots, so together they take about as
    # long as the longer. Alone, after both: test_chart.sh, whose release runs a
    # controller that watches every namespace (it would act on the other lane's
    # policies), test_controller.sh, which restarts the shared kube-apiserver with etcd's
    # history compacted (every watch of the other lane, the kubelet's and the Job
    # controller's too, would break and relist in the middle of its waits), and last
    # test_env.sh, which takes the environment down.
    alone="tests/e2e/test_chart.sh tests/e2e/test_controller.sh tests/e2e/test_env.sh"
    all=$(ls tests/e2e/test_*.sh 2>/dev/null | sort)
    for t in $alone; do all=$(grep -vxF "$t" <<<"$all"); done
    nodes_lane=
    if [ "${E2E_LANES:-2}" -ge 2 ]; then
        nodes_lane=$(grep -l 'env_real_nodes_start' $all 2>/dev/null || true)
    fi
    lane_dir=$(mktemp -d)
    lane_pid=
    if [ -n "$nodes_lane" ]; then
        all=$(grep -L 'env_real_nodes_start' $all || true)
        (
            for t in $nodes_lane; do
                case "$t" in *"${TESTS_FILTER:-}"*) ;; *) continue ;; esac
                t0=$SECONDS
                bash "$t" >"$lane_dir/$(basename "$t").log" 2>&1
                echo "$t $? $((SECONDS - t0))" >>"$lane_dir/results"
            done
        ) &
        lane_pid=$!
    fi
    for t in $all $(ls $alone 2>/dev/null); do
        case "$t" in *"${TESTS_FILTER:-}"*) ;; *) continue ;; esac
        case " $alone " in
        *" $t "*)
            if [ -n "$lane_pid" ]; then
                wait "$lane_pid"
                lane_pid=
            fi
            ;;
        esac
        t0=$SECONDS
        bash "$t" >"$log" 2>&1
        count_output "$t" $? $((SECONDS - t0))
    done
    [ -z "$lane_pid" ] || wait "$lane_pid"
    main_log=$log
    if [ -f "$lane_dir/results" ]; then
        while read -r t rc secs; do
            log=$lane_dir/$(basename "$t").log
            count_output "$t (beside the others)" "$rc" "$secs"
        done <"$lane_dir/results"
    fi
    log=$main_log
    rm -rf "$lane_dir"
    echo
    [ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
    echo "tests: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
fi

for bin in $(find "$BUILD/tests/unit" -type f -name 'test_*' -perm -u+x 2>/dev/null | sort); do
    case "$bin" in *"${TESTS_FILTER:-}"*) ;; *) continue ;; esac
    t0=$SECONDS
    if [ "${VALGRIND:-0}" = 1 ]; then
        valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            "$bin" >"$log" 2>&1
    else
        "$bin" >"$log" 2>&1
    fi
    count_output "$bin" $? $((SECONDS - t0))
done

# The CLI scripts, then the page of lode ui (Vitest, and Debian's chromium driven by
# playwright-core: a missing browser or npm is a failure, never a skip).
if [ "${VALGRIND:-0}" != 1 ]; then
    for t in $(ls tests/cli/test_*.sh tests/ui/test_*.sh 2>/dev/null | sort); do
        case "$t" in *"${TESTS_FILTER:-}"*) ;; *) continue ;; esac
        t0=$SECONDS
        bash "$t" >"$log" 2>&1
        count_output "$t" $? $((SECONDS - t0))
    done
fi

echo
if [ ${#failures[@]} -gt 0 ]; then
    echo "failed: ${failures[*]}"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
