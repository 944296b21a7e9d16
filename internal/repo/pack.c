/*
 * Chunks, packs and chunk sets.
 *
 * A pack: "LODEPAK1", the sealed blobs back to back, the sealed table (one
 * 45-byte entry per blob: hash, offset, stored and plain length, flags), the
 * table's sealed length (u32, little-endian) and "LODEPEND". The table makes a
 * pack readable on its own; the blob's associated data (hash, flags, plain
 * length) means a blob opens only as the chunk the table says it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <zstd.h>

#include "repo/repo.h"

#define PACK_MAGIC     "LODEPAK1"
#define PACK_END       "LODEPEND"
#define PACK_ENTRY     45
#define PACK_TABLE_AAD "lodestore pack table"

_Static_assert(sizeof(struct repo_chunk) == 48, "a chunk entry is 48 bytes in memory");

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void repo_blob_aad(uint8_t aad[REPO_HASH_LEN + 5], const uint8_t *hash, uint8_t flags,
                          uint32_t plain)
{
    memcpy(aad, hash, REPO_HASH_LEN);
    aad[REPO_HASH_LEN] = flags;
    put32(aad + REPO_HASH_LEN + 1, plain);
}

#define SEALER_NONCES 64 /* nonces drawn from the system generator at a time */

struct repo_sealer {
    EVP_CIPHER_CTX *gcm; /* AES-256-GCM with the data key: its key schedule is made once */
    ZSTD_CCtx *zstd;     /* its tables are allocated once, not for every chunk */
    uint8_t nonces[SEALER_NONCES][12];
    size_t nonce_next; /* SEALER_NONCES: the pool is used up */
};

struct repo_sealer *repo_sealer_new(const struct repo_keys *k)
{
    struct repo_sealer *s = util_calloc(1, sizeof(*s));
    s->gcm = EVP_CIPHER_CTX_new();
    s->zstd = ZSTD_createCCtx();
    if (s->gcm == NULL || s->zstd == NULL ||
        EVP_EncryptInit_ex(s->gcm, EVP_aes_256_gcm(), NULL, k->data, NULL) != 1) {
        fprintf(stderr, "lode: out of memory (cipher or compression context)\n");
        abort();
    }
    s->nonce_next = SEALER_NONCES;
    return s;
}

void repo_sealer_free(struct repo_sealer *s)
{
    if (s == NULL)
        return;
    EVP_CIPHER_CTX_free(s->gcm);
    ZSTD_freeCCtx(s->zstd);
    OPENSSL_cleanse(s->nonces, sizeof(s->nonces));
    free(s);
}

/* What repo_seal does (crypto.c), on the sealer's context: a fresh random nonce, the
 * ciphertext, the tag. plain may be out + 12 (sealed in place). */
