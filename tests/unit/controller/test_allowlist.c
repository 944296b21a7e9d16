/*
 * Who may back up a node (controller/state.h, ctl_allowlist_*; docs/security.md, "Who may
 * back up a node"): the flag's syntax, namespaces, path prefixes, and a refused policy
 * kept as not valid.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "state.h"

static void spec_with(struct policy *p, char **paths, size_t n)
{
    memset(p, 0, sizeof(*p));
    p->paths = paths;
    p->npaths = n;
}

static void test_syntax(void **state)
{
    (void)state;
    struct ctl_allowlist a = {0};
    struct util_err err = {0};
    assert_int_equal(ctl_allowlist_add(&a, "backup", &err), 0);
    assert_int_equal(ctl_allowlist_add(&a, "team-a:/srv/team-a/,/var/log/team-a", &err), 0);
    assert_int_equal(a.n, 2);
    assert_int_equal(a.v[0].nprefixes, 0);
    assert_int_equal(a.v[1].nprefixes, 2);
    assert_string_equal(a.v[1].prefixes[0], "/srv/team-a");
    static const char *const bad[] = {"",         ":/etc",          "ns:etc",
                                      "ns:/etc,", "ns:/srv/../etc", "ns:/srv/./x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err.msg[0] = '\0';
        assert_int_equal(ctl_allowlist_add(&a, bad[i], &err), UTIL_EINVAL);
        assert_true(strlen(err.msg) > 0);
    }
    assert_int_equal(a.n, 2);
    ctl_allowlist_free(&a);
}

static void test_refuses(void **state)
{
    (void)state;
    struct ctl_allowlist a = {0};
    struct util_err err = {0};
    struct policy p;
    char *etc[] = {"/etc"};
    char *srv[] = {"/srv/team-a/db", "/srv/team-a"};
    char *sneaky[] = {"/srv/team-a/x", "/srv/team-ab"};
    assert_int_equal(ctl_allowlist_add(&a, "backup", &err), 0);
    assert_int_equal(ctl_allowlist_add(&a, "team-a:/srv/team-a", &err), 0);

    spec_with(&p, etc, 1);
    assert_null(ctl_allowlist_refuses(&a, "backup", &p));
    char *why = ctl_allowlist_refuses(&a, "team-b", &p);
    assert_non_null(why);
    assert_non_null(strstr(why, "namespace team-b may not run node backups"));
    free(why);
    why = ctl_allowlist_refuses(&a, "team-a", &p);
    assert_non_null(strstr(why, "/etc is outside"));
    free(why);
    spec_with(&p, srv, 2);
    assert_null(ctl_allowlist_refuses(&a, "team-a", &p));
    /* A prefix holds what continues it after "/", not a longer name. */
    spec_with(&p, sneaky, 2);
    why = ctl_allowlist_refuses(&a, "team-a", &p);
    assert_non_null(strstr(why, "/srv/team-ab is outside"));
    free(why);

    /* "*" lets every namespace; "/" every path. */
    assert_int_equal(ctl_allowlist_add(&a, "*:/", &err), 0);
    spec_with(&p, etc, 1);
    assert_null(ctl_allowlist_refuses(&a, "team-b", &p));
    ctl_allowlist_free(&a);

    /* An empty list lets nothing. */
    why = ctl_allowlist_refuses(&a, "backup", &p);
    assert_non_null(why);
    free(why);
}

static const char *const policy_json =
    "{\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\",\"metadata\":{"
    "\"name\":\"etc\",\"namespace\":\"team-b\",\"uid\":\"u\",\"creationTimestamp\":"
    "\"2026-01-01T00:00:00Z\"},\"spec\":{\"repository\":\"main\",\"paths\":[\"/etc\"],"
    "\"nodeSelector\":{\"role\":\"db\"},\"schedule\":{\"cron\":\"0 3 * * *\"}}}";

static void test_policy_kept_not_valid(void **state)
{
    (void)state;
    struct tz_db *db = NULL;
    struct util_err err = {0};
    assert_int_equal(tz_db_open(&db, NULL, &err), 0);
    json_t *obj = json_loads(policy_json, 0, NULL);
    struct ctl_allowlist a = {0};
    assert_int_equal(ctl_allowlist_add(&a, "backup", &err), 0);

    struct ctl_policy p;
    assert_int_equal(ctl_policy_from_json(&p, obj, db, 0, &err), 0);
    assert_true(p.valid);
    ctl_policy_apply_allowlist(&p, obj, &a, db);
    assert_false(p.valid);
    assert_true(p.not_allowed);
    assert_non_null(strstr(p.invalid_message, "namespace team-b"));
    /* Its hosts are still counted by its nodeSelector. */
    assert_true(p.has_selector);
    ctl_policy_free(&p);

    /* Allowed: untouched. */
    assert_int_equal(ctl_allowlist_add(&a, "team-b:/etc", &err), 0);
    assert_int_equal(ctl_policy_from_json(&p, obj, db, 0, &err), 0);
    ctl_policy_apply_allowlist(&p, obj, &a, db);
    assert_true(p.valid);
    assert_false(p.not_allowed);
    ctl_policy_free(&p);

    ctl_allowlist_free(&a);
    json_decref(obj);
    tz_db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_refuses),
        cmocka_unit_test(test_policy_kept_not_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
