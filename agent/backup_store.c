/*
 * backup_store: new chunks sealed on the thread pool, packed, and uploaded through
 * one token bucket (backup.h has the threads and the memory bound).
 *
 * The upload cap (limits.uploadRate) is one repo_bucket for the whole process:
 * every byte of every request body (packs, file list, chunk set, marks, manifest,
 * run record) asks backup_pace_cb before curl may send it, which waits for the
 * bucket (see there why it waits rather than pauses the transfer). Bodies are
 * buffers with their SHA-256 signed, so a retry sends the same bytes again through
 * the same bucket, never more than the cap.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "backup.h"

#define BACKUP_PACE_MIN 16384 /* bytes: one TLS record */

struct backup_pack {
    struct backup_pack *next;
    struct backup *b;
    uint8_t *data;
    size_t len;
    uint8_t id[REPO_HASH_LEN];
    bool uploading;
    struct s3_op *op;
};

/* One chunk of a batch: its plain bytes are at off in the batch's buffer. */
struct backup_item {
    uint8_t hash[REPO_HASH_LEN];
    size_t off, len;
    uint8_t *sealed;
    size_t sealed_len;
    uint8_t flags;
    bool changed;
    uint32_t anchor; /* its place in the chunk set (chunkidx_anchor) */
};

/*
 * A seal job: a batch of chunks, gathered by the walk (b->gather) until it holds
 * BACKUP_BATCH_CHUNKS chunks or BACKUP_BATCH_BYTES bytes, then sealed on the thread
 * pool in one piece. One job a small file cost a wake-up of a worker, its
 * completion signal and a loop iteration each, more than sealing the chunk; a batch
 * pays them once for all its chunks.
 */
struct backup_job {
    uv_work_t req;
    struct backup *b;
    struct backup_item *items;
    size_t n, cap;
    uint8_t *plain;             /* the chunks' bytes, back to back (backup_buf_take's) */
    struct repo_sealer *sealer; /* from b->sealers or new, from the dispatch on */
    size_t bytes, capbytes;
    int level; /* zstd's: BACKUP_DATA_LEVEL_FIRST or _RERUN */
};

/* ---- pacing ---- */

/*
 * Never 0: rather than pausing the transfer (and resuming it from a timer), the
 * loop thread waits for the bucket, at most 20 ms at a time, which keeps one code
 * path and no timer. curl asks for one buffer per transfer and loop iteration, so
 * other transfers and the walk get their turn between waits. Once the run must
 * stop, the wanted bytes go at once: the client is closed right after.
 */
size_t backup_pace_cb(size_t want, void *arg)
{
    struct backup *b = arg;
    /* Whole TLS records: handing curl whatever trickled in since the last call gave
     * 130-byte sends, and the records' overhead doubled the bytes on the wire. No
     * more than one record either: what curl holds unsent stays small. */
    size_t need = want < BACKUP_PACE_MIN ? want : BACKUP_PACE_MIN;
    if (!b->paced)
        return want;
    for (;;) {
        uint64_t now = uv_hrtime();
        uint64_t ns = repo_bucket_wait(&b->bucket, now, need);
        struct timespec ts;
        if (ns == 0)
            return repo_bucket_take(&b->bucket, now, need);
        if (*b->stop || now >= b->deadline_ns)
            return want;
        if (ns > 20000000)
            ns = 20000000;
        ts.tv_sec = 0;
        ts.tv_nsec = (long)ns;
        nanosleep(&ts, NULL);
    }
}

/* The tick makes a blocking loop iteration return often, so a stop request is seen. */
static void backup_tick(uv_timer_t *t)
{
    (void)t;
}

void backup_store_init(struct backup *b, uint64_t rate)
{
    uv_loop_t *loop = s3_sync_loop(b->st->s3);
    struct util_err err = {0};
    repo_pack_writer_init(&b->pw);
    b->sha_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    b->sha = EVP_MD_CTX_new();
    if (b->sha_md == NULL || b->sha == NULL || EVP_DigestInit_ex2(b->sha, b->sha_md, NULL) != 1) {
        fprintf(stderr, "lode: out of memory (digest context)\n");
        abort();
    }
    if (chunkidx_open(&b->idx, getenv("TMPDIR"), &err) == 0)
        b->idx_open = true;
    else
        backup_fail(b, err.code, err.msg);
    b->paced = rate > 0;
    repo_bucket_init(&b->bucket, rate > 0 ? rate : 1, uv_hrtime());
    uv_timer_init(loop, &b->tick);
    uv_timer_start(&b->tick, backup_tick, 100, 100);
}