static void repo_sealer_gcm(struct repo_sealer *s, const uint8_t *aad, size_t aadlen,
                            const uint8_t *plain, size_t len, uint8_t *out)
{
    int n = 0;
    if (s->nonce_next == SEALER_NONCES) {
        if (RAND_bytes(&s->nonces[0][0], (int)sizeof(s->nonces)) != 1) {
            fprintf(stderr, "lode: the system random generator failed\n");
            abort();
        }
        s->nonce_next = 0;
    }
    memcpy(out, s->nonces[s->nonce_next++], 12);
    if (EVP_EncryptInit_ex(s->gcm, NULL, NULL, NULL, out) != 1 ||
        EVP_EncryptUpdate(s->gcm, NULL, &n, aad, (int)aadlen) != 1)
        goto fail;
    /* EVP takes int lengths: feed large inputs in pieces. */
    for (size_t off = 0; off < len;) {
        size_t step = len - off > (1u << 30) ? (1u << 30) : len - off;
        if (EVP_EncryptUpdate(s->gcm, out + 12 + off, &n, plain + off, (int)step) != 1)
            goto fail;
        off += step;
    }
    if (EVP_EncryptFinal_ex(s->gcm, out + 12 + len, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(s->gcm, EVP_CTRL_GCM_GET_TAG, 16, out + 12 + len) != 1)
        goto fail;
    return;
fail:
    fprintf(stderr, "lode: AES-256-GCM encryption failed\n");
    abort();
}

void repo_sealer_blob(struct repo_sealer *s, int level, const uint8_t hash[REPO_HASH_LEN],
                      const uint8_t *plain, size_t len, uint8_t **out, size_t *outlen,
                      uint8_t *flags)
{
    size_t bound = ZSTD_compressBound(len);
    /* One buffer for both steps: zstd writes after the nonce's 12 bytes and the
     * cipher encrypts there in place (GCM is a stream cipher), so a chunk touches the
     * pages of one buffer rather than of a scratch and a sealed copy. New pages fault
     * on first touch, which cost a backup's sealing threads a fifth of their time
     * (docs/benchmarks.md, "Where the first backup's CPU goes"). The buffer is
     * bound + REPO_SEAL_EXTRA bytes whatever the blob's length; only what is
     * written is touched. */
    uint8_t *o = util_malloc(bound + REPO_SEAL_EXTRA), *z = o + 12;
    /* The same bytes as ZSTD_compress, which is this call on a context of its own. */
    size_t zn = ZSTD_compressCCtx(s->zstd, z, bound, plain, len, level);
    uint8_t aad[REPO_HASH_LEN + 5];
    const uint8_t *src = plain;
    size_t n = len;

    /* Compression pays when it saves at least 2%; otherwise the chunk is stored raw,
     * which is also the anomaly detector's sign of incompressible data. */
    *flags = 0;
    if (!ZSTD_isError(zn) && zn < len - len / 50) {
        *flags = REPO_BLOB_ZSTD;
        src = z;
        n = zn;
    }
    repo_blob_aad(aad, hash, *flags, (uint32_t)len);
    repo_sealer_gcm(s, aad, sizeof(aad), src, n, o);
    *out = o;
    *outlen = n + REPO_SEAL_EXTRA;
}

void repo_blob_seal(const struct repo_keys *k, int level, const uint8_t hash[REPO_HASH_LEN],
                    const uint8_t *plain, size_t len, uint8_t **out, size_t *outlen, uint8_t *flags)
{
    struct repo_sealer *s = repo_sealer_new(k);
    repo_sealer_blob(s, level, hash, plain, len, out, outlen, flags);
    repo_sealer_free(s);
}

int repo_blob_open(const struct repo_keys *k, const struct repo_chunk *c, const uint8_t *sealed,
                   uint8_t *out, struct util_err *err)
{
    uint8_t aad[REPO_HASH_LEN + 5], digest[SHA256_DIGEST_LENGTH], *tmp = NULL;
    size_t n;
    int rc;
    char hex[2 * REPO_HASH_LEN + 1];

    repo_hex(c->hash, REPO_HASH_LEN, hex);
    if (c->stored < REPO_SEAL_EXTRA || (c->flags & ~REPO_BLOB_ZSTD) != 0)
        return util_err_set(err, UTIL_EIO, "chunk %s: malformed entry", hex);
    n = c->stored - REPO_SEAL_EXTRA;
    if (!(c->flags & REPO_BLOB_ZSTD) && n != c->plain)
        return util_err_set(err, UTIL_EIO, "chunk %s: stored length does not match", hex);
    repo_blob_aad(aad, c->hash, c->flags, c->plain);
    tmp = util_malloc(n ? n : 1);
    if ((rc = repo_unseal(k, aad, sizeof(aad), sealed, c->stored, tmp, err)) != 0) {
        util_err_set(err, rc, "chunk %s: authentication failed (changed or wrong key)", hex);
        goto out;
    }
    if (c->flags & REPO_BLOB_ZSTD) {
        size_t got = ZSTD_decompress(out, c->plain, tmp, n);
        if (ZSTD_isError(got) || got != c->plain) {
            rc = util_err_set(err, UTIL_EIO, "chunk %s: does not decompress", hex);
            goto out;
        }
    } else {
        memcpy(out, tmp, n);
    }
    SHA256(out, c->plain, digest);
    if (memcmp(digest, c->hash, REPO_HASH_LEN) != 0)
        rc = util_err_set(err, UTIL_EIO, "chunk %s: content does not match its hash", hex);
out:
    free(tmp);
    return rc;
}

void repo_pack_writer_init(struct repo_pack_writer *w)
{
    memset(w, 0, sizeof(*w));
    util_buf_init(&w->buf);
}

uint32_t repo_pack_writer_put(struct repo_pack_writer *w, const uint8_t *sealed, size_t len)
{
    uint32_t off;
    if (w->buf.len == 0)
        util_buf_append(&w->buf, PACK_MAGIC, 8);
    off = (uint32_t)w->buf.len;
    util_buf_append(&w->buf, sealed, len);
    return off;
}

size_t repo_pack_writer_size(const struct repo_pack_writer *w, size_t n)
{
    return (w->buf.len ? w->buf.len : 8) + 4 + n * PACK_ENTRY + REPO_SEAL_EXTRA + 12;
}

const struct repo_chunk *repo_pack_writer_add(struct repo_pack_writer *w,
                                              const uint8_t hash[REPO_HASH_LEN],
                                              const uint8_t *sealed, size_t len, uint8_t flags,
                                              uint32_t plain)
{
    if (plain > REPO_CHUNK_PLAIN_MAX || (flags & ~REPO_BLOB_ZSTD) != 0)
        abort(); /* the chunker's maximum and repo_blob_seal bound both */
    w->v = util_grow(w->v, &w->cap, w->n + 1, sizeof(*w->v));
    struct repo_chunk *c = &w->v[w->n++];
    memset(c, 0, sizeof(*c));
    memcpy(c->hash, hash, REPO_HASH_LEN);
    c->offset = repo_pack_writer_put(w, sealed, len);
    c->stored = (uint32_t)len;
    c->plain = plain;
    c->flags = flags;
    return c;
}

static const struct repo_chunk *repo_pack_own_entry(size_t i, void *arg)
{
    const struct repo_pack_writer *w = arg;
    return &w->v[i];
}

void repo_pack_writer_finish(struct repo_pack_writer *w, const struct repo_keys *k, uint8_t **data,
                             size_t *len, uint8_t id[REPO_HASH_LEN])
{
    repo_pack_writer_finish_with(w, k, w->n, repo_pack_own_entry, w, data, len, id);
}

/*
 * The table goes where it ends up: its plain bytes 12 bytes (the nonce) past the end
 * of the blobs, sealed in place, then the tail; the buffer grows once for all of it.
 */
void repo_pack_writer_finish_with(struct repo_pack_writer *w, const struct repo_keys *k, size_t n,
                                  repo_pack_entry_cb entry, void *arg, uint8_t **data, size_t *len,
                                  uint8_t id[REPO_HASH_LEN])
{
    size_t tlen = 4 + n * PACK_ENTRY, start;
    uint8_t *sealed, *table, tail[12];

    if (w->buf.len == 0)
        util_buf_append(&w->buf, PACK_MAGIC, 8);
    start = w->buf.len;
    w->buf.data = util_grow(w->buf.data, &w->buf.cap, start + tlen + REPO_SEAL_EXTRA + 12 + 1, 1);
    sealed = (uint8_t *)w->buf.data + start;
    table = sealed + 12;
    put32(table, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        const struct repo_chunk *c = entry(i, arg);
        uint8_t *e = table + 4 + i * PACK_ENTRY;
        memcpy(e, c->hash, REPO_HASH_LEN);
        put32(e + 32, c->offset);
        put32(e + 36, c->stored);
        put32(e + 40, c->plain);
        e[44] = (uint8_t)c->flags;
    }
    repo_seal(k, PACK_TABLE_AAD, strlen(PACK_TABLE_AAD), table, tlen, sealed);
    w->buf.len = start + tlen + REPO_SEAL_EXTRA;
    put32(tail, (uint32_t)(tlen + REPO_SEAL_EXTRA));
    memcpy(tail + 4, PACK_END, 8);
    util_buf_append(&w->buf, tail, sizeof(tail));
    *len = w->buf.len;
    *data = (uint8_t *)util_buf_steal(&w->buf);
    SHA256(*data, *len, id);
}

void repo_pack_writer_reset(struct repo_pack_writer *w)
{
    util_buf_free(&w->buf);
    w->n = 0;
}

void repo_pack_writer_free(struct repo_pack_writer *w)
{
    util_buf_free(&w->buf);
    free(w->v);
    memset(w, 0, sizeof(*w));
}

/* The length of the sealed table from the pack's last 12 bytes, checked against its size. */
static int repo_pack_table_len(const uint8_t *tail12, uint64_t len, uint32_t *slen,
                               struct util_err *err)
{
    if (len < 8 + 12 + REPO_SEAL_EXTRA + 4 || memcmp(tail12 + 4, PACK_END, 8) != 0)
        return util_err_set(err, UTIL_EIO, "not a pack (wrong magic or too short)");
    *slen = get32(tail12);
    if (*slen < REPO_SEAL_EXTRA + 4 || *slen > len - 20)
        return util_err_set(err, UTIL_EIO, "pack table length %u is out of range", *slen);
    return 0;
}

/* Opens the sealed table (slen bytes) of a pack whose blobs end at start. */
static int repo_pack_parse_table(const struct repo_keys *k, const uint8_t *sealed, uint32_t slen,
                                 uint64_t start, struct repo_chunk **v, size_t *n,
                                 struct util_err *err)
{
    size_t tlen = slen - REPO_SEAL_EXTRA;
    uint8_t *table = util_malloc(tlen);
    uint32_t count, plain;
    int rc;

    if ((rc = repo_unseal(k, PACK_TABLE_AAD, strlen(PACK_TABLE_AAD), sealed, slen, table, err)) !=
        0)
        goto out;
    count = get32(table);
    if ((tlen - 4) / PACK_ENTRY != count || (tlen - 4) % PACK_ENTRY != 0) {
        rc = util_err_set(err, UTIL_EIO, "pack table holds %u entries in %zu bytes", count, tlen);
        goto out;
    }
    *v = util_calloc(count ? count : 1, sizeof(**v));
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *e = table + 4 + (size_t)i * PACK_ENTRY;
        struct repo_chunk *c = &(*v)[i];
        memcpy(c->hash, e, REPO_HASH_LEN);
        c->offset = get32(e + 32);
        c->stored = get32(e + 36);
        plain = get32(e + 40);
        c->plain = plain & (REPO_CHUNK_PLAIN_MAX * 2 - 1);
        c->flags = e[44] & REPO_BLOB_ZSTD;
        if (c->offset < 8 || c->stored < REPO_SEAL_EXTRA || c->offset > start ||
            c->stored > start - c->offset || (e[44] & ~REPO_BLOB_ZSTD) != 0 ||
            plain > REPO_CHUNK_PLAIN_MAX) {
            rc = util_err_set(err, UTIL_EIO, "pack table entry %u points outside the pack", i);
            free(*v);
            *v = NULL;
            goto out;
        }
    }
    *n = count;
out:
    free(table);
    return rc;
}

