/*
 * backup_walk: the policy's paths under --root, walked in file list order
 * (repo_path_cmp: a directory, then its entries sorted bytewise, depth first) and
 * merged with the parent's list as they go, so memory is one parent record and,
 * per directory level, that directory's names.
 *
 * Paths are resolved inside --root (openat2 with RESOLVE_IN_ROOT), so an absolute
 * symlink on the node, such as /host/etc/alternatives/x -> /usr/bin/y, is never
 * followed into the agent's own file system; the walk itself never follows a
 * symlink. It stays on the file system of each listed path: a directory on another
 * one (a mount point) is recorded but not entered, unless it is listed itself.
 * Regular files unchanged since the parent (size, mtime, ctime, inode) reuse the
 * parent's chunks without being read; other files are read, chunked (FastCDC) and
 * handed to backup_store. Fifos, sockets and devices are recorded, never opened.
 * A file that vanishes or cannot be read is listed as an error and left out.
 *
 * Hard links: an entry that is not a directory and has more than one link is
 * remembered by device and inode with its path, once it is in the list; a later entry
 * with the same inode names that path (struct repo_file's link), and keeps its own
 * chunks. Costs: one map entry and path per such inode, for the whole walk.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "backup.h"
#include "chunker/chunker.h"
#include "util/map.h"

/* The chunker needs up to CHUNKER_MAX bytes ahead; the rest saves read calls. */
#define WALK_BUF  (CHUNKER_MAX + (1u << 20))
#define WALK_KEEP (1u << 20) /* files up to this size leave the read buffer mapped */

struct walk_level {
    int fd;
    dev_t dev;
    char **names;
    size_t n, i;
    size_t pathlen; /* of this directory's path in the walk's path */
};

struct walk {
    struct backup *b;
    struct chunker ch;
    uint8_t *buf;
    struct util_buf path;
    struct walk_level *lv;
    size_t nlv, caplv;
    struct util_map links; /* "DEV:INO" -> the first path listed with it (owned) */
};

/* The key of an inode in w->links. */
static void walk_inode_key(const struct stat *sb, char out[48])
{
    snprintf(out, 48, "%llx:%llx", (unsigned long long)sb->st_dev, (unsigned long long)sb->st_ino);
}

void backup_add_error(struct backup *b, const char *path, const char *fmt, ...)
{
    va_list ap;
    struct util_buf m;
    util_buf_init(&m);
    va_start(ap, fmt);
    util_buf_vprintf(&m, fmt, ap);
    va_end(ap);
    b->errs = util_grow(b->errs, &b->caperrs, b->nerrs + 1, sizeof(*b->errs));
    b->errs[b->nerrs].path = util_strdup(path);
    b->errs[b->nerrs].message = util_buf_steal(&m);
    b->nerrs++;
}

static int walk_names_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool walk_is_listed(const struct backup *b, const char *path)
{
    for (size_t i = 0; i < b->npaths; i++)
        if (strcmp(b->paths[i], path) == 0)
            return true;
    return false;
}

/* The extended attributes of an open file, for its record (errors leave them out). */
static void walk_xattrs(int fd, struct repo_file *f)
{
    ssize_t n = flistxattr(fd, NULL, 0), got;
    char *names;
    if (n <= 0)
        return;
    names = util_malloc((size_t)n);
    n = flistxattr(fd, names, (size_t)n);
    for (ssize_t off = 0; n > 0 && off < n; off += (ssize_t)strlen(names + off) + 1) {
        const char *name = names + off;
        ssize_t vlen = fgetxattr(fd, name, NULL, 0);
        uint8_t *v;
        if (vlen < 0)
            continue;
        v = util_malloc(vlen ? (size_t)vlen : 1);
        got = fgetxattr(fd, name, v, (size_t)vlen);
        if (got < 0) {
            free(v);
            continue;
        }
        f->xattrs = util_realloc(f->xattrs, (f->nxattrs + 1) * sizeof(*f->xattrs));
        f->xattrs[f->nxattrs].name = util_strdup(name);
        f->xattrs[f->nxattrs].value = v;
        f->xattrs[f->nxattrs].len = (size_t)got;
        f->nxattrs++;
    }
    free(names);
}

