/*
 * restore_run: one snapshot back onto disk (docs/repository.md, "Restoring"); the
 * command is cli/cmd_restore.c.
 *
 * The snapshot's file list is read twice, one frame at a time: first to check that
 * every --include names something, then to restore. Directories, symlinks and special
 * files are made as they come; regular files go to the batch (restore_batch.c;
 * restore.h, "The restore itself", says how their chunks are fetched).
 * restore.h says how the target is written (unnamed files or temporary names, no
 * symlink followed).
 */
#define _GNU_SOURCE /* syncfs */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

/*
 * Nothing is held whole before it is authenticated (docs/repository.md, "Restoring"): the
 * file list is read through ranged GETs, a window (REPO_FILES_WINDOW) at a time, each
 * frame authenticated before the next is fetched; the chunk set, one sealed object, is
 * fetched only up to the size its entries can have, which the authenticated list bounds:
 * its 16-byte header, at most one pack and one 49-byte entry per chunk the list
 * references, and the seal. A set also holds the chunks of files whose reading failed
 * part way (stored, then the file left out of the list), so RX_CHUNKSET_SLACK is added
 * (about 200,000 such chunks: 100 GB or more of files that failed). A chunk set claiming
 * more is damage, not 4 GiB of memory.
 */
#define RX_CHUNKSET_HEAD  (16 + REPO_SEAL_EXTRA)
#define RX_CHUNKSET_ENTRY (REPO_HASH_LEN + 49)
#define RX_CHUNKSET_SLACK (16ull << 20)

/* ---- --include ---- */

/* "/a/b/" -> "/a/b"; relative paths and "." or ".." components are refused. */
char *rx_include_norm(const char *arg)
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

/* ---- reporting ---- */

static void rx_vsay(struct rx *x, const char *prefix, const char *fmt, va_list ap)
{
    struct util_buf b;
    util_buf_init(&b);
    util_buf_puts(&b, prefix);
    util_buf_vprintf(&b, fmt, ap);
    char *line = util_buf_steal(&b);
    if (x->say_cb != NULL)
        x->say_cb(line, x->say_arg);
    free(line);
}

void rx_say(struct rx *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rx_vsay(x, "", fmt, ap);
    va_end(ap);
}

void rx_damage(struct rx *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rx_vsay(x, "damaged: ", fmt, ap);
    va_end(ap);
    x->damaged++;
}

void rx_io_error(struct rx *x, const char *msg)
{
    rx_say(x, "%s", msg);
    x->ioerrors++;
}

/* ---- reading the snapshot ---- */

static char *rx_meta_key(struct rx *x, enum repo_kind kind)
{
    struct repo_key k = {.kind = kind, .src = x->src};
    memcpy(k.id, x->id, sizeof(k.id));
    return repo_key_build(&k);
}

/* The chunk set, of at most max bytes; 404 or a larger object is damage (AGENT_EDAMAGED),
 * anything else I/O. */
static int rx_get_chunkset(struct rx *x, uint64_t max, char **data, size_t *len)
{
    struct s3_opts o = {.max_bytes = max};
    struct util_err e = {0};
    int rc = s3_sync_get(x->st->s3, x->chunks_key, &o, data, len, NULL, &e);
    if (rc == S3_ENOTFOUND) {
        rx_damage(x, "%s is missing", x->chunks_key);
        rc = AGENT_EDAMAGED;
    } else if (rc == S3_ETOOBIG) {
        rx_damage(x, "%s is larger than the file list allows (%" PRIu64 " bytes at most): not read",
                  x->chunks_key, max);
        rc = AGENT_EDAMAGED;
    } else if (rc != 0) {
        rx_say(x, "cannot read %s: %s", x->chunks_key, e.msg);
    }
    return rc;
}

struct rx_window {
    uint8_t *buf;
    size_t len, got;
};

static int rx_window_sink(const char *data, size_t len, void *arg)
{
    struct rx_window *w = arg;
    if (len > w->len - w->got)
        return 1; /* more than the range asked for */
    memcpy(w->buf + w->got, data, len);
    w->got += len;
    return 0;
}

/* The file list reader's ranged GETs, straight into its window. */
static int rx_list_fetch(void *arg, uint64_t off, size_t len, uint8_t *buf, struct util_err *err)
{
    struct rx *x = arg;
    struct s3_opts o = {.range_start = off, .range_len = len};
    struct rx_window w = {.buf = buf, .len = len};
    int rc = s3_sync_get_to(x->st->s3, x->files_key, &o, rx_window_sink, &w, NULL, err);
    if (rc == 0 && w.got != len)
        rc = util_err_set(err, UTIL_EIO, "a ranged GET gave %zu bytes, not %zu", w.got, len);
    return rc;
}

/* Opens the file list for reading through ranged GETs; 404 or a list that does not
 * start as one is damage (AGENT_EDAMAGED), anything else I/O. Its length comes from a
 * GET of its first bytes (Content-Range), whose body is checked like any other, rather
 * than from a HEAD, which has no body to show that its headers arrived whole. */
