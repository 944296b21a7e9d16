/*
 * The shared rules of binding.h: a policy bound to its zone and schedule, the alert
 * limit, the jitter offset, node selection, when a success counts and where the
 * overdue age starts. The controller and `lode status` both call these, so what is
 * asserted here is what both of them say.
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind_scheduled_and_unscheduled),
        cmocka_unit_test(test_zone_gone_from_the_database),
        cmocka_unit_test(test_selects_every_label),
        cmocka_unit_test(test_selector_of_an_invalid_policy),
        cmocka_unit_test(test_success_time_and_overdue_start),
    };
    return cmocka_run_group_tests(tests, tzf_setup, tzf_teardown);
}
