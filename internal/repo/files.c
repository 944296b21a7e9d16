/*
 * The file list: records sorted by path, varint-encoded (see repo_file_put), each
 * record's bytes a function of the entry alone (nothing of the snapshot in them),
 * cut into a metadata tree (meta.c), so the unchanged stretches of a list are the
 * same chunks as in its parent's. The reader holds one leaf (about 8 KiB), so the
 * merge walk's memory does not grow with the number of files.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repo/repo.h"
#include "util/varint.h"

#define XATTR_MAX   1024
#define XATTR_VALUE (64u * 1024)

static void put_bytes(struct util_buf *b, const void *p, size_t n)
{
    util_varint_put(b, n);
    util_buf_append(b, p, n);
}

static void repo_file_put(struct util_buf *b, const struct repo_file *f)
{
    put_bytes(b, f->path, strlen(f->path));
    uint8_t t = (uint8_t)f->type;
    util_buf_append(b, &t, 1);
    util_varint_put(b, f->mode);
    util_varint_put(b, f->uid);
    util_varint_put(b, f->gid);
    util_varint_put(b, f->size);
    util_varint_put(b, util_zigzag(f->mtime_sec));
    util_varint_put(b, f->mtime_nsec);
    util_varint_put(b, util_zigzag(f->ctime_sec));
    util_varint_put(b, f->ctime_nsec);
    util_varint_put(b, f->ino);
    util_varint_put(b, f->rdev);
    put_bytes(b, f->target ? f->target : "", f->target ? strlen(f->target) : 0);
    put_bytes(b, f->link ? f->link : "", f->link ? strlen(f->link) : 0);
    util_varint_put(b, f->nxattrs);
    for (size_t i = 0; i < f->nxattrs; i++) {
        put_bytes(b, f->xattrs[i].name, strlen(f->xattrs[i].name));
        put_bytes(b, f->xattrs[i].value, f->xattrs[i].len);
    }
    util_varint_put(b, f->nchunks);
    util_buf_append(b, f->chunks, f->nchunks * REPO_HASH_LEN);
}

/* A length-prefixed byte string of at most max bytes, copied and NUL-terminated. */
static char *get_bytes(struct util_rd *r, size_t max, size_t *len, bool text)
{
    uint64_t n = util_varint_get(r);
    if (r->bad || n > max || n > r->n - r->i) {
        r->bad = true;
        return NULL;
    }
    if (text && memchr(r->p + r->i, '\0', n) != NULL) {
        r->bad = true;
        return NULL;
    }
    char *s = util_malloc(n + 1);
    memcpy(s, r->p + r->i, n);
    s[n] = '\0';
    r->i += n;
    if (len)
        *len = n;
    return s;
}

/* An absolute, normalized path: "/" or "/a/b", no empty, "." or ".." component. */
static bool repo_path_ok(const char *p)
{
    if (p[0] != '/')
        return false;
    if (p[1] == '\0')
        return true;
    for (const char *c = p; *c;) {
        const char *next = strchr(c + 1, '/');
        size_t len = next ? (size_t)(next - c - 1) : strlen(c + 1);
        if (len == 0 || (len == 1 && c[1] == '.') || (len == 2 && c[1] == '.' && c[2] == '.'))
            return false;
        if (!next)
            break;
        c = next;
    }
    return true;
}

static bool repo_type_ok(uint8_t t)
{
    return t == REPO_FT_FILE || t == REPO_FT_DIR || t == REPO_FT_SYMLINK || t == REPO_FT_FIFO ||
           t == REPO_FT_SOCKET || t == REPO_FT_CHAR || t == REPO_FT_BLOCK;
}

/* A hard link names an earlier entry (so a restore has made it already), and a directory
 * is never one. */
static bool repo_file_link_ok(const struct repo_file *f)
{
    if (f->link == NULL || f->link[0] == '\0')
        return true;
    return f->type != REPO_FT_DIR && strlen(f->link) <= REPO_PATH_MAX && repo_path_ok(f->link) &&
           repo_path_cmp(f->link, f->path) < 0;
}

