/*
 * The forget plan (internal/prune, docs/retention.md "Retention through storage"):
 * which keys a forget deletes and in what order, for catalogs built from listed
 * keys as `lode forget` and the controller build them. Neighbours whose names are
 * prefixes of each other (node/node-1, web/web-1) prove the scope.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "prune/prune.h"

static struct tz_db *test_db;

static int setup(void **state)
{
    struct util_err err = {0};
    if (tz_db_open(&test_db, NULL, &err) != 0) {
        fprintf(stderr, "tz database: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    tz_db_close(test_db);
    return 0;
}

/* "20260101T003000Z-0000000000000001" for day d (from 2026-01-01) at hh:mm UTC. */
static void make_id(char out[REPO_ID_LEN + 1], int64_t t, unsigned salt)
{
    uint8_t r[8] = {0};
    r[7] = (uint8_t)salt;
    repo_id_make(t, r, out);
}

#define T0 1767227400 /* 2026-01-01T00:30:00Z */

/* Adds the manifest of src at time t (and marks: "i", "s", "is"). */
static void add(struct repo_catalog *c, const char *src, int64_t t, const char *marks, char *id_out)
{
    char id[REPO_ID_LEN + 1], key[1200];
    make_id(id, t, 1);
    snprintf(key, sizeof(key), "snapshots/%s/%s.json", src, id);
    repo_catalog_add(c, key, t);
    for (const char *m = marks; m && *m; m++) {
        snprintf(key, sizeof(key), "snapshots/%s/%s.%s", src, id,
                 *m == 'i' ? "incomplete" : "suspicious");
        repo_catalog_add(c, key, t);
    }
    if (id_out)
        memcpy(id_out, id, sizeof(id));
}

/* keepLast 2 over two hosts whose names are prefixes of each other. */
static void test_two_hosts_keep_last(void **state)
{
    struct repo_catalog cat;
    struct prune_plan p;
    struct util_err err = {0};
    struct policy_retention rules = {.keep_last = 2};
    char ids[6][REPO_ID_LEN + 1], id1[3][REPO_ID_LEN + 1];

    repo_catalog_init(&cat);
    /* node: 6 nights; night 0 incomplete, night 1 incomplete and suspicious, night 2
     * suspicious, night 4 incomplete. */
    const char *marks[6] = {"i", "is", "s", "", "i", ""};
    for (int i = 0; i < 6; i++)
        add(&cat, "ops/web/node", T0 + i * 86400, marks[i], ids[i]);
    for (int i = 0; i < 3; i++)
        add(&cat, "ops/web/node-1", T0 + i * 86400, "", id1[i]);
    repo_catalog_finish(&cat);

    assert_int_equal(prune_plan_build(&p, &cat, "ops", "web", NULL, &rules, NULL, &err), 0);
    assert_int_equal(p.nhosts, 2);
    assert_string_equal(p.hosts[0].host, "node");
    assert_int_equal(p.hosts[0].n, 6);
    assert_string_equal(p.hosts[1].host, "node-1");
    assert_int_equal(p.hosts[1].n, 3);
    /* node: kept 5 (last), 4 (last; newest-good), 3 (newest-good), 2 and 1 (suspicious);
     * forgotten 0. node-1: kept 2, 1; forgotten 0. */
    assert_int_equal(p.kept, 7);
    assert_int_equal(p.forgotten, 2);
    assert_int_equal(p.reasons[0], 4); /* last */
    assert_int_equal(p.reasons[5], 4); /* newest-good: node 5, 3 (4 is incomplete); node-1 2, 1 */
    assert_int_equal(p.reasons[6], 2); /* suspicious */
    /* newest first within a host */
    assert_string_equal(prune_snapshot(&p, &p.hosts[0], 0)->id, ids[5]);
    assert_string_equal(prune_snapshot(&p, &p.hosts[0], 5)->id, ids[0]);
    assert_false(p.dec[p.hosts[0].from + 5].keep);

    assert_int_equal(p.nmanifests, 2);
    char want[2][200];
    snprintf(want[0], sizeof(want[0]), "snapshots/ops/web/node-1/%s.json", id1[0]);
    snprintf(want[1], sizeof(want[1]), "snapshots/ops/web/node/%s.json", ids[0]);
    /* bytewise: "node-1/" < "node/" ('-' < '/') */
    assert_string_equal(p.manifests[0], want[0]);
    assert_string_equal(p.manifests[1], want[1]);
    assert_int_equal(p.nmarks, 1);
    snprintf(want[0], sizeof(want[0]), "snapshots/ops/web/node/%s.incomplete", ids[0]);
    assert_string_equal(p.marks[0], want[0]);
    assert_int_equal(p.mark_of[0], 1);
    for (size_t i = 0; i < p.nmanifests; i++)
        assert_null(strstr(p.manifests[i], "suspicious"));
    prune_plan_free(&p);
    repo_catalog_free(&cat);
}

