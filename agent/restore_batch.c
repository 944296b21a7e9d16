/*
 * The batch of `lode restore` (restore.h, "The batch"): regular files gathered in path
 * order, their chunks sorted by pack and offset and read with ranged GETs, each blob
 * opened and written on the libuv thread pool, each file put into place as soon as its
 * last chunk is written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "restore.h"
#include "restore_io.h"
#include "storage.h"

#define RX_INFLIGHT 4 /* ranged GETs at once */
/* Fetched bytes held at once, fetching or being opened: a range stays in memory until its
 * blobs are written, and on 2 cores the workers lag the GETs, so without this bound the
 * ranges waiting for a worker added to the four being fetched. */
#define RX_HELD_MAX (16u << 20)
/* Locks for making a batch's files on the workers, shared by files index modulo this. */
#define RX_LOCKS 64

/* A regular file of the batch. Its file is made by the first worker that writes a piece
 * of it (under the batch's lock for the file): tf.fd and create_err are the workers'
 * until the batch's work is done. */
struct rx_file {
    struct repo_file f; /* its chunk list dropped once planned */
    struct rs_tmpfile tf;
    uint64_t written;
    uint32_t pending; /* pieces not yet written or failed */
    bool tried;       /* a worker tried to make it */
    int create_err;   /* errno of that try, 0 when made */
    bool failed, done, reported;
};

/* A batch: its files, their pieces, and once sealed the ranges that fetch them. */
struct rx_batch {
    struct rx_file *files;
    size_t nfiles, capfiles;
    struct rx_piece *pieces;
    size_t npieces, cappieces;
    uint64_t bytes;
    struct rx_range *ranges;
    size_t nranges, capranges;
    size_t next; /* the next range to fetch */
    size_t busy; /* ranges being fetched or opened */
    bool sealed;
};

static char *rx_pack_key(struct rx *x, uint32_t pack)
{
    struct repo_key k = {.kind = REPO_KEY_PACK, .src = x->src};
    memcpy(k.pack, x->chunks.packs[pack], REPO_HASH_LEN);
    return repo_key_build(&k);
}

/* A file whose pieces are all in: into place, or away when something failed. */
static void rx_finish_file(struct rx *x, struct rx_file *f)
{
    struct util_err e = {0};
    f->done = true;
    if (x->fatal || f->create_err != 0) {
        rs_file_discard(&f->tf);
    } else if (f->failed || f->written != f->f.size) {
        if (!f->failed)
            rx_damage(x, "%s: %" PRIu64 " of %" PRIu64 " bytes could be written", f->f.path,
                      f->written, f->f.size);
        rx_say(x, "not restored: %s", f->f.path);
        rs_file_discard(&f->tf);
    } else if (rs_file_commit(&x->t, &f->f, &f->tf, &e) != 0) {
        rx_io_error(x, e.msg);
    } else {
        x->nfiles_done++;
        x->bytes += f->f.size;
        rx_progress(x);
    }
}

/* One piece of a file is written (or failed); the last one finishes the file, so files
 * go into place while the rest of the batch is still being fetched. */
static void rx_piece_done(struct rx *x, struct rx_batch *b, size_t piece, bool failed)
{
    struct rx_file *f = &b->files[b->pieces[piece].file];
    if (failed)
        f->failed = true;
    if (--f->pending == 0)
        rx_finish_file(x, f);
}

/* Marks the files of pieces [first, first + n) as not restorable. */
static void rx_fail_pieces(struct rx *x, struct rx_batch *b, size_t first, size_t n)
{
    for (size_t i = first; i < first + n; i++)
        rx_piece_done(x, b, i, true);
}

static int rx_write_all(int fd, const uint8_t *p, size_t n, uint64_t at)
{
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        p += w;
        n -= (size_t)w;
        at += (uint64_t)w;
    }
    return 0;
}

/* One ranged GET, then the work on its bytes. */
struct rx_get {
    struct rx *x;
    struct rx_batch *b;
    size_t range;
    char *key;
    uv_work_t work;
    uint8_t *body; /* the range's bytes, written by the GET's sink (x->bodies' buffer) */
    size_t got, len, bodycap;
    uint8_t *plain; /* a blob opened, on the worker (x->plains' buffer, grown there) */
    size_t plaincap;
    int *status; /* per piece: 0 written, 1 its blob is damaged, 2 its file could not be made,
                  * < 0 -errno of the write */
    struct util_buf msgs; /* one line per damaged blob */
};

