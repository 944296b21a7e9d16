/*
 * gc_cache: the cache of what gc read, its entries and its sealed encoding (gc_cache.h).
 */
#include "gc_cache.h"

#include <stdlib.h>
#include <string.h>

#include "util/varint.h"

#define GC_CACHE_MAGIC "LODEGCC1"
#define GC_CACHE_AAD   "lodestore gc cache 2\n"

static int gc_cache_id_cmp(const void *a, const void *b)
{
    return memcmp(a, b, GC_PACK_ID_LEN);
}

void gc_cache_init(struct gc_cache *c)
{
    memset(c, 0, sizeof(*c));
}

void gc_cache_free(struct gc_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].packs);
    free(c->v);
    memset(c, 0, sizeof(*c));
}

const struct gc_cache_entry *gc_cache_find(const struct gc_cache *c, const char *id,
                                           const char *etag, int64_t mtime, uint64_t size)
{
    if (etag == NULL || etag[0] == '\0')
        return NULL;
    for (size_t i = 0; i < c->n; i++) {
        const struct gc_cache_entry *e = &c->v[i];
        if (strcmp(e->id, id) == 0 && strcmp(e->etag, etag) == 0 && e->mtime == mtime &&
            e->size == size)
            return e;
    }
    return NULL;
}

/* Sorts and drops duplicates in place; returns the new count. */
static size_t gc_cache_unique(uint8_t (*v)[GC_PACK_ID_LEN], size_t n)
{
    size_t w = 0;
    if (n > 1)
        qsort(v, n, GC_PACK_ID_LEN, gc_cache_id_cmp);
    for (size_t r = 0; r < n; r++)
        if (w == 0 || memcmp(v[w - 1], v[r], GC_PACK_ID_LEN) != 0)
            memmove(v[w++], v[r], GC_PACK_ID_LEN);
    return w;
}

void gc_cache_add(struct gc_cache *c, const char *id, const char *etag, int64_t mtime,
                  uint64_t size, const uint8_t (*packs)[GC_PACK_ID_LEN], size_t npacks)
{
    if (etag == NULL || etag[0] == '\0' || strlen(etag) > GC_CACHE_ETAG_MAX ||
        strlen(id) > REPO_ID_LEN)
        return;
    c->v = util_grow(c->v, &c->cap, c->n + 1, sizeof(*c->v));
    struct gc_cache_entry *e = &c->v[c->n++];
    memset(e, 0, sizeof(*e));
    memcpy(e->id, id, strlen(id) + 1);
    memcpy(e->etag, etag, strlen(etag) + 1);
    e->mtime = mtime;
    e->size = size;
    e->packs = util_calloc(npacks ? npacks : 1, GC_PACK_ID_LEN);
    if (npacks > 0)
        memcpy(e->packs, packs, npacks * GC_PACK_ID_LEN);
    e->npacks = gc_cache_unique(e->packs, npacks);
}

static char *gc_cache_aad(const struct repo_source *src)
{
    return util_asprintf("%s%s\n%s\n%s", GC_CACHE_AAD, src->ns, src->policy, src->host);
}

void gc_cache_encode(const struct gc_cache *c, const struct repo_keys *k,
                     const struct repo_source *src, uint8_t **out, size_t *len)
{
    struct util_buf b;
    size_t total = 0, ntab;
    util_buf_init(&b);
    util_buf_append(&b, GC_CACHE_MAGIC, strlen(GC_CACHE_MAGIC));

    /* The table: every pack any entry names, once. */
    for (size_t i = 0; i < c->n; i++)
        total += c->v[i].npacks;
    uint8_t(*tab)[GC_PACK_ID_LEN] = util_calloc(total ? total : 1, GC_PACK_ID_LEN);
    for (size_t i = 0, at = 0; i < c->n; i++) {
        memcpy(tab[at], c->v[i].packs, c->v[i].npacks * GC_PACK_ID_LEN);
        at += c->v[i].npacks;
    }
    ntab = gc_cache_unique(tab, total);
    util_varint_put(&b, ntab);
    util_buf_append(&b, tab, ntab * GC_PACK_ID_LEN);

    util_varint_put(&b, c->n);
    for (size_t i = 0; i < c->n; i++) {
        const struct gc_cache_entry *e = &c->v[i];
        size_t prev = 0;
        util_buf_append(&b, e->id, REPO_ID_LEN);
        util_varint_put(&b, strlen(e->etag));
        util_buf_append(&b, e->etag, strlen(e->etag));
        util_varint_put(&b, util_zigzag(e->mtime));
        util_varint_put(&b, e->size);
        util_varint_put(&b, e->npacks);
        /* Both sorted: each index is found after the previous one. */
        for (size_t p = 0; p < e->npacks; p++) {
            const uint8_t(*hit)[GC_PACK_ID_LEN] =
                bsearch(e->packs[p], tab + prev, ntab - prev, GC_PACK_ID_LEN, gc_cache_id_cmp);
            size_t at = (size_t)(hit - tab);
            util_varint_put(&b, p == 0 ? at : at - prev);
            prev = at;
        }
    }
    free(tab);

    char *aad = gc_cache_aad(src);
    *len = b.len + REPO_SEAL_EXTRA;
    *out = util_malloc(*len);
    repo_seal(k, aad, strlen(aad), b.data, b.len, *out);
    free(aad);
    util_buf_free(&b);
}

