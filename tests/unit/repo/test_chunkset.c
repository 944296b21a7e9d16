/*
 * The chunk set's records (internal/repo/chunkset.c): a set held whole written and read
 * back, a pack in several runs read as one pack, repo_packs_unique, no leaf ending
 * with a pack's record, and malformed records refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mstore.h"
#include "repo/repo.h"

#define RUN1 "20261202T170127Z-9f3c2a1b7d4e6058"

static void test_chunkset_tree(void **state)
{
    struct repo_keys k = mstore_keys(6);
    struct mstore s = {.k = &k};
    struct repo_chunkset set, back;
    struct repo_tree_writer w;
    struct repo_tree_reader tr;
    struct repo_root r1, r2;
    struct util_err err = {0};
    uint8_t pack[REPO_HASH_LEN];

    memcpy(s.run, RUN1, sizeof(s.run));
    repo_chunkset_init(&set);
    for (int p = 0; p < 3; p++) {
        memset(pack, 0x10 * (3 - p), sizeof(pack));
        uint32_t pi = repo_chunkset_pack(&set, pack);
        for (uint32_t i = 0; i < 3000; i++) {
            struct repo_chunk c;
            memset(&c, 0, sizeof(c));
            uint32_t v = (uint32_t)p * 100000 + i;
            memcpy(c.hash, &v, sizeof(v));
            c.hash[31] = (uint8_t)(v * 7);
            c.pack = pi;
            c.offset = 8 + i * 100;
            c.stored = 100;
            c.plain = 72;
            repo_chunkset_add(&set, &c);
        }
    }
    repo_chunkset_sort(&set);
    repo_tree_writer_init(&w, REPO_TREE_CHUNKS, &k, mstore_cb, &s);
    assert_int_equal(repo_chunkset_write(&set, &w, &err), 0);
    assert_int_equal(repo_tree_writer_finish(&w, &r1, &err), 0);
    repo_tree_writer_free(&w);
    repo_tree_reader_init(&tr, &k, REPO_TREE_CHUNKS, &r1, mstore_fetch, &s);
    assert_int_equal(repo_chunkset_read(&back, &tr, &err), 0);
    repo_tree_reader_free(&tr);
    assert_int_equal(back.n, set.n);
    assert_int_equal(back.npacks, 3);
    for (size_t i = 0; i < set.n; i++) {
        assert_memory_equal(back.v[i].hash, set.v[i].hash, REPO_HASH_LEN);
        assert_memory_equal(back.packs[back.v[i].pack], set.packs[set.v[i].pack], REPO_HASH_LEN);
        assert_int_equal(back.v[i].offset, set.v[i].offset);
    }
    /* Written again with another pack order in memory: the same tree. */
    s.new_chunks = 0;
    repo_tree_writer_init(&w, REPO_TREE_CHUNKS, &k, mstore_cb, &s);
    assert_int_equal(repo_chunkset_write(&back, &w, &err), 0);
    assert_int_equal(repo_tree_writer_finish(&w, &r2, &err), 0);
    repo_tree_writer_free(&w);
    assert_int_equal(s.new_chunks, 0);
    assert_memory_equal(r1.ref.hash, r2.ref.hash, REPO_HASH_LEN);
    repo_chunkset_free(&set);
    repo_chunkset_free(&back);
    mstore_free(&s);
}

