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
    memcpy(s->manifests[s->nman++], k.id, REPO_ID_LEN + 1);
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

static int gc_id_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

static bool gc_has_manifest(const struct gc_source *s, const char *id)
{
    return s->nman && bsearch(id, s->manifests, s->nman, sizeof(*s->manifests), gc_id_cmp);
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

/* The roots of one protected snapshot's trees, from its manifest or its child's record. */
struct gc_roots {
    bool known;
    struct repo_root files, chunks;
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
    mr->roots[i] = (struct gc_roots){.known = true, .files = m.files_root, .chunks = m.chunks_root};
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

int gcrun_read_trees(struct gc_ctx *g, const struct gc_source *s, const struct gc_idset *ids,
                     struct gc_packset *packs, struct util_err *err)
{
    struct gc_walk w = {.packs = packs};
    struct gc_mans_read mr = {.s = s,
                              .ids = ids,
                              .keys = util_calloc(ids->n ? ids->n : 1, sizeof(char *)),
                              .k = &g->st.config.keys,
                              .roots = util_calloc(ids->n ? ids->n : 1, sizeof(*mr.roots))};
    struct meta_src ms;
    int rc;

    /* The manifests first, GC_GETS at a time (one GET each: the round trips would be
     * the run), then the trees one snapshot after another. */
    for (size_t i = 0; i < ids->n; i++) {
        struct repo_key k = {.kind = REPO_KEY_MANIFEST, .src = s->src};
        memcpy(k.id, ids->v[i], sizeof(k.id));
        mr.keys[i] = repo_key_build(&k);
    }
    rc = gc_get_all(g, mr.keys, ids->n, 1u << 20, gc_man_got, &mr, err);
    gc_keys_free(mr.keys, ids->n);
    meta_src_init(&ms, &g->st, &s->src);
    for (size_t i = 0; i < ids->n && rc == 0; i++) {
        if (!mr.roots[i].known) {
            /* Forgotten, and the parent of a backup that may still run: its trees as
             * that backup's run record names them (docs/gc.md, condition (c)). */
            for (size_t j = 0; j < s->nruns && !mr.roots[i].known; j++) {
                const struct gc_runrec *r = &s->runs[j];
                if (r->read && r->has_roots && strcmp(r->parent, ids->v[i]) == 0)
                    mr.roots[i] = (struct gc_roots){
                        .known = true, .files = r->parent_files, .chunks = r->parent_chunks};
            }
        }
        if (!mr.roots[i].known)
            rc = util_err_set(err, S3_ENOTFOUND,
                              "the manifest of snapshot %s is gone and no run record names its "
                              "trees, so the packs it uses are unknown",
                              ids->v[i]);
        else
            rc = gc_read_trees(g, ids->v[i], &mr.roots[i], &ms, &w, err);
    }
    meta_src_free(&ms);
    free(mr.roots);
    free(w.seen.v);
    return rc;
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
