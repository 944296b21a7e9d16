/*
 * LEB128 integers and the reader that remembers a fault (util/varint.h): the byte
 * boundaries, the largest value, and every way a read can fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/varint.h"

static void test_round_trip_and_lengths(void **state)
{
    static const struct {
        uint64_t v;
        size_t len;
    } cases[] = {{0, 1},     {127, 1},        {128, 2},         {16383, 2},
                 {16384, 3}, {UINT32_MAX, 5}, {1ull << 63, 10}, {UINT64_MAX, 10}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct util_buf b;
        util_buf_init(&b);
        util_varint_put(&b, cases[i].v);
        assert_int_equal(b.len, cases[i].len);
        struct util_rd r = {.p = (const uint8_t *)b.data, .n = b.len};
        assert_true(util_varint_get(&r) == cases[i].v);
        assert_false(r.bad);
        assert_int_equal(r.i, b.len);
        util_buf_free(&b);
    }
    /* 128 is 0x80 0x01: the low seven bits first. */
    static const uint8_t two[] = {0x80, 0x01};
    struct util_rd r = {.p = two, .n = 2};
    assert_int_equal(util_varint_get(&r), 128);
}

static void test_faults_are_remembered(void **state)
{
    static const uint8_t cut[] = {0x80, 0x80};
    struct util_rd r = {.p = cut, .n = sizeof(cut)};
    assert_int_equal(util_varint_get(&r), 0);
    assert_true(r.bad);
    /* Once bad, every read gives nothing, even where bytes are left. */
    static const uint8_t ok[] = {0x05, 0x06};
    struct util_rd r2 = {.p = ok, .n = 2, .bad = true};
    assert_int_equal(util_varint_get(&r2), 0);
    assert_null(util_rd_raw(&r2, 1));
    /* Eleven bytes of continuation: longer than any 64-bit value. */
    uint8_t longv[11];
    memset(longv, 0xff, sizeof(longv));
    struct util_rd r3 = {.p = longv, .n = sizeof(longv)};
    util_varint_get(&r3);
    assert_true(r3.bad);
    /* A u32 that does not fit. */
    struct util_buf b;
    util_buf_init(&b);
    util_varint_put(&b, (uint64_t)UINT32_MAX + 1);
    struct util_rd r4 = {.p = (const uint8_t *)b.data, .n = b.len};
    util_varint_get_u32(&r4);
    assert_true(r4.bad);
    util_buf_free(&b);
    /* Raw bytes: exactly what is left, then one too many. */
    struct util_rd r5 = {.p = ok, .n = 2};
    const uint8_t *p = util_rd_raw(&r5, 2);
    assert_ptr_equal(p, ok);
    assert_false(r5.bad);
    assert_null(util_rd_raw(&r5, 1));
    assert_true(r5.bad);
}

static void test_zigzag(void **state)
{
    static const int64_t v[] = {0, -1, 1, -2, 2, INT64_MIN, INT64_MAX};
    static const uint64_t z[] = {0, 1, 2, 3, 4, UINT64_MAX, UINT64_MAX - 1};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        assert_true(util_zigzag(v[i]) == z[i]);
        assert_true(util_unzigzag(z[i]) == v[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_lengths),
        cmocka_unit_test(test_faults_are_remembered),
        cmocka_unit_test(test_zigzag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
