/*
 * The shared rules of binding.h: a policy bound to its zone and schedule, the alert
 * limit, the jitter offset, node selection, when a success counts (a good snapshot),
 * when a host enrolled and where the overdue age starts. The controller and
 * `lode status` both call these, so what is asserted here is what both of them say.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "binding/binding.h"
#include "tz/tz_fixture.h"

static void parse(struct policy *p, const char *doc)
{
    struct policy_diags d;
    policy_diags_init(&d);
    assert_int_equal(policy_parse_yaml(p, doc, strlen(doc), tzf_db, &d), 0);
    policy_diags_free(&d);
}

#define HEAD                                                                                       \
    "apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata: {name: etc, namespace: "     \
    "ops}\nspec:\n  repository: main\n  paths: [/etc]\n"

static void test_bind_scheduled_and_unscheduled(void **state)
{
    struct policy p;
    struct binding b;
    struct util_err err = {0};

    parse(&p, HEAD "  schedule: {cron: \"0 2 * * *\", timezone: Europe/Berlin, jitter: 30m}\n");
    assert_int_equal(binding_init(&b, &p, tzf_db, &err), 0);
    assert_true(b.has_sched);
    assert_string_equal(tz_zone_name(b.zone), "Europe/Berlin");
    /* Daily: twice the longest gap (25h across the autumn change) plus the jitter. */
    int64_t lim = binding_alert_limit(&b, 1773100800 /* 2026-03-10 */);
    assert_int_equal(lim, 2 * 25 * 3600 + 1800);
    int64_t off = binding_offset(&b, "node-1");
    assert_true(off >= 0 && off < 1800);
    assert_int_equal(off, sched_jitter_offset("ops", "etc", "node-1", 1800));
    binding_close(&b);
    policy_free(&p);

    /* No schedule: UTC, no offset, and a limit only from alerts.maxAge. */
    parse(&p, HEAD);
    assert_int_equal(binding_init(&b, &p, tzf_db, &err), 0);
    assert_false(b.has_sched);
    assert_string_equal(tz_zone_name(b.zone), "UTC");
    assert_int_equal(binding_offset(&b, "node-1"), 0);
    assert_int_equal(binding_alert_limit(&b, 0), SCHED_NO_LIMIT);
    binding_close(&b);
    policy_free(&p);

    parse(&p, HEAD "  alerts: {maxAge: 3d}\n");
    assert_int_equal(binding_init(&b, &p, tzf_db, &err), 0);
    assert_int_equal(binding_alert_limit(&b, 0), 3 * 86400);
    binding_close(&b);
    policy_free(&p);

    /* A policy that is not valid: UTC, never a limit. */
    assert_int_equal(binding_init(&b, NULL, tzf_db, &err), 0);
    assert_int_equal(binding_alert_limit(&b, 0), SCHED_NO_LIMIT);
    assert_false(binding_selects(NULL, NULL, NULL));
    binding_close(&b);
}

static void test_zone_gone_from_the_database(void **state)
{
    struct policy p;
    struct binding b;
    struct util_err err = {0};
    parse(&p, HEAD "  schedule: {cron: \"0 2 * * *\", timezone: Europe/Berlin}\n");
    /* The validator accepted it; the database the binding reads no longer has it. */
    free(p.schedule.timezone);
    p.schedule.timezone = util_strdup("Mars/Olympus_Mons");
    assert_int_equal(binding_init(&b, &p, tzf_db, &err), UTIL_ENOENT);
    assert_non_null(strstr(err.msg, "Mars/Olympus_Mons"));
    binding_close(&b); /* safe after a failed init */
    policy_free(&p);
}

struct labels {
    const char *const *kv; /* key, value, ..., NULL */
};

static bool has_label(const void *node, const char *key, const char *value)
{
    const struct labels *l = node;
    for (size_t i = 0; l->kv[i] != NULL; i += 2)
        if (strcmp(l->kv[i], key) == 0 && strcmp(l->kv[i + 1], value) == 0)
            return true;
    return false;
}

