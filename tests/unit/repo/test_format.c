/*
 * The repository format: every object round-trips, every sealed object refuses a
 * changed byte, a wrong key is a clear error, and decoders refuse what they did
 * not write.
 */
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

#include "repo/repo.h"

#define ID1 "20261202T170127Z-9f3c2a1b7d4e6058"
#define ID2 "20261203T170127Z-0000000000000001"

static struct repo_keys test_keys(uint8_t fill)
{
    struct repo_keys k;
    uint8_t master[32];
    memset(master, fill, sizeof(master));
    repo_keys_derive(&k, master);
    return k;
}

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
        {"\"format\": 1", "\"format\": 2", "format 2"},
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
        {"\"format\": 1,", "\"format\": 1, \"extra\": 1,", "extra"},
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
    struct repo_keys k = test_keys(1), other = test_keys(2);
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

static void test_blob_compressed_and_raw(void **state)
{
    struct repo_keys k = test_keys(1);
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
    struct repo_keys k = test_keys(3);
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
    struct repo_keys k = test_keys(9);
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
    struct repo_keys k = test_keys(4), other = test_keys(5);
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
    struct repo_keys k = test_keys(4);
    struct repo_chunkset s, d;
    uint8_t p1[REPO_HASH_LEN] = {1}, p2[REPO_HASH_LEN] = {2}, *data;
    size_t len;
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
    repo_chunkset_encode(&s, &k, ID1, &data, &len);
    assert_int_equal(repo_chunkset_decode(&d, &k, ID1, data, len, &err), 0);
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
    /* Bound to its snapshot: another id does not open it. */
    assert_int_equal(repo_chunkset_decode(&d, &k, ID2, data, len, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "authentication failed"));
    data[len / 2] ^= 1;
    assert_int_equal(repo_chunkset_decode(&d, &k, ID1, data, len, &err), UTIL_EIO);
    free(data);
    repo_chunkset_free(&s);
}

/* A stored chunk set of one entry with the given plain length and flags byte. */
static uint8_t *chunkset_bytes(const struct repo_keys *k, uint32_t plain, uint8_t flags,
                               size_t *len)
{
    uint8_t p[8 + 4 + REPO_HASH_LEN + 4 + 49] = "LODECHK1", aad[8 + REPO_ID_LEN], *out;
    uint8_t *e = p + 8 + 4 + REPO_HASH_LEN + 4;
    p[8] = 1; /* one pack (all zero), one entry */
    p[8 + 4 + REPO_HASH_LEN] = 1;
    e[0] = 0xab;
    e[36] = 8;  /* offset */
    e[40] = 99; /* stored */
    for (int b = 0; b < 4; b++)
        e[44 + b] = (uint8_t)(plain >> (8 * b));
    e[48] = flags;
    memcpy(aad, "LODECHK1", 8);
    memcpy(aad + 8, ID1, REPO_ID_LEN);
    *len = sizeof(p) + REPO_SEAL_EXTRA;
    out = util_malloc(*len);
    repo_seal(k, aad, sizeof(aad), p, sizeof(p), out);
    return out;
}

/* The 48-byte entry keeps the flags beside the plain length: the largest chunk a
 * repository may have and its flag both survive a round trip, and a stored length or
 * flag the entry cannot hold is refused, never cut. */
