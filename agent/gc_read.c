/*
 * lode gc's listing and reading (gc_run.h): the sources, each source's manifests
 * and run records, the bodies of run records, the protected snapshots' metadata
 * trees, and the storage's time. Nothing here deletes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "gc_run.h"
#include "meta.h"

/* ---- step 1: the sources ---- */

struct gc_names {
    char **v;
    size_t n, cap;
    size_t plen; /* the listed prefix's length */
};

static int gc_names_cb(const struct s3_object *o, void *arg)
{
    struct gc_names *names = arg;
    size_t len = strlen(o->key);
    if (!o->is_prefix || len <= names->plen + 1 || o->key[len - 1] != '/')
        return 0;
    char *name = util_strndup(o->key + names->plen, len - names->plen - 1);
    if (repo_name_check(name, "name", NULL) != 0) {
        fprintf(stderr, "lode gc: ignoring %s: not a Lodestore name\n", o->key);
        free(name);
        return 0;
    }
    names->v = util_grow(names->v, &names->cap, names->n + 1, sizeof(*names->v));
    names->v[names->n++] = name;
    return 0;
}

static void gc_names_free(struct gc_names *n)
{
    for (size_t i = 0; i < n->n; i++)
        free(n->v[i]);
    free(n->v);
    memset(n, 0, sizeof(*n));
}

/* The names one level under prefix. */
static int gc_children(struct gc_ctx *g, const char *prefix, struct gc_names *out,
                       struct util_err *err)
{
    struct s3_opts o = {.delimiter = "/"};
    struct util_err e = {0};
    memset(out, 0, sizeof(*out));
    out->plen = strlen(prefix);
    int rc = s3_sync_list(g->st.s3, prefix, &o, gc_names_cb, out, NULL, &e);
    if (rc != 0) {
        gc_names_free(out);
        return util_err_set(err, rc, "cannot list %s: %s", prefix, e.msg);
    }
    return 0;
}

static int gc_src_cmp(const void *pa, const void *pb)
{
    const struct gc_source *a = pa, *b = pb;
    int r = strcmp(a->src.ns, b->src.ns);
    if (r == 0)
        r = strcmp(a->src.policy, b->src.policy);
    return r ? r : strcmp(a->src.host, b->src.host);
}

int gcrun_find_sources(struct gc_ctx *g, struct util_err *err)
{
    static const enum repo_kind tops[] = {REPO_KEY_MANIFEST, REPO_KEY_RUN, REPO_KEY_PACK,
                                          REPO_KEY_META};
    int rc = 0;

    for (size_t t = 0; t < sizeof(tops) / sizeof(tops[0]) && rc == 0; t++) {
        struct gc_names nss;
        char *p0 = repo_key_prefix(tops[t], NULL, NULL, NULL);
        rc = gc_children(g, p0, &nss, err);
        free(p0);
        for (size_t i = 0; rc == 0 && i < nss.n; i++) {
            struct gc_names pols;
            char *p1 = repo_key_prefix(tops[t], nss.v[i], NULL, NULL);
            rc = gc_children(g, p1, &pols, err);
            free(p1);
            for (size_t j = 0; rc == 0 && j < pols.n; j++) {
                struct gc_names hosts;
                char *p2 = repo_key_prefix(tops[t], nss.v[i], pols.v[j], NULL);
                rc = gc_children(g, p2, &hosts, err);
                free(p2);
                for (size_t k = 0; rc == 0 && k < hosts.n; k++) {
                    g->srcs = util_grow(g->srcs, &g->capsrcs, g->nsrcs + 1, sizeof(*g->srcs));
                    struct gc_source *s = &g->srcs[g->nsrcs];
                    memset(s, 0, sizeof(*s));
                    if (repo_source_set(&s->src, nss.v[i], pols.v[j], hosts.v[k], NULL) == 0)
                        g->nsrcs++;
                }
                gc_names_free(&hosts); /* emptied by gc_children on failure */
            }
            gc_names_free(&pols);
        }
        gc_names_free(&nss);
    }
    if (rc != 0)
        return rc;
    if (g->nsrcs > 1) {
        size_t w = 1;
        qsort(g->srcs, g->nsrcs, sizeof(*g->srcs), gc_src_cmp);
        for (size_t r = 1; r < g->nsrcs; r++)
            if (gc_src_cmp(&g->srcs[r], &g->srcs[w - 1]) != 0)
                g->srcs[w++] = g->srcs[r];
        g->nsrcs = w;
    }
    return 0;
}

