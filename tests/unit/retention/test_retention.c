/*
 * The retention engine against docs/retention.md: one table per
 * rule and per "detail that matters", the vectors R1-R10 of the research notes,
 * and properties on random histories checked against a slow, direct model of
 * the rules whose local days come from glibc (the oracle; the engine reads the
 * tz database through internal/tz).
 *
 * Each table lists the snapshots and the expected result as a string, newest
 * first: "id:reason,reason" for a kept snapshot, "id:-" for a forgotten one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "retention/retention.h"

struct snap {
    const char *id;
    const char *time; /* RFC 3339 */
    bool incomplete;
    bool suspicious;
    bool pinned;
};

#define NSNAPS(a) (sizeof(a) / sizeof((a)[0]))
/* Good, incomplete, suspicious, and both. */
#define G(id, t)                                                                                   \
    {                                                                                              \
        id, t, false, false, false                                                                 \
    }
#define I(id, t)                                                                                   \
    {                                                                                              \
        id, t, true, false, false                                                                  \
    }
#define X(id, t)                                                                                   \
    {                                                                                              \
        id, t, false, true, false                                                                  \
    }
#define IX(id, t)                                                                                  \
    {                                                                                              \
        id, t, true, true, false                                                                   \
    }
/* Pinned (docs/retention.md, "Pinned snapshots"), and pinned and incomplete. */
#define P(id, t)                                                                                   \
    {                                                                                              \
        id, t, false, false, true                                                                  \
    }
#define IP(id, t)                                                                                  \
    {                                                                                              \
        id, t, true, false, true                                                                   \
    }

static struct tz_db *test_db;

static struct tz_zone *load_zone(const char *name)
{
    struct tz_zone *z = NULL;
    struct util_err err = {0};
    if (tz_zone_load(&z, test_db, name, &err) != 0)
        fail_msg("cannot load %s: %s", name, err.msg);
    return z;
}

