/*
 * meta: fetching metadata chunks through a window of their pack (meta.h), loading
 * a snapshot's trees, and checking its marks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"

void meta_src_init(struct meta_src *m, struct storage *st, const struct repo_source *src)
{
    memset(m, 0, sizeof(*m));
    m->st = st;
    m->src = *src;
}

void meta_src_free(struct meta_src *m)
{
    for (size_t i = 0; i < m->nwin; i++)
        util_buf_free(&m->win[i].data);
    m->nwin = 0;
    for (size_t i = 0; i < m->nlisted; i++)
        free(m->listed[i].name);
    free(m->listed);
    m->listed = NULL;
    m->nlisted = 0;
    m->cache = NULL;
}

char *meta_pack_key(const struct repo_source *src, const char *run, uint32_t seq)
{
    struct repo_key k = {.kind = REPO_KEY_META, .src = *src, .seq = seq};
    snprintf(k.id, sizeof(k.id), "%s", run);
    return repo_key_build(&k);
}

struct meta_sink {
    struct meta_src *m;
    struct util_buf *buf;
    size_t cap;
};

/* Drops the least recently used windows until they and need bytes fit in META_CACHE. */
static void meta_window_room(struct meta_src *m, uint64_t need)
{
    for (;;) {
        uint64_t total = need;
        size_t lru = 0;
        for (size_t i = 0; i < m->nwin; i++) {
            total += m->win[i].data.len;
            if (m->win[i].used < m->win[lru].used)
                lru = i;
        }
        if (m->nwin == 0 || total <= META_CACHE)
            return;
        util_buf_free(&m->win[lru].data);
        memmove(&m->win[lru], &m->win[lru + 1], (m->nwin - lru - 1) * sizeof(m->win[0]));
        m->nwin--;
    }
}

/*
 * The windows held make room for a window arriving as its bytes arrive, least
 * recently used first: trimmed only after the GET, the old 16 MiB stayed beside the
 * new 16 MiB (a re-run of a million files peaked with both). The same windows go as
 * meta_window_trim would drop afterwards, so no GET is added.
 */
static int meta_sink_cb(const char *data, size_t len, void *arg)
{
    struct meta_sink *s = arg;
    struct meta_src *m = s->m;
    if (len > s->cap - s->buf->len)
        return 1; /* more than the range asked for */
    meta_window_room(m, s->buf->len + len);
    util_buf_append(s->buf, data, len);
    return 0;
}

/* The window of ref's pack that holds it, or NULL. */
static struct meta_window *meta_window_find(struct meta_src *m, const struct repo_mref *ref)
{
    for (size_t i = 0; i < m->nwin; i++) {
        struct meta_window *w = &m->win[i];
        if (w->seq == ref->seq && strcmp(w->run, ref->run) == 0 && ref->offset >= w->off &&
            ref->offset - w->off <= w->data.len &&
            ref->stored <= w->data.len - (ref->offset - w->off))
            return w;
    }
    return NULL;
}

/* Drops the window of pack run.seq, if any. */
static void meta_window_drop(struct meta_src *m, const char *run, uint32_t seq)
{
    for (size_t i = 0; i < m->nwin; i++) {
        if (m->win[i].seq == seq && strcmp(m->win[i].run, run) == 0) {
            util_buf_free(&m->win[i].data);
            m->win[i] = m->win[--m->nwin];
            return;
        }
    }
}

/* Drops the least recently used windows but the newest (last) until the others and it
 * fit in META_CACHE (and their number in META_WINDOWS). */
static void meta_window_trim(struct meta_src *m)
{
    for (;;) {
        size_t total = 0, lru = SIZE_MAX;
        for (size_t i = 0; i < m->nwin; i++) {
            total += m->win[i].data.len;
            if (i + 1 < m->nwin && (lru == SIZE_MAX || m->win[i].used < m->win[lru].used))
                lru = i;
        }
        if (lru == SIZE_MAX || (total <= META_CACHE && m->nwin <= META_WINDOWS))
            return;
        /* Shifted, not swapped with the last: the newest must stay last (the caller
         * copies from win[nwin - 1], and the next round must not take it for old). */
        util_buf_free(&m->win[lru].data);
        memmove(&m->win[lru], &m->win[lru + 1], (m->nwin - lru - 1) * sizeof(m->win[0]));
        m->nwin--;
    }
}

