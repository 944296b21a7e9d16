/*
 * mcache: the node's cache of metadata packs (docs/repository.md, "The node's cache"), so
 * that a re-run reads its parent's file list and chunk set from the node's disk, not
 * with a GET per 16 MiB of them (a million files: 87 MB of metadata, 18 GETs).
 *
 * What it holds: metadata packs and the source's manifests exactly as the bucket holds
 * them (sealed: encrypted and authenticated under the repository key), one file each, in
 * DIR/meta/<repository>/<namespace>/<policy>/<host>/<run>.<seq>.meta (and <id>.manifest), where
 * <repository> is 16 hex digits of the SHA-256 of the repository as given. Never a key, never a
 * plain byte. Each file ends with a trailer: "LODEMC1\n", the pack's length (8 bytes, little
 * endian) and a tag, HMAC-SHA256 under a key derived from the repository's keys over the
 * entry's name, its length and the SHA-256 of its bytes. An entry is used only when its
 * trailer is whole and its tag matches (a file cut short, changed, moved to another name
 * or written under another repository's key is a miss, deleted and fetched again), and
 * only for a pack the run's listing of the bucket shows with that length (the cache is
 * never trusted to say a pack exists); every chunk taken from it is then opened and
 * checked against its name as one from the bucket is (repo_meta.h).
 *
 * Writes go to a temporary name (<name>.tmp.<16 random hex>, mode 600) renamed over the
 * entry once whole, so a process that dies mid-write leaves a temporary file, never a
 * partial entry; mcache_evict removes temporary files older than MCACHE_TEMP_AGE. Two
 * runs of different sources share the directory without meeting (a directory each);
 * two of one source may write the same entry, and the last rename wins with identical
 * bytes. Directories are made mode 700.
 *
 * Bounded: after a successful backup mcache_evict keeps only the entries this run used
 * or wrote (the packs that hold the new snapshot's trees, and those of the parent's
 * chunks the new trees dropped), so a source's cache is about the size of one
 * snapshot's metadata (about 90 bytes a file) plus the packs it shares with its parent.
 * A repository's directory not opened for MCACHE_STALE seconds is removed whole when
 * another is opened (a repository deleted, or named another way).
 *
 * Costs: a hit reads the entry once through SHA-256 (about 10 ms a 16 MiB pack); a miss
 * is one whole GET of the pack streamed to disk (no memory beyond 1 MiB), then the hit.
 * Every failure of the cache itself (no space, a read-only directory) is said once on
 * stderr and the run goes on without it.
 */
#ifndef LODE_AGENT_MCACHE_H
#define LODE_AGENT_MCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repo/repo.h"
#include "util/util.h"

#define MCACHE_TRAILER  48           /* magic 8, length 8, tag 32 */
#define MCACHE_TEMP_AGE 3600         /* seconds: a temporary file older than this is abandoned */
#define MCACHE_STALE    (30 * 86400) /* seconds: a repository's cache unused this long goes */
#define MCACHE_ANY      UINT64_MAX   /* mcache_read's want_len: any length */
#define MCACHE_MISS     1            /* mcache_read: no usable entry (absent, or bad and deleted) */

struct mcache {
    char *dir;       /* DIR/<repository>/<ns>/<policy>/<host> */
    uint8_t key[32]; /* the tags' key */
    char **keep;     /* names used or written by this run, for mcache_evict */
    size_t nkeep, capkeep;
    char *verified; /* the last entry whose whole tag was checked: its next ranges skip it */
    bool warned;    /* a failure of the cache was said */
    uint64_t hits, misses, bad, writes;
};

/* A write in progress: a temporary file and the SHA-256 of what it holds so far. */
struct mcache_writer {
    struct mcache *c;
    char *name, *tmp; /* the entry's name, the temporary file's path */
    int fd;
    void *sha; /* EVP_MD_CTX */
    uint64_t len;
    int failed; /* a write failed: commit refuses */
};

/*
 * The cache of one source of one repository under root (made mode 700 where missing). A
 * root that cannot be made or is not a directory is the error (the caller runs without).
 */
int mcache_open(struct mcache *c, const char *root, const char *repo, const struct repo_source *src,
                const struct repo_keys *k, struct util_err *err);
void mcache_close(struct mcache *c);
/*
 * Bytes [off, off + len) of entry name into out (fewer at its end), after its tag was
 * checked (once per entry while it is the last verified). 0; MCACHE_MISS when absent,
 * of another length than want_len (the bucket's; MCACHE_ANY: any), or bad (then deleted, counted in
 * c->bad); < 0 with err on an I/O error of the cache. A hit notes the name as kept.
 */
int mcache_read(struct mcache *c, const char *name, uint64_t want_len, uint64_t off, size_t len,
                struct util_buf *out, struct util_err *err);
/* Starts entry name: a temporary file beside it. */
int mcache_begin(struct mcache *c, const char *name, struct mcache_writer *w, struct util_err *err);
int mcache_write(struct mcache_writer *w, const void *data, size_t len);
/* Writes the trailer and renames the file over the entry; notes it as kept and verified.
 * On failure the temporary file is gone. */
int mcache_commit(struct mcache_writer *w, struct util_err *err);
/* Drops a write: its temporary file is deleted. */
void mcache_abort(struct mcache_writer *w);
/* The whole entry at once (begin, write, commit). */
int mcache_put(struct mcache *c, const char *name, const void *data, size_t len,
               struct util_err *err);
/* Notes a name as kept by mcache_evict. */
void mcache_keep(struct mcache *c, const char *name);
/*
 * Removes every entry of the source's directory that this run did not keep, and
 * temporary files older than MCACHE_TEMP_AGE at now (seconds). Call after a successful
 * backup only: a failed run keeps what it had.
 */
int mcache_evict(struct mcache *c, int64_t now, struct util_err *err);
/* The rule of mcache_evict for one file of the directory (pure). */
bool mcache_evicts(const struct mcache *c, const char *fname, int64_t mtime, int64_t now);
/* Removes the directories under top (DIR/meta) but keep whose time is older than
 * MCACHE_STALE at now (seconds), with all they hold. */
void mcache_drop_stale(const char *top, const char *keep, int64_t now);
/* Says a failure of the cache on stderr once per cache; the run goes on without it. */
void mcache_warn(struct mcache *c, const char *what, const struct util_err *err);
/*
 * The cache directory of --cache-dir DIR, --no-cache or the default
 * ($XDG_CACHE_HOME/lodestore, else $HOME/.cache/lodestore; NULL when neither is set):
 * the caller frees it; NULL means no cache.
 */
char *mcache_default_dir(const char *flag, bool disabled);

#endif
