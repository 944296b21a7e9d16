/*
 * The fields that say how a backup runs on a live node (docs/policy.md): suspend,
 * and further below exclude, hooks and pod. Each valid form and each invalid one,
 * with its line:column message, in the YAML form and, where JSON differs, in the
 * JSON form the API server delivers.
 */
#include "policy_test.h"

static void expect_ok(const char *doc, struct pt_result *r)
{
    pt_parse(r, doc);
    if (r->rc != 0)
        pt_print(r);
    assert_int_equal(r->rc, 0);
}

static int json_parse(const char *spec_extra, struct policy *p, struct policy_diags *d)
{
    char *text =
        util_asprintf("{\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\","
                      "\"metadata\":{\"name\":\"t\"},\"spec\":{\"repository\":\"main\","
                      "\"paths\":[\"/etc\"]%s}}",
                      spec_extra);
    json_error_t jerr;
    json_t *obj = json_loads(text, 0, &jerr);
    assert_non_null(obj);
    policy_diags_init(d);
    int rc = policy_parse_json(p, obj, NULL, d);
    json_decref(obj);
    free(text);
    return rc;
}

/* ---- spec.suspend ---- */

static void test_suspend(void **state)
{
    struct pt_result r;
    char *doc;

    expect_ok(PT_HEAD PT_SPEC, &r);
    assert_false(r.p.suspend);
    pt_free(&r);
    doc = pt_doc("  suspend: true\n");
    expect_ok(doc, &r);
    assert_true(r.p.suspend);
    pt_free(&r);
    free(doc);
    doc = pt_doc("  suspend: false\n");
    expect_ok(doc, &r);
    assert_false(r.p.suspend);
    pt_free(&r);
    free(doc);

    /* Line 8 is the first after PT_SPEC; the value starts at column 12. */
    doc = pt_doc("  suspend: \"true\"\n");
    pt_expect_one(doc, NULL, 8, 12, "spec.suspend",
                  "a boolean is written without quotes: write true, not \"true\"");
    free(doc);
    doc = pt_doc("  suspend: yes\n");
    pt_expect_one(doc, NULL, 8, 12, "spec.suspend", "expected true or false, got \"yes\"");
    free(doc);
    doc = pt_doc("  suspend: True\n");
    pt_expect_one(doc, NULL, 8, 12, "spec.suspend", "expected true or false, got \"True\"");
    free(doc);
    doc = pt_doc("  suspend: 1\n");
    pt_expect_one(doc, NULL, 8, 12, "spec.suspend", "expected true or false, got \"1\"");
    free(doc);
    doc = pt_doc("  suspend: [true]\n");
    pt_expect_one(doc, NULL, 8, 12, "spec.suspend", "expected true or false, got a list");
    free(doc);
    doc = pt_doc("  suspend:\n");
    pt_expect_one(doc, NULL, 8, 11, "spec.suspend", "expected true or false, got no value");
    free(doc);
    doc = pt_doc("  suspnd: true\n");
    pt_expect_one(doc, NULL, 8, 3, "spec.suspnd", "unknown field (did you mean \"suspend\"?)");
    free(doc);

    /* JSON: a JSON boolean, never a string; null is absent. */
    struct policy p = {0};
    struct policy_diags d;
    assert_int_equal(json_parse(",\"suspend\":true", &p, &d), 0);
    assert_true(p.suspend);
    policy_free(&p);
    policy_diags_free(&d);
    memset(&p, 0, sizeof(p));
    assert_int_equal(json_parse(",\"suspend\":null", &p, &d), 0);
    assert_false(p.suspend);
    policy_free(&p);
    policy_diags_free(&d);
    memset(&p, 0, sizeof(p));
    assert_int_equal(json_parse(",\"suspend\":\"true\"", &p, &d), UTIL_EINVAL);
    assert_int_equal(d.n, 1);
    assert_string_equal(d.v[0].path, "spec.suspend");
    assert_int_equal(d.v[0].line, 0);
    policy_free(&p);
    policy_diags_free(&d);
}

/* ---- spec.exclude ---- */

