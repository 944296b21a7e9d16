/*
 * tz_zone_parse on damaged files (every error path says what is wrong, nothing
 * crashes), and the POSIX TZ footer: its grammar, and its meaning compared with
 * glibc evaluating the same TZ string.
 */
#include <time.h>

#include "tz/tz_internal.h"
#include "tz/tz_test.h"
#include "tz/tzif_build.h"

static void expect_parse_error(const unsigned char *data, size_t len, const char *says)
{
    struct tz_zone *z = (struct tz_zone *)1;
    struct util_err err = {0};
    int rc = tz_zone_parse(&z, "Test/Zone", data, len, &err);
    if (rc != UTIL_EINVAL || z != NULL || strstr(err.msg, says) == NULL)
        fail_msg("rc %d, message \"%s\", expected one with \"%s\"", rc, err.msg, says);
    assert_non_null(strstr(err.msg, "Test/Zone"));
}

static void test_truncated_at_every_length(void **state)
{
    static const char *files[] = {TZ_DEFAULT_DIR "/Europe/Kyiv", TZ_DEFAULT_DIR "/UTC",
                                  TZ_DEFAULT_DIR "/America/Santiago"};
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        size_t len;
        unsigned char *data = slurp(files[f], &len);
        for (size_t n = 0; n < len; n++) {
            /* A copy of exactly n bytes, so ASan sees any read past the end. */
            unsigned char *part = util_malloc(n ? n : 1);
            memcpy(part, data, n);
            struct tz_zone *z = NULL;
            struct util_err err = {0};
            if (tz_zone_parse(&z, "Test/Zone", part, n, &err) != UTIL_EINVAL)
                fail_msg("%s cut at %zu bytes of %zu was accepted", files[f], n, len);
            assert_null(z);
            free(part);
        }
        struct tz_zone *z = NULL;
        struct util_err err = {0};
        assert_int_equal(tz_zone_parse(&z, "Test/Zone", data, len, &err), 0);
        tz_zone_free(z);
        free(data);
    }
}

/* A valid little file: LMT, then standard time with a DST footer. */
static int64_t g_times[3] = {-2000000000, 100000000, 200000000};
static uint8_t g_idx[3] = {1, 2, 1};
static int32_t g_offs[3] = {1800, 3600, 7200};
static uint8_t g_isdst[3] = {0, 0, 1};
static uint8_t g_desig[3] = {0, 4, 8};
static const char g_chars[] = "LMT\0CET\0CEST";

static struct tzif_spec base_spec(void)
{
    struct tzif_spec s = {'2',
                          3,
                          g_times,
                          g_idx,
                          3,
                          g_offs,
                          g_isdst,
                          g_desig,
                          g_chars,
                          sizeof(g_chars),
                          0,
                          true,
                          "CET-1CEST,M3.5.0,M10.5.0/3"};
    return s;
}

static void expect_spec_error(const struct tzif_spec *s, const char *says)
{
    size_t len;
    unsigned char *data = tzif_build(s, &len);
    expect_parse_error(data, len, says);
    free(data);
}

static void test_base_file_is_valid(void **state)
{
    struct tzif_spec s = base_spec();
    size_t len;
    unsigned char *data = tzif_build(&s, &len);
    struct tz_zone *z = NULL;
    struct util_err err = {0};
    assert_int_equal(tz_zone_parse(&z, "Test/Zone", data, len, &err), 0);
    assert_string_equal(tz_zone_name(z), "Test/Zone");
    assert_int_equal(tz_offset_at(z, -2000000001), 1800); /* type 0 before the first */
    assert_string_equal(tz_abbrev_at(z, -2000000001), "LMT");
    assert_int_equal(tz_offset_at(z, 150000000), 7200);
    assert_string_equal(tz_abbrev_at(z, 150000000), "CEST");
    assert_int_equal(tz_offset_at(z, civil(2026, 7, 1, 0, 0)), 7200);
    assert_int_equal(tz_offset_at(z, civil(2026, 12, 1, 0, 0)), 3600);
    tz_zone_free(z);
    free(data);

    /* Versions 3 and 4 read the same; the version 1 block is skipped by its size. */
    s.version = '4';
    data = tzif_build(&s, &len);
    assert_int_equal(tz_zone_parse(&z, "Test/Zone", data, len, &err), 0);
    tz_zone_free(z);
    free(data);
}

