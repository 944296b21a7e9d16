/*
 * restore_chunks: the chunk set of the snapshot `lode restore` brings back, held for
 * looking chunks up by hash (docs/repository.md, "Restoring").
 *
 * What it holds, and why: the set held whole (struct repo_chunkset) costs 48 bytes a
 * chunk, 46 MiB of a million small files' restore, which alone put the restore past its
 * memory target. The hash is 32 of those bytes, and the restore does not need it: each
 * file's record names its chunks by their whole hash, which is what a blob is checked
 * against once opened. Here a chunk is 24 bytes: its hash's first 8 bytes (the key,
 * sorted, looked up by binary search), its pack, offset, lengths and flags. The
 * packs' ids are kept whole (32 bytes a pack).
 *
 * Chunks whose keys agree are never taken for one another: after the first read, such
 * keys are marked shared, and the tree is read once more to keep those chunks whole
 * (by full hash). For a million random hashes that second read happens about once in
 * 37 million restores; it costs one more read of the chunk set tree, and 48 bytes
 * for each chunk kept whole.
 *
 * A hash the set lacks but whose first 8 bytes are some chunk's (about one in 2^64 / N
 * for a set of N chunks) is found as that chunk with the hash asked for: the blob then
 * fails its SHA-256 check and is reported damaged, where the set held whole would
 * report the chunk missing. Either way the file is not restored and the restore says so.
 *
 * Reading checks what repo_chunkset_read checks: a chunk after a pack's record, no
 * hash twice ("a chunk set record is malformed"); a pack may have several runs of
 * records, and packs is each pack once, by hash (32 bytes and, while it is read, 8
 * more a pack record). The sort is in place (no memory beside the entries). One
 * thread.
 */
#ifndef LODE_AGENT_RESTORE_CHUNKS_H
#define LODE_AGENT_RESTORE_CHUNKS_H

#include <stdbool.h>
#include <stdint.h>

#include "repo/repo.h"

/* One chunk of the set, without the last 24 bytes of its hash. */
struct rx_chunk {
    uint64_t key; /* the hash's first 8 bytes, big-endian: hashes' order */
    uint32_t pack, offset, stored;
    uint32_t plain : 27; /* at most REPO_CHUNK_PLAIN_MAX */
    uint32_t flags : 4;  /* REPO_BLOB_ZSTD */
    uint32_t shared : 1; /* another chunk has this key: the chunk is in whole */
};

struct rx_chunks {
    uint8_t (*packs)[REPO_HASH_LEN];
    size_t npacks, cappacks;
    struct rx_chunk *v; /* sorted by key */
    size_t n, cap;
    struct repo_chunk *whole; /* the chunks whose key is shared, sorted by hash */
    size_t nwhole, capwhole;
};

/*
 * Reads the chunk set tree at root (through fetch and arg, as repo_tree_reader does)
 * into s, which it initialises. 0; UTIL_EIO "a chunk set record is malformed"; or the
 * tree reader's error. s is empty after an error.
 */
int rx_chunks_read(struct rx_chunks *s, const struct repo_keys *k, const struct repo_root *root,
                   repo_mfetch_cb fetch, void *arg, struct util_err *err);
/* The chunk with hash: true and *c filled (c->hash is hash), or false when absent. */
bool rx_chunks_find(const struct rx_chunks *s, const uint8_t hash[REPO_HASH_LEN],
                    struct repo_chunk *c);
void rx_chunks_free(struct rx_chunks *s);

#endif