static int rx_list_open(struct rx *x, struct repo_files_reader *r)
{
    struct s3_info info = {0};
    struct util_err e = {0};
    uint8_t head[8];
    struct rx_window w = {.buf = head, .len = sizeof(head)};
    struct s3_opts o = {.range_start = 0, .range_len = sizeof(head)};
    int rc = s3_sync_get_to(x->st->s3, x->files_key, &o, rx_window_sink, &w, &info, &e);
    if (rc == S3_ENOTFOUND) {
        rx_damage(x, "%s is missing", x->files_key);
        return AGENT_EDAMAGED;
    }
    if (rc != 0) {
        rx_say(x, "cannot read %s: %s", x->files_key, e.msg);
        return rc;
    }
    if (repo_files_reader_open(r, x->keys, x->id, info.size, 0, rx_list_fetch, x, &e) != 0) {
        rx_damage(x, "%s: %s", x->files_key, e.msg);
        return AGENT_EDAMAGED;
    }
    return 0;
}

static double rx_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A line on stderr every 10 s, so that a long restore shows it is moving. */
void rx_progress(struct rx *x)
{
    double now = rx_now();
    if (now < x->next_progress)
        return;
    if (x->next_progress > 0)
        rx_say(x, "%" PRIu64 " of %" PRIu64 " files, %.0f of %.0f MiB", x->nfiles_done,
               x->want_files, (double)x->bytes / 1048576.0, (double)x->want_bytes / 1048576.0);
    x->next_progress = now + 10;
}

static void rx_target_fail_cb(const char *msg, void *arg)
{
    rx_say(arg, "%s", msg);
}

/* The restore itself, once the snapshot is found and the target open. */
static int rx_run(struct rx *x, char **inc, size_t ninc)
{
    struct repo_files_reader r;
    struct repo_file f;
    struct util_err e = {0};
    int rc;

    if ((rc = rx_list_open(x, &r)) != 0)
        return rc;
    while (!x->fatal && (rc = repo_files_reader_next(&r, &f, &e)) == 1) {
        bool sel = rx_selected(inc, ninc, f.path);
        if (!sel && !(f.type == REPO_FT_DIR && rx_ancestor(inc, ninc, f.path))) {
            repo_file_free(&f);
            continue;
        }
        if (f.link != NULL && f.link[0] != '\0' && rx_selected(inc, ninc, f.link)) {
            /* A hard link to an entry this restore makes: linked once all are in place. */
            x->hardlinks =
                util_grow(x->hardlinks, &x->caphardlinks, x->nhardlinks + 1, sizeof(*x->hardlinks));
            struct repo_file *h = &x->hardlinks[x->nhardlinks++];
            memset(h, 0, sizeof(*h));
            h->path = util_strdup(f.path);
            h->link = util_strdup(f.link);
            h->type = f.type;
        } else if (f.type == REPO_FT_DIR) {
            if (rs_make_dir(&x->t, &f, &e) != 0)
                rx_io_error(x, e.msg);
            else
                x->ndirs++;
        } else if (f.type == REPO_FT_FILE) {
            rx_add_file(x, &f);
        } else {
            bool skipped;
            if (rs_make_special(&x->t, &f, &skipped, &e) != 0) {
                rx_io_error(x, e.msg);
            } else if (skipped) { /* a device node: named, never dropped silently */
                x->nskipped++;
                rx_say(x, "not restored: %s (a device node; %s)", f.path,
                       x->t.as_root ? "--devices makes it" : "only root can make it");
            } else if (f.type == REPO_FT_SYMLINK)
                x->nlinks++;
            else
                x->nspecial++;
        }
        repo_file_free(&f);
    }
    if (rc < 0)
        rx_damage(x, "%s: %s", x->files_key, e.msg);
    repo_files_reader_free(&r);
    rx_batch_finish(x);
    for (size_t i = 0; i < x->nhardlinks; i++) {
        if (!x->fatal && rs_make_link(&x->t, &x->hardlinks[i], &e) != 0)
            rx_io_error(x, e.msg);
        else if (!x->fatal)
            x->nhardlinks_done++;
        repo_file_free(&x->hardlinks[i]);
    }
    free(x->hardlinks);
    x->hardlinks = NULL;
    x->nhardlinks = x->caphardlinks = 0;
    if (!x->fatal)
        x->ioerrors += rs_target_finish(&x->t, rx_target_fail_cb, x);
    double t0 = rx_now();
    if (!x->fatal && syncfs(x->t.root) != 0)
        rx_io_error(x, "syncing the target failed");
    x->sync_s = rx_now() - t0; /* syncfs waits for every write to the file system, not ours alone */
    return 0;
}

/* Checks every include against the list before anything is written, and counts the
 * chunks the whole list references (*refs), which bound its chunk set's size. */
