/*
 * Zones compiled by zic from committed sources (the .zi files of tests/unit/tz/fixtures), so
 * the answers do not depend on the tzdata release of the machine:
 *  - the page's zones pinned at tzdata 2025b, with their 2026 transitions and the
 *    page's gap and repeated times (docs/schedule.md, "Daylight saving time");
 *  - every zone built with "zic -b fat" and "zic -b slim" gives the same answers
 *    (slim files rely on the footer for everything after the last rule change);
 *  - glibc's localtime_r reads the same files and agrees;
 *  - tz_resolve_local() checked at every local minute within 3 hours of every
 *    transition from 1970 to 2100.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tz/tz_test.h"

static char g_dir[64];

static const char *fixture_zones[] = {
    "Europe/Kyiv",        "Australia/Lord_Howe", "America/New_York", "America/Havana",
    "America/Santiago",   "Asia/Beirut",         "Atlantic/Azores",  "America/Nuuk",
    "Antarctica/Troll",   "Pacific/Chatham",     "Europe/Dublin",    "Australia/Sydney",
    "Pacific/Auckland",   "Africa/Cairo",        "Asia/Jerusalem",   "Test/Perm_DST",
    "Test/Neg_Two",       "Test/Late_Rules",     "Test/Ends_2090",   "Test/Starts_2040",
    "Test/Half_Midnight",
};
#define NZONES (sizeof(fixture_zones) / sizeof(fixture_zones[0]))

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void run_zic(const char *mode, const char *root)
{
    /* /usr/sbin is not on every user's PATH. */
    const char *zic = access("/usr/sbin/zic", X_OK) == 0 ? "/usr/sbin/zic" : "zic";
    char *cmd = util_asprintf("%s -b %s -d %s/%s %s/tests/unit/tz/fixtures/pinned-2025b.zi "
                              "%s/tests/unit/tz/fixtures/custom.zi",
                              zic, mode, g_dir, mode, root, root);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("%s failed (%d): zic (package libc-bin) is needed to build the fixtures", cmd, rc);
    free(cmd);
}

