/*
 * repo: the repository format (docs/repository.md), as pure functions over bytes.
 *
 * Layout under the repository prefix, one source = <namespace>/<policy>/<host>:
 *   config.json                          format, chunker sizes, compression, the master
 *                                        key wrapped by the repository key, a key check
 *   data/<source>/<sha256>.pack          packs of chunks (about 16 MiB)
 *   meta/<source>/<id>.<seq>.meta        metadata packs: the chunks of the file lists
 *                                        and chunk sets (trees, below) a run added
 *   runs/<source>/<id>.json              the run record, written when a backup starts
 *   snapshots/<source>/<id>.json         the manifest, written last
 *   snapshots/<source>/<id>.incomplete   marks: empty objects beside the manifest
 *   snapshots/<source>/<id>.suspicious
 *   snapshots/<source>/<id>.pinned
 * repo_key_build() makes every one of these keys from parsed names and
 * repo_key_parse() reads them back; nothing else in Lodestore formats a key.
 *
 * Encryption: a random 256-bit master key, wrapped (AES-256-GCM) by a key that
 * scrypt derives from the repository key. Every chunk, pack trailer, metadata
 * chunk and the manifest's private part is sealed with AES-256-GCM under a key
 * derived from the master key (HMAC-SHA256), with a random 96-bit nonce and
 * associated data that binds the object to its place (a chunk to its hash), so a
 * swapped, truncated or changed object fails to open. The manifest's private part
 * is sealed with every public field of the manifest as associated data, so none
 * of them can change unnoticed; a mark carries a tag bound to its source, id and
 * kind. Not encrypted: names in keys (namespace, policy, host, snapshot id, pack
 * hash), the run record (parent id and maxRuntime) and the manifest's counters,
 * which the catalog and garbage collection read without the key.
 *
 * Format 2 (docs/repository.md, "Metadata"): a snapshot's file list and chunk set
 * are record streams cut at record boundaries by a content-defined rule into
 * metadata chunks of about 8 KiB, named by the SHA-256 of their plain bytes and
 * stored in metadata packs; an index of their places is cut the same way, level
 * over level, until one chunk, the root, is left. The manifest names the two
 * roots. A run stores only the chunks its parent's trees do not hold, so an
 * unchanged list costs nothing but the manifest.
 *
 * No I/O here: callers fetch and store the bytes (cli/ through internal/s3).
 * Costs: sealing runs at AES-GCM speed (about 2.5 GB/s per core); zstd level 1
 * compression about 200 MB/s per core on this project's machines; scrypt with the
 * default N = 2^15, r = 8, p = 3 costs 32 MiB and three times p = 1's time (1.1 s
 * against 0.6 s on a loaded 2-core machine), once per command.
 */
#ifndef LODE_REPO_H
#define LODE_REPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/util.h"

#define REPO_FORMAT     2
#define REPO_HASH_LEN   32
#define REPO_ID_LEN     33 /* "20261202T170127Z-9f3c2a1b7d4e6058" */
#define REPO_NAME_MAX   253
#define REPO_PATH_MAX   4096
#define REPO_PACK_SIZE  (16u * 1024 * 1024) /* a pack is closed once it holds this much */
#define REPO_SEAL_EXTRA 28                  /* nonce (12) + tag (16) */

/* ---- names, ids and keys ---- */

/* One source: whose snapshots these are. Names are non-empty, without '/', NUL or
 * control characters, not "." or "..", at most REPO_NAME_MAX bytes. */
struct repo_source {
    char ns[REPO_NAME_MAX + 1];
    char policy[REPO_NAME_MAX + 1];
    char host[REPO_NAME_MAX + 1];
};

int repo_source_set(struct repo_source *s, const char *ns, const char *policy, const char *host,
                    struct util_err *err);
/* Checks one name as above; what names the field in the message ("host"). */
int repo_name_check(const char *name, const char *what, struct util_err *err);

