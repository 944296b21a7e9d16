/*
 * The backup's chunk index (agent/chunkidx.h) on real files in /tmp: lookups by the
 * whole hash (chunks whose first twelve bytes agree are never one), the parent's
 * records, the chunk set it writes (the set a set held whole holds, in the file
 * list's order: a changed chunk in its old one's place, an unchanged run the parent's
 * tree to the root, seals out of order put back in order), and every failure: a
 * directory it cannot create in, a write and a read of its file that fail, malformed
 * records, chunks never sealed.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "agent/agent.h"
#include "agent/chunkidx.h"
#include "repo/mstore.h"

/* A chunk's hash from a number: SHA-256 of it. */
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
    c->stored = 100 + i % 50;
    c->plain = 80 + i % 40;
    c->flags = i % 2 ? REPO_BLOB_ZSTD : 0;
}

/* The root of a chunk set tree: what the two ways write, compared. */
static void tree_begin(struct mstore_tree *t)
{
    mstore_tree_begin(t);
}

static void tree_end(struct mstore_tree *t)
{
    struct util_err err = {0};
    assert_int_equal(mstore_tree_end(t, &err), 0);
}

/* Every record of a tree, concatenated (a parent's chunk set as a backup reads it). */
static void tree_records(struct mstore_tree *t, struct util_buf *out)
{
    struct repo_tree_reader r;
    struct util_err err = {0};
    repo_tree_reader_init(&r, &t->k, REPO_TREE_CHUNKS, &t->root, mstore_fetch, &t->ms);
    assert_int_equal(repo_tree_read_all(&r, out, &err), 0);
    repo_tree_reader_free(&r);
}

/* The set a tree holds equals want (sorted): every chunk, its pack and place. */
static void assert_tree_holds(struct mstore_tree *t, const struct repo_chunkset *want)
{
    struct repo_tree_reader r;
    struct repo_chunkset got;
    struct util_err err = {0};
    repo_tree_reader_init(&r, &t->k, REPO_TREE_CHUNKS, &t->root, mstore_fetch, &t->ms);
    assert_int_equal(repo_chunkset_read(&got, &r, &err), 0);
    repo_tree_reader_free(&r);
    assert_int_equal(got.n, want->n);
    for (size_t i = 0; i < got.n; i++) {
        const struct repo_chunk *a = &got.v[i], *b = &want->v[i];
        assert_memory_equal(a->hash, b->hash, REPO_HASH_LEN);
        assert_memory_equal(got.packs[a->pack], want->packs[b->pack], REPO_HASH_LEN);
        assert_int_equal(a->offset, b->offset);
        assert_int_equal(a->stored, b->stored);
        assert_int_equal(a->plain, b->plain);
        assert_int_equal(a->flags, b->flags);
    }
    repo_chunkset_free(&got);
}

/* A tree's records as a string: "P<n>" for a pack's record (pack_id(n), n below
 * 1,000), "c<i>" for chunk i (its hash is hash_of(i), i below 200 or from 900,000 to
 * 900,009), space-separated. */
struct rec_names {
    char *s;
    size_t len, cap;
};

static void rec_names_put(struct rec_names *n, const char *word)
{
    size_t w = strlen(word);
    n->s = util_grow(n->s, &n->cap, n->len + w + 2, 1);
    if (n->len > 0)
        n->s[n->len++] = ' ';
    memcpy(n->s + n->len, word, w + 1);
    n->len += w;
}

static int rec_names_cb(void *arg, const uint8_t *pack, const struct repo_chunk *c,
                        struct util_err *err)
{
    char word[16];
    if (pack != NULL) {
        for (uint32_t p = 0; p < 1000; p++) {
            uint8_t id[REPO_HASH_LEN];
            pack_id(p, id);
            if (memcmp(id, pack, REPO_HASH_LEN) == 0) {
                snprintf(word, sizeof(word), "P%u", (unsigned)p);
                rec_names_put(arg, word);
                return 0;
            }
        }
        rec_names_put(arg, "P?");
        return 0;
    }
    for (uint32_t k = 0; k < 210; k++) {
        uint32_t i = k < 200 ? k : 900000 + k - 200;
        uint8_t h[REPO_HASH_LEN];
        hash_of(i, h);
        if (memcmp(h, c->hash, REPO_HASH_LEN) == 0) {
            snprintf(word, sizeof(word), "c%u", (unsigned)i);
            rec_names_put(arg, word);
            return 0;
        }
    }
    rec_names_put(arg, "c?");
    return 0;
}

