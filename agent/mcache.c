/*
 * mcache: the node's cache of metadata packs (mcache.h): entries with a tagged trailer,
 * written under a temporary name and renamed, and the eviction after a backup.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "mcache.h"

#define MCACHE_MAGIC "LODEMC1\n"
#define MCACHE_BLOCK (1u << 20)
#define MCACHE_TMP   ".tmp."

/* Makes every missing directory of path, mode 700. */
static int mcache_mkdirs(const char *path, struct util_err *err)
{
    char *p = util_strdup(path);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0')
            continue;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            rc = util_err_set(err, -errno, "cannot make %s: %s", p, strerror(errno));
            break;
        }
        *s = c;
        if (c == '\0')
            break;
    }
    if (rc == 0) {
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
            rc = util_err_set(err, UTIL_EINVAL, "%s is not a directory", path);
    }
    free(p);
    return rc;
}

static int mcache_rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb;
    (void)f;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void mcache_drop_stale(const char *top, const char *keep, int64_t now)
{
    DIR *d = opendir(top);
    struct dirent *de;
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        struct stat sb;
        if (de->d_name[0] == '.' || strcmp(de->d_name, keep) == 0 ||
            fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(sb.st_mode) ||
            now - (int64_t)sb.st_mtime <= MCACHE_STALE)
            continue;
        char *path = util_asprintf("%s/%s", top, de->d_name);
        nftw(path, mcache_rm_cb, 8, FTW_DEPTH | FTW_PHYS);
        free(path);
    }
    closedir(d);
}

int mcache_open(struct mcache *c, const char *root, const char *repo, const struct repo_source *src,
                const struct repo_keys *k, struct util_err *err)
{
    uint8_t h[32];
    unsigned hl = 0;
    char hex[17];
    static const char label[] = "lode metadata cache 1";

    memset(c, 0, sizeof(*c));
    EVP_Digest(repo, strlen(repo), h, &hl, EVP_sha256(), NULL);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", h[i]);
    c->dir = util_asprintf("%s/meta/%s/%s/%s/%s", root, hex, src->ns, src->policy, src->host);
    /* The tags' key is the data key's HMAC over a label: a cache written under another
     * repository's keys does not verify here. */
    HMAC(EVP_sha256(), k->data, sizeof(k->data), (const unsigned char *)label, sizeof(label) - 1,
         c->key, &hl);
    int rc = mcache_mkdirs(c->dir, err);
    if (rc != 0) {
        free(c->dir);
        c->dir = NULL;
        return rc;
    }
    /* The repository's directory's time says when it was last used; those of
     * repositories unused for MCACHE_STALE go (a repository moved or deleted). */
    char *top = util_asprintf("%s/meta", root), *mine = util_asprintf("%s/%s", top, hex);
    utimensat(AT_FDCWD, mine, NULL, 0);
    mcache_drop_stale(top, hex, (int64_t)time(NULL));
    free(mine);
    free(top);
    return 0;
}

void mcache_close(struct mcache *c)
{
    for (size_t i = 0; i < c->nkeep; i++)
        free(c->keep[i]);
    free(c->keep);
    free(c->dir);
    free(c->verified);
    OPENSSL_cleanse(c->key, sizeof(c->key));
    memset(c, 0, sizeof(*c));
}

void mcache_keep(struct mcache *c, const char *name)
{
    for (size_t i = 0; i < c->nkeep; i++)
        if (strcmp(c->keep[i], name) == 0)
            return;
    c->keep = util_grow(c->keep, &c->capkeep, c->nkeep + 1, sizeof(*c->keep));
    c->keep[c->nkeep++] = util_strdup(name);
}

void mcache_warn(struct mcache *c, const char *what, const struct util_err *err)
{
    if (c->warned)
        return;
    c->warned = true;
    fprintf(stderr, "lode backup: the metadata cache (%s): %s: %s; going on without it\n",
            c->dir ? c->dir : "?", what, err->msg);
}

/* The tag of an entry: HMAC over its name, its length and the SHA-256 of its bytes. */
static void mcache_tag(const struct mcache *c, const char *name, uint64_t len,
                       const uint8_t digest[32], uint8_t tag[32])
{
    struct util_buf m;
    uint8_t le[8];
    unsigned tl = 0;
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(len >> (8 * i));
    util_buf_init(&m);
    util_buf_append(&m, name, strlen(name) + 1);
    util_buf_append(&m, le, sizeof(le));
    util_buf_append(&m, digest, 32);
    HMAC(EVP_sha256(), c->key, sizeof(c->key), (const unsigned char *)m.data, m.len, tag, &tl);
    util_buf_free(&m);
}

