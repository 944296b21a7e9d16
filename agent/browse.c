/*
 * browse: reading a snapshot's file list tree a piece at a time (browse.h): opening a
 * snapshot, fetching and caching metadata chunks, and the cursor (the search for a path,
 * the walk in order). What the commands ask of it is browse_list.c (ls, stat, find,
 * dump); the diff of two trees is browse_diff.c.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "browse.h"
#include "meta.h"

/* ---- opening ---- */

struct browse_find_say {
    struct util_err *err;
    bool said;
};

static void browse_say_cb(const char *line, void *arg)
{
    struct browse_find_say *s = arg;
    if (!s->said)
        util_err_set(s->err, UTIL_EINVAL, "%s", line);
    s->said = true;
}

int browse_open(struct browse *b, struct storage *st, const char *id, struct util_err *err)
{
    struct browse_find_say say = {.err = err};
    struct rx *x = util_calloc(1, sizeof(*x));
    int rc;
    memset(b, 0, sizeof(*b));
    x->st = st;
    x->say_cb = browse_say_cb;
    x->say_arg = &say;
    rc = rx_find(x, id); /* one rule for which snapshot an id names: lode restore's */
    if (rc == 0)
        rc = browse_open_source(b, st, &x->src, id, err);
    else
        err->code = rc;
    free(x);
    return rc;
}

int browse_open_source(struct browse *b, struct storage *st, const struct repo_source *src,
                       const char *id, struct util_err *err)
{
    struct util_err e = {0};
    int rc;
    memset(b, 0, sizeof(*b));
    b->st = st;
    b->keys = &st->config.keys;
    b->src = *src;
    snprintf(b->id, sizeof(b->id), "%s", id);
    if ((rc = storage_get_manifest(st, src, id, b->keys, &b->m, &b->time, &e)) != 0) {
        if (rc == S3_ENOTFOUND)
            return util_err_set(err, AGENT_EABSENT, "no snapshot %s of %s/%s/%s", id, src->ns,
                                src->policy, src->host);
        util_err_set(err, rc, "%s", e.msg);
        return rc == UTIL_EINVAL || rc == UTIL_EIO ? AGENT_EDAMAGED : rc;
    }
    b->open = true;
    return 0;
}

void browse_close(struct browse *b)
{
    browse_cache_free(&b->cache);
    if (b->open)
        repo_manifest_free(&b->m);
    b->open = false;
}

char *browse_path_norm(const char *arg)
{
    return rx_include_norm(arg);
}

/* ---- fetching and the cache ---- */