static int setup_db(void **state)
{
    struct util_err err = {0};
    if (tz_db_open(&test_db, NULL, &err) != 0) {
        fprintf(stderr, "cannot open the tz database: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown_db(void **state)
{
    tz_db_close(test_db);
    return 0;
}

/* Formats decisions as "id:reasons id:- ..." (newest first, as the engine orders them). */
static char *format_result(const struct ret_snapshot *s, const struct ret_decision *d, size_t n)
{
    struct util_buf b;
    util_buf_init(&b);
    util_buf_puts(&b, "");
    for (size_t i = 0; i < n; i++) {
        util_buf_printf(&b, "%s%s:", i ? " " : "", s[d[i].index].id);
        if (!d[i].keep)
            util_buf_puts(&b, "-");
        for (unsigned r = 0, first = 1; r < RET_REASON_COUNT; r++) {
            if (d[i].reasons & (1u << r)) {
                util_buf_printf(&b, "%s%s", first ? "" : ",", ret_reason_name(r));
                first = 0;
            }
        }
    }
    return util_buf_steal(&b);
}

static int64_t parse_time(const char *s)
{
    int64_t t;
    struct util_err err = {0};
    if (util_parse_rfc3339(s, &t, &err) != 0)
        fail_msg("bad time in test: %s", err.msg);
    return t;
}

/* Runs the engine on a table and compares the formatted result. */
static void check_case(const char *zone_name, const struct policy_retention *rules,
                       const struct snap *in, size_t n, const char *want)
{
    struct ret_snapshot *s = util_calloc(n ? n : 1, sizeof(*s));
    struct ret_decision *d = util_calloc(n ? n : 1, sizeof(*d));
    struct tz_zone *zone = zone_name ? load_zone(zone_name) : tz_zone_utc();
    struct util_err err = {0};
    char *got;

    for (size_t i = 0; i < n; i++)
        s[i] = (struct ret_snapshot){in[i].id, parse_time(in[i].time), in[i].incomplete,
                                     in[i].suspicious, in[i].pinned};
    assert_int_equal(ret_evaluate(s, n, rules, zone, d, &err), 0);
    got = format_result(s, d, n);
    if (strcmp(got, want) != 0)
        fail_msg("result differs\n  got:  %s\n  want: %s", got, want);
    /* Reversed input gives the same answer. */
    for (size_t i = 0; i < n / 2; i++) {
        struct ret_snapshot t = s[i];
        s[i] = s[n - 1 - i];
        s[n - 1 - i] = t;
    }
    assert_int_equal(ret_evaluate(s, n, rules, zone, d, &err), 0);
    free(got);
    got = format_result(s, d, n);
    if (strcmp(got, want) != 0)
        fail_msg("result differs on reversed input\n  got:  %s\n  want: %s", got, want);
    free(got);
    tz_zone_free(zone);
    free(d);
    free(s);
}

/* ---- one table per rule ---- */

static void test_keep_last(void **state)
{
    static const struct snap s[] = {
        G("a", "2026-06-01T10:00:00Z"), G("b", "2026-06-02T10:00:00Z"),
        G("c", "2026-06-03T10:00:00Z"), G("d", "2026-06-04T10:00:00Z"),
        G("e", "2026-06-05T10:00:00Z"),
    };
    struct policy_retention r = {.keep_last = 3};
    check_case(NULL, &r, s, NSNAPS(s), "e:last,newest-good d:last,newest-good c:last b:- a:-");
    r.keep_last = 1;
    check_case(NULL, &r, s, NSNAPS(s), "e:last,newest-good d:newest-good c:- b:- a:-");
    r.keep_last = 100; /* more than there are: all, no error */
    check_case(NULL, &r, s, NSNAPS(s),
               "e:last,newest-good d:last,newest-good c:last b:last a:last");
}

static void test_keep_within_inclusive_boundary(void **state)
{
    /* R6: c is exactly 24 h before the newest: kept (restic, strict, drops it). */
    static const struct snap s[] = {
        G("a", "2026-03-22T12:00:00Z"), G("b", "2026-03-22T11:00:00Z"),
        G("c", "2026-03-21T12:00:00Z"), G("d", "2026-03-21T11:59:59Z"),
        G("e", "2026-03-20T12:00:00Z"),
    };
    struct policy_retention r = {.keep_within = 24 * 3600};
    check_case(NULL, &r, s, NSNAPS(s),
               "a:within,newest-good b:within,newest-good c:within d:- e:-");
    r.keep_within = 60; /* the minimum: only the newest */
    check_case(NULL, &r, s, NSNAPS(s), "a:within,newest-good b:newest-good c:- d:- e:-");
}

static void test_keep_within_anchor_is_newest_snapshot_not_clock(void **state)
{
    /* A host that stopped in 2020 keeps its last two days, whatever the date today. */
    static const struct snap s[] = {
        G("a", "2020-01-10T00:00:00Z"),
        G("b", "2020-01-09T00:00:00Z"),
        G("c", "2020-01-08T00:00:00Z"),
        G("d", "2020-01-07T23:59:59Z"),
    };
    struct policy_retention r = {.keep_within = 2 * 86400};
    check_case(NULL, &r, s, NSNAPS(s), "a:within,newest-good b:within,newest-good c:within d:-");
}

static void test_keep_within_anchor_skips_suspicious(void **state)
{
    /* R9: the suspicious x is newest; the window hangs from g4, so g2 is in. */
    static const struct snap s[] = {
        G("g1", "2026-06-06T12:00:00Z"), G("g2", "2026-06-07T13:00:00Z"),
        G("g3", "2026-06-08T11:00:00Z"), G("g4", "2026-06-09T10:00:00Z"),
        X("x", "2026-06-10T12:00:00Z"),
    };
    struct policy_retention r = {.keep_within = 48 * 3600};
    check_case(NULL, &r, s, NSNAPS(s),
               "x:suspicious g4:within,newest-good g3:within,newest-good g2:within g1:-");
}

static void test_keep_within_anchor_may_be_incomplete(void **state)
{
    /* The newest non-suspicious snapshot anchors the window even when it is incomplete. */
    static const struct snap s[] = {
        G("old", "2026-06-01T00:00:00Z"),
        G("mid", "2026-06-09T00:00:00Z"),
        I("inc", "2026-06-10T00:00:00Z"),
    };
    struct policy_retention r = {.keep_within = 86400};
    check_case(NULL, &r, s, NSNAPS(s), "inc:within mid:within,newest-good old:newest-good");
}

static void test_keep_daily_r1(void **state)
{
    /* R1: no snapshot on 05-03; the newest of each of the last three days with snapshots. */
    static const struct snap s[] = {
        G("s1", "2026-05-01T10:00:00Z"), G("s2", "2026-05-01T22:00:00Z"),
        G("s3", "2026-05-02T09:00:00Z"), G("s4", "2026-05-04T01:00:00Z"),
        G("s5", "2026-05-04T23:59:00Z"), G("s6", "2026-05-05T12:00:00Z"),
    };
    struct policy_retention r = {.keep_daily = 3};
    check_case(NULL, &r, s, NSNAPS(s),
               "s6:daily,newest-good s5:daily,newest-good s4:- s3:daily s2:- s1:-");
}

static void test_keep_daily_host_off_three_weeks(void **state)
{
    /*
     * Daily at 02:00 until 05-10, off for three weeks, back on 06-01..06-03. With
     * keepDaily 7 the days that have snapshots are counted, not calendar days:
     * the three new days and the four last days before the outage stay.
     */
    static const struct snap s[] = {
        G("0501", "2026-05-01T02:00:00Z"), G("0502", "2026-05-02T02:00:00Z"),
        G("0503", "2026-05-03T02:00:00Z"), G("0504", "2026-05-04T02:00:00Z"),
        G("0505", "2026-05-05T02:00:00Z"), G("0506", "2026-05-06T02:00:00Z"),
        G("0507", "2026-05-07T02:00:00Z"), G("0508", "2026-05-08T02:00:00Z"),
        G("0509", "2026-05-09T02:00:00Z"), G("0510", "2026-05-10T02:00:00Z"),
        G("0601", "2026-06-01T02:00:00Z"), G("0602", "2026-06-02T02:00:00Z"),
        G("0603", "2026-06-03T02:00:00Z"),
    };
    struct policy_retention r = {.keep_daily = 7};
    check_case(NULL, &r, s, NSNAPS(s),
               "0603:daily,newest-good 0602:daily,newest-good 0601:daily 0510:daily 0509:daily "
               "0508:daily 0507:daily 0506:- 0505:- 0504:- 0503:- 0502:- 0501:-");
}

static void test_keep_weekly_iso_week_across_new_year(void **state)
{
    /* R2: 2026-12-28 .. 2027-01-03 is ISO week 2026-W53, one bucket across the new year. */
    static const struct snap s[] = {
        G("s1", "2026-12-20T12:00:00Z"), G("s2", "2026-12-27T12:00:00Z"),
        G("s3", "2026-12-28T12:00:00Z"), G("s4", "2027-01-01T12:00:00Z"),
        G("s5", "2027-01-03T23:00:00Z"), G("s6", "2027-01-04T00:30:00Z"),
    };
    struct policy_retention r = {.keep_weekly = 3};
    check_case(NULL, &r, s, NSNAPS(s),
               "s6:weekly,newest-good s5:weekly,newest-good s4:- s3:- s2:weekly s1:-");
}

static void test_keep_weekly_monday_first(void **state)
{
    /* Sunday 23:59 and Monday 00:00 are different weeks; Monday and Sunday of one week are one. */
    static const struct snap s[] = {
        G("mon", "2026-06-01T00:00:00Z"),
        G("sun", "2026-06-07T23:59:00Z"),
        G("next", "2026-06-08T00:00:00Z"),
    };
    struct policy_retention r = {.keep_weekly = 5};
    check_case(NULL, &r, s, NSNAPS(s), "next:weekly,newest-good sun:weekly,newest-good mon:-");
}

static void test_keep_monthly_in_zone_r3(void **state)
{
    /* R3a: 21:30 UTC on 03-31 is already 1 April in Kyiv (00:30 EEST). */
    static const struct snap s[] = {
        G("s1", "2026-02-15T12:00:00Z"), G("s2", "2026-03-31T20:30:00Z"),
        G("s3", "2026-03-31T21:30:00Z"), G("s4", "2026-04-10T12:00:00Z"),
        G("s5", "2026-04-20T12:00:00Z"), G("s6", "2026-04-25T12:00:00Z"),
    };
    struct policy_retention r = {.keep_monthly = 2};
    check_case("Europe/Kyiv", &r, s, NSNAPS(s),
               "s6:monthly,newest-good s5:newest-good s4:- s3:- s2:monthly s1:-");
    /* R3b: the same without a schedule counts UTC months: s3 is March's newest. */
    check_case(NULL, &r, s, NSNAPS(s),
               "s6:monthly,newest-good s5:newest-good s4:- s3:monthly s2:- s1:-");
}

static void test_daily_2330_utc_is_tomorrow_in_kyiv(void **state)
{
    /* 23:30 UTC on 06-10 is 02:30 EEST on 06-11: one Kyiv day with the 10:00 UTC one. */
    static const struct snap s[] = {
        G("a", "2026-06-10T12:00:00Z"),
        G("b", "2026-06-10T23:30:00Z"),
        G("c", "2026-06-11T10:00:00Z"),
    };
    struct policy_retention r = {.keep_daily = 2};
    check_case("Europe/Kyiv", &r, s, NSNAPS(s), "c:daily,newest-good b:newest-good a:daily");
    check_case(NULL, &r, s, NSNAPS(s), "c:daily,newest-good b:daily,newest-good a:-");
    /* A backward link names the same zone. */
    check_case("Europe/Kiev", &r, s, NSNAPS(s), "c:daily,newest-good b:newest-good a:daily");
}

static void test_daily_across_dst_change(void **state)
{
    /*
     * Kyiv's spring gap (2026-03-29 03:00 -> 04:00) and autumn fold (2026-10-25
     * 04:00 -> 03:00): local days stay whole; the second 03:30 on 10-25 is the same
     * day as the first.
     */
    static const struct snap s[] = {
        G("m28", "2026-03-28T22:30:00Z"), /* 00:30 EET on 03-29 */
        G("m29", "2026-03-29T20:59:00Z"), /* 23:59 EEST on 03-29 */
        G("m30", "2026-03-29T21:00:00Z"), /* 00:00 EEST on 03-30 */
        G("o1", "2026-10-25T00:30:00Z"),  /* first 03:30 (EEST) */
        G("o2", "2026-10-25T01:30:00Z"),  /* second 03:30 (EET) */
        G("o3", "2026-10-25T21:59:00Z"),  /* 23:59 EET on 10-25 */
    };
    struct policy_retention r = {.keep_daily = 10};
    check_case("Europe/Kyiv", &r, s, NSNAPS(s),
               "o3:daily,newest-good o2:newest-good o1:- m30:daily m29:daily m28:-");
}

static void test_daily_distinct_labels_not_runs(void **state)
{
    /*
     * In 1867 Sitka moved from Asian to American time: at 00:31:13 UTC on 10-19
     * the local clock went from 10-19 15:30 back to 10-18 15:30, so the local day
     * 10-19 comes back after 10-18. Walking newest first the labels run 19, 18,
     * 19: distinct labels count 10-19 once (restic's "change of label" would keep
     * a as well).
     */
    static const struct snap s[] = {
        G("a", "1867-10-18T12:00:00Z"), /* 10-19 02:58:47 LMT +14:58:47 */
        G("b", "1867-10-19T06:00:00Z"), /* 10-18 20:58:47 LMT -9:01:13 */
        G("c", "1867-10-20T06:00:00Z"), /* 10-19 20:58:47 */
    };
    struct policy_retention r = {.keep_daily = 5};
    check_case("America/Sitka", &r, s, NSNAPS(s), "c:daily,newest-good b:daily,newest-good a:-");
    /* In UTC they are three days. */
    check_case(NULL, &r, s, NSNAPS(s), "c:daily,newest-good b:daily,newest-good a:daily");
}

static void test_keep_monthly_r10_seed_example(void **state)
{
    /* R10: 100 daily snapshots at 02:30 Kyiv time from 2026-01-01; the page's rules. */
    struct snap s[100];
    char ids[100][16], times[100][32];
    int64_t first = parse_time("2026-01-01T00:30:00Z"); /* 02:30 EET */
    struct policy_retention r = {
        .keep_last = 3, .keep_daily = 7, .keep_weekly = 4, .keep_monthly = 6};
    for (int i = 0; i < 100; i++) {
        int64_t t = first + (int64_t)i * 86400;
        int64_t y;
        unsigned m, d;
        /* After 03-29 the clock is EEST: 02:30 local is 23:30 UTC the day before. */
        if (t >= parse_time("2026-03-29T01:00:00Z"))
            t -= 3600;
        util_civil_from_days(util_floor_div(first, 86400) + i, &y, &m, &d);
        snprintf(ids[i], sizeof(ids[i]), "%02u-%02u", m, d);
        util_format_utc(t, times[i], sizeof(times[i]));
        s[i] = (struct snap){ids[i], times[i], false, false, false};
    }
    check_case("Europe/Kyiv", &r, s, 100,
               "04-10:last,daily,weekly,monthly,newest-good 04-09:last,daily,newest-good "
               "04-08:last,daily 04-07:daily 04-06:daily 04-05:daily,weekly 04-04:daily "
               "04-03:- 04-02:- 04-01:- 03-31:monthly 03-30:- 03-29:weekly 03-28:- 03-27:- "
               "03-26:- 03-25:- 03-24:- 03-23:- 03-22:weekly 03-21:- 03-20:- 03-19:- 03-18:- "
               "03-17:- 03-16:- 03-15:- 03-14:- 03-13:- 03-12:- 03-11:- 03-10:- 03-09:- 03-08:- "
               "03-07:- 03-06:- 03-05:- 03-04:- 03-03:- 03-02:- 03-01:- 02-28:monthly 02-27:- "
               "02-26:- 02-25:- 02-24:- 02-23:- 02-22:- 02-21:- 02-20:- 02-19:- 02-18:- 02-17:- "
               "02-16:- 02-15:- 02-14:- 02-13:- 02-12:- 02-11:- 02-10:- 02-09:- 02-08:- 02-07:- "
               "02-06:- 02-05:- 02-04:- 02-03:- 02-02:- 02-01:- 01-31:monthly 01-30:- 01-29:- "
               "01-28:- 01-27:- 01-26:- 01-25:- 01-24:- 01-23:- 01-22:- 01-21:- 01-20:- 01-19:- "
               "01-18:- 01-17:- 01-16:- 01-15:- 01-14:- 01-13:- 01-12:- 01-11:- 01-10:- 01-09:- "
               "01-08:- 01-07:- 01-06:- 01-05:- 01-04:- 01-03:- 01-02:- 01-01:-");
}

/* ---- the details that matter ---- */

static void test_no_oldest_snapshot_rule_r8(void **state)
{
    /* R8: restic 0.16+ would also keep s1 as "oldest daily snapshot"; Lodestore does not. */
    static const struct snap s[] = {
        G("s1", "2026-05-01T10:00:00Z"),
        G("s2", "2026-05-01T12:00:00Z"),
        G("s3", "2026-05-02T12:00:00Z"),
        G("s4", "2026-05-03T12:00:00Z"),
    };
    struct policy_retention r = {.keep_daily = 5};
    check_case(NULL, &r, s, NSNAPS(s), "s4:daily,newest-good s3:daily,newest-good s2:daily s1:-");
}

static void test_suspicious_kept_and_invisible_r4(void **state)
{
    /* R4: the suspicious s5 takes no keepLast slot. */
    static const struct snap s[] = {
        G("s1", "2026-06-01T00:00:00Z"), G("s2", "2026-06-02T00:00:00Z"),
        G("s3", "2026-06-03T00:00:00Z"), G("s4", "2026-06-04T00:00:00Z"),
        X("s5", "2026-06-05T00:00:00Z"),
    };
    struct policy_retention r = {.keep_last = 2};
    check_case(NULL, &r, s, NSNAPS(s),
               "s5:suspicious s4:last,newest-good s3:last,newest-good s2:- s1:-");
}

/* ---- pinned snapshots (docs/retention.md, "Pinned snapshots") ---- */

static void test_pinned_takes_no_slot(void **state)
{
    /* The pinned p3 is kept, takes no keepLast slot and is not one of the newest good. */
    static const struct snap s[] = {
        G("s1", "2026-06-01T00:00:00Z"), G("s2", "2026-06-02T00:00:00Z"),
        P("p3", "2026-06-03T00:00:00Z"), G("s4", "2026-06-04T00:00:00Z"),
        G("s5", "2026-06-05T00:00:00Z"),
    };
    struct policy_retention r = {.keep_last = 1};
    check_case(NULL, &r, s, NSNAPS(s), "s5:last,newest-good s4:newest-good p3:pinned s2:- s1:-");
}

static void test_pinned_oldest_survives_every_rule(void **state)
{
    /* A hand-made snapshot before an upgrade, pinned, far older than every rule reaches. */
    static const struct snap s[] = {
        P("before-upgrade", "2025-01-01T00:00:00Z"),
        G("d1", "2026-06-01T00:00:00Z"),
        G("d2", "2026-06-02T00:00:00Z"),
        G("d3", "2026-06-03T00:00:00Z"),
    };
    struct policy_retention r = {.keep_daily = 1, .keep_within = 3600};
    check_case(NULL, &r, s, NSNAPS(s),
               "d3:within,daily,newest-good d2:newest-good d1:- before-upgrade:pinned");
}

static void test_pinned_with_other_marks_and_no_rules(void **state)
{
    /* No rules: every unpinned one is kept by no-rules; a pinned one by its pin alone. A
     * pinned suspicious one gives both reasons; an incomplete pinned one is kept too. */
    static const struct snap s[] = {
        G("a", "2026-06-01T00:00:00Z"),
        P("b", "2026-06-02T00:00:00Z"),
        {"c", "2026-06-03T00:00:00Z", false, true, true},
        IP("d", "2026-06-04T00:00:00Z"),
    };
    check_case(NULL, NULL, s, NSNAPS(s),
               "d:pinned c:suspicious,pinned b:pinned a:newest-good,no-rules");
    /* Every snapshot pinned: all kept, none forgotten, whatever the rules. */
    static const struct snap all[] = {P("x", "2026-06-01T00:00:00Z"),
                                      P("y", "2026-06-02T00:00:00Z")};
    struct policy_retention r = {.keep_last = 1};
    check_case(NULL, &r, all, NSNAPS(all), "y:pinned x:pinned");
}

/* Unpinned, the same snapshot goes back to the rules: its slot is the rules' to give. */
static void test_unpinned_is_ruled_again(void **state)
{
    static const struct snap s[] = {
        G("s1", "2026-06-01T00:00:00Z"),
        G("s2", "2026-06-02T00:00:00Z"),
        G("s3", "2026-06-03T00:00:00Z"),
        G("s4", "2026-06-04T00:00:00Z"),
    };
    struct policy_retention r = {.keep_last = 1};
    check_case(NULL, &r, s, NSNAPS(s), "s4:last,newest-good s3:newest-good s2:- s1:-");
}

static void test_suspicious_in_the_middle_of_daily_buckets(void **state)
{
    /*
     * keepDaily 3. 06-04's only snapshot is suspicious: the day does not count, so
     * the third day is 06-02. On 06-03 the newer snapshot is suspicious: the older
     * good one is that day's snapshot, as if the suspicious one were not there.
     */
    static const struct snap s[] = {
        G("d1", "2026-06-01T10:00:00Z"),  G("d2", "2026-06-02T10:00:00Z"),
        G("d3a", "2026-06-03T10:00:00Z"), X("d3b", "2026-06-03T20:00:00Z"),
        X("d4", "2026-06-04T10:00:00Z"),  G("d5", "2026-06-05T10:00:00Z"),
    };
    struct policy_retention r = {.keep_daily = 3};
    check_case(NULL, &r, s, NSNAPS(s),
               "d5:daily,newest-good d4:suspicious d3b:suspicious d3a:daily,newest-good "
               "d2:daily d1:-");
}

static void test_incomplete_newest_r5(void **state)
{
    /* R5: keepLast 1 takes the incomplete s3; the floor keeps s1 and s2. */
    static const struct snap s[] = {
        G("s1", "2026-06-01T00:00:00Z"),
        G("s2", "2026-06-02T00:00:00Z"),
        I("s3", "2026-06-03T00:00:00Z"),
    };
    struct policy_retention r = {.keep_last = 1};
    check_case(NULL, &r, s, NSNAPS(s), "s3:last s2:newest-good s1:newest-good");
}

static void test_ten_incomplete_in_a_row(void **state)
{
    /*
     * Ten failed (incomplete) backups after two good ones, keepLast 3 and keepDaily
     * 2: the rules take incomplete snapshots like any other, and the two good ones
     * survive through newest-good.
     */
    struct snap s[14];
    char ids[14][8], times[14][32];
    int64_t t0 = parse_time("2026-06-01T00:00:00Z");
    struct policy_retention r = {.keep_last = 3, .keep_daily = 3};
    for (int i = 0; i < 14; i++) {
        snprintf(ids[i], sizeof(ids[i]), "s%02d", i);
        util_format_utc(t0 + (int64_t)i * 6 * 3600, times[i], sizeof(times[i]));
        s[i] = (struct snap){ids[i], times[i], i >= 4, false, false};
    }
    /* s00..s03 good on 06-01 (00, 06, 12, 18h); s04..s13 incomplete, 06-02 .. 06-04 06h. */
    check_case(NULL, &r, s, 14,
               "s13:last,daily s12:last s11:last,daily s10:- s09:- s08:- s07:daily s06:- s05:- "
               "s04:- s03:newest-good s02:newest-good s01:- s00:-");
}

static void test_equal_times_ordered_by_id_r7(void **state)
{
    /* R7: a and b tie; the larger id (b) is the newer, so keepLast 1 takes it. */
    static const struct snap s[] = {
        G("x1", "2026-06-01T01:00:00Z"),
        G("x2", "2026-06-02T01:00:00Z"),
        I("a", "2026-06-03T01:00:00Z"),
        I("b", "2026-06-03T01:00:00Z"),
    };
    struct policy_retention r = {.keep_last = 1};
    check_case(NULL, &r, s, NSNAPS(s), "b:last a:- x2:newest-good x1:newest-good");
}

static void test_equal_times_bytewise_ids(void **state)
{
    /* Bytewise: "Z" (0x5a) < "a" (0x61) < "\xc3\xa9" (UTF-8 e-acute); "10" < "9". */
    static const struct snap s[] = {
        G("Z", "2026-06-03T01:00:00Z"),        G("a", "2026-06-03T01:00:00Z"),
        G("\xc3\xa9", "2026-06-03T01:00:00Z"), G("10", "2026-06-03T01:00:00Z"),
        G("9", "2026-06-03T01:00:00Z"),
    };
    struct policy_retention r = {.keep_last = 3};
    check_case(NULL, &r, s, NSNAPS(s),
               "\xc3\xa9:last,newest-good a:last,newest-good Z:last 9:- 10:-");
}

static void test_no_rules_keeps_everything(void **state)
{
    static const struct snap s[] = {
        G("a", "2026-06-01T00:00:00Z"),
        I("b", "2026-06-02T00:00:00Z"),
        X("c", "2026-06-03T00:00:00Z"),
        G("d", "2026-06-04T00:00:00Z"),
    };
    struct policy_retention r = {0};
    check_case(NULL, &r, s, NSNAPS(s),
               "d:newest-good,no-rules c:suspicious b:no-rules a:newest-good,no-rules");
    check_case(NULL, NULL, s, NSNAPS(s),
               "d:newest-good,no-rules c:suspicious b:no-rules a:newest-good,no-rules");
}

static void test_every_reason_reported(void **state)
{
    static const struct snap s[] = {
        G("a", "2026-05-01T00:00:00Z"),
        G("b", "2026-06-01T00:00:00Z"),
    };
    struct policy_retention r = {.keep_last = 5,
                                 .keep_within = 365 * 86400,
                                 .keep_daily = 5,
                                 .keep_weekly = 5,
                                 .keep_monthly = 5};
    check_case(NULL, &r, s, NSNAPS(s),
               "b:last,within,daily,weekly,monthly,newest-good "
               "a:last,within,daily,weekly,monthly,newest-good");
}

static void test_two_newest_good_whatever_the_rules(void **state)
{
    /* keepLast 1 on an incomplete and a suspicious newest: the two good ones below stay. */
    static const struct snap s[] = {
        G("g1", "2026-06-01T00:00:00Z"), G("g2", "2026-06-02T00:00:00Z"),
        G("g3", "2026-06-03T00:00:00Z"), I("i", "2026-06-04T00:00:00Z"),
        X("x", "2026-06-05T00:00:00Z"),
    };
    struct policy_retention r = {.keep_last = 1};
    check_case(NULL, &r, s, NSNAPS(s), "x:suspicious i:last g3:newest-good g2:newest-good g1:-");
}

static void test_incomplete_and_suspicious_is_suspicious(void **state)
{
    static const struct snap s[] = {
        G("a", "2026-06-01T00:00:00Z"),
        IX("b", "2026-06-02T00:00:00Z"),
    };
    struct policy_retention r = {.keep_last = 1};
    check_case(NULL, &r, s, NSNAPS(s), "b:suspicious a:last,newest-good");
}

static void test_empty_and_single(void **state)
{
    static const struct snap one[] = {I("only", "2026-06-01T00:00:00Z")};
    struct policy_retention r = {.keep_last = 1};
    check_case(NULL, &r, NULL, 0, "");
    check_case(NULL, &r, one, 1, "only:last");
    r = (struct policy_retention){.keep_daily = 1};
    check_case(NULL, &r, one, 1, "only:daily");
}

static void test_extreme_times(void **state)
{
    /* Times near the ends of int64 neither overflow nor crash (UBSan watches). */
    struct ret_snapshot s[] = {
        {"min", INT64_MIN, false, false, false},
        {"max", INT64_MAX, false, false, false},
        {"zero", 0, false, false, false},
    };
    struct ret_decision d[3];
    struct util_err err = {0};
    struct policy_retention r = {
        .keep_within = INT64_MAX, .keep_daily = 3, .keep_weekly = 3, .keep_monthly = 3};
    struct tz_zone *kyiv = load_zone("Europe/Kyiv");
    assert_int_equal(ret_evaluate(s, 3, &r, kyiv, d, &err), 0);
    assert_string_equal(s[d[0].index].id, "max");
    assert_string_equal(s[d[2].index].id, "min");
    /* The window reaches from INT64_MAX down to 0, saturating instead of wrapping. */
    assert_int_equal(d[0].reasons,
                     RET_WITHIN | RET_DAILY | RET_WEEKLY | RET_MONTHLY | RET_NEWEST_GOOD);
    assert_int_equal(d[1].reasons,
                     RET_WITHIN | RET_DAILY | RET_WEEKLY | RET_MONTHLY | RET_NEWEST_GOOD);
    assert_int_equal(d[2].reasons, RET_DAILY | RET_WEEKLY | RET_MONTHLY);
    tz_zone_free(kyiv);
}

/* ---- errors ---- */

static void test_errors(void **state)
{
    struct ret_snapshot s[] = {
        {"a", 10, false, false, false},
        {"b", 20, false, false, false},
        {"a", 30, false, false, false},
    };
    struct ret_decision d[3];
    struct util_err err = {0};
    struct policy_retention r = {.keep_last = 1};

    /* The same id at the same time: the order would depend on the input order. */
    s[2].time = 10;
    assert_int_equal(ret_evaluate(s, 3, &r, NULL, d, &err), UTIL_EINVAL);
    assert_string_equal(err.msg, "snapshots 0 and 2 have the same id \"a\" and the same time");
    s[2].time = 30;

    s[2].id = "";
    assert_int_equal(ret_evaluate(s, 3, &r, NULL, d, &err), UTIL_EINVAL);
    assert_string_equal(err.msg, "snapshot 2 has no id");
    s[2].id = NULL;
    assert_int_equal(ret_evaluate(s, 3, &r, NULL, d, &err), UTIL_EINVAL);
    assert_string_equal(err.msg, "snapshot 2 has no id");
    s[2].id = "c";

    r = (struct policy_retention){.keep_daily = -1};
    assert_int_equal(ret_evaluate(s, 3, &r, NULL, d, &err), UTIL_EINVAL);
    assert_string_equal(
        err.msg, "retention.keepDaily is negative (-1); use a positive value or leave it out");
    r = (struct policy_retention){.keep_within = -60};
    assert_int_equal(ret_evaluate(s, 3, &r, NULL, d, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "retention.keepWithin is negative"));
    for (unsigned i = 0; i < RET_REASON_COUNT; i++)
        assert_non_null(ret_reason_name(i));
    assert_null(ret_reason_name(RET_REASON_COUNT));
}

/* ---- properties on random histories ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t x = rng_state; /* xorshift64*: reproducible, seeded per test */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 2685821657736338717ull;
}

static int64_t rng_range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng() % (uint64_t)(hi - lo + 1));
}