/* A snapshot id: the server's time at the start and 8 random bytes in hex. */
void repo_id_make(int64_t t, const uint8_t random[8], char out[REPO_ID_LEN + 1]);
/* Validates an id and gives its time (seconds since the epoch, UTC). */
int repo_id_parse(const char *id, int64_t *t, struct util_err *err);

enum repo_kind {
    REPO_KEY_CONFIG,
    REPO_KEY_PACK,
    REPO_KEY_META,
    REPO_KEY_RUN,
    REPO_KEY_MANIFEST,
    REPO_KEY_INCOMPLETE,
    REPO_KEY_SUSPICIOUS,
    REPO_KEY_PINNED /* <id>.pinned: kept until unpinned; its body says why (agent/pin.c) */
};

struct repo_key {
    enum repo_kind kind;
    struct repo_source src;      /* all kinds but CONFIG */
    char id[REPO_ID_LEN + 1];    /* META, RUN, MANIFEST and the marks */
    uint8_t pack[REPO_HASH_LEN]; /* PACK */
    uint32_t seq;                /* META: the run's metadata packs are numbered from 0 */
};

/* The key relative to the repository prefix; the caller frees it. */
char *repo_key_build(const struct repo_key *k);
/* Reads a key (relative to the prefix) back; UTIL_EINVAL for anything else. */
int repo_key_parse(const char *key, struct repo_key *out, struct util_err *err);
/*
 * The prefix to LIST for one kind: "snapshots/", "snapshots/NS/", "snapshots/NS/P/"
 * or "snapshots/NS/P/H/" as ns, policy, host are given (NULL stops). kind is
 * PACK ("data/"), META ("meta/"), RUN ("runs/") or MANIFEST.
 */
char *repo_key_prefix(enum repo_kind kind, const char *ns, const char *policy, const char *host);

/* Hex of a hash, and back. */
void repo_hex(const uint8_t *v, size_t n, char *out /* 2n + 1 */);
int repo_unhex(const char *s, uint8_t *v, size_t n);

/*
 * Path order of file lists and of the walk: component by component, bytewise
 * ('/' sorts before every other byte), so a directory's entries follow it.
 */
int repo_path_cmp(const char *a, const char *b);

/* ---- the catalog: snapshots from a LIST, without reading any object ---- */

struct repo_snapshot {
    struct repo_source src;
    char id[REPO_ID_LEN + 1];
    int64_t time; /* the manifest's modification time */
    bool incomplete, suspicious, pinned;
};

struct repo_catalog {
    struct repo_snapshot *v;
    size_t n, cap;
    struct repo_catalog_mark *marks; /* marks seen so far, joined at finish */
    size_t nmarks, capmarks;
};

void repo_catalog_init(struct repo_catalog *c);
/* One listed key: manifests and marks are kept, anything else is ignored. */
void repo_catalog_add(struct repo_catalog *c, const char *key, int64_t last_modified);
/* Joins marks to their manifests (a mark without one is dropped) and sorts newest
 * first: time, then id, descending. */
void repo_catalog_finish(struct repo_catalog *c);
void repo_catalog_free(struct repo_catalog *c);

/* ---- keys and sealing ---- */

struct repo_keys {
    uint8_t data[32];      /* AES-256-GCM key of every sealed object */
    uint8_t gear_seed[32]; /* the chunker's table */
    uint8_t check[16];     /* the key check stored in config.json */
};

/* Derives the working keys from a master key. */
void repo_keys_derive(struct repo_keys *k, const uint8_t master[32]);
/* out receives len + REPO_SEAL_EXTRA bytes: nonce, ciphertext, tag. */
void repo_seal(const struct repo_keys *k, const void *aad, size_t aadlen, const void *plain,
               size_t len, uint8_t *out);
/* out receives len - REPO_SEAL_EXTRA bytes; a changed byte or wrong key is UTIL_EIO. */
int repo_unseal(const struct repo_keys *k, const void *aad, size_t aadlen, const uint8_t *sealed,
                size_t len, uint8_t *out, struct util_err *err);