/* ---- step 2: manifests and run records ---- */

/* The key is one of this source's, of this kind: parsed, never matched as text. */
bool gcrun_key_of(const struct gc_source *s, const char *key, enum repo_kind kind,
                  struct repo_key *k)
{
    return repo_key_parse(key, k, NULL) == 0 && k->kind == kind &&
           strcmp(k->src.ns, s->src.ns) == 0 && strcmp(k->src.policy, s->src.policy) == 0 &&
           strcmp(k->src.host, s->src.host) == 0;
}

static int gc_manifest_cb(const struct s3_object *o, void *arg)
{
    struct gc_source *s = arg;
    struct repo_key k;
    if (!gcrun_key_of(s, o->key, REPO_KEY_MANIFEST, &k))
        return 0;
    s->manifests = util_grow(s->manifests, &s->capman, s->nman + 1, sizeof(*s->manifests));
    struct gc_man *m = &s->manifests[s->nman++];
    memset(m, 0, sizeof(*m));
    memcpy(m->id, k.id, REPO_ID_LEN + 1);
    if (o->etag != NULL && strlen(o->etag) <= GC_CACHE_ETAG_MAX)
        memcpy(m->etag, o->etag, strlen(o->etag) + 1);
    m->mtime = o->mtime;
    m->size = o->size;
    return 0;
}

static int gc_run_cb(const struct s3_object *o, void *arg)
{
    struct gc_source *s = arg;
    struct repo_key k;
    if (!gcrun_key_of(s, o->key, REPO_KEY_RUN, &k))
        return 0;
    s->runs = util_grow(s->runs, &s->capruns, s->nruns + 1, sizeof(*s->runs));
    struct gc_runrec *r = &s->runs[s->nruns++];
    memset(r, 0, sizeof(*r));
    memcpy(r->id, k.id, REPO_ID_LEN + 1);
    r->time = o->mtime;
    r->size = o->size;
    return 0;
}

static int gc_id_cmp(const void *key, const void *m)
{
    return strcmp(key, ((const struct gc_man *)m)->id);
}

static const struct gc_man *gc_listed(const struct gc_source *s, const char *id)
{
    return s->nman ? bsearch(id, s->manifests, s->nman, sizeof(*s->manifests), gc_id_cmp) : NULL;
}

static bool gc_has_manifest(const struct gc_source *s, const char *id)
{
    return gc_listed(s, id) != NULL;
}

/*
 * Up to GC_GETS GETs in flight on the command's loop (run records and chunk sets
 * are small and many: one at a time, the round trips were the whole run). got()
 * sees each result once, in completion order; after its first error the rest
 * finish unseen.
 */
#define GC_GETS 16

typedef int (*gc_got_cb)(size_t i, const struct s3_result *res, void *arg, struct util_err *err);

struct gc_gets {
    struct gc_ctx *g;
    char **keys;
    size_t n, next, running;
    struct s3_opts o;
    gc_got_cb got;
    void *arg;
    int rc;
    struct util_err *err;
};

struct gc_get {
    struct gc_gets *gs;
    size_t i;
};

static void gc_gets_start(struct gc_gets *gs);

static void gc_get_done(const struct s3_result *res, void *arg)
{
    struct gc_get *one = arg;
    struct gc_gets *gs = one->gs;
    gs->running--;
    if (gs->rc == 0)
        gs->rc = gs->got(one->i, res, gs->arg, gs->err);
    free(one);
    gc_gets_start(gs);
}