static void test_header_errors(void **state)
{
    struct tzif_spec s = base_spec();
    size_t len;
    unsigned char *data = tzif_build(&s, &len);
    unsigned char *bad = util_malloc(len);

    memcpy(bad, data, len);
    bad[3] = 'F';
    expect_parse_error(bad, len, "not a TZif file");
    memcpy(bad, data, len);
    bad[4] = '1';
    expect_parse_error(bad, len, "unknown TZif version");
    /* The second header's magic, after the version 1 block. */
    memcpy(bad, data, len);
    size_t second = 44 + 3 * 5 + 3 * 6 + sizeof(g_chars) + 3 + 3;
    assert_memory_equal(bad + second, "TZif", 4);
    bad[second] = 'X';
    expect_parse_error(bad, len, "second TZif header");
    free(bad);
    free(data);

    /* Version 1: no 64-bit data. */
    s.version = 0;
    expect_spec_error(&s, "version 1");
    s.version = '2';

    /* Leap seconds: a right/ zone. */
    s.leapcnt = 2;
    expect_spec_error(&s, "right/");
    s.leapcnt = 0;
}

static void test_count_and_index_errors(void **state)
{
    struct tzif_spec s = base_spec();

    s.typecnt = 0;
    s.indicators = false;
    expect_spec_error(&s, "invalid TZif counts");
    s = base_spec();
    s.charcnt = 0;
    expect_spec_error(&s, "invalid TZif counts");

    /* A transition to a type that does not exist. */
    uint8_t idx[3] = {1, 3, 1};
    s = base_spec();
    s.idx = idx;
    expect_spec_error(&s, "transition 1");

    /* Transitions out of order, or twice at one instant. */
    int64_t times[3] = {-2000000000, 200000000, 100000000};
    s = base_spec();
    s.times = times;
    expect_spec_error(&s, "not after the one before");
    times[1] = times[2];
    expect_spec_error(&s, "not after the one before");

    /* An abbreviation index past the bytes, or one with no NUL before the end. */
    uint8_t desig[3] = {0, 4, 13};
    s = base_spec();
    s.desig = desig;
    expect_spec_error(&s, "abbreviation index");
    static const char unterminated[] = {'L', 'M', 'T', 0, 'C', 'E', 'T', 0, 'C', 'E', 'S', 'T'};
    s = base_spec();
    s.chars = unterminated;
    s.charcnt = sizeof(unterminated);
    expect_spec_error(&s, "abbreviation index");

    /* A DST flag that is not 0 or 1. */
    uint8_t isdst[3] = {0, 2, 1};
    s = base_spec();
    s.isdst = isdst;
    expect_spec_error(&s, "DST flag");

    /* Offsets beyond a week, including -2^31 which RFC 9636 forbids. */
    int32_t offs[3] = {1800, 604800, 7200};
    s = base_spec();
    s.offs = offs;
    expect_spec_error(&s, "beyond one week");
    offs[1] = INT32_MIN;
    expect_spec_error(&s, "beyond one week");
    offs[1] = -604799;
    {
        size_t len;
        unsigned char *data = tzif_build(&s, &len);
        struct tz_zone *z = NULL;
        struct util_err err = {0};
        assert_int_equal(tz_zone_parse(&z, "Test/Zone", data, len, &err), 0);
        tz_zone_free(z);
        free(data);
    }

    /* More than 256 types cannot be indexed by a byte. */
    s = base_spec();
    s.typecnt = 300;
    s.indicators = false;
    int32_t many_offs[300] = {0};
    uint8_t many_zero[300] = {0};
    s.offs = many_offs;
    s.isdst = many_zero;
    s.desig = many_zero;
    expect_spec_error(&s, "invalid TZif counts");
}