int repo_pack_read_table(const struct repo_keys *k, const uint8_t *pack, size_t len,
                         struct repo_chunk **v, size_t *n, struct util_err *err)
{
    uint32_t slen;
    int rc;

    *v = NULL;
    *n = 0;
    if (len < 8 + 12 + REPO_SEAL_EXTRA + 4 || memcmp(pack, PACK_MAGIC, 8) != 0)
        return util_err_set(err, UTIL_EIO, "not a pack (wrong magic or too short)");
    if ((rc = repo_pack_table_len(pack + len - 12, len, &slen, err)) != 0)
        return rc;
    return repo_pack_parse_table(k, pack + len - 12 - slen, slen, len - 12 - slen, v, n, err);
}

int repo_pack_read_tail(const struct repo_keys *k, const uint8_t *tail, size_t tail_len,
                        uint64_t pack_len, size_t *need, struct repo_chunk **v, size_t *n,
                        struct util_err *err)
{
    uint32_t slen;
    int rc;

    *v = NULL;
    *n = 0;
    *need = 0;
    if (tail_len < 12 || tail_len > pack_len)
        return util_err_set(err, UTIL_EINVAL, "a pack's tail must hold its last 12 bytes");
    if ((rc = repo_pack_table_len(tail + tail_len - 12, pack_len, &slen, err)) != 0)
        return rc;
    if (tail_len < (size_t)slen + 12) {
        *need = (size_t)slen + 12;
        return 0;
    }
    return repo_pack_parse_table(k, tail + tail_len - 12 - slen, slen, pack_len - 12 - slen, v, n,
                                 err);
}

