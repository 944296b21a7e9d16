/*
 * Metadata trees (format 2, docs/repository.md "Metadata"): the content-defined cut
 * of a record stream into metadata chunks, the index levels above them, and reading a
 * tree back. The chunk set's records are in chunkset.c.
 *
 * A place (struct repo_mref) is encoded as the chunk's name (32 bytes), its run's
 * time (varint) and 8 random bytes (the run id's parts), the pack's number, offset,
 * stored and plain length (varints) and the flags byte: about 50 bytes, so an index
 * chunk of 8 KiB names about 160 chunks (1.3 MiB of records below it).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "repo/repo.h"
#include "util/varint.h"

#define META_HEAD 2 /* tree, level */

/* ---- places ---- */

static void repo_mref_put(struct util_buf *b, const struct repo_mref *m)
{
    int64_t t = 0;
    uint8_t rnd[8];
    repo_id_parse(m->run, &t, NULL);
    repo_unhex(m->run + REPO_ID_LEN - 16, rnd, 8);
    util_buf_append(b, m->hash, REPO_HASH_LEN);
    util_varint_put(b, (uint64_t)t);
    util_buf_append(b, rnd, 8);
    util_varint_put(b, m->seq);
    util_varint_put(b, m->offset);
    util_varint_put(b, m->stored);
    util_varint_put(b, m->plain);
    util_buf_append(b, &m->flags, 1);
}

static int repo_mref_get(struct util_rd *r, struct repo_mref *m)
{
    const uint8_t *h = util_rd_raw(r, REPO_HASH_LEN), *rnd;
    uint64_t t;
    memset(m, 0, sizeof(*m));
    if (h)
        memcpy(m->hash, h, REPO_HASH_LEN);
    t = util_varint_get(r);
    rnd = util_rd_raw(r, 8);
    m->seq = util_varint_get_u32(r);
    m->offset = util_varint_get_u32(r);
    m->stored = util_varint_get_u32(r);
    m->plain = util_varint_get_u32(r);
    const uint8_t *f = util_rd_raw(r, 1);
    if (r->bad || t > (uint64_t)INT64_MAX / 2 || (f[0] & ~REPO_BLOB_ZSTD) != 0 ||
        m->stored < REPO_SEAL_EXTRA || m->plain > REPO_CHUNK_PLAIN_MAX || m->plain < META_HEAD)
        return UTIL_EIO;
    m->flags = f[0];
    repo_id_make((int64_t)t, rnd, m->run);
    return 0;
}

void repo_root_put(struct util_buf *b, const struct repo_root *r)
{
    repo_mref_put(b, &r->ref);
    util_varint_put(b, r->depth);
}

int repo_root_get(struct util_rd *rd, struct repo_root *r)
{
    uint64_t depth;
    memset(r, 0, sizeof(*r));
    if (repo_mref_get(rd, &r->ref) != 0)
        return UTIL_EIO;
    depth = util_varint_get(rd);
    if (rd->bad || depth >= REPO_TREE_LEVELS) {
        memset(r, 0, sizeof(*r));
        return UTIL_EIO;
    }
    r->depth = (unsigned)depth;
    return 0;
}

/* ---- the cut rule ---- */

static uint64_t repo_meta_hash(uint64_t seed, const uint8_t *p, size_t n)
{
    uint64_t h = seed ^ 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3u;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53u;
    h ^= h >> 33;
    return h;
}

uint32_t repo_meta_sigma2(enum repo_tree tree, unsigned level)
{
    if (level > 0)
        return REPO_META_SIGMA2_I;
    return tree == REPO_TREE_CHUNKS ? REPO_META_SIGMA2_C : REPO_META_SIGMA2_F;
}

uint64_t repo_meta_key(uint64_t seed, const uint8_t *key, size_t n)
{
    return repo_meta_hash(seed, key, n);
}

/* The hash a record's place one level up is cut by: its chunk's last record's, mixed
 * with the level so that levels cut independently. */
static uint64_t repo_meta_up(uint64_t seed, uint64_t h, unsigned level)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(h >> (8 * i));
    return repo_meta_hash(seed ^ (0x9e3779b97f4a7c15u * (level + 1)), b, sizeof(b));
}

bool repo_meta_cut(uint64_t h, uint32_t sigma2, size_t len, size_t size, size_t nrec)
{
    if (size >= REPO_META_MAX)
        return true;
    if (size < REPO_META_MIN || nrec < 2)
        return false;
    /* The chance of a cut grows with the chunk's size (a Rayleigh distribution):
     * about as many cuts as a constant chance would give, but few chunks far above
     * the mean, so a one-record change rarely rewrites a large chunk. */
    return (h & (sigma2 - 1)) < (uint64_t)len * size;
}

/* ---- writer ---- */