/*
 * Drops the least recently used window, whichever it is. meta_window_trim keeps the
 * newest and stops at META_WINDOWS, so with every slot taken it frees none: a ninth pack
 * read then wrote past the array (garbage collection reading many snapshots' small
 * metadata packs one after another found it).
 */
static void meta_window_evict(struct meta_src *m)
{
    size_t lru = 0;
    for (size_t i = 1; i < m->nwin; i++)
        if (m->win[i].used < m->win[lru].used)
            lru = i;
    util_buf_free(&m->win[lru].data);
    m->win[lru] = m->win[--m->nwin];
}

static int meta_listed_cmp(const void *pa, const void *pb)
{
    const struct meta_listed *a = pa, *b = pb;
    return strcmp(a->name, b->name);
}

struct meta_list_ctx {
    struct meta_src *m;
    size_t plen, cap;
};

static int meta_list_cb(const struct s3_object *o, void *arg)
{
    struct meta_list_ctx *x = arg;
    struct meta_src *m = x->m;
    if (o->is_prefix || strlen(o->key) <= x->plen || strchr(o->key + x->plen, '/') != NULL)
        return 0;
    m->listed = util_grow(m->listed, &x->cap, m->nlisted + 1, sizeof(*m->listed));
    m->listed[m->nlisted].name = util_strdup(o->key + x->plen);
    m->listed[m->nlisted++].size = o->size;
    return 0;
}

void meta_src_cache(struct meta_src *m, struct mcache *cache)
{
    struct repo_key k = {.kind = REPO_KEY_META, .src = m->src};
    struct meta_list_ctx x = {.m = m};
    struct util_err e = {0};
    char *key = repo_key_build(&k), *slash = strrchr(key, '/');
    slash[1] = '\0'; /* meta/<source>/ */
    x.plen = strlen(key);
    int rc = s3_sync_list(m->st->s3, key, NULL, meta_list_cb, &x, NULL, &e);
    if (rc != 0) {
        struct util_err err = {0};
        util_err_set(&err, rc, "cannot list %s: %s", key, e.msg);
        mcache_warn(cache, "the listing of the metadata packs", &err);
        for (size_t i = 0; i < m->nlisted; i++)
            free(m->listed[i].name);
        free(m->listed);
        m->listed = NULL;
        m->nlisted = 0;
    } else {
        if (m->nlisted > 1)
            qsort(m->listed, m->nlisted, sizeof(*m->listed), meta_listed_cmp);
        m->cache = cache;
    }
    free(key);
}

struct meta_cache_sink {
    struct mcache_writer *w;
    uint64_t got, cap;
};

static int meta_cache_sink_cb(const char *data, size_t len, void *arg)
{
    struct meta_cache_sink *s = arg;
    if (len > s->cap - s->got)
        return 1; /* more than the listing said */
    s->got += len;
    return mcache_write(s->w, data, len) != 0;
}

/*
 * A window from the cache: 0 with *data; MCACHE_MISS when the pack is not listed (the
 * bucket then says what it says) or the cache failed (dropped, said once); < 0 when the
 * pack's GET into the cache failed (named in err).
 */