static int browse_ref_cmp(const void *pa, const void *pb, void *arg)
{
    const struct repo_mref *v = arg;
    const struct repo_mref *a = &v[*(const size_t *)pa], *b = &v[*(const size_t *)pb];
    int r = strcmp(a->run, b->run);
    if (r != 0)
        return r;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* One ranged GET of pack run.seq's bytes [start, end). */
static int browse_get_range(struct browse *b, const struct repo_mref *first, uint64_t start,
                            uint64_t end, char **data, struct util_err *err)
{
    struct s3_opts o = {.range_start = start, .range_len = end - start, .max_bytes = end - start};
    char *key = meta_pack_key(&b->src, first->run, first->seq);
    struct util_err e = {0};
    size_t len = 0;
    int rc;
    b->gets++;
    rc = s3_sync_get(b->st->s3, key, &o, data, &len, NULL, &e);
    if (rc == S3_ENOTFOUND)
        rc = util_err_set(err, AGENT_EDAMAGED, "%s is missing", key);
    else if (rc != 0)
        util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
    else if (len < end - start)
        rc = util_err_set(err, AGENT_EDAMAGED, "%s is shorter than its index says (damaged)", key);
    free(key);
    if (rc != 0) {
        free(*data);
        *data = NULL;
        return rc;
    }
    b->bytes += len;
    return 0;
}

int browse_load(struct browse *b, const struct repo_mref *refs, size_t n, const unsigned *levels,
                uint8_t **plains, bool keep, struct util_err *err)
{
    size_t *order = util_malloc((n ? n : 1) * sizeof(*order)), nwant = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        const struct browse_chunk *c = browse_cache_get(&b->cache, refs[i].hash);
        plains[i] = NULL;
        if (c != NULL) {
            plains[i] = util_malloc(c->len);
            memcpy(plains[i], c->plain, c->len);
        } else {
            order[nwant++] = i;
        }
    }
    /* Neighbours of one pack are joined into one GET, reading through small gaps. */
    qsort_r(order, nwant, sizeof(*order), browse_ref_cmp, (void *)refs);
    for (size_t i = 0; i < nwant && rc == 0;) {
        const struct repo_mref *f = &refs[order[i]];
        uint64_t start = f->offset, end = (uint64_t)f->offset + f->stored;
        size_t j = i + 1;
        while (j < nwant) {
            const struct repo_mref *g = &refs[order[j]];
            uint64_t gend = (uint64_t)g->offset + g->stored;
            if (strcmp(g->run, f->run) != 0 || g->seq != f->seq || g->offset > end + BROWSE_GAP ||
                (gend > end && gend - start > BROWSE_RANGE_MAX))
                break;
            if (gend > end)
                end = gend;
            j++;
        }
        char *data = NULL;
        if ((rc = browse_get_range(b, f, start, end, &data, err)) != 0)
            break;
        for (size_t k = i; k < j && rc == 0; k++) {
            const struct repo_mref *r = &refs[order[k]];
            struct util_err e = {0};
            uint8_t *plain;
            if (repo_meta_open(b->keys, r, (const uint8_t *)data + (r->offset - start), &plain,
                               &e) != 0) {
                rc = util_err_set(err, AGENT_EDAMAGED, "metadata pack %s.%" PRIu32 ".meta: %s",
                                  r->run, r->seq, e.msg);
                break;
            }
            b->chunks++;
            if (keep)
                browse_cache_put(&b->cache, r->hash, plain, r->plain);
            plains[order[k]] = plain;
        }
        free(data);
        i = j;
    }
    free(order);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (plains[i][0] != REPO_TREE_FILES || plains[i][1] != levels[i] ||
            refs[i].plain < REPO_META_HEAD) {
            char hex[2 * REPO_HASH_LEN + 1];
            repo_hex(refs[i].hash, REPO_HASH_LEN, hex);
            rc = util_err_set(err, AGENT_EDAMAGED,
                              "metadata chunk %s in %s.%" PRIu32
                              ".meta: not the file list's level %u (damaged)",
                              hex, refs[i].run, refs[i].seq, levels[i]);
        }
    }
    if (rc != 0) {
        for (size_t i = 0; i < n; i++) {
            free(plains[i]);
            plains[i] = NULL;
        }
    }
    return rc;
}

/* One chunk, through the cache. */
static int browse_load1(struct browse *b, const struct repo_mref *ref, unsigned level,
                        uint8_t **plain, struct util_err *err)
{
    return browse_load(b, ref, 1, &level, plain, true, err);
}

/* ---- the cursor: a leaf and the index chunks above it ---- */

void browse_cursor_free(struct browse_cursor *c)
{
    for (unsigned l = 0; l < REPO_TREE_LEVELS; l++) {
        free(c->lv[l].refs);
        c->lv[l].refs = NULL;
    }
    free(c->leaf);
    c->leaf = NULL;
    if (c->reading)
        repo_files_reader_free(&c->r);
    c->reading = false;
}

/* Fetches the chunks refs[0..n) of level that the cursor does not pass over and the
 * cache does not hold, into the cache: one ranged GET per run of them in a pack. */
static int browse_prefetch(struct browse *b, const struct browse_cursor *c,
                           const struct repo_mref *refs, size_t n, unsigned level,
                           struct util_err *err)
{
    size_t k = 0;
    struct repo_mref *want = util_malloc((n ? n : 1) * sizeof(*want));
    for (size_t i = 0; i < n; i++)
        if (!browse_skipped(c->skip, refs[i].hash) &&
            browse_cache_get(&b->cache, refs[i].hash) == NULL)
            want[k++] = refs[i];
    unsigned *levels = util_calloc(k ? k : 1, sizeof(*levels));
    uint8_t **plains = util_calloc(k ? k : 1, sizeof(*plains));
    for (size_t i = 0; i < k; i++)
        levels[i] = level;
    int rc = browse_load(b, want, k, levels, plains, true, err);
    for (size_t i = 0; i < k; i++)
        free(plains[i]);
    free(plains);
    free(levels);
    free(want);
    return rc;
}

/*
 * Under an index chunk of level 2, its index chunks of level 1 and then all their
 * leaves are fetched together (two rounds of ranged GETs): about 300 leaves of about
 * 1.3 KiB, 400 KB. The leaves are small so that one changed file costs little
 * (docs/repository.md, "What a snapshot costs"); fetching only one level-1 chunk's
 * leaves (about 17) at a time would make a long listing one GET per 20 KB. A cursor
 * passing over subdirectories (c->until) does not: it reads only the chunks it needs.
 */
