/*
 * lode gc: deletes the packs, meta objects and run records that no snapshot and
 * no running or future backup can reference (docs/gc.md). The rule is
 * internal/gc's; this file does the listing, reading and deleting around it.
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
 *      cutoff (their parents are protected); read the chunk set of every
 *      protected snapshot into a set of pack ids; LIST data/ and meta/ and
 *      decide each object with gc_may_delete(); delete in DeleteObjects
 *      batches (packs, then meta objects, then run records), checking each key.
 * A source where anything cannot be read or listed is skipped whole: nothing of
 * it is deleted, the others go on, and the command exits 1.
 *
 * Costs: steps 1-2 keep about 100 bytes per manifest and run record of the
 * repository; step 4 holds one source's referenced pack ids (32 bytes each),
 * one chunk set at a time (about 60 bytes a chunk), and the keys it deletes.
 * Requests: LISTs (one per 1,000 keys), one GET per run record read and per
 * protected snapshot, one DeleteObjects per 1,000 deleted keys.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cli.h"
#include "gc/gc.h"
#include "storage.h"

/* Written at the start of every run; its LastModified is G (docs/gc.md). */
#define GC_RECORD_KEY "gc.json"
/* A chunk set is read whole: about 60 bytes a chunk, so 1 GiB is ~17 million chunks. */
#define GC_CHUNKSET_MAX (1ull << 30)

struct gc_runrec {
    char id[REPO_ID_LEN + 1];
    char parent[REPO_ID_LEN + 1];
    int64_t time;
    uint64_t size;
    int64_t max_runtime;
    bool read, gone;
};

struct gc_source {
    struct repo_source src;
    char (*manifests)[REPO_ID_LEN + 1]; /* ascending (the listing's order) */
    size_t nman, capman;
    struct gc_runrec *runs;
    size_t nruns, capruns;
    bool skip; /* something could not be read: delete nothing here */
};

struct gc_totals {
    size_t packs_total, packs_deleted, packs_kept;
    size_t meta_deleted, runs_deleted;
    uint64_t bytes_freed;
    size_t failed;
    size_t skipped;
};

struct gc_ctx {
    struct storage st;
    bool dry_run, text;
    int64_t now;       /* G */
    int64_t policy_mr; /* the policies' largest maxRuntime */
    int64_t window, cutoff;
    struct gc_source *srcs;
    size_t nsrcs, capsrcs;
    struct gc_totals t;
};

static void cmd_gc_usage(FILE *f)
{
    fprintf(f,
            "usage: lode gc [--dry-run] [--output text|json] [--max-runtime D] [--repo URL]\n"
            "               [--cacert FILE] [--key-file FILE]\n\n"
            "Deletes the packs, meta objects and run records that no snapshot and no running\n"
            "or future backup can reference, without a lock: an object goes only when it is\n"
            "older than G - W, no listed manifest references it, and no parent named by a run\n"
            "record newer than G - W references it. G is the storage's time; W is the largest\n"
            "maxRuntime of the policies (--max-runtime, and the newest run record of each\n"
            "source) and of the live run records, plus one hour (docs/gc.md).\n\n"
            "  --dry-run         list what would be deleted; delete nothing\n"
            "  --max-runtime D   the largest limits.maxRuntime of the repository's policies\n"
            "                    (the controller passes it); widens W, never narrows it\n"
            "  --output json     {\"packs\":{\"total\",\"deleted\",\"kept\"},\"bytesFreed\"}\n"
            "%s\n"
            "Exit codes: 0 ok, 1 a source could not be collected (nothing of it was deleted),\n"
            "2 usage or I/O error.\n",
            storage_usage);
}

static void gc_warn(struct gc_ctx *g, const struct repo_source *s, const char *msg)
{
    (void)g;
    fprintf(stderr, "lode gc: %s/%s/%s: %s; nothing of this source is deleted\n", s->ns, s->policy,
            s->host, msg);
}

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