/* ---- chunk sets ---- */

void repo_chunkset_init(struct repo_chunkset *s)
{
    memset(s, 0, sizeof(*s));
}

uint32_t repo_chunkset_pack(struct repo_chunkset *s, const uint8_t id[REPO_HASH_LEN])
{
    /* Newest first: a backup adds chunks of the pack it just wrote. */
    for (size_t i = s->npacks; i-- > 0;)
        if (memcmp(s->packs[i], id, REPO_HASH_LEN) == 0)
            return (uint32_t)i;
    s->packs = util_grow(s->packs, &s->cappacks, s->npacks + 1, sizeof(*s->packs));
    memcpy(s->packs[s->npacks], id, REPO_HASH_LEN);
    return (uint32_t)s->npacks++;
}

static size_t repo_chunkset_slot(const uint8_t *hash, size_t icap)
{
    uint64_t v;
    memcpy(&v, hash, sizeof(v)); /* SHA-256 bytes are as good as any hash of them */
    return (size_t)(v & (icap - 1));
}

/* Puts position pos of v into the index (which has room and lacks its hash). */
static void repo_chunkset_index_put(struct repo_chunkset *s, size_t pos)
{
    size_t i = repo_chunkset_slot(s->v[pos].hash, s->icap);
    while (s->index[i] != 0)
        i = (i + 1) & (s->icap - 1);
    s->index[i] = (uint32_t)pos + 1;
}

