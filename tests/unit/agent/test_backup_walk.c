/*
 * The backup walk (agent/backup_walk.c) on a real tree in a temporary directory:
 * what it records in the file list (paths in path order, types, sizes, symlink
 * targets, chunks), what it deduplicates, and what it reports as errors.
 *
 * The storage session is opened against a port nothing listens on: opening sends
 * nothing, and a tree this small fills neither a pack nor a part of the file list,
 * so the walk never reaches the network. The seal jobs run on libuv's thread pool
 * as in a backup; the list is read back with the repository's own reader.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "agent/agent.h"

#define ID "20261202T170127Z-9f3c2a1b7d4e6058"

struct fx {
    char dir[64];
    struct storage st;
    struct backup b;
    volatile sig_atomic_t stop;
    char *paths[4];
};

static void put(const char *dir, const char *name, const void *data, size_t len)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void mkdir_in(const char *dir, const char *name)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    assert_int_equal(mkdir(p, 0755), 0);
}

static void link_in(const char *dir, const char *target, const char *name)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    assert_int_equal(symlink(target, p), 0);
}

/* root/data: a.txt, copy.txt (a.txt's bytes), empty, link -> a.txt, dangling -> nowhere,
 * sub/big.bin (300,000 bytes), sub2/ (empty). */
static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof(*x));
    struct storage_opts so = {.repo = "s3:http://127.0.0.1:9/lode-walk-test"};
    struct util_err err = {0};
    char key[REPO_GENERATED_KEY_TEXT];
    static uint8_t big[300000];

    snprintf(x->dir, sizeof(x->dir), "/tmp/lode-walk-XXXXXX");
    assert_non_null(mkdtemp(x->dir));
    mkdir_in(x->dir, "data");
    char data[128];
    snprintf(data, sizeof(data), "%s/data", x->dir);
    put(data, "a.txt", "hello, walk\n", 12);
    put(data, "copy.txt", "hello, walk\n", 12);
    put(data, "empty", "", 0);
    link_in(data, "a.txt", "link");
    link_in(data, "/nowhere/at/all", "dangling");
    mkdir_in(data, "sub");
    mkdir_in(data, "sub2");
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)(i * 2654435761u >> 13);
    put(data, "sub/big.bin", big, sizeof(big));

    setenv("UV_THREADPOOL_SIZE", "4", 1); /* POOL_THREADS, read when the pool starts */
    setenv("AWS_ACCESS_KEY_ID", "walk-test", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "walk-test-secret", 1);
    assert_int_equal(storage_open(&x->st, &so, &err), 0);
    repo_key_generate(key);
    assert_int_equal(repo_config_create_generated(&x->st.config, key, strlen(key), &err), 0);

    struct backup *b = &x->b;
    b->st = &x->st;
    b->keys = &x->st.config.keys;
    b->root = x->dir;
    b->stop = &x->stop;
    b->deadline_ns = uv_hrtime() + 600ull * 1000000000ull;
    memcpy(b->id, ID, sizeof(b->id));
    assert_int_equal(repo_source_set(&b->src, "ops", "web", "node-1", &err), 0);
    repo_merge_init(&b->merge, NULL);
    backup_list_init(b);
    backup_store_init(b, 0);
    *state = x;
    return 0;
}

/*
 * The seal jobs ran on libuv's pool, whose threads live until the process ends; each
 * holds OpenSSL's per-thread random generator, which OpenSSL's exit handler would
 * leave unreachable (valgrind: definitely lost). One job per pool thread, held at a
 * barrier so that every thread takes one, lets each thread free its own.
 */
#define POOL_THREADS 4
static uv_barrier_t pool_barrier;

static void thread_stop_work(uv_work_t *req)
{
    OPENSSL_thread_stop();
    uv_barrier_wait(&pool_barrier);
}

static unsigned pool_done;

static void thread_stop_done(uv_work_t *req, int status)
{
    pool_done++;
}

static void pool_release_openssl(uv_loop_t *loop)
{
    uv_work_t reqs[POOL_THREADS];
    assert_int_equal(uv_barrier_init(&pool_barrier, POOL_THREADS), 0);
    for (size_t i = 0; i < POOL_THREADS; i++)
        assert_int_equal(uv_queue_work(loop, &reqs[i], thread_stop_work, thread_stop_done), 0);
    pool_done = 0;
    while (pool_done < POOL_THREADS)
        uv_run(loop, UV_RUN_ONCE);
    uv_barrier_destroy(&pool_barrier);
}

