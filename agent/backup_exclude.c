/*
 * backup_exclude: what the walk leaves out (docs/policy.md, "spec.exclude"), asked at
 * one point per entry and one per directory about to be entered, and counted by rule
 * for the manifest (repo.h, struct repo_excluded) and `lode backup`'s summary.
 *
 * Costs: each entry is matched against every pattern (glob_match, no allocation);
 * with caches on, each directory costs one openat of CACHEDIR.TAG (a failed lookup
 * in the directory the walk has open anyway) and, when the file exists, one read of
 * 43 bytes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup.h"
#include "glob/glob.h"

/* The Cache Directory Tagging Specification's signature, which the file must start with. */
#define CACHEDIR_SIGNATURE "Signature: 8a477f597d28d172789f06886806bc55"

static void backup_exclude_count(struct backup *b, enum repo_exclude_rule r, uint64_t bytes)
{
    b->excluded[r].entries++;
    b->excluded[r].bytes += bytes;
}

bool backup_exclude_entry(struct backup *b, const char *path, const struct stat *sb)
{
    const struct policy_exclude *x = b->exclude;
    bool is_dir = S_ISDIR(sb->st_mode);
    uint64_t bytes = S_ISREG(sb->st_mode) ? (uint64_t)sb->st_size : 0;
    if (x == NULL)
        return false;
    for (size_t i = 0; i < x->npatterns; i++) {
        if (glob_match(x->patterns[i], path, is_dir)) {
            backup_exclude_count(b, REPO_EXCL_PATTERN, bytes);
            return true;
        }
    }
    if (x->larger_than > 0 && S_ISREG(sb->st_mode) && bytes > x->larger_than) {
        backup_exclude_count(b, REPO_EXCL_SIZE, bytes);
        return true;
    }
    return false;
}

bool backup_exclude_cache(struct backup *b, int dirfd)
{
    char head[sizeof(CACHEDIR_SIGNATURE) - 1];
    ssize_t n = 0, got;
    if (b->exclude == NULL || !b->exclude->caches)
        return false;
    int fd = openat(dirfd, "CACHEDIR.TAG", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    while (n < (ssize_t)sizeof(head) && ((got = read(fd, head + n, sizeof(head) - (size_t)n)) > 0 ||
                                         (got < 0 && errno == EINTR)))
        n += got > 0 ? got : 0;
    close(fd);
    if (n != (ssize_t)sizeof(head) || memcmp(head, CACHEDIR_SIGNATURE, sizeof(head)) != 0)
        return false;
    backup_exclude_count(b, REPO_EXCL_CACHE, 0);
    return true;
}

void backup_exclude_other_fs(struct backup *b)
{
    backup_exclude_count(b, REPO_EXCL_FS, 0);
}
