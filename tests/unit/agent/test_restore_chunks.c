/*
 * The restore's chunk set (agent/restore_chunks.h): a chunk set tree read into 24-byte
 * entries finds every chunk as the set held whole has it, and nothing else; chunks whose
 * hashes agree in their first 8 bytes are told apart (read again, whole); a malformed
 * set or a tree that cannot be read is refused, and leaves nothing behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "agent/agent.h"
#include "agent/restore_chunks.h"
#include "repo/mstore.h"

static void hash_of(uint32_t i, uint8_t h[REPO_HASH_LEN])
{
    SHA256((const uint8_t *)&i, sizeof(i), h);
}

static void pack_id(uint32_t p, uint8_t id[REPO_HASH_LEN])
{
    uint8_t b[5] = {'p', 0, 0, 0, 0};
    memcpy(b + 1, &p, sizeof(p));
    SHA256(b, sizeof(b), id);
}

static void chunk_of(uint32_t i, struct repo_chunk *c)
{
    memset(c, 0, sizeof(*c));
    hash_of(i, c->hash);
    c->offset = 8 + i * 200;
    c->stored = 100 + i % 50;
    c->plain = REPO_CHUNK_PLAIN_MAX - i % 40; /* the largest lengths fit */
    c->flags = i % 2 ? REPO_BLOB_ZSTD : 0;
}

/* A chunk set tree in memory; fail_after > 0 makes that many fetches work, then fail. */
struct tree {
    struct mstore_tree mt;
    int fetches, fail_after;
    bool gone; /* every fetch fails */
};

static int fetch_cb(void *arg, const struct repo_mref *ref, uint8_t *sealed, struct util_err *err)
{
    struct tree *t = arg;
    if ((++t->fetches > t->fail_after && t->fail_after > 0) || t->gone)
        return util_err_set(err, UTIL_EIO, "the bucket went away");
    return mstore_fetch(&t->mt.ms, ref, sealed, err);
}

static void tree_begin(struct tree *t)
{
    memset(t, 0, sizeof(*t));
    mstore_tree_begin(&t->mt);
}

static void tree_end(struct tree *t)
{
    struct util_err err = {0};
    assert_int_equal(mstore_tree_end(&t->mt, &err), 0);
}

/* The set held whole, written as a backup writes it. */
static void tree_of_set(struct tree *t, struct repo_chunkset *s)
{
    struct util_err err = {0};
    repo_chunkset_sort(s);
    tree_begin(t);
    assert_int_equal(repo_chunkset_write(s, &t->mt.w, &err), 0);
    tree_end(t);
}

static int read_tree(struct tree *t, struct rx_chunks *x, struct util_err *err)
{
    return rx_chunks_read(x, &t->mt.k, &t->mt.root, fetch_cb, t, err);
}

/* Every chunk of s is found in x as s has it, its pack naming the same id. */
static void assert_same(const struct repo_chunkset *s, const struct rx_chunks *x)
{
    assert_int_equal(x->npacks, s->npacks);
    for (size_t i = 0; i < s->n; i++) {
        struct repo_chunk c;
        const struct repo_chunk *w = &s->v[i];
        assert_true(rx_chunks_find(x, w->hash, &c));
        assert_memory_equal(c.hash, w->hash, REPO_HASH_LEN);
        assert_memory_equal(x->packs[c.pack], s->packs[w->pack], REPO_HASH_LEN);
        assert_int_equal(c.offset, w->offset);
        assert_int_equal(c.stored, w->stored);
        assert_int_equal(c.plain, w->plain);
        assert_int_equal(c.flags, w->flags);
    }
}

static void test_every_chunk_is_found_as_the_set_has_it(void **state)
{
    struct repo_chunkset s;
    struct rx_chunks x;
    struct tree t;
    struct util_err err = {0};

    /* Enough chunks, in packs of 37, that the sort's partitions are exercised. */
    repo_chunkset_init(&s);
    for (uint32_t i = 0; i < 5000; i++) {
        struct repo_chunk c;
        uint8_t id[REPO_HASH_LEN];
        chunk_of(i, &c);
        pack_id(i / 37, id);
        c.pack = repo_chunkset_pack(&s, id);
        repo_chunkset_add(&s, &c);
    }
    tree_of_set(&t, &s);
    assert_int_equal(read_tree(&t, &x, &err), 0);
    assert_int_equal(x.n, 5000);
    assert_int_equal(x.nwhole, 0); /* no keys agree: nothing read twice */
    assert_int_equal(sizeof(x.v[0]), 24);
    for (size_t i = 1; i < x.n; i++)
        assert_true(x.v[i - 1].key < x.v[i].key);
    assert_same(&s, &x);
    /* Hashes the set lacks are not found. */
    for (uint32_t i = 5000; i < 5100; i++) {
        struct repo_chunk c;
        uint8_t h[REPO_HASH_LEN];
        hash_of(i, h);
        assert_false(rx_chunks_find(&x, h, &c));
    }
    rx_chunks_free(&x);
    rx_chunks_free(&x); /* again: nothing */
    repo_chunkset_free(&s);
    mstore_free(&t.mt.ms);
}