static int meta_cache_window(struct meta_src *m, const struct repo_mref *ref, uint64_t start,
                             size_t want, struct util_buf *data, struct util_err *err)
{
    char name[REPO_ID_LEN + 32];
    struct util_err e = {0};
    struct meta_listed *l, probe = {.name = name};
    int rc;

    snprintf(name, sizeof(name), "%s.%" PRIu32 ".meta", ref->run, ref->seq);
    l = m->nlisted ? bsearch(&probe, m->listed, m->nlisted, sizeof(*l), meta_listed_cmp) : NULL;
    util_buf_init(data);
    if (l == NULL)
        return MCACHE_MISS;
    meta_window_room(m, start < l->size ? (l->size - start < want ? l->size - start : want) : 0);
    rc = mcache_read(m->cache, name, l->size, start, want, data, &e);
    if (rc == MCACHE_MISS) {
        /* Fetched whole into the cache, once: then read from it. */
        struct mcache_writer w;
        char *key = meta_pack_key(&m->src, ref->run, ref->seq);
        if ((rc = mcache_begin(m->cache, name, &w, &e)) == 0) {
            struct meta_cache_sink s = {.w = &w, .cap = l->size};
            m->gets++;
            rc = s3_sync_get_to(m->st->s3, key, NULL, meta_cache_sink_cb, &s, NULL, &e);
            if (w.failed != 0) {
                int failed = w.failed;
                mcache_abort(&w);
                util_err_set(&e, -failed, "cannot write into it: %s", strerror(failed));
                rc = 1; /* the cache's failure, not the bucket's */
            } else if (rc != 0) {
                mcache_abort(&w);
                rc = rc == S3_ENOTFOUND ? util_err_set(err, rc, "%s is missing", key)
                                        : util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
                free(key);
                return rc;
            } else if (s.got != l->size) {
                mcache_abort(&w);
                rc = util_err_set(err, UTIL_EIO,
                                  "%s: %" PRIu64 " bytes where its listing says %" PRIu64, key,
                                  s.got, l->size);
                free(key);
                return rc;
            } else {
                rc = mcache_commit(&w, &e);
            }
        }
        free(key);
        if (rc == 0)
            rc = mcache_read(m->cache, name, l->size, start, want, data, &e);
        if (rc == MCACHE_MISS)
            util_err_set(&e, UTIL_EIO, "a copy just written does not read back");
    }
    if (rc != 0) {
        mcache_warn(m->cache, name, &e);
        m->cache = NULL;
        util_buf_free(data);
        return MCACHE_MISS;
    }
    return 0;
}

/* A window from the bucket: a ranged GET of the pack. */
static int meta_get_window(struct meta_src *m, const struct repo_mref *ref, uint64_t start,
                           size_t want, struct util_buf *data, struct util_err *err)
{
    struct util_err e = {0};
    struct meta_sink s = {.m = m, .buf = data, .cap = want};
    struct s3_opts o = {.range_start = start, .range_len = want};
    char *key = meta_pack_key(&m->src, ref->run, ref->seq);
    int rc;
    util_buf_init(data);
    m->gets++;
    rc = s3_sync_get_to(m->st->s3, key, &o, meta_sink_cb, &s, NULL, &e);
    if (rc == S3_ENOTFOUND)
        util_err_set(err, rc, "%s is missing", key);
    else if (rc != 0)
        util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
    free(key);
    if (rc != 0)
        util_buf_free(data);
    return rc;
}

int meta_fetch_cb(void *arg, const struct repo_mref *ref, uint8_t *sealed, struct util_err *err)
{
    struct meta_src *m = arg;
    struct meta_window *w = meta_window_find(m, ref);
    int rc;

    if (w == NULL) {
        /* A pack that fits in the cache is read whole, from its start (a parent of up
         * to about 170,000 files: one GET for both its trees); past that, a window
         * from this chunk on, where the next chunks of the tree follow. */
        uint64_t start = (uint64_t)ref->offset + ref->stored <= META_CACHE ? 0 : ref->offset;
        size_t want = start == 0                  ? META_CACHE
                      : ref->stored > META_WINDOW ? ref->stored
                                                  : META_WINDOW;
        struct util_buf data;
        meta_window_drop(m, ref->run, ref->seq);
        if (m->nwin == META_WINDOWS)
            meta_window_evict(m); /* makes room for the new one */
        /* Fetched beside the array: the sink may drop (and shift) windows meanwhile. */
        rc = m->cache != NULL ? meta_cache_window(m, ref, start, want, &data, err) : MCACHE_MISS;
        if (rc == MCACHE_MISS)
            rc = meta_get_window(m, ref, start, want, &data, err);
        if (rc != 0)
            return rc;
        if (data.len < ref->offset - start + ref->stored) {
            char *key = meta_pack_key(&m->src, ref->run, ref->seq);
            rc = util_err_set(err, UTIL_EIO, "%s is shorter than its index says (damaged)", key);
            free(key);
            util_buf_free(&data);
            return rc;
        }
        w = &m->win[m->nwin];
        memset(w, 0, sizeof(*w));
        w->data = data;
        m->bytes += w->data.len;
        snprintf(w->run, sizeof(w->run), "%s", ref->run);
        w->seq = ref->seq;
        w->off = start;
        m->nwin++;
        meta_window_trim(m);
        w = &m->win[m->nwin - 1];
    }
    w->used = ++m->clock;
    memcpy(sealed, (const uint8_t *)w->data.data + (ref->offset - w->off), ref->stored);
    return 0;
}