/* The file's descriptor, the file made first if no worker has (under its lock, so that
 * two ranges of one file make it once); -1 when it could not be made. */
static int rx_file_fd(struct rx *x, struct rx_batch *b, uint32_t file)
{
    struct rx_file *f = &b->files[file];
    uv_mutex_t *m = &x->locks[file % RX_LOCKS];
    int fd;

    uv_mutex_lock(m);
    if (!f->tried) {
        int rc = rs_file_create(&x->t, &f->tf);
        f->tried = true;
        f->create_err = rc < 0 ? -rc : 0;
    }
    fd = f->tf.fd;
    uv_mutex_unlock(m);
    return fd;
}

/* Pieces of one blob, opened once: its place and the hash the files ask for. */
static bool rx_same_blob(const struct repo_chunk *a, const struct repo_chunk *b)
{
    return a->pack == b->pack && a->offset == b->offset &&
           memcmp(a->hash, b->hash, REPO_HASH_LEN) == 0;
}

/*
 * On the thread pool: opens each blob of the range once (authenticate, decompress,
 * hash) and writes it wherever it belongs, so that blobs are opened on as many threads
 * as ranges are in flight. It reads the batch's pieces and descriptors, which do not
 * change while a piece of theirs is pending, and writes only into g.
 */
static void rx_work_cb(uv_work_t *req)
{
    struct rx_get *g = req->data;
    struct rx *x = g->x;
    struct rx_batch *b = g->b;
    const struct rx_range *r = &b->ranges[g->range];

    for (size_t i = r->first; i < r->first + r->n;) {
        const struct repo_chunk *c = &b->pieces[i].c;
        size_t j = i;
        struct util_err e = {0};
        while (j < r->first + r->n && rx_same_blob(&b->pieces[j].c, c))
            j++;
        if (c->plain > g->plaincap || g->plain == NULL) {
            /* At the largest kept size: its pages are touched only as far as used, and
             * the buffer then serves any blob up to it without being made again. */
            free(g->plain);
            g->plaincap = c->plain > RX_RANGE_MAX ? c->plain : RX_RANGE_MAX;
            g->plain = util_malloc(g->plaincap);
        }
        if (repo_blob_open(x->keys, c, g->body + (c->offset - r->start), g->plain, &e) != 0) {
            util_buf_printf(&g->msgs, "%s: %s\n", g->key, e.msg);
            for (; i < j; i++)
                g->status[i - r->first] = 1;
            continue;
        }
        for (; i < j; i++) {
            int fd = rx_file_fd(x, b, b->pieces[i].file);
            g->status[i - r->first] =
                fd < 0 ? 2 : rx_write_all(fd, g->plain, c->plain, b->pieces[i].at);
        }
    }
}

static void rx_start(struct rx *x);

/* Back on the loop: the outcome of each piece, files into place, the next GETs. */
static void rx_work_done(uv_work_t *req, int status)
{
    struct rx_get *g = req->data;
    struct rx *x = g->x;
    struct rx_batch *b = g->b;
    const struct rx_range *r = &b->ranges[g->range];

    b->busy--;
    for (char *line = g->msgs.data, *nl; line != NULL && *line; line = nl + 1) {
        nl = strchr(line, '\n');
        *nl = '\0';
        rx_damage(x, "%s", line);
    }
    for (size_t i = r->first; i < r->first + r->n; i++) {
        int st = g->status[i - r->first];
        struct rx_file *f = &b->files[b->pieces[i].file];
        if (st == 1) {
            rx_piece_done(x, b, i, true);
        } else if (st == 2) {
            if (!f->reported) {
                char *m = util_asprintf("cannot create a file in the directory of %s: %s",
                                        f->f.path, strerror(f->create_err));
                rx_io_error(x, m);
                free(m);
                f->reported = true;
            }
            rx_piece_done(x, b, i, true);
        } else if (st < 0) {
            if (!x->fatal) { /* a full disk: stop at once */
                char *m = util_asprintf("writing %s: %s", f->f.path, strerror(-st));
                rx_io_error(x, m);
                free(m);
                x->fatal = true;
            }
        } else {
            f->written += b->pieces[i].c.plain;
            rx_piece_done(x, b, i, false);
        }
    }
    x->held -= g->len;
    rx_buf_give(x->bodies, &x->nbodies, g->body, g->bodycap);
    rx_buf_give(x->plains, &x->nplains, g->plain, g->plaincap);
    free(g->status);
    util_buf_free(&g->msgs);
    free(g->key);
    free(g);
    rx_start(x);
}