static void walk_fill(struct repo_file *f, const struct stat *sb)
{
    switch (sb->st_mode & S_IFMT) {
    case S_IFREG:
        f->type = REPO_FT_FILE;
        break;
    case S_IFDIR:
        f->type = REPO_FT_DIR;
        break;
    case S_IFLNK:
        f->type = REPO_FT_SYMLINK;
        break;
    case S_IFIFO:
        f->type = REPO_FT_FIFO;
        break;
    case S_IFSOCK:
        f->type = REPO_FT_SOCKET;
        break;
    case S_IFCHR:
        f->type = REPO_FT_CHAR;
        break;
    default:
        f->type = REPO_FT_BLOCK;
        break;
    }
    f->mode = sb->st_mode & 07777;
    f->uid = sb->st_uid;
    f->gid = sb->st_gid;
    f->size = f->type == REPO_FT_FILE ? (uint64_t)sb->st_size : 0;
    f->mtime_sec = sb->st_mtim.tv_sec;
    f->mtime_nsec = (uint32_t)sb->st_mtim.tv_nsec;
    f->ctime_sec = sb->st_ctim.tv_sec;
    f->ctime_nsec = (uint32_t)sb->st_ctim.tv_nsec;
    f->ino = sb->st_ino;
    f->rdev = (f->type == REPO_FT_CHAR || f->type == REPO_FT_BLOCK) ? sb->st_rdev : 0;
}

/* Reads and chunks one regular file; false when it could not be read (listed). */
static bool walk_read(struct walk *w, int dirfd, const char *name, struct repo_file *f,
                      bool changed, bool *stop)
{
    struct backup *b = w->b;
    struct stat sb;
    size_t off = 0, len = 0, cap = 0;
    uint64_t total = 0;
    bool eof = false;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC);
    if (fd < 0 && errno == EPERM)
        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        backup_add_error(b, f->path, "%s",
                         errno == ENOENT ? "vanished during the backup" : strerror(errno));
        return false;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        backup_add_error(b, f->path, "was replaced during the backup");
        close(fd);
        return false;
    }
    walk_fill(f, &sb);
    walk_xattrs(fd, f);
    /* A file that one read takes whole gains nothing from more read-ahead: a system
     * call less for each small file. */
    if ((uint64_t)sb.st_size > WALK_KEEP)
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    for (;;) {
        while (!eof && len < CHUNKER_MAX) {
            size_t want = WALK_BUF - len;
            ssize_t n;
            if (off > 0) {
                memmove(w->buf, w->buf + off, len);
                off = 0;
            }
            n = read(fd, w->buf + len, want);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                backup_add_error(b, f->path, "reading failed at byte %llu: %s",
                                 (unsigned long long)total, strerror(errno));
                close(fd);
                return false;
            }
            len += (size_t)n;
            total += (uint64_t)n;
            /* A short read that ends at the size fstat gave is the end: the read that
             * would answer 0 is a system call a small file need not pay. A file that
             * grew since is read on until read answers 0. */
            if (n == 0 || ((size_t)n < want && total == (uint64_t)sb.st_size))
                eof = true;
        }
        if (len == 0)
            break;
        size_t cut = chunker_cut(&w->ch, w->buf + off, len);
        if (f->nchunks == cap) {
            cap = cap ? cap * 2 : 4;
            f->chunks = util_realloc(f->chunks, cap * REPO_HASH_LEN);
        }
        if (!backup_store_chunk(b, w->buf + off, cut, changed, f->chunks[f->nchunks])) {
            *stop = true;
            close(fd);
            return false;
        }
        f->nchunks++;
        off += cut;
        len -= cut;
    }
    close(fd);
    f->size = total;
    if (total > WALK_KEEP) {
        /* A large file touched the whole buffer: a new mapping gives the pages back,
         * so the small files after it (and the file list and chunk set, which grow
         * with them) do not pay 9 MiB. Faulting the pages in again is cheap next
         * to reading that much. */
        free(w->buf);
        w->buf = util_malloc(WALK_BUF);
    }
    return true;
}

