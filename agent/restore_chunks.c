/*
 * The restore's chunk set (restore_chunks.h): 24 bytes a chunk, keyed by the first 8
 * bytes of its hash, the chunks whose keys agree kept whole.
 */
#include <stdlib.h>
#include <string.h>

#include "restore_chunks.h"

#define RX_MALFORMED "a chunk set record is malformed"

static uint64_t rx_key(const uint8_t hash[REPO_HASH_LEN])
{
    uint64_t k = 0;
    for (size_t i = 0; i < 8; i++)
        k = k << 8 | hash[i];
    return k;
}

/* The first entry whose key is at least key (n when none). */
static size_t rx_lower(const struct rx_chunks *s, uint64_t key)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void rx_swap(struct rx_chunk *a, struct rx_chunk *b)
{
    struct rx_chunk t = *a;
    *a = *b;
    *b = t;
}

/*
 * Sorts by key in place: a quicksort (the middle entry as pivot, which splits keys of
 * random hashes evenly; the smaller side first, so the stack stays O(log n)), insertion
 * sort below 16 entries. The C library's qsort may allocate a copy of the array (24 MiB
 * for a million chunks), which is the memory this module is there to save.
 */
static void rx_sort(struct rx_chunk *v, size_t n)
{
    while (n > 16) {
        uint64_t p = v[n / 2].key;
        size_t i = 0, j = n - 1;
        for (;;) {
            while (v[i].key < p)
                i++;
            while (v[j].key > p)
                j--;
            if (i >= j)
                break;
            rx_swap(&v[i++], &v[j--]);
        }
        /* [0, j] <= p <= [j + 1, n), both sides non-empty. */
        if (j + 1 < n - (j + 1)) {
            rx_sort(v, j + 1);
            v += j + 1;
            n -= j + 1;
        } else {
            rx_sort(v + j + 1, n - (j + 1));
            n = j + 1;
        }
    }
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && v[k - 1].key > v[k].key; k--)
            rx_swap(&v[k - 1], &v[k]);
}

static int rx_whole_cmp(const void *a, const void *b)
{
    return memcmp(((const struct repo_chunk *)a)->hash, ((const struct repo_chunk *)b)->hash,
                  REPO_HASH_LEN);
}

/* The first read: packs whole, chunks by key. */
static int rx_first_cb(void *arg, const uint8_t *pack, const struct repo_chunk *c,
                       struct util_err *err)
{
    struct rx_chunks *s = arg;
    if (pack != NULL) {
        /* A pack's record starts a run of its chunks; a pack may have several runs,
         * made one after the walk (repo_packs_unique). */
        s->packs = util_grow(s->packs, &s->cappacks, s->npacks + 1, REPO_HASH_LEN);
        memcpy(s->packs[s->npacks++], pack, REPO_HASH_LEN);
        return 0;
    }
    if (s->npacks == 0)
        return util_err_set(err, UTIL_EIO, RX_MALFORMED);
    s->v = util_grow(s->v, &s->cap, s->n + 1, sizeof(*s->v));
    s->v[s->n++] = (struct rx_chunk){.key = rx_key(c->hash),
                                     .pack = (uint32_t)(s->npacks - 1),
                                     .offset = c->offset,
                                     .stored = c->stored,
                                     .plain = c->plain,
                                     .flags = c->flags};
    return 0;
}

/* The second read: the chunks whose key is shared, whole. */
struct rx_second {
    struct rx_chunks *s;
    const uint32_t *remap; /* a pack record's index in the walk: its pack's */
    size_t records;        /* pack records of the first walk */
    uint32_t pack;         /* pack records seen */
};

static int rx_second_cb(void *arg, const uint8_t *pack, const struct repo_chunk *c,
                        struct util_err *err)
{
    struct rx_second *r = arg;
    struct rx_chunks *s = r->s;
    if (pack != NULL) {
        if (r->pack == r->records) /* not the tree read first */
            return util_err_set(err, UTIL_EIO, RX_MALFORMED);
        r->pack++;
        return 0;
    }
    size_t i = rx_lower(s, rx_key(c->hash));
    if (i == s->n || s->v[i].key != rx_key(c->hash) || r->pack == 0)
        return util_err_set(err, UTIL_EIO, RX_MALFORMED); /* not the tree read first */
    if (!s->v[i].shared)
        return 0;
    s->whole = util_grow(s->whole, &s->capwhole, s->nwhole + 1, sizeof(*s->whole));
    s->whole[s->nwhole] = *c;
    s->whole[s->nwhole++].pack = r->remap[r->pack - 1];
    return 0;
}

