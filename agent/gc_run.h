/*
 * gc_run: the collection of `lode gc` (docs/gc.md) around internal/gc's rule.
 * gc_collect.c runs it (gcrun_run: steps 0 to 5) and deletes; gc_read.c finds the
 * sources, lists their manifests and run records, reads run records (GC_GETS at a
 * time) and takes the storage's time; gc_trees.c reads the protected snapshots' trees
 * and keeps gc's cache; gc_uploads.c
 * aborts unfinished multipart uploads. What a source loses is planned without I/O (struct gc_plan)
 * from what was listed and read, so the plan can be tested on a layout in memory.
 *
 * Output: with text set, the run prints its progress on stdout (the storage time and
 * window, one line per source, the uploads it aborts); sources it skips and keys it
 * cannot delete are "lode gc: ..." lines on stderr. The totals (struct gc_totals)
 * are the caller's to print.
 */
#ifndef LODE_AGENT_GC_RUN_H
#define LODE_AGENT_GC_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/gc.h"
#include "gc_cache.h"
#include "repo/repo.h"
#include "storage.h"

/* Written at the start of every run; its LastModified is G (docs/gc.md). */
#define GC_RECORD_KEY "gc.json"

struct gc_runrec {
    char id[REPO_ID_LEN + 1];
    char parent[REPO_ID_LEN + 1];
    int64_t time;
    uint64_t size;
    int64_t max_runtime;
    bool read, gone;
    bool has_roots; /* the parent's trees, from the record (repo_run) */
    struct repo_root parent_files, parent_chunks;
};

/* A listed manifest: its id first (the listing's order, ascending, searched by id), and
 * what the listing says of the object, which gc's cache is keyed by (gc_cache.h). */
struct gc_man {
    char id[REPO_ID_LEN + 1];
    char etag[GC_CACHE_ETAG_MAX + 1]; /* "" when the storage sent none or a longer one */
    int64_t mtime;
    uint64_t size;
};

struct gc_source {
    struct repo_source src;
    struct gc_man *manifests; /* ascending (the listing's order) */
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
    /* Protected snapshots whose packs came from gc's cache, and those read (text only). */
    size_t trees_cached, trees_read;
};

struct gc_ctx {
    struct storage st;
    bool opened; /* st is open: gcrun_close closes it */
    bool dry_run, text;
    int64_t now;       /* G */
    int64_t policy_mr; /* the policies' largest maxRuntime */
    int64_t window, cutoff;
    struct gc_source *srcs;
    size_t nsrcs, capsrcs;
    struct gc_totals t;
};

/*
 * Runs the collection on g (dry_run, text and policy_mr set by the caller; the rest
 * zero) against the repository of so. Returns 0 when it ran: g->t says what
 * happened (failed deletions, skipped sources, unlisted uploads). Returns a negative
 * code with err when nothing was deleted: the repository cannot be opened, its key
 * does not open it, or its sources cannot be found.
 */
int gcrun_run(struct gc_ctx *g, const struct storage_opts *so, struct util_err *err);
/* Frees the sources and closes the storage (after gcrun_run, whatever it returned). */
void gcrun_close(struct gc_ctx *g);

/*
 * One deletion pass of a source (packs, meta objects or run records): which of its
 * objects the rule lets go. Pure: the caller feeds what was listed.
 */
struct gc_plan {
    const struct gc_source *s;
    const struct gc_idset *ids;     /* the protected snapshots (gc_protected_ids) */
    const struct gc_packset *packs; /* the data and metadata packs their trees use, sealed */
    enum repo_kind kind;            /* REPO_KEY_PACK, REPO_KEY_META or REPO_KEY_RUN */
    int64_t cutoff;                 /* G - W */
    char **del;                     /* the keys to delete, in the order they came */
    uint64_t *sizes;
    size_t ndel, capdel, capsizes;
    size_t total, kept; /* the objects of this kind judged, and those kept */
};
/* A listed object under data/ (kind PACK) or meta/ (kind META: metadata packs);
 * a key that is not one of the source's of that kind is never deleted nor counted. */