static bool walk_push(struct walk *w, int fd, dev_t dev)
{
    DIR *d = fdopendir(dup(fd));
    struct walk_level *l;
    struct dirent *e;
    size_t cap = 0;
    if (d == NULL) {
        backup_add_error(w->b, w->path.data, "cannot list the directory: %s", strerror(errno));
        close(fd);
        return false;
    }
    w->lv = util_grow(w->lv, &w->caplv, w->nlv + 1, sizeof(*w->lv));
    l = &w->lv[w->nlv++];
    memset(l, 0, sizeof(*l));
    l->fd = fd;
    l->dev = dev;
    l->pathlen = w->path.len;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        l->names = util_grow(l->names, &cap, l->n + 1, sizeof(*l->names));
        l->names[l->n++] = util_strdup(e->d_name);
    }
    if (errno != 0)
        backup_add_error(w->b, w->path.data, "listing the directory failed: %s", strerror(errno));
    closedir(d);
    if (l->n > 1)
        qsort(l->names, l->n, sizeof(*l->names), walk_names_cmp);
    return true;
}

static void walk_pop(struct walk *w)
{
    struct walk_level *l = &w->lv[--w->nlv];
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    close(l->fd);
}

/* One entry: record it (reading it if needed) and, for a directory, enter it. */
static bool walk_entry(struct walk *w, int dirfd, const char *name, dev_t dev)
{
    struct backup *b = w->b;
    struct repo_file f = {0};
    const struct repo_file *match = NULL;
    struct util_err err = {0};
    struct stat sb;
    bool stop = false, ok = true;
    int found;

    if (backup_should_stop(b) || !backup_list_ship(b))
        return false;
    if (w->path.len > REPO_PATH_MAX) {
        backup_add_error(b, w->path.data, "the path is longer than %d bytes", REPO_PATH_MAX);
        return true;
    }
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
        backup_add_error(b, w->path.data, "%s",
                         errno == ENOENT ? "vanished during the backup" : strerror(errno));
        return true;
    }
    if (backup_exclude_entry(b, w->path.data, &sb))
        return true; /* left out (backup_exclude.c) */
    f.path = util_strdup(w->path.data);
    walk_fill(&f, &sb);
    found = repo_merge_find(&b->merge, f.path, &match, &err);
    if (found < 0) {
        /* A damaged parent list: go on without it (every file is read). */
        fprintf(stderr, "lode backup: the parent's file list: %s; reading every file\n", err.msg);
        b->merge.parent = NULL;
        b->merge.have = false;
        b->merge.done = true;
        match = NULL;
    }
    if (f.type == REPO_FT_SYMLINK) {
        char target[REPO_PATH_MAX + 1];
        ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
        if (n < 0) {
            backup_add_error(b, f.path, "cannot read the symlink: %s", strerror(errno));
            goto out;
        }
        target[n] = '\0';
        f.target = util_strdup(target);
    } else if (f.type == REPO_FT_FILE) {
        if (match != NULL && repo_file_unchanged(match, &f) &&
            backup_store_reuse(b, match, &err) == 0) {
            struct repo_file copy;
            repo_file_copy(&copy, match);
            repo_file_free(&f);
            f = copy;
        } else if (!walk_read(w, dirfd, name, &f, match != NULL, &stop)) {
            ok = !stop;
            goto out;
        } else if (match == NULL) {
            b->new_files++;
        } else if (match->type != REPO_FT_FILE || match->nchunks != f.nchunks ||
                   (f.nchunks > 0 &&
                    memcmp(match->chunks, f.chunks, f.nchunks * REPO_HASH_LEN) != 0)) {
            b->changed_files++;
        }
        b->files++;
        b->bytes += f.size;
    }
    if (f.type == REPO_FT_DIR) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            backup_add_error(b, f.path, "cannot open the directory: %s",
                             errno == ENOENT ? "vanished during the backup" : strerror(errno));
            goto out;
        }
        walk_xattrs(fd, &f);
        if (repo_files_writer_add(&b->list, &f, &err) != 0) {
            backup_add_error(b, f.path, "%s", err.msg);
            close(fd);
            goto out;
        }
        if (sb.st_dev != dev && !walk_is_listed(b, f.path)) {
            backup_exclude_other_fs(b);
            close(fd); /* another file system: recorded, not entered */
            goto out;
        }
        if (backup_exclude_cache(b, fd)) {
            close(fd); /* a cache: recorded, not entered */
            goto out;
        }
        walk_push(w, fd, sb.st_dev);
        goto out;
    }
    /* A later link to an inode already listed names its first path; the first one is
     * remembered once it is in the list. */
    char ikey[48];
    const char *first = NULL;
    free(f.link); /* a reused parent record's: this walk decides */
    f.link = NULL;
    if (sb.st_nlink > 1) {
        walk_inode_key(&sb, ikey);
        if ((first = util_map_get(&w->links, ikey)) != NULL)
            f.link = util_strdup(first);
    }
    if (repo_files_writer_add(&b->list, &f, &err) != 0)
        backup_add_error(b, f.path, "%s", err.msg);
    else if (sb.st_nlink > 1 && first == NULL)
        util_map_set(&w->links, ikey, util_strdup(f.path));