static int setup(void **state)
{
    const char *root = getenv("LODE_ROOT");
    if (root == NULL)
        root = ".";
    snprintf(g_dir, sizeof(g_dir), "/tmp/lode-tzfix-XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        return -1;
    run_zic("fat", root);
    run_zic("slim", root);
    return 0;
}

static int teardown(void **state)
{
    nftw(g_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static struct tz_zone *fixture(const char *mode, const char *name)
{
    struct tz_db *db = NULL;
    struct tz_zone *z = NULL;
    struct util_err err = {0};
    char *dir = util_asprintf("%s/%s", g_dir, mode);
    if (tz_db_open(&db, dir, &err) != 0 || tz_zone_load(&z, db, name, &err) != 0)
        fail_msg("%s", err.msg);
    tz_db_close(db);
    free(dir);
    return z;
}

static void test_fixtures_are_fat_and_slim(void **state)
{
    /* The two builds differ in size: slim files stop at the last rule change. */
    for (size_t i = 0; i < NZONES; i++) {
        struct stat a, b;
        char *fat = util_asprintf("%s/fat/%s", g_dir, fixture_zones[i]);
        char *slim = util_asprintf("%s/slim/%s", g_dir, fixture_zones[i]);
        assert_int_equal(stat(fat, &a), 0);
        assert_int_equal(stat(slim, &b), 0);
        if (strcmp(fixture_zones[i], "Test/Ends_2090") != 0)
            assert_true(a.st_size > b.st_size);
        free(fat);
        free(slim);
    }
}

static void compare_resolution(const struct tz_zone *a, const struct tz_zone *b, int64_t local)
{
    struct tz_local ra, rb;
    tz_resolve_local(a, local, &ra);
    tz_resolve_local(b, local, &rb);
    if (ra.kind != rb.kind || ra.at[0] != rb.at[0] ||
        (ra.kind == TZ_LOCAL_REPEATED && ra.at[1] != rb.at[1]))
        fail_msg("%s: local %lld resolves differently in fat and slim", tz_zone_name(a),
                 (long long)local);
}

/* Same transitions, offsets, abbreviations and resolutions from 1800 to 2500. */
static void test_fat_and_slim_agree(void **state)
{
    int64_t lo = civil(1800, 1, 1, 0, 0), hi = civil(2500, 1, 1, 0, 0);
    size_t transitions = 0;
    for (size_t i = 0; i < NZONES; i++) {
        struct tz_zone *fat = fixture("fat", fixture_zones[i]);
        struct tz_zone *slim = fixture("slim", fixture_zones[i]);
        int64_t ta = tz_next_transition(fat, lo), tb = tz_next_transition(slim, lo);
        while (ta < hi || tb < hi) {
            if (ta != tb)
                fail_msg("%s: fat has a transition at %lld, slim at %lld", fixture_zones[i],
                         (long long)ta, (long long)tb);
            for (int64_t d = -1; d <= 1 && transitions % (size_t)test_stride() == 0; d++) {
                assert_int_equal(tz_offset_at(fat, ta + d), tz_offset_at(slim, ta + d));
                assert_string_equal(tz_abbrev_at(fat, ta + d), tz_abbrev_at(slim, ta + d));
            }
            int64_t l = ta + tz_offset_at(fat, ta);
            for (int64_t d = -3 * 3600; d <= 3 * 3600; d += 600 * test_stride())
                compare_resolution(fat, slim, l + d);
            ta = tz_next_transition(fat, ta);
            tb = tz_next_transition(slim, tb);
            transitions++;
        }
        for (int64_t t = lo; t < hi; t += (86400 * 13 + 3607) * test_stride()) {
            assert_int_equal(tz_offset_at(fat, t), tz_offset_at(slim, t));
            compare_resolution(fat, slim, t);
        }
        tz_zone_free(fat);
        tz_zone_free(slim);
    }
    assert_true(transitions > 4000);
}

/* glibc reads the same fixture files; it must agree from 1900 to 2100. */
static void test_fixtures_against_glibc(void **state)
{
    static const char *modes[] = {"fat", "slim"};
    for (size_t m = 0; m < 2; m++) {
        for (size_t i = 0; i < NZONES; i++) {
            struct tz_zone *z = fixture(modes[m], fixture_zones[i]);
            char *tzvar = util_asprintf(":%s/%s/%s", g_dir, modes[m], fixture_zones[i]);
            setenv("TZ", tzvar, 1);
            tzset();
            free(tzvar);
            int64_t lo = civil(1900, 1, 1, 0, 0), hi = civil(2100, 1, 1, 0, 0);
            size_t k = 0;
            for (int64_t t = tz_next_transition(z, lo); t < hi; t = tz_next_transition(z, t)) {
                if (k++ % (size_t)test_stride() != 0)
                    continue;
                for (int64_t d = -1; d <= 1; d++) {
                    time_t tt = (time_t)(t + d);
                    struct tm tm;
                    assert_non_null(localtime_r(&tt, &tm));
                    if (tm.tm_gmtoff != tz_offset_at(z, t + d) ||
                        strcmp(tm.tm_zone, tz_abbrev_at(z, t + d)) != 0)
                        fail_msg("%s %s at %lld: %d %s, glibc %ld %s", modes[m], fixture_zones[i],
                                 (long long)(t + d), tz_offset_at(z, t + d), tz_abbrev_at(z, t + d),
                                 tm.tm_gmtoff, tm.tm_zone);
                }
            }
            for (int64_t t = lo; t < hi; t += (86400 * 5 + 1777) * test_stride()) {
                time_t tt = (time_t)t;
                struct tm tm;
                assert_non_null(localtime_r(&tt, &tm));
                if (tm.tm_gmtoff != tz_offset_at(z, t))
                    fail_msg("%s %s at %lld: %d, glibc %ld", modes[m], fixture_zones[i],
                             (long long)t, tz_offset_at(z, t), tm.tm_gmtoff);
            }
            tz_zone_free(z);
        }
    }
    unsetenv("TZ");
    tzset();
}

/* Every 2026 transition of the page's zones. */
struct transition_vector {
    const char *zone;
    int utc[5];    /* the instant, UTC: y m d h mi */
    int before[5]; /* the wall clock just before it, read in the old offset */
    int after[5];  /* the wall clock at it, in the new offset */
};

static const struct transition_vector vectors_2026[] = {
    {"Europe/Kyiv", {2026, 3, 29, 1, 0}, {2026, 3, 29, 3, 0}, {2026, 3, 29, 4, 0}},
    {"Europe/Kyiv", {2026, 10, 25, 1, 0}, {2026, 10, 25, 4, 0}, {2026, 10, 25, 3, 0}},
    {"Australia/Lord_Howe", {2026, 4, 4, 15, 0}, {2026, 4, 5, 2, 0}, {2026, 4, 5, 1, 30}},
    {"Australia/Lord_Howe", {2026, 10, 3, 15, 30}, {2026, 10, 4, 2, 0}, {2026, 10, 4, 2, 30}},
    {"America/New_York", {2026, 3, 8, 7, 0}, {2026, 3, 8, 2, 0}, {2026, 3, 8, 3, 0}},
    {"America/New_York", {2026, 11, 1, 6, 0}, {2026, 11, 1, 2, 0}, {2026, 11, 1, 1, 0}},
    {"America/Havana", {2026, 3, 8, 5, 0}, {2026, 3, 8, 0, 0}, {2026, 3, 8, 1, 0}},
    {"America/Havana", {2026, 11, 1, 5, 0}, {2026, 11, 1, 1, 0}, {2026, 11, 1, 0, 0}},
    {"America/Santiago", {2026, 4, 5, 3, 0}, {2026, 4, 5, 0, 0}, {2026, 4, 4, 23, 0}},
    {"America/Santiago", {2026, 9, 6, 4, 0}, {2026, 9, 6, 0, 0}, {2026, 9, 6, 1, 0}},
    {"Asia/Beirut", {2026, 3, 28, 22, 0}, {2026, 3, 29, 0, 0}, {2026, 3, 29, 1, 0}},
    {"Asia/Beirut", {2026, 10, 24, 21, 0}, {2026, 10, 25, 0, 0}, {2026, 10, 24, 23, 0}},
    {"Atlantic/Azores", {2026, 3, 29, 1, 0}, {2026, 3, 29, 0, 0}, {2026, 3, 29, 1, 0}},
    {"Atlantic/Azores", {2026, 10, 25, 1, 0}, {2026, 10, 25, 1, 0}, {2026, 10, 25, 0, 0}},
    {"America/Nuuk", {2026, 3, 29, 1, 0}, {2026, 3, 28, 23, 0}, {2026, 3, 29, 0, 0}},
    {"America/Nuuk", {2026, 10, 25, 1, 0}, {2026, 10, 25, 0, 0}, {2026, 10, 24, 23, 0}},
    {"Antarctica/Troll", {2026, 3, 29, 1, 0}, {2026, 3, 29, 1, 0}, {2026, 3, 29, 3, 0}},
    {"Antarctica/Troll", {2026, 10, 25, 1, 0}, {2026, 10, 25, 3, 0}, {2026, 10, 25, 1, 0}},
    {"Australia/Sydney", {2026, 4, 4, 16, 0}, {2026, 4, 5, 3, 0}, {2026, 4, 5, 2, 0}},
    {"Australia/Sydney", {2026, 10, 3, 16, 0}, {2026, 10, 4, 2, 0}, {2026, 10, 4, 3, 0}},
    {"Pacific/Auckland", {2026, 4, 4, 14, 0}, {2026, 4, 5, 3, 0}, {2026, 4, 5, 2, 0}},
    {"Pacific/Auckland", {2026, 9, 26, 14, 0}, {2026, 9, 27, 2, 0}, {2026, 9, 27, 3, 0}},
    {"Pacific/Chatham", {2026, 4, 4, 14, 0}, {2026, 4, 5, 3, 45}, {2026, 4, 5, 2, 45}},
    {"Pacific/Chatham", {2026, 9, 26, 14, 0}, {2026, 9, 27, 2, 45}, {2026, 9, 27, 3, 45}},
    {"Africa/Cairo", {2026, 4, 23, 22, 0}, {2026, 4, 24, 0, 0}, {2026, 4, 24, 1, 0}},
    {"Africa/Cairo", {2026, 10, 29, 21, 0}, {2026, 10, 30, 0, 0}, {2026, 10, 29, 23, 0}},
    {"Europe/Dublin", {2026, 3, 29, 1, 0}, {2026, 3, 29, 1, 0}, {2026, 3, 29, 2, 0}},
    {"Europe/Dublin", {2026, 10, 25, 1, 0}, {2026, 10, 25, 2, 0}, {2026, 10, 25, 1, 0}},
};

static int64_t civil5(const int v[5])
{
    return civil(v[0], (unsigned)v[1], (unsigned)v[2], (unsigned)v[3], (unsigned)v[4]);
}

static void test_2026_transitions(void **state)
{
    static const char *modes[] = {"fat", "slim"};
    size_t nv = sizeof(vectors_2026) / sizeof(vectors_2026[0]);
    for (size_t m = 0; m < 2; m++) {
        for (size_t i = 0; i < nv; i++) {
            const struct transition_vector *v = &vectors_2026[i];
            struct tz_zone *z = fixture(modes[m], v->zone);
            int64_t t = civil5(v->utc);
            if (tz_offset_at(z, t - 1) != civil5(v->before) - t ||
                tz_offset_at(z, t) != civil5(v->after) - t)
                fail_msg("%s %s at %d-%02d-%02d: offsets %d then %d", modes[m], v->zone, v->utc[0],
                         v->utc[1], v->utc[2], tz_offset_at(z, t - 1), tz_offset_at(z, t));
            /* It is the transition: the one before ends earlier, the next is later. */
            assert_true(tz_next_transition(z, t - 1) == t);
            assert_true(tz_next_transition(z, t) > t + 86400 * 30);
            tz_zone_free(z);
        }
        /* Each zone has exactly those transitions in 2026 (Chatham's two included). */
        for (size_t i = 0; i < nv; i += 2) {
            struct tz_zone *z = fixture(modes[m], vectors_2026[i].zone);
            int64_t t = tz_next_transition(z, civil(2026, 1, 1, 0, 0));
            int64_t u = tz_next_transition(z, t);
            int64_t a = civil5(vectors_2026[i].utc), b = civil5(vectors_2026[i + 1].utc);
            assert_true(t == (a < b ? a : b));
            assert_true(u == (a < b ? b : a));
            assert_true(tz_next_transition(z, u) >= civil(2027, 1, 1, 0, 0));
            tz_zone_free(z);
        }
    }
}

/* The page's examples and the vectors around them (docs/schedule.md, "Daylight saving time"). */
static void check_page_examples(const char *mode)
{
    struct tz_zone *z = fixture(mode, "Europe/Kyiv");
    int64_t spring = civil(2026, 3, 29, 1, 0);
    expect_local(z, civil(2026, 3, 29, 3, 30), TZ_LOCAL_GAP, spring, 0);
    expect_local(z, civil(2026, 3, 29, 3, 0), TZ_LOCAL_GAP, spring, 0);
    expect_local(z, civil(2026, 3, 29, 2, 59), TZ_LOCAL_UNIQUE, civil(2026, 3, 29, 0, 59), 0);
    expect_local(z, civil(2026, 3, 29, 4, 0), TZ_LOCAL_UNIQUE, spring, 0);
    expect_local(z, civil(2026, 10, 25, 3, 30), TZ_LOCAL_REPEATED, civil(2026, 10, 25, 0, 30),
                 civil(2026, 10, 25, 1, 30));
    expect_local(z, civil(2026, 10, 25, 4, 0), TZ_LOCAL_UNIQUE, civil(2026, 10, 25, 2, 0), 0);
    assert_string_equal(tz_abbrev_at(z, spring - 1), "EET");
    assert_string_equal(tz_abbrev_at(z, spring), "EEST");
    tz_zone_free(z);

    z = fixture(mode, "Australia/Lord_Howe");
    expect_local(z, civil(2026, 10, 4, 2, 15), TZ_LOCAL_GAP, civil(2026, 10, 3, 15, 30), 0);
    expect_local(z, civil(2026, 10, 4, 2, 30), TZ_LOCAL_UNIQUE, civil(2026, 10, 3, 15, 30), 0);
    expect_local(z, civil(2026, 4, 5, 1, 45), TZ_LOCAL_REPEATED, civil(2026, 4, 4, 14, 45),
                 civil(2026, 4, 4, 15, 15));
    tz_zone_free(z);

    z = fixture(mode, "America/New_York");
    expect_local(z, civil(2026, 11, 1, 0, 0), TZ_LOCAL_UNIQUE, civil(2026, 11, 1, 4, 0), 0);
    expect_local(z, civil(2026, 11, 1, 1, 0), TZ_LOCAL_REPEATED, civil(2026, 11, 1, 5, 0),
                 civil(2026, 11, 1, 6, 0));
    expect_local(z, civil(2026, 11, 1, 2, 0), TZ_LOCAL_UNIQUE, civil(2026, 11, 1, 7, 0), 0);
    expect_local(z, civil(2026, 3, 8, 2, 30), TZ_LOCAL_GAP, civil(2026, 3, 8, 7, 0), 0);
    /* Past any file's table: the footer EST5EDT,M3.2.0,M11.1.0. */
    expect_local(z, civil(2399, 3, 14, 2, 30), TZ_LOCAL_GAP, civil(2399, 3, 14, 7, 0), 0);
    expect_local(z, civil(2399, 11, 7, 1, 30), TZ_LOCAL_REPEATED, civil(2399, 11, 7, 5, 30),
                 civil(2399, 11, 7, 6, 30));
    tz_zone_free(z);

    z = fixture(mode, "America/Havana");
    expect_local(z, civil(2026, 3, 8, 0, 0), TZ_LOCAL_GAP, civil(2026, 3, 8, 5, 0), 0);
    expect_local(z, civil(2026, 3, 8, 1, 0), TZ_LOCAL_UNIQUE, civil(2026, 3, 8, 5, 0), 0);
    expect_local(z, civil(2026, 11, 1, 0, 0), TZ_LOCAL_REPEATED, civil(2026, 11, 1, 4, 0),
                 civil(2026, 11, 1, 5, 0));
    tz_zone_free(z);

    z = fixture(mode, "America/Santiago");
    expect_local(z, civil(2026, 9, 6, 0, 0), TZ_LOCAL_GAP, civil(2026, 9, 6, 4, 0), 0);
    expect_local(z, civil(2026, 9, 6, 0, 59), TZ_LOCAL_GAP, civil(2026, 9, 6, 4, 0), 0);
    expect_local(z, civil(2026, 4, 4, 23, 30), TZ_LOCAL_REPEATED, civil(2026, 4, 5, 2, 30),
                 civil(2026, 4, 5, 3, 30));
    expect_local(z, civil(2026, 4, 5, 0, 0), TZ_LOCAL_UNIQUE, civil(2026, 4, 5, 4, 0), 0);
    /* The footer <-04>4<-03>,M9.1.6/24,M4.1.6/24: Saturday 24:00 is Sunday 00:00. */
    expect_local(z, civil(2090, 9, 3, 0, 0), TZ_LOCAL_GAP, civil(2090, 9, 3, 4, 0), 0);
    tz_zone_free(z);

    z = fixture(mode, "Asia/Beirut");
    expect_local(z, civil(2026, 3, 29, 0, 0), TZ_LOCAL_GAP, civil(2026, 3, 28, 22, 0), 0);
    expect_local(z, civil(2026, 10, 24, 23, 0), TZ_LOCAL_REPEATED, civil(2026, 10, 24, 20, 0),
                 civil(2026, 10, 24, 21, 0));
    tz_zone_free(z);

    z = fixture(mode, "Atlantic/Azores");
    expect_local(z, civil(2026, 3, 29, 0, 0), TZ_LOCAL_GAP, civil(2026, 3, 29, 1, 0), 0);
    expect_local(z, civil(2026, 10, 25, 0, 30), TZ_LOCAL_REPEATED, civil(2026, 10, 25, 0, 30),
                 civil(2026, 10, 25, 1, 30));
    tz_zone_free(z);

    z = fixture(mode, "America/Nuuk");
    /* The spring gap ends at midnight: Saturday 23:00-23:59 is missing (M3.5.0/-1). */
    expect_local(z, civil(2026, 3, 28, 23, 30), TZ_LOCAL_GAP, civil(2026, 3, 29, 1, 0), 0);
    expect_local(z, civil(2026, 3, 29, 0, 0), TZ_LOCAL_UNIQUE, civil(2026, 3, 29, 1, 0), 0);
    expect_local(z, civil(2095, 3, 26, 23, 30), TZ_LOCAL_GAP, civil(2095, 3, 27, 1, 0), 0);
    tz_zone_free(z);

    z = fixture(mode, "Antarctica/Troll");
    expect_local(z, civil(2026, 3, 29, 1, 0), TZ_LOCAL_GAP, civil(2026, 3, 29, 1, 0), 0);
    expect_local(z, civil(2026, 3, 29, 2, 59), TZ_LOCAL_GAP, civil(2026, 3, 29, 1, 0), 0);
    expect_local(z, civil(2026, 3, 29, 3, 0), TZ_LOCAL_UNIQUE, civil(2026, 3, 29, 1, 0), 0);
    expect_local(z, civil(2026, 10, 25, 1, 0), TZ_LOCAL_REPEATED, civil(2026, 10, 24, 23, 0),
                 civil(2026, 10, 25, 1, 0));
    expect_local(z, civil(2026, 10, 25, 2, 59), TZ_LOCAL_REPEATED, civil(2026, 10, 25, 0, 59),
                 civil(2026, 10, 25, 2, 59));
    assert_string_equal(tz_abbrev_at(z, civil(2026, 7, 1, 0, 0)), "+02");
    tz_zone_free(z);

    z = fixture(mode, "Pacific/Chatham");
    int64_t t = civil(2026, 9, 26, 14, 0);
    expect_local(z, civil(2026, 9, 27, 3, 0), TZ_LOCAL_GAP, t, 0);
    expect_local(z, civil(2026, 9, 27, 3, 45), TZ_LOCAL_UNIQUE, t, 0);
    expect_local(z, civil(2026, 9, 27, 2, 44), TZ_LOCAL_UNIQUE, t - 60, 0);
    expect_local(z, civil(2026, 4, 5, 3, 0), TZ_LOCAL_REPEATED, civil(2026, 4, 4, 13, 15),
                 civil(2026, 4, 4, 14, 15));
    tz_zone_free(z);

    z = fixture(mode, "Europe/Dublin");
    /* Winter is "negative DST": GMT with isdst set; summer is IST, standard time. */
    assert_int_equal(tz_offset_at(z, civil(2026, 1, 15, 0, 0)), 0);
    assert_string_equal(tz_abbrev_at(z, civil(2026, 1, 15, 0, 0)), "GMT");
    assert_int_equal(tz_offset_at(z, civil(2026, 7, 15, 0, 0)), 3600);
    assert_string_equal(tz_abbrev_at(z, civil(2026, 7, 15, 0, 0)), "IST");
    expect_local(z, civil(2026, 3, 29, 1, 30), TZ_LOCAL_GAP, civil(2026, 3, 29, 1, 0), 0);
    expect_local(z, civil(2026, 10, 25, 1, 30), TZ_LOCAL_REPEATED, civil(2026, 10, 25, 0, 30),
                 civil(2026, 10, 25, 1, 30));
    /* The footer IST-1GMT0,M10.5.0,M3.5.0/1, both inside and past the precomputed table. */
    assert_int_equal(tz_offset_at(z, civil(2150, 1, 15, 0, 0)), 0);
    assert_int_equal(tz_offset_at(z, civil(2150, 7, 15, 0, 0)), 3600);
    assert_int_equal(tz_offset_at(z, civil(2450, 7, 15, 0, 0)), 3600);
    assert_string_equal(tz_abbrev_at(z, civil(2450, 7, 15, 0, 0)), "IST");
    assert_int_equal(tz_offset_at(z, civil(2450, 12, 15, 0, 0)), 0);
    assert_string_equal(tz_abbrev_at(z, civil(2450, 12, 15, 0, 0)), "GMT");
    expect_local(z, civil(2450, 3, 27, 1, 30), TZ_LOCAL_GAP, civil(2450, 3, 27, 1, 0), 0);
    tz_zone_free(z);
}

static void test_page_examples_fat(void **state)
{
    check_page_examples("fat");
}

static void test_page_examples_slim(void **state)
{
    check_page_examples("slim");
}

/*
 * Independent count of the instants of local time L: for every offset in force
 * within two days of L, L - offset is an answer when that offset rules there.
 */
static size_t brute_force(const struct tz_zone *z, int64_t local, int64_t found[4])
{
    int32_t offs[64];
    size_t noffs = 0, n = 0;
    int64_t t = local - 2 * 86400;
    for (;;) {
        int32_t o = tz_offset_at(z, t);
        bool seen = false;
        for (size_t i = 0; i < noffs; i++)
            seen |= offs[i] == o;
        if (!seen && noffs < 64)
            offs[noffs++] = o;
        t = tz_next_transition(z, t);
        if (t > local + 2 * 86400)
            break;
    }
    for (size_t i = 0; i < noffs; i++) {
        int64_t c = local - offs[i];
        if (tz_offset_at(z, c) == offs[i] && n < 4)
            found[n++] = c;
    }
    /* Sort the (at most few) answers. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && found[j - 1] > found[j]; j--) {
            int64_t x = found[j];
            found[j] = found[j - 1];
            found[j - 1] = x;
        }
    return n;
}

static void check_minute(const struct tz_zone *z, int64_t local)
{
    int64_t found[4];
    size_t n = brute_force(z, local, found);
    struct tz_local r;
    tz_resolve_local(z, local, &r);
    check_resolution(z, local);
    enum tz_local_kind want = n == 0 ? TZ_LOCAL_GAP : n == 1 ? TZ_LOCAL_UNIQUE : TZ_LOCAL_REPEATED;
    if (r.kind != want || (n >= 1 && r.at[0] != found[0]) || (n >= 2 && r.at[1] != found[n - 1]))
        fail_msg("%s: local %lld: kind %d, brute force finds %zu", tz_zone_name(z),
                 (long long)local, r.kind, n);
}

/* Every local minute within 3 hours of every transition from 1970 to 2100. */
static void test_resolve_every_minute(void **state)
{
    static const char *modes[] = {"fat", "slim"};
    size_t minutes = 0;
    for (size_t m = 0; m < 2; m++) {
        for (size_t i = 0; i < NZONES; i++) {
            struct tz_zone *z = fixture(modes[m], fixture_zones[i]);
            int64_t lo = civil(1970, 1, 1, 0, 0), hi = civil(2100, 1, 1, 0, 0);
            for (int64_t t = tz_next_transition(z, lo); t < hi; t = tz_next_transition(z, t)) {
                int64_t l = t + tz_offset_at(z, t);
                l -= util_floor_mod(l, 60);
                for (int64_t d = -3 * 3600; d <= 3 * 3600; d += 60 * test_stride()) {
                    check_minute(z, l + d);
                    minutes++;
                }
            }
            tz_zone_free(z);
        }
    }
    assert_true(minutes > 1000000 / (size_t)test_stride());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures_are_fat_and_slim), cmocka_unit_test(test_fat_and_slim_agree),
        cmocka_unit_test(test_fixtures_against_glibc),    cmocka_unit_test(test_2026_transitions),
        cmocka_unit_test(test_page_examples_fat),         cmocka_unit_test(test_page_examples_slim),
        cmocka_unit_test(test_resolve_every_minute),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