void gcrun_plan_object(struct gc_plan *p, const char *key, int64_t mtime, uint64_t size);
/* Kind RUN: the source's run records (those gone meanwhile left out). */
void gcrun_plan_runs(struct gc_plan *p);
void gcrun_plan_free(struct gc_plan *p);

/* Prints why a source is skipped ("nothing of this source is deleted"). */
void gcrun_warn(struct gc_ctx *g, const struct repo_source *s, const char *msg);
/* Step 0: G, from the LastModified of GC_RECORD_KEY, written now. */
int gcrun_server_time(struct gc_ctx *g, struct util_err *err);
/* Step 1: every source named under snapshots/, runs/, data/ and meta/, sorted, unique. */
int gcrun_find_sources(struct gc_ctx *g, struct util_err *err);
/* Step 2: a source's manifests and run records, and the run records whose bodies W needs;
 * on failure the source is marked skip (and named). Raises g->policy_mr. */
int gcrun_list_source(struct gc_ctx *g, struct gc_source *s);
/* The bodies of n run records of s (a record gone meanwhile is marked gone). */
int gcrun_read_runs(struct gc_ctx *g, const struct gc_source *s, struct gc_runrec **recs, size_t n,
                    struct util_err *err);
/*
 * The data and metadata packs the trees of ids use, into packs: for a snapshot whose
 * listed manifest has an entry in old (gc_cache_find), the entry's packs, read from
 * nothing; for any other, its manifest, then every chunk of its chunk set tree and
 * the index chunks of its file list. Every snapshot known by its manifest goes into
 * fresh (the cache to store), with the packs it names. A manifest or chunk that
 * cannot be read is an error.
 */
int gcrun_read_trees(struct gc_ctx *g, const struct gc_source *s, const struct gc_idset *ids,
                     const struct gc_cache *old, struct gc_cache *fresh, struct gc_packset *packs,
                     struct util_err *err);
/* gc's cache of s (gc_cache.h): empty when there is none; one that does not open is
 * said on stderr and left out (every tree is then read). Never an error. */
void gcrun_cache_load(struct gc_ctx *g, const struct gc_source *s, struct gc_cache *c);
/* Stores fresh unless it holds the same entries as old (nothing in a dry run); a
 * failure is said on stderr: the next run reads more, and deletes nothing less safely. */
void gcrun_cache_store(struct gc_ctx *g, const struct gc_source *s, const struct gc_cache *old,
                       const struct gc_cache *fresh);
/* The source's run records as internal/gc sees them (ids borrowed; gone ones left out). */
struct gc_run *gcrun_runs_view(const struct gc_source *s, size_t *n);
/* Step 5: aborts (or, dry, lists) the unfinished uploads under meta/ begun before the
 * cutoff; counts them in g->t. */
void gcrun_abort_uploads(struct gc_ctx *g);
/* The listed manifest of id in s, or NULL. */
const struct gc_man *gcrun_listed(const struct gc_source *s, const char *id);
/* Sees each GET's result once, in completion order (gcrun_get_all). */
typedef int (*gcrun_got_cb)(size_t i, const struct s3_result *res, void *arg, struct util_err *err);
/* GETs the n keys, GC_GETS at a time, each body up to max_bytes; after got's first
 * error the rest finish unseen and that error is returned. */
int gcrun_get_all(struct gc_ctx *g, char **keys, size_t n, uint64_t max_bytes, gcrun_got_cb got,
                  void *arg, struct util_err *err);
void gcrun_keys_free(char **keys, size_t n);
/* key is one of s's keys, of this kind: parsed, never matched as text. */
bool gcrun_key_of(const struct gc_source *s, const char *key, enum repo_kind kind,
                  struct repo_key *k);

#endif
