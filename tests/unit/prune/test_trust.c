/*
 * What a forget may believe of a listing (internal/prune/trust.h; docs/security.md, "A
 * bucket writer"): the checks of a manifest's and a pin's bytes against the repository
 * key and their place, the verdicts remembered by ETag and size, the kept snapshots of a
 * plan and dropping entries from a catalog.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "prune/trust.h"
#include "repo/mstore.h"

#define ID1 "20260101T003000Z-0000000000000001"
#define ID2 "20260102T003000Z-0000000000000002"
#define ID3 "20260103T003000Z-0000000000000003"
#define SRC "snapshots/ns/web/node-1/"

static struct repo_snapshot snap_of(const char *host, const char *id)
{
    struct repo_snapshot s = {0};
    struct util_err err = {0};
    assert_int_equal(repo_source_set(&s.src, "ns", "web", host, &err), 0);
    snprintf(s.id, sizeof(s.id), "%s", id);
    return s;
}

static char *manifest_of(const struct repo_keys *k, const char *host, const char *id, size_t *len)
{
    struct repo_manifest m = {.max_runtime = 60, .agent = "v1"};
    struct util_err err = {0};
    assert_int_equal(repo_source_set(&m.src, "ns", "web", host, &err), 0);
    snprintf(m.id, sizeof(m.id), "%s", id);
    for (int t = 0; t < 2; t++) { /* roots that parse; nothing here reads the trees */
        struct repo_root *r = t ? &m.chunks_root : &m.files_root;
        memset(r->ref.hash, 0x30 + t, REPO_HASH_LEN);
        memcpy(r->ref.run, id, sizeof(r->ref.run));
        r->ref.stored = 100;
        r->ref.plain = 200;
        r->depth = 1;
    }
    return (char *)repo_manifest_encode(&m, k, len);
}

/* A manifest opens with its key in its own place only: not with another key, not
 * copied under a newer id or another host, not garbage. */
static void test_check_manifest(void **state)
{
    struct repo_keys k = mstore_keys(7), other = mstore_keys(8);
    struct repo_snapshot s1 = snap_of("node-1", ID1), s2 = snap_of("node-1", ID2),
                         h2 = snap_of("node-2", ID1);
    struct util_err err = {0};
    size_t n;
    char *json = manifest_of(&k, "node-1", ID1, &n);

    assert_int_equal(prune_check_manifest(&k, &s1, json, n, &err), 0);
    assert_int_not_equal(prune_check_manifest(&other, &s1, json, n, &err), 0);
    assert_int_not_equal(prune_check_manifest(&k, &s2, json, n, &err), 0); /* newer id */
    assert_non_null(strstr(err.msg, ID2)); /* names the place it was found at */
    assert_non_null(strstr(err.msg, "copied or moved"));
    assert_int_not_equal(prune_check_manifest(&k, &h2, json, n, &err), 0); /* another host */
    assert_int_equal(prune_check_manifest(&k, &s1, "garbage", 7, &err), UTIL_EINVAL);
    json[n / 2] ^= 1; /* one byte changed */
    assert_int_not_equal(prune_check_manifest(&k, &s1, json, n, &err), 0);
    free(json);
}

/* A pin counts only with a tag made with the key over its place. */
static void test_check_pin(void **state)
{
    struct repo_keys k = mstore_keys(7), other = mstore_keys(8);
    struct repo_snapshot s1 = snap_of("node-1", ID1), s2 = snap_of("node-1", ID2);
    struct util_err err = {0};
    char *body = repo_pin_encode(&k, &s1.src, s1.id, "before the upgrade");
    char *forged = repo_pin_encode(&other, &s1.src, s1.id, "before the upgrade");
    static const char plain[] = "{\"format\":2,\"reason\":\"keep\"}";

    assert_int_equal(prune_check_pin(&k, &s1, body, strlen(body), &err), 0);
    assert_int_equal(prune_check_pin(&k, &s2, body, strlen(body), &err), UTIL_EIO); /* moved */
    assert_int_equal(prune_check_pin(&k, &s1, forged, strlen(forged), &err), UTIL_EIO);
    assert_int_not_equal(prune_check_pin(&k, &s1, plain, strlen(plain), &err), 0);
    free(body);
    free(forged);
}