/* The same in buf's own memory: its first len - REPO_SEAL_EXTRA bytes become the plain
 * ones. On failure buf holds nothing of use. */
int repo_unseal_inplace(const struct repo_keys *k, const void *aad, size_t aadlen, uint8_t *buf,
                        size_t len, struct util_err *err);

/* ---- config.json ---- */

/*
 * How the repository key becomes the key that wraps the master key (docs/repository.md,
 * "The repository key"): scrypt, for a key a person may have chosen (the default), or,
 * for a key lode init --generate-key made (256 random bits), HMAC-SHA256 alone: there is
 * nothing to guess, so no stretching, and no 32 MiB for scrypt in every command.
 */
enum repo_kdf { REPO_KDF_SCRYPT, REPO_KDF_GENERATED };

struct repo_config {
    int format;
    enum repo_kdf kdf;
    uint32_t chunk_min, chunk_avg, chunk_max;
    char compression[16]; /* "zstd-1" */
    uint64_t scrypt_n;
    uint32_t scrypt_r, scrypt_p;
    uint8_t salt[16];
    uint8_t wrapped[32 + REPO_SEAL_EXTRA]; /* the master key sealed by the scrypt key */
    uint8_t check[16];
    struct repo_keys keys; /* filled by create and unlock */
};

/*
 * The scrypt costs config.json may carry, a fixed list (docs/repository.md, "The repository
 * key"): repo_config_decode refuses any other before anything is allocated for it, so a
 * bucket cannot choose what every command that opens it spends. Both cost 32 MiB;
 * 15-8-3 (OWASP's row for 32 MiB) takes three times 15-8-1's work, and is what lode init
 * uses; 15-8-1 is the cost of repositories made before it.
 */
enum repo_scrypt_set { REPO_SCRYPT_15_8_1, REPO_SCRYPT_15_8_3 };
#define REPO_SCRYPT_DEFAULT REPO_SCRYPT_15_8_3

struct repo_scrypt_params {
    const char *name; /* "scrypt-15-8-3": log2 N, r, p */
    uint64_t n;
    uint32_t r, p;
};

const struct repo_scrypt_params *repo_scrypt_params(enum repo_scrypt_set set);

/* A new repository's config with a random master key wrapped by passphrase. */
int repo_config_create(struct repo_config *c, const char *pass, size_t passlen,
                       enum repo_scrypt_set set, struct util_err *err);
/* The JSON document; the caller frees it. */
char *repo_config_encode(const struct repo_config *c);
/* Reads config.json (structure only: keys are not yet usable). */
int repo_config_decode(struct repo_config *c, const char *json, size_t len, struct util_err *err);
/* Unwraps the master key; a wrong repository key is UTIL_EINVAL with a clear message. */
int repo_config_unlock(struct repo_config *c, const char *pass, size_t passlen,
                       struct util_err *err);
/* A generated repository key: 32 random bytes in base64 (44 characters), NUL-terminated. */
#define REPO_GENERATED_KEY_TEXT 45
void repo_key_generate(char out[REPO_GENERATED_KEY_TEXT]);
/*
 * A new repository's config with a random master key wrapped under a generated key
 * (repo_key_generate's text, as read back from its file); UTIL_EINVAL when key is not
 * one. kdf is REPO_KDF_GENERATED.
 */
int repo_config_create_generated(struct repo_config *c, const char *key, size_t keylen,
                                 struct util_err *err);
/* The repository key from a key file: its bytes, one trailing newline dropped. */
int repo_key_file_read(const char *path, char **pass, size_t *len, struct util_err *err);

/* ---- chunks and packs ---- */

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

/* ---- metadata chunks, their packs and trees (format 2) ---- */

