/*
 * Events paced per (object, type, reason) and combined, with a fake clock: the burst goes
 * at once, the rest are held and go as one Event per interval, keys do not share a pace,
 * the combined message is bounded, and idle keys are forgotten.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eventagg.h"

struct sent {
    char key[64];
    size_t n;
    char message[1024];
};

struct got {
    struct sent v[8];
    size_t n;
};

static void take_cb(const char *key, size_t n, const char *message, void *arg)
{
    struct got *g = arg;
    assert_true(g->n < 8);
    snprintf(g->v[g->n].key, sizeof(g->v[0].key), "%s", key);
    g->v[g->n].n = n;
    snprintf(g->v[g->n].message, sizeof(g->v[0].message), "%s", message);
    g->n++;
}

static void test_burst_then_combined(void **state)
{
    struct ctl_eventagg a;
    struct got g = {0};
    ctl_eventagg_init(&a, 10000, 2);
    assert_int_equal(ctl_eventagg_due(&a), UINT64_MAX);
    /* The burst goes at once. */
    assert_true(ctl_eventagg_offer(&a, "p/BackupStarted", "started on n1", 1000));
    assert_true(ctl_eventagg_offer(&a, "p/BackupStarted", "started on n2", 1001));
    /* Then held, and combined. */
    assert_false(ctl_eventagg_offer(&a, "p/BackupStarted", "started on n3", 1002));
    assert_false(ctl_eventagg_offer(&a, "p/BackupStarted", "started on n4", 1003));
    /* Another key keeps its own pace. */
    assert_true(ctl_eventagg_offer(&a, "q/BackupStarted", "started on m1", 1004));
    uint64_t due = ctl_eventagg_due(&a);
    assert_true(due > 1002 && due <= 1002 + 10000);
    ctl_eventagg_take(&a, due - 1, false, take_cb, &g);
    assert_int_equal(g.n, 0); /* not yet */
    ctl_eventagg_take(&a, due, false, take_cb, &g);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.v[0].key, "p/BackupStarted");
    assert_int_equal(g.v[0].n, 2);
    assert_string_equal(g.v[0].message, "2 similar Events combined: started on n3; started on n4");
    assert_int_equal(ctl_eventagg_due(&a), UINT64_MAX);
    /* The send used the token: the next one waits a whole interval. */
    assert_false(ctl_eventagg_offer(&a, "p/BackupStarted", "started on n5", due + 1));
    assert_true(ctl_eventagg_due(&a) >= due + 10000 - 1);
    /* A stop sends what is held at once; a single held Event goes as it was. */
    g.n = 0;
    ctl_eventagg_take(&a, due + 2, true, take_cb, &g);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.v[0].n, 1);
    assert_string_equal(g.v[0].message, "started on n5");
    ctl_eventagg_close(&a);
}

/* The combined message stays under the bound; the rest are counted. */
static void test_message_bounded(void **state)
{
    struct ctl_eventagg a;
    struct got g = {0};
    char msg[64];
    ctl_eventagg_init(&a, 1000, 1);
    assert_true(ctl_eventagg_offer(&a, "k", "first", 0));
    for (int i = 0; i < 200; i++) {
        snprintf(msg, sizeof(msg), "backup of slot 2026-03-10T02:00 started on node-%03d", i);
        assert_false(ctl_eventagg_offer(&a, "k", msg, 1));
    }
    ctl_eventagg_take(&a, 1000, false, take_cb, &g);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.v[0].n, 200);
    assert_true(strlen(g.v[0].message) < CTL_EVENTAGG_MESSAGE_MAX + 64);
    assert_non_null(strstr(g.v[0].message, "200 similar Events combined: backup of slot"));
    assert_non_null(strstr(g.v[0].message, "node-000; "));
    const char *more = strstr(g.v[0].message, "; and ");
    assert_non_null(more);
    unsigned long omitted = strtoul(more + 6, NULL, 10);
    assert_true(omitted > 150 && omitted < 200);
    ctl_eventagg_close(&a);
}