/* Marks follow their manifests: only those whose manifest is gone, sorted. */
static void test_marks_after_and_find(void **state)
{
    struct repo_catalog cat;
    struct prune_plan p;
    struct util_err err = {0};
    struct policy_retention rules = {.keep_last = 1};
    char ids[8][REPO_ID_LEN + 1];

    repo_catalog_init(&cat);
    for (int i = 0; i < 8; i++) /* the odd ones incomplete; 7 and 6 are kept */
        add(&cat, "ns/p/h", T0 + i * 3600, i % 2 ? "i" : "", ids[i]);
    repo_catalog_finish(&cat);
    assert_int_equal(prune_plan_build(&p, &cat, "ns", "p", "h", &rules, NULL, &err), 0);
    /* kept: 7 (last), 6 and 4 (newest-good); forgotten 0 1 2 3 5 */
    assert_int_equal(p.kept, 3);
    assert_int_equal(p.forgotten, 5);
    assert_int_equal(p.nmanifests, 5);
    assert_int_equal(p.nmarks, 3); /* 1, 3, 5 */
    for (size_t i = 1; i < p.nmanifests; i++)
        assert_true(strcmp(p.manifests[i - 1], p.manifests[i]) < 0);
    for (size_t i = 1; i < p.nmarks; i++)
        assert_true(strcmp(p.marks[i - 1], p.marks[i]) < 0);

    char key[200];
    snprintf(key, sizeof(key), "snapshots/ns/p/h/%s.json", ids[3]);
    ssize_t m3 = prune_manifest_find(&p, key);
    assert_true(m3 >= 0);
    assert_string_equal(p.manifests[m3], key);
    snprintf(key, sizeof(key), "snapshots/ns/p/h/%s.json", ids[7]); /* kept */
    assert_int_equal(prune_manifest_find(&p, key), -1);
    assert_int_equal(prune_manifest_find(&p, "snapshots/ns/p/h/x.json"), -1);

    /* Only manifest 3's deletion succeeded: only its mark goes. */
    bool gone[5] = {false};
    gone[m3] = true;
    const char *out[3];
    assert_int_equal(prune_marks_after(&p, gone, out), 1);
    snprintf(key, sizeof(key), "snapshots/ns/p/h/%s.incomplete", ids[3]);
    assert_string_equal(out[0], key);
    /* none gone: no mark */
    gone[m3] = false;
    assert_int_equal(prune_marks_after(&p, gone, out), 0);
    /* all gone: every mark, sorted */
    for (int i = 0; i < 5; i++)
        gone[i] = true;
    assert_int_equal(prune_marks_after(&p, gone, out), 3);
    for (int i = 0; i < 3; i++)
        assert_string_equal(out[i], p.marks[i]);
    prune_plan_free(&p);
    repo_catalog_free(&cat);
}

/* A snapshot of another policy, namespace or host: nothing is planned. */
static void test_scope(void **state)
{
    static const struct {
        const char *src, *host, *msg;
    } cases[] = {
        {"ops/web-1/node", NULL, "the listing of ops/web returned a snapshot of ops/web-1/node"},
        {"ops-1/web/node", NULL, "the listing of ops/web returned a snapshot of ops-1/web/node"},
        {"op/web/node", NULL, "the listing of ops/web returned a snapshot of op/web/node"},
        {"ops/web/node-1", "node", "the listing of ops/web returned a snapshot of ops/web/node-1"},
    };
    struct policy_retention rules = {.keep_last = 1};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct repo_catalog cat;
        struct prune_plan p;
        struct util_err err = {0};
        repo_catalog_init(&cat);
        for (int i = 0; i < 4; i++)
            add(&cat, "ops/web/node", T0 + i * 60, "", NULL);
        add(&cat, cases[c].src, T0, "", NULL);
        repo_catalog_finish(&cat);
        assert_int_equal(
            prune_plan_build(&p, &cat, "ops", "web", cases[c].host, &rules, NULL, &err), UTIL_EIO);
        assert_string_equal(err.msg, cases[c].msg);
        assert_int_equal(p.nmanifests, 0);
        assert_null(p.manifests);
        prune_plan_free(&p);
        repo_catalog_free(&cat);
    }
}