static void rx_got(const struct s3_result *res, void *arg)
{
    struct rx_get *g = arg;
    struct rx *x = g->x;
    struct rx_batch *b = g->b;
    const struct rx_range *r = &b->ranges[g->range];

    x->running--;
    x->gets++;
    if (res->error == S3_ENOTFOUND) {
        rx_damage(x, "%s is missing", g->key);
        rx_fail_pieces(x, b, r->first, r->n);
    } else if (res->error != 0) {
        char *m = util_asprintf("cannot read %s: %s", g->key, res->message);
        rx_io_error(x, m);
        free(m);
        x->fatal = true;
    } else if (g->got != g->len) {
        rx_damage(x, "%s is shorter than the chunk set says (%zu of %zu bytes at %" PRIu64 ")",
                  g->key, g->got, g->len, r->start);
        rx_fail_pieces(x, b, r->first, r->n);
    } else if (!x->fatal) {
        x->fetched += g->got;
        g->status = util_calloc(r->n, sizeof(*g->status));
        util_buf_init(&g->msgs);
        g->work.data = g;
        g->plain = rx_buf_take(x->plains, &x->nplains, 0, &g->plaincap);
        if (uv_queue_work(s3_sync_loop(x->st->s3), &g->work, rx_work_cb, rx_work_done) == 0)
            return; /* rx_work_done goes on */
        rx_io_error(x, "cannot start a worker thread");
        x->fatal = true;
        free(g->status);
        rx_buf_give(x->plains, &x->nplains, g->plain, g->plaincap);
    }
    b->busy--;
    x->held -= g->len;
    rx_buf_give(x->bodies, &x->nbodies, g->body, g->bodycap);
    free(g->key);
    free(g);
    rx_start(x);
}

/* The GET's bytes go straight into the range's buffer (no second copy). */
static int rx_sink(const char *data, size_t len, void *arg)
{
    struct rx_get *g = arg;
    if (len > g->len - g->got)
        return 1; /* more than asked for: the reply is not this range */
    memcpy(g->body + g->got, data, len);
    g->got += len;
    return 0;
}

/* The next GETs, the batch in flight's ranges before the planned one's (once sealed). */
static void rx_start(struct rx *x)
{
    while (!x->fatal && x->running < RX_INFLIGHT) {
        struct rx_batch *b = x->flight->next < x->flight->nranges ? x->flight : x->plan;
        if (!b->sealed || b->next >= b->nranges)
            return;
        const struct rx_range *r = &b->ranges[b->next];
        if (x->held > 0 && x->held + (r->end - r->start) > RX_HELD_MAX)
            return; /* rx_got or rx_work_done calls again once bytes are freed */
        struct rx_get *g = util_calloc(1, sizeof(*g));
        struct s3_opts o = {.range_start = r->start,
                            .range_len = r->end - r->start,
                            .max_bytes = r->end - r->start};
        struct util_err e = {0};
        g->x = x;
        g->b = b;
        g->range = b->next++;
        g->key = rx_pack_key(x, r->pack);
        g->len = (size_t)(r->end - r->start);
        g->body = rx_buf_take(x->bodies, &x->nbodies, g->len ? g->len : 1, &g->bodycap);
        if (s3_get(s3_sync_client(x->st->s3), g->key, &o, rx_sink, rx_got, g, NULL, &e) != 0) {
            char *m = util_asprintf("cannot read %s: %s", g->key, e.msg);
            rx_io_error(x, m);
            free(m);
            rx_buf_give(x->bodies, &x->nbodies, g->body, g->bodycap);
            free(g->key);
            free(g);
            x->fatal = true;
            return;
        }
        x->running++;
        b->busy++;
        x->held += g->len;
    }
}

