/*
 * The repository format: every object round-trips, every sealed object refuses a
 * changed byte, a wrong key is a clear error, and decoders refuse what they did
 * not write.
 */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/sha.h>
#include <zstd.h>

#include "mstore.h"
#include "repo/repo.h"

#define ID1 "20261202T170127Z-9f3c2a1b7d4e6058"
#define ID2 "20261203T170127Z-0000000000000001"

static void test_config_round_trip_and_wrong_key(void **state)
{
    struct repo_config c, d;
    struct util_err err = {0};
    assert_int_equal(repo_config_create(&c, "secret", 6, REPO_SCRYPT_15_8_1, &err), 0);
    char *json = repo_config_encode(&c);
    assert_non_null(strstr(json, "\"cipher\": \"aes-256-gcm\""));
    assert_null(strstr(json, "secret"));
    assert_int_equal(repo_config_decode(&d, json, strlen(json), &err), 0);
    assert_int_equal(d.chunk_avg, 1024 * 1024);
    assert_string_equal(d.compression, "zstd-1");
    assert_int_equal(repo_config_unlock(&d, "secret", 6, &err), 0);
    assert_memory_equal(&c.keys, &d.keys, sizeof(c.keys));
    /* A wrong key says so. */
    assert_int_equal(repo_config_decode(&d, json, strlen(json), &err), 0);
    assert_int_equal(repo_config_unlock(&d, "secreT", 6, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "wrong key"));
    free(json);
    assert_int_equal(repo_config_create(&c, "", 0, REPO_SCRYPT_15_8_1, &err), UTIL_EINVAL);
}

/*
 * A config.json with scrypt's members (costs: "N": .., "r": .., "p": ..) made from a
 * generated key's document, without paying for scrypt (valgrind runs these tests): only
 * decoding is tested with it, never unlocking.
 */
static char *scrypt_doc(const char *costs)
{
    struct repo_config c;
    struct util_err err = {0};
    char key[REPO_GENERATED_KEY_TEXT];
    repo_key_generate(key);
    assert_int_equal(repo_config_create_generated(&c, key, 44, &err), 0);
    char *json = repo_config_encode(&c);
    char *at = strstr(json, "\"algorithm\": \"hmac-sha256\",");
    assert_non_null(at);
    char *doc = util_asprintf("%.*s\"algorithm\": \"scrypt\", %s,%s", (int)(at - json), json, costs,
                              at + strlen("\"algorithm\": \"hmac-sha256\","));
    free(json);
    return doc;
}

static double test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * A config.json whose scrypt cost was raised to N = 2^20 (1 GiB with r = 8; with r = 32
 * and p = 16, 4 GiB) is refused before anything is derived: the opening that storage.c
 * does (decode, then unlock) ends in well under a second and the process's peak memory
 * grows by less than 64 MiB. Without the list, the unlock would allocate the cost.
 */
static void test_config_costly_kdf_refused(void **state)
{
    struct repo_config d;
    struct util_err err = {0};
    struct rusage before, after;
    static const char *const costs[] = {"\"N\": 1048576, \"r\": 8, \"p\": 1",
                                        "\"N\": 1048576, \"r\": 32, \"p\": 16",
                                        "\"N\": 32768, \"r\": 8, \"p\": 16"};
    for (size_t i = 0; i < sizeof(costs) / sizeof(costs[0]); i++) {
        char *doc = scrypt_doc(costs[i]);
        assert_int_equal(getrusage(RUSAGE_SELF, &before), 0);
        double t0 = test_now();
        int rc = repo_config_decode(&d, doc, strlen(doc), &err);
        if (rc == 0)
            rc = repo_config_unlock(&d, "secret", 6, &err);
        double took = test_now() - t0;
        assert_int_equal(getrusage(RUSAGE_SELF, &after), 0);
        assert_int_equal(rc, UTIL_EINVAL);
        if (strstr(err.msg, "is not one lode accepts") == NULL)
            fail_msg("cost %zu: message \"%s\"", i, err.msg);
        if (took > 0.25)
            fail_msg("cost %zu: refused after %.3f s", i, took);
        if (after.ru_maxrss - before.ru_maxrss >= 64 * 1024) /* KiB */
            fail_msg("cost %zu: peak memory grew by %ld KiB", i,
                     after.ru_maxrss - before.ru_maxrss);
        free(doc);
    }
}

/* The default for new repositories is the stronger set, and both sets open. */
static void test_config_scrypt_sets(void **state)
{
    struct repo_config c, d;
    struct util_err err = {0};
    const struct repo_scrypt_params *def = repo_scrypt_params(REPO_SCRYPT_DEFAULT);
    assert_string_equal(def->name, "scrypt-15-8-3");
    assert_int_equal(def->n, 32768);
    assert_int_equal(def->r, 8);
    assert_int_equal(def->p, 3);
    assert_int_equal(repo_config_create(&c, "secret", 6, REPO_SCRYPT_DEFAULT, &err), 0);
    char *json = repo_config_encode(&c);
    assert_non_null(strstr(json, "\"N\": 32768,"));
    assert_non_null(strstr(json, "\"p\": 3,"));
    assert_int_equal(repo_config_decode(&d, json, strlen(json), &err), 0);
    assert_int_equal(d.scrypt_p, 3);
    assert_int_equal(repo_config_unlock(&d, "secret", 6, &err), 0);
    assert_memory_equal(d.keys.data, c.keys.data, sizeof(c.keys.data));
    free(json);
    /* A config that no decoder made (a caller's bug) is refused too, not derived. */
    d.scrypt_n = 1u << 20;
    assert_int_equal(repo_config_unlock(&d, "secret", 6, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "not one lode uses"));
}

static void test_config_generated_key(void **state)
{
    struct repo_config c, d;
    struct util_err err = {0};
    char key[REPO_GENERATED_KEY_TEXT], other[REPO_GENERATED_KEY_TEXT];
    repo_key_generate(key);
    repo_key_generate(other);
    assert_int_equal(strlen(key), 44);
    assert_string_not_equal(key, other);
    assert_int_equal(repo_config_create_generated(&c, key, 44, &err), 0);
    assert_int_equal(c.kdf, REPO_KDF_GENERATED);
    char *json = repo_config_encode(&c);
    /* No scrypt cost in the document: the kdf is the keyed hash, with its salt. */
    assert_non_null(strstr(json, "\"algorithm\": \"hmac-sha256\""));
    assert_null(strstr(json, "\"N\""));
    assert_int_equal(repo_config_decode(&d, json, strlen(json), &err), 0);
    assert_int_equal(d.kdf, REPO_KDF_GENERATED);
    assert_int_equal(repo_config_unlock(&d, key, 44, &err), 0);
    assert_memory_equal(d.keys.data, c.keys.data, sizeof(c.keys.data));
    /* Another generated key does not open it; a passphrase is refused by name. */
    assert_int_equal(repo_config_decode(&d, json, strlen(json), &err), 0);
    assert_int_equal(repo_config_unlock(&d, other, 44, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "does not open"));
    assert_int_equal(repo_config_decode(&d, json, strlen(json), &err), 0);
    assert_int_equal(repo_config_unlock(&d, "correct horse battery staple", 28, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "--generate-key"));
    char bad[45];
    memcpy(bad, key, 45);
    bad[10] = '*';
    assert_int_equal(repo_config_decode(&d, json, strlen(json), &err), 0);
    assert_int_equal(repo_config_unlock(&d, bad, 44, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "--generate-key"));
    /* Creating one from something that is not a generated key is refused. */
    assert_int_equal(repo_config_create_generated(&c, "short", 5, &err), UTIL_EINVAL);
    /* A scrypt repository's document is read as before, and a kdf mixing the two is not. */
    char *mixed = util_asprintf("%.*s\"algorithm\": \"hmac-sha256\", \"N\": 1024,%s",
                                (int)(strstr(json, "\"algorithm\": \"hmac") - json), json,
                                strstr(json, "\"algorithm\": \"hmac") + 31);
    assert_int_equal(repo_config_decode(&d, mixed, strlen(mixed), &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "kdf"));
    free(mixed);
    free(json);
    assert_int_equal(repo_config_create(&c, "secret", 6, REPO_SCRYPT_15_8_1, &err), 0);
    json = repo_config_encode(&c);
    assert_int_equal(repo_config_decode(&d, json, strlen(json), &err), 0);
    assert_int_equal(d.kdf, REPO_KDF_SCRYPT);
    assert_int_equal(repo_config_unlock(&d, "secret", 6, &err), 0);
    free(json);
}

