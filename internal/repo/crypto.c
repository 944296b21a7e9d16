/*
 * Keys, AES-256-GCM sealing and config.json. The master key never leaves memory
 * unwrapped; the working keys are HMAC-SHA256(master, label), so one master key
 * gives independent keys for data, the chunker's table and the key check.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "repo/repo.h"

static void repo_random(uint8_t *v, size_t n)
{
    if (RAND_bytes(v, (int)n) != 1) {
        fprintf(stderr, "lode: the system random generator failed\n");
        abort();
    }
}

static void repo_hmac(const uint8_t key[32], const char *label, uint8_t out[32])
{
    unsigned int len = 32;
    HMAC(EVP_sha256(), key, 32, (const unsigned char *)label, strlen(label), out, &len);
}

void repo_keys_derive(struct repo_keys *k, const uint8_t master[32])
{
    uint8_t check[32];
    repo_hmac(master, "lodestore data key", k->data);
    repo_hmac(master, "lodestore chunker seed", k->gear_seed);
    repo_hmac(master, "lodestore key check", check);
    memcpy(k->check, check, sizeof(k->check));
    OPENSSL_cleanse(check, sizeof(check));
}

static void repo_gcm(const uint8_t key[32], bool enc, const uint8_t nonce[12], const void *aad,
                     size_t aadlen, const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[16],
                     int *ok)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n = 0;
    if (!ctx) {
        fprintf(stderr, "lode: out of memory (cipher context)\n");
        abort();
    }
    *ok = 0;
    if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce, enc ? 1 : 0) != 1)
        goto done;
    if (aadlen && EVP_CipherUpdate(ctx, NULL, &n, aad, (int)aadlen) != 1)
        goto done;
    /* EVP takes int lengths: feed large inputs in pieces. */
    for (size_t off = 0; off < len;) {
        size_t step = len - off > (1u << 30) ? (1u << 30) : len - off;
        if (EVP_CipherUpdate(ctx, out + off, &n, in + off, (int)step) != 1)
            goto done;
        off += step;
    }
    if (!enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, tag) != 1)
        goto done;
    if (EVP_CipherFinal_ex(ctx, out + len, &n) != 1)
        goto done;
    if (enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1)
        goto done;
    *ok = 1;
done:
    EVP_CIPHER_CTX_free(ctx);
}

static void repo_seal_key(const uint8_t key[32], const void *aad, size_t aadlen, const void *plain,
                          size_t len, uint8_t *out)
{
    int ok;
    repo_random(out, 12);
    repo_gcm(key, true, out, aad, aadlen, plain, len, out + 12, out + 12 + len, &ok);
    if (!ok) {
        fprintf(stderr, "lode: AES-256-GCM encryption failed\n");
        abort();
    }
}

static int repo_unseal_key(const uint8_t key[32], const void *aad, size_t aadlen,
                           const uint8_t *sealed, size_t len, uint8_t *out)
{
    int ok;
    uint8_t tag[16];
    if (len < REPO_SEAL_EXTRA)
        return UTIL_EIO;
    memcpy(tag, sealed + len - 16, 16);
    repo_gcm(key, false, sealed, aad, aadlen, sealed + 12, len - REPO_SEAL_EXTRA, out, tag, &ok);
    return ok ? 0 : UTIL_EIO;
}

void repo_seal(const struct repo_keys *k, const void *aad, size_t aadlen, const void *plain,
               size_t len, uint8_t *out)
{
    repo_seal_key(k->data, aad, aadlen, plain, len, out);
}

int repo_unseal(const struct repo_keys *k, const void *aad, size_t aadlen, const uint8_t *sealed,
                size_t len, uint8_t *out, struct util_err *err)
{
    if (repo_unseal_key(k->data, aad, aadlen, sealed, len, out) != 0)
        return util_err_set(err, UTIL_EIO,
                            "authentication failed: the object was changed, truncated or "
                            "written with another key");
    return 0;
}