/*
 * A metadata chunk's plain bytes are a header (its tree, 'F' or 'C', and its level,
 * 0 for a leaf) and whole records: file records in a leaf of the file list, chunk
 * set records in a leaf of the chunk set, places (struct repo_mref) in an index
 * node. It is named by the SHA-256 of those bytes, compressed and sealed like a data
 * chunk (repo_blob_seal: the name, flags and length are its associated data) and
 * stored in a metadata pack (the pack format, meta/<source>/<run>.<seq>.meta).
 *
 * The cut rule: after a record of len bytes, a chunk of size bytes (at least
 * REPO_META_MIN, and two records) ends when a keyed 64-bit hash of the record,
 * modulo REPO_META_SIGMA2, is below len x size: the chance grows with the size, so
 * chunks are about 7 KiB on average (sqrt(pi/2 x 2^25) bytes), whatever the record
 * sizes, and rarely over 24 KiB; always at REPO_META_MAX. A cut depends only on
 * the records since the last cut, so an unchanged run of records gives the same
 * chunks in every snapshot and a changed record changes its own chunk (and rarely
 * the next).
 */
#define REPO_META_MIN    (1u << 10)
#define REPO_META_SIGMA2 (1u << 25)
#define REPO_META_MAX    (64u << 10)
#define REPO_META_PACK   (16u << 20) /* a metadata pack is closed once it holds this much */
#define REPO_TREE_LEVELS 8           /* a fan-out of at least 25: far more than enough */

enum repo_tree { REPO_TREE_FILES = 'F', REPO_TREE_CHUNKS = 'C' };

/* Where a metadata chunk is: its name, its pack (the run that stored it and the
 * pack's number in that run) and its place there. */
struct repo_mref {
    uint8_t hash[REPO_HASH_LEN];
    char run[REPO_ID_LEN + 1];
    uint32_t seq;
    uint32_t offset, stored, plain;
    uint8_t flags;
};

/* A tree's root: the place of its top chunk and that chunk's level. */
struct repo_root {
    struct repo_mref ref;
    unsigned depth;
};

/* A root as text for the manifest ("HASH RUN SEQ OFFSET STORED PLAIN FLAGS DEPTH"),
 * and back; the caller frees the text. */
char *repo_root_format(const struct repo_root *r);
int repo_root_parse(const char *s, struct repo_root *r, struct util_err *err);

/* The pack of a chunk in this run: the callback's job. */
typedef int (*repo_mstore_cb)(void *arg, const uint8_t hash[REPO_HASH_LEN], const uint8_t *plain,
                              size_t len, struct repo_mref *ref, struct util_err *err);

struct repo_tree_level {
    struct util_buf buf; /* the chunk being filled: header and records */
    size_t nrec;
    uint64_t emitted;
    struct repo_mref last;
};

/*
 * Cuts a record stream into a tree. Each finished chunk goes to store (which
 * dedups and packs it, or finds it in the parent's tree) and its place becomes a
 * record one level up. Memory: one chunk per level being filled (under 64 KiB
 * each, unless a single record is larger).
 */
struct repo_tree_writer {
    uint8_t tree;
    uint64_t seed;
    repo_mstore_cb store;
    void *arg;
    struct repo_tree_level lv[REPO_TREE_LEVELS];
    unsigned nlv;
};

void repo_tree_writer_init(struct repo_tree_writer *w, enum repo_tree tree,
                           const struct repo_keys *k, repo_mstore_cb store, void *arg);
int repo_tree_writer_add(struct repo_tree_writer *w, const uint8_t *rec, size_t len,
                         struct util_err *err);
/* Stores what is left, level by level, until one chunk: the root. */
int repo_tree_writer_finish(struct repo_tree_writer *w, struct repo_root *root,
                            struct util_err *err);
void repo_tree_writer_free(struct repo_tree_writer *w);
/* Whether the cut rule ends a chunk of size bytes and nrec records after a record (pure). */
bool repo_meta_cut(uint64_t seed, const uint8_t *rec, size_t len, size_t size, size_t nrec);