static void test_chunk_entry_bits(void **state)
{
    struct repo_keys k = test_keys(6);
    struct repo_chunkset s, d;
    struct util_err err = {0};
    uint8_t *data;
    size_t len;
    static const struct {
        uint32_t plain;
        uint8_t flags;
        int rc;
    } cases[] = {
        {REPO_CHUNK_PLAIN_MAX, REPO_BLOB_ZSTD, 0},
        {REPO_CHUNK_PLAIN_MAX, 0, 0},
        {0, REPO_BLOB_ZSTD, 0},
        {REPO_CHUNK_PLAIN_MAX + 1, 0, UTIL_EIO},
        {UINT32_MAX, REPO_BLOB_ZSTD, UTIL_EIO},
        {1u << 28, 0, UTIL_EIO},
        {5, 2, UTIL_EIO},
        {5, 0x11, UTIL_EIO},
    };

    assert_int_equal(sizeof(struct repo_chunk), 48);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        data = chunkset_bytes(&k, cases[i].plain, cases[i].flags, &len);
        assert_int_equal(repo_chunkset_decode(&d, &k, ID1, data, len, &err), cases[i].rc);
        if (cases[i].rc == 0) {
            assert_int_equal(d.n, 1);
            assert_int_equal(d.v[0].plain, cases[i].plain);
            assert_int_equal(d.v[0].flags, cases[i].flags);
            assert_int_equal(d.v[0].stored, 99);
            /* And written back, the same entry. */
            repo_chunkset_init(&s);
            repo_chunkset_add(&s, &d.v[0]);
            repo_chunkset_pack(&s, d.packs[0]);
            repo_chunkset_free(&d);
            free(data);
            repo_chunkset_seal(&s, &k, ID1, &data, &len);
            assert_int_equal(repo_chunkset_decode(&d, &k, ID1, data, len, &err), 0);
            assert_int_equal(d.v[0].plain, cases[i].plain);
            assert_int_equal(d.v[0].flags, cases[i].flags);
            repo_chunkset_free(&d);
        } else {
            assert_non_null(strstr(err.msg, "malformed"));
        }
        free(data);
    }
    (void)state;
}

/* A pack table entry whose plain length is past REPO_CHUNK_PLAIN_MAX is refused. */
static void test_pack_entry_plain_bound(void **state)
{
    struct repo_keys k = test_keys(7);
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
static void test_chunkset_seal(void **state)
{
    struct repo_keys k = test_keys(5);
    const size_t sizes[] = {0, 1, 3, 1000};
    const size_t packs[] = {0, 1, 3, 7};
    struct util_err err = {0};

    for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
        struct repo_chunkset s, d;
        uint8_t *a, *b;
        size_t alen, blen;
        repo_chunkset_init(&s);
        for (size_t p = 0; p < packs[t]; p++) {
            uint8_t id[REPO_HASH_LEN] = {(uint8_t)(p + 1), 0xee};
            repo_chunkset_pack(&s, id);
        }
        for (size_t i = sizes[t]; i-- > 0;) {
            struct repo_chunk c = {.offset = 8 + (uint32_t)i,
                                   .stored = 28 + (uint32_t)i,
                                   .plain = (uint32_t)i * 3,
                                   .flags = (uint8_t)(i & 1)};
            test_hash(c.hash, (uint32_t)i * 7919u);
            c.pack = packs[t] ? (uint32_t)(i % packs[t]) : 0;
            assert_true(repo_chunkset_put(&s, &c));
        }
        repo_chunkset_sort(&s);
        repo_chunkset_encode(&s, &k, ID1, &a, &alen);
        repo_chunkset_seal(&s, &k, ID1, &b, &blen);
        assert_int_equal(s.n, 0);
        assert_null(s.v);
        assert_null(s.packs);
        assert_int_equal(alen, blen);
        if (sizes[t] > 0 || packs[t] > 0) {
            /* Same plain bytes under another nonce: decode both and compare. */
            struct repo_chunkset e;
            assert_int_equal(repo_chunkset_decode(&d, &k, ID1, a, alen, &err), 0);
            assert_int_equal(repo_chunkset_decode(&e, &k, ID1, b, blen, &err), 0);
            assert_int_equal(d.n, e.n);
            assert_int_equal(d.npacks, e.npacks);
            if (d.npacks > 0)
                assert_memory_equal(d.packs, e.packs, d.npacks * REPO_HASH_LEN);
            for (size_t i = 0; i < d.n; i++)
                assert_memory_equal(&d.v[i], &e.v[i], sizeof(d.v[i]));
            repo_chunkset_free(&e);
        } else {
            assert_int_equal(repo_chunkset_decode(&d, &k, ID1, b, blen, &err), 0);
            assert_int_equal(d.n, 0);
        }
        repo_chunkset_free(&d);
        /* Bound to the id like any chunk set. */
        assert_int_equal(repo_chunkset_decode(&d, &k, ID2, b, blen, &err), UTIL_EIO);
        free(a);
        free(b);
    }
    (void)state;
}

/* repo_chunkset_open decodes in the object's memory and takes it, on success and on
 * every error (ASan finds a leak or a double free); its set equals decode's. */
