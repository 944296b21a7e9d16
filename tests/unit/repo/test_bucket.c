/*
 * The upload token bucket against a fake clock: senders that take as fast as the
 * bucket allows never exceed 1.1 x the rate in any 1 s window after the first,
 * and the long-run mean is the rate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "repo/repo.h"

#define NS 1000000000ull

/* Simulates greedy senders asking for `ask` bytes, waking when told, for `secs`
 * seconds; checks every 1 s window (slid by 10 ms) after the first second. */
static void run(uint64_t rate, size_t ask, int secs)
{
    struct repo_bucket b;
    uint64_t now = 5 * NS, start = now, end = now + (uint64_t)secs * NS;
    size_t slots = (size_t)secs * 100; /* 10 ms bins */
    uint64_t *bins = util_calloc(slots, sizeof(*bins)), total = 0;

    repo_bucket_init(&b, rate, now);
    while (now < end) {
        size_t got = repo_bucket_take(&b, now, ask);
        if (got) {
            bins[(now - start) / (NS / 100)] += got;
            total += got;
            continue;
        }
        uint64_t wait = repo_bucket_wait(&b, now, ask);
        assert_true(wait > 0);
        now += wait;
    }
    for (size_t s = 100; s + 100 <= slots; s++) {
        uint64_t sum = 0;
        for (size_t i = s; i < s + 100; i++)
            sum += bins[i];
        if ((double)sum > 1.1 * (double)rate)
            fail_msg("window at %zu0 ms: %llu bytes > 1.1 x %llu", s, (unsigned long long)sum,
                     (unsigned long long)rate);
    }
    double mean = (double)total / secs;
    assert_true(mean > 0.97 * (double)rate && mean < 1.06 * (double)rate);
    free(bins);
}

static void test_rates(void **state)
{
    run(2u << 20, 16384, 30);
    run(8u << 20, 65536, 30);
    run(500u << 10, 16384, 20);
    run(50u << 10, 16384, 20);
    run(50u << 20, 1u << 20, 10);
}

static void test_wait_is_zero_when_full(void **state)
{
    struct repo_bucket b;
    repo_bucket_init(&b, 1000000, 0);
    assert_int_equal(repo_bucket_wait(&b, 0, 100), 0);
    assert_int_equal(repo_bucket_take(&b, 0, 100), 100);
    /* Empty it, then the wait for 1,000 bytes is about 1 ms. */
    repo_bucket_take(&b, 0, 1u << 30);
    uint64_t w = repo_bucket_wait(&b, 0, 1000);
    assert_in_range(w, 900000, 1100000);
    /* The clock going backwards adds nothing. */
    assert_int_equal(repo_bucket_take(&b, 0, 10), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rates),
        cmocka_unit_test(test_wait_is_zero_when_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
