/*
 * The one-pass snapshot-list reader: on every input it must give exactly what
 * the jansson reader gives (the list, or the error and its message), whether it
 * read the input itself or handed it over. The table mixes the shape it reads
 * itself with every shape it must hand over; the fuzz target fuzz_snapshots_scan
 * checks the same on random inputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "retention/retention.h"

static void same_as_jansson(const char *doc, size_t len)
{
    struct ret_snapshot_list a, b;
    struct util_err ea = {0}, eb = {0};
    int ra = ret_snapshots_scan(&a, doc, len, NULL, NULL, &ea);
    int rb = ret_snapshots_from_json(&b, doc, len, &eb);

    if (ra != rb)
        fail_msg("%s: scan %d, jansson %d (%s)", doc, ra, rb, eb.msg);
    assert_string_equal(ea.msg, eb.msg);
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++) {
        assert_string_equal(a.v[i].id, b.v[i].id);
        assert_int_equal(a.v[i].time, b.v[i].time);
        assert_int_equal(a.v[i].incomplete, b.v[i].incomplete);
        assert_int_equal(a.v[i].suspicious, b.v[i].suspicious);
        assert_int_equal(a.v[i].pinned, b.v[i].pinned);
    }
    if (ra != 0)
        assert_null(a.v);
    ret_snapshot_list_free(&a);
    ret_snapshot_list_free(&b);
}

static void test_same_answer_as_jansson(void **state)
{
    static const char *const docs[] = {
        /* the shape the scanner reads itself */
        "[]",
        " \t\r\n[ \n] \n",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T02:30:00Z\"}]",
        "[{\"id\":\"20260601-a\",\"time\":\"2026-06-01T02:30:00Z\"},\n"
        " {\"id\":\"20260602-b\",\"time\":\"2026-06-02T05:30:00+03:00\",\"incomplete\":true},\n"
        " {\"suspicious\":true,\"time\":\"2026-06-03T02:30:00.999Z\",\"id\":\"20260603-c\","
        "\"incomplete\":false}]",
        "[ { \"time\" : \"2026-06-01T02:30:00Z\" , \"id\" : \"a b/c~!\" , \"suspicious\" : false "
        "} ]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"incomplete\":true\n}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"pinned\":true},"
        "{\"id\":\"b\",\"pinned\":false,\"time\":\"2026-06-02T00:00:00Z\"}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"pinned\":1}]",
        /* everything it hands over */
        "",
        "   ",
        "{}",
        "\"x\"",
        "[",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\"}",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\"},]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\"}] x",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\"}][]",
        "[{}]",
        "[1]",
        "[null]",
        "[[]]",
        "[{\"id\":\"\",\"time\":\"2026-06-01T00:00:00Z\"}]",
        "[{\"id\":\"a\"}]",
        "[{\"time\":\"2026-06-01T00:00:00Z\"}]",
        "[{\"id\":5,\"time\":\"2026-06-01T00:00:00Z\"}]",
        "[{\"id\":\"a\",\"time\":5}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01 00:00:00\"}]",
        "[{\"id\":\"a\",\"time\":\"2026-02-30T00:00:00Z\"}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00."
        "12345678901234567890123456789012345678901234567"
        "890Z\"}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"incomplete\":\"yes\"}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"incomplete\":1}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"suspicious\":truex}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"suspicious\":tru}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"suspicious\":true",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"suspicous\":true}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"colour\":true}]",
        "[{\"id\":\"a\",\"id\":\"b\",\"time\":\"2026-06-01T00:00:00Z\"}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\"},{\"id\":\"a\",\"time\":\"2026-06-02T00:"
        "00:00Z\"}]",
        "[{\"id\":\"a\\u00e9\",\"time\":\"2026-06-01T00:00:00Z\"}]",
        "[{\"id\":\"a\\\"b\",\"time\":\"2026-06-01T00:00:00Z\"}]",
        "[{\"id\":\"a\\u0000b\",\"time\":\"2026-06-01T00:00:00Z\"}]",
        "[{\"id\":\"x\xc3\xa9\",\"time\":\"2026-06-01T00:00:00Z\"}]",
        "[{\"id\":\"x\xff\",\"time\":\"2026-06-01T00:00:00Z\"}]",
        "[{\"id\":\"a\tb\",\"time\":\"2026-06-01T00:00:00Z\"}]",
        "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\"}\f]",
        "\xef\xbb\xbf[]",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
        same_as_jansson(docs[i], strlen(docs[i]));
    /* a NUL byte in the middle of the input */
    static const char nul[] = "[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\"}\0]";
    same_as_jansson(nul, sizeof(nul) - 1);
}

static void test_repeated_ids_among_many(void **state)
{
    /* 5,000 ids grow the set several times; a repeat at the end is still found */
    struct util_buf b;
    util_buf_init(&b);
    util_buf_puts(&b, "[");
    for (int i = 0; i < 5000; i++)
        util_buf_printf(&b, "%s{\"id\":\"s%d\",\"time\":\"2026-06-01T00:00:%02dZ\"}", i ? "," : "",
                        i, i % 60);
    util_buf_puts(&b, "]");
    same_as_jansson(b.data, b.len);
    b.data[b.len - 1] = ',';
    util_buf_puts(&b, "{\"id\":\"s1234\",\"time\":\"2026-07-01T00:00:00Z\"}]");
    same_as_jansson(b.data, b.len);
    struct ret_snapshot_list l;
    struct util_err err = {0};
    assert_int_equal(ret_snapshots_scan(&l, b.data, b.len, NULL, NULL, &err), UTIL_EINVAL);
    assert_string_equal(err.msg, "[5000].id: \"s1234\" is also the id of [1234]");
    util_buf_free(&b);
}

static size_t progress_last, progress_calls;

static void progress_cb(size_t consumed, void *arg)
{
    assert_ptr_equal(arg, &progress_last);
    assert_true(consumed >= progress_last + RET_SCAN_WINDOW);
    progress_last = consumed;
    progress_calls++;
}

static void test_progress_every_window(void **state)
{
    struct util_buf b;
    struct ret_snapshot_list l;
    struct util_err err = {0};

    util_buf_init(&b);
    util_buf_puts(&b, "[");
    for (int i = 0; b.len < 3 * RET_SCAN_WINDOW + 100; i++)
        util_buf_printf(&b, "%s{\"id\":\"%08d\",\"time\":\"2026-06-01T00:00:00Z\"}", i ? ",\n" : "",
                        i);
    util_buf_puts(&b, "]");
    progress_last = progress_calls = 0;
    assert_int_equal(ret_snapshots_scan(&l, b.data, b.len, progress_cb, &progress_last, &err), 0);
    assert_int_equal(progress_calls, 3);
    assert_true(progress_last <= b.len);
    assert_string_equal(l.v[0].id, "00000000");
    char last[16];
    snprintf(last, sizeof(last), "%08zu", l.n - 1);
    assert_string_equal(l.v[l.n - 1].id, last);
    ret_snapshot_list_free(&l);
    util_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_answer_as_jansson),
        cmocka_unit_test(test_repeated_ids_among_many),
        cmocka_unit_test(test_progress_every_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
