/*
 * Fuzz target for the decoders of sealed objects: a file list frame, a chunk set
 * and a pack table (whole, and from its tail). The input is the plain content; the target seals it
 * under a fixed key exactly as the writer would, so the fuzzer reaches the parsers behind
 * authentication (where a hostile key holder, or a bug in an older writer, could
 * put anything). The first byte picks the decoder. Findings are crashes, leaks
 * and refusals without a message; a file list must come back in path order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

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

static void fuzz_files(const struct repo_keys *k, const uint8_t *in, size_t n)
{
    /* One final frame: "LODEFIL1", length, seal(zstd(records)) with the frame's
     * associated data (magic, id, index 0, final). */
    size_t bound = ZSTD_compressBound(n);
    uint8_t *z = malloc(bound), aad[8 + 33 + 5];
    size_t zn = ZSTD_compress(z, bound, in, n, 1);
    check(!ZSTD_isError(zn));
    uint8_t *obj = malloc(12 + zn + REPO_SEAL_EXTRA);
    memcpy(obj, "LODEFIL1", 8);
    put32(obj + 8, (uint32_t)(zn + REPO_SEAL_EXTRA));
    memcpy(aad, "LODEFIL1", 8);
    memcpy(aad + 8, ID, 33);
    memset(aad + 41, 0, 4);
    aad[45] = 1;
    repo_seal(k, aad, sizeof(aad), z, zn, obj + 12);
    struct repo_files_reader r;
    struct util_err err = {0};
    struct repo_file f;
    int rc;
    check(repo_files_reader_init(&r, k, ID, obj, 12 + zn + REPO_SEAL_EXTRA, &err) == 0);
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
    free(obj);
    free(z);
}

static void fuzz_chunks(const struct repo_keys *k, const uint8_t *in, size_t n)
{
    uint8_t aad[8 + 33], *obj = malloc(n + REPO_SEAL_EXTRA);
    struct repo_chunkset s;
    struct util_err err = {0};
    memcpy(aad, "LODECHK1", 8);
    memcpy(aad + 8, ID, 33);
    repo_seal(k, aad, sizeof(aad), in, n, obj);
    if (repo_chunkset_decode(&s, k, ID, obj, n + REPO_SEAL_EXTRA, &err) == 0) {
        for (size_t i = 0; i < s.n; i++) {
            check(s.v[i].pack < s.npacks);
            check(repo_chunkset_find(&s, s.v[i].hash) == &s.v[i]);
        }
        repo_chunkset_free(&s);
    } else {
        check(err.msg[0] != '\0' && s.v == NULL);
    }
    free(obj);
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
    switch (data[0] % 3) {
    case 0:
        fuzz_files(&k, data + 1, size - 1);
        break;
    case 1:
        fuzz_chunks(&k, data + 1, size - 1);
        break;
    default:
        fuzz_pack(&k, data + 1, size - 1);
        break;
    }
    return 0;
}
