/*
 * The POSIX TZ string of a TZif footer, and its evaluation year by year.
 *
 * Grammar: std offset [dst [offset] [,rule[/time],rule[/time]]], with the version 3
 * extensions that tzdata uses: hours up to 167 and signed rule times. A DST name
 * without rules takes the US rules (M3.2.0,M11.1.0), as tzcode and glibc do.
 */
#include "tz/tz_internal.h"

#include <stdlib.h>
#include <string.h>

#define DAY 86400
/*
 * Every switch of rule year Y falls within SPILL of that calendar year: a rule day
 * moves at most a day past December 31 (day 365 of a common year), a rule time is at
 * most 168 hours and an offset at most 168 hours.
 */
#define SPILL (16 * (int64_t)DAY)

struct cursor {
    const char *p, *end;
};

static bool at_end(const struct cursor *c)
{
    return c->p >= c->end;
}

static int peek(const struct cursor *c)
{
    return at_end(c) ? -1 : (unsigned char)*c->p;
}

static bool is_alpha(int ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

static bool is_digit(int ch)
{
    return ch >= '0' && ch <= '9';
}

/* Up to max_digits digits, value at most max. */
static bool parse_num(struct cursor *c, int max_digits, int max, int *out)
{
    int v = 0, n = 0;
    while (n < max_digits && is_digit(peek(c))) {
        v = v * 10 + (*c->p - '0');
        c->p++;
        n++;
    }
    if (n == 0 || v > max || is_digit(peek(c)))
        return false;
    *out = v;
    return true;
}

static bool parse_name(struct cursor *c, char *out, size_t size)
{
    size_t n = 0;
    if (peek(c) == '<') {
        c->p++;
        while (!at_end(c) && *c->p != '>') {
            int ch = (unsigned char)*c->p;
            if (!is_alpha(ch) && !is_digit(ch) && ch != '+' && ch != '-')
                return false;
            if (n + 1 >= size)
                return false;
            out[n++] = (char)ch;
            c->p++;
        }
        if (at_end(c))
            return false;
        c->p++; /* '>' */
    } else {
        while (is_alpha(peek(c))) {
            if (n + 1 >= size)
                return false;
            out[n++] = *c->p;
            c->p++;
        }
    }
    out[n] = '\0';
    return n >= 3;
}

/* [+-]hh[:mm[:ss]] with hh up to 167; returns seconds with the written sign. */
static bool parse_hms(struct cursor *c, int32_t *out)
{
    int sign = 1, h, m = 0, s = 0;
    if (peek(c) == '+' || peek(c) == '-') {
        sign = *c->p == '-' ? -1 : 1;
        c->p++;
    }
    if (!parse_num(c, 3, 167, &h))
        return false;
    if (peek(c) == ':') {
        c->p++;
        if (!parse_num(c, 2, 59, &m))
            return false;
        if (peek(c) == ':') {
            c->p++;
            if (!parse_num(c, 2, 59, &s))
                return false;
        }
    }
    *out = sign * (h * 3600 + m * 60 + s);
    return true;
}

static bool parse_rule(struct cursor *c, struct tz_rule *r)
{
    int a, b, d;
    memset(r, 0, sizeof(*r));
    if (peek(c) == 'J') {
        c->p++;
        if (!parse_num(c, 3, 365, &a) || a < 1)
            return false;
        r->kind = TZ_RULE_JULIAN1;
        r->day = (uint16_t)a;
    } else if (peek(c) == 'M') {
        c->p++;
        if (!parse_num(c, 2, 12, &a) || a < 1 || peek(c) != '.')
            return false;
        c->p++;
        if (!parse_num(c, 1, 5, &b) || b < 1 || peek(c) != '.')
            return false;
        c->p++;
        if (!parse_num(c, 1, 6, &d))
            return false;
        r->kind = TZ_RULE_MONTH;
        r->month = (uint8_t)a;
        r->week = (uint8_t)b;
        r->wday = (uint8_t)d;
    } else {
        if (!parse_num(c, 3, 365, &a))
            return false;
        r->kind = TZ_RULE_JULIAN0;
        r->day = (uint16_t)a;
    }
    r->time = 2 * 3600;
    if (peek(c) == '/') {
        c->p++;
        if (!parse_hms(c, &r->time))
            return false;
    }
    return true;
}

int tz_posix_parse(struct tz_posix *out, const char *s, size_t len, struct util_err *err)
{
    struct cursor c = {s, s + len};
    int32_t v;
    const char *what = "the standard time name";

    memset(out, 0, sizeof(*out));
    if (!parse_name(&c, out->std_name, sizeof(out->std_name)))
        goto bad;
    what = "the standard time offset";
    if (!parse_hms(&c, &v))
        goto bad;
    out->std_off = -v;
    if (at_end(&c))
        return 0;
    what = "the daylight saving time name";
    if (!parse_name(&c, out->dst_name, sizeof(out->dst_name)))
        goto bad;
    out->has_dst = true;
    out->dst_off = out->std_off + 3600;
    if (!at_end(&c) && *c.p != ',') {
        what = "the daylight saving time offset";
        if (!parse_hms(&c, &v))
            goto bad;
        out->dst_off = -v;
    }
    if (at_end(&c)) {
        /* No rules: the US rules, as tzcode and glibc assume. */
        out->start = (struct tz_rule){TZ_RULE_MONTH, 3, 2, 0, 0, 2 * 3600};
        out->end = (struct tz_rule){TZ_RULE_MONTH, 11, 1, 0, 0, 2 * 3600};
        return 0;
    }
    what = "the rule for the start of daylight saving time";
    if (*c.p != ',')
        goto bad;
    c.p++;
    if (!parse_rule(&c, &out->start))
        goto bad;
    what = "the rule for the end of daylight saving time";
    if (peek(&c) != ',')
        goto bad;
    c.p++;
    if (!parse_rule(&c, &out->end))
        goto bad;
    what = "the end of the string";
    if (!at_end(&c))
        goto bad;
    return 0;
bad:
    return util_err_set(err, UTIL_EINVAL, "the POSIX TZ string \"%.*s\" is not valid at %s",
                        (int)(len > 100 ? 100 : len), s, what);
}

/* Days before each month in a common year. */
static const uint16_t month_start[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
static const uint8_t month_days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

/* The rule's day in the year whose January 1 is day jan1; a few additions. */
static int64_t rule_day_in(const struct tz_rule *r, int64_t jan1, bool leap)
{
    switch (r->kind) {
    case TZ_RULE_JULIAN1:
        return jan1 + r->day - 1 + (leap && r->day >= 60 ? 1 : 0);
    case TZ_RULE_JULIAN0:
        return jan1 + r->day;
    default: {
        unsigned m = r->month - 1u;
        int64_t first = jan1 + month_start[m] + (leap && m >= 2 ? 1 : 0);
        int64_t wd = ((first + 4) % 7 + 7) % 7; /* 1970-01-01 was a Thursday */
        int64_t d = first + (r->wday - wd + 7) % 7 + 7 * (r->week - 1);
        int64_t last = first + month_days[m] + (leap && m == 1 ? 1 : 0) - 1;
        return d > last ? d - 7 : d; /* week 5 means the last such weekday */
    }
    }
}

int64_t tz_rule_day(const struct tz_rule *r, int64_t y)
{
    return rule_day_in(r, util_days_from_civil(y, 1, 1), util_is_leap(y));
}

/*
 * One switch of the footer: its instant, the state it sets, and its rank for
 * ordering switches at the same instant (a later rule year wins; within a year the
 * end comes before the start, so "0/0,J365/25" is DST all year).
 */
struct sw {
    int64_t at;
    int64_t rank;
    bool dst;
};

static int64_t clamp_t(int64_t t)
{
    return t < -TZ_T_LIMIT ? -TZ_T_LIMIT : t > TZ_T_LIMIT ? TZ_T_LIMIT : t;
}

static int64_t year_of(int64_t t)
{
    int64_t y;
    unsigned m, d;
    util_civil_from_days(util_floor_div(t, DAY), &y, &m, &d);
    return y;
}

/* The two switches of rule year y (end first), given its January 1. */
static void year_switches(const struct tz_footer *f, int64_t y, int64_t jan1, struct sw out[2])
{
    bool leap = util_is_leap(y);
    out[0] = (struct sw){rule_day_in(&f->end, jan1, leap) * DAY + f->end.time - f->dst_off, 2 * y,
                         false};
    out[1] = (struct sw){rule_day_in(&f->start, jan1, leap) * DAY + f->start.time - f->std_off,
                         2 * y + 1, true};
}

static bool sw_before(const struct sw *a, const struct sw *b)
{
    return a->at < b->at || (a->at == b->at && a->rank < b->rank);
}

/* The switches of rule years y0..y1, sorted by instant then rank. Returns the count. */
static size_t switches(const struct tz_footer *f, int64_t y0, int64_t y1, struct sw *out)
{
    size_t n = 0;
    int64_t jan1 = util_days_from_civil(y0, 1, 1);
    for (int64_t y = y0; y <= y1; y++) {
        year_switches(f, y, jan1, out + n);
        n += 2;
        jan1 += util_is_leap(y) ? 366 : 365;
    }
    /* Insertion sort: the list is nearly sorted already. */
    for (size_t i = 1; i < n; i++) {
        struct sw x = out[i];
        size_t j = i;
        while (j > 0 && sw_before(&x, &out[j - 1])) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    return n;
}

/*
 * Every switch of rule year Y lies in [January 1 of Y - SPILL, January 1 of Y+1 +
 * SPILL], and each rule's switch moves forward between 358 and 373 days from one
 * year to the next. So the last switch at or before t is one of years y-1 and y
 * when t is at least SPILL inside its year y (years before y-1 are overtaken by
 * the later of y-1's switches, years after y start after t); otherwise look at
 * years y-2 .. y+1.
 */
bool tz_footer_dst_at(const struct tz_footer *f, int64_t t)
{
    t = clamp_t(t);
    int64_t y = year_of(t);
    int64_t jan1 = util_days_from_civil(y, 1, 1);
    int64_t j0 = jan1 * DAY, j1 = (jan1 + (util_is_leap(y) ? 366 : 365)) * DAY;
    if (t >= j0 + SPILL && t < j1 - SPILL) {
        struct sw v[4];
        year_switches(f, y - 1, jan1 - (util_is_leap(y - 1) ? 366 : 365), v);
        year_switches(f, y, jan1, v + 2);
        const struct sw *best = NULL;
        for (int i = 0; i < 4; i++) {
            if (v[i].at <= t && (best == NULL || sw_before(best, &v[i])))
                best = &v[i];
        }
        if (best != NULL)
            return best->dst;
    }
    struct sw v[8];
    size_t n = switches(f, y - 2, y + 1, v);
    bool dst = v[0].dst;
    for (size_t i = 0; i < n && v[i].at <= t; i++)
        dst = v[i].dst;
    return dst;
}

int64_t tz_footer_next(const struct tz_footer *f, int64_t t)
{
    struct sw v[12];
    if (f->never_changes)
        return INT64_MAX;
    t = clamp_t(t);
    /* A 400-year Gregorian cycle repeats every rule day, so a change shows within one. */
    for (int round = 0; round < 140 && t < TZ_T_LIMIT; round++) {
        int64_t y = year_of(t);
        size_t n = switches(f, y - 2, y + 3, v);
        /* Switches of years after y + 3 start after this: those before it are final. */
        int64_t final_before = util_days_from_civil(y + 4, 1, 1) * DAY - SPILL;
        bool dst = v[0].dst;
        size_t i = 0;
        for (; i < n && v[i].at <= t; i++)
            dst = v[i].dst;
        while (i < n && v[i].at < final_before) {
            int64_t x = v[i].at;
            bool now = dst;
            for (; i < n && v[i].at == x; i++)
                now = v[i].dst;
            if (now != dst)
                return x > TZ_T_LIMIT ? INT64_MAX : x;
        }
        t = final_before - 1;
    }
    return INT64_MAX;
}

size_t tz_footer_changes(const struct tz_footer *f, int64_t lo, int64_t hi,
                         void (*emit_cb)(void *arg, int64_t at, bool dst), void *arg)
{
    if (f->never_changes || lo >= hi)
        return 0;
    lo = clamp_t(lo);
    hi = clamp_t(hi);
    int64_t y0 = year_of(lo) - 2, y1 = year_of(hi) + 2;
    size_t cap = (size_t)(y1 - y0 + 1) * 2, count = 0;
    struct sw *v = util_malloc(cap * sizeof(*v));
    size_t n = switches(f, y0, y1, v);
    bool dst = tz_footer_dst_at(f, lo);
    size_t i = 0;
    while (i < n && v[i].at <= lo)
        i++;
    /* Switches before hi are final: later years' switches start after hi + SPILL. */
    while (i < n && v[i].at < hi) {
        int64_t x = v[i].at;
        bool now = dst;
        for (; i < n && v[i].at == x; i++)
            now = v[i].dst;
        if (now != dst) {
            emit_cb(arg, x, now);
            count++;
            dst = now;
        }
    }
    free(v);
    return count;
}
