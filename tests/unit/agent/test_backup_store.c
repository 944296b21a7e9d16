/*
 * The backup's pack rules (agent/backup.h): when the pack being filled closes
 * (backup_pack_full: its blobs and its table reach REPO_PACK_SIZE) and when a chunk
 * may be queued to be sealed (backup_may_queue: the jobs and packs in memory), on a
 * real pack writer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent.h"

#define MIB (1024u * 1024u)

static void test_pack_closes_at_the_size_with_its_table(void **state)
{
    struct repo_pack_writer pw;
    uint8_t *blob = calloc(1, MIB);
    size_t n = 0;

    repo_pack_writer_init(&pw);
    assert_false(backup_pack_full(&pw, 0));
    /* Fifteen blobs of 1 MiB with their table are short of 16 MiB... */
    while (n < 15) {
        repo_pack_writer_put(&pw, blob, MIB);
        n++;
        assert_false(backup_pack_full(&pw, n));
    }
    /* ...the sixteenth makes the pack reach it: it closes. */
    repo_pack_writer_put(&pw, blob, MIB);
    n++;
    assert_true(backup_pack_full(&pw, n));
    assert_true(repo_pack_writer_size(&pw, n) >= REPO_PACK_SIZE);
    repo_pack_writer_free(&pw);
    free(blob);
}

static void test_a_pack_of_tiny_chunks_closes_before_16_mib_of_data(void **state)
{
    struct repo_pack_writer pw;
    uint8_t blob[100] = {0};
    size_t n = 0;

    size_t before = 0;

    repo_pack_writer_init(&pw);
    while (!backup_pack_full(&pw, n)) {
        before = repo_pack_writer_size(&pw, n);
        repo_pack_writer_put(&pw, blob, sizeof(blob));
        n++;
    }
    /* The table (45 bytes an entry) counts: the data alone is far from the size. */
    assert_true(n * sizeof(blob) < REPO_PACK_SIZE * 3 / 4);
    /* It closed at the first chunk that made it reach the size, not later. */
    assert_true(n > 1 && before < REPO_PACK_SIZE);
    assert_true(repo_pack_writer_size(&pw, n) >= REPO_PACK_SIZE);
    repo_pack_writer_free(&pw);
}

static void test_may_queue_bounds_jobs_and_bytes(void **state)
{
    struct repo_pack_writer pw;
    repo_pack_writer_init(&pw);

    assert_true(backup_may_queue(&pw, 0, 0, 0, 0, 0, false, MIB));
    /* BACKUP_JOBS jobs in flight (the batch being gathered among them): a chunk that
     * needs a new batch waits; one that joins the batch being gathered does not. */
    assert_false(backup_may_queue(&pw, 0, BACKUP_JOBS, 4, 4096, 0, false, 1));
    assert_true(backup_may_queue(&pw, 0, BACKUP_JOBS, 4, 4096, 0, true, 1));
    assert_true(backup_may_queue(&pw, 0, BACKUP_JOBS - 1, 3, 4096, 0, false, 1));
    /* Bytes in flight are bounded, but one larger chunk alone always runs. */
    assert_false(backup_may_queue(&pw, 0, 1, 1, BACKUP_JOB_BYTES - 100, 0, false, 1000));
    assert_false(backup_may_queue(&pw, 0, 1, 1, BACKUP_JOB_BYTES - 100, 0, true, 1000));
    assert_true(backup_may_queue(&pw, 0, 1, 1, BACKUP_JOB_BYTES - 1000, 0, false, 1000));
    assert_true(backup_may_queue(&pw, 0, 0, 0, 0, 0, false, 8 * MIB));
    repo_pack_writer_free(&pw);
}