/* A bad entry: deleted (the next write replaces it), counted, and a miss. */
static int mcache_bad(struct mcache *c, const char *path, int fd)
{
    fprintf(stderr,
            "lode backup: the metadata cache: %s does not verify (cut short, changed, or "
            "written under another key): deleted, read from the bucket\n",
            path);
    close(fd);
    unlink(path);
    c->bad++;
    c->misses++;
    return MCACHE_MISS;
}

int mcache_read(struct mcache *c, const char *name, uint64_t want_len, uint64_t off, size_t len,
                struct util_buf *out, struct util_err *err)
{
    char *path = util_asprintf("%s/%s", c->dir, name);
    uint8_t trailer[MCACHE_TRAILER], tag[32], digest[32];
    struct stat sb;
    uint64_t elen = 0;
    int fd, rc = 0;
    bool verified = c->verified != NULL && strcmp(c->verified, name) == 0;
    EVP_MD_CTX *sha = NULL;
    uint8_t *block = NULL;

    util_buf_init(out);
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            c->misses++;
            rc = MCACHE_MISS;
        } else {
            rc = util_err_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
        }
        goto out;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < MCACHE_TRAILER ||
        pread(fd, trailer, sizeof(trailer), sb.st_size - MCACHE_TRAILER) != MCACHE_TRAILER ||
        memcmp(trailer, MCACHE_MAGIC, 8) != 0) {
        rc = mcache_bad(c, path, fd);
        goto out;
    }
    for (int i = 0; i < 8; i++)
        elen |= (uint64_t)trailer[8 + i] << (8 * i);
    if (elen != (uint64_t)sb.st_size - MCACHE_TRAILER) {
        rc = mcache_bad(c, path, fd);
        goto out;
    }
    if (want_len != MCACHE_ANY && elen != want_len) {
        /* Not the bucket's object of that name: useless, and replaced by the next write. */
        rc = mcache_bad(c, path, fd);
        goto out;
    }
    if (off > elen)
        off = elen;
    if (len > elen - off)
        len = (size_t)(elen - off);
    block = util_malloc(MCACHE_BLOCK);
    if (!verified) {
        sha = EVP_MD_CTX_new();
        if (sha == NULL)
            abort();
        EVP_DigestInit_ex(sha, EVP_sha256(), NULL);
    }
    /* Checked whole once (the entry through SHA-256, keeping [off, off + len) of it);
     * while it is the last verified, only the range is read: a change since is found by
     * the chunks' own checks. */
    for (uint64_t pos = verified ? off : 0, end = verified ? off + len : elen; pos < end;) {
        size_t want = end - pos < MCACHE_BLOCK ? (size_t)(end - pos) : MCACHE_BLOCK;
        ssize_t got = pread(fd, block, want, (off_t)pos);
        if (got <= 0) {
            util_buf_free(out);
            rc = mcache_bad(c, path, fd);
            goto out;
        }
        if (sha != NULL)
            EVP_DigestUpdate(sha, block, (size_t)got);
        uint64_t a = pos > off ? pos : off, e = pos + (uint64_t)got;
        if (e > off + len)
            e = off + len;
        if (a < e)
            util_buf_append(out, block + (a - pos), (size_t)(e - a));
        pos += (uint64_t)got;
    }
    if (!verified) {
        EVP_DigestFinal_ex(sha, digest, NULL);
        mcache_tag(c, name, elen, digest, tag);
        if (CRYPTO_memcmp(tag, trailer + 16, 32) != 0) {
            util_buf_free(out);
            rc = mcache_bad(c, path, fd);
            goto out;
        }
        free(c->verified);
        c->verified = util_strdup(name);
    }
    close(fd);
    c->hits++;
    mcache_keep(c, name);
out:
    EVP_MD_CTX_free(sha);
    free(block);
    free(path);
    return rc;
}

int mcache_begin(struct mcache *c, const char *name, struct mcache_writer *w, struct util_err *err)
{
    uint8_t rnd[8];
    char hex[17];
    memset(w, 0, sizeof(*w));
    w->fd = -1;
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return util_err_set(err, UTIL_EIO, "no random bytes from OpenSSL");
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
    w->tmp = util_asprintf("%s/%s" MCACHE_TMP "%s", c->dir, name, hex);
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (w->fd < 0) {
        int rc = util_err_set(err, -errno, "cannot create %s: %s", w->tmp, strerror(errno));
        free(w->tmp);
        w->tmp = NULL;
        return rc;
    }
    w->c = c;
    w->name = util_strdup(name);
    w->sha = EVP_MD_CTX_new();
    if (w->sha == NULL)
        abort();
    EVP_DigestInit_ex(w->sha, EVP_sha256(), NULL);
    return 0;
}

