/*
 * The restore batch's plan (agent/restore.h): how a batch's pieces become ranged
 * GETs (rx_plan_ranges: by pack and offset, neighbours joined across gaps of at
 * most RX_GAP, a range at most RX_RANGE_MAX, a blob used twice fetched once) and
 * when a batch is full (rx_batch_full).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static struct repo_chunk chunk(uint32_t pack, uint32_t offset, uint32_t stored)
{
    struct repo_chunk c;
    memset(&c, 0, sizeof(c));
    c.pack = pack;
    c.offset = offset;
    c.stored = stored;
    return c;
}

static void test_neighbours_join_and_gaps_split(void **state)
{
    /* Pack 0: three blobs 100 KiB apart, then one 2 MiB further (past RX_GAP);
     * pack 1: one blob at 0, which never joins pack 0's range. */
    struct repo_chunk c[] = {
        chunk(0, 0, 64 * KIB),         chunk(0, 164 * KIB, 64 * KIB),
        chunk(0, 328 * KIB, 64 * KIB), chunk(0, 392 * KIB + 2 * MIB, 64 * KIB),
        chunk(1, 0, 64 * KIB),
    };
    /* Given out of order, as files name them. */
    struct rx_piece p[] = {
        {c[4], 2, 0}, {c[2], 0, 128 * KIB}, {c[0], 0, 0}, {c[3], 1, 0}, {c[1], 0, 64 * KIB},
    };
    struct rx_range *r = NULL;
    size_t cap = 0;
    size_t n = rx_plan_ranges(p, 5, &r, &cap);

    assert_int_equal(n, 3);
    assert_int_equal(r[0].pack, 0);
    assert_int_equal(r[0].start, 0);
    assert_int_equal(r[0].end, 392 * KIB);
    assert_int_equal(r[0].first, 0);
    assert_int_equal(r[0].n, 3);
    assert_int_equal(r[1].pack, 0);
    assert_int_equal(r[1].start, 392 * KIB + 2 * MIB);
    assert_int_equal(r[1].n, 1);
    assert_int_equal(r[2].pack, 1);
    assert_int_equal(r[2].first, 4);
    /* The pieces are sorted to match: each range's pieces are its own. */
    for (size_t i = 0; i < n; i++)
        for (size_t k = r[i].first; k < r[i].first + r[i].n; k++) {
            assert_int_equal(p[k].c.pack, r[i].pack);
            assert_true(p[k].c.offset >= r[i].start);
            assert_true(p[k].c.offset + p[k].c.stored <= r[i].end);
        }
    free(r);
}

static void test_a_range_stops_at_its_maximum(void **state)
{
    /* Nine adjacent blobs of 1 MiB: ranges of at most RX_RANGE_MAX (4 MiB). */
    struct repo_chunk c[9];
    struct rx_piece p[9];
    struct rx_range *r = NULL;
    size_t cap = 0;
    for (uint32_t i = 0; i < 9; i++) {
        c[i] = chunk(7, i * MIB, MIB);
        p[i] = (struct rx_piece){c[i], i, 0};
    }
    size_t n = rx_plan_ranges(p, 9, &r, &cap);
    assert_int_equal(n, 3);
    assert_int_equal(r[0].n, 4);
    assert_int_equal(r[1].n, 4);
    assert_int_equal(r[2].n, 1);
    for (size_t i = 0; i < n; i++)
        assert_true(r[i].end - r[i].start <= RX_RANGE_MAX);
    free(r);
}

static void test_a_blob_used_twice_is_fetched_once(void **state)
{
    /* Two files with the same chunk: one range covers both pieces. */
    struct repo_chunk c = chunk(3, 4096, 1000);
    struct rx_piece p[] = {{c, 1, 0}, {c, 0, 0}};
    struct rx_range *r = NULL;
    size_t cap = 0;
    size_t n = rx_plan_ranges(p, 2, &r, &cap);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].n, 2);
    assert_int_equal(r[0].end - r[0].start, 1000);
    assert_int_equal(p[0].file, 0); /* sorted by file after pack and offset */
    free(r);
}

static void test_no_pieces_no_ranges(void **state)
{
    struct rx_range *r = NULL;
    size_t cap = 0;
    assert_int_equal(rx_plan_ranges(NULL, 0, &r, &cap), 0);
    assert_null(r);
}

static void test_batch_full(void **state)
{
    /* An empty batch always takes a file, however large. */
    assert_false(rx_batch_full(0, 0, RX_BATCH_BYTES * 2, 10));
    assert_false(rx_batch_full(9, 100, 100, 10));
    assert_true(rx_batch_full(10, 100, 100, 10));
    assert_false(rx_batch_full(1, RX_BATCH_BYTES - 100, 100, 10));
    assert_true(rx_batch_full(1, RX_BATCH_BYTES - 100, 101, 10));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_neighbours_join_and_gaps_split),
        cmocka_unit_test(test_a_range_stops_at_its_maximum),
        cmocka_unit_test(test_a_blob_used_twice_is_fetched_once),
        cmocka_unit_test(test_no_pieces_no_ranges),
        cmocka_unit_test(test_batch_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
