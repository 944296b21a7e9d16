/*
 * browse_diff: the difference of two snapshots' file lists (browse.h), reading only
 * the chunks the two trees do not share.
 *
 * A chunk's name is the hash of its records, and a path is in a snapshot at most once,
 * so a chunk both trees hold holds the same entries in both: it is dropped from both
 * sides unread. What is left is expanded level by level, the highest first (so that
 * chunks are compared with chunks of their own level), and dropped again, until only
 * leaves are left; their records are merged in path order. Each level's chunks of one
 * side are fetched together (browse_load: one ranged GET per run of neighbours).
 */
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "browse.h"

unsigned browse_what(const struct repo_file *a, const struct repo_file *b)
{
    unsigned w = 0;
    if (a->type != b->type)
        w |= BROWSE_TYPE;
    if (a->size != b->size || a->nchunks != b->nchunks ||
        (a->nchunks > 0 && memcmp(a->chunks, b->chunks, a->nchunks * REPO_HASH_LEN) != 0))
        w |= BROWSE_CONTENT;
    if (a->mode != b->mode)
        w |= BROWSE_MODE;
    if (a->uid != b->uid || a->gid != b->gid)
        w |= BROWSE_OWNER;
    if (a->mtime_sec != b->mtime_sec || a->mtime_nsec != b->mtime_nsec)
        w |= BROWSE_MTIME;
    if (strcmp(a->target ? a->target : "", b->target ? b->target : "") != 0)
        w |= BROWSE_TARGET;
    if (strcmp(a->link ? a->link : "", b->link ? b->link : "") != 0)
        w |= BROWSE_LINK;
    bool xa = a->nxattrs != b->nxattrs;
    for (size_t i = 0; !xa && i < a->nxattrs; i++)
        xa = strcmp(a->xattrs[i].name, b->xattrs[i].name) != 0 ||
             a->xattrs[i].len != b->xattrs[i].len ||
             (a->xattrs[i].len > 0 &&
              memcmp(a->xattrs[i].value, b->xattrs[i].value, a->xattrs[i].len) != 0);
    if (xa)
        w |= BROWSE_XATTRS;
    if (a->ctime_sec != b->ctime_sec || a->ctime_nsec != b->ctime_nsec || a->ino != b->ino ||
        a->rdev != b->rdev)
        w |= BROWSE_INODE;
    return w;
}

const char *browse_what_name(unsigned bit)
{
    static const char *const names[BROWSE_WHAT_N] = {
        "type", "content", "mode", "owner", "mtime", "target", "link", "xattrs", "inode"};
    for (unsigned i = 0; i < BROWSE_WHAT_N; i++)
        if (bit == 1u << i)
            return names[i];
    return "?";
}

/* One side's chunks still to compare, in tree order. */
struct browse_side {
    struct browse *b;
    struct repo_mref *refs;
    unsigned *levels;
    size_t n, cap;
};

static void browse_side_add(struct browse_side *s, const struct repo_mref *ref, unsigned level)
{
    if (s->n + 1 > s->cap) {
        size_t cap = s->cap;
        s->refs = util_grow(s->refs, &cap, s->n + 1, sizeof(*s->refs));
        s->levels = util_grow(s->levels, &s->cap, s->n + 1, sizeof(*s->levels));
    }
    s->refs[s->n] = *ref;
    s->levels[s->n++] = level;
}

static void browse_side_free(struct browse_side *s)
{
    free(s->refs);
    free(s->levels);
    memset(s, 0, sizeof(*s));
}

struct browse_name {
    const uint8_t *hash;
    size_t side, i;
};

static int browse_name_cmp(const void *pa, const void *pb)
{
    const struct browse_name *a = pa, *b = pb;
    int r = memcmp(a->hash, b->hash, REPO_HASH_LEN);
    if (r != 0)
        return r;
    return a->side < b->side ? -1 : a->side > b->side;
}

/* Drops every chunk both sides hold (pure). */
static void browse_drop_common(struct browse_side s[2])
{
    size_t n = s[0].n + s[1].n, k = 0;
    struct browse_name *v = util_malloc((n ? n : 1) * sizeof(*v));
    bool *drop[2];
    for (size_t side = 0; side < 2; side++) {
        drop[side] = util_calloc(s[side].n + 1, sizeof(bool));
        for (size_t i = 0; i < s[side].n; i++)
            v[k++] = (struct browse_name){s[side].refs[i].hash, side, i};
    }
    qsort(v, n, sizeof(*v), browse_name_cmp);
    for (size_t i = 0; i + 1 < n; i++) {
        if (v[i].side == 0 && v[i + 1].side == 1 &&
            memcmp(v[i].hash, v[i + 1].hash, REPO_HASH_LEN) == 0) {
            drop[0][v[i].i] = true;
            drop[1][v[i + 1].i] = true;
        }
    }
    for (size_t side = 0; side < 2; side++) {
        size_t out = 0;
        for (size_t i = 0; i < s[side].n; i++) {
            if (drop[side][i])
                continue;
            s[side].refs[out] = s[side].refs[i];
            s[side].levels[out++] = s[side].levels[i];
        }
        s[side].n = out;
        free(drop[side]);
    }
    free(v);
}

