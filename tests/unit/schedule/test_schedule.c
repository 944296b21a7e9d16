/*
 * schedule: the slot rules of docs/schedule.md on the page's examples and on 56
 * vectors around daylight saving transitions (real zones from the system's tz
 * database), a brute-force reference walked minute by minute over random zones,
 * expressions and starts, the jitter hash, the catch-up decision ("Missed slots and
 * catch-up") and the alert limit and overdue rule ("The alert limit: when a host is
 * overdue"). Time is always an argument: nothing sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "schedule/schedule.h"

static struct tz_db *db;
static struct {
    char *name;
    struct tz_zone *z;
} zones[600];
static size_t nzones;

/* Loads a zone once per run; the group teardown frees them. */
static const struct tz_zone *zone(const char *name)
{
    struct util_err err = {0};
    struct tz_zone *z;
    for (size_t i = 0; i < nzones; i++)
        if (strcmp(zones[i].name, name) == 0)
            return zones[i].z;
    if (tz_zone_load(&z, db, name, &err) != 0)
        fail_msg("cannot load %s: %s", name, err.msg);
    assert_true(nzones < sizeof(zones) / sizeof(zones[0]));
    zones[nzones].name = util_strdup(name);
    zones[nzones].z = z;
    nzones++;
    return z;
}

static int setup(void **state)
{
    struct util_err err = {0};
    if (tz_db_open(&db, NULL, &err) != 0) {
        fprintf(stderr, "cannot open the zoneinfo directory: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    for (size_t i = 0; i < nzones; i++) {
        tz_zone_free(zones[i].z);
        free(zones[i].name);
    }
    nzones = 0;
    tz_db_close(db);
    return 0;
}

static int64_t utc(const char *s)
{
    int64_t t;
    struct util_err err = {0};
    if (util_parse_rfc3339(s, &t, &err) != 0)
        fail_msg("bad time in test: %s", s);
    return t;
}

static struct sched make(const char *zname, const char *cron_text)
{
    struct cron_expr e;
    struct util_err err = {0};
    struct sched s;
    if (cron_parse(&e, cron_text, &err) != 0)
        fail_msg("cron_parse(\"%s\"): %s", cron_text, err.msg);
    sched_init(&s, &e, zone(zname));
    return s;
}

/* "2026-03-29T04:00+03:00": the wall clock at instant t, and the offset. */
static void fmt_local(const struct tz_zone *z, int64_t t, char *buf, size_t size)
{
    int32_t off = tz_offset_at(z, t);
    struct util_civil c;
    util_civil_from_seconds(t + off, &c);
    int32_t a = off < 0 ? -off : off;
    snprintf(buf, size, "%04lld-%02u-%02uT%02u:%02u%c%02d:%02d", (long long)c.year, c.month, c.day,
             c.hour, c.minute, off < 0 ? '-' : '+', a / 3600, a % 3600 / 60);
}

/* "2026-03-29T03:30": a local wall-clock time. */
static void fmt_wall(int64_t local, char *buf, size_t size)
{
    struct util_civil c;
    util_civil_from_seconds(local, &c);
    snprintf(buf, size, "%04lld-%02u-%02uT%02u:%02u", (long long)c.year, c.month, c.day, c.hour,
             c.minute);
}

static const char *note_name(enum sched_note n)
{
    return n == SCHED_NOTE_SHIFTED ? " shifted" : n == SCHED_NOTE_REPEATED ? " repeated" : "";
}

/* The runs of the slots with instants in [from, to), as "LOCAL+OFF[ note]; ...". */
static char *runs(const struct sched *s, int64_t from, int64_t to)
{
    struct util_buf b;
    struct sched_slot slot;
    int64_t t = from - 1;
    util_buf_init(&b);
    util_buf_puts(&b, "");
    while (sched_next(s, t, &slot) == 0 && slot.at < to) {
        char buf[64];
        fmt_local(s->zone, slot.at, buf, sizeof(buf));
        util_buf_printf(&b, "%s%s%s", b.len ? "; " : "", buf, note_name(slot.note));
        t = slot.at;
    }
    return util_buf_steal(&b);
}

static void check_runs(const char *zname, const char *cron_text, const char *from, const char *to,
                       const char *want)
{
    struct sched s = make(zname, cron_text);
    char *got = runs(&s, utc(from), utc(to));
    if (strcmp(got, want) != 0)
        fail_msg("%s \"%s\" %s..%s\n got:  %s\n want: %s", zname, cron_text, from, to, got, want);
    free(got);
}

static void test_page_examples(void **state)
{
    struct sched s = make("Europe/Kyiv", "30 3 * * *");
    struct sched_slot sl;
    char buf[64];

    /* Kyiv 2026-03-29: 03:30 does not exist; the slot runs at 04:00, not 04:30. */
    assert_int_equal(sched_next(&s, utc("2026-03-28T12:00:00Z"), &sl), 0);
    fmt_wall(sl.local, buf, sizeof(buf));
    assert_string_equal(buf, "2026-03-29T03:30");
    assert_int_equal(sl.at, utc("2026-03-29T01:00:00Z"));
    assert_int_equal(sl.note, SCHED_NOTE_SHIFTED);
    fmt_local(s.zone, sl.at, buf, sizeof(buf));
    assert_string_equal(buf, "2026-03-29T04:00+03:00");
    assert_string_equal(tz_abbrev_at(s.zone, sl.at), "EEST");

    /* Kyiv 2026-10-25: 03:30 happens twice; only the first runs. */
    assert_int_equal(sched_next(&s, utc("2026-10-24T12:00:00Z"), &sl), 0);
    fmt_wall(sl.local, buf, sizeof(buf));
    assert_string_equal(buf, "2026-10-25T03:30");
    assert_int_equal(sl.at, utc("2026-10-25T00:30:00Z"));
    assert_int_equal(sl.note, SCHED_NOTE_REPEATED);
    assert_string_equal(tz_abbrev_at(s.zone, sl.at), "EEST");
    assert_int_equal(sched_next(&s, sl.at, &sl), 0);
    assert_int_equal(sl.at, utc("2026-10-26T01:30:00Z"));
    assert_int_equal(sl.note, SCHED_NOTE_NONE);
    /* Asked from inside the second 03:00-03:59 (a restart at 03:10 EET): not the second 03:30. */
    assert_int_equal(sched_next(&s, utc("2026-10-25T01:10:00Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2026-10-26T01:30:00Z"));

    /* Lord Howe 2026-10-04: clocks go from 02:00 to 02:30; 02:15 runs at 02:30. */
    s = make("Australia/Lord_Howe", "15 2 * * *");
    assert_int_equal(sched_next(&s, utc("2026-10-03T12:00:00Z"), &sl), 0);
    fmt_wall(sl.local, buf, sizeof(buf));
    assert_string_equal(buf, "2026-10-04T02:15");
    assert_int_equal(sl.at, utc("2026-10-03T15:30:00Z"));
    fmt_local(s.zone, sl.at, buf, sizeof(buf));
    assert_string_equal(buf, "2026-10-04T02:30+11:00");

    /* New York @hourly on 2026-11-01: 00:00 EDT, 01:00 EDT, then 02:00 EST; no second 01:00. */
    s = make("America/New_York", "@hourly");
    static const char *const want[][2] = {{"2026-11-01T04:00:00Z", "EDT"},
                                          {"2026-11-01T05:00:00Z", "EDT"},
                                          {"2026-11-01T07:00:00Z", "EST"}};
    int64_t t = utc("2026-11-01T03:30:00Z");
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(sched_next(&s, t, &sl), 0);
        assert_int_equal(sl.at, utc(want[i][0]));
        assert_string_equal(tz_abbrev_at(s.zone, sl.at), want[i][1]);
        assert_int_equal(sl.note, i == 1 ? SCHED_NOTE_REPEATED : SCHED_NOTE_NONE);
        t = sl.at;
    }
}

static const struct {
    const char *id, *zone, *cron, *from, *to, *want;
} vectors[] = {
#include "vectors.inc"
};

static void test_semantics_vectors(void **state)
{
    /*
     * H3 and H5 use Havana's fall-back of 2026-11-01, which tzdata 2026f removed
     * (Cuba stays on daylight time). With such data they are checked on the same
     * fold a year earlier (2025-11-02 05:00Z, 01:00 CDT -> 00:00 CST) instead.
     */
    const struct tz_zone *havana = zone("America/Havana");
    bool havana_2026_fold = tz_offset_at(havana, utc("2026-11-01T05:00:00Z")) <
                            tz_offset_at(havana, utc("2026-11-01T04:59:59Z"));
    assert_int_equal(sizeof(vectors) / sizeof(vectors[0]), 56);
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        if (!havana_2026_fold && strcmp(vectors[i].zone, "America/Havana") == 0 &&
            strncmp(vectors[i].from, "2026-1", 6) == 0)
            continue; /* replaced below */
        struct sched s = make(vectors[i].zone, vectors[i].cron);
        char *got = runs(&s, utc(vectors[i].from), utc(vectors[i].to));
        if (strcmp(got, vectors[i].want) != 0)
            fail_msg("vector %s (%s \"%s\"):\n got:  %s\n want: %s", vectors[i].id, vectors[i].zone,
                     vectors[i].cron, got, vectors[i].want);
        free(got);
    }
    if (!havana_2026_fold) {
        /* H3 and H5 on the 2025 fold: midnight repeats on Sunday 2025-11-02. */
        check_runs("America/Havana", "@daily", "2025-10-31T12:00:00Z", "2025-11-03T12:00:00Z",
                   "2025-11-01T00:00-04:00; 2025-11-02T00:00-04:00 repeated; "
                   "2025-11-03T00:00-05:00");
        check_runs("America/Havana", "@hourly", "2025-11-02T03:00:00Z", "2025-11-02T07:00:00Z",
                   "2025-11-01T23:00-04:00; 2025-11-02T00:00-04:00 repeated; "
                   "2025-11-02T01:00-05:00");
    }
    /* G1: the Saturday 23:30 slot runs on Sunday 00:00 and keeps its Saturday identity. */
    struct sched s = make("America/Nuuk", "30 23 * * 6");
    struct sched_slot sl;
    char buf[32];
    assert_int_equal(sched_next(&s, utc("2026-03-28T12:00:00Z"), &sl), 0);
    fmt_wall(sl.local, buf, sizeof(buf));
    assert_string_equal(buf, "2026-03-28T23:30");
    assert_int_equal(sl.at, utc("2026-03-29T01:00:00Z"));
}

