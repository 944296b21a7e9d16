/*
 * lode restore ID --target DIR [--include PATH]... [--overwrite]: one snapshot back
 * onto disk (docs/repository.md, "Restoring").
 *
 * The snapshot's file list is read twice, one frame at a time: first to check that
 * every --include names something, then to restore. Regular files are gathered in
 * batches (in path order, up to a thousand files or 256 MiB); a batch's chunks are
 * sorted by pack and offset and read with ranged GETs of up to 4 MiB, one per run of
 * neighbouring blobs (gaps under 1 MiB are read through rather than asked for again),
 * four at a time, so a pack range is read once and never a whole pack per chunk. Each
 * blob is authenticated (AES-GCM) and checked against its SHA-256 before a byte of it
 * is written; a blob used by several files of a batch is fetched once. Blobs are
 * opened and written on the libuv thread pool, one fetched range per task, so the
 * work spreads over the cores while the loop thread fetches and puts files into place
 * (each as soon as its last chunk is written).
 * restore.h says how the target is written (temporary names, no symlink followed).
 *
 * Exit codes: 0 everything restored; 1 the snapshot is missing or damaged (each
 * damaged object and each file not restored because of it is named on stderr, and
 * the rest is restored); 2 usage, the target or the repository cannot be used, or
 * writing failed.
 */
#define _GNU_SOURCE /* syncfs */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "restore.h"
#include "storage.h"

#define RX_INFLIGHT    4              /* ranged GETs at once */
#define RX_GAP         (1u << 20)     /* unneeded bytes read through rather than skipped */
#define RX_RANGE_MAX   (4u << 20)     /* at most this much in one GET */
#define RX_BATCH_BYTES (256ull << 20) /* plain bytes a batch of files gathers */
#define RX_META_MAX    (4ull << 30)   /* a file list or chunk set larger than this is refused */

/* One chunk to put somewhere. */
struct rx_piece {
    const struct repo_chunk *c; /* in the chunk set */
    uint32_t file;              /* in the batch */
    uint64_t at;                /* offset in the file */
};

/* A regular file of the batch. */
struct rx_file {
    struct repo_file f; /* its chunk list dropped once planned */
    struct rs_tmpfile tf;
    uint64_t written;
    uint32_t pending; /* pieces not yet written or failed */
    bool failed, done;
};

/* One ranged GET: pieces [first, first + n) of one pack. */
struct rx_range {
    uint32_t pack;
    uint64_t start, end;
    size_t first, n;
};

struct rx {
    struct storage *st;
    const struct repo_keys *keys;
    struct repo_source src;
    char id[REPO_ID_LEN + 1];
    struct repo_chunkset set;
    char *files_key, *chunks_key; /* meta/SOURCE/ID.files and .chunks, for messages */
    struct rs_target t;
    /* The batch. */
    struct rx_file *files;
    size_t nfiles, capfiles, max_files;
    struct rx_piece *pieces;
    size_t npieces, cappieces;
    uint64_t batch_bytes;
    struct rx_range *ranges;
    size_t nranges, capranges, next, running;
    size_t working; /* ranges being opened on the thread pool */
    /* The outcome. */
    bool fatal;        /* writing failed or the repository cannot be read: stop */
    unsigned damaged;  /* damaged objects and files not restored because of them */
    unsigned ioerrors; /* entries that could not be written */
    uint64_t nfiles_done, ndirs, nlinks, nspecial, nskipped, bytes, fetched, gets;
    uint64_t want_files, want_bytes; /* what the restore will bring back */
    double next_progress;            /* when the next progress line is due */
};