/* The engine's refusal (the same id at the same time twice) names the host. */
static void test_engine_error(void **state)
{
    struct repo_catalog cat;
    struct prune_plan p;
    struct util_err err = {0};
    struct policy_retention rules = {.keep_last = 1};

    repo_catalog_init(&cat);
    add(&cat, "ops/web/a", T0, "", NULL);
    add(&cat, "ops/web/a", T0 + 60, "", NULL);
    add(&cat, "ops/web/b", T0, "", NULL);
    add(&cat, "ops/web/b", T0, "", NULL); /* a listing that repeated a key */
    repo_catalog_finish(&cat);
    assert_int_equal(prune_plan_build(&p, &cat, "ops", "web", NULL, &rules, NULL, &err),
                     UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "host b: "));
    assert_int_equal(p.nmanifests, 0);
    assert_int_equal(p.forgotten, 0);
    prune_plan_free(&p);

    /* a negative rule */
    repo_catalog_free(&cat);
    repo_catalog_init(&cat);
    add(&cat, "ops/web/a", T0, "", NULL);
    repo_catalog_finish(&cat);
    rules.keep_last = -1;
    assert_int_equal(prune_plan_build(&p, &cat, "ops", "web", "a", &rules, NULL, &err),
                     UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "host a: "));
    prune_plan_free(&p);
    repo_catalog_free(&cat);
}

/* Nothing listed, and no rules: nothing to delete. */
static void test_empty_and_no_rules(void **state)
{
    struct repo_catalog cat;
    struct prune_plan p;
    struct util_err err = {0};

    repo_catalog_init(&cat);
    repo_catalog_finish(&cat);
    assert_int_equal(prune_plan_build(&p, &cat, "ops", "web", NULL, NULL, NULL, &err), 0);
    assert_int_equal(p.nhosts + p.kept + p.forgotten + p.nmanifests + p.nmarks, 0);
    prune_plan_free(&p);

    for (int i = 0; i < 5; i++)
        add(&cat, "ops/web/node", T0 + i * 86400, "i", NULL);
    repo_catalog_finish(&cat);
    assert_int_equal(prune_plan_build(&p, &cat, "ops", "web", "node", NULL, NULL, &err), 0);
    assert_int_equal(p.kept, 5);
    assert_int_equal(p.reasons[7], 5); /* no-rules */
    assert_int_equal(p.nmanifests, 0);
    prune_plan_free(&p);
    repo_catalog_free(&cat);
}

/* The zone counts: keepDaily 1 over 23:30Z and 00:30Z is one day in Kyiv (EET, +2), two in
 * UTC. */
static void test_zone(void **state)
{
    struct repo_catalog cat;
    struct prune_plan p;
    struct util_err err = {0};
    struct policy_retention rules = {.keep_daily = 2};
    struct tz_zone *kyiv = NULL;

    assert_int_equal(tz_zone_load(&kyiv, test_db, "Europe/Kyiv", &err), 0);
    repo_catalog_init(&cat);
    /* 2026-01-01 23:30Z .. 2026-01-03: four snapshots over two Kyiv days, three UTC days */
    const int64_t t[4] = {T0 + 23 * 3600, T0 + 24 * 3600, T0 + 47 * 3600, T0 + 48 * 3600};
    for (int i = 0; i < 4; i++)
        add(&cat, "ops/web/node", t[i], "i", NULL); /* incomplete: no newest-good keeps */
    repo_catalog_finish(&cat);
    assert_int_equal(prune_plan_build(&p, &cat, "ops", "web", NULL, &rules, NULL, &err), 0);
    size_t utc_forgotten = p.forgotten;
    assert_true(p.dec[1].keep); /* 47h: 2026-01-02 in UTC, a day of its own */
    assert_false(p.dec[2].keep);
    prune_plan_free(&p);
    assert_int_equal(prune_plan_build(&p, &cat, "ops", "web", NULL, &rules, kyiv, &err), 0);
    /* UTC: 2026-01-03 (48h), 2026-01-02 (47h) kept: 2 forgotten. Kyiv (+2): the 47h and 48h
     * ones are both 01-03 local, 23h and 24h both 01-02 local: 2 forgotten as well, but
     * different ones. */
    assert_int_equal(utc_forgotten, 2);
    assert_int_equal(p.forgotten, 2);
    assert_true(p.dec[0].keep);  /* 48h: newest */
    assert_false(p.dec[1].keep); /* 47h: same Kyiv day as 48h */
    assert_true(p.dec[2].keep);  /* 24h */
    assert_false(p.dec[3].keep); /* 23h */
    prune_plan_free(&p);
    tz_zone_free(kyiv);
    repo_catalog_free(&cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_hosts_keep_last),
        cmocka_unit_test(test_marks_after_and_find),
        cmocka_unit_test(test_scope),
        cmocka_unit_test(test_engine_error),
        cmocka_unit_test(test_empty_and_no_rules),
        cmocka_unit_test(test_zone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