static int teardown(void **state)
{
    struct fx *x = *state;
    char cmd[128];
    backup_store_close(&x->b);
    pool_release_openssl(s3_sync_loop(x->st.s3));
    storage_close(&x->st);
    backup_store_release(&x->b);
    backup_list_release(&x->b);
    repo_merge_free(&x->b.merge);
    for (size_t i = 0; i < x->b.nerrs; i++) {
        free(x->b.errs[i].path);
        free(x->b.errs[i].message);
    }
    free(x->b.errs);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", x->dir);
    assert_int_equal(system(cmd), 0);
    free(x);
    return 0;
}

/* The metadata chunks of the walk are still in the metadata pack being filled. */
static int pack_fetch(void *arg, const struct repo_mref *ref, uint8_t *sealed, struct util_err *err)
{
    const struct repo_pack_writer *w = arg;
    assert_true((size_t)ref->offset + ref->stored <= w->buf.len);
    memcpy(sealed, (const uint8_t *)w->buf.data + ref->offset, ref->stored);
    return 0;
}

/* The walk's file list, read back: n records into out (the caller frees each). */
static size_t read_list(struct fx *x, struct repo_file *out, size_t max)
{
    struct repo_files_reader r;
    struct repo_tree_reader tr;
    struct repo_root root;
    struct util_err err = {0};
    size_t n = 0;
    int rc;

    assert_int_equal(repo_files_writer_finish(&x->b.list, &root, &err), 0);
    repo_tree_reader_init(&tr, x->b.keys, REPO_TREE_FILES, &root, pack_fetch, &x->b.mp);
    repo_files_reader_tree(&r, &tr);
    while (n < max && (rc = repo_files_reader_next(&r, &out[n], &err)) == 1)
        n++;
    assert_true(n < max);
    repo_files_reader_free(&r);
    repo_tree_reader_free(&tr);
    return n;
}

static void free_list(struct repo_file *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        repo_file_free(&v[i]);
}

static void test_walk_records_the_tree_in_path_order(void **state)
{
    struct fx *x = *state;
    struct repo_file v[32];
    char *paths[] = {"/data"};
    static const struct {
        const char *path;
        enum repo_ftype type;
        uint64_t size;
    } want[] = {
        {"/data", REPO_FT_DIR, 0},
        {"/data/a.txt", REPO_FT_FILE, 12},
        {"/data/copy.txt", REPO_FT_FILE, 12},
        {"/data/dangling", REPO_FT_SYMLINK, 0},
        {"/data/empty", REPO_FT_FILE, 0},
        {"/data/link", REPO_FT_SYMLINK, 0},
        {"/data/sub", REPO_FT_DIR, 0},
        {"/data/sub/big.bin", REPO_FT_FILE, 300000},
        {"/data/sub2", REPO_FT_DIR, 0},
    };

    x->b.paths = paths;
    x->b.npaths = 1;
    assert_true(backup_walk(&x->b));
    assert_int_equal(x->b.fatal, 0);
    assert_int_equal(x->b.nerrs, 0);
    size_t n = read_list(x, v, 32);
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(v[i].path, want[i].path);
        assert_int_equal(v[i].type, want[i].type);
        assert_int_equal(v[i].size, want[i].size);
    }
    /* Symlinks are recorded, never followed: the target as written. */
    assert_string_equal(v[3].target, "/nowhere/at/all");
    assert_string_equal(v[5].target, "a.txt");
    /* An empty file has no chunks; the big one is cut into several. */
    assert_int_equal(v[4].nchunks, 0);
    assert_true(v[7].nchunks >= 1);
    /* Two files with the same bytes name the same chunk, stored once. */
    assert_int_equal(v[1].nchunks, 1);
    assert_memory_equal(v[1].chunks[0], v[2].chunks[0], REPO_HASH_LEN);
    assert_int_equal(chunkidx_new_count(&x->b.idx), 1 + v[7].nchunks);
    assert_int_equal(x->b.files, 4);     /* regular files: a.txt, copy.txt, empty, big.bin */
    assert_int_equal(x->b.new_files, 4); /* no parent: every file is new */
    assert_int_equal(x->b.bytes, 12 + 12 + 300000);
    free_list(v, n);
}

static void test_walk_nested_and_missing_paths(void **state)
{
    struct fx *x = *state;
    struct repo_file v[32];
    /* Sorted as cmd_backup sorts them: a nested path is walked with its parent, once;
     * a missing one is an error of the snapshot, not of the run. */
    char *paths[] = {"/data/sub", "/data/sub/big.bin", "/missing"};

    x->b.paths = paths;
    x->b.npaths = 3;
    assert_true(backup_walk(&x->b));
    assert_int_equal(x->b.fatal, 0);
    size_t n = read_list(x, v, 32);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].path, "/data/sub");
    assert_string_equal(v[1].path, "/data/sub/big.bin");
    assert_int_equal(x->b.nerrs, 1);
    assert_string_equal(x->b.errs[0].path, "/missing");
    assert_non_null(strstr(x->b.errs[0].message, "does not exist"));
    free_list(v, n);
}