static void test_chunkset_open(void **state)
{
    struct repo_keys k = test_keys(8);
    struct repo_chunkset s, d, o;
    struct util_err err = {0};
    uint8_t *data, *copy, pk[REPO_HASH_LEN] = {9};
    size_t len;

    repo_chunkset_init(&s);
    repo_chunkset_pack(&s, pk);
    for (uint32_t i = 0; i < 3000; i++) {
        struct repo_chunk c = {.offset = 8 + i, .stored = 28 + i, .plain = i, .flags = i & 1};
        test_hash(c.hash, i * 7919u);
        repo_chunkset_add(&s, &c);
    }
    repo_chunkset_sort(&s);
    repo_chunkset_encode(&s, &k, ID1, &data, &len);
    assert_int_equal(repo_chunkset_decode(&d, &k, ID1, data, len, &err), 0);
    copy = util_malloc(len);
    memcpy(copy, data, len);
    assert_int_equal(repo_chunkset_open(&o, &k, ID1, copy, len, &err), 0);
    assert_int_equal(o.n, 3000);
    assert_int_equal(o.npacks, 1);
    assert_memory_equal(o.packs[0], pk, REPO_HASH_LEN);
    assert_memory_equal(o.v, d.v, d.n * sizeof(*d.v));
    assert_memory_equal(o.v, s.v, s.n * sizeof(*s.v));
    repo_chunkset_free(&o);
    /* Errors: another id, a changed byte, cut short, too short to be one. */
    copy = util_malloc(len);
    memcpy(copy, data, len);
    assert_int_equal(repo_chunkset_open(&o, &k, ID2, copy, len, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "authentication failed"));
    assert_null(o.v);
    copy = util_malloc(len);
    memcpy(copy, data, len);
    copy[len / 3] ^= 4;
    assert_int_equal(repo_chunkset_open(&o, &k, ID1, copy, len, &err), UTIL_EIO);
    copy = util_malloc(len);
    memcpy(copy, data, len - 49);
    assert_int_equal(repo_chunkset_open(&o, &k, ID1, copy, len - 49, &err), UTIL_EIO);
    copy = util_malloc(10);
    assert_int_equal(repo_chunkset_open(&o, &k, ID1, copy, 10, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "too short"));
    /* Sealed right but malformed inside (entries out of order): freed, said. */
    {
        size_t plen = len - REPO_SEAL_EXTRA;
        uint8_t *plain = util_malloc(plen), aad[8 + REPO_ID_LEN], e[49];
        const size_t first = 16 + REPO_HASH_LEN;
        memcpy(aad, "LODECHK1", 8);
        memcpy(aad + 8, ID1, REPO_ID_LEN);
        assert_int_equal(repo_unseal(&k, aad, sizeof(aad), data, len, plain, &err), 0);
        memcpy(e, plain + first, 49);
        memcpy(plain + first, plain + first + 49, 49);
        memcpy(plain + first + 49, e, 49);
        copy = util_malloc(len);
        repo_seal(&k, aad, sizeof(aad), plain, plen, copy);
        assert_int_equal(repo_chunkset_open(&o, &k, ID1, copy, len, &err), UTIL_EIO);
        assert_non_null(strstr(err.msg, "malformed"));
        assert_null(o.v);
        assert_null(o.packs);
        free(plain);
    }
    free(data);
    repo_chunkset_free(&d);
    repo_chunkset_free(&s);
    (void)state;
}

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

/* Writes n files /d00000/f... in order; returns the object. */
static uint8_t *write_list(const struct repo_keys *k, const char *id, int n, size_t *len)
{
    struct repo_files_writer w;
    struct util_err err = {0};
    uint8_t *data;
    repo_files_writer_init(&w, k, id);
    for (int i = 0; i < n; i++) {
        struct repo_file f;
        char path[64];
        snprintf(path, sizeof(path), "/d%05d", i);
        make_file(&f, path, i);
        assert_int_equal(repo_files_writer_add(&w, &f, &err), 0);
        repo_file_free(&f);
    }
    repo_files_writer_finish(&w, &data, len);
    return data;
}

