/*
 * lode restore --staged and --dry-run's target check (docs/restoring.md, "From the
 * cluster"): what a Restore's Job needs beyond the plain restore.
 *
 * A staged restore writes into a hidden directory inside the target
 * (TARGET/.lode-restore-staging-PID) and, once everything is there, moves each of its
 * top-level entries into the target with renameat2(RENAME_NOREPLACE): one rename per
 * top-level entry, so a restore cut short leaves nothing of itself under a real name.
 * The target itself may be a mount point (a Job mounts only it), which is why the
 * stage lives inside it, not beside it. A directory's mtime is put back after its
 * move, as the move may change it.
 *
 * The process forks once: the child restores, the parent waits. A SIGTERM (a deleted
 * Restore: the kubelet stops the pod) makes the parent kill the child and remove the
 * stage before it exits, so nothing is left but the target as it was. A stage left by a
 * process killed outright (SIGKILL, a node crash) is removed by the next staged restore
 * into the same target before it looks whether the target is empty. Costs: one process
 * more, and a walk of the stage to remove it on a cancel.
 */
#define _GNU_SOURCE /* renameat2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#define STAGE_PREFIX ".lode-restore-staging-"

/* Removes name under dirfd, a directory with everything in it or anything else. */
static int stage_rm_at(int at, const char *name)
{
    if (unlinkat(at, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -errno;
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int r = stage_rm_at(dirfd(d), de->d_name);
        if (r != 0 && rc == 0)
            rc = r;
    }
    closedir(d);
    if (unlinkat(at, name, AT_REMOVEDIR) != 0 && errno != ENOENT && rc == 0)
        rc = -errno;
    return rc;
}

/* Whether name under at is an empty directory (a file system's lost+found, say). */
static bool stage_empty_dir(int at, const char *name)
{
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return false;
    }
    bool empty = true;
    struct dirent *de;
    while (empty && (de = readdir(d)) != NULL)
        empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
    closedir(d);
    return empty;
}

/*
 * Whether dir holds anything but stages and an empty lost+found (as lode restore's own
 * check: docs/repository.md, "Restoring"); with clean, the stages are removed: they are
 * left by restores killed outright, as the controller runs one restore at a time per
 * target (two staged restores by hand into one target would remove each other's).
 */
static int stage_scan(int fd, bool clean, bool *empty)
{
    int dup_fd = dup(fd);
    if (dup_fd < 0)
        return -errno;
    DIR *d = fdopendir(dup_fd);
    if (d == NULL) {
        close(dup_fd);
        return -errno;
    }
    *empty = true;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (strncmp(de->d_name, STAGE_PREFIX, strlen(STAGE_PREFIX)) == 0) {
            if (clean)
                stage_rm_at(fd, de->d_name);
            continue;
        }
        if (strcmp(de->d_name, "lost+found") == 0 && stage_empty_dir(fd, de->d_name))
            continue;
        *empty = false;
    }
    closedir(d);
    return 0;
}

int cli_restore_target_check(const char *target, bool overwrite, struct util_err *err)
{
    struct stat sb;
    if (lstat(target, &sb) != 0) {
        if (errno == ENOENT)
            return 0;
        return util_err_set(err, UTIL_EIO, "cannot look at %s: %s", target, strerror(errno));
    }
    /* No directory there: UTIL_ENOENT, which lode restore reports as TargetUnusable
     * (UTIL_EINVAL is kept for a target that holds files). */
    if (!S_ISDIR(sb.st_mode))
        return util_err_set(err, UTIL_ENOENT,
                            "%s exists and is not a directory: choose another target", target);
    int fd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return util_err_set(err, UTIL_EIO, "cannot open %s: %s", target, strerror(errno));
    bool empty;
    int rc = stage_scan(fd, false, &empty);
    close(fd);
    if (rc != 0)
        return util_err_set(err, UTIL_EIO, "cannot list %s: %s", target, strerror(-rc));
    if (!empty && !overwrite)
        return util_err_set(err, UTIL_EINVAL,
                            "the target %s is not empty: restore somewhere else, or set "
                            "overwrite (--overwrite) to replace what is in the way",
                            target);
    return 0;
}

