/*
 * backup_list: this run's metadata (docs/repository.md, "Metadata"): the file
 * list as the walk writes it and the chunk set at the end, each cut into a tree of
 * metadata chunks, and the metadata packs that hold the chunks this run adds.
 *
 * Every chunk of the parent's two trees that the run reads (all of the chunk set,
 * and the file list as the merge walk goes) is noted with its place in a table; a
 * chunk this run cuts that the table holds is not stored again, its place is
 * reused. The parent's list is read ahead of the list being written (the walk asks
 * the merge for a path before it adds it), so an unchanged stretch is always found.
 * New chunks are compressed (zstd level 3) and sealed on the main thread (they are
 * small: about 1 KiB; one sealer, repo_sealer_new, for the run) into the metadata pack being
 * filled, which goes up in one PUT (meta/<source>/<id>.<seq>.meta) once it reaches REPO_META_PACK
 * (the chunk set, written at the end, fills as many packs as it needs), and at the end. An
 * unchanged re-run stores no chunk and PUTs no pack.
 *
 * Memory: the pack being filled (at most 16 MiB and a chunk), the table (about 100
 * bytes a chunk of metadata: some 15,000 chunks for 100,000 files) and one chunk a level
 * of each tree being written.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup.h"
#include "mcache.h"

#define BACKUP_META_LEVEL 3 /* zstd: metadata is small and read often */

struct backup_mtab {
    struct repo_mref *v;
    size_t n, cap;
    uint32_t *slot; /* position + 1 in v, 0 = free */
    size_t nslot;   /* a power of two, at most half full */
};

static size_t backup_mtab_home(const uint8_t *hash, size_t nslot)
{
    uint64_t h;
    memcpy(&h, hash, sizeof(h));
    return (size_t)(h & (nslot - 1));
}

static const struct repo_mref *backup_mtab_find(const struct backup_mtab *t,
                                                const uint8_t hash[REPO_HASH_LEN])
{
    if (t->nslot == 0)
        return NULL;
    for (size_t i = backup_mtab_home(hash, t->nslot);; i = (i + 1) & (t->nslot - 1)) {
        if (t->slot[i] == 0)
            return NULL;
        if (memcmp(t->v[t->slot[i] - 1].hash, hash, REPO_HASH_LEN) == 0)
            return &t->v[t->slot[i] - 1];
    }
}

static void backup_mtab_put(struct backup_mtab *t, const struct repo_mref *ref)
{
    if (backup_mtab_find(t, ref->hash) != NULL)
        return;
    if (2 * (t->n + 1) > t->nslot) {
        size_t n = t->nslot ? 2 * t->nslot : 1024;
        free(t->slot);
        t->slot = util_calloc(n, sizeof(*t->slot));
        t->nslot = n;
        for (size_t j = 0; j < t->n; j++) {
            size_t i = backup_mtab_home(t->v[j].hash, n);
            while (t->slot[i] != 0)
                i = (i + 1) & (n - 1);
            t->slot[i] = (uint32_t)(j + 1);
        }
    }
    t->v = util_grow(t->v, &t->cap, t->n + 1, sizeof(*t->v));
    t->v[t->n] = *ref;
    size_t i = backup_mtab_home(ref->hash, t->nslot);
    while (t->slot[i] != 0)
        i = (i + 1) & (t->nslot - 1);
    t->slot[i] = (uint32_t)(++t->n);
}

void backup_list_init(struct backup *b)
{
    b->mtab = util_calloc(1, sizeof(*b->mtab));
    b->msealer = repo_sealer_new(b->keys);
    repo_pack_writer_init(&b->mp);
    repo_files_writer_init(&b->list, b->keys, backup_meta_store_cb, b);
}

bool backup_meta_seen_cb(void *arg, const struct repo_mref *ref, unsigned level)
{
    struct backup *b = arg;
    backup_mtab_put(b->mtab, ref);
    return true;
}