static void test_other_zones(void **state)
{
    /* Cairo: midnight does not exist on Friday 2026-04-24; Thursday 23:00-23:59 repeats on 10-29.
     */
    check_runs("Africa/Cairo", "@daily", "2026-04-22T12:00:00Z", "2026-04-25T12:00:00Z",
               "2026-04-23T00:00+02:00; 2026-04-24T01:00+03:00 shifted; 2026-04-25T00:00+03:00");
    check_runs("Africa/Cairo", "30 23 * * 4", "2026-10-20T00:00:00Z", "2026-11-06T00:00:00Z",
               "2026-10-22T23:30+03:00; 2026-10-29T23:30+03:00 repeated; 2026-11-05T23:30+02:00");
    check_runs("Africa/Cairo", "*/30 * * * *", "2026-04-23T21:00:00Z", "2026-04-23T22:31:00Z",
               "2026-04-23T23:00+02:00; 2026-04-23T23:30+02:00; 2026-04-24T01:00+03:00; "
               "2026-04-24T01:30+03:00");
    /* Dublin: negative DST in the file (winter is the "daylight" time), same wall clock as London.
     */
    check_runs("Europe/Dublin", "30 1 * * *", "2026-03-28T00:00:00Z", "2026-03-30T12:00:00Z",
               "2026-03-28T01:30+00:00; 2026-03-29T02:00+01:00 shifted; 2026-03-30T01:30+01:00");
    check_runs("Europe/Dublin", "30 1 * * *", "2026-10-24T00:00:00Z", "2026-10-26T12:00:00Z",
               "2026-10-24T01:30+01:00; 2026-10-25T01:30+01:00 repeated; 2026-10-26T01:30+00:00");
    const struct tz_zone *dub = zone("Europe/Dublin");
    assert_string_equal(tz_abbrev_at(dub, utc("2026-03-29T01:00:00Z")), "IST");
    assert_string_equal(tz_abbrev_at(dub, utc("2026-10-26T01:30:00Z")), "GMT");
    /* Chatham, April: 03:45 goes back to 02:45, so 03:00 repeats; the first is at +13:45. */
    check_runs("Pacific/Chatham", "0 3 * * *", "2026-04-03T12:00:00Z", "2026-04-06T12:00:00Z",
               "2026-04-04T03:00+13:45; 2026-04-05T03:00+13:45 repeated; 2026-04-06T03:00+12:45");
    check_runs("Pacific/Chatham", "*/30 * * * *", "2026-09-26T13:00:00Z", "2026-09-26T14:30:00Z",
               "2026-09-27T02:00+12:45; 2026-09-27T02:30+12:45; 2026-09-27T04:00+13:45");
    /* Troll: two hours forward; a fixed 02:00 runs at 03:00, a list of times skips. */
    check_runs("Antarctica/Troll", "0 2 * * *", "2026-03-28T12:00:00Z", "2026-03-29T12:00:00Z",
               "2026-03-29T03:00+02:00 shifted");
    check_runs("Antarctica/Troll", "0 1,2 * * *", "2026-03-28T12:00:00Z", "2026-03-30T12:00:00Z",
               "2026-03-30T01:00+02:00; 2026-03-30T02:00+02:00");
    /* Feb 29 in a DST zone, far past the file's last transition: 2096, then 2104. */
    check_runs("Europe/Kyiv", "0 0 29 2 *", "2096-01-01T00:00:00Z", "2104-12-31T00:00:00Z",
               "2096-02-29T00:00+02:00; 2104-02-29T00:00+02:00");
    /* The day rule in a zone: the 1st or a Monday (both restricted), across the spring gap. */
    check_runs("Europe/Kyiv", "30 3 1 * 0", "2026-03-20T00:00:00Z", "2026-04-06T00:00:00Z",
               "2026-03-22T03:30+02:00; 2026-03-29T04:00+03:00 shifted; 2026-04-01T03:30+03:00; "
               "2026-04-05T03:30+03:00");
    /* UTC and a fixed-offset zone never shift anything. */
    check_runs("UTC", "30 3 * * *", "2026-03-28T00:00:00Z", "2026-03-30T00:00:00Z",
               "2026-03-28T03:30+00:00; 2026-03-29T03:30+00:00");
    check_runs("Asia/Kathmandu", "0 0 * * *", "2026-03-28T00:00:00Z", "2026-03-30T00:00:00Z",
               "2026-03-29T00:00+05:45; 2026-03-30T00:00+05:45");
}