static void test_config_rejects(void **state)
{
    struct util_err err = {0};
    char *json = scrypt_doc("\"N\": 32768, \"r\": 8, \"p\": 1");
    struct repo_config ok;
    assert_int_equal(repo_config_decode(&ok, json, strlen(json), &err), 0);
    assert_int_equal(ok.scrypt_n, 32768);
    static const struct {
        const char *from, *to, *msg;
    } edits[] = {
        {"\"format\": 2", "\"format\": 3", "format 3"},
        {"\"aes-256-gcm\"", "\"aes-128-cbc\"", "algorithm"},
        {"\"min\": 524288", "\"min\": 1", "out of range"},
        {"\"N\": 32768", "\"N\": 1048576", "N=1048576, r=8, p=1 is not one lode accepts"},
        {"\"N\": 32768", "\"N\": 1024", "is not one lode accepts"},
        {"\"r\": 8", "\"r\": 32", "r=32"},
        {"\"p\": 1", "\"p\": 16", "p=16"},
        {"\"p\": 1", "\"p\": -1", "not one lode accepts"},
        {"\"algorithm\": \"scrypt\"", "\"algorithm\": \"argon2\"", "argon2"},
        {"\"zstd-1\"", "\"zstd-x\"", "zstd-1..19"},
        {"\"keyCheck\": \"", "\"keyCheck\": \"zz", "malformed"},
        {"\"format\": 2,", "\"format\": 2, \"extra\": 1,", "extra"},
    };
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        struct repo_config d;
        char *at = strstr(json, edits[i].from);
        assert_non_null(at);
        char *bad = util_asprintf("%.*s%s%s", (int)(at - json), json, edits[i].to,
                                  at + strlen(edits[i].from));
        assert_int_equal(repo_config_decode(&d, bad, strlen(bad), &err), UTIL_EINVAL);
        if (strstr(err.msg, edits[i].msg) == NULL)
            fail_msg("edit %zu: message \"%s\" lacks \"%s\"", i, err.msg, edits[i].msg);
        free(bad);
    }
    struct repo_config d;
    assert_int_equal(repo_config_decode(&d, "{", 1, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "not JSON"));
    /* A repository of format 1 is refused, naming both versions and what to do. */
    char *at = strstr(json, "\"format\": 2");
    assert_non_null(at);
    at[10] = '1';
    assert_int_equal(repo_config_decode(&d, json, strlen(json), &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "this repository is format 1"));
    assert_non_null(strstr(err.msg, "reads format 2 only"));
    assert_non_null(strstr(err.msg, "lode init"));
    free(json);
}

static void test_key_file(void **state)
{
    char path[] = "/tmp/lode-test-keyXXXXXX";
    int fd = mkstemp(path);
    char *pass;
    size_t len;
    struct util_err err = {0};
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "hunter2\n", 8), 8);
    close(fd);
    assert_int_equal(repo_key_file_read(path, &pass, &len, &err), 0);
    assert_int_equal(len, 7);
    assert_string_equal(pass, "hunter2");
    free(pass);
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, "\n", 1), 1);
    close(fd);
    assert_int_equal(repo_key_file_read(path, &pass, &len, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "empty"));
    /* Open to group or others: refused, as ssh refuses such a private key, naming the fix;
     * mkstemp made it 0600, which is read. */
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, "hunter2\n", 8), 8);
    close(fd);
    static const mode_t open_modes[] = {0644, 0640, 0604, 0620, 0602, 0610};
    for (size_t i = 0; i < sizeof(open_modes) / sizeof(open_modes[0]); i++) {
        assert_int_equal(chmod(path, open_modes[i]), 0);
        assert_int_equal(repo_key_file_read(path, &pass, &len, &err), UTIL_EINVAL);
        assert_non_null(strstr(err.msg, "open to others"));
        assert_non_null(strstr(err.msg, "chmod 600"));
    }
    assert_int_equal(chmod(path, 0400), 0);
    assert_int_equal(repo_key_file_read(path, &pass, &len, &err), 0);
    assert_string_equal(pass, "hunter2");
    free(pass);
    /* Another owner's file is that owner's decision (a Secret's file read through fsGroup). */
    if (geteuid() == 0) {
        assert_int_equal(chmod(path, 0644), 0);
        assert_int_equal(chown(path, 4321, 4321), 0);
        assert_int_equal(repo_key_file_read(path, &pass, &len, &err), 0);
        free(pass);
    }
    /* A pipe is not a file anyone else can open later. */
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    assert_int_equal(write(pfd[1], "piped\n", 6), 6);
    close(pfd[1]);
    char fdpath[40];
    snprintf(fdpath, sizeof(fdpath), "/dev/fd/%d", pfd[0]);
    assert_int_equal(repo_key_file_read(fdpath, &pass, &len, &err), 0);
    assert_string_equal(pass, "piped");
    free(pass);
    close(pfd[0]);
    unlink(path);
    assert_int_equal(repo_key_file_read(path, &pass, &len, &err), UTIL_EIO);
}

static void test_seal_every_byte(void **state)
{
    struct repo_keys k = mstore_keys(1), other = mstore_keys(2);
    uint8_t sealed[5 + REPO_SEAL_EXTRA], out[5];
    struct util_err err = {0};
    repo_seal(&k, "aad", 3, "hello", 5, sealed);
    assert_int_equal(repo_unseal(&k, "aad", 3, sealed, sizeof(sealed), out, &err), 0);
    assert_memory_equal(out, "hello", 5);
    for (size_t i = 0; i < sizeof(sealed); i++) {
        sealed[i] ^= 0x01;
        assert_int_equal(repo_unseal(&k, "aad", 3, sealed, sizeof(sealed), out, &err), UTIL_EIO);
        sealed[i] ^= 0x01;
    }
    assert_int_equal(repo_unseal(&k, "aae", 3, sealed, sizeof(sealed), out, &err), UTIL_EIO);
    assert_int_equal(repo_unseal(&other, "aad", 3, sealed, sizeof(sealed), out, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "authentication failed"));
    assert_int_equal(repo_unseal(&k, "aad", 3, sealed, 10, out, &err), UTIL_EIO);
}

static uint8_t *random_bytes(size_t n, uint64_t s)
{
    uint8_t *d = util_malloc(n);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        d[i] = (uint8_t)(s >> 24);
    }
    return d;
}

/*
 * A sealer, kept for many chunks, makes what repo_blob_seal makes for each alone (and
 * the bytes of ZSTD_compress), but the nonce: for 200 chunks of text and noise of many sizes, at
 * levels 1 and 3 (more than the 64 nonces of one draw), the same flags and lengths, blobs that open
 * as their chunks, and no nonce twice.
 */
static void test_sealer_seals_as_repo_blob_seal(void **state)
{
    struct repo_keys k = mstore_keys(1);
    struct repo_sealer *s = repo_sealer_new(&k);
    uint8_t *noise = random_bytes(70000, 9), *text = util_malloc(70000), *out = util_malloc(70000);
    uint8_t nonces[200][12];

    for (size_t i = 0; i < 70000; i++)
        text[i] = "small files of a node "[i % 22];
    for (size_t i = 0; i < 200; i++) {
        size_t n = (i * 3491) % 70000 + 1;
        int level = i % 2 ? 3 : 1;
        const uint8_t *plain = i % 3 ? text + i : noise;
        uint8_t *a, *b, fa, fb;
        size_t la, lb;
        struct repo_chunk c = {0};
        struct util_err err = {0};
        if (plain == text + i && n > 70000 - i)
            n = 70000 - i;
        SHA256(plain, n, c.hash);
        repo_blob_seal(&k, level, c.hash, plain, n, &a, &la, &fa);
        repo_sealer_blob(s, level, c.hash, plain, n, &b, &lb, &fb);
        assert_int_equal(fa, fb);
        assert_int_equal(la, lb);
        if (fb & REPO_BLOB_ZSTD) {
            /* A context kept between chunks compresses as a fresh one. */
            size_t bound = ZSTD_compressBound(n);
            uint8_t *z = util_malloc(bound);
            assert_int_equal(ZSTD_compress(z, bound, plain, n, level), lb - REPO_SEAL_EXTRA);
            free(z);
        }
        c.stored = (uint32_t)lb;
        c.plain = (uint32_t)n;
        c.flags = fb;
        assert_int_equal(repo_blob_open(&k, &c, b, out, &err), 0);
        assert_memory_equal(out, plain, n);
        memcpy(nonces[i], b, 12);
        for (size_t j = 0; j < i; j++)
            assert_memory_not_equal(nonces[j], nonces[i], 12);
        free(a);
        free(b);
    }
    repo_sealer_free(s);
    free(noise);
    free(text);
    free(out);
}

static void test_blob_compressed_and_raw(void **state)
{
    struct repo_keys k = mstore_keys(1);
    size_t n = 100000, slen;
    uint8_t *text = util_malloc(n), *noise = random_bytes(n, 5), *sealed, flags, *out;
    struct repo_chunk c = {0};
    struct util_err err = {0};

    for (size_t i = 0; i < n; i++)
        text[i] = "lodestore backs up nodes "[i % 25];
    out = util_malloc(n);
    /* Text compresses: the flag is set and the blob is small. */
    SHA256(text, n, c.hash);
    repo_blob_seal(&k, 1, c.hash, text, n, &sealed, &slen, &flags);
    assert_int_equal(flags, REPO_BLOB_ZSTD);
    assert_true(slen < n / 10);
    c.stored = (uint32_t)slen;
    c.plain = (uint32_t)n;
    c.flags = flags;
    assert_int_equal(repo_blob_open(&k, &c, sealed, out, &err), 0);
    assert_memory_equal(out, text, n);
    /* The flag is bound: claiming raw fails. */
    c.flags = 0;
    assert_int_not_equal(repo_blob_open(&k, &c, sealed, out, &err), 0);
    c.flags = flags;
    /* So is the hash. */
    c.hash[0] ^= 1;
    assert_int_equal(repo_blob_open(&k, &c, sealed, out, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "authentication failed"));
    free(sealed);
    /* Noise does not compress: stored raw. */
    SHA256(noise, n, c.hash);
    repo_blob_seal(&k, 1, c.hash, noise, n, &sealed, &slen, &flags);
    assert_int_equal(flags, 0);
    assert_int_equal(slen, n + REPO_SEAL_EXTRA);
    c.stored = (uint32_t)slen;
    c.flags = 0;
    assert_int_equal(repo_blob_open(&k, &c, sealed, out, &err), 0);
    assert_memory_equal(out, noise, n);
    free(sealed);
    free(out);
    free(text);
    free(noise);
}

