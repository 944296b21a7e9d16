/*
 * The chunk set's records (format 2, docs/repository.md "Metadata"): a pack's record
 * (its hash) starts a run of that pack's chunks, a chunk's record is its hash, offset,
 * stored and plain length and flags. Writing a set held whole (grouped by pack, by
 * hash), reading a tree of them back (a pack may have several runs, in any order), and
 * walking one leaf's records for readers that keep the set their own way.
 */
#define _GNU_SOURCE /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "repo/repo.h"
#include "util/varint.h"

#define REC_PACK  'P'
#define REC_CHUNK 'c'

/* ---- the chunk set's records ---- */

static int repo_packs_cmp(const void *pa, const void *pb, void *arg)
{
    const uint8_t(*packs)[REPO_HASH_LEN] = arg;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    int c = memcmp(packs[a], packs[b], REPO_HASH_LEN);
    return c != 0 ? c : (a > b) - (a < b);
}

uint32_t *repo_packs_unique(uint8_t (*packs)[REPO_HASH_LEN], size_t *n)
{
    size_t np = *n, u = 0;
    uint32_t *remap = util_malloc((np ? np : 1) * sizeof(*remap));
    if (np == 0)
        return remap; /* packs may be NULL */
    uint32_t *by = util_malloc(np * sizeof(*by));
    uint8_t(*out)[REPO_HASH_LEN] = util_malloc(np * REPO_HASH_LEN);
    for (size_t p = 0; p < np; p++)
        by[p] = (uint32_t)p;
    qsort_r(by, np, sizeof(*by), repo_packs_cmp, packs);
    for (size_t r = 0; r < np; r++) {
        if (u == 0 || memcmp(out[u - 1], packs[by[r]], REPO_HASH_LEN) != 0)
            memcpy(out[u++], packs[by[r]], REPO_HASH_LEN);
        remap[by[r]] = (uint32_t)(u - 1);
    }
    memcpy(packs, out, u * REPO_HASH_LEN);
    free(out);
    free(by);
    *n = u;
    return remap;
}

static int repo_cs_pack_cmp(const void *pa, const void *pb, void *arg)
{
    const struct repo_chunkset *s = arg;
    return memcmp(s->packs[*(const uint32_t *)pa], s->packs[*(const uint32_t *)pb], REPO_HASH_LEN);
}