out:
    repo_file_free(&f);
    return ok;
}

/* Walks the tree under the directory levels pushed so far. */
static bool walk_run(struct walk *w, size_t base)
{
    while (w->nlv > base) {
        struct walk_level *l = &w->lv[w->nlv - 1];
        const char *name;
        int fd;
        dev_t dev;
        if (l->i == l->n) {
            walk_pop(w);
            continue;
        }
        name = l->names[l->i++];
        w->path.len = l->pathlen;
        if (!(w->path.len == 1 && w->path.data[0] == '/'))
            util_buf_puts(&w->path, "/");
        util_buf_puts(&w->path, name);
        fd = l->fd;
        dev = l->dev;
        if (!walk_entry(w, fd, name, dev))
            return false;
    }
    return true;
}

/* Opens the parent directory of path inside root; returns a fd or -1 (errno). */
static int walk_open_parent(int rootfd, const char *path, const char **name)
{
    const char *slash = strrchr(path, '/');
    char *dir = util_strndup(path, (size_t)(slash - path));
    struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    long fd = syscall(SYS_openat2, rootfd, dir[0] ? dir : "/", &how, sizeof(how));
    if (fd < 0 && errno == ENOSYS) {
        /* Before Linux 5.6: relative to root, symlinks in the path resolved by the
         * kernel (an absolute one could leave --root; docs/repository.md says so). */
        fd = openat(rootfd, dir[0] ? dir + 1 : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    free(dir);
    *name = slash + 1;
    return (int)fd;
}

bool backup_walk(struct backup *b)
{
    struct walk w = {.b = b};
    struct util_err err = {0};
    int rootfd;
    bool ok = true;

    if (chunker_init(&w.ch, b->st->config.chunk_min, b->st->config.chunk_avg,
                     b->st->config.chunk_max, b->keys->gear_seed, &err) != 0) {
        snprintf(b->fatal_msg, sizeof(b->fatal_msg), "config.json: %.400s", err.msg);
        b->fatal = err.code;
        return false;
    }
    rootfd = open(b->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        snprintf(b->fatal_msg, sizeof(b->fatal_msg), "cannot open --root %s: %s", b->root,
                 strerror(errno));
        b->fatal = UTIL_EIO;
        return false;
    }
    w.buf = util_malloc(WALK_BUF);
    util_buf_init(&w.path);
    util_map_init(&w.links);
    for (size_t i = 0; ok && i < b->npaths; i++) {
        const char *p = b->paths[i], *name;
        struct stat sb;
        bool nested = false;
        int dfd;
        /* A path inside an earlier one (or listed twice) is walked with it. */
        for (size_t j = 0; j < i; j++) {
            size_t n = strlen(b->paths[j]);
            if (strncmp(p, b->paths[j], n) == 0 && (p[n] == '/' || p[n] == '\0' || n == 1))
                nested = true;
        }
        if (nested)
            continue;
        if (strcmp(p, "/") == 0) {
            /* The root itself: record it, then walk its entries. */
            w.path.len = 0;
            util_buf_puts(&w.path, "/");
            dfd = dup(rootfd);
            name = ".";
        } else {
            dfd = walk_open_parent(rootfd, p, &name);
            w.path.len = 0;
            util_buf_puts(&w.path, p);
            if (dfd < 0) {
                backup_add_error(b, p, "%s",
                                 errno == ENOENT ? "does not exist on this host" : strerror(errno));
                continue;
            }
        }
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            backup_add_error(b, p, "%s",
                             errno == ENOENT ? "does not exist on this host" : strerror(errno));
            close(dfd);
            continue;
        }
        ok = walk_entry(&w, dfd, name, sb.st_dev) && walk_run(&w, 0);
        close(dfd);
    }
    while (w.nlv > 0)
        walk_pop(&w);
    free(w.lv);
    const char *k;
    void *v;
    for (size_t i = 0; util_map_next(&w.links, &i, &k, &v);)
        free(v);
    util_map_close(&w.links);
    util_buf_free(&w.path);
    free(w.buf);
    close(rootfd);
    return ok;
}
