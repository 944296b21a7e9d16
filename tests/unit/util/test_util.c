#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/util.h"

static void test_civil_round_trip(void **state)
{
    /* Every day from 1600 to 2500 goes to days and back, and days increase by one. */
    int64_t prev = util_days_from_civil(1599, 12, 31);
    for (int64_t y = 1600; y <= 2500; y++) {
        for (unsigned m = 1; m <= 12; m++) {
            for (unsigned d = 1; d <= util_days_in_month(y, m); d++) {
                int64_t days = util_days_from_civil(y, m, d);
                int64_t y2;
                unsigned m2, d2;
                assert_int_equal(days, prev + 1);
                util_civil_from_days(days, &y2, &m2, &d2);
                assert_int_equal(y2, y);
                assert_int_equal(m2, m);
                assert_int_equal(d2, d);
                prev = days;
            }
        }
    }
    assert_int_equal(util_days_from_civil(1970, 1, 1), 0);
    assert_int_equal(util_days_from_civil(2000, 3, 1), 11017);
    assert_int_equal(util_weekday_from_days(util_days_from_civil(2026, 12, 2)), 3); /* Wednesday */
    assert_int_equal(util_weekday_from_days(util_days_from_civil(1969, 12, 31)), 3);
}

static void test_format_and_parse_time(void **state)
{
    char buf[UTIL_TIME_BUF];
    int64_t t;
    struct util_err err = {0};

    util_format_utc(0, buf, sizeof(buf));
    assert_string_equal(buf, "1970-01-01T00:00:00Z");
    util_format_utc(-1, buf, sizeof(buf));
    assert_string_equal(buf, "1969-12-31T23:59:59Z");
    assert_int_equal(util_parse_rfc3339("2026-03-29T01:00:00Z", &t, &err), 0);
    util_format_utc(t, buf, sizeof(buf));
    assert_string_equal(buf, "2026-03-29T01:00:00Z");
    assert_int_equal(util_parse_rfc3339("2026-03-29T04:00:00+03:00", &t, &err), 0);
    util_format_utc(t, buf, sizeof(buf));
    assert_string_equal(buf, "2026-03-29T01:00:00Z");
    assert_int_equal(util_parse_rfc3339("2026-03-29T01:00:00.999-00:30", &t, &err), 0);
    util_format_utc(t, buf, sizeof(buf));
    assert_string_equal(buf, "2026-03-29T01:30:00Z");

    const char *bad[] = {"",
                         "2026-03-29",
                         "2026-03-29T01:00:00",
                         "2026-02-29T00:00:00Z",
                         "2026-13-01T00:00:00Z",
                         "2026-03-29T24:00:00Z",
                         "2026-03-29T01:00:00+0300",
                         "2026-03-29T01:00:00Zjunk",
                         "2026-03-29 01:00:00Z",
                         "2026-03-29T01:00:00."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(util_parse_rfc3339(bad[i], &t, &err), UTIL_EINVAL);
        assert_non_null(strstr(err.msg, "RFC 3339"));
    }
}

/* Every form, both signs of offset, the years that take the slow path, and truncation. */
static void test_format_time_forms(void **state)
{
    char buf[UTIL_TIME_BUF];
    int64_t t = 1774746000; /* 2026-03-29T01:00:00Z */
    static const struct {
        enum util_time_form form;
        int32_t off;
        const char *want;
    } cases[] = {
        {UTIL_TIME_UTC, 10800, "2026-03-29T01:00:00Z"},
        {UTIL_TIME_OFFSET, 10800, "2026-03-29T04:00:00+03:00"},
        {UTIL_TIME_OFFSET, -34200, "2026-03-28T15:30:00-09:30"},
        {UTIL_TIME_OFFSET, 0, "2026-03-29T01:00:00+00:00"},
        {UTIL_TIME_BASIC, 10800, "20260329T010000Z"},
        {UTIL_TIME_MINUTE, 10800, "2026-03-29T04:00"},
        {UTIL_TIME_DATE, -3600, "2026-03-29"},
        {UTIL_TIME_DATE, -3601, "2026-03-28"},
        {UTIL_TIME_TEXT, 19800, "2026-03-29 06:30:00"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = util_format_time(t, cases[i].off, cases[i].form, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].want);
        assert_int_equal(n, strlen(cases[i].want));
    }
    /* Years outside 0..9999 still read as years (0000-01-01 is -62167219200). */
    util_format_time(-62167219200 - 86400, 0, UTIL_TIME_DATE, buf, sizeof(buf));
    assert_string_equal(buf, "-001-12-31");
    util_format_time(253402300800, 0, UTIL_TIME_BASIC, buf, sizeof(buf));
    assert_string_equal(buf, "100000101T000000Z");
    /* A short buffer is cut and terminated; an empty one is left alone. */
    assert_int_equal(util_format_time(t, 0, UTIL_TIME_UTC, buf, 5), 4);
    assert_string_equal(buf, "2026");
    buf[0] = 'x';
    assert_int_equal(util_format_time(t, 0, UTIL_TIME_UTC, buf, 0), 0);
    assert_int_equal(buf[0], 'x');
}

static void test_parse_u64(void **state)
{
    uint64_t v;
    assert_int_equal(util_parse_u64("0", 1, 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(util_parse_u64("10", 2, 10, &v), 0);
    assert_int_equal(v, 10);
    assert_int_equal(util_parse_u64("11", 2, 10, &v), UTIL_ERANGE);
    assert_int_equal(util_parse_u64("18446744073709551615", 20, UINT64_MAX, &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(util_parse_u64("18446744073709551616", 20, UINT64_MAX, &v), UTIL_ERANGE);
    assert_int_equal(util_parse_u64("", 0, 10, &v), UTIL_EINVAL);
    assert_int_equal(util_parse_u64("+1", 2, 10, &v), UTIL_EINVAL);
    assert_int_equal(util_parse_u64("-1", 2, 10, &v), UTIL_EINVAL);
    assert_int_equal(util_parse_u64(" 1", 2, 10, &v), UTIL_EINVAL);
}

static void test_edit_distance(void **state)
{
    assert_int_equal(util_edit_distance("retension", "retention"), 1);
    assert_int_equal(util_edit_distance("", "abc"), 3);
    assert_int_equal(util_edit_distance("keepDaly", "keepDaily"), 1);
    assert_int_equal(util_edit_distance("cron", "cron"), 0);
}

static void test_buf_and_err(void **state)
{
    struct util_buf b;
    struct util_err err = {0};
    util_buf_init(&b);
    util_buf_puts(&b, "a");
    util_buf_printf(&b, "%d-%s", 42, "x");
    assert_string_equal(b.data, "a42-x");
    char *s = util_buf_steal(&b);
    assert_null(b.data);
    assert_string_equal(s, "a42-x");
    free(s);
    assert_int_equal(util_err_set(&err, UTIL_EIO, "file %s", "f"), UTIL_EIO);
    assert_string_equal(err.msg, "file f");
    assert_int_equal(util_err_set(NULL, UTIL_EIO, "nothing"), UTIL_EIO);
}

static void test_read_file_missing(void **state)
{
    struct util_err err = {0};
    char *data;
    size_t len;
    assert_int_equal(util_read_file("/nonexistent/policy.yaml", &data, &len, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/policy.yaml: cannot open"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_civil_round_trip),  cmocka_unit_test(test_format_and_parse_time),
        cmocka_unit_test(test_format_time_forms), cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_edit_distance),     cmocka_unit_test(test_buf_and_err),
        cmocka_unit_test(test_read_file_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
