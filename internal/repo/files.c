/*
 * The file list: "LODEFIL1", then frames, each a u32 length and a sealed
 * zstd-compressed run of records. A frame's associated data is the snapshot id,
 * its index and whether it is the last, so frames cannot be swapped, dropped or
 * cut off. Records are varint-encoded (see repo_file_put) and sorted by path.
 * A frame closes at about 1 MiB of records: the reader holds one frame, so the
 * merge walk's memory does not grow with the number of files.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "repo/repo.h"

#define FILES_MAGIC  "LODEFIL1"
#define FRAME_TARGET (1u << 20)
#define FRAME_MAX    (64u << 20) /* a frame's plain size is bounded when read */
#define XATTR_MAX    1024
#define XATTR_VALUE  (64u * 1024)

static void put_varint(struct util_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    util_buf_append(b, tmp, n);
}

static void put_bytes(struct util_buf *b, const void *p, size_t n)
{
    put_varint(b, n);
    util_buf_append(b, p, n);
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static void repo_file_put(struct util_buf *b, const struct repo_file *f)
{
    put_bytes(b, f->path, strlen(f->path));
    uint8_t t = (uint8_t)f->type;
    util_buf_append(b, &t, 1);
    put_varint(b, f->mode);
    put_varint(b, f->uid);
    put_varint(b, f->gid);
    put_varint(b, f->size);
    put_varint(b, zigzag(f->mtime_sec));
    put_varint(b, f->mtime_nsec);
    put_varint(b, zigzag(f->ctime_sec));
    put_varint(b, f->ctime_nsec);
    put_varint(b, f->ino);
    put_varint(b, f->rdev);
    put_bytes(b, f->target ? f->target : "", f->target ? strlen(f->target) : 0);
    put_bytes(b, f->link ? f->link : "", f->link ? strlen(f->link) : 0);
    put_varint(b, f->nxattrs);
    for (size_t i = 0; i < f->nxattrs; i++) {
        put_bytes(b, f->xattrs[i].name, strlen(f->xattrs[i].name));
        put_bytes(b, f->xattrs[i].value, f->xattrs[i].len);
    }
    put_varint(b, f->nchunks);
    util_buf_append(b, f->chunks, f->nchunks * REPO_HASH_LEN);
}

struct rd {
    const uint8_t *p;
    size_t n, i;
    bool bad;
};

static uint64_t get_varint(struct rd *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->i >= r->n) {
            r->bad = true;
            return 0;
        }
        uint8_t byte = r->p[r->i++];
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

/* A length-prefixed byte string of at most max bytes, copied and NUL-terminated. */
static char *get_bytes(struct rd *r, size_t max, size_t *len, bool text)
{
    uint64_t n = get_varint(r);
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

static int repo_file_get(struct rd *r, struct repo_file *f)
{
    uint64_t v;
    memset(f, 0, sizeof(*f));
    f->path = get_bytes(r, REPO_PATH_MAX, NULL, true);
    if (r->bad || !repo_path_ok(f->path) || r->i >= r->n)
        goto bad;
    f->type = (enum repo_ftype)r->p[r->i++];
    if (!repo_type_ok((uint8_t)f->type))
        goto bad;
    v = get_varint(r);
    if (v > 07777)
        goto bad;
    f->mode = (uint32_t)v;
    v = get_varint(r);
    if (v > UINT32_MAX)
        goto bad;
    f->uid = (uint32_t)v;
    v = get_varint(r);
    if (v > UINT32_MAX)
        goto bad;
    f->gid = (uint32_t)v;
    f->size = get_varint(r);
    f->mtime_sec = unzigzag(get_varint(r));
    v = get_varint(r);
    if (v >= 1000000000)
        goto bad;
    f->mtime_nsec = (uint32_t)v;
    f->ctime_sec = unzigzag(get_varint(r));
    v = get_varint(r);
    if (v >= 1000000000)
        goto bad;
    f->ctime_nsec = (uint32_t)v;
    f->ino = get_varint(r);
    f->rdev = get_varint(r);
    f->target = get_bytes(r, REPO_PATH_MAX, NULL, true);
    if (r->bad)
        goto bad;
    if (f->type != REPO_FT_SYMLINK && f->target[0] != '\0')
        goto bad;
    f->link = get_bytes(r, REPO_PATH_MAX, NULL, true);
    if (r->bad || !repo_file_link_ok(f))
        goto bad;
    v = get_varint(r);
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
    v = get_varint(r);
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

static void repo_frame_aad(uint8_t *aad, const char *id, uint32_t index, bool final)
{
    memcpy(aad, FILES_MAGIC, 8);
    memcpy(aad + 8, id, REPO_ID_LEN);
    aad[8 + REPO_ID_LEN] = (uint8_t)index;
    aad[9 + REPO_ID_LEN] = (uint8_t)(index >> 8);
    aad[10 + REPO_ID_LEN] = (uint8_t)(index >> 16);
    aad[11 + REPO_ID_LEN] = (uint8_t)(index >> 24);
    aad[12 + REPO_ID_LEN] = final ? 1 : 0;
}

#define FRAME_AAD (13 + REPO_ID_LEN)

void repo_files_writer_init(struct repo_files_writer *w, const struct repo_keys *k, const char *id)
{
    memset(w, 0, sizeof(*w));
    w->keys = k;
    snprintf(w->id, sizeof(w->id), "%s", id);
    util_buf_init(&w->frame);
    util_buf_init(&w->out);
    util_buf_append(&w->out, FILES_MAGIC, 8);
}

static void repo_files_flush(struct repo_files_writer *w, bool final)
{
    size_t bound = ZSTD_compressBound(w->frame.len);
    uint8_t *z = util_malloc(bound), *sealed, aad[FRAME_AAD], len[4];
    size_t zn = ZSTD_compress(z, bound, w->frame.data ? w->frame.data : "", w->frame.len, 3);
    if (ZSTD_isError(zn)) {
        fprintf(stderr, "lode: zstd failed: %s\n", ZSTD_getErrorName(zn));
        abort();
    }
    sealed = util_malloc(zn + REPO_SEAL_EXTRA);
    repo_frame_aad(aad, w->id, w->nframes, final);
    repo_seal(w->keys, aad, sizeof(aad), z, zn, sealed);
    uint32_t n = (uint32_t)(zn + REPO_SEAL_EXTRA);
    len[0] = (uint8_t)n;
    len[1] = (uint8_t)(n >> 8);
    len[2] = (uint8_t)(n >> 16);
    len[3] = (uint8_t)(n >> 24);
    util_buf_append(&w->out, len, 4);
    util_buf_append(&w->out, sealed, n);
    w->nframes++;
    w->frame.len = 0;
    free(z);
    free(sealed);
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
    repo_file_put(&w->frame, f);
    if (w->frame.len >= FRAME_TARGET)
        repo_files_flush(w, false);
    return 0;
}

void repo_files_writer_take(struct repo_files_writer *w, uint8_t **data, size_t *len)
{
    *len = w->out.len;
    *data = (uint8_t *)util_buf_steal(&w->out);
}

void repo_files_writer_finish(struct repo_files_writer *w, uint8_t **data, size_t *len)
{
    repo_files_flush(w, true);
    *len = w->out.len;
    *data = (uint8_t *)util_buf_steal(&w->out);
    repo_files_writer_free(w);
}

void repo_files_writer_free(struct repo_files_writer *w)
{
    util_buf_free(&w->frame);
    util_buf_free(&w->out);
    free(w->last);
    w->last = NULL;
}

/* ---- reader ---- */

/*
 * The n bytes at pos (pos + n <= r->len), fetched into the window when they are not
 * in it: from pos on, r->window bytes or n if more, never past the end.
 */
static const uint8_t *repo_files_bytes(struct repo_files_reader *r, size_t pos, size_t n,
                                       struct util_err *err)
{
    size_t want;
    int rc;
    if (pos >= r->woff && pos - r->woff <= r->wlen && n <= r->wlen - (pos - r->woff))
        return r->data + (pos - r->woff);
    if (r->fetch == NULL)
        return NULL; /* the caller checked the bounds: not reached */
    want = n > r->window ? n : r->window;
    if (want > r->len - pos)
        want = r->len - pos;
    free(r->win);
    r->win = util_malloc(want ? want : 1);
    r->data = r->win;
    r->woff = pos;
    r->wlen = 0;
    if ((rc = r->fetch(r->fetch_arg, pos, want, r->win, err)) != 0) {
        struct util_err e = *err;
        util_err_set(err, rc, "file list of %s: %.400s", r->id, e.msg);
        return NULL;
    }
    r->wlen = want;
    return r->data;
}

static int repo_files_reader_start(struct repo_files_reader *r, const struct repo_keys *k,
                                   const char *id, struct util_err *err)
{
    const uint8_t *magic;
    if (strlen(id) != REPO_ID_LEN)
        return util_err_set(err, UTIL_EINVAL, "file list: bad snapshot id");
    r->keys = k;
    memcpy(r->id, id, REPO_ID_LEN + 1);
    if (r->len < 8)
        return util_err_set(err, UTIL_EIO, "file list of %s: not a file list", id);
    if ((magic = repo_files_bytes(r, 0, 8, err)) == NULL)
        return UTIL_EIO;
    if (memcmp(magic, FILES_MAGIC, 8) != 0)
        return util_err_set(err, UTIL_EIO, "file list of %s: not a file list", id);
    r->pos = 8;
    return 0;
}

int repo_files_reader_init(struct repo_files_reader *r, const struct repo_keys *k, const char *id,
                           const uint8_t *data, size_t len, struct util_err *err)
{
    memset(r, 0, sizeof(*r));
    r->data = data;
    r->len = r->wlen = len;
    return repo_files_reader_start(r, k, id, err);
}

int repo_files_reader_open(struct repo_files_reader *r, const struct repo_keys *k, const char *id,
                           uint64_t len, size_t window, repo_fetch_cb fetch, void *arg,
                           struct util_err *err)
{
    int rc;
    memset(r, 0, sizeof(*r));
    r->window = window ? window : REPO_FILES_WINDOW;
    if (len > SIZE_MAX)
        return util_err_set(err, UTIL_EIO, "file list of %.40s: too large", id);
    r->len = (size_t)len;
    r->fetch = fetch;
    r->fetch_arg = arg;
    if ((rc = repo_files_reader_start(r, k, id, err)) != 0) {
        free(r->win);
        r->win = NULL;
    }
    return rc;
}

/* Opens the next frame; 0 on success, 1 at the end, < 0 on damage. */
static int repo_files_next_frame(struct repo_files_reader *r, struct util_err *err)
{
    uint32_t n;
    uint8_t aad[FRAME_AAD], *z;
    const uint8_t *p;
    unsigned long long size;
    int rc;

    free(r->plain);
    r->plain = NULL;
    r->plen = r->ppos = 0;
    if (r->final) {
        if (r->pos != r->len)
            return util_err_set(err, UTIL_EIO, "file list of %s: bytes after the last frame",
                                r->id);
        return 1;
    }
    if (r->len - r->pos < 4)
        return util_err_set(err, UTIL_EIO, "file list of %s: cut short at frame %u", r->id,
                            r->frame);
    if ((p = repo_files_bytes(r, r->pos, 4, err)) == NULL)
        return UTIL_EIO;
    n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    r->pos += 4;
    if (n < REPO_SEAL_EXTRA || n > r->len - r->pos)
        return util_err_set(err, UTIL_EIO, "file list of %s: frame %u is cut short", r->id,
                            r->frame);
    /* No frame a writer makes is longer (FRAME_MAX plain bytes, compressed): refused before
     * its bytes are fetched or held, which are not authenticated until all are in. */
    if (n > ZSTD_compressBound(FRAME_MAX) + REPO_SEAL_EXTRA)
        return util_err_set(err, UTIL_EIO, "file list of %s: frame %u claims %u bytes", r->id,
                            r->frame, n);
    if ((p = repo_files_bytes(r, r->pos, n, err)) == NULL)
        return UTIL_EIO;
    z = util_malloc(n - REPO_SEAL_EXTRA + 1);
    /* Try as the last frame first only when it ends the object. */
    bool last = r->pos + n == r->len;
    repo_frame_aad(aad, r->id, r->frame, last);
    rc = repo_unseal(r->keys, aad, sizeof(aad), p, n, z, err);
    if (rc != 0) {
        util_err_set(err, rc,
                     "file list of %s: frame %u failed authentication (changed, "
                     "reordered, cut short or wrong key)",
                     r->id, r->frame);
        free(z);
        return rc;
    }
    size = ZSTD_getFrameContentSize(z, n - REPO_SEAL_EXTRA);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > FRAME_MAX) {
        free(z);
        return util_err_set(err, UTIL_EIO, "file list of %s: frame %u has no valid size", r->id,
                            r->frame);
    }
    r->plain = util_malloc(size ? size : 1);
    size_t got = ZSTD_decompress(r->plain, size, z, n - REPO_SEAL_EXTRA);
    free(z);
    if (ZSTD_isError(got) || got != size)
        return util_err_set(err, UTIL_EIO, "file list of %s: frame %u does not decompress", r->id,
                            r->frame);
    r->plen = size;
    r->pos += n;
    r->frame++;
    r->final = last;
    return 0;
}

int repo_files_reader_next(struct repo_files_reader *r, struct repo_file *f, struct util_err *err)
{
    int rc;
    memset(f, 0, sizeof(*f));
    while (r->ppos >= r->plen) {
        if ((rc = repo_files_next_frame(r, err)) != 0)
            return rc > 0 ? 0 : rc;
    }
    struct rd rd = {.p = r->plain, .n = r->plen, .i = r->ppos};
    if (repo_file_get(&rd, f) != 0)
        return util_err_set(err, UTIL_EIO, "file list of %s: a record in frame %u is malformed",
                            r->id, r->frame - 1);
    r->ppos = rd.i;
    if (r->last && repo_path_cmp(r->last, f->path) >= 0) {
        rc = util_err_set(err, UTIL_EIO, "file list of %s: \"%.200s\" is out of order", r->id,
                          f->path);
        repo_file_free(f);
        return rc;
    }
    free(r->last);
    r->last = util_strdup(f->path);
    return 1;
}

void repo_files_reader_free(struct repo_files_reader *r)
{
    free(r->plain);
    free(r->last);
    free(r->win);
    r->plain = NULL;
    r->last = NULL;
    r->win = NULL;
    r->data = NULL;
    r->wlen = 0;
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