/* Reads ref->stored sealed bytes of a metadata chunk into sealed. */
typedef int (*repo_mfetch_cb)(void *arg, const struct repo_mref *ref, uint8_t *sealed,
                              struct util_err *err);
/* Called before a chunk is fetched with its level; false skips it and all below it
 * (garbage collection: a chunk seen already, or a leaf it does not need). */
typedef bool (*repo_mvisit_cb)(void *arg, const struct repo_mref *ref, unsigned level);

struct repo_tree_node {
    uint8_t *plain;
    size_t len, pos;
};

/*
 * Reads a tree's leaves in order, depth first: memory is one chunk per level. Every
 * chunk is opened and checked against its name, its tree and its level, and the
 * root is in the authenticated manifest, so a tree read is the tree written.
 */
struct repo_tree_reader {
    const struct repo_keys *keys;
    uint8_t tree;
    struct repo_root root;
    repo_mfetch_cb fetch;
    void *arg;
    repo_mvisit_cb visit; /* optional */
    void *visit_arg;
    /* Optional: called with each chunk once it opened and checked (a backup notes
     * the parent's chunks it may reuse: never one that did not open). */
    repo_mvisit_cb loaded;
    void *loaded_arg;
    struct repo_tree_node lv[REPO_TREE_LEVELS];
    bool started;
};

void repo_tree_reader_init(struct repo_tree_reader *r, const struct repo_keys *k,
                           enum repo_tree tree, const struct repo_root *root, repo_mfetch_cb fetch,
                           void *arg);
/* 1: *recs and *len hold the next leaf's records (valid until the next call); 0: the
 * end; < 0: damage (named in err). */
int repo_tree_reader_next(struct repo_tree_reader *r, const uint8_t **recs, size_t *len,
                          struct util_err *err);
/* Every leaf's records, concatenated, into out. */
int repo_tree_read_all(struct repo_tree_reader *r, struct util_buf *out, struct util_err *err);
void repo_tree_reader_free(struct repo_tree_reader *r);
/* Opens one metadata chunk (sealed: ref->stored bytes) into *plain (allocated). */
int repo_meta_open(const struct repo_keys *k, const struct repo_mref *ref, const uint8_t *sealed,
                   uint8_t **plain, struct util_err *err);
/* An opened chunk begins with this header: its tree and its level. */
#define REPO_META_HEAD 2
/*
 * The places an index chunk (level above 0) names, in order, from its opened bytes
 * (header included): *refs is allocated (NULL when none). UTIL_EIO when a record is
 * malformed. For readers that go their own way through a tree (agent/browse.h).
 */
int repo_meta_index(const uint8_t *plain, size_t len, struct repo_mref **refs, size_t *n,
                    struct util_err *err);

/* ---- the chunk set of a snapshot: every chunk it references and its pack ---- */

/*
 * A set being built is also its own dedup table: repo_chunkset_put keeps a hash
 * index (a u32 per slot, at most 3/4 full: 5 to 11 bytes a chunk) beside the
 * entries (48 bytes each) until the set is sorted. It is stored as the chunk set
 * tree (repo_chunkset_write, below).
 */
struct repo_chunkset {
    uint8_t (*packs)[REPO_HASH_LEN];
    size_t npacks, cappacks;
    struct repo_chunk *v; /* sorted by hash, no duplicates, after sort */
    size_t n, cap;
    uint32_t *index; /* position + 1 in v, 0 = free; NULL once sorted */
    size_t icap;     /* slots, a power of two */
};

/* A chunk whose pack is not written yet (repo_chunkset_lookup fills it in later). */
#define REPO_CHUNK_PENDING UINT32_MAX