static void test_indicator_errors(void **state)
{
    struct tzif_spec s = base_spec();
    size_t len;
    unsigned char *data = tzif_build(&s, &len);
    /* The footer is the last 28 bytes; the 2 x 3 indicators come right before it. */
    size_t footer = len - strlen("\nCET-1CEST,M3.5.0,M10.5.0/3\n");
    assert_int_equal(data[footer], '\n');
    data[footer - 1] = 2;
    expect_parse_error(data, len, "indicator");
    free(data);

    /* isstdcnt must be 0 or typecnt. */
    data = tzif_build(&s, &len);
    size_t second = 44 + 3 * 5 + 3 * 6 + sizeof(g_chars) + 3 + 3;
    data[second + 20 + 7] = 2; /* isutcnt, low byte */
    expect_parse_error(data, len, "invalid TZif counts");
    free(data);
}

static void test_footer_framing_errors(void **state)
{
    struct tzif_spec s = base_spec();
    size_t len;
    unsigned char *data = tzif_build(&s, &len);

    /* No final newline; nothing after the data; trailing bytes after the footer. */
    expect_parse_error(data, len - 1, "footer");
    size_t footer = len - strlen("\nCET-1CEST,M3.5.0,M10.5.0/3\n");
    expect_parse_error(data, footer, "footer");
    unsigned char *more = util_malloc(len + 3);
    memcpy(more, data, len);
    memcpy(more + len, "x\n", 2);
    expect_parse_error(more, len + 2, "footer");
    more[footer] = 'X';
    expect_parse_error(more, len, "footer");
    free(more);
    free(data);

    /* A newline inside the TZ string. */
    s.footer = "CET-1\nCEST";
    expect_spec_error(&s, "footer");
}