static int rx_piece_cmp(const void *pa, const void *pb)
{
    const struct rx_piece *a = pa, *b = pb;
    if (a->c.pack != b->c.pack)
        return a->c.pack < b->c.pack ? -1 : 1;
    if (a->c.offset != b->c.offset)
        return a->c.offset < b->c.offset ? -1 : 1;
    if (a->file != b->file)
        return a->file < b->file ? -1 : 1;
    return a->at < b->at ? -1 : a->at > b->at;
}

size_t rx_plan_ranges(struct rx_piece *pieces, size_t n, struct rx_range **ranges, size_t *cap)
{
    size_t nranges = 0;
    if (n > 1)
        qsort(pieces, n, sizeof(*pieces), rx_piece_cmp);
    for (size_t i = 0; i < n; i++) {
        const struct repo_chunk *c = &pieces[i].c;
        uint64_t end = (uint64_t)c->offset + c->stored;
        struct rx_range *cur = nranges ? &(*ranges)[nranges - 1] : NULL;
        if (cur != NULL && cur->pack == c->pack && c->offset <= cur->end + RX_GAP &&
            end - cur->start <= RX_RANGE_MAX) {
            if (end > cur->end)
                cur->end = end;
            cur->n++;
            continue;
        }
        *ranges = util_grow(*ranges, cap, nranges + 1, sizeof(**ranges));
        (*ranges)[nranges++] =
            (struct rx_range){.pack = c->pack, .start = c->offset, .end = end, .first = i, .n = 1};
    }
    return nranges;
}

bool rx_batch_full(size_t nfiles, uint64_t bytes, uint64_t add, size_t max_files)
{
    return nfiles > 0 && (nfiles >= max_files || bytes + add > RX_BATCH_BYTES);
}

/* Sorts the planned batch's pieces into ranges and lets rx_start fetch them. */
static void rx_seal(struct rx *x, struct rx_batch *b)
{
    b->next = 0;
    b->nranges = rx_plan_ranges(b->pieces, b->npieces, &b->ranges, &b->capranges);
    b->sealed = true;
    rx_start(x);
}

/* Waits for every range of b to be fetched and written (or, after a fatal error, for
 * those under way), then empties it: files not put in place are discarded. */
static void rx_drain(struct rx *x, struct rx_batch *b)
{
    while (b->busy > 0 || (!x->fatal && b->sealed && b->next < b->nranges))
        uv_run(s3_sync_loop(x->st->s3), UV_RUN_ONCE);
    for (size_t i = 0; i < b->nfiles; i++) {
        struct rx_file *f = &b->files[i];
        if (!f->done) /* only after a fatal error */
            rs_file_discard(&f->tf);
        repo_file_free(&f->f);
    }
    b->nfiles = b->npieces = b->nranges = b->next = 0;
    b->bytes = 0;
    b->sealed = false;
}

/*
 * The planned batch is full: it is sealed and its GETs queue behind the batch in
 * flight's; once that one is done, the sealed batch is in flight and the next is
 * planned in the other's arrays while it is fetched, so the GETs and workers never wait
 * for the planning, and a batch's last ranges overlap the next batch's first.
 */
static void rx_flush(struct rx *x)
{
    struct rx_batch *done = x->flight;
    rx_seal(x, x->plan);
    rx_drain(x, done);
    rx_writeback(x);
    x->flight = x->plan;
    x->plan = done;
}

