/*
 * cron: which days and minutes an expression matches, and the next and previous
 * matching local minute (cron.h). The search walks month, day, hour and minute in
 * turn, each step one bit scan; a day of a month is matched with a 31-bit mask built
 * from the day-of-month bits and the weekday bits rotated to the weekday of the 1st.
 * The parser is cron.c.
 */
#include "cron/cron.h"

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

/*
 * The years a search may cover. Feb 29 on a given weekday recurs every 28 years
 * within one century; across a non-leap 1900 or 2100 the gap is up to 40
 * (Sundays 1880 and 1920, Fridays 1884 and 1924), the longest in the 400-year
 * Gregorian cycle. Any other date recurs on a given weekday within 12 years.
 */
#define CRON_SEARCH_YEARS 40

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