/* Reads a list of n make_file records /d00000... and checks every one. */
static void read_list(const struct repo_keys *k, const char *id, const uint8_t *data, size_t len,
                      int n)
{
    struct repo_files_reader r;
    struct util_err err = {0};
    struct repo_file f;
    int i = 0, rc;

    assert_int_equal(repo_files_reader_init(&r, k, id, data, len, &err), 0);
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1) {
        struct repo_file want;
        char path[64];
        snprintf(path, sizeof(path), "/d%05d", i);
        make_file(&want, path, i);
        assert_string_equal(f.path, want.path);
        assert_int_equal(f.type, want.type);
        assert_int_equal(f.size, want.size);
        assert_int_equal(f.nchunks, want.nchunks);
        if (f.nchunks)
            assert_memory_equal(f.chunks, want.chunks, f.nchunks * REPO_HASH_LEN);
        repo_file_free(&want);
        repo_file_free(&f);
        i++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(i, n);
    repo_files_reader_free(&r);
}

/* Taken as it is written (the parts of a multipart upload), the list is the same
 * object: the pieces joined read back whole, each piece but the last reached the
 * part size, and taking before a frame has closed gives the magic, then nothing. */
static void test_file_list_taken_in_parts(void **state)
{
    struct repo_keys k = test_keys(5);
    const size_t part = 100000;
    const int n = 60000;
    struct repo_files_writer w;
    struct util_err err = {0};
    struct util_buf all;
    uint8_t *piece;
    size_t len, pieces = 0;

    util_buf_init(&all);
    repo_files_writer_init(&w, &k, ID1);
    repo_files_writer_take(&w, &piece, &len);
    assert_int_equal(len, 8);
    assert_memory_equal(piece, "LODEFIL1", 8);
    util_buf_append(&all, piece, len);
    free(piece);
    repo_files_writer_take(&w, &piece, &len);
    assert_int_equal(len, 0);
    free(piece);
    for (int i = 0; i < n; i++) {
        struct repo_file f;
        char path[64];
        snprintf(path, sizeof(path), "/d%05d", i);
        make_file(&f, path, i);
        assert_int_equal(repo_files_writer_add(&w, &f, &err), 0);
        repo_file_free(&f);
        if (w.out.len >= part) {
            repo_files_writer_take(&w, &piece, &len);
            assert_true(len >= part);
            util_buf_append(&all, piece, len);
            free(piece);
            pieces++;
        }
    }
    repo_files_writer_finish(&w, &piece, &len);
    assert_true(len > 0);
    util_buf_append(&all, piece, len);
    free(piece);
    assert_true(pieces >= 3);
    read_list(&k, ID1, (const uint8_t *)all.data, all.len, n);
    /* The same records written without taking make an object of the same length
     * (the frames close at the same records; only the nonces differ). */
    piece = write_list(&k, ID1, n, &len);
    assert_int_equal(len, all.len);
    read_list(&k, ID1, piece, len, n);
    free(piece);
    /* A list finished right after its magic was taken is its one (final) frame. */
    repo_files_writer_init(&w, &k, ID2);
    repo_files_writer_take(&w, &piece, &len);
    util_buf_free(&all);
    util_buf_init(&all);
    util_buf_append(&all, piece, len);
    free(piece);
    repo_files_writer_finish(&w, &piece, &len);
    util_buf_append(&all, piece, len);
    free(piece);
    read_list(&k, ID2, (const uint8_t *)all.data, all.len, 0);
    util_buf_free(&all);
    (void)state;
}

static void test_file_list_round_trip(void **state)
{
    struct repo_keys k = test_keys(5);
    size_t len;
    int n = 60000; /* several frames */
    uint8_t *data = write_list(&k, ID1, n, &len);
    struct repo_files_reader r;
    struct util_err err = {0};
    struct repo_file f;
    int i = 0, rc;

    assert_int_equal(repo_files_reader_init(&r, &k, ID1, data, len, &err), 0);
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
    assert_true(r.frame > 1);
    repo_files_reader_free(&r);

    /* Cut after the first frame: found, not read as a short list. */
    size_t first = 8 + 4 + (data[8] | data[9] << 8 | data[10] << 16 | (size_t)data[11] << 24);
    assert_int_equal(repo_files_reader_init(&r, &k, ID1, data, first, &err), 0);
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1)
        repo_file_free(&f);
    assert_true(rc < 0);
    assert_non_null(strstr(err.msg, "failed authentication"));
    repo_files_reader_free(&r);
    /* Another snapshot's id does not open it. */
    assert_int_equal(repo_files_reader_init(&r, &k, ID2, data, len, &err), 0);
    assert_true(repo_files_reader_next(&r, &f, &err) < 0);
    repo_files_reader_free(&r);
    free(data);
}

