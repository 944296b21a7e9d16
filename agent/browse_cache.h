/*
 * browse_cache: the opened metadata chunks a browse keeps for the probes and listings
 * that follow (agent/browse.h), up to a budget of bytes, the least recently used
 * dropped first.
 *
 * A hash index (a u32 per slot, at most half full) finds a chunk in constant time: a
 * listing of a million files asks some 100,000 times, and the cache holds about 3,000
 * chunks of about 1.3 KiB. When a put would pass the budget, the least recently used
 * chunks go until half of it is left, in one pass (a sort of the uses) and the index is
 * rebuilt: a put costs constant time on average, not a scan for the oldest each time.
 * Memory: the chunks' bytes, 56 bytes a chunk and 8 to 16 of index.
 */
#ifndef LODE_AGENT_BROWSE_CACHE_H
#define LODE_AGENT_BROWSE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "repo/repo.h"

struct browse_chunk {
    uint8_t hash[REPO_HASH_LEN];
    uint8_t *plain;
    size_t len;
    uint64_t used;
};

struct browse_cache {
    struct browse_chunk *v;
    size_t n, cap;
    uint32_t *slot; /* position + 1 in v, 0 = free; at most half full */
    size_t nslot;   /* a power of two (0: none yet) */
    size_t bytes;   /* held by the chunks */
    size_t budget;  /* at most this many bytes (0: BROWSE_CACHE) */
    uint64_t clock; /* uses, for the order */
};

/* A zeroed struct is an empty cache of the default budget. */
void browse_cache_init(struct browse_cache *c, size_t budget);
/* The chunk named hash (marked used), or NULL; valid until the next put. */
const struct browse_chunk *browse_cache_get(struct browse_cache *c, const uint8_t *hash);
/* Keeps a copy of plain under hash (nothing when it is held already). */
void browse_cache_put(struct browse_cache *c, const uint8_t *hash, const uint8_t *plain,
                      size_t len);
void browse_cache_free(struct browse_cache *c);

#endif
