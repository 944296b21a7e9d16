/*
 * gc_collect: the collection of `lode gc` (docs/gc.md); the command is cli/cmd_gc.c.
 * The rule is internal/gc's; this file does the listing, reading and deleting
 * around it.
 *
 * The run, without a lock:
 *   0. G, the server's time: gc writes gc.json (beside config.json) and takes
 *      its LastModified, so a wrong local clock changes nothing.
 *   1. The sources (<ns>/<policy>/<host>) are every name found under snapshots/,
 *      runs/, data/ and meta/ (LIST with a delimiter), so a source whose policy
 *      is gone is still collected.
 *   2. Per source: LIST its manifests, then its run records; read the body of
 *      every run record without a listed manifest (it may be a backup still
 *      running) and of the newest one (its maxRuntime is the policy's as the
 *      source's last backup saw it).
 *   3. W = the largest of --max-runtime, those newest maxRuntimes and the
 *      maxRuntime of every live run record, plus one hour, over the whole
 *      repository; the cutoff is G - W.
 *   4. Per source, one at a time: read the other run records newer than the
 *      cutoff (their parents are protected); read the trees of every protected
 *      snapshot into a set of data and metadata pack ids; LIST data/ and meta/ and
 *      decide each object with gc_may_delete(); delete in DeleteObjects
 *      batches (packs, then meta objects, then run records), checking each key.
 *   5. LIST the unfinished multipart uploads under meta/ (a backup's file list,
 *      killed before it completed) and abort those begun before the cutoff.
 * A source where anything cannot be read or listed is skipped whole: nothing of
 * it is deleted, the others go on, and the command exits 1.
 *
 * Costs: steps 1-2 keep about 100 bytes per manifest and run record of the
 * repository; step 4 holds one source's referenced pack ids (32 bytes each),
 * up to GC_GETS chunk sets at a time (about 60 bytes a chunk), and the keys it
 * deletes. Requests: LISTs (one per 1,000 keys), one GET per run record read and
 * per protected snapshot (GC_GETS in flight), one DeleteObjects per 1,000 deleted
 * keys.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <uv.h>

#include "gc_run.h"
#include "policy/policy.h"

/* ---- step 4: one source ---- */

static void gcrun_plan_add(struct gc_plan *p, const char *key, uint64_t size)
{
    p->del = util_grow(p->del, &p->capdel, p->ndel + 1, sizeof(*p->del));
    p->sizes = util_grow(p->sizes, &p->capsizes, p->ndel + 1, sizeof(*p->sizes));
    p->del[p->ndel] = util_strdup(key);
    p->sizes[p->ndel++] = size;
}

void gcrun_plan_object(struct gc_plan *p, const char *key, int64_t mtime, uint64_t size)
{
    struct repo_key k;
    bool referenced;

    if (p->kind == REPO_KEY_PACK) {
        if (!gcrun_key_of(p->s, key, REPO_KEY_PACK, &k))
            return; /* not ours to judge: never deleted */
        referenced = gc_packset_has(p->packs, k.pack);
    } else {
        uint8_t id[GC_PACK_ID_LEN];
        if (!gcrun_key_of(p->s, key, REPO_KEY_META, &k) || k.seq >= GC_META_SEQ_MAX)
            return;
        gc_meta_pack_id(k.id, k.seq, id);
        referenced = gc_packset_has(p->packs, id);
    }
    p->total++;
    if (gc_may_delete(mtime, p->cutoff, referenced) == GC_DELETE)
        gcrun_plan_add(p, key, size);
    else
        p->kept++;
}

void gcrun_plan_runs(struct gc_plan *p)
{
    const struct gc_source *s = p->s;
    for (size_t i = 0; i < s->nruns; i++) {
        const struct gc_runrec *r = &s->runs[i];
        if (r->gone)
            continue;
        if (gc_may_delete(r->time, p->cutoff, gc_idset_has(p->ids, r->id)) == GC_DELETE) {
            struct repo_key k = {.kind = REPO_KEY_RUN, .src = s->src};
            memcpy(k.id, r->id, sizeof(k.id));
            char *key = repo_key_build(&k);
            gcrun_plan_add(p, key, r->size);
            free(key);
        }
    }
}

static int gc_object_cb(const struct s3_object *o, void *arg)
{
    gcrun_plan_object(arg, o->key, o->mtime, o->size);
    return 0;
}