static void test_next_inside_second_occurrence(void **state)
{
    struct sched s = make("America/New_York", "*/30 * * * *");
    struct sched_slot sl;
    /* N7: from 01:10 EST (the second 01:xx) the next slot is 02:00 EST, never 01:30 EST. */
    assert_int_equal(sched_next(&s, utc("2026-11-01T06:10:00Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2026-11-01T07:00:00Z"));
    /* From the fold instant itself, and from its last second. */
    assert_int_equal(sched_next(&s, utc("2026-11-01T06:00:00Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2026-11-01T07:00:00Z"));
    assert_int_equal(sched_next(&s, utc("2026-11-01T05:59:59Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2026-11-01T07:00:00Z"));
    assert_int_equal(sched_next(&s, utc("2026-11-01T05:29:59Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2026-11-01T05:30:00Z"));
    assert_int_equal(sl.note, SCHED_NOTE_REPEATED);
    /* sched_prev from inside the second occurrence finds the first, which already ran. */
    assert_int_equal(sched_prev(&s, utc("2026-11-01T06:45:00Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2026-11-01T05:30:00Z"));
    assert_int_equal(sched_prev(&s, utc("2026-11-01T07:00:00Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2026-11-01T07:00:00Z"));
    assert_int_equal(sched_prev(&s, utc("2026-11-01T06:59:59Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2026-11-01T05:30:00Z"));
    /* A shifted slot found backwards. */
    s = make("Europe/Kyiv", "30 3 * * *");
    assert_int_equal(sched_prev(&s, utc("2026-03-29T12:00:00Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2026-03-29T01:00:00Z"));
    assert_int_equal(sl.note, SCHED_NOTE_SHIFTED);
    assert_int_equal(sched_prev(&s, utc("2026-03-29T00:59:59Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2026-03-28T01:30:00Z"));
}

struct skip_list {
    char text[512];
    size_t n;
};

static void skip_cb(int64_t local, int64_t transition, void *arg)
{
    struct skip_list *l = arg;
    char buf[32];
    size_t used = strlen(l->text);
    fmt_wall(local, buf, sizeof(buf));
    snprintf(l->text + used, sizeof(l->text) - used, "%s%s@%lld", l->n ? " " : "", buf,
             (long long)transition);
    l->n++;
}

static void test_skipped(void **state)
{
    struct skip_list l = {"", 0};
    struct sched s = make("America/New_York", "*/30 * * * *");
    char want[256];
    int64_t tr = utc("2026-03-08T07:00:00Z");

    assert_int_equal(
        sched_skipped(&s, utc("2026-03-01T00:00:00Z"), utc("2026-04-01T00:00:00Z"), skip_cb, &l),
        2);
    snprintf(want, sizeof(want), "2026-03-08T02:00@%lld 2026-03-08T02:30@%lld", (long long)tr,
             (long long)tr);
    assert_string_equal(l.text, want);
    /* The range is (from, to] on the transition instant. */
    assert_int_equal(sched_skipped(&s, tr, tr + 86400, NULL, NULL), 0);
    assert_int_equal(sched_skipped(&s, tr - 1, tr, NULL, NULL), 2);
    assert_int_equal(sched_skipped(&s, tr, tr - 5, NULL, NULL), 0);
    /* Fixed times are shifted, never skipped. */
    s = make("America/New_York", "30 2 * * *");
    assert_int_equal(sched_skipped(&s, tr - 1, tr, NULL, NULL), 0);
    /* Troll's two hours; Lord Howe's half hour; a fold skips nothing. */
    s = make("Antarctica/Troll", "*/30 * * * *");
    assert_int_equal(
        sched_skipped(&s, utc("2026-03-28T00:00:00Z"), utc("2026-03-30T00:00:00Z"), NULL, NULL), 4);
    s = make("Australia/Lord_Howe", "*/15 2 * * *");
    memset(&l, 0, sizeof(l));
    assert_int_equal(
        sched_skipped(&s, utc("2026-10-01T00:00:00Z"), utc("2026-10-05T00:00:00Z"), skip_cb, &l),
        2);
    assert_non_null(strstr(l.text, "2026-10-04T02:00@"));
    assert_non_null(strstr(l.text, "2026-10-04T02:15@"));
    assert_int_equal(
        sched_skipped(&s, utc("2026-04-01T00:00:00Z"), utc("2026-04-10T00:00:00Z"), NULL, NULL), 0);
}

static void test_change_of(void **state)
{
    struct sched s = make("Europe/Kyiv", "30 3 * * *");
    struct sched_slot sl;
    struct sched_change ch;
    char a[32], b[32];

    assert_int_equal(sched_next(&s, utc("2026-03-28T12:00:00Z"), &sl), 0);
    assert_int_equal(sched_change_of(&s, &sl, &ch), 0);
    assert_int_equal(ch.at, utc("2026-03-29T01:00:00Z"));
    fmt_wall(ch.local_before, a, sizeof(a));
    fmt_wall(ch.local_after, b, sizeof(b));
    assert_string_equal(a, "2026-03-29T03:00");
    assert_string_equal(b, "2026-03-29T04:00");
    assert_int_equal(sched_next(&s, utc("2026-10-24T12:00:00Z"), &sl), 0);
    assert_int_equal(sched_change_of(&s, &sl, &ch), 0);
    assert_int_equal(ch.at, utc("2026-10-25T01:00:00Z"));
    fmt_wall(ch.local_before, a, sizeof(a));
    fmt_wall(ch.local_after, b, sizeof(b));
    assert_string_equal(a, "2026-10-25T04:00");
    assert_string_equal(b, "2026-10-25T03:00");
    assert_int_equal(sched_next(&s, sl.at, &sl), 0);
    assert_int_equal(sched_change_of(&s, &sl, &ch), UTIL_ENOENT);
}

static void test_jitter(void **state)
{
    /*
     * printf 'lodestore-jitter\0ops/etc-and-home\0node-1' | sha256sum
     *   6586b77623524352...  -> 0x6586b77623524352 = 7315736362736567122
     *   7315736362736567122 mod 900 = 622, mod 86400 = 23122
     * printf 'lodestore-jitter\0ops/etc-and-home\0node-2' | sha256sum
     *   0dc5242452 1e1256... -> 0x0dc524245 21e1256 = 992239031320187478; mod 900 = 78
     * printf 'lodestore-jitter\0default/db\0worker-a' | sha256sum
     *   86217296fd8998ae...  -> 9665132268138109102; mod 900 = 802, mod 86400 = 3502
     *   (the top bit is set: the value must be read unsigned)
     */
    assert_int_equal(sched_jitter_offset("ops", "etc-and-home", "node-1", 900), 622);
    assert_int_equal(sched_jitter_offset("ops", "etc-and-home", "node-1", 86400), 23122);
    assert_int_equal(sched_jitter_offset("ops", "etc-and-home", "node-2", 900), 78);
    assert_int_equal(sched_jitter_offset("default", "db", "worker-a", 900), 802);
    assert_int_equal(sched_jitter_offset("default", "db", "worker-a", 86400), 3502);
    assert_int_equal(sched_jitter_offset("ops", "etc-and-home", "node-1", 0), 0);
    assert_int_equal(sched_jitter_offset("ops", "etc-and-home", "node-1", -5), 0);
    assert_int_equal(sched_jitter_offset("ops", "etc-and-home", "node-1", 1), 0);
    /* Offsets spread over the whole window: 2000 hosts land in all 15 one-minute buckets. */
    unsigned buckets[15] = {0};
    for (int i = 0; i < 2000; i++) {
        char host[32];
        snprintf(host, sizeof(host), "node-%d", i);
        int64_t o = sched_jitter_offset("ops", "etc-and-home", host, 900);
        assert_true(o >= 0 && o < 900);
        buckets[o / 60]++;
    }
    for (int i = 0; i < 15; i++)
        assert_true(buckets[i] > 80 && buckets[i] < 190); /* expected 133 each */
}

/* A host of the Kyiv policy of the page: 30 2 * * *, offset 7 minutes, 24h window. */
static struct sched_host host_state(void)
{
    struct sched_host h = {0};
    h.ready = true;
    h.node_joined = utc("2026-01-01T00:00:00Z");
    h.policy_created = utc("2026-01-02T00:00:00Z");
    h.schedule_changed = h.policy_created;
    h.offset = 420;
    h.catch_up_window = 86400;
    return h;
}

static void test_decide_offline_three_days(void **state)
{
    struct sched s = make("Europe/Kyiv", "30 2 * * *");
    struct sched_host h = host_state();
    struct sched_decision d;
    /* It ran on 06-01 (02:30 EEST = 23:30Z the day before), then went away for three days. */
    h.has_last_started = true;
    h.last_started_slot = utc("2026-05-31T23:30:00Z");
    h.ready = false;
    sched_decide(&s, &h, utc("2026-06-03T12:00:00Z"), &d);
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_NOT_READY);
    /* Back on 06-04 at 10:00Z: one catch-up for the last missed slot (06-04 02:30), not three. */
    h.ready = true;
    sched_decide(&s, &h, utc("2026-06-04T10:00:00Z"), &d);
    assert_true(d.run);
    assert_int_equal(d.reason, SCHED_RUN);
    assert_int_equal(d.slot.at, utc("2026-06-03T23:30:00Z"));
    assert_int_equal(d.run_time, utc("2026-06-03T23:37:00Z"));
    assert_int_equal(d.late, 10 * 3600 + 23 * 60);
    assert_int_equal(d.next_run, utc("2026-06-04T23:37:00Z"));
    /* Once it started, nothing more until the next slot. */
    h.last_started_slot = d.slot.at;
    sched_decide(&s, &h, utc("2026-06-04T10:05:00Z"), &d);
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_ALREADY_STARTED);
    /* With a one-hour window the last missed run is too old: nothing. */
    h.last_started_slot = utc("2026-05-31T23:30:00Z");
    h.catch_up_window = 3600;
    sched_decide(&s, &h, utc("2026-06-04T10:00:00Z"), &d);
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_TOO_LATE);
    assert_int_equal(d.slot.at, utc("2026-06-03T23:30:00Z"));
    /* The window is inclusive: exactly one hour late still runs. */
    sched_decide(&s, &h, utc("2026-06-04T00:37:00Z"), &d);
    assert_true(d.run);
    sched_decide(&s, &h, utc("2026-06-04T00:37:01Z"), &d);
    assert_int_equal(d.reason, SCHED_TOO_LATE);
}

static void test_decide_controller_down(void **state)
{
    struct sched s = make("Europe/Kyiv", "30 2 * * *");
    struct sched_host h = host_state();
    struct sched_decision d;
    h.has_last_started = true;
    h.last_started_slot = utc("2026-06-02T23:30:00Z");
    /* Just before the run time (slot + 7 min): yesterday's slot has run, nothing is due. */
    sched_decide(&s, &h, utc("2026-06-03T23:36:59Z"), &d);
    assert_int_equal(d.reason, SCHED_ALREADY_STARTED);
    assert_int_equal(d.next_run, utc("2026-06-03T23:37:00Z"));
    /* On the run time: run, 0 s late. */
    sched_decide(&s, &h, utc("2026-06-03T23:37:00Z"), &d);
    assert_true(d.run);
    assert_int_equal(d.late, 0);
    /* The controller was down from 23:00Z to 01:15Z: at restart the slot runs, once. */
    sched_decide(&s, &h, utc("2026-06-04T01:15:00Z"), &d);
    assert_true(d.run);
    assert_int_equal(d.slot.at, utc("2026-06-03T23:30:00Z"));
    assert_int_equal(d.late, 98 * 60);
    /* A second restart after the start was recorded does not run it again. */
    h.last_started_slot = d.slot.at;
    sched_decide(&s, &h, utc("2026-06-04T01:16:00Z"), &d);
    assert_int_equal(d.reason, SCHED_ALREADY_STARTED);
}

static void test_decide_repeated_hour(void **state)
{
    struct sched s = make("America/New_York", "30 1 * * *");
    struct sched_host h = host_state();
    struct sched_decision d;
    h.offset = 0;
    h.has_last_started = true;
    h.last_started_slot = utc("2026-10-31T05:30:00Z");
    /* The host was down across the first 01:30 (EDT, 05:30Z) and returns at 01:10 EST. */
    sched_decide(&s, &h, utc("2026-11-01T06:10:00Z"), &d);
    assert_true(d.run);
    assert_int_equal(d.slot.at, utc("2026-11-01T05:30:00Z"));
    assert_int_equal(d.slot.note, SCHED_NOTE_REPEATED);
    /* The second 01:30 (06:30Z) is no slot: after the catch-up nothing runs then. */
    h.last_started_slot = d.slot.at;
    sched_decide(&s, &h, utc("2026-11-01T06:31:00Z"), &d);
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_ALREADY_STARTED);
    assert_int_equal(d.next_run, utc("2026-11-02T06:30:00Z"));
    /* @hourly: back at 06:10Z, the slot missed is 01:00 EDT (05:00Z), once. */
    s = make("America/New_York", "@hourly");
    h.last_started_slot = utc("2026-11-01T04:00:00Z");
    sched_decide(&s, &h, utc("2026-11-01T06:10:00Z"), &d);
    assert_true(d.run);
    assert_int_equal(d.slot.at, utc("2026-11-01T05:00:00Z"));
    assert_int_equal(d.next_run, utc("2026-11-01T07:00:00Z"));
}

static void test_decide_anchors_and_running(void **state)
{
    struct sched s = make("Europe/Kyiv", "30 2 * * *");
    struct sched_host h = host_state();
    struct sched_decision d;
    /* The schedule changed at 10:00Z: this morning's slot predates it, so nothing is missed. */
    h.schedule_changed = utc("2026-06-04T10:00:00Z");
    sched_decide(&s, &h, utc("2026-06-04T10:05:00Z"), &d);
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_NOTHING_DUE);
    assert_false(d.has_slot);
    assert_int_equal(d.next_run, utc("2026-06-04T23:37:00Z"));
    /* The same for a policy created, or a node joined, after the slot. */
    h = host_state();
    h.policy_created = utc("2026-06-04T00:00:00Z");
    sched_decide(&s, &h, utc("2026-06-04T10:05:00Z"), &d);
    assert_int_equal(d.reason, SCHED_NOTHING_DUE);
    h = host_state();
    h.node_joined = utc("2026-06-03T23:30:01Z");
    sched_decide(&s, &h, utc("2026-06-04T10:05:00Z"), &d);
    assert_int_equal(d.reason, SCHED_NOTHING_DUE);
    /* A node that joined at the slot instant itself has the slot. */
    h.node_joined = utc("2026-06-03T23:30:00Z");
    sched_decide(&s, &h, utc("2026-06-04T10:05:00Z"), &d);
    assert_true(d.run);
    /* The previous backup still runs: wait; once it ends, the catch-up runs if in the window. */
    h = host_state();
    h.has_last_started = true;
    h.last_started_slot = utc("2026-06-02T23:30:00Z");
    h.backup_running = true;
    sched_decide(&s, &h, utc("2026-06-03T23:40:00Z"), &d);
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_RUNNING);
    h.backup_running = false;
    sched_decide(&s, &h, utc("2026-06-04T05:00:00Z"), &d);
    assert_true(d.run);
    assert_int_equal(d.slot.at, utc("2026-06-03T23:30:00Z"));
    /* Every reason has a sentence. */
    for (int r = SCHED_RUN; r <= SCHED_TOO_LATE; r++)
        assert_true(strlen(sched_reason_text((enum sched_reason)r)) > 10);
    assert_string_equal(sched_reason_text((enum sched_reason)99), "unknown");
}

/* The alert limit by walking every slot, for comparison with the day-jumping one. */
static int64_t naive_limit(const struct sched *s, int64_t jitter, int64_t at)
{
    struct sched_slot prev, cur;
    int64_t gap = 0;
    assert_int_equal(sched_next(s, at, &prev), 0);
    for (;;) {
        assert_int_equal(sched_next(s, prev.at, &cur), 0);
        if (cur.at - prev.at > gap)
            gap = cur.at - prev.at;
        if (cur.at > at + 366 * 86400)
            break;
        prev = cur;
    }
    return 2 * gap + jitter;
}

static void test_alert_limit(void **state)
{
    struct sched s = make("UTC", "30 2 * * *");
    int64_t at = utc("2026-06-01T00:00:00Z");
    /* The page: a daily UTC policy with 15m jitter: 48h15m. */
    assert_int_equal(sched_alert_limit(&s, 900, 0, at), 48 * 3600 + 900);
    /* A daily in a DST zone: the 25-hour day makes it 50h15m. */
    s = make("Europe/Kyiv", "30 2 * * *");
    assert_int_equal(sched_alert_limit(&s, 900, 0, at), 50 * 3600 + 900);
    s = make("Europe/Kyiv", "30 3 * * *"); /* 23.5 h, 23.5 h, 25 h */
    assert_int_equal(sched_alert_limit(&s, 900, 0, at), 50 * 3600 + 900);
    /* Feb 29: from 2026 the slots are 2028, then 2032: twice four years. */
    s = make("UTC", "0 0 29 2 *");
    assert_int_equal(sched_alert_limit(&s, 900, 0, at), 2 * 1461 * 86400LL + 900);
    /* From 2095 the window reaches 2104 across 2100, which is not a leap year: 16 years. */
    assert_int_equal(sched_alert_limit(&s, 0, 0, utc("2095-06-01T00:00:00Z")),
                     2 * (utc("2104-02-29T00:00:00Z") - utc("2096-02-29T00:00:00Z")));
    /* Every minute: 2 min + jitter in UTC; in Kyiv the October fold leaves 61 minutes. */
    s = make("UTC", "* * * * *");
    assert_int_equal(sched_alert_limit(&s, 900, 0, at), 120 + 900);
    s = make("Europe/Kyiv", "* * * * *");
    assert_int_equal(sched_alert_limit(&s, 0, 0, at), 2 * 61 * 60);
    /* Troll @hourly: the October fold makes a 3-hour gap. */
    s = make("Antarctica/Troll", "@hourly");
    assert_int_equal(sched_alert_limit(&s, 0, 0, at), 6 * 3600);
    /* maxAge overrides; no schedule and no maxAge: no limit. */
    assert_int_equal(sched_alert_limit(&s, 900, 36 * 3600, at), 36 * 3600);
    assert_int_equal(sched_alert_limit(NULL, 900, 0, at), SCHED_NO_LIMIT);
    assert_int_equal(sched_alert_limit(NULL, 0, 7 * 86400, at), 7 * 86400);
    /* The day jump gives the same answer as walking every slot. */
    static const char *const zs[] = {"UTC",
                                     "Europe/Kyiv",
                                     "Antarctica/Troll",
                                     "Australia/Lord_Howe",
                                     "America/New_York",
                                     "Pacific/Chatham"};
    static const char *const cs[] = {"*/10 * * * *", "@hourly",       "*/20 1-3 * * *",
                                     "0,30 3 * * *", "5 0-4 * * 1-5", "15,45 */2 * * *",
                                     "0 0 * * *",    "*/30 2 * * 0"};
    for (size_t i = 0; i < sizeof(zs) / sizeof(zs[0]); i++) {
        for (size_t j = 0; j < sizeof(cs) / sizeof(cs[0]); j++) {
            s = make(zs[i], cs[j]);
            int64_t got = sched_alert_limit(&s, 60, 0, at), want = naive_limit(&s, 60, at);
            if (got != want)
                fail_msg("alert limit %s \"%s\": %lld, walking gives %lld", zs[i], cs[j],
                         (long long)got, (long long)want);
        }
    }
}

static void test_overdue(void **state)
{
    int64_t limit = 48 * 3600 + 900, t0 = utc("2026-06-01T00:00:00Z");
    /* From the last success. */
    assert_false(sched_overdue(limit, true, t0, 0, 0, t0 + limit));
    assert_true(sched_overdue(limit, true, t0, 0, 0, t0 + limit + 1));
    /* Without one: the later of the enrolment and the policy's creation. */
    assert_false(sched_overdue(limit, false, 0, t0, t0 - 86400, t0 + limit));
    assert_true(sched_overdue(limit, false, 0, t0, t0 - 86400, t0 + limit + 1));
    assert_false(sched_overdue(limit, false, 0, t0 - 86400, t0, t0 + limit));
    assert_true(sched_overdue(limit, false, 0, t0 - 86400, t0, t0 + limit + 1));
    /* No limit: never. */
    assert_false(sched_overdue(SCHED_NO_LIMIT, true, 0, 0, 0, INT64_MAX / 2));
    /* A success counts, however old the enrolment or the policy. */
    assert_int_equal(sched_overdue_start(true, t0 - 5, t0, t0), t0 - 5);
}

/* When a host enrolled: each source, and which wins (docs/schedule.md, "The alert limit"). */
static void test_enrolled(void **state)
{
    int64_t node = utc("2025-01-01T00:00:00Z"), rec = utc("2026-05-01T00:00:00Z");
    int64_t seen = utc("2026-05-20T00:00:00Z"), now = utc("2026-06-01T00:00:00Z");
    /* Seen being selected: that moment, or a later recorded time (another replica's). */
    assert_int_equal(sched_enrolled(seen, 0, true, node, now), seen);
    assert_int_equal(sched_enrolled(seen, rec, true, node, now), seen);
    assert_int_equal(sched_enrolled(rec, seen, true, node, now), seen);
    assert_int_equal(sched_enrolled(seen, 0, false, node, now), seen);
    /* Not seen (a restart): the recorded time, whatever the node's age. */
    assert_int_equal(sched_enrolled(0, rec, true, node, now), rec);
    /* Times kept but none for this host: selected while nobody watched, so from now. */
    assert_int_equal(sched_enrolled(0, 0, true, node, now), now);
    /* Nothing kept at all (a policy from before the record): the node's creation. */
    assert_int_equal(sched_enrolled(0, 0, false, node, now), node);
    /* A node selected long after it joined is not overdue at once: its age starts at the
     * selection, later than the policy's creation. */
    int64_t limit = 48 * 3600 + 900, policy = utc("2026-01-01T00:00:00Z");
    int64_t start = sched_overdue_start(false, 0, sched_enrolled(seen, 0, true, node, now), policy);
    assert_int_equal(start, seen);
    assert_false(sched_overdue(limit, false, 0, seen, policy, seen + limit));
    assert_true(sched_overdue(limit, false, 0, node, policy, seen + 1));
}

static void test_errors(void **state)
{
    struct sched s = make("Europe/Kyiv", "30 3 * * *");
    struct sched_slot sl;
    assert_int_equal(sched_next(&s, INT64_MAX, &sl), UTIL_ERANGE);
    assert_int_equal(sched_next(&s, INT64_MIN, &sl), UTIL_ERANGE);
    assert_int_equal(sched_prev(&s, INT64_MAX, &sl), UTIL_ERANGE);
    assert_int_equal(sched_prev(&s, INT64_MIN, &sl), UTIL_ERANGE);
    /* An expression cron_parse would refuse: no slot ever. */
    struct cron_expr never = s.cron;
    never.mdays = 1u << 30;
    never.months = 1u << 2;
    never.mday_star = false;
    never.wday_star = true;
    sched_init(&s, &never, zone("Europe/Kyiv"));
    assert_int_equal(sched_next(&s, 0, &sl), UTIL_ENOENT);
    assert_int_equal(sched_prev(&s, 0, &sl), UTIL_ENOENT);
    assert_int_equal(sched_alert_limit(&s, 900, 0, 0), SCHED_NO_LIMIT);
    /* The zone's offset range is known: Kyiv has been at +1 (1941-43) and +4 (MSD). */
    s = make("Europe/Kyiv", "@daily");
    assert_int_equal(s.off_min, 3600);
    assert_int_equal(s.off_max, 4 * 3600);
    assert_int_equal(s.day_count, 1);
    s = make("UTC", "*/20 1,5 * * *");
    assert_int_equal(s.off_min, 0);
    assert_int_equal(s.off_max, 0);
    assert_int_equal(s.day_count, 6);
    assert_int_equal(s.day_first, 3600);
    assert_int_equal(s.day_last, 5 * 3600 + 40 * 60);
    assert_int_equal(s.day_max_gap, 5 * 3600 - 3600 - 40 * 60);
}

/* ---- the brute-force reference ---- */

static bool ref_match(const struct cron_expr *e, int64_t L)
{
    struct util_civil c;
    util_civil_from_seconds(L, &c);
    return ((e->minutes >> c.minute) & 1) && ((e->hours >> c.hour) & 1) &&
           cron_day_matches(e, c.year, c.month, c.day,
                            util_weekday_from_days(util_floor_div(L, 86400)));
}

struct ref_item {
    int64_t local, at;
    int kind; /* 0 an occurrence, 1 a gap candidate */
};

static struct ref_item *ref_items;
static size_t ref_n, ref_cap;

static void ref_add(int64_t local, int64_t at, int kind)
{
    ref_items = util_grow(ref_items, &ref_cap, ref_n + 1, sizeof(*ref_items));
    ref_items[ref_n++] = (struct ref_item){local, at, kind};
}

static int ref_cmp_local(const void *a, const void *b)
{
    const struct ref_item *x = a, *y = b;
    if (x->local != y->local)
        return x->local < y->local ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    return x->at < y->at ? -1 : x->at > y->at;
}

static int ref_cmp_at(const void *a, const void *b)
{
    const struct sched_slot *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->local < y->local ? -1 : x->local > y->local;
}

/*
 * Every slot with an instant in (T, T + W], found the slow way: walk the spans of
 * constant offset from T - 2 days to T + W + 2 days minute by minute of wall clock,
 * record every instant each matching local minute occurs at, and every matching
 * minute inside a gap; then apply the rules of docs/schedule.md ("Daylight saving time") as
 * written.
 */
static size_t ref_slots(const struct sched *s, int64_t T, int64_t W, struct sched_slot **out,
                        int64_t **skipped, size_t *nskipped)
{
    const struct tz_zone *z = s->zone;
    int64_t lo = T - 2 * 86400, hi = T + W + 2 * 86400, a = lo;
    int32_t off = tz_offset_at(z, lo);
    struct sched_slot *slots = NULL;
    size_t n = 0, cap = 0, scap = 0;

    ref_n = 0;
    *skipped = NULL;
    *nskipped = 0;
    for (;;) {
        int64_t next = tz_next_transition(z, a), b = next < hi ? next : hi;
        for (int64_t L = util_floor_div(a + off + 59, 60) * 60; L < b + off; L += 60)
            if (ref_match(&s->cron, L))
                ref_add(L, L - off, 0);
        if (next >= hi)
            break;
        int32_t noff = tz_offset_at(z, next);
        for (int64_t L = util_floor_div(next + off + 59, 60) * 60; L < next + noff; L += 60)
            if (ref_match(&s->cron, L))
                ref_add(L, next, 1);
        a = next;
        off = noff;
    }
    if (ref_n > 0)
        qsort(ref_items, ref_n, sizeof(*ref_items), ref_cmp_local);
    for (size_t i = 0; i < ref_n;) {
        size_t j = i, occ = 0;
        while (j < ref_n && ref_items[j].local == ref_items[i].local) {
            occ += ref_items[j].kind == 0;
            j++;
        }
        struct sched_slot sl = {ref_items[i].local, ref_items[i].at, SCHED_NOTE_NONE};
        bool is_slot = true;
        if (occ == 0) {
            /* Not on the clock anywhere near: a gap. Fixed times move to its end. */
            if (s->fixed) {
                sl.note = SCHED_NOTE_SHIFTED;
            } else {
                is_slot = false;
                if (ref_items[i].at > T && ref_items[i].at <= T + W) {
                    *skipped = util_grow(*skipped, &scap, *nskipped + 1, sizeof(**skipped));
                    (*skipped)[(*nskipped)++] = ref_items[i].local;
                }
            }
        } else if (occ > 1) {
            sl.note = SCHED_NOTE_REPEATED; /* the first occurrence sorts first */
        }
        if (is_slot) {
            slots = util_grow(slots, &cap, n + 1, sizeof(*slots));
            slots[n++] = sl;
        }
        i = j;
    }
    if (n > 0)
        qsort(slots, n, sizeof(*slots), ref_cmp_at);
    /* One run per instant (at a tie the earlier local time is the slot), inside the window. */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && slots[i - 1].at == slots[i].at)
            continue;
        if (slots[i].at > T && slots[i].at <= T + W)
            slots[k++] = slots[i];
    }
    *out = slots;
    return k;
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t rnd(void)
{
    uint64_t x = (rng += 0x9e3779b97f4a7c15ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static char **zone_names;
static size_t nzone_names;

/* Every zone the database lists (tzdata.zi "Z" lines). */
static void load_zone_names(void)
{
    char path[512], *data, *p;
    size_t len, cap = 0;
    struct util_err err = {0};
    snprintf(path, sizeof(path), "%s/tzdata.zi", tz_db_dir(db));
    if (util_read_file(path, &data, &len, &err) != 0)
        fail_msg("%s", err.msg);
    for (p = data; p != NULL && *p;) {
        char *eol = strchr(p, '\n');
        if (p[0] == 'Z' && p[1] == ' ') {
            char *end = strchr(p + 2, ' ');
            zone_names = util_grow(zone_names, &cap, nzone_names + 1, sizeof(*zone_names));
            zone_names[nzone_names++] = util_strndup(p + 2, (size_t)(end - (p + 2)));
        }
        p = eol ? eol + 1 : NULL;
    }
    free(data);
}

static const char *const prop_crons[] = {
    "* * * * *",         "*/30 * * * *", "@hourly",         "@daily",       "@weekly",
    "@monthly",          "30 3 * * *",   "0 2 * * *",       "15 2 * * *",   "30 1 * * *",
    "0,30 3 * * *",      "30 3,5 * * *", "*/7 1-4 * * *",   "45 23 * * 6",  "30 23 * * *",
    "0 0-3 * * *",       "59 23 * * *",  "0 12 13 * 5",     "0 0 */10 * 1", "20 0 * * *",
    "*/20 0-2,23 * * *", "0 0 1 * 0",    "10,40 0,1 * * *", "0 0 29 2 *",   "45 2 * * *",
};

/*
 * Compares every slot with an instant in (T, T + W] with the reference, checks the
 * properties on their own, and checks sched_next/sched_prev from random points of
 * the window against the same list. Returns the number of slots compared.
 */
static size_t compare_with_reference(const struct sched *s, const char *zname,
                                     const char *cron_text, int64_t T, int64_t W, size_t *notes)
{
    struct sched_slot *want, got;
    int64_t *want_skipped;
    size_t nwant_skipped, nwant = ref_slots(s, T, W, &want, &want_skipped, &nwant_skipped);
    int64_t t = T, prev_at = T;
    size_t i = 0;

    while (sched_next(s, t, &got) == 0 && got.at <= T + W) {
        char a[32], b[32];
        if (i >= nwant || got.at != want[i].at || got.local != want[i].local ||
            got.note != want[i].note) {
            fmt_wall(got.local, a, sizeof(a));
            if (i < nwant)
                fmt_wall(want[i].local, b, sizeof(b));
            fail_msg("%s \"%s\" from %lld: slot %zu is %s at %lld%s, the reference says %s "
                     "at %lld%s",
                     zname, cron_text, (long long)T, i, a, (long long)got.at, note_name(got.note),
                     i < nwant ? b : "nothing", i < nwant ? (long long)want[i].at : 0LL,
                     i < nwant ? note_name(want[i].note) : "");
        }
        /* The properties, stated on their own. */
        assert_true(got.at > prev_at);
        for (size_t k = 0; k < i; k++)
            assert_true(want[k].local != got.local);
        int64_t m;
        assert_int_equal(cron_next(&s->cron, got.local - 60, &m), 0);
        assert_int_equal(m, got.local);
        if (got.note == SCHED_NOTE_SHIFTED) {
            assert_true(s->fixed);
            assert_true(tz_offset_at(s->zone, got.at) > tz_offset_at(s->zone, got.at - 1));
        } else {
            assert_int_equal(got.at + tz_offset_at(s->zone, got.at), got.local);
        }
        if (got.note != SCHED_NOTE_NONE)
            (*notes)++;
        prev_at = t = got.at;
        i++;
    }
    if (i != nwant)
        fail_msg("%s \"%s\" from %lld: %zu slots, the reference has %zu", zname, cron_text,
                 (long long)T, i, nwant);
    /* From random points of the window (inside folds too): next and prev agree with the list. */
    for (int k = 0; k < 6; k++) {
        int64_t u = T + (int64_t)(rnd() % (uint64_t)W);
        size_t j = 0;
        while (j < nwant && want[j].at <= u)
            j++;
        if (j < nwant) {
            assert_int_equal(sched_next(s, u, &got), 0);
            if (got.at != want[j].at || got.local != want[j].local)
                fail_msg("%s \"%s\": sched_next(%lld) = %lld, the reference says %lld", zname,
                         cron_text, (long long)u, (long long)got.at, (long long)want[j].at);
        }
        if (j > 0) {
            assert_int_equal(sched_prev(s, u, &got), 0);
            if (got.at != want[j - 1].at || got.local != want[j - 1].local)
                fail_msg("%s \"%s\": sched_prev(%lld) = %lld, the reference says %lld", zname,
                         cron_text, (long long)u, (long long)got.at, (long long)want[j - 1].at);
        }
    }
    /* sched_prev(T) is the last slot at or before T. */
    struct sched_slot p;
    if (sched_prev(s, T, &p) == 0) {
        assert_true(p.at <= T);
        assert_int_equal(sched_next(s, p.at, &got), 0);
        assert_true(got.at > T);
    }
    size_t ns = sched_skipped(s, T, T + W, NULL, NULL);
    if (ns != nwant_skipped)
        fail_msg("%s \"%s\" from %lld: %zu skipped, the reference has %zu", zname, cron_text,
                 (long long)T, ns, nwant_skipped);
    free(want);
    free(want_skipped);
    return nwant;
}

static void ref_free(void)
{
    free(ref_items);
    ref_items = NULL;
    ref_cap = ref_n = 0;
}

static void test_against_reference(void **state)
{
    const char *env = getenv("LODE_PROPERTY_CASES");
    /* Under valgrind (tests/run.sh sets VALGRIND=1) a smaller sample keeps the run short. */
    long cases = env ? strtol(env, NULL, 10) : getenv("VALGRIND") ? 150 : 700;
    size_t compared = 0, near_change = 0, notes = 0;

    load_zone_names();
    assert_true(nzone_names > 300);
    for (long c = 0; c < cases; c++) {
        const char *zname = zone_names[rnd() % nzone_names];
        char cron_text[64];
        if (rnd() % 4 == 0)
            snprintf(cron_text, sizeof(cron_text), "%u %u-%u * * *", (unsigned)(rnd() % 60),
                     (unsigned)(rnd() % 3), (unsigned)(2 + rnd() % 22));
        else
            snprintf(cron_text, sizeof(cron_text), "%s",
                     prop_crons[rnd() % (sizeof(prop_crons) / sizeof(prop_crons[0]))]);
        struct sched s = make(zname, cron_text);
        /* Every real zone is simple; half the time take the path that proves the answer. */
        assert_true(s.simple);
        if (rnd() % 2)
            s.simple = false;
        int64_t y0 = utc("1900-01-01T00:00:00Z"), span = utc("2040-01-01T00:00:00Z") - y0;
        int64_t T = y0 + (int64_t)(rnd() % (uint64_t)span);
        static const int64_t widths[] = {3 * 3600, 86400, 3 * 86400};
        int64_t W = widths[rnd() % 3];
        if (rnd() % 3 != 0) {
            /* Most cases straddle a clock change, where the rules matter. */
            int64_t tr = tz_next_transition(s.zone, T);
            if (tr != INT64_MAX && tr < utc("2045-01-01T00:00:00Z")) {
                T = tr - (int64_t)(rnd() % (uint64_t)W) - (int64_t)(rnd() % 2);
                near_change++;
            }
        }
        compared += compare_with_reference(&s, zname, cron_text, T, W, &notes);
    }
    ref_free();
    for (size_t i = 0; i < nzone_names; i++)
        free(zone_names[i]);
    free(zone_names);
    zone_names = NULL;
    nzone_names = 0;
    /* The run must have exercised what it claims to. */
    assert_true(compared > (size_t)cases);
    assert_true(near_change > (size_t)cases / 3);
    assert_true(notes > 10);
}

/*
 * The database's own oddities: every clock change of two hours or more in any zone
 * since 1850 (Apia skipping 2011-12-30, Alaska repeating a day in 1867, Kwajalein
 * skipping 1993-08-21, double summer time, Troll), compared with the reference.
 */
static void test_large_changes(void **state)
{
    static const char *const crons[] = {"0 0 * * *",  "*/30 * * * *", "30 2 * * *",
                                        "0 12 * * 5", "15 * * * *",   "@hourly"};
    size_t changes = 0, compared = 0, notes = 0, seen = 0;
    const int64_t lo = utc("1850-01-01T00:00:00Z"), hi = utc("2040-01-01T00:00:00Z");

    load_zone_names();
    for (size_t i = 0; i < nzone_names; i++) {
        const struct tz_zone *z = zone(zone_names[i]);
        for (int64_t a = tz_next_transition(z, lo); a < hi; a = tz_next_transition(z, a)) {
            int32_t d = tz_offset_at(z, a) - tz_offset_at(z, a - 1);
            if (d > -7200 && d < 7200)
                continue;
            if (getenv("VALGRIND") && seen++ % 4 != 0)
                continue; /* a quarter of them under valgrind */
            const char *c = crons[changes % (sizeof(crons) / sizeof(crons[0]))];
            struct sched s = make(zone_names[i], c);
            assert_true(s.simple);
            s.simple = changes % 2 == 0;
            compared +=
                compare_with_reference(&s, zone_names[i], c, a - 30 * 3600, 60 * 3600, &notes);
            changes++;
        }
    }
    /* Apia: Friday 2011-12-30 never happened; a daily midnight keeps one run there. */
    struct sched s = make("Pacific/Apia", "0 0 * * *");
    struct sched_slot sl;
    char buf[32];
    assert_int_equal(sched_next(&s, utc("2011-12-30T09:00:00Z"), &sl), 0);
    fmt_wall(sl.local, buf, sizeof(buf));
    assert_string_equal(buf, "2011-12-30T00:00"); /* shifted to the 31st's midnight */
    assert_int_equal(sl.note, SCHED_NOTE_SHIFTED);
    assert_int_equal(sl.at, utc("2011-12-30T10:00:00Z"));
    assert_int_equal(sched_prev(&s, sl.at, &sl), 0);
    fmt_wall(sl.local, buf, sizeof(buf));
    assert_string_equal(buf, "2011-12-30T00:00"); /* the tie goes to the earlier local time */
    assert_int_equal(sched_next(&s, sl.at, &sl), 0);
    fmt_wall(sl.local, buf, sizeof(buf));
    assert_string_equal(buf, "2012-01-01T00:00");
    ref_free();
    for (size_t i = 0; i < nzone_names; i++)
        free(zone_names[i]);
    free(zone_names);
    zone_names = NULL;
    nzone_names = 0;
    assert_true(changes > (getenv("VALGRIND") ? 25u : 100u));
    assert_true(compared > 100);
}

/* ---- a zone the tz database does not have: a gap and a fold half an hour apart ---- */

static void put32(unsigned char **p, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        *(*p)++ = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char **p, uint64_t v)
{
    for (int i = 7; i >= 0; i--)
        *(*p)++ = (unsigned char)(v >> (8 * i));
}

struct fx_type {
    int32_t off;
    uint8_t isdst;
    uint8_t abbr; /* index into the abbreviation string */
};

/* A TZif version 2 file (RFC 8536): a minimal version 1 block, then the 64-bit data. */
static size_t tzif_build(unsigned char *buf, const int64_t *at, const uint8_t *idx, size_t n,
                         const struct fx_type *types, size_t ntypes, const char *abbrs,
                         size_t abbrs_len, const char *footer)
{
    unsigned char *p = buf;
    memcpy(p, "TZif2", 5);
    memset(p + 5, 0, 15);
    p += 20;
    put32(&p, 0), put32(&p, 0), put32(&p, 0), put32(&p, 0), put32(&p, 1), put32(&p, 4);
    put32(&p, 0);
    *p++ = 0, *p++ = 0;
    memcpy(p, "UTC", 4);
    p += 4;
    memcpy(p, "TZif2", 5);
    memset(p + 5, 0, 15);
    p += 20;
    put32(&p, 0), put32(&p, 0), put32(&p, 0), put32(&p, (uint32_t)n), put32(&p, (uint32_t)ntypes);
    put32(&p, (uint32_t)abbrs_len);
    for (size_t i = 0; i < n; i++)
        put64(&p, (uint64_t)at[i]);
    for (size_t i = 0; i < n; i++)
        *p++ = idx[i];
    for (size_t i = 0; i < ntypes; i++) {
        put32(&p, (uint32_t)types[i].off);
        *p++ = types[i].isdst;
        *p++ = types[i].abbr;
    }
    memcpy(p, abbrs, abbrs_len);
    p += abbrs_len;
    *p++ = '\n';
    memcpy(p, footer, strlen(footer));
    p += strlen(footer);
    *p++ = '\n';
    return (size_t)(p - buf);
}

static void test_pathological_zone(void **state)
{
    /*
     * AAA +0, BBB +1, CCC -1. 2020-03-01 02:00Z: 02:00 AAA -> 03:00 BBB (a gap); 02:30Z:
     * 03:30 BBB -> 01:30 CCC (a fold of two hours). Local 02:15 is skipped at 02:15Z and
     * then happens, once, at 03:15Z: a local time earlier than 03:15 that runs later
     * than the first 03:15. 2021-01-01 02:00Z: 02:00 AAA -> 01:00 CCC (a fold), then
     * 02:20Z: 01:20 CCC -> 03:20 BBB (a gap right after it). 2022-01-01: back to AAA.
     */
    static const struct fx_type types[] = {{0, 0, 0}, {3600, 1, 4}, {-3600, 0, 8}};
    const int64_t at[] = {utc("2020-03-01T02:00:00Z"), utc("2020-03-01T02:30:00Z"),
                          utc("2021-01-01T02:00:00Z"), utc("2021-01-01T02:20:00Z"),
                          utc("2022-01-01T00:00:00Z")};
    static const uint8_t idx[] = {1, 2, 2, 1, 0};
    unsigned char buf[512];
    size_t len = tzif_build(buf, at, idx, 5, types, 3, "AAA\0BBB\0CCC\0", 12, "AAA0");
    struct tz_zone *z;
    struct util_err err = {0};
    struct cron_expr e;
    struct sched s;
    struct sched_slot sl;
    size_t compared = 0, notes = 0;

    if (tz_zone_parse(&z, "Test/GapFold", buf, len, &err) != 0)
        fail_msg("the fixture does not parse: %s", err.msg);
    assert_int_equal(tz_offset_at(z, utc("2020-03-01T02:15:00Z")), 3600);
    assert_int_equal(tz_offset_at(z, utc("2020-03-01T03:15:00Z")), -3600);

    /* The example: from 02:15Z (03:15 BBB) the next "15 * * * *" slot is 02:15 at 03:15Z. */
    assert_int_equal(cron_parse(&e, "15 * * * *", &err), 0);
    sched_init(&s, &e, z);
    assert_false(s.simple); /* a two-hour fold half an hour after a gap */
    assert_int_equal(sched_next(&s, utc("2020-03-01T02:15:00Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2020-03-01T03:15:00Z"));
    assert_int_equal(sl.local, utc("2020-03-01T02:15:00Z")); /* local 02:15 */
    assert_int_equal(sl.note, SCHED_NOTE_NONE);
    /* And backwards from 03:20Z the last slot is that one, not 03:15 BBB at 02:15Z. */
    assert_int_equal(sched_prev(&s, utc("2020-03-01T03:20:00Z"), &sl), 0);
    assert_int_equal(sl.at, utc("2020-03-01T03:15:00Z"));

    static const char *const crons[] = {"15 * * * *", "*/10 * * * *", "15 2 * * *",
                                        "45 3 * * *", "30 1 * * *",   "*/20 0-4 * * *",
                                        "10 2 * * *", "25 3 * * *",   "@daily"};
    const int64_t around[] = {at[0], at[2]};
    for (size_t c = 0; c < sizeof(crons) / sizeof(crons[0]); c++) {
        assert_int_equal(cron_parse(&e, crons[c], &err), 0);
        sched_init(&s, &e, z);
        for (size_t k = 0; k < 2; k++)
            for (int64_t T = around[k] - 3 * 3600; T < around[k] + 3 * 3600; T += 5 * 60 + 7)
                compared +=
                    compare_with_reference(&s, "Test/GapFold", crons[c], T, 6 * 3600, &notes);
    }
    ref_free();
    assert_true(compared > 1000);
    assert_true(notes > 100);
    tz_zone_free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_examples),
        cmocka_unit_test(test_semantics_vectors),
        cmocka_unit_test(test_other_zones),
        cmocka_unit_test(test_next_inside_second_occurrence),
        cmocka_unit_test(test_skipped),
        cmocka_unit_test(test_change_of),
        cmocka_unit_test(test_jitter),
        cmocka_unit_test(test_decide_offline_three_days),
        cmocka_unit_test(test_decide_controller_down),
        cmocka_unit_test(test_decide_repeated_hour),
        cmocka_unit_test(test_decide_anchors_and_running),
        cmocka_unit_test(test_alert_limit),
        cmocka_unit_test(test_overdue),
        cmocka_unit_test(test_enrolled),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_pathological_zone),
        cmocka_unit_test(test_large_changes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