static void test_pack_round_trip(void **state)
{
    struct repo_keys k = mstore_keys(3);
    struct repo_pack_writer w;
    uint8_t *chunks[3], *pack, id[REPO_HASH_LEN], digest[REPO_HASH_LEN];
    size_t sizes[3] = {1000, 0, 70000}, len, n;
    struct repo_chunk *table;
    struct util_err err = {0};

    repo_pack_writer_init(&w);
    for (int i = 0; i < 3; i++) {
        uint8_t hash[REPO_HASH_LEN], *sealed, flags;
        size_t slen;
        chunks[i] = random_bytes(sizes[i] + 1, (uint64_t)i + 10);
        SHA256(chunks[i], sizes[i], hash);
        repo_blob_seal(&k, 1, hash, chunks[i], sizes[i], &sealed, &slen, &flags);
        repo_pack_writer_add(&w, hash, sealed, slen, flags, (uint32_t)sizes[i]);
        free(sealed);
    }
    repo_pack_writer_finish(&w, &k, &pack, &len, id);
    SHA256(pack, len, digest);
    assert_memory_equal(id, digest, REPO_HASH_LEN); /* the pack id is its SHA-256 */
    assert_int_equal(repo_pack_read_table(&k, pack, len, &table, &n, &err), 0);
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++) {
        uint8_t *out = util_malloc(sizes[i] + 1);
        assert_int_equal(table[i].plain, sizes[i]);
        assert_int_equal(repo_blob_open(&k, &table[i], pack + table[i].offset, out, &err), 0);
        assert_memory_equal(out, chunks[i], sizes[i]);
        free(out);
    }
    free(table);
    /* Any changed byte of the table or its framing is found. */
    for (size_t i = len - 60; i < len; i++) {
        pack[i] ^= 0x40;
        assert_int_not_equal(repo_pack_read_table(&k, pack, len, &table, &n, &err), 0);
        assert_null(table);
        pack[i] ^= 0x40;
    }
    assert_int_equal(repo_pack_read_table(&k, pack, 10, &table, &n, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "not a pack"));
    free(pack);
    for (int i = 0; i < 3; i++)
        free(chunks[i]);
    repo_pack_writer_free(&w);
}

static const struct repo_chunk *test_entry_of(size_t i, void *arg)
{
    const struct repo_chunk *v = arg;
    return &v[i];
}

/* A pack whose entries the caller keeps (_put, _finish_with) is the pack _add and
 * _finish make of the same blobs: the same table, blobs that open; and the writer
 * is ready for the next pack. */
static void test_pack_entries_kept_by_caller(void **state)
{
    struct repo_keys k = mstore_keys(9);
    struct repo_pack_writer w;
    struct repo_chunk mine[300], *table;
    uint8_t *plain[300], *pack, id[REPO_HASH_LEN];
    size_t len, n;
    struct util_err err = {0};

    repo_pack_writer_init(&w);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 300; i++) {
            uint8_t *sealed, flags;
            size_t slen, plen = 10 + (size_t)i * 7;
            plain[i] = random_bytes(plen, (uint64_t)(i + 1000 * round));
            memset(&mine[i], 0, sizeof(mine[i]));
            SHA256(plain[i], plen, mine[i].hash);
            repo_blob_seal(&k, 1, mine[i].hash, plain[i], plen, &sealed, &slen, &flags);
            mine[i].offset = repo_pack_writer_put(&w, sealed, slen);
            mine[i].stored = (uint32_t)slen;
            mine[i].plain = (uint32_t)plen;
            mine[i].flags = flags;
            free(sealed);
        }
        assert_int_equal(w.n, 0); /* no entry kept by the writer */
        repo_pack_writer_finish_with(&w, &k, 300, test_entry_of, mine, &pack, &len, id);
        assert_int_equal(repo_pack_read_table(&k, pack, len, &table, &n, &err), 0);
        assert_int_equal(n, 300);
        for (int i = 0; i < 300; i++) {
            uint8_t *out = util_malloc(mine[i].plain + 1);
            assert_memory_equal(table[i].hash, mine[i].hash, REPO_HASH_LEN);
            assert_int_equal(table[i].offset, mine[i].offset);
            assert_int_equal(table[i].stored, mine[i].stored);
            assert_int_equal(table[i].plain, mine[i].plain);
            assert_int_equal(table[i].flags, mine[i].flags);
            assert_int_equal(repo_blob_open(&k, &table[i], pack + table[i].offset, out, &err), 0);
            assert_memory_equal(out, plain[i], mine[i].plain);
            free(out);
            free(plain[i]);
        }
        free(table);
        free(pack);
        repo_pack_writer_reset(&w);
    }
    repo_pack_writer_free(&w);
    (void)state;
}

/* The table read from a pack's tail (a ranged GET) equals the one read from the whole pack. */
static void test_pack_read_tail(void **state)
{
    struct repo_keys k = mstore_keys(4), other = mstore_keys(5);
    struct repo_pack_writer w;
    uint8_t *pack, id[REPO_HASH_LEN];
    size_t len, n, tn, need;
    struct repo_chunk *table, *tail;
    struct util_err err = {0};

    repo_pack_writer_init(&w);
    for (int i = 0; i < 40; i++) {
        uint8_t hash[REPO_HASH_LEN], *sealed, flags, *plain = random_bytes(3000, (uint64_t)i + 50);
        size_t slen;
        SHA256(plain, 3000, hash);
        repo_blob_seal(&k, 1, hash, plain, 3000, &sealed, &slen, &flags);
        repo_pack_writer_add(&w, hash, sealed, slen, flags, 3000);
        free(sealed);
        free(plain);
    }
    repo_pack_writer_finish(&w, &k, &pack, &len, id);
    assert_int_equal(repo_pack_read_table(&k, pack, len, &table, &n, &err), 0);
    /* 12 bytes say how much more is needed; that much gives the same table. */
    assert_int_equal(repo_pack_read_tail(&k, pack + len - 12, 12, len, &need, &tail, &tn, &err), 0);
    assert_null(tail);
    assert_int_equal(need, 12 + 4 + 40 * 45 + REPO_SEAL_EXTRA);
    assert_int_equal(repo_pack_read_tail(&k, pack + len - need, need, len, &need, &tail, &tn, &err),
                     0);
    assert_int_equal(need, 0);
    assert_int_equal(tn, n);
    assert_memory_equal(tail, table, n * sizeof(*table));
    free(tail);
    /* A wrong key, a changed byte of the table, a wrong size, a short tail: errors. */
    size_t tl = 12 + 4 + 40 * 45 + REPO_SEAL_EXTRA;
    assert_int_not_equal(
        repo_pack_read_tail(&other, pack + len - tl, tl, len, &need, &tail, &tn, &err), 0);
    assert_null(tail);
    pack[len - 100] ^= 1;
    assert_int_not_equal(repo_pack_read_tail(&k, pack + len - tl, tl, len, &need, &tail, &tn, &err),
                         0);
    pack[len - 100] ^= 1;
    assert_int_equal(repo_pack_read_tail(&k, pack + len - tl, tl, 40, &need, &tail, &tn, &err),
                     UTIL_EINVAL);
    assert_int_equal(repo_pack_read_tail(&k, pack + len - 8, 8, len, &need, &tail, &tn, &err),
                     UTIL_EINVAL);
    pack[len - 1] ^= 1;
    assert_int_equal(repo_pack_read_tail(&k, pack + len - 12, 12, len, &need, &tail, &tn, &err),
                     UTIL_EIO);
    assert_non_null(strstr(err.msg, "not a pack"));
    free(table);
    free(pack);
    repo_pack_writer_free(&w);
}

