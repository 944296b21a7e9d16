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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suspend),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