/* Replaces the side's chunks of level by their children. */
static int browse_expand(struct browse_side *s, unsigned level, struct util_err *err)
{
    struct browse_side next = {.b = s->b};
    struct repo_mref *want = util_malloc((s->n ? s->n : 1) * sizeof(*want));
    unsigned *levels = util_malloc((s->n ? s->n : 1) * sizeof(*levels));
    uint8_t **plains = util_calloc(s->n ? s->n : 1, sizeof(*plains));
    size_t k = 0;
    int rc;
    for (size_t i = 0; i < s->n; i++) {
        if (s->levels[i] == level) {
            want[k] = s->refs[i];
            levels[k++] = level;
        }
    }
    rc = browse_load(s->b, want, k, levels, plains, false, err);
    for (size_t i = 0, j = 0; i < s->n && rc == 0; i++) {
        if (s->levels[i] != level) {
            browse_side_add(&next, &s->refs[i], s->levels[i]);
            continue;
        }
        struct repo_mref *refs;
        size_t n;
        if (repo_meta_index(plains[j], want[j].plain, &refs, &n, err) != 0) {
            rc = util_err_set(err, AGENT_EDAMAGED, "the file list of snapshot %s: %s", s->b->id,
                              err->msg);
            break;
        }
        j++;
        for (size_t c = 0; c < n; c++)
            browse_side_add(&next, &refs[c], level - 1);
        free(refs);
    }
    for (size_t i = 0; i < k; i++)
        free(plains[i]);
    free(plains);
    free(levels);
    free(want);
    if (rc != 0) {
        browse_side_free(&next);
        return rc;
    }
    browse_side_free(s);
    *s = next;
    return 0;
}

/* The records of a side's leaves, in order. */
struct browse_stream {
    struct browse *b;
    uint8_t **plains;
    const struct repo_mref *refs;
    size_t n, i;
    struct repo_files_reader r;
    bool reading;
};

static int browse_stream_next(struct browse_stream *st, struct repo_file *f, struct util_err *err)
{
    for (;;) {
        if (st->reading) {
            int rc = repo_files_reader_next(&st->r, f, err);
            if (rc == 1)
                return 1;
            repo_files_reader_free(&st->r);
            st->reading = false;
            if (rc < 0)
                return util_err_set(err, AGENT_EDAMAGED, "the file list of snapshot %s: %s",
                                    st->b->id, err->msg);
        }
        if (st->i >= st->n)
            return 0;
        repo_files_reader_init(&st->r, st->plains[st->i] + REPO_META_HEAD,
                               st->refs[st->i].plain - REPO_META_HEAD);
        st->reading = true;
        st->i++;
    }
}

/* Merges the records of the leaves left on both sides. */
static int browse_merge(struct browse_side s[2], browse_diff_cb cb, void *arg, struct util_err *err)
{
    struct browse_stream st[2] = {{0}};
    struct repo_file f[2];
    int have[2], rc = 0;
    for (size_t side = 0; side < 2 && rc == 0; side++) {
        st[side].b = s[side].b;
        st[side].refs = s[side].refs;
        st[side].n = s[side].n;
        st[side].plains = util_calloc(s[side].n ? s[side].n : 1, sizeof(uint8_t *));
        rc = browse_load(s[side].b, s[side].refs, s[side].n, s[side].levels, st[side].plains, false,
                         err);
    }
    if (rc != 0)
        goto out;
    if ((have[0] = browse_stream_next(&st[0], &f[0], err)) < 0) {
        rc = have[0];
        goto out;
    }
    if ((have[1] = browse_stream_next(&st[1], &f[1], err)) < 0) {
        rc = have[1];
        if (have[0] == 1)
            repo_file_free(&f[0]);
        goto out;
    }
    while (rc == 0 && (have[0] == 1 || have[1] == 1)) {
        int cmp = have[0] != 1 ? 1 : have[1] != 1 ? -1 : repo_path_cmp(f[0].path, f[1].path);
        bool adv[2] = {cmp <= 0, cmp >= 0};
        if (cmp < 0)
            rc = cb(arg, &f[0], NULL, 0);
        else if (cmp > 0)
            rc = cb(arg, NULL, &f[1], 0);
        else {
            unsigned w = browse_what(&f[0], &f[1]);
            if (w != 0)
                rc = cb(arg, &f[0], &f[1], w);
        }
        for (size_t side = 0; side < 2; side++) {
            if (!adv[side] && rc == 0)
                continue;
            repo_file_free(&f[side]);
            have[side] = 0;
            if (rc == 0 && adv[side] &&
                (have[side] = browse_stream_next(&st[side], &f[side], err)) < 0)
                rc = have[side];
        }
    }
    for (size_t side = 0; side < 2; side++)
        if (have[side] == 1)
            repo_file_free(&f[side]);
out:
    for (size_t side = 0; side < 2; side++) {
        if (st[side].reading)
            repo_files_reader_free(&st[side].r);
        for (size_t i = 0; st[side].plains != NULL && i < st[side].n; i++)
            free(st[side].plains[i]);
        free(st[side].plains);
    }
    return rc;
}

int browse_diff(struct browse *a, struct browse *b, browse_diff_cb cb, void *arg,
                struct util_err *err)
{
    struct browse_side s[2] = {{.b = a}, {.b = b}};
    int rc = 0;
    browse_side_add(&s[0], &a->m.files_root.ref, a->m.files_root.depth);
    browse_side_add(&s[1], &b->m.files_root.ref, b->m.files_root.depth);
    for (;;) {
        browse_drop_common(s);
        unsigned top = 0;
        for (size_t side = 0; side < 2; side++)
            for (size_t i = 0; i < s[side].n; i++)
                if (s[side].levels[i] > top)
                    top = s[side].levels[i];
        if (top == 0)
            break;
        for (size_t side = 0; side < 2 && rc == 0; side++)
            rc = browse_expand(&s[side], top, err);
        if (rc != 0)
            goto out;
    }
    rc = browse_merge(s, cb, arg, err);
out:
    browse_side_free(&s[0]);
    browse_side_free(&s[1]);
    return rc;
}
