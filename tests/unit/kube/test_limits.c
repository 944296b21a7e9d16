#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/kube.h"

static void test_bucket_burst_then_rate(void **state)
{
    struct kube_bucket b;
    uint64_t now = 1000000;
    kube_bucket_init(&b, 5.0, 10, now);
    /* A full bucket gives its burst at once, then one token per 200 ms. */
    for (int i = 0; i < 10; i++)
        assert_int_equal(kube_bucket_take(&b, now), 0);
    assert_int_equal(kube_bucket_take(&b, now), 200);
    assert_int_equal(kube_bucket_take(&b, now + 199), 1);
    assert_int_equal(kube_bucket_take(&b, now + 200), 0);
    assert_int_equal(kube_bucket_take(&b, now + 200), 200);
    /* Over a long idle time it refills to the burst, not beyond. */
    now += 3600 * 1000;
    for (int i = 0; i < 10; i++)
        assert_int_equal(kube_bucket_take(&b, now), 0);
    assert_true(kube_bucket_take(&b, now) > 0);
    /* In the next 10 s at 5 QPS, 50 requests get through (at +200 ms, ..., +10 s). */
    int got = 0;
    for (uint64_t t = now; t <= now + 10000; t++)
        if (kube_bucket_take(&b, t) == 0)
            got++;
    assert_int_equal(got, 50);
}

static void test_bucket_fractional_and_off(void **state)
{
    struct kube_bucket b;
    kube_bucket_init(&b, 0.5, 1, 0);
    assert_int_equal(kube_bucket_take(&b, 0), 0);
    assert_int_equal(kube_bucket_take(&b, 0), 2000);
    assert_int_equal(kube_bucket_take(&b, 1000), 1000);
    assert_int_equal(kube_bucket_take(&b, 2000), 0);
    /* A clock that goes back never adds tokens. */
    assert_true(kube_bucket_take(&b, 10) > 0);
    kube_bucket_init(&b, -1, 0, 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(kube_bucket_take(&b, 0), 0);
}

static void test_backoff(void **state)
{
    struct kube_backoff b;
    kube_backoff_init(&b, 0, 0);
    assert_int_equal(b.base_ms, 1000);
    assert_int_equal(b.cap_ms, 30000);
    /* With the smallest random number each delay is half its nominal value... */
    static const uint64_t lo[] = {500, 1000, 2000, 4000, 8000, 15000, 15000, 15000};
    for (size_t i = 0; i < sizeof(lo) / sizeof(lo[0]); i++)
        assert_int_equal(kube_backoff_next(&b, 0), lo[i]);
    /* ...with the largest, the nominal value, capped at 30 s. */
    kube_backoff_reset(&b);
    static const uint64_t hi[] = {1000, 2000, 4000, 8000, 16000, 30000, 30000};
    for (size_t i = 0; i < sizeof(hi) / sizeof(hi[0]); i++)
        assert_int_equal(kube_backoff_next(&b, UINT32_MAX), hi[i]);
    /* Thousands of failures neither overflow nor exceed the cap. */
    for (int i = 0; i < 5000; i++) {
        uint64_t d = kube_backoff_next(&b, (uint32_t)i * 2654435761u);
        assert_true(d >= 15000 && d <= 30000);
    }
    /* A mid random number lands in the middle of the range. */
    kube_backoff_reset(&b);
    uint64_t d = kube_backoff_next(&b, UINT32_MAX / 2);
    assert_true(d >= 740 && d <= 760);
    kube_backoff_init(&b, 100, 50);
    assert_int_equal(b.cap_ms, 100);
}

static void check_path(const struct kube_resource *res, const char *name, const char *sub,
                       const char *want)
{
    struct util_buf b;
    util_buf_init(&b);
    assert_int_equal(kube_path(&b, res, name, sub, NULL), 0);
    assert_string_equal(b.data, want);
    util_buf_free(&b);
}

static void test_paths(void **state)
{
    struct kube_resource cm = {"", "v1", "configmaps", "ops"};
    struct kube_resource nodes = {NULL, "v1", "nodes", NULL};
    struct kube_resource bp = {"lodestore.io", "v1alpha1", "backuppolicies", "team a"};
    check_path(&cm, NULL, NULL, "/api/v1/namespaces/ops/configmaps");
    check_path(&cm, "x.y", NULL, "/api/v1/namespaces/ops/configmaps/x.y");
    check_path(&nodes, "node-1", NULL, "/api/v1/nodes/node-1");
    check_path(&bp, "p", "status",
               "/apis/lodestore.io/v1alpha1/namespaces/team%20a/backuppolicies/p/status");
    check_path(&cm, "../etc", NULL, "/api/v1/namespaces/ops/configmaps/..%2Fetc");

    struct util_buf b;
    struct util_err err;
    util_buf_init(&b);
    assert_int_equal(kube_path(&b, &cm, "", NULL, &err), UTIL_EINVAL);
    assert_int_equal(kube_path(&b, &cm, NULL, "status", &err), UTIL_EINVAL);
    struct kube_resource bad = {"", NULL, "x", NULL};
    assert_int_equal(kube_path(&b, &bad, NULL, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "version"));
    util_buf_free(&b);
}

static void test_query_escaping(void **state)
{
    struct util_buf b;
    util_buf_init(&b);
    util_buf_puts(&b, "/api/v1/pods");
    kube_query_add(&b, "labelSelector", "app=web,tier in (a,b),!canary");
    kube_query_add(&b, "fieldSelector", "spec.nodeName=n+1");
    kube_query_add(&b, "continue", "eyJ2IjoibWV0YS5rOHMuaW8vdjEi/Q==");
    assert_string_equal(b.data, "/api/v1/pods?labelSelector=app%3Dweb%2Ctier%20in%20%28a%2Cb%29%2C%"
                                "21canary&fieldSelector=spec.nodeName%3Dn%2B1&continue="
                                "eyJ2IjoibWV0YS5rOHMuaW8vdjEi%2FQ%3D%3D");
    util_buf_free(&b);
}

static void test_base64(void **state)
{
    static const struct {
        const char *in, *out;
    } good[] = {
        {"", ""},
        {"QQ==", "A"},
        {"QUI=", "AB"},
        {"QUJD", "ABC"},
        {"QUJD\nREVG\r\n", "ABCDEF"},
        {"aGVsbG8gd29ybGQ=", "hello world"},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char *out;
        size_t len;
        assert_int_equal(kube_base64_decode(good[i].in, strlen(good[i].in), &out, &len, NULL), 0);
        assert_int_equal(len, strlen(good[i].out));
        assert_memory_equal(out, good[i].out, len);
        free(out);
    }
    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"QUJ", "not a multiple of 4"},      {"QU*D", "byte 2 (not a base64 character)"},
        {"Q===", "byte 1 (misplaced '=')"},  {"QQ==QUJD", "byte 4 (data after the padding)"},
        {"QQ=A", "byte 3 (data after '=')"}, {"QUJD QUJD", "byte 4"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *out = NULL;
        size_t len;
        struct util_err err = {0};
        assert_int_equal(kube_base64_decode(bad[i].in, strlen(bad[i].in), &out, &len, &err),
                         UTIL_EINVAL);
        assert_null(out);
        if (strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].in, err.msg, bad[i].msg);
    }
}