struct test_fetch {
    const uint8_t *data;
    size_t len;
    unsigned calls;
    size_t most;      /* the largest range asked for */
    unsigned fail_at; /* the call that fails (1-based), 0 = none */
};

static int test_fetch_cb(void *arg, uint64_t off, size_t len, uint8_t *buf, struct util_err *err)
{
    struct test_fetch *t = arg;
    t->calls++;
    if (t->fail_at != 0 && t->calls == t->fail_at)
        return util_err_set(err, UTIL_EIO, "GET failed: 503 SlowDown");
    assert_true(off + len <= t->len);
    if (len > t->most)
        t->most = len;
    memcpy(buf, t->data + off, len);
    return 0;
}

/* A forged list of 4 GiB: its magic, then a frame claiming nearly all of it. */
struct test_forged {
    uint64_t len;
    size_t most;
};

static int test_forged_cb(void *arg, uint64_t off, size_t len, uint8_t *buf, struct util_err *err)
{
    struct test_forged *t = arg;
    static const uint8_t head[12] = {'L', 'O', 'D',  'E',  'F',  'I',
                                     'L', '1', 0xf0, 0xff, 0xff, 0xff};
    if (len > t->most)
        t->most = len;
    memset(buf, 0, len);
    for (uint64_t i = off; i < off + len && i < sizeof(head); i++)
        buf[i - off] = head[i];
    return 0;
}

/* The reader refuses a frame longer than any writer makes before fetching it: what it
 * holds before authenticating is a window, not the 4 GiB the frame claims. */
static void test_file_list_forged_frame(void **state)
{
    struct repo_keys k = test_keys(5);
    struct repo_files_reader r;
    struct repo_file f;
    struct util_err err = {0};
    struct test_forged t = {.len = 12 + 0xfffffff0ull};

    assert_int_equal(repo_files_reader_open(&r, &k, ID1, t.len, 0, test_forged_cb, &t, &err), 0);
    assert_int_equal(repo_files_reader_next(&r, &f, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "claims"));
    assert_true(t.most <= REPO_FILES_WINDOW);
    repo_files_reader_free(&r);
}

/* A list read through ranged fetches gives the same records as the whole list,
 * a window at a time; a failed fetch is an error naming the list, not a short list. */
static void test_file_list_fetched(void **state)
{
    struct repo_keys k = test_keys(5);
    size_t len;
    int n = 99999; /* paths stay in order up to /d99999 */
    uint8_t *data = write_list(&k, ID1, n, &len);
    struct test_fetch t = {.data = data, .len = len};
    struct repo_files_reader r;
    struct util_err err = {0};
    struct repo_file f;
    int i = 0, rc;

    const size_t win = 64 * 1024; /* the list is about 1.3 MB: many windows */

    assert_true(len > 8 * win);
    assert_int_equal(repo_files_reader_open(&r, &k, ID1, len, win, test_fetch_cb, &t, &err), 0);
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1) {
        char path[64];
        snprintf(path, sizeof(path), "/d%05d", i);
        assert_string_equal(f.path, path);
        repo_file_free(&f);
        i++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(i, n);
    /* Several fetches, none of the whole list (a window, or one frame if larger). */
    assert_true(t.calls > 2);
    assert_true(t.most < len / 2);
    repo_files_reader_free(&r);

    /* The third fetch fails: records before it were read, then an error. */
    t = (struct test_fetch){.data = data, .len = len, .fail_at = 3};
    i = 0;
    assert_int_equal(repo_files_reader_open(&r, &k, ID1, len, win, test_fetch_cb, &t, &err), 0);
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1) {
        repo_file_free(&f);
        i++;
    }
    assert_int_equal(rc, UTIL_EIO);
    assert_true(i > 0 && i < n);
    assert_non_null(strstr(err.msg, "file list of " ID1 ": GET failed: 503 SlowDown"));
    repo_files_reader_free(&r);

    /* The first fetch fails: open says so. A length shorter than the list is
     * found at its end (the last frame does not authenticate as the last). */
    t = (struct test_fetch){.data = data, .len = len, .fail_at = 1};
    assert_int_equal(repo_files_reader_open(&r, &k, ID1, len, win, test_fetch_cb, &t, &err),
                     UTIL_EIO);
    assert_non_null(strstr(err.msg, "503 SlowDown"));
    repo_files_reader_free(&r);
    assert_int_equal(repo_files_reader_open(&r, &k, ID1, 4, win, test_fetch_cb, &t, &err),
                     UTIL_EIO);
    assert_non_null(strstr(err.msg, "not a file list"));
    repo_files_reader_free(&r);
    t = (struct test_fetch){.data = data, .len = len};
    assert_int_equal(repo_files_reader_open(&r, &k, ID1, len - 1, win, test_fetch_cb, &t, &err), 0);
    while ((rc = repo_files_reader_next(&r, &f, &err)) == 1)
        repo_file_free(&f);
    assert_true(rc < 0);
    repo_files_reader_free(&r);
    free(data);
    (void)state;
}