static int browse_prefetch_subtree(struct browse *b, const struct browse_cursor *c,
                                   const struct repo_mref *refs, size_t n, struct util_err *err)
{
    struct repo_mref *leaves = NULL, *kids;
    size_t nleaves = 0, cap = 0, nkids;
    uint8_t *plain;
    int rc;
    if ((rc = browse_prefetch(b, c, refs, n, 1, err)) != 0)
        return rc;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (browse_skipped(c->skip, refs[i].hash))
            continue;
        if ((rc = browse_load1(b, &refs[i], 1, &plain, err)) != 0)
            break;
        rc = repo_meta_index(plain, refs[i].plain, &kids, &nkids, err);
        free(plain);
        if (rc != 0) {
            rc = util_err_set(err, AGENT_EDAMAGED, "the file list of snapshot %s: %s", b->id,
                              err->msg);
            break;
        }
        leaves = util_grow(leaves, &cap, nleaves + nkids, sizeof(*leaves));
        if (nkids > 0)
            memcpy(leaves + nleaves, kids, nkids * sizeof(*kids));
        nleaves += nkids;
        free(kids);
    }
    if (rc == 0)
        rc = browse_prefetch(b, c, leaves, nleaves, 0, err);
    free(leaves);
    return rc;
}

/* Opens the index chunk ref at level (at least 1) into the cursor, at its first child.
 * The leaves under a lowest index chunk are fetched together (those not skipped), and
 * under one of level 2 its whole subtree (browse_prefetch_subtree). */
static int browse_enter(struct browse *b, struct browse_cursor *c, const struct repo_mref *ref,
                        unsigned level, struct util_err *err)
{
    uint8_t *plain;
    int rc;
    if ((rc = browse_load1(b, ref, level, &plain, err)) != 0)
        return rc;
    free(c->lv[level].refs);
    rc = repo_meta_index(plain, ref->plain, &c->lv[level].refs, &c->lv[level].n, err);
    free(plain);
    if (rc != 0)
        return util_err_set(err, AGENT_EDAMAGED, "the file list of snapshot %s: %s", b->id,
                            err->msg);
    if (c->lv[level].n == 0)
        return util_err_set(err, AGENT_EDAMAGED,
                            "the file list of snapshot %s: an index chunk is empty", b->id);
    c->lv[level].i = 0;
    if (level == 2 && c->until == NULL)
        rc = browse_prefetch_subtree(b, c, c->lv[2].refs, c->lv[2].n, err);
    else if (level == 1)
        rc = browse_prefetch(b, c, c->lv[1].refs, c->lv[1].n, 0, err);
    return rc;
}

/* Opens the leaf the cursor's lowest index chunk points at (or the root leaf). */
static int browse_open_leaf(struct browse *b, struct browse_cursor *c, const struct repo_mref *ref,
                            struct util_err *err)
{
    int rc;
    if (c->reading)
        repo_files_reader_free(&c->r);
    c->reading = false;
    free(c->leaf);
    c->leaf = NULL;
    if ((rc = browse_load1(b, ref, 0, &c->leaf, err)) != 0)
        return rc;
    memcpy(c->leaf_hash, ref->hash, REPO_HASH_LEN);
    repo_files_reader_init(&c->r, c->leaf + REPO_META_HEAD, ref->plain - REPO_META_HEAD);
    c->reading = true;
    return 0;
}

/* The path of the first record under ref (at level): *path owned, NULL for an empty
 * leaf. */
static int browse_first_path(struct browse *b, const struct repo_mref *ref, unsigned level,
                             char **path, struct util_err *err)
{
    struct repo_mref cur = *ref;
    int rc;
    *path = NULL;
    for (;;) {
        uint8_t *plain;
        if ((rc = browse_load1(b, &cur, level, &plain, err)) != 0)
            return rc;
        if (level == 0) {
            struct repo_files_reader r;
            struct repo_file f;
            repo_files_reader_init(&r, plain + REPO_META_HEAD, cur.plain - REPO_META_HEAD);
            rc = repo_files_reader_next(&r, &f, err);
            repo_files_reader_free(&r);
            free(plain);
            if (rc == 1) {
                *path = f.path;
                f.path = NULL;
                repo_file_free(&f);
                return 0;
            }
            return rc == 0 ? 0
                           : util_err_set(err, AGENT_EDAMAGED, "the file list of snapshot %s: %s",
                                          b->id, err->msg);
        }
        struct repo_mref *refs;
        size_t n;
        rc = repo_meta_index(plain, cur.plain, &refs, &n, err);
        free(plain);
        if (rc != 0 || n == 0) {
            free(refs);
            return util_err_set(err, AGENT_EDAMAGED,
                                "the file list of snapshot %s: an index chunk is malformed", b->id);
        }
        cur = refs[0];
        free(refs);
        level--;
    }
}

