#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/kube_int.h"

/* held() as the watch asks it: from terminated strings. */
static bool held(struct refl_keys *k, const char *ns, const char *name, const char *rv)
{
    return refl_keys_held(k, ns, strlen(ns), name, strlen(name), rv, strlen(rv));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The stale keys, sorted and joined with commas, in an allocation the caller frees. */
static char *stale(const struct refl_keys *k)
{
    size_t n;
    char **keys = refl_keys_stale(k, &n);
    struct util_buf b;
    util_buf_init(&b);
    util_buf_puts(&b, "");
    if (n > 0)
        qsort(keys, n, sizeof(*keys), cmp_str);
    for (size_t i = 0; i < n; i++) {
        util_buf_printf(&b, "%s%s", i > 0 ? "," : "", keys[i]);
        free(keys[i]);
    }
    free(keys);
    return util_buf_steal(&b);
}

static void test_upsert_says_what_changed(void **state)
{
    struct refl_keys k;
    (void)state;
    refl_keys_init(&k);
    assert_int_equal(refl_keys_upsert(&k, "ns", "a", "1"), REFL_ADDED);
    assert_int_equal(refl_keys_upsert(&k, "ns", "a", "1"), REFL_SAME);
    assert_int_equal(refl_keys_upsert(&k, "ns", "a", "2"), REFL_UPDATED);
    /* The namespace is part of the key. */
    assert_int_equal(refl_keys_upsert(&k, "other", "a", "2"), REFL_ADDED);
    assert_true(held(&k, "ns", "a", "2"));
    assert_false(held(&k, "ns", "a", "1"));
    assert_false(held(&k, "ns", "b", "2"));
    assert_true(refl_keys_forget(&k, "ns", "a"));
    assert_false(refl_keys_forget(&k, "ns", "a"));
    assert_false(held(&k, "ns", "a", "2"));
    refl_keys_close(&k);
}

static void test_stale_keys_are_those_the_list_missed(void **state)
{
    struct refl_keys k;
    char *s;
    (void)state;
    refl_keys_init(&k);
    refl_keys_upsert(&k, "ns", "a", "1");
    refl_keys_upsert(&k, "ns", "b", "1");
    refl_keys_upsert(&k, "ns", "c", "1");
    /* A new list sees a unchanged, b changed, and not c. */
    k.gen++;
    assert_int_equal(refl_keys_upsert(&k, "ns", "a", "1"), REFL_SAME);
    assert_int_equal(refl_keys_upsert(&k, "ns", "b", "2"), REFL_UPDATED);
    s = stale(&k);
    assert_string_equal(s, "ns/c");
    free(s);
    /* A skipped watch event of a held key stamps it as seen, like the list. */
    k.gen++;
    assert_true(held(&k, "ns", "a", "1"));
    s = stale(&k);
    assert_string_equal(s, "ns/b,ns/c");
    free(s);
    refl_keys_close(&k);
}

static void test_note_keeps_one_older_version(void **state)
{
    struct refl_keys k;
    char *s;
    (void)state;
    refl_keys_init(&k);
    refl_keys_upsert(&k, "ns", "a", "1");
    /* Two writes of the owner's answered before either event came. */
    refl_keys_note(&k, "ns", "a", "2");
    refl_keys_note(&k, "ns", "a", "3");
    /* The first write's event is held (and its older version dropped), then the second's. */
    assert_true(held(&k, "ns", "a", "2"));
    assert_false(held(&k, "ns", "a", "2"));
    assert_true(held(&k, "ns", "a", "3"));
    /* One level only: the version before the older one is not held. */
    assert_false(held(&k, "ns", "a", "1"));
    /* Noting the version held changes nothing. */
    refl_keys_note(&k, "ns", "a", "3");
    assert_true(held(&k, "ns", "a", "3"));
    assert_int_equal(refl_keys_upsert(&k, "ns", "a", "3"), REFL_SAME);
    /* A key first known from a note counts as seen by the current list. */
    refl_keys_note(&k, NULL, "cluster-scoped", "7");
    assert_true(held(&k, "", "cluster-scoped", "7"));
    s = stale(&k);
    assert_string_equal(s, "");
    free(s);
    refl_keys_close(&k);
}

static void test_overlong_key_is_never_held(void **state)
{
    struct refl_keys k;
    char name[600];
    (void)state;
    memset(name, 'x', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    refl_keys_init(&k);
    refl_keys_upsert(&k, "ns", name, "1");
    assert_false(held(&k, "ns", name, "1"));
    assert_int_equal(refl_keys_upsert(&k, "ns", name, "1"), REFL_SAME);
    refl_keys_close(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upsert_says_what_changed),
        cmocka_unit_test(test_stale_keys_are_those_the_list_missed),
        cmocka_unit_test(test_note_keeps_one_older_version),
        cmocka_unit_test(test_overlong_key_is_never_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