static void test_file_list_order_and_paths(void **state)
{
    struct repo_keys k = test_keys(5);
    struct repo_files_writer w;
    struct repo_file f;
    struct util_err err = {0};
    static const char *bad[] = {"relative", "/a//b", "/a/./b", "/a/..", "/a/"};

    repo_files_writer_init(&w, &k, ID1);
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
}

/* Hard links (struct repo_file's link) round-trip; a link to a later path or from a
 * directory is refused by the writer. */
static void test_file_list_hard_links(void **state)
{
    struct repo_keys k = test_keys(5);
    struct repo_files_writer w;
    struct repo_files_reader r;
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
    uint8_t *data;
    size_t len, i = 0;

    repo_files_writer_init(&w, &k, ID1);
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
    repo_files_writer_finish(&w, &data, &len);
    assert_int_equal(repo_files_reader_init(&r, &k, ID1, data, len, &err), 0);
    while (repo_files_reader_next(&r, &f, &err) == 1) {
        const char *want = in[order[i]].link;
        assert_string_equal(f.path, in[order[i]].path);
        assert_string_equal(f.link, want ? want : "");
        repo_file_free(&f);
        i++;
    }
    assert_int_equal(i, 5);
    repo_files_reader_free(&r);
    free(data);
}

static void test_empty_file_list(void **state)
{
    struct repo_keys k = test_keys(5);
    size_t len;
    uint8_t *data = write_list(&k, ID1, 0, &len);
    struct repo_files_reader r;
    struct repo_file f;
    struct util_err err = {0};
    assert_int_equal(repo_files_reader_init(&r, &k, ID1, data, len, &err), 0);
    assert_int_equal(repo_files_reader_next(&r, &f, &err), 0);
    repo_files_reader_free(&r);
    assert_int_equal(repo_files_reader_init(&r, &k, ID1, (const uint8_t *)"XXXXXXXX", 8, &err),
                     UTIL_EIO);
    free(data);
}