/* Verdicts hold for the object read (ETag and size), under one scope, while listed. */
static void test_trust_memory(void **state)
{
    struct prune_trust t;
    const char *why;
    prune_trust_init(&t);
    prune_trust_begin(&t, "ns/main#1");
    prune_trust_listed(&t, SRC ID1 ".json", "e1", 100);
    prune_trust_listed(&t, SRC ID1 ".pinned", "p1", 50);
    prune_trust_listed(&t, SRC ID2 ".json", "e2", 100);
    prune_trust_listed(&t, SRC ID3 ".json", "", 100);                       /* no ETag */
    prune_trust_listed(&t, SRC ID3 ".incomplete", "m", 10);                 /* not kept */
    prune_trust_listed(&t, SRC "x.json", "e", 10);                          /* not a snapshot */
    prune_trust_listed(&t, SRC ID2 ".pinned", "big", PRUNE_OBJECT_MAX + 1); /* too large */
    assert_int_equal(t.listed.len, 5);
    assert_int_equal(prune_trust_get(&t, SRC ID1 ".json", &why), PRUNE_UNKNOWN);
    assert_int_equal(prune_trust_get(&t, SRC ID2 ".pinned", &why), PRUNE_BAD);
    assert_non_null(strstr(why, "larger"));

    prune_trust_set(&t, SRC ID1 ".json", "e1", 100, true, NULL);
    prune_trust_set(&t, SRC ID1 ".pinned", "p1", 50, false, "the tag does not match");
    prune_trust_set(&t, SRC ID2 ".json", "other", 100, true, NULL); /* changed since listed */
    prune_trust_set(&t, SRC ID3 ".json", "", 100, true, NULL);      /* cannot be told apart */
    prune_trust_set(&t, SRC "y.json", "e", 10, true, NULL);         /* not listed */
    assert_int_equal(t.seen.len, 2);
    assert_int_equal(prune_trust_get(&t, SRC ID1 ".json", &why), PRUNE_GOOD);
    assert_null(why);
    assert_int_equal(prune_trust_get(&t, SRC ID1 ".pinned", &why), PRUNE_BAD);
    assert_string_equal(why, "the tag does not match");
    assert_int_equal(prune_trust_get(&t, SRC ID2 ".json", &why), PRUNE_UNKNOWN);
    assert_int_equal(prune_trust_get(&t, SRC ID3 ".json", &why), PRUNE_UNKNOWN);
    prune_trust_end(&t);
    assert_int_equal(t.listed.len, 0);

    /* Next run: the pin is listed no more, the manifest was replaced with other bytes. */
    prune_trust_begin(&t, "ns/main#1");
    prune_trust_listed(&t, SRC ID1 ".json", "e1", 100);
    assert_int_equal(prune_trust_get(&t, SRC ID1 ".json", &why), PRUNE_GOOD);
    prune_trust_end(&t);
    assert_int_equal(t.seen.len, 1); /* the pin's verdict went with it */
    prune_trust_begin(&t, "ns/main#1");
    prune_trust_listed(&t, SRC ID1 ".json", "e1x", 100);
    assert_int_equal(prune_trust_get(&t, SRC ID1 ".json", &why), PRUNE_UNKNOWN);
    prune_trust_listed(&t, SRC ID1 ".json", "e1", 101);
    assert_int_equal(prune_trust_get(&t, SRC ID1 ".json", &why), PRUNE_UNKNOWN);
    prune_trust_end(&t);

    /* Another key (or repository): nothing read before holds. */
    prune_trust_begin(&t, "ns/main#2");
    assert_int_equal(t.seen.len, 0);
    prune_trust_listed(&t, SRC ID1 ".json", "e1", 100);
    assert_int_equal(prune_trust_get(&t, SRC ID1 ".json", &why), PRUNE_UNKNOWN);
    prune_trust_free(&t);
}

/* The kept snapshots are what the plan keeps, as catalog positions; dropping one makes
 * the next plan keep another in its place. */
static void test_kept_and_drop(void **state)
{
    struct repo_catalog cat;
    struct prune_plan plan = {0};
    struct policy_retention rules = {.keep_last = 2};
    struct util_err err = {0};
    const char *ids[] = {ID1, ID2, ID3};
    char key[256];
    size_t kept[4];
    bool drop[3] = {false};

    repo_catalog_init(&cat);
    for (size_t i = 0; i < 3; i++) {
        snprintf(key, sizeof(key), SRC "%s.json", ids[i]);
        repo_catalog_add(&cat, key, 1767227400 + (int64_t)i * 86400);
    }
    repo_catalog_finish(&cat);
    assert_int_equal(prune_plan_build(&plan, &cat, "ns", "web", "node-1", &rules, NULL, &err), 0);
    assert_int_equal(prune_kept(&plan, kept), 2);
    assert_string_equal(cat.v[kept[0]].id, ID3);
    assert_string_equal(cat.v[kept[1]].id, ID2);
    assert_int_equal(plan.nmanifests, 1);

    /* ID3 is forged: without it, ID1 keeps its place and nothing is forgotten. */
    drop[kept[0]] = true;
    prune_plan_free(&plan);
    assert_int_equal(prune_catalog_drop(&cat, drop), 1);
    assert_int_equal(cat.n, 2);
    assert_int_equal(prune_plan_build(&plan, &cat, "ns", "web", "node-1", &rules, NULL, &err), 0);
    assert_int_equal(prune_kept(&plan, kept), 2);
    assert_int_equal(plan.nmanifests, 0);
    memset(drop, 0, sizeof(drop));
    assert_int_equal(prune_catalog_drop(&cat, drop), 0);
    prune_plan_free(&plan);
    repo_catalog_free(&cat);
}

/* A key as a Secret or a key file holds it: one trailing newline is not part of it. */
static void test_key_text_len(void **state)
{
    assert_int_equal(repo_key_text_len("abc\n", 4), 3);
    assert_int_equal(repo_key_text_len("abc\r\n", 5), 3);
    assert_int_equal(repo_key_text_len("abc\n\n", 5), 4);
    assert_int_equal(repo_key_text_len("abc", 3), 3);
    assert_int_equal(repo_key_text_len("\n", 1), 0);
    assert_int_equal(repo_key_text_len("", 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_manifest), cmocka_unit_test(test_check_pin),
        cmocka_unit_test(test_trust_memory),   cmocka_unit_test(test_kept_and_drop),
        cmocka_unit_test(test_key_text_len),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