static int repo_file_get(struct util_rd *r, struct repo_file *f)
{
    uint64_t v;
    memset(f, 0, sizeof(*f));
    f->path = get_bytes(r, REPO_PATH_MAX, NULL, true);
    if (r->bad || !repo_path_ok(f->path) || r->i >= r->n)
        goto bad;
    f->type = (enum repo_ftype)r->p[r->i++];
    if (!repo_type_ok((uint8_t)f->type))
        goto bad;
    v = util_varint_get(r);
    if (v > 07777)
        goto bad;
    f->mode = (uint32_t)v;
    v = util_varint_get(r);
    if (v > UINT32_MAX)
        goto bad;
    f->uid = (uint32_t)v;
    v = util_varint_get(r);
    if (v > UINT32_MAX)
        goto bad;
    f->gid = (uint32_t)v;
    f->size = util_varint_get(r);
    f->mtime_sec = util_unzigzag(util_varint_get(r));
    v = util_varint_get(r);
    if (v >= 1000000000)
        goto bad;
    f->mtime_nsec = (uint32_t)v;
    f->ctime_sec = util_unzigzag(util_varint_get(r));
    v = util_varint_get(r);
    if (v >= 1000000000)
        goto bad;
    f->ctime_nsec = (uint32_t)v;
    f->ino = util_varint_get(r);
    f->rdev = util_varint_get(r);
    f->target = get_bytes(r, REPO_PATH_MAX, NULL, true);
    if (r->bad)
        goto bad;
    if (f->type != REPO_FT_SYMLINK && f->target[0] != '\0')
        goto bad;
    f->link = get_bytes(r, REPO_PATH_MAX, NULL, true);
    if (r->bad || !repo_file_link_ok(f))
        goto bad;
    v = util_varint_get(r);
    if (r->bad || v > XATTR_MAX || v > r->n - r->i)
        goto bad;
    if (v) {
        f->xattrs = util_calloc(v, sizeof(*f->xattrs));
        for (size_t i = 0; i < v; i++) {
            f->nxattrs = i + 1;
            f->xattrs[i].name = get_bytes(r, 255, NULL, true);
            if (r->bad || f->xattrs[i].name[0] == '\0')
                goto bad;
            f->xattrs[i].value = (uint8_t *)get_bytes(r, XATTR_VALUE, &f->xattrs[i].len, false);
            if (r->bad)
                goto bad;
        }
    }
    v = util_varint_get(r);
    if (r->bad || v > (r->n - r->i) / REPO_HASH_LEN || (v && f->type != REPO_FT_FILE))
        goto bad;
    if (v) {
        f->chunks = util_malloc(v * REPO_HASH_LEN);
        memcpy(f->chunks, r->p + r->i, v * REPO_HASH_LEN);
        r->i += v * REPO_HASH_LEN;
        f->nchunks = v;
    }
    return 0;
bad:
    r->bad = true;
    repo_file_free(f);
    return UTIL_EIO;
}

void repo_file_free(struct repo_file *f)
{
    free(f->path);
    free(f->target);
    free(f->link);
    for (size_t i = 0; i < f->nxattrs; i++) {
        free(f->xattrs[i].name);
        free(f->xattrs[i].value);
    }
    free(f->xattrs);
    free(f->chunks);
    memset(f, 0, sizeof(*f));
}

void repo_file_copy(struct repo_file *dst, const struct repo_file *src)
{
    *dst = *src;
    dst->path = util_strdup(src->path);
    dst->target = src->target ? util_strdup(src->target) : NULL;
    dst->link = src->link ? util_strdup(src->link) : NULL;
    dst->xattrs = NULL;
    if (src->nxattrs) {
        dst->xattrs = util_calloc(src->nxattrs, sizeof(*dst->xattrs));
        for (size_t i = 0; i < src->nxattrs; i++) {
            dst->xattrs[i].name = util_strdup(src->xattrs[i].name);
            dst->xattrs[i].len = src->xattrs[i].len;
            dst->xattrs[i].value = util_malloc(src->xattrs[i].len ? src->xattrs[i].len : 1);
            memcpy(dst->xattrs[i].value, src->xattrs[i].value, src->xattrs[i].len);
        }
    }
    dst->chunks = NULL;
    if (src->nchunks) {
        dst->chunks = util_malloc(src->nchunks * REPO_HASH_LEN);
        memcpy(dst->chunks, src->chunks, src->nchunks * REPO_HASH_LEN);
    }
}

bool repo_file_unchanged(const struct repo_file *parent, const struct repo_file *now)
{
    return parent->type == REPO_FT_FILE && now->type == REPO_FT_FILE && parent->size == now->size &&
           parent->mtime_sec == now->mtime_sec && parent->mtime_nsec == now->mtime_nsec &&
           parent->ctime_sec == now->ctime_sec && parent->ctime_nsec == now->ctime_nsec &&
           parent->ino == now->ino;
}

/* ---- writer ---- */

void repo_files_writer_init(struct repo_files_writer *w, const struct repo_keys *k,
                            repo_mstore_cb store, void *arg)
{
    memset(w, 0, sizeof(*w));
    repo_tree_writer_init(&w->tree, REPO_TREE_FILES, k, store, arg);
    util_buf_init(&w->rec);
}

