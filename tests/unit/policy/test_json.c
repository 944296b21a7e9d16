/*
 * The JSON form, as the Kubernetes API returns a BackupPolicy: the same rules with
 * field paths instead of positions, server fields and status ignored, null as
 * absent, and JSON types that must match the field.
 */
#include "policy_test.h"

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);
    if (v == NULL)
        fail_msg("bad test JSON: %s", e.text);
    return v;
}

static void parse_json(struct pt_result *r, const char *text)
{
    json_t *v = load(text);
    policy_diags_init(&r->d);
    r->rc = policy_parse_json(&r->p, v, NULL, &r->d);
    json_decref(v);
    if (r->rc == 0)
        assert_int_equal(r->d.n, 0);
    else
        assert_true(r->d.n > 0);
    for (size_t i = 0; i < r->d.n; i++) {
        assert_int_equal(r->d.v[i].line, 0);
        assert_int_equal(r->d.v[i].column, 0);
    }
}

static void expect_one_json(const char *text, const char *path, const char *needle)
{
    struct pt_result r;
    parse_json(&r, text);
    if (r.d.n != 1)
        pt_print(&r);
    assert_int_equal(r.d.n, 1);
    pt_expect_diag(&r, 0, 0, 0, path, needle);
    pt_free(&r);
}

#define J_HEAD       "\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\""
#define J_META       "\"metadata\":{\"name\":\"t\",\"namespace\":\"ops\"}"
#define J_SPEC_START "\"spec\":{\"repository\":\"main\",\"paths\":[\"/etc\"]"

static void test_api_object(void **state)
{
    struct pt_result r;
    parse_json(&r, "{" J_HEAD ",\"metadata\":{\"name\":\"etc-and-home\",\"namespace\":\"ops\","
                   "\"uid\":\"0b1c\",\"resourceVersion\":\"42\",\"generation\":3,"
                   "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"managedFields\":[{}],"
                   "\"finalizers\":[\"x\"],\"ownerReferences\":[],"
                   "\"labels\":{\"team\":\"infra\"},\"annotations\":{\"note\":\"hi\"}},"
                   "\"spec\":{\"repository\":\"main\",\"paths\":[\"/etc\",\"/home\"],"
                   "\"nodeSelector\":{\"role\":\"db\"},"
                   "\"schedule\":{\"cron\":\"*/15 * * * *\",\"timezone\":\"Europe/Kyiv\"},"
                   "\"retention\":{\"keepLast\":3,\"keepWithin\":\"7d\"},"
                   "\"limits\":{\"uploadRate\":\"800KiB/s\",\"nice\":0,"
                   "\"ioniceClass\":\"best-effort\",\"ioniceLevel\":7,\"maxRuntime\":\"1h\"},"
                   "\"alerts\":{\"maxAge\":\"36h\"}},"
                   "\"status\":{\"conditions\":[{\"type\":\"Valid\"}],\"anything\":1}}");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.p.name, "etc-and-home");
    assert_string_equal(r.p.namespace, "ops");
    assert_int_equal(r.p.nlabels, 1);
    assert_int_equal(r.p.nannotations, 1);
    assert_int_equal(r.p.npaths, 2);
    assert_int_equal(r.p.nnode_selector, 1);
    assert_string_equal(r.p.schedule.cron_text, "*/15 * * * *");
    assert_int_equal(r.p.schedule.jitter, 900);
    assert_int_equal(r.p.retention.keep_last, 3);
    assert_int_equal(r.p.retention.keep_within, 7 * 86400);
    assert_int_equal(r.p.limits.upload_rate, 800 * 1024);
    assert_int_equal(r.p.limits.nice, 0);
    assert_int_equal(r.p.limits.ionice_level, 7);
    assert_int_equal(r.p.limits.max_runtime, 3600);
    assert_int_equal(r.p.alerts_max_age, 36 * 3600);
    pt_free(&r);
}

static void test_null_is_absent(void **state)
{
    struct pt_result r;
    parse_json(&r, "{" J_HEAD "," J_META "," J_SPEC_START
                   ",\"schedule\":null,\"retention\":null,\"limits\":{\"nice\":null},"
                   "\"nodeSelector\":{\"a\":null}}}");
    assert_int_equal(r.rc, 0);
    assert_false(r.p.has_schedule);
    assert_false(r.p.has_retention);
    assert_int_equal(r.p.limits.nice, -1);
    assert_int_equal(r.p.nnode_selector, 0);
    pt_free(&r);
    expect_one_json("{" J_HEAD "," J_META ",\"spec\":{\"repository\":null,\"paths\":[\"/etc\"]}}",
                    "spec.repository", "required field is missing");
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"schedule\":{\"cron\":null}}}",
                    "spec.schedule.cron", "required field is missing");
    /* In a list, null is not a path. */
    expect_one_json("{" J_HEAD "," J_META ",\"spec\":{\"repository\":\"main\",\"paths\":[null]}}",
                    "spec.paths[0]", "expected an absolute path, got null");
}

