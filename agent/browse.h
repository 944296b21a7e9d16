/*
 * browse: looking inside snapshots without restoring them (docs/browsing.md): a
 * directory's entries (lode ls), one path (lode find), the difference of two
 * snapshots (lode diff) and one file's bytes (lode dump). The page's snapshot browser
 * (lode ui --repo) calls the same functions.
 *
 * A snapshot's file list is a tree of metadata chunks (docs/repository.md, "Metadata")
 * whose leaves hold the records in path order (repo_path_cmp). Nothing here reads more
 * of a list than the question needs:
 *
 * - Finding a path descends the tree: an index chunk names its children but not their
 *   first paths, so each level is a binary search whose probes read the first leaf under
 *   a child. A path in a list of 20,000 files (three or four levels) costs about 12
 *   ranged GETs of metadata chunks of about 1 KiB (exactly their bytes), a few more for
 *   each level a larger list adds; chunks read once are kept (BROWSE_CACHE bytes) for
 *   the probes that follow.
 * - Under an index chunk of level 2, the index chunks below it and all their leaves
 *   (about 300 leaves, 400 KB) are fetched together when the search or a listing
 *   reaches it (the leaves of one lowest index chunk when the cursor passes over
 *   subdirectories): one ranged GET for each run of them in a pack, so the binary
 *   search's last probes and a listing's next leaves cost no request. A listing reads
 *   its leaves in order from the path on and stops at the first path outside the
 *   directory: a directory's own entries come between its subdirectories' entries, so
 *   a listing reads those too.
 * - A diff skips every chunk the two trees share, by name, level over level from the
 *   roots: only the index chunks and leaves that differ are read (in ranged GETs that
 *   join neighbouring chunks of one pack), and only their records are compared. Two
 *   snapshots of a million files with a thousand changes read a few thousand chunks of
 *   tens of thousands; two identical ones read nothing but their manifests.
 * - No data pack is read, except by browse_dump, which reads the snapshot's chunk set
 *   (all of it: 48 bytes a chunk, as a restore does) and the file's chunks, each
 *   authenticated and checked against its hash before its bytes are given out.
 *
 * Every metadata chunk is opened with the key and checked against its name, tree and
 * level before a record of it is used, so what is shown is what the backup wrote.
 *
 * Usage: storage_open_keyed, then browse_open (by id, as lode restore resolves it) or
 * browse_open_source (the caller knows the source), then any of the calls below, then
 * browse_close. One struct browse per snapshot; a diff takes two (a snapshot against
 * its parent: b->m.parent names it, "" without one). Not thread-safe: one
 * thread per struct browse (and its storage session).
 */
#ifndef LODE_AGENT_BROWSE_H
#define LODE_AGENT_BROWSE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "browse_cache.h"
#include "repo/repo.h"
#include "storage.h"

#define BROWSE_CACHE     (4u << 20)   /* opened metadata chunks kept for later probes */
#define BROWSE_GAP       (256u << 10) /* bytes between two wanted chunks read through */
#define BROWSE_RANGE_MAX (8u << 20)   /* at most this much in one GET */

/* One snapshot opened for browsing. */
struct browse {
    struct storage *st;
    const struct repo_keys *keys;
    struct repo_source src;
    char id[REPO_ID_LEN + 1];
    int64_t time;              /* the snapshot time (the manifest's modification time) */
    struct repo_manifest m;    /* authenticated: the roots of its two trees */
    bool open;                 /* m is held */
    struct browse_cache cache; /* opened chunks (BROWSE_CACHE bytes) */
    /* What was read: ranged GETs of metadata packs and their bytes, data GETs (dump). */
    uint64_t gets, bytes, chunks;
};

/*
 * Opens the snapshot id, found in the catalog as lode restore finds it (rx_find: one
 * LIST of snapshots/ per 1,000 snapshots), and reads its manifest (one GET). Returns
 * 0; AGENT_EABSENT when no source has the id; UTIL_EINVAL when id is not an id;
 * AGENT_EDAMAGED when the manifest does not open; another code for I/O. err says which.
 */
int browse_open(struct browse *b, struct storage *st, const char *id, struct util_err *err);
/* The same when the source is known (the manifest's GET only). */
int browse_open_source(struct browse *b, struct storage *st, const struct repo_source *src,
                       const char *id, struct util_err *err);
void browse_close(struct browse *b);

/* A path as lode ls and lode dump take it: "/a/b/" -> "/a/b" (owned); NULL when not
 * absolute or with "." or ".." components (restore's rule: rx_include_norm). */
char *browse_path_norm(const char *arg);

/*
 * Called for each entry, in path order; a non-zero return stops the walk and is
 * returned. f and its strings are valid during the call only.
 */
typedef int (*browse_entry_cb)(void *arg, const struct repo_file *f);

/*
 * The record of path (normalised) into *out (the caller frees it with repo_file_free).
 * Returns 0, AGENT_EABSENT when the snapshot has no such path, AGENT_EDAMAGED when a
 * chunk does not open or decode, or an I/O code.
 */
int browse_stat(struct browse *b, const char *path, struct repo_file *out, struct util_err *err);

/*
 * lode ls: the entries directly in directory path (with recursive, everything under
 * it), in path order, not path itself; a path that is not a directory gives its own
 * record alone. Returns as browse_stat, or cb's non-zero return.
 */
int browse_ls(struct browse *b, const char *path, bool recursive, browse_entry_cb cb, void *arg,
              struct util_err *err);

