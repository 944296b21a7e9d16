/*
 * cron: five-field cron expressions as bitmasks, and the next matching local time.
 *
 * Grammar (docs/schedule.md, "Slots"): minute 0-59, hour 0-23, day-of-month 1-31, month 1-12
 * or JAN-DEC, day-of-week 0-7 or SUN-SAT (7 is Sunday); lists, ranges, steps
 * ("*" "/15", "1-20/5", "5/15" meaning 5-59/15); names are case-insensitive; the
 * macros @hourly @daily @weekly @monthly. When day-of-month and day-of-week are
 * both restricted (neither field's text starts with '*'), a day matches if either
 * does; otherwise both must (Vixie cron). Seconds or year fields, '?', 'L', 'W',
 * '#', @yearly, @annually, @reboot, and expressions that can never fire are
 * rejected with a message that names the problem.
 *
 * Times here are local wall-clock minutes with no zone: cron knows nothing of DST,
 * which is schedule's job. cron_next() and cron_prev() jump field by field (month,
 * day, hour, minute) instead of stepping minute by minute, so they cost a handful
 * of bit scans whatever the expression (about 20 ns); they never allocate.
 */
#ifndef LODE_CRON_H
#define LODE_CRON_H

#include <stdbool.h>
#include <stdint.h>

#include "util/util.h"

struct cron_expr {
    uint64_t minutes; /* bit m set: minute m matches (0..59) */
    uint32_t hours;   /* bit h: hour h (0..23) */
    uint32_t mdays;   /* bit d: day of month d (1..31) */
    uint16_t months;  /* bit m: month m (1..12) */
    uint8_t wdays;    /* bit w: weekday w (0 = Sunday .. 6); 7 folds into 0 */
    bool mday_star;   /* the day-of-month text starts with '*' */
    bool wday_star;   /* the day-of-week text starts with '*' */
};

/*
 * Parses text into out. On error returns UTIL_EINVAL and err says which field is
 * wrong and what is allowed there.
 */
int cron_parse(struct cron_expr *out, const char *text, struct util_err *err);

/* True when the local date (y, m, d; weekday w, 0 = Sunday) is a day the expression fires on. */
bool cron_day_matches(const struct cron_expr *e, int64_t y, unsigned m, unsigned d, unsigned w);

/* Times cron_next and cron_prev accept: about two million years either side of 1970. */
#define CRON_T_LIMIT ((int64_t)1 << 46)

/*
 * The first local minute strictly after `after` that matches (local seconds as in
 * tz.h, any second within a minute). Returns 0 and fills *next (a multiple of 60),
 * UTIL_ENOENT when nothing matches within 40 years (cannot happen for an
 * expression cron_parse accepted: Feb 29 on a given weekday recurs within 40
 * years, the longest gap, across a non-leap century such as 1900 or 2100),
 * or UTIL_ERANGE when |after| > CRON_T_LIMIT.
 */
int cron_next(const struct cron_expr *e, int64_t after, int64_t *next);

/*
 * The last local minute strictly before `before` that matches: cron_next run
 * backwards, at the same cost. Lets a caller find the last slot at or before now
 * directly, without walking the slots it missed.
 */
int cron_prev(const struct cron_expr *e, int64_t before, int64_t *prev);

/*
 * True when the minute and hour fields each expand to exactly one value: a single
 * fixed time of day, which docs/schedule.md shifts past a DST gap instead of skipping.
 */
bool cron_is_fixed_time(const struct cron_expr *e);

#endif
