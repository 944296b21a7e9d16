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

#include <openssl/sha.h>

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

struct backup_job {
    uv_work_t req;
    struct backup *b;
    uint8_t hash[REPO_HASH_LEN];
    uint8_t *plain, *sealed;
    size_t len, sealed_len;
    uint8_t flags;
    bool changed;
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
    repo_chunkset_init(&b->set);
    repo_pack_writer_init(&b->pw);
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

/* The pack table's entries: the set's, by position (members). */
static const struct repo_chunk *backup_pack_entry(size_t i, void *arg)
{
    const struct backup *b = arg;
    return &b->set.v[b->members[i]];
}

/* Closes the pack being filled: its chunks' entries in the set get its index; it is queued. */
static void backup_pack_close(struct backup *b)
{
    struct backup_pack *p = util_calloc(1, sizeof(*p)), **tail;
    uint32_t idx;
    repo_pack_writer_finish_with(&b->pw, b->keys, b->nmembers, backup_pack_entry, b, &p->data,
                                 &p->len, p->id);
    idx = repo_chunkset_pack(&b->set, p->id);
    for (size_t i = 0; i < b->nmembers; i++)
        b->set.v[b->members[i]].pack = idx;
    b->nmembers = 0;
    repo_pack_writer_reset(&b->pw);
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
    repo_blob_seal(j->b->keys, 1, j->hash, j->plain, j->len, &j->sealed, &j->sealed_len, &j->flags);
    /* The plain copy goes now rather than when the loop thread gets to the job. */
    free(j->plain);
    j->plain = NULL;
}

static void backup_job_done(uv_work_t *req, int status)
{
    struct backup_job *j = req->data;
    struct backup *b = j->b;
    b->jobs--;
    b->job_bytes -= j->len;
    free(j->plain);
    if (status == 0 && b->fatal == 0) {
        /* The set has the chunk as pending since it was queued: its entry gets where it
         * is in the pack now, and its pack once the pack is closed. The pack keeps only
         * the entry's position (4 bytes, not a 48-byte copy: a pack of small files
         * holds 250,000 chunks). */
        struct repo_chunk *c = repo_chunkset_lookup(&b->set, j->hash);
        if (c == NULL || c->pack != REPO_CHUNK_PENDING)
            abort(); /* queued chunks are put in the set first, once */
        c->offset = repo_pack_writer_put(&b->pw, j->sealed, j->sealed_len);
        c->stored = (uint32_t)j->sealed_len;
        c->plain = (uint32_t)j->len;
        c->flags = j->flags;
        b->members = util_grow(b->members, &b->capmembers, b->nmembers + 1, sizeof(*b->members));
        b->members[b->nmembers++] = (uint32_t)(c - b->set.v);
        b->new_bytes += j->len;
        if (!(j->flags & REPO_BLOB_ZSTD))
            b->raw_new_bytes += j->len;
        if (j->changed) {
            b->changed_bytes += j->len;
            if (!(j->flags & REPO_BLOB_ZSTD))
                b->raw_changed_bytes += j->len;
        }
        if (backup_pack_full(&b->pw, b->nmembers))
            backup_pack_close(b);
    }
    free(j->sealed);
    free(j);
}

bool backup_pack_full(const struct repo_pack_writer *pw, size_t nmembers)
{
    /* The table counts: a pack of tiny chunks is a third table (45 bytes a chunk). */
    return repo_pack_writer_size(pw, nmembers) >= REPO_PACK_SIZE;
}

bool backup_may_queue(const struct repo_pack_writer *pw, size_t nmembers, unsigned jobs,
                      size_t job_bytes, unsigned closed, size_t len)
{
    bool closes = repo_pack_writer_size(pw, nmembers + jobs + 1) + job_bytes +
                      (jobs + 1) * REPO_SEAL_EXTRA + len >=
                  REPO_PACK_SIZE;
    if (jobs >= BACKUP_JOBS || (jobs > 0 && job_bytes + len > BACKUP_JOB_BYTES))
        return false;
    return closes ? closed + 1 < BACKUP_PACKS : closed < BACKUP_PACKS;
}

static bool backup_has_room(const struct backup *b, size_t len)
{
    return backup_may_queue(&b->pw, b->nmembers, b->jobs, b->job_bytes, backup_packs_waiting(b),
                            len);
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
        uv_run(loop, UV_RUN_ONCE);
    }
}

/*
 * A chunk of the parent's set that this snapshot references: a bit beside the
 * parent's set, not a copy of its entry, so a re-run holds the entries once
 * (backup_store_adopt_parent moves them into this run's set at the end).
 */
