/*
 * The POSIX TZ string of a TZif footer, and its evaluation year by year.
 *
 * Grammar: std offset [dst [offset] [,rule[/time],rule[/time]]], with the version 3
 * extensions that tzdata uses: hours up to 167 and signed rule times. A DST name
 * without rules takes the US rules (M3.2.0,M11.1.0), as tzcode and glibc do.
 */
#include "tz/tz_internal.h"

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

int64_t tz_rule_day(const struct tz_rule *r, int64_t y)
{
    int64_t jan1 = util_days_from_civil(y, 1, 1);
    switch (r->kind) {
    case TZ_RULE_JULIAN1:
        return jan1 + r->day - 1 + (util_is_leap(y) && r->day >= 60 ? 1 : 0);
    case TZ_RULE_JULIAN0:
        return jan1 + r->day;
    default: {
        int64_t first = util_days_from_civil(y, r->month, 1);
        int64_t d = first + (r->wday + 7 - util_weekday_from_days(first)) % 7 + 7 * (r->week - 1);
        int64_t last = first + util_days_in_month(y, r->month) - 1;
        while (d > last)
            d -= 7;
        return d;
    }
    }
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

static int64_t jan1_instant(int64_t y)
{
    return util_days_from_civil(y, 1, 1) * DAY;
}

/* The switches of rule years y0..y1 (at most 8 years), sorted. Returns the count. */
static size_t switches(const struct tz_footer *f, int64_t y0, int64_t y1, struct sw *out)
{
    size_t n = 0;
    for (int64_t y = y0; y <= y1; y++) {
        out[n++] =
            (struct sw){tz_rule_day(&f->end, y) * DAY + f->end.time - f->dst_off, 2 * y, false};
        out[n++] = (struct sw){tz_rule_day(&f->start, y) * DAY + f->start.time - f->std_off,
                               2 * y + 1, true};
    }
    /* Insertion sort: the list is short and nearly sorted. */
    for (size_t i = 1; i < n; i++) {
        struct sw x = out[i];
        size_t j = i;
        while (j > 0 &&
               (out[j - 1].at > x.at || (out[j - 1].at == x.at && out[j - 1].rank > x.rank))) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    return n;
}

bool tz_footer_dst_at(const struct tz_footer *f, int64_t t)
{
    struct sw v[8];
    t = clamp_t(t);
    /*
     * The switches of rule year y - 2 all lie before January 1 of y, so the last
     * switch at or before t is among years y - 2 .. y + 1 (later years start after t).
     */
    int64_t y = year_of(t);
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
        int64_t final_before = jan1_instant(y + 4) - SPILL;
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
