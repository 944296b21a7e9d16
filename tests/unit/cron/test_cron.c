/*
 * cron: the grammar field by field (every bound and its neighbours, names, steps,
 * lists, every rejected construct and its message), the day rule, and
 * cron_next/cron_prev against a plain reference that walks day by day and then
 * minute by minute over random expressions and random starts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cron/cron.h"

/* Local seconds of a wall-clock time (no zone: cron works on local minutes). */
static int64_t lt(int64_t y, unsigned mo, unsigned d, unsigned h, unsigned mi)
{
    return util_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

static struct cron_expr parse_ok(const char *text)
{
    struct cron_expr e;
    struct util_err err = {0};
    int rc = cron_parse(&e, text, &err);
    if (rc != 0)
        fail_msg("cron_parse(\"%s\") failed: %s", text, err.msg);
    return e;
}

/* Asserts that text is rejected and that the message contains want. */
static void parse_bad(const char *text, const char *want)
{
    struct cron_expr e;
    struct util_err err = {0};
    int rc = cron_parse(&e, text, &err);
    if (rc != UTIL_EINVAL)
        fail_msg("cron_parse(\"%s\") returned %d, want UTIL_EINVAL", text, rc);
    if (strstr(err.msg, want) == NULL)
        fail_msg("cron_parse(\"%s\"): message \"%s\" does not contain \"%s\"", text, err.msg, want);
    assert_int_equal(err.code, UTIL_EINVAL);
}

static uint64_t bits(unsigned lo, unsigned hi, unsigned step)
{
    uint64_t m = 0;
    for (unsigned v = lo; v <= hi; v += step)
        m |= UINT64_C(1) << v;
    return m;
}

static void test_field_bounds(void **state)
{
    struct cron_expr e;
    char text[64];
    /* Each field: the lowest and highest value parse, one beyond each end does not. */
    static const struct {
        unsigned pos, min, max;
        const char *name;
    } f[] = {{0, 0, 59, "minute"},
             {1, 0, 23, "hour"},
             {2, 1, 31, "day-of-month"},
             {3, 1, 12, "month"},
             {4, 0, 7, "day-of-week"}};
    for (size_t i = 0; i < 5; i++) {
        const char *fields[5] = {"*", "*", "*", "*", "*"};
        char v[16], want[96];
        for (int delta = -1; delta <= 1; delta++) {
            for (int end = 0; end < 2; end++) {
                int value = end ? (int)f[i].max + delta : (int)f[i].min + delta;
                bool inside = value >= (int)f[i].min && value <= (int)f[i].max;
                snprintf(v, sizeof(v), "%d", value);
                fields[f[i].pos] = v;
                snprintf(text, sizeof(text), "%s %s %s %s %s", fields[0], fields[1], fields[2],
                         fields[3], fields[4]);
                if (inside) {
                    e = parse_ok(text);
                } else if (value < 0) {
                    snprintf(want, sizeof(want), "%s field \"-1\": unexpected \"-\"", f[i].name);
                    parse_bad(text, want);
                } else {
                    snprintf(want, sizeof(want), "%s field \"%d\": value %d is out of range %u-%u",
                             f[i].name, value, value, f[i].min, f[i].max);
                    parse_bad(text, want);
                }
            }
        }
    }
    parse_bad("61 * * * *", "minute field \"61\": value 61 is out of range 0-59");
    parse_bad("0 24 * * *", "hour field \"24\": value 24 is out of range 0-23");
    parse_bad("0 0 0 * *", "day-of-month field \"0\": value 0 is out of range 1-31");
    parse_bad("0 0 32 * *", "day-of-month field \"32\": value 32 is out of range 1-31");
    parse_bad("0 0 * 0 *", "month field \"0\": value 0 is out of range 1-12");
    parse_bad("0 0 * 13 *", "month field \"13\": value 13 is out of range 1-12");
    parse_bad("0 0 * * 8", "day-of-week field \"8\": value 8 is out of range 0-7");
    parse_bad("99999999999999999999999 * * * *", "out of range 0-59");
    /* A value inside a range or a list is checked the same way. */
    parse_bad("0-60 * * * *", "minute field \"0-60\": value 60 is out of range 0-59");
    parse_bad("1,2,60 * * * *", "value 60 is out of range 0-59");
    /* Leading zeros are plain decimals. */
    e = parse_ok("05 007 01 02 00");
    assert_true(e.minutes == UINT64_C(1) << 5);
    assert_int_equal(e.hours, 1u << 7);
    assert_int_equal(e.mdays, 1u << 1);
    assert_int_equal(e.months, 1u << 2);
    assert_int_equal(e.wdays, 1u << 0);
}

static void test_stars_lists_ranges_steps(void **state)
{
    struct cron_expr e = parse_ok("* * * * *");
    assert_true(e.minutes == bits(0, 59, 1));
    assert_int_equal(e.hours, bits(0, 23, 1));
    assert_int_equal(e.mdays, bits(1, 31, 1));
    assert_int_equal(e.months, bits(1, 12, 1));
    assert_int_equal(e.wdays, 0x7f);
    assert_true(e.mday_star);
    assert_true(e.wday_star);

    e = parse_ok("*/15 1-20/5 5/10 */3 1-5");
    assert_true(e.minutes == bits(0, 59, 15));
    assert_int_equal(e.hours, bits(1, 20, 5));  /* 1, 6, 11, 16 */
    assert_int_equal(e.mdays, bits(5, 31, 10)); /* 5/10 = 5-31/10: 5, 15, 25 */
    assert_int_equal(e.months, bits(1, 12, 3)); /* 1, 4, 7, 10 */
    assert_int_equal(e.wdays, bits(1, 5, 1));
    assert_false(e.mday_star);
    assert_false(e.wday_star);

    e = parse_ok("5/15 * * * *"); /* 5-59/15 */
    assert_true(e.minutes == ((UINT64_C(1) << 5) | (UINT64_C(1) << 20) | (UINT64_C(1) << 35) |
                              (UINT64_C(1) << 50)));
    e = parse_ok("0,30 3,5-7,22 1,15 * *");
    assert_true(e.minutes == ((UINT64_C(1) << 0) | (UINT64_C(1) << 30)));
    assert_int_equal(e.hours, (1u << 3) | (1u << 5) | (1u << 6) | (1u << 7) | (1u << 22));
    assert_int_equal(e.mdays, (1u << 1) | (1u << 15));
    /* Steps: 1 up to the width of the field; "*" with a step still counts as '*'. */
    e = parse_ok("*/59 */23 */30 */11 */7");
    assert_true(e.minutes == ((UINT64_C(1) << 0) | (UINT64_C(1) << 59)));
    assert_int_equal(e.hours, (1u << 0) | (1u << 23));
    assert_int_equal(e.mdays, (1u << 1) | (1u << 31));
    assert_int_equal(e.months, (1u << 1) | (1u << 12));
    assert_int_equal(e.wdays, 1u << 0); /* 0 and 7: Sunday twice */
    assert_true(e.mday_star);
    assert_true(e.wday_star);
    e = parse_ok("*/1 * * * *");
    assert_true(e.minutes == bits(0, 59, 1));
    parse_bad("*/60 * * * *", "minute field \"*/60\": step 60 is out of range: a step in this "
                              "field is 1-59");
    parse_bad("0 */24 * * *", "step 24 is out of range: a step in this field is 1-23");
    parse_bad("0 0 */31 * *", "step 31 is out of range: a step in this field is 1-30");
    parse_bad("0 0 * */12 *", "step 12 is out of range: a step in this field is 1-11");
    parse_bad("0 0 * * */8", "step 8 is out of range: a step in this field is 1-7");
    parse_bad("*/0 * * * *", "step 0 is out of range");
    parse_bad("*/ * * * *", "a step needs a number after \"/\"");
    parse_bad("1-5/ * * * *", "a step needs a number after \"/\"");
    parse_bad("*/5/2 * * * *", "unexpected \"/\"");
    parse_bad("5-1 * * * *", "minute field \"5-1\": range 5-1 is backwards");
    parse_bad("0 22-2 * * *", "range 22-2 is backwards");
    parse_bad("1-2-3 * * * *", "unexpected \"-\"");
    parse_bad("1, * * * *", "a value is missing after the last \",\"");
    parse_bad("1,,2 * * * *", "a value is missing before \",\"");
    parse_bad(",1 * * * *", "minute field \",1\": a value is missing");
    parse_bad("** * * * *", "unexpected \"*\"");
    parse_bad("*-5 * * * *", "unexpected \"-\"");
    parse_bad("-5 * * * *", "unexpected \"-\"");
    parse_bad("a * * * *", "minute field \"a\": \"a\" is not a number: use 0-59");
    parse_bad("0 x * * *", "hour field \"x\": \"x\" is not a number: use 0-23");
    parse_bad("0 0 MON * *", "day-of-month field \"MON\": \"MON\" is not a number: use 1-31");
    parse_bad("1.5 * * * *", "unexpected \".\"");
}

static void test_names_and_sunday(void **state)
{
    struct cron_expr e = parse_ok("0 0 * JAN-MAR,jun,Dec sun-Sat");
    assert_int_equal(e.months, bits(1, 3, 1) | (1u << 6) | (1u << 12));
    assert_int_equal(e.wdays, 0x7f);
    for (unsigned m = 1; m <= 12; m++) {
        static const char *const names[] = {"jan", "FEB", "Mar", "apr", "MAY", "jun",
                                            "JUL", "aug", "sep", "OcT", "nov", "DEC"};
        char text[32];
        snprintf(text, sizeof(text), "0 0 1 %s *", names[m - 1]);
        e = parse_ok(text);
        assert_int_equal(e.months, 1u << m);
    }
    static const char *const days[] = {"SUN", "mon", "Tue", "wed", "THU", "fri", "sat"};
    for (unsigned w = 0; w < 7; w++) {
        char text[32];
        snprintf(text, sizeof(text), "0 0 * * %s", days[w]);
        e = parse_ok(text);
        assert_int_equal(e.wdays, 1u << w);
    }
    /* 0 and 7 are Sunday; FRI-SUN closes the week. */
    assert_int_equal(parse_ok("0 0 * * 7").wdays, 1u);
    assert_int_equal(parse_ok("0 0 * * 0").wdays, 1u);
    assert_int_equal(parse_ok("0 0 * * 5-7").wdays, (1u << 5) | (1u << 6) | 1u);
    assert_int_equal(parse_ok("0 0 * * FRI-SUN").wdays, (1u << 5) | (1u << 6) | 1u);
    assert_int_equal(parse_ok("0 0 * * MON-FRI/2").wdays, (1u << 1) | (1u << 3) | (1u << 5));
    assert_int_equal(parse_ok("0 0 * * 6,7").wdays, (1u << 6) | 1u);
    parse_bad("0 0 * * SAT-MON", "range 6-1 is backwards");
    parse_bad("0 0 * * 5-0", "range 5-0 is backwards");
    parse_bad("0 0 * JANUARY *", "month field \"JANUARY\": \"JANUARY\" is not a month: use 1-12 "
                                 "or JAN-DEC");
    parse_bad("0 0 * * MONDAY", "\"MONDAY\" is not a day-of-week: use 0-7 or SUN-SAT");
    parse_bad("0 0 * * XYZ", "\"XYZ\" is not a day-of-week");
    parse_bad("0 0 * FOO *", "\"FOO\" is not a month");
    parse_bad("0 0 * * SUN-", "a value is missing");
}

static void test_macros(void **state)
{
    struct cron_expr e = parse_ok("@hourly");
    assert_true(e.minutes == 1);
    assert_int_equal(e.hours, bits(0, 23, 1));
    assert_false(cron_is_fixed_time(&e));
    e = parse_ok("@daily");
    assert_true(e.minutes == 1);
    assert_int_equal(e.hours, 1);
    assert_int_equal(e.mdays, bits(1, 31, 1));
    assert_true(cron_is_fixed_time(&e));
    e = parse_ok("@weekly");
    assert_int_equal(e.wdays, 1);
    assert_true(e.mday_star);
    assert_false(e.wday_star);
    assert_true(cron_is_fixed_time(&e));
    e = parse_ok("@monthly");
    assert_int_equal(e.mdays, 2);
    assert_false(e.mday_star);
    assert_true(e.wday_star);
    assert_true(cron_is_fixed_time(&e));
    e = parse_ok("  @DAILY\t");
    assert_int_equal(e.hours, 1);

    parse_bad("@yearly", "\"@yearly\" is not supported: use @hourly, @daily, @weekly, @monthly "
                         "or five fields");
    parse_bad("@annually", "\"@annually\" is not supported");
    parse_bad("@reboot", "\"@reboot\" is not supported");
    parse_bad("@midnight", "\"@midnight\" is not supported");
    parse_bad("@every 5m", "\"@every\" is not supported");
    parse_bad("@daily 0", "\"@daily 0\" is not supported");
    parse_bad("@", "\"@\" is not supported");
}

static void test_rejected_constructs(void **state)
{
    parse_bad("", "the cron expression is empty");
    parse_bad("   \t ", "the cron expression is empty");
    parse_bad("0 0 * * * *", "6 fields: seconds and year fields are not supported");
    parse_bad("0 0 0 * * * 2026", "7 fields: seconds and year fields are not supported");
    parse_bad("0 0 * *", "4 fields: a cron expression has five fields");
    parse_bad("daily", "1 field: a cron expression has five fields");
    parse_bad("0 0 * * * * * *", "8 fields");
    parse_bad("0 0 ? * MON", "day-of-month field \"?\": \"?\" is not supported: write \"*\"");
    parse_bad("0 0 * * ?", "day-of-week field \"?\": \"?\" is not supported");
    parse_bad("0 0 1? * *", "\"?\" is not supported");
    parse_bad("0 0 L * *", "day-of-month field \"L\": \"L\" is not supported");
    parse_bad("0 0 * * 5L", "day-of-week field \"5L\": \"L\" is not supported");
    parse_bad("0 0 LW * *", "\"L\" is not supported");
    parse_bad("0 0 l * *", "\"L\" is not supported");
    parse_bad("0 0 15W * *", "day-of-month field \"15W\": \"W\" is not supported");
    parse_bad("0 0 W * *", "\"W\" is not supported");
    parse_bad("0 0 * * 5#3", "day-of-week field \"5#3\": \"#\" is not supported");
    parse_bad("0 0 * * MON#1", "\"#\" is not supported");
    parse_bad("0 0 30 2 *", "\"0 0 30 2 *\" can never fire: February has no day 30");
    parse_bad("0 0 31 4,6 *", "can never fire: April and June have no day 31");
    parse_bad("0 0 30,31 FEB *", "can never fire: February has no day 30 or 31");
    parse_bad("0  0 31   2,4,6 *", "\"0 0 31 2,4,6 *\" can never fire: February, April and June "
                                   "have no day 31");
    parse_bad("0 0 1\xc3\xa9 * *", "not printable ASCII at byte 6");
    parse_bad("0 0\n* * *", "not printable ASCII");
    /* Every field that is 'L'-free but contains a name letter is fine (JUL, WED). */
    parse_ok("0 0 * JUL WED");
}

static void test_can_fire_rules(void **state)
{
    /* Feb 29 fires in leap years; with a weekday restriction the weekday alone fires. */
    parse_ok("0 0 29 2 *");
    parse_ok("0 0 29-31 2 *");
    parse_ok("0 0 30 2 1");                      /* both restricted: every Monday in February */
    parse_ok("0 0 31 4 MON");                    /* the same */
    parse_ok("0 0 */10 2 *");                    /* days 1, 11, 21 exist */
    parse_bad("0 0 30 2 */2", "can never fire"); /* '*' in day-of-week: days AND weekdays */
}

static void test_fixed_time(void **state)
{
    struct cron_expr e = parse_ok("30 3 * * *");
    assert_true(cron_is_fixed_time(&e));
    e = parse_ok("30 3 1,15 * *");
    assert_true(cron_is_fixed_time(&e));
    e = parse_ok("0 0 * * 1-5");
    assert_true(cron_is_fixed_time(&e));
    e = parse_ok("0,30 3 * * *");
    assert_false(cron_is_fixed_time(&e));
    e = parse_ok("0 3-4 * * *");
    assert_false(cron_is_fixed_time(&e));
    e = parse_ok("*/30 * * * *");
    assert_false(cron_is_fixed_time(&e));
    e = parse_ok("0 3/23 * * *"); /* expands to 3 only */
    assert_true(cron_is_fixed_time(&e));
}

static void test_day_rule(void **state)
{
    /* Both restricted: either matches (Vixie). */
    struct cron_expr e = parse_ok("0 12 13 * 5");
    assert_true(cron_day_matches(&e, 2026, 11, 13, 5));  /* Friday the 13th */
    assert_true(cron_day_matches(&e, 2026, 11, 6, 5));   /* a Friday */
    assert_true(cron_day_matches(&e, 2026, 12, 13, 0));  /* the 13th, a Sunday */
    assert_false(cron_day_matches(&e, 2026, 11, 12, 4)); /* neither */
    /* A day field starting with '*' counts as unrestricted even with a step: AND. */
    e = parse_ok("0 0 */10 * 1");
    assert_true(cron_day_matches(&e, 2026, 6, 1, 1));   /* the 1st and a Monday */
    assert_false(cron_day_matches(&e, 2026, 6, 8, 1));  /* a Monday, not 1/11/21/31 */
    assert_false(cron_day_matches(&e, 2026, 6, 11, 4)); /* the 11th, a Thursday */
    e = parse_ok("0 0 1 * *");
    assert_true(cron_day_matches(&e, 2026, 6, 1, 1));
    assert_false(cron_day_matches(&e, 2026, 6, 2, 2));
    e = parse_ok("0 0 * * 0");
    assert_true(cron_day_matches(&e, 2026, 6, 7, 0));
    assert_true(cron_day_matches(&e, 2026, 6, 7, 7)); /* 7 is Sunday too */
    assert_false(cron_day_matches(&e, 2026, 6, 8, 1));
    e = parse_ok("0 0 1 JAN *");
    assert_false(cron_day_matches(&e, 2026, 2, 1, 0)); /* the month must match */
    assert_false(cron_day_matches(&e, 2026, 13, 1, 0));
    assert_false(cron_day_matches(&e, 2026, 1, 0, 0));
}

/* The matching minutes of a day, independent of the search (internal/cron/search.c). */
static bool ref_minute_matches(const struct cron_expr *e, int64_t t)
{
    struct util_civil c;
    util_civil_from_seconds(t, &c);
    unsigned w = util_weekday_from_days(util_floor_div(t, 86400));
    return ((e->minutes >> c.minute) & 1) && ((e->hours >> c.hour) & 1) &&
           cron_day_matches(e, c.year, c.month, c.day, w);
}

/* First matching minute strictly after t: day by day, then minute by minute. */
static int64_t ref_next(const struct cron_expr *e, int64_t t)
{
    int64_t m = util_floor_div(t, 60) * 60 + 60;
    for (int64_t day = util_floor_div(m, 86400);; day++) {
        int64_t y;
        unsigned mo, d;
        util_civil_from_days(day, &y, &mo, &d);
        if (!cron_day_matches(e, y, mo, d, util_weekday_from_days(day)))
            continue;
        int64_t from = day * 86400 > m ? day * 86400 : m;
        for (int64_t x = from; x < (day + 1) * 86400; x += 60)
            if (ref_minute_matches(e, x))
                return x;
    }
}

static int64_t ref_prev(const struct cron_expr *e, int64_t t)
{
    int64_t m = util_floor_div(t - 1, 60) * 60;
    for (int64_t day = util_floor_div(m, 86400);; day--) {
        int64_t y;
        unsigned mo, d;
        util_civil_from_days(day, &y, &mo, &d);
        if (!cron_day_matches(e, y, mo, d, util_weekday_from_days(day)))
            continue;
        int64_t from = (day + 1) * 86400 - 60 < m ? (day + 1) * 86400 - 60 : m;
        for (int64_t x = from; x >= day * 86400; x -= 60)
            if (ref_minute_matches(e, x))
                return x;
    }
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    /* splitmix64: reproducible across runs and machines. */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A random item for a field of range lo..hi, in one of the grammar's forms. */
static void rand_item(char *buf, size_t size, unsigned lo, unsigned hi, bool allow_star)
{
    unsigned span = hi - lo, a = lo + (unsigned)(rnd() % (span + 1));
    unsigned b = a + (unsigned)(rnd() % (hi - a + 1)), step = 1 + (unsigned)(rnd() % span);
    switch (rnd() % (allow_star ? 6 : 4)) {
    case 0:
        snprintf(buf, size, "%u", a);
        break;
    case 1:
        snprintf(buf, size, "%u-%u", a, b);
        break;
    case 2:
        snprintf(buf, size, "%u-%u/%u", a, b, step);
        break;
    case 3:
        snprintf(buf, size, "%u/%u", a, step);
        break;
    case 4:
        snprintf(buf, size, "*");
        break;
    default:
        snprintf(buf, size, "*/%u", step);
        break;
    }
}

static void rand_field(char *buf, size_t size, unsigned lo, unsigned hi)
{
    size_t used = 0;
    unsigned n = 1 + (unsigned)(rnd() % 3);
    for (unsigned i = 0; i < n && used < size; i++) {
        char item[32];
        rand_item(item, sizeof(item), lo, hi, n == 1);
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "," : "", item);
    }
}

static void test_next_prev_against_reference(void **state)
{
    int parsed = 0;
    for (int i = 0; i < 1500; i++) {
        char f[5][64], text[400];
        struct cron_expr e;
        struct util_err err = {0};
        rand_field(f[0], sizeof(f[0]), 0, 59);
        rand_field(f[1], sizeof(f[1]), 0, 23);
        rand_field(f[2], sizeof(f[2]), 1, 31);
        rand_field(f[3], sizeof(f[3]), 1, 12);
        rand_field(f[4], sizeof(f[4]), 0, 7);
        if (rnd() % 3 == 0)
            snprintf(f[2], sizeof(f[2]), "*");
        if (rnd() % 3 == 0)
            snprintf(f[4], sizeof(f[4]), "*");
        if (rnd() % 4 == 0) /* every day: the search's shortcut */
            snprintf(f[2], sizeof(f[2]), "*"), snprintf(f[3], sizeof(f[3]), "*"),
                snprintf(f[4], sizeof(f[4]), rnd() % 2 ? "*" : "0-7");
        snprintf(text, sizeof(text), "%s %s %s %s %s", f[0], f[1], f[2], f[3], f[4]);
        if (cron_parse(&e, text, &err) != 0) {
            /* The generator only makes valid syntax: a refusal must be "can never fire". */
            if (strstr(err.msg, "can never fire") == NULL)
                fail_msg("\"%s\" rejected: %s", text, err.msg);
            continue;
        }
        parsed++;
        /* Starts from 1900 to 2100, at any second. */
        int64_t t = lt(1900, 1, 1, 0, 0) + (int64_t)(rnd() % (UINT64_C(200) * 365 * 86400));
        for (int k = 0; k < 4; k++) {
            int64_t got, want = ref_next(&e, t);
            assert_int_equal(cron_next(&e, t, &got), 0);
            if (got != want)
                fail_msg("cron_next(\"%s\", %lld) = %lld, want %lld", text, (long long)t,
                         (long long)got, (long long)want);
            assert_true(got > t && got % 60 == 0);
            want = ref_prev(&e, t);
            assert_int_equal(cron_prev(&e, t, &got), 0);
            if (got != want)
                fail_msg("cron_prev(\"%s\", %lld) = %lld, want %lld", text, (long long)t,
                         (long long)got, (long long)want);
            assert_true(got < t && got % 60 == 0);
            /* Walk on from the match itself, exactly on a minute. */
            assert_int_equal(cron_next(&e, t, &t), 0);
        }
    }
    assert_true(parsed > 1000);
}

static void test_next_examples(void **state)
{
    int64_t n;
    struct cron_expr e = parse_ok("0 0 29 2 *");
    assert_int_equal(cron_next(&e, lt(2026, 1, 1, 0, 0), &n), 0);
    assert_int_equal(n, lt(2028, 2, 29, 0, 0));
    /* 2100 is not a leap year: 2096 -> 2104. */
    assert_int_equal(cron_next(&e, lt(2096, 2, 29, 0, 0), &n), 0);
    assert_int_equal(n, lt(2104, 2, 29, 0, 0));
    assert_int_equal(cron_prev(&e, lt(2104, 2, 29, 0, 0), &n), 0);
    assert_int_equal(n, lt(2096, 2, 29, 0, 0));
    /*
     * Feb 29 on a Sunday ("*" + step keeps the weekday a condition that must also
     * hold): 28 years apart in most centuries, 40 across the non-leap 1900 and 2100,
     * the longest gap; a search bounded at 29 years failed both ways (fuzz_cron).
     */
    e = parse_ok("0 0 29 2 */7");
    assert_int_equal(cron_next(&e, lt(1880, 2, 29, 0, 0), &n), 0);
    assert_int_equal(n, lt(1920, 2, 29, 0, 0));
    assert_int_equal(cron_prev(&e, lt(1920, 2, 29, 0, 0), &n), 0);
    assert_int_equal(n, lt(1880, 2, 29, 0, 0));
    assert_int_equal(cron_next(&e, lt(2088, 2, 29, 0, 0), &n), 0);
    assert_int_equal(n, lt(2128, 2, 29, 0, 0));
    assert_int_equal(cron_prev(&e, lt(2128, 2, 29, 0, 0), &n), 0);
    assert_int_equal(n, lt(2088, 2, 29, 0, 0));
    e = parse_ok("0 * 29 2 */5"); /* the fuzzer's input: Sunday or Friday */
    assert_int_equal(cron_prev(&e, lt(1920, 2, 29, 0, 0), &n), 0);
    assert_int_equal(n, lt(1884, 2, 29, 23, 0));
    /* Strictly after and strictly before, at any second of the minute. */
    e = parse_ok("30 3 * * *");
    assert_int_equal(cron_next(&e, lt(2026, 3, 29, 3, 30), &n), 0);
    assert_int_equal(n, lt(2026, 3, 30, 3, 30));
    assert_int_equal(cron_next(&e, lt(2026, 3, 29, 3, 29) + 59, &n), 0);
    assert_int_equal(n, lt(2026, 3, 29, 3, 30));
    assert_int_equal(cron_prev(&e, lt(2026, 3, 29, 3, 30), &n), 0);
    assert_int_equal(n, lt(2026, 3, 28, 3, 30));
    assert_int_equal(cron_prev(&e, lt(2026, 3, 29, 3, 30) + 1, &n), 0);
    assert_int_equal(n, lt(2026, 3, 29, 3, 30));
    /* Year ends and negative times. */
    e = parse_ok("59 23 31 12 *");
    assert_int_equal(cron_next(&e, lt(1969, 12, 31, 23, 59), &n), 0);
    assert_int_equal(n, lt(1970, 12, 31, 23, 59));
    assert_int_equal(cron_prev(&e, 0, &n), 0);
    assert_int_equal(n, -60);
    /* D3: */
    e = parse_ok("0 0 */10 * 1");
    assert_int_equal(cron_next(&e, lt(2026, 5, 31, 0, 0), &n), 0);
    assert_int_equal(n, lt(2026, 6, 1, 0, 0));
    assert_int_equal(cron_next(&e, n, &n), 0);
    assert_int_equal(n, lt(2026, 8, 31, 0, 0)); /* the next 1/11/21/31 that is a Monday */
    /* A struct that cron_parse never makes: nothing matches, and the search ends. */
    struct cron_expr none = {0};
    assert_int_equal(cron_next(&none, 0, &n), UTIL_ENOENT);
    assert_int_equal(cron_prev(&none, 0, &n), UTIL_ENOENT);
    struct cron_expr never = e;
    never.mdays = 1u << 30;
    never.months = 1u << 2;
    never.mday_star = false;
    never.wday_star = true;
    assert_int_equal(cron_next(&never, 0, &n), UTIL_ENOENT);
    assert_int_equal(cron_prev(&never, 0, &n), UTIL_ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_field_bounds),
        cmocka_unit_test(test_stars_lists_ranges_steps),
        cmocka_unit_test(test_names_and_sunday),
        cmocka_unit_test(test_macros),
        cmocka_unit_test(test_rejected_constructs),
        cmocka_unit_test(test_can_fire_rules),
        cmocka_unit_test(test_fixed_time),
        cmocka_unit_test(test_day_rule),
        cmocka_unit_test(test_next_examples),
        cmocka_unit_test(test_next_prev_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
