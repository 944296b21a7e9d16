/*
 * chunkidx: a backup's chunk index (docs/repository.md, "Backing up"): every chunk
 * the snapshot may reference, the parent's chunk set as read and then this run's new
 * chunks as they are queued, looked up by hash; and the snapshot's chunk set written
 * from it at the end.
 *
 * The set's order is the file list's (docs/repository.md, "Metadata"): the parent's
 * chunks this snapshot uses, in the parent's order, and each new chunk right after
 * the parent chunk whose first use came last before it was queued (its anchor). The
 * walk goes in path order, so a changed file's new chunk takes its old chunk's place
 * and one change rewrites one leaf of the set, not two; an unchanged run gives the
 * parent's records, so the parent's metadata chunks. A first backup's set is its
 * chunks in the order they were sealed. A pack's record starts each run of its
 * chunks: a pack may have several.
 *
 * What it holds, and why: a chunk set held whole costs 48 bytes a chunk and its hash
 * index 5 to 11 more, 54 MiB for a million small files, which alone passed the
 * backup's memory target (docs/benchmarks.md). Here memory holds, per chunk, a 4-byte
 * tag (hash bytes 8 to 11) and a 4-byte slot of an open-addressing table at most 3/4
 * full (the slot is chosen by hash bytes 0 to 7), and a bit per parent chunk (used or
 * not): about 12 MiB for a million chunks. The records themselves (48 bytes) go to a
 * file: by position (the parent's whole, a new chunk's hash) and, for new chunks once
 * sealed, in the order of their packs. A lookup compares the full hash: a slot whose
 * tag matches has its record read (from a cached block, or one pread of 48 KiB) and
 * only an equal hash is a match, so chunks whose first bytes agree are never taken
 * for one another (a new chunk deduplicated against another would be lost).
 *
 * The files are in $TMPDIR (default /tmp: the backup pod's emptyDir), created and
 * unlinked at once, so a crash leaves nothing: 48 bytes a chunk of the set and 48
 * more a new chunk (96 MB for a first backup of a million small files). The kernel
 * keeps what it can in its page cache, which it may write back and drop; on a tmpfs
 * they are memory. A write or read that fails stops the backup (no snapshot), with
 * the directory in the message.
 *
 * Order: parent records first (chunkidx_parent_cb, in tree order), then new chunks
 * (chunkidx_add, then chunkidx_sealed as each is sealed into the pack being filled,
 * chunkidx_pack_closed when it is closed), then chunkidx_write once. One thread.
 */
#ifndef LODE_AGENT_CHUNKIDX_H
#define LODE_AGENT_CHUNKIDX_H

#include <stdbool.h>
#include <stdint.h>

#include "repo/repo.h"

#define CHUNKIDX_BLOCK 1024 /* records a buffer holds: 48 KiB */

/* Records of 48 bytes at fixed positions: [0, flushed) in the file, the rest buffered. */
struct chunkidx_file {
    int fd;
    uint64_t n, flushed;
    struct repo_chunk *wbuf; /* records [flushed, n) */
    struct repo_chunk *rbuf; /* a cached block: records [rfrom, rfrom + rn) */
    uint64_t rfrom;
    size_t rn;
};

struct chunkidx_ppack { /* a pack of the parent's set: its positions from first on */
    uint8_t id[REPO_HASH_LEN];
    uint64_t first;
};

struct chunkidx_npack { /* a pack of this run: records [first, first + n) of news */
    uint8_t id[REPO_HASH_LEN];
    uint64_t first, n;
};

struct chunkidx {
    char dir[256];
    struct chunkidx_file recs; /* by position: the parent's records, new chunks' hashes */
    struct chunkidx_file news; /* new chunks as sealed, each pack's together */
    uint32_t *slot;            /* position + 1, 0 = free; nslot a power of two */
    size_t nslot;
    uint32_t *tag; /* by position */
    size_t captag;
    uint8_t *used; /* a bit per parent position */
    size_t capused;
    uint64_t nparent;         /* positions [0, nparent) are the parent's */
    uint32_t anchor;          /* the last parent position first used, + 1; 0: none yet */
    uint32_t last_anchor;     /* the anchor of the chunk sealed last */
    bool unordered;           /* a chunk was sealed after one of a later anchor */
    uint64_t nclosed;         /* records of news in closed packs */
    struct repo_chunk member; /* chunkidx_member's answer */
    struct chunkidx_ppack *pp;
    size_t npp, cappp;
    struct chunkidx_npack *np;
    size_t nnp, capnp;
    int failed; /* a file's write or read failed: every call gives this */
    char msg[400];
};

/* Creates the two files in dir ($TMPDIR or /tmp when NULL or ""). */
int chunkidx_open(struct chunkidx *x, const char *dir, struct util_err *err);
/* Closes the files and frees everything (again: nothing). */
void chunkidx_close(struct chunkidx *x);
/*
 * repo_cs_rec_cb for the parent's chunk set, leaf by leaf (arg: the index): each
 * pack's record followed by chunks of that pack; a chunk before any pack's record, or
 * a hash twice, is UTIL_EIO "a chunk set record is malformed". Only before the first
 * chunkidx_add.
 */
int chunkidx_parent_cb(void *arg, const uint8_t *pack, const struct repo_chunk *c,
                       struct util_err *err);
/* Forgets the parent's records (a parent that could not be read whole). */
void chunkidx_parent_drop(struct chunkidx *x);
/* 1 and *pos when the index has hash, 0 when not, < 0 when a read failed. */
int chunkidx_find(struct chunkidx *x, const uint8_t hash[REPO_HASH_LEN], uint32_t *pos,
                  struct util_err *err);
/* Whether pos is the parent's (else this run's). */
bool chunkidx_is_parent(const struct chunkidx *x, uint32_t pos);
/* The parent's chunk at pos is referenced by this snapshot; its first use makes it
 * the anchor of the new chunks queued next. */
void chunkidx_use(struct chunkidx *x, uint32_t pos);
/* The anchor of a chunk queued now: where the set will hold it (see above). */
uint32_t chunkidx_anchor(const struct chunkidx *x);
/* A new chunk, absent (chunkidx_find gave 0), queued to be sealed. */
int chunkidx_add(struct chunkidx *x, const uint8_t hash[REPO_HASH_LEN], struct util_err *err);
/* A new chunk sealed into the pack being filled, in offset order; c->pack is the
 * anchor chunkidx_anchor gave when it was queued. */
int chunkidx_sealed(struct chunkidx *x, const struct repo_chunk *c, struct util_err *err);
/* How many chunks the pack being filled holds, and its i-th (a pack table's entry:
 * a failed read gives a zeroed entry and sets failed, which chunkidx_pack_closed
 * reports). */
size_t chunkidx_members(const struct chunkidx *x);
const struct repo_chunk *chunkidx_member(struct chunkidx *x, size_t i);
/* The pack being filled is closed as id. */
int chunkidx_pack_closed(struct chunkidx *x, const uint8_t id[REPO_HASH_LEN], struct util_err *err);
/* New chunks this run added (queued, sealed or not). */
uint64_t chunkidx_new_count(const struct chunkidx *x);
/*
 * Writes the chunk set in the order above: the parent's chunks this snapshot uses and
 * this run's new ones by their anchors. Memory: 8 bytes a new chunk when seals finished
 * out of order, else none. UTIL_EIO when a new chunk was never sealed into a closed
 * pack (a bug) or a file read fails.
 */
int chunkidx_write(struct chunkidx *x, struct repo_tree_writer *w, struct util_err *err);

#endif