int repo_unseal_inplace(const struct repo_keys *k, const void *aad, size_t aadlen, uint8_t *buf,
                        size_t len, struct util_err *err)
{
    uint8_t nonce[12], tag[16];
    int ok = 0;
    if (len >= REPO_SEAL_EXTRA) {
        /* GCM decrypts in place only with the input where the output goes. */
        memcpy(nonce, buf, 12);
        memcpy(tag, buf + len - 16, 16);
        memmove(buf, buf + 12, len - REPO_SEAL_EXTRA);
        repo_gcm(k->data, false, nonce, aad, aadlen, buf, len - REPO_SEAL_EXTRA, buf, tag, &ok);
    }
    if (!ok)
        return util_err_set(err, UTIL_EIO,
                            "authentication failed: the object was changed, truncated or "
                            "written with another key");
    return 0;
}

/* ---- config.json ---- */

#define REPO_WRAP_AAD "lodestore master key"

/*
 * The scrypt costs a config.json may carry (docs/repository.md, "The repository key"). A
 * fixed list, not a range: whoever can write the bucket could otherwise choose what every
 * backup, restore and gc of the fleet allocates (N = 2^20, r = 32, p = 16 is 4 GiB). Each
 * costs 128 * N * r bytes (32 MiB here) and time in proportion to N * r * p.
 */
static const struct repo_scrypt_params repo_scrypt_sets[] = {
    [REPO_SCRYPT_15_8_1] = {"scrypt-15-8-1", 32768, 8, 1},
    [REPO_SCRYPT_15_8_3] = {"scrypt-15-8-3", 32768, 8, 3},
};

const struct repo_scrypt_params *repo_scrypt_params(enum repo_scrypt_set set)
{
    return &repo_scrypt_sets[set];
}

/* The named set with exactly these parameters, or NULL. */
static const struct repo_scrypt_params *repo_scrypt_find(uint64_t n, uint64_t r, uint64_t p)
{
    for (size_t i = 0; i < sizeof(repo_scrypt_sets) / sizeof(repo_scrypt_sets[0]); i++)
        if (repo_scrypt_sets[i].n == n && repo_scrypt_sets[i].r == r && repo_scrypt_sets[i].p == p)
            return &repo_scrypt_sets[i];
    return NULL;
}

static int repo_scrypt(const struct repo_config *c, const char *pass, size_t passlen,
                       uint8_t kek[32], struct util_err *err)
{
    /* Checked again here, whatever filled c: nothing outside the list is ever derived. */
    if (repo_scrypt_find(c->scrypt_n, c->scrypt_r, c->scrypt_p) == NULL)
        return util_err_set(err, UTIL_EINVAL, "scrypt cost N=%llu, r=%u, p=%u is not one lode uses",
                            (unsigned long long)c->scrypt_n, c->scrypt_r, c->scrypt_p);
    /* OpenSSL needs 128 * r * (N + p) bytes and a little more for its work area. */
    uint64_t maxmem = 128ull * c->scrypt_r * (c->scrypt_n + c->scrypt_p) + (1u << 20);
    if (EVP_PBE_scrypt(pass, passlen, c->salt, sizeof(c->salt), c->scrypt_n, c->scrypt_r,
                       c->scrypt_p, maxmem, kek, 32) != 1)
        return util_err_set(err, UTIL_EIO, "scrypt failed (N=%llu, r=%u, p=%u)",
                            (unsigned long long)c->scrypt_n, c->scrypt_r, c->scrypt_p);
    return 0;
}

static int repo_unb64(const char *s, uint8_t *v, size_t n);

/*
 * The wrapping key of a generated key: HMAC-SHA256 keyed by its 32 bytes over a label
 * and the salt. The key is uniformly random, so a PRF is all a derivation needs.
 */
