/*
 * The validator and the CRD agree on every limit: the documents of crd_cases.h,
 * made from crd/backuppolicies.yaml, get from the validator the verdict the schema
 * gives them, in both forms (the YAML file lode validate reads and the JSON object
 * the controller reads); the numbers policy.h states are the CRD's; and the CRD's
 * defaults are the validator's.
 *
 *   test_crd_limits --write-cases DIR
 * writes the same documents as DIR/NNN.json with DIR/cases.tsv ("NNN<TAB>valid or
 * invalid<TAB>what") and DIR/zones.txt (the zone names of valid documents), for
 * tests/cli/test_crd_limits.sh (lode validate) and tests/e2e/test_crd_limits.sh (the
 * API server).
 */
#include "policy_test.h"

#include <errno.h>
#include <sys/stat.h>

#include "crd_cases.h"

static struct crd_cases cases;

static int setup(void **state)
{
    struct util_err err = {0};
    char *path = crd_cases_default_path();
    int rc = crd_cases_load(&cases, path, &err);
    if (rc != 0)
        print_error("%s\n", err.msg);
    free(path);
    return rc;
}

static int teardown(void **state)
{
    crd_cases_free(&cases);
    return 0;
}

/* Every limit of the schema has cases, and no example contradicts the schema. */
static void test_every_limit_has_cases(void **state)
{
    for (size_t i = 0; i < cases.nunknown; i++)
        print_message("no cases for %s: teach tests/unit/policy/helper_crd_cases.c\n",
                      cases.unknown[i]);
    for (size_t i = 0; i < cases.nproblems; i++)
        print_message("%s\n", cases.problems[i]);
    assert_int_equal(cases.nunknown, 0);
    assert_int_equal(cases.nproblems, 0);
    /* The walk reached every part of the schema (a vacuous walk would pass the above). */
    assert_true(cases.n > 150);
    assert_non_null(crd_cases_limit(&cases, "metadata.name", "maxLength"));
    assert_non_null(crd_cases_limit(&cases, "spec.limits", "x-kubernetes-validations"));
    assert_non_null(crd_cases_limit(&cases, "spec.retention.keepMonthly", "maximum"));
    assert_non_null(crd_cases_limit(&cases, "spec.nodeSelector{}", "maxLength"));
}

static void expect_limit(const char *field, const char *keyword, long want)
{
    const struct crd_limit *l = crd_cases_limit(&cases, field, keyword);
    if (l == NULL)
        print_message("the CRD has no %s for %s\n", keyword, field);
    assert_non_null(l);
    if (strtol(l->value, NULL, 10) != want)
        print_message("%s %s: the CRD says %s, policy.h %ld\n", field, keyword, l->value, want);
    assert_int_equal(strtol(l->value, NULL, 10), want);
}

/* The numbers policy.h names are the CRD's, so docs and messages quote the cluster's. */
static void test_numbers_are_the_crds(void **state)
{
    static const char *const durations[] = {"spec.schedule.jitter", "spec.schedule.catchUpWindow",
                                            "spec.retention.keepWithin", "spec.limits.maxRuntime",
                                            "spec.alerts.maxAge"};

    expect_limit("spec.paths", "maxItems", POLICY_MAX_PATHS);
    expect_limit("spec.paths[]", "maxLength", POLICY_MAX_PATH_BYTES);
    expect_limit("spec.nodeSelector", "maxProperties", POLICY_MAX_NODE_SELECTOR);
    expect_limit("spec.schedule.cron", "maxLength", POLICY_MAX_CRON_CHARS);
    expect_limit("spec.limits.uploadRate", "maxLength", POLICY_MAX_RATE_CHARS);
    for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++)
        expect_limit(durations[i], "maxLength", POLICY_MAX_DURATION_CHARS);
}

/* The verdict of one form; prints the errors when it is not the CRD's. */
static bool agrees(const struct crd_case *c, const char *form, int rc, const struct policy_diags *d)
{
    if ((rc == 0) == c->valid)
        return true;
    print_message("%s form: %s: the CRD %s it, the validator %s it\n", form, c->what,
                  c->valid ? "accepts" : "refuses", rc == 0 ? "accepts" : "refuses");
    for (size_t i = 0; i < d->n; i++)
        print_message("    %s: %s\n", d->v[i].path, d->v[i].message);
    return false;
}

/* Each document, in each form, gets the CRD's verdict. All disagreements are listed. */
static void test_validator_agrees(void **state)
{
    size_t wrong = 0;

    for (size_t i = 0; i < cases.n; i++) {
        const struct crd_case *c = &cases.v[i];
        char *text = json_dumps(c->doc, JSON_INDENT(2));
        struct policy p;
        struct policy_diags d;
        int rc;

        policy_diags_init(&d);
        rc = policy_parse_yaml(&p, text, strlen(text), NULL, &d);
        wrong += !agrees(c, "YAML", rc, &d);
        if (rc == 0)
            policy_free(&p);
        policy_diags_free(&d);

        rc = policy_parse_json(&p, c->doc, NULL, &d);
        wrong += !agrees(c, "JSON", rc, &d);
        if (rc == 0)
            policy_free(&p);
        policy_diags_free(&d);
        free(text);
    }
    assert_int_equal(wrong, 0);
}

