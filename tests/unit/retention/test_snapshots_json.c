/*
 * The snapshot-list reader of `lode forget --snapshots`: what it accepts, and the
 * message for each thing it rejects (a script author reads these).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "retention/retention.h"

static void test_reads_a_list(void **state)
{
    static const char doc[] =
        "[{\"id\":\"20260601-a\",\"time\":\"2026-06-01T02:30:00Z\"},\n"
        " {\"id\":\"20260602-b\",\"time\":\"2026-06-02T05:30:00+03:00\",\"incomplete\":true},\n"
        " {\"suspicious\":true,\"time\":\"2026-06-03T02:30:00.999Z\",\"id\":\"20260603-c\","
        "\"incomplete\":false}]";
    struct ret_snapshot_list l;
    struct util_err err = {0};

    assert_int_equal(ret_snapshots_from_json(&l, doc, strlen(doc), &err), 0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.v[0].id, "20260601-a");
    assert_int_equal(l.v[0].time, 1780281000); /* 2026-06-01T02:30:00Z */
    assert_false(l.v[0].incomplete);
    assert_false(l.v[0].suspicious);
    assert_string_equal(l.v[1].id, "20260602-b");
    assert_int_equal(l.v[1].time, 1780281000 + 86400); /* the offset is applied */
    assert_true(l.v[1].incomplete);
    assert_false(l.v[1].suspicious);
    assert_string_equal(l.v[2].id, "20260603-c");
    assert_int_equal(l.v[2].time, 1780281000 + 2 * 86400); /* the fraction is dropped */
    assert_false(l.v[2].incomplete);
    assert_true(l.v[2].suspicious);
    ret_snapshot_list_free(&l);
    assert_null(l.v);
}

static void test_reads_an_empty_list(void **state)
{
    struct ret_snapshot_list l;
    struct util_err err = {0};
    assert_int_equal(ret_snapshots_from_json(&l, " [ ] \n", 6, &err), 0);
    assert_int_equal(l.n, 0);
    ret_snapshot_list_free(&l);
}

static void test_ids_outlive_the_document(void **state)
{
    /* The ids are copied out: the input buffer may go away. */
    char *doc = util_strdup("[{\"id\":\"x\\u00e9\",\"time\":\"2026-06-01T00:00:00Z\"}]");
    struct ret_snapshot_list l;
    struct util_err err = {0};
    assert_int_equal(ret_snapshots_from_json(&l, doc, strlen(doc), &err), 0);
    memset(doc, 0, strlen(doc));
    free(doc);
    assert_string_equal(l.v[0].id, "x\xc3\xa9");
    ret_snapshot_list_free(&l);
}

struct bad_case {
    const char *doc;
    const char *msg; /* the whole message, or its start when it ends in '*' */
};

