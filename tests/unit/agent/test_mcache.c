/*
 * The node's metadata cache (agent/mcache.h, docs/repository.md "The node's cache"): an
 * entry reads back as written; an absent one is a miss; one cut short, changed, renamed,
 * written under another key or of another length than the bucket's is a miss and is
 * deleted; writes go through temporary files that never collide and never show as
 * entries; eviction keeps what the run used and young temporary files; every failure of
 * the cache's own I/O is an error the caller can act on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "agent/mcache.h"

#define NAME  "20261202T170127Z-9f3c2a1b7d4e6058.0.meta"
#define NAME2 "20261202T170128Z-0011223344556677.0.meta"

struct fixture {
    char root[64];
    struct repo_keys keys;
    struct repo_source src;
    struct mcache c;
};

static struct repo_keys keys_of(uint8_t seed)
{
    uint8_t master[32];
    struct repo_keys k;
    memset(master, seed, sizeof(master));
    repo_keys_derive(&k, master);
    return k;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct util_err err = {0};
    snprintf(f->root, sizeof(f->root), "/tmp/lode-mcache-XXXXXX");
    assert_non_null(mkdtemp(f->root));
    f->keys = keys_of(1);
    assert_int_equal(repo_source_set(&f->src, "ns", "web", "node-1", &err), 0);
    assert_int_equal(mcache_open(&f->c, f->root, "s3:http://127.0.0.1/b", &f->src, &f->keys, &err),
                     0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char *cmd = util_asprintf("rm -rf '%s'", f->root);
    mcache_close(&f->c);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(f);
    return 0;
}

static char *path_of(const struct fixture *f, const char *name)
{
    return util_asprintf("%s/%s", f->c.dir, name);
}

/* Bytes 0..n-1 of a pattern. */
static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 31 + seed);
}

/* A writer left as a process that died leaves it: its temporary file stays. */
static void leave(struct mcache_writer *w)
{
    close(w->fd);
    EVP_MD_CTX_free(w->sha);
    free(w->name);
    free(w->tmp);
}