/* The metadata pack being filled goes up as meta/<source>/<id>.<seq>.meta. */
static int backup_meta_put_pack(struct backup *b, struct util_err *err)
{
    uint8_t *data, id[REPO_HASH_LEN];
    size_t len;
    struct repo_key k = {.kind = REPO_KEY_META, .src = b->src, .seq = b->mseq};
    char *key;
    int rc;
    if (b->mp.n == 0)
        return 0;
    repo_pack_writer_finish(&b->mp, b->keys, &data, &len, id);
    repo_pack_writer_reset(&b->mp);
    snprintf(k.id, sizeof(k.id), "%s", b->id);
    key = repo_key_build(&k);
    rc = backup_put(b, key, data, len, true, err);
    free(key);
    if (rc == 0 && b->cache != NULL) {
        /* The next run's parent is this run's trees: their new packs are cached now. */
        struct util_err e = {0};
        char name[REPO_ID_LEN + 32];
        snprintf(name, sizeof(name), "%s.%" PRIu32 ".meta", b->id, b->mseq);
        if (mcache_put(b->cache, name, data, len, &e) != 0) {
            mcache_warn(b->cache, name, &e);
            b->cache = NULL;
        }
    }
    free(data);
    if (rc == 0) {
        b->mseq++;
        b->mpacks++;
    }
    return rc;
}

int backup_meta_store_cb(void *arg, const uint8_t hash[REPO_HASH_LEN], const uint8_t *plain,
                         size_t len, struct repo_mref *ref, struct util_err *err)
{
    struct backup *b = arg;
    const struct repo_mref *have = backup_mtab_find(b->mtab, hash);
    uint8_t *sealed, flags;
    size_t slen;

    if (have != NULL) {
        *ref = *have;
        return 0;
    }
    repo_sealer_blob(b->msealer, BACKUP_META_LEVEL, hash, plain, len, &sealed, &slen, &flags);
    const struct repo_chunk *c =
        repo_pack_writer_add(&b->mp, hash, sealed, slen, flags, (uint32_t)len);
    memset(ref, 0, sizeof(*ref));
    memcpy(ref->hash, hash, REPO_HASH_LEN);
    snprintf(ref->run, sizeof(ref->run), "%s", b->id);
    ref->seq = b->mseq;
    ref->offset = c->offset;
    ref->stored = c->stored;
    ref->plain = (uint32_t)len;
    ref->flags = flags;
    free(sealed);
    b->mchunks++;
    backup_mtab_put(b->mtab, ref);
    /* The chunk set and the tops of the trees are written at the end, after the walk's
     * last backup_list_ship: without this they all went into the last pack (54 MB for a
     * million files, held whole in memory and read back in 4 MiB windows). During the
     * walk a failed PUT here would be taken for one file's error, so only then. */
    if (b->mfinishing && repo_pack_writer_size(&b->mp, b->mp.n) >= REPO_META_PACK) {
        int rc = backup_meta_put_pack(b, err);
        if (rc != 0) {
            struct util_err e = *err;
            util_err_set(err, rc, "cannot upload a metadata pack: %.400s", e.msg);
        }
        return rc;
    }
    return 0;
}

bool backup_list_ship(struct backup *b)
{
    struct util_err err = {0};
    int rc;
    if (repo_pack_writer_size(&b->mp, b->mp.n) < REPO_META_PACK)
        return true;
    if ((rc = backup_meta_put_pack(b, &err)) != 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "cannot upload a metadata pack: %.400s", err.msg);
        backup_fail(b, rc, msg);
        return false;
    }
    return true;
}

int backup_list_finish(struct backup *b, struct repo_root *files, struct repo_root *chunks,
                       struct util_err *err)
{
    struct repo_tree_writer w;
    int rc;
    b->mfinishing = true;
    if ((rc = repo_files_writer_finish(&b->list, files, err)) != 0)
        return rc;
    repo_tree_writer_init(&w, REPO_TREE_CHUNKS, b->keys, backup_meta_store_cb, b);
    rc = chunkidx_write(&b->idx, &w, err);
    if (rc == 0)
        rc = repo_tree_writer_finish(&w, chunks, err);
    repo_tree_writer_free(&w);
    if (rc == 0 && (rc = backup_meta_put_pack(b, err)) != 0) {
        struct util_err e = *err;
        util_err_set(err, rc, "cannot upload a metadata pack: %.400s", e.msg);
    }
    return rc;
}

void backup_list_abort(struct backup *b)
{
    /* Nothing is left open: a metadata pack is one PUT. Those already stored are
     * referenced by no manifest and go at a garbage collection (docs/gc.md). */
    repo_pack_writer_reset(&b->mp);
}

void backup_list_release(struct backup *b)
{
    if (b->mtab != NULL) {
        free(b->mtab->v);
        free(b->mtab->slot);
        free(b->mtab);
        b->mtab = NULL;
    }
    repo_sealer_free(b->msealer);
    b->msealer = NULL;
    repo_pack_writer_free(&b->mp);
    repo_files_writer_free(&b->list);
}