int repo_files_writer_add(struct repo_files_writer *w, const struct repo_file *f,
                          struct util_err *err)
{
    if (!repo_path_ok(f->path) || strlen(f->path) > REPO_PATH_MAX)
        return util_err_set(err, UTIL_EINVAL, "file list: \"%.200s\" is not a normalized path",
                            f->path);
    if (w->last && repo_path_cmp(w->last, f->path) >= 0)
        return util_err_set(err, UTIL_EINVAL, "file list: \"%.200s\" is out of order", f->path);
    if (!repo_file_link_ok(f))
        return util_err_set(err, UTIL_EINVAL,
                            "file list: \"%.200s\" is a hard link to a later path or a directory",
                            f->path);
    free(w->last);
    w->last = util_strdup(f->path);
    w->rec.len = 0;
    repo_file_put(&w->rec, f);
    return repo_tree_writer_add_key(&w->tree, (const uint8_t *)w->rec.data, w->rec.len,
                                    (const uint8_t *)f->path, strlen(f->path), err);
}

int repo_files_writer_finish(struct repo_files_writer *w, struct repo_root *root,
                             struct util_err *err)
{
    return repo_tree_writer_finish(&w->tree, root, err);
}

void repo_files_writer_free(struct repo_files_writer *w)
{
    repo_tree_writer_free(&w->tree);
    util_buf_free(&w->rec);
    free(w->last);
    w->last = NULL;
}

/* ---- reader ---- */

void repo_files_reader_init(struct repo_files_reader *r, const uint8_t *data, size_t len)
{
    memset(r, 0, sizeof(*r));
    r->data = data;
    r->len = len;
}

void repo_files_reader_tree(struct repo_files_reader *r, struct repo_tree_reader *tree)
{
    memset(r, 0, sizeof(*r));
    r->tree = tree;
}

int repo_files_reader_next(struct repo_files_reader *r, struct repo_file *f, struct util_err *err)
{
    int rc;
    memset(f, 0, sizeof(*f));
    while (r->pos >= r->len) {
        if (r->tree == NULL)
            return 0;
        /* Records never straddle two leaves: the cut is between records. */
        if ((rc = repo_tree_reader_next(r->tree, &r->data, &r->len, err)) != 1)
            return rc;
        r->pos = 0;
        r->leaf++;
    }
    struct util_rd rd = {.p = r->data, .n = r->len, .i = r->pos};
    if (repo_file_get(&rd, f) != 0)
        return util_err_set(err, UTIL_EIO, "file list: a record in leaf %" PRIu64 " is malformed",
                            r->leaf);
    r->pos = rd.i;
    if (r->last && repo_path_cmp(r->last, f->path) >= 0) {
        rc = util_err_set(err, UTIL_EIO, "file list: \"%.200s\" is out of order", f->path);
        repo_file_free(f);
        return rc;
    }
    free(r->last);
    r->last = util_strdup(f->path);
    return 1;
}

void repo_files_reader_free(struct repo_files_reader *r)
{
    free(r->last);
    r->last = NULL;
    r->data = NULL;
    r->len = r->pos = 0;
}

/* ---- merge ---- */

void repo_merge_init(struct repo_merge *m, struct repo_files_reader *parent)
{
    memset(m, 0, sizeof(*m));
    m->parent = parent;
    m->done = parent == NULL;
}

static int repo_merge_advance(struct repo_merge *m, struct util_err *err)
{
    repo_file_free(&m->cur);
    m->have = false;
    int rc = repo_files_reader_next(m->parent, &m->cur, err);
    if (rc < 0)
        return rc;
    m->have = rc == 1;
    m->done = rc == 0;
    return 0;
}

int repo_merge_find(struct repo_merge *m, const char *path, const struct repo_file **match,
                    struct util_err *err)
{
    int rc;
    *match = NULL;
    for (;;) {
        if (!m->have) {
            if (m->done)
                return 0;
            if ((rc = repo_merge_advance(m, err)) != 0)
                return rc;
            continue;
        }
        int c = repo_path_cmp(m->cur.path, path);
        if (c > 0)
            return 0;
        if (c == 0) {
            *match = &m->cur;
            m->have = false; /* consumed; freed on the next advance */
            return 1;
        }
        m->deleted++;
        if ((rc = repo_merge_advance(m, err)) != 0)
            return rc;
    }
}

int repo_merge_finish(struct repo_merge *m, struct util_err *err)
{
    int rc;
    for (;;) {
        if (m->have)
            m->deleted++;
        if (m->done)
            return 0;
        if ((rc = repo_merge_advance(m, err)) != 0)
            return rc;
    }
}

void repo_merge_free(struct repo_merge *m)
{
    repo_file_free(&m->cur);
}