static size_t files_in(const char *dir)
{
    char *cmd = util_asprintf("ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    unsigned n = 0;
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%u", &n), 1);
    pclose(p);
    free(cmd);
    return n;
}

static void test_hit(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    struct util_buf out;
    uint8_t data[3000];
    struct stat sb;
    fill(data, sizeof(data), 7);

    assert_int_equal(mcache_put(&f->c, NAME, data, sizeof(data), &err), 0);
    assert_int_equal(f->c.writes, 1);
    /* Directories 700, entries 600, and the layout of the header. */
    assert_int_equal(stat(f->c.dir, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    char *p = path_of(f, NAME);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(sb.st_size, sizeof(data) + MCACHE_TRAILER);
    free(p);
    assert_non_null(strstr(f->c.dir, "/meta/"));
    assert_non_null(strstr(f->c.dir, "/ns/web/node-1"));

    /* Whole, then a range from a fresh cache (the tag checked again), then the same range
     * again (verified: the range alone is read). */
    assert_int_equal(mcache_read(&f->c, NAME, sizeof(data), 0, SIZE_MAX, &out, &err), 0);
    assert_int_equal(out.len, sizeof(data));
    assert_memory_equal(out.data, data, sizeof(data));
    util_buf_free(&out);
    mcache_close(&f->c);
    assert_int_equal(mcache_open(&f->c, f->root, "s3:http://127.0.0.1/b", &f->src, &f->keys, &err),
                     0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mcache_read(&f->c, NAME, sizeof(data), 1000, 500, &out, &err), 0);
        assert_int_equal(out.len, 500);
        assert_memory_equal(out.data, data + 1000, 500);
        util_buf_free(&out);
    }
    /* A range past the end gives what is there. */
    assert_int_equal(mcache_read(&f->c, NAME, sizeof(data), 2900, 500, &out, &err), 0);
    assert_int_equal(out.len, 100);
    util_buf_free(&out);
    assert_int_equal(mcache_read(&f->c, NAME, MCACHE_ANY, 5000, 10, &out, &err), 0);
    assert_int_equal(out.len, 0);
    util_buf_free(&out);
    assert_int_equal(f->c.hits, 4);
    assert_int_equal(f->c.nkeep, 1);
}

/* A pack larger than one read block is checked across blocks. */
static void test_large(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    struct util_buf out;
    size_t n = (3u << 20) + 123;
    uint8_t *data = malloc(n);
    fill(data, n, 3);
    assert_int_equal(mcache_put(&f->c, NAME, data, n, &err), 0);
    free(f->c.verified);
    f->c.verified = NULL;
    assert_int_equal(mcache_read(&f->c, NAME, n, (1u << 20) - 10, (1u << 20) + 20, &out, &err), 0);
    assert_int_equal(out.len, (1u << 20) + 20);
    assert_memory_equal(out.data, data + (1u << 20) - 10, out.len);
    util_buf_free(&out);
    free(data);
}

static void test_miss(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    struct util_buf out;
    assert_int_equal(mcache_read(&f->c, NAME, 10, 0, 10, &out, &err), MCACHE_MISS);
    assert_int_equal(out.len, 0);
    util_buf_free(&out);
    assert_int_equal(f->c.misses, 1);
    assert_int_equal(f->c.bad, 0);
    assert_int_equal(f->c.nkeep, 0);
}

/* Writes an entry, damages its file with edit, and expects a miss that deletes it. */
static void expect_bad(struct fixture *f, void (*edit)(const char *path), uint64_t want_len)
{
    struct util_err err = {0};
    struct util_buf out;
    uint8_t data[2000];
    fill(data, sizeof(data), 9);
    assert_int_equal(mcache_put(&f->c, NAME, data, sizeof(data), &err), 0);
    free(f->c.verified); /* a later run: nothing verified yet */
    f->c.verified = NULL;
    char *p = path_of(f, NAME);
    if (edit != NULL)
        edit(p);
    assert_int_equal(mcache_read(&f->c, NAME, want_len, 0, SIZE_MAX, &out, &err), MCACHE_MISS);
    assert_int_equal(out.len, 0);
    util_buf_free(&out);
    assert_int_equal(f->c.bad, 1);
    assert_int_equal(access(p, F_OK), -1); /* deleted: the next write replaces it */
    free(p);
    /* Written again, it reads. */
    assert_int_equal(mcache_put(&f->c, NAME, data, sizeof(data), &err), 0);
    assert_int_equal(mcache_read(&f->c, NAME, sizeof(data), 0, SIZE_MAX, &out, &err), 0);
    assert_memory_equal(out.data, data, sizeof(data));
    util_buf_free(&out);
}

static void flip_byte(const char *path)
{
    int fd = open(path, O_RDWR);
    uint8_t b;
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &b, 1, 100), 1);
    b ^= 0x40;
    assert_int_equal(pwrite(fd, &b, 1, 100), 1);
    close(fd);
}

static void flip_tag(const char *path)
{
    struct stat sb;
    int fd = open(path, O_RDWR);
    uint8_t b;
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &sb), 0);
    assert_int_equal(pread(fd, &b, 1, sb.st_size - 1), 1);
    b ^= 1;
    assert_int_equal(pwrite(fd, &b, 1, sb.st_size - 1), 1);
    close(fd);
}

static void cut_trailer(const char *path)
{
    assert_int_equal(truncate(path, 30), 0); /* shorter than a trailer */
}

static void cut_body(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(truncate(path, sb.st_size - 1), 0); /* the trailer no longer ends it */
}

static void empty(const char *path)
{
    assert_int_equal(truncate(path, 0), 0);
}

static void bad_magic(const char *path)
{
    struct stat sb;
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &sb), 0);
    assert_int_equal(pwrite(fd, "X", 1, sb.st_size - MCACHE_TRAILER), 1);
    close(fd);
}

static void bad_length(const char *path)
{
    struct stat sb;
    int fd = open(path, O_RDWR);
    uint8_t b = 0x7f;
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &sb), 0);
    assert_int_equal(pwrite(fd, &b, 1, sb.st_size - MCACHE_TRAILER + 8), 1);
    close(fd);
}

