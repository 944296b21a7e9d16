/*
 * bench_pipeline: the per-core throughput of each step a backup applies to file
 * data, with lode's own code (internal/chunker and internal/repo) on one thread:
 *
 *   chunk     chunker_cut() over the sample (FastCDC, 512 KiB / 1 MiB / 8 MiB)
 *   hash      SHA-256 of each chunk (OpenSSL, as chunks are addressed)
 *   compress  zstd level 1 of each chunk (the repository's "zstd-1"), alone
 *   encrypt   repo_seal() of each chunk (AES-256-GCM), alone
 *   seal      repo_blob_seal(): compress where it pays, then encrypt (what a backup
 *             does to each new chunk)
 *   all       chunk + hash + seal, one pass: the CPU cost per byte of new data
 *
 *   bench_pipeline NAME FILE
 *
 * FILE is read into memory first (the disk is not measured). Each step's rate is
 * bytes of input per second of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID),
 * so it holds on a machine shared with other work; wall time is printed beside it.
 * One "key=value" line per step.
 */
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "chunker/chunker.h"
#include "repo/repo.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct span {
    size_t off, len;
};

static void report(const char *name, const char *step, size_t bytes, double cpu, double wall,
                   const char *extra)
{
    printf("sample=%s step=%s bytes=%zu cpu_s=%.3f wall_s=%.3f mb_per_cpu_s=%.1f%s%s\n", name, step,
           bytes, cpu, wall, (double)bytes / 1e6 / cpu, extra[0] ? " " : "", extra);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_pipeline NAME FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (f == NULL) {
        perror(argv[2]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size <= 0) {
        fprintf(stderr, "bench_pipeline: %s is empty\n", argv[2]);
        fclose(f);
        return 2;
    }
    uint8_t *data = util_malloc((size_t)size);
    if (fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "bench_pipeline: short read of %s\n", argv[2]);
        fclose(f);
        return 2;
    }
    fclose(f);
    size_t len = (size_t)size;
    /* Each step runs over the sample enough times to process about 512 MiB, so its
     * CPU time is long enough to measure. */
    size_t rounds = 1 + (size_t)(1u << 29) / len, total = len * rounds;

    uint8_t master[32];
    for (size_t i = 0; i < sizeof(master); i++)
        master[i] = (uint8_t)(i * 37 + 11);
    struct repo_keys keys;
    repo_keys_derive(&keys, master);
    struct chunker ck;
    struct util_err err;
    if (chunker_init(&ck, CHUNKER_MIN, CHUNKER_AVG, CHUNKER_MAX, keys.gear_seed, &err) != 0) {
        fprintf(stderr, "bench_pipeline: %s\n", err.msg);
        return 2;
    }

    /* chunk */
    size_t cap = len / CHUNKER_MIN + 2, n = 0;
    struct span *sp = util_malloc(cap * sizeof(*sp));
    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
    for (size_t r = 0; r < rounds; r++) {
        n = 0;
        for (size_t off = 0; off < len;) {
            size_t cut = chunker_cut(&ck, data + off, len - off);
            sp[n++] = (struct span){off, cut};
            off += cut;
        }
    }
    double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0, wall = clock_s(CLOCK_MONOTONIC) - w0;
    char extra[128];
    snprintf(extra, sizeof(extra), "chunks=%zu avg_chunk=%zu rounds=%zu", n, len / n, rounds);
    report(argv[1], "chunk", total, cpu, wall, extra);

    /* hash */
    uint8_t(*hashes)[REPO_HASH_LEN] = util_malloc(n * REPO_HASH_LEN);
    c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
    for (size_t r = 0; r < rounds; r++)
        for (size_t i = 0; i < n; i++)
            SHA256(data + sp[i].off, sp[i].len, hashes[i]);
    report(argv[1], "hash", total, clock_s(CLOCK_THREAD_CPUTIME_ID) - c0,
           clock_s(CLOCK_MONOTONIC) - w0, "");

    /* compress */
    uint8_t *z = util_malloc(ZSTD_compressBound(CHUNKER_MAX));
    size_t zbytes = 0;
    c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
    for (size_t r = 0; r < rounds; r++) {
        for (size_t i = 0; i < n; i++) {
            size_t zn =
                ZSTD_compress(z, ZSTD_compressBound(sp[i].len), data + sp[i].off, sp[i].len, 1);
            if (ZSTD_isError(zn)) {
                fprintf(stderr, "bench_pipeline: zstd: %s\n", ZSTD_getErrorName(zn));
                return 1;
            }
            zbytes += zn;
        }
    }
    cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0, wall = clock_s(CLOCK_MONOTONIC) - w0;
    snprintf(extra, sizeof(extra), "ratio=%.3f", (double)zbytes / (double)total);
    report(argv[1], "compress", total, cpu, wall, extra);
    free(z);

    /* encrypt */
    uint8_t *sealed = util_malloc(CHUNKER_MAX + REPO_SEAL_EXTRA);
    c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
    for (size_t r = 0; r < rounds; r++)
        for (size_t i = 0; i < n; i++)
            repo_seal(&keys, hashes[i], REPO_HASH_LEN, data + sp[i].off, sp[i].len, sealed);
    report(argv[1], "encrypt", total, clock_s(CLOCK_THREAD_CPUTIME_ID) - c0,
           clock_s(CLOCK_MONOTONIC) - w0, "");
    free(sealed);

    /* seal: compress where it pays, then encrypt */
    size_t stored = 0, raw = 0;
    c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
    for (size_t r = 0; r < rounds; r++) {
        for (size_t i = 0; i < n; i++) {
            uint8_t *out, flags;
            size_t outlen;
            repo_blob_seal(&keys, 1, hashes[i], data + sp[i].off, sp[i].len, &out, &outlen, &flags);
            stored += outlen;
            raw += (flags & REPO_BLOB_ZSTD) ? 0 : 1;
            free(out);
        }
    }
    cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0, wall = clock_s(CLOCK_MONOTONIC) - w0;
    snprintf(extra, sizeof(extra), "stored_ratio=%.3f raw_chunks=%zu",
             (double)stored / (double)total, raw);
    report(argv[1], "seal", total, cpu, wall, extra);

    /* all: one pass as a backup does it */
    c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
    for (size_t r = 0; r < rounds; r++) {
        for (size_t off = 0; off < len;) {
            size_t cut = chunker_cut(&ck, data + off, len - off);
            uint8_t h[REPO_HASH_LEN], *out, flags;
            size_t outlen;
            SHA256(data + off, cut, h);
            repo_blob_seal(&keys, 1, h, data + off, cut, &out, &outlen, &flags);
            free(out);
            off += cut;
        }
    }
    report(argv[1], "all", total, clock_s(CLOCK_THREAD_CPUTIME_ID) - c0,
           clock_s(CLOCK_MONOTONIC) - w0, "");

    free(hashes);
    free(sp);
    free(data);
    return 0;
}