static void test_chunkset(void **state)
{
    struct repo_keys k = mstore_keys(4);
    struct repo_chunkset s, d;
    uint8_t p1[REPO_HASH_LEN] = {1}, p2[REPO_HASH_LEN] = {2};
    struct util_err err = {0};

    repo_chunkset_init(&s);
    for (int i = 9; i >= 0; i--) {
        struct repo_chunk c = {.offset = 8, .stored = 100, .plain = (uint32_t)i, .flags = 1};
        c.hash[0] = (uint8_t)i;
        c.pack = repo_chunkset_pack(&s, i % 2 ? p1 : p2);
        repo_chunkset_add(&s, &c);
        repo_chunkset_add(&s, &c); /* duplicates are dropped */
    }
    repo_chunkset_sort(&s);
    assert_int_equal(s.n, 10);
    assert_int_equal(s.npacks, 2);
    /* Through a tree and back: the same set. */
    struct mstore ms = {.k = &k, .run = ID1};
    struct repo_tree_writer w;
    struct repo_tree_reader r;
    struct repo_root root;
    repo_tree_writer_init(&w, REPO_TREE_CHUNKS, &k, mstore_cb, &ms);
    assert_int_equal(repo_chunkset_write(&s, &w, &err), 0);
    assert_int_equal(repo_tree_writer_finish(&w, &root, &err), 0);
    repo_tree_writer_free(&w);
    repo_tree_reader_init(&r, &k, REPO_TREE_CHUNKS, &root, mstore_fetch, &ms);
    assert_int_equal(repo_chunkset_read(&d, &r, &err), 0);
    repo_tree_reader_free(&r);
    assert_int_equal(d.n, 10);
    for (int i = 0; i < 10; i++) {
        uint8_t h[REPO_HASH_LEN] = {(uint8_t)i};
        const struct repo_chunk *c = repo_chunkset_find(&d, h);
        assert_non_null(c);
        assert_int_equal(c->plain, i);
        assert_memory_equal(d.packs[c->pack], i % 2 ? p1 : p2, REPO_HASH_LEN);
    }
    uint8_t missing[REPO_HASH_LEN] = {42};
    assert_null(repo_chunkset_find(&d, missing));
    repo_chunkset_free(&d);
    /* Another key does not open it. */
    struct repo_keys other = mstore_keys(9);
    repo_tree_reader_init(&r, &other, REPO_TREE_CHUNKS, &root, mstore_fetch, &ms);
    assert_int_equal(repo_chunkset_read(&d, &r, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "authentication failed"));
    repo_tree_reader_free(&r);
    mstore_free(&ms);
    repo_chunkset_free(&s);
}

/* The set's own sort (in place): shuffled, sorted but for a tail (a re-run's), all alike,
 * and with duplicates, each sorted by hash with every hash once and its entry kept. */
static void test_chunkset_sort_shapes(void **state)
{
    enum { N = 20000 };
    uint64_t x = 88172645463325252ull;
    for (int shape = 0; shape < 4; shape++) {
        struct repo_chunkset s;
        size_t want = 0;
        repo_chunkset_init(&s);
        for (uint32_t i = 0; i < N; i++) {
            struct repo_chunk c = {.offset = i, .stored = 100, .plain = i};
            uint32_t key = i;
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            if (shape == 0)
                key = (uint32_t)x; /* shuffled (distinct with this generator over N) */
            else if (shape == 1 && i >= N - 300)
                key = (uint32_t)(x % N) * 2 + 1; /* a sorted prefix of evens, odd tail */
            else if (shape == 1)
                key = i * 2;
            else if (shape == 2)
                key = 7; /* every hash alike */
            else
                key = i / 3; /* each three times */
            for (int b = 0; b < 4; b++)
                c.hash[b] = (uint8_t)(key >> (24 - 8 * b));
            c.plain = key & 0xfffffff;
            repo_chunkset_add(&s, &c);
        }
        repo_chunkset_sort(&s);
        want = shape == 2 ? 1 : shape == 3 ? (N + 2) / 3 : 0;
        if (want != 0)
            assert_int_equal(s.n, want);
        assert_true(s.n > 0);
        for (size_t i = 0; i < s.n; i++) {
            uint32_t key = (uint32_t)s.v[i].hash[0] << 24 | (uint32_t)s.v[i].hash[1] << 16 |
                           (uint32_t)s.v[i].hash[2] << 8 | s.v[i].hash[3];
            assert_int_equal(s.v[i].plain, key & 0xfffffff); /* the entry moved whole */
            if (i > 0)
                assert_true(memcmp(s.v[i - 1].hash, s.v[i].hash, REPO_HASH_LEN) < 0);
        }
        repo_chunkset_free(&s);
    }
}

static void test_pack_entry_plain_bound(void **state)
{
    struct repo_keys k = mstore_keys(7);
    struct repo_pack_writer w;
    uint8_t hash[REPO_HASH_LEN] = {1}, sealed[40] = {0}, *pack, id[REPO_HASH_LEN], *table, *t;
    const char *aad = "lodestore pack table";
    size_t len, n, slen;
    struct repo_chunk *v;
    struct util_err err = {0};

    repo_pack_writer_init(&w);
    repo_pack_writer_add(&w, hash, sealed, sizeof(sealed), REPO_BLOB_ZSTD, REPO_CHUNK_PLAIN_MAX);
    repo_pack_writer_finish(&w, &k, &pack, &len, id);
    assert_int_equal(repo_pack_read_table(&k, pack, len, &v, &n, &err), 0);
    assert_int_equal(v[0].plain, REPO_CHUNK_PLAIN_MAX);
    assert_int_equal(v[0].flags, REPO_BLOB_ZSTD);
    free(v);
    slen = (size_t)pack[len - 12] | (size_t)pack[len - 11] << 8;
    t = pack + len - 12 - slen;
    table = util_malloc(slen);
    assert_int_equal(repo_unseal(&k, aad, strlen(aad), t, slen, table, &err), 0);
    table[4 + 40] = 1; /* plain = 64 MiB + 1 */
    repo_seal(&k, aad, strlen(aad), table, slen - REPO_SEAL_EXTRA, t);
    assert_int_equal(repo_pack_read_table(&k, pack, len, &v, &n, &err), UTIL_EIO);
    assert_null(v);
    free(table);
    free(pack);
    repo_pack_writer_free(&w);
    (void)state;
}

/* A hash that differs from every other i's in its first 8 bytes only as i does. */
static void test_hash(uint8_t h[REPO_HASH_LEN], uint32_t i)
{
    memset(h, 0, REPO_HASH_LEN);
    for (int b = 0; b < 4; b++)
        h[b] = h[31 - b] = (uint8_t)(i >> (8 * b));
    h[8] = 0x5a;
}

/* The set as its own dedup table: put adds once, lookup finds and changes entries
 * (pending ones filled in later), through several growths of the index. */
static void test_chunkset_put_lookup(void **state)
{
    struct repo_chunkset s;
    const uint32_t n = 5000;
    uint8_t h[REPO_HASH_LEN];

    repo_chunkset_init(&s);
    test_hash(h, 1);
    assert_null(repo_chunkset_lookup(&s, h)); /* empty: no index needed */
    for (uint32_t i = 0; i < n; i++) {
        struct repo_chunk c = {.pack = REPO_CHUNK_PENDING, .plain = i};
        test_hash(c.hash, i);
        assert_true(repo_chunkset_put(&s, &c));
        c.plain = i + 1;
        assert_false(repo_chunkset_put(&s, &c)); /* the first one stays */
    }
    assert_int_equal(s.n, n);
    assert_true(s.icap * 3 >= s.n * 4);
    for (uint32_t i = 0; i < n; i++) {
        struct repo_chunk *c;
        test_hash(h, i);
        c = repo_chunkset_lookup(&s, h);
        assert_non_null(c);
        assert_int_equal(c->plain, i);
        assert_int_equal(c->pack, REPO_CHUNK_PENDING);
        c->pack = i % 3;
        c->stored = 100 + i;
    }
    test_hash(h, n);
    assert_null(repo_chunkset_lookup(&s, h));
    /* add after put keeps the index whole; sort drops the index and the duplicate. */
    {
        struct repo_chunk c = {.pack = 7};
        test_hash(c.hash, n);
        repo_chunkset_add(&s, &c);
        assert_non_null(repo_chunkset_lookup(&s, c.hash));
        repo_chunkset_add(&s, &c);
    }
    repo_chunkset_sort(&s);
    assert_null(s.index);
    assert_int_equal(s.n, n + 1);
    test_hash(h, 17);
    assert_int_equal(repo_chunkset_find(&s, h)->stored, 117);
    /* A set filled by add only gets its index at the first lookup. */
    repo_chunkset_free(&s);
    for (uint32_t i = 0; i < 3; i++) {
        struct repo_chunk c = {.plain = i};
        test_hash(c.hash, i);
        repo_chunkset_add(&s, &c);
    }
    test_hash(h, 2);
    assert_int_equal(repo_chunkset_lookup(&s, h)->plain, 2);
    repo_chunkset_free(&s);
    (void)state;
}

/* repo_chunkset_seal gives the bytes repo_chunkset_encode gives (but for the
 * nonce), for an empty set, one entry, and enough packs and entries that the
 * header's length is not a multiple of the entries' alignment. */
static void make_file(struct repo_file *f, const char *path, int i)
{
    memset(f, 0, sizeof(*f));
    f->path = util_strdup(path);
    f->type = i % 3 == 0 ? REPO_FT_DIR : i % 3 == 1 ? REPO_FT_FILE : REPO_FT_SYMLINK;
    f->mode = 0644;
    f->uid = 1000;
    f->gid = 100;
    f->size = (uint64_t)i * 1000;
    f->mtime_sec = -5 + i;
    f->mtime_nsec = 999999999;
    f->ctime_sec = 1700000000 + i;
    f->ino = (uint64_t)i + 1;
    if (f->type == REPO_FT_SYMLINK)
        f->target = util_asprintf("../target-%d", i);
    if (f->type == REPO_FT_FILE) {
        f->nchunks = 2;
        f->chunks = util_calloc(2, REPO_HASH_LEN);
        f->chunks[1][0] = (uint8_t)i;
        f->nxattrs = 1;
        f->xattrs = util_calloc(1, sizeof(*f->xattrs));
        f->xattrs[0].name = util_strdup("user.note");
        f->xattrs[0].value = util_malloc(3);
        memcpy(f->xattrs[0].value, "a\0b", 3);
        f->xattrs[0].len = 3;
    }
}

