/*
 * Metadata trees (format 2): the cut rule, the deterministic encoding of file
 * records, what an unchanged and a one-change list cost against their parent's
 * chunks, and reading a tree back (and refusing a changed or misplaced chunk). The
 * chunk set's records are in test_chunkset.c.
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
#include "util/varint.h"

#define RUN1 "20261202T170127Z-9f3c2a1b7d4e6058"
#define RUN2 "20261203T170127Z-0000000000000001"

/* A file record: /d/NNNNNN with one chunk whose hash depends on (i, version). */
static void make_file(struct repo_file *f, char *path, size_t i, uint8_t *chunk, int version)
{
    memset(f, 0, sizeof(*f));
    snprintf(path, 32, "/d/%06zu", i);
    f->path = path;
    f->type = REPO_FT_FILE;
    f->mode = 0644;
    f->size = 100 + i;
    f->mtime_sec = 1700000000 + (int64_t)i + version;
    f->ctime_sec = f->mtime_sec;
    f->ino = 1000 + i;
    memset(chunk, 0, REPO_HASH_LEN);
    memcpy(chunk, &i, sizeof(i));
    chunk[20] = (uint8_t)version;
    f->chunks = (uint8_t(*)[REPO_HASH_LEN])chunk;
    f->nchunks = 1;
}

/* Writes a list of n files, file `changed` at version 1 (SIZE_MAX: none). */
static void write_list(struct mstore *s, size_t n, size_t changed, struct repo_root *root)
{
    struct repo_files_writer w;
    struct util_err err = {0};
    repo_files_writer_init(&w, s->k, mstore_cb, s);
    for (size_t i = 0; i < n; i++) {
        struct repo_file f;
        char path[32];
        uint8_t chunk[REPO_HASH_LEN];
        make_file(&f, path, i, chunk, i == changed);
        assert_int_equal(repo_files_writer_add(&w, &f, &err), 0);
    }
    assert_int_equal(repo_files_writer_finish(&w, root, &err), 0);
    repo_files_writer_free(&w);
}

static void test_unchanged_and_one_change(void **state)
{
    struct repo_keys k = mstore_keys(1);
    struct mstore s = {.k = &k};
    struct repo_root r1, r2, r3;
    const size_t n = 20000;

    memcpy(s.run, RUN1, sizeof(s.run));
    write_list(&s, n, SIZE_MAX, &r1);
    assert_true(r1.depth >= 1);
    assert_true(s.new_chunks > 50);
    /* Unchanged: the same chunks, the same root, nothing stored. */
    memcpy(s.run, RUN2, sizeof(s.run));
    s.new_chunks = s.new_bytes = 0;
    write_list(&s, n, SIZE_MAX, &r2);
    assert_int_equal(s.new_chunks, 0);
    assert_memory_equal(&r1, &r2, sizeof(r1));
    /* One file changed: its leaf and one chunk a level above it, wherever it is (the
     * cuts follow paths and the last records' hashes, which did not change). */
    for (size_t changed = 7; changed < n; changed += 997) {
        s.new_chunks = s.new_bytes = 0;
        write_list(&s, n, changed, &r3);
        assert_int_equal(r3.depth, r1.depth);
        assert_int_equal(s.new_chunks, r3.depth + 1);
        assert_true(s.new_bytes < 10000);
    }
    print_message("files: %zu, depth %u; one change stored %llu chunks, %llu bytes\n", n, r3.depth,
                  (unsigned long long)s.new_chunks, (unsigned long long)s.new_bytes);
    mstore_free(&s);
}

