/*
 * The pure parts of agent/browse.h: what differs between two records of one path
 * (browse_what, each bit alone and together, and its names), the path rule lode ls
 * and lode dump share with lode restore (browse_path_norm), and the skip list of
 * lode find (browse_skipped: only its sorted part counts), and the cache of opened
 * chunks (browse_cache: found by hash, within its budget, the least recently used
 * dropped first).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent.h"

static uint8_t chunks_a[2][REPO_HASH_LEN], chunks_b[2][REPO_HASH_LEN];
static uint8_t xv1[] = {1, 0, 2}, xv2[] = {1, 0, 3};

static struct repo_file rec(uint8_t (*chunks)[REPO_HASH_LEN], struct repo_xattr *x)
{
    struct repo_file f;
    memset(&f, 0, sizeof(f));
    f.path = (char *)"/data/a b";
    f.type = REPO_FT_FILE;
    f.mode = 0644;
    f.uid = 1;
    f.gid = 2;
    f.size = 10;
    f.mtime_sec = 1700000000;
    f.mtime_nsec = 5;
    f.ctime_sec = 1700000001;
    f.ino = 42;
    f.target = (char *)"";
    f.link = NULL;
    f.chunks = chunks;
    f.nchunks = 2;
    f.xattrs = x;
    f.nxattrs = 1;
    return f;
}

static void test_what_each_bit(void **state)
{
    struct repo_xattr xa = {(char *)"user.a", xv1, sizeof(xv1)};
    struct repo_xattr xb = {(char *)"user.a", xv1, sizeof(xv1)};
    memset(chunks_a, 1, sizeof(chunks_a));
    memset(chunks_b, 1, sizeof(chunks_b));
    struct repo_file a = rec(chunks_a, &xa), b = rec(chunks_b, &xb);

    /* Equal records in separate memory: nothing differs ("" and NULL links alike). */
    b.link = (char *)"";
    assert_int_equal(browse_what(&a, &b), 0);
    b = rec(chunks_b, &xb);

    b.type = REPO_FT_DIR;
    assert_int_equal(browse_what(&a, &b), BROWSE_TYPE);
    b = rec(chunks_b, &xb);
    chunks_b[1][31] = 9; /* same size, another chunk */
    assert_int_equal(browse_what(&a, &b), BROWSE_CONTENT);
    memset(chunks_b, 1, sizeof(chunks_b));
    b.size = 11;
    assert_int_equal(browse_what(&a, &b), BROWSE_CONTENT);
    b = rec(chunks_b, &xb);
    b.nchunks = 1;
    assert_int_equal(browse_what(&a, &b), BROWSE_CONTENT);
    b = rec(chunks_b, &xb);
    b.mode = 0600;
    assert_int_equal(browse_what(&a, &b), BROWSE_MODE);
    b = rec(chunks_b, &xb);
    b.gid = 3;
    assert_int_equal(browse_what(&a, &b), BROWSE_OWNER);
    b = rec(chunks_b, &xb);
    b.mtime_nsec = 6;
    assert_int_equal(browse_what(&a, &b), BROWSE_MTIME);
    b = rec(chunks_b, &xb);
    b.target = (char *)"elsewhere";
    assert_int_equal(browse_what(&a, &b), BROWSE_TARGET);
    b = rec(chunks_b, &xb);
    b.link = (char *)"/data/first";
    assert_int_equal(browse_what(&a, &b), BROWSE_LINK);
    b = rec(chunks_b, &xb);
    xb.value = xv2;
    assert_int_equal(browse_what(&a, &b), BROWSE_XATTRS);
    xb.value = xv1;
    xb.name = (char *)"user.b";
    assert_int_equal(browse_what(&a, &b), BROWSE_XATTRS);
    xb.name = (char *)"user.a";
    b.nxattrs = 0;
    assert_int_equal(browse_what(&a, &b), BROWSE_XATTRS);
    b = rec(chunks_b, &xb);
    b.ino = 43;
    assert_int_equal(browse_what(&a, &b), BROWSE_INODE);
    b = rec(chunks_b, &xb);
    b.ctime_nsec = 1;
    assert_int_equal(browse_what(&a, &b), BROWSE_INODE);
    /* Several at once. */
    b.mode = 0600;
    b.size = 1;
    assert_int_equal(browse_what(&a, &b), BROWSE_INODE | BROWSE_MODE | BROWSE_CONTENT);
}

static void test_what_names(void **state)
{
    static const char *const want[BROWSE_WHAT_N] = {"type",   "content", "mode",   "owner", "mtime",
                                                    "target", "link",    "xattrs", "inode"};
    for (unsigned i = 0; i < BROWSE_WHAT_N; i++)
        assert_string_equal(browse_what_name(1u << i), want[i]);
    assert_string_equal(browse_what_name(1u << BROWSE_WHAT_N), "?");
    assert_string_equal(browse_what_name(3), "?"); /* one bit at a time */
}