static void test_walk_stops_when_asked(void **state)
{
    struct fx *x = *state;
    char *paths[] = {"/data"};

    x->b.paths = paths;
    x->b.npaths = 1;
    x->stop = 1;
    assert_false(backup_walk(&x->b));
    assert_int_not_equal(x->b.fatal, 0);
    assert_non_null(strstr(x->b.fatal_msg, "stopped by a signal"));
}

static void test_walk_refuses_a_missing_root(void **state)
{
    struct fx *x = *state;
    char *paths[] = {"/data"};

    x->b.paths = paths;
    x->b.npaths = 1;
    x->b.root = "/nonexistent/lode-walk-root";
    assert_false(backup_walk(&x->b));
    assert_int_equal(x->b.fatal, UTIL_EIO);
    assert_non_null(strstr(x->b.fatal_msg, "cannot open --root"));
}

/* Hard links, across directories and of a FIFO: the first path of an inode is recorded
 * plainly, every later one names it and keeps its own chunks. */
static void test_walk_records_hard_links(void **state)
{
    struct fx *x = *state;
    struct repo_file v[32];
    char *paths[] = {"/links"};
    char dir[128], a[192], b[192];
    static const struct {
        const char *path, *link;
    } want[] = {
        {"/links", ""},           {"/links/a", ""},
        {"/links/fifo", ""},      {"/links/fifo2", "/links/fifo"},
        {"/links/sub", ""},       {"/links/sub/b", "/links/a"},
        {"/links/z", "/links/a"},
    };

    mkdir_in(x->dir, "links");
    snprintf(dir, sizeof(dir), "%s/links", x->dir);
    put(dir, "a", "linked bytes", 12);
    mkdir_in(dir, "sub");
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/sub/b", dir);
    assert_int_equal(link(a, b), 0);
    snprintf(b, sizeof(b), "%s/z", dir);
    assert_int_equal(link(a, b), 0);
    snprintf(a, sizeof(a), "%s/fifo", dir);
    snprintf(b, sizeof(b), "%s/fifo2", dir);
    assert_int_equal(mkfifo(a, 0600), 0);
    assert_int_equal(link(a, b), 0);
    x->b.paths = paths;
    x->b.npaths = 1;
    assert_true(backup_walk(&x->b));
    assert_int_equal(x->b.nerrs, 0);
    size_t n = read_list(x, v, 32);
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(v[i].path, want[i].path);
        assert_string_equal(v[i].link, want[i].link);
    }
    /* Each file keeps its chunks, so one restored without the other is whole. */
    assert_int_equal(v[5].nchunks, 1);
    assert_memory_equal(v[1].chunks[0], v[5].chunks[0], REPO_HASH_LEN);
    free_list(v, n);
}

/* Without its chunk index (no directory to make its files in) a backup does not start. */
static void test_no_chunk_index_no_backup(void **state)
{
    struct fx *x = *state;
    backup_store_close(&x->b);
    setenv("TMPDIR", "/nonexistent-lode-tmp", 1);
    backup_store_init(&x->b, 0);
    unsetenv("TMPDIR");
    assert_int_equal(x->b.fatal, UTIL_EIO);
    assert_non_null(
        strstr(x->b.fatal_msg, "cannot create the chunk index's file in /nonexistent-lode-tmp"));
    assert_false(x->b.idx_open);
    assert_true(backup_should_stop(&x->b));
}

/*
 * The index's file failing in the walk stops the backup with its message: a parent of
 * 1,535 chunks is on the file (written through a descriptor that cannot read), and the
 * walk's new chunks grow the table past 1,536, whose rebuild reads the file back.
 */
