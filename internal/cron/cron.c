/*
 * cron: parsing into bitmasks (the search for matching minutes is search.c).
 *
 * The parser is a hand-written scanner over one field at a time, so a message can
 * quote the field and say what that field allows.
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
 * weekday falls on every date within 40 years, so only the day-of-month bits
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