static void backup_parent_mark(struct backup *b, const struct repo_chunk *pc)
{
    size_t i = (size_t)(pc - b->parent_set->v);
    if (b->parent_used == NULL)
        b->parent_used = util_calloc(b->parent_set->n / 8 + 1, 1);
    b->parent_used[i / 8] |= (uint8_t)(1u << (i % 8));
}

bool backup_store_chunk(struct backup *b, const uint8_t *data, size_t len, bool changed,
                        uint8_t hash[REPO_HASH_LEN])
{
    struct backup_job *j;
    const struct repo_chunk *pc;
    struct repo_chunk pending;

    SHA256(data, len, hash);
    /* Let finished work and uploads progress without blocking. */
    uv_run(s3_sync_loop(b->st->s3), UV_RUN_NOWAIT);
    if (backup_should_stop(b))
        return false;
    /* The set is this run's dedup table: a chunk is in it from when it is queued. */
    if (repo_chunkset_lookup(&b->set, hash) != NULL)
        return true;
    if (b->parent_set != NULL && (pc = repo_chunkset_find(b->parent_set, hash)) != NULL) {
        backup_parent_mark(b, pc);
        return true;
    }
    if (!backup_wait(b, false, len))
        return false;
    memset(&pending, 0, sizeof(pending));
    memcpy(pending.hash, hash, REPO_HASH_LEN);
    pending.pack = REPO_CHUNK_PENDING;
    repo_chunkset_put(&b->set, &pending);
    j = util_calloc(1, sizeof(*j));
    j->req.data = j;
    j->b = b;
    memcpy(j->hash, hash, REPO_HASH_LEN);
    j->plain = util_malloc(len);
    memcpy(j->plain, data, len);
    j->len = len;
    j->changed = changed;
    if (uv_queue_work(s3_sync_loop(b->st->s3), &j->req, backup_job_work, backup_job_done) != 0) {
        free(j->plain);
        free(j);
        backup_fail(b, UTIL_EIO, "cannot start a worker thread");
        return false;
    }
    b->jobs++;
    b->job_bytes += len;
    return true;
}

int backup_store_reuse(struct backup *b, const struct repo_file *pf, struct util_err *err)
{
    for (size_t i = 0; i < pf->nchunks; i++) {
        const struct repo_chunk *pc =
            b->parent_set != NULL ? repo_chunkset_find(b->parent_set, pf->chunks[i]) : NULL;
        if (pc == NULL)
            return util_err_set(err, UTIL_EIO, "the parent's chunk set lacks a chunk of %s",
                                pf->path);
    }
    for (size_t i = 0; i < pf->nchunks; i++)
        backup_parent_mark(b, repo_chunkset_find(b->parent_set, pf->chunks[i]));
    return 0;
}

void backup_store_adopt_parent(struct backup *b)
{
    struct repo_chunkset *ps = b->parent_set;
    uint32_t *map;
    size_t j = 0;

    if (ps == NULL || b->parent_used == NULL)
        return;
    /* The parent's packs get their index in this set's list when first used. */
    map = util_malloc((ps->npacks ? ps->npacks : 1) * sizeof(*map));
    for (size_t i = 0; i < ps->npacks; i++)
        map[i] = REPO_CHUNK_PENDING;
    for (size_t i = 0; i < ps->n; i++) {
        struct repo_chunk c;
        if (!(b->parent_used[i / 8] & (1u << (i % 8))))
            continue;
        c = ps->v[i];
        if (map[c.pack] == REPO_CHUNK_PENDING)
            map[c.pack] = repo_chunkset_pack(&b->set, ps->packs[c.pack]);
        c.pack = map[c.pack];
        ps->v[j++] = c;
    }
    free(map);
    /* This run's new chunks follow; the parent's array becomes the set's. */
    ps->v = util_realloc(ps->v, (j + b->set.n ? j + b->set.n : 1) * sizeof(*ps->v));
    if (b->set.n > 0)
        memcpy(ps->v + j, b->set.v, b->set.n * sizeof(*ps->v));
    free(b->set.v);
    free(b->set.index);
    b->set.index = NULL;
    b->set.icap = 0;
    b->set.v = ps->v;
    b->set.n = b->set.cap = j + b->set.n;
    ps->v = NULL;
    ps->n = ps->cap = 0;
    free(b->parent_used);
    b->parent_used = NULL;
}

bool backup_store_flush(struct backup *b)
{
    uv_loop_t *loop = s3_sync_loop(b->st->s3);
    while (b->jobs > 0) {
        if (backup_should_stop(b))
            return false;
        uv_run(loop, UV_RUN_ONCE);
    }
    if (b->nmembers > 0)
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
    free(b->members);
    b->members = NULL;
    b->nmembers = b->capmembers = 0;
    repo_chunkset_free(&b->set);
    free(b->parent_used);
    b->parent_used = NULL;
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
