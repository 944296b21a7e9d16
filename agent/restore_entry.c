/*
 * The target of `lode restore`, its second job: making the entries of a snapshot there
 * (directories, special files, symlinks and hard links, regular files through a temporary
 * file linked into place) with their owners, modes, times and extended attributes, and a
 * directory's metadata last (rs_target_finish). Reaching a path's parent is
 * restore_fs.c's. The rules and their costs are restore.h's.
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

/* Errors that mean "this xattr cannot be set here", not that the restore failed. */
static bool rs_xattr_skippable(int e)
{
    return e == EPERM || e == EACCES || e == ENOTSUP || e == EOPNOTSUPP;
}

/*
 * Whether an xattr is set, counting it when not: as another user only user.* can be;
 * security.* (file capabilities, SELinux labels) and trusted.* only when asked for.
 */
static bool rs_xattr_wanted(struct rs_target *t, const char *name)
{
    if (!t->as_root && strncmp(name, "user.", 5) != 0) {
        t->xattrs_skipped++;
        return false;
    }
    if (!t->system_xattrs &&
        (strncmp(name, "security.", 9) == 0 || strncmp(name, "trusted.", 8) == 0)) {
        t->xattrs_withheld++;
        return false;
    }
    return true;
}

/* The mode to set: the record's, without its set-id bits unless asked for (counted). */
static mode_t rs_mode(struct rs_target *t, const struct repo_file *f)
{
    if (t->setid || (f->mode & 06000) == 0)
        return (mode_t)f->mode;
    t->setid_withheld++;
    return (mode_t)(f->mode & ~06000u);
}

static int rs_set_xattrs(struct rs_target *t, int fd, const struct repo_file *f,
                         struct util_err *err)
{
    for (size_t i = 0; i < f->nxattrs; i++) {
        const struct repo_xattr *x = &f->xattrs[i];
        if (!rs_xattr_wanted(t, x->name))
            continue;
        if (fsetxattr(fd, x->name, x->value, x->len, 0) != 0) {
            if (rs_xattr_skippable(errno)) {
                t->xattrs_skipped++;
                continue;
            }
            return util_err_set(err, UTIL_EIO, "%s: cannot set xattr %s: %s", f->path, x->name,
                                strerror(errno));
        }
    }
    return 0;
}

/* Owner, xattrs, mode and times of an open file or directory, in the order that keeps
 * each: chown clears set-id bits and capabilities, a read-only mode stops xattrs. */
static int rs_set_meta_fd(struct rs_target *t, int fd, const struct repo_file *f,
                          struct util_err *err)
{
    struct timespec ts[2] = {{f->mtime_sec, f->mtime_nsec}, {f->mtime_sec, f->mtime_nsec}};
    int rc;
    if (t->as_root && fchown(fd, f->uid, f->gid) != 0)
        return util_err_set(err, UTIL_EIO, "%s: cannot set the owner: %s", f->path,
                            strerror(errno));
    if ((rc = rs_set_xattrs(t, fd, f, err)) != 0)
        return rc;
    if (fchmod(fd, rs_mode(t, f)) != 0)
        return util_err_set(err, UTIL_EIO, "%s: cannot set the mode: %s", f->path, strerror(errno));
    if (futimens(fd, ts) != 0)
        return util_err_set(err, UTIL_EIO, "%s: cannot set the times: %s", f->path,
                            strerror(errno));
    return 0;
}

/*
 * Removes the temporary files that a killed restore left in a directory we restore
 * into again (--overwrite): ".lode-restore-PID-N" whose process is gone. Entries of
 * a restore still running, and every other name, are left alone.
 */