void gcrun_plan_free(struct gc_plan *p)
{
    for (size_t i = 0; i < p->ndel; i++)
        free(p->del[i]);
    free(p->del);
    free(p->sizes);
    p->del = NULL;
    p->sizes = NULL;
    p->ndel = p->capdel = p->capsizes = 0;
}

struct gc_delete {
    struct gc_plan *p;
    size_t deleted;
    uint64_t bytes;
    size_t failed;
    size_t locked; /* refused because Object Lock retains them: kept */
};

static int gc_key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void gc_deleted_cb(const char *key, int error, const char *code, const char *message,
                          void *arg)
{
    struct gc_delete *d = arg;
    if (error != 0 && s3_refusal_is_lock(code, message)) {
        /* Retained by Object Lock (docs/security.md): kept, not a failure; a later gc frees it. */
        d->locked++;
        fprintf(stderr, "lode gc: kept %s: Object Lock retains it (%s)\n", key, message);
        return;
    }
    if (error != 0) {
        d->failed++;
        fprintf(stderr, "lode gc: cannot delete %s: %s%s%s\n", key, code, code[0] ? ": " : "",
                message);
        return;
    }
    const char *const *hit = bsearch(&key, d->p->del, d->p->ndel, sizeof(*d->p->del), gc_key_cmp);
    d->deleted++;
    if (hit != NULL)
        d->bytes += d->p->sizes[hit - (const char *const *)d->p->del];
}

/*
 * DeleteObjects requests in flight: versitygw's posix backend deletes a batch's keys
 * one after the other (about 250 a second here), so batches side by side are what
 * shortens a large collection. Each request carries one batch of up to 1,000 keys.
 */
#define GC_DELETES 4

struct gc_dels {
    struct gc_ctx *g;
    struct gc_delete *d;
    char **keys;
    size_t n, next, running;
    int rc;
    struct util_err err;
};

static void gc_dels_start(struct gc_dels *ds);

static void gc_dels_each(const char *key, int error, const char *code, const char *message,
                         void *arg)
{
    struct gc_dels *ds = arg;
    gc_deleted_cb(key, error, code, message, ds->d);
}

static void gc_dels_done(const struct s3_result *res, void *arg)
{
    struct gc_dels *ds = arg;
    ds->running--;
    if (res->error != 0 && ds->rc == 0)
        ds->rc = util_err_set(&ds->err, res->error, "%s", res->message);
    gc_dels_start(ds);
}

static void gc_dels_start(struct gc_dels *ds)
{
    while (ds->running < GC_DELETES && ds->next < ds->n) {
        size_t k = ds->n - ds->next < S3_DELETE_BATCH ? ds->n - ds->next : S3_DELETE_BATCH;
        struct util_err e = {0};
        int rc = s3_delete_objects(s3_sync_client(ds->g->st.s3),
                                   (const char *const *)ds->keys + ds->next, k, NULL, gc_dels_each,
                                   gc_dels_done, ds, NULL, &e);
        ds->next += k;
        if (rc != 0) {
            if (ds->rc == 0)
                ds->rc = util_err_set(&ds->err, rc, "%s", e.msg);
            continue;
        }
        ds->running++;
    }
}

/* Sorted together, so a key's size is found by binary search. The listing came in
 * ascending order already, so this insertion sort is one pass. */
static void gc_plan_sort(struct gc_plan *p)
{
    for (size_t i = 1; i < p->ndel; i++) {
        for (size_t j = i; j > 0 && strcmp(p->del[j - 1], p->del[j]) > 0; j--) {
            char *k = p->del[j];
            uint64_t z = p->sizes[j];
            p->del[j] = p->del[j - 1];
            p->sizes[j] = p->sizes[j - 1];
            p->del[j - 1] = k;
            p->sizes[j - 1] = z;
        }
    }
}

#define GC_PASSES 3 /* packs, meta objects, run records */

/*
 * Deletes (or, dry, prints) what the passes chose, the passes side by side (each
 * deletion stands on its own under the rule, so their order does not matter);
 * deleted[i] gets how many of ps[i]'s keys are gone.
 */