int cli_stage_prepare(struct cli_stage *s, const char *target, bool overwrite, struct util_err *err)
{
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    /* The target and its missing parents, as lode restore makes them. */
    char *p = util_strdup(target);
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char was = *c;
        *c = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            free(p);
            return util_err_set(err, UTIL_EIO, "cannot make the target %s: %s", target,
                                strerror(e));
        }
        *c = was;
        if (was == '\0')
            break;
    }
    free(p);
    s->fd = open(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s->fd < 0)
        return util_err_set(err, UTIL_ENOENT,
                            "the target %s exists and is not a directory (%s): choose another "
                            "target",
                            target, strerror(errno));
    bool empty;
    int rc = stage_scan(s->fd, true, &empty);
    if (rc != 0) {
        util_err_set(err, UTIL_EIO, "cannot list %s: %s", target, strerror(-rc));
        goto close_fd;
    }
    if (!empty && !overwrite) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "the target %s is not empty: restore somewhere else, or set "
                          "overwrite (--overwrite) to replace what is in the way",
                          target);
        goto close_fd;
    }
    s->target = util_strdup(target);
    /* With overwrite the files go straight in (each whole or absent, as lode restore
     * always writes them): entries in the way are replaced one by one, which a move of
     * whole top-level directories could not do. */
    if (overwrite) {
        s->dir = util_strdup(target);
        return 0;
    }
    s->name = util_asprintf(STAGE_PREFIX "%ld", (long)getpid());
    if (mkdirat(s->fd, s->name, 0700) != 0) {
        rc = util_err_set(err, UTIL_EIO, "cannot make %s/%s: %s", target, s->name, strerror(errno));
        free(s->name);
        free(s->target);
        s->name = s->target = NULL;
        goto close_fd;
    }
    s->dir = util_asprintf("%s/%s", target, s->name);
    return 0;

close_fd:
    close(s->fd);
    s->fd = -1;
    return rc;
}

static volatile sig_atomic_t stage_signal;

static void stage_signal_cb(int sig)
{
    stage_signal = sig;
}

int cli_stage_guard(struct cli_stage *s, int *exit_code)
{
    if (s->name == NULL)
        return 0; /* nothing to clean up: no need to stay behind */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 0; /* no guard: a cancel then leaves the stage for the next restore */
    if (pid == 0)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = stage_signal_cb;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int status = 0;
    bool killed = false;
    for (;;) {
        if (waitpid(pid, &status, 0) == pid)
            break;
        if (errno != EINTR) {
            status = 2 << 8;
            break;
        }
        if (stage_signal != 0 && !killed) {
            kill(pid, SIGKILL);
            killed = true;
        }
    }
    /* After a commit the stage is gone; after anything else it goes now. */
    stage_rm_at(s->fd, s->name);
    if (stage_signal != 0) {
        fprintf(stderr,
                "lode restore: stopped by signal %d; nothing of this restore was left "
                "in the target\n",
                (int)stage_signal);
        *exit_code = 128 + (int)stage_signal;
    } else {
        *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return 1;
}

int cli_stage_commit(struct cli_stage *s, struct util_err *err)
{
    if (s->name == NULL)
        return 0;
    int sfd = openat(s->fd, s->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0)
        return util_err_set(err, UTIL_EIO, "cannot open %s: %s", s->dir, strerror(errno));
    DIR *d = fdopendir(sfd);
    if (d == NULL) {
        close(sfd);
        return util_err_set(err, UTIL_EIO, "cannot list %s: %s", s->dir, strerror(errno));
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat sb;
        bool is_dir =
            fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode);
        if (renameat2(dirfd(d), de->d_name, s->fd, de->d_name, RENAME_NOREPLACE) != 0) {
            rc = util_err_set(err, errno == EEXIST ? UTIL_EINVAL : UTIL_EIO,
                              "cannot move %s into %s: %s", de->d_name, s->target,
                              errno == EEXIST ? "something of that name appeared there "
                                                "during the restore"
                                              : strerror(errno));
            break;
        }
        if (is_dir) {
            struct timespec ts[2] = {sb.st_atim, sb.st_mtim};
            utimensat(s->fd, de->d_name, ts, AT_SYMLINK_NOFOLLOW);
        }
    }
    closedir(d);
    if (rc == 0 && unlinkat(s->fd, s->name, AT_REMOVEDIR) != 0)
        rc = util_err_set(err, UTIL_EIO, "cannot remove %s: %s", s->dir, strerror(errno));
    return rc;
}

void cli_stage_close(struct cli_stage *s)
{
    if (s->fd >= 0) {
        if (s->name != NULL)
            stage_rm_at(s->fd, s->name);
        close(s->fd);
    }
    free(s->name);
    free(s->dir);
    free(s->target);
    memset(s, 0, sizeof(*s));
    s->fd = -1;
}