static void rs_sweep(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d;
    struct dirent *e;
    if (fd < 0)
        return;
    if ((d = fdopendir(fd)) == NULL) {
        close(fd);
        return;
    }
    while ((e = readdir(d)) != NULL) {
        long pid;
        unsigned long n;
        int used = 0;
        if (strncmp(e->d_name, ".lode-restore-", 14) != 0 ||
            sscanf(e->d_name + 14, "%ld-%lu%n", &pid, &n, &used) != 2 ||
            e->d_name[14 + used] != '\0' || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

int rs_make_dir(struct rs_target *t, const struct repo_file *f, struct util_err *err)
{
    struct stat st;
    const char *name;
    int dfd, rc;

    if (strcmp(f->path, "/") == 0 && t->overwrite) {
        rs_sweep(t->root, ".");
    } else if (strcmp(f->path, "/") != 0) {
        if ((rc = rs_parent(t, f->path, &dfd, &name, err)) != 0)
            return rc;
        if (mkdirat(dfd, name, 0700) != 0) {
            int e = errno, fd = -1;
            /* A directory already there is kept: opened without following a symlink and
             * changed through its descriptor, so an entry swapped for a symlink between
             * a check and a chmod cannot move the mode onto whatever it points to. */
            if (e == EEXIST)
                fd = openat(dfd, name, RS_DIR_FLAGS);
            if (fd >= 0) {
                char proc[40];
                snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
                rc = 0;
                /* An O_PATH descriptor (a directory we cannot read yet) takes no fchmod;
                 * its /proc name reaches the same inode, never a symlink's target. */
                if (fstat(fd, &st) != 0 ||
                    ((st.st_mode & 0700) != 0700 && chmod(proc, (st.st_mode & 07777) | 0700) != 0))
                    rc = util_err_set(err, UTIL_EIO, "cannot make %s writable: %s", f->path,
                                      strerror(errno));
                close(fd);
                if (rc != 0)
                    return rc;
                rs_sweep(dfd, name);
            } else if (e != EEXIST || (errno != ENOTDIR && errno != ELOOP)) {
                return util_err_set(err, UTIL_EIO, "cannot create %s in the target: %s", f->path,
                                    strerror(e != EEXIST ? e : errno));
            } else if (unlinkat(dfd, name, 0) != 0 || mkdirat(dfd, name, 0700) != 0) {
                return util_err_set(err, UTIL_EIO, "cannot replace %s by a directory: %s", f->path,
                                    strerror(errno));
            }
        }
    }
    t->dirs = util_grow(t->dirs, &t->capdirs, t->ndirs + 1, sizeof(*t->dirs));
    repo_file_copy(&t->dirs[t->ndirs], f);
    t->ndirs++;
    return 0;
}

int rs_make_special(struct rs_target *t, const struct repo_file *f, bool *skipped,
                    struct util_err *err)
{
    struct timespec ts[2] = {{f->mtime_sec, f->mtime_nsec}, {f->mtime_sec, f->mtime_nsec}};
    char tmp[48];
    const char *name;
    int dfd, rc, made;

    *skipped = false;
    if ((f->type == REPO_FT_CHAR || f->type == REPO_FT_BLOCK) && (!t->as_root || !t->devices)) {
        if (t->as_root)
            t->devices_withheld++;
        *skipped = true;
        return 0;
    }
    if (strcmp(f->path, "/") == 0)
        return util_err_set(err, UTIL_EINVAL, "/ is not a directory in the snapshot");
    if ((rc = rs_parent(t, f->path, &dfd, &name, err)) != 0)
        return rc;
    rs_tmp_name(t, tmp);
    switch (f->type) {
    case REPO_FT_SYMLINK:
        made = symlinkat(f->target, dfd, tmp);
        break;
    case REPO_FT_FIFO:
        made = mkfifoat(dfd, tmp, 0600);
        break;
    case REPO_FT_SOCKET:
        /* The entry only, as the node had it: no process listens on it until one binds
         * it again, as after any reboot. Any user may make one. */
        made = mknodat(dfd, tmp, S_IFSOCK | 0600, 0);
        break;
    default:
        made =
            mknodat(dfd, tmp, (f->type == REPO_FT_CHAR ? S_IFCHR : S_IFBLK) | 0600, (dev_t)f->rdev);
        break;
    }
    if (made != 0)
        return util_err_set(err, UTIL_EIO, "cannot create %s in the target: %s", f->path,
                            strerror(errno));
    if (t->as_root && fchownat(dfd, tmp, f->uid, f->gid, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = util_err_set(err, UTIL_EIO, "%s: cannot set the owner: %s", f->path, strerror(errno));
        goto fail;
    }
    if (f->nxattrs > 0) {
        /* No descriptor of a symlink or FIFO can carry xattrs; its path through our
         * directory descriptor (/proc) does, without following the entry itself. */
        char *p = util_asprintf("/proc/self/fd/%d/%s", dfd, tmp);
        for (size_t i = 0; i < f->nxattrs; i++) {
            const struct repo_xattr *x = &f->xattrs[i];
            if (rs_xattr_wanted(t, x->name) && lsetxattr(p, x->name, x->value, x->len, 0) != 0 &&
                rs_xattr_skippable(errno))
                t->xattrs_skipped++;
        }
        free(p);
    }
    /* Not following a final symlink: should the temporary entry be swapped for one, the
     * chmod fails rather than change what it points to. */
    if (f->type != REPO_FT_SYMLINK && fchmodat(dfd, tmp, rs_mode(t, f), AT_SYMLINK_NOFOLLOW) != 0) {
        rc = util_err_set(err, UTIL_EIO, "%s: cannot set the mode: %s", f->path, strerror(errno));
        goto fail;
    }
    if (utimensat(dfd, tmp, ts, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = util_err_set(err, UTIL_EIO, "%s: cannot set the times: %s", f->path, strerror(errno));
        goto fail;
    }
    if (renameat(dfd, tmp, dfd, name) != 0) {
        rc = util_err_set(err, UTIL_EIO, "cannot put %s in place: %s", f->path, strerror(errno));
        goto fail;
    }
    return 0;
fail:
    unlinkat(dfd, tmp, 0);
    return rc;
}

/* The S_IFMT of a record's type. */
static mode_t rs_ifmt(enum repo_ftype type)
{
    switch (type) {
    case REPO_FT_FILE:
        return S_IFREG;
    case REPO_FT_DIR:
        return S_IFDIR;
    case REPO_FT_SYMLINK:
        return S_IFLNK;
    case REPO_FT_FIFO:
        return S_IFIFO;
    case REPO_FT_SOCKET:
        return S_IFSOCK;
    case REPO_FT_CHAR:
        return S_IFCHR;
    default:
        return S_IFBLK;
    }
}

int rs_make_link(struct rs_target *t, const struct repo_file *f, struct util_err *err)
{
    char tmp[48];
    const char *name, *tname;
    struct stat st;
    int dfd, tfd, rc;

    if (strcmp(f->path, "/") == 0 || f->link == NULL || f->link[0] == '\0')
        return util_err_set(err, UTIL_EINVAL, "%s is not a hard link", f->path);
    /* The entry linked to: its directory opened like any parent, never through a symlink
     * (kept aside: the next rs_parent may close it). */
    if ((rc = rs_parent(t, f->link, &tfd, &tname, err)) != 0)
        return rc;
    if ((tfd = fcntl(tfd, F_DUPFD_CLOEXEC, 0)) < 0)
        return util_err_set(err, UTIL_EIO, "%s: %s", f->path, strerror(errno));
    if (fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = util_err_set(err, UTIL_EIO, "%s: cannot link to %s: %s", f->path, f->link,
                          errno == ENOENT ? "it was not restored" : strerror(errno));
        goto close_target;
    }
    if ((st.st_mode & S_IFMT) != rs_ifmt(f->type)) {
        rc = util_err_set(err, UTIL_EIO, "%s: cannot link to %s: it is not what the snapshot says",
                          f->path, f->link);
        goto close_target;
    }
    if ((rc = rs_parent(t, f->path, &dfd, &name, err)) != 0)
        goto close_target;
    rs_tmp_name(t, tmp);
    /* linkat without AT_SYMLINK_FOLLOW links a symlink itself, as the node had it. */
    if (linkat(tfd, tname, dfd, tmp, 0) != 0) {
        rc = util_err_set(err, UTIL_EIO, "%s: cannot link to %s: %s", f->path, f->link,
                          strerror(errno));
        goto close_target;
    }
    if (renameat(dfd, tmp, dfd, name) != 0) {
        rc = util_err_set(err, UTIL_EIO, "cannot put %s in place: %s", f->path, strerror(errno));
        unlinkat(dfd, tmp, 0);
    }
close_target:
    close(tfd);
    return rc;
}

int rs_file_prepare(struct rs_target *t, const struct repo_file *f, struct rs_tmpfile *tf,
                    struct util_err *err)
{
    const char *name;
    int dfd, rc;

    tf->fd = tf->dir_fd = -1;
    tf->named = false;
    if (strcmp(f->path, "/") == 0)
        return util_err_set(err, UTIL_EINVAL, "/ is not a directory in the snapshot");
    if ((rc = rs_parent(t, f->path, &dfd, &name, err)) != 0)
        return rc;
    rs_tmp_name(t, tf->tmp);
    if ((tf->dir_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0)) < 0)
        return util_err_set(err, UTIL_EIO, "%s: %s", f->path, strerror(errno));
    return 0;
}

int rs_file_create(const struct rs_target *t, struct rs_tmpfile *tf)
{
    if (t->tmpfile) {
        tf->fd = openat(tf->dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        if (tf->fd >= 0)
            return 0;
        /* Another file system mounted under the target may refuse it: a named file there. */
        if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
            return -errno;
    }
    tf->fd =
        openat(tf->dir_fd, tf->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (tf->fd < 0)
        return -errno;
    tf->named = true;
    return 0;
}

int rs_file_open(struct rs_target *t, const struct repo_file *f, struct rs_tmpfile *tf,
                 struct util_err *err)
{
    int rc = rs_file_prepare(t, f, tf, err);
    if (rc == 0 && (rc = rs_file_create(t, tf)) < 0) {
        rc = util_err_set(err, UTIL_EIO, "cannot create a file in the directory of %s: %s", f->path,
                          strerror(-rc));
        close(tf->dir_fd);
        tf->dir_fd = -1;
    }
    return rc;
}

/* Links an O_TMPFILE file under name; a name already there (--overwrite) is replaced
 * through a temporary name, as rename does, since linkat never replaces. */
static int rs_link_tmpfile(const struct rs_target *t, struct rs_tmpfile *tf, const char *name)
{
    char proc[40];
    const char *at = t->link_fd ? "" : proc;
    int from = t->link_fd ? tf->fd : AT_FDCWD,
        flags = t->link_fd ? AT_EMPTY_PATH : AT_SYMLINK_FOLLOW;

    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tf->fd);
    if (linkat(from, at, tf->dir_fd, name, flags) == 0)
        return 0;
    if (errno != EEXIST || linkat(from, at, tf->dir_fd, tf->tmp, flags) != 0)
        return -1;
    tf->named = true; /* from here on the temporary name is ours to remove */
    return renameat(tf->dir_fd, tf->tmp, tf->dir_fd, name);
}

int rs_file_commit(struct rs_target *t, const struct repo_file *f, struct rs_tmpfile *tf,
                   struct util_err *err)
{
    const char *name = strrchr(f->path, '/') + 1;
    int rc = rs_set_meta_fd(t, tf->fd, f, err);

    if (rc == 0 && !tf->named) {
        /* An unnamed file is linked while its descriptor is open (it is its only hold). */
        if (rs_link_tmpfile(t, tf, name) != 0)
            rc =
                util_err_set(err, UTIL_EIO, "cannot put %s in place: %s", f->path, strerror(errno));
        else
            tf->named = false; /* placed: nothing temporary is left */
        if (close(tf->fd) != 0 && rc == 0) {
            rc = util_err_set(err, UTIL_EIO, "%s: writing failed: %s", f->path, strerror(errno));
            unlinkat(tf->dir_fd, name, 0);
        }
    } else {
        if (rc == 0 && close(tf->fd) != 0)
            rc = util_err_set(err, UTIL_EIO, "%s: writing failed: %s", f->path, strerror(errno));
        else if (rc != 0)
            close(tf->fd);
        if (rc == 0 && renameat(tf->dir_fd, tf->tmp, tf->dir_fd, name) != 0)
            rc =
                util_err_set(err, UTIL_EIO, "cannot put %s in place: %s", f->path, strerror(errno));
    }
    tf->fd = -1;
    if (rc != 0 && tf->named)
        unlinkat(tf->dir_fd, tf->tmp, 0);
    close(tf->dir_fd);
    tf->dir_fd = -1;
    return rc;
}

void rs_file_discard(struct rs_tmpfile *tf)
{
    if (tf->fd >= 0)
        close(tf->fd);
    if (tf->dir_fd >= 0) {
        if (tf->named)
            unlinkat(tf->dir_fd, tf->tmp, 0);
        close(tf->dir_fd);
    }
    tf->fd = tf->dir_fd = -1;
    tf->named = false;
}

int rs_target_finish(struct rs_target *t, void (*fail_cb)(const char *msg, void *arg), void *arg)
{
    int failed = 0;
    for (size_t i = t->ndirs; i-- > 0;) {
        const struct repo_file *f = &t->dirs[i];
        struct util_err e = {0};
        const char *name;
        int dfd, fd, rc = 0;
        if (strcmp(f->path, "/") == 0) {
            fd = openat(t->root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        } else {
            if ((rc = rs_parent(t, f->path, &dfd, &name, &e)) == 0)
                fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (rc == 0 && fd < 0)
            rc = util_err_set(&e, UTIL_EIO, "cannot open %s in the target: %s", f->path,
                              strerror(errno));
        if (rc == 0) {
            rc = rs_set_meta_fd(t, fd, f, &e);
            close(fd);
        }
        if (rc != 0) {
            fail_cb(e.msg, arg);
            failed++;
        }
    }
    return failed;
}