/* A key with nothing held and a full bucket is forgotten: its next Event goes at once. */
static void test_idle_keys_forgotten(void **state)
{
    struct ctl_eventagg a;
    struct got g = {0};
    ctl_eventagg_init(&a, 1000, 1);
    assert_true(ctl_eventagg_offer(&a, "k", "one", 0));
    assert_false(ctl_eventagg_offer(&a, "k", "two", 10));
    ctl_eventagg_take(&a, 1000, false, take_cb, &g);
    assert_int_equal(g.n, 1);
    assert_int_equal(util_map_get(&a.keys, "k") != NULL, 1);
    ctl_eventagg_take(&a, 1500, false, take_cb, &g); /* not idle long enough */
    assert_non_null(util_map_get(&a.keys, "k"));
    ctl_eventagg_take(&a, 2000, false, take_cb, &g);
    assert_null(util_map_get(&a.keys, "k"));
    assert_int_equal(g.n, 1);
    assert_true(ctl_eventagg_offer(&a, "k", "three", 2001));
    ctl_eventagg_close(&a);
}

/* The pace: a burst at once, then one per interval; credit grows with time, up to the burst. */
static void test_pace(void **state)
{
    struct ctl_pace p = {0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ctl_pace_wait(&p, 10000, 3, 5000), 0);
        ctl_pace_spend(&p, 10000);
    }
    assert_int_equal(ctl_pace_wait(&p, 10000, 3, 5000), 10000);
    /* Asking spends nothing. */
    assert_int_equal(ctl_pace_wait(&p, 10000, 3, 9000), 6000);
    assert_int_equal(ctl_pace_wait(&p, 10000, 3, 15000), 0);
    ctl_pace_spend(&p, 10000);
    assert_int_equal(ctl_pace_wait(&p, 10000, 3, 15000), 10000);
    /* A long quiet spell gives back the whole burst, no more. */
    assert_int_equal(ctl_pace_wait(&p, 10000, 3, 100000), 0);
    for (int i = 0; i < 3; i++)
        ctl_pace_spend(&p, 10000);
    assert_int_equal(ctl_pace_wait(&p, 10000, 3, 100000), 10000);
    /* A spend beyond the credit (a forced write) leaves none, not a wrapped number. */
    ctl_pace_spend(&p, 10000);
    assert_int_equal(ctl_pace_wait(&p, 10000, 3, 100000), 10000);
}

/* Runs queuing behind the rate limit: said once per slot, only when late with requests waiting. */
static void test_queue_warning(void **state)
{
    char msg[512];
    int64_t warned = 0;
    int64_t slot = 1773108000; /* 2026-03-10T02:00:00Z */
    assert_false(ctl_queue_warning(4.9, 30, 50, slot, &warned, msg, sizeof(msg)));
    assert_false(ctl_queue_warning(20, 0, 50, slot, &warned, msg, sizeof(msg)));
    assert_int_equal(warned, 0);
    assert_true(ctl_queue_warning(12.4, 340, 50, slot, &warned, msg, sizeof(msg)));
    assert_int_equal(warned, slot);
    assert_string_equal(msg,
                        "runs of the slot at 2026-03-10T02:00:00Z start late (one 12 s after its "
                        "run time): they queue behind the controller's client-side rate limit "
                        "(--qps 50, 340 requests waiting); a slot stays on time while runs x "
                        "requests per run / jitter window <= --qps (docs/operator.md, \"Requests "
                        "a run makes\")");
    /* Once per slot; the next slot is said again. */
    assert_false(ctl_queue_warning(30, 500, 50, slot, &warned, msg, sizeof(msg)));
    assert_true(ctl_queue_warning(30, 500, 50, slot + 86400, &warned, msg, sizeof(msg)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_combined), cmocka_unit_test(test_message_bounded),
        cmocka_unit_test(test_idle_keys_forgotten), cmocka_unit_test(test_pace),
        cmocka_unit_test(test_queue_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
