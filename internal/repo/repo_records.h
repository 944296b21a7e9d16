/*
 * repo_records: the small objects of a repository (docs/repository.md, "Layout", "Run
 * records and manifests" and "Authenticated manifests and marks"): the run record a
 * backup writes first and the manifest it writes last, binary (public fields, and a
 * sealed part bound to them and to their place), the marks' and pins' JSON tags, and
 * the token bucket that paces uploads. Pure functions (records.c, excluded.c, bucket.c).
 *
 * Costs: a run record is about 180 bytes, a manifest about 200 plus its paths and
 * errors; a tag is 56 hex characters.
 */
#ifndef LODE_REPO_RECORDS_H
#define LODE_REPO_RECORDS_H

/* Part of repo/repo.h, which includes it after the types it builds on. */
#ifndef LODE_REPO_H
#error "include repo/repo.h, not repo_records.h"
#endif

/* ---- run records and manifests ---- */

struct repo_run {
    char id[REPO_ID_LEN + 1];
    struct repo_source src;       /* with id, the place: bound by the seal, never stored */
    char parent[REPO_ID_LEN + 1]; /* "" without a parent */
    int64_t max_runtime;          /* seconds */
    char agent[64];               /* the version of lode that wrote it */
    /* The parent's trees, as its manifest named them when the backup started: garbage
     * collection protects what they name (condition (c), docs/gc.md) even once the
     * parent's manifest is forgotten. Sealed ("parentTrees"), bound to id and parent. */
    bool has_roots;
    struct repo_root parent_files, parent_chunks;
};

/* The record's bytes (*len of them; the caller frees them). keys: seals the parent's
 * trees when r->has_roots (NULL: never). */
uint8_t *repo_run_encode(const struct repo_run *r, const struct repo_keys *k, size_t *len);
/* The record at src and id (its key). keys NULL: the parent's trees are not read
 * (has_roots false). UTIL_EINVAL when malformed or in the JSON encoding of earlier
 * development builds (refused by name), UTIL_EIO when it was written for another place
 * (its place check, read without the key too) or the trees do not authenticate. */
int repo_run_decode(struct repo_run *r, const struct repo_source *src, const char *id,
                    const void *body, size_t len, const struct repo_keys *k, struct util_err *err);

struct repo_error {
    char *path;
    char *message;
};

/*
 * What a backup left out, by rule (docs/policy.md, "spec.exclude"): entries and, for
 * regular files, their bytes. A directory left out whole counts as one entry; what it
 * holds is never read, so neither counted. Kept in the manifest's private part (a bit
 * per rule that left something out, then its two counts), so a person can see why a
 * file is missing; the backup's JSON output shows it as repo_excluded_json makes it.
 */
enum repo_exclude_rule {
    REPO_EXCL_PATTERN, /* spec.exclude.patterns */
    REPO_EXCL_CACHE,   /* a directory with CACHEDIR.TAG: recorded, not entered */
    REPO_EXCL_SIZE,    /* spec.exclude.largerThan */
    REPO_EXCL_FS,      /* a mount point of another file system: recorded, not entered */
    REPO_EXCL_RULES
};

struct repo_excluded {
    uint64_t entries, bytes;
};

/* The names of the rules in JSON: "pattern", "cache", "largerThan", "otherFileSystem". */
extern const char *const repo_exclude_rule_names[REPO_EXCL_RULES];
/* {"pattern": {"entries": n, "bytes": n}, ...}, every rule, in enum order. */
json_t *repo_excluded_json(const struct repo_excluded x[REPO_EXCL_RULES]);
/* The reverse; an absent rule is zero. UTIL_EINVAL when malformed. */
int repo_excluded_parse(const json_t *o, struct repo_excluded x[REPO_EXCL_RULES]);