void repo_chunkset_init(struct repo_chunkset *s);
/* Index of a pack in the list, added when new. */
uint32_t repo_chunkset_pack(struct repo_chunkset *s, const uint8_t id[REPO_HASH_LEN]);
/* Appends c, duplicates and all (sort drops them). */
void repo_chunkset_add(struct repo_chunkset *s, const struct repo_chunk *c);
/* Adds c unless the set has its hash: true when added. Builds the index. */
bool repo_chunkset_put(struct repo_chunkset *s, const struct repo_chunk *c);
/* The entry with hash in a set being built (through the index), or NULL; valid
 * until the next add or put. */
struct repo_chunk *repo_chunkset_lookup(struct repo_chunkset *s, const uint8_t hash[REPO_HASH_LEN]);
/* Sorts by hash and drops duplicates; frees the index. */
void repo_chunkset_sort(struct repo_chunkset *s);
/* In a sorted set (binary search). */
const struct repo_chunk *repo_chunkset_find(const struct repo_chunkset *s,
                                            const uint8_t hash[REPO_HASH_LEN]);
/*
 * Writes a sorted set into a chunk set tree: grouped by pack (a record with the
 * pack's hash, in the order of pack hashes), then each chunk of the pack in the
 * order of its offset (hash, offset, stored and plain length, flags). The
 * order depends only on the set, so an unchanged set gives the same chunks, and a
 * new pack's chunks are one new run of records. Memory: 4 bytes a chunk.
 */
int repo_chunkset_write(const struct repo_chunkset *s, struct repo_tree_writer *w,
                        struct util_err *err);
/* Reads a chunk set tree into s (sorted by hash). */
int repo_chunkset_read(struct repo_chunkset *s, struct repo_tree_reader *r, struct util_err *err);
/* Calls pack for each pack record of one leaf (garbage collection's need). */
int repo_chunkset_leaf_packs(const uint8_t *recs, size_t len,
                             void (*pack)(void *arg, const uint8_t id[REPO_HASH_LEN]), void *arg,
                             struct util_err *err);
void repo_chunkset_free(struct repo_chunkset *s);

/* ---- the file list of a snapshot ---- */

enum repo_ftype {
    REPO_FT_FILE = 'f',
    REPO_FT_DIR = 'd',
    REPO_FT_SYMLINK = 'l',
    REPO_FT_FIFO = 'p',
    REPO_FT_SOCKET = 's',
    REPO_FT_CHAR = 'c',
    REPO_FT_BLOCK = 'b'
};

struct repo_xattr {
    char *name;
    uint8_t *value;
    size_t len;
};

struct repo_file {
    char *path; /* "/etc/hosts": absolute, as on the node */
    enum repo_ftype type;
    uint32_t mode; /* permission bits and set-id/sticky */
    uint32_t uid, gid;
    uint64_t size;
    int64_t mtime_sec, ctime_sec;
    uint32_t mtime_nsec, ctime_nsec;
    uint64_t ino, rdev;
    char *target; /* symlinks */
    /*
     * Hard links: the path of this snapshot's first entry (in list order) that is the
     * same inode, for an entry that is not the first; NULL or "" otherwise (and always
     * for a directory). A property of the tree, not of the snapshot, so an unchanged
     * tree encodes the same bytes. A regular file keeps its own chunks too, so it can be
     * restored without the entry it links to.
     */
    char *link;
    struct repo_xattr *xattrs;
    size_t nxattrs;
    uint8_t (*chunks)[REPO_HASH_LEN]; /* regular files, in order */
    size_t nchunks;
};

void repo_file_free(struct repo_file *f);
/* A deep copy. */
void repo_file_copy(struct repo_file *dst, const struct repo_file *src);
/* Same size, mtime, ctime and inode, both regular files: the chunks can be reused. */
bool repo_file_unchanged(const struct repo_file *parent, const struct repo_file *now);

/*
 * The file list: records in path order (repo_file_put's encoding: the record's
 * bytes depend only on the entry), cut into a tree by repo_tree_writer.
 */
struct repo_files_writer {
    struct repo_tree_writer tree;
    struct util_buf rec;
    char *last; /* the previous path, to enforce the order */
};

