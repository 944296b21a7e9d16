/*
 * backup: the parts of `lode backup` (docs/repository.md, "Backing up"), shared by
 * cli/cmd_backup.c (flags, policy, limits), backup_run.c (the order of the steps:
 * run record, parent, walk, meta/, marks, manifest), backup_walk.c (the
 * directory walk merged with the parent's file list, reading and chunking) and
 * backup_store.c (sealing on the thread pool, packs, paced uploads).
 *
 * Threads: the main thread walks, reads, chunks and hashes (SHA-256 decides at
 * once whether a chunk is new); new chunks are gathered into batches (up to
 * BACKUP_BATCH_CHUNKS chunks or BACKUP_BATCH_BYTES bytes, a larger chunk alone),
 * and each batch is compressed and sealed on libuv's thread pool as one job, with
 * one sealer (repo_sealer_new, kept for later jobs) for its chunks; their completions, pack
 * assembly and uploads run on the storage loop, which the main thread runs at each batch it hands
 * over, at least every BACKUP_POLL_NS, and whenever it must wait. A small file costs
 * the main thread its own system calls (fstatat, open, fstat, flistxattr, one read,
 * close) and a share of one hand-off to the pool: one a file was more work than the
 * file (wake-ups, a loop iteration, a new zstd and cipher context, a random draw).
 * Memory is bounded by BACKUP_JOBS batches being gathered or sealed (2 MiB of plain
 * bytes in all, or one larger chunk; a batch's buffer is BACKUP_BATCH_BYTES, or its
 * one larger chunk; each sealing job's zstd context, a few hundred KiB),
 * BACKUP_PACKS packs of 16 MiB in all, closed or being filled (one uploading while
 * the next fills), plus the read buffer (9 MiB). Batch buffers and sealers are kept
 * for the next batches rather than freed (backup_buf_take; b->sealers), at most
 * BACKUP_JOBS of each: up to 8 MiB of buffers and 4 zstd contexts, a few MiB more
 * than freeing them (peak 50 -> 55 to 57 MiB on the benchmark tree) for a third less
 * CPU, most of it page faults (docs/benchmarks.md, "Where the first backup's CPU
 * goes"). The key derivation (scrypt, 32 MiB) is over and its memory unmapped before
 * any of these exist (cli/cmd_backup.c); the metadata pack being filled (at most
 * 16 MiB) and its sealer, and the chunk index grows with the chunks, about 12 bytes
 * each (chunkidx.h).
 */
#ifndef LODE_AGENT_BACKUP_H
#define LODE_AGENT_BACKUP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "anomaly/anomaly.h"
#include "chunkidx.h"
#include "hooks.h"
#include "policy/policy.h"
#include "repo/repo.h"
#include "storage.h"

/*
 * zstd's level for data chunks (docs/repository.md, "Data"): 1 for a run without a
 * parent, which reads and stores the whole tree and whose wall time is the first
 * backup's; 3 for a run with one, whose new data is what changed: little, stored
 * once and kept for as long as retention keeps its snapshots. Level 3 took 5 % off
 * the bytes of a copied /usr/share and Go (321.8 against 338.5 MB; a 35 KB licence
 * 12.6 against 13.3 KB) for 28 % more CPU (10.5 against 8.2 s) and 20 % more wall
 * time, which a first backup cannot afford (docs/benchmarks.md).
 */
#define BACKUP_DATA_LEVEL_FIRST 1
#define BACKUP_DATA_LEVEL_RERUN 3
#define BACKUP_JOBS             4 /* chunks being compressed and sealed at once */
#define BACKUP_PACKS            2 /* packs in memory: closed ones and the one being filled */
/* Plain bytes being sealed at once. A job holds its chunk, then zstd's context and
 * output and the sealed copy, about 3 to 4 x its size: with chunks of up to 8 MiB,
 * four jobs could hold over 96 MiB. On the 58,814-file tree the peak RSS was 69 MiB
 * with 8 MiB in all, 62 to 64 with 4 and 54 with 2, in the same wall time (two
 * cores: two jobs of the 1 MiB average chunk keep both busy). One job always runs,
 * whatever its size. */