/* Keeps the index at most 3/4 full for n + 1 entries, building it when absent. */
static void repo_chunkset_index_reserve(struct repo_chunkset *s)
{
    size_t icap = s->icap ? s->icap : 1024;
    if (s->index != NULL && (s->n + 1) * 4 <= s->icap * 3)
        return;
    while ((s->n + 1) * 4 > icap * 3)
        icap *= 2;
    free(s->index);
    s->icap = icap;
    s->index = util_calloc(icap, sizeof(*s->index));
    for (size_t i = 0; i < s->n; i++)
        repo_chunkset_index_put(s, i);
}

void repo_chunkset_add(struct repo_chunkset *s, const struct repo_chunk *c)
{
    if (s->index != NULL)
        repo_chunkset_index_reserve(s);
    s->v = util_grow(s->v, &s->cap, s->n + 1, sizeof(*s->v));
    s->v[s->n++] = *c;
    if (s->index != NULL)
        repo_chunkset_index_put(s, s->n - 1);
}

struct repo_chunk *repo_chunkset_lookup(struct repo_chunkset *s, const uint8_t hash[REPO_HASH_LEN])
{
    if (s->index == NULL) {
        if (s->n == 0)
            return NULL;
        repo_chunkset_index_reserve(s);
    }
    for (size_t i = repo_chunkset_slot(hash, s->icap);; i = (i + 1) & (s->icap - 1)) {
        uint32_t p = s->index[i];
        if (p == 0)
            return NULL;
        if (memcmp(s->v[p - 1].hash, hash, REPO_HASH_LEN) == 0)
            return &s->v[p - 1];
    }
}