static void test_read_back_and_refuse(void **state)
{
    struct repo_keys k = mstore_keys(2), other = mstore_keys(3);
    struct mstore s = {.k = &k};
    struct repo_root root;
    struct repo_tree_reader tr;
    struct repo_files_reader r;
    struct repo_file f;
    struct util_err err = {0};
    size_t n = 0;
    int rc;

    memcpy(s.run, RUN1, sizeof(s.run));
    write_list(&s, 5000, SIZE_MAX, &root);
    repo_tree_reader_init(&tr, &k, REPO_TREE_FILES, &root, mstore_fetch, &s);
    repo_files_reader_tree(&r, &tr);
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1) {
        char want[32];
        snprintf(want, sizeof(want), "/d/%06zu", n++);
        assert_string_equal(f.path, want);
        repo_file_free(&f);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(n, 5000);
    repo_files_reader_free(&r);
    repo_tree_reader_free(&tr);

    /* The same tree read as the other tree kind: refused. */
    struct repo_chunkset cs;
    repo_tree_reader_init(&tr, &k, REPO_TREE_CHUNKS, &root, mstore_fetch, &s);
    assert_int_not_equal(repo_chunkset_read(&cs, &tr, &err), 0);
    assert_non_null(strstr(err.msg, "not the chunk set tree"));
    repo_tree_reader_free(&tr);

    /* The wrong key: the first chunk does not open. */
    const uint8_t *recs;
    size_t len;
    repo_tree_reader_init(&tr, &other, REPO_TREE_FILES, &root, mstore_fetch, &s);
    assert_int_equal(repo_tree_reader_next(&tr, &recs, &len, &err), UTIL_EIO);
    repo_tree_reader_free(&tr);

    /* A changed byte in a leaf: refused when that leaf is read. */
    s.sealed[0][REPO_SEAL_EXTRA] ^= 1;
    repo_tree_reader_init(&tr, &k, REPO_TREE_FILES, &root, mstore_fetch, &s);
    while ((rc = repo_tree_reader_next(&tr, &recs, &len, &err)) == 1)
        ;
    assert_int_equal(rc, UTIL_EIO);
    assert_non_null(strstr(err.msg, "authentication failed"));
    repo_tree_reader_free(&tr);
    mstore_free(&s);
}

static void test_empty_list(void **state)
{
    struct repo_keys k = mstore_keys(4);
    struct mstore s = {.k = &k};
    struct repo_files_writer w;
    struct repo_root root;
    struct util_err err = {0};
    struct repo_tree_reader tr;
    struct util_buf all;
    memcpy(s.run, RUN1, sizeof(s.run));
    repo_files_writer_init(&w, &k, mstore_cb, &s);
    assert_int_equal(repo_files_writer_finish(&w, &root, &err), 0);
    repo_files_writer_free(&w);
    assert_int_equal(root.depth, 0);
    util_buf_init(&all);
    repo_tree_reader_init(&tr, &k, REPO_TREE_FILES, &root, mstore_fetch, &s);
    assert_int_equal(repo_tree_read_all(&tr, &all, &err), 0);
    assert_int_equal(all.len, 0);
    util_buf_free(&all);
    repo_tree_reader_free(&tr);
    mstore_free(&s);
}

static void test_cut_rule(void **state)
{
    uint8_t rec[100];
    uint32_t sigma2 = repo_meta_sigma2(REPO_TREE_FILES, 0);
    memset(rec, 7, sizeof(rec));
    /* Never below the minimum or with one record; always at the maximum. */
    uint64_t h = repo_meta_key(1, rec, sizeof(rec));
    assert_false(repo_meta_cut(0, sigma2, sizeof(rec), REPO_META_MIN - 1, 50));
    assert_false(repo_meta_cut(0, sigma2, sizeof(rec), REPO_META_MIN, 1));
    assert_false(repo_meta_cut(0, sigma2, sizeof(rec), REPO_META_MAX - 1, 1));
    assert_true(repo_meta_cut(h, sigma2, sizeof(rec), REPO_META_MAX, 1));
    /* A hash of 0 is below any threshold, all ones above every one short of the maximum. */
    assert_true(repo_meta_cut(0, sigma2, sizeof(rec), REPO_META_MIN, 2));
    assert_false(repo_meta_cut(UINT64_MAX, sigma2, 1, REPO_META_MIN, 2));
    /* Each level's chunks are about sqrt(pi/2 x sigma2) bytes on average (1.3 KiB
     * for the file list's leaves, 0.9 KiB for the rest), for small and large
     * records, and few far above it. */
    const struct {
        enum repo_tree tree;
        unsigned level;
        double lo, hi;
    } lv[] = {
        {REPO_TREE_FILES, 0, 1100, 1600},
        {REPO_TREE_CHUNKS, 0, 780, 1150},
        {REPO_TREE_FILES, 1, 780, 1150},
        {REPO_TREE_CHUNKS, 3, 780, 1150},
    };
    for (size_t j = 0; j < sizeof(lv) / sizeof(lv[0]); j++) {
        sigma2 = repo_meta_sigma2(lv[j].tree, lv[j].level);
        for (size_t reclen = 40; reclen <= 400; reclen *= 10) {
            size_t cuts = 0, size = 0, nrec = 0, max = 0, bytes = 0;
            uint8_t big[400] = {0};
            for (uint32_t i = 0; i < 400000; i++) {
                memcpy(big, &i, sizeof(i));
                size += reclen;
                bytes += reclen;
                nrec++;
                if (repo_meta_cut(repo_meta_key(0x1234, big, reclen), sigma2, reclen, size, nrec)) {
                    cuts++;
                    max = size > max ? size : max;
                    size = nrec = 0;
                }
            }
            double avg = (double)bytes / (double)cuts;
            print_message("%c%u, records of %zu bytes: %zu chunks, %.0f bytes on average, %zu at "
                          "most\n",
                          (char)lv[j].tree, lv[j].level, reclen, cuts, avg, max);
            assert_true(avg > lv[j].lo && avg < lv[j].hi);
            assert_true((double)max < 5 * avg);
        }
    }
    /* The file list's leaves are cut larger than the rest (their records compress). */
    assert_true(repo_meta_sigma2(REPO_TREE_FILES, 0) > repo_meta_sigma2(REPO_TREE_FILES, 1));
    assert_int_equal(repo_meta_sigma2(REPO_TREE_CHUNKS, 0), repo_meta_sigma2(REPO_TREE_CHUNKS, 2));
    /* Keyed: another seed cuts elsewhere. */
    size_t same = 0;
    sigma2 = repo_meta_sigma2(REPO_TREE_CHUNKS, 0);
    for (uint32_t i = 0; i < 10000; i++) {
        memcpy(rec, &i, sizeof(i));
        same += repo_meta_cut(repo_meta_key(1, rec, 60), sigma2, 60, 800, 2) ==
                repo_meta_cut(repo_meta_key(2, rec, 60), sigma2, 60, 800, 2);
    }
    assert_true(same < 10000);
}

