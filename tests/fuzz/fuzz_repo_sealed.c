/*
 * Fuzz target for the decoders of sealed objects: a file list leaf or index chunk,
 * a chunk set leaf and a pack table (whole, and from its tail). The input is the plain content; the
 * target seals it under a fixed key exactly as the writer would, so the fuzzer reaches the parsers
 * behind authentication (where a hostile key holder, or a bug in an older writer, could put
 * anything). The first byte picks the decoder. Findings are crashes, leaks and refusals without a
 * message; a file list must come back in path order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "repo/repo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ID "20261202T170127Z-9f3c2a1b7d4e6058"

static void check(bool ok)
{
    if (!ok)
        abort();
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* One metadata chunk, sealed as a writer would: the tree's header and the input. */
struct fuzz_chunk {
    struct repo_root root;
    uint8_t *sealed;
};

static void fuzz_seal(const struct repo_keys *k, uint8_t tree, uint8_t level, const uint8_t *in,
                      size_t n, struct fuzz_chunk *c)
{
    uint8_t *plain = malloc(n + 2), flags;
    size_t slen;
    plain[0] = tree;
    plain[1] = level;
    memcpy(plain + 2, in, n);
    memset(&c->root, 0, sizeof(c->root));
    SHA256(plain, n + 2, c->root.ref.hash);
    repo_blob_seal(k, 1, c->root.ref.hash, plain, n + 2, &c->sealed, &slen, &flags);
    memcpy(c->root.ref.run, ID, sizeof(c->root.ref.run));
    c->root.ref.stored = (uint32_t)slen;
    c->root.ref.plain = (uint32_t)(n + 2);
    c->root.ref.flags = flags;
    c->root.depth = level;
    free(plain);
}

/* Only the one chunk exists: any other place an index names is missing. */
static int fuzz_fetch(void *arg, const struct repo_mref *ref, uint8_t *sealed, struct util_err *err)
{
    const struct fuzz_chunk *c = arg;
    if (memcmp(ref, &c->root.ref, sizeof(*ref)) != 0)
        return util_err_set(err, UTIL_EIO, "no such chunk");
    memcpy(sealed, c->sealed, ref->stored);
    return 0;
}

/* A file list leaf (level 0) or index chunk (level 1) holding the input. */
static void fuzz_files(const struct repo_keys *k, const uint8_t *in, size_t n, uint8_t level)
{
    struct fuzz_chunk c;
    struct repo_tree_reader tr;
    struct repo_files_reader r;
    struct util_err err = {0};
    struct repo_file f;
    int rc;
    fuzz_seal(k, REPO_TREE_FILES, level, in, n, &c);
    repo_tree_reader_init(&tr, k, REPO_TREE_FILES, &c.root, fuzz_fetch, &c);
    repo_files_reader_tree(&r, &tr);
    char *last = NULL;
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1) {
        check(f.path[0] == '/');
        check(!last || repo_path_cmp(last, f.path) < 0);
        free(last);
        last = strdup(f.path);
        repo_file_free(&f);
    }
    if (rc < 0)
        check(err.msg[0] != '\0');
    free(last);
    repo_files_reader_free(&r);
    repo_tree_reader_free(&tr);
    free(c.sealed);
}

static void fuzz_chunks(const struct repo_keys *k, const uint8_t *in, size_t n)
{
    struct fuzz_chunk c;
    struct repo_tree_reader tr;
    struct repo_chunkset s;
    struct util_err err = {0};
    fuzz_seal(k, REPO_TREE_CHUNKS, 0, in, n, &c);
    repo_tree_reader_init(&tr, k, REPO_TREE_CHUNKS, &c.root, fuzz_fetch, &c);
    if (repo_chunkset_read(&s, &tr, &err) == 0) {
        /* A pack in several runs is one pack: each once, by hash. */
        for (size_t i = 1; i < s.npacks; i++)
            check(memcmp(s.packs[i - 1], s.packs[i], REPO_HASH_LEN) < 0);
        for (size_t i = 0; i < s.n; i++) {
            check(s.v[i].pack < s.npacks);
            check(repo_chunkset_find(&s, s.v[i].hash) == &s.v[i]);
        }
        repo_chunkset_free(&s);
    } else {
        check(err.msg[0] != '\0' && s.v == NULL);
    }
    repo_tree_reader_free(&tr);
    free(c.sealed);
}

static void fuzz_pack(const struct repo_keys *k, const uint8_t *in, size_t n)
{
    /* Blobs region of 64 zero bytes, then the sealed table, length, end magic. */
    size_t len = 8 + 64 + n + REPO_SEAL_EXTRA + 12, count;
    uint8_t *pack = calloc(1, len);
    struct repo_chunk *v;
    struct util_err err = {0};
    memcpy(pack, "LODEPAK1", 8);
    repo_seal(k, "lodestore pack table", 20, in, n, pack + 72);
    put32(pack + len - 12, (uint32_t)(n + REPO_SEAL_EXTRA));
    memcpy(pack + len - 8, "LODEPEND", 8);
    int rc = repo_pack_read_table(k, pack, len, &v, &count, &err);
    if (rc == 0) {
        for (size_t i = 0; i < count; i++)
            check(v[i].offset + (size_t)v[i].stored <= 72);
    } else {
        check(err.msg[0] != '\0' && v == NULL);
    }
    /* The table read from the tail (as a ranged GET gives it) is the same one. */
    struct repo_chunk *t;
    size_t tcount, need, tail = n + REPO_SEAL_EXTRA + 12;
    int trc = repo_pack_read_tail(k, pack + len - tail, tail, len, &need, &t, &tcount, &err);
    check(trc == rc && need == 0);
    if (trc == 0) {
        check(tcount == count && (count == 0 || memcmp(t, v, count * sizeof(*v)) == 0));
        free(t);
    }
    free(v);
    free(pack);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct repo_keys k;
    uint8_t master[32] = {1};
    if (size < 1)
        return 0;
    repo_keys_derive(&k, master);
    switch (data[0] % 4) {
    case 0:
        fuzz_files(&k, data + 1, size - 1, 0);
        break;
    case 3:
        fuzz_files(&k, data + 1, size - 1, 1);
        break;
    case 1:
        fuzz_chunks(&k, data + 1, size - 1);
        break;
    case 2:
        fuzz_pack(&k, data + 1, size - 1);
        break;
    }
    return 0;
}