static void test_merge(void **state)
{
    /* Parent has /d00000../d00009; the walk sees 1, 3, 4 (changed), 12 (new). */
    struct repo_keys k = test_keys(6);
    size_t len;
    uint8_t *data = write_list(&k, ID1, 10, &len);
    struct repo_files_reader r;
    struct repo_merge m;
    const struct repo_file *match;
    struct util_err err = {0};
    struct repo_file now;

    assert_int_equal(repo_files_reader_init(&r, &k, ID1, data, len, &err), 0);
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
    /* Without a parent, nothing matches. */
    repo_merge_init(&m, NULL);
    assert_int_equal(repo_merge_find(&m, "/x", &match, &err), 0);
    assert_int_equal(repo_merge_finish(&m, &err), 0);
    assert_int_equal(m.deleted, 0);
    free(data);
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

static void test_run_record(void **state)
{
    struct repo_run r = {.id = ID2, .parent = ID1, .max_runtime = 3600, .agent = "v1"}, d;
    struct util_err err = {0};
    char *json = repo_run_encode(&r);
    assert_int_equal(repo_run_decode(&d, json, strlen(json), &err), 0);
    assert_string_equal(d.parent, ID1);
    assert_int_equal(d.max_runtime, 3600);
    free(json);
    r.parent[0] = '\0';
    json = repo_run_encode(&r);
    assert_non_null(strstr(json, "\"parent\": null"));
    assert_int_equal(repo_run_decode(&d, json, strlen(json), &err), 0);
    assert_string_equal(d.parent, "");
    free(json);
    static const char *bad[] = {
        "{}",
        "{\"format\":1,\"id\":\"x\",\"parent\":null,\"maxRuntimeSeconds\":1,\"agent\":\"a\"}",
        "{\"format\":1,\"id\":\"" ID1 "\",\"parent\":null,\"maxRuntimeSeconds\":0,\"agent\":\"a\"}",
        "{\"format\":1,\"id\":\"" ID1 "\",\"parent\":7,\"maxRuntimeSeconds\":1,\"agent\":\"a\"}",
        "[",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(repo_run_decode(&d, bad[i], strlen(bad[i]), &err), UTIL_EINVAL);
}

static void test_manifest(void **state)
{
    struct repo_keys k = test_keys(7), other = test_keys(8);
    struct repo_manifest m = {.id = ID2,
                              .parent = "",
                              .max_runtime = 60,
                              .incomplete = true,
                              .files = 3,
                              .bytes = 10,
                              .new_bytes = 5,
                              .uploaded_bytes = 4,
                              .errors = 1,
                              .agent = "v1"},
                         d;
    char *paths[] = {"/etc", "/home"};
    struct repo_error errs[] = {{"/etc/shadow", "Permission denied"}};
    struct util_err err = {0};

    repo_source_set(&m.src, "default", "etc", "node-1", &err);
    m.paths = paths;
    m.npaths = 2;
    m.errs = errs;
    m.nerrs = 1;
    char *json = repo_manifest_encode(&m, &k);
    assert_null(strstr(json, "/etc")); /* paths are sealed */
    assert_int_equal(repo_manifest_decode(&d, json, strlen(json), &k, &err), 0);
    assert_int_equal(d.files, 3);
    assert_true(d.incomplete);
    assert_int_equal(d.npaths, 2);
    assert_string_equal(d.paths[1], "/home");
    assert_int_equal(d.nerrs, 1);
    assert_string_equal(d.errs[0].message, "Permission denied");
    repo_manifest_free(&d);
    /* Counters without the key. */
    assert_int_equal(repo_manifest_decode(&d, json, strlen(json), NULL, &err), 0);
    assert_int_equal(d.bytes, 10);
    assert_int_equal(d.npaths, 0);
    repo_manifest_free(&d);
    assert_int_equal(repo_manifest_decode(&d, json, strlen(json), &other, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "wrong key"));
    /* Moving it to another id fails authentication. */
    char *moved = util_strdup(json);
    char *at = strstr(moved, ID2);
    memcpy(at, ID1, REPO_ID_LEN);
    assert_int_equal(repo_manifest_decode(&d, moved, strlen(moved), &k, &err), UTIL_EIO);
    free(moved);
    free(json);
    assert_int_equal(repo_manifest_decode(&d, "{\"format\":1}", 12, NULL, &err), UTIL_EINVAL);
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
        cmocka_unit_test(test_pack_round_trip),
        cmocka_unit_test(test_pack_read_tail),
        cmocka_unit_test(test_pack_entries_kept_by_caller),
        cmocka_unit_test(test_chunkset),
        cmocka_unit_test(test_chunkset_put_lookup),
        cmocka_unit_test(test_chunkset_seal),
        cmocka_unit_test(test_chunk_entry_bits),
        cmocka_unit_test(test_pack_entry_plain_bound),
        cmocka_unit_test(test_chunkset_open),
        cmocka_unit_test(test_file_list_round_trip),
        cmocka_unit_test(test_file_list_taken_in_parts),
        cmocka_unit_test(test_file_list_fetched),
        cmocka_unit_test(test_file_list_forged_frame),
        cmocka_unit_test(test_file_list_order_and_paths),
        cmocka_unit_test(test_file_list_hard_links),
        cmocka_unit_test(test_empty_file_list),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_unchanged_rules),
        cmocka_unit_test(test_run_record),
        cmocka_unit_test(test_manifest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