static void test_footer_grammar(void **state)
{
    static const char *bad[] = {
        "EST",                         /* no offset */
        "ES5",                         /* a name of two letters */
        "<+0>3",                       /* a quoted name of two characters */
        "<+03-3",                      /* unterminated quoted name */
        "<+0 3>-3",                    /* a space in a quoted name */
        "EST168",                      /* an offset of 168 hours */
        "EST5:60",                     /* 60 minutes */
        "EST5:30:60",                  /* 60 seconds */
        "EST5:",                       /* a colon and nothing */
        "EST5EDT,M3.2.0",              /* one rule */
        "EST5EDT,M13.1.0,M11.1.0",     /* month 13 */
        "EST5EDT,M0.1.0,M11.1.0",      /* month 0 */
        "EST5EDT,M3.6.0,M11.1.0",      /* week 6 */
        "EST5EDT,M3.0.0,M11.1.0",      /* week 0 */
        "EST5EDT,M3.2.7,M11.1.0",      /* weekday 7 */
        "EST5EDT,M3.2,M11.1.0",        /* no weekday */
        "EST5EDT,J0,J365",             /* J counts from 1 */
        "EST5EDT,J366,J365",           /* J up to 365 */
        "EST5EDT,366,300",             /* n up to 365 */
        "EST5EDT,M3.2.0/168,M11.1.0",  /* a rule time of 168 hours */
        "EST5EDT,M3.2.0/,M11.1.0",     /* a slash and no time */
        "EST5EDT,M3.2.0,M11.1.0junk",  /* trailing text */
        "EST5EDT4junk",                /* trailing text after the DST offset */
        "EST5EDT,",                    /* a comma and nothing */
        "5EST",                        /* no name */
        "EST+",                        /* a sign and no hours */
        "EST5EDT,M3.2.0,M11.1.0,J1",   /* three rules */
        "EST1234",                     /* four-digit hours */
        "EST5EDT,Mx.1.0,M11.1.0",      /* not a number */
        "EST5EDT,M3.2.0,M11.1.0/-168", /* below -167 hours */
    };
    struct tz_posix px;
    struct util_err err = {0};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (tz_posix_parse(&px, bad[i], strlen(bad[i]), &err) != UTIL_EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_non_null(strstr(err.msg, "POSIX TZ string"));
        /* And inside a file, the message names the zone. */
        struct tzif_spec s = base_spec();
        s.footer = bad[i];
        expect_spec_error(&s, "footer");
    }

    assert_int_equal(tz_posix_parse(&px, "EST5", 4, &err), 0);
    assert_false(px.has_dst);
    assert_int_equal(px.std_off, -5 * 3600);
    assert_int_equal(tz_posix_parse(&px, "<+0330>-3:30", 12, &err), 0);
    assert_string_equal(px.std_name, "+0330");
    assert_int_equal(px.std_off, 3 * 3600 + 1800);
    /* A DST name alone: one hour ahead, on the US rules. */
    assert_int_equal(tz_posix_parse(&px, "EST5EDT", 7, &err), 0);
    assert_true(px.has_dst);
    assert_int_equal(px.dst_off, -4 * 3600);
    assert_int_equal(px.start.kind, TZ_RULE_MONTH);
    assert_int_equal(px.start.month, 3);
    assert_int_equal(px.start.week, 2);
    assert_int_equal(px.end.month, 11);
    assert_int_equal(px.end.time, 7200);
    const char *v3 = "<-03>+3<-02>+2:00:00,M9.1.6/-167,J1/167:59:59";
    assert_int_equal(tz_posix_parse(&px, v3, strlen(v3), &err), 0);
    assert_int_equal(px.start.time, -167 * 3600);
    assert_int_equal(px.end.time, 167 * 3600 + 59 * 60 + 59);
    assert_int_equal(px.end.kind, TZ_RULE_JULIAN1);
    assert_int_equal(tz_posix_parse(&px, "AAA-1:00:01BBB,0/0,365", 22, &err), 0);
    assert_int_equal(px.std_off, 3601);
    assert_int_equal(px.start.kind, TZ_RULE_JULIAN0);
    assert_int_equal(px.end.day, 365);

    /* An empty footer is allowed: the last type goes on for ever. */
    struct tzif_spec s = base_spec();
    s.footer = "";
    size_t len;
    unsigned char *data = tzif_build(&s, &len);
    struct tz_zone *z = NULL;
    assert_int_equal(tz_zone_parse(&z, "Test/Zone", data, len, &err), 0);
    assert_int_equal(tz_offset_at(z, civil(2026, 12, 1, 0, 0)), 3600);
    assert_true(tz_next_transition(z, 200000000) == INT64_MAX);
    tz_zone_free(z);
    free(data);
}

static void test_rule_days(void **state)
{
    struct tz_rule r = {TZ_RULE_JULIAN1, 0, 0, 0, 60, 0};
    /* J60 is March 1 in every year; 59 (zero-based, counting Feb 29) is Feb 29 in 2024. */
    assert_true(tz_rule_day(&r, 2024) == util_days_from_civil(2024, 3, 1));
    assert_true(tz_rule_day(&r, 2025) == util_days_from_civil(2025, 3, 1));
    r = (struct tz_rule){TZ_RULE_JULIAN0, 0, 0, 0, 59, 0};
    assert_true(tz_rule_day(&r, 2024) == util_days_from_civil(2024, 2, 29));
    assert_true(tz_rule_day(&r, 2025) == util_days_from_civil(2025, 3, 1));
    r.day = 365; /* past the end of a common year: January 1 of the next */
    assert_true(tz_rule_day(&r, 2025) == util_days_from_civil(2026, 1, 1));
    assert_true(tz_rule_day(&r, 2024) == util_days_from_civil(2024, 12, 31));
    /* M2.5.0: the last Sunday of February; M3.5.0 in 2026 is March 29. */
    r = (struct tz_rule){TZ_RULE_MONTH, 3, 5, 0, 0, 0};
    assert_true(tz_rule_day(&r, 2026) == util_days_from_civil(2026, 3, 29));
    r = (struct tz_rule){TZ_RULE_MONTH, 2, 5, 4, 0, 0};
    assert_true(tz_rule_day(&r, 2024) == util_days_from_civil(2024, 2, 29)); /* a Thursday */
    r = (struct tz_rule){TZ_RULE_MONTH, 9, 1, 6, 0, 0};
    assert_true(tz_rule_day(&r, 2026) == util_days_from_civil(2026, 9, 5));
}