static void test_selects_every_label(void **state)
{
    struct policy p;
    parse(&p, HEAD "  nodeSelector: {role: db, zone: a}\n");
    const char *const both[] = {"role", "db", "zone", "a", "extra", "x", NULL};
    const char *const one[] = {"role", "db", NULL};
    const char *const other[] = {"role", "db", "zone", "b", NULL};
    struct labels l1 = {both}, l2 = {one}, l3 = {other};
    assert_true(binding_selects(&p, has_label, &l1));
    assert_false(binding_selects(&p, has_label, &l2));
    assert_false(binding_selects(&p, has_label, &l3));
    policy_free(&p);

    parse(&p, HEAD); /* no nodeSelector: every node */
    assert_true(binding_selects(&p, has_label, &l2));
    policy_free(&p);
}

/* An invalid policy's hosts: its nodeSelector alone, when that part is well formed. */
static void test_selector_of_an_invalid_policy(void **state)
{
    const char *const dbl[] = {"role", "db", NULL};
    const char *const web[] = {"role", "web", NULL};
    struct labels ldb = {dbl}, lweb = {web};
    struct policy sel;
    json_t *obj = json_loads("{\"spec\":{\"schedule\":{\"cron\":\"0 0 30 2 *\"},"
                             "\"nodeSelector\":{\"role\":\"db\"}}}",
                             0, NULL);
    assert_true(binding_selector_of(obj, &sel));
    assert_true(binding_selects(&sel, has_label, &ldb));
    assert_false(binding_selects(&sel, has_label, &lweb));
    binding_selector_free(&sel);
    json_decref(obj);

    obj = json_loads("{\"spec\":{\"paths\":[\"relative\"]}}", 0, NULL); /* none: every node */
    assert_true(binding_selector_of(obj, &sel));
    assert_true(binding_selects(&sel, has_label, &lweb));
    binding_selector_free(&sel);
    json_decref(obj);

    const char *const broken[] = {"{\"spec\":{\"nodeSelector\":{\"role\":1}}}",
                                  "{\"spec\":{\"nodeSelector\":[\"role\"]}}"};
    for (size_t i = 0; i < 2; i++) {
        obj = json_loads(broken[i], 0, NULL);
        assert_false(binding_selector_of(obj, &sel));
        binding_selector_free(&sel); /* safe after a refusal */
        json_decref(obj);
    }
    /* More labels than the validator allows: the policy selects nothing. */
    json_t *many = json_object();
    for (int i = 0; i <= POLICY_MAX_NODE_SELECTOR; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%d", i);
        json_object_set_new(many, k, json_string("v"));
    }
    obj = json_pack("{s:{s:o}}", "spec", "nodeSelector", many);
    assert_false(binding_selector_of(obj, &sel));
    json_decref(obj);
}

static void test_success_time_and_overdue_start(void **state)
{
    assert_int_equal(binding_success_time(200, 100), 200);
    assert_int_equal(binding_success_time(0, 100), 100); /* no completionTime written */
    /* The age counts from the last success, else the later of node and policy creation. */
    assert_int_equal(sched_overdue_start(true, 500, 900, 800), 500);
    assert_int_equal(sched_overdue_start(false, 0, 900, 800), 900);
    assert_int_equal(sched_overdue_start(false, 0, 700, 800), 800);
    assert_false(sched_overdue(100, false, 0, 900, 800, 1000));
    assert_true(sched_overdue(100, false, 0, 900, 800, 1001));
}

/* A Backup object as the API returns it, with status members as JSON text. */
static json_t *backup_obj(const char *status)
{
    char *text = util_asprintf("{\"metadata\":{\"creationTimestamp\":\"2026-03-10T02:00:00Z\"},"
                               "\"status\":%s}",
                               status);
    json_t *obj = json_loads(text, 0, NULL);
    assert_non_null(obj);
    free(text);
    return obj;
}