static int rx_check_includes(struct rx *x, char **inc, size_t ninc, uint64_t *files,
                             uint64_t *bytes, uint64_t *refs)
{
    struct repo_files_reader r;
    struct repo_file f;
    struct util_err e = {0};
    bool *hit;
    int rc;

    *files = *bytes = *refs = 0;
    if ((rc = rx_list_open(x, &r)) != 0)
        return rc;
    hit = util_calloc(ninc + 1, sizeof(bool));
    while ((rc = repo_files_reader_next(&r, &f, &e)) == 1) {
        *refs += f.nchunks;
        for (size_t i = 0; i < ninc; i++)
            if (rx_under(f.path, inc[i]))
                hit[i] = true;
        /* Hard links made from a restored entry are counted as links, not files. */
        if (f.type == REPO_FT_FILE && rx_selected(inc, ninc, f.path) &&
            !(f.link != NULL && f.link[0] != '\0' && rx_selected(inc, ninc, f.link))) {
            (*files)++;
            *bytes += f.size;
        }
        repo_file_free(&f);
    }
    repo_files_reader_free(&r);
    if (rc < 0) {
        rx_damage(x, "%s: %s", x->files_key, e.msg);
        free(hit);
        return AGENT_EDAMAGED;
    }
    rc = 0;
    for (size_t i = 0; i < ninc; i++) {
        if (!hit[i]) {
            rx_say(x, "--include %s: snapshot %s has no such path", inc[i], x->id);
            rc = AGENT_EABSENT;
        }
    }
    free(hit);
    return rc;
}

int rx_find(struct rx *x, const char *id)
{
    struct repo_catalog cat;
    struct util_err e = {0};
    size_t found = 0;
    int rc;

    if ((rc = repo_id_parse(id, &(int64_t){0}, &e)) != 0) {
        rx_say(x, "%s is not a snapshot id: %s", id, e.msg);
        return rc;
    }
    if ((rc = storage_catalog(x->st, NULL, NULL, NULL, &cat, &e)) != 0) {
        rx_say(x, "%s", e.msg);
        return rc;
    }
    for (size_t i = 0; i < cat.n; i++) {
        if (strcmp(cat.v[i].id, id) == 0) {
            if (found++ == 0)
                x->src = cat.v[i].src;
            else
                rx_say(x, "%s names a snapshot of %s/%s/%s and of %s/%s/%s", id, x->src.ns,
                       x->src.policy, x->src.host, cat.v[i].src.ns, cat.v[i].src.policy,
                       cat.v[i].src.host);
        }
    }
    repo_catalog_free(&cat);
    if (found == 0) {
        rx_say(x, "no snapshot %s in %s (lode snapshots lists them)", id, x->st->url);
        return AGENT_EABSENT;
    }
    memcpy(x->id, id, sizeof(x->id));
    return found == 1 ? 0 : UTIL_EINVAL;
}

int rx_restore(struct rx *x, const char *target, const struct rs_opts *o, char **inc, size_t ninc)
{
    struct repo_manifest m;
    struct util_err e = {0};
    char *chunks = NULL;
    size_t chunkslen = 0;
    uint64_t refs = 0;
    double t0 = rx_now();
    int rc;

    if ((rc = storage_get_manifest(x->st, &x->src, x->id, x->keys, &m, NULL, &e)) != 0) {
        rx_say(x, "%s", e.msg);
        return rc == S3_ENOTFOUND || rc == UTIL_EINVAL || rc == UTIL_EIO ? AGENT_EDAMAGED : rc;
    }
    if (m.incomplete)
        rx_say(x,
               "note: snapshot %s is incomplete: %zu path(s) could not be read when it was "
               "taken",
               x->id, m.nerrs);
    repo_manifest_free(&m);
    x->files_key = rx_meta_key(x, REPO_KEY_FILES);
    x->chunks_key = rx_meta_key(x, REPO_KEY_CHUNKS);
    if ((rc = rx_check_includes(x, inc, ninc, &x->want_files, &x->want_bytes, &refs)) != 0)
        goto out;
    if ((rc = rx_get_chunkset(x, RX_CHUNKSET_HEAD + RX_CHUNKSET_ENTRY * refs + RX_CHUNKSET_SLACK,
                              &chunks, &chunkslen)) != 0)
        goto out;
    /* Decoded in the fetched object's memory, which the set takes (freed on error). */
    rc = repo_chunkset_open(&x->set, x->keys, x->id, (uint8_t *)chunks, chunkslen, &e);
    chunks = NULL;
    if (rc != 0) {
        rx_damage(x, "%s: %s", x->chunks_key, e.msg);
        rc = AGENT_EDAMAGED;
        goto out;
    }
    if ((rc = rs_target_open(&x->t, target, o, &e)) != 0) {
        rx_say(x, "%s", e.msg);
        goto out;
    }
    x->max_files = rx_max_files();
    rc = rx_run(x, inc, ninc);
    x->ran = true;
    x->seconds = rx_now() - t0;
    x->as_root = x->t.as_root;
    x->xattrs_skipped = x->t.xattrs_skipped;
    x->setid_withheld = x->t.setid_withheld;
    x->xattrs_withheld = x->t.xattrs_withheld;
    x->devices_withheld = x->t.devices_withheld;
    rs_target_close(&x->t);
out:
    free(chunks);
    repo_chunkset_free(&x->set);
    if (rc == 0 && (x->fatal || x->ioerrors > 0))
        rc = UTIL_EIO;
    else if (rc == 0 && x->damaged > 0)
        rc = AGENT_EDAMAGED;
    return rc;
}