/* The fields a default fills, as text, for comparing two parses. */
static char *fingerprint(const struct policy *p)
{
    return util_asprintf("timezone=%s jitter=%lld catchUpWindow=%lld maxRuntime=%lld",
                         p->schedule.timezone ? p->schedule.timezone : "(none)",
                         (long long)p->schedule.jitter, (long long)p->schedule.catch_up_window,
                         (long long)p->limits.max_runtime);
}

static char *parse_fingerprint(json_t *doc)
{
    struct policy p;
    struct policy_diags d;
    char *fp;

    policy_diags_init(&d);
    if (policy_parse_json(&p, doc, NULL, &d) != 0) {
        for (size_t i = 0; i < d.n; i++)
            print_message("%s: %s\n", d.v[i].path, d.v[i].message);
        fail_msg("a default made the document invalid");
    }
    fp = fingerprint(&p);
    policy_free(&p);
    policy_diags_free(&d);
    return fp;
}

/* A field left out means what the CRD's default says. */
static void test_defaults_agree(void **state)
{
    size_t seen = 0;

    for (size_t i = 0; i < cases.nlimits; i++) {
        const struct crd_limit *l = &cases.limits[i];
        json_t *without, *with, *m, *dflt;
        char *parent, *leaf, *a, *b;

        if (strcmp(l->keyword, "default") != 0)
            continue;
        parent = util_strdup(l->field);
        leaf = strrchr(parent, '.');
        assert_non_null(leaf);
        *leaf++ = '\0';
        without = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[s], s:{s:s}}}", "apiVersion",
                            "lodestore.io/v1alpha1", "kind", "BackupPolicy", "metadata", "name",
                            "d", "spec", "repository", "main", "paths", "/etc", "schedule", "cron",
                            "0 2 * * *");
        m = json_object_get(without, "spec");
        assert_true(strncmp(parent, "spec.", 5) == 0 && strchr(parent + 5, '.') == NULL);
        if (json_object_get(m, parent + 5) == NULL)
            json_object_set_new(m, parent + 5, json_object());
        with = json_deep_copy(without);
        dflt = json_loads(l->value, JSON_DECODE_ANY, NULL);
        if (dflt == NULL)
            dflt = json_string(l->value);
        json_object_set_new(json_object_get(json_object_get(with, "spec"), parent + 5), leaf, dflt);
        a = parse_fingerprint(without);
        b = parse_fingerprint(with);
        if (strcmp(a, b) != 0)
            print_message("%s: default %s: left out %s, written %s\n", l->field, l->value, a, b);
        assert_string_equal(a, b);
        seen++;
        free(a);
        free(b);
        json_decref(without);
        json_decref(with);
        free(parent);
    }
    assert_int_equal(seen, 4); /* timezone, jitter, catchUpWindow, maxRuntime */
}

/* ---- --write-cases ---- */

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    int rc = 0;
    if (f == NULL) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 2;
    }
    if (fputs(text, f) == EOF)
        rc = 2;
    if (fclose(f) != 0)
        rc = 2;
    if (rc != 0)
        fprintf(stderr, "%s: cannot write\n", path);
    return rc;
}

static int write_cases(const char *dir)
{
    struct util_buf index, zones;
    char *path;
    int rc = 0;

    if (setup(NULL) != 0)
        return 2;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "%s: %s\n", dir, strerror(errno));
        teardown(NULL);
        return 2;
    }
    util_buf_init(&index);
    util_buf_init(&zones);
    util_buf_puts(&zones, "");
    for (size_t i = 0; i < cases.n && rc == 0; i++) {
        const struct crd_case *c = &cases.v[i];
        const json_t *zone = json_object_get(
            json_object_get(json_object_get(c->doc, "spec"), "schedule"), "timezone");
        char *text = json_dumps(c->doc, JSON_INDENT(2));
        path = util_asprintf("%s/%03zu.json", dir, i);
        rc = write_text(path, text);
        free(path);
        free(text);
        util_buf_printf(&index, "%03zu\t%s\t%s\n", i, c->valid ? "valid" : "invalid", c->what);
        if (c->valid && json_is_string(zone))
            util_buf_printf(&zones, "%s\n", json_string_value(zone));
    }
    if (rc == 0) {
        path = util_asprintf("%s/cases.tsv", dir);
        rc = write_text(path, index.data);
        free(path);
    }
    if (rc == 0) {
        path = util_asprintf("%s/zones.txt", dir);
        rc = write_text(path, zones.data);
        free(path);
    }
    util_buf_free(&index);
    util_buf_free(&zones);
    teardown(NULL);
    return rc;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_limit_has_cases),
        cmocka_unit_test(test_numbers_are_the_crds),
        cmocka_unit_test(test_validator_agrees),
        cmocka_unit_test(test_defaults_agree),
    };
    if (argc == 3 && strcmp(argv[1], "--write-cases") == 0)
        return write_cases(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--write-cases DIR]\n", argv[0]);
        return 2;
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