/* Writes n files /d00000/f... in order into ms; returns the root. */
static struct repo_root write_list(struct mstore *ms, int n)
{
    struct repo_files_writer w;
    struct util_err err = {0};
    struct repo_root root;
    repo_files_writer_init(&w, ms->k, mstore_cb, ms);
    for (int i = 0; i < n; i++) {
        struct repo_file f;
        char path[64];
        snprintf(path, sizeof(path), "/d%05d", i);
        make_file(&f, path, i);
        assert_int_equal(repo_files_writer_add(&w, &f, &err), 0);
        repo_file_free(&f);
    }
    assert_int_equal(repo_files_writer_finish(&w, &root, &err), 0);
    repo_files_writer_free(&w);
    return root;
}

static void test_file_list_round_trip(void **state)
{
    struct repo_keys k = mstore_keys(5);
    struct mstore ms = {.k = &k, .run = ID1};
    int n = 60000; /* several levels */
    struct repo_root root = write_list(&ms, n);
    struct repo_tree_reader tr;
    struct repo_files_reader r;
    struct util_err err = {0};
    struct repo_file f;
    int i = 0, rc;

    assert_true(root.depth >= 1);
    repo_tree_reader_init(&tr, &k, REPO_TREE_FILES, &root, mstore_fetch, &ms);
    repo_files_reader_tree(&r, &tr);
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1) {
        struct repo_file want;
        char path[64];
        snprintf(path, sizeof(path), "/d%05d", i);
        make_file(&want, path, i);
        assert_string_equal(f.path, want.path);
        assert_int_equal(f.type, want.type);
        assert_int_equal(f.mtime_sec, want.mtime_sec);
        assert_int_equal(f.mtime_nsec, want.mtime_nsec);
        assert_int_equal(f.size, want.size);
        assert_int_equal(f.nchunks, want.nchunks);
        if (f.nchunks)
            assert_memory_equal(f.chunks, want.chunks, f.nchunks * REPO_HASH_LEN);
        assert_int_equal(f.nxattrs, want.nxattrs);
        if (f.nxattrs)
            assert_memory_equal(f.xattrs[0].value, "a\0b", 3);
        if (want.target)
            assert_string_equal(f.target, want.target);
        repo_file_free(&want);
        repo_file_free(&f);
        i++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(i, n);
    assert_true(r.leaf > 1);
    repo_files_reader_free(&r);
    repo_tree_reader_free(&tr);

    /* A chunk that is not there: an error naming it, not a short list. */
    size_t all = ms.n;
    ms.n /= 2;
    repo_tree_reader_init(&tr, &k, REPO_TREE_FILES, &root, mstore_fetch, &ms);
    repo_files_reader_tree(&r, &tr);
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1)
        repo_file_free(&f);
    assert_true(rc < 0);
    repo_files_reader_free(&r);
    repo_tree_reader_free(&tr);
    ms.n = all;
    mstore_free(&ms);
}

/* Records given whole, and a malformed one refused. */
static void test_file_list_whole(void **state)
{
    struct repo_keys k = mstore_keys(5);
    struct mstore ms = {.k = &k, .run = ID1};
    struct repo_root root = write_list(&ms, 100);
    struct repo_tree_reader tr;
    struct repo_files_reader r;
    struct util_buf all;
    struct util_err err = {0};
    struct repo_file f;
    int n = 0, rc;

    util_buf_init(&all);
    repo_tree_reader_init(&tr, &k, REPO_TREE_FILES, &root, mstore_fetch, &ms);
    assert_int_equal(repo_tree_read_all(&tr, &all, &err), 0);
    repo_tree_reader_free(&tr);
    repo_files_reader_init(&r, (const uint8_t *)all.data, all.len);
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1) {
        repo_file_free(&f);
        n++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(n, 100);
    repo_files_reader_free(&r);
    /* Cut in the middle of a record. */
    repo_files_reader_init(&r, (const uint8_t *)all.data, all.len - 3);
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1)
        repo_file_free(&f);
    assert_int_equal(rc, UTIL_EIO);
    assert_non_null(strstr(err.msg, "malformed"));
    repo_files_reader_free(&r);
    util_buf_free(&all);
    mstore_free(&ms);
}

static void test_file_list_order_and_paths(void **state)
{
    struct repo_keys k = mstore_keys(5);
    struct repo_files_writer w;
    struct repo_file f;
    struct util_err err = {0};
    static const char *bad[] = {"relative", "/a//b", "/a/./b", "/a/..", "/a/"};
    struct mstore ms = {.k = &k, .run = ID1};

    repo_files_writer_init(&w, &k, mstore_cb, &ms);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        make_file(&f, bad[i], 0);
        assert_int_equal(repo_files_writer_add(&w, &f, &err), UTIL_EINVAL);
        assert_non_null(strstr(err.msg, "normalized"));
        repo_file_free(&f);
    }
    make_file(&f, "/b", 0);
    assert_int_equal(repo_files_writer_add(&w, &f, &err), 0);
    repo_file_free(&f);
    make_file(&f, "/a", 0);
    assert_int_equal(repo_files_writer_add(&w, &f, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "out of order"));
    repo_file_free(&f);
    repo_files_writer_free(&w);
    mstore_free(&ms);
}

/* Hard links (struct repo_file's link) round-trip; a link to a later path or from a
 * directory is refused by the writer. */
static void test_file_list_hard_links(void **state)
{
    struct repo_keys k = mstore_keys(5);
    struct mstore ms = {.k = &k, .run = ID1};
    struct repo_files_writer w;
    struct repo_tree_reader tr;
    struct repo_files_reader r;
    struct repo_root root;
    struct repo_file f;
    struct util_err err = {0};
    static const struct {
        const char *path, *link;
        enum repo_ftype type;
    } in[] = {{"/a/file", NULL, REPO_FT_FILE},
              {"/a/fifo", NULL, REPO_FT_FIFO},
              {"/b/file", "/a/file", REPO_FT_FILE},
              {"/b/fifo", "/a/fifo", REPO_FT_FIFO},
              {"/c", "", REPO_FT_FILE}};
    size_t i = 0;

    repo_files_writer_init(&w, &k, mstore_cb, &ms);
    /* Sorted as the list is: "/a/fifo" < "/a/file". */
    static const size_t order[] = {1, 0, 3, 2, 4};
    for (size_t j = 0; j < 5; j++) {
        make_file(&f, in[order[j]].path, 0);
        f.type = in[order[j]].type;
        if (f.type != REPO_FT_FILE) {
            free(f.chunks);
            f.chunks = NULL;
            f.nchunks = 0;
            f.size = 0;
        }
        f.link = in[order[j]].link ? util_strdup(in[order[j]].link) : NULL;
        assert_int_equal(repo_files_writer_add(&w, &f, &err), 0);
        repo_file_free(&f);
    }
    make_file(&f, "/d", 0);
    f.type = REPO_FT_FILE;
    f.link = util_strdup("/e");
    assert_int_equal(repo_files_writer_add(&w, &f, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "hard link"));
    repo_file_free(&f);
    make_file(&f, "/d", 0);
    f.type = REPO_FT_DIR;
    free(f.chunks);
    f.chunks = NULL;
    f.nchunks = 0;
    f.link = util_strdup("/a/file");
    assert_int_equal(repo_files_writer_add(&w, &f, &err), UTIL_EINVAL);
    repo_file_free(&f);
    assert_int_equal(repo_files_writer_finish(&w, &root, &err), 0);
    repo_files_writer_free(&w);
    repo_tree_reader_init(&tr, &k, REPO_TREE_FILES, &root, mstore_fetch, &ms);
    repo_files_reader_tree(&r, &tr);
    while (repo_files_reader_next(&r, &f, &err) == 1) {
        const char *want = in[order[i]].link;
        assert_string_equal(f.path, in[order[i]].path);
        assert_string_equal(f.link, want ? want : "");
        repo_file_free(&f);
        i++;
    }
    assert_int_equal(i, 5);
    repo_files_reader_free(&r);
    repo_tree_reader_free(&tr);
    mstore_free(&ms);
}

static void test_empty_file_list(void **state)
{
    struct repo_keys k = mstore_keys(5);
    struct mstore ms = {.k = &k, .run = ID1};
    struct repo_root root = write_list(&ms, 0);
    struct repo_tree_reader tr;
    struct repo_files_reader r;
    struct repo_file f;
    struct util_err err = {0};
    assert_int_equal(root.depth, 0);
    repo_tree_reader_init(&tr, &k, REPO_TREE_FILES, &root, mstore_fetch, &ms);
    repo_files_reader_tree(&r, &tr);
    assert_int_equal(repo_files_reader_next(&r, &f, &err), 0);
    repo_files_reader_free(&r);
    repo_tree_reader_free(&tr);
    mstore_free(&ms);
}

