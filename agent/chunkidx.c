/*
 * chunkidx: the chunk index of a backup (chunkidx.h has what it holds and why).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunkidx.h"

#define CHUNKIDX_REC sizeof(struct repo_chunk)

/* ---- the files ---- */

/* Records the first failure; every later call returns it. */
static int chunkidx_fail(struct chunkidx *x, const char *what, int e, struct util_err *err)
{
    if (x->failed == 0) {
        x->failed = UTIL_EIO;
        snprintf(x->msg, sizeof(x->msg),
                 "cannot %s the chunk index's file in %.200s: %s (lode backup keeps it in "
                 "$TMPDIR, default /tmp: give it room)",
                 what, x->dir, strerror(e));
    }
    return util_err_set(err, x->failed, "%s", x->msg);
}

static int chunkidx_failed(const struct chunkidx *x, struct util_err *err)
{
    return util_err_set(err, x->failed, "%s", x->msg);
}

static int chunkidx_file_open(struct chunkidx *x, struct chunkidx_file *f, struct util_err *err)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/lode-chunks-XXXXXX", x->dir);
    memset(f, 0, sizeof(*f));
    f->fd = mkstemp(path);
    if (f->fd < 0) {
        f->fd = -1;
        return chunkidx_fail(x, "create", errno, err);
    }
    /* Unlinked at once: the file lives as long as the descriptor. */
    unlink(path);
    f->wbuf = util_malloc(CHUNKIDX_BLOCK * CHUNKIDX_REC);
    f->rbuf = util_malloc(CHUNKIDX_BLOCK * CHUNKIDX_REC);
    return 0;
}

static void chunkidx_file_close(struct chunkidx_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    free(f->wbuf);
    free(f->rbuf);
    memset(f, 0, sizeof(*f));
    f->fd = -1;
}