static int gc_find_sources(struct gc_ctx *g, struct util_err *err)
{
    static const enum repo_kind tops[] = {REPO_KEY_MANIFEST, REPO_KEY_RUN, REPO_KEY_PACK,
                                          REPO_KEY_FILES};
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
static bool gc_key_of(const struct gc_source *s, const char *key, enum repo_kind kind,
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
    if (!gc_key_of(s, o->key, REPO_KEY_MANIFEST, &k))
        return 0;
    s->manifests = util_grow(s->manifests, &s->capman, s->nman + 1, sizeof(*s->manifests));
    memcpy(s->manifests[s->nman++], k.id, REPO_ID_LEN + 1);
    return 0;
}

static int gc_run_cb(const struct s3_object *o, void *arg)
{
    struct gc_source *s = arg;
    struct repo_key k;
    if (!gc_key_of(s, o->key, REPO_KEY_RUN, &k))
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

/* Reads one run record's body; a record deleted meanwhile is "gone", not an error. */
static int gc_read_run(struct gc_ctx *g, struct gc_source *s, struct gc_runrec *r,
                       struct util_err *err)
{
    struct repo_key k = {.kind = REPO_KEY_RUN, .src = s->src};
    struct repo_run run;
    struct util_err e = {0};
    char *key, *data = NULL;
    size_t len = 0;
    int rc;

    memcpy(k.id, r->id, sizeof(k.id));
    key = repo_key_build(&k);
    rc = s3_sync_get(g->st.s3, key, NULL, &data, &len, NULL, &e);
    if (rc == S3_ENOTFOUND) {
        r->gone = true;
        rc = 0;
    } else if (rc != 0) {
        util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
    } else if ((rc = repo_run_decode(&run, data, len, &e)) != 0) {
        util_err_set(err, rc, "%s: %s", key, e.msg);
    } else if (strcmp(run.id, r->id) != 0) {
        rc = util_err_set(err, UTIL_EINVAL, "%s names snapshot %s", key, run.id);
    } else {
        r->read = true;
        r->max_runtime = run.max_runtime;
        memcpy(r->parent, run.parent, sizeof(r->parent));
    }
    free(data);
    free(key);
    return rc;
}

static int gc_list_source(struct gc_ctx *g, struct gc_source *s)
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
    for (size_t i = 0; i < s->nruns && rc == 0; i++) {
        struct gc_runrec *r = &s->runs[i];
        if (newest == NULL || r->time > newest->time ||
            (r->time == newest->time && strcmp(r->id, newest->id) > 0))
            newest = r;
        if (!gc_has_manifest(s, r->id))
            rc = gc_read_run(g, s, r, &err);
    }
    if (rc == 0 && newest != NULL && !newest->read && !newest->gone)
        rc = gc_read_run(g, s, newest, &err);
    if (rc == 0 && newest != NULL && newest->read && newest->max_runtime > g->policy_mr)
        g->policy_mr = newest->max_runtime;
out:
    if (rc != 0) {
        s->skip = true;
        gc_warn(g, &s->src, err.msg);
    }
    free(pm);
    free(pr);
    return rc;
}

/* The source's run records as internal/gc sees them (borrowing ids); gone ones left out. */
static struct gc_run *gc_runs_view(const struct gc_source *s, size_t *n)
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

/* ---- step 4: one source ---- */

struct gc_pass {
    struct gc_ctx *g;
    struct gc_source *s;
    const struct gc_idset *ids;
    const struct gc_packset *packs;
    enum repo_kind kind; /* REPO_KEY_PACK or REPO_KEY_FILES (meta) */
    char **del;
    uint64_t *sizes;
    size_t ndel, capdel, capsizes;
    size_t total, kept;
};

static void gc_pass_add(struct gc_pass *p, const char *key, uint64_t size)
{
    p->del = util_grow(p->del, &p->capdel, p->ndel + 1, sizeof(*p->del));
    p->sizes = util_grow(p->sizes, &p->capsizes, p->ndel + 1, sizeof(*p->sizes));
    p->del[p->ndel] = util_strdup(key);
    p->sizes[p->ndel++] = size;
}

static int gc_object_cb(const struct s3_object *o, void *arg)
{
    struct gc_pass *p = arg;
    struct repo_key k;
    bool referenced;

    if (p->kind == REPO_KEY_PACK) {
        if (!gc_key_of(p->s, o->key, REPO_KEY_PACK, &k))
            return 0; /* not ours to judge: never deleted */
        referenced = gc_packset_has(p->packs, k.pack);
    } else {
        if (!gc_key_of(p->s, o->key, REPO_KEY_FILES, &k) &&
            !gc_key_of(p->s, o->key, REPO_KEY_CHUNKS, &k))
            return 0;
        referenced = gc_idset_has(p->ids, k.id);
    }
    p->total++;
    if (gc_may_delete(o->mtime, p->g->cutoff, referenced) == GC_DELETE)
        gc_pass_add(p, o->key, o->size);
    else
        p->kept++;
    return 0;
}

static void gc_pass_free(struct gc_pass *p)
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
    struct gc_pass *p;
    size_t deleted;
    uint64_t bytes;
    size_t failed;
};