static void test_corrupt(void **state)
{
    expect_bad(*state, flip_byte, 2000);
}
static void test_wrong_tag(void **state)
{
    expect_bad(*state, flip_tag, 2000);
}
static void test_truncated_trailer(void **state)
{
    expect_bad(*state, cut_trailer, 2000);
}
static void test_truncated_body(void **state)
{
    expect_bad(*state, cut_body, 2000);
}
static void test_empty(void **state)
{
    expect_bad(*state, empty, 2000);
}
static void test_bad_magic(void **state)
{
    expect_bad(*state, bad_magic, 2000);
}
static void test_bad_length(void **state)
{
    expect_bad(*state, bad_length, 2000);
}
/* The bucket's listing shows another length: the entry is not that object. */
static void test_other_length(void **state)
{
    expect_bad(*state, NULL, 2001);
}

/* An entry renamed to another name, or written under another repository's key, does not
 * verify: the tag binds both. */
static void test_wrong_name_or_key(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    struct util_buf out;
    struct mcache other;
    struct repo_keys k2 = keys_of(2);
    uint8_t data[100];
    fill(data, sizeof(data), 1);
    assert_int_equal(mcache_put(&f->c, NAME, data, sizeof(data), &err), 0);
    char *a = path_of(f, NAME), *b = path_of(f, NAME2);
    assert_int_equal(rename(a, b), 0);
    assert_int_equal(mcache_read(&f->c, NAME2, sizeof(data), 0, SIZE_MAX, &out, &err), MCACHE_MISS);
    util_buf_free(&out);
    assert_int_equal(f->c.bad, 1);

    assert_int_equal(mcache_put(&f->c, NAME, data, sizeof(data), &err), 0);
    assert_int_equal(mcache_open(&other, f->root, "s3:http://127.0.0.1/b", &f->src, &k2, &err), 0);
    assert_string_equal(other.dir, f->c.dir);
    assert_int_equal(mcache_read(&other, NAME, sizeof(data), 0, SIZE_MAX, &out, &err), MCACHE_MISS);
    util_buf_free(&out);
    assert_int_equal(other.bad, 1);
    mcache_close(&other);
    free(a);
    free(b);
}

/* What is not a regular file is not an entry; a symlink is refused without following. */
static void test_not_a_file(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    struct util_buf out;
    char *p = path_of(f, NAME), *q = path_of(f, NAME2);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(mcache_read(&f->c, NAME, 1, 0, 1, &out, &err), MCACHE_MISS);
    util_buf_free(&out);
    assert_int_equal(rmdir(p), 0);
    assert_int_equal(symlink("/etc/hostname", q), 0);
    assert_true(mcache_read(&f->c, NAME2, 1, 0, 1, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "cannot open"));
    util_buf_free(&out);
    free(p);
    free(q);
}

/* Two writers of one entry at once (two runs of one source): their temporary files
 * differ, neither shows as the entry until renamed, and the entry is whole after both. */
static void test_concurrent_writers(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    struct util_buf out;
    struct mcache_writer a, b;
    uint8_t data[5000];
    fill(data, sizeof(data), 4);
    assert_int_equal(mcache_begin(&f->c, NAME, &a, &err), 0);
    assert_int_equal(mcache_begin(&f->c, NAME, &b, &err), 0);
    assert_string_not_equal(a.tmp, b.tmp);
    assert_int_equal(mcache_write(&a, data, 2000), 0);
    assert_int_equal(mcache_write(&b, data, 5000), 0);
    /* Half written: no entry yet. */
    assert_int_equal(mcache_read(&f->c, NAME, sizeof(data), 0, SIZE_MAX, &out, &err), MCACHE_MISS);
    util_buf_free(&out);
    assert_int_equal(mcache_write(&a, data + 2000, 3000), 0);
    assert_int_equal(mcache_commit(&b, &err), 0);
    assert_int_equal(mcache_commit(&a, &err), 0);
    assert_int_equal(files_in(f->c.dir), 1);
    free(f->c.verified);
    f->c.verified = NULL;
    assert_int_equal(mcache_read(&f->c, NAME, sizeof(data), 0, SIZE_MAX, &out, &err), 0);
    assert_memory_equal(out.data, data, sizeof(data));
    util_buf_free(&out);

    /* A writer dropped (or a process that died) leaves no entry; abort removes its file. */
    assert_int_equal(mcache_begin(&f->c, NAME2, &a, &err), 0);
    assert_int_equal(mcache_write(&a, data, 10), 0);
    assert_int_equal(files_in(f->c.dir), 2);
    mcache_abort(&a);
    assert_int_equal(files_in(f->c.dir), 1);
}