static void test_may_queue_bounds_the_packs_in_memory(void **state)
{
    struct repo_pack_writer pw;
    uint8_t *blob = calloc(1, MIB);
    size_t n = 0;

    repo_pack_writer_init(&pw);
    /* An empty pack being filled: closed packs up to BACKUP_PACKS - 1 leave room. */
    assert_true(backup_may_queue(&pw, 0, 0, 0, 0, BACKUP_PACKS - 1, false, MIB));
    assert_false(backup_may_queue(&pw, 0, 0, 0, 0, BACKUP_PACKS, false, MIB));
    /* A pack one chunk from closing: the chunk that may close it waits for a closed
     * pack to go, so that no more than BACKUP_PACKS are in memory. */
    while (n < 15) {
        repo_pack_writer_put(&pw, blob, MIB);
        n++;
    }
    assert_true(backup_may_queue(&pw, n, 0, 0, 0, BACKUP_PACKS - 2, false, MIB));
    assert_false(backup_may_queue(&pw, n, 0, 0, 0, BACKUP_PACKS - 1, false, MIB));
    /* A small chunk that does not close it still may go. */
    assert_true(backup_may_queue(&pw, n, 0, 0, 0, BACKUP_PACKS - 1, false, 1000));
    repo_pack_writer_free(&pw);
    free(blob);
}

/* The chunks in flight count in the pack's table: a batch of tiny chunks being sealed
 * may close the pack as surely as their bytes. */
static void test_may_queue_counts_the_chunks_in_flight(void **state)
{
    struct repo_pack_writer pw;
    uint8_t *blob = calloc(1, MIB);
    size_t n = 0, room, chunks;

    repo_pack_writer_init(&pw);
    while (n < 15) {
        repo_pack_writer_put(&pw, blob, MIB);
        n++;
    }
    /* What is left of the pack, in table entries of tiny chunks with their seal. */
    room = (REPO_PACK_SIZE - repo_pack_writer_size(&pw, n)) / (45 + REPO_SEAL_EXTRA + 1);
    chunks = room + 1;
    assert_true(backup_may_queue(&pw, n, 1, 1, 1, BACKUP_PACKS - 1, true, 1));
    assert_false(backup_may_queue(&pw, n, 1, chunks, chunks, BACKUP_PACKS - 1, true, 1));
    repo_pack_writer_free(&pw);
    free(blob);
}

/* A batch takes chunks up to BACKUP_BATCH_CHUNKS and BACKUP_BATCH_BYTES; an empty one
 * takes none (a new batch is started instead). */
static void test_batch_joins_up_to_its_bounds(void **state)
{
    assert_false(backup_batch_joins(0, 0, 1));
    assert_true(backup_batch_joins(1, 100, 100));
    assert_true(backup_batch_joins(BACKUP_BATCH_CHUNKS - 1, 1000, 1));
    assert_false(backup_batch_joins(BACKUP_BATCH_CHUNKS, 1000, 1));
    assert_true(backup_batch_joins(1, BACKUP_BATCH_BYTES - 10, 10));
    assert_false(backup_batch_joins(1, BACKUP_BATCH_BYTES - 10, 11));
    /* A chunk larger than a batch is a batch alone. */
    assert_false(backup_batch_joins(1, 1, BACKUP_BATCH_BYTES));
}

/* A buffer given back is taken again: the smallest spare that holds the need. */
static void test_buf_reuses_the_smallest_spare_that_fits(void **state)
{
    struct backup b;
    uint8_t *small, *mid, *big, *p;
    size_t cap;

    memset(&b, 0, sizeof(b));
    small = backup_buf_take(&b, 256u << 10, &cap);
    assert_int_equal(cap, 256u << 10);
    mid = backup_buf_take(&b, MIB, &cap);
    big = backup_buf_take(&b, 2 * MIB, &cap);
    assert_int_equal(cap, 2 * MIB);
    backup_buf_give(&b, big, 2 * MIB);
    backup_buf_give(&b, small, 256u << 10);
    backup_buf_give(&b, mid, MIB);
    assert_int_equal(b.nspares, 3);
    /* 512 KiB: the 1 MiB spare, not the 2 MiB one. */
    p = backup_buf_take(&b, 512u << 10, &cap);
    assert_ptr_equal(p, mid);
    assert_int_equal(cap, MIB);
    assert_int_equal(b.nspares, 2);
    /* 100 bytes: the 256 KiB spare, its capacity unchanged. */
    assert_ptr_equal(backup_buf_take(&b, 100, &cap), small);
    assert_int_equal(cap, 256u << 10);
    backup_buf_give(&b, small, cap);
    backup_buf_give(&b, mid, MIB);
    while (b.nspares > 0)
        free(b.spares[--b.nspares].data);
}