void repo_tree_writer_init(struct repo_tree_writer *w, enum repo_tree tree,
                           const struct repo_keys *k, repo_mstore_cb store, void *arg)
{
    memset(w, 0, sizeof(*w));
    w->tree = (uint8_t)tree;
    /* The cut positions are keyed, like the data chunker's, so the sizes of the
     * metadata chunks do not tell which known list is stored. */
    for (int i = 0; i < 8; i++)
        w->seed = w->seed << 8 | k->gear_seed[24 + i];
    w->store = store;
    w->arg = arg;
}

static void repo_tree_level_open(struct repo_tree_writer *w, unsigned i)
{
    while (w->nlv <= i) {
        struct repo_tree_level *l = &w->lv[w->nlv];
        uint8_t head[META_HEAD] = {w->tree, (uint8_t)w->nlv};
        memset(l, 0, sizeof(*l));
        util_buf_init(&l->buf);
        util_buf_append(&l->buf, head, META_HEAD);
        w->nlv++;
    }
}

static int repo_tree_add_at(struct repo_tree_writer *w, unsigned i, const uint8_t *rec, size_t len,
                            uint64_t h, bool may_cut, struct util_err *err);

static int repo_tree_emit(struct repo_tree_writer *w, unsigned i, struct util_err *err)
{
    struct repo_tree_level *l = &w->lv[i];
    uint8_t hash[REPO_HASH_LEN];
    struct repo_mref ref;
    struct util_buf rec;
    int rc;

    SHA256((const uint8_t *)l->buf.data, l->buf.len, hash);
    if ((rc = w->store(w->arg, hash, (const uint8_t *)l->buf.data, l->buf.len, &ref, err)) != 0)
        return rc;
    memcpy(ref.hash, hash, REPO_HASH_LEN);
    l->emitted++;
    l->last = ref;
    l->buf.len = META_HEAD;
    l->nrec = 0;
    if (i + 1 >= REPO_TREE_LEVELS)
        return l->emitted > 1 ? util_err_set(err, UTIL_EINVAL, "a metadata tree is too deep") : 0;
    util_buf_init(&rec);
    repo_mref_put(&rec, &ref);
    rc = repo_tree_add_at(w, i + 1, (const uint8_t *)rec.data, rec.len,
                          repo_meta_up(w->seed, l->lasth, i + 1), true, err);
    util_buf_free(&rec);
    return rc;
}

static int repo_tree_add_at(struct repo_tree_writer *w, unsigned i, const uint8_t *rec, size_t len,
                            uint64_t h, bool may_cut, struct util_err *err)
{
    repo_tree_level_open(w, i);
    struct repo_tree_level *l = &w->lv[i];
    size_t size;
    util_buf_append(&l->buf, rec, len);
    l->nrec++;
    l->lasth = h;
    size = l->buf.len - META_HEAD;
    if (may_cut ? repo_meta_cut(h, repo_meta_sigma2((enum repo_tree)w->tree, i), len, size, l->nrec)
                : size >= REPO_META_MAX)
        return repo_tree_emit(w, i, err);
    return 0;
}

int repo_tree_writer_add(struct repo_tree_writer *w, const uint8_t *rec, size_t len,
                         struct util_err *err)
{
    return repo_tree_add_at(w, 0, rec, len, repo_meta_key(w->seed, rec, len), true, err);
}

int repo_tree_writer_add_head(struct repo_tree_writer *w, const uint8_t *rec, size_t len,
                              struct util_err *err)
{
    return repo_tree_add_at(w, 0, rec, len, repo_meta_key(w->seed, rec, len), false, err);
}

int repo_tree_writer_add_key(struct repo_tree_writer *w, const uint8_t *rec, size_t len,
                             const uint8_t *key, size_t klen, struct util_err *err)
{
    return repo_tree_add_at(w, 0, rec, len, repo_meta_key(w->seed, key, klen), true, err);
}

int repo_tree_writer_finish(struct repo_tree_writer *w, struct repo_root *root,
                            struct util_err *err)
{
    int rc;
    repo_tree_level_open(w, 0);
    for (unsigned i = 0; i < w->nlv; i++) {
        struct repo_tree_level *l = &w->lv[i];
        /* An empty list is one empty leaf; a level of one record is one chunk. */
        if ((l->nrec > 0 || l->emitted == 0) && (rc = repo_tree_emit(w, i, err)) != 0)
            return rc;
        if (l->emitted == 1) {
            root->ref = l->last;
            root->depth = i;
            return 0;
        }
    }
    return util_err_set(err, UTIL_EINVAL, "a metadata tree has no root (a bug)");
}

void repo_tree_writer_free(struct repo_tree_writer *w)
{
    for (unsigned i = 0; i < w->nlv; i++)
        util_buf_free(&w->lv[i].buf);
    w->nlv = 0;
}

/* ---- reader ---- */

int repo_meta_open(const struct repo_keys *k, const struct repo_mref *ref, const uint8_t *sealed,
                   uint8_t **plain, struct util_err *err)
{
    struct repo_chunk c;
    memset(&c, 0, sizeof(c));
    memcpy(c.hash, ref->hash, REPO_HASH_LEN);
    c.stored = ref->stored;
    c.plain = ref->plain;
    c.flags = ref->flags;
    *plain = util_malloc(ref->plain ? ref->plain : 1);
    int rc = repo_blob_open(k, &c, sealed, *plain, err);
    if (rc != 0) {
        free(*plain);
        *plain = NULL;
    }
    return rc;
}

