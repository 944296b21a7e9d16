/*
 * gc_cli: the pieces of `lode gc` (docs/gc.md). cmd_gc.c runs the collection;
 * gc_read.c finds the sources, lists their manifests and run records, reads run
 * records and chunk sets (GC_GETS at a time) and takes the storage's time;
 * gc_uploads.c aborts unfinished multipart uploads. The rule itself is internal/gc's.
 */
#ifndef LODE_CLI_GC_H
#define LODE_CLI_GC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/gc.h"
#include "repo/repo.h"
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
    /* Unfinished multipart uploads under meta/ (gc_uploads.c): never in --output json,
     * whose shape is fixed (docs/gc.md); said in the text output or on stderr. */
    size_t uploads_total, uploads_aborted, uploads_kept;
    bool uploads_unlisted;
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

/* Prints why a source is skipped ("nothing of this source is deleted"). */
void gcli_warn(struct gc_ctx *g, const struct repo_source *s, const char *msg);
/* Step 0: G, from the LastModified of GC_RECORD_KEY, written now. */
int gcli_server_time(struct gc_ctx *g, struct util_err *err);
/* Step 1: every source named under snapshots/, runs/, data/ and meta/, sorted, unique. */
int gcli_find_sources(struct gc_ctx *g, struct util_err *err);
/* Step 2: a source's manifests and run records, and the run records whose bodies W needs;
 * on failure the source is marked skip (and named). Raises g->policy_mr. */
int gcli_list_source(struct gc_ctx *g, struct gc_source *s);
/* The bodies of n run records of s (a record gone meanwhile is marked gone). */
int gcli_read_runs(struct gc_ctx *g, const struct gc_source *s, struct gc_runrec **recs, size_t n,
                   struct util_err *err);
/* The packs the chunk sets of ids use, into packs; a missing chunk set is an error. */
int gcli_read_chunksets(struct gc_ctx *g, const struct gc_source *s, const struct gc_idset *ids,
                        struct gc_packset *packs, struct util_err *err);
/* The source's run records as internal/gc sees them (ids borrowed; gone ones left out). */
struct gc_run *gcli_runs_view(const struct gc_source *s, size_t *n);
/* Step 5: aborts (or, dry, lists) the unfinished uploads under meta/ begun before the
 * cutoff; counts them in g->t. */
void gcli_abort_uploads(struct gc_ctx *g);
/* key is one of s's keys, of this kind: parsed, never matched as text. */
bool gcli_key_of(const struct gc_source *s, const char *key, enum repo_kind kind,
                 struct repo_key *k);

#endif
