/*
 * repo_meta: format 2's metadata (docs/repository.md, "Metadata"): a snapshot's file
 * list and chunk set are record streams cut at record boundaries by a content-defined
 * rule into metadata chunks of about 1 KiB, named by the SHA-256 of their plain bytes
 * and stored in metadata packs; an index of their places is cut the same way, level
 * over level, until one chunk, the root, is left. The manifest names the two roots. A
 * run stores only the chunks its parent's trees do not hold, so an unchanged list costs
 * nothing but the manifest. Pure functions over bytes (meta.c, files.c); the caller
 * fetches and stores chunks through callbacks.
 *
 * Costs: reading a tree holds one chunk per level; the chunk set in memory 48 bytes a
 * chunk (5 to 11 more while built); the file list's reader one leaf.
 */
#ifndef LODE_REPO_META_H
#define LODE_REPO_META_H

/* Part of repo/repo.h, which includes it after the types it builds on. */
#ifndef LODE_REPO_H
#error "include repo/repo.h, not repo_meta.h"
#endif

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
 * REPO_META_MIN, and two records) ends when the record's 64-bit cut hash, modulo
 * the level's sigma2 (repo_meta_sigma2), is below len x size: the chance grows with
 * the size, so chunks are about sqrt(pi/2 x sigma2) bytes on average whatever the
 * record sizes, and rarely three times that; always at REPO_META_MAX. A cut depends
 * only on the records since the last cut, so an unchanged run of records gives the
 * same chunks in every snapshot.
 *
 * The cut hash is keyed (repo_meta_key) and taken from what of a record does not
 * change when the entry does: a file record's path (a file whose content changed
 * keeps its cuts), a chunk set record's bytes, and for a place one level up the cut
 * hash of its chunk's last record, mixed with the level. A place changes whenever
 * its chunk does (it holds the chunk's SHA-256); cut by its own bytes, each changed
 * place drew its cut again, and one level in five or so then split or merged a chunk
 * and rewrote one more, up to the root. Cut by the last record's hash, a change
 * rewrites one chunk a level.
 *
 * The sizes are what one changed file costs: its file list leaf, the leaf of the
 * chunk set it changes (a backup writes the set in the file list's order, so the
 * new chunk takes the old one's place), and one index chunk per level above each.
 * Chunks of about 1 KiB (the file list's leaves about 1.3 KiB before compression,
 * the chunk set's leaves and the index nodes about 0.9 KiB) cost a re-run after one
 * change a quarter of what chunks of 7 KiB did (docs/repository.md, "What a
 * snapshot costs"); smaller ones gain nothing more, the levels they add and the 28
 * bytes of seal and 45 of pack table each chunk carries eating what they save.
 */
#define REPO_META_MIN      256u
#define REPO_META_SIGMA2_F (1u << 20) /* leaves of the file list: about 1.3 KiB */
#define REPO_META_SIGMA2_C (1u << 19) /* leaves of the chunk set: about 0.9 KiB */
#define REPO_META_SIGMA2_I (1u << 19) /* index nodes: about 0.9 KiB, 17 places */
#define REPO_META_MAX      (64u << 10)
#define REPO_META_PACK     (16u << 20) /* a metadata pack is closed once it holds this much */
#define REPO_TREE_LEVELS                                                                           \
    16 /* a fan-out of at least 4 (REPO_META_MIN / a place): far more than enough */

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

/* A root in the binary records (the manifest, the run record: repo_records.h): its
 * place as an index node holds it, then its depth; and back (UTIL_EIO when the bytes
 * end early or a value is out of range, rd->bad set when they end early). */
struct util_rd;
void repo_root_put(struct util_buf *b, const struct repo_root *r);
int repo_root_get(struct util_rd *rd, struct repo_root *r);

/* The pack of a chunk in this run: the callback's job. */
typedef int (*repo_mstore_cb)(void *arg, const uint8_t hash[REPO_HASH_LEN], const uint8_t *plain,
                              size_t len, struct repo_mref *ref, struct util_err *err);

struct repo_tree_level {
    struct util_buf buf; /* the chunk being filled: header and records */
    size_t nrec;
    uint64_t emitted;
    struct repo_mref last;
    uint64_t lasth; /* the cut hash of its last record */
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
/* Adds a record cut by its own bytes. */
int repo_tree_writer_add(struct repo_tree_writer *w, const uint8_t *rec, size_t len,
                         struct util_err *err);
/* Adds a record cut by key (what of the entry stays when it changes: a file's path). */
int repo_tree_writer_add_key(struct repo_tree_writer *w, const uint8_t *rec, size_t len,
                             const uint8_t *key, size_t klen, struct util_err *err);
/* Adds a record that heads the records after it (a chunk set's pack record): the
 * chunk does not end after it, unless at REPO_META_MAX. A pack record that a changed
 * file's new chunk brings would otherwise draw a cut of its own, and a cut drawn there
 * splits a leaf and shifts the level above. */
int repo_tree_writer_add_head(struct repo_tree_writer *w, const uint8_t *rec, size_t len,
                              struct util_err *err);
/* Stores what is left, level by level, until one chunk: the root. */
int repo_tree_writer_finish(struct repo_tree_writer *w, struct repo_root *root,
                            struct util_err *err);
void repo_tree_writer_free(struct repo_tree_writer *w);
/* The cut rule's sigma2 for a level of a tree (0: the leaves). */
uint32_t repo_meta_sigma2(enum repo_tree tree, unsigned level);
/* Whether the cut rule ends a chunk of size bytes and nrec records after a record of
 * len bytes whose cut hash is h (pure). */
bool repo_meta_cut(uint64_t h, uint32_t sigma2, size_t len, size_t size, size_t nrec);
/* The cut hash of key under a writer's seed (pure). */
uint64_t repo_meta_key(uint64_t seed, const uint8_t *key, size_t n);

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
 * order of its offset (hash, offset, stored and plain length, flags). The order
 * depends only on the set. A backup writes its set in another order (the file
 * list's: agent/chunkidx.h); readers take both. For a set held whole (tests, tools).
 * Memory: 4 bytes a chunk.
 */
int repo_chunkset_write(const struct repo_chunkset *s, struct repo_tree_writer *w,
                        struct util_err *err);
/*
 * The same records one at a time, for a writer that keeps the set elsewhere (a
 * backup's chunk index, agent/chunkidx.h): a pack's record, then chunks of that
 * pack, until the next pack's record. The caller chooses the order (each chunk
 * once); repo_chunkset_write is built on these.
 */
int repo_chunkset_rec_pack(struct repo_tree_writer *w, const uint8_t id[REPO_HASH_LEN],
                           struct util_err *err);
int repo_chunkset_rec_chunk(struct repo_tree_writer *w, const struct repo_chunk *c,
                            struct util_err *err);
/*
 * Reads a chunk set tree into s (sorted by hash). A pack's record starts a run of its
 * chunks, and a pack may have several runs in any order (a backup writes the set in
 * the order of its file list: docs/repository.md, "Metadata"); s->packs is each
 * pack once, by hash.
 */
int repo_chunkset_read(struct repo_chunkset *s, struct repo_tree_reader *r, struct util_err *err);
/*
 * Calls rec for each record of one leaf, in order: a pack's (pack set, c NULL) or a
 * chunk's (pack NULL; c->pack is 0). A pack may have several records in a tree. A
 * malformed record is UTIL_EIO; a non-zero return of rec stops the walk and is
 * returned.
 */
typedef int (*repo_cs_rec_cb)(void *arg, const uint8_t *pack, const struct repo_chunk *c,
                              struct util_err *err);
int repo_chunkset_leaf_each(const uint8_t *recs, size_t len, repo_cs_rec_cb rec, void *arg,
                            struct util_err *err);
/* Calls pack for each pack record of one leaf (garbage collection's need). */
int repo_chunkset_leaf_packs(const uint8_t *recs, size_t len,
                             void (*pack)(void *arg, const uint8_t id[REPO_HASH_LEN]), void *arg,
                             struct util_err *err);
void repo_chunkset_free(struct repo_chunkset *s);
/*
 * For a reader that noted a pack for each pack record (a pack may have several runs):
 * sorts packs[0, *n) by hash with each pack once, sets *n, and returns where each old
 * index went (the caller frees it). Memory: 40 bytes a record, while it runs.
 */
uint32_t *repo_packs_unique(uint8_t (*packs)[REPO_HASH_LEN], size_t *n);

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

#endif