/* No spare holds the need: the largest one grows (its bytes kept), none is made. */
static void test_buf_grows_the_largest_spare(void **state)
{
    struct backup b;
    uint8_t *a, *c, *p;
    size_t cap;

    memset(&b, 0, sizeof(b));
    a = backup_buf_take(&b, 256u << 10, &cap);
    c = backup_buf_take(&b, 512u << 10, &cap);
    memset(c, 0x5a, 512u << 10);
    backup_buf_give(&b, a, 256u << 10);
    backup_buf_give(&b, c, 512u << 10);
    p = backup_buf_take(&b, 3 * MIB / 2, &cap);
    assert_int_equal(cap, 3 * MIB / 2);
    assert_int_equal(p[(512u << 10) - 1], 0x5a); /* the 512 KiB one, grown */
    assert_int_equal(b.nspares, 1);
    assert_ptr_equal(b.spares[0].data, a);
    backup_buf_give(&b, p, cap);
    assert_int_equal(b.nspares, 2);
    while (b.nspares > 0)
        free(b.spares[--b.nspares].data);
}

/* A larger chunk's buffer is its own and is freed; at most BACKUP_JOBS spares. */
static void test_buf_keeps_no_large_buffer_and_at_most_jobs_spares(void **state)
{
    struct backup b;
    uint8_t *v[BACKUP_JOBS + 1], *large;
    size_t cap;

    memset(&b, 0, sizeof(b));
    for (unsigned i = 0; i < BACKUP_JOBS + 1; i++)
        v[i] = backup_buf_take(&b, 256u << 10, &cap);
    for (unsigned i = 0; i < BACKUP_JOBS + 1; i++)
        backup_buf_give(&b, v[i], 256u << 10);
    assert_int_equal(b.nspares, BACKUP_JOBS); /* the last one was freed (ASan: no leak) */
    large = backup_buf_take(&b, BACKUP_JOB_BYTES + 1, &cap);
    assert_int_equal(cap, BACKUP_JOB_BYTES + 1);
    assert_int_equal(b.nspares, BACKUP_JOBS); /* no spare was grown for it */
    for (unsigned i = 0; i < BACKUP_JOBS; i++)
        assert_ptr_not_equal(large, b.spares[i].data);
    backup_buf_give(&b, large, cap);
    assert_int_equal(b.nspares, BACKUP_JOBS);
    backup_buf_give(&b, NULL, 0);
    assert_int_equal(b.nspares, BACKUP_JOBS);
    while (b.nspares > 0)
        free(b.spares[--b.nspares].data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_closes_at_the_size_with_its_table),
        cmocka_unit_test(test_a_pack_of_tiny_chunks_closes_before_16_mib_of_data),
        cmocka_unit_test(test_may_queue_bounds_jobs_and_bytes),
        cmocka_unit_test(test_may_queue_bounds_the_packs_in_memory),
        cmocka_unit_test(test_may_queue_counts_the_chunks_in_flight),
        cmocka_unit_test(test_batch_joins_up_to_its_bounds),
        cmocka_unit_test(test_buf_reuses_the_smallest_spare_that_fits),
        cmocka_unit_test(test_buf_grows_the_largest_spare),
        cmocka_unit_test(test_buf_keeps_no_large_buffer_and_at_most_jobs_spares),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