/* Every leaf of the tree through cb. */
static int rx_walk(const struct repo_keys *k, const struct repo_root *root, repo_mfetch_cb fetch,
                   void *arg, repo_cs_rec_cb cb, void *cb_arg, struct util_err *err)
{
    struct repo_tree_reader r;
    const uint8_t *recs;
    size_t len;
    int rc;

    repo_tree_reader_init(&r, k, REPO_TREE_CHUNKS, root, fetch, arg);
    while ((rc = repo_tree_reader_next(&r, &recs, &len, err)) == 1)
        if ((rc = repo_chunkset_leaf_each(recs, len, cb, cb_arg, err)) != 0)
            break;
    repo_tree_reader_free(&r);
    return rc < 0 ? rc : 0;
}

int rx_chunks_read(struct rx_chunks *s, const struct repo_keys *k, const struct repo_root *root,
                   repo_mfetch_cb fetch, void *arg, struct util_err *err)
{
    size_t shared = 0, records;
    uint32_t *remap = NULL;
    int rc;

    memset(s, 0, sizeof(*s));
    if ((rc = rx_walk(k, root, fetch, arg, rx_first_cb, s, err)) != 0)
        goto fail;
    records = s->npacks;
    remap = repo_packs_unique(s->packs, &s->npacks);
    for (size_t i = 0; i < s->n; i++)
        s->v[i].pack = remap[s->v[i].pack];
    rx_sort(s->v, s->n);
    for (size_t i = 1; i < s->n; i++)
        if (s->v[i - 1].key == s->v[i].key) {
            shared += !s->v[i - 1].shared + 1;
            s->v[i - 1].shared = s->v[i].shared = 1;
        }
    if (shared == 0)
        goto done;
    /* Keys that agree: those chunks are read again, whole (restore_chunks.h). */
    struct rx_second r2 = {.s = s, .remap = remap, .records = records};
    if ((rc = rx_walk(k, root, fetch, arg, rx_second_cb, &r2, err)) != 0)
        goto fail;
    if (r2.pack != records) /* not the tree read first */
        goto malformed;
    qsort(s->whole, s->nwhole, sizeof(*s->whole), rx_whole_cmp);
    if (s->nwhole != shared)
        goto malformed;
    for (size_t i = 1; i < s->nwhole; i++)
        if (rx_whole_cmp(&s->whole[i - 1], &s->whole[i]) == 0) /* a hash twice */
            goto malformed;
done:
    free(remap);
    return 0;
malformed:
    rc = util_err_set(err, UTIL_EIO, RX_MALFORMED);
fail:
    free(remap);
    rx_chunks_free(s);
    return rc;
}

bool rx_chunks_find(const struct rx_chunks *s, const uint8_t hash[REPO_HASH_LEN],
                    struct repo_chunk *c)
{
    uint64_t key = rx_key(hash);
    size_t i = rx_lower(s, key);
    if (i == s->n || s->v[i].key != key)
        return false;
    if (s->v[i].shared) {
        struct repo_chunk want;
        memcpy(want.hash, hash, REPO_HASH_LEN);
        const struct repo_chunk *w =
            s->nwhole ? bsearch(&want, s->whole, s->nwhole, sizeof(*s->whole), rx_whole_cmp) : NULL;
        if (w == NULL)
            return false;
        *c = *w;
        return true;
    }
    const struct rx_chunk *e = &s->v[i];
    memset(c, 0, sizeof(*c));
    memcpy(c->hash, hash, REPO_HASH_LEN);
    c->pack = e->pack;
    c->offset = e->offset;
    c->stored = e->stored;
    c->plain = e->plain;
    c->flags = e->flags;
    return true;
}

void rx_chunks_free(struct rx_chunks *s)
{
    free(s->packs);
    free(s->v);
    free(s->whole);
    memset(s, 0, sizeof(*s));
}