/* The local date of t in the zone named by the TZ variable, by glibc: the oracle. */
static void oracle_local(int64_t t, int *year, int *month, int *day, int *iso_year, int *iso_week)
{
    time_t tt = (time_t)t;
    struct tm tm;
    char buf[16];
    localtime_r(&tt, &tm);
    *year = tm.tm_year + 1900;
    *month = tm.tm_mon + 1;
    *day = tm.tm_mday;
    strftime(buf, sizeof(buf), "%G %V", &tm);
    if (sscanf(buf, "%d %d", iso_year, iso_week) != 2)
        fail_msg("strftime %%G %%V gave \"%s\"", buf);
}

/* What the model needs of a snapshot: its newest-first rank and its three periods. */
struct oracle_snap {
    size_t rank;
    int key[3][2]; /* day (yyyymmdd, 0), ISO week (year, week), month (year, month) */
    bool heads[3]; /* visible, and no newer visible snapshot has its period */
};

/* Ranks by a quadratic count (no sort), periods from glibc. */
static void oracle_prepare(const struct ret_snapshot *s, size_t n, struct oracle_snap *o)
{
    for (size_t i = 0; i < n; i++) {
        int y, m, d, iy, iw;
        o[i].rank = 0;
        for (size_t j = 0; j < n; j++)
            if (s[j].time > s[i].time || (s[j].time == s[i].time && strcmp(s[j].id, s[i].id) > 0))
                o[i].rank++;
        oracle_local(s[i].time, &y, &m, &d, &iy, &iw);
        o[i].key[0][0] = y * 10000 + m * 100 + d;
        o[i].key[0][1] = 0;
        o[i].key[1][0] = iy;
        o[i].key[1][1] = iw;
        o[i].key[2][0] = y;
        o[i].key[2][1] = m;
    }
    for (size_t i = 0; i < n; i++) {
        for (int p = 0; p < 3; p++) {
            o[i].heads[p] = !s[i].suspicious && !s[i].pinned;
            for (size_t j = 0; j < n; j++)
                if (!s[j].suspicious && !s[j].pinned && o[j].rank < o[i].rank &&
                    memcmp(o[j].key[p], o[i].key[p], sizeof(o[i].key[p])) == 0)
                    o[i].heads[p] = false;
        }
    }
}