/*
 * Footers that glibc evaluates the same way (it reads the TZ string directly). A
 * DST name without rules is left out: glibc then copies the rules of its
 * posixrules file (New York's history), where Lodestore takes the US rules.
 */
static const char *glibc_footers[] = {
    "EST5EDT,M3.2.0,M11.1.0",
    "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
    "IST-1GMT0,M10.5.0,M3.5.0/1",
    "<-04>4<-03>,M9.1.6/24,M4.1.6/24",
    "<-02>2<-01>,M3.5.0/-1,M10.5.0/0",
    "<+00>0<+02>-2,M3.5.0/1,M10.5.0/3",
    "<+1245>-12:45<+1345>,M9.5.0/2:45,M4.1.0/3:45",
    "EET-2EEST,M4.5.5/0,M10.5.4/24",
    "IST-2IDT,M3.4.4/26,M10.5.0",
    "CET-1CEST,J60/2,J300/3",
    "AAA3BBB,59/2,300/3",
    "NZST-12NZDT,M9.5.0,M4.1.0/3",
    "<+0545>-5:45<+0615>-6:15,M9.5.6/24,M4.1.0/0",
    "<+03>-3<+01>-1,M10.5.0/4,M3.5.0",
    "AAA-14BBB-15:30:15,M2.5.0/-20,M11.1.3/100",
    "<-0930>9:30<-08>8,J1/5,J200",
};

static struct tz_zone *footer_zone(const char *footer, int64_t at)
{
    struct tz_posix px;
    struct util_err err = {0};
    assert_int_equal(tz_posix_parse(&px, footer, strlen(footer), &err), 0);
    size_t len;
    unsigned char *data = tzif_footer_zone(footer, at, px.std_off, px.std_name, &len);
    struct tz_zone *z = NULL;
    if (tz_zone_parse(&z, footer, data, len, &err) != 0)
        fail_msg("%s", err.msg);
    free(data);
    return z;
}

static void test_footers_against_glibc(void **state)
{
    for (size_t i = 0; i < sizeof(glibc_footers) / sizeof(glibc_footers[0]); i++) {
        const char *f = glibc_footers[i];
        /* The file's one transition is in 1850: the footer rules everything after. */
        struct tz_zone *z = footer_zone(f, civil(1850, 1, 1, 0, 0));
        setenv("TZ", f, 1);
        tzset();
        /* glibc applies a TZ string's DST rules only from 1970 on. */
        int64_t lo = civil(1970, 1, 1, 0, 0), hi = civil(2100, 1, 1, 0, 0);
        size_t n = 0;
        for (int64_t t = tz_next_transition(z, lo); t < hi; t = tz_next_transition(z, t), n++) {
            for (int64_t d = -1; d <= 1; d++) {
                time_t tt = (time_t)(t + d);
                struct tm tm;
                assert_non_null(localtime_r(&tt, &tm));
                if (tm.tm_gmtoff != tz_offset_at(z, t + d) ||
                    strcmp(tm.tm_zone, tz_abbrev_at(z, t + d)) != 0)
                    fail_msg("%s at %lld: %d %s, glibc %ld %s", f, (long long)(t + d),
                             tz_offset_at(z, t + d), tz_abbrev_at(z, t + d), tm.tm_gmtoff,
                             tm.tm_zone);
            }
            for (int64_t d = -3 * 3600; d <= 3 * 3600; d += 1800)
                check_resolution(z, t + tz_offset_at(z, t) + d);
        }
        assert_true(n >= 2 * 129); /* two transitions a year */
        for (int64_t t = lo; t < hi; t += 86400 * 3 + 4001) {
            time_t tt = (time_t)t;
            struct tm tm;
            assert_non_null(localtime_r(&tt, &tm));
            if (tm.tm_gmtoff != tz_offset_at(z, t))
                fail_msg("%s at %lld: %d, glibc %ld", f, (long long)t, tz_offset_at(z, t),
                         tm.tm_gmtoff);
        }
        tz_zone_free(z);
    }
    unsetenv("TZ");
    tzset();
}

