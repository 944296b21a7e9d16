/*
 * The target of `lode restore`, its first job: opening it (a directory that must be empty
 * or --overwrite), the probe for O_TMPFILE, and reaching a path's parent one component at
 * a time without following a symlink. What is made there is restore_entry.c's. The rules
 * and their costs are restore.h's.
 */
#define _GNU_SOURCE /* O_PATH, fsetxattr */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <signal.h>
#include <unistd.h>

#include "restore_fs.h"

/* Creates dir and its missing parents, as `mkdir -p` does. */
static int rs_mkdir_p(const char *dir, struct util_err *err)
{
    char *p = util_strdup(dir);
    int rc = 0;
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char save = *c;
        *c = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            rc = util_err_set(err, UTIL_EIO, "cannot create %s: %s", p, strerror(errno));
            break;
        }
        *c = save;
        if (save == '\0')
            break;
    }
    free(p);
    return rc;
}

void rs_tmp_name(struct rs_target *t, char out[48])
{
    snprintf(out, 48, ".lode-restore-%ld-%lu", t->pid, ++t->seq);
}

/*
 * Whether regular files can be made with O_TMPFILE in the target and linked into place:
 * linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH, the /proc/self/fd path does not but
 * needs /proc. Tried once on a probe file, which is linked under a temporary name and
 * removed, so that a file system or a setup that refuses either is found before any
 * file's contents depend on it. LODE_RESTORE_NO_TMPFILE=1 skips it (docs/repository.md).
 */
static void rs_probe_tmpfile(struct rs_target *t)
{
    const char *off = getenv("LODE_RESTORE_NO_TMPFILE");
    char tmp[48];
    int fd;

    t->tmpfile = false;
    if (off != NULL && strcmp(off, "1") == 0)
        return;
    fd = openat(t->root, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    rs_tmp_name(t, tmp);
    if (linkat(fd, "", t->root, tmp, AT_EMPTY_PATH) == 0) {
        t->tmpfile = t->link_fd = true;
    } else {
        char proc[40];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        if (linkat(AT_FDCWD, proc, t->root, tmp, AT_SYMLINK_FOLLOW) == 0)
            t->tmpfile = true;
    }
    if (t->tmpfile)
        unlinkat(t->root, tmp, 0);
    close(fd);
}

/* A file system made for the restore (the 3 a.m. case: a new disk, mounted as the
 * target) holds an empty lost+found at its root; that target still counts as empty
 * (docs/repository.md, "Restoring"). A lost+found with anything in it is refused like
 * any other entry, since fsck may have put a previous tree's pieces there. */
static bool rs_is_empty_lost_found(int root, const char *name)
{
    struct dirent *e;
    bool empty = true;
    DIR *d;
    int fd;

    if (strcmp(name, "lost+found") != 0)
        return false;
    if ((fd = openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return false;
    if ((d = fdopendir(fd)) == NULL) {
        close(fd);
        return false;
    }
    while (empty && (e = readdir(d)) != NULL)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

int rs_target_open(struct rs_target *t, const char *dir, const struct rs_opts *o,
                   struct util_err *err)
{
    DIR *d;
    struct dirent *e;
    int fd, rc;

    memset(t, 0, sizeof(*t));
    t->root = t->dir_fd = -1;
    if ((rc = rs_mkdir_p(dir, err)) != 0)
        return rc;
    if ((t->root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return util_err_set(err, UTIL_EIO, "cannot open the target %s: %s", dir, strerror(errno));
    t->as_root = geteuid() == 0;
    t->pid = (long)getpid();
    t->overwrite = o->overwrite;
    t->setid = o->setid;
    t->devices = o->devices;
    t->system_xattrs = o->system_xattrs;
    t->dir_path = util_strdup("");
    if (!o->overwrite) {
        if ((fd = dup(t->root)) < 0 || (d = fdopendir(fd)) == NULL) {
            rc = util_err_set(err, UTIL_EIO, "cannot read the target %s: %s", dir, strerror(errno));
            if (fd >= 0)
                close(fd);
            goto fail;
        }
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                !rs_is_empty_lost_found(t->root, e->d_name)) {
                rc = util_err_set(err, UTIL_EINVAL,
                                  "the target %s is not empty (it holds \"%s\"); restore into "
                                  "an empty directory or pass --overwrite",
                                  dir, e->d_name);
                closedir(d);
                goto fail;
            }
        }
        closedir(d);
    }
    rs_probe_tmpfile(t);
    return 0;
fail:
    rs_target_close(t);
    return rc;
}

static void rs_drop_parent(struct rs_target *t)
{
    if (t->dir_fd >= 0)
        close(t->dir_fd);
    t->dir_fd = -1;
    free(t->dir_path);
    t->dir_path = util_strdup("");
}

void rs_target_close(struct rs_target *t)
{
    if (t->dir_fd >= 0)
        close(t->dir_fd);
    if (t->root >= 0)
        close(t->root);
    free(t->dir_path);
    for (size_t i = 0; i < t->ndirs; i++)
        repo_file_free(&t->dirs[i]);
    free(t->dirs);
    memset(t, 0, sizeof(*t));
    t->root = t->dir_fd = -1;
}

/* The parent of path in the target (restore_fs.h). */
int rs_parent(struct rs_target *t, const char *path, int *dfd, const char **name,
              struct util_err *err)
{
    const char *slash = strrchr(path, '/');
    size_t plen = slash > path ? (size_t)(slash - path - 1) : 0;
    const char *parent = path + 1, *rest;
    size_t clen = strlen(t->dir_path);
    int fd;

    *name = slash + 1;
    if (strlen(t->dir_path) == plen && strncmp(t->dir_path, parent, plen) == 0) {
        *dfd = t->dir_fd >= 0 ? t->dir_fd : t->root;
        return 0;
    }
    /* Descending from the kept parent is the common case in path order. */
    if (clen > 0 && clen < plen && strncmp(t->dir_path, parent, clen) == 0 && parent[clen] == '/') {
        rest = parent + clen + 1;
        fd = t->dir_fd; /* owned here until it is kept again */
        t->dir_fd = -1;
    } else {
        rs_drop_parent(t);
        rest = parent;
        fd = -1;
    }
    while (rest < parent + plen) {
        const char *end = memchr(rest, '/', (size_t)(parent + plen - rest));
        if (end == NULL)
            end = parent + plen;
        char *comp = util_strndup(rest, (size_t)(end - rest));
        int base = fd >= 0 ? fd : t->root, nfd = openat(base, comp, RS_DIR_FLAGS);
        if (nfd < 0 && errno == ENOENT) {
            if (mkdirat(base, comp, 0777) != 0 && errno != EEXIST) {
                util_err_set(err, UTIL_EIO, "cannot create %.*s in the target: %s",
                             (int)(end - path), path, strerror(errno));
                free(comp);
                goto fail;
            }
            nfd = openat(base, comp, RS_DIR_FLAGS);
        }
        free(comp);
        if (nfd < 0) {
            util_err_set(err, UTIL_EIO, "cannot open %.*s in the target: %s%s", (int)(end - path),
                         path, strerror(errno),
                         errno == ENOTDIR || errno == ELOOP
                             ? " (a file or symlink is in the way; it is not followed)"
                             : "");
            goto fail;
        }
        if (fd >= 0)
            close(fd);
        fd = nfd;
        rest = end + 1;
    }
    free(t->dir_path);
    t->dir_path = util_strndup(parent, plen);
    t->dir_fd = fd;
    *dfd = fd >= 0 ? fd : t->root;
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    rs_drop_parent(t);
    return UTIL_EIO;
}
