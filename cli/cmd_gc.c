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
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <uv.h>

#include "cli.h"
#include "agent/gc_run.h"

static void cmd_gc_usage(FILE *f)
{
    fprintf(f,
            "usage: lode gc [--dry-run] [--output text|json] [--max-runtime D] [--repo URL]\n"
            "               [--cacert FILE] [--key-file FILE] [--termination-log FILE]\n\n"
            "Deletes the packs, meta objects and run records that no snapshot and no running\n"
            "or future backup can reference, without a lock: an object goes only when it is\n"
            "older than G - W, no listed manifest references it, and no parent named by a run\n"
            "record newer than G - W references it. G is the storage's time; W is the largest\n"
            "maxRuntime of the policies (--max-runtime, and the newest run record of each\n"
            "source) and of the live run records, plus one hour (docs/gc.md). Unfinished\n"
            "uploads of file lists begun before G - W are aborted.\n\n"
            "  --dry-run         list what would be deleted; delete nothing\n"
            "  --max-runtime D   the largest limits.maxRuntime of the repository's policies\n"
            "                    (the controller passes it); widens W, never narrows it\n"
            "  --output json     {\"packs\":{\"total\",\"deleted\",\"kept\"},\"bytesFreed\"}\n"
            "  --termination-log FILE\n"
            "                    also write that JSON to FILE, with \"error\" when gc failed\n"
            "                    (the controller's GC Job reads it back; docs/gc.md)\n"
            "%s\n"
            "Exit codes: 0 ok, 1 a source could not be collected (nothing of it was deleted),\n"
            "2 usage or I/O error.\n",
            cli_storage_usage);
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
        if (!gcli_key_of(p->s, o->key, REPO_KEY_PACK, &k))
            return 0; /* not ours to judge: never deleted */
        referenced = gc_packset_has(p->packs, k.pack);
    } else {
        if (!gcli_key_of(p->s, o->key, REPO_KEY_FILES, &k) &&
            !gcli_key_of(p->s, o->key, REPO_KEY_CHUNKS, &k))
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
static void gc_pass_sort(struct gc_pass *p)
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
static void gc_passes_delete(struct gc_pass *const ps[GC_PASSES], size_t deleted[GC_PASSES])
{
    struct gc_delete d[GC_PASSES];
    struct gc_dels ds[GC_PASSES];
    struct gc_ctx *g = ps[0]->g;
    size_t running;

    memset(ds, 0, sizeof(ds));
    for (size_t i = 0; i < GC_PASSES; i++) {
        struct gc_pass *p = ps[i];
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
        gc_pass_sort(p);
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
            d[i].failed = ps[i]->ndel - d[i].deleted;
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
    struct gc_pass pp = {.g = g, .s = s, .ids = &ids, .packs = &packs, .kind = REPO_KEY_PACK};
    struct gc_pass pm = {.g = g, .s = s, .ids = &ids, .packs = &packs, .kind = REPO_KEY_FILES};
    struct gc_pass pr = {.g = g, .s = s, .ids = &ids, .packs = &packs, .kind = REPO_KEY_RUN};
    size_t nruns, packs_deleted, meta_deleted, runs_deleted;
    char *prefix;
    int rc = 0;

    /* The other run records newer than the cutoff name parents to protect (c). */
    struct gc_runrec **want = util_calloc(s->nruns ? s->nruns : 1, sizeof(*want));
    size_t nwant = 0;
    for (size_t i = 0; i < s->nruns; i++)
        if (!s->runs[i].read && !s->runs[i].gone && s->runs[i].time > g->cutoff)
            want[nwant++] = &s->runs[i];
    rc = gcli_read_runs(g, s, want, nwant, &err);
    free(want);
    if (rc != 0)
        goto skip;
    runs = gcli_runs_view(s, &nruns);
    names = util_calloc(s->nman ? s->nman : 1, sizeof(*names));
    for (size_t i = 0; i < s->nman; i++)
        names[i] = s->manifests[i];
    if ((rc = gc_protected_ids(names, s->nman, runs, nruns, g->cutoff, &ids, &err)) != 0)
        goto skip;
    if ((rc = gcli_read_chunksets(g, s, &ids, &packs, &err)) != 0)
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

    struct gc_pass *const passes[GC_PASSES] = {&pp, &pm, &pr};
    size_t deleted[GC_PASSES];
    gc_passes_delete(passes, deleted);
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
    gcli_warn(g, &s->src, err.msg);
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

/*
 * The outcome for the controller (docs/gc.md, "Run by the controller"): the --output json
 * object, and "error" (null when gc succeeded), at most 4096 bytes as a container's
 * termination message may hold. A file that cannot be written is reported, not fatal.
 */
static void gc_termlog(const char *path, const struct gc_ctx *g, const char *error)
{
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", error != NULL ? error : "");
    json_t *o =
        json_pack("{s:{s:I, s:I, s:I}, s:I, s:o}", "packs", "total", (json_int_t)g->t.packs_total,
                  "deleted", (json_int_t)g->t.packs_deleted, "kept", (json_int_t)g->t.packs_kept,
                  "bytesFreed", (json_int_t)g->t.bytes_freed, "error",
                  error != NULL ? cli_json_string_lossy(msg) : json_null());
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "lode gc: cannot write --termination-log %s: %s\n", path, strerror(errno));
    } else {
        fputs(s, f);
        fclose(f);
    }
    free(s);
}

int cmd_gc(int argc, char **argv)
{
    enum cli_output output = CLI_OUTPUT_TEXT;
    struct storage_opts sopts = {0};
    static const struct option opts[] = {
        {"dry-run", no_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'},
        {"max-runtime", required_argument, NULL, 'm'},
        {"termination-log", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        STORAGE_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct gc_ctx *g = util_calloc(1, sizeof(*g));
    struct util_err err = {0};
    const char *termlog = NULL;
    char failure[1024] = "";
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
        case 't':
            termlog = optarg;
            break;
        case 'h':
            cmd_gc_usage(stdout);
            rc = CLI_OK;
            goto out;
        default:
            if (cli_storage_opt(&sopts, c, optarg))
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
        snprintf(failure, sizeof(failure), "%s", err.msg);
        goto report;
    }
    opened = true;
    /* The key opens the chunk sets; a wrong key stops here, before anything is listed. */
    if (storage_load_config(&g->st, &sopts, true, &err) != 0 || gcli_server_time(g, &err) != 0 ||
        gcli_find_sources(g, &err) != 0) {
        fprintf(stderr, "lode gc: %s; nothing was deleted\n", err.msg);
        snprintf(failure, sizeof(failure), "%s; nothing was deleted", err.msg);
        goto report;
    }
    for (size_t i = 0; i < g->nsrcs; i++)
        gcli_list_source(g, &g->srcs[i]);
    g->window = GC_MARGIN_SECONDS;
    for (size_t i = 0; i < g->nsrcs; i++) {
        size_t n;
        struct gc_run *runs = gcli_runs_view(&g->srcs[i], &n);
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
    gcli_abort_uploads(g);

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
    /* Not in the JSON, whose shape is a contract: on stderr there, when there are any. */
    if (g->t.uploads_total > 0)
        fprintf(g->text ? stdout : stderr,
                "%sunfinished uploads: %zu, %s %zu, kept %zu (begun after the cutoff)\n",
                g->text ? "" : "lode gc: ", g->t.uploads_total,
                g->dry_run ? "would abort" : "aborted", g->t.uploads_aborted, g->t.uploads_kept);
    if (g->t.failed > 0) {
        fprintf(stderr, "lode gc: %zu objects could not be deleted; run gc again\n", g->t.failed);
        snprintf(failure, sizeof(failure), "%zu objects could not be deleted; run gc again",
                 g->t.failed);
        rc = CLI_USAGE;
    } else if (g->t.uploads_unlisted && g->t.skipped == 0) {
        fprintf(stderr, "lode gc: the unfinished uploads could not be listed\n");
        snprintf(failure, sizeof(failure),
                 "the unfinished uploads could not be listed (none was aborted)");
        rc = CLI_INVALID;
    } else if (g->t.skipped > 0) {
        fprintf(stderr, "lode gc: %zu source%s skipped\n", g->t.skipped,
                g->t.skipped == 1 ? "" : "s");
        snprintf(failure, sizeof(failure), "%zu source%s skipped (nothing of %s was deleted)",
                 g->t.skipped, g->t.skipped == 1 ? "" : "s", g->t.skipped == 1 ? "it" : "them");
        rc = CLI_INVALID;
    } else {
        rc = CLI_OK;
    }
report:
    if (termlog != NULL)
        gc_termlog(termlog, g, failure[0] != '\0' ? failure : NULL);

out:
    for (size_t i = 0; g->srcs != NULL && i < g->nsrcs; i++)
        gc_source_free(&g->srcs[i]);
    free(g->srcs);
    if (opened)
        storage_close(&g->st);
    free(g);
    return rc;
}