static void gc_plans_delete(struct gc_ctx *g, struct gc_plan *const ps[GC_PASSES],
                            size_t deleted[GC_PASSES])
{
    struct gc_delete d[GC_PASSES];
    struct gc_dels ds[GC_PASSES];
    size_t running;

    memset(ds, 0, sizeof(ds));
    for (size_t i = 0; i < GC_PASSES; i++) {
        struct gc_plan *p = ps[i];
        d[i] = (struct gc_delete){.p = p};
        deleted[i] = 0;
        if (p->ndel == 0)
            continue;
        if (g->dry_run) {
            for (size_t k = 0; k < p->ndel; k++) {
                if (g->text)
                    printf("would delete %s (%llu bytes)\n", p->del[k],
                           (unsigned long long)p->sizes[k]);
                g->t.bytes_freed += p->sizes[k];
            }
            deleted[i] = p->ndel;
            continue;
        }
        gc_plan_sort(p);
        ds[i] = (struct gc_dels){.g = g, .d = &d[i], .keys = p->del, .n = p->ndel};
        gc_dels_start(&ds[i]);
    }
    do {
        running = 0;
        for (size_t i = 0; i < GC_PASSES; i++)
            running += ds[i].running;
        if (running > 0)
            uv_run(s3_sync_loop(g->st.s3), UV_RUN_ONCE);
    } while (running > 0);
    for (size_t i = 0; i < GC_PASSES; i++) {
        if (g->dry_run || ps[i]->ndel == 0)
            continue;
        if (ds[i].rc != 0) {
            /* A request that failed whole: every key not reported deleted is not. */
            if (ds[i].rc != S3_EPARTIAL)
                fprintf(stderr, "lode gc: deleting from %s: %s\n", g->st.url, ds[i].err.msg);
            d[i].failed = ps[i]->ndel - d[i].deleted - d[i].locked;
        }
        g->t.failed += d[i].failed;
        g->t.bytes_freed += d[i].bytes;
        deleted[i] = d[i].deleted;
    }
}

static void gc_collect_source(struct gc_ctx *g, struct gc_source *s)
{
    struct util_err err = {0}, e = {0};
    struct gc_run *runs = NULL;
    const char **names = NULL;
    struct gc_idset ids = {0};
    struct gc_packset packs = {0};
    struct gc_cache cache_old, cache_new;
    struct gc_plan pp = {.s = s, .ids = &ids, .packs = &packs, .kind = REPO_KEY_PACK};
    struct gc_plan pm = {.s = s, .ids = &ids, .packs = &packs, .kind = REPO_KEY_META};
    struct gc_plan pr = {.s = s, .ids = &ids, .packs = &packs, .kind = REPO_KEY_RUN};
    size_t nruns, packs_deleted, meta_deleted, runs_deleted;
    pp.cutoff = pm.cutoff = pr.cutoff = g->cutoff;
    char *prefix;
    int rc = 0;

    gc_cache_init(&cache_old);
    gc_cache_init(&cache_new);
    /* The other run records newer than the cutoff name parents to protect (c). */
    struct gc_runrec **want = util_calloc(s->nruns ? s->nruns : 1, sizeof(*want));
    size_t nwant = 0;
    for (size_t i = 0; i < s->nruns; i++)
        if (!s->runs[i].read && !s->runs[i].gone && s->runs[i].time > g->cutoff)
            want[nwant++] = &s->runs[i];
    rc = gcrun_read_runs(g, s, want, nwant, &err);
    free(want);
    if (rc != 0)
        goto skip;
    runs = gcrun_runs_view(s, &nruns);
    names = util_calloc(s->nman ? s->nman : 1, sizeof(*names));
    for (size_t i = 0; i < s->nman; i++)
        names[i] = s->manifests[i].id;
    if ((rc = gc_protected_ids(names, s->nman, runs, nruns, g->cutoff, &ids, &err)) != 0)
        goto skip;
    gcrun_cache_load(g, s, &cache_old);
    if ((rc = gcrun_read_trees(g, s, &ids, &cache_old, &cache_new, &packs, &err)) != 0)
        goto skip;
    gc_packset_seal(&packs);
    gcrun_cache_store(g, s, &cache_old, &cache_new);

    /* Packs, then meta objects: listed whole before anything of the source is deleted. */
    prefix = repo_key_prefix(REPO_KEY_PACK, s->src.ns, s->src.policy, s->src.host);
    rc = s3_sync_list(g->st.s3, prefix, NULL, gc_object_cb, &pp, NULL, &e);
    free(prefix);
    if (rc == 0) {
        prefix = repo_key_prefix(REPO_KEY_META, s->src.ns, s->src.policy, s->src.host);
        rc = s3_sync_list(g->st.s3, prefix, NULL, gc_object_cb, &pm, NULL, &e);
        free(prefix);
    }
    if (rc != 0) {
        util_err_set(&err, rc, "cannot list its objects: %s", e.msg);
        goto skip;
    }
    gcrun_plan_runs(&pr);

    struct gc_plan *const passes[GC_PASSES] = {&pp, &pm, &pr};
    size_t deleted[GC_PASSES];
    gc_plans_delete(g, passes, deleted);
    packs_deleted = deleted[0];
    meta_deleted = deleted[1];
    runs_deleted = deleted[2];
    g->t.packs_total += pp.total;
    g->t.packs_deleted += packs_deleted;
    g->t.packs_kept += pp.total - packs_deleted;
    g->t.meta_deleted += meta_deleted;
    g->t.runs_deleted += runs_deleted;
    if (g->text)
        printf("%s/%s/%s: %zu pack%s, %s %zu; %zu meta object%s and %zu run record%s %s\n",
               s->src.ns, s->src.policy, s->src.host, pp.total, pp.total == 1 ? "" : "s",
               g->dry_run ? "would delete" : "deleted", packs_deleted, meta_deleted,
               meta_deleted == 1 ? "" : "s", runs_deleted, runs_deleted == 1 ? "" : "s",
               g->dry_run ? "would go" : "deleted");
    goto out;
skip:
    s->skip = true;
    g->t.skipped++;
    gcrun_warn(g, &s->src, err.msg);
out:
    gcrun_plan_free(&pp);
    gcrun_plan_free(&pm);
    gcrun_plan_free(&pr);
    gc_packset_free(&packs);
    gc_cache_free(&cache_old);
    gc_cache_free(&cache_new);
    gc_idset_free(&ids);
    free(names);
    free(runs);
}