/*
 * Every record whose path matches pattern (internal/glob: anchored when it starts with "/", as
 * "/etc/[a-z]*.conf", or an unanchored "*.conf"), in path order. A pattern that is an absolute path
 * without glob characters is looked up as browse_stat does (a few chunks); any other reads the
 * whole list, except leaves whose names are in skip (leaves already searched without a match: see
 * browse_find_skip). Returns as browse_ls.
 */
struct browse_skip {
    uint8_t (*v)[REPO_HASH_LEN]; /* the first nsorted sorted (after each browse_find) */
    size_t n, nsorted, cap;
};
int browse_find(struct browse *b, const char *pattern, struct browse_skip *skip, browse_entry_cb cb,
                void *arg, struct util_err *err);
void browse_skip_free(struct browse_skip *s);

/*
 * The walk in path order underneath the calls above, for a caller that goes its own way
 * (the page's browser pages through a directory with it).
 */
struct browse_cursor {
    unsigned depth; /* of the tree */
    struct {
        struct repo_mref *refs; /* the children of the index chunk at this level */
        size_t n, i;            /* and the one the cursor is under */
    } lv[REPO_TREE_LEVELS];
    uint8_t *leaf; /* the opened leaf being read */
    uint8_t leaf_hash[REPO_HASH_LEN];
    struct repo_files_reader r;
    bool reading;
    const struct browse_skip *skip; /* leaves passed over (NULL: none) */
    const char *until;              /* subtrees whose records all come before it are passed over */
    void (*leaf_done)(void *arg, const uint8_t *hash); /* each leaf read to its end */
    void *leaf_arg;
};

/* Places c (zeroed by the caller) on the leaf where path would be (NULL: the first
 * leaf); browse_next then gives the records from that leaf's first on. */
int browse_seek(struct browse *b, struct browse_cursor *c, const char *path, struct util_err *err);
/* 1 and the next record in *f (the caller frees it), 0 at the end, or < 0. */
int browse_next(struct browse *b, struct browse_cursor *c, struct repo_file *f,
                struct util_err *err);
void browse_cursor_free(struct browse_cursor *c);
/* Whether hash is among the sorted part of s. */
bool browse_skipped(const struct browse_skip *s, const uint8_t *hash);

/*
 * Opens the file list chunks refs[0..n) of b's snapshot, each of level levels[i], into
 * plains[i] (allocated: the caller frees each; header included). Cached chunks cost
 * nothing; the others are fetched, neighbours in one pack joined into one ranged GET
 * (gaps up to BROWSE_GAP read through, at most BROWSE_RANGE_MAX a GET); keep: they are
 * cached too. AGENT_EDAMAGED for a chunk that is missing, does not open or is not of
 * its level; on failure plains holds nothing.
 */
int browse_load(struct browse *b, const struct repo_mref *refs, size_t n, const unsigned *levels,
                uint8_t **plains, bool keep, struct util_err *err);

/* What differs between two records of one path: a mask of these. */
enum browse_what {
    BROWSE_TYPE = 1u << 0,    /* a file became a directory, ... */
    BROWSE_CONTENT = 1u << 1, /* size or chunks */
    BROWSE_MODE = 1u << 2,
    BROWSE_OWNER = 1u << 3, /* uid or gid */
    BROWSE_MTIME = 1u << 4,
    BROWSE_TARGET = 1u << 5, /* a symlink's target */
    BROWSE_LINK = 1u << 6,   /* the hard link's first path */
    BROWSE_XATTRS = 1u << 7,
    BROWSE_INODE = 1u << 8, /* only ctime, inode or device number */
};
#define BROWSE_WHAT_N 9
/* The mask (pure); 0 when a and b are the same entry. */
unsigned browse_what(const struct repo_file *a, const struct repo_file *b);
/* The name of one bit in JSON and text: "type", "content", "mode", "owner", "mtime",
 * "target", "link", "xattrs", "inode". */
const char *browse_what_name(unsigned bit);

/*
 * One difference: added (a NULL), removed (b NULL) or changed (both; what != 0). The
 * records are valid during the call only; a non-zero return stops the diff.
 */
typedef int (*browse_diff_cb)(void *arg, const struct repo_file *a, const struct repo_file *b,
                              unsigned what);

/*
 * lode diff: the differences from snapshot a to snapshot b (of any sources), in path
 * order, reading only the chunks of their file lists that differ. Memory: the leaves
 * that differ, opened (about 1 KiB each). Returns 0, AGENT_EDAMAGED, an I/O code, or
 * cb's non-zero return.
 */
int browse_diff(struct browse *a, struct browse *b, browse_diff_cb cb, void *arg,
                struct util_err *err);

/* browse_dump's answer for a directory (exit 1, like a path that is not there). */
#define BROWSE_EISDIR (-EISDIR)

/* Called with the file's bytes in order; a non-zero return stops the dump. */
typedef int (*browse_data_cb)(void *arg, const uint8_t *data, size_t len);

/*
 * lode dump: the bytes of regular file path. Returns 0; AGENT_EABSENT for no such
 * path; BROWSE_EISDIR for a directory and UTIL_EINVAL for anything else that is not a
 * regular file (a symlink is not followed); AGENT_EDAMAGED when a chunk is missing,
 * fails to authenticate or does not match its hash (nothing more is given out); an
 * I/O code; or cb's non-zero return. Each chunk is one ranged GET of its stored bytes.
 */
int browse_dump(struct browse *b, const char *path, browse_data_cb cb, void *arg,
                struct util_err *err);

#endif