#define BACKUP_JOB_BYTES (2u << 20)
/* A seal job is a batch of chunks: up to this many, or this many plain bytes (a
 * larger chunk is a batch alone). 128 small files make one hand-off to the pool
 * instead of 128; the batch being gathered counts as a job, its bytes in
 * BACKUP_JOB_BYTES. */
#define BACKUP_BATCH_CHUNKS 128
#define BACKUP_BATCH_BYTES  (256u << 10)
/* The walk runs the storage loop at each batch it hands over and at least this
 * often (ns), so uploads go on between batches. */
#define BACKUP_POLL_NS 1000000u

struct backup_pack; /* backup_store.c */
struct backup_job;  /* backup_store.c */
struct backup_mtab; /* backup_list.c */
struct mcache;      /* mcache.h */

struct backup {
    /* Inputs. */
    struct storage *st;
    struct repo_source src;
    char id[REPO_ID_LEN + 1];
    const struct repo_keys *keys;
    const char *agent; /* "lode <version>", for the run record and the manifest */
    const char *root;  /* --root */
    char **paths;      /* the policy's paths, sorted, nested ones kept */
    size_t npaths;
    uint64_t deadline_ns;                 /* uv_hrtime() at which maxRuntime has passed */
    const struct policy_exclude *exclude; /* spec.exclude, or NULL (borrowed) */
    struct anomaly_thresholds thresholds; /* defaults, or $LODE_ANOMALY's */
    struct mcache *cache; /* the node's metadata cache (mcache.h), or NULL (borrowed) */

    /* The parent's file list reader, or none. */
    struct repo_files_reader *parent_files;
    struct repo_merge merge;

    /* What this snapshot references (chunkidx.h): the parent's chunk set, with a bit
     * for each chunk this snapshot uses, and this run's new chunks (the run's dedup
     * table, from when they are queued). */
    struct chunkidx idx;
    bool idx_open;
    struct repo_files_writer list; /* this snapshot's file list */

    /* backup_list.c: the metadata chunks known (the parent's and this run's) and
     * the metadata pack being filled. */
    struct backup_mtab *mtab;
    struct repo_pack_writer mp;
    struct repo_sealer *msealer; /* seals its chunks (the main thread's) */
    uint32_t mseq;               /* the number of the next metadata pack */
    uint64_t mchunks, mpacks;    /* metadata chunks and packs this run stored */
    /* Set by backup_list_finish: from then on a full metadata pack goes up from the
     * store callback (during the walk backup_list_ship does it, between entries). */
    bool mfinishing;

    /* backup_store.c: jobs, packs, uploads, pacing. */
    struct repo_pack_writer pw; /* its entries are the index's members */
    unsigned jobs;              /* seal jobs in flight, with the one being gathered */
    size_t job_bytes;           /* their plain bytes */
    size_t job_chunks;          /* their chunks */
    struct backup_job *gather;  /* the batch being gathered, or NULL */
    uint64_t polled_ns;         /* uv_hrtime() of the loop's last run */
    struct evp_md_ctx_st *sha;  /* SHA-256 of each chunk (EVP_MD_CTX) */
    struct evp_md_st *sha_md;   /* its digest, fetched once (EVP_MD) */
    struct backup_pack *ready;  /* finished packs not yet uploading */
    /* Buffers kept for reuse (backup_buf_take): a fresh buffer of 256 KiB or more is
     * a new mapping whose every page faults on first touch, which cost the main
     * thread 15% of its time on the benchmark tree (docs/benchmarks.md, "Where the
     * first backup's CPU goes"). */
    struct {
        uint8_t *data;
        size_t cap;
    } spares[BACKUP_JOBS]; /* batch buffers of at most BACKUP_JOB_BYTES */
    unsigned nspares;
    /* Sealers kept between jobs (one per job in flight, handed over with it): a new
     * one per job allocated and faulted in zstd's tables (about 560 KiB) every time. */
    struct repo_sealer *sealers[BACKUP_JOBS];
    unsigned nsealers;
    unsigned uploading;
    struct repo_bucket bucket;
    bool paced;
    uv_timer_t tick;

    /* Outcome. */
    int fatal; /* first fatal error (storage, memory): no snapshot */
    char fatal_msg[512];
    volatile sig_atomic_t *stop; /* set by SIGTERM/SIGINT */
    bool timed_out;
    struct repo_error *errs; /* files that could not be read */
    size_t nerrs, caperrs;

