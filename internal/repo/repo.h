/*
 * repo: the repository format (docs/repository.md), as pure functions over bytes.
 *
 * Layout under the repository prefix, one source = <namespace>/<policy>/<host>:
 *   config.json                          format, chunker sizes, compression, the master
 *                                        key wrapped by the repository key, a key check
 *   data/<source>/<sha256>.pack          packs of chunks (about 16 MiB)
 *   meta/<source>/<id>.files             the snapshot's file list, sorted by path
 *   meta/<source>/<id>.chunks            every chunk the snapshot references, with its pack
 *   runs/<source>/<id>.json              the run record, written when a backup starts
 *   snapshots/<source>/<id>.json         the manifest, written last
 *   snapshots/<source>/<id>.incomplete   marks: empty objects beside the manifest
 *   snapshots/<source>/<id>.suspicious
 *   snapshots/<source>/<id>.pinned
 * repo_key_build() makes every one of these keys from parsed names and
 * repo_key_parse() reads them back; nothing else in Lodestore formats a key.
 *
 * Encryption: a random 256-bit master key, wrapped (AES-256-GCM) by a key that
 * scrypt derives from the repository key. Every chunk, pack trailer, file list
 * frame, chunk set and the manifest's private part is sealed with AES-256-GCM
 * under a key derived from the master key (HMAC-SHA256), with a random 96-bit
 * nonce and associated data that binds the object to its place (a chunk to its
 * hash, a file list frame to its snapshot and position), so a swapped, truncated
 * or changed object fails to open. Not encrypted: names in keys (namespace,
 * policy, host, snapshot id, pack hash), the run record (parent id and
 * maxRuntime) and the manifest's counters, which the catalog and garbage
 * collection read.
 *
 * No I/O here: callers fetch and store the bytes (cli/ through internal/s3).
 * Costs: sealing runs at AES-GCM speed (about 2.5 GB/s per core); zstd level 1
 * compression about 200 MB/s per core on this project's machines; scrypt with the
 * default N = 2^15, r = 8 costs 32 MiB and about 0.1 s, once per command.
 */
#ifndef LODE_REPO_H
#define LODE_REPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/util.h"

#define REPO_FORMAT     1
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
    REPO_KEY_FILES,
    REPO_KEY_CHUNKS,
    REPO_KEY_RUN,
    REPO_KEY_MANIFEST,
    REPO_KEY_INCOMPLETE,
    REPO_KEY_SUSPICIOUS,
    REPO_KEY_PINNED /* <id>.pinned: kept until unpinned; its body says why (agent/pin.c) */
};

struct repo_key {
    enum repo_kind kind;
    struct repo_source src;      /* all kinds but CONFIG */
    char id[REPO_ID_LEN + 1];    /* FILES, CHUNKS, RUN, MANIFEST and the marks */
    uint8_t pack[REPO_HASH_LEN]; /* PACK */
};

/* The key relative to the repository prefix; the caller frees it. */
char *repo_key_build(const struct repo_key *k);
/* Reads a key (relative to the prefix) back; UTIL_EINVAL for anything else. */
int repo_key_parse(const char *key, struct repo_key *out, struct util_err *err);
/*
 * The prefix to LIST for one kind: "snapshots/", "snapshots/NS/", "snapshots/NS/P/"
 * or "snapshots/NS/P/H/" as ns, policy, host are given (NULL stops). kind is
 * PACK ("data/"), FILES or CHUNKS ("meta/"), RUN ("runs/") or MANIFEST.
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

#define REPO_SCRYPT_N 32768

/* A new repository's config with a random master key wrapped by passphrase. */
int repo_config_create(struct repo_config *c, const char *pass, size_t passlen, uint64_t scrypt_n,
                       struct util_err *err);
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

/* ---- the chunk set of a snapshot (meta/<source>/<id>.chunks) ---- */

/*
 * A set being built is also its own dedup table: repo_chunkset_put keeps a hash
 * index (a u32 per slot, at most 3/4 full: 5 to 11 bytes a chunk) beside the
 * entries (48 bytes each) until the set is sorted. repo_chunkset_seal then encodes
 * and seals the sorted set in the entries' own memory (plus a byte a chunk: the
 * encoding is 49 bytes an entry), so the set is never held twice (the plain
 * encoding and the sealed copy cost another 98 bytes a chunk).
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
/* Sealed bytes bound to the snapshot id; the set must be sorted. */
void repo_chunkset_encode(const struct repo_chunkset *s, const struct repo_keys *k, const char *id,
                          uint8_t **data, size_t *len);
/* The same bytes, made in the entries' memory: s is sorted first and left empty. */
void repo_chunkset_seal(struct repo_chunkset *s, const struct repo_keys *k, const char *id,
                        uint8_t **data, size_t *len);
int repo_chunkset_decode(struct repo_chunkset *s, const struct repo_keys *k, const char *id,
                         const uint8_t *data, size_t len, struct util_err *err);