static void test_rejects_with_a_message(void **state)
{
    static const struct bad_case cases[] = {
        {"", "line 1, column 0: '[' or '{' expected near end of file"},
        {"[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\"}", "line 1, column *"},
        {"{\"id\":\"a\"}",
         "expected an array of snapshots [{\"id\": ..., \"time\": ...}], found an object"},
        {"\"snapshots\"",
         "line 1, column *"}, /* jansson refuses a bare string at the top without a flag */
        {"[1]", "[0]: expected an object {\"id\": ..., \"time\": ...}, found a number"},
        {"[[]]", "[0]: expected an object {\"id\": ..., \"time\": ...}, found an array"},
        {"[null]", "[0]: expected an object {\"id\": ..., \"time\": ...}, found null"},
        {"[{\"time\":\"2026-06-01T00:00:00Z\"}]", "[0]: \"id\" is missing"},
        {"[{\"id\":\"a\"}]", "[0]: \"time\" is missing"},
        {"[{\"id\":7,\"time\":\"2026-06-01T00:00:00Z\"}]",
         "[0].id: expected a string, found a number"},
        {"[{\"id\":\"\",\"time\":\"2026-06-01T00:00:00Z\"}]", "[0].id: must not be empty"},
        {"[{\"id\":\"a\",\"time\":1780281000}]",
         "[0].time: expected an RFC 3339 string such as \"2026-03-29T01:00:00Z\", found a number"},
        {"[{\"id\":\"a\",\"time\":\"2026-06-01 00:00:00\"}]",
         "[0].time: \"2026-06-01 00:00:00\" is not an RFC 3339 time (write it as "
         "2026-03-29T01:00:00Z)"},
        {"[{\"id\":\"a\",\"time\":\"2026-02-30T00:00:00Z\"}]",
         "[0].time: \"2026-02-30T00:00:00Z\" *"},
        {"[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"incomplete\":\"yes\"}]",
         "[0].incomplete: expected true or false, found a string"},
        {"[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"suspicious\":1}]",
         "[0].suspicious: expected true or false, found a number"},
        {"[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"pinned\":\"yes\"}]",
         "[0].pinned: expected true or false, found a string"},
        {"[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"pined\":true}]",
         "[0]: unknown key \"pined\" (did you mean \"pinned\"?)"},
        {"[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"suspicous\":true}]",
         "[0]: unknown key \"suspicous\" (did you mean \"suspicious\"?)"},
        {"[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\",\"host\":\"n1\"}]",
         "[0]: unknown key \"host\" (a snapshot has only id, time, incomplete, suspicious and "
         "pinned)"},
        {"[{\"id\":\"a\",\"id\":\"b\",\"time\":\"2026-06-01T00:00:00Z\"}]",
         "line 1, column *"}, /* duplicate key, found by jansson */
        {"[{\"id\":\"a\",\"time\":\"2026-06-01T00:00:00Z\"},"
         " {\"id\":\"b\",\"time\":\"2026-06-02T00:00:00Z\"},"
         " {\"id\":\"a\",\"time\":\"2026-06-03T00:00:00Z\"}]",
         "[2].id: \"a\" is also the id of [0]"},
        {"[{\"id\":\"a\\u0000b\",\"time\":\"2026-06-01T00:00:00Z\"}]", "line 1, column *"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ret_snapshot_list l;
        struct util_err err = {0};
        const char *want = cases[i].msg;
        size_t wl = strlen(want);
        int rc = ret_snapshots_from_json(&l, cases[i].doc, strlen(cases[i].doc), &err);
        if (rc != UTIL_EINVAL)
            fail_msg("case %zu (%s): rc %d, want UTIL_EINVAL", i, cases[i].doc, rc);
        if (want[wl - 1] == '*' ? strncmp(err.msg, want, wl - 1) != 0 : strcmp(err.msg, want) != 0)
            fail_msg("case %zu (%s):\n  got:  %s\n  want: %s", i, cases[i].doc, err.msg, want);
        assert_null(l.v);
        assert_int_equal(l.n, 0);
    }
}

static void test_rejects_a_duplicate_key_by_name(void **state)
{
    static const char doc[] = "[{\"id\":\"a\",\"id\":\"b\",\"time\":\"2026-06-01T00:00:00Z\"}]";
    struct ret_snapshot_list l;
    struct util_err err = {0};
    assert_int_equal(ret_snapshots_from_json(&l, doc, strlen(doc), &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "duplicate object key"));
}

static void test_a_large_list(void **state)
{
    /* 5,000 items: the id block and the duplicate check scale. */
    struct util_buf b;
    struct ret_snapshot_list l;
    struct util_err err = {0};
    util_buf_init(&b);
    util_buf_puts(&b, "[");
    for (int i = 0; i < 5000; i++)
        util_buf_printf(&b, "%s{\"id\":\"snap-%05d\",\"time\":\"2026-06-01T%02d:%02d:00Z\"}",
                        i ? "," : "", i, i / 60 % 24, i % 60);
    util_buf_puts(&b, "]");
    assert_int_equal(ret_snapshots_from_json(&l, b.data, b.len, &err), 0);
    assert_int_equal(l.n, 5000);
    assert_string_equal(l.v[4999].id, "snap-04999");
    ret_snapshot_list_free(&l);
    util_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_a_list),
        cmocka_unit_test(test_reads_an_empty_list),
        cmocka_unit_test(test_ids_outlive_the_document),
        cmocka_unit_test(test_rejects_with_a_message),
        cmocka_unit_test(test_rejects_a_duplicate_key_by_name),
        cmocka_unit_test(test_a_large_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