/*
 * The rules stated directly, one snapshot at a time: a snapshot is kept by a
 * period rule when no newer visible snapshot shares its period and fewer than N
 * distinct periods are newer than its own.
 */
static unsigned oracle_reasons(const struct ret_snapshot *s, const struct oracle_snap *o, size_t n,
                               size_t i, const struct policy_retention *r)
{
    static const unsigned period_reason[3] = {RET_DAILY, RET_WEEKLY, RET_MONTHLY};
    int64_t want[3] = {r->keep_daily, r->keep_weekly, r->keep_monthly};
    unsigned reasons = 0;
    size_t newer_visible = 0, newer_good = 0;
    int64_t newest = INT64_MIN;

    /* Suspicious and pinned snapshots: kept for that alone, and invisible to the rest. */
    if (s[i].suspicious || s[i].pinned)
        return (s[i].suspicious ? RET_SUSPICIOUS : 0u) | (s[i].pinned ? RET_PINNED : 0u);
    for (size_t j = 0; j < n; j++) {
        if (s[j].suspicious || s[j].pinned)
            continue;
        if (s[j].time > newest)
            newest = s[j].time;
        if (o[j].rank < o[i].rank) {
            newer_visible++;
            newer_good += !s[j].incomplete;
        }
    }
    if (ret_rules_empty(r))
        reasons |= RET_NO_RULES;
    if ((int64_t)newer_visible < r->keep_last)
        reasons |= RET_LAST;
    if (r->keep_within > 0 && s[i].time >= newest - r->keep_within)
        reasons |= RET_WITHIN;
    for (int p = 0; p < 3; p++) {
        int64_t distinct_newer = 0;
        for (size_t j = 0; j < n; j++)
            if (o[j].heads[p] && o[j].rank < o[i].rank)
                distinct_newer++;
        if (o[i].heads[p] && distinct_newer < want[p])
            reasons |= period_reason[p];
    }
    if (!s[i].incomplete && newer_good < 2)
        reasons |= RET_NEWEST_GOOD;
    return reasons;
}