static void test_path_norm(void **state)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"/", "/"},
        {"/data/", "/data"},
        {"/data//", "/data"},
        {"/a b/-x", "/a b/-x"},
        {"/été/日本", "/été/日本"},
        {"/new\nline", "/new\nline"},
        {"data", NULL},
        {"", NULL},
        {"/a/../b", NULL},
        {"/a/./b", NULL},
        {"/a//b", NULL},
        {"/..", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *p = browse_path_norm(cases[i].in);
        if (cases[i].out == NULL) {
            if (p != NULL)
                fail_msg("%s: accepted as %s", cases[i].in, p);
        } else {
            assert_non_null(p);
            assert_string_equal(p, cases[i].out);
        }
        free(p);
    }
}

static void test_skipped(void **state)
{
    struct browse_skip s = {0};
    uint8_t h[REPO_HASH_LEN] = {0};
    assert_false(browse_skipped(NULL, h));
    assert_false(browse_skipped(&s, h));
    for (int i = 9; i >= 0; i--) {
        s.v = util_grow(s.v, &s.cap, s.n + 1, REPO_HASH_LEN);
        memset(s.v[s.n++], i * 2, REPO_HASH_LEN);
    }
    /* Not sorted yet: nothing counts. */
    memset(h, 0, sizeof(h));
    assert_false(browse_skipped(&s, h));
    for (size_t i = 0; i < s.n; i++)
        memset(s.v[i], (int)i * 2, REPO_HASH_LEN);
    s.nsorted = s.n;
    for (int i = 0; i < 20; i++) {
        memset(h, i, sizeof(h));
        if (browse_skipped(&s, h) != (i % 2 == 0))
            fail_msg("hash of %d bytes: skipped is wrong", i);
    }
    browse_skip_free(&s);
    assert_null(s.v);
    assert_int_equal(s.n, 0);
}

static void cache_hash(uint8_t *h, uint32_t i)
{
    memset(h, 0, REPO_HASH_LEN);
    /* The index's home is the first 8 bytes: make half of them collide. */
    h[0] = (uint8_t)(i & 7);
    memcpy(h + 8, &i, sizeof(i));
}

static void test_cache(void **state)
{
    struct browse_cache c;
    uint8_t h[REPO_HASH_LEN], body[100];
    browse_cache_init(&c, 1000);
    assert_null(browse_cache_get(&c, (uint8_t[REPO_HASH_LEN]){0}));
    /* 20 chunks of 100 bytes through a budget of 1,000: never more than the budget. */
    for (uint32_t i = 0; i < 20; i++) {
        cache_hash(h, i);
        memset(body, (int)i, sizeof(body));
        browse_cache_put(&c, h, body, sizeof(body));
        assert_true(c.bytes <= 1000);
        /* Chunk 0 is used after every put: the most recently used is never dropped. */
        cache_hash(h, 0);
        const struct browse_chunk *k = browse_cache_get(&c, h);
        assert_non_null(k);
        assert_int_equal(k->plain[0], 0);
    }
    /* The newest is held, with its bytes; an old one is gone. */
    cache_hash(h, 19);
    const struct browse_chunk *k = browse_cache_get(&c, h);
    assert_non_null(k);
    assert_int_equal(k->len, 100);
    assert_int_equal(k->plain[99], 19);
    cache_hash(h, 1);
    assert_null(browse_cache_get(&c, h));
    /* A chunk put again is not held twice. */
    size_t n = c.n, bytes = c.bytes;
    cache_hash(h, 19);
    browse_cache_put(&c, h, body, sizeof(body));
    assert_int_equal(c.n, n);
    assert_int_equal(c.bytes, bytes);
    browse_cache_free(&c);

    /* Many chunks through a larger budget: every chunk held is found by its hash with
     * its own bytes, and the bytes counted are the bytes held. */
    browse_cache_init(&c, 64 << 10);
    for (uint32_t i = 0; i < 20000; i++) {
        cache_hash(h, i);
        memset(body, (int)(i % 251), sizeof(body));
        browse_cache_put(&c, h, body, 1 + i % 100);
    }
    size_t held = 0, found = 0;
    for (size_t j = 0; j < c.n; j++)
        held += c.v[j].len;
    assert_int_equal(held, c.bytes);
    assert_true(c.bytes <= 64 << 10 && c.bytes > 16 << 10);
    for (uint32_t i = 0; i < 20000; i++) {
        cache_hash(h, i);
        const struct browse_chunk *g = browse_cache_get(&c, h);
        if (g == NULL)
            continue;
        found++;
        assert_int_equal(g->len, 1 + i % 100);
        assert_int_equal(g->plain[0], i % 251);
    }
    assert_int_equal(found, c.n);
    /* The last put is among them. */
    cache_hash(h, 19999);
    assert_non_null(browse_cache_get(&c, h));
    browse_cache_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_what_each_bit), cmocka_unit_test(test_what_names),
        cmocka_unit_test(test_path_norm),     cmocka_unit_test(test_skipped),
        cmocka_unit_test(test_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