int meta_load_chunkset(struct meta_src *m, const struct repo_keys *k, const struct repo_root *root,
                       struct repo_chunkset *s, struct util_err *err)
{
    struct repo_tree_reader r;
    repo_tree_reader_init(&r, k, REPO_TREE_CHUNKS, root, meta_fetch_cb, m);
    int rc = repo_chunkset_read(s, &r, err);
    repo_tree_reader_free(&r);
    return rc;
}

int meta_load_files(struct meta_src *m, const struct repo_keys *k, const struct repo_root *root,
                    uint8_t **data, size_t *len, struct util_err *err)
{
    struct repo_tree_reader r;
    struct util_buf b;
    util_buf_init(&b);
    repo_tree_reader_init(&r, k, REPO_TREE_FILES, root, meta_fetch_cb, m);
    int rc = repo_tree_read_all(&r, &b, err);
    repo_tree_reader_free(&r);
    if (rc != 0) {
        util_buf_free(&b);
        return rc;
    }
    *len = b.len;
    *data = (uint8_t *)util_buf_steal(&b);
    return 0;
}

/* One listed mark: GET it and check its tag. */
static int meta_check_mark(struct storage *st, const struct repo_keys *k,
                           const struct repo_manifest *m, enum repo_kind kind, struct util_err *err)
{
    struct repo_key rk = {.kind = kind, .src = m->src};
    struct util_err e = {0};
    char *key, *data = NULL;
    size_t len = 0;
    int rc;
    snprintf(rk.id, sizeof(rk.id), "%s", m->id);
    key = repo_key_build(&rk);
    rc = s3_sync_get(st->s3, key, NULL, &data, &len, NULL, &e);
    if (rc != 0)
        util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
    else if ((rc = repo_mark_check(k, &m->src, m->id, kind, data, len, &e)) != 0)
        util_err_set(err, rc, "%s: %s", key, e.msg);
    free(data);
    free(key);
    return rc;
}

int meta_check_marks(struct storage *st, const struct repo_keys *k, const struct repo_manifest *m,
                     bool incomplete, bool suspicious, char *note, size_t notesize,
                     struct util_err *err)
{
    int rc;
    note[0] = '\0';
    if (m->incomplete && !incomplete)
        return util_err_set(err, UTIL_EIO,
                            "snapshot %s: its manifest records an .incomplete mark that is not "
                            "in the bucket (deleted)",
                            m->id);
    if (incomplete && (rc = meta_check_mark(st, k, m, REPO_KEY_INCOMPLETE, err)) != 0)
        return rc;
    if (suspicious && (rc = meta_check_mark(st, k, m, REPO_KEY_SUSPICIOUS, err)) != 0)
        return rc;
    if (m->suspicious && !suspicious)
        snprintf(note, notesize,
                 "snapshot %s: the anomaly detector marked it suspicious when it was written; "
                 "the mark has since been removed (lode mark --clear, or deleted in the bucket)",
                 m->id);
    return 0;
}