/* Chunk set records a writer never makes: refused, not read as a set. */
static void test_chunkset_refuses(void **state)
{
    struct repo_keys k = mstore_keys(7);
    struct util_err err = {0};
    uint8_t pa[1 + REPO_HASH_LEN] = {'P'}, pb[1 + REPO_HASH_LEN] = {'P'};
    uint8_t c[1 + REPO_HASH_LEN + 4] = {'c'};
    memset(pa + 1, 0x20, REPO_HASH_LEN);
    memset(pb + 1, 0x10, REPO_HASH_LEN);
    c[1 + REPO_HASH_LEN] = 8;      /* offset */
    c[1 + REPO_HASH_LEN + 1] = 40; /* stored */
    c[1 + REPO_HASH_LEN + 2] = 9;  /* plain */
    c[1 + REPO_HASH_LEN + 3] = 0;  /* flags */
    static const struct {
        const char *what;
        int recs[4]; /* 1 = pack a, 2 = pack b, 3 = a chunk, 4 = a bad tag; 0 ends */
    } cases[] = {
        {"a chunk before any pack", {3, 0}},
        {"an unknown record", {1, 4, 0}},
        {"the same chunk twice", {1, 3, 3, 0}},
        {"the same chunk in two packs", {1, 3, 2, 3}},
    };
    for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
        struct mstore ms = {.k = &k, .run = RUN1};
        struct repo_tree_writer w;
        struct repo_tree_reader r;
        struct repo_root root;
        struct repo_chunkset set;
        uint8_t bad[2] = {'x', 0};
        repo_tree_writer_init(&w, REPO_TREE_CHUNKS, &k, mstore_cb, &ms);
        for (int i = 0; i < 4 && cases[t].recs[i]; i++) {
            int v = cases[t].recs[i];
            const uint8_t *rec = v == 1 ? pa : v == 2 ? pb : v == 3 ? c : bad;
            size_t len = v == 1 || v == 2 ? sizeof(pa) : v == 3 ? sizeof(c) : sizeof(bad);
            assert_int_equal(repo_tree_writer_add(&w, rec, len, &err), 0);
        }
        assert_int_equal(repo_tree_writer_finish(&w, &root, &err), 0);
        repo_tree_writer_free(&w);
        repo_tree_reader_init(&r, &k, REPO_TREE_CHUNKS, &root, mstore_fetch, &ms);
        if (repo_chunkset_read(&set, &r, &err) != UTIL_EIO)
            fail_msg("%s: read as a chunk set", cases[t].what);
        assert_non_null(strstr(err.msg, "malformed"));
        assert_null(set.v);
        repo_tree_reader_free(&r);
        mstore_free(&ms);
    }
}

/* A backup writes each pack's record at each run of its chunks: one pack of the set. */
static void test_chunkset_runs(void **state)
{
    struct repo_keys k = mstore_keys(8);
    struct mstore ms = {.k = &k, .run = RUN1};
    struct repo_tree_writer w;
    struct repo_tree_reader r;
    struct repo_root root;
    struct repo_chunkset set;
    struct util_err err = {0};
    uint8_t pa[REPO_HASH_LEN], pb[REPO_HASH_LEN];
    struct repo_chunk c[3];

    memset(pa, 0x20, sizeof(pa));
    memset(pb, 0x10, sizeof(pb));
    for (int i = 0; i < 3; i++) {
        memset(&c[i], 0, sizeof(c[i]));
        c[i].hash[0] = (uint8_t)(3 - i); /* the set sorts them backwards */
        c[i].offset = 8 + 100 * (uint32_t)i;
        c[i].stored = 100;
        c[i].plain = 72;
    }
    repo_tree_writer_init(&w, REPO_TREE_CHUNKS, &k, mstore_cb, &ms);
    assert_int_equal(repo_chunkset_rec_pack(&w, pa, &err), 0);
    assert_int_equal(repo_chunkset_rec_chunk(&w, &c[0], &err), 0);
    assert_int_equal(repo_chunkset_rec_pack(&w, pb, &err), 0);
    assert_int_equal(repo_chunkset_rec_chunk(&w, &c[1], &err), 0);
    assert_int_equal(repo_chunkset_rec_pack(&w, pa, &err), 0);
    assert_int_equal(repo_chunkset_rec_chunk(&w, &c[2], &err), 0);
    assert_int_equal(repo_tree_writer_finish(&w, &root, &err), 0);
    repo_tree_writer_free(&w);
    repo_tree_reader_init(&r, &k, REPO_TREE_CHUNKS, &root, mstore_fetch, &ms);
    assert_int_equal(repo_chunkset_read(&set, &r, &err), 0);
    repo_tree_reader_free(&r);
    assert_int_equal(set.n, 3);
    assert_int_equal(set.npacks, 2);
    assert_memory_equal(set.packs[0], pb, REPO_HASH_LEN);
    assert_memory_equal(set.packs[1], pa, REPO_HASH_LEN);
    /* Sorted by hash: c[2], c[1], c[0]. */
    assert_int_equal(set.v[0].hash[0], 1);
    assert_int_equal(set.v[0].pack, 1);
    assert_int_equal(set.v[0].offset, 208);
    assert_int_equal(set.v[1].pack, 0);
    assert_int_equal(set.v[2].pack, 1);
    repo_chunkset_free(&set);
    mstore_free(&ms);
}