static int repo_generated_kek(const struct repo_config *c, const char *key, size_t keylen,
                              uint8_t kek[32], struct util_err *err)
{
    static const char label[] = "lodestore key wrap";
    uint8_t raw[32], msg[sizeof(label) - 1 + sizeof(c->salt)];
    char text[REPO_GENERATED_KEY_TEXT];
    if (keylen != REPO_GENERATED_KEY_TEXT - 1)
        return util_err_set(err, UTIL_EINVAL,
                            "this repository's key was generated by lode init --generate-key "
                            "(44 characters of base64); the key given is not one");
    memcpy(text, key, keylen);
    text[keylen] = '\0';
    if (repo_unb64(text, raw, sizeof(raw)) != 0) {
        OPENSSL_cleanse(text, sizeof(text));
        return util_err_set(err, UTIL_EINVAL,
                            "this repository's key was generated by lode init --generate-key "
                            "(44 characters of base64); the key given is not one");
    }
    memcpy(msg, label, sizeof(label) - 1);
    memcpy(msg + sizeof(label) - 1, c->salt, sizeof(c->salt));
    unsigned int len = 32;
    HMAC(EVP_sha256(), raw, 32, msg, sizeof(msg), kek, &len);
    OPENSSL_cleanse(raw, sizeof(raw));
    OPENSSL_cleanse(text, sizeof(text));
    return 0;
}

void repo_key_generate(char out[REPO_GENERATED_KEY_TEXT])
{
    uint8_t raw[32];
    repo_random(raw, sizeof(raw));
    EVP_EncodeBlock((unsigned char *)out, raw, (int)sizeof(raw));
    OPENSSL_cleanse(raw, sizeof(raw));
}

static void repo_config_init(struct repo_config *c)
{
    memset(c, 0, sizeof(*c));
    c->format = REPO_FORMAT;
    c->chunk_min = 512u * 1024;
    c->chunk_avg = 1024u * 1024;
    c->chunk_max = 8u * 1024 * 1024;
    memcpy(c->compression, "zstd-1", 7);
    repo_random(c->salt, sizeof(c->salt));
}

static void repo_config_wrap(struct repo_config *c, const uint8_t kek[32])
{
    uint8_t master[32];
    repo_random(master, sizeof(master));
    repo_seal_key(kek, REPO_WRAP_AAD, strlen(REPO_WRAP_AAD), master, 32, c->wrapped);
    repo_keys_derive(&c->keys, master);
    memcpy(c->check, c->keys.check, sizeof(c->check));
    OPENSSL_cleanse(master, sizeof(master));
}

int repo_config_create_generated(struct repo_config *c, const char *key, size_t keylen,
                                 struct util_err *err)
{
    uint8_t kek[32];
    repo_config_init(c);
    c->kdf = REPO_KDF_GENERATED;
    int rc = repo_generated_kek(c, key, keylen, kek, err);
    if (rc == 0)
        repo_config_wrap(c, kek);
    else
        memset(c, 0, sizeof(*c));
    OPENSSL_cleanse(kek, sizeof(kek));
    return rc;
}

int repo_config_create(struct repo_config *c, const char *pass, size_t passlen,
                       enum repo_scrypt_set set, struct util_err *err)
{
    uint8_t master[32], kek[32];
    int rc;

    if (passlen == 0)
        return util_err_set(err, UTIL_EINVAL, "the repository key is empty");
    repo_config_init(c);
    c->kdf = REPO_KDF_SCRYPT;
    c->scrypt_n = repo_scrypt_sets[set].n;
    c->scrypt_r = repo_scrypt_sets[set].r;
    c->scrypt_p = repo_scrypt_sets[set].p;
    repo_random(master, sizeof(master));
    if ((rc = repo_scrypt(c, pass, passlen, kek, err)) != 0)
        goto out;
    repo_seal_key(kek, REPO_WRAP_AAD, strlen(REPO_WRAP_AAD), master, 32, c->wrapped);
    repo_keys_derive(&c->keys, master);
    memcpy(c->check, c->keys.check, sizeof(c->check));
out:
    OPENSSL_cleanse(master, sizeof(master));
    OPENSSL_cleanse(kek, sizeof(kek));
    return rc;
}

