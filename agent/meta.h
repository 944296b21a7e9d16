/*
 * meta: reading a snapshot's metadata trees from its source's metadata packs
 * (docs/repository.md, "Metadata"), for the backup's parent, restore, check and gc.
 *
 * A metadata chunk is fetched with a ranged GET of a window of its pack: the whole
 * pack when the chunk lies in its first META_CACHE bytes (a GET past the end gives
 * what is there: a pack of up to 16 MiB, a first backup's of up to about 170,000
 * files, is one GET for both trees), else META_WINDOW bytes from the chunk on (the
 * next chunks of a tree follow it). A tree whose unchanged stretches are in an old
 * run's pack and whose changes are in newer, small ones goes back and forth between
 * them: a window is kept per pack (at most META_WINDOWS, META_CACHE bytes in all
 * but the newest, the least recently used dropped first), so going back to a pack
 * does not fetch it again. Memory: at most META_CACHE bytes, a window arriving
 * included (the oldest windows make room as its bytes come), plus what the caller keeps.
 *
 * With the node's cache (mcache.h; a backup's parent): meta_src_list first lists the
 * source's metadata packs (one LIST per 1,000 packs), and a window is then read from the
 * pack's cached copy when the listing shows the pack with the copy's length; a pack not
 * cached is fetched whole, once, into the cache (one GET) and read from there. A pack the
 * listing does not show is fetched from the bucket as without a cache (and is missing
 * there too). A failure of the cache itself drops it for the rest of the run.
 */
#ifndef LODE_AGENT_META_H
#define LODE_AGENT_META_H

#include <stdint.h>

#include "mcache.h"
#include "repo/repo.h"
#include "storage.h"

#define META_WINDOW  (4u << 20)
#define META_CACHE   (16u << 20)
#define META_WINDOWS 8

/* Bytes [off, off + len) of the metadata pack run.seq. */
struct meta_window {
    char run[REPO_ID_LEN + 1];
    uint32_t seq;
    uint64_t off;
    struct util_buf data;
    uint64_t used; /* when it was last used: a counter */
};

/* A metadata pack as the source's listing shows it: "<run>.<seq>.meta" and its size. */
struct meta_listed {
    char *name;
    uint64_t size;
};

struct meta_src {
    struct storage *st;
    struct repo_source src;
    struct meta_window win[META_WINDOWS];
    size_t nwin;
    uint64_t clock;
    uint64_t gets, bytes;       /* ranged GETs made and the bytes they gave */
    struct mcache *cache;       /* borrowed; NULL: none (or dropped after a failure) */
    struct meta_listed *listed; /* sorted by name, after meta_src_list */
    size_t nlisted;
};

void meta_src_init(struct meta_src *m, struct storage *st, const struct repo_source *src);
void meta_src_free(struct meta_src *m);
/* Uses cache (borrowed) for the packs of the source's listing, which this makes: one LIST
 * per 1,000 packs. A listing that fails is said on stderr and the cache is not used. */
void meta_src_cache(struct meta_src *m, struct mcache *cache);
/* repo_mfetch_cb over the source's packs (arg: the struct meta_src); a missing pack
 * is S3_ENOTFOUND, "KEY is missing". */
int meta_fetch_cb(void *arg, const struct repo_mref *ref, uint8_t *sealed, struct util_err *err);
/* The key of a metadata pack; the caller frees it. */
char *meta_pack_key(const struct repo_source *src, const char *run, uint32_t seq);
/* A snapshot's chunk set, read whole (sorted by hash). */
int meta_load_chunkset(struct meta_src *m, const struct repo_keys *k, const struct repo_root *root,
                       struct repo_chunkset *s, struct util_err *err);
/* A snapshot's file list's records, concatenated (*data allocated; held once). */
int meta_load_files(struct meta_src *m, const struct repo_keys *k, const struct repo_root *root,
                    uint8_t **data, size_t *len, struct util_err *err);
/*
 * The marks of a snapshot as listed (incomplete, suspicious) against its
 * authenticated manifest: each listed mark must carry lode's tag for this source,
 * id and kind; a manifest that records .incomplete needs the mark. Returns 0, or
 * UTIL_EIO with what is wrong; *note gets a sentence worth saying that is not
 * damage (a recorded .suspicious mark that was cleared), else "".
 */
int meta_check_marks(struct storage *st, const struct repo_keys *k, const struct repo_manifest *m,
                     bool incomplete, bool suspicious, char *note, size_t notesize,
                     struct util_err *err);

#endif
