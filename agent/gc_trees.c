/*
 * lode gc's step 3 (gc_run.h): the data and metadata packs the protected snapshots'
 * trees use, read from their manifests and metadata chunks or taken from gc's cache,
 * and the cache's load and store. Nothing here deletes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_run.h"
#include "meta.h"

/*
 * The metadata chunks read in this run of gc, by name: a chunk two snapshots share
 * (an unchanged stretch of their trees) is read once, so reading the protected
 * snapshots' trees costs what differs between them, not their number times their size.
 */
struct gc_seen {
    uint8_t (*v)[REPO_HASH_LEN];
    size_t n, cap; /* cap: a power of two, at most half full; all-zero = free */
};

static bool gc_seen_add(struct gc_seen *s, const uint8_t hash[REPO_HASH_LEN])
{
    static const uint8_t zero[REPO_HASH_LEN];
    if (2 * (s->n + 1) > s->cap) {
        struct gc_seen t = {.cap = s->cap ? 2 * s->cap : 1024};
        t.v = util_calloc(t.cap, REPO_HASH_LEN);
        for (size_t i = 0; i < s->cap; i++)
            if (memcmp(s->v[i], zero, REPO_HASH_LEN) != 0)
                gc_seen_add(&t, s->v[i]);
        free(s->v);
        *s = t;
    }
    uint64_t h;
    memcpy(&h, hash, sizeof(h));
    for (size_t i = (size_t)h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (memcmp(s->v[i], hash, REPO_HASH_LEN) == 0)
            return false;
        if (memcmp(s->v[i], zero, REPO_HASH_LEN) == 0) {
            memcpy(s->v[i], hash, REPO_HASH_LEN);
            s->n++;
            return true;
        }
    }
}

struct gc_walk {
    struct gc_packset *packs;
    struct gc_seen seen;
    bool files; /* walking a file list: its leaves are not needed, only their places */
};

/* Every chunk's place names a metadata pack; a chunk read before is not read again. */
static bool gc_visit_cb(void *arg, const struct repo_mref *ref, unsigned level)
{
    struct gc_walk *w = arg;
    uint8_t id[GC_PACK_ID_LEN];
    gc_meta_pack_id(ref->run, ref->seq, id);
    gc_packset_add(w->packs, id);
    if (w->files && level == 0)
        return false;
    return gc_seen_add(&w->seen, ref->hash);
}

static void gc_pack_cb(void *arg, const uint8_t id[REPO_HASH_LEN])
{
    gc_packset_add(arg, id);
}

/* The roots of one protected snapshot's trees, from its manifest or its child's record,
 * and, from the manifest's GET, what gc's cache keys it by. */
struct gc_roots {
    bool known, from_manifest, cached;
    struct repo_root files, chunks;
    char etag[GC_CACHE_ETAG_MAX + 1];
    int64_t mtime;
    uint64_t size;
};

struct gc_mans_read {
    const struct gc_source *s;
    const struct gc_idset *ids;
    char **keys;
    const struct repo_keys *k;
    struct gc_roots *roots;
};

/* A protected snapshot's manifest (authenticated and in its place); a forgotten one is
 * left unknown, for the run records to name. */
static int gc_man_got(size_t i, const struct s3_result *res, void *arg, struct util_err *err)
{
    struct gc_mans_read *mr = arg;
    struct repo_manifest m;
    struct util_err e = {0};
    int rc;
    if (res->error == S3_ENOTFOUND)
        return 0;
    if (res->error != 0)
        return util_err_set(err, res->error, "cannot read %s: %s", mr->keys[i], res->message);
    if ((rc = repo_manifest_decode(&m, &mr->s->src, mr->ids->v[i], res->body, res->body_len, mr->k,
                                   &e)) != 0) {
        repo_manifest_free(&m);
        return util_err_set(err, rc, "%s: %s", mr->keys[i], e.msg);
    }
    struct gc_roots *r = &mr->roots[i];
    *r = (struct gc_roots){.known = true,
                           .from_manifest = true,
                           .files = m.files_root,
                           .chunks = m.chunks_root,
                           .mtime = res->mtime,
                           .size = res->size};
    if (res->etag != NULL && strlen(res->etag) <= GC_CACHE_ETAG_MAX)
        memcpy(r->etag, res->etag, strlen(res->etag) + 1);
    repo_manifest_free(&m);
    return 0;
}

