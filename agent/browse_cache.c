/*
 * browse_cache: opened metadata chunks kept for later probes (browse_cache.h).
 */
#include <stdlib.h>
#include <string.h>

#include "browse.h"

void browse_cache_init(struct browse_cache *c, size_t budget)
{
    memset(c, 0, sizeof(*c));
    c->budget = budget;
}

static size_t browse_cache_home(const uint8_t *hash, size_t nslot)
{
    uint64_t h;
    memcpy(&h, hash, sizeof(h));
    return (size_t)(h & (nslot - 1));
}

/* Sizes the index for the chunks held (at most half full) and fills it again. */
static void browse_cache_index(struct browse_cache *c)
{
    size_t n = 64;
    while (n < 2 * c->n + 2)
        n *= 2;
    if (n != c->nslot) {
        free(c->slot);
        c->slot = util_malloc(n * sizeof(*c->slot));
        c->nslot = n;
    }
    memset(c->slot, 0, n * sizeof(*c->slot));
    for (size_t j = 0; j < c->n; j++) {
        size_t i = browse_cache_home(c->v[j].hash, n);
        while (c->slot[i] != 0)
            i = (i + 1) & (n - 1);
        c->slot[i] = (uint32_t)(j + 1);
    }
}

const struct browse_chunk *browse_cache_get(struct browse_cache *c, const uint8_t *hash)
{
    if (c->nslot == 0)
        return NULL;
    for (size_t i = browse_cache_home(hash, c->nslot);; i = (i + 1) & (c->nslot - 1)) {
        if (c->slot[i] == 0)
            return NULL;
        struct browse_chunk *k = &c->v[c->slot[i] - 1];
        if (memcmp(k->hash, hash, REPO_HASH_LEN) == 0) {
            k->used = ++c->clock;
            return k;
        }
    }
}

struct browse_use {
    uint64_t used;
    size_t len;
};

static int browse_use_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct browse_use *)a)->used, y = ((const struct browse_use *)b)->used;
    return x > y ? -1 : x < y; /* the newest first */
}

/* Drops the least recently used chunks until at most half the budget is held, and
 * rebuilds the index. Uses are distinct (a counter), so the oldest use kept is a cut. */
static void browse_cache_shrink(struct browse_cache *c, size_t budget)
{
    struct browse_use *u = util_malloc(c->n * sizeof(*u));
    uint64_t cut = UINT64_MAX;
    size_t keep = 0, bytes = 0;
    for (size_t i = 0; i < c->n; i++)
        u[i] = (struct browse_use){c->v[i].used, c->v[i].len};
    qsort(u, c->n, sizeof(*u), browse_use_cmp);
    for (size_t i = 0; i < c->n && bytes + u[i].len <= budget / 2; i++) {
        bytes += u[i].len;
        cut = u[i].used;
    }
    free(u);
    for (size_t i = 0; i < c->n; i++) {
        if (c->v[i].used >= cut)
            c->v[keep++] = c->v[i];
        else
            free(c->v[i].plain);
    }
    c->n = keep;
    c->bytes = bytes;
    browse_cache_index(c);
}

void browse_cache_put(struct browse_cache *c, const uint8_t *hash, const uint8_t *plain, size_t len)
{
    size_t budget = c->budget ? c->budget : BROWSE_CACHE;
    if (browse_cache_get(c, hash) != NULL)
        return;
    if (c->n > 0 && c->bytes + len > budget)
        browse_cache_shrink(c, budget);
    c->v = util_grow(c->v, &c->cap, c->n + 1, sizeof(*c->v));
    struct browse_chunk *k = &c->v[c->n++];
    memcpy(k->hash, hash, REPO_HASH_LEN);
    k->plain = util_malloc(len ? len : 1);
    if (len > 0)
        memcpy(k->plain, plain, len);
    k->len = len;
    k->used = ++c->clock;
    c->bytes += len;
    if (2 * c->n + 2 > c->nslot) {
        browse_cache_index(c);
        return;
    }
    size_t i = browse_cache_home(hash, c->nslot);
    while (c->slot[i] != 0)
        i = (i + 1) & (c->nslot - 1);
    c->slot[i] = (uint32_t)c->n;
}

void browse_cache_free(struct browse_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].plain);
    free(c->v);
    free(c->slot);
    memset(c, 0, sizeof(*c));
}
