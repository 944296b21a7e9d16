/*
 * gc's cache (agent/gc_cache.h, docs/gc.md "The cache"): an entry is found only for
 * the manifest as it was read (id, ETag, size and time all equal), the sealed object
 * reads back to the same entries, and an object made without the key, moved to another
 * source, cut short, or whose counts or indexes lie, is refused whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/gc_cache.h"
#include "repo/mstore.h"
#include "util/varint.h"

#define ID1 "20261202T170127Z-9f3c2a1b7d4e6058"
#define ID2 "20261203T170127Z-0011223344556677"

static void pack_of(uint8_t n, uint8_t id[GC_PACK_ID_LEN])
{
    memset(id, 0, GC_PACK_ID_LEN);
    id[0] = n;
    id[GC_PACK_ID_LEN - 1] = (uint8_t)(n * 7);
}

/* Two entries sharing pack 2: ID1 names 3, 1, 2, 1 (out of order, one twice). */
static void fill(struct gc_cache *c)
{
    uint8_t a[4][GC_PACK_ID_LEN], b[2][GC_PACK_ID_LEN];
    pack_of(3, a[0]);
    pack_of(1, a[1]);
    pack_of(2, a[2]);
    pack_of(1, a[3]);
    pack_of(2, b[0]);
    pack_of(9, b[1]);
    gc_cache_init(c);
    gc_cache_add(c, ID1, "etag-1", 1800000000, 512, (const uint8_t(*)[GC_PACK_ID_LEN])a, 4);
    gc_cache_add(c, ID2, "etag-2", -5, 0, (const uint8_t(*)[GC_PACK_ID_LEN])b, 2);
}

static void test_find_needs_every_field(void **state)
{
    struct gc_cache c;
    fill(&c);
    const struct gc_cache_entry *e = gc_cache_find(&c, ID1, "etag-1", 1800000000, 512);
    assert_non_null(e);
    /* sorted and unique: 1, 2, 3 */
    assert_int_equal(e->npacks, 3);
    uint8_t want[GC_PACK_ID_LEN];
    pack_of(1, want);
    assert_memory_equal(e->packs[0], want, GC_PACK_ID_LEN);
    pack_of(3, want);
    assert_memory_equal(e->packs[2], want, GC_PACK_ID_LEN);
    /* another ETag, time, size or id: the manifest changed, or is another one */
    assert_null(gc_cache_find(&c, ID1, "etag-2", 1800000000, 512));
    assert_null(gc_cache_find(&c, ID1, "etag-1", 1800000001, 512));
    assert_null(gc_cache_find(&c, ID1, "etag-1", 1800000000, 513));
    assert_null(gc_cache_find(&c, ID2, "etag-1", 1800000000, 512));
    /* a storage that sends no ETag is never answered from the cache, nor kept in it */
    assert_null(gc_cache_find(&c, ID1, "", 1800000000, 512));
    gc_cache_add(&c, ID1, "", 1, 1, NULL, 0);
    char longtag[GC_CACHE_ETAG_MAX + 2];
    memset(longtag, 'x', sizeof(longtag) - 1);
    longtag[sizeof(longtag) - 1] = '\0';
    gc_cache_add(&c, ID1, longtag, 1, 1, NULL, 0);
    assert_int_equal(c.n, 2);
    gc_cache_free(&c);
}

static void test_sealed_round_trip(void **state)
{
    struct repo_keys k = mstore_keys(1);
    struct repo_source src;
    struct gc_cache c, back;
    struct util_err err = {0};
    uint8_t *data;
    size_t len;
    assert_int_equal(repo_source_set(&src, "ns", "pol", "node-1", &err), 0);
    fill(&c);
    gc_cache_encode(&c, &k, &src, &data, &len);
    assert_int_equal(gc_cache_decode(&back, &k, &src, data, len, &err), 0);
    assert_int_equal(back.n, 2);
    for (size_t i = 0; i < c.n; i++) {
        const struct gc_cache_entry *e = &c.v[i];
        const struct gc_cache_entry *f = gc_cache_find(&back, e->id, e->etag, e->mtime, e->size);
        assert_non_null(f);
        assert_int_equal(f->npacks, e->npacks);
        assert_memory_equal(f->packs, e->packs, e->npacks * GC_PACK_ID_LEN);
    }
    gc_cache_free(&back);
    /* An empty cache too. */
    struct gc_cache none;
    uint8_t *d0;
    size_t l0;
    gc_cache_init(&none);
    gc_cache_encode(&none, &k, &src, &d0, &l0);
    assert_int_equal(gc_cache_decode(&back, &k, &src, d0, l0, &err), 0);
    assert_int_equal(back.n, 0);
    free(d0);
    gc_cache_free(&c);
    free(data);
}