static json_t *repo_b64(const uint8_t *v, size_t n)
{
    char *s = util_malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)s, v, (int)n);
    json_t *j = json_string(s);
    free(s);
    return j;
}

/* Exactly n bytes of base64, or an error. */
static int repo_unb64(const char *s, uint8_t *v, size_t n)
{
    size_t len = strlen(s), pad = 0;
    uint8_t tmp[128];
    if (len != 4 * ((n + 2) / 3) || len > 4 * sizeof(tmp) / 3)
        return UTIL_EINVAL;
    if (len >= 1 && s[len - 1] == '=')
        pad++;
    if (len >= 2 && s[len - 2] == '=')
        pad++;
    int got = EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)len);
    if (got < 0 || (size_t)got - pad != n)
        return UTIL_EINVAL;
    memcpy(v, tmp, n);
    return 0;
}

char *repo_config_encode(const struct repo_config *c)
{
    char check[33];
    repo_hex(c->check, sizeof(c->check), check);
    json_t *kdf = c->kdf == REPO_KDF_GENERATED
                      ? json_pack("{s:s, s:o}", "algorithm", "hmac-sha256", "salt",
                                  repo_b64(c->salt, sizeof(c->salt)))
                      : json_pack("{s:s, s:I, s:i, s:i, s:o}", "algorithm", "scrypt", "N",
                                  (json_int_t)c->scrypt_n, "r", (int)c->scrypt_r, "p",
                                  (int)c->scrypt_p, "salt", repo_b64(c->salt, sizeof(c->salt)));
    json_t *o = json_pack("{s:i, s:{s:s, s:I, s:I, s:I}, s:s, s:s, s:s, s:o, s:{s:s, s:o}, s:s}",
                          "format", c->format, "chunker", "algorithm", "fastcdc-gear64", "min",
                          (json_int_t)c->chunk_min, "avg", (json_int_t)c->chunk_avg, "max",
                          (json_int_t)c->chunk_max, "compression", c->compression, "hash", "sha256",
                          "cipher", "aes-256-gcm", "kdf", kdf, "masterKey", "wrap", "aes-256-gcm",
                          "sealed", repo_b64(c->wrapped, sizeof(c->wrapped)), "keyCheck", check);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    char *r = util_asprintf("%s\n", s);
    free(s);
    return r;
}

/*
 * config.json's "kdf", into c: the keyed hash of a generated key, or scrypt at one of
 * the named costs (repo_scrypt_sets). Any other cost is refused here, before anything
 * is allocated for it; *salt points into kdfo.
 */
static int repo_config_decode_kdf(struct repo_config *c, json_t *kdfo, const char **salt,
                                  struct util_err *err)
{
    const char *algo = json_string_value(json_object_get(kdfo, "algorithm")), *kdf = "";
    const struct repo_scrypt_params *set;
    json_int_t n = 0, r = 0, p = 0;
    json_error_t jerr;

    if (algo != NULL && strcmp(algo, "hmac-sha256") == 0) {
        c->kdf = REPO_KDF_GENERATED;
        if (json_unpack_ex(kdfo, &jerr, JSON_STRICT, "{s:s, s:s}", "algorithm", &kdf, "salt",
                           salt) != 0)
            return util_err_set(err, UTIL_EINVAL, "config.json: kdf: %s", jerr.text);
        return 0;
    }
    c->kdf = REPO_KDF_SCRYPT;
    if (json_unpack_ex(kdfo, &jerr, JSON_STRICT, "{s:s, s:I, s:I, s:I, s:s}", "algorithm", &kdf,
                       "N", &n, "r", &r, "p", &p, "salt", salt) != 0)
        return util_err_set(err, UTIL_EINVAL, "config.json: kdf: %s", jerr.text);
    if (strcmp(kdf, "scrypt") != 0)
        return util_err_set(err, UTIL_EINVAL,
                            "config.json: kdf \"%.40s\" is not an algorithm this lode knows", kdf);
    if (n < 0 || r < 0 || p < 0 ||
        (set = repo_scrypt_find((uint64_t)n, (uint64_t)r, (uint64_t)p)) == NULL)
        return util_err_set(err, UTIL_EINVAL,
                            "config.json: scrypt cost N=%lld, r=%lld, p=%lld is not one lode "
                            "accepts (only N=32768, r=8 with p=1 or p=3: docs/repository.md, "
                            "\"The repository key\"); refused before deriving anything, so an "
                            "edited config.json cannot make every command allocate its cost",
                            (long long)n, (long long)r, (long long)p);
    c->scrypt_n = set->n;
    c->scrypt_r = set->r;
    c->scrypt_p = set->p;
    return 0;
}

