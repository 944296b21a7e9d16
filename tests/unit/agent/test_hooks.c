/*
 * spec.hooks run by the agent (agent/hooks.h), with real processes: output into the
 * result (bounded), the environment a hook is told, a command that does not exist, a
 * failure's exit status, a timeout that kills the hook, a hook that forks and leaves a
 * child (killed with it), huge output (bounded in memory), nice and the I/O priority
 * inherited, and a phase that stops at a failure unless onError says continue.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/hooks.h"

static char tmpdir[] = "/tmp/lode-hooks-XXXXXX";

static struct policy_hook sh(const char *script, int64_t timeout)
{
    struct policy_hook h = {.name = "t", .timeout = timeout, .argc = 3};
    h.argv = calloc(4, sizeof(char *));
    h.argv[0] = "/bin/sh";
    h.argv[1] = "-c";
    h.argv[2] = (char *)script;
    return h;
}

static const struct hook_env env_before = {
    .root = "/", .phase = "before", .policy = "ops/db", .host = "node-1"};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether process pid is gone or a zombie (killed, not yet reaped by whoever reaps it). */
static bool ended(int pid)
{
    char path[64], st[512] = "";
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return true;
    if (fgets(st, sizeof(st), f) == NULL)
        st[0] = '\0';
    fclose(f);
    return strstr(st, ") Z ") != NULL;
}

/* A SIGKILL is delivered soon, not at once: wait for it, at most 5 s. */
static bool ends_soon(int pid)
{
    uint64_t until = now_ns() + 5000000000ull;
    while (!ended(pid)) {
        if (now_ns() > until)
            return false;
        sched_yield();
    }
    return true;
}

static void test_success_and_env(void **state)
{
    /* The agent's secrets and settings are not the hook's. */
    setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    setenv("LODE_KEY_FILE", "/etc/lode/key", 1);
    struct policy_hook h = sh("echo one; echo \"$LODE_HOOK_PHASE $LODE_POLICY $LODE_HOST "
                              "${LODE_BACKUP_RESULT-none} $LODE_SNAPSHOT\"; pwd; "
                              "echo \"${AWS_SECRET_ACCESS_KEY-unset} ${LODE_KEY_FILE-unset}\"",
                              10);
    struct hook_result r;
    struct hook_env e = {.root = "/",
                         .phase = "after",
                         .policy = "ops/db",
                         .host = "node-1",
                         .result = "succeeded",
                         .snapshot = "20261204T180000Z-0123456789abcdef"};
    assert_int_equal(hook_run(&h, &e, 0, NULL, &r), 0);
    assert_true(r.ok);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.tail, "one\nafter ops/db node-1 succeeded "
                                "20261204T180000Z-0123456789abcdef\n/\nunset unset\n");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("LODE_KEY_FILE");
    free(h.argv);
}

static void test_failure_and_missing_command(void **state)
{
    struct policy_hook h = sh("echo about to fail; echo 'disk full' >&2; exit 3", 10);
    struct hook_result r;
    assert_int_equal(hook_run(&h, &env_before, 0, NULL, &r), UTIL_EIO);
    assert_int_equal(r.exit_code, 3);
    assert_string_equal(r.error, "hook t failed with exit status 3; its last output: disk full");
    free(h.argv);

    char *argv[] = {"/no/such/program", NULL};
    struct policy_hook m = {.name = "m", .timeout = 10, .argv = argv, .argc = 1};
    assert_int_equal(hook_run(&m, &env_before, 0, NULL, &r), UTIL_EIO);
    assert_int_equal(r.exit_code, 127);
    assert_non_null(strstr(r.error, "hook m could not run (exit status 127)"));
    assert_non_null(strstr(r.error, "cannot run /no/such/program: No such file or directory"));
}

static void test_timeout_kills_the_group(void **state)
{
    char *script = NULL, pidfile[64];
    snprintf(pidfile, sizeof(pidfile), "%s/child", tmpdir);
    script = util_asprintf("sleep 60 & echo $! > %s; wait", pidfile);
    struct policy_hook h = sh(script, 1);
    struct hook_result r;
    uint64_t t0 = now_ns();
    assert_int_equal(hook_run(&h, &env_before, 0, NULL, &r), UTIL_EIO);
    assert_true(now_ns() - t0 < 5000000000ull);
    assert_true(r.timed_out);
    assert_int_equal(r.signal, 9);
    assert_non_null(strstr(r.error, "hook t timed out after 1s and was killed"));
    /* The sleep it started is gone too (or a zombie waiting for its reaper). */
    FILE *f = fopen(pidfile, "r");
    assert_non_null(f);
    int child = 0;
    assert_int_equal(fscanf(f, "%d", &child), 1);
    fclose(f);
    assert_true(ends_soon(child));
    free(h.argv);
    free(script);

    /* The run's deadline comes before the hook's own timeout. */
    struct policy_hook d = sh("sleep 60", 600);
    t0 = now_ns();
    assert_int_equal(hook_run(&d, &env_before, now_ns() + 500000000ull, NULL, &r), UTIL_EIO);
    assert_true(r.timed_out);
    assert_true(now_ns() - t0 < 5000000000ull);
    free(d.argv);
}