/*
 * The Gregorian calendar repeats every 400 years, and so does a footer: the
 * precomputed table (to 2200) and the direct evaluation (after it, and before 1800
 * for a file whose footer starts earlier) must agree across that period.
 */
static void test_footer_table_and_direct_agree(void **state)
{
    const int64_t period = 146097 * (int64_t)86400;
    for (size_t i = 0; i < sizeof(glibc_footers) / sizeof(glibc_footers[0]); i++) {
        const char *f = glibc_footers[i];
        /* One file transition in 1700: [1700, 1800) and [2200, ...) are evaluated directly. */
        struct tz_zone *z = footer_zone(f, civil(1700, 1, 1, 0, 0));
        size_t n = 0;
        for (int64_t t = civil(1701, 1, 1, 0, 0); t < civil(1900, 1, 1, 0, 0);
             t = tz_next_transition(z, t)) {
            if (n++ % (size_t)test_stride() != 0)
                continue;
            for (int k = 1; k <= 2; k++) {
                int64_t u = t + k * period;
                assert_int_equal(tz_offset_at(z, t), tz_offset_at(z, u));
                assert_int_equal(tz_offset_at(z, t - 1), tz_offset_at(z, u - 1));
                assert_string_equal(tz_abbrev_at(z, t), tz_abbrev_at(z, u));
                if (t > civil(1701, 1, 1, 0, 0) && tz_next_transition(z, u - 1) != u)
                    fail_msg("%s: %lld is a transition, %lld is not", f, (long long)t,
                             (long long)u);
                struct tz_local a, b;
                int64_t l = t + tz_offset_at(z, t);
                for (int64_t d = -7200; d <= 7200; d += 1800) {
                    tz_resolve_local(z, l + d, &a);
                    tz_resolve_local(z, l + d + k * period, &b);
                    assert_int_equal(a.kind, b.kind);
                    assert_true(a.at[0] + k * period == b.at[0]);
                    check_resolution(z, l + d);
                }
            }
        }
        tz_zone_free(z);

        /* A file with no transitions at all: the footer rules every instant. */
        struct tz_posix px;
        struct util_err err = {0};
        assert_int_equal(tz_posix_parse(&px, f, strlen(f), &err), 0);
        int32_t offs[1] = {px.std_off};
        uint8_t zero[1] = {0};
        struct tzif_spec s = {'2',  0,     NULL, NULL,        1,
                              offs, zero,  zero, px.std_name, strlen(px.std_name) + 1,
                              0,    false, f};
        size_t len;
        unsigned char *data = tzif_build(&s, &len);
        struct tz_zone *bare = NULL;
        assert_int_equal(tz_zone_parse(&bare, "bare", data, len, &err), 0);
        free(data);
        z = footer_zone(f, civil(1000, 1, 1, 0, 0));
        for (int64_t t = civil(1500, 1, 1, 0, 0); t < civil(2500, 1, 1, 0, 0);
             t += (86400 * 7 + 3333) * test_stride()) {
            assert_int_equal(tz_offset_at(bare, t), tz_offset_at(z, t));
            assert_true(tz_next_transition(bare, t) == tz_next_transition(z, t));
        }
        tz_zone_free(bare);
        tz_zone_free(z);
    }
}