/* Plans one regular file into the batch (or restores an empty one at once). */
void rx_add_file(struct rx *x, const struct repo_file *rec)
{
    struct util_err e = {0};
    uint64_t sum = 0;

    x->found = util_grow(x->found, &x->capfound, rec->nchunks, sizeof(*x->found));
    for (size_t i = 0; i < rec->nchunks; i++) {
        struct repo_chunk *c = &x->found[i];
        if (!rx_chunks_find(&x->chunks, rec->chunks[i], c)) {
            char hex[2 * REPO_HASH_LEN + 1];
            repo_hex(rec->chunks[i], REPO_HASH_LEN, hex);
            rx_damage(x, "%s lacks chunk %s of %s", x->chunks_key, hex, rec->path);
            rx_say(x, "not restored: %s", rec->path);
            return;
        }
        sum += c->plain;
    }
    if (sum != rec->size) {
        rx_damage(x, "%s: its chunks hold %" PRIu64 " bytes, the file list says %" PRIu64,
                  rec->path, sum, rec->size);
        rx_say(x, "not restored: %s", rec->path);
        return;
    }
    if (rec->nchunks == 0) { /* nothing to fetch: in place now */
        struct rs_tmpfile tf;
        if (rs_file_open(&x->t, rec, &tf, &e) != 0 || rs_file_commit(&x->t, rec, &tf, &e) != 0) {
            rx_io_error(x, e.msg);
        } else {
            x->nfiles_done++;
        }
        return;
    }
    if (x->plan == NULL) {
        x->plan = util_calloc(1, sizeof(*x->plan));
        x->flight = util_calloc(1, sizeof(*x->flight));
        x->locks = util_calloc(RX_LOCKS, sizeof(*x->locks));
        for (size_t i = 0; i < RX_LOCKS; i++)
            if (uv_mutex_init(&x->locks[i]) != 0) { /* as an allocation that fails */
                fprintf(stderr, "lode restore: cannot make a lock\n");
                abort();
            }
    }
    struct rx_batch *b = x->plan;
    if (rx_batch_full(b->nfiles, b->bytes, sum, x->max_files)) {
        rx_flush(x);
        b = x->plan;
    }
    if (x->fatal)
        return;
    b->files = util_grow(b->files, &b->capfiles, b->nfiles + 1, sizeof(*b->files));
    struct rx_file *f = &b->files[b->nfiles];
    memset(f, 0, sizeof(*f));
    if (rs_file_prepare(&x->t, rec, &f->tf, &e) != 0) {
        rx_io_error(x, e.msg);
        return;
    }
    repo_file_copy(&f->f, rec);
    free(f->f.chunks); /* the pieces hold them now */
    f->f.chunks = NULL;
    f->f.nchunks = 0;
    uint64_t at = 0;
    for (size_t i = 0; i < rec->nchunks; i++) {
        b->pieces = util_grow(b->pieces, &b->cappieces, b->npieces + 1, sizeof(*b->pieces));
        b->pieces[b->npieces++] =
            (struct rx_piece){.c = x->found[i], .file = (uint32_t)b->nfiles, .at = at};
        at += x->found[i].plain;
    }
    f->pending = (uint32_t)rec->nchunks;
    b->nfiles++;
    b->bytes += sum;
}

/* Enough descriptors for two batches: two per file, and the directories above them. */
size_t rx_max_files(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 32;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 8192 &&
        (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur)) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 8192 ? 8192 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    rlim_t n = rl.rlim_cur == RLIM_INFINITY ? 8192 : rl.rlim_cur;
    n = n > 1024 ? (n - 512) / 4 : n > 128 ? (n - 96) / 4 : 8;
    return n > 1024 ? 1024 : (size_t)n;
}

void rx_batch_finish(struct rx *x)
{
    if (x->plan == NULL)
        return;
    if (!x->fatal && x->plan->nfiles > 0)
        rx_flush(x);
    rx_drain(x, x->flight);
    rx_drain(x, x->plan); /* left by a fatal error */
    rx_writeback_finish(x);
}

static void rx_batch_free_one(struct rx_batch *b)
{
    if (b == NULL)
        return;
    free(b->files);
    free(b->pieces);
    free(b->ranges);
    free(b);
}

void rx_batch_free(struct rx *x)
{
    if (x->locks != NULL)
        for (size_t i = 0; i < RX_LOCKS; i++)
            uv_mutex_destroy(&x->locks[i]);
    free(x->locks);
    free(x->found);
    x->found = NULL;
    x->capfound = 0;
    rx_buf_free_all(x);
    rx_batch_free_one(x->plan);
    rx_batch_free_one(x->flight);
}
