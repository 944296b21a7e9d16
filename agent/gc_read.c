/*
 * lode gc's listing and reading (gc_run.h): the sources, each source's manifests
 * and run records, the bodies of run records, and the storage's time (gc_trees.c
 * reads the protected snapshots' trees). Nothing here deletes.
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

const struct gc_man *gcrun_listed(const struct gc_source *s, const char *id)
{
    return s->nman ? bsearch(id, s->manifests, s->nman, sizeof(*s->manifests), gc_id_cmp) : NULL;
}

static bool gc_has_manifest(const struct gc_source *s, const char *id)
{
    return gcrun_listed(s, id) != NULL;
}

/*
 * Up to GC_GETS GETs in flight on the command's loop (run records and chunk sets
 * are small and many: one at a time, the round trips were the whole run). got()
 * sees each result once, in completion order; after its first error the rest
 * finish unseen.
 */
#define GC_GETS 16

struct gc_gets {
    struct gc_ctx *g;
    char **keys;
    size_t n, next, running;
    struct s3_opts o;
    gcrun_got_cb got;
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

int gcrun_get_all(struct gc_ctx *g, char **keys, size_t n, uint64_t max_bytes, gcrun_got_cb got,
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

void gcrun_keys_free(char **keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}

struct gc_runs_read {
    struct gc_runrec **recs;
    char **keys;
    const struct repo_keys *k;
    const struct repo_source *src;
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
    if ((rc = repo_run_decode(&run, rr->src, r->id, res->body, res->body_len, rr->k, &e)) != 0)
        return util_err_set(err, rc, "%s: %s", rr->keys[i], e.msg);
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
    struct gc_runs_read rr = {.recs = recs,
                              .keys = util_calloc(n ? n : 1, sizeof(char *)),
                              .k = &g->st.config.keys,
                              .src = &s->src};
    for (size_t i = 0; i < n; i++) {
        struct repo_key k = {.kind = REPO_KEY_RUN, .src = s->src};
        memcpy(k.id, recs[i]->id, sizeof(k.id));
        rr.keys[i] = repo_key_build(&k);
    }
    int rc = gcrun_get_all(g, rr.keys, n, 0, gc_run_got, &rr, err);
    gcrun_keys_free(rr.keys, n);
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