static void test_event_build(void **state)
{
    struct kube_object_ref ref = {"lodestore.io/v1alpha1", "BackupPolicy", "ops", "etc", "u-1"};
    json_t *ev = kube_event_build(&ref, "Warning", "Overdue", "host n1 has no backup for 50h",
                                  "lodestore-controller", 1774746000);
    char *s = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(
        s, "{\"apiVersion\":\"v1\",\"count\":1,\"firstTimestamp\":\"2026-03-29T01:00:00Z\","
           "\"involvedObject\":{\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\","
           "\"name\":\"etc\",\"namespace\":\"ops\",\"uid\":\"u-1\"},\"kind\":\"Event\","
           "\"lastTimestamp\":\"2026-03-29T01:00:00Z\",\"message\":\"host n1 has no backup for "
           "50h\",\"metadata\":{\"generateName\":\"etc.\",\"namespace\":\"ops\"},\"reason\":"
           "\"Overdue\",\"source\":{\"component\":\"lodestore-controller\"},\"type\":\"Warning\"}");
    free(s);
    json_decref(ev);

    /* A cluster-scoped object's Event goes to "default"; long messages are cut at 1024
     * bytes on a character boundary; bad UTF-8 is replaced. */
    struct kube_object_ref node = {"v1", "Node", NULL, "n1", NULL};
    char msg[1100];
    memset(msg, 'a', sizeof(msg));
    memcpy(msg + 1023, "\xc3\xa9", 2); /* é straddles byte 1024: cut before it */
    msg[sizeof(msg) - 1] = '\0';
    ev = kube_event_build(&node, "Normal", "Started", msg, "c", 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(ev, "metadata"), "namespace")),
        "default");
    assert_null(json_object_get(json_object_get(ev, "involvedObject"), "namespace"));
    assert_int_equal(json_string_length(json_object_get(ev, "message")), 1023);
    json_decref(ev);
    /* What cannot be an Event is refused before anything is sent. */
    struct util_err err = {0};
    struct kube_object_ref nokind = {"v1", NULL, NULL, "n1", NULL};
    assert_int_equal(
        kube_event_create(NULL, &nokind, "Normal", "R", "m", "c", 0, NULL, NULL, NULL, &err),
        UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "apiVersion, kind and name"));
    assert_int_equal(
        kube_event_create(NULL, &node, "Info", "R", "m", "c", 0, NULL, NULL, NULL, &err),
        UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "Normal or Warning"));
    assert_int_equal(
        kube_event_create(NULL, &node, "Normal", "", "m", "c", 0, NULL, NULL, NULL, &err),
        UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "a reason"));
    ev = kube_event_build(&node, "Normal", "Started", "bad \xff byte", "c", 0);
    assert_string_equal(json_string_value(json_object_get(ev, "message")), "bad ? byte");
    json_decref(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_burst_then_rate),
        cmocka_unit_test(test_bucket_fractional_and_off),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_query_escaping),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_event_build),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