/* A write that failed makes commit refuse and remove the temporary file. */
static void test_write_failure(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    struct mcache_writer w;
    assert_int_equal(mcache_begin(&f->c, NAME, &w, &err), 0);
    close(w.fd);
    w.fd = open("/dev/full", O_WRONLY);
    assert_true(w.fd >= 0);
    assert_true(mcache_write(&w, "x", 1) < 0);
    assert_true(mcache_write(&w, "y", 1) < 0); /* stays failed */
    assert_true(mcache_commit(&w, &err) < 0);
    assert_non_null(strstr(err.msg, "cannot write"));
    assert_int_equal(files_in(f->c.dir), 0);
    /* The trailer's write failing is the same. */
    assert_int_equal(mcache_begin(&f->c, NAME, &w, &err), 0);
    assert_int_equal(mcache_write(&w, "x", 1), 0);
    close(w.fd);
    w.fd = open("/dev/full", O_WRONLY);
    assert_true(mcache_commit(&w, &err) < 0);
    assert_int_equal(files_in(f->c.dir), 0);
}

/* The directory gone: begin, put and evict fail with the path; a rename that cannot
 * happen (the entry's name is a directory) fails commit and leaves nothing. */
static void test_dir_failures(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    struct mcache_writer w;
    char *p = path_of(f, NAME);
    assert_int_equal(mkdir(p, 0700), 0);
    char *inner = util_asprintf("%s/x", p);
    assert_int_equal(mkdir(inner, 0700), 0);
    assert_true(mcache_put(&f->c, NAME, "abc", 3, &err) < 0);
    assert_non_null(strstr(err.msg, "cannot rename"));
    assert_int_equal(rmdir(inner), 0);
    assert_int_equal(rmdir(p), 0);
    assert_int_equal(files_in(f->c.dir), 0);
    free(inner);
    free(p);

    char *cmd = util_asprintf("rm -rf '%s'", f->c.dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    assert_true(mcache_begin(&f->c, NAME, &w, &err) < 0);
    assert_non_null(strstr(err.msg, "cannot create"));
    assert_true(mcache_put(&f->c, NAME, "abc", 3, &err) < 0);
    assert_true(mcache_evict(&f->c, 0, &err) < 0);
    assert_non_null(strstr(err.msg, "cannot read"));
}

/* A root that is a file cannot hold the cache; the caller then runs without one. */
static void test_open_failure(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    struct mcache c;
    char *file = util_asprintf("%s/file", f->root);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_true(mcache_open(&c, file, "s3:x", &f->src, &f->keys, &err) < 0);
    assert_non_null(strstr(err.msg, "cannot make"));
    assert_null(c.dir);
    mcache_close(&c);
    free(file);
}

static void touch_at(const char *path, int64_t t)
{
    struct timeval tv[2] = {{.tv_sec = t}, {.tv_sec = t}};
    assert_int_equal(utimes(path, tv), 0);
}

static void test_evict(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    struct mcache_writer w;
    struct mcache c2;
    int64_t now = 2000000000;

    assert_int_equal(mcache_put(&f->c, NAME, "a", 1, &err), 0);
    assert_int_equal(mcache_put(&f->c, NAME2, "b", 1, &err), 0);
    assert_int_equal(mcache_put(&f->c, "other.manifest", "c", 1, &err), 0);
    assert_int_equal(mcache_begin(&f->c, "young.meta", &w, &err), 0);
    char *young = util_strdup(w.tmp);
    leave(&w);
    struct mcache_writer w2;
    assert_int_equal(mcache_begin(&f->c, "old.meta", &w2, &err), 0);
    touch_at(w2.tmp, now - MCACHE_TEMP_AGE - 1);
    touch_at(young, now - 10);
    leave(&w2);
    assert_int_equal(files_in(f->c.dir), 5);

    /* A later run that used NAME only. */
    assert_int_equal(mcache_open(&c2, f->root, "s3:http://127.0.0.1/b", &f->src, &f->keys, &err),
                     0);
    mcache_keep(&c2, NAME);
    mcache_keep(&c2, NAME); /* once */
    assert_int_equal(c2.nkeep, 1);
    assert_false(mcache_evicts(&c2, NAME, now, now));
    assert_true(mcache_evicts(&c2, NAME2, now, now));
    assert_false(mcache_evicts(&c2, NAME ".tmp.0011223344556677", now - MCACHE_TEMP_AGE, now));
    assert_true(mcache_evicts(&c2, NAME ".tmp.0011223344556677", now - MCACHE_TEMP_AGE - 1, now));
    assert_int_equal(mcache_evict(&c2, now, &err), 0);
    assert_int_equal(files_in(f->c.dir), 2); /* NAME and the young temporary file */
    char *p = path_of(f, NAME);
    assert_int_equal(access(p, F_OK), 0);
    assert_int_equal(access(young, F_OK), 0);
    free(p);
    free(young);
    mcache_close(&c2);
}

/* A repository's directory unused for MCACHE_STALE goes when another is opened. */
static void test_drop_stale(void **state)
{
    struct fixture *f = *state;
    int64_t now = 2000000000;
    char *top = util_asprintf("%s/meta", f->root);
    char *old = util_asprintf("%s/aaaaaaaaaaaaaaaa", top), *fresh = util_asprintf("%s/bbbb", top);
    char *inner = util_asprintf("%s/ns/p/h", old), *entry = util_asprintf("%s/x.meta", inner);
    char *cmd = util_asprintf("mkdir -p '%s' '%s' && touch '%s'", inner, fresh, entry);
    assert_int_equal(system(cmd), 0);
    touch_at(old, now - MCACHE_STALE - 1);
    touch_at(fresh, now - MCACHE_STALE);
    mcache_drop_stale(top, "cccc", now);
    assert_int_equal(access(old, F_OK), -1);
    assert_int_equal(access(fresh, F_OK), 0);
    /* The directory being opened stays, whatever its time. */
    touch_at(fresh, 0);
    mcache_drop_stale(top, "bbbb", now);
    assert_int_equal(access(fresh, F_OK), 0);
    mcache_drop_stale("/nonexistent-lode-dir", "x", now); /* nothing to do */
    free(cmd);
    free(entry);
    free(inner);
    free(old);
    free(fresh);
    free(top);
}

static void test_default_dir(void **state)
{
    (void)state;
    char *d;
    assert_null(mcache_default_dir("/x", true));
    d = mcache_default_dir("/x/y", false);
    assert_string_equal(d, "/x/y");
    free(d);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    d = mcache_default_dir(NULL, false);
    assert_string_equal(d, "/xdg/lodestore");
    free(d);
    setenv("XDG_CACHE_HOME", "relative", 1); /* ignored, as the XDG rules say */
    d = mcache_default_dir(NULL, false);
    assert_string_equal(d, "/home/u/.cache/lodestore");
    free(d);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    assert_null(mcache_default_dir(NULL, false));
}

static void test_warn_once(void **state)
{
    struct fixture *f = *state;
    struct util_err err = {0};
    util_err_set(&err, UTIL_EIO, "disk full");
    assert_false(f->c.warned);
    mcache_warn(&f->c, "a write", &err);
    assert_true(f->c.warned);
    mcache_warn(&f->c, "a write", &err);
    assert_true(f->c.warned);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_tag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_trailer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_magic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_name_or_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_evict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_stale, setup, teardown),
        cmocka_unit_test(test_default_dir),
        cmocka_unit_test_setup_teardown(test_warn_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