static void test_refused(void **state)
{
    struct repo_keys k = mstore_keys(1), other = mstore_keys(2);
    struct repo_source src, there;
    struct gc_cache c, back;
    struct util_err err = {0};
    uint8_t *data;
    size_t len;
    assert_int_equal(repo_source_set(&src, "ns", "pol", "node-1", &err), 0);
    assert_int_equal(repo_source_set(&there, "ns", "pol", "node-2", &err), 0);
    fill(&c);
    gc_cache_encode(&c, &k, &src, &data, &len);
    /* another key, another source (moved) */
    assert_int_equal(gc_cache_decode(&back, &other, &src, data, len, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "does not open"));
    assert_int_equal(back.n, 0);
    assert_int_equal(gc_cache_decode(&back, &k, &there, data, len, &err), UTIL_EIO);
    /* every truncation and a changed byte anywhere */
    for (size_t n = 0; n < len; n++)
        assert_int_equal(gc_cache_decode(&back, &k, &src, data, n, &err), UTIL_EIO);
    data[len / 2] ^= 1;
    assert_int_equal(gc_cache_decode(&back, &k, &src, data, len, &err), UTIL_EIO);
    free(data);
    gc_cache_free(&c);
}

/* Seals plain as a cache of src would be. */
static void seal_plain(const struct repo_keys *k, const struct repo_source *src,
                       const struct util_buf *plain, uint8_t **out, size_t *len)
{
    char *aad = util_asprintf("lodestore gc cache 2\n%s\n%s\n%s", src->ns, src->policy, src->host);
    *len = plain->len + REPO_SEAL_EXTRA;
    *out = util_malloc(*len);
    repo_seal(k, aad, strlen(aad), plain->data, plain->len, *out);
    free(aad);
}

/* Sealed with the key but lying inside: refused as malformed, nothing allocated for it. */
static void test_malformed_inside(void **state)
{
    struct repo_keys k = mstore_keys(1);
    struct repo_source src;
    struct gc_cache back;
    struct util_err err = {0};
    assert_int_equal(repo_source_set(&src, "ns", "pol", "node-1", &err), 0);
    uint8_t p[GC_PACK_ID_LEN];
    pack_of(4, p);
    enum { HUGE_TABLE, HUGE_COUNT, EMPTY_ETAG, BAD_ID, INDEX_PAST, INDEX_REPEATED, TRAILING, OK };
    for (int kind = HUGE_TABLE; kind <= OK; kind++) {
        struct util_buf b;
        util_buf_init(&b);
        util_buf_append(&b, "LODEGCC1", 8);
        util_varint_put(&b, kind == HUGE_TABLE ? UINT64_MAX / 2 : 1);
        util_buf_append(&b, p, sizeof(p));
        util_varint_put(&b, kind == HUGE_COUNT ? 1u << 30 : 1);
        util_buf_append(&b, kind == BAD_ID ? "20261202T170127Z-9f3c2a1b7d4e605g" : ID1,
                        REPO_ID_LEN);
        util_varint_put(&b, kind == EMPTY_ETAG ? 0 : 1);
        util_buf_append(&b, "e", kind == EMPTY_ETAG ? 0 : 1);
        util_varint_put(&b, util_zigzag(7));
        util_varint_put(&b, 9);
        util_varint_put(&b, kind == INDEX_REPEATED ? 2 : 1);
        util_varint_put(&b, kind == INDEX_PAST ? 1 : 0);
        if (kind == INDEX_REPEATED)
            util_varint_put(&b, 0);
        if (kind == TRAILING)
            util_buf_append(&b, "x", 1);
        uint8_t *data;
        size_t len;
        seal_plain(&k, &src, &b, &data, &len);
        int rc = gc_cache_decode(&back, &k, &src, data, len, &err);
        if (kind == OK) {
            assert_int_equal(rc, 0);
            assert_non_null(gc_cache_find(&back, ID1, "e", 7, 9));
        } else {
            assert_int_equal(rc, UTIL_EIO);
            assert_non_null(strstr(err.msg, "malformed"));
            assert_int_equal(back.n, 0);
        }
        gc_cache_free(&back);
        free(data);
        util_buf_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_needs_every_field),
        cmocka_unit_test(test_sealed_round_trip),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_malformed_inside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
