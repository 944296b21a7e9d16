/*
 * libFuzzer target for the cron parser: cron_parse on arbitrary text, then, for
 * whatever it accepts, the searches and the schedule on top of them. Findings are
 * crashes, sanitizer reports and broken invariants: a refusal without a message,
 * an accepted expression that never fires, a search whose answer does not match
 * or is not the next one, and a slot sequence that does not strictly increase.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cron/cron.h"
#include "schedule/schedule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* True when local minute t matches, by the definition rather than the search. */
static bool matches(const struct cron_expr *e, int64_t t)
{
    struct util_civil c;
    util_civil_from_seconds(t, &c);
    return ((e->minutes >> c.minute) & 1) && ((e->hours >> c.hour) & 1) &&
           cron_day_matches(e, c.year, c.month, c.day,
                            util_weekday_from_days(util_floor_div(t, 86400)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cron_expr e;
    struct util_err err = {0};
    char text[256];
    int64_t t, n, p;

    if (size >= sizeof(text))
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (cron_parse(&e, text, &err) != 0) {
        if (err.code != UTIL_EINVAL || err.msg[0] == '\0')
            abort();
        return 0;
    }
    /* Starts spread over 1900..2100, at any second, taken from the input's bytes. */
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211u;
    t = -2208988800 + (int64_t)(h % UINT64_C(6311390400));
    for (int k = 0; k < 4; k++) {
        if (cron_next(&e, t, &n) != 0 || n <= t || n % 60 != 0 || !matches(&e, n))
            abort();
        if (cron_prev(&e, n, &p) != 0 || p >= n || !matches(&e, p))
            abort();
        /* Nothing matches strictly between t and n (checked over the first day only). */
        for (int64_t m = (t / 60 + 1) * 60; m < n && m < t + 86400; m += 60)
            if (matches(&e, m))
                abort();
        t = n;
    }
    /* Slots in UTC strictly increase and sit on matching minutes. */
    struct tz_zone *utc = tz_zone_utc();
    struct sched s;
    struct sched_slot a, b;
    sched_init(&s, &e, utc);
    if (sched_next(&s, t, &a) != 0)
        abort();
    for (int k = 0; k < 3; k++) {
        if (sched_next(&s, a.at, &b) != 0 || b.at <= a.at || b.local != b.at ||
            !matches(&e, b.local))
            abort();
        a = b;
    }
    tz_zone_free(utc);
    return 0;
}