static void random_history(struct ret_snapshot *s, char (*ids)[16], size_t n, int64_t base,
                           int64_t span)
{
    for (size_t i = 0; i < n; i++) {
        /* Few distinct ids and coarse times, so ties and shared periods are common. */
        snprintf(ids[i], 16, "id%03zu", (size_t)rng_range(0, 999));
        for (size_t j = 0; j < i; j++) {
            if (strcmp(ids[i], ids[j]) == 0) {
                snprintf(ids[i], 16, "u%zu", i); /* keep ids unique */
                break;
            }
        }
        s[i].id = ids[i];
        s[i].time = base + rng_range(0, span / 1800) * 1800 + (rng() % 4 == 0 ? 0 : 1799);
        s[i].incomplete = rng() % 4 == 0;
        s[i].suspicious = rng() % 6 == 0;
        s[i].pinned = rng() % 7 == 0;
    }
}

static void random_rules(struct policy_retention *r)
{
    memset(r, 0, sizeof(*r));
    if (rng() % 7 == 0)
        return; /* no rules at all */
    if (rng() % 2)
        r->keep_last = rng_range(1, 8);
    if (rng() % 3 == 0)
        r->keep_within = rng_range(1, 20 * 24) * 3600 + (rng() % 2 ? 0 : 1799);
    if (rng() % 2)
        r->keep_daily = rng_range(1, 10);
    if (rng() % 2)
        r->keep_weekly = rng_range(1, 6);
    if (rng() % 2)
        r->keep_monthly = rng_range(1, 4);
}