int repo_config_decode(struct repo_config *c, const char *json, size_t len, struct util_err *err)
{
    json_error_t jerr;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    const char *algo, *comp, *hash, *cipher, *salt = NULL, *wrap, *sealed, *check;
    json_int_t fmt, mn, avg, mx;
    json_t *kdfo;
    int rc = UTIL_EINVAL;

    memset(c, 0, sizeof(*c));
    if (!o)
        return util_err_set(err, UTIL_EINVAL, "config.json is not JSON: %s (line %d)", jerr.text,
                            jerr.line);
    if (json_unpack_ex(o, &jerr, JSON_STRICT,
                       "{s:I, s:{s:s, s:I, s:I, s:I}, s:s, s:s, s:s, s:o, s:{s:s, s:s}, s:s}",
                       "format", &fmt, "chunker", "algorithm", &algo, "min", &mn, "avg", &avg,
                       "max", &mx, "compression", &comp, "hash", &hash, "cipher", &cipher, "kdf",
                       &kdfo, "masterKey", "wrap", &wrap, "sealed", &sealed, "keyCheck",
                       &check) != 0) {
        util_err_set(err, UTIL_EINVAL, "config.json: %s", jerr.text);
        goto out;
    }
    if ((rc = repo_config_decode_kdf(c, kdfo, &salt, err)) != 0)
        goto out;
    rc = UTIL_EINVAL;
    if (fmt != REPO_FORMAT) {
        util_err_set(err, UTIL_EINVAL,
                     "config.json: this repository is format %lld, and this lode reads format %d "
                     "only (docs/repository.md, \"Format versions\"): use the lode that wrote "
                     "it, or make a new repository with lode init and back up into that",
                     (long long)fmt, REPO_FORMAT);
        goto out;
    }
    if (strcmp(algo, "fastcdc-gear64") != 0 || strcmp(hash, "sha256") != 0 ||
        strcmp(cipher, "aes-256-gcm") != 0 || strcmp(wrap, "aes-256-gcm") != 0 ||
        strncmp(comp, "zstd-", 5) != 0 || strlen(comp) >= sizeof(c->compression)) {
        util_err_set(err, UTIL_EINVAL, "config.json: an algorithm is not one this lode knows");
        goto out;
    }
    if (mn < 64 || avg < mn || mx < avg || mx > (64 << 20) || (avg & (avg - 1)) != 0) {
        util_err_set(err, UTIL_EINVAL, "config.json: a chunker parameter is out of range");
        goto out;
    }
    uint64_t level;
    if (util_parse_u64(comp + 5, strlen(comp + 5), 19, &level) != 0 || level < 1) {
        util_err_set(err, UTIL_EINVAL, "config.json: compression \"%s\" is not zstd-1..19", comp);
        goto out;
    }
    if (repo_unb64(salt, c->salt, sizeof(c->salt)) != 0 ||
        repo_unb64(sealed, c->wrapped, sizeof(c->wrapped)) != 0 || strlen(check) != 32 ||
        repo_unhex(check, c->check, sizeof(c->check)) != 0) {
        util_err_set(err, UTIL_EINVAL,
                     "config.json: the salt, wrapped key or key check is "
                     "malformed");
        goto out;
    }
    c->format = (int)fmt;
    c->chunk_min = (uint32_t)mn;
    c->chunk_avg = (uint32_t)avg;
    c->chunk_max = (uint32_t)mx;
    memcpy(c->compression, comp, strlen(comp) + 1);
    rc = 0;
out:
    json_decref(o);
    if (rc != 0)
        memset(c, 0, sizeof(*c));
    return rc;
}