static char *tree_names(struct mstore_tree *t)
{
    struct util_buf recs;
    struct rec_names n = {0};
    struct util_err err = {0};
    util_buf_init(&recs);
    tree_records(t, &recs);
    assert_int_equal(
        repo_chunkset_leaf_each((const uint8_t *)recs.data, recs.len, rec_names_cb, &n, &err), 0);
    util_buf_free(&recs);
    return n.s != NULL ? n.s : util_strdup("");
}

static void open_idx(struct chunkidx *x)
{
    struct util_err err = {0};
    assert_int_equal(chunkidx_open(x, "/tmp", &err), 0);
}

/* Adds chunks [from, to) as new, seals them in packs of per chunks named pack_id(base
 * + k), and puts each into held (pack index through repo_chunkset_pack). */
static void add_new(struct chunkidx *x, uint32_t from, uint32_t to, uint32_t per, uint32_t base,
                    struct repo_chunkset *held)
{
    struct util_err err = {0};
    uint32_t offset = 8, pack = base;
    for (uint32_t i = from; i < to; i++) {
        struct repo_chunk c;
        uint32_t pos;
        chunk_of(i, &c);
        assert_int_equal(chunkidx_find(x, c.hash, &pos, &err), 0);
        assert_int_equal(chunkidx_add(x, c.hash, &err), 0);
        assert_int_equal(chunkidx_find(x, c.hash, &pos, &err), 1);
        assert_false(chunkidx_is_parent(x, pos));
        c.offset = offset;
        offset += c.stored;
        c.pack = chunkidx_anchor(x);
        assert_int_equal(chunkidx_sealed(x, &c, &err), 0);
        if (held != NULL) {
            uint8_t id[REPO_HASH_LEN];
            pack_id(pack, id);
            c.pack = repo_chunkset_pack(held, id);
            repo_chunkset_add(held, &c);
        }
        if ((i - from + 1) % per == 0 || i + 1 == to) {
            uint8_t id[REPO_HASH_LEN];
            size_t n = chunkidx_members(x);
            assert_int_equal(n, (i - from) % per + 1);
            /* The pack table's entries come back in the order they were sealed. */
            for (size_t m = 0; m < n; m++) {
                struct repo_chunk want;
                chunk_of(i + 1 - (uint32_t)n + (uint32_t)m, &want);
                assert_memory_equal(chunkidx_member(x, m)->hash, want.hash, REPO_HASH_LEN);
            }
            pack_id(pack++, id);
            assert_int_equal(chunkidx_pack_closed(x, id, &err), 0);
            assert_int_equal(chunkidx_members(x), 0);
            offset = 8;
        }
    }
}

static void test_open_fails_where_it_cannot_create(void **state)
{
    struct chunkidx x;
    struct util_err err = {0};
    assert_int_equal(chunkidx_open(&x, "/nonexistent-lode-dir", &err), UTIL_EIO);
    assert_non_null(
        strstr(err.msg, "cannot create the chunk index's file in /nonexistent-lode-dir"));
    assert_non_null(strstr(err.msg, "TMPDIR"));
    chunkidx_close(&x); /* again: nothing */
}

/* A first backup's records: pack k, then chunks k x per to (k + 1) x per, in order. */
struct sealed_order {
    uint32_t per, next_chunk, next_pack;
};

static int sealed_order_cb(void *arg, const uint8_t *pack, const struct repo_chunk *c,
                           struct util_err *err)
{
    struct sealed_order *o = arg;
    uint8_t want[REPO_HASH_LEN];
    if (pack != NULL) {
        assert_int_equal(o->next_chunk % o->per, 0);
        pack_id(o->next_pack++, want);
        assert_memory_equal(pack, want, REPO_HASH_LEN);
        return 0;
    }
    hash_of(o->next_chunk++, want);
    assert_memory_equal(c->hash, want, REPO_HASH_LEN);
    return 0;
}