/* Which Backup counts as the last success: `lode status` and the controller both ask. */
static void test_backup_success(void **state)
{
    static const struct {
        const char *status;
        bool counts;
    } cases[] = {
        /* A good snapshot: counts, at its completion. */
        {"{\"phase\":\"Succeeded\",\"completionTime\":\"2026-03-10T02:10:00Z\","
         "\"snapshot\":{\"id\":\"a\",\"incomplete\":false,\"suspicious\":false}}",
         true},
        /* Suspicious (ransomware still exits 0): does not count. */
        {"{\"phase\":\"Succeeded\",\"completionTime\":\"2026-03-10T02:10:00Z\","
         "\"snapshot\":{\"id\":\"a\",\"incomplete\":false,\"suspicious\":true}}",
         false},
        /* Incomplete: by the snapshot's mark, or by the reason alone. */
        {"{\"phase\":\"Succeeded\",\"reason\":\"incomplete\",\"completionTime\":"
         "\"2026-03-10T02:10:00Z\",\"snapshot\":{\"id\":\"a\",\"incomplete\":true}}",
         false},
        {"{\"phase\":\"Succeeded\",\"reason\":\"incomplete\"}", false},
        /* No snapshot reported: the agent's exit 0 says it was written whole. */
        {"{\"phase\":\"Succeeded\",\"completionTime\":\"2026-03-10T02:10:00Z\"}", true},
        /* Not a success at all. */
        {"{\"phase\":\"Failed\",\"reason\":\"job_failed\",\"snapshot\":{\"id\":\"a\"}}", false},
        {"{\"phase\":\"Running\"}", false},
        {"{}", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        json_t *b = backup_obj(cases[i].status);
        int64_t at = -1;
        assert_int_equal(binding_backup_success(b, &at), cases[i].counts);
        if (cases[i].counts) {
            int64_t want;
            assert_int_equal(util_parse_rfc3339("2026-03-10T02:10:00Z", &want, NULL), 0);
            assert_int_equal(at, want);
        }
        json_decref(b);
    }
    /* No completionTime: the creation (binding_success_time). */
    json_t *b = backup_obj("{\"phase\":\"Succeeded\"}");
    int64_t at = 0, created;
    assert_true(binding_backup_success(b, &at));
    assert_int_equal(util_parse_rfc3339("2026-03-10T02:00:00Z", &created, NULL), 0);
    assert_int_equal(at, created);
    json_decref(b);
}

/* The enrolment from a BackupPolicy object's status, as `lode status` reads it. */
static void test_enrolled(void **state)
{
    int64_t rec, node = 1000, now = 2000000000;
    assert_int_equal(util_parse_rfc3339("2026-05-01T00:00:00Z", &rec, NULL), 0);
    json_t *kept = json_loads("{\"status\":{\"enrolledHosts\":{\"node-1\":"
                              "\"2026-05-01T00:00:00Z\",\"bad\":3}}}",
                              0, NULL);
    json_t *none = json_loads("{\"status\":{\"startedSlots\":{}}}", 0, NULL);
    assert_int_equal(binding_enrolled(kept, "node-1", 0, node, now), rec);
    /* Kept for others but not for this host (or not a time): first seen, now. */
    assert_int_equal(binding_enrolled(kept, "node-2", 0, node, now), now);
    assert_int_equal(binding_enrolled(kept, "bad", 0, node, now), now);
    /* A status from before the record: the node's creation. */
    assert_int_equal(binding_enrolled(none, "node-1", 0, node, now), node);
    assert_int_equal(binding_enrolled(NULL, "node-1", 0, node, now), node);
    /* Seen selected later than the record: then. */
    assert_int_equal(binding_enrolled(kept, "node-1", rec + 60, node, now), rec + 60);
    json_decref(kept);
    json_decref(none);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind_scheduled_and_unscheduled),
        cmocka_unit_test(test_zone_gone_from_the_database),
        cmocka_unit_test(test_selects_every_label),
        cmocka_unit_test(test_selector_of_an_invalid_policy),
        cmocka_unit_test(test_success_time_and_overdue_start),
        cmocka_unit_test(test_backup_success),
        cmocka_unit_test(test_enrolled),
    };
    return cmocka_run_group_tests(tests, tzf_setup, tzf_teardown);
}