int repo_config_unlock(struct repo_config *c, const char *pass, size_t passlen,
                       struct util_err *err)
{
    uint8_t kek[32], master[32];
    int rc = c->kdf == REPO_KDF_GENERATED ? repo_generated_kek(c, pass, passlen, kek, err)
                                          : repo_scrypt(c, pass, passlen, kek, err);
    if (rc != 0)
        return rc;
    if (repo_unseal_key(kek, REPO_WRAP_AAD, strlen(REPO_WRAP_AAD), c->wrapped, sizeof(c->wrapped),
                        master) != 0) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "the repository key does not open this repository (wrong key file?)");
        goto out;
    }
    repo_keys_derive(&c->keys, master);
    if (CRYPTO_memcmp(c->keys.check, c->check, sizeof(c->check)) != 0) {
        memset(&c->keys, 0, sizeof(c->keys));
        rc = util_err_set(err, UTIL_EINVAL,
                          "config.json: the key check does not match the master key (damaged "
                          "config)");
    }
out:
    OPENSSL_cleanse(kek, sizeof(kek));
    OPENSSL_cleanse(master, sizeof(master));
    return rc;
}

size_t repo_key_text_len(const char *data, size_t len)
{
    if (len > 0 && data[len - 1] == '\n')
        len--;
    if (len > 0 && data[len - 1] == '\r')
        len--;
    return len;
}

/*
 * The key file's permissions, as ssh checks a private key's: a regular file owned by
 * the user reading it may not be readable, writable or executable by group or others
 * (docs/repository.md, "The key file"). A file owned by someone else (a Kubernetes
 * Secret's file, root's, read through fsGroup) is its owner's decision and not checked;
 * nor is a pipe (--key-file <(...)).
 */
static int repo_key_file_mode(const char *path, const struct stat *st, struct util_err *err)
{
    if (!S_ISREG(st->st_mode) || st->st_uid != geteuid() || (st->st_mode & 077) == 0)
        return 0;
    return util_err_set(err, UTIL_EINVAL,
                        "the key file %s is open to others (mode %04o): anyone who can read it "
                        "can read every backup; run chmod 600 %s",
                        path, (unsigned)(st->st_mode & 07777), path);
}

int repo_key_file_read(const char *path, char **pass, size_t *len, struct util_err *err)
{
    struct util_buf b;
    struct stat st;
    char chunk[4096];
    ssize_t got;
    int fd, rc = 0;

    /* Checked on the descriptor that is read, so a rename between the two cannot swap it. */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return util_err_set(err, UTIL_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = util_err_set(err, UTIL_EIO, "%s: cannot stat: %s", path, strerror(errno));
        goto close_fd;
    }
    if ((rc = repo_key_file_mode(path, &st, err)) != 0)
        goto close_fd;
    util_buf_init(&b);
    while ((got = read(fd, chunk, sizeof(chunk))) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = util_err_set(err, UTIL_EIO, "%s: cannot read: %s", path, strerror(errno));
            break;
        }
        util_buf_append(&b, chunk, (size_t)got);
    }
    OPENSSL_cleanse(chunk, sizeof(chunk));
    if (rc == 0) {
        size_t n = repo_key_text_len(b.data, b.len);
        if (n == 0)
            rc = util_err_set(err, UTIL_EINVAL, "the key file %s is empty", path);
        else {
            b.data[n] = '\0'; /* within the buffer, which is always terminated */
            *len = n;
            *pass = util_buf_steal(&b);
        }
    }
    if (rc != 0)
        util_buf_free(&b);
close_fd:
    close(fd);
    return rc;
}