static void test_a_first_backup_writes_its_chunks_as_sealed(void **state)
{
    struct chunkidx x;
    struct repo_chunkset held;
    struct mstore_tree b;
    struct util_buf recs;
    struct sealed_order o = {.per = 700};
    struct util_err err = {0};
    uint8_t h[REPO_HASH_LEN];
    uint32_t pos;

    open_idx(&x);
    repo_chunkset_init(&held);
    /* 5,000 chunks: past the first table (1,024 slots) and several file blocks. */
    add_new(&x, 0, 5000, 700, 0, &held);
    assert_int_equal(chunkidx_new_count(&x), 5000);
    for (uint32_t i = 0; i < 5000; i += 7) {
        hash_of(i, h);
        assert_int_equal(chunkidx_find(&x, h, &pos, &err), 1);
        assert_int_equal(pos, i);
    }
    hash_of(5000, h);
    assert_int_equal(chunkidx_find(&x, h, &pos, &err), 0);

    tree_begin(&b);
    assert_int_equal(chunkidx_write(&x, &b.w, &err), 0);
    tree_end(&b);
    repo_chunkset_sort(&held);
    assert_tree_holds(&b, &held);
    util_buf_init(&recs);
    tree_records(&b, &recs);
    assert_int_equal(
        repo_chunkset_leaf_each((const uint8_t *)recs.data, recs.len, sealed_order_cb, &o, &err),
        0);
    assert_int_equal(o.next_chunk, 5000);
    assert_int_equal(o.next_pack, 8);

    util_buf_free(&recs);
    mstore_free(&b.ms);
    repo_chunkset_free(&held);
    chunkidx_close(&x);
}

/* A parent of 3,000 chunks in three packs; this snapshot uses every third chunk of the
 * first two packs and none of the third, and adds n_new new ones. */
static void parent_and_new(uint32_t n_new)
{
    struct chunkidx x;
    struct repo_chunkset parent, want;
    struct mstore_tree p, b;
    struct util_buf recs;
    struct util_err err = {0};
    uint8_t id[REPO_HASH_LEN];

    repo_chunkset_init(&parent);
    repo_chunkset_init(&want);
    for (uint32_t i = 0; i < 3000; i++) {
        struct repo_chunk c;
        chunk_of(100000 + i, &c);
        c.offset = 8 + i % 1000 * 200;
        pack_id(900 + i / 1000, id);
        c.pack = repo_chunkset_pack(&parent, id);
        repo_chunkset_add(&parent, &c);
        if (i < 2000 && i % 3 == 0) {
            c.pack = repo_chunkset_pack(&want, id);
            repo_chunkset_add(&want, &c);
        }
    }
    repo_chunkset_sort(&parent);
    tree_begin(&p);
    assert_int_equal(repo_chunkset_write(&parent, &p.w, &err), 0);
    tree_end(&p);
    util_buf_init(&recs);
    tree_records(&p, &recs);

    open_idx(&x);
    assert_int_equal(
        repo_chunkset_leaf_each((const uint8_t *)recs.data, recs.len, chunkidx_parent_cb, &x, &err),
        0);
    for (uint32_t i = 0; i < 3000; i++) {
        uint8_t h[REPO_HASH_LEN];
        uint32_t pos;
        hash_of(100000 + i, h);
        assert_int_equal(chunkidx_find(&x, h, &pos, &err), 1);
        assert_true(chunkidx_is_parent(&x, pos));
        if (i < 2000 && i % 3 == 0)
            chunkidx_use(&x, pos);
    }
    if (n_new > 0)
        add_new(&x, 0, n_new, 400, 0, &want);

    repo_chunkset_sort(&want);
    tree_begin(&b);
    assert_int_equal(chunkidx_write(&x, &b.w, &err), 0);
    tree_end(&b);
    assert_tree_holds(&b, &want);

    util_buf_free(&recs);
    mstore_free(&p.ms);
    mstore_free(&b.ms);
    repo_chunkset_free(&parent);
    repo_chunkset_free(&want);
    chunkidx_close(&x);
}