static void gc_gets_start(struct gc_gets *gs)
{
    while (gs->rc == 0 && gs->running < GC_GETS && gs->next < gs->n) {
        struct gc_get *one = util_calloc(1, sizeof(*one));
        one->gs = gs;
        one->i = gs->next++;
        int rc = s3_get(s3_sync_client(gs->g->st.s3), gs->keys[one->i], &gs->o, NULL, gc_get_done,
                        one, NULL, gs->err);
        if (rc != 0) {
            free(one);
            gs->rc = rc;
            return;
        }
        gs->running++;
    }
}

static int gc_get_all(struct gc_ctx *g, char **keys, size_t n, uint64_t max_bytes, gc_got_cb got,
                      void *arg, struct util_err *err)
{
    struct gc_gets gs = {.g = g,
                         .keys = keys,
                         .n = n,
                         .o = {.max_bytes = max_bytes},
                         .got = got,
                         .arg = arg,
                         .err = err};
    gc_gets_start(&gs);
    while (gs.running > 0)
        uv_run(s3_sync_loop(g->st.s3), UV_RUN_ONCE);
    return gs.rc;
}

static void gc_keys_free(char **keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}

struct gc_runs_read {
    struct gc_runrec **recs;
    char **keys;
    const struct repo_keys *k;
};

/* One run record's body; a record deleted meanwhile is "gone", not an error. */
static int gc_run_got(size_t i, const struct s3_result *res, void *arg, struct util_err *err)
{
    struct gc_runs_read *rr = arg;
    struct gc_runrec *r = rr->recs[i];
    struct repo_run run;
    struct util_err e = {0};
    int rc;

    if (res->error == S3_ENOTFOUND) {
        r->gone = true;
        return 0;
    }
    if (res->error != 0)
        return util_err_set(err, res->error, "cannot read %s: %s", rr->keys[i], res->message);
    if ((rc = repo_run_decode(&run, res->body, res->body_len, rr->k, &e)) != 0)
        return util_err_set(err, rc, "%s: %s", rr->keys[i], e.msg);
    if (strcmp(run.id, r->id) != 0)
        return util_err_set(err, UTIL_EINVAL, "%s names snapshot %s", rr->keys[i], run.id);
    r->read = true;
    r->max_runtime = run.max_runtime;
    memcpy(r->parent, run.parent, sizeof(r->parent));
    r->has_roots = run.has_roots;
    r->parent_files = run.parent_files;
    r->parent_chunks = run.parent_chunks;
    return 0;
}

/* Reads the bodies of n run records of s, GC_GETS at a time. */
int gcrun_read_runs(struct gc_ctx *g, const struct gc_source *s, struct gc_runrec **recs, size_t n,
                    struct util_err *err)
{
    struct gc_runs_read rr = {
        .recs = recs, .keys = util_calloc(n ? n : 1, sizeof(char *)), .k = &g->st.config.keys};
    for (size_t i = 0; i < n; i++) {
        struct repo_key k = {.kind = REPO_KEY_RUN, .src = s->src};
        memcpy(k.id, recs[i]->id, sizeof(k.id));
        rr.keys[i] = repo_key_build(&k);
    }
    int rc = gc_get_all(g, rr.keys, n, 0, gc_run_got, &rr, err);
    gc_keys_free(rr.keys, n);
    return rc;
}

