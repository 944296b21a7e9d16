/*
 * The controller's log (ctl_log, log.c): one line per message on stderr, "TIME LEVEL
 * message", the time from the controller's clock (its test offset included), levels above
 * --log-level left out, and a message longer than the line buffer written whole. The test
 * points stderr at a file and reads it back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_int.h"

/* Runs fn with stderr on a temporary file; returns what it wrote (owned by the caller). */
static char *capture(void (*fn)(const struct ctl *c), const struct ctl *c)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(f), 2) >= 0);
    fn(c);
    fflush(stderr);
    assert_true(dup2(saved, 2) >= 0);
    close(saved);
    long n = ftell(f);
    assert_true(n >= 0);
    char *out = util_calloc(1, (size_t)n + 1);
    rewind(f);
    assert_int_equal(fread(out, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return out;
}

static void log_levels(const struct ctl *c)
{
    ctl_log(c, 0, "policy %s/%s ignored: %s", "team", "etc", "no paths");
    ctl_log(c, 1, "started %s run %d", "team/etc-node-1", 7);
    ctl_log(c, 2, "a debug line %d", 1);
}

static void test_lines_and_levels(void **state)
{
    struct ctl c;
    memset(&c, 0, sizeof(c));
    c.opts.log_level = 1;
    /* The clock offset moves the stamp: 2000-01-01T00:00:00Z, far from now. */
    c.opts.clock_offset = 946684800 - (int64_t)time(NULL);
    char *out = capture(log_levels, &c);
    char *second = strchr(out, '\n');
    assert_non_null(second);
    second++;
    /* Within a few seconds of the offset clock: the stamp is the minute of 2000-01-01. */
    assert_memory_equal(out, "2000-01-01T00:0", 15);
    assert_non_null(strstr(out, "Z error policy team/etc ignored: no paths\n"));
    assert_memory_equal(second, "2000-01-01T00:0", 15);
    assert_non_null(strstr(second, "Z info started team/etc-node-1 run 7\n"));
    /* Two lines, the debug one left out at level 1. */
    assert_string_equal(strchr(second, '\n'), "\n");
    free(out);

    c.opts.log_level = 2;
    out = capture(log_levels, &c);
    assert_non_null(strstr(out, " debug a debug line 1\n"));
    free(out);
}

static void log_long(const struct ctl *c)
{
    char msg[5000];
    memset(msg, 'x', sizeof(msg) - 2);
    msg[sizeof(msg) - 2] = 'y';
    msg[sizeof(msg) - 1] = '\0';
    ctl_log(c, 0, "refused: %s", msg);
    ctl_log(c, 0, "%s", "after");
}

static void test_long_message_whole(void **state)
{
    struct ctl c;
    memset(&c, 0, sizeof(c));
    c.opts.log_level = 1;
    char *out = capture(log_long, &c);
    char *msg = strstr(out, " error refused: ");
    assert_non_null(msg);
    msg += strlen(" error refused: ");
    size_t n = strspn(msg, "x");
    assert_int_equal(n, 4998);
    assert_memory_equal(msg + n, "y\n", 2);
    assert_non_null(strstr(msg + n + 2, " error after\n"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_and_levels),
        cmocka_unit_test(test_long_message_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