void repo_files_writer_init(struct repo_files_writer *w, const struct repo_keys *k,
                            repo_mstore_cb store, void *arg);
/* Adds one record; paths must come in repo_path_cmp order (UTIL_EINVAL otherwise). */
int repo_files_writer_add(struct repo_files_writer *w, const struct repo_file *f,
                          struct util_err *err);
/* Stores the rest and gives the root. */
int repo_files_writer_finish(struct repo_files_writer *w, struct repo_root *root,
                             struct util_err *err);
void repo_files_writer_free(struct repo_files_writer *w);

/*
 * The reader: over records given whole (a restore's, held once), or leaf by leaf
 * from a tree (a backup's parent: memory is one chunk per level).
 */
struct repo_files_reader {
    struct repo_tree_reader *tree; /* NULL: data holds every record */
    const uint8_t *data;
    size_t len, pos;
    uint64_t leaf;
    char *last;
};

/* Records given whole (borrowed until the reader is freed). */
void repo_files_reader_init(struct repo_files_reader *r, const uint8_t *data, size_t len);
/* Records from a tree (borrowed). */
void repo_files_reader_tree(struct repo_files_reader *r, struct repo_tree_reader *tree);
/* 1: f holds the next record (the caller frees it); 0: the end; < 0: damage. */
int repo_files_reader_next(struct repo_files_reader *r, struct repo_file *f, struct util_err *err);
void repo_files_reader_free(struct repo_files_reader *r);

/*
 * The streaming merge of the walk against the parent's list. The walk asks for
 * each path in order; parent records before it are skipped (counted deleted).
 * Memory: one parent record.
 */
struct repo_merge {
    struct repo_files_reader *parent; /* NULL: no parent */
    struct repo_file cur;
    bool have, done;
    uint64_t deleted;
};

void repo_merge_init(struct repo_merge *m, struct repo_files_reader *parent);
/* 1 and *match (valid until the next call) when the parent has path; 0 when not. */
int repo_merge_find(struct repo_merge *m, const char *path, const struct repo_file **match,
                    struct util_err *err);
/* Counts the parent's remaining records as deleted. */
int repo_merge_finish(struct repo_merge *m, struct util_err *err);
void repo_merge_free(struct repo_merge *m);

/* ---- run records and manifests ---- */

struct repo_run {
    char id[REPO_ID_LEN + 1];
    char parent[REPO_ID_LEN + 1]; /* "" without a parent */
    int64_t max_runtime;          /* seconds */
    char agent[64];               /* the version of lode that wrote it */
    /* The parent's trees, as its manifest named them when the backup started: garbage
     * collection protects what they name (condition (c), docs/gc.md) even once the
     * parent's manifest is forgotten. Sealed ("parentTrees"), bound to id and parent. */
    bool has_roots;
    struct repo_root parent_files, parent_chunks;
};

/* keys: seals the parent's trees when r->has_roots (NULL: never). */
char *repo_run_encode(const struct repo_run *r, const struct repo_keys *k);
/* keys NULL: the parent's trees are not read (has_roots false). */
int repo_run_decode(struct repo_run *r, const char *json, size_t len, const struct repo_keys *k,
                    struct util_err *err);

struct repo_error {
    char *path;
    char *message;
};

/*
 * What a backup left out, by rule (docs/policy.md, "spec.exclude"): entries and, for
 * regular files, their bytes. A directory left out whole counts as one entry; what it
 * holds is never read, so neither counted. Kept in the manifest's private part under
 * "excluded" (repo_excluded_json), so a person can see why a file is missing.
 */
enum repo_exclude_rule {
    REPO_EXCL_PATTERN, /* spec.exclude.patterns */
    REPO_EXCL_CACHE,   /* a directory with CACHEDIR.TAG: recorded, not entered */
    REPO_EXCL_SIZE,    /* spec.exclude.largerThan */
    REPO_EXCL_FS,      /* a mount point of another file system: recorded, not entered */
    REPO_EXCL_RULES
};

