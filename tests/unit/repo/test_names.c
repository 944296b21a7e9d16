/*
 * Names, ids, keys, the path order and the catalog: every key the repository
 * uses reads back to the names it was built from, and anything else is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "repo/repo.h"

#define ID1 "20261202T170127Z-9f3c2a1b7d4e6058"

static void test_id_round_trip(void **state)
{
    uint8_t rnd[8] = {0x9f, 0x3c, 0x2a, 0x1b, 0x7d, 0x4e, 0x60, 0x58};
    char id[REPO_ID_LEN + 1];
    int64_t t;
    struct util_err err = {0};

    repo_id_make(1796230887, rnd, id); /* 2026-12-02T17:01:27Z */
    assert_string_equal(id, ID1);
    assert_int_equal(repo_id_parse(id, &t, &err), 0);
    assert_int_equal(t, 1796230887);
}

static void test_id_rejects(void **state)
{
    static const char *bad[] = {
        "",
        "20261202T170127Z-9f3c2a1b7d4e605",   /* short */
        "20261202T170127Z-9f3c2a1b7d4e60588", /* long */
        "20261202T170127Z-9F3C2A1B7D4E6058",  /* upper case */
        "20261302T170127Z-9f3c2a1b7d4e6058",  /* month 13 */
        "20260230T170127Z-9f3c2a1b7d4e6058",  /* 30 February */
        "20261202T240127Z-9f3c2a1b7d4e6058",  /* hour 24 */
        "20261202 170127Z-9f3c2a1b7d4e6058",
        "2026120-T170127Z-9f3c2a1b7d4e6058",
        "20261202T170127Z_9f3c2a1b7d4e6058",
    };
    struct util_err err = {0};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(repo_id_parse(bad[i], NULL, &err), UTIL_EINVAL);
        assert_non_null(strstr(err.msg, "not a snapshot id"));
    }
}

static void test_every_key_round_trips(void **state)
{
    static const struct {
        enum repo_kind kind;
        const char *key;
    } cases[] = {
        {REPO_KEY_CONFIG, "config.json"},
        {REPO_KEY_PACK, "data/ns/pol/node-1/"
                        "00ff0000000000000000000000000000000000000000000000000000000000ab.pack"},
        {REPO_KEY_META, "meta/ns/pol/node-1/" ID1 ".0.meta"},
        {REPO_KEY_META, "meta/ns/pol/node-1/" ID1 ".17.meta"},
        {REPO_KEY_RUN, "runs/ns/pol/node-1/" ID1 ".json"},
        {REPO_KEY_MANIFEST, "snapshots/ns/pol/node-1/" ID1 ".json"},
        {REPO_KEY_INCOMPLETE, "snapshots/ns/pol/node-1/" ID1 ".incomplete"},
        {REPO_KEY_SUSPICIOUS, "snapshots/ns/pol/node-1/" ID1 ".suspicious"},
        {REPO_KEY_PINNED, "snapshots/ns/pol/node-1/" ID1 ".pinned"},
        {REPO_KEY_GCCACHE, "gc/ns/pol/node-1/packs.cache"},
    };
    struct util_err err = {0};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct repo_key k;
        assert_int_equal(repo_key_parse(cases[i].key, &k, &err), 0);
        assert_int_equal(k.kind, cases[i].kind);
        if (k.kind != REPO_KEY_CONFIG) {
            assert_string_equal(k.src.ns, "ns");
            assert_string_equal(k.src.host, "node-1");
        }
        char *back = repo_key_build(&k);
        assert_string_equal(back, cases[i].key);
        free(back);
    }
}

static void test_key_rejects(void **state)
{
    static const char *bad[] = {
        "config.jso",
        "snapshots/ns/pol/" ID1 ".json",         /* no host */
        "snapshots/ns/pol/h/x/" ID1 ".json",     /* one level too deep */
        "snapshots/ns/pol/h/" ID1 ".txt",        /* unknown suffix */
        "snapshots/ns//h/" ID1 ".json",          /* empty name */
        "snapshots/ns/../h/" ID1 ".json",        /* dot-dot */
        "meta/ns/pol/h/" ID1 ".json",            /* wrong suffix for meta */
        "meta/ns/pol/h/" ID1 ".files",           /* format 1's file list */
        "meta/ns/pol/h/" ID1 ".meta",            /* no number */
        "meta/ns/pol/h/" ID1 ".01.meta",         /* a leading zero */
        "meta/ns/pol/h/" ID1 ".1x.meta",         /* not a number */
        "meta/ns/pol/h/" ID1 ".1234567890.meta", /* too long */
        "data/ns/pol/h/abc.pack",                /* short hash */
        "runs/ns/pol/h/20261202T170127Z-zzzzzzzzzzzzzzzz.json",
        "other/ns/pol/h/" ID1 ".json",
        "gc/ns/pol/h/" ID1 ".cache", /* gc's cache has one name */
        "gc/ns/pol/h/packs.json",
        "",
    };
    struct util_err err = {0};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct repo_key k;
        assert_int_equal(repo_key_parse(bad[i], &k, &err), UTIL_EINVAL);
        assert_non_null(strstr(err.msg, "not a key"));
    }
}