    /* Counters (manifest and anomaly detector). */
    uint64_t files, bytes, new_files, changed_files;
    uint64_t new_bytes, raw_new_bytes, uploaded_bytes;
    uint64_t changed_bytes, raw_changed_bytes;
    struct repo_excluded excluded[REPO_EXCL_RULES]; /* backup_exclude.c */
};

/* ---- backup_store.c ---- */

/* Sets up the stores after b->st and b->keys are set; rate 0 = unlimited. The chunk
 * index's files are made in $TMPDIR: when they cannot be, b->fatal says why and
 * backup_run writes nothing. */
void backup_store_init(struct backup *b, uint64_t rate);
/* Waits for the thread pool, cancels uploads, closes the timers (the loop stays). */
void backup_store_close(struct backup *b);
/* Frees what cancelled uploads held; after storage_close (curl has let go then). */
void backup_store_release(struct backup *b);
/* The pace callback for struct s3_client_opts (arg: the struct backup). */
size_t backup_pace_cb(size_t want, void *arg);
/*
 * One chunk of a file: records it in the file's list and, when neither the parent
 * nor this run has it, queues it to be sealed and packed (copying data). changed
 * says whether the file existed in the parent (the anomaly detector's numbers).
 * Waits (running the loop) while the pipeline is full. Returns false when the
 * backup must stop (b->fatal, stop requested, deadline).
 */
bool backup_store_chunk(struct backup *b, const uint8_t *data, size_t len, bool changed,
                        uint8_t hash[REPO_HASH_LEN]);
/* Records the chunks of an unchanged file (from the parent's set) in this snapshot's. */
int backup_store_reuse(struct backup *b, const struct repo_file *pf, struct util_err *err);
/*
 * The pack closing rule (pure): the pack being filled, pw with nmembers table
 * entries, is closed once its blobs and its table reach REPO_PACK_SIZE; the table
 * counts, so a pack of tiny chunks closes before 16 MiB of data.
 */
bool backup_pack_full(const struct repo_pack_writer *pw, size_t nmembers);
/* Whether a chunk of len bytes joins a batch of n chunks and bytes bytes (pure):
 * one that is empty, full or would pass BACKUP_BATCH_BYTES takes no more. */
bool backup_batch_joins(size_t n, size_t bytes, size_t len);
/*
 * The admission rule (pure): whether a chunk of len bytes may be queued to be
 * sealed while jobs seal jobs (batches, with the one being gathered) of chunks
 * chunks and job_bytes plain bytes are in flight, closed packs are in memory
 * (uploading or waiting) and pw with nmembers entries is being filled; joins says
 * the chunk fits the batch being gathered (backup_batch_joins). At most
 * BACKUP_JOBS jobs and BACKUP_JOB_BYTES bytes (one larger chunk alone) are in
 * flight, and at most BACKUP_PACKS packs are in memory, closed ones and the one
 * being filled: when the chunks in flight and this one may close the pack being
 * filled (a job's completion closes it without asking), the chunk waits until one
 * closed pack less is left. With BACKUP_PACKS 2 that is one pack uploading while
 * the next fills, 2 x 16 MiB; the last pack, closed by the flush, may make it three.
 */
bool backup_may_queue(const struct repo_pack_writer *pw, size_t nmembers, unsigned jobs,
                      size_t chunks, size_t job_bytes, unsigned closed, bool joins, size_t len);
/*
 * A batch buffer of at least need bytes (its capacity in *cap): the smallest spare
 * that holds need, else the largest spare grown to need, else a new one; one over
 * BACKUP_JOB_BYTES (a larger chunk, alone in flight) is always new. Since a buffer is
 * made only when no spare is left, there are never more than the batches in flight
 * (BACKUP_JOBS), each at most BACKUP_JOB_BYTES once given back: 8 MiB at most, in
 * place of a mapping and its page faults for every batch.
 */
uint8_t *backup_buf_take(struct backup *b, size_t need, size_t *cap);
/* Gives a batch buffer back: kept as a spare when it is at most BACKUP_JOB_BYTES and
 * fewer than BACKUP_JOBS are kept, else freed. NULL is ignored. */