static int chunkidx_file_flush(struct chunkidx *x, struct chunkidx_file *f, struct util_err *err)
{
    const uint8_t *p = (const uint8_t *)f->wbuf;
    size_t len = (size_t)(f->n - f->flushed) * CHUNKIDX_REC;
    off_t off = (off_t)(f->flushed * CHUNKIDX_REC);
    while (len > 0) {
        ssize_t w = pwrite(f->fd, p, len, off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return chunkidx_fail(x, "write", w < 0 ? errno : ENOSPC, err);
        p += w;
        len -= (size_t)w;
        off += w;
    }
    f->flushed = f->n;
    return 0;
}

static int chunkidx_file_append(struct chunkidx *x, struct chunkidx_file *f,
                                const struct repo_chunk *c, struct util_err *err)
{
    if (x->failed != 0)
        return chunkidx_failed(x, err);
    f->wbuf[f->n - f->flushed] = *c;
    f->n++;
    return f->n - f->flushed == CHUNKIDX_BLOCK ? chunkidx_file_flush(x, f, err) : 0;
}

/* Record pos (< f->n) into *c: from the write buffer, the cached block or one pread. */
static int chunkidx_file_get(struct chunkidx *x, struct chunkidx_file *f, uint64_t pos,
                             struct repo_chunk *c, struct util_err *err)
{
    if (x->failed != 0)
        return chunkidx_failed(x, err);
    if (pos >= f->flushed) {
        *c = f->wbuf[pos - f->flushed];
        return 0;
    }
    if (pos < f->rfrom || pos >= f->rfrom + f->rn) {
        uint64_t from = pos - pos % CHUNKIDX_BLOCK;
        size_t want =
            f->flushed - from < CHUNKIDX_BLOCK ? (size_t)(f->flushed - from) : CHUNKIDX_BLOCK;
        uint8_t *p = (uint8_t *)f->rbuf;
        size_t len = want * CHUNKIDX_REC, got = 0;
        f->rn = 0;
        while (got < len) {
            ssize_t r = pread(f->fd, p + got, len - got, (off_t)(from * CHUNKIDX_REC + got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return chunkidx_fail(x, "read", r < 0 ? errno : EIO, err);
            got += (size_t)r;
        }
        f->rfrom = from;
        f->rn = want;
    }
    *c = f->rbuf[pos - f->rfrom];
    return 0;
}

/* ---- the table ---- */

static size_t chunkidx_home(const uint8_t *hash, size_t nslot)
{
    uint64_t v;
    memcpy(&v, hash, sizeof(v)); /* SHA-256 bytes are as good as any hash of them */
    return (size_t)(v & (nslot - 1));
}

static uint32_t chunkidx_tag(const uint8_t *hash)
{
    uint32_t t;
    memcpy(&t, hash + 8, sizeof(t)); /* bytes the home does not use (below 2^64 slots) */
    return t;
}

static void chunkidx_slot_put(struct chunkidx *x, const uint8_t *hash, uint64_t pos)
{
    size_t i = chunkidx_home(hash, x->nslot);
    while (x->slot[i] != 0)
        i = (i + 1) & (x->nslot - 1);
    x->slot[i] = (uint32_t)pos + 1;
}

/* Room for one more position, at most 3/4 full: a larger table is rebuilt from the
 * records' hashes, read back in order (the homes are not kept in memory). */
static int chunkidx_reserve(struct chunkidx *x, struct util_err *err)
{
    uint64_t n = x->recs.n;
    size_t nslot = x->nslot;
    if (n + 1 >= UINT32_MAX)
        return util_err_set(err, UTIL_EINVAL, "more than 4 billion chunks in one snapshot");
    x->tag = util_grow(x->tag, &x->captag, (size_t)n + 1, sizeof(*x->tag));
    if ((n + 1) * 4 <= (uint64_t)nslot * 3)
        return 0;
    while ((n + 1) * 4 > (uint64_t)nslot * 3)
        nslot *= 2;
    free(x->slot);
    x->slot = util_calloc(nslot, sizeof(*x->slot));
    x->nslot = nslot;
    for (uint64_t pos = 0; pos < n; pos++) {
        struct repo_chunk c;
        int rc = chunkidx_file_get(x, &x->recs, pos, &c, err);
        if (rc != 0)
            return rc;
        chunkidx_slot_put(x, c.hash, pos);
    }
    return 0;
}

static int chunkidx_insert(struct chunkidx *x, const struct repo_chunk *c, struct util_err *err)
{
    uint64_t pos = x->recs.n;
    int rc;
    if ((rc = chunkidx_reserve(x, err)) != 0 ||
        (rc = chunkidx_file_append(x, &x->recs, c, err)) != 0)
        return rc;
    x->tag[pos] = chunkidx_tag(c->hash);
    chunkidx_slot_put(x, c->hash, pos);
    return 0;
}

int chunkidx_find(struct chunkidx *x, const uint8_t hash[REPO_HASH_LEN], uint32_t *pos,
                  struct util_err *err)
{
    uint32_t tag = chunkidx_tag(hash);
    if (x->failed != 0)
        return chunkidx_failed(x, err);
    for (size_t i = chunkidx_home(hash, x->nslot);; i = (i + 1) & (x->nslot - 1)) {
        uint32_t p = x->slot[i];
        struct repo_chunk c;
        int rc;
        if (p == 0)
            return 0;
        if (x->tag[p - 1] != tag)
            continue;
        /* The tag is a hint: only the whole hash decides. */
        if ((rc = chunkidx_file_get(x, &x->recs, p - 1, &c, err)) != 0)
            return rc;
        if (memcmp(c.hash, hash, REPO_HASH_LEN) == 0) {
            *pos = p - 1;
            return 1;
        }
    }
}

/* ---- the parent, new chunks, packs ---- */

int chunkidx_open(struct chunkidx *x, const char *dir, struct util_err *err)
{
    int rc;
    memset(x, 0, sizeof(*x));
    x->recs.fd = x->news.fd = -1;
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    snprintf(x->dir, sizeof(x->dir), "%s", dir);
    x->nslot = 1024;
    x->slot = util_calloc(x->nslot, sizeof(*x->slot));
    if ((rc = chunkidx_file_open(x, &x->recs, err)) != 0 ||
        (rc = chunkidx_file_open(x, &x->news, err)) != 0) {
        chunkidx_close(x);
        return rc;
    }
    return 0;
}

void chunkidx_close(struct chunkidx *x)
{
    chunkidx_file_close(&x->recs);
    chunkidx_file_close(&x->news);
    free(x->slot);
    free(x->tag);
    free(x->used);
    free(x->pp);
    free(x->np);
    x->slot = x->tag = NULL;
    x->used = NULL;
    x->pp = NULL;
    x->np = NULL;
    x->nslot = x->captag = x->capused = x->npp = x->cappp = x->nnp = x->capnp = 0;
    x->nparent = x->nclosed = 0;
}

static int chunkidx_malformed(struct util_err *err)
{
    return util_err_set(err, UTIL_EIO, "a chunk set record is malformed");
}

int chunkidx_parent_cb(void *arg, const uint8_t *pack, const struct repo_chunk *c,
                       struct util_err *err)
{
    struct chunkidx *x = arg;
    struct repo_chunk rec;
    uint32_t pos;
    int rc;

    if (x->failed != 0)
        return chunkidx_failed(x, err);
    if (x->recs.n != x->nparent)
        return util_err_set(err, UTIL_EINVAL, "the parent's chunk set after new chunks (a bug)");
    if (pack != NULL) {
        /* A run of the pack's chunks (a pack may have several): x->pp is the runs. */
        x->pp = util_grow(x->pp, &x->cappp, x->npp + 1, sizeof(*x->pp));
        memcpy(x->pp[x->npp].id, pack, REPO_HASH_LEN);
        x->pp[x->npp++].first = x->nparent;
        return 0;
    }
    if (x->npp == 0)
        return chunkidx_malformed(err);
    if ((rc = chunkidx_find(x, c->hash, &pos, err)) != 0)
        return rc < 0 ? rc : chunkidx_malformed(err);
    rec = *c;
    rec.pack = (uint32_t)(x->npp - 1);
    if ((rc = chunkidx_insert(x, &rec, err)) != 0)
        return rc;
    x->nparent++;
    x->used = util_grow(x->used, &x->capused, (size_t)(x->nparent / 8 + 1), 1);
    x->used[(x->nparent - 1) / 8] &= (uint8_t) ~(1u << ((x->nparent - 1) % 8));
    return 0;
}

void chunkidx_parent_drop(struct chunkidx *x)
{
    if (x->recs.n != x->nparent)
        abort(); /* only before new chunks: their positions would move */
    x->recs.n = x->recs.flushed = 0;
    x->recs.rn = 0;
    x->nparent = 0;
    x->npp = 0;
    x->anchor = 0;
    memset(x->slot, 0, x->nslot * sizeof(*x->slot));
}

bool chunkidx_is_parent(const struct chunkidx *x, uint32_t pos)
{
    return pos < x->nparent;
}

void chunkidx_use(struct chunkidx *x, uint32_t pos)
{
    uint8_t bit = (uint8_t)(1u << (pos % 8));
    /* Its first use places the new chunks that follow it (chunkidx_anchor). */
    if (!(x->used[pos / 8] & bit)) {
        x->used[pos / 8] |= bit;
        x->anchor = pos + 1;
    }
}

uint32_t chunkidx_anchor(const struct chunkidx *x)
{
    return x->anchor;
}

int chunkidx_add(struct chunkidx *x, const uint8_t hash[REPO_HASH_LEN], struct util_err *err)
{
    struct repo_chunk c;
    memset(&c, 0, sizeof(c));
    memcpy(c.hash, hash, REPO_HASH_LEN);
    c.pack = REPO_CHUNK_PENDING;
    return chunkidx_insert(x, &c, err);
}

int chunkidx_sealed(struct chunkidx *x, const struct repo_chunk *c, struct util_err *err)
{
    /* Seal jobs finish in any order: the write sorts by anchor only when they did. */
    if (c->pack < x->last_anchor)
        x->unordered = true;
    x->last_anchor = c->pack;
    return chunkidx_file_append(x, &x->news, c, err);
}

size_t chunkidx_members(const struct chunkidx *x)
{
    return (size_t)(x->news.n - x->nclosed);
}

const struct repo_chunk *chunkidx_member(struct chunkidx *x, size_t i)
{
    struct util_err err = {0};
    /* The pack table's entries are asked in order: one block read a CHUNKIDX_BLOCK. */
    if (chunkidx_file_get(x, &x->news, x->nclosed + i, &x->member, &err) != 0)
        memset(&x->member, 0, sizeof(x->member));
    return &x->member;
}

int chunkidx_pack_closed(struct chunkidx *x, const uint8_t id[REPO_HASH_LEN], struct util_err *err)
{
    if (x->failed != 0)
        return chunkidx_failed(x, err);
    x->np = util_grow(x->np, &x->capnp, x->nnp + 1, sizeof(*x->np));
    memcpy(x->np[x->nnp].id, id, REPO_HASH_LEN);
    x->np[x->nnp].first = x->nclosed;
    x->np[x->nnp++].n = x->news.n - x->nclosed;
    x->nclosed = x->news.n;
    return 0;
}

uint64_t chunkidx_new_count(const struct chunkidx *x)
{
    return x->recs.n - x->nparent;
}

/* ---- the chunk set ---- */

/* The chunk set as it is written: records of one pack after one pack record. */
struct chunkidx_out {
    struct repo_tree_writer *w;
    uint8_t pack[REPO_HASH_LEN];
    bool open;
};

static int chunkidx_emit(struct chunkidx_out *o, const uint8_t pack[REPO_HASH_LEN],
                         const struct repo_chunk *c, struct util_err *err)
{
    int rc;
    if (!o->open || memcmp(o->pack, pack, REPO_HASH_LEN) != 0) {
        if ((rc = repo_chunkset_rec_pack(o->w, pack, err)) != 0)
            return rc;
        memcpy(o->pack, pack, REPO_HASH_LEN);
        o->open = true;
    }
    return repo_chunkset_rec_chunk(o->w, c, err);
}

/* The pack of new chunk i (of news): the closed pack whose records hold it. */
static const uint8_t *chunkidx_new_pack(const struct chunkidx *x, uint64_t i)
{
    size_t lo = 0, hi = x->nnp;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->np[mid].first <= i)
            lo = mid;
        else
            hi = mid;
    }
    return x->np[lo].id;
}

static int chunkidx_key_cmp(const void *a, const void *b)
{
    uint64_t ka = *(const uint64_t *)a, kb = *(const uint64_t *)b;
    return (ka > kb) - (ka < kb);
}

int chunkidx_write(struct chunkidx *x, struct repo_tree_writer *w, struct util_err *err)
{
    struct chunkidx_out o = {.w = w};
    uint64_t *keys = NULL, nn = x->news.n, j = 0;
    struct repo_chunk c;
    int rc = 0;

    if (x->failed != 0)
        return chunkidx_failed(x, err);
    if (x->news.n != chunkidx_new_count(x) || x->nclosed != x->news.n)
        return util_err_set(err, UTIL_EIO, "a chunk was never written to a pack (a bug)");
    if (x->unordered) {
        /* (anchor, position in news): 8 bytes a new chunk, only when seals finished
         * out of the walk's order. */
        keys = util_malloc((size_t)(nn ? nn : 1) * sizeof(*keys));
        for (uint64_t i = 0; i < nn; i++) {
            if ((rc = chunkidx_file_get(x, &x->news, i, &c, err)) != 0)
                goto out;
            keys[i] = (uint64_t)c.pack << 32 | i;
        }
        qsort(keys, (size_t)nn, sizeof(*keys), chunkidx_key_cmp);
    }
    /* The parent's chunks this snapshot uses, in the parent's order, each run of new
     * chunks before the first parent chunk past its anchor. */
    for (uint64_t pos = 0; pos <= x->nparent && rc == 0; pos++) {
        while (j < nn && rc == 0) {
            uint64_t i = keys ? (keys[j] & UINT32_MAX) : j;
            if ((rc = chunkidx_file_get(x, &x->news, i, &c, err)) != 0)
                goto out;
            if (pos < x->nparent && c.pack > pos)
                break;
            rc = chunkidx_emit(&o, chunkidx_new_pack(x, i), &c, err);
            j++;
        }
        if (rc != 0 || pos == x->nparent || !(x->used[pos / 8] & (1u << (pos % 8))))
            continue;
        if ((rc = chunkidx_file_get(x, &x->recs, pos, &c, err)) == 0)
            rc = chunkidx_emit(&o, x->pp[c.pack].id, &c, err);
    }
out:
    free(keys);
    return rc;
}