static void test_exclude(void **state)
{
    struct pt_result r;
    char *doc;

    doc = pt_doc("  exclude:\n"
                 "    patterns: [\"*.tmp\", /etc/ssl/**, \"cache/\"]\n"
                 "    caches: true\n"
                 "    largerThan: 512MiB\n");
    expect_ok(doc, &r);
    assert_int_equal(r.p.exclude.npatterns, 3);
    assert_string_equal(r.p.exclude.patterns[0], "*.tmp");
    assert_string_equal(r.p.exclude.patterns[1], "/etc/ssl/**");
    assert_true(r.p.exclude.caches);
    assert_int_equal(r.p.exclude.larger_than, 512ull << 20);
    pt_free(&r);
    free(doc);
    doc = pt_doc("  exclude: {largerThan: 1TiB}\n");
    expect_ok(doc, &r);
    assert_int_equal(r.p.exclude.larger_than, 1ull << 40);
    assert_false(r.p.exclude.caches);
    pt_free(&r);
    free(doc);

    /* Line 8 is "  exclude:", line 9 its first field. */
    doc = pt_doc("  exclude:\n    patterns: [\"/opt/**\"]\n");
    pt_expect_one(doc, NULL, 9, 16, "spec.exclude.patterns[0]", "the pattern can never match");
    free(doc);
    doc = pt_doc("  exclude:\n    patterns: [\"/etc/[ab\"]\n");
    pt_expect_one(doc, NULL, 9, 16, "spec.exclude.patterns[0]", "not closed");
    free(doc);
    doc = pt_doc("  exclude:\n    patterns: [\"\"]\n");
    pt_expect_one(doc, NULL, 9, 16, "spec.exclude.patterns[0]", "the pattern is empty");
    free(doc);
    doc = pt_doc("  exclude:\n    patterns: [a, b, a]\n");
    pt_expect_one(doc, NULL, 9, 22, "spec.exclude.patterns[2]", "duplicate pattern \"a\"");
    free(doc);
    doc = pt_doc("  exclude:\n    patterns: \"*.tmp\"\n");
    pt_expect_one(doc, NULL, 9, 15, "spec.exclude.patterns",
                  "expected a list of patterns, got the string \"*.tmp\": write each pattern");
    free(doc);
    doc = pt_doc("  exclude:\n    caches: \"true\"\n");
    pt_expect_one(doc, NULL, 9, 13, "spec.exclude.caches", "a boolean is written without quotes");
    free(doc);
    doc = pt_doc("  exclude:\n    largerThan: 1GB\n");
    pt_expect_one(doc, NULL, 9, 17, "spec.exclude.largerThan", "units are binary: write 1GiB");
    free(doc);
    doc = pt_doc("  exclude:\n    largerThan: 1.5GiB\n");
    pt_expect_one(doc, NULL, 9, 17, "spec.exclude.largerThan", "fractions are not accepted");
    free(doc);
    doc = pt_doc("  exclude:\n    largerThan: 0B\n");
    pt_expect_one(doc, NULL, 9, 17, "spec.exclude.largerThan", "must be at least 1B, not 0B");
    free(doc);
    doc = pt_doc("  exclude:\n    largerThan: 999999999999TiB\n");
    pt_expect_one(doc, NULL, 9, 17, "spec.exclude.largerThan", "15 characters long, more than 14");
    free(doc);
    doc = pt_doc("  exclude:\n    largerThan: 9999999999TiB\n");
    pt_expect_one(doc, NULL, 9, 17, "spec.exclude.largerThan", "too large");
    free(doc);
    doc = pt_doc("  exclude:\n    largerThan: 5\n");
    pt_expect_one(doc, NULL, 9, 17, "spec.exclude.largerThan", "unknown unit");
    free(doc);
    doc = pt_doc("  exclude:\n    pattern: [a]\n");
    pt_expect_one(doc, NULL, 9, 5, "spec.exclude.pattern",
                  "unknown field (did you mean \"patterns\"?)");
    free(doc);

    /* JSON: the same pattern checks, by path. */
    struct policy p = {0};
    struct policy_diags d;
    assert_int_equal(json_parse(",\"exclude\":{\"patterns\":[\"/etc/x\",\"/srv/y\"]}", &p, &d),
                     UTIL_EINVAL);
    assert_int_equal(d.n, 1);
    assert_string_equal(d.v[0].path, "spec.exclude.patterns[1]");
    policy_free(&p);
    policy_diags_free(&d);
}

/* ---- spec.hooks ---- */