/*
 * DST all year, as tzfile(5) writes it: DST starts January 1 at 00:00 standard
 * time and ends December 31 at 24:00 plus (DST - standard) in DST time, the instant
 * the next year's starts. In "XXX3EDT4,0/0,J365/23" XXX is a dummy UTC-3.
 * glibc gets the first hours of each year wrong (it looks at one year only), so
 * this is checked by hand: always DST, and no transition ever.
 */
static void test_default_rules(void **state)
{
    struct tz_zone *a = footer_zone("EST5EDT", civil(1850, 1, 1, 0, 0));
    struct tz_zone *b = footer_zone("EST5EDT,M3.2.0/2,M11.1.0/2", civil(1850, 1, 1, 0, 0));
    for (int64_t t = civil(1851, 1, 1, 0, 0); t < civil(2600, 1, 1, 0, 0);
         t += (86400 + 1234) * test_stride())
        assert_int_equal(tz_offset_at(a, t), tz_offset_at(b, t));
    assert_true(tz_next_transition(a, civil(2026, 1, 1, 0, 0)) == civil(2026, 3, 8, 7, 0));
    tz_zone_free(a);
    tz_zone_free(b);
}

static void test_permanent_dst(void **state)
{
    static const char *footers[] = {"EST5EDT,0/0,J365/25", "XXX3EDT4,0/0,J365/23"};
    for (size_t i = 0; i < 2; i++) {
        struct tz_zone *z = footer_zone(footers[i], civil(1900, 1, 1, 0, 0));
        int32_t want = -4 * 3600;
        for (int64_t y = 1901; y < 2600; y++) {
            int64_t jan1 = civil(y, 1, 1, 0, 0);
            for (int64_t d = -12 * 3600; d <= 12 * 3600; d += 1800) {
                assert_int_equal(tz_offset_at(z, jan1 + d), want);
                assert_string_equal(tz_abbrev_at(z, jan1 + d), "EDT");
            }
            assert_int_equal(tz_offset_at(z, civil(y, 7, 1, 0, 0)), want);
        }
        assert_true(tz_next_transition(z, civil(1950, 1, 1, 0, 0)) == INT64_MAX);
        assert_true(tz_next_transition(z, civil(2500, 1, 1, 0, 0)) == INT64_MAX);
        /* The switch from the file's standard time to the footer's EDT in 1900. */
        int64_t t1900 = civil(1900, 1, 1, 0, 0);
        assert_true(tz_next_transition(z, civil(1800, 1, 1, 0, 0)) == t1900);
        if (i == 0) /* EST (-5) to EDT (-4): an hour skipped */
            expect_local(z, civil(1899, 12, 31, 19, 30), TZ_LOCAL_GAP, t1900, 0);
        else /* XXX (-3) to EDT (-4): an hour repeated */
            expect_local(z, civil(1899, 12, 31, 20, 30), TZ_LOCAL_REPEATED, t1900 - 1800,
                         t1900 + 1800);
        expect_local(z, civil(2026, 1, 1, 0, 30), TZ_LOCAL_UNIQUE, civil(2026, 1, 1, 4, 30), 0);
        tz_zone_free(z);
    }
}