/* One protected snapshot's two trees. */
static int gc_read_trees(struct gc_ctx *g, const char *id, const struct gc_roots *roots,
                         struct meta_src *ms, struct gc_walk *w, struct util_err *err)
{
    const struct repo_keys *k = &g->st.config.keys;
    struct repo_tree_reader r;
    struct util_err e = {0};
    const uint8_t *recs;
    size_t len;
    int rc;

    repo_tree_reader_init(&r, k, REPO_TREE_CHUNKS, &roots->chunks, meta_fetch_cb, ms);
    r.visit = gc_visit_cb;
    r.visit_arg = w;
    w->files = false;
    while ((rc = repo_tree_reader_next(&r, &recs, &len, &e)) == 1)
        if ((rc = repo_chunkset_leaf_packs(recs, len, gc_pack_cb, w->packs, &e)) != 0)
            break;
    repo_tree_reader_free(&r);
    if (rc == 0) {
        repo_tree_reader_init(&r, k, REPO_TREE_FILES, &roots->files, meta_fetch_cb, ms);
        r.visit = gc_visit_cb;
        r.visit_arg = w;
        w->files = true;
        while ((rc = repo_tree_reader_next(&r, &recs, &len, &e)) == 1)
            ;
        repo_tree_reader_free(&r);
    }
    if (rc != 0)
        return util_err_set(err, rc, "the metadata of snapshot %s: %s", id, e.msg);
    return 0;
}

/* Adds one snapshot's packs (sealed, so v[0 .. n) is sorted and unique) to the source's. */
static void gc_packs_union(struct gc_packset *into, const uint8_t (*v)[GC_PACK_ID_LEN], size_t n)
{
    for (size_t i = 0; i < n; i++)
        gc_packset_add(into, v[i]);
}

int gcrun_read_trees(struct gc_ctx *g, const struct gc_source *s, const struct gc_idset *ids,
                     const struct gc_cache *old, struct gc_cache *fresh, struct gc_packset *packs,
                     struct util_err *err)
{
    struct gc_mans_read mr = {.s = s,
                              .ids = ids,
                              .keys = util_calloc(ids->n ? ids->n : 1, sizeof(char *)),
                              .k = &g->st.config.keys,
                              .roots = util_calloc(ids->n ? ids->n : 1, sizeof(*mr.roots))};
    struct meta_src ms;
    size_t nget = 0;
    int rc;