struct repo_excluded {
    uint64_t entries, bytes;
};

/* The names of the rules in JSON: "pattern", "cache", "largerThan", "otherFileSystem". */
extern const char *const repo_exclude_rule_names[REPO_EXCL_RULES];
/* {"pattern": {"entries": n, "bytes": n}, ...}, every rule, in enum order. */
json_t *repo_excluded_json(const struct repo_excluded x[REPO_EXCL_RULES]);
/* The reverse; an absent rule is zero. UTIL_EINVAL when malformed. */
int repo_excluded_parse(const json_t *o, struct repo_excluded x[REPO_EXCL_RULES]);

struct repo_manifest {
    char id[REPO_ID_LEN + 1];
    struct repo_source src;
    char parent[REPO_ID_LEN + 1];
    int64_t max_runtime;
    bool incomplete, suspicious; /* the marks written before the manifest */
    /* Counters (not encrypted). */
    uint64_t files, bytes, new_files, changed_files, deleted_files, new_bytes, uploaded_bytes,
        raw_new_bytes, errors;
    char agent[64];
    /* Sealed. */
    char **paths;
    size_t npaths;
    struct repo_error *errs;
    size_t nerrs;
    struct repo_root files_root, chunks_root;       /* the trees */
    struct repo_excluded excluded[REPO_EXCL_RULES]; /* sealed, "excluded" */
};

/*
 * The private part is sealed with every public field as associated data (the
 * canonical encoding of what was decoded, the source and id included), so a
 * manifest whose format, source, id, parent, maxRuntime, marks, counters or agent
 * changed, or that was moved or copied, does not open with the key.
 */
char *repo_manifest_encode(const struct repo_manifest *m, const struct repo_keys *k);
/* keys NULL: the public fields only, unauthenticated (paths, errors and roots left
 * empty): the catalog's and garbage collection's counters. */
int repo_manifest_decode(struct repo_manifest *m, const char *json, size_t len,
                         const struct repo_keys *k, struct util_err *err);
/* A decoded manifest is the one its key names (src and id); UTIL_EIO if not. */
int repo_manifest_placed(const struct repo_manifest *m, const struct repo_source *src,
                         const char *id, struct util_err *err);
void repo_manifest_free(struct repo_manifest *m);

/*
 * A mark's body: a tag (AES-GCM over nothing, 28 bytes in hex) bound to the
 * source, the id and the kind (REPO_KEY_INCOMPLETE or REPO_KEY_SUSPICIOUS), so a
 * mark made without the key, or moved, is told from one lode wrote. The caller
 * frees the text.
 */
char *repo_mark_encode(const struct repo_keys *k, const struct repo_source *src, const char *id,
                       enum repo_kind kind);
int repo_mark_check(const struct repo_keys *k, const struct repo_source *src, const char *id,
                    enum repo_kind kind, const char *body, size_t len, struct util_err *err);

/* ---- the upload token bucket ---- */

/*
 * One bucket for all uploads of a process. Its capacity is a twentieth of a
 * second's worth (at least 512 bytes), so any 1 s window holds at most
 * 1.05 x rate once the start-up burst (one capacity) is spent. Time is an input.
 */
struct repo_bucket {
    double rate;   /* bytes per second */
    double cap;    /* bytes */
    double tokens; /* bytes available */
    uint64_t last; /* ns */
};

void repo_bucket_init(struct repo_bucket *b, uint64_t rate, uint64_t now_ns);
/* Takes up to want bytes; returns how many were granted (0 when empty). */
size_t repo_bucket_take(struct repo_bucket *b, uint64_t now_ns, size_t want);
/* Nanoseconds until min(want, capacity) bytes are available (0: now). */
uint64_t repo_bucket_wait(struct repo_bucket *b, uint64_t now_ns, size_t want);

#endif
