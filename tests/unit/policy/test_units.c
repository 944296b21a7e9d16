/*
 * Durations and rates on their own (docs/policy.md, "Durations and rates"), and the duration format
 * used in human output.
 */
#include "policy_test.h"

static void test_durations(void **state)
{
    static const struct {
        const char *text;
        int64_t seconds;
    } good[] = {
        {"0s", 0},
        {"1s", 1},
        {"15m", 900},
        {"24h", 86400},
        {"1d", 86400},
        {"1w", 604800},
        {"1y", 31536000},
        {"007m", 420},
        {"9223372036854775807s", INT64_MAX},
        {"153722867280912930m", 153722867280912930LL * 60},
        {"292471208677y", 292471208677LL * 31536000},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct util_err err = {0};
        int64_t s = -1;
        assert_int_equal(policy_parse_duration(good[i].text, &s, &err), 0);
        assert_true(s == good[i].seconds);
    }

    static const struct {
        const char *text;
        int code;
        const char *needle;
    } bad[] = {
        {"", UTIL_EINVAL, "expected a duration"},
        {"15", UTIL_EINVAL, "a duration needs a unit (s, m, h, d, w or y): write 15s"},
        {"m", UTIL_EINVAL, "starts with a number"},
        {"-5m", UTIL_EINVAL, "no sign"},
        {"+5m", UTIL_EINVAL, "no sign"},
        {"5 m", UTIL_EINVAL, "no spaces"},
        {" 5m", UTIL_EINVAL, "no spaces"},
        {"1.5h", UTIL_EINVAL, "fractions are not accepted"},
        {"1,5h", UTIL_EINVAL, "fractions are not accepted"},
        {"1h30m", UTIL_EINVAL, "write 90m instead of 1h30m"},
        {"1d12h", UTIL_EINVAL, "write 36h instead of 1d12h"},
        {"2m30s", UTIL_EINVAL, "write 150s instead of 2m30s"},
        {"15M", UTIL_EINVAL, "unknown unit \"M\""},
        {"15min", UTIL_EINVAL, "unknown unit \"min\""},
        {"15ms", UTIL_EINVAL, "unknown unit \"ms\""},
        {"5mo", UTIL_EINVAL, "unknown unit \"mo\""},
        {"9223372036854775808s", UTIL_ERANGE, "too large"},
        {"153722867280912931m", UTIL_ERANGE, "too large"},
        {"292471208678y", UTIL_ERANGE, "too large"},
        {"99999999999999999999y", UTIL_ERANGE, "too large"},
        {"99999999999999999999999999999999999999s", UTIL_ERANGE, "too large"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct util_err err = {0};
        int64_t s = 12345;
        int rc = policy_parse_duration(bad[i].text, &s, &err);
        if (rc != bad[i].code || strstr(err.msg, bad[i].needle) == NULL)
            print_message("%s: %d %s\n", bad[i].text, rc, err.msg);
        assert_int_equal(rc, bad[i].code);
        assert_non_null(strstr(err.msg, bad[i].needle));
        assert_true(s == 12345); /* untouched on error */
    }
}

static void test_rates(void **state)
{
    static const struct {
        const char *text;
        uint64_t bps;
    } good[] = {
        {"0B/s", 0},
        {"1023B/s", 1023},
        {"1KiB/s", 1024},
        {"800KiB/s", 819200},
        {"50MiB/s", 52428800},
        {"1GiB/s", 1073741824},
        {"18446744073709551615B/s", UINT64_MAX},
        {"17179869183GiB/s", 17179869183ULL * 1073741824},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct util_err err = {0};
        uint64_t v = 1;
        assert_int_equal(policy_parse_rate(good[i].text, &v, &err), 0);
        assert_true(v == good[i].bps);
    }
    static const struct {
        const char *text;
        int code;
        const char *needle;
    } bad[] = {
        {"", UTIL_EINVAL, "expected a rate"},
        {"50MiB", UTIL_EINVAL, "ends in /s"},
        {"50", UTIL_EINVAL, "ends in /s"},
        {"/s", UTIL_EINVAL, "starts with a number"},
        {"50/s", UTIL_EINVAL, "unknown unit \"\""},
        {"50MB/s", UTIL_EINVAL, "write 50MiB/s, not 50MB/s"},
        {"50KB/s", UTIL_EINVAL, "write 50KiB/s"},
        {"1GB/s", UTIL_EINVAL, "write 1GiB/s"},
        {"50Mbit/s", UTIL_EINVAL, "unknown unit \"Mbit\""},
        {"50TiB/s", UTIL_EINVAL, "unknown unit \"TiB\""},
        {"-1KiB/s", UTIL_EINVAL, "no sign"},
        {"1 KiB/s", UTIL_EINVAL, "no spaces"},
        {"1.5MiB/s", UTIL_EINVAL, "fractions"},
        {"18446744073709551616B/s", UTIL_ERANGE, "too large"},
        {"17179869184GiB/s", UTIL_ERANGE, "too large"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct util_err err = {0};
        uint64_t v = 7;
        int rc = policy_parse_rate(bad[i].text, &v, &err);
        if (rc != bad[i].code || strstr(err.msg, bad[i].needle) == NULL)
            print_message("%s: %d %s\n", bad[i].text, rc, err.msg);
        assert_int_equal(rc, bad[i].code);
        assert_non_null(strstr(err.msg, bad[i].needle));
        assert_true(v == 7);
    }
}

static void test_format_duration(void **state)
{
    static const struct {
        int64_t s;
        const char *text;
    } cases[] = {
        {0, "0s"},
        {1, "1s"},
        {59, "59s"},
        {60, "1m"},
        {900, "15m"},
        {3600, "1h"},
        {3661, "1h1m1s"},
        {86400, "24h"},
        {181500, "50h25m"},
        {173700, "48h15m"},
        {-90, "-1m30s"},
        {INT64_MAX, "2562047788015215h30m7s"},
        {INT64_MIN, "-2562047788015215h30m8s"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[64];
        policy_format_duration(cases[i].s, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].text);
    }
    /* A short buffer is cut, never overrun. */
    {
        char buf[4];
        policy_format_duration(181500, buf, sizeof(buf));
        assert_string_equal(buf, "50h");
        policy_format_duration(181500, buf, 0); /* nothing written, nothing read */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_rates),
        cmocka_unit_test(test_format_duration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