bool repo_chunkset_put(struct repo_chunkset *s, const struct repo_chunk *c)
{
    if (repo_chunkset_lookup(s, c->hash) != NULL)
        return false;
    repo_chunkset_index_reserve(s);
    repo_chunkset_add(s, c);
    return true;
}

static int repo_chunk_cmp(const void *a, const void *b)
{
    return memcmp(((const struct repo_chunk *)a)->hash, ((const struct repo_chunk *)b)->hash,
                  REPO_HASH_LEN);
}

static void repo_chunk_swap(struct repo_chunk *a, struct repo_chunk *b)
{
    struct repo_chunk t = *a;
    *a = *b;
    *b = t;
}

/*
 * Sorts v by hash in place. The C library's qsort is a merge sort that, for entries
 * of more than 32 bytes, allocates 16 bytes an entry to sort pointers (16 MiB for a
 * first backup of a million small files, at the end of the run, on top of the set).
 * This is a quicksort (middle element as pivot, Hoare's partition, the smaller side
 * first so the stack stays O(log n)) that needs no memory: hashes are uniform, so
 * the pivot splits evenly, and a set sorted but for a tail of new chunks (a re-run's)
 * costs no more than a shuffled one.
 */
static void repo_chunk_qsort(struct repo_chunk *v, size_t n)
{
    while (n > 12) {
        struct repo_chunk p = v[n / 2];
        size_t i = 0, j = n - 1;
        for (;;) {
            while (repo_chunk_cmp(&v[i], &p) < 0)
                i++;
            while (repo_chunk_cmp(&v[j], &p) > 0)
                j--;
            if (i >= j)
                break;
            repo_chunk_swap(&v[i], &v[j]);
            i++;
            j--;
        }
        /* [0, j] <= p <= [j + 1, n), both sides non-empty. */
        if (j + 1 < n - (j + 1)) {
            repo_chunk_qsort(v, j + 1);
            v += j + 1;
            n -= j + 1;
        } else {
            repo_chunk_qsort(v + j + 1, n - (j + 1));
            n = j + 1;
        }
    }
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && repo_chunk_cmp(&v[k - 1], &v[k]) > 0; k--)
            repo_chunk_swap(&v[k - 1], &v[k]);
}

void repo_chunkset_sort(struct repo_chunkset *s)
{
    size_t j = 0;
    free(s->index);
    s->index = NULL;
    s->icap = 0;
    repo_chunk_qsort(s->v, s->n);
    for (size_t i = 0; i < s->n; i++)
        if (j == 0 || memcmp(s->v[j - 1].hash, s->v[i].hash, REPO_HASH_LEN) != 0)
            s->v[j++] = s->v[i];
    s->n = j;
}

const struct repo_chunk *repo_chunkset_find(const struct repo_chunkset *s,
                                            const uint8_t hash[REPO_HASH_LEN])
{
    struct repo_chunk key;
    memcpy(key.hash, hash, REPO_HASH_LEN);
    return s->n ? bsearch(&key, s->v, s->n, sizeof(*s->v), repo_chunk_cmp) : NULL;
}

void repo_chunkset_free(struct repo_chunkset *s)
{
    free(s->packs);
    free(s->v);
    free(s->index);
    memset(s, 0, sizeof(*s));
}