static void test_parent_chunks_used_and_new_ones(void **state)
{
    parent_and_new(1500);
}

/* An unchanged re-run writes no pack: the set is the parent's used chunks alone (the
 * empty list of new packs once reached qsort as a null pointer, which UBSan reports). */
static void test_parent_chunks_only(void **state)
{
    parent_and_new(0);
}

/* A first backup of chunks [0, n) in packs of per (pack_id(0) on), its set written as
 * tree p. */
static void first_backup(struct mstore_tree *p, uint32_t n, uint32_t per)
{
    struct chunkidx x;
    struct util_err err = {0};
    open_idx(&x);
    add_new(&x, 0, n, per, 0, NULL);
    tree_begin(p);
    assert_int_equal(chunkidx_write(&x, &p->w, &err), 0);
    tree_end(p);
    chunkidx_close(&x);
}

/*
 * A re-run whose parent is tree p (chunks [0, n) as first_backup wrote them): the walk
 * uses each chunk in order, but chunks a and b (when below n) are replaced by new
 * chunks 900000 and 900001, sealed into pack_id(999) in the other order (b's first).
 * The set is written into p's store, which keeps what the parent has (as a backup
 * does): returns the metadata chunks it added, and its root in *root.
 */
static uint64_t rerun(struct mstore_tree *p, uint32_t n, uint32_t a, uint32_t b,
                      struct repo_root *root)
{
    struct chunkidx x;
    struct repo_tree_writer w;
    struct util_buf recs;
    struct util_err err = {0};
    struct repo_chunk na, nb;
    uint8_t id[REPO_HASH_LEN];

    open_idx(&x);
    util_buf_init(&recs);
    tree_records(p, &recs);
    assert_int_equal(
        repo_chunkset_leaf_each((const uint8_t *)recs.data, recs.len, chunkidx_parent_cb, &x, &err),
        0);
    chunk_of(900000, &na);
    chunk_of(900001, &nb);
    for (uint32_t i = 0; i < n; i++) {
        struct repo_chunk *c = i == a ? &na : i == b ? &nb : NULL;
        uint8_t h[REPO_HASH_LEN];
        uint32_t pos;
        if (c != NULL) {
            assert_int_equal(chunkidx_find(&x, c->hash, &pos, &err), 0);
            assert_int_equal(chunkidx_add(&x, c->hash, &err), 0);
            c->pack = chunkidx_anchor(&x);
            continue;
        }
        hash_of(i, h);
        assert_int_equal(chunkidx_find(&x, h, &pos, &err), 1);
        assert_true(chunkidx_is_parent(&x, pos));
        chunkidx_use(&x, pos);
    }
    if (a < n || b < n) {
        nb.offset = 8;
        na.offset = 8 + (b < n ? nb.stored : 0);
        if (b < n)
            assert_int_equal(chunkidx_sealed(&x, &nb, &err), 0);
        if (a < n)
            assert_int_equal(chunkidx_sealed(&x, &na, &err), 0);
        pack_id(999, id);
        assert_int_equal(chunkidx_pack_closed(&x, id, &err), 0);
    }
    repo_tree_writer_init(&w, REPO_TREE_CHUNKS, &p->k, mstore_cb, &p->ms);
    p->ms.new_chunks = 0;
    assert_int_equal(chunkidx_write(&x, &w, &err), 0);
    assert_int_equal(repo_tree_writer_finish(&w, root, &err), 0);
    repo_tree_writer_free(&w);
    util_buf_free(&recs);
    chunkidx_close(&x);
    return p->ms.new_chunks;
}

/* A changed chunk's successor takes its place: the records around it are the
 * parent's, in the parent's order, whatever order the new chunks were sealed in. */
