/* Helpers shared by the tz unit tests (header-only: each test file is one binary). */
#ifndef LODE_TZ_TEST_H
#define LODE_TZ_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tz/tz.h"
#include "util/util.h"

/*
 * How much to thin the heavy sampling loops: 1 normally, 10 under valgrind
 * (tests/run.sh sets VALGRIND=1), which is 20 times slower and checks memory, not
 * coverage; the sanitizer pass runs every point.
 */
static inline int test_stride(void)
{
    const char *v = getenv("VALGRIND");
    return v != NULL && strcmp(v, "1") == 0 ? 10 : 1;
}

/* Seconds of a civil date-time, read as UTC or as a local wall clock alike. */
static inline int64_t civil(int64_t y, unsigned mo, unsigned d, unsigned h, unsigned mi)
{
    struct util_civil c = {y, mo, d, h, mi, 0};
    return util_seconds_from_civil(&c);
}

static inline struct tz_zone *load_system_zone(const char *name)
{
    struct tz_db *db = NULL;
    struct tz_zone *z = NULL;
    struct util_err err = {0};
    if (tz_db_open(&db, TZ_DEFAULT_DIR, &err) != 0)
        fail_msg("%s", err.msg);
    if (tz_zone_load(&z, db, name, &err) != 0)
        fail_msg("%s", err.msg);
    tz_db_close(db);
    return z;
}

/* Reads a whole file into memory (fails the test when it cannot). */
static inline unsigned char *slurp(const char *path, size_t *len)
{
    char *data = NULL;
    struct util_err err = {0};
    if (util_read_file(path, &data, len, &err) != 0)
        fail_msg("%s", err.msg);
    return (unsigned char *)data;
}

/*
 * Every instant tz_resolve_local() returns has the asked local time, and a gap
 * really is one: the returned instant is a transition that jumps over it.
 */
static inline void check_resolution(const struct tz_zone *z, int64_t local)
{
    struct tz_local r;
    tz_resolve_local(z, local, &r);
    switch (r.kind) {
    case TZ_LOCAL_UNIQUE:
        if (r.at[0] + tz_offset_at(z, r.at[0]) != local)
            fail_msg("%s: local %lld unique at %lld has offset %d", tz_zone_name(z),
                     (long long)local, (long long)r.at[0], tz_offset_at(z, r.at[0]));
        break;
    case TZ_LOCAL_REPEATED:
        if (!(r.at[0] < r.at[1]) || r.at[0] + tz_offset_at(z, r.at[0]) != local ||
            r.at[1] + tz_offset_at(z, r.at[1]) != local)
            fail_msg("%s: local %lld repeated at %lld and %lld is wrong", tz_zone_name(z),
                     (long long)local, (long long)r.at[0], (long long)r.at[1]);
        break;
    case TZ_LOCAL_GAP: {
        int64_t t = r.at[0];
        int32_t before = tz_offset_at(z, t - 1), after = tz_offset_at(z, t);
        if (!(t + before <= local && local < t + after))
            fail_msg("%s: local %lld gap at %lld (offsets %d then %d) is wrong", tz_zone_name(z),
                     (long long)local, (long long)t, before, after);
        break;
    }
    }
}

/* Fails unless local resolves to kind with these instants (at1 only when repeated). */
static inline void expect_local(const struct tz_zone *z, int64_t local, enum tz_local_kind kind,
                                int64_t at0, int64_t at1)
{
    struct tz_local r;
    tz_resolve_local(z, local, &r);
    char l[UTIL_TIME_BUF], a[UTIL_TIME_BUF], b[UTIL_TIME_BUF];
    util_format_utc(local, l, sizeof(l));
    util_format_utc(r.at[0], a, sizeof(a));
    util_format_utc(r.at[1], b, sizeof(b));
    if (r.kind != kind || r.at[0] != at0 || (kind == TZ_LOCAL_REPEATED && r.at[1] != at1))
        fail_msg("%s local %s: kind %d at %s %s", tz_zone_name(z), l, r.kind, a, b);
}

#endif
