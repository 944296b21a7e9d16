/*
 * repo_pack: chunks and data packs (docs/repository.md, "Data: chunks, compression,
 * encryption"): a chunk compressed and sealed alone, packs of about 16 MiB holding
 * blobs and a sealed table of where each lies, so a pack can be read without any
 * other object. Pure functions over bytes (pack.c, crypto.c).
 *
 * Costs: 48 bytes per chunk entry in memory; a pack's table is about 45 bytes a chunk.
 */
#ifndef LODE_REPO_PACK_H
#define LODE_REPO_PACK_H

/* Part of repo/repo.h, which includes it after the types it builds on. */
#ifndef LODE_REPO_H
#error "include repo/repo.h, not repo_pack.h"
#endif

/* ---- chunks and packs ---- */

struct repo_sealer; /* opaque: pack.c */

#define REPO_BLOB_ZSTD 1 /* stored compressed; absent: stored raw (did not pay) */

/* A chunk's plain length is at most config.json's largest chunker maximum; a stored
 * entry claiming more is damage. */
#define REPO_CHUNK_PLAIN_MAX (64u << 20)

/*
 * Where one chunk lives: 48 bytes, one per chunk of a snapshot in memory (the chunk
 * set, the dedup table, a re-run's parent set), so the flags share a word with the
 * plain length (at most REPO_CHUNK_PLAIN_MAX, 27 bits) rather than padding the entry
 * to 52. The stored encodings are unchanged (pack.c).
 */
struct repo_chunk {
    uint8_t hash[REPO_HASH_LEN]; /* SHA-256 of the plain chunk */
    uint32_t pack;               /* index into the pack list of its set */
    uint32_t offset;             /* in the pack */
    uint32_t stored;             /* sealed length */
    uint32_t plain : 28;         /* plain length */
    uint32_t flags : 4;          /* REPO_BLOB_ZSTD */
};

/*
 * Compresses (zstd at level, when the result is under 98% of the input) and seals
 * one chunk. Thread-safe; *out is allocated for the caller.
 */
void repo_blob_seal(const struct repo_keys *k, int level, const uint8_t hash[REPO_HASH_LEN],
                    const uint8_t *plain, size_t len, uint8_t **out, size_t *outlen,
                    uint8_t *flags);
/*
 * The same for a thread that seals many chunks (a backup's seal jobs, its metadata):
 * the sealer keeps the cipher's key schedule, a zstd context and a pool of 64 random
 * nonces between chunks, which one chunk at a time made anew each time (for a chunk
 * of a small file, more work than the sealing). The blob is what repo_blob_seal
 * makes, byte for byte but the nonce. One sealer per thread: not thread-safe.
 */
struct repo_sealer *repo_sealer_new(const struct repo_keys *k);
void repo_sealer_free(struct repo_sealer *s);
void repo_sealer_blob(struct repo_sealer *s, int level, const uint8_t hash[REPO_HASH_LEN],
                      const uint8_t *plain, size_t len, uint8_t **out, size_t *outlen,
                      uint8_t *flags);
/* Opens a blob into out (c->plain bytes) and checks its hash. */
int repo_blob_open(const struct repo_keys *k, const struct repo_chunk *c, const uint8_t *sealed,
                   uint8_t *out, struct util_err *err);

/* A pack being filled: "LODEPAK1", blobs, the sealed table, its length, "LODEPEND". */
struct repo_pack_writer {
    struct util_buf buf;
    struct repo_chunk *v; /* pack fields are 0 until the caller sets them */
    size_t n, cap;
};

void repo_pack_writer_init(struct repo_pack_writer *w);
/* Appends a sealed blob; returns its entry (valid until the next add). */
const struct repo_chunk *repo_pack_writer_add(struct repo_pack_writer *w,
                                              const uint8_t hash[REPO_HASH_LEN],
                                              const uint8_t *sealed, size_t len, uint8_t flags,
                                              uint32_t plain);
/* Appends the table; hands over the bytes and their SHA-256 (the pack id) and
 * leaves w empty, ready for the next pack. The entries stay in w->v until reset. The
 * table is written and sealed in the pack's own buffer (no copy of it, which for a
 * pack of 250,000 tiny chunks is 11 MB). */
void repo_pack_writer_finish(struct repo_pack_writer *w, const struct repo_keys *k, uint8_t **data,
                             size_t *len, uint8_t id[REPO_HASH_LEN]);
/*
 * For a caller that keeps each chunk's entry itself (a backup: in its chunk set) rather
 * than a 48-byte copy in w->v for every chunk of the pack: _put appends a sealed blob
 * and returns its offset, keeping no entry; _finish_with takes the table's n entries,
 * in the order of the puts, from entry(i, arg) (their pack fields are not used).
 */
uint32_t repo_pack_writer_put(struct repo_pack_writer *w, const uint8_t *sealed, size_t len);
/* The length the pack will have once finished with n entries: its blobs so far, the
 * sealed table (45 bytes an entry) and the tail. */
size_t repo_pack_writer_size(const struct repo_pack_writer *w, size_t n);
typedef const struct repo_chunk *(*repo_pack_entry_cb)(size_t i, void *arg);
void repo_pack_writer_finish_with(struct repo_pack_writer *w, const struct repo_keys *k, size_t n,
                                  repo_pack_entry_cb entry, void *arg, uint8_t **data, size_t *len,
                                  uint8_t id[REPO_HASH_LEN]);
void repo_pack_writer_reset(struct repo_pack_writer *w);
void repo_pack_writer_free(struct repo_pack_writer *w);
/* Reads a whole pack's table (a pack can be read alone); *v is allocated. */
int repo_pack_read_table(const struct repo_keys *k, const uint8_t *pack, size_t len,
                         struct repo_chunk **v, size_t *n, struct util_err *err);
/*
 * The same from the pack's last tail_len bytes (a ranged GET), for checks that do not
 * read the blobs: the table is about 45 bytes a chunk. When the tail is too short,
 * returns 0 with *need set to the bytes to fetch (and *v NULL); otherwise *need is 0.
 */
int repo_pack_read_tail(const struct repo_keys *k, const uint8_t *tail, size_t tail_len,
                        uint64_t pack_len, size_t *need, struct repo_chunk **v, size_t *n,
                        struct util_err *err);

#endif