static void test_file_record_deterministic(void **state)
{
    /* The same entry gives the same chunk in two runs with two writers: nothing of
     * the snapshot is in a record. */
    struct repo_keys k = mstore_keys(5);
    struct mstore s = {.k = &k};
    struct repo_root a, b;
    memcpy(s.run, RUN1, sizeof(s.run));
    write_list(&s, 10, SIZE_MAX, &a);
    size_t n = s.n;
    memcpy(s.run, RUN2, sizeof(s.run));
    write_list(&s, 10, SIZE_MAX, &b);
    assert_int_equal(s.n, n);
    assert_memory_equal(a.ref.hash, b.ref.hash, REPO_HASH_LEN);
    /* A changed field gives another chunk. */
    write_list(&s, 10, 3, &b);
    assert_memory_not_equal(a.ref.hash, b.ref.hash, REPO_HASH_LEN);
    mstore_free(&s);
}

static void test_root_binary(void **state)
{
    struct repo_root r = {.depth = 2}, back;
    memset(r.ref.hash, 0xab, REPO_HASH_LEN);
    memcpy(r.ref.run, RUN1, sizeof(r.ref.run));
    r.ref.seq = 3;
    r.ref.offset = 8;
    r.ref.stored = 4000;
    r.ref.plain = 9000;
    r.ref.flags = REPO_BLOB_ZSTD;
    struct util_buf b;
    util_buf_init(&b);
    repo_root_put(&b, &r);
    struct util_rd rd = {.p = (const uint8_t *)b.data, .n = b.len};
    assert_int_equal(repo_root_get(&rd, &back), 0);
    assert_memory_equal(&r, &back, sizeof(r));
    assert_int_equal(rd.i, b.len);
    /* Cut short anywhere, or a depth past REPO_TREE_LEVELS: malformed. */
    for (size_t n = 0; n < b.len; n++) {
        rd = (struct util_rd){.p = (const uint8_t *)b.data, .n = n};
        assert_int_equal(repo_root_get(&rd, &back), UTIL_EIO);
    }
    b.data[b.len - 1] = REPO_TREE_LEVELS;
    rd = (struct util_rd){.p = (const uint8_t *)b.data, .n = b.len};
    assert_int_equal(repo_root_get(&rd, &back), UTIL_EIO);
    util_buf_free(&b);
}

/* A set of chunks in packs: the tree is grouped by pack, read back sorted by hash. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unchanged_and_one_change),
        cmocka_unit_test(test_read_back_and_refuse),
        cmocka_unit_test(test_empty_list),
        cmocka_unit_test(test_cut_rule),
        cmocka_unit_test(test_file_record_deterministic),
        cmocka_unit_test(test_root_binary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