static void test_an_empty_set(void **state)
{
    struct repo_chunkset s;
    struct rx_chunks x;
    struct tree t;
    struct util_err err = {0};
    struct repo_chunk c;
    uint8_t h[REPO_HASH_LEN];

    repo_chunkset_init(&s);
    tree_of_set(&t, &s);
    assert_int_equal(read_tree(&t, &x, &err), 0);
    assert_int_equal(x.n, 0);
    hash_of(1, h);
    assert_false(rx_chunks_find(&x, h, &c));
    rx_chunks_free(&x);
    repo_chunkset_free(&s);
    mstore_free(&t.mt.ms);
}

/* Chunks whose hashes agree in their first 8 bytes are kept whole and told apart; a hash
 * the set lacks that agrees with them too is not found. */
static void test_chunks_agreeing_in_their_first_bytes_are_never_one(void **state)
{
    struct repo_chunkset s;
    struct rx_chunks x;
    struct tree t;
    struct util_err err = {0};
    struct repo_chunk c, absent;

    repo_chunkset_init(&s);
    for (uint32_t i = 0; i < 300; i++) {
        uint8_t id[REPO_HASH_LEN];
        chunk_of(i, &c);
        if (i == 101 || i == 202) /* chunk 1's first 8 bytes, their own rest */
            memcpy(c.hash, s.v[1].hash, 8);
        if (i == 250) /* the last byte differs only */
            memcpy(c.hash, s.v[7].hash, REPO_HASH_LEN - 1);
        pack_id(i / 10, id);
        c.pack = repo_chunkset_pack(&s, id);
        repo_chunkset_add(&s, &c);
    }
    chunk_of(1, &absent);
    absent.hash[20] ^= 0x40;
    tree_of_set(&t, &s);
    assert_int_equal(read_tree(&t, &x, &err), 0);
    assert_int_equal(x.n, 300);
    assert_int_equal(x.nwhole, 5); /* 1, 101, 202; 7, 250 */
    assert_same(&s, &x);
    assert_false(rx_chunks_find(&x, absent.hash, &c));
    rx_chunks_free(&x);

    /* The second read fails: the error, and nothing is kept. */
    assert_true(t.fetches >= 2 && t.fetches % 2 == 0); /* two reads of the tree */
    t.fail_after = t.fetches / 2;
    t.fetches = 0;
    assert_int_equal(read_tree(&t, &x, &err), UTIL_EIO);
    assert_string_equal(err.msg, "the bucket went away");
    assert_null(x.v);
    assert_null(x.packs);
    assert_null(x.whole);
    repo_chunkset_free(&s);
    mstore_free(&t.mt.ms);
}

static void test_a_tree_that_cannot_be_read(void **state)
{
    struct repo_chunkset s;
    struct rx_chunks x;
    struct tree t;
    struct util_err err = {0};
    struct repo_chunk c;
    uint8_t id[REPO_HASH_LEN];

    repo_chunkset_init(&s);
    chunk_of(1, &c);
    pack_id(1, id);
    c.pack = repo_chunkset_pack(&s, id);
    repo_chunkset_add(&s, &c);
    tree_of_set(&t, &s);
    t.gone = true;
    assert_int_equal(read_tree(&t, &x, &err), UTIL_EIO);
    assert_string_equal(err.msg, "the bucket went away");
    assert_null(x.v);
    assert_null(x.packs);
    repo_chunkset_free(&s);
    mstore_free(&t.mt.ms);
}