int repo_meta_index(const uint8_t *plain, size_t len, struct repo_mref **refs, size_t *n,
                    struct util_err *err)
{
    struct util_rd rd = {.p = plain, .n = len, .i = META_HEAD};
    size_t cap = 0;
    *refs = NULL;
    *n = 0;
    while (len >= META_HEAD && rd.i < rd.n) {
        *refs = util_grow(*refs, &cap, *n + 1, sizeof(**refs));
        if (repo_mref_get(&rd, &(*refs)[*n]) != 0) {
            free(*refs);
            *refs = NULL;
            *n = 0;
            return util_err_set(err, UTIL_EIO, "an index chunk is malformed");
        }
        (*n)++;
    }
    return 0;
}

void repo_tree_reader_init(struct repo_tree_reader *r, const struct repo_keys *k,
                           enum repo_tree tree, const struct repo_root *root, repo_mfetch_cb fetch,
                           void *arg)
{
    memset(r, 0, sizeof(*r));
    r->keys = k;
    r->tree = (uint8_t)tree;
    r->root = *root;
    r->fetch = fetch;
    r->arg = arg;
}

/* Fetches and opens the chunk at ref, which must be of this tree at level. */
static int repo_tree_load(struct repo_tree_reader *r, const struct repo_mref *ref, unsigned level,
                          struct repo_tree_node *node, struct util_err *err)
{
    uint8_t *sealed = util_malloc(ref->stored), *plain;
    char hex[2 * REPO_HASH_LEN + 1];
    struct util_err e = {0};
    int rc = r->fetch(r->arg, ref, sealed, err);
    if (rc == 0 && (rc = repo_meta_open(r->keys, ref, sealed, &plain, &e)) != 0)
        util_err_set(err, rc, "metadata pack %s.%" PRIu32 ".meta: %s", ref->run, ref->seq, e.msg);
    free(sealed);
    if (rc != 0)
        return rc;
    if (plain[0] != r->tree || plain[1] != level) {
        free(plain);
        repo_hex(ref->hash, REPO_HASH_LEN, hex);
        return util_err_set(
            err, UTIL_EIO, "metadata chunk %s in %s.%" PRIu32 ".meta: not the %s tree's level %u",
            hex, ref->run, ref->seq, r->tree == REPO_TREE_FILES ? "file list" : "chunk set", level);
    }
    free(node->plain);
    node->plain = plain;
    node->len = ref->plain;
    node->pos = META_HEAD;
    if (r->loaded)
        r->loaded(r->loaded_arg, ref, level);
    return 0;
}

int repo_tree_reader_next(struct repo_tree_reader *r, const uint8_t **recs, size_t *len,
                          struct util_err *err)
{
    unsigned depth = r->root.depth;
    int rc;
    if (!r->started) {
        r->started = true;
        if (r->visit && !r->visit(r->visit_arg, &r->root.ref, depth))
            return 0;
        if ((rc = repo_tree_load(r, &r->root.ref, depth, &r->lv[depth], err)) != 0)
            return rc;
        if (depth == 0) {
            *recs = r->lv[0].plain + META_HEAD;
            *len = r->lv[0].len - META_HEAD;
            return 1;
        }
    }
    for (;;) {
        unsigned l = 1;
        while (l <= depth && r->lv[l].pos >= r->lv[l].len)
            l++;
        if (l > depth)
            return 0;
        struct repo_tree_node *n = &r->lv[l];
        struct util_rd rd = {.p = n->plain, .n = n->len, .i = n->pos};
        struct repo_mref ref;
        if (repo_mref_get(&rd, &ref) != 0)
            return util_err_set(err, UTIL_EIO, "an index chunk of the %s tree is malformed",
                                r->tree == REPO_TREE_FILES ? "file list" : "chunk set");
        n->pos = rd.i;
        if (r->visit && !r->visit(r->visit_arg, &ref, l - 1))
            continue;
        if ((rc = repo_tree_load(r, &ref, l - 1, &r->lv[l - 1], err)) != 0)
            return rc;
        if (l - 1 == 0) {
            *recs = r->lv[0].plain + META_HEAD;
            *len = r->lv[0].len - META_HEAD;
            r->lv[0].pos = r->lv[0].len;
            return 1;
        }
    }
}

int repo_tree_read_all(struct repo_tree_reader *r, struct util_buf *out, struct util_err *err)
{
    const uint8_t *recs;
    size_t len;
    int rc;
    while ((rc = repo_tree_reader_next(r, &recs, &len, err)) == 1)
        util_buf_append(out, recs, len);
    return rc;
}

void repo_tree_reader_free(struct repo_tree_reader *r)
{
    for (unsigned i = 0; i < REPO_TREE_LEVELS; i++) {
        free(r->lv[i].plain);
        r->lv[i].plain = NULL;
    }
}
