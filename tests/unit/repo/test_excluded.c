/*
 * The manifest's count of what a backup left out, by rule (repo.h, struct
 * repo_excluded): it travels in the sealed part and comes back; a manifest without it
 * reads as nothing left out; a malformed one is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mstore.h"
#include "repo/repo.h"

static void test_round_trip(void **state)
{
    struct repo_keys k = mstore_keys(3);
    struct repo_manifest m = {0}, d = {0};
    struct util_err err = {0};
    snprintf(m.id, sizeof(m.id), "20261202T170127Z-9f3c2a1b7d4e6058");
    repo_source_set(&m.src, "default", "etc", "node-1", &err);
    m.max_runtime = 3600;
    snprintf(m.agent, sizeof(m.agent), "lode test");
    /* Format 2's manifest names its two trees: roots that parse. */
    for (int t = 0; t < 2; t++) {
        struct repo_root *r = t ? &m.chunks_root : &m.files_root;
        memset(r->ref.hash, 0x30 + t, REPO_HASH_LEN);
        memcpy(r->ref.run, m.id, sizeof(r->ref.run));
        r->ref.offset = 8;
        r->ref.stored = 100;
        r->ref.plain = 200;
        r->depth = 1;
    }
    m.excluded[REPO_EXCL_PATTERN] = (struct repo_excluded){4, 12};
    m.excluded[REPO_EXCL_SIZE] = (struct repo_excluded){1, 300000};
    m.excluded[REPO_EXCL_FS] = (struct repo_excluded){2, 0};
    size_t len;
    uint8_t *body = repo_manifest_encode(&m, &k, &len);
    assert_int_equal(repo_manifest_decode(&d, &m.src, m.id, body, len, &k, &err), 0);
    assert_memory_equal(d.excluded, m.excluded, sizeof(m.excluded));
    repo_manifest_free(&d);
    free(body);
}

static void test_parse(void **state)
{
    struct repo_excluded x[REPO_EXCL_RULES];
    json_t *o = json_loads("{\"cache\":{\"entries\":3,\"bytes\":0}}", 0, NULL);
    assert_int_equal(repo_excluded_parse(o, x), 0);
    assert_int_equal(x[REPO_EXCL_CACHE].entries, 3);
    assert_int_equal(x[REPO_EXCL_PATTERN].entries, 0); /* absent: nothing */
    json_decref(o);
    const char *bad[] = {"[]", "{\"pattern\":{\"entries\":-1,\"bytes\":0}}",
                         "{\"pattern\":{\"entries\":1}}", "{\"size\":3, \"pattern\":7}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        o = json_loads(bad[i], 0, NULL);
        assert_int_equal(repo_excluded_parse(o, x), UTIL_EINVAL);
        json_decref(o);
    }
    json_t *j = repo_excluded_json(x);
    assert_int_equal(json_object_size(j), REPO_EXCL_RULES);
    assert_non_null(json_object_get(j, "otherFileSystem"));
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
