#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/kube.h"

/* Collects the lines a splitter emits, joined with '|'. */
struct collect {
    struct util_buf out;
    int lines;
    int stop_after; /* return 1 after this many lines; 0 = never */
};

static int collect_cb(const char *line, size_t len, void *arg)
{
    struct collect *c = arg;
    util_buf_append(&c->out, line, len);
    util_buf_puts(&c->out, "|");
    c->lines++;
    return c->stop_after != 0 && c->lines >= c->stop_after ? 1 : 0;
}

static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"2\"}}}"
    "\r\n"
    "\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"3\"}}}\n";

static void test_every_split_point(void **state)
{
    /* Whatever two chunks the stream arrives in, the same lines come out. */
    struct collect whole = {0};
    struct kube_lines l;
    size_t n = strlen(stream);
    util_buf_init(&whole.out);
    kube_lines_init(&l, 0);
    assert_int_equal(kube_lines_feed(&l, stream, n, collect_cb, &whole, NULL), 0);
    assert_int_equal(whole.lines, 4);
    assert_int_equal(kube_lines_pending(&l), 0);
    kube_lines_free(&l);
    for (size_t i = 0; i <= n; i++) {
        for (size_t j = i; j <= n; j += 7) {
            struct collect c = {0};
            util_buf_init(&c.out);
            kube_lines_init(&l, 0);
            assert_int_equal(kube_lines_feed(&l, stream, i, collect_cb, &c, NULL), 0);
            assert_int_equal(kube_lines_feed(&l, stream + i, j - i, collect_cb, &c, NULL), 0);
            assert_int_equal(kube_lines_feed(&l, stream + j, n - j, collect_cb, &c, NULL), 0);
            assert_string_equal(c.out.data, whole.out.data);
            assert_int_equal(kube_lines_pending(&l), 0);
            kube_lines_free(&l);
            util_buf_free(&c.out);
        }
    }
    /* One byte at a time. */
    struct collect c = {0};
    util_buf_init(&c.out);
    kube_lines_init(&l, 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(kube_lines_feed(&l, stream + i, 1, collect_cb, &c, NULL), 0);
    assert_string_equal(c.out.data, whole.out.data);
    kube_lines_free(&l);
    util_buf_free(&c.out);
    /* CR is stripped, an empty line is still a line (the decoder's caller skips it). */
    assert_non_null(strstr(whole.out.data, "\"2\"}}}|"));
    assert_null(strchr(whole.out.data, '\r'));
    assert_non_null(strstr(whole.out.data, "||"));
    util_buf_free(&whole.out);
}

static void test_partial_line_is_held(void **state)
{
    struct collect c = {0};
    struct kube_lines l;
    util_buf_init(&c.out);
    kube_lines_init(&l, 0);
    assert_int_equal(kube_lines_feed(&l, "abc\ndef", 7, collect_cb, &c, NULL), 0);
    assert_string_equal(c.out.data, "abc|");
    assert_int_equal(kube_lines_pending(&l), 3);
    kube_lines_reset(&l);
    assert_int_equal(kube_lines_pending(&l), 0);
    assert_int_equal(kube_lines_feed(&l, "x\n", 2, collect_cb, &c, NULL), 0);
    assert_string_equal(c.out.data, "abc|x|");
    kube_lines_free(&l);
    util_buf_free(&c.out);
}

static void test_oversize_line(void **state)
{
    struct collect c = {0};
    struct kube_lines l;
    struct util_err err = {0};
    util_buf_init(&c.out);
    kube_lines_init(&l, 8);
    /* Exactly 8 bytes is fine, 9 is not, whether whole or split. */
    assert_int_equal(kube_lines_feed(&l, "12345678\n", 9, collect_cb, &c, &err), 0);
    assert_int_equal(kube_lines_feed(&l, "123456789\n", 10, collect_cb, &c, &err), KUBE_ETOOBIG);
    assert_non_null(strstr(err.msg, "longer than 8 bytes"));
    kube_lines_reset(&l);
    assert_int_equal(kube_lines_feed(&l, "12345", 5, collect_cb, &c, &err), 0);
    assert_int_equal(kube_lines_feed(&l, "678", 3, collect_cb, &c, &err), 0);
    assert_int_equal(kube_lines_feed(&l, "9", 1, collect_cb, &c, &err), KUBE_ETOOBIG);
    /* A line that never ends is refused before it grows past the bound. */
    assert_int_equal(kube_lines_pending(&l), 0);
    assert_int_equal(c.lines, 1);
    kube_lines_free(&l);
    util_buf_free(&c.out);
}

static void test_callback_stops_feed(void **state)
{
    struct collect c = {.stop_after = 1};
    struct kube_lines l;
    util_buf_init(&c.out);
    kube_lines_init(&l, 0);
    assert_int_equal(kube_lines_feed(&l, "a\nb\nc\n", 6, collect_cb, &c, NULL), 1);
    assert_string_equal(c.out.data, "a|");
    kube_lines_free(&l);
    util_buf_free(&c.out);
}

static int decode(const char *line, json_t **root, struct kube_watch_event *ev,
                  struct util_err *err)
{
    return kube_watch_decode(line, strlen(line), root, ev, err);
}

static void test_decode_events(void **state)
{
    json_t *root;
    struct kube_watch_event ev;
    struct util_err err;

    assert_int_equal(decode("{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":"
                            "{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"17\"}}}",
                            &root, &ev, &err),
                     0);
    assert_int_equal(ev.type, KUBE_EVENT_ADDED);
    assert_string_equal(ev.resource_version, "17");
    assert_string_equal(ev.name, "a");
    assert_string_equal(ev.namespace, "ns");
    assert_string_equal(json_string_value(json_object_get(ev.object, "kind")), "ConfigMap");
    json_decref(root);

    assert_int_equal(
        decode("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":"
               "{\"resourceVersion\":\"99\"}}}",
               &root, &ev, &err),
        0);
    assert_int_equal(ev.type, KUBE_EVENT_BOOKMARK);
    assert_string_equal(ev.resource_version, "99");
    assert_null(ev.name);
    json_decref(root);

    assert_int_equal(decode("{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"n1\","
                            "\"resourceVersion\":\"5\"}}}",
                            &root, &ev, &err),
                     0);
    assert_int_equal(ev.type, KUBE_EVENT_DELETED);
    assert_null(ev.namespace);
    assert_string_equal(kube_event_type_name(ev.type), "DELETED");
    json_decref(root);
}

static void test_decode_error_410(void **state)
{
    json_t *root;
    struct kube_watch_event ev;
    struct util_err err;
    /* What kube-apiserver sends when the watch's resourceVersion is too old. */
    assert_int_equal(
        decode("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
               "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: 1 "
               "(2043)\",\"reason\":\"Expired\",\"code\":410}}",
               &root, &ev, &err),
        0);
    assert_int_equal(ev.type, KUBE_EVENT_ERROR);
    assert_int_equal(ev.code, 410);
    assert_string_equal(ev.reason, "Expired");
    assert_string_equal(ev.message, "too old resource version: 1 (2043)");
    assert_null(ev.resource_version);
    json_decref(root);
    /* An ERROR without a code or reason still decodes, with code 0. */
    assert_int_equal(decode("{\"type\":\"ERROR\",\"object\":{\"code\":\"x\"}}", &root, &ev, &err),
                     0);
    assert_int_equal(ev.code, 0);
    assert_string_equal(ev.reason, "");
    json_decref(root);
}

static void test_decode_rejects(void **state)
{
    static const struct {
        const char *line, *msg;
    } bad[] = {
        {"{\"type\":\"ADDED\"", "not JSON"},
        {"[1,2]", "not a JSON object"},
        {"{\"object\":{}}", "no \"type\""},
        {"{\"type\":\"ADDED\",\"object\":3}", "no \"object\""},
        {"{\"type\":\"SYNC\",\"object\":{}}", "unknown type \"SYNC\""},
        {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}", "no resourceVersion"},
        {"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}",
         "no metadata.name"},
        {"{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}", "not JSON"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *root;
        struct kube_watch_event ev;
        struct util_err err = {0};
        assert_int_equal(decode(bad[i].line, &root, &ev, &err), KUBE_EPROTO);
        if (strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].line, err.msg, bad[i].msg);
        json_decref(root);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_split_point), cmocka_unit_test(test_partial_line_is_held),
        cmocka_unit_test(test_oversize_line),     cmocka_unit_test(test_callback_stops_feed),
        cmocka_unit_test(test_decode_events),     cmocka_unit_test(test_decode_error_410),
        cmocka_unit_test(test_decode_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