static void check_properties(const char *zone_name, uint64_t seed, int rounds)
{
    enum { MAXN = 48 };
    struct ret_snapshot s[MAXN], shuffled[MAXN];
    struct ret_decision d[MAXN], d2[MAXN];
    struct oracle_snap o[MAXN];
    char ids[MAXN][16];
    struct util_err err = {0};
    struct tz_zone *zone = zone_name ? load_zone(zone_name) : tz_zone_utc();
    const char *old_tz = getenv("TZ");
    char *saved_tz = old_tz ? util_strdup(old_tz) : NULL;

    /* The oracle's zone: glibc reads the same tz database through TZ. */
    setenv("TZ", zone_name ? zone_name : "UTC", 1);
    tzset();
    rng_state = seed;
    for (int round = 0; round < rounds; round++) {
        size_t n = (size_t)rng_range(0, MAXN);
        struct policy_retention r;
        /* Histories around the year's end and Kyiv's DST changes. */
        static const char *const bases[] = {"2026-03-20T00:00:00Z", "2026-10-18T00:00:00Z",
                                            "2026-12-15T00:00:00Z", "2027-01-01T00:00:00Z"};
        int64_t base = parse_time(bases[rng() % 4]);
        size_t nonsus = 0, kept_last = 0;

        random_history(s, ids, n, base, (int64_t)rng_range(1, 90) * 86400);
        random_rules(&r);
        assert_int_equal(ret_evaluate(s, n, &r, zone, d, &err), 0);
        oracle_prepare(s, n, o);

        /* kept U forgotten = input, no duplicates: the indices are a permutation. */
        bool *seen = util_calloc(n + 1, 1);
        for (size_t i = 0; i < n; i++) {
            assert_true(d[i].index < n);
            assert_false(seen[d[i].index]);
            seen[d[i].index] = true;
            assert_int_equal(d[i].keep, d[i].reasons != 0);
            /* Newest first. */
            if (i > 0) {
                const struct ret_snapshot *a = &s[d[i - 1].index], *b = &s[d[i].index];
                assert_true(a->time > b->time || (a->time == b->time && strcmp(a->id, b->id) > 0));
            }
        }
        free(seen);

        size_t good_seen = 0;
        for (size_t i = 0; i < n; i++) {
            const struct ret_snapshot *x = &s[d[i].index];
            /* Suspicious or pinned: always kept, for that reason only. */
            if (x->suspicious || x->pinned)
                assert_int_equal(d[i].reasons, (x->suspicious ? RET_SUSPICIOUS : 0u) |
                                                   (x->pinned ? RET_PINNED : 0u));
            else
                nonsus++;
            /* The two newest good (not pinned: a pin takes no place): always kept. */
            if (!x->suspicious && !x->pinned && !x->incomplete && good_seen++ < 2)
                assert_true(d[i].keep && (d[i].reasons & RET_NEWEST_GOOD));
            if (d[i].keep)
                kept_last += (d[i].reasons & RET_LAST) != 0;
            /* The slow model agrees on every reason. */
            unsigned want = oracle_reasons(s, o, n, d[i].index, &r);
            if (d[i].reasons != want)
                fail_msg("seed %llu round %d: %s has reasons 0x%x, the model says 0x%x",
                         (unsigned long long)seed, round, x->id, d[i].reasons, want);
        }
        /* keepLast N keeps at least min(N, visible). */
        assert_int_equal((int64_t)kept_last,
                         r.keep_last < (int64_t)nonsus ? r.keep_last : (int64_t)nonsus);

        /* The result does not depend on the input order. */
        memcpy(shuffled, s, n * sizeof(s[0]));
        for (size_t i = n; i > 1; i--) {
            size_t j = (size_t)(rng() % i);
            struct ret_snapshot t = shuffled[i - 1];
            shuffled[i - 1] = shuffled[j];
            shuffled[j] = t;
        }
        assert_int_equal(ret_evaluate(shuffled, n, &r, zone, d2, &err), 0);
        for (size_t i = 0; i < n; i++) {
            assert_string_equal(shuffled[d2[i].index].id, s[d[i].index].id);
            assert_int_equal(d2[i].reasons, d[i].reasons);
        }
    }
    if (saved_tz) {
        setenv("TZ", saved_tz, 1);
        free(saved_tz);
    } else {
        unsetenv("TZ");
    }
    tzset();
    tz_zone_free(zone);
}