static void test_packs_unique(void **state)
{
    uint8_t packs[5][REPO_HASH_LEN];
    static const uint8_t fill[5] = {3, 1, 3, 2, 1};
    static const uint32_t want[5] = {2, 0, 2, 1, 0};
    size_t n = 5;
    for (size_t i = 0; i < 5; i++)
        memset(packs[i], fill[i], REPO_HASH_LEN);
    uint32_t *remap = repo_packs_unique(packs, &n);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(packs[i][31], i + 1);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(remap[i], want[i]);
    free(remap);
    n = 0;
    remap = repo_packs_unique(packs, &n);
    assert_int_equal(n, 0);
    free(remap);
}

/* The last record of a leaf: a pack's (true) or a chunk's. */
static int last_rec_cb(void *arg, const uint8_t *pack, const struct repo_chunk *c,
                       struct util_err *err)
{
    *(bool *)arg = pack != NULL;
    return 0;
}

/* A pack's record heads its chunks: no leaf ends with one, whatever the key. */
static void test_no_leaf_ends_with_a_pack(void **state)
{
    for (uint8_t fill = 1; fill <= 4; fill++) {
        struct repo_keys k = mstore_keys(fill);
        struct mstore ms = {.k = &k, .run = RUN1};
        struct repo_tree_writer w;
        struct repo_tree_reader r;
        struct repo_root root;
        struct util_err err = {0};
        const uint8_t *recs;
        size_t len, leaves = 0;
        int rc;

        repo_tree_writer_init(&w, REPO_TREE_CHUNKS, &k, mstore_cb, &ms);
        /* 3,000 packs of one chunk each: half the records are packs'. */
        for (uint32_t p = 0; p < 3000; p++) {
            uint8_t id[REPO_HASH_LEN] = {0};
            struct repo_chunk c;
            memcpy(id, &p, sizeof(p));
            memset(&c, 0, sizeof(c));
            memcpy(c.hash, &p, sizeof(p));
            c.hash[31] = 1;
            c.offset = 8;
            c.stored = 100;
            c.plain = 72;
            assert_int_equal(repo_chunkset_rec_pack(&w, id, &err), 0);
            assert_int_equal(repo_chunkset_rec_chunk(&w, &c, &err), 0);
        }
        assert_int_equal(repo_tree_writer_finish(&w, &root, &err), 0);
        repo_tree_writer_free(&w);
        repo_tree_reader_init(&r, &k, REPO_TREE_CHUNKS, &root, mstore_fetch, &ms);
        while ((rc = repo_tree_reader_next(&r, &recs, &len, &err)) == 1) {
            bool pack_last = false;
            assert_int_equal(repo_chunkset_leaf_each(recs, len, last_rec_cb, &pack_last, &err), 0);
            assert_false(pack_last);
            leaves++;
        }
        assert_int_equal(rc, 0);
        assert_true(leaves > 50);
        repo_tree_reader_free(&r);
        mstore_free(&ms);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunkset_tree),
        cmocka_unit_test(test_chunkset_refuses),
        cmocka_unit_test(test_chunkset_runs),
        cmocka_unit_test(test_packs_unique),
        cmocka_unit_test(test_no_leaf_ends_with_a_pack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