struct repo_manifest {
    char id[REPO_ID_LEN + 1];
    struct repo_source src;
    char parent[REPO_ID_LEN + 1];
    int64_t max_runtime;
    bool incomplete, suspicious; /* the marks written before the manifest */
    /* Counters (not encrypted). */
    uint64_t files, bytes, new_files, changed_files, deleted_files, new_bytes, uploaded_bytes,
        raw_new_bytes, errors;
    char agent[64];
    /* Sealed. */
    char **paths;
    size_t npaths;
    struct repo_error *errs;
    size_t nerrs;
    struct repo_root files_root, chunks_root;       /* the trees */
    struct repo_excluded excluded[REPO_EXCL_RULES]; /* sealed, "excluded" */
};

/*
 * The private part is sealed with the place (source and id) and every public byte as
 * associated data, so a manifest whose parent, maxRuntime, marks, counters or agent
 * changed, or that was moved or copied, does not open with the key. The bytes (*len
 * of them) are the caller's to free.
 */
uint8_t *repo_manifest_encode(const struct repo_manifest *m, const struct repo_keys *k,
                              size_t *len);
/* The manifest at src and id (its key; m->src and m->id are set from them). keys NULL:
 * the public fields only, unauthenticated (paths, errors and roots left empty): the
 * catalog's and garbage collection's counters. UTIL_EINVAL when malformed or in the
 * JSON encoding of earlier development builds (refused by name), UTIL_EIO when it was
 * written for another place (its place check, read without the key too) or it
 * does not authenticate. */
int repo_manifest_decode(struct repo_manifest *m, const struct repo_source *src, const char *id,
                         const void *body, size_t len, const struct repo_keys *k,
                         struct util_err *err);
void repo_manifest_free(struct repo_manifest *m);

/*
 * A mark's body: a tag (AES-GCM over nothing, 28 bytes in hex) bound to the
 * source, the id and the kind (REPO_KEY_INCOMPLETE or REPO_KEY_SUSPICIOUS), so a
 * mark made without the key, or moved, is told from one lode wrote. The caller
 * frees the text.
 */
char *repo_mark_encode(const struct repo_keys *k, const struct repo_source *src, const char *id,
                       enum repo_kind kind);
int repo_mark_check(const struct repo_keys *k, const struct repo_source *src, const char *id,
                    enum repo_kind kind, const char *body, size_t len, struct util_err *err);
/*
 * A pin's body (docs/retention.md, "Pinned snapshots"): {"format", "reason", "tag"}, the
 * tag as a mark's, bound to the source, the id, the kind and the reason, so a pin made
 * without the key, moved, or given another reason is told from one lode wrote. The caller
 * frees the text.
 */
char *repo_pin_encode(const struct repo_keys *k, const struct repo_source *src, const char *id,
                      const char *reason);
/* The reason of a pin (allocated) once its tag checks; k NULL reads the reason without
 * checking (a listing without the key). UTIL_EIO, naming the mark, when it does not. */
int repo_pin_decode(const struct repo_keys *k, const struct repo_source *src, const char *id,
                    const char *body, size_t len, char **reason, struct util_err *err);

/* ---- the upload token bucket ---- */

/*
 * One bucket for all uploads of a process. Its capacity is a twentieth of a
 * second's worth (at least 512 bytes), so any 1 s window holds at most
 * 1.05 x rate once the start-up burst (one capacity) is spent. Time is an input.
 */
struct repo_bucket {
    double rate;   /* bytes per second */
    double cap;    /* bytes */
    double tokens; /* bytes available */
    uint64_t last; /* ns */
};

void repo_bucket_init(struct repo_bucket *b, uint64_t rate, uint64_t now_ns);
/* Takes up to want bytes; returns how many were granted (0 when empty). */
size_t repo_bucket_take(struct repo_bucket *b, uint64_t now_ns, size_t want);
/* Nanoseconds until min(want, capacity) bytes are available (0: now). */
uint64_t repo_bucket_wait(struct repo_bucket *b, uint64_t now_ns, size_t want);

#endif