void backup_buf_give(struct backup *b, uint8_t *buf, size_t cap);
/* A sealer for a seal job: a kept one, else a new one (agent/backup_bufs.c). */
struct repo_sealer *backup_sealer_take(struct backup *b);
/* A job's sealer back: kept for the next job while fewer than BACKUP_JOBS are, else freed. */
void backup_sealer_give(struct backup *b, struct repo_sealer *s);
/* Frees every kept buffer and sealer (backup_store_close). */
void backup_bufs_free(struct backup *b);
/* Seals what is pending (the batch being gathered too) into the pack being filled,
 * which stays open; false when the backup must stop. */
bool backup_store_drain(struct backup *b);
/* Seals what is pending, uploads the last pack and waits for every upload. */
bool backup_store_flush(struct backup *b);
/* A PUT of a whole object through the paced client (meta/, marks, manifest). */
int backup_put(struct backup *b, const char *key, const void *data, size_t len, bool if_none_match,
               struct util_err *err);
/* Whether the backup should stop now (and why, into b->fatal_msg if not yet set). */
bool backup_should_stop(struct backup *b);
/* Records the first fatal error (no snapshot); later ones are dropped. */
void backup_fail(struct backup *b, int code, const char *msg);

/* ---- backup_list.c ---- */

/* Sets up the table, the metadata pack and b->list (after b->keys and b->id). */
void backup_list_init(struct backup *b);
/* repo_mstore_cb: a chunk the table knows is reused, else sealed into the pack. */
int backup_meta_store_cb(void *arg, const uint8_t hash[REPO_HASH_LEN], const uint8_t *plain,
                         size_t len, struct repo_mref *ref, struct util_err *err);
/* repo_mvisit_cb for the parent's trees, once a chunk opened: notes its place (arg: the
 * backup), so a damaged chunk of the parent is never reused. */
bool backup_meta_seen_cb(void *arg, const struct repo_mref *ref, unsigned level);
/* PUTs the metadata pack once it is full; false when the backup must stop. Called
 * before each entry. */
bool backup_list_ship(struct backup *b);
/* Finishes the file list, writes the chunk set (from b->idx) and PUTs the
 * last metadata pack: the two roots. */
int backup_list_finish(struct backup *b, struct repo_root *files, struct repo_root *chunks,
                       struct util_err *err);
/* After a failure or a stop: drops the pack being filled. */
void backup_list_abort(struct backup *b);
/* Frees the table, the pack and the list writer. */
void backup_list_release(struct backup *b);

/* ---- the outcome of a run (backup_run) ---- */

struct backup_result {
    bool written;
    int64_t time; /* the manifest's modification time */
    bool suspicious;
    char anomaly[1024]; /* the rules that fired, with their numbers, when suspicious */
    char ioprio[512];   /* why the policy's I/O priority has no effect, or "" (iosched.h) */
    const char *error;  /* why no snapshot, or NULL; or why an after-hook failed */
    const struct hook_outcome *hooks; /* spec.hooks that ran (hooks.h), in order */
    const char *pinned;               /* the reason it was pinned with (--pin), or NULL */
    size_t nhooks;
};

/* ---- backup_run.c ---- */

/*
 * Steps 2 to 8 of a run (backup_run.c's top) once the storage and the stores are
 * set up: r->written when the manifest is, else r->error says why (b->fatal).
 */
void backup_run(struct backup *b, const struct policy *pol, int64_t max_runtime,
                struct backup_result *r);

/* ---- backup_exclude.c (docs/policy.md, "spec.exclude") ---- */

/* Whether the entry at path is left out by a pattern or by its size; counts it. */
bool backup_exclude_entry(struct backup *b, const char *path, const struct stat *sb);
/* Whether the directory open at dirfd holds a CACHEDIR.TAG with the standard signature
 * and caches are excluded: it is then recorded but not entered; counts it. */
bool backup_exclude_cache(struct backup *b, int dirfd);
/* Counts a mount point of another file system, recorded but not entered. */
void backup_exclude_other_fs(struct backup *b);

/* ---- backup_walk.c ---- */

/* Walks every path, merging with the parent, writing b->files. false: stop. */
bool backup_walk(struct backup *b);
void backup_add_error(struct backup *b, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