static void test_hooks(void **state)
{
    struct pt_result r;
    char *doc;

    doc = pt_doc("  hooks:\n"
                 "    before:\n"
                 "    - name: dump\n"
                 "      command: [/bin/sh, -c, \"pg_dump app > /var/backups/app.sql\"]\n"
                 "      timeout: 10m\n"
                 "      onError: fail\n"
                 "    - command: [/usr/bin/sync]\n"
                 "    after:\n"
                 "    - {command: [/bin/true], onError: continue, timeout: 1s}\n");
    expect_ok(doc, &r);
    assert_int_equal(r.p.hooks.nbefore, 2);
    assert_int_equal(r.p.hooks.nafter, 1);
    assert_string_equal(r.p.hooks.before[0].name, "dump");
    assert_int_equal(r.p.hooks.before[0].argc, 3);
    assert_string_equal(r.p.hooks.before[0].argv[2], "pg_dump app > /var/backups/app.sql");
    assert_null(r.p.hooks.before[0].argv[3]);
    assert_int_equal(r.p.hooks.before[0].timeout, 600);
    assert_false(r.p.hooks.before[0].on_error_continue);
    assert_string_equal(r.p.hooks.before[1].name, "before[1]");
    assert_int_equal(r.p.hooks.before[1].timeout, 300); /* the default, 5m */
    assert_true(r.p.hooks.after[0].on_error_continue);
    assert_int_equal(r.p.hooks.after[0].timeout, 1);
    assert_string_equal(r.p.hooks.after[0].name, "after[0]");
    pt_free(&r);
    free(doc);

    /* Line 8 "  hooks:", 9 "    before:", 10 the first item. */
    doc = pt_doc("  hooks:\n    before:\n    - name: x\n");
    pt_expect_one(doc, NULL, 10, 7, "spec.hooks.before[0].command",
                  "required field is missing: the command and its arguments");
    free(doc);
    doc = pt_doc("  hooks:\n    before:\n    - command: []\n");
    pt_expect_one(doc, NULL, 10, 16, "spec.hooks.before[0].command",
                  "at least one item is required");
    free(doc);
    doc = pt_doc("  hooks:\n    before:\n    - command: /bin/true\n");
    pt_expect_one(doc, NULL, 10, 16, "spec.hooks.before[0].command",
                  "expected a list of strings (the command and its arguments), got \"/bin/true\"");
    free(doc);
    doc = pt_doc("  hooks:\n    before:\n    - command: [\"\"]\n");
    pt_expect_one(doc, NULL, 10, 17, "spec.hooks.before[0].command[0]", "the command is empty");
    free(doc);
    doc = pt_doc("  hooks:\n    before:\n    - command: [/bin/true]\n      timeout: 0s\n");
    pt_expect_one(doc, NULL, 11, 16, "spec.hooks.before[0].timeout",
                  "must be from 1s to 24h, not 0s");
    free(doc);
    doc = pt_doc("  hooks:\n    before:\n    - command: [/bin/true]\n      timeout: 25h\n");
    pt_expect_one(doc, NULL, 11, 16, "spec.hooks.before[0].timeout",
                  "must be from 1s to 24h, not 25h");
    free(doc);
    doc = pt_doc("  hooks:\n    before:\n    - command: [/bin/true]\n      onError: ignore\n");
    pt_expect_one(doc, NULL, 11, 16, "spec.hooks.before[0].onError",
                  "must be \"fail\" or \"continue\", not \"ignore\"");
    free(doc);
    doc = pt_doc("  hooks:\n    before:\n    - command: [/bin/true]\n      name: Dump\n");
    pt_expect_one(doc, NULL, 11, 13, "spec.hooks.before[0].name", "uppercase");
    free(doc);
    doc = pt_doc("  hooks:\n    before:\n    - [/bin/true]\n");
    pt_expect_one(doc, NULL, 10, 7, "spec.hooks.before[0]", "expected a map with command");
    free(doc);
    doc = pt_doc("  hooks:\n    befor: []\n");
    pt_expect_one(doc, NULL, 9, 5, "spec.hooks.befor", "did you mean \"before\"?");
    free(doc);
    doc = pt_doc("  hooks:\n    before:\n    - command: [/bin/true]\n      shell: true\n");
    pt_expect_one(doc, NULL, 11, 7, "spec.hooks.before[0].shell", "unknown field");
    free(doc);
    struct util_buf b;
    util_buf_init(&b);
    util_buf_puts(&b, "  hooks:\n    after:\n");
    for (int i = 0; i < POLICY_MAX_HOOKS + 1; i++)
        util_buf_puts(&b, "    - command: [/bin/true]\n");
    doc = pt_doc("%s", b.data);
    pt_expect_one(doc, NULL, 10, 5, "spec.hooks.after", "9 hooks, more than 8");
    free(doc);
    util_buf_free(&b);
}

/* ---- spec.pod ---- */

