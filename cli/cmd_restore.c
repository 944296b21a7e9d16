/*
 * lode restore ID --target DIR [--include PATH]... [--overwrite]: one snapshot back
 * onto disk (docs/repository.md, "Restoring").
 *
 * The snapshot's file list is read twice, one frame at a time: first to check that
 * every --include names something, then to restore. Directories, symlinks and special
 * files are made as they come; regular files go to the batch (restore_batch.c;
 * restore.h, "The restore itself", says how their chunks are fetched).
 * restore.h says how the target is written (unnamed files or temporary names, no
 * symlink followed).
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
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "agent/restore.h"
#include "agent/storage.h"

#define RX_META_MAX (4ull << 30) /* a file list or chunk set larger than this is refused */

static void cmd_restore_usage(FILE *f)
{
    fprintf(f,
            "usage: lode restore ID --target DIR [--include PATH]... [--overwrite]\n"
            "                    [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
            "Restores snapshot ID (see lode snapshots) under DIR: each path lands where it\n"
            "was on the node under DIR (/etc/hosts -> DIR/etc/hosts), with its mode, times\n"
            "and xattrs, and its owner when run as root. Files are written without a name\n"
            "(or under a temporary one) and put in place when whole. DIR is created when\n"
            "missing and must be empty unless --overwrite.\n\n"
            "  --target DIR      where to restore (required)\n"
            "  --include PATH    restore only PATH (a directory: with everything under it);\n"
            "                    may be repeated\n"
            "  --overwrite       restore into a directory that is not empty, replacing\n"
            "                    files in the way\n"
            "%s\n"
            "Exit codes: 0 restored; 1 no such snapshot or --include path, a wrong key, or\n"
            "damaged data (each damaged object and file named; the rest is restored);\n"
            "2 usage, a non-empty target without --overwrite, or an I/O error.\n",
            cli_storage_usage);
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

/* ---- reporting ---- */

void rx_damage(struct rx *x, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "lode restore: damaged: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    x->damaged++;
}

void rx_io_error(struct rx *x, const char *msg)
{
    fprintf(stderr, "lode restore: %s\n", msg);
    x->ioerrors++;
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
void rx_progress(struct rx *x)
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
    rx_batch_finish(x);
    if (!x->fatal && rs_target_finish(&x->t, &e) != 0)
        x->ioerrors++;
    double t0 = rx_now();
    if (!x->fatal && syncfs(x->t.root) != 0)
        rx_io_error(x, "syncing the target failed");
    x->sync_s = rx_now() - t0; /* syncfs waits for every write to the file system, not ours alone */
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
           " ranged GETs, %.1f MiB read, %.1f s of it flushing to disk)\n",
           x->id, x->src.ns, x->src.policy, x->src.host, target, x->nfiles_done, x->want_files,
           (double)x->bytes / 1048576.0, x->ndirs, x->nlinks, x->nspecial, dt,
           dt > 0 ? (double)x->bytes / 1e6 / dt : 0.0, x->gets, (double)x->fetched / 1048576.0,
           x->sync_s);
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
        if (cli_storage_opt(&so, c, optarg))
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
    rx_batch_free(&x);
    storage_close(&st);
out:
    for (size_t i = 0; i < ninc; i++)
        free(inc[i]);
    free(inc);
    return rc;
}