int gc_cache_decode(struct gc_cache *c, const struct repo_keys *k, const struct repo_source *src,
                    const uint8_t *data, size_t len, struct util_err *err)
{
    uint8_t *plain = NULL;
    char *aad = gc_cache_aad(src);
    int rc = 0;

    gc_cache_init(c);
    if (len < REPO_SEAL_EXTRA + strlen(GC_CACHE_MAGIC)) {
        rc = util_err_set(err, UTIL_EIO, "too short to be gc's cache");
        goto out;
    }
    plain = util_malloc(len - REPO_SEAL_EXTRA);
    if (repo_unseal(k, aad, strlen(aad), data, len, plain, NULL) != 0) {
        rc = util_err_set(err, UTIL_EIO,
                          "it does not open with the repository's key for this source "
                          "(made without the key, moved, or damaged)");
        goto out;
    }
    struct util_rd r = {.p = plain, .n = len - REPO_SEAL_EXTRA};
    const uint8_t *magic = util_rd_raw(&r, strlen(GC_CACHE_MAGIC));
    if (magic == NULL || memcmp(magic, GC_CACHE_MAGIC, strlen(GC_CACHE_MAGIC)) != 0)
        goto bad;
    uint64_t ntab = util_varint_get(&r);
    if (r.bad || ntab > (r.n - r.i) / GC_PACK_ID_LEN)
        goto bad;
    const uint8_t(*tab)[GC_PACK_ID_LEN] = (const void *)util_rd_raw(&r, ntab * GC_PACK_ID_LEN);
    uint64_t n = util_varint_get(&r);
    /* An entry takes at least its id and five bytes: a count no bytes can hold is refused
     * before anything is allocated for it. */
    if (r.bad || n > (r.n - r.i) / (REPO_ID_LEN + 5))
        goto bad;
    for (uint64_t i = 0; i < n; i++) {
        char id[REPO_ID_LEN + 1], etag[GC_CACHE_ETAG_MAX + 1];
        const uint8_t *raw = util_rd_raw(&r, REPO_ID_LEN);
        uint64_t elen = util_varint_get(&r);
        if (r.bad || elen == 0 || elen > GC_CACHE_ETAG_MAX)
            goto bad;
        const uint8_t *eraw = util_rd_raw(&r, elen);
        int64_t mtime = util_unzigzag(util_varint_get(&r));
        uint64_t size = util_varint_get(&r), np = util_varint_get(&r);
        if (r.bad || np > r.n - r.i || np > ntab)
            goto bad;
        memcpy(id, raw, REPO_ID_LEN);
        id[REPO_ID_LEN] = '\0';
        memcpy(etag, eraw, elen);
        etag[elen] = '\0';
        if (repo_id_parse(id, NULL, NULL) != 0 || memchr(etag, '\0', elen) != NULL)
            goto bad;
        uint8_t(*packs)[GC_PACK_ID_LEN] = util_calloc(np ? np : 1, GC_PACK_ID_LEN);
        uint64_t at = 0;
        for (uint64_t p = 0; p < np && !r.bad; p++) {
            uint64_t d = util_varint_get(&r);
            /* Strictly ascending indexes inside the table (d < ntab: no overflow). */
            if (r.bad || (p > 0 && d == 0) || d >= ntab || (p > 0 ? at + d : d) >= ntab) {
                r.bad = true;
                break;
            }
            at = p > 0 ? at + d : d;
            memcpy(packs[p], tab[at], GC_PACK_ID_LEN);
        }
        if (r.bad) {
            free(packs);
            goto bad;
        }
        gc_cache_add(c, id, etag, mtime, size, (const uint8_t(*)[GC_PACK_ID_LEN])packs, (size_t)np);
        free(packs);
    }
    if (r.i != r.n)
        goto bad;
    goto out;
bad:
    gc_cache_free(c);
    rc = util_err_set(err, UTIL_EIO, "gc's cache is malformed");
out:
    free(plain);
    free(aad);
    return rc;
}