static void gc_source_free(struct gc_source *s)
{
    free(s->manifests);
    free(s->runs);
    s->manifests = NULL;
    s->runs = NULL;
    s->nman = s->nruns = s->capman = s->capruns = 0;
}

int gcrun_run(struct gc_ctx *g, const struct storage_opts *so, struct util_err *err)
{
    struct util_err e = {0};
    int rc;

    if ((rc = storage_open(&g->st, so, err)) != 0)
        return rc;
    g->opened = true;
    /* The key opens the chunk sets; a wrong key stops here, before anything is listed. */
    if ((rc = storage_load_config(&g->st, so, true, &e)) != 0 ||
        (rc = gcrun_server_time(g, &e)) != 0 || (rc = gcrun_find_sources(g, &e)) != 0)
        return util_err_set(err, rc, "%s; nothing was deleted", e.msg);
    for (size_t i = 0; i < g->nsrcs; i++)
        gcrun_list_source(g, &g->srcs[i]);
    g->window = GC_MARGIN_SECONDS;
    for (size_t i = 0; i < g->nsrcs; i++) {
        size_t n;
        struct gc_run *runs = gcrun_runs_view(&g->srcs[i], &n);
        int64_t w = gc_window(g->policy_mr, runs, n, g->now);
        free(runs);
        if (w > g->window)
            g->window = w;
    }
    if (g->nsrcs == 0)
        g->window = gc_window(g->policy_mr, NULL, 0, g->now);
    g->cutoff = gc_cutoff(g->now, g->window);
    if (g->text) {
        char when[UTIL_TIME_BUF], cut[UTIL_TIME_BUF], dur[64];
        util_format_utc(g->now, when, sizeof(when));
        util_format_utc(g->cutoff, cut, sizeof(cut));
        policy_format_duration(g->window, dur, sizeof(dur));
        printf("storage time %s, window %s: only objects older than %s can go%s\n", when, dur, cut,
               g->dry_run ? " (dry run: nothing is deleted)" : "");
    }
    for (size_t i = 0; i < g->nsrcs; i++) {
        struct gc_source *s = &g->srcs[i];
        if (s->skip)
            g->t.skipped++;
        else
            gc_collect_source(g, s);
        gc_source_free(s);
    }
    gcrun_abort_uploads(g);
    if (g->text && g->t.trees_cached + g->t.trees_read > 0)
        printf("protected snapshots: %zu read, %zu known from gc's cache (docs/gc.md)\n",
               g->t.trees_read, g->t.trees_cached);
    return 0;
}

void gcrun_close(struct gc_ctx *g)
{
    for (size_t i = 0; g->srcs != NULL && i < g->nsrcs; i++)
        gc_source_free(&g->srcs[i]);
    free(g->srcs);
    g->srcs = NULL;
    g->nsrcs = g->capsrcs = 0;
    if (g->opened)
        storage_close(&g->st);
    g->opened = false;
}
