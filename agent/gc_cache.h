/*
 * gc_cache: what lode gc learned of each snapshot it read (docs/gc.md, "The cache"),
 * kept between runs so that a snapshot that did not change is not read again.
 *
 * An entry is one manifest as the storage described it when gc read it (its id, ETag,
 * size and Last-Modified second) and the data and metadata packs its two trees name.
 * The trees are fixed by the authenticated roots in the manifest, so the packs are a
 * function of the manifest's bytes: while a listing shows the same ETag, size and
 * time for that id, the entry says what reading would, and gc skips the manifest's
 * GET and its trees. A manifest replaced under its id shows another ETag or time and
 * is read again; an empty ETag never matches. The entries of one source are stored in
 * gc/<source>/packs.cache, sealed with the repository's keys and bound to the source
 * (a cache made without the key, or moved, does not open, and gc then reads every
 * tree), as: "LODEGCC1", the packs named by any entry (sorted, 32 bytes each), then
 * per entry its id, ETag, size, time and its packs as ascending indexes into that
 * table, delta-coded varints (util/varint.h): about one byte per snapshot and pack it
 * names once packs are shared.
 *
 * Pure: no I/O (gc_trees.c fetches and stores the object). Memory: 32 bytes per
 * (snapshot, pack) pair of the entries held, and the encoded object while it is written.
 */
#ifndef LODE_AGENT_GC_CACHE_H
#define LODE_AGENT_GC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "gc/gc.h"
#include "repo/repo.h"

#define GC_CACHE_ETAG_MAX 128

struct gc_cache_entry {
    char id[REPO_ID_LEN + 1];
    char etag[GC_CACHE_ETAG_MAX + 1];
    int64_t mtime; /* seconds */
    uint64_t size;
    uint8_t (*packs)[GC_PACK_ID_LEN]; /* sorted, unique */
    size_t npacks;
};

struct gc_cache {
    struct gc_cache_entry *v;
    size_t n, cap;
};

void gc_cache_init(struct gc_cache *c);
void gc_cache_free(struct gc_cache *c);
/* The entry of a manifest as listed (id, ETag, size, Last-Modified second), or NULL. */
const struct gc_cache_entry *gc_cache_find(const struct gc_cache *c, const char *id,
                                           const char *etag, int64_t mtime, uint64_t size);
/*
 * Adds an entry with a copy of packs (any order, duplicates allowed). Nothing is added
 * for an empty ETag or one longer than GC_CACHE_ETAG_MAX: such a manifest is read every
 * run.
 */
void gc_cache_add(struct gc_cache *c, const char *id, const char *etag, int64_t mtime,
                  uint64_t size, const uint8_t (*packs)[GC_PACK_ID_LEN], size_t npacks);
/* The sealed object of c for src (*out allocated). */
void gc_cache_encode(const struct gc_cache *c, const struct repo_keys *k,
                     const struct repo_source *src, uint8_t **out, size_t *len);
/* Reads a sealed object into c (empty on failure): UTIL_EIO when it does not open
 * with k for src or is malformed. */
int gc_cache_decode(struct gc_cache *c, const struct repo_keys *k, const struct repo_source *src,
                    const uint8_t *data, size_t len, struct util_err *err);

#endif