static void test_merge(void **state)
{
    /* Parent has /d00000../d00009; the walk sees 1, 3, 4 (changed), 12 (new). */
    struct repo_keys k = mstore_keys(6);
    struct mstore ms = {.k = &k, .run = ID1};
    struct repo_root root = write_list(&ms, 10);
    struct repo_tree_reader tr;
    struct repo_files_reader r;
    struct repo_merge m;
    const struct repo_file *match;
    struct util_err err = {0};
    struct repo_file now;

    repo_tree_reader_init(&tr, &k, REPO_TREE_FILES, &root, mstore_fetch, &ms);
    repo_files_reader_tree(&r, &tr);
    repo_merge_init(&m, &r);
    make_file(&now, "/d00001", 1);
    assert_int_equal(repo_merge_find(&m, "/d00001", &match, &err), 1);
    assert_true(repo_file_unchanged(match, &now));
    repo_file_free(&now);
    assert_int_equal(repo_merge_find(&m, "/d00003", &match, &err), 1);
    make_file(&now, "/d00004", 4);
    now.mtime_nsec = 1;
    assert_int_equal(repo_merge_find(&m, "/d00004", &match, &err), 1);
    assert_false(repo_file_unchanged(match, &now));
    repo_file_free(&now);
    assert_int_equal(repo_merge_find(&m, "/d00012", &match, &err), 0);
    assert_null(match);
    assert_int_equal(repo_merge_finish(&m, &err), 0);
    /* 0, 2, 5, 6, 7, 8, 9 are gone. */
    assert_int_equal(m.deleted, 7);
    repo_merge_free(&m);
    repo_files_reader_free(&r);
    repo_tree_reader_free(&tr);
    mstore_free(&ms);
    /* Without a parent, nothing matches. */
    repo_merge_init(&m, NULL);
    assert_int_equal(repo_merge_find(&m, "/x", &match, &err), 0);
    assert_int_equal(repo_merge_finish(&m, &err), 0);
    assert_int_equal(m.deleted, 0);
}

static void test_unchanged_rules(void **state)
{
    struct repo_file a, b;
    make_file(&a, "/f", 1);
    make_file(&b, "/f", 1);
    assert_true(repo_file_unchanged(&a, &b));
    b.size++;
    assert_false(repo_file_unchanged(&a, &b));
    b.size--;
    b.ino++;
    assert_false(repo_file_unchanged(&a, &b));
    b.ino--;
    b.ctime_sec++;
    assert_false(repo_file_unchanged(&a, &b));
    b.ctime_sec--;
    b.type = REPO_FT_DIR;
    assert_false(repo_file_unchanged(&a, &b));
    b.type = REPO_FT_FILE;
    repo_file_free(&a);
    repo_file_free(&b);
}

/* A string literal and its length (NULs included). */
#define TEST_B(s) s, sizeof(s) - 1

/* A run record with its parent's trees, at default/etc/node-1 and ID2. */
static struct repo_run test_run_of(void)
{
    struct repo_run r = {.id = ID2, .parent = ID1, .max_runtime = 3600, .agent = "v1"};
    struct util_err err = {0};
    repo_source_set(&r.src, "default", "etc", "node-1", &err);
    r.has_roots = true;
    memset(r.parent_files.ref.hash, 7, REPO_HASH_LEN);
    memcpy(r.parent_files.ref.run, ID1, sizeof(r.parent_files.ref.run));
    r.parent_files.ref.stored = 40;
    r.parent_files.ref.plain = 9;
    r.parent_chunks = r.parent_files;
    r.parent_chunks.depth = 2;
    return r;
}

/* A record's head as records.c writes it (magic, kind, the place's check: the first 4
 * bytes of the SHA-256 of "ns\npolicy\nhost\nid"), then n bytes of tail. */
static uint8_t *test_record(char kind, const struct repo_source *src, const char *id,
                            const void *tail, size_t n)
{
    uint8_t *r = util_malloc(6 + n), h[SHA256_DIGEST_LENGTH];
    char *place = util_asprintf("%s\n%s\n%s\n%s", src->ns, src->policy, src->host, id);
    SHA256((const uint8_t *)place, strlen(place), h);
    r[0] = 0xC2;
    r[1] = (uint8_t)kind;
    memcpy(r + 2, h, 4);
    memcpy(r + 6, tail, n);
    free(place);
    return r;
}

/* body with its sealed part replaced by plain sealed as records.c seals (the label,
 * the place, the public bytes as associated data): a well-sealed body whose sealed
 * bytes say something records.c never writes. */
static uint8_t *test_reseal(const struct repo_keys *k, const char *label,
                            const struct repo_source *src, const char *id, const uint8_t *body,
                            size_t pub, const void *plain, size_t n, size_t *len)
{
    char *aad = util_asprintf("%s%s\n%s\n%s\n%s\n", label, src->ns, src->policy, src->host, id);
    size_t alen = strlen(aad);
    uint8_t *a = util_malloc(alen + pub), *out = util_malloc(pub + n + REPO_SEAL_EXTRA);
    memcpy(a, aad, alen);
    memcpy(a + alen, body, pub);
    memcpy(out, body, pub);
    repo_seal(k, a, alen + pub, plain, n, out + pub);
    *len = pub + n + REPO_SEAL_EXTRA;
    free(a);
    free(aad);
    return out;
}

static void test_run_record(void **state)
{
    struct repo_run r = test_run_of(), d;
    struct repo_keys k = mstore_keys(3), other = mstore_keys(4);
    struct repo_source there;
    struct util_err err = {0};
    size_t len;
    r.has_roots = false;
    uint8_t *body = repo_run_encode(&r, NULL, &len);
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, body, len, NULL, &err), 0);
    assert_string_equal(d.parent, ID1);
    assert_string_equal(d.id, ID2);
    assert_string_equal(d.agent, "v1");
    assert_int_equal(d.max_runtime, 3600);
    free(body);
    r.parent[0] = '\0';
    body = repo_run_encode(&r, NULL, &len);
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, body, len, NULL, &err), 0);
    assert_string_equal(d.parent, "");
    free(body);
    /* The parent's trees, sealed: read with the key, bound to the place and parent. */
    r = test_run_of();
    body = repo_run_encode(&r, &k, &len);
    assert_true(len < 200); /* docs/repository.md: about 180 bytes */
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, body, len, &k, &err), 0);
    assert_true(d.has_roots);
    assert_memory_equal(&d.parent_files, &r.parent_files, sizeof(r.parent_files));
    assert_memory_equal(&d.parent_chunks, &r.parent_chunks, sizeof(r.parent_chunks));
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, body, len, NULL, &err), 0);
    assert_false(d.has_roots);
    assert_int_equal(repo_run_decode(&d, &r.src, ID1, body, len, &k, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "copied or moved"));
    body[len - 1] ^= 1;
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, body, len, &k, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "do not authenticate"));
    body[len - 1] ^= 1;
    assert_int_equal(repo_source_set(&there, "default", "etc", "node-2", &err), 0);
    assert_int_equal(repo_run_decode(&d, &there, ID2, body, len, &k, &err), UTIL_EIO);
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, body, len, &other, &err), UTIL_EIO);
    /* Every byte changed and every length cut short is refused with the key. */
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit += 7) {
            body[i] ^= (uint8_t)(1u << bit);
            if (repo_run_decode(&d, &r.src, ID2, body, len, &k, &err) == 0)
                fail_msg("byte %zu with bit %d changed was accepted", i, bit);
            body[i] ^= (uint8_t)(1u << bit);
        }
    }
    for (size_t n = 0; n < len; n++)
        if (repo_run_decode(&d, &r.src, ID2, body, n, &k, &err) == 0)
            fail_msg("the first %zu of %zu bytes were accepted", n, len);
    /* Sealed parts that authenticate but are not the trees: another version, trailing
     * bytes, too short to hold a version. The public part is as long without the trees. */
    r.has_roots = false;
    size_t pub;
    free(repo_run_encode(&r, NULL, &pub));
    r.has_roots = true;
    uint8_t plain[2 * 64 + 2] = {3}, *bad;
    size_t blen;
    bad = test_reseal(&k, "lodestore run 2\n", &r.src, ID2, body, pub, plain, 1, &blen);
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, bad, blen, &k, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "version 3"));
    free(bad);
    plain[0] = 2;
    bad = test_reseal(&k, "lodestore run 2\n", &r.src, ID2, body, pub, plain, 5, &blen);
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, bad, blen, &k, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "malformed"));
    free(bad);
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, body, pub + REPO_SEAL_EXTRA, &k, &err),
                     UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "cut short"));
    free(body);
    /* The JSON of earlier development builds is refused by name; other bytes too. */
    const char *json = " {\"format\":2,\"id\":\"" ID2 "\",\"parent\":null}";
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, json, strlen(json), NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "JSON encoding"));
    assert_non_null(strstr(err.msg, "lode init"));
    static const struct {
        const char *bytes;
        size_t len;
        const char *says;
    } bad_runs[] = {
        {TEST_B("\x04\x01\x00"), "malformed"},                /* an unknown flag */
        {TEST_B("\x00\x01\x00\x00"), "malformed"},            /* trailing bytes */
        {TEST_B("\x00\x00\x00"), "out of range"},             /* maxRuntime 0 */
        {TEST_B("\x00\x80\xad\x8f\x0f\x00"), "out of range"}, /* 367 days */
        {TEST_B("\x00\x01\x05"
                "ab"),
         "malformed"}, /* the agent cut short */
        {TEST_B("\x00\x01\x02"
                "a\x00"),
         "malformed"},                     /* a NUL in the agent */
        {TEST_B("\x01\x01"), "malformed"}, /* the parent cut short */
        /* a parent's time past the year 9999 */
        {TEST_B("\x01\xff\xff\xff\xff\xff\x0f\x01\x02\x03\x04\x05\x06\x07\x08\x01\x00"),
         "malformed"},
    };
    for (size_t i = 0; i < sizeof(bad_runs) / sizeof(bad_runs[0]); i++) {
        uint8_t *rec = test_record('R', &r.src, ID2, bad_runs[i].bytes, bad_runs[i].len);
        err.msg[0] = '\0';
        if (repo_run_decode(&d, &r.src, ID2, rec, 6 + bad_runs[i].len, NULL, &err) != UTIL_EINVAL ||
            strstr(err.msg, bad_runs[i].says) == NULL)
            fail_msg("bad run record %zu: \"%s\"", i, err.msg);
        free(rec);
    }
    /* Too short for its head, another kind, another place (told without the key). */
    uint8_t *rec = test_record('M', &r.src, ID2, "\x00\x01\x00", 3);
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, rec, 9, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "not one lode wrote"));
    rec[1] = 'R';
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, rec, 5, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "not one lode wrote"));
    assert_int_equal(repo_run_decode(&d, &r.src, ID2, rec, 9, NULL, &err), 0);
    assert_int_equal(repo_run_decode(&d, &there, ID2, rec, 9, NULL, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "copied or moved"));
    assert_int_equal(repo_run_decode(&d, &r.src, ID1, rec, 9, NULL, &err), UTIL_EIO);
    free(rec);
}