    /*
     * A snapshot whose listed manifest is in gc's cache as listed: its packs are the
     * entry's (gc_cache.h), and nothing of it is read. The other manifests first,
     * GC_GETS at a time (one GET each: the round trips would be the run), then the
     * trees one snapshot after another.
     */
    size_t *at = util_calloc(ids->n ? ids->n : 1, sizeof(*at));
    for (size_t i = 0; i < ids->n; i++) {
        const struct gc_man *lm = gcrun_listed(s, ids->v[i]);
        const struct gc_cache_entry *e =
            lm != NULL ? gc_cache_find(old, lm->id, lm->etag, lm->mtime, lm->size) : NULL;
        if (e != NULL) {
            gc_packs_union(packs, (const uint8_t(*)[GC_PACK_ID_LEN])e->packs, e->npacks);
            gc_cache_add(fresh, e->id, e->etag, e->mtime, e->size,
                         (const uint8_t(*)[GC_PACK_ID_LEN])e->packs, e->npacks);
            mr.roots[i].known = mr.roots[i].cached = true;
            g->t.trees_cached++;
            continue;
        }
        struct repo_key k = {.kind = REPO_KEY_MANIFEST, .src = s->src};
        memcpy(k.id, ids->v[i], sizeof(k.id));
        mr.keys[nget] = repo_key_build(&k);
        at[nget++] = i;
    }
    /* gc_man_got sees the i-th of the GETs: point it at its snapshot's place. */
    struct gc_idset sub = {.v = util_calloc(nget ? nget : 1, sizeof(char *)), .n = nget};
    struct gc_roots *got = util_calloc(nget ? nget : 1, sizeof(*got));
    for (size_t j = 0; j < nget; j++)
        sub.v[j] = ids->v[at[j]];
    struct gc_roots *all = mr.roots;
    mr.ids = &sub;
    mr.roots = got;
    rc = gcrun_get_all(g, mr.keys, nget, 1u << 20, gc_man_got, &mr, err);
    for (size_t j = 0; j < nget; j++)
        all[at[j]] = got[j];
    mr.roots = all;
    free(got);
    free(sub.v);
    free(at);
    gcrun_keys_free(mr.keys, nget);
    meta_src_init(&ms, &g->st, &s->src);
    for (size_t i = 0; i < ids->n && rc == 0; i++) {
        struct gc_roots *r = &mr.roots[i];
        if (r->cached)
            continue;
        if (!r->known) {
            /* Forgotten, and the parent of a backup that may still run: its trees as
             * that backup's run record names them (docs/gc.md, condition (c)). */
            for (size_t j = 0; j < s->nruns && !r->known; j++) {
                const struct gc_runrec *rr = &s->runs[j];
                if (rr->read && rr->has_roots && strcmp(rr->parent, ids->v[i]) == 0)
                    *r = (struct gc_roots){
                        .known = true, .files = rr->parent_files, .chunks = rr->parent_chunks};
            }
        }
        if (!r->known) {
            rc = util_err_set(err, S3_ENOTFOUND,
                              "the manifest of snapshot %s is gone and no run record names its "
                              "trees, so the packs it uses are unknown",
                              ids->v[i]);
            break;
        }
        /* Each snapshot's packs on their own (what the cache keeps for it), then into
         * the source's: a chunk is read once per snapshot, not once per run. */
        struct gc_packset one = {0};
        struct gc_walk w = {.packs = &one};
        rc = gc_read_trees(g, ids->v[i], r, &ms, &w, err);
        free(w.seen.v);
        if (rc == 0) {
            gc_packset_seal(&one);
            gc_packs_union(packs, (const uint8_t(*)[GC_PACK_ID_LEN])one.v, one.sorted);
            if (r->from_manifest)
                gc_cache_add(fresh, ids->v[i], r->etag, r->mtime, r->size,
                             (const uint8_t(*)[GC_PACK_ID_LEN])one.v, one.sorted);
            g->t.trees_read++;
        }
        gc_packset_free(&one);
    }
    meta_src_free(&ms);
    free(mr.roots);
    return rc;
}

void gcrun_cache_load(struct gc_ctx *g, const struct gc_source *s, struct gc_cache *c)
{
    struct repo_key k = {.kind = REPO_KEY_GCCACHE, .src = s->src};
    struct util_err e = {0};
    char *key = repo_key_build(&k), *data = NULL;
    size_t len = 0;
    gc_cache_init(c);
    int rc = s3_sync_get(g->st.s3, key, NULL, &data, &len, NULL, &e);
    if (rc == 0 &&
        gc_cache_decode(c, &g->st.config.keys, &s->src, (const uint8_t *)data, len, &e) != 0)
        rc = UTIL_EIO;
    if (rc != 0 && rc != S3_ENOTFOUND)
        fprintf(stderr, "lode gc: %s: %s; every snapshot of it is read\n", key, e.msg);
    free(data);
    free(key);
}

void gcrun_cache_store(struct gc_ctx *g, const struct gc_source *s, const struct gc_cache *old,
                       const struct gc_cache *fresh)
{
    bool same = old->n == fresh->n;
    for (size_t i = 0; same && i < fresh->n; i++) {
        const struct gc_cache_entry *e = &fresh->v[i];
        same = gc_cache_find(old, e->id, e->etag, e->mtime, e->size) != NULL;
    }
    if (same || g->dry_run)
        return;
    struct repo_key k = {.kind = REPO_KEY_GCCACHE, .src = s->src};
    struct util_err e = {0};
    char *key = repo_key_build(&k);
    uint8_t *data = NULL;
    size_t len = 0;
    gc_cache_encode(fresh, &g->st.config.keys, &s->src, &data, &len);
    struct s3_body body = {.data = (const char *)data, .len = len};
    if (s3_sync_put(g->st.s3, key, &body, NULL, NULL, &e) != 0)
        fprintf(stderr, "lode gc: cannot write %s: %s; the next run reads more\n", key, e.msg);
    free(data);
    free(key);
}