static void test_properties_utc(void **state)
{
    check_properties(NULL, 0x9e3779b97f4a7c15ull, 400);
}

static void test_properties_kyiv(void **state)
{
    check_properties("Europe/Kyiv", 0xd1b54a32d192ed03ull, 400);
}

static void test_properties_lord_howe(void **state)
{
    /* A 30-minute DST shift, and an offset that is not a whole hour. */
    check_properties("Australia/Lord_Howe", 0x2545f4914f6cdd1dull, 200);
}

static void test_large_history_is_sorted_and_complete(void **state)
{
    /* 20,000 snapshots in random order: the sort path (not the presorted one). */
    enum { N = 20000 };
    struct ret_snapshot *s = util_calloc(N, sizeof(*s));
    struct ret_decision *d = util_calloc(N, sizeof(*d));
    char(*ids)[16] = util_calloc(N, 16);
    struct util_err err = {0};
    struct policy_retention r = {
        .keep_last = 10, .keep_daily = 30, .keep_weekly = 12, .keep_monthly = 24};
    size_t kept = 0;
    rng_state = 42;
    for (size_t i = 0; i < N; i++) {
        snprintf(ids[i], 16, "s%06zu", i);
        s[i] = (struct ret_snapshot){ids[i], 1700000000 + (int64_t)(rng() % (3 * 365 * 86400)),
                                     false, false, false};
    }
    assert_int_equal(ret_evaluate(s, N, &r, NULL, d, &err), 0);
    for (size_t i = 0; i < N; i++) {
        if (i > 0)
            assert_true(s[d[i - 1].index].time >= s[d[i].index].time);
        kept += d[i].keep;
    }
    /* 10 last + 30 days + up to 12 weeks + 24 months, overlapping at the top. */
    assert_true(kept >= 30 + 24 - 2 && kept <= 10 + 30 + 12 + 24);
    free(ids);
    free(d);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_last),
        cmocka_unit_test(test_keep_within_inclusive_boundary),
        cmocka_unit_test(test_keep_within_anchor_is_newest_snapshot_not_clock),
        cmocka_unit_test(test_keep_within_anchor_skips_suspicious),
        cmocka_unit_test(test_keep_within_anchor_may_be_incomplete),
        cmocka_unit_test(test_keep_daily_r1),
        cmocka_unit_test(test_keep_daily_host_off_three_weeks),
        cmocka_unit_test(test_keep_weekly_iso_week_across_new_year),
        cmocka_unit_test(test_keep_weekly_monday_first),
        cmocka_unit_test(test_keep_monthly_in_zone_r3),
        cmocka_unit_test(test_daily_2330_utc_is_tomorrow_in_kyiv),
        cmocka_unit_test(test_daily_across_dst_change),
        cmocka_unit_test(test_daily_distinct_labels_not_runs),
        cmocka_unit_test(test_keep_monthly_r10_seed_example),
        cmocka_unit_test(test_no_oldest_snapshot_rule_r8),
        cmocka_unit_test(test_suspicious_kept_and_invisible_r4),
        cmocka_unit_test(test_pinned_takes_no_slot),
        cmocka_unit_test(test_pinned_oldest_survives_every_rule),
        cmocka_unit_test(test_pinned_with_other_marks_and_no_rules),
        cmocka_unit_test(test_unpinned_is_ruled_again),
        cmocka_unit_test(test_suspicious_in_the_middle_of_daily_buckets),
        cmocka_unit_test(test_incomplete_newest_r5),
        cmocka_unit_test(test_ten_incomplete_in_a_row),
        cmocka_unit_test(test_equal_times_ordered_by_id_r7),
        cmocka_unit_test(test_equal_times_bytewise_ids),
        cmocka_unit_test(test_no_rules_keeps_everything),
        cmocka_unit_test(test_every_reason_reported),
        cmocka_unit_test(test_two_newest_good_whatever_the_rules),
        cmocka_unit_test(test_incomplete_and_suspicious_is_suspicious),
        cmocka_unit_test(test_empty_and_single),
        cmocka_unit_test(test_extreme_times),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_properties_utc),
        cmocka_unit_test(test_properties_kyiv),
        cmocka_unit_test(test_properties_lord_howe),
        cmocka_unit_test(test_large_history_is_sorted_and_complete),
    };
    return cmocka_run_group_tests(tests, setup_db, teardown_db);
}