static struct repo_manifest test_manifest_of(struct repo_error *errs, char **paths)
{
    struct repo_manifest m = {.id = ID2,
                              .parent = ID1,
                              .max_runtime = 60,
                              .incomplete = true,
                              .files = 3,
                              .bytes = 10,
                              .new_files = 11,
                              .changed_files = 12,
                              .deleted_files = 13,
                              .new_bytes = 5,
                              .uploaded_bytes = 4,
                              .raw_new_bytes = 14,
                              .errors = 1,
                              .agent = "v1"};
    struct util_err err = {0};
    repo_source_set(&m.src, "default", "etc", "node-1", &err);
    m.paths = paths;
    m.npaths = 2;
    m.errs = errs;
    m.nerrs = 1;
    for (int t = 0; t < 2; t++) {
        struct repo_root *r = t ? &m.chunks_root : &m.files_root;
        memset(r->ref.hash, 0x30 + t, REPO_HASH_LEN);
        memcpy(r->ref.run, ID1, sizeof(r->ref.run));
        r->ref.offset = 8 + (uint32_t)t;
        r->ref.stored = 100;
        r->ref.plain = 200;
        r->depth = (unsigned)t + 1;
    }
    return m;
}

static void test_manifest(void **state)
{
    struct repo_keys k = mstore_keys(7), other = mstore_keys(8);
    char *paths[] = {"/etc", "/home"};
    struct repo_error errs[] = {{"/etc/shadow", "Permission denied"}};
    struct repo_manifest m = test_manifest_of(errs, paths), d;
    struct util_err err = {0};
    size_t len;

    uint8_t *body = repo_manifest_encode(&m, &k, &len);
    assert_null(memmem(body, len, "/etc", 4)); /* paths are sealed */
    assert_int_equal(repo_manifest_decode(&d, &m.src, ID2, body, len, &k, &err), 0);
    assert_string_equal(d.id, ID2);
    assert_string_equal(d.src.host, "node-1");
    assert_string_equal(d.parent, ID1);
    assert_string_equal(d.agent, "v1");
    assert_int_equal(d.max_runtime, 60);
    assert_int_equal(d.files, 3);
    assert_int_equal(d.bytes, 10);
    assert_int_equal(d.new_files, 11);
    assert_int_equal(d.changed_files, 12);
    assert_int_equal(d.deleted_files, 13);
    assert_int_equal(d.new_bytes, 5);
    assert_int_equal(d.uploaded_bytes, 4);
    assert_int_equal(d.raw_new_bytes, 14);
    assert_int_equal(d.errors, 1);
    assert_true(d.incomplete);
    assert_false(d.suspicious);
    assert_int_equal(d.npaths, 2);
    assert_string_equal(d.paths[1], "/home");
    assert_int_equal(d.nerrs, 1);
    assert_string_equal(d.errs[0].path, "/etc/shadow");
    assert_string_equal(d.errs[0].message, "Permission denied");
    assert_memory_equal(&d.files_root, &m.files_root, sizeof(m.files_root));
    assert_memory_equal(&d.chunks_root, &m.chunks_root, sizeof(m.chunks_root));
    repo_manifest_free(&d);
    /* Counters without the key. */
    assert_int_equal(repo_manifest_decode(&d, &m.src, ID2, body, len, NULL, &err), 0);
    assert_int_equal(d.bytes, 10);
    assert_int_equal(d.npaths, 0);
    repo_manifest_free(&d);
    assert_int_equal(repo_manifest_decode(&d, &m.src, ID2, body, len, &other, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "wrong"));
    free(body);
    /* Without a parent, suspicious, no paths or errors: what a first run writes. */
    m.parent[0] = '\0';
    m.incomplete = false;
    m.suspicious = true;
    m.npaths = m.nerrs = 0;
    body = repo_manifest_encode(&m, &k, &len);
    assert_true(len < 200); /* docs/repository.md: about 200 bytes */
    assert_int_equal(repo_manifest_decode(&d, &m.src, ID2, body, len, &k, &err), 0);
    assert_string_equal(d.parent, "");
    assert_true(d.suspicious);
    assert_false(d.incomplete);
    assert_int_equal(d.npaths + d.nerrs, 0);
    repo_manifest_free(&d);
    free(body);
}

/* Every byte of a manifest changed, one at a time, and every length cut short, is
 * refused with the key: the seal binds the public part, the place and the sealed part
 * (docs/repository.md, "Authenticated manifests and marks"). */