static void test_types(void **state)
{
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"retention\":{\"keepLast\":\"3\"}}}",
                    "spec.retention.keepLast", "write 3, not \"3\"");
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"retention\":{\"keepLast\":3.0}}}",
                    "spec.retention.keepLast",
                    "got the number 3.0 (a whole number has no fraction)");
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"retention\":{\"keepLast\":2.5}}}",
                    "spec.retention.keepLast", "got the number 2.5");
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"retention\":{\"keepLast\":true}}}",
                    "spec.retention.keepLast",
                    "expected an integer from 1 to 2147483647, got true");
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START
                    ",\"retention\":{\"keepLast\":2147483648}}}",
                    "spec.retention.keepLast", "must be from 1 to 2147483647, not 2147483648");
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"limits\":{\"nice\":-1}}}",
                    "spec.limits.nice", "must be from 0 to 19, not -1");
    expect_one_json("{" J_HEAD "," J_META ",\"spec\":{\"repository\":7,\"paths\":[\"/etc\"]}}",
                    "spec.repository", "expected a string, got the number 7");
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"alerts\":{\"maxAge\":3600}}}",
                    "spec.alerts.maxAge",
                    "expected a duration from 1h to 365d, got the number 3600");
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"limits\":{\"ioniceClass\":false}}}",
                    "spec.limits.ioniceClass", "got false");
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"nodeSelector\":{\"a\":1}}}",
                    "spec.nodeSelector.a", "expected a label value, got the number 1");
    expect_one_json("{" J_HEAD "," J_META ",\"spec\":{\"repository\":\"main\",\"paths\":"
                    "[\"/etc\\u0000/x\"]}}",
                    "spec.paths[0]", "NUL character");
    expect_one_json("{" J_HEAD "," J_META ",\"spec\":{\"repository\":\"main\",\"paths\":\"/etc\"}}",
                    "spec.paths", "expected a list of absolute paths, got the string \"/etc\"");
    /* Where a string belongs, a JSON string that looks like a word YAML 1.1 would read
     * otherwise is just that string. */
    {
        struct pt_result r;
        parse_json(&r, "{" J_HEAD "," J_META "," J_SPEC_START ",\"nodeSelector\":{\"a\":\"NO\"}}}");
        assert_int_equal(r.rc, 0);
        assert_string_equal(r.p.node_selector[0].value, "NO");
        pt_free(&r);
    }
}

static void test_unknown_and_ignored(void **state)
{
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"retension\":{}}}", "spec.retension",
                    "unknown field (did you mean \"retention\"?)");
    /* Server fields are ignored in metadata only. */
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START ",\"uid\":\"x\"}}", "spec.uid",
                    "unknown field");
    expect_one_json("{" J_HEAD "," J_META "," J_SPEC_START "},\"extra\":1}", "extra",
                    "unknown field");
    expect_one_json("{" J_HEAD "," J_META ",\"spec\":{\"repository\":\"main\",\"paths\":"
                    "[\"/etc\",\"/etc/\"]}}",
                    "spec.paths[1]", "duplicate path \"/etc/\" (first at spec.paths[0])");
}

static void test_several_errors_in_order(void **state)
{
    struct pt_result r;
    parse_json(&r, "{\"apiVersion\":\"v1\",\"kind\":\"BackupPolicy\",\"metadata\":{\"name\":\"A\"},"
                   "\"spec\":{\"paths\":[\"etc\"],\"schedule\":{\"cron\":\"@yearly\","
                   "\"jitter\":\"2d\"},\"limits\":{\"ioniceLevel\":3}}}");
    if (r.d.n != 7)
        pt_print(&r);
    assert_int_equal(r.d.n, 7);
    pt_expect_diag(&r, 0, 0, 0, "apiVersion", "must be");
    pt_expect_diag(&r, 1, 0, 0, "metadata.name", "uppercase");
    pt_expect_diag(&r, 2, 0, 0, "spec.paths[0]", "absolute");
    pt_expect_diag(&r, 3, 0, 0, "spec.schedule.cron", "@yearly");
    pt_expect_diag(&r, 4, 0, 0, "spec.schedule.jitter", "must be from 0s to 24h");
    pt_expect_diag(&r, 5, 0, 0, "spec.limits.ioniceLevel", "needs ioniceClass: best-effort");
    pt_expect_diag(&r, 6, 0, 0, "spec.repository", "required field is missing");
    pt_free(&r);
}

static void test_not_an_object(void **state)
{
    struct pt_result r;
    expect_one_json("[1,2]", "",
                    "expected a map with apiVersion, kind, metadata and spec, got a list");
    expect_one_json("\"x\"", "", "got the string \"x\"");
    /* {} misses all four: apiVersion, kind, metadata, spec. */
    parse_json(&r, "{}");
    assert_int_equal(r.d.n, 4);
    pt_expect_diag(&r, 0, 0, 0, "apiVersion", "required field is missing");
    pt_expect_diag(&r, 3, 0, 0, "spec", "required field is missing");
    pt_free(&r);
    policy_diags_init(&r.d);
    assert_int_equal(policy_parse_json(&r.p, NULL, NULL, &r.d), UTIL_EINVAL);
    pt_expect_diag(&r, 0, 0, 0, "", "expected a JSON object");
    pt_free(&r);
}

static void test_deep_json(void **state)
{
    /* Nesting past the limit is dropped, not followed: no stack depth grows with it. */
    struct util_buf b;
    struct pt_result r;
    util_buf_init(&b);
    util_buf_puts(&b, "{" J_HEAD "," J_META "," J_SPEC_START ",\"x\":");
    for (int i = 0; i < 1000; i++)
        util_buf_puts(&b, "[");
    for (int i = 0; i < 1000; i++)
        util_buf_puts(&b, "]");
    util_buf_puts(&b, "}}");
    parse_json(&r, b.data);
    assert_int_equal(r.d.n, 1);
    pt_expect_diag(&r, 0, 0, 0, "spec.x", "unknown field");
    pt_free(&r);
    util_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_object),
        cmocka_unit_test(test_null_is_absent),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_unknown_and_ignored),
        cmocka_unit_test(test_several_errors_in_order),
        cmocka_unit_test(test_not_an_object),
        cmocka_unit_test(test_deep_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