static void test_walk_stops_when_the_chunk_index_fails(void **state)
{
    struct fx *x = *state;
    struct util_err err = {0};
    uint8_t id[REPO_HASH_LEN] = {1};
    char *paths[] = {"/data"};
    char tmp[] = "/tmp/lode-walk-idx-XXXXXX";
    int fd = mkstemp(tmp);

    assert_true(fd >= 0);
    close(fd);
    close(x->b.idx.recs.fd);
    x->b.idx.recs.fd = open(tmp, O_WRONLY | O_CLOEXEC);
    unlink(tmp);
    assert_true(x->b.idx.recs.fd >= 0);
    assert_int_equal(chunkidx_parent_cb(&x->b.idx, id, NULL, &err), 0);
    for (uint32_t i = 0; i < 1535; i++) {
        struct repo_chunk c = {.stored = 100, .plain = 50};
        memcpy(c.hash, &i, sizeof(i));
        c.hash[31] = 0xee;
        assert_int_equal(chunkidx_parent_cb(&x->b.idx, NULL, &c, &err), 0);
    }
    x->b.paths = paths;
    x->b.npaths = 1;
    assert_false(backup_walk(&x->b));
    assert_int_equal(x->b.fatal, UTIL_EIO);
    assert_non_null(strstr(x->b.fatal_msg, "cannot read the chunk index's file in "));
}

/*
 * Small files are sealed in batches (backup.h): 300 files of distinct bytes, 0 to
 * 1,499 long, make three batches of small chunks, and a file of 600,000 bytes one
 * chunk larger than a batch. Once drained, every new chunk is in the pack being
 * filled, opens with its entry as the bytes its file names, and is counted once.
 */
#define MANY 300
static void test_walk_seals_small_files_in_batches(void **state)
{
    struct fx *x = *state;
    struct repo_file *v = calloc(MANY + 8, sizeof(*v));
    char *paths[] = {"/many"};
    char dir[128], name[32];
    static uint8_t big[600000];
    uint8_t body[1500], digest[REPO_HASH_LEN];
    uint64_t total = 0;
    size_t nonempty = 0;

    mkdir_in(x->dir, "many");
    snprintf(dir, sizeof(dir), "%s/many", x->dir);
    for (size_t i = 0; i < MANY; i++) {
        size_t len = (i * 7919) % sizeof(body);
        for (size_t j = 0; j < len; j++)
            body[j] = (uint8_t)(i * 31 + j * 17 + (j >> 8));
        body[0] = (uint8_t)i; /* distinct even where the pattern repeats */
        if (len > 1)
            body[1] = (uint8_t)(i >> 8);
        snprintf(name, sizeof(name), "f%03zu", i);
        put(dir, name, body, len);
        total += len;
        nonempty += len > 0;
    }
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)(i * 2654435761u >> 11);
    put(dir, "zbig", big, sizeof(big));
    total += sizeof(big);

    x->b.paths = paths;
    x->b.npaths = 1;
    assert_true(backup_walk(&x->b));
    assert_int_equal(x->b.nerrs, 0);
    assert_true(backup_store_drain(&x->b));
    assert_int_equal(x->b.jobs, 0);
    assert_int_equal(x->b.job_bytes, 0);
    assert_null(x->b.gather);

    size_t n = read_list(x, v, MANY + 8);
    assert_int_equal(n, 1 + MANY + 1);
    for (size_t i = 1; i < n; i++) {
        char path[256];
        uint8_t *data;
        FILE *f;
        snprintf(path, sizeof(path), "%s%s", x->dir, v[i].path);
        data = malloc(v[i].size ? v[i].size : 1);
        f = fopen(path, "rb");
        assert_non_null(f);
        assert_int_equal(fread(data, 1, v[i].size, f), v[i].size);
        fclose(f);
        assert_int_equal(v[i].nchunks, v[i].size > 0 ? 1 : 0);
        if (v[i].size > 0) {
            SHA256(data, v[i].size, digest);
            assert_memory_equal(v[i].chunks[0], digest, REPO_HASH_LEN);
        }
        free(data);
    }
    /* Every chunk queued was sealed into the pack, in one piece each. */
    assert_int_equal(chunkidx_new_count(&x->b.idx), nonempty + 1);
    assert_int_equal(chunkidx_members(&x->b.idx), nonempty + 1);
    assert_int_equal(x->b.new_bytes, total);
    for (size_t i = 0; i < chunkidx_members(&x->b.idx); i++) {
        const struct repo_chunk *c = chunkidx_member(&x->b.idx, i);
        struct util_err err = {0};
        uint8_t *out = malloc(c->plain ? c->plain : 1);
        assert_true((size_t)c->offset + c->stored <= x->b.pw.buf.len);
        assert_int_equal(
            repo_blob_open(x->b.keys, c, (const uint8_t *)x->b.pw.buf.data + c->offset, out, &err),
            0);
        free(out);
    }
    free_list(v, n);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_walk_records_the_tree_in_path_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_nested_and_missing_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_records_hard_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_seals_small_files_in_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_stops_when_asked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_refuses_a_missing_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_chunk_index_no_backup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_stops_when_the_chunk_index_fails, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