/* A file whose last type disagrees with its footer: the footer wins from then on. */
static void test_footer_overrides_last_type(void **state)
{
    /* The file says CET (+1) from 200000000 on; the footer says fixed +5. */
    struct tzif_spec s = base_spec();
    s.footer = "<+05>-5";
    size_t len;
    unsigned char *data = tzif_build(&s, &len);
    struct tz_zone *z = NULL;
    struct util_err err = {0};
    assert_int_equal(tz_zone_parse(&z, "Test/Zone", data, len, &err), 0);
    assert_int_equal(tz_offset_at(z, 199999999), 7200);
    assert_int_equal(tz_offset_at(z, 200000000), 5 * 3600);
    assert_string_equal(tz_abbrev_at(z, 200000000), "+05");
    assert_int_equal(tz_offset_at(z, civil(2500, 1, 1, 0, 0)), 5 * 3600);
    assert_true(tz_next_transition(z, 150000000) == 200000000);
    assert_true(tz_next_transition(z, 200000000) == INT64_MAX);
    tz_zone_free(z);
    free(data);
}

/* Transitions at the ends of the 64-bit range are clamped, not overflowed. */
static void test_extreme_transitions(void **state)
{
    int64_t times[4] = {INT64_MIN, -((int64_t)1 << 61), ((int64_t)1 << 61), INT64_MAX};
    uint8_t idx[4] = {1, 2, 1, 2};
    struct tzif_spec s = base_spec();
    s.timecnt = 4;
    s.times = times;
    s.idx = idx;
    size_t len;
    unsigned char *data = tzif_build(&s, &len);
    struct tz_zone *z = NULL;
    struct util_err err = {0};
    assert_int_equal(tz_zone_parse(&z, "Test/Zone", data, len, &err), 0);
    /* Before the clamp, the type of the last transition at or below it (CEST). */
    assert_int_equal(tz_offset_at(z, INT64_MIN), 7200);
    assert_int_equal(tz_offset_at(z, 0), 7200);
    assert_true(tz_next_transition(z, 0) == INT64_MAX);
    struct tz_local r;
    tz_resolve_local(z, INT64_MIN, &r);
    assert_int_equal(r.kind, TZ_LOCAL_UNIQUE);
    tz_resolve_local(z, INT64_MAX, &r);
    assert_int_equal(r.kind, TZ_LOCAL_UNIQUE);
    tz_zone_free(z);
    free(data);

    /* Offsets of a week either way, at the clamp edges. */
    int64_t t2[2] = {-((int64_t)1 << 60) + 5, ((int64_t)1 << 60) - 5};
    int32_t offs[3] = {-604799, 604799, 0};
    uint8_t idx2[2] = {1, 0};
    s = base_spec();
    s.timecnt = 2;
    s.times = t2;
    s.idx = idx2;
    s.offs = offs;
    s.footer = "";
    data = tzif_build(&s, &len);
    assert_int_equal(tz_zone_parse(&z, "Test/Zone", data, len, &err), 0);
    int64_t probes[] = {INT64_MIN, -((int64_t)1 << 60), t2[0], 0, t2[1], INT64_MAX};
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        for (int64_t d = -700000; d <= 700000; d += 100000) {
            int64_t l = probes[i] > 0 && d > 0 && probes[i] > INT64_MAX - d   ? INT64_MAX
                        : probes[i] < 0 && d < 0 && probes[i] < INT64_MIN - d ? INT64_MIN
                                                                              : probes[i] + d;
            tz_resolve_local(z, l, &r);
            (void)tz_offset_at(z, l);
            (void)tz_next_transition(z, l);
        }
    }
    tz_zone_free(z);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncated_at_every_length),
        cmocka_unit_test(test_base_file_is_valid),
        cmocka_unit_test(test_header_errors),
        cmocka_unit_test(test_count_and_index_errors),
        cmocka_unit_test(test_indicator_errors),
        cmocka_unit_test(test_footer_framing_errors),
        cmocka_unit_test(test_footer_grammar),
        cmocka_unit_test(test_rule_days),
        cmocka_unit_test(test_footers_against_glibc),
        cmocka_unit_test(test_footer_table_and_direct_agree),
        cmocka_unit_test(test_default_rules),
        cmocka_unit_test(test_permanent_dst),
        cmocka_unit_test(test_footer_overrides_last_type),
        cmocka_unit_test(test_extreme_transitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