/* write(2) of all of len bytes; the errno of a failure. */
static int mcache_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int mcache_write(struct mcache_writer *w, const void *data, size_t len)
{
    if (w->failed != 0)
        return -w->failed;
    if ((w->failed = mcache_write_all(w->fd, data, len)) != 0)
        return -w->failed;
    EVP_DigestUpdate(w->sha, data, len);
    w->len += len;
    return 0;
}

static void mcache_writer_free(struct mcache_writer *w)
{
    if (w->fd >= 0)
        close(w->fd);
    EVP_MD_CTX_free(w->sha);
    free(w->name);
    free(w->tmp);
    memset(w, 0, sizeof(*w));
    w->fd = -1;
}

void mcache_abort(struct mcache_writer *w)
{
    if (w->tmp != NULL)
        unlink(w->tmp);
    mcache_writer_free(w);
}

int mcache_commit(struct mcache_writer *w, struct util_err *err)
{
    uint8_t trailer[MCACHE_TRAILER], digest[32];
    struct mcache *c = w->c;
    char *path;
    int rc = 0, e;

    if (w->failed != 0) {
        rc = util_err_set(err, -w->failed, "cannot write %s: %s", w->tmp, strerror(w->failed));
        mcache_abort(w);
        return rc;
    }
    EVP_DigestFinal_ex(w->sha, digest, NULL);
    memcpy(trailer, MCACHE_MAGIC, 8);
    for (int i = 0; i < 8; i++)
        trailer[8 + i] = (uint8_t)(w->len >> (8 * i));
    mcache_tag(c, w->name, w->len, digest, trailer + 16);
    if ((e = mcache_write_all(w->fd, trailer, sizeof(trailer))) != 0 || close(w->fd) != 0) {
        if (e == 0)
            e = errno;
        w->fd = -1;
        rc = util_err_set(err, -e, "cannot write %s: %s", w->tmp, strerror(e));
        mcache_abort(w);
        return rc;
    }
    w->fd = -1;
    path = util_asprintf("%s/%s", c->dir, w->name);
    if (rename(w->tmp, path) != 0) {
        rc = util_err_set(err, -errno, "cannot rename %s: %s", w->tmp, strerror(errno));
        free(path);
        mcache_abort(w);
        return rc;
    }
    free(path);
    c->writes++;
    mcache_keep(c, w->name);
    free(c->verified);
    c->verified = util_strdup(w->name);
    mcache_writer_free(w);
    return 0;
}

int mcache_put(struct mcache *c, const char *name, const void *data, size_t len,
               struct util_err *err)
{
    struct mcache_writer w;
    int rc = mcache_begin(c, name, &w, err);
    if (rc != 0)
        return rc;
    if ((rc = mcache_write(&w, data, len)) != 0) {
        util_err_set(err, rc, "cannot write %s: %s", w.tmp, strerror(-rc));
        mcache_abort(&w);
        return rc;
    }
    return mcache_commit(&w, err);
}

bool mcache_evicts(const struct mcache *c, const char *fname, int64_t mtime, int64_t now)
{
    if (strstr(fname, MCACHE_TMP) != NULL)
        return now - mtime > MCACHE_TEMP_AGE;
    for (size_t i = 0; i < c->nkeep; i++)
        if (strcmp(c->keep[i], fname) == 0)
            return false;
    return true;
}

int mcache_evict(struct mcache *c, int64_t now, struct util_err *err)
{
    DIR *d = opendir(c->dir);
    struct dirent *de;
    if (d == NULL)
        return util_err_set(err, -errno, "cannot read %s: %s", c->dir, strerror(errno));
    while ((de = readdir(d)) != NULL) {
        struct stat sb;
        if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
            S_ISDIR(sb.st_mode))
            continue;
        if (mcache_evicts(c, de->d_name, (int64_t)sb.st_mtime, now))
            unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
    return 0;
}

char *mcache_default_dir(const char *flag, bool disabled)
{
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (disabled)
        return NULL;
    if (flag != NULL)
        return util_strdup(flag);
    if (x != NULL && x[0] == '/')
        return util_asprintf("%s/lodestore", x);
    if (home != NULL && home[0] == '/')
        return util_asprintf("%s/.cache/lodestore", home);
    return NULL;
}