int browse_seek(struct browse *b, struct browse_cursor *c, const char *path, struct util_err *err)
{
    const struct repo_root *root = &b->m.files_root;
    struct repo_mref node = root->ref;
    int rc;
    c->depth = root->depth;
    for (unsigned level = root->depth; level > 0; level--) {
        if ((rc = browse_enter(b, c, &node, level, err)) != 0)
            return rc;
        /* The last child whose first path is at or before path (the first child when
         * none is, or when path is NULL: the leftmost leaf). */
        size_t lo = 0, hi = c->lv[level].n - 1;
        while (path != NULL && lo < hi) {
            size_t mid = lo + (hi - lo + 1) / 2;
            char *first;
            if ((rc = browse_first_path(b, &c->lv[level].refs[mid], level - 1, &first, err)) != 0)
                return rc;
            if (first != NULL && repo_path_cmp(first, path) <= 0)
                lo = mid;
            else
                hi = mid - 1;
            free(first);
        }
        c->lv[level].i = lo;
        node = c->lv[level].refs[lo];
    }
    return browse_open_leaf(b, c, &node, err);
}

/* Passes over the children of the level-l index chunk, from the cursor's on, whose
 * records all come before c->until: those whose next sibling's first path is at or
 * before it. Each check reads the sibling's leftmost chunks, which the cursor reads next
 * when it does not pass over it. */
static int browse_pass(struct browse *b, struct browse_cursor *c, unsigned l, struct util_err *err)
{
    while (c->until != NULL && c->lv[l].i + 1 < c->lv[l].n) {
        char *first;
        int rc = browse_first_path(b, &c->lv[l].refs[c->lv[l].i + 1], l - 1, &first, err);
        if (rc != 0)
            return rc;
        bool before = first != NULL && repo_path_cmp(first, c->until) <= 0;
        free(first);
        if (!before)
            break;
        c->lv[l].i++;
    }
    return 0;
}

/* The next leaf in order (leaves in the skip list, and subtrees wholly before c->until,
 * are passed over): 1, 0 at the end. */
static int browse_next_leaf(struct browse *b, struct browse_cursor *c, struct util_err *err)
{
    int rc;
    for (;;) {
        unsigned l = 1;
        while (l <= c->depth && c->lv[l].i + 1 >= c->lv[l].n)
            l++;
        if (l > c->depth)
            return 0;
        c->lv[l].i++;
        if ((rc = browse_pass(b, c, l, err)) != 0)
            return rc;
        for (; l > 1; l--) {
            if ((rc = browse_enter(b, c, &c->lv[l].refs[c->lv[l].i], l - 1, err)) != 0 ||
                (rc = browse_pass(b, c, l - 1, err)) != 0)
                return rc;
        }
        const struct repo_mref *leaf = &c->lv[1].refs[c->lv[1].i];
        if (browse_skipped(c->skip, leaf->hash))
            continue;
        if ((rc = browse_open_leaf(b, c, leaf, err)) != 0)
            return rc;
        return 1;
    }
}

int browse_next(struct browse *b, struct browse_cursor *c, struct repo_file *f,
                struct util_err *err)
{
    int rc;
    for (;;) {
        if (c->reading) {
            if ((rc = repo_files_reader_next(&c->r, f, err)) == 1)
                return 1;
            if (rc < 0)
                return util_err_set(err, AGENT_EDAMAGED, "the file list of snapshot %s: %s", b->id,
                                    err->msg);
            repo_files_reader_free(&c->r);
            c->reading = false;
            if (c->leaf_done != NULL)
                c->leaf_done(c->leaf_arg, c->leaf_hash);
        }
        if (c->depth == 0 || (rc = browse_next_leaf(b, c, err)) == 0)
            return 0;
        if (rc < 0)
            return rc;
    }
}