static void cmd_restore_usage(FILE *f)
{
    fprintf(f,
            "usage: lode restore ID --target DIR [--include PATH]... [--overwrite]\n"
            "                    [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
            "Restores snapshot ID (see lode snapshots) under DIR: each path lands where it\n"
            "was on the node under DIR (/etc/hosts -> DIR/etc/hosts), with its mode, times\n"
            "and xattrs, and its owner when run as root. Files are written under a temporary\n"
            "name and renamed when whole. DIR is created when missing and must be empty\n"
            "unless --overwrite.\n\n"
            "  --target DIR      where to restore (required)\n"
            "  --include PATH    restore only PATH (a directory: with everything under it);\n"
            "                    may be repeated\n"
            "  --overwrite       restore into a directory that is not empty, replacing\n"
            "                    files in the way\n"
            "%s\n"
            "Exit codes: 0 restored; 1 no such snapshot or --include path, a wrong key, or\n"
            "damaged data (each damaged object and file named; the rest is restored);\n"
            "2 usage, a non-empty target without --overwrite, or an I/O error.\n",
            storage_usage);
}

/* ---- --include ---- */

/* "/a/b/" -> "/a/b"; relative paths and "." or ".." components are refused. */
static char *rx_include_norm(const char *arg)
{
    size_t n = strlen(arg);
    if (n == 0 || arg[0] != '/')
        return NULL;
    while (n > 1 && arg[n - 1] == '/')
        n--;
    char *p = util_strndup(arg, n);
    for (const char *c = p; *c; c++) {
        if (*c != '/')
            continue;
        const char *e = c + 1;
        size_t len = strcspn(e, "/");
        if ((len == 0 && n > 1) || (len == 1 && e[0] == '.') ||
            (len == 2 && e[0] == '.' && e[1] == '.')) {
            free(p);
            return NULL;
        }
    }
    return p;
}