static void test_a_new_chunk_takes_its_old_ones_place(void **state)
{
    struct mstore_tree p, t;
    struct util_buf want;
    char word[32];

    first_backup(&p, 100, 100);
    util_buf_init(&want);
    util_buf_append(&want, "P0", 2);
    for (uint32_t i = 0; i < 100; i++) {
        if (i == 10 || i == 50) {
            snprintf(word, sizeof(word), " P999 c%u%s", i == 10 ? 900000u : 900001u,
                     i + 1 < 100 ? " P0" : "");
            util_buf_append(&want, word, strlen(word));
            continue;
        }
        snprintf(word, sizeof(word), " c%u", (unsigned)i);
        util_buf_append(&want, word, strlen(word));
    }
    util_buf_append(&want, "", 1);
    t = p;
    assert_true(rerun(&p, 100, 10, 50, &t.root) > 0);
    t.ms = p.ms;
    char *got = tree_names(&t);
    assert_string_equal(got, want.data);
    free(got);
    util_buf_free(&want);
    mstore_free(&p.ms);
}

/* An unchanged re-run's set is its parent's tree, to the root, and stores nothing; one
 * changed chunk stores one leaf and the index chunks above it (the set grouped by pack
 * stored two leaves and the paths above both). */
static void test_a_re_run_stores_what_changed(void **state)
{
    struct mstore_tree p;
    struct repo_root root;

    first_backup(&p, 20000, 1000);
    assert_true(p.root.depth >= 2);
    assert_int_equal(rerun(&p, 20000, UINT32_MAX, UINT32_MAX, &root), 0);
    assert_memory_equal(root.ref.hash, p.root.ref.hash, REPO_HASH_LEN);
    assert_int_equal(root.depth, p.root.depth);
    uint64_t stored = rerun(&p, 20000, 12345, UINT32_MAX, &root);
    assert_true(stored >= p.root.depth + 1);
    assert_true(stored <= p.root.depth + 2);
    mstore_free(&p.ms);
}

/* Hashes whose first twelve bytes agree (the same slot and tag) are told apart by the
 * rest, whether the record is buffered or read back from the file. */
static void test_chunks_agreeing_in_their_first_bytes_are_never_one(void **state)
{
    struct chunkidx x;
    struct util_err err = {0};
    uint8_t h1[REPO_HASH_LEN], h2[REPO_HASH_LEN], h3[REPO_HASH_LEN];
    uint32_t pos, p1, p2;

    hash_of(42, h1);
    memcpy(h2, h1, REPO_HASH_LEN);
    h2[31] ^= 1;
    memcpy(h3, h1, REPO_HASH_LEN);
    h3[12] ^= 0x80;

    open_idx(&x);
    assert_int_equal(chunkidx_add(&x, h1, &err), 0);
    assert_int_equal(chunkidx_find(&x, h2, &pos, &err), 0);
    assert_int_equal(chunkidx_find(&x, h3, &pos, &err), 0);
    /* Enough others that h1's record is on the file, not in the buffer. */
    for (uint32_t i = 0; i < 3000; i++) {
        uint8_t h[REPO_HASH_LEN];
        hash_of(1000000 + i, h);
        assert_int_equal(chunkidx_add(&x, h, &err), 0);
    }
    assert_true(x.recs.flushed > 0);
    assert_int_equal(chunkidx_find(&x, h2, &pos, &err), 0);
    assert_int_equal(chunkidx_add(&x, h2, &err), 0);
    assert_int_equal(chunkidx_find(&x, h1, &p1, &err), 1);
    assert_int_equal(chunkidx_find(&x, h2, &p2, &err), 1);
    assert_int_equal(p1, 0);
    assert_int_equal(p2, 3001);
    assert_int_equal(chunkidx_find(&x, h3, &pos, &err), 0);
    chunkidx_close(&x);
}

/* Feeds one parent record: a pack (id set) or a chunk (hash of i). */
static int parent_pack(struct chunkidx *x, uint32_t p, struct util_err *err)
{
    uint8_t id[REPO_HASH_LEN];
    memset(id, 0, sizeof(id));
    id[0] = (uint8_t)p;
    return chunkidx_parent_cb(x, id, NULL, err);
}

static int parent_chunk(struct chunkidx *x, uint32_t i, struct util_err *err)
{
    struct repo_chunk c;
    chunk_of(i, &c);
    return chunkidx_parent_cb(x, NULL, &c, err);
}