bool backup_should_stop(struct backup *b)
{
    if (b->fatal != 0)
        return true;
    if (*b->stop) {
        b->fatal = UTIL_EIO;
        snprintf(b->fatal_msg, sizeof(b->fatal_msg),
                 "stopped by a signal (SIGTERM or SIGINT) before the snapshot was written");
        return true;
    }
    if (uv_hrtime() >= b->deadline_ns) {
        b->fatal = UTIL_EIO;
        b->timed_out = true;
        snprintf(b->fatal_msg, sizeof(b->fatal_msg),
                 "stopped at maxRuntime before the snapshot was written");
        return true;
    }
    return false;
}

void backup_fail(struct backup *b, int code, const char *msg)
{
    if (b->fatal == 0) {
        b->fatal = code;
        snprintf(b->fatal_msg, sizeof(b->fatal_msg), "%s", msg);
    }
}

/* ---- packs ---- */

static void backup_pack_free(struct backup *b, struct backup_pack *p)
{
    struct backup_pack **pp;
    for (pp = &b->ready; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    free(p->data);
    free(p);
}

static void backup_uploads_start(struct backup *b);

static void backup_pack_done(const struct s3_result *res, void *arg)
{
    struct backup_pack *p = arg;
    struct backup *b = p->b;
    b->uploading--;
    if (res->error != 0) {
        char msg[512];
        char hex[2 * REPO_HASH_LEN + 1];
        repo_hex(p->id, REPO_HASH_LEN, hex);
        snprintf(msg, sizeof(msg), "cannot upload pack %.16s: %s", hex, res->message);
        backup_fail(b, res->error, msg);
    } else {
        b->uploaded_bytes += p->len;
    }
    backup_pack_free(b, p);
    if (b->fatal == 0)
        backup_uploads_start(b);
}

static void backup_uploads_start(struct backup *b)
{
    for (struct backup_pack *p = b->ready; p != NULL && b->uploading < BACKUP_PACKS; p = p->next) {
        struct repo_key k = {.kind = REPO_KEY_PACK, .src = b->src};
        char hex[2 * REPO_HASH_LEN + 1];
        struct s3_body body = {.data = p->data, .len = p->len, .sha256_hex = hex};
        struct util_err err = {0};
        char *key;
        int rc;
        if (p->uploading)
            continue;
        memcpy(k.pack, p->id, REPO_HASH_LEN);
        repo_hex(p->id, REPO_HASH_LEN, hex);
        key = repo_key_build(&k);
        rc = s3_put(s3_sync_client(b->st->s3), key, &body, NULL, backup_pack_done, p, &p->op, &err);
        free(key);
        if (rc != 0) {
            backup_fail(b, rc, err.msg);
            return;
        }
        p->uploading = true;
        b->uploading++;
    }
}

/* The pack table's entries: the index's members, read back in order. */
static const struct repo_chunk *backup_pack_entry(size_t i, void *arg)
{
    struct backup *b = arg;
    return chunkidx_member(&b->idx, i);
}

/* Closes the pack being filled: the index learns its name; it is queued. */
static void backup_pack_close(struct backup *b)
{
    struct backup_pack *p = util_calloc(1, sizeof(*p)), **tail;
    struct util_err err = {0};
    repo_pack_writer_finish_with(&b->pw, b->keys, chunkidx_members(&b->idx), backup_pack_entry, b,
                                 &p->data, &p->len, p->id);
    repo_pack_writer_reset(&b->pw);
    /* A table read back wrong is never sent: the failure stops the backup first. */
    if (chunkidx_pack_closed(&b->idx, p->id, &err) != 0) {
        backup_fail(b, err.code, err.msg);
        free(p->data);
        free(p);
        return;
    }
    p->b = b;
    for (tail = &b->ready; *tail != NULL; tail = &(*tail)->next)
        ;
    *tail = p;
    backup_uploads_start(b);
}

static unsigned backup_packs_waiting(const struct backup *b)
{
    unsigned n = 0;
    for (const struct backup_pack *p = b->ready; p != NULL; p = p->next)
        n++;
    return n;
}

/* ---- sealing ---- */

static void backup_job_work(uv_work_t *req)
{
    struct backup_job *j = req->data;
    for (size_t i = 0; i < j->n; i++) {
        struct backup_item *it = &j->items[i];
        repo_sealer_blob(j->sealer, j->level, it->hash, j->plain + it->off, it->len, &it->sealed,
                         &it->sealed_len, &it->flags);
    }
}

static void backup_job_free(struct backup_job *j)
{
    for (size_t i = 0; i < j->n; i++)
        free(j->items[i].sealed);
    free(j->items);
    free(j->plain);
    repo_sealer_free(j->sealer);
    free(j);
}

/* One sealed chunk into the pack being filled, which closes once full. */
static void backup_item_done(struct backup *b, const struct backup_item *it)
{
    /* The index has the chunk since it was queued; where it is in the pack goes to
     * the index's file (a pack of small files holds 250,000 chunks: their entries
     * are read back from there when it closes, not kept in memory). */
    struct repo_chunk c;
    struct util_err err = {0};
    memset(&c, 0, sizeof(c));
    memcpy(c.hash, it->hash, REPO_HASH_LEN);
    c.offset = repo_pack_writer_put(&b->pw, it->sealed, it->sealed_len);
    c.stored = (uint32_t)it->sealed_len;
    c.plain = (uint32_t)it->len;
    c.flags = it->flags;
    c.pack = it->anchor;
    if (chunkidx_sealed(&b->idx, &c, &err) != 0)
        backup_fail(b, err.code, err.msg);
    b->new_bytes += it->len;
    if (!(it->flags & REPO_BLOB_ZSTD))
        b->raw_new_bytes += it->len;
    if (it->changed) {
        b->changed_bytes += it->len;
        if (!(it->flags & REPO_BLOB_ZSTD))
            b->raw_changed_bytes += it->len;
    }
    if (b->fatal == 0 && backup_pack_full(&b->pw, chunkidx_members(&b->idx)))
        backup_pack_close(b);
}

static void backup_job_done(uv_work_t *req, int status)
{
    struct backup_job *j = req->data;
    struct backup *b = j->b;
    b->jobs--;
    b->job_bytes -= j->bytes;
    b->job_chunks -= j->n;
    backup_buf_give(b, j->plain, j->capbytes);
    j->plain = NULL;
    backup_sealer_give(b, j->sealer);
    j->sealer = NULL;
    for (size_t i = 0; i < j->n && status == 0 && b->fatal == 0; i++)
        backup_item_done(b, &j->items[i]);
    backup_job_free(j);
}

bool backup_pack_full(const struct repo_pack_writer *pw, size_t nmembers)
{
    /* The table counts: a pack of tiny chunks is a third table (45 bytes a chunk). */
    return repo_pack_writer_size(pw, nmembers) >= REPO_PACK_SIZE;
}

bool backup_batch_joins(size_t n, size_t bytes, size_t len)
{
    return n > 0 && n < BACKUP_BATCH_CHUNKS && bytes + len <= BACKUP_BATCH_BYTES;
}

bool backup_may_queue(const struct repo_pack_writer *pw, size_t nmembers, unsigned jobs,
                      size_t chunks, size_t job_bytes, unsigned closed, bool joins, size_t len)
{
    bool closes = repo_pack_writer_size(pw, nmembers + chunks + 1) + job_bytes +
                      (chunks + 1) * REPO_SEAL_EXTRA + len >=
                  REPO_PACK_SIZE;
    if ((!joins && jobs >= BACKUP_JOBS) || (job_bytes > 0 && job_bytes + len > BACKUP_JOB_BYTES))
        return false;
    return closes ? closed + 1 < BACKUP_PACKS : closed < BACKUP_PACKS;
}

/* Whether a chunk of len bytes joins the batch being gathered. */
static bool backup_joins(const struct backup *b, size_t len)
{
    return b->gather != NULL && backup_batch_joins(b->gather->n, b->gather->bytes, len);
}

static bool backup_has_room(const struct backup *b, size_t len)
{
    return backup_may_queue(&b->pw, chunkidx_members(&b->idx), b->jobs, b->job_chunks, b->job_bytes,
                            backup_packs_waiting(b), backup_joins(b, len), len);
}

/* Hands the batch being gathered to the thread pool; false when it cannot start. */
static bool backup_dispatch(struct backup *b)
{
    struct backup_job *j = b->gather;
    if (j == NULL)
        return true;
    b->gather = NULL;
    j->sealer = backup_sealer_take(b);
    if (uv_queue_work(s3_sync_loop(b->st->s3), &j->req, backup_job_work, backup_job_done) != 0) {
        b->jobs--;
        b->job_bytes -= j->bytes;
        b->job_chunks -= j->n;
        backup_job_free(j);
        backup_fail(b, UTIL_EIO, "cannot start a worker thread");
        return false;
    }
    return true;
}

/* Runs the loop until the pipeline has room for len bytes (or everything is done, with all). */
static bool backup_wait(struct backup *b, bool all, size_t len)
{
    uv_loop_t *loop = s3_sync_loop(b->st->s3);
    for (;;) {
        if (backup_should_stop(b))
            return false;
        if (all ? b->jobs == 0 && b->ready == NULL && b->uploading == 0 : backup_has_room(b, len))
            return true;
        /* What is gathered must be on its way before anything is waited for. */
        if (!backup_dispatch(b))
            return false;
        uv_run(loop, UV_RUN_ONCE);
        b->polled_ns = uv_hrtime();
    }
}

/* Lets finished work and uploads progress without blocking: at each batch and at
 * least every BACKUP_POLL_NS, not for each chunk (a loop iteration is a system call). */
static void backup_poll(struct backup *b, bool now)
{
    uint64_t t = uv_hrtime();
    if (now || t - b->polled_ns >= BACKUP_POLL_NS) {
        uv_run(s3_sync_loop(b->st->s3), UV_RUN_NOWAIT);
        b->polled_ns = t;
    }
}

bool backup_store_chunk(struct backup *b, const uint8_t *data, size_t len, bool changed,
                        uint8_t hash[REPO_HASH_LEN])
{
    struct backup_job *j;
    struct backup_item *it;
    struct util_err err = {0};
    uint32_t pos;
    int rc;

    /* One context for the run: SHA256() fetched the digest and made a context for
     * every chunk, more work than hashing a small file. */
    if (EVP_DigestInit_ex2(b->sha, NULL, NULL) != 1 || EVP_DigestUpdate(b->sha, data, len) != 1 ||
        EVP_DigestFinal_ex(b->sha, hash, NULL) != 1) {
        fprintf(stderr, "lode: SHA-256 failed\n");
        abort();
    }
    backup_poll(b, false);
    if (backup_should_stop(b))
        return false;
    /* The index is this run's dedup table: a chunk is in it from when it is queued,
     * and the parent's chunks are, each marked once this snapshot uses it. */
    if ((rc = chunkidx_find(&b->idx, hash, &pos, &err)) != 0) {
        if (rc < 0) {
            backup_fail(b, rc, err.msg);
            return false;
        }
        if (chunkidx_is_parent(&b->idx, pos))
            chunkidx_use(&b->idx, pos);
        return true;
    }
    if (!backup_wait(b, false, len))
        return false;
    if ((rc = chunkidx_add(&b->idx, hash, &err)) != 0) {
        backup_fail(b, rc, err.msg);
        return false;
    }
    if (!backup_joins(b, len)) {
        /* A full batch goes; this chunk starts the next one. */
        if (!backup_dispatch(b))
            return false;
        j = util_calloc(1, sizeof(*j));
        j->req.data = j;
        j->b = b;
        j->level = b->parent_files != NULL ? BACKUP_DATA_LEVEL_RERUN : BACKUP_DATA_LEVEL_FIRST;
        j->plain =
            backup_buf_take(b, len > BACKUP_BATCH_BYTES ? len : BACKUP_BATCH_BYTES, &j->capbytes);
        b->gather = j;
        b->jobs++;
    }
    j = b->gather;
    j->items = util_grow(j->items, &j->cap, j->n + 1, sizeof(*j->items));
    it = &j->items[j->n++];
    memset(it, 0, sizeof(*it));
    memcpy(it->hash, hash, REPO_HASH_LEN);
    it->off = j->bytes;
    it->len = len;
    it->changed = changed;
    it->anchor = chunkidx_anchor(&b->idx);
    memcpy(j->plain + j->bytes, data, len);
    j->bytes += len;
    b->job_bytes += len;
    b->job_chunks++;
    if (!backup_batch_joins(j->n, j->bytes, 1)) {
        if (!backup_dispatch(b))
            return false;
        backup_poll(b, true);
    }
    return true;
}

int backup_store_reuse(struct backup *b, const struct repo_file *pf, struct util_err *err)
{
    /* All or nothing: a file the walk reads again after all marks none of its old chunks. */
    uint32_t one, *pos = pf->nchunks > 1 ? util_malloc(pf->nchunks * sizeof(*pos)) : &one;
    int rc = 0;
    for (size_t i = 0; i < pf->nchunks && rc == 0; i++) {
        if ((rc = chunkidx_find(&b->idx, pf->chunks[i], &pos[i], err)) < 0)
            break; /* a read of the index's file: named in err */
        rc = rc > 0 && chunkidx_is_parent(&b->idx, pos[i])
                 ? 0
                 : util_err_set(err, UTIL_EIO, "the parent's chunk set lacks a chunk of %s",
                                pf->path);
    }
    for (size_t i = 0; i < pf->nchunks && rc == 0; i++)
        chunkidx_use(&b->idx, pos[i]);
    if (pos != &one)
        free(pos);
    return rc;
}

bool backup_store_drain(struct backup *b)
{
    uv_loop_t *loop = s3_sync_loop(b->st->s3);
    if (!backup_dispatch(b))
        return false;
    while (b->jobs > 0) {
        if (backup_should_stop(b))
            return false;
        uv_run(loop, UV_RUN_ONCE);
    }
    return true;
}

bool backup_store_flush(struct backup *b)
{
    if (!backup_store_drain(b))
        return false;
    if (chunkidx_members(&b->idx) > 0 && b->fatal == 0)
        backup_pack_close(b);
    return backup_wait(b, true, 0);
}

int backup_put(struct backup *b, const char *key, const void *data, size_t len, bool if_none_match,
               struct util_err *err)
{
    struct s3_body body = {.data = data, .len = len};
    struct s3_opts o = {.if_none_match = if_none_match};
    int rc = s3_sync_put(b->st->s3, key, &body, &o, NULL, err);
    if (rc == 0)
        b->uploaded_bytes += len;
    return rc;
}

void backup_store_close(struct backup *b)
{
    uv_loop_t *loop = s3_sync_loop(b->st->s3);
    struct backup_pack *p, *next, *keep = NULL;
    /* A batch still being gathered was never queued: it goes unsealed. */
    if (b->gather != NULL) {
        b->jobs--;
        b->job_bytes -= b->gather->bytes;
        b->job_chunks -= b->gather->n;
        backup_job_free(b->gather);
        b->gather = NULL;
    }
    /* Seal jobs cannot be abandoned: wait for the thread pool (each is short). */
    while (b->jobs > 0)
        uv_run(loop, UV_RUN_ONCE);
    /* Uploads still running are cancelled; curl may hold their bytes until the
     * client is closed, so those are freed by backup_store_release. */
    for (p = b->ready; p != NULL; p = next) {
        next = p->next;
        if (p->uploading) {
            s3_op_cancel(p->op);
            p->next = keep;
            keep = p;
        } else {
            free(p->data);
            free(p);
        }
    }
    b->ready = keep;
    uv_close((uv_handle_t *)&b->tick, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    repo_pack_writer_free(&b->pw);
    backup_bufs_free(b);
    EVP_MD_CTX_free(b->sha);
    EVP_MD_free(b->sha_md);
    b->sha = NULL;
    b->sha_md = NULL;
    if (b->idx_open)
        chunkidx_close(&b->idx);
    b->idx_open = false;
}

void backup_store_release(struct backup *b)
{
    struct backup_pack *p, *next;
    for (p = b->ready; p != NULL; p = next) {
        next = p->next;
        free(p->data);
        free(p);
    }
    b->ready = NULL;
}