/*
 * The same in data's own memory, which it takes (allocated with malloc; freed on
 * error): the entries are decoded over the plain bytes, which are opened over the
 * sealed ones, so a set read from storage is held once (about 49 bytes a chunk), not
 * as the object, its plain bytes and the entries side by side (a re-run's parent set:
 * 146 bytes a chunk at its peak).
 */
int repo_chunkset_open(struct repo_chunkset *s, const struct repo_keys *k, const char *id,
                       uint8_t *data, size_t len, struct util_err *err);
void repo_chunkset_free(struct repo_chunkset *s);

/* ---- the file list of a snapshot (meta/<source>/<id>.files) ---- */

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
 * The writer buffers one frame (about 1 MiB of records) and the sealed output
 * not yet taken. A caller that uploads the list as it is written (a multipart
 * upload) takes the finished bytes with repo_files_writer_take whenever out.len
 * is large enough: the object is the concatenation, in order, of every take and
 * of what finish hands over, the same bytes a writer never taken from gives.
 */
struct repo_files_writer {
    const struct repo_keys *keys;
    char id[REPO_ID_LEN + 1];
    struct util_buf frame;
    struct util_buf out;
    uint32_t nframes;
    char *last; /* the previous path, to enforce the order */
};

void repo_files_writer_init(struct repo_files_writer *w, const struct repo_keys *k, const char *id);
/* Adds one record; paths must come in repo_path_cmp order (UTIL_EINVAL otherwise). */
int repo_files_writer_add(struct repo_files_writer *w, const struct repo_file *f,
                          struct util_err *err);
/* Hands over the finished bytes not yet taken (the magic and whole frames; none
 * while no frame has closed but the magic) and keeps writing. */
void repo_files_writer_take(struct repo_files_writer *w, uint8_t **data, size_t *len);
/* Closes the last frame, hands over the bytes not yet taken (the whole object when
 * nothing was) and frees the writer. */
void repo_files_writer_finish(struct repo_files_writer *w, uint8_t **data, size_t *len);
void repo_files_writer_free(struct repo_files_writer *w);

/* Reads bytes [off, off + len) of a stored object into buf (a ranged GET); 0 or an error. */
typedef int (*repo_fetch_cb)(void *arg, uint64_t off, size_t len, uint8_t *buf,
                             struct util_err *err);

/*
 * The reader opens one frame at a time: memory is one frame, not the list, plus
 * the list itself when it was given whole (repo_files_reader_init), or a window of
 * REPO_FILES_WINDOW bytes (or one frame, if larger) when it reads through a fetch
 * callback (repo_files_reader_open): a backup's parent list costs that, not about
 * 50 bytes a file.
 */
#define REPO_FILES_WINDOW (4u << 20)

struct repo_files_reader {
    const struct repo_keys *keys;
    char id[REPO_ID_LEN + 1];
    const uint8_t *data; /* bytes [woff, woff + wlen) of the list */
    size_t len, pos;     /* the list's length; the next frame's offset */
    size_t woff, wlen;
    size_t window;
    repo_fetch_cb fetch; /* NULL: data is the whole list */
    void *fetch_arg;
    uint8_t *win; /* the window's memory, with fetch */
    uint32_t frame;
    bool final;
    uint8_t *plain;
    size_t plen, ppos;
    char *last;
};

/* A list given whole (borrowed until the reader is freed). */
int repo_files_reader_init(struct repo_files_reader *r, const struct repo_keys *k, const char *id,
                           const uint8_t *data, size_t len, struct util_err *err);
/* A list of len bytes read through fetch, window bytes at a time (0: REPO_FILES_WINDOW). */
int repo_files_reader_open(struct repo_files_reader *r, const struct repo_keys *k, const char *id,
                           uint64_t len, size_t window, repo_fetch_cb fetch, void *arg,
                           struct util_err *err);
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
};

char *repo_run_encode(const struct repo_run *r);
int repo_run_decode(struct repo_run *r, const char *json, size_t len, struct util_err *err);

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
    bool incomplete;
    /* Counters (not encrypted). */
    uint64_t files, bytes, new_files, changed_files, deleted_files, new_bytes, uploaded_bytes,
        raw_new_bytes, errors;
    char agent[64];
    /* Sealed. */
    char **paths;
    size_t npaths;
    struct repo_error *errs;
    size_t nerrs;
    struct repo_excluded excluded[REPO_EXCL_RULES]; /* sealed, "excluded" */
};

char *repo_manifest_encode(const struct repo_manifest *m, const struct repo_keys *k);
/* keys NULL: counters only (paths and errors left empty). */
int repo_manifest_decode(struct repo_manifest *m, const char *json, size_t len,
                         const struct repo_keys *k, struct util_err *err);
void repo_manifest_free(struct repo_manifest *m);

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