static int repo_cs_offset_cmp(const void *pa, const void *pb, void *arg)
{
    const struct repo_chunkset *s = arg;
    const struct repo_chunk *a = &s->v[*(const uint32_t *)pa];
    const struct repo_chunk *b = &s->v[*(const uint32_t *)pb];
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/*
 * The order of the records: the packs by hash, and the chunks of each by offset. The
 * chunks are placed by their pack's rank (a counting sort, 4 bytes a chunk) and only
 * each pack's own chunks are sorted: one sort of every chunk by (pack hash, offset)
 * also cost the C library's merge buffer, 4 bytes a chunk more, at the run's peak.
 */
static uint32_t *repo_cs_order(const struct repo_chunkset *s)
{
    size_t np = s->npacks;
    uint32_t *order = util_malloc((s->n ? s->n : 1) * sizeof(*order));
    uint32_t *byhash = util_malloc((np ? np : 1) * sizeof(*byhash));
    size_t *at = util_calloc(np + 1, sizeof(*at));
    for (size_t p = 0; p < np; p++)
        byhash[p] = (uint32_t)p;
    qsort_r(byhash, np, sizeof(*byhash), repo_cs_pack_cmp, (void *)s);
    /* byhash becomes each pack's rank; at[r + 1] counts rank r's chunks, then starts. */
    uint32_t *rank = util_malloc((np ? np : 1) * sizeof(*rank));
    for (size_t r = 0; r < np; r++)
        rank[byhash[r]] = (uint32_t)r;
    free(byhash);
    for (size_t i = 0; i < s->n; i++)
        at[rank[s->v[i].pack] + 1]++;
    for (size_t r = 0; r < np; r++)
        at[r + 1] += at[r];
    for (size_t i = 0; i < s->n; i++)
        order[at[rank[s->v[i].pack]]++] = (uint32_t)i;
    /* at[r] is now the end of rank r's chunks, the start of the next. */
    for (size_t r = 0, from = 0; r < np; from = at[r++])
        if (at[r] - from > 1)
            qsort_r(order + from, at[r] - from, sizeof(*order), repo_cs_offset_cmp, (void *)s);
    free(rank);
    free(at);
    return order;
}

int repo_chunkset_rec_pack(struct repo_tree_writer *w, const uint8_t id[REPO_HASH_LEN],
                           struct util_err *err)
{
    uint8_t rec[1 + REPO_HASH_LEN];
    rec[0] = REC_PACK;
    memcpy(rec + 1, id, REPO_HASH_LEN);
    return repo_tree_writer_add_head(w, rec, sizeof(rec), err);
}

int repo_chunkset_rec_chunk(struct repo_tree_writer *w, const struct repo_chunk *c,
                            struct util_err *err)
{
    struct util_buf rec;
    uint8_t tag = REC_CHUNK;
    int rc;
    util_buf_init(&rec);
    util_buf_append(&rec, &tag, 1);
    util_buf_append(&rec, c->hash, REPO_HASH_LEN);
    util_varint_put(&rec, c->offset);
    util_varint_put(&rec, c->stored);
    util_varint_put(&rec, c->plain);
    tag = c->flags;
    util_buf_append(&rec, &tag, 1);
    rc = repo_tree_writer_add(w, (const uint8_t *)rec.data, rec.len, err);
    util_buf_free(&rec);
    return rc;
}

int repo_chunkset_write(const struct repo_chunkset *s, struct repo_tree_writer *w,
                        struct util_err *err)
{
    uint32_t *order = repo_cs_order(s), pack = UINT32_MAX;
    int rc = 0;
    for (size_t i = 0; i < s->n && rc == 0; i++) {
        const struct repo_chunk *c = &s->v[order[i]];
        if (c->pack != pack) {
            pack = c->pack;
            if ((rc = repo_chunkset_rec_pack(w, s->packs[pack], err)) != 0)
                break;
        }
        rc = repo_chunkset_rec_chunk(w, c, err);
    }
    free(order);
    return rc;
}

/* One record at rd: a pack (its hash into *pack) or a chunk (into *c). */
static int repo_cs_record(struct util_rd *rd, bool *is_pack, uint8_t pack[REPO_HASH_LEN],
                          struct repo_chunk *c)
{
    const uint8_t *tag = util_rd_raw(rd, 1), *h;
    if (!tag)
        return UTIL_EIO;
    if (tag[0] == REC_PACK) {
        *is_pack = true;
        if (!(h = util_rd_raw(rd, REPO_HASH_LEN)))
            return UTIL_EIO;
        memcpy(pack, h, REPO_HASH_LEN);
        return 0;
    }
    if (tag[0] != REC_CHUNK || !(h = util_rd_raw(rd, REPO_HASH_LEN)))
        return UTIL_EIO;
    *is_pack = false;
    memset(c, 0, sizeof(*c));
    memcpy(c->hash, h, REPO_HASH_LEN);
    c->offset = util_varint_get_u32(rd);
    c->stored = util_varint_get_u32(rd);
    uint32_t plain = util_varint_get_u32(rd);
    const uint8_t *f = util_rd_raw(rd, 1);
    if (rd->bad || plain > REPO_CHUNK_PLAIN_MAX || c->stored < REPO_SEAL_EXTRA ||
        (f[0] & ~REPO_BLOB_ZSTD) != 0)
        return UTIL_EIO;
    c->plain = plain;
    c->flags = f[0];
    return 0;
}

int repo_chunkset_read(struct repo_chunkset *s, struct repo_tree_reader *r, struct util_err *err)
{
    const uint8_t *recs;
    size_t len, n;
    uint8_t pack[REPO_HASH_LEN];
    bool have_pack = false;
    int rc;

    repo_chunkset_init(s);
    while ((rc = repo_tree_reader_next(r, &recs, &len, err)) == 1) {
        struct util_rd rd = {.p = recs, .n = len};
        while (rd.i < rd.n) {
            struct repo_chunk c;
            bool is_pack;
            if (repo_cs_record(&rd, &is_pack, pack, &c) != 0)
                goto bad;
            if (is_pack) {
                /* A pack's record starts a run of its chunks; a pack may have several
                 * runs (docs/repository.md, "Metadata"): made one below. */
                s->packs = util_grow(s->packs, &s->cappacks, s->npacks + 1, REPO_HASH_LEN);
                memcpy(s->packs[s->npacks++], pack, REPO_HASH_LEN);
                have_pack = true;
                continue;
            }
            if (!have_pack)
                goto bad;
            c.pack = (uint32_t)(s->npacks - 1);
            repo_chunkset_add(s, &c);
        }
    }
    if (rc < 0) {
        repo_chunkset_free(s);
        return rc;
    }
    if (s->npacks > 0) {
        uint32_t *remap = repo_packs_unique(s->packs, &s->npacks);
        for (size_t i = 0; i < s->n; i++)
            s->v[i].pack = remap[s->v[i].pack];
        free(remap);
    }
    n = s->n;
    repo_chunkset_sort(s);
    if (s->n != n)
        goto bad;
    return 0;
bad:
    repo_chunkset_free(s);
    return util_err_set(err, UTIL_EIO, "a chunk set record is malformed");
}

int repo_chunkset_leaf_each(const uint8_t *recs, size_t len, repo_cs_rec_cb rec, void *arg,
                            struct util_err *err)
{
    struct util_rd rd = {.p = recs, .n = len};
    uint8_t id[REPO_HASH_LEN];
    while (rd.i < rd.n) {
        struct repo_chunk c;
        bool is_pack;
        int rc;
        if (repo_cs_record(&rd, &is_pack, id, &c) != 0)
            return util_err_set(err, UTIL_EIO, "a chunk set record is malformed");
        if ((rc = rec(arg, is_pack ? id : NULL, is_pack ? NULL : &c, err)) != 0)
            return rc;
    }
    return 0;
}

struct repo_cs_packs {
    void (*pack)(void *arg, const uint8_t id[REPO_HASH_LEN]);
    void *arg;
};

static int repo_cs_packs_cb(void *arg, const uint8_t *pack, const struct repo_chunk *c,
                            struct util_err *err)
{
    struct repo_cs_packs *p = arg;
    (void)c;
    (void)err;
    if (pack != NULL)
        p->pack(p->arg, pack);
    return 0;
}

int repo_chunkset_leaf_packs(const uint8_t *recs, size_t len,
                             void (*pack)(void *arg, const uint8_t id[REPO_HASH_LEN]), void *arg,
                             struct util_err *err)
{
    struct repo_cs_packs p = {.pack = pack, .arg = arg};
    return repo_chunkset_leaf_each(recs, len, repo_cs_packs_cb, &p, err);
}