/* path is inc or under it. */
static bool rx_under(const char *path, const char *inc)
{
    size_t n = strlen(inc);
    if (n == 1)
        return true;
    return strncmp(path, inc, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool rx_selected(char **inc, size_t ninc, const char *path)
{
    if (ninc == 0)
        return true;
    for (size_t i = 0; i < ninc; i++)
        if (rx_under(path, inc[i]))
            return true;
    return false;
}

/* path is a directory above one of the includes (made, with its metadata). */
static bool rx_ancestor(char **inc, size_t ninc, const char *path)
{
    for (size_t i = 0; i < ninc; i++)
        if (strcmp(path, inc[i]) != 0 && rx_under(inc[i], path))
            return true;
    return false;
}

/* ---- the batch ---- */

static char *rx_pack_key(struct rx *x, uint32_t pack)
{
    struct repo_key k = {.kind = REPO_KEY_PACK, .src = x->src};
    memcpy(k.pack, x->set.packs[pack], REPO_HASH_LEN);
    return repo_key_build(&k);
}

static void rx_damage(struct rx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rx_damage(struct rx *x, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "lode restore: damaged: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    x->damaged++;
}

static void rx_io_error(struct rx *x, const char *msg)
{
    fprintf(stderr, "lode restore: %s\n", msg);
    x->ioerrors++;
}

static double rx_now(void);
static void rx_progress(struct rx *x);

/* A file whose pieces are all in: into place, or away when something failed. */
static void rx_finish_file(struct rx *x, struct rx_file *f)
{
    struct util_err e = {0};
    f->done = true;
    if (x->fatal) {
        rs_file_discard(&f->tf);
    } else if (f->failed || f->written != f->f.size) {
        if (!f->failed)
            rx_damage(x, "%s: %" PRIu64 " of %" PRIu64 " bytes could be written", f->f.path,
                      f->written, f->f.size);
        fprintf(stderr, "lode restore: not restored: %s\n", f->f.path);
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
static void rx_piece_done(struct rx *x, size_t piece, bool failed)
{
    struct rx_file *f = &x->files[x->pieces[piece].file];
    if (failed)
        f->failed = true;
    if (--f->pending == 0)
        rx_finish_file(x, f);
}

/* Marks the files of pieces [first, first + n) as not restorable. */
static void rx_fail_pieces(struct rx *x, size_t first, size_t n)
{
    for (size_t i = first; i < first + n; i++)
        rx_piece_done(x, i, true);
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
    size_t range;
    char *key;
    uv_work_t work;
    uint8_t *body; /* the range's bytes, owned, written by the GET's sink */
    size_t got, len;
    int *status;          /* per piece: 0 written, 1 its blob is damaged, < 0 -errno of the write */
    struct util_buf msgs; /* one line per damaged blob */
};

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
    const struct rx_range *r = &x->ranges[g->range];
    uint8_t *plain = NULL;
    size_t cap = 0;

    for (size_t i = r->first; i < r->first + r->n;) {
        const struct repo_chunk *c = x->pieces[i].c;
        size_t j = i;
        struct util_err e = {0};
        while (j < r->first + r->n && x->pieces[j].c == c)
            j++;
        if (c->plain > cap || plain == NULL) {
            free(plain);
            cap = c->plain;
            plain = util_malloc(cap ? cap : 1);
        }
        if (repo_blob_open(x->keys, c, g->body + (c->offset - r->start), plain, &e) != 0) {
            util_buf_printf(&g->msgs, "%s: %s\n", g->key, e.msg);
            for (; i < j; i++)
                g->status[i - r->first] = 1;
            continue;
        }
        for (; i < j; i++)
            g->status[i - r->first] =
                rx_write_all(x->files[x->pieces[i].file].tf.fd, plain, c->plain, x->pieces[i].at);
    }
    free(plain);
}

static void rx_start(struct rx *x);

/* Back on the loop: the outcome of each piece, files into place, the next GETs. */
static void rx_work_done(uv_work_t *req, int status)
{
    struct rx_get *g = req->data;
    struct rx *x = g->x;
    const struct rx_range *r = &x->ranges[g->range];

    x->working--;
    for (char *line = g->msgs.data, *nl; line != NULL && *line; line = nl + 1) {
        nl = strchr(line, '\n');
        *nl = '\0';
        rx_damage(x, "%s", line);
    }
    for (size_t i = r->first; i < r->first + r->n; i++) {
        int st = g->status[i - r->first];
        struct rx_file *f = &x->files[x->pieces[i].file];
        if (st == 1) {
            rx_piece_done(x, i, true);
        } else if (st < 0) {
            if (!x->fatal) { /* a full disk: stop at once */
                char *m = util_asprintf("writing %s: %s", f->f.path, strerror(-st));
                rx_io_error(x, m);
                free(m);
                x->fatal = true;
            }
        } else {
            f->written += x->pieces[i].c->plain;
            rx_piece_done(x, i, false);
        }
    }
    free(g->body);
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
    const struct rx_range *r = &x->ranges[g->range];

    x->running--;
    x->gets++;
    if (res->error == S3_ENOTFOUND) {
        rx_damage(x, "%s is missing", g->key);
        rx_fail_pieces(x, r->first, r->n);
    } else if (res->error != 0) {
        char *m = util_asprintf("cannot read %s: %s", g->key, res->message);
        rx_io_error(x, m);
        free(m);
        x->fatal = true;
    } else if (g->got != g->len) {
        rx_damage(x, "%s is shorter than the chunk set says (%zu of %zu bytes at %" PRIu64 ")",
                  g->key, g->got, g->len, r->start);
        rx_fail_pieces(x, r->first, r->n);
    } else if (!x->fatal) {
        x->fetched += g->got;
        g->status = util_calloc(r->n, sizeof(*g->status));
        util_buf_init(&g->msgs);
        g->work.data = g;
        if (uv_queue_work(s3_sync_loop(x->st->s3), &g->work, rx_work_cb, rx_work_done) == 0) {
            x->working++;
            return; /* rx_work_done goes on */
        }
        rx_io_error(x, "cannot start a worker thread");
        x->fatal = true;
        free(g->status);
    }
    free(g->body);
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

static void rx_start(struct rx *x)
{
    while (!x->fatal && x->running < RX_INFLIGHT && x->next < x->nranges) {
        const struct rx_range *r = &x->ranges[x->next];
        struct rx_get *g = util_calloc(1, sizeof(*g));
        struct s3_opts o = {.range_start = r->start,
                            .range_len = r->end - r->start,
                            .max_bytes = r->end - r->start};
        struct util_err e = {0};
        g->x = x;
        g->range = x->next++;
        g->key = rx_pack_key(x, r->pack);
        g->len = (size_t)(r->end - r->start);
        g->body = util_malloc(g->len ? g->len : 1);
        if (s3_get(s3_sync_client(x->st->s3), g->key, &o, rx_sink, rx_got, g, NULL, &e) != 0) {
            char *m = util_asprintf("cannot read %s: %s", g->key, e.msg);
            rx_io_error(x, m);
            free(m);
            free(g->body);
            free(g->key);
            free(g);
            x->fatal = true;
            return;
        }
        x->running++;
    }
}

static int rx_piece_cmp(const void *pa, const void *pb)
{
    const struct rx_piece *a = pa, *b = pb;
    if (a->c->pack != b->c->pack)
        return a->c->pack < b->c->pack ? -1 : 1;
    if (a->c->offset != b->c->offset)
        return a->c->offset < b->c->offset ? -1 : 1;
    if (a->file != b->file)
        return a->file < b->file ? -1 : 1;
    return a->at < b->at ? -1 : a->at > b->at;
}

/* Fetches the batch's chunks, then puts each whole file in place. */
static void rx_flush(struct rx *x)
{
    if (x->npieces > 1)
        qsort(x->pieces, x->npieces, sizeof(*x->pieces), rx_piece_cmp);
    x->nranges = x->next = 0;
    for (size_t i = 0; i < x->npieces; i++) {
        const struct repo_chunk *c = x->pieces[i].c;
        uint64_t end = (uint64_t)c->offset + c->stored;
        struct rx_range *cur = x->nranges ? &x->ranges[x->nranges - 1] : NULL;
        if (cur != NULL && cur->pack == c->pack && c->offset <= cur->end + RX_GAP &&
            end - cur->start <= RX_RANGE_MAX) {
            if (end > cur->end)
                cur->end = end;
            cur->n++;
            continue;
        }
        x->ranges = util_grow(x->ranges, &x->capranges, x->nranges + 1, sizeof(*x->ranges));
        x->ranges[x->nranges++] =
            (struct rx_range){.pack = c->pack, .start = c->offset, .end = end, .first = i, .n = 1};
    }
    rx_start(x);
    while (x->running > 0 || x->working > 0)
        uv_run(s3_sync_loop(x->st->s3), UV_RUN_ONCE);

    for (size_t i = 0; i < x->nfiles; i++) {
        struct rx_file *f = &x->files[i];
        if (!f->done) /* only after a fatal error */
            rs_file_discard(&f->tf);
        repo_file_free(&f->f);
    }
    x->nfiles = x->npieces = 0;
    x->batch_bytes = 0;
}

/* Plans one regular file into the batch (or restores an empty one at once). */
static void rx_add_file(struct rx *x, const struct repo_file *rec)
{
    struct util_err e = {0};
    uint64_t sum = 0;

    for (size_t i = 0; i < rec->nchunks; i++) {
        const struct repo_chunk *c = repo_chunkset_find(&x->set, rec->chunks[i]);
        if (c == NULL) {
            char hex[2 * REPO_HASH_LEN + 1];
            repo_hex(rec->chunks[i], REPO_HASH_LEN, hex);
            rx_damage(x, "%s lacks chunk %s of %s", x->chunks_key, hex, rec->path);
            fprintf(stderr, "lode restore: not restored: %s\n", rec->path);
            return;
        }
        sum += c->plain;
    }
    if (sum != rec->size) {
        rx_damage(x, "%s: its chunks hold %" PRIu64 " bytes, the file list says %" PRIu64,
                  rec->path, sum, rec->size);
        fprintf(stderr, "lode restore: not restored: %s\n", rec->path);
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
    if (x->nfiles > 0 && (x->nfiles >= x->max_files || x->batch_bytes + sum > RX_BATCH_BYTES))
        rx_flush(x);
    if (x->fatal)
        return;
    x->files = util_grow(x->files, &x->capfiles, x->nfiles + 1, sizeof(*x->files));
    struct rx_file *f = &x->files[x->nfiles];
    memset(f, 0, sizeof(*f));
    if (rs_file_open(&x->t, rec, &f->tf, &e) != 0) {
        rx_io_error(x, e.msg);
        return;
    }
    repo_file_copy(&f->f, rec);
    free(f->f.chunks); /* the pieces hold them now */
    f->f.chunks = NULL;
    f->f.nchunks = 0;
    uint64_t at = 0;
    for (size_t i = 0; i < rec->nchunks; i++) {
        const struct repo_chunk *c = repo_chunkset_find(&x->set, rec->chunks[i]);
        x->pieces = util_grow(x->pieces, &x->cappieces, x->npieces + 1, sizeof(*x->pieces));
        x->pieces[x->npieces++] = (struct rx_piece){.c = c, .file = (uint32_t)x->nfiles, .at = at};
        at += c->plain;
    }
    f->pending = (uint32_t)rec->nchunks;
    x->nfiles++;
    x->batch_bytes += sum;
}

/* ---- reading the snapshot ---- */

/* GETs one meta object; 404 is damage (1), anything else I/O (2). */
static int rx_get_meta(struct rx *x, enum repo_kind kind, char **data, size_t *len, char **keyout)
{
    struct repo_key k = {.kind = kind, .src = x->src};
    struct s3_opts o = {.max_bytes = RX_META_MAX};
    struct util_err e = {0};
    memcpy(k.id, x->id, sizeof(k.id));
    char *key = repo_key_build(&k);
    int rc = s3_sync_get(x->st->s3, key, &o, data, len, NULL, &e);
    if (rc == S3_ENOTFOUND) {
        rx_damage(x, "%s is missing", key);
        rc = CLI_INVALID;
    } else if (rc != 0) {
        fprintf(stderr, "lode restore: cannot read %s: %s\n", key, e.msg);
        rc = CLI_USAGE;
    }
    *keyout = key;
    return rc;
}

static double rx_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A line on stderr every 10 s, so that a long restore shows it is moving. */
static void rx_progress(struct rx *x)
{
    double now = rx_now();
    if (now < x->next_progress)
        return;
    if (x->next_progress > 0)
        fprintf(stderr, "lode restore: %" PRIu64 " of %" PRIu64 " files, %.0f of %.0f MiB\n",
                x->nfiles_done, x->want_files, (double)x->bytes / 1048576.0,
                (double)x->want_bytes / 1048576.0);
    x->next_progress = now + 10;
}

/* Enough descriptors for a batch: two per file, and the directories above them. */
static size_t rx_max_files(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 64;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 4096 &&
        (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur)) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 4096 ? 4096 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    rlim_t n = rl.rlim_cur == RLIM_INFINITY ? 4096 : rl.rlim_cur;
    n = n > 1024 ? (n - 512) / 2 : n > 128 ? (n - 96) / 2 : 16;
    return n > 1024 ? 1024 : (size_t)n;
}

/* The restore itself, once the snapshot is found and the target open. */
static int rx_run(struct rx *x, const uint8_t *list, size_t len, char **inc, size_t ninc)
{
    struct repo_files_reader r;
    struct repo_file f;
    struct util_err e = {0};
    int rc;

    if (repo_files_reader_init(&r, x->keys, x->id, list, len, &e) != 0) {
        rx_damage(x, "%s: %s", x->files_key, e.msg);
        return CLI_INVALID;
    }
    rc = 0;
    while (!x->fatal && (rc = repo_files_reader_next(&r, &f, &e)) == 1) {
        bool sel = rx_selected(inc, ninc, f.path);
        if (!sel && !(f.type == REPO_FT_DIR && rx_ancestor(inc, ninc, f.path))) {
            repo_file_free(&f);
            continue;
        }
        if (f.type == REPO_FT_DIR) {
            if (rs_make_dir(&x->t, &f, &e) != 0)
                rx_io_error(x, e.msg);
            else
                x->ndirs++;
        } else if (f.type == REPO_FT_FILE) {
            rx_add_file(x, &f);
        } else {
            bool skipped;
            if (rs_make_special(&x->t, &f, &skipped, &e) != 0)
                rx_io_error(x, e.msg);
            else if (skipped)
                x->nskipped++;
            else if (f.type == REPO_FT_SYMLINK)
                x->nlinks++;
            else
                x->nspecial++;
        }
        repo_file_free(&f);
    }
    if (rc < 0)
        rx_damage(x, "%s: %s", x->files_key, e.msg);
    repo_files_reader_free(&r);
    if (!x->fatal && x->nfiles > 0)
        rx_flush(x);
    for (size_t i = 0; i < x->nfiles; i++) { /* left by a fatal error */
        rs_file_discard(&x->files[i].tf);
        repo_file_free(&x->files[i].f);
    }
    x->nfiles = 0;
    if (!x->fatal && rs_target_finish(&x->t, &e) != 0)
        x->ioerrors++;
    if (!x->fatal && syncfs(x->t.root) != 0)
        rx_io_error(x, "syncing the target failed");
    return 0;
}

/* Checks every include against the list before anything is written. */
static int rx_check_includes(struct rx *x, const uint8_t *list, size_t len, char **inc, size_t ninc,
                             uint64_t *files, uint64_t *bytes)
{
    struct repo_files_reader r;
    struct repo_file f;
    struct util_err e = {0};
    bool *hit = util_calloc(ninc + 1, sizeof(bool));
    int rc;

    *files = *bytes = 0;
    if (repo_files_reader_init(&r, x->keys, x->id, list, len, &e) != 0) {
        rx_damage(x, "%s: %s", x->files_key, e.msg);
        free(hit);
        return CLI_INVALID;
    }
    while ((rc = repo_files_reader_next(&r, &f, &e)) == 1) {
        for (size_t i = 0; i < ninc; i++)
            if (rx_under(f.path, inc[i]))
                hit[i] = true;
        if (f.type == REPO_FT_FILE && rx_selected(inc, ninc, f.path)) {
            (*files)++;
            *bytes += f.size;
        }
        repo_file_free(&f);
    }
    repo_files_reader_free(&r);
    if (rc < 0) {
        rx_damage(x, "%s: %s", x->files_key, e.msg);
        free(hit);
        return CLI_INVALID;
    }
    rc = CLI_OK;
    for (size_t i = 0; i < ninc; i++) {
        if (!hit[i]) {
            fprintf(stderr, "lode restore: --include %s: snapshot %s has no such path\n", inc[i],
                    x->id);
            rc = CLI_INVALID;
        }
    }
    free(hit);
    return rc;
}

/* Finds the snapshot's source from the catalog (ids are unique across sources). */
static int rx_find(struct rx *x, const char *id)
{
    struct repo_catalog cat;
    struct util_err e = {0};
    size_t found = 0;

    if (repo_id_parse(id, &(int64_t){0}, &e) != 0) {
        fprintf(stderr, "lode restore: %s is not a snapshot id: %s\n", id, e.msg);
        return CLI_USAGE;
    }
    if (storage_catalog(x->st, NULL, NULL, NULL, &cat, &e) != 0) {
        fprintf(stderr, "lode restore: %s\n", e.msg);
        return CLI_USAGE;
    }
    for (size_t i = 0; i < cat.n; i++) {
        if (strcmp(cat.v[i].id, id) == 0) {
            if (found++ == 0)
                x->src = cat.v[i].src;
            else
                fprintf(stderr, "lode restore: %s names a snapshot of %s/%s/%s and of %s/%s/%s\n",
                        id, x->src.ns, x->src.policy, x->src.host, cat.v[i].src.ns,
                        cat.v[i].src.policy, cat.v[i].src.host);
        }
    }
    repo_catalog_free(&cat);
    if (found == 0) {
        fprintf(stderr, "lode restore: no snapshot %s in %s (lode snapshots lists them)\n", id,
                x->st->url);
        return CLI_INVALID;
    }
    memcpy(x->id, id, sizeof(x->id));
    return found == 1 ? CLI_OK : CLI_USAGE;
}

static int rx_restore(struct rx *x, const char *target, bool overwrite, char **inc, size_t ninc)
{
    struct repo_manifest m;
    struct util_err e = {0};
    char *list = NULL, *chunks = NULL;
    size_t listlen = 0, chunkslen = 0;
    double t0 = rx_now(), dt;
    int rc;

    if (storage_get_manifest(x->st, &x->src, x->id, x->keys, &m, NULL, &e) != 0) {
        fprintf(stderr, "lode restore: %s\n", e.msg);
        return e.code == S3_ENOTFOUND || e.code == UTIL_EINVAL || e.code == UTIL_EIO ? CLI_INVALID
                                                                                     : CLI_USAGE;
    }
    if (m.incomplete)
        fprintf(stderr,
                "lode restore: note: snapshot %s is incomplete: %zu path(s) could not be read "
                "when it was taken\n",
                x->id, m.nerrs);
    repo_manifest_free(&m);
    if ((rc = rx_get_meta(x, REPO_KEY_CHUNKS, &chunks, &chunkslen, &x->chunks_key)) != 0)
        goto out;
    if (repo_chunkset_decode(&x->set, x->keys, x->id, (const uint8_t *)chunks, chunkslen, &e) !=
        0) {
        rx_damage(x, "%s: %s", x->chunks_key, e.msg);
        rc = CLI_INVALID;
        goto out;
    }
    if ((rc = rx_get_meta(x, REPO_KEY_FILES, &list, &listlen, &x->files_key)) != 0)
        goto out;
    if ((rc = rx_check_includes(x, (const uint8_t *)list, listlen, inc, ninc, &x->want_files,
                                &x->want_bytes)) != 0)
        goto out;
    if (rs_target_open(&x->t, target, overwrite, &e) != 0) {
        fprintf(stderr, "lode restore: %s\n", e.msg);
        rc = CLI_USAGE;
        goto out;
    }
    x->max_files = rx_max_files();
    rc = rx_run(x, (const uint8_t *)list, listlen, inc, ninc);
    dt = rx_now() - t0;
    printf("restored %s (%s/%s/%s) into %s: %" PRIu64 " of %" PRIu64 " files (%.1f MiB), %" PRIu64
           " directories, %" PRIu64 " symlinks, %" PRIu64 " other in %.1f s (%.1f MB/s, %" PRIu64
           " ranged GETs, %.1f MiB read)\n",
           x->id, x->src.ns, x->src.policy, x->src.host, target, x->nfiles_done, x->want_files,
           (double)x->bytes / 1048576.0, x->ndirs, x->nlinks, x->nspecial, dt,
           dt > 0 ? (double)x->bytes / 1e6 / dt : 0.0, x->gets, (double)x->fetched / 1048576.0);
    if (x->nskipped > 0)
        printf("not made: %" PRIu64 " sockets%s\n", x->nskipped,
               x->t.as_root ? "" : " and devices (devices need root)");
    if (x->t.xattrs_skipped > 0)
        printf("not set: %" PRIu64 " xattrs (outside user.* without root, or unsupported here)\n",
               x->t.xattrs_skipped);
    if (!x->t.as_root)
        printf("owners were not restored (not running as root)\n");
    rs_target_close(&x->t);
out:
    free(list);
    free(chunks);
    repo_chunkset_free(&x->set);
    if (rc == CLI_OK && (x->fatal || x->ioerrors > 0))
        rc = CLI_USAGE;
    else if (rc == CLI_OK && x->damaged > 0)
        rc = CLI_INVALID;
    return rc;
}

int rx_open_repo(struct storage *st, const struct storage_opts *so, const char *cmd)
{
    struct util_err e = {0};
    char *pass = NULL;
    size_t len = 0;
    int rc;

    if (storage_open(st, so, &e) != 0) {
        fprintf(stderr, "lode %s: %s\n", cmd, e.msg);
        return CLI_USAGE;
    }
    /* The key is looked for first, so that UTIL_EINVAL below means a wrong one. */
    if (storage_read_key(so, &pass, &len, &e) != 0) {
        rc = CLI_USAGE;
        goto fail;
    }
    memset(pass, 0, len);
    free(pass);
    if (storage_load_config(st, so, true, &e) != 0) {
        rc = e.code == UTIL_EINVAL ? CLI_INVALID : CLI_USAGE;
        goto fail;
    }
    return CLI_OK;
fail:
    fprintf(stderr, "lode %s: %s\n", cmd, e.msg);
    storage_close(st);
    return rc;
}

int cmd_restore(int argc, char **argv)
{
    static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                         {"include", required_argument, NULL, 'i'},
                                         {"overwrite", no_argument, NULL, 'w'},
                                         {"help", no_argument, NULL, 'h'},
                                         STORAGE_OPTIONS,
                                         {0, 0, 0, 0}};
    struct storage_opts so = {0};
    struct storage st;
    struct rx x;
    const char *target = NULL;
    bool overwrite = false;
    char **inc = NULL;
    size_t ninc = 0, capinc = 0;
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (storage_opt(&so, c, optarg))
            continue;
        switch (c) {
        case 't':
            target = optarg;
            break;
        case 'i': {
            char *p = rx_include_norm(optarg);
            if (p == NULL) {
                rc = cli_usage_error("restore",
                                     "--include %s: give an absolute path as on the node, "
                                     "without . or .. parts",
                                     optarg);
                goto out;
            }
            inc = util_grow(inc, &capinc, ninc + 1, sizeof(*inc));
            inc[ninc++] = p;
            break;
        }
        case 'w':
            overwrite = true;
            break;
        case 'h':
            cmd_restore_usage(stdout);
            rc = CLI_OK;
            goto out;
        default:
            rc = cli_usage_error("restore", "unknown or incomplete option %s", argv[optind - 1]);
            goto out;
        }
    }
    if (optind != argc - 1) {
        rc = cli_usage_error("restore", optind >= argc ? "give the snapshot ID to restore"
                                                       : "give one snapshot ID");
        goto out;
    }
    if (target == NULL || target[0] == '\0') {
        rc = cli_usage_error("restore", "give --target DIR");
        goto out;
    }
    if ((rc = rx_open_repo(&st, &so, "restore")) != CLI_OK)
        goto out;
    memset(&x, 0, sizeof(x));
    x.st = &st;
    x.keys = &st.config.keys;
    if ((rc = rx_find(&x, argv[optind])) == CLI_OK)
        rc = rx_restore(&x, target, overwrite, inc, ninc);
    free(x.files_key);
    free(x.chunks_key);
    free(x.files);
    free(x.pieces);
    free(x.ranges);
    storage_close(&st);
out:
    for (size_t i = 0; i < ninc; i++)
        free(inc[i]);
    free(inc);
    return rc;
}