/* A hook that forks a child and exits at once: the child, still running, is killed. */
static void test_leftover_children_are_killed(void **state)
{
    char pidfile[64];
    snprintf(pidfile, sizeof(pidfile), "%s/left", tmpdir);
    char *script = util_asprintf("(sleep 60; echo late) & echo $! > %s; echo done", pidfile);
    struct policy_hook h = sh(script, 30);
    struct hook_result r;
    uint64_t t0 = now_ns();
    assert_int_equal(hook_run(&h, &env_before, 0, NULL, &r), 0);
    assert_true(now_ns() - t0 < 5000000000ull); /* not held by the child's open pipe */
    assert_string_equal(r.tail, "done\n");
    FILE *f = fopen(pidfile, "r");
    int child = 0;
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%d", &child), 1);
    fclose(f);
    assert_true(ends_soon(child));
    free(h.argv);
    free(script);
}

static void test_huge_output_is_bounded(void **state)
{
    struct policy_hook h = sh("head -c 3000000 /dev/zero; echo; echo end", 60);
    struct hook_result r;
    assert_int_equal(hook_run(&h, &env_before, 0, NULL, &r), 0);
    assert_int_equal(r.output_bytes, 3000000 + 1 + 4);
    assert_true(r.log_cut);
    assert_int_equal(strlen(r.tail), HOOK_TAIL);
    assert_string_equal(r.tail + HOOK_TAIL - 5, "\nend\n");
    assert_int_equal(r.tail[0], '?'); /* the NULs before it, as '?' */
    free(h.argv);
}

static void test_phase_stops_unless_continue(void **state)
{
    struct policy_hook v[3] = {sh("exit 1", 10), sh("exit 2", 10), sh("echo third", 10)};
    struct hook_outcome out[3];
    size_t n = 0;
    char why[640] = "";
    v[0].name = "first";
    v[0].on_error_continue = true;
    v[1].name = "second";
    assert_int_equal(hooks_phase(v, 3, &env_before, 0, NULL, out, &n, why, sizeof(why)), UTIL_EIO);
    assert_int_equal(n, 2); /* the third never ran */
    assert_true(out[0].continued);
    assert_false(out[1].continued);
    assert_string_equal(why, "before-hook failed (onError: fail): hook second failed with exit "
                             "status 2");
    v[1].on_error_continue = true;
    n = 0;
    assert_int_equal(hooks_phase(v, 3, &env_before, 0, NULL, out, &n, why, sizeof(why)), 0);
    assert_int_equal(n, 3);
    assert_string_equal(out[2].r.tail, "third\n");
    for (int i = 0; i < 3; i++)
        free(v[i].argv);
}

/* nice and the I/O priority of the agent are its hooks' (read back from the hook's /proc). */
static void test_nice_and_ioprio_inherited(void **state)
{
    assert_int_equal(setpriority(PRIO_PROCESS, 0, 7), 0);
    /* ioprio_set(IOPRIO_WHO_PROCESS, self, best-effort (2) << 13 | level 5) */
    assert_int_equal(syscall(SYS_ioprio_set, 1, 0, (2 << 13) | 5), 0);
    struct policy_hook h = sh("cut -d' ' -f19 /proc/self/stat; "
                              "python3 -c 'import ctypes,os; "
                              "print(ctypes.CDLL(None).syscall(252, 1, 0))' 2>/dev/null || echo x",
                              30);
    struct hook_result r;
    assert_int_equal(hook_run(&h, &env_before, 0, NULL, &r), 0);
    char want[64];
    snprintf(want, sizeof(want), "7\n%d\n", (2 << 13) | 5);
    assert_string_equal(r.tail, want);
    free(h.argv);
}

static int setup(void **state)
{
    return mkdtemp(tmpdir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    char *cmd = util_asprintf("rm -rf %s", tmpdir);
    int rc = system(cmd);
    free(cmd);
    return rc == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success_and_env),
        cmocka_unit_test(test_failure_and_missing_command),
        cmocka_unit_test(test_timeout_kills_the_group),
        cmocka_unit_test(test_leftover_children_are_killed),
        cmocka_unit_test(test_huge_output_is_bounded),
        cmocka_unit_test(test_phase_stops_unless_continue),
        cmocka_unit_test(test_nice_and_ioprio_inherited),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