int gcrun_list_source(struct gc_ctx *g, struct gc_source *s)
{
    struct util_err e = {0}, err = {0};
    char *pm = repo_key_prefix(REPO_KEY_MANIFEST, s->src.ns, s->src.policy, s->src.host);
    char *pr = repo_key_prefix(REPO_KEY_RUN, s->src.ns, s->src.policy, s->src.host);
    struct gc_runrec *newest = NULL;
    int rc;

    rc = s3_sync_list(g->st.s3, pm, NULL, gc_manifest_cb, s, NULL, &e);
    if (rc == 0)
        rc = s3_sync_list(g->st.s3, pr, NULL, gc_run_cb, s, NULL, &e);
    if (rc != 0) {
        util_err_set(&err, rc, "cannot list it: %s", e.msg);
        goto out;
    }
    /* The bodies of every record without a listed manifest, and of the newest. */
    struct gc_runrec **want = util_calloc(s->nruns ? s->nruns : 1, sizeof(*want));
    size_t nwant = 0;
    for (size_t i = 0; i < s->nruns; i++) {
        struct gc_runrec *r = &s->runs[i];
        if (newest == NULL || r->time > newest->time ||
            (r->time == newest->time && strcmp(r->id, newest->id) > 0))
            newest = r;
        if (!gc_has_manifest(s, r->id))
            want[nwant++] = r;
    }
    if (newest != NULL && gc_has_manifest(s, newest->id))
        want[nwant++] = newest;
    rc = gcrun_read_runs(g, s, want, nwant, &err);
    free(want);
    if (rc == 0 && newest != NULL && newest->read && newest->max_runtime > g->policy_mr)
        g->policy_mr = newest->max_runtime;
out:
    if (rc != 0) {
        s->skip = true;
        gcrun_warn(g, &s->src, err.msg);
    }
    free(pm);
    free(pr);
    return rc;
}

/* The source's run records as internal/gc sees them (borrowing ids); gone ones left out. */
struct gc_run *gcrun_runs_view(const struct gc_source *s, size_t *n)
{
    struct gc_run *v = util_calloc(s->nruns ? s->nruns : 1, sizeof(*v));
    *n = 0;
    for (size_t i = 0; i < s->nruns; i++) {
        const struct gc_runrec *r = &s->runs[i];
        if (r->gone)
            continue;
        v[(*n)++] = (struct gc_run){.id = r->id,
                                    .time = r->time,
                                    .read = r->read,
                                    .max_runtime = r->max_runtime,
                                    .parent = r->parent};
    }
    return v;
}

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
    if ((rc = repo_manifest_decode(&m, res->body, res->body_len, mr->k, &e)) != 0 ||
        (rc = repo_manifest_placed(&m, &mr->s->src, mr->ids->v[i], &e)) != 0) {
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
        const struct gc_man *lm = gc_listed(s, ids->v[i]);
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
    rc = gc_get_all(g, mr.keys, nget, 1u << 20, gc_man_got, &mr, err);
    for (size_t j = 0; j < nget; j++)
        all[at[j]] = got[j];
    mr.roots = all;
    free(got);
    free(sub.v);
    free(at);
    gc_keys_free(mr.keys, nget);
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

void gcrun_warn(struct gc_ctx *g, const struct repo_source *s, const char *msg)
{
    (void)g;
    fprintf(stderr, "lode gc: %s/%s/%s: %s; nothing of this source is deleted\n", s->ns, s->policy,
            s->host, msg);
}

/* Step 0: G from the LastModified of the record gc writes now. */
int gcrun_server_time(struct gc_ctx *g, struct util_err *err)
{
    struct util_err e = {0};
    struct s3_info info = {0};
    char *doc = util_asprintf("{\n  \"format\": %d,\n  \"command\": \"lode gc\",\n  "
                              "\"dryRun\": %s\n}\n",
                              REPO_FORMAT, g->dry_run ? "true" : "false");
    struct s3_body body = {.data = doc, .len = strlen(doc), .content_type = "application/json"};
    int rc = s3_sync_put(g->st.s3, GC_RECORD_KEY, &body, NULL, NULL, &e);
    free(doc);
    if (rc != 0)
        return util_err_set(err, rc, "cannot write %s (gc takes the storage's time from it): %s",
                            GC_RECORD_KEY, e.msg);
    rc = s3_sync_head(g->st.s3, GC_RECORD_KEY, &info, &e);
    if (rc != 0)
        return util_err_set(err, rc, "cannot read %s back: %s", GC_RECORD_KEY, e.msg);
    if (info.mtime <= 0)
        return util_err_set(err, S3_EPROTO, "the storage sent no Last-Modified for %s",
                            GC_RECORD_KEY);
    g->now = info.mtime;
    return 0;
}