/* A tree of the given records: 'P' n (pack n) or 'C' n (chunk n), in that order. */
static void tree_of_records(struct tree *t, const char *recs, const uint32_t *nums)
{
    struct util_err err = {0};
    tree_begin(t);
    for (size_t i = 0; recs[i]; i++) {
        if (recs[i] == 'P') {
            uint8_t id[REPO_HASH_LEN];
            memset(id, 0, sizeof(id));
            id[0] = (uint8_t)nums[i];
            assert_int_equal(repo_chunkset_rec_pack(&t->mt.w, id, &err), 0);
        } else {
            struct repo_chunk c;
            chunk_of(nums[i], &c);
            assert_int_equal(repo_chunkset_rec_chunk(&t->mt.w, &c, &err), 0);
        }
    }
    tree_end(t);
}

static void assert_malformed(const char *recs, const uint32_t *nums)
{
    struct tree t;
    struct rx_chunks x;
    struct util_err err = {0};
    tree_of_records(&t, recs, nums);
    assert_int_equal(read_tree(&t, &x, &err), UTIL_EIO);
    assert_string_equal(err.msg, "a chunk set record is malformed");
    assert_null(x.v);
    assert_null(x.packs);
    assert_null(x.whole);
    mstore_free(&t.mt.ms);
}

static void test_malformed_sets_are_refused(void **state)
{
    /* A chunk before any pack. */
    assert_malformed("CP", (uint32_t[]){1, 5});
    /* A hash twice, in one pack or in two. */
    assert_malformed("PCCC", (uint32_t[]){5, 1, 2, 1});
    assert_malformed("PCPC", (uint32_t[]){5, 1, 6, 1});
    /* The same records in order are a set. */
    struct tree t;
    struct rx_chunks x;
    struct util_err err = {0};
    tree_of_records(&t, "PCPC", (uint32_t[]){5, 1, 6, 2});
    assert_int_equal(read_tree(&t, &x, &err), 0);
    assert_int_equal(x.n, 2);
    assert_int_equal(x.npacks, 2);
    rx_chunks_free(&x);
    mstore_free(&t.mt.ms);
}

/* A backup writes its set in the file list's order: a pack has several runs of
 * records, in any order, and is one pack of the set; chunks kept whole (their keys
 * agree) get their pack's index too. */
static void test_a_pack_in_several_runs_is_one_pack(void **state)
{
    static const uint8_t packs[] = {5, 0, 4, 0, 5, 0, 4, 0}; /* 0: the next chunk */
    struct tree t;
    struct rx_chunks x;
    struct repo_chunk c[4], got;
    struct util_err err = {0};
    size_t next = 0;

    for (uint32_t i = 0; i < 4; i++)
        chunk_of(i + 1, &c[i]);
    memcpy(c[2].hash, c[0].hash, 8); /* chunk 3 agrees with chunk 1: both kept whole */
    tree_begin(&t);
    /* Pack 5: chunk 1; pack 4: chunk 2; pack 5: chunk 3; pack 4: chunk 4. */
    for (size_t r = 0; r < sizeof(packs); r++) {
        if (packs[r] == 0) {
            assert_int_equal(repo_chunkset_rec_chunk(&t.mt.w, &c[next++], &err), 0);
            continue;
        }
        uint8_t id[REPO_HASH_LEN] = {packs[r]};
        assert_int_equal(repo_chunkset_rec_pack(&t.mt.w, id, &err), 0);
    }
    tree_end(&t);
    assert_int_equal(read_tree(&t, &x, &err), 0);
    assert_int_equal(x.n, 4);
    assert_int_equal(x.npacks, 2);
    assert_int_equal(x.nwhole, 2);
    assert_int_equal(x.packs[0][0], 4); /* each pack once, by hash */
    assert_int_equal(x.packs[1][0], 5);
    static const uint32_t want[] = {1, 0, 1, 0};
    for (size_t i = 0; i < 4; i++) {
        assert_true(rx_chunks_find(&x, c[i].hash, &got));
        assert_int_equal(got.pack, want[i]);
        assert_int_equal(got.offset, c[i].offset);
    }
    rx_chunks_free(&x);
    mstore_free(&t.mt.ms);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_chunk_is_found_as_the_set_has_it),
        cmocka_unit_test(test_an_empty_set),
        cmocka_unit_test(test_chunks_agreeing_in_their_first_bytes_are_never_one),
        cmocka_unit_test(test_a_tree_that_cannot_be_read),
        cmocka_unit_test(test_malformed_sets_are_refused),
        cmocka_unit_test(test_a_pack_in_several_runs_is_one_pack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