static void test_malformed_parent_records_are_refused(void **state)
{
    struct chunkidx x;
    struct util_err err = {0};
    uint8_t h[REPO_HASH_LEN];
    uint32_t pos;

    open_idx(&x);
    /* A chunk before any pack. */
    assert_int_equal(parent_chunk(&x, 1, &err), UTIL_EIO);
    assert_string_equal(err.msg, "a chunk set record is malformed");
    /* A pack may have several runs, in any order. */
    assert_int_equal(parent_pack(&x, 5, &err), 0);
    assert_int_equal(parent_chunk(&x, 1, &err), 0);
    assert_int_equal(parent_pack(&x, 4, &err), 0);
    assert_int_equal(parent_chunk(&x, 3, &err), 0);
    assert_int_equal(parent_pack(&x, 5, &err), 0);
    assert_int_equal(parent_chunk(&x, 4, &err), 0);
    /* A hash twice. */
    assert_int_equal(parent_pack(&x, 6, &err), 0);
    assert_int_equal(parent_chunk(&x, 2, &err), 0);
    assert_int_equal(parent_chunk(&x, 1, &err), UTIL_EIO);
    assert_string_equal(err.msg, "a chunk set record is malformed");
    /* Dropped, the parent's chunks are gone and it can be read again. */
    chunkidx_parent_drop(&x);
    hash_of(1, h);
    assert_int_equal(chunkidx_find(&x, h, &pos, &err), 0);
    assert_int_equal(parent_pack(&x, 4, &err), 0);
    assert_int_equal(parent_chunk(&x, 1, &err), 0);
    assert_int_equal(chunkidx_find(&x, h, &pos, &err), 1);
    assert_true(chunkidx_is_parent(&x, pos));
    /* After a new chunk, the parent's records are a bug. */
    hash_of(9, h);
    assert_int_equal(chunkidx_add(&x, h, &err), 0);
    assert_int_equal(parent_pack(&x, 7, &err), UTIL_EINVAL);
    chunkidx_close(&x);
}

static void test_write_refuses_chunks_never_packed(void **state)
{
    struct chunkidx x;
    struct mstore_tree t;
    struct util_err err = {0};
    struct repo_chunk c;
    uint8_t id[REPO_HASH_LEN];

    open_idx(&x);
    chunk_of(1, &c);
    assert_int_equal(chunkidx_add(&x, c.hash, &err), 0);
    tree_begin(&t);
    /* Queued, never sealed. */
    assert_int_equal(chunkidx_write(&x, &t.w, &err), UTIL_EIO);
    assert_string_equal(err.msg, "a chunk was never written to a pack (a bug)");
    /* Sealed, its pack never closed. */
    assert_int_equal(chunkidx_sealed(&x, &c, &err), 0);
    assert_int_equal(chunkidx_write(&x, &t.w, &err), UTIL_EIO);
    pack_id(1, id);
    assert_int_equal(chunkidx_pack_closed(&x, id, &err), 0);
    assert_int_equal(chunkidx_write(&x, &t.w, &err), 0);
    repo_tree_writer_free(&t.w);
    mstore_free(&t.ms);
    chunkidx_close(&x);
}

/* Every call after a failure gives it. */
static void assert_failed_for_good(struct chunkidx *x, const char *what)
{
    struct util_err err = {0};
    struct repo_chunk c;
    struct mstore_tree t;
    uint32_t pos;
    uint8_t id[REPO_HASH_LEN] = {0};

    chunk_of(7, &c);
    assert_true(chunkidx_find(x, c.hash, &pos, &err) < 0);
    assert_non_null(strstr(err.msg, what));
    assert_int_equal(chunkidx_add(x, c.hash, &err), UTIL_EIO);
    assert_int_equal(chunkidx_sealed(x, &c, &err), UTIL_EIO);
    assert_int_equal(chunkidx_parent_cb(x, id, NULL, &err), UTIL_EIO);
    assert_int_equal(chunkidx_pack_closed(x, id, &err), UTIL_EIO);
    tree_begin(&t);
    assert_int_equal(chunkidx_write(x, &t.w, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, what));
    repo_tree_writer_free(&t.w);
    mstore_free(&t.ms);
}

