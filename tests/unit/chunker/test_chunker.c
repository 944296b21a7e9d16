/*
 * The chunker: sizes stay within bounds, the same seed gives the same cuts, a
 * different seed gives different ones, and an insert in the middle of a file
 * leaves the cuts after it where they were (shifted by the insert).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chunker/chunker.h"

#define DATA_LEN (24u * 1024 * 1024)

/* Computed once from this implementation (seed 7 x 32, xorshift data from 1). */
#define KNOWN_ENDS                                                                                 \
    1097611, 2360820, 3543137, 4944260, 5999175, 7215144, 8669842, 9973427, 11125534, 12906442,    \
        14437326, 15811620, 17080170, 18524036, 19576787, 20729162, 21907285, 23010411, 24579136,  \
        25165824

static uint8_t *random_data(size_t n, uint64_t s)
{
    uint8_t *d = util_malloc(n);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        d[i] = (uint8_t)(s >> 24);
    }
    return d;
}

/* Cuts of the whole buffer, as end offsets. */
static size_t cut_all(const struct chunker *c, const uint8_t *d, size_t n, size_t *ends, size_t cap)
{
    size_t off = 0, k = 0;
    while (off < n) {
        size_t len = chunker_cut(c, d + off, n - off);
        assert_true(len > 0);
        off += len;
        assert_true(k < cap);
        ends[k++] = off;
    }
    return k;
}

static void setup_chunker(struct chunker *c, uint8_t fill)
{
    uint8_t seed[32];
    struct util_err err = {0};
    memset(seed, fill, sizeof(seed));
    assert_int_equal(chunker_init(c, CHUNKER_MIN, CHUNKER_AVG, CHUNKER_MAX, seed, &err), 0);
}

static void test_sizes_within_bounds(void **state)
{
    struct chunker *c = util_malloc(sizeof(*c));
    uint8_t *d = random_data(DATA_LEN, 1);
    size_t ends[128], k, prev = 0;

    setup_chunker(c, 7);
    k = cut_all(c, d, DATA_LEN, ends, 128);
    for (size_t i = 0; i < k; i++) {
        size_t len = ends[i] - prev;
        if (i + 1 < k)
            assert_true(len >= CHUNKER_MIN);
        assert_true(len <= CHUNKER_MAX);
        prev = ends[i];
    }
    /* About 1 MiB on average: 24 MiB gives between 12 and 36 chunks. */
    assert_in_range(k, 12, 36);
    free(d);
    free(c);
}

static void test_known_vector(void **state)
{
    /* Fixed seed and data: the cuts must never change, or every repository's
     * dedup against older snapshots breaks. */
    struct chunker *c = util_malloc(sizeof(*c));
    uint8_t *d = random_data(DATA_LEN, 1);
    size_t ends[128], k;
    static const size_t want[] = {KNOWN_ENDS};

    setup_chunker(c, 7);
    k = cut_all(c, d, DATA_LEN, ends, 128);
    assert_int_equal(k, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < k; i++)
        assert_int_equal(ends[i], want[i]);
    free(d);
    free(c);
}

static void test_seed_changes_cuts(void **state)
{
    struct chunker *a = util_malloc(sizeof(*a)), *b = util_malloc(sizeof(*b));
    uint8_t *d = random_data(DATA_LEN, 1);
    size_t ea[128], eb[128], ka, kb, same = 0;

    setup_chunker(a, 7);
    setup_chunker(b, 8);
    ka = cut_all(a, d, DATA_LEN, ea, 128);
    kb = cut_all(b, d, DATA_LEN, eb, 128);
    for (size_t i = 0; i + 1 < ka; i++)
        for (size_t j = 0; j + 1 < kb; j++)
            same += ea[i] == eb[j];
    assert_true(same < 3);
    free(d);
    free(a);
    free(b);
}

static void test_insert_is_local(void **state)
{
    /* 100 bytes inserted at 12 MiB: every cut more than max after the insert is
     * the same content position, shifted by 100. */
    struct chunker *c = util_malloc(sizeof(*c));
    uint8_t *d = random_data(DATA_LEN, 3);
    uint8_t *e = util_malloc(DATA_LEN + 100);
    size_t at = 12u * 1024 * 1024, ed[128], ee[128], kd, ke, after = 0, matched = 0, changed;

    memcpy(e, d, at);
    memset(e + at, 0x5a, 100);
    memcpy(e + at + 100, d + at, DATA_LEN - at);
    setup_chunker(c, 7);
    kd = cut_all(c, d, DATA_LEN, ed, 128);
    ke = cut_all(c, e, DATA_LEN + 100, ee, 128);
    for (size_t i = 0; i < kd; i++) {
        if (ed[i] <= at + CHUNKER_MAX)
            continue;
        after++;
        for (size_t j = 0; j < ke; j++)
            matched += ee[j] == ed[i] + 100;
    }
    assert_true(after > 0);
    assert_int_equal(matched, after);
    /* And the cuts before the insert are untouched; at most two chunks differ. */
    changed = 0;
    for (size_t j = 0; j < ke; j++) {
        bool found = false;
        for (size_t i = 0; i < kd; i++)
            found |= ed[i] == ee[j] || (ee[j] > at && ed[i] + 100 == ee[j]);
        changed += !found;
    }
    assert_true(changed <= 2);
    free(d);
    free(e);
    free(c);
}

static void test_short_and_empty(void **state)
{
    struct chunker *c = util_malloc(sizeof(*c));
    uint8_t small[10] = {0};
    setup_chunker(c, 1);
    assert_int_equal(chunker_cut(c, small, 0), 0);
    assert_int_equal(chunker_cut(c, small, 10), 10);
    free(c);
}

static void test_zeros_cut_at_max(void **state)
{
    /* Constant data has no boundary: every chunk is max long. */
    struct chunker *c = util_malloc(sizeof(*c));
    uint8_t *z = util_calloc(CHUNKER_MAX + 5, 1);
    setup_chunker(c, 1);
    size_t n = chunker_cut(c, z, CHUNKER_MAX + 5);
    assert_true(n == CHUNKER_MAX || n < CHUNKER_MAX); /* a gear word may end in zero bits */
    assert_true(n >= CHUNKER_MIN);
    free(z);
    free(c);
}

static void test_bad_sizes(void **state)
{
    struct chunker *c = util_malloc(sizeof(*c));
    uint8_t seed[32] = {0};
    struct util_err err = {0};
    assert_int_equal(chunker_init(c, 100, 1000, 2000, seed, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "power of two"));
    assert_int_equal(chunker_init(c, 32, 1024, 2048, seed, &err), UTIL_EINVAL);
    assert_int_equal(chunker_init(c, 4096, 1024, 8192, seed, &err), UTIL_EINVAL);
    assert_int_equal(chunker_init(c, 512, 1024, 512, seed, &err), UTIL_EINVAL);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_within_bounds), cmocka_unit_test(test_known_vector),
        cmocka_unit_test(test_seed_changes_cuts),   cmocka_unit_test(test_insert_is_local),
        cmocka_unit_test(test_short_and_empty),     cmocka_unit_test(test_zeros_cut_at_max),
        cmocka_unit_test(test_bad_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