static void test_prefixes(void **state)
{
    char *p = repo_key_prefix(REPO_KEY_MANIFEST, "ns", "pol", NULL);
    assert_string_equal(p, "snapshots/ns/pol/");
    free(p);
    p = repo_key_prefix(REPO_KEY_PACK, "ns", "pol", "h");
    assert_string_equal(p, "data/ns/pol/h/");
    free(p);
    p = repo_key_prefix(REPO_KEY_RUN, NULL, NULL, NULL);
    assert_string_equal(p, "runs/");
    free(p);
}

static void test_names(void **state)
{
    struct repo_source s;
    struct util_err err = {0};
    char longname[300];
    assert_int_equal(repo_source_set(&s, "default", "etc", "node-1", &err), 0);
    assert_string_equal(s.policy, "etc");
    assert_int_equal(repo_source_set(&s, "default", "a/b", "node-1", &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "policy name"));
    assert_int_equal(repo_source_set(&s, "", "p", "h", &err), UTIL_EINVAL);
    assert_int_equal(repo_source_set(&s, "n", "p", "..", &err), UTIL_EINVAL);
    assert_int_equal(repo_source_set(&s, "n", "p", "a\nb", &err), UTIL_EINVAL);
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(repo_source_set(&s, "n", "p", longname, &err), UTIL_EINVAL);
}

static void test_path_order(void **state)
{
    /* A directory's entries follow it, before any sibling whose name is longer. */
    assert_true(repo_path_cmp("/a", "/a/b") < 0);
    assert_true(repo_path_cmp("/a/b", "/a.txt") < 0);
    assert_true(repo_path_cmp("/a/z", "/a-b") < 0);
    assert_true(repo_path_cmp("/", "/a") < 0);
    assert_true(repo_path_cmp("/a/b", "/a/b") == 0);
    assert_true(repo_path_cmp("/b", "/a/z") > 0);
    assert_true(repo_path_cmp("/\xff", "/a") > 0);
}

static void test_catalog(void **state)
{
    struct repo_catalog c;
    repo_catalog_init(&c);
    repo_catalog_add(&c, "snapshots/ns/p/h1/20261201T000000Z-0000000000000001.json", 100);
    repo_catalog_add(&c, "snapshots/ns/p/h1/20261201T000000Z-0000000000000001.incomplete", 99);
    repo_catalog_add(&c, "snapshots/ns/p/h2/20261201T000000Z-0000000000000002.suspicious", 1);
    repo_catalog_add(&c, "snapshots/ns/p/h2/20261201T000000Z-0000000000000002.json", 100);
    repo_catalog_add(&c, "snapshots/ns/p/h2/20261202T000000Z-0000000000000003.json", 200);
    repo_catalog_add(&c, "snapshots/ns/p/h2/20261203T000000Z-0000000000000004.suspicious", 1);
    repo_catalog_add(&c, "snapshots/ns/p/h2/junk.txt", 1);
    repo_catalog_add(&c, "snapshots/ns/p/h2/20261202T000000Z-0000000000000003.pinned", 5);
    repo_catalog_add(&c, "snapshots/ns/p/h2/20261209T000000Z-0000000000000009.pinned", 5);
    repo_catalog_finish(&c);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.v[0].id, "20261202T000000Z-0000000000000003");
    assert_int_equal(c.v[0].time, 200);
    assert_true(c.v[0].pinned); /* a pin without its manifest (...09) is dropped */
    assert_false(c.v[1].pinned);
    /* Same time: the larger id first. */
    assert_string_equal(c.v[1].id, "20261201T000000Z-0000000000000002");
    assert_true(c.v[1].suspicious);
    assert_false(c.v[1].incomplete);
    assert_string_equal(c.v[2].src.host, "h1");
    assert_true(c.v[2].incomplete);
    assert_false(c.v[2].suspicious);
    repo_catalog_free(&c);
}

static void test_hex(void **state)
{
    uint8_t v[3] = {0x00, 0xab, 0xff}, w[3];
    char s[7];
    repo_hex(v, 3, s);
    assert_string_equal(s, "00abff");
    assert_int_equal(repo_unhex(s, w, 3), 0);
    assert_memory_equal(v, w, 3);
    assert_int_equal(repo_unhex("00ABff", w, 3), UTIL_EINVAL);
    assert_int_equal(repo_unhex("00abff0", w, 3), UTIL_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_round_trip),
        cmocka_unit_test(test_id_rejects),
        cmocka_unit_test(test_every_key_round_trips),
        cmocka_unit_test(test_key_rejects),
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_path_order),
        cmocka_unit_test(test_catalog),
        cmocka_unit_test(test_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
