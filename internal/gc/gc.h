/*
 * gc: which objects of one source garbage collection may delete (docs/gc.md).
 *
 * Garbage collection takes no lock. It is safe beside running backups because
 * of one rule, decided here and nowhere else. At server time G, for one source
 * (namespace/policy/host), with
 *
 *   W = the largest maxRuntime of the repository's policies and of the live run
 *       records, plus one hour,
 *
 * a pack, a metadata pack or a run record may be deleted only if all three hold:
 *   (a) it is older than G - W (its modification time is strictly before);
 *   (b) no listed manifest references it;
 *   (c) no parent named by a run record newer than G - W references it.
 * A run record is live while the backup it describes may still run: its time
 * plus its own maxRuntime plus one hour is after G. A run record belongs to one
 * snapshot id and is referenced by that id; a pack or a metadata pack is
 * referenced by every snapshot whose trees name it (a data pack through the chunk
 * set, a metadata pack through any chunk of either tree, gc_meta_pack_id).
 *
 * The caller, for one source: lists the manifests, then the run records; reads
 * the body of every run record without a listed manifest (it may be live);
 * computes W (gc_window) and the cutoff G - W; reads the body of every other
 * run record newer than the cutoff (it may name a parent under (c)); takes the
 * protected ids (gc_protected_ids) and the packs their indexes reference
 * (gc_packset); then lists the objects and asks gc_may_delete() about each.
 * Nothing here does I/O or reads a clock: G is an argument.
 *
 * Costs: the protected ids are one sorted array of borrowed strings (8 bytes
 * each). The referenced packs are a sorted array of 32-byte ids, deduplicated
 * whenever it doubles, so memory is about 32 bytes per distinct pack the
 * source's protected snapshots use (a 1 TiB source of 16 MiB packs: 2 MiB),
 * never the size of the repository; a lookup is a binary search.
 */
#ifndef LODE_GC_H
#define LODE_GC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* The hour added to the largest maxRuntime: the manifest PUT and clock slack. */
#define GC_MARGIN_SECONDS 3600

/* A pack id: the SHA-256 of the pack, as its key names it in hex. */
#define GC_PACK_ID_LEN 32

/* One run record, as listed (id, time) and, when read, its body. */
struct gc_run {
    const char *id;      /* the snapshot id; borrowed */
    int64_t time;        /* the record's modification time, server seconds */
    bool read;           /* max_runtime and parent are known */
    int64_t max_runtime; /* seconds, > 0 when read */
    const char *parent;  /* the parent snapshot id, NULL or "" for none; borrowed */
};

/* True when the backup the record describes may still run at G (time + maxRuntime + 1 h > G). */
bool gc_run_live(const struct gc_run *run, int64_t now);

/*
 * W: the largest of policy_max_runtime and the max_runtime of every live run
 * record that was read, plus GC_MARGIN_SECONDS. A run record that was not read
 * is not counted: the caller reads every record without a listed manifest,
 * and a record with a listed manifest belongs to a backup that has finished.
 */
int64_t gc_window(int64_t policy_max_runtime, const struct gc_run *runs, size_t n, int64_t now);

/* The cutoff G - W: objects strictly older than it are subject to (a). */
int64_t gc_cutoff(int64_t now, int64_t window);

/* A sorted set of snapshot ids (borrowed strings). */
struct gc_idset {
    const char **v;
    size_t n, cap;
};

void gc_idset_free(struct gc_idset *set);
bool gc_idset_has(const struct gc_idset *set, const char *id);

/*
 * The snapshots whose objects and references are protected: every listed
 * manifest (b), and the parent of every run record newer than the cutoff (c).
 * Returns 0, or UTIL_EINVAL when a run record newer than the cutoff was not
 * read (its parent is unknown, so nothing can be decided). ids are borrowed.
 */
int gc_protected_ids(const char *const *manifests, size_t nmanifests, const struct gc_run *runs,
                     size_t nruns, int64_t cutoff, struct gc_idset *out, struct util_err *err);

/* The packs referenced by the protected snapshots' indexes. */
struct gc_packset {
    uint8_t (*v)[GC_PACK_ID_LEN];
    size_t n, cap;
    size_t sorted; /* v[0 .. sorted) is sorted and unique */
};

void gc_packset_add(struct gc_packset *set, const uint8_t id[GC_PACK_ID_LEN]);
/* Sorts and deduplicates; call after the last add and before gc_packset_has. */
void gc_packset_seal(struct gc_packset *set);
bool gc_packset_has(const struct gc_packset *set, const uint8_t id[GC_PACK_ID_LEN]);
void gc_packset_free(struct gc_packset *set);

/*
 * A metadata pack (meta/<source>/<run>.<seq>.meta) as an id in the same set as the
 * data packs: the run id's 30 variable characters (its date, time and random
 * digits) and seq as two bytes, big-endian. A metadata pack is referenced by every
 * snapshot whose trees hold one of its chunks, so it follows the packs' rule: kept
 * while a protected snapshot's tree names it, deleted once old and unreferenced.
 * run must be a valid snapshot id and seq below GC_META_SEQ_MAX (the backup stops
 * before).
 */
#define GC_META_SEQ_MAX 65536
void gc_meta_pack_id(const char *run, uint32_t seq, uint8_t id[GC_PACK_ID_LEN]);

/* 64 hex digits (either case) to a pack id; UTIL_EINVAL otherwise. */
int gc_pack_id_parse(const char *hex, size_t len, uint8_t id[GC_PACK_ID_LEN]);
/* A pack id as 64 lowercase hex digits and a NUL. */
void gc_pack_id_format(const uint8_t id[GC_PACK_ID_LEN], char out[2 * GC_PACK_ID_LEN + 1]);

/* Why an object is kept or deleted. */
enum gc_verdict {
    GC_DELETE = 0,     /* (a), (b) and (c) all hold */
    GC_KEEP_YOUNG,     /* not older than G - W */
    GC_KEEP_REFERENCED /* a protected snapshot references it */
};

/* The rule itself: time is the object's modification time. */
enum gc_verdict gc_may_delete(int64_t time, int64_t cutoff, bool referenced);

/*
 * An unfinished multipart upload under meta/ (a backup uploads its file list in
 * parts; one that stopped or was killed leaves its upload open, and S3 keeps the
 * parts until it is aborted): abort it only when it was initiated strictly before
 * G - W, as (a) says of objects. A backup that may still complete its list started
 * after G - W (its run record is live), so its upload is younger; nothing references
 * an unfinished upload, so (b) and (c) do not apply. An upload whose initiation time
 * the storage did not give (initiated < 0) is kept (GC_KEEP_YOUNG).
 */
enum gc_verdict gc_may_abort_upload(int64_t initiated, int64_t cutoff);

#endif
