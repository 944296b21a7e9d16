/*
 * cron: parsing into bitmasks, and the next and previous matching local minute.
 *
 * The parser is a hand-written scanner over one field at a time, so a message can
 * quote the field and say what that field allows. The search walks month, day,
 * hour and minute in turn, each step one bit scan; a day of a month is matched
 * with a 31-bit mask built from the day-of-month bits and the weekday bits
 * rotated to the weekday of the 1st.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cron/cron.h"

/* One of the five fields: where it sits, its name for messages and what it allows. */
struct cron_field {
    const char *name;
    unsigned min, max;
    const char *const *names; /* three-letter names, index = value - names_base; or NULL */
    unsigned names_base;
    unsigned nnames;
    const char *allowed; /* "0-59", "1-12 or JAN-DEC" */
};

static const char *const cron_month_names[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                               "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const cron_wday_names[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};
static const char *const cron_month_full[] = {"January",   "February", "March",    "April",
                                              "May",       "June",     "July",     "August",
                                              "September", "October",  "November", "December"};

enum { CRON_MINUTE, CRON_HOUR, CRON_MDAY, CRON_MONTH, CRON_WDAY, CRON_NFIELDS };

static const struct cron_field cron_fields[CRON_NFIELDS] = {
    {"minute", 0, 59, NULL, 0, 0, "0-59"},
    {"hour", 0, 23, NULL, 0, 0, "0-23"},
    {"day-of-month", 1, 31, NULL, 0, 0, "1-31"},
    {"month", 1, 12, cron_month_names, 1, 12, "1-12 or JAN-DEC"},
    {"day-of-week", 0, 7, cron_wday_names, 0, 7, "0-7 or SUN-SAT (0 and 7 are Sunday)"},
};

#define CRON_ALLOWED_SYNTAX "numbers, names, lists (1,15), ranges (1-5) and steps (*/15, 1-20/5)"

/* The state of parsing one field: its text and the position reached. */
struct cron_scan {
    const struct cron_field *f;
    const char *text; /* the field, not NUL-terminated */
    size_t len;
    size_t pos;
    struct util_err *err;
};

static int cron_field_err(struct cron_scan *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "minute field "61": " followed by the formatted reason. */
static int cron_field_err(struct cron_scan *s, const char *fmt, ...)
{
    char reason[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    return util_err_set(s->err, UTIL_EINVAL, "%s field \"%.*s\": %s", s->f->name,
                        (int)(s->len > 64 ? 64 : s->len), s->text, reason);
}

static bool cron_scan_peek(const struct cron_scan *s, char c)
{
    return s->pos < s->len && s->text[s->pos] == c;
}

static bool cron_scan_end_of_item(const struct cron_scan *s)
{
    return s->pos >= s->len || s->text[s->pos] == ',';
}

/*
 * Reads one value: a decimal number or, where the field has them, a three-letter
 * name. Quartz and other extensions ('L', 'W', '#', '?') are named in the message
 * so that a person who copied an expression from elsewhere knows what to change.
 * *from_name tells a Sunday written SUN, which may close a range (FRI-SUN).
 */
static int cron_scan_value(struct cron_scan *s, unsigned *out, bool *from_name)
{
    const char *p = s->text + s->pos;
    size_t n = 0, avail = s->len - s->pos;

    *from_name = false;
    if (avail > 0 && isdigit((unsigned char)p[0])) {
        uint64_t v;
        while (n < avail && isdigit((unsigned char)p[n]))
            n++;
        if (n < avail && (p[n] == 'L' || p[n] == 'l'))
            return cron_field_err(s, "\"L\" is not supported: use " CRON_ALLOWED_SYNTAX);
        if (n < avail && (p[n] == 'W' || p[n] == 'w'))
            return cron_field_err(s, "\"W\" is not supported: use " CRON_ALLOWED_SYNTAX);
        if (util_parse_u64(p, n, 1000000, &v) != 0 || v < s->f->min || v > s->f->max)
            return cron_field_err(s, "value %.*s is out of range %u-%u", (int)(n > 20 ? 20 : n), p,
                                  s->f->min, s->f->max);
        *out = (unsigned)v;
        s->pos += n;
        return 0;
    }
    if (avail > 0 && isalpha((unsigned char)p[0])) {
        while (n < avail && isalpha((unsigned char)p[n]))
            n++;
        if ((n == 1 && (p[0] == 'L' || p[0] == 'l')) || (n == 2 && strncasecmp(p, "LW", 2) == 0))
            return cron_field_err(s, "\"L\" is not supported: use " CRON_ALLOWED_SYNTAX);
        if (n == 1 && (p[0] == 'W' || p[0] == 'w'))
            return cron_field_err(s, "\"W\" is not supported: use " CRON_ALLOWED_SYNTAX);
        if (s->f->names != NULL && n == 3) {
            for (unsigned i = 0; i < s->f->nnames; i++) {
                if (strncasecmp(p, s->f->names[i], 3) == 0) {
                    *out = s->f->names_base + i;
                    *from_name = true;
                    s->pos += n;
                    return 0;
                }
            }
        }
        if (s->f->names != NULL)
            return cron_field_err(s, "\"%.*s\" is not a %s: use %s", (int)(n > 20 ? 20 : n), p,
                                  s->f->name, s->f->allowed);
        return cron_field_err(s, "\"%.*s\" is not a number: use %s", (int)(n > 20 ? 20 : n), p,
                              s->f->allowed);
    }
    if (avail > 0 && p[0] == '?')
        return cron_field_err(s, "\"?\" is not supported: write \"*\" instead");
    if (avail > 0 && p[0] == '#')
        return cron_field_err(s, "\"#\" is not supported: use " CRON_ALLOWED_SYNTAX);
    if (avail == 0 || p[0] == ',')
        return cron_field_err(s, "a value is missing%s",
                              s->pos == 0 || avail == 0 ? "" : " before \",\"");
    return cron_field_err(s, "unexpected \"%c\": use " CRON_ALLOWED_SYNTAX, p[0]);
}

/* Reads "/N" after a range or '*'; the step must fit inside the field's range. */
static int cron_scan_step(struct cron_scan *s, unsigned *step)
{
    const char *p;
    size_t n = 0;
    uint64_t v;
    unsigned limit = s->f->max - s->f->min;

    *step = 1;
    if (!cron_scan_peek(s, '/'))
        return 0;
    s->pos++;
    p = s->text + s->pos;
    while (s->pos + n < s->len && isdigit((unsigned char)p[n]))
        n++;
    if (n == 0)
        return cron_field_err(s, "a step needs a number after \"/\", as in */15");
    if (util_parse_u64(p, n, 1000000, &v) != 0 || v == 0 || v > limit)
        return cron_field_err(s, "step %.*s is out of range: a step in this field is 1-%u",
                              (int)(n > 20 ? 20 : n), p, limit);
    *step = (unsigned)v;
    s->pos += n;
    return 0;
}

/* Parses a whole field into a mask of bits min..max. */
static int cron_parse_field(struct cron_scan *s, uint64_t *mask)
{
    *mask = 0;
    if (memchr(s->text, '#', s->len) != NULL)
        return cron_field_err(s, "\"#\" is not supported: use " CRON_ALLOWED_SYNTAX);
    for (;;) {
        unsigned lo, hi, step;
        bool name_lo = false, name_hi = false;
        int rc;

        if (cron_scan_peek(s, '*')) {
            s->pos++;
            lo = s->f->min;
            hi = s->f->max;
            if ((rc = cron_scan_step(s, &step)) != 0)
                return rc;
        } else {
            if ((rc = cron_scan_value(s, &lo, &name_lo)) != 0)
                return rc;
            hi = lo;
            if (cron_scan_peek(s, '-')) {
                s->pos++;
                if ((rc = cron_scan_value(s, &hi, &name_hi)) != 0)
                    return rc;
                /* FRI-SUN: a Sunday written by name closes a range as 7. */
                if (s->f == &cron_fields[CRON_WDAY] && name_hi && hi == 0)
                    hi = 7;
                if (lo > hi)
                    return cron_field_err(s,
                                          "range %u-%u is backwards: write the smaller value "
                                          "first (ranges do not wrap around)",
                                          lo, hi);
                if ((rc = cron_scan_step(s, &step)) != 0)
                    return rc;
            } else if (cron_scan_peek(s, '/')) {
                /* "5/15" means 5-59/15, as in Vixie cron. */
                hi = s->f->max;
                if ((rc = cron_scan_step(s, &step)) != 0)
                    return rc;
            } else {
                step = 1;
            }
        }
        if (!cron_scan_end_of_item(s)) {
            char c = s->text[s->pos];
            if (c == '*' || c == '-' || c == '/')
                return cron_field_err(s, "unexpected \"%c\": use " CRON_ALLOWED_SYNTAX, c);
            if (c == '?')
                return cron_field_err(s, "\"?\" is not supported: write \"*\" instead");
            return cron_field_err(s, "unexpected \"%c\": use " CRON_ALLOWED_SYNTAX, c);
        }
        for (unsigned v = lo; v <= hi; v += step)
            *mask |= UINT64_C(1) << v;
        if (s->pos >= s->len)
            return 0;
        s->pos++; /* ',' */
        if (s->pos >= s->len)
            return cron_field_err(s, "a value is missing after the last \",\"");
    }
}

static bool cron_is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Joins the names of the months in a mask: "February", "April and June". */
static void cron_month_list(uint16_t months, char *buf, size_t size)
{
    size_t used = 0;
    unsigned n = (unsigned)__builtin_popcount(months), i = 0;
    buf[0] = '\0';
    for (unsigned m = 1; m <= 12 && used < size; m++) {
        if (!(months & (1u << m)))
            continue;
        i++;
        used += (size_t)snprintf(buf + used, size - used, "%s%s",
                                 i == 1 ? "" : (i == n ? " and " : ", "), cron_month_full[m - 1]);
    }
}

/* Joins day numbers: "30", "30 or 31", "29, 30 or 31". */
static void cron_day_list(uint32_t days, char *buf, size_t size)
{
    size_t used = 0;
    unsigned n = (unsigned)__builtin_popcount(days), i = 0;
    buf[0] = '\0';
    for (unsigned d = 1; d <= 31 && used < size; d++) {
        if (!(days & (1u << d)))
            continue;
        i++;
        used += (size_t)snprintf(buf + used, size - used, "%s%u",
                                 i == 1 ? "" : (i == n ? " or " : ", "), d);
    }
}

/* The largest day a month ever has (February: 29, in leap years). */
static unsigned cron_month_max_days(unsigned m)
{
    static const unsigned char days[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return days[m];
}

/*
 * Proves that the expression fires: some month it allows has some day it allows.
 * When both day fields are restricted the weekday alone can fire, and every
 * weekday falls on every date within 28 years, so only the day-of-month bits
 * together with the months can make an expression dead.
 */
static int cron_check_can_fire(const struct cron_expr *e, const char *text, struct util_err *err)
{
    char months[128], days[128];

    if (!e->mday_star && !e->wday_star)
        return 0;
    for (unsigned m = 1; m <= 12; m++) {
        uint32_t valid = (uint32_t)(((UINT64_C(1) << (cron_month_max_days(m) + 1)) - 1) & ~1u);
        if ((e->months & (1u << m)) && (e->mdays & valid))
            return 0;
    }
    cron_month_list(e->months, months, sizeof(months));
    cron_day_list(e->mdays, days, sizeof(days));
    return util_err_set(err, UTIL_EINVAL, "\"%s\" can never fire: %s %s no day %s", text, months,
                        __builtin_popcount(e->months) == 1 ? "has" : "have", days);
}

static int cron_parse_macro(struct cron_expr *out, const char *text, size_t len,
                            struct util_err *err)
{
    static const struct {
        const char *name;
        const char *fields;
    } macros[] = {{"@hourly", "0 * * * *"}, {"@daily", "0 0 * * *"},   {"@midnight", NULL},
                  {"@weekly", "0 0 * * 0"}, {"@monthly", "0 0 1 * *"}, {"@yearly", NULL},
                  {"@annually", NULL},      {"@reboot", NULL}};
    for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++) {
        if (strlen(macros[i].name) == len && strncasecmp(text, macros[i].name, len) == 0) {
            if (macros[i].fields != NULL)
                return cron_parse(out, macros[i].fields, err);
            break;
        }
    }
    if (len > 6 && strncasecmp(text, "@every", 6) == 0 && cron_is_space(text[6]))
        len = 6;
    return util_err_set(err, UTIL_EINVAL,
                        "\"%.*s\" is not supported: use @hourly, @daily, @weekly, @monthly or "
                        "five fields (minute hour day-of-month month day-of-week)",
                        (int)(len > 64 ? 64 : len), text);
}

int cron_parse(struct cron_expr *out, const char *text, struct util_err *err)
{
    const char *start[8], *p = text;
    size_t len[8], n = 0, total;
    struct cron_expr e = {0};
    uint64_t mask;
    int rc;

    memset(out, 0, sizeof(*out));
    while (cron_is_space(*p))
        p++;
    total = strlen(p);
    while (total > 0 && cron_is_space(p[total - 1]))
        total--;
    if (total == 0)
        return util_err_set(err, UTIL_EINVAL,
                            "the cron expression is empty: use five fields (minute hour "
                            "day-of-month month day-of-week) or @hourly, @daily, @weekly, "
                            "@monthly");
    for (size_t i = 0; i < total; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20 || c >= 0x7f)
            return util_err_set(err, UTIL_EINVAL,
                                "the cron expression has a character that is not printable "
                                "ASCII at byte %zu: use " CRON_ALLOWED_SYNTAX,
                                i + 1);
    }
    if (p[0] == '@')
        return cron_parse_macro(out, p, total, err);

    for (size_t i = 0; i < total;) {
        size_t j = i;
        while (j < total && !cron_is_space(p[j]))
            j++;
        if (n < 8) {
            start[n] = p + i;
            len[n] = j - i;
        }
        n++;
        while (j < total && cron_is_space(p[j]))
            j++;
        i = j;
    }
    if (n == 6 || n == 7)
        return util_err_set(err, UTIL_EINVAL,
                            "%zu fields: seconds and year fields are not supported: use five "
                            "fields (minute hour day-of-month month day-of-week)",
                            n);
    if (n != 5)
        return util_err_set(err, UTIL_EINVAL,
                            "%zu field%s: a cron expression has five fields (minute hour "
                            "day-of-month month day-of-week) or is one of @hourly, @daily, "
                            "@weekly, @monthly",
                            n, n == 1 ? "" : "s");

    for (unsigned f = 0; f < CRON_NFIELDS; f++) {
        struct cron_scan s = {&cron_fields[f], start[f], len[f], 0, err};
        if ((rc = cron_parse_field(&s, &mask)) != 0)
            return rc;
        switch (f) {
        case CRON_MINUTE:
            e.minutes = mask;
            break;
        case CRON_HOUR:
            e.hours = (uint32_t)mask;
            break;
        case CRON_MDAY:
            e.mdays = (uint32_t)mask;
            e.mday_star = start[f][0] == '*';
            break;
        case CRON_MONTH:
            e.months = (uint16_t)mask;
            break;
        case CRON_WDAY:
            e.wdays = (uint8_t)((mask | (mask >> 7)) & 0x7f);
            e.wday_star = start[f][0] == '*';
            break;
        }
    }
    {
        /* The expression as one line with single spaces, for the message. */
        char norm[256];
        size_t used = 0;
        for (size_t f = 0; f < 5 && used < sizeof(norm); f++)
            used += (size_t)snprintf(norm + used, sizeof(norm) - used, "%s%.*s", f ? " " : "",
                                     (int)(len[f] > 48 ? 48 : len[f]), start[f]);
        if ((rc = cron_check_can_fire(&e, norm, err)) != 0)
            return rc;
    }
    *out = e;
    return 0;
}

bool cron_day_matches(const struct cron_expr *e, int64_t y, unsigned m, unsigned d, unsigned w)
{
    bool dom, dow;
    (void)y;
    if (m < 1 || m > 12 || d < 1 || d > 31 || w > 7)
        return false;
    if (!(e->months & (1u << m)))
        return false;
    dom = (e->mdays >> d) & 1;
    dow = (e->wdays >> (w % 7)) & 1;
    if (!e->mday_star && !e->wday_star)
        return dom || dow;
    return dom && dow;
}

bool cron_is_fixed_time(const struct cron_expr *e)
{
    return __builtin_popcountll(e->minutes) == 1 && __builtin_popcount(e->hours) == 1;
}

/*
 * Civil calendar arithmetic, as in util.h but inlined, unsigned and with constant
 * divisors: the search converts dates a few times per call, and a call through
 * util's general floor division costs hardware divides (the whole search would
 * take about three times as long). Days are biased by a whole number of 400-year
 * eras (which is also a whole number of weeks) so that every value is positive for
 * times within CRON_T_LIMIT.
 */
#define CRON_BIAS_ERAS UINT64_C(8192)
#define CRON_BIAS_DAYS (CRON_BIAS_ERAS * 146097) /* 146097 = 7 * 20871 */

/* Biased day number of a date. */
static inline uint64_t cron_days(int64_t y, unsigned m, unsigned d)
{
    uint64_t yu = (uint64_t)(y + (int64_t)(CRON_BIAS_ERAS * 400)) - (m <= 2);
    uint64_t era = yu / 400, yoe = yu - era * 400;
    uint64_t doy = (153 * (uint64_t)(m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* Splits local seconds into the biased day number, the date and the hour and minute. */
static inline uint64_t cron_split(int64_t t, int64_t *y, unsigned *m, unsigned *d, unsigned *h,
                                  unsigned *mi)
{
    uint64_t ut = (uint64_t)t + CRON_BIAS_DAYS * 86400;
    uint64_t days = ut / 86400, rem = ut - days * 86400;
    uint64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
    uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    uint64_t mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int64_t)(yoe + era * 400) - (int64_t)(CRON_BIAS_ERAS * 400) + (*m <= 2);
    *h = (unsigned)(rem / 3600);
    *mi = (unsigned)(rem % 3600 / 60);
    return days;
}

/* Local seconds of a biased day number and a time of day. */
static inline int64_t cron_seconds(uint64_t days, unsigned h, unsigned mi)
{
    return (int64_t)(days - CRON_BIAS_DAYS) * 86400 + (int64_t)h * 3600 + (int64_t)mi * 60;
}

static inline unsigned cron_dim(int64_t y, unsigned m)
{
    static const unsigned char dim[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return dim[m];
}

/*
 * The days of month m of year y that match, as bits 1..31, given the biased day
 * number of its 1st. The weekday bits are repeated every 7 and shifted so that
 * bit d holds the weekday of day d.
 */
static uint32_t cron_month_days(const struct cron_expr *e, int64_t y, unsigned m, uint64_t day1)
{
    unsigned dim = cron_dim(y, m), w1;
    uint64_t rep = e->wdays & 0x7f, wk;
    uint32_t valid = (uint32_t)(((UINT64_C(1) << (dim + 1)) - 1) & ~UINT64_C(1));
    bool both = !e->mday_star && !e->wday_star;

    if (!both && !(e->mdays & valid))
        return 0; /* no allowed day in this month (February 29 in a common year) */
    w1 = (unsigned)((day1 + 4) % 7); /* 1970-01-01 was a Thursday */
    rep |= rep << 7;
    rep |= rep << 14;
    rep |= rep << 28; /* 56 bits: bit j set when weekday j % 7 matches */
    wk = (rep >> w1) << 1;
    if (both)
        return (uint32_t)((e->mdays | wk) & valid);
    return (uint32_t)(e->mdays & wk & valid);
}

/* The lowest set bit of mask at or above bit `from`, or -1. */
static int cron_bit_from(uint64_t mask, unsigned from)
{
    if (from >= 64)
        return -1;
    mask &= ~((UINT64_C(1) << from) - 1);
    return mask ? __builtin_ctzll(mask) : -1;
}

/* The highest set bit of mask at or below bit `upto`, or -1. */
static int cron_bit_upto(uint64_t mask, int upto)
{
    if (upto < 0)
        return -1;
    if (upto < 63)
        mask &= (UINT64_C(1) << (upto + 1)) - 1;
    return mask ? 63 - __builtin_clzll(mask) : -1;
}

/* The years a search may cover: Feb 29 on a given weekday recurs within 28. */
#define CRON_SEARCH_YEARS 29

/*
 * True when every day matches: all months, and the day rule passes every date.
 * Most schedules are so (every five minutes, 02:30 daily, @hourly), and for them
 * the search needs no calendar at all: the next time of day, today or tomorrow.
 */
static inline bool cron_every_day(const struct cron_expr *e)
{
    bool all_mdays = (e->mdays & 0xfffffffeu) == 0xfffffffeu, all_wdays = (e->wdays & 0x7f) == 0x7f;
    if ((e->months & 0x1ffe) != 0x1ffe)
        return false;
    if (!e->mday_star && !e->wday_star)
        return all_mdays || all_wdays;
    return all_mdays && all_wdays;
}

/* The first matching minute of the day at or after minute-of-day (h, mi), or -1. */
static inline int64_t cron_time_from(const struct cron_expr *e, unsigned h, unsigned mi)
{
    int b;
    for (; (b = cron_bit_from(e->hours, h)) >= 0; h++, mi = 0) {
        if ((unsigned)b != h) {
            h = (unsigned)b;
            mi = 0;
        }
        if ((b = cron_bit_from(e->minutes, mi)) >= 0)
            return (int64_t)h * 3600 + (int64_t)b * 60;
    }
    return -1;
}

/* The last matching minute of the day at or before minute-of-day (h, mi), or -1. */
static inline int64_t cron_time_upto(const struct cron_expr *e, int h, int mi)
{
    int b;
    for (; (b = cron_bit_upto(e->hours, h)) >= 0; h--, mi = 59) {
        if (b != h) {
            h = b;
            mi = 59;
        }
        if ((b = cron_bit_upto(e->minutes, mi)) >= 0)
            return (int64_t)h * 3600 + (int64_t)b * 60;
    }
    return -1;
}

int cron_next(const struct cron_expr *e, int64_t after, int64_t *next)
{
    int64_t y, y_limit;
    unsigned m, d, h, mi;
    uint64_t day1;
    int b;

    if (e->minutes == 0 || e->hours == 0 || e->months == 0 || (e->mdays == 0 && e->wdays == 0))
        return UTIL_ENOENT;
    if (after < -CRON_T_LIMIT || after > CRON_T_LIMIT)
        return UTIL_ERANGE;
    if (cron_every_day(e)) {
        int64_t start = after - after % 60 + (after % 60 < 0 ? 0 : 60);
        int64_t day = start - ((start % 86400) + 86400) % 86400, rem = start - day, x;
        x = cron_time_from(e, (unsigned)(rem / 3600), (unsigned)(rem % 3600 / 60));
        *next = x >= 0 ? day + x : day + 86400 + cron_time_from(e, 0, 0);
        return 0;
    }
    day1 = cron_split(after - after % 60 + (after % 60 < 0 ? 0 : 60), &y, &m, &d, &h, &mi);
    day1 -= d - 1;
    y_limit = y + CRON_SEARCH_YEARS;

    /* Each level resets the ones below it when it moves; a month's days are built once. */
    /* A new year starts at "month 0", so the first allowed month computes its 1st. */
    for (; y <= y_limit; y++, m = 0, d = 1, h = 0, mi = 0) {
        /* An expression that fires only on February 29 goes from leap year to leap year. */
        if (m == 0 && e->months == (1u << 2) && (e->mdays & 0x1ffffffeu) == 0 &&
            (e->mday_star || e->wday_star)) {
            while (!((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
                y++;
            if (y > y_limit)
                break;
        }
        for (; (b = cron_bit_from(e->months, m)) >= 0; m++, d = 1, h = 0, mi = 0) {
            uint32_t days;
            if ((unsigned)b != m) {
                m = (unsigned)b;
                d = 1;
                h = 0;
                mi = 0;
                day1 = cron_days(y, m, 1);
            }
            days = cron_month_days(e, y, m, day1);
            for (; (b = cron_bit_from(days, d)) >= 0; d++, h = 0, mi = 0) {
                if ((unsigned)b != d) {
                    d = (unsigned)b;
                    h = 0;
                    mi = 0;
                }
                for (; (b = cron_bit_from(e->hours, h)) >= 0; h++, mi = 0) {
                    if ((unsigned)b != h) {
                        h = (unsigned)b;
                        mi = 0;
                    }
                    if ((b = cron_bit_from(e->minutes, mi)) >= 0) {
                        *next = cron_seconds(day1 + d - 1, h, (unsigned)b);
                        return 0;
                    }
                }
            }
            day1 += cron_dim(y, m);
        }
    }
    return UTIL_ENOENT;
}

int cron_prev(const struct cron_expr *e, int64_t before, int64_t *prev)
{
    int64_t y, y_limit;
    int m, d, h, mi, b;
    uint64_t day1;

    if (e->minutes == 0 || e->hours == 0 || e->months == 0 || (e->mdays == 0 && e->wdays == 0))
        return UTIL_ENOENT;
    if (before < -CRON_T_LIMIT || before > CRON_T_LIMIT)
        return UTIL_ERANGE;
    if (cron_every_day(e)) {
        int64_t last = before - 1;
        int64_t start = last - last % 60 - (last % 60 < 0 ? 60 : 0);
        int64_t day = start - ((start % 86400) + 86400) % 86400, rem = start - day, x;
        x = cron_time_upto(e, (int)(rem / 3600), (int)(rem % 3600 / 60));
        *prev = x >= 0 ? day + x : day - 86400 + cron_time_upto(e, 23, 59);
        return 0;
    }
    /* The last whole minute strictly before `before`. */
    {
        unsigned um, ud, uh, umi;
        int64_t last = before - 1;
        day1 = cron_split(last - last % 60 - (last % 60 < 0 ? 60 : 0), &y, &um, &ud, &uh, &umi);
        m = (int)um;
        d = (int)ud;
        h = (int)uh;
        mi = (int)umi;
        day1 -= ud - 1;
    }
    y_limit = y - CRON_SEARCH_YEARS;

    for (; y >= y_limit; y--, m = 13, d = 31, h = 23, mi = 59) {
        for (; (b = cron_bit_upto(e->months, m)) >= 1; m--, d = 31, h = 23, mi = 59) {
            uint32_t days;
            if (b != m) {
                m = b;
                d = 31;
                h = 23;
                mi = 59;
                day1 = cron_days(y, (unsigned)m, 1);
            }
            days = cron_month_days(e, y, (unsigned)m, day1);
            for (; (b = cron_bit_upto(days, d)) >= 1; d--, h = 23, mi = 59) {
                if (b != d) {
                    d = b;
                    h = 23;
                    mi = 59;
                }
                for (; (b = cron_bit_upto(e->hours, h)) >= 0; h--, mi = 59) {
                    if (b != h) {
                        h = b;
                        mi = 59;
                    }
                    if ((b = cron_bit_upto(e->minutes, mi)) >= 0) {
                        *prev = cron_seconds(day1 + (unsigned)d - 1, (unsigned)h, (unsigned)b);
                        return 0;
                    }
                }
            }
            if (m > 1)
                day1 -= cron_dim(y, (unsigned)m - 1);
        }
    }
    return UTIL_ENOENT;
}