static int gc_key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void gc_deleted_cb(const char *key, int error, const char *code, const char *message,
                          void *arg)
{
    struct gc_delete *d = arg;
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

/* Deletes (or, dry, prints) what the pass chose; returns how many are gone. */
static size_t gc_pass_delete(struct gc_pass *p)
{
    struct gc_ctx *g = p->g;
    struct gc_delete d = {.p = p};
    struct util_err err = {0};

    if (p->ndel == 0)
        return 0;
    if (g->dry_run) {
        for (size_t i = 0; i < p->ndel; i++) {
            if (g->text)
                printf("would delete %s (%llu bytes)\n", p->del[i],
                       (unsigned long long)p->sizes[i]);
            g->t.bytes_freed += p->sizes[i];
        }
        return p->ndel;
    }
    /* Sorted together, so a key's size is found by binary search. The listing came in
     * ascending order already, so this insertion sort is one pass. */
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
    int rc = s3_sync_delete_objects(g->st.s3, (const char *const *)p->del, p->ndel, NULL,
                                    gc_deleted_cb, &d, NULL, &err);
    if (rc != 0 && d.failed == 0) {
        fprintf(stderr, "lode gc: deleting from %s: %s\n", g->st.url, err.msg);
        d.failed = p->ndel - d.deleted;
    }
    g->t.failed += d.failed;
    g->t.bytes_freed += d.bytes;
    return d.deleted;
}

/* Reads a protected snapshot's chunk set into packs; a missing one is an error. */
static int gc_read_chunkset(struct gc_ctx *g, const struct gc_source *s, const char *id,
                            struct gc_packset *packs, struct util_err *err)
{
    struct repo_key k = {.kind = REPO_KEY_CHUNKS, .src = s->src};
    struct s3_opts o = {.max_bytes = GC_CHUNKSET_MAX};
    struct repo_chunkset set;
    struct util_err e = {0};
    char *key, *data = NULL;
    size_t len = 0;
    int rc;

    memcpy(k.id, id, sizeof(k.id));
    key = repo_key_build(&k);
    rc = s3_sync_get(g->st.s3, key, &o, &data, &len, NULL, &e);
    if (rc == S3_ENOTFOUND) {
        rc = util_err_set(err, rc, "%s is missing, so the packs snapshot %s uses are unknown", key,
                          id);
    } else if (rc != 0) {
        util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
    } else if ((rc = repo_chunkset_decode(&set, &g->st.config.keys, id, (const uint8_t *)data, len,
                                          &e)) != 0) {
        util_err_set(err, rc, "%s: %s", key, e.msg);
    } else {
        for (size_t i = 0; i < set.npacks; i++)
            gc_packset_add(packs, set.packs[i]);
        repo_chunkset_free(&set);
    }
    free(data);
    free(key);
    return rc;
}

static void gc_collect_source(struct gc_ctx *g, struct gc_source *s)
{
    struct util_err err = {0}, e = {0};
    struct gc_run *runs = NULL;
    const char **names = NULL;
    struct gc_idset ids = {0};
    struct gc_packset packs = {0};
    struct gc_pass pp = {.g = g, .s = s, .ids = &ids, .packs = &packs, .kind = REPO_KEY_PACK};
    struct gc_pass pm = {.g = g, .s = s, .ids = &ids, .packs = &packs, .kind = REPO_KEY_FILES};
    struct gc_pass pr = {.g = g, .s = s, .ids = &ids, .packs = &packs, .kind = REPO_KEY_RUN};
    size_t nruns, packs_deleted, meta_deleted, runs_deleted;
    char *prefix;
    int rc = 0;

    /* The other run records newer than the cutoff name parents to protect (c). */
    for (size_t i = 0; i < s->nruns && rc == 0; i++)
        if (!s->runs[i].read && !s->runs[i].gone && s->runs[i].time > g->cutoff)
            rc = gc_read_run(g, s, &s->runs[i], &err);
    if (rc != 0)
        goto skip;
    runs = gc_runs_view(s, &nruns);
    names = util_calloc(s->nman ? s->nman : 1, sizeof(*names));
    for (size_t i = 0; i < s->nman; i++)
        names[i] = s->manifests[i];
    if ((rc = gc_protected_ids(names, s->nman, runs, nruns, g->cutoff, &ids, &err)) != 0)
        goto skip;
    for (size_t i = 0; i < ids.n && rc == 0; i++)
        rc = gc_read_chunkset(g, s, ids.v[i], &packs, &err);
    if (rc != 0)
        goto skip;
    gc_packset_seal(&packs);

    /* Packs, then meta objects: listed whole before anything of the source is deleted. */
    prefix = repo_key_prefix(REPO_KEY_PACK, s->src.ns, s->src.policy, s->src.host);
    rc = s3_sync_list(g->st.s3, prefix, NULL, gc_object_cb, &pp, NULL, &e);
    free(prefix);
    if (rc == 0) {
        prefix = repo_key_prefix(REPO_KEY_FILES, s->src.ns, s->src.policy, s->src.host);
        rc = s3_sync_list(g->st.s3, prefix, NULL, gc_object_cb, &pm, NULL, &e);
        free(prefix);
    }
    if (rc != 0) {
        util_err_set(&err, rc, "cannot list its objects: %s", e.msg);
        goto skip;
    }
    for (size_t i = 0; i < s->nruns; i++) {
        const struct gc_runrec *r = &s->runs[i];
        if (r->gone)
            continue;
        if (gc_may_delete(r->time, g->cutoff, gc_idset_has(&ids, r->id)) == GC_DELETE) {
            struct repo_key k = {.kind = REPO_KEY_RUN, .src = s->src};
            memcpy(k.id, r->id, sizeof(k.id));
            char *key = repo_key_build(&k);
            gc_pass_add(&pr, key, r->size);
            free(key);
        }
    }

    packs_deleted = gc_pass_delete(&pp);
    meta_deleted = gc_pass_delete(&pm);
    runs_deleted = gc_pass_delete(&pr);
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
    gc_warn(g, &s->src, err.msg);
out:
    gc_pass_free(&pp);
    gc_pass_free(&pm);
    gc_pass_free(&pr);
    gc_packset_free(&packs);
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

/* Step 0: G from the LastModified of the record gc writes now. */
static int gc_server_time(struct gc_ctx *g, struct util_err *err)
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

int cmd_gc(int argc, char **argv)
{
    enum cli_output output = CLI_OUTPUT_TEXT;
    struct storage_opts sopts = {0};
    static const struct option opts[] = {
        {"dry-run", no_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'},
        {"max-runtime", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        STORAGE_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct gc_ctx *g = util_calloc(1, sizeof(*g));
    struct util_err err = {0};
    bool opened = false;
    int c, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            g->dry_run = true;
            break;
        case 'o':
            if (cli_parse_output(optarg, &output) != 0) {
                rc = CLI_USAGE;
                goto out;
            }
            break;
        case 'm':
            if (policy_parse_duration(optarg, &g->policy_mr, &err) != 0 || g->policy_mr < 1) {
                rc = cli_usage_error("gc", "--max-runtime \"%s\": %s", optarg,
                                     err.msg[0] ? err.msg : "must be at least 1s");
                goto out;
            }
            break;
        case 'h':
            cmd_gc_usage(stdout);
            rc = CLI_OK;
            goto out;
        default:
            if (storage_opt(&sopts, c, optarg))
                break;
            cmd_gc_usage(stderr);
            rc = CLI_USAGE;
            goto out;
        }
    }
    if (optind != argc) {
        rc = cli_usage_error("gc", "unexpected argument \"%s\"", argv[optind]);
        goto out;
    }
    g->text = output == CLI_OUTPUT_TEXT;

    rc = CLI_USAGE;
    if (storage_open(&g->st, &sopts, &err) != 0) {
        fprintf(stderr, "lode gc: %s\n", err.msg);
        goto out;
    }
    opened = true;
    /* The key opens the chunk sets; a wrong key stops here, before anything is listed. */
    if (storage_load_config(&g->st, &sopts, true, &err) != 0 || gc_server_time(g, &err) != 0 ||
        gc_find_sources(g, &err) != 0) {
        fprintf(stderr, "lode gc: %s; nothing was deleted\n", err.msg);
        goto out;
    }
    for (size_t i = 0; i < g->nsrcs; i++)
        gc_list_source(g, &g->srcs[i]);
    g->window = GC_MARGIN_SECONDS;
    for (size_t i = 0; i < g->nsrcs; i++) {
        size_t n;
        struct gc_run *runs = gc_runs_view(&g->srcs[i], &n);
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

    if (output == CLI_OUTPUT_JSON) {
        json_t *o =
            json_pack("{s:{s:I, s:I, s:I}, s:I}", "packs", "total", (json_int_t)g->t.packs_total,
                      "deleted", (json_int_t)g->t.packs_deleted, "kept",
                      (json_int_t)g->t.packs_kept, "bytesFreed", (json_int_t)g->t.bytes_freed);
        cli_print_json(o);
        json_decref(o);
    } else {
        printf("packs: %zu, %s %zu, kept %zu; %zu meta objects and %zu run records %s; %llu "
               "bytes %s\n",
               g->t.packs_total, g->dry_run ? "would delete" : "deleted", g->t.packs_deleted,
               g->t.packs_kept, g->t.meta_deleted, g->t.runs_deleted,
               g->dry_run ? "would go" : "deleted", (unsigned long long)g->t.bytes_freed,
               g->dry_run ? "would be freed" : "freed");
    }
    if (g->t.failed > 0) {
        fprintf(stderr, "lode gc: %zu objects could not be deleted; run gc again\n", g->t.failed);
        rc = CLI_USAGE;
    } else if (g->t.skipped > 0) {
        fprintf(stderr, "lode gc: %zu source%s skipped\n", g->t.skipped,
                g->t.skipped == 1 ? "" : "s");
        rc = CLI_INVALID;
    } else {
        rc = CLI_OK;
    }

out:
    for (size_t i = 0; g->srcs != NULL && i < g->nsrcs; i++)
        gc_source_free(&g->srcs[i]);
    free(g->srcs);
    if (opened)
        storage_close(&g->st);
    free(g);
    return rc;
}
