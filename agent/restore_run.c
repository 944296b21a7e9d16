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
#include "meta.h"

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

/* A metadata read's failure: a missing or damaged object is damage (AGENT_EDAMAGED),
 * anything else I/O. */
static int rx_meta_fail(struct rx *x, const char *what, int rc, const char *msg)
{
    if (rc == S3_ENOTFOUND || rc == UTIL_EIO || rc == UTIL_EINVAL) {
        rx_damage(x, "%s: %s", what, msg);
        return AGENT_EDAMAGED;
    }
    rx_say(x, "cannot read %s: %s", what, msg);
    return rc;
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

/*
 * The file list, read leaf by leaf from its tree each time it is gone through (the
 * includes' check, then the restore or the dry run's list): memory is one metadata chunk
 * per level, not the whole list (about 94 bytes a file), and the metadata reader's
 * windows keep the second pass from fetching again what fits in them. Every chunk is
 * checked as it is read (repo_tree_reader), so a list changed between the passes is
 * damage, named, never misread.
 */
struct rx_files {
    struct meta_src *ms;
    const struct repo_keys *keys;
    const struct repo_root *root;
};

struct rx_pass {
    struct repo_tree_reader tree;
    struct repo_files_reader r;
};

static void rx_pass_open(struct rx_pass *p, const struct rx_files *src)
{
    repo_tree_reader_init(&p->tree, src->keys, REPO_TREE_FILES, src->root, meta_fetch_cb, src->ms);
    repo_files_reader_tree(&p->r, &p->tree);
}

static void rx_pass_close(struct rx_pass *p)
{
    repo_files_reader_free(&p->r);
    repo_tree_reader_free(&p->tree);
}

/* The restore itself, once the snapshot is found and the target open. */
static int rx_run(struct rx *x, const struct rx_files *src, char **inc, size_t ninc)
{
    struct rx_pass p;
    struct repo_file f;
    struct util_err e = {0};
    int rc;

    rx_pass_open(&p, src);
    rc = 0;
    while (!x->fatal && (rc = repo_files_reader_next(&p.r, &f, &e)) == 1) {
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
    /* A leaf that is damaged, or cannot be fetched, after files were written. */
    if (rc < 0 && rx_meta_fail(x, x->files_key, rc, e.msg) != AGENT_EDAMAGED)
        x->fatal = true;
    rx_pass_close(&p);
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

/* A dry run: each entry the restore would make, in path order, to x->list_cb. */
static int rx_list(struct rx *x, const struct rx_files *src, char **inc, size_t ninc)
{
    struct rx_pass p;
    struct repo_file f;
    struct util_err e = {0};
    int rc;

    rx_pass_open(&p, src);
    while ((rc = repo_files_reader_next(&p.r, &f, &e)) == 1) {
        if (rx_selected(inc, ninc, f.path) ||
            (f.type == REPO_FT_DIR && rx_ancestor(inc, ninc, f.path)))
            x->list_cb(&f, x->say_arg);
        repo_file_free(&f);
    }
    rx_pass_close(&p);
    return rc < 0 ? rx_meta_fail(x, x->files_key, rc, e.msg) : 0;
}

/* Checks every include against the list before anything is written. */
static int rx_check_includes(struct rx *x, const struct rx_files *src, char **inc, size_t ninc,
                             uint64_t *files, uint64_t *bytes)
{
    struct rx_pass p;
    struct repo_file f;
    struct util_err e = {0};
    bool *hit = util_calloc(ninc + 1, sizeof(bool));
    int rc;

    *files = *bytes = 0;
    rx_pass_open(&p, src);
    while ((rc = repo_files_reader_next(&p.r, &f, &e)) == 1) {
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
    rx_pass_close(&p);
    if (rc < 0) {
        free(hit);
        return rx_meta_fail(x, x->files_key, rc, e.msg);
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
            if (found++ == 0) {
                x->src = cat.v[i].src;
                x->listed_incomplete = cat.v[i].incomplete;
                x->listed_suspicious = cat.v[i].suspicious;
            } else
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
    struct meta_src ms;
    struct rx_files files = {.ms = &ms, .keys = x->keys};
    double t0 = rx_now();
    char note[512];
    int rc;

    meta_src_init(&ms, x->st, &x->src);
    if ((rc = storage_get_manifest(x->st, &x->src, x->id, x->keys, &m, NULL, &e)) != 0) {
        rx_say(x, "%s", e.msg);
        return rc == S3_ENOTFOUND || rc == UTIL_EINVAL || rc == UTIL_EIO ? AGENT_EDAMAGED : rc;
    }
    /* The marks as listed must be the ones lode wrote for this snapshot. */
    if ((rc = meta_check_marks(x->st, x->keys, &m, x->listed_incomplete, x->listed_suspicious, note,
                               sizeof(note), &e)) != 0) {
        rx_say(x, "%s", e.msg);
        repo_manifest_free(&m);
        return rc == UTIL_EIO ? AGENT_EDAMAGED : rc;
    }
    if (note[0])
        rx_say(x, "note: %s", note);
    if (m.incomplete)
        rx_say(x,
               "note: snapshot %s is incomplete: %zu path(s) could not be read when it was "
               "taken",
               x->id, m.nerrs);
    x->chunks_key = util_asprintf("the chunk set of snapshot %s", x->id);
    x->files_key = util_asprintf("the file list of snapshot %s", x->id);
    if ((rc = rx_chunks_read(&x->chunks, x->keys, &m.chunks_root, meta_fetch_cb, &ms, &e)) != 0) {
        rc = rx_meta_fail(x, x->chunks_key, rc, e.msg);
        goto out;
    }
    files.root = &m.files_root;
    /* The whole list is read and checked here, before anything is written. */
    if ((rc = rx_check_includes(x, &files, inc, ninc, &x->want_files, &x->want_bytes)) != 0)
        goto out;
    if (x->dry_run) {
        rc = rx_list(x, &files, inc, ninc);
        goto out;
    }
    if ((rc = rs_target_open(&x->t, target, o, &e)) != 0) {
        rx_say(x, "%s", e.msg);
        goto out;
    }
    x->max_files = rx_max_files();
    rc = rx_run(x, &files, inc, ninc);
    x->ran = true;
    x->seconds = rx_now() - t0;
    x->as_root = x->t.as_root;
    x->xattrs_skipped = x->t.xattrs_skipped;
    x->setid_withheld = x->t.setid_withheld;
    x->xattrs_withheld = x->t.xattrs_withheld;
    x->devices_withheld = x->t.devices_withheld;
    rs_target_close(&x->t);
out:
    repo_manifest_free(&m);
    meta_src_free(&ms);
    rx_chunks_free(&x->chunks);
    if (rc == 0 && (x->fatal || x->ioerrors > 0))
        rc = UTIL_EIO;
    else if (rc == 0 && x->damaged > 0)
        rc = AGENT_EDAMAGED;
    return rc;
}