/* A file size limit makes the file's writes fail (EFBIG) as a full disk would. */
static void test_a_write_that_fails_stops_it(void **state)
{
    struct chunkidx x;
    struct util_err err = {0};
    struct rlimit was, low;
    int rc = 0;

    open_idx(&x);
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, SIG_IGN);
    low = was;
    low.rlim_cur = 1000;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
    for (uint32_t i = 0; i < 2 * CHUNKIDX_BLOCK && rc == 0; i++) {
        uint8_t h[REPO_HASH_LEN];
        hash_of(i, h);
        rc = chunkidx_add(&x, h, &err);
    }
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, SIG_DFL);
    assert_int_equal(rc, UTIL_EIO);
    assert_non_null(strstr(err.msg, "cannot write the chunk index's file in /tmp: "));
    assert_failed_for_good(&x, "cannot write");
    /* A pack table's entry after a failure is zeroed, not stale. */
    assert_int_equal(chunkidx_member(&x, 0)->stored, 0);
    chunkidx_close(&x);
}

/* A descriptor open for writing only makes the file's reads fail (EBADF). */
static void test_a_read_that_fails_stops_it(void **state)
{
    struct chunkidx x;
    struct util_err err = {0};
    uint8_t h[REPO_HASH_LEN];
    uint32_t pos;
    int wo;

    open_idx(&x);
    for (uint32_t i = 0; i < 3000; i++) {
        hash_of(i, h);
        assert_int_equal(chunkidx_add(&x, h, &err), 0);
    }
    /* Position 1,500 is on the file, in a block not cached (the table was last rebuilt
     * at 1,536 chunks, reading block 0 last from the file). */
    wo = open("/dev/null", O_WRONLY | O_CLOEXEC);
    assert_true(wo >= 0);
    assert_true(dup2(wo, x.recs.fd) >= 0);
    close(wo);
    hash_of(1500, h);
    assert_int_equal(chunkidx_find(&x, h, &pos, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "cannot read the chunk index's file in /tmp: "));
    assert_failed_for_good(&x, "cannot read");
    chunkidx_close(&x);
}

/* The news file failing under a pack table's entries: a zeroed entry, and the close
 * of the pack reports it. */
static void test_a_pack_table_read_that_fails_is_reported_at_the_close(void **state)
{
    struct chunkidx x;
    struct util_err err = {0};
    uint8_t id[REPO_HASH_LEN];
    int wo;

    open_idx(&x);
    /* A pack still open with 2,000 members. */
    for (uint32_t i = 0; i < 2000; i++) {
        struct repo_chunk c;
        chunk_of(i, &c);
        assert_int_equal(chunkidx_add(&x, c.hash, &err), 0);
        assert_int_equal(chunkidx_sealed(&x, &c, &err), 0);
    }
    assert_int_equal(chunkidx_members(&x), 2000);
    wo = open("/dev/null", O_WRONLY | O_CLOEXEC);
    assert_true(wo >= 0);
    assert_true(dup2(wo, x.news.fd) >= 0);
    close(wo);
    x.news.rn = 0; /* as if the cached block were another */
    assert_int_equal(chunkidx_member(&x, 0)->stored, 0);
    pack_id(1, id);
    assert_int_equal(chunkidx_pack_closed(&x, id, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "cannot read"));
    chunkidx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_fails_where_it_cannot_create),
        cmocka_unit_test(test_a_first_backup_writes_its_chunks_as_sealed),
        cmocka_unit_test(test_parent_chunks_used_and_new_ones),
        cmocka_unit_test(test_parent_chunks_only),
        cmocka_unit_test(test_a_new_chunk_takes_its_old_ones_place),
        cmocka_unit_test(test_a_re_run_stores_what_changed),
        cmocka_unit_test(test_chunks_agreeing_in_their_first_bytes_are_never_one),
        cmocka_unit_test(test_malformed_parent_records_are_refused),
        cmocka_unit_test(test_write_refuses_chunks_never_packed),
        cmocka_unit_test(test_a_write_that_fails_stops_it),
        cmocka_unit_test(test_a_read_that_fails_stops_it),
        cmocka_unit_test(test_a_pack_table_read_that_fails_is_reported_at_the_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
