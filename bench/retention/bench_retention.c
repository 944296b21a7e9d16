/*
 * bench_retention: time and memory of ret_evaluate() on N snapshots.
 *
 *   bench_retention N [SNAPSHOTS_JSON [SPACING_SECONDS]]
 *
 * Builds a history of N snapshots (one every SPACING seconds on average, ten
 * minutes by default, with +-50% noise; ids that begin
 * with the time as Lodestore's do, 10% incomplete, 1% suspicious), shuffles it,
 * and evaluates it with the rules of the user's page (keepLast 3, keepDaily 7,
 * keepWeekly 4, keepMonthly 6) plus keepWithin 7d, in Europe/Kyiv. Prints one
 * line of key=value pairs: the median of 5 timed runs (after a warm-up; CPU time
 * and wall clock) for the shuffled input and for input already in storage order,
 * and the peak RSS before
 * and after the engine ran, so the engine's own memory is the difference. With a
 * second argument, also writes the history (oldest first) as a `lode forget
 * --snapshots` file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "retention/retention.h"

static uint64_t bench_rng_state = 0x243f6a8885a308d3ull;

static uint64_t bench_rng(void)
{
    uint64_t z = (bench_rng_state += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double bench_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long bench_maxrss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/*
 * Median seconds of 5 runs after one warm-up: wall clock, and the CPU time of
 * this process, which a busy shared machine disturbs much less.
 */
static void bench_time(const struct ret_snapshot *s, size_t n, const struct policy_retention *r,
                       const struct tz_zone *zone, struct ret_decision *d, double *wall,
                       double *cpu)
{
    double w[5], c[5];
    struct util_err err = {0};
    for (int i = 0; i < 6; i++) {
        double w0 = bench_clock(CLOCK_MONOTONIC), c0 = bench_clock(CLOCK_PROCESS_CPUTIME_ID);
        if (ret_evaluate(s, n, r, zone, d, &err) != 0) {
            fprintf(stderr, "bench_retention: %s\n", err.msg);
            exit(1);
        }
        if (i > 0) {
            w[i - 1] = bench_clock(CLOCK_MONOTONIC) - w0;
            c[i - 1] = bench_clock(CLOCK_PROCESS_CPUTIME_ID) - c0;
        }
    }
    qsort(w, 5, sizeof(w[0]), bench_cmp_double);
    qsort(c, 5, sizeof(c[0]), bench_cmp_double);
    *wall = w[2];
    *cpu = c[2];
}

int main(int argc, char **argv)
{
    size_t n;
    struct ret_snapshot *s, *sorted;
    struct ret_decision *d;
    char *ids;
    struct tz_db *db = NULL;
    struct tz_zone *zone = NULL;
    struct util_err err = {0};
    struct policy_retention rules = {.keep_last = 3,
                                     .keep_within = 7 * 86400,
                                     .keep_daily = 7,
                                     .keep_weekly = 4,
                                     .keep_monthly = 6};
    int64_t t = 1262304000; /* 2010-01-01 */
    int64_t spacing = 600;
    long rss_before, rss_after;
    double shuffled_wall, shuffled_cpu, sorted_wall, sorted_cpu;
    size_t kept = 0;

    if (argc < 2 || argc > 4 || (n = strtoull(argv[1], NULL, 10)) == 0 ||
        (argc == 4 && (spacing = strtoll(argv[3], NULL, 10)) < 2)) {
        fprintf(stderr, "usage: bench_retention N [SNAPSHOTS_JSON [SPACING_SECONDS]]\n");
        return 2;
    }
    if (tz_db_open(&db, NULL, &err) != 0 || tz_zone_load(&zone, db, "Europe/Kyiv", &err) != 0) {
        fprintf(stderr, "bench_retention: %s\n", err.msg);
        return 2;
    }
    s = util_calloc(n, sizeof(*s));
    sorted = util_calloc(n, sizeof(*s));
    d = util_calloc(n, sizeof(*d));
    ids = util_malloc(n * 24);
    for (size_t i = 0; i < n; i++) {
        struct util_civil c;
        t += spacing / 2 + (int64_t)(bench_rng() % (uint64_t)spacing);
        util_civil_from_seconds(t, &c);
        snprintf(ids + 24 * i, 24, "%04lld%02u%02uT%02u%02u%02u-%04x", (long long)c.year, c.month,
                 c.day, c.hour, c.minute, c.second, (unsigned)(bench_rng() & 0xffff));
        s[i] = (struct ret_snapshot){ids + 24 * i, t, bench_rng() % 10 == 0, bench_rng() % 100 == 0,
                                     false};
    }
    memcpy(sorted, s, n * sizeof(*s)); /* oldest first: the order a storage listing gives */
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(bench_rng() % i);
        struct ret_snapshot x = s[i - 1];
        s[i - 1] = s[j];
        s[j] = x;
    }
    if (argc >= 3) {
        FILE *f = fopen(argv[2], "w");
        char when[UTIL_TIME_BUF];
        if (f == NULL) {
            perror(argv[2]);
            return 2;
        }
        fputc('[', f);
        for (size_t i = 0; i < n; i++) {
            util_format_utc(sorted[i].time, when, sizeof(when));
            fprintf(f, "%s{\"id\":\"%s\",\"time\":\"%s\"%s%s}", i ? ",\n" : "", sorted[i].id, when,
                    sorted[i].incomplete ? ",\"incomplete\":true" : "",
                    sorted[i].suspicious ? ",\"suspicious\":true" : "");
        }
        fputs("]\n", f);
        fclose(f);
    }

    /* Touch the output so its pages count as the caller's, not the engine's. */
    for (size_t i = 0; i < n; i++)
        d[i] = (struct ret_decision){i, true, 1};
    rss_before = bench_maxrss_kib();
    bench_time(s, n, &rules, zone, d, &shuffled_wall, &shuffled_cpu);
    bench_time(sorted, n, &rules, zone, d, &sorted_wall, &sorted_cpu);
    rss_after = bench_maxrss_kib();
    for (size_t i = 0; i < n; i++)
        kept += d[i].keep;

    printf("n=%zu kept=%zu shuffled_cpu_ms=%.3f shuffled_wall_ms=%.3f sorted_cpu_ms=%.3f "
           "sorted_wall_ms=%.3f cpu_ns_per_snapshot=%.1f input_kib=%zu rss_before_kib=%ld "
           "rss_peak_kib=%ld engine_kib=%ld\n",
           n, kept, shuffled_cpu * 1e3, shuffled_wall * 1e3, sorted_cpu * 1e3, sorted_wall * 1e3,
           shuffled_cpu * 1e9 / (double)n, (n * (sizeof(*s) + 24)) / 1024, rss_before, rss_after,
           rss_after - rss_before);
    tz_zone_free(zone);
    tz_db_close(db);
    free(ids);
    free(d);
    free(sorted);
    free(s);
    return 0;
}
