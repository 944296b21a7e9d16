/*
 * repo_meta_index: the places an index chunk names, for readers that go their own way
 * through a tree (agent/browse.h). Walking a list of 20,000 files level by level with
 * it finds every leaf, in order, with every record; a cut-short or a leaf chunk given
 * as an index is refused as malformed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mstore.h"
#include "repo/repo.h"

#define NFILES 20000

static void write_list(struct mstore *s, struct repo_root *root)
{
    struct repo_files_writer w;
    struct util_err err = {0};
    repo_files_writer_init(&w, s->k, mstore_cb, s);
    for (size_t i = 0; i < NFILES; i++) {
        struct repo_file f;
        char path[32];
        uint8_t chunk[REPO_HASH_LEN] = {0};
        memset(&f, 0, sizeof(f));
        snprintf(path, sizeof(path), "/d/%06zu", i);
        memcpy(chunk, &i, sizeof(i));
        f.path = path;
        f.type = REPO_FT_FILE;
        f.mode = 0644;
        f.size = i;
        f.chunks = (uint8_t(*)[REPO_HASH_LEN])chunk;
        f.nchunks = 1;
        assert_int_equal(repo_files_writer_add(&w, &f, &err), 0);
    }
    assert_int_equal(repo_files_writer_finish(&w, root, &err), 0);
    repo_files_writer_free(&w);
}

/* Opens the chunk at ref, checking its tree and level. */
static uint8_t *open_chunk(struct mstore *s, const struct repo_mref *ref, unsigned level)
{
    struct util_err err = {0};
    uint8_t *sealed = malloc(ref->stored), *plain;
    assert_int_equal(mstore_fetch(s, ref, sealed, &err), 0);
    assert_int_equal(repo_meta_open(s->k, ref, sealed, &plain, &err), 0);
    free(sealed);
    assert_int_equal(plain[0], REPO_TREE_FILES);
    assert_int_equal(plain[1], level);
    return plain;
}

/* Every record under ref, counted; paths must come in order after *last. */
static size_t walk(struct mstore *s, const struct repo_mref *ref, unsigned level, size_t *last)
{
    struct util_err err = {0};
    uint8_t *plain = open_chunk(s, ref, level);
    size_t n = 0;
    if (level == 0) {
        struct repo_files_reader r;
        struct repo_file f;
        repo_files_reader_init(&r, plain + REPO_META_HEAD, ref->plain - REPO_META_HEAD);
        while (repo_files_reader_next(&r, &f, &err) == 1) {
            size_t i = strtoul(f.path + 3, NULL, 10);
            assert_int_equal(i, *last + 1);
            *last = i;
            n++;
            repo_file_free(&f);
        }
        repo_files_reader_free(&r);
    } else {
        struct repo_mref *refs;
        size_t nrefs;
        assert_int_equal(repo_meta_index(plain, ref->plain, &refs, &nrefs, &err), 0);
        assert_true(nrefs > 0);
        for (size_t i = 0; i < nrefs; i++)
            n += walk(s, &refs[i], level - 1, last);
        free(refs);
    }
    free(plain);
    return n;
}

static void test_walk_by_places(void **state)
{
    struct repo_keys k = mstore_keys(11);
    struct mstore s = {.k = &k};
    struct repo_root root;
    size_t last = (size_t)-1;
    snprintf(s.run, sizeof(s.run), "20261202T170127Z-9f3c2a1b7d4e6058");
    write_list(&s, &root);
    assert_true(root.depth >= 1); /* 20,000 records: more than one leaf */
    assert_int_equal(walk(&s, &root.ref, root.depth, &last), NFILES);
    mstore_free(&s);
}

static void test_malformed(void **state)
{
    struct repo_keys k = mstore_keys(12);
    struct mstore s = {.k = &k};
    struct repo_root root;
    struct repo_mref *refs = NULL;
    struct util_err err = {0};
    size_t n = 99;
    snprintf(s.run, sizeof(s.run), "20261202T170127Z-9f3c2a1b7d4e6058");
    write_list(&s, &root);
    uint8_t *plain = open_chunk(&s, &root.ref, root.depth);
    /* Cut short inside a place. */
    assert_int_equal(repo_meta_index(plain, root.ref.plain - 3, &refs, &n, &err), UTIL_EIO);
    assert_null(refs);
    assert_int_equal(n, 0);
    assert_non_null(strstr(err.msg, "malformed"));
    /* A leaf's records are not places. */
    struct repo_mref *kids;
    size_t nkids;
    assert_int_equal(repo_meta_index(plain, root.ref.plain, &kids, &nkids, &err), 0);
    struct repo_mref leaf = kids[0];
    for (unsigned l = root.depth; l > 1; l--) {
        uint8_t *p = open_chunk(&s, &leaf, l - 1);
        free(kids);
        assert_int_equal(repo_meta_index(p, leaf.plain, &kids, &nkids, &err), 0);
        leaf = kids[0];
        free(p);
    }
    free(kids);
    uint8_t *lp = open_chunk(&s, &leaf, 0);
    assert_int_equal(repo_meta_index(lp, leaf.plain, &refs, &n, &err), UTIL_EIO);
    /* A header alone names nothing. */
    assert_int_equal(repo_meta_index(plain, REPO_META_HEAD, &refs, &n, &err), 0);
    assert_int_equal(n, 0);
    free(lp);
    free(plain);
    mstore_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_by_places),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
