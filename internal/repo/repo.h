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
 *   gc/<source>/packs.cache              sealed: the packs each snapshot's trees name, as
 *                                        garbage collection last read them
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
 * This header holds the names, the catalog, the keys and config.json; the rest of the
 * format is in three headers it includes at its end, one job each, so a reader finds a
 * part by its name: repo_pack.h (chunks and data packs), repo_meta.h (metadata trees,
 * chunk sets, file lists) and repo_records.h (run records, manifests, marks, pins, the
 * upload bucket). Include repo/repo.h, never those three alone.
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
    REPO_KEY_PINNED, /* <id>.pinned: kept until unpinned; its body says why (agent/pin.c) */
    REPO_KEY_GCCACHE /* gc/<source>/packs.cache: what gc learned (agent/gc_cache.h) */
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
 * PACK ("data/"), META ("meta/"), RUN ("runs/"), MANIFEST or GCCACHE ("gc/").
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
/* How many of a key file's (or a Secret value's) len bytes are the key: one trailing
 * newline ("\n" or "\r\n") is not part of it. */
size_t repo_key_text_len(const char *data, size_t len);

/* The rest of the format (see above), in the order their types build on each other. */
#include "repo/repo_pack.h" /* chunks and packs first: the metadata's chunk sets use them */

#include "repo/repo_meta.h" /* then the trees, whose roots the records name */

#include "repo/repo_records.h"

#endif
