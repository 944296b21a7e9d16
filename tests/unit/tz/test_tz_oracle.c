/*
 * Every zone of the system tz database against glibc's localtime_r, the oracle.
 *
 * Setting TZ is banned in the product; here it only points glibc at the same file
 * we parse. For each zone: a fixed pseudo-random sample of instants from 1900 to
 * 2100, and one second before, at and after every transition we report from 1970
 * to 2100. Offsets and abbreviations must be equal, and every reported transition
 * must change something glibc sees. tz_resolve_local() is checked at the local
 * times around each transition.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include "tz/tz_test.h"

#define SAMPLES_PER_ZONE 5000

struct oracle_stats {
    size_t zones, instants, transitions;
};

static uint64_t rng_next(uint64_t *s)
{
    /* splitmix64: a fixed sequence, so a failure reproduces. */
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int glibc_at(int64_t t, long *off, const char **abbr)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (localtime_r(&tt, &tm) == NULL)
        fail_msg("localtime_r failed at %lld", (long long)t);
    *off = tm.tm_gmtoff;
    *abbr = tm.tm_zone;
    return tm.tm_isdst;
}

static void compare_at(const struct tz_zone *z, int64_t t)
{
    long off;
    const char *abbr;
    glibc_at(t, &off, &abbr);
    if (tz_offset_at(z, t) != off || strcmp(tz_abbrev_at(z, t), abbr) != 0) {
        char buf[UTIL_TIME_BUF];
        util_format_utc(t, buf, sizeof(buf));
        fail_msg("%s at %s (%lld): offset %d %s, glibc %ld %s", tz_zone_name(z), buf, (long long)t,
                 tz_offset_at(z, t), tz_abbrev_at(z, t), off, abbr);
    }
}

static void check_zone(const char *path, const char *name, struct oracle_stats *st)
{
    size_t len;
    unsigned char *data = slurp(path, &len);
    struct tz_zone *z = NULL;
    struct util_err err = {0};
    if (tz_zone_parse(&z, name, data, len, &err) != 0)
        fail_msg("%s", err.msg);
    free(data);

    char *tzvar = util_asprintf(":%s", path);
    setenv("TZ", tzvar, 1);
    tzset();
    free(tzvar);

    int64_t lo = civil(1900, 1, 1, 0, 0), hi = civil(2100, 1, 1, 0, 0);
    uint64_t seed = 0;
    for (const char *p = name; *p; p++)
        seed = seed * 31 + (unsigned char)*p;
    for (int i = 0; i < SAMPLES_PER_ZONE / test_stride(); i++) {
        int64_t t = lo + (int64_t)(rng_next(&seed) % (uint64_t)(hi - lo));
        compare_at(z, t);
        st->instants++;
    }
    int64_t first = tz_next_transition(z, civil(1970, 1, 1, 0, 0));
    if (st->zones % (size_t)test_stride() != 0)
        first = INT64_MAX; /* under valgrind: transitions of every tenth zone only */
    for (int64_t t = first; t < hi; t = tz_next_transition(z, t)) {
        compare_at(z, t - 1);
        compare_at(z, t);
        compare_at(z, t + 1);
        long before, after;
        const char *ab, *aa;
        int dst_before = glibc_at(t - 1, &before, &ab);
        char saved[64];
        snprintf(saved, sizeof(saved), "%s", ab);
        int dst_after = glibc_at(t, &after, &aa);
        if (before == after && strcmp(saved, aa) == 0 && dst_before == dst_after)
            fail_msg("%s: transition at %lld changes nothing", name, (long long)t);
        /* The local times around the transition resolve consistently. */
        for (int64_t d = -3 * 3600; d <= 3 * 3600; d += 900)
            check_resolution(z, t + tz_offset_at(z, t) + d);
        st->transitions++;
    }
    tz_zone_free(z);
    st->zones++;
}

static bool is_tzif(const char *path)
{
    char magic[4];
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    bool ok = fread(magic, 1, 4, f) == 4 && memcmp(magic, "TZif", 4) == 0;
    fclose(f);
    return ok;
}

static void walk(const char *root, const char *rel, struct oracle_stats *st)
{
    char *dirpath = rel[0] ? util_asprintf("%s/%s", root, rel) : util_strdup(root);
    DIR *d = opendir(dirpath);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *name = rel[0] ? util_asprintf("%s/%s", rel, e->d_name) : util_strdup(e->d_name);
        char *path = util_asprintf("%s/%s", root, name);
        struct stat sb;
        /* Links are skipped: their targets are visited under their own names. */
        if (lstat(path, &sb) == 0 && !S_ISLNK(sb.st_mode)) {
            if (S_ISDIR(sb.st_mode)) {
                if (strcmp(name, "right") != 0 && strcmp(name, "posix") != 0)
                    walk(root, name, st);
            } else if (S_ISREG(sb.st_mode) && is_tzif(path)) {
                check_zone(path, name, st);
            }
        }
        free(name);
        free(path);
    }
    closedir(d);
    free(dirpath);
}

static void test_every_zone_against_glibc(void **state)
{
    struct oracle_stats st = {0};
    walk(TZ_DEFAULT_DIR, "", &st);
    unsetenv("TZ");
    tzset();
    printf("# %zu zones, %zu sampled instants, %zu transitions 1970-2100\n", st.zones, st.instants,
           st.transitions);
    /* A bookworm tz database has about 350 zone files besides links. */
    assert_true(st.zones > 300);
    assert_true(st.transitions > 10000 / (size_t)test_stride());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_zone_against_glibc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