static void test_manifest_every_byte_bound(void **state)
{
    struct repo_keys k = mstore_keys(7);
    char *paths[] = {"/etc", "/home"};
    struct repo_error errs[] = {{"/etc/shadow", "Permission denied"}};
    struct repo_manifest m = test_manifest_of(errs, paths), d;
    struct repo_source there;
    struct util_err err = {0};
    size_t len;
    uint8_t *body = repo_manifest_encode(&m, &k, &len);
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit += 7) {
            body[i] ^= (uint8_t)(1u << bit);
            if (repo_manifest_decode(&d, &m.src, ID2, body, len, &k, &err) == 0)
                fail_msg("byte %zu with bit %d changed was accepted", i, bit);
            body[i] ^= (uint8_t)(1u << bit);
        }
    }
    for (size_t n = 0; n < len; n++)
        if (repo_manifest_decode(&d, &m.src, ID2, body, n, &k, &err) == 0)
            fail_msg("the first %zu of %zu bytes were accepted", n, len);
    /* Copied to another source or id whole: it does not open there. */
    assert_int_equal(repo_source_set(&there, "default", "etc", "node-2", &err), 0);
    assert_int_equal(repo_manifest_decode(&d, &there, ID2, body, len, &k, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "copied or moved"));
    assert_int_equal(repo_manifest_decode(&d, &m.src, ID1, body, len, &k, &err), UTIL_EIO);
    /* Sealed parts that authenticate but are not what records.c writes. The public
     * part: 6 (head) + 1 + 13 (parent) + 1 (maxRuntime) + 9 counters + 3 (agent); the well
     * formed one below shows the count is right. */
    size_t pub = 6 + 1 + 13 + 1 + 9 + 3, blen;
    static const struct {
        uint8_t bytes[8];
        size_t len;
        const char *says;
    } sealed[] = {
        {{3}, 1, "version 3"},
        {{2}, 1, "a tree's root is malformed"},
    };
    for (size_t i = 0; i < sizeof(sealed) / sizeof(sealed[0]); i++) {
        uint8_t *bad = test_reseal(&k, "lodestore manifest 2\n", &m.src, ID2, body, pub,
                                   sealed[i].bytes, sealed[i].len, &blen);
        if (repo_manifest_decode(&d, &m.src, ID2, bad, blen, &k, &err) != UTIL_EINVAL ||
            strstr(err.msg, sealed[i].says) == NULL)
            fail_msg("sealed part %zu: \"%s\"", i, err.msg);
        free(bad);
    }
    /* The roots, then lists that do not hold what they say. */
    struct util_buf ok;
    util_buf_init(&ok);
    uint8_t v = 2;
    util_buf_append(&ok, &v, 1);
    repo_root_put(&ok, &m.files_root);
    repo_root_put(&ok, &m.chunks_root);
    static const struct {
        const char *tail;
        size_t len;
    } tails[] = {
        {TEST_B("")},                   /* no paths count */
        {TEST_B("\x05")},               /* more paths than bytes */
        {TEST_B("\x01\x03/a")},         /* a path cut short */
        {TEST_B("\x00")},               /* no errors count */
        {TEST_B("\x00\x01\x01x\x05y")}, /* an error's message cut short */
        {TEST_B("\x00\x00")},           /* no excluded rules */
        {TEST_B("\x00\x00\x10")},       /* an unknown rule */
        {TEST_B("\x00\x00\x01\x01")},   /* a rule's bytes missing */
        {TEST_B("\x00\x00\x00\x00")},   /* trailing bytes */
    };
    for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
        struct util_buf p;
        util_buf_init(&p);
        util_buf_append(&p, ok.data, ok.len);
        util_buf_append(&p, tails[i].tail, tails[i].len);
        uint8_t *bad =
            test_reseal(&k, "lodestore manifest 2\n", &m.src, ID2, body, pub, p.data, p.len, &blen);
        if (repo_manifest_decode(&d, &m.src, ID2, bad, blen, &k, &err) != UTIL_EINVAL ||
            strstr(err.msg, "private part is malformed") == NULL)
            fail_msg("private tail %zu: \"%s\"", i, err.msg);
        free(bad);
        util_buf_free(&p);
    }
    /* And one well formed: no paths, no errors, one rule. */
    util_buf_append(&ok, "\x00\x00\x02\x03\x04", 5);
    uint8_t *good =
        test_reseal(&k, "lodestore manifest 2\n", &m.src, ID2, body, pub, ok.data, ok.len, &blen);
    assert_int_equal(repo_manifest_decode(&d, &m.src, ID2, good, blen, &k, &err), 0);
    assert_int_equal(d.excluded[REPO_EXCL_CACHE].entries, 3);
    assert_int_equal(d.excluded[REPO_EXCL_CACHE].bytes, 4);
    repo_manifest_free(&d);
    free(good);
    util_buf_free(&ok);
    assert_int_equal(repo_manifest_decode(&d, &m.src, ID2, body, pub + REPO_SEAL_EXTRA, &k, &err),
                     UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "cut short"));
    free(body);
    /* The JSON of earlier development builds is refused by name; so are other bytes. */
    const char *json = "{\"format\": 2, \"id\": \"" ID2 "\"}";
    assert_int_equal(repo_manifest_decode(&d, &m.src, ID2, json, strlen(json), NULL, &err),
                     UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "JSON encoding"));
    static const struct {
        const char *bytes;
        size_t len;
        const char *says;
    } bad[] = {
        /* an unknown flag */
        {TEST_B("\x08\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"), "malformed"},
        /* no sealed part */
        {TEST_B("\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), "malformed"},
        /* maxRuntime 0 */
        {TEST_B("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"), "out of range"},
        {TEST_B("\x00\x01\x00\x00"), "malformed"}, /* the counters cut short */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint8_t *rec = test_record('M', &m.src, ID2, bad[i].bytes, bad[i].len);
        err.msg[0] = '\0';
        if (repo_manifest_decode(&d, &m.src, ID2, rec, 6 + bad[i].len, NULL, &err) != UTIL_EINVAL ||
            strstr(err.msg, bad[i].says) == NULL)
            fail_msg("bad manifest %zu: \"%s\"", i, err.msg);
        free(rec);
    }
    /* Another place is told without the key too (lode snapshots skips it). */
    body = repo_manifest_encode(&m, &k, &len);
    assert_int_equal(repo_manifest_decode(&d, &there, ID2, body, len, NULL, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "copied or moved"));
    free(body);
}

static void test_marks(void **state)
{
    struct repo_keys k = mstore_keys(7), other = mstore_keys(8);
    struct repo_source src, there;
    struct util_err err = {0};
    assert_int_equal(repo_source_set(&src, "default", "etc", "node-1", &err), 0);
    assert_int_equal(repo_source_set(&there, "default", "etc", "node-2", &err), 0);
    char *body = repo_mark_encode(&k, &src, ID1, REPO_KEY_SUSPICIOUS);
    size_t n = strlen(body);
    assert_int_equal(repo_mark_check(&k, &src, ID1, REPO_KEY_SUSPICIOUS, body, n, &err), 0);
    /* Another kind, id, source or key; an empty mark; a changed byte. */
    assert_int_equal(repo_mark_check(&k, &src, ID1, REPO_KEY_INCOMPLETE, body, n, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "does not authenticate"));
    assert_int_equal(repo_mark_check(&k, &src, ID2, REPO_KEY_SUSPICIOUS, body, n, &err), UTIL_EIO);
    assert_int_equal(repo_mark_check(&k, &there, ID1, REPO_KEY_SUSPICIOUS, body, n, &err),
                     UTIL_EIO);
    assert_int_equal(repo_mark_check(&other, &src, ID1, REPO_KEY_SUSPICIOUS, body, n, &err),
                     UTIL_EIO);
    assert_int_equal(repo_mark_check(&k, &src, ID1, REPO_KEY_SUSPICIOUS, "", 0, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "not one lode wrote"));
    char *tag = strstr(body, "\"tag\": \"") + 8;
    *tag = *tag == 'a' ? 'b' : 'a';
    assert_int_equal(repo_mark_check(&k, &src, ID1, REPO_KEY_SUSPICIOUS, body, n, &err), UTIL_EIO);
    free(body);
}

/* Pins (docs/retention.md, "Pinned snapshots"): the tag binds place, kind and reason. */
static void test_pins(void **state)
{
    struct repo_keys k = mstore_keys(7), other = mstore_keys(8);
    struct repo_source src, there;
    struct util_err err = {0};
    char *why = NULL;
    assert_int_equal(repo_source_set(&src, "default", "etc", "node-1", &err), 0);
    assert_int_equal(repo_source_set(&there, "default", "etc", "node-2", &err), 0);
    char *body = repo_pin_encode(&k, &src, ID1, "before the 3.2 upgrade");
    size_t n = strlen(body);
    assert_int_equal(repo_pin_decode(&k, &src, ID1, body, n, &why, &err), 0);
    assert_string_equal(why, "before the 3.2 upgrade");
    free(why);
    /* Another id, source or key: refused, and the reason is not given. */
    assert_int_equal(repo_pin_decode(&k, &src, ID2, body, n, &why, &err), UTIL_EIO);
    assert_null(why);
    assert_non_null(strstr(err.msg, "the .pinned mark of"));
    assert_non_null(strstr(err.msg, "does not authenticate"));
    assert_int_equal(repo_pin_decode(&k, &there, ID1, body, n, &why, &err), UTIL_EIO);
    assert_int_equal(repo_pin_decode(&other, &src, ID1, body, n, &why, &err), UTIL_EIO);
    /* A suspicious mark's tag is not a pin's: the kind is bound. */
    char *sus = repo_mark_encode(&k, &src, ID1, REPO_KEY_SUSPICIOUS);
    json_t *o = json_loads(sus, 0, NULL);
    json_object_set_new(o, "reason", json_string("x"));
    char *forged = json_dumps(o, JSON_COMPACT);
    assert_int_equal(repo_pin_decode(&k, &src, ID1, forged, strlen(forged), &why, &err), UTIL_EIO);
    free(forged);
    json_decref(o);
    free(sus);
    /* Another reason under the same tag. */
    o = json_loads(body, 0, NULL);
    json_object_set_new(o, "reason", json_string("kept for the audit"));
    forged = json_dumps(o, JSON_COMPACT);
    assert_int_equal(repo_pin_decode(&k, &src, ID1, forged, strlen(forged), &why, &err), UTIL_EIO);
    free(forged);
    json_decref(o);
    /* A pin as a bucket writer makes it (the former body): read without the key, refused
     * with it; not JSON, or an unknown key: refused either way. */
    static const char plain[] = "{\"reason\":\"mine\"}";
    assert_int_equal(repo_pin_decode(NULL, &src, ID1, plain, strlen(plain), &why, &err), 0);
    assert_string_equal(why, "mine");
    free(why);
    assert_int_equal(repo_pin_decode(&k, &src, ID1, plain, strlen(plain), &why, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "not one lode wrote"));
    assert_int_equal(repo_pin_decode(NULL, &src, ID1, "x", 1, &why, &err), UTIL_EIO);
    static const char extra[] = "{\"reason\":\"a\",\"keep\":true}";
    assert_int_equal(repo_pin_decode(NULL, &src, ID1, extra, strlen(extra), &why, &err), UTIL_EIO);
    /* A changed byte of the tag. */
    char *tag = strstr(body, "\"tag\":\"") + 7;
    *tag = *tag == 'a' ? 'b' : 'a';
    assert_int_equal(repo_pin_decode(&k, &src, ID1, body, n, &why, &err), UTIL_EIO);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_round_trip_and_wrong_key),
        cmocka_unit_test(test_config_rejects),
        cmocka_unit_test(test_config_costly_kdf_refused),
        cmocka_unit_test(test_config_scrypt_sets),
        cmocka_unit_test(test_config_generated_key),
        cmocka_unit_test(test_key_file),
        cmocka_unit_test(test_seal_every_byte),
        cmocka_unit_test(test_blob_compressed_and_raw),
        cmocka_unit_test(test_sealer_seals_as_repo_blob_seal),
        cmocka_unit_test(test_pack_round_trip),
        cmocka_unit_test(test_pack_read_tail),
        cmocka_unit_test(test_pack_entries_kept_by_caller),
        cmocka_unit_test(test_chunkset),
        cmocka_unit_test(test_chunkset_put_lookup),
        cmocka_unit_test(test_pack_entry_plain_bound),
        cmocka_unit_test(test_file_list_round_trip),
        cmocka_unit_test(test_file_list_whole),
        cmocka_unit_test(test_file_list_order_and_paths),
        cmocka_unit_test(test_file_list_hard_links),
        cmocka_unit_test(test_empty_file_list),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_unchanged_rules),
        cmocka_unit_test(test_run_record),
        cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_manifest_every_byte_bound),
        cmocka_unit_test(test_chunkset_sort_shapes),
        cmocka_unit_test(test_marks),
        cmocka_unit_test(test_pins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