static void test_pod(void **state)
{
    struct pt_result r;
    char *doc;

    doc = pt_doc("  pod:\n"
                 "    priorityClassName: backup-low\n"
                 "    imagePullSecrets: [regcred]\n"
                 "    tolerations:\n"
                 "    - {key: node-role.kubernetes.io/control-plane, operator: Exists, effect: "
                 "NoSchedule}\n"
                 "    - {key: dedicated, operator: Equal, value: db, effect: NoExecute, "
                 "tolerationSeconds: 60}\n"
                 "    resources:\n"
                 "      requests: {cpu: 100m, memory: 128Mi}\n"
                 "      limits: {cpu: \"1\", memory: 1Gi}\n");
    expect_ok(doc, &r);
    assert_string_equal(r.p.pod.priority_class, "backup-low");
    assert_int_equal(r.p.pod.npull_secrets, 1);
    assert_string_equal(r.p.pod.pull_secrets[0], "regcred");
    assert_true(r.p.pod.has_tolerations);
    assert_int_equal(r.p.pod.ntolerations, 2);
    assert_string_equal(r.p.pod.tolerations[0].op, "Exists");
    assert_null(r.p.pod.tolerations[0].value);
    assert_string_equal(r.p.pod.tolerations[1].value, "db");
    assert_true(r.p.pod.tolerations[1].has_seconds);
    assert_int_equal(r.p.pod.tolerations[1].seconds, 60);
    assert_string_equal(r.p.pod.requests_cpu, "100m");
    assert_string_equal(r.p.pod.limits_memory, "1Gi");
    pt_free(&r);
    free(doc);
    doc = pt_doc("  pod: {tolerations: []}\n");
    expect_ok(doc, &r);
    assert_true(r.p.pod.has_tolerations); /* none at all: the default is replaced */
    pt_free(&r);
    free(doc);

    /* Line 8 "  pod:", 9 its first field. */
    doc = pt_doc("  pod:\n    priorityClassName: Backup\n");
    pt_expect_one(doc, NULL, 9, 24, "spec.pod.priorityClassName", "uppercase");
    free(doc);
    doc = pt_doc("  pod:\n    imagePullSecrets: [reg_cred]\n");
    pt_expect_one(doc, NULL, 9, 24, "spec.pod.imagePullSecrets[0]", "'_'");
    free(doc);
    doc = pt_doc("  pod:\n    imagePullSecrets: regcred\n");
    pt_expect_one(doc, NULL, 9, 23, "spec.pod.imagePullSecrets", "expected a list of Secret names");
    free(doc);
    doc = pt_doc("  pod:\n    resources: {requests: {memory: 128MB}}\n");
    pt_expect_one(doc, NULL, 9, 36, "spec.pod.resources.requests.memory", "unknown unit \"MB\"");
    free(doc);
    doc = pt_doc("  pod:\n    resources: {limits: {cpu: lots}}\n");
    pt_expect_one(doc, NULL, 9, 31, "spec.pod.resources.limits.cpu", "a quantity is a number");
    free(doc);
    doc = pt_doc("  pod:\n    resources: {limits: {gpu: 1}}\n");
    pt_expect_one(doc, NULL, 9, 26, "spec.pod.resources.limits.gpu", "unknown field");
    free(doc);
    doc = pt_doc("  pod:\n    tolerations:\n    - {operator: Exists, value: x}\n");
    pt_expect_one(doc, NULL, 10, 7, "spec.pod.tolerations[0]", "operator Exists takes no value");
    free(doc);
    doc = pt_doc("  pod:\n    tolerations:\n    - {operator: Equal, value: x}\n");
    pt_expect_one(doc, NULL, 10, 7, "spec.pod.tolerations[0]", "without key must have operator");
    free(doc);
    doc = pt_doc(
        "  pod:\n    tolerations:\n    - {key: a, effect: NoSchedule, tolerationSeconds: 5}\n");
    pt_expect_one(doc, NULL, 10, 7, "spec.pod.tolerations[0]",
                  "tolerationSeconds is only valid with effect: NoExecute");
    free(doc);
    doc = pt_doc("  pod:\n    tolerations:\n    - {key: a, effect: NoRun}\n");
    pt_expect_one(doc, NULL, 10, 24, "spec.pod.tolerations[0].effect",
                  "must be \"NoSchedule\", \"PreferNoSchedule\" or \"NoExecute\"");
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suspend),
        cmocka_unit_test(test_exclude),
        cmocka_unit_test(test_hooks),
        cmocka_unit_test(test_pod),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
