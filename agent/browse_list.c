/*
 * browse_list: the questions asked of one snapshot (browse.h): one path, a directory's
 * entries, the matches of a pattern, and one file's bytes, over the cursor of browse.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "browse.h"
#include "glob/glob.h"
#include "meta.h"

/* ---- one path, a directory ---- */

/* path is p or under it. */
static bool browse_under(const char *path, const char *p)
{
    size_t n = strlen(p);
    if (n == 1)
        return path[0] == '/';
    return strncmp(path, p, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int browse_stat(struct browse *b, const char *path, struct repo_file *out, struct util_err *err)
{
    struct browse_cursor c = {0};
    int rc = browse_seek(b, &c, path, err);
    while (rc == 0 && (rc = browse_next(b, &c, out, err)) == 1) {
        int cmp = repo_path_cmp(out->path, path);
        rc = 0;
        if (cmp == 0) {
            rc = 0;
            goto out;
        }
        repo_file_free(out);
        if (cmp > 0)
            break;
    }
    if (rc >= 0)
        rc = util_err_set(err, AGENT_EABSENT, "snapshot %s has no %s", b->id, path);
out:
    browse_cursor_free(&c);
    return rc;
}

int browse_ls(struct browse *b, const char *path, bool recursive, browse_entry_cb cb, void *arg,
              struct util_err *err)
{
    struct browse_cursor c = {0};
    struct repo_file f;
    char *child = NULL; /* the last entry of path given out, for one not recorded */
    char *until = NULL; /* the end of the subdirectory being passed through */
    size_t plen = strlen(path);
    bool found = plen == 1; /* "/" is there even in an empty snapshot */
    int rc = browse_seek(b, &c, path, err);

    while (rc == 0 && (rc = browse_next(b, &c, &f, err)) == 1) {
        int cmp = repo_path_cmp(f.path, path);
        rc = 0;
        if (cmp < 0) {
            repo_file_free(&f);
            continue;
        }
        if (cmp == 0) {
            found = true;
            if (f.type != REPO_FT_DIR) { /* a file: its own record */
                rc = cb(arg, &f);
                repo_file_free(&f);
                break;
            }
            repo_file_free(&f);
            continue;
        }
        if (!browse_under(f.path, path)) {
            repo_file_free(&f);
            break;
        }
        found = true;
        /* The entry's name in path, and whether it is directly in path. */
        const char *name = f.path + (plen == 1 ? 1 : plen + 1);
        const char *slash = strchr(name, '/');
        if (!recursive && slash != NULL) {
            /* Inside a subdirectory: the leaves wholly inside it need not be read. "\1"
             * after its path sorts after everything under it and before its next
             * sibling (repo_path_cmp). */
            size_t clen = (size_t)(slash - f.path);
            if (until == NULL || strncmp(until, f.path, clen) != 0 || until[clen] != '\1') {
                free(until);
                until = util_malloc(clen + 2);
                memcpy(until, f.path, clen);
                until[clen] = '\1';
                until[clen + 1] = '\0';
                c.until = until;
            }
        }
        if (recursive || slash == NULL) {
            rc = cb(arg, &f);
            free(child);
            child = util_strdup(f.path);
        } else if (child == NULL || strncmp(child, f.path, (size_t)(slash - f.path)) != 0 ||
                   child[slash - f.path] != '\0') {
            /* A directory above a policy's path that the backup did not record. */
            struct repo_file d = {.type = REPO_FT_DIR};
            free(child);
            child = util_strndup(f.path, (size_t)(slash - f.path));
            d.path = child;
            d.target = (char *)"";
            d.link = (char *)"";
            rc = cb(arg, &d);
        }
        repo_file_free(&f);
        if (rc != 0)
            break;
    }
    if (rc == 0 && !found)
        rc = util_err_set(err, AGENT_EABSENT, "snapshot %s has no %s", b->id, path);
    free(child);
    browse_cursor_free(&c);
    free(until);
    return rc;
}

/* ---- find ---- */

bool browse_skipped(const struct browse_skip *s, const uint8_t *hash)
{
    if (s == NULL)
        return false;
    size_t lo = 0, hi = s->nsorted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = memcmp(s->v[mid], hash, REPO_HASH_LEN);
        if (r == 0)
            return true;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static int browse_hash_cmp(const void *a, const void *b)
{
    return memcmp(a, b, REPO_HASH_LEN);
}

void browse_skip_free(struct browse_skip *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

struct browse_find_state {
    struct browse_skip *skip;
    bool matched; /* in the leaf being read */
};

static void browse_leaf_done_cb(void *arg, const uint8_t *hash)
{
    struct browse_find_state *fs = arg;
    if (!fs->matched && fs->skip != NULL) {
        fs->skip->v = util_grow(fs->skip->v, &fs->skip->cap, fs->skip->n + 1, REPO_HASH_LEN);
        memcpy(fs->skip->v[fs->skip->n++], hash, REPO_HASH_LEN);
    }
    fs->matched = false;
}

/* A pattern without glob characters: one path. */
static bool browse_plain(const char *pattern)
{
    return pattern[0] == '/' && strpbrk(pattern, "*?[\\") == NULL;
}

int browse_find(struct browse *b, const char *pattern, struct browse_skip *skip, browse_entry_cb cb,
                void *arg, struct util_err *err)
{
    struct browse_cursor c = {0};
    struct browse_find_state fs = {.skip = skip};
    struct repo_file f;
    int rc;

    if (browse_plain(pattern)) {
        char *p = browse_path_norm(pattern);
        if (p == NULL)
            return util_err_set(err, UTIL_EINVAL, "%s: give an absolute path without . or ..",
                                pattern);
        rc = browse_stat(b, p, &f, err);
        free(p);
        if (rc == AGENT_EABSENT)
            return 0;
        if (rc == 0) {
            rc = cb(arg, &f);
            repo_file_free(&f);
        }
        return rc;
    }
    if ((rc = glob_check(pattern, strlen(pattern), err)) != 0)
        return rc;
    c.skip = skip;
    c.leaf_done = browse_leaf_done_cb;
    c.leaf_arg = &fs;
    /* The leftmost leaf, unless it was searched already. */
    rc = browse_seek(b, &c, NULL, err);
    if (rc == 0 && c.depth > 0 && browse_skipped(skip, c.leaf_hash)) {
        repo_files_reader_free(&c.r);
        c.reading = false;
    }
    while (rc == 0 && (rc = browse_next(b, &c, &f, err)) == 1) {
        rc = 0;
        if (glob_match(pattern, f.path, f.type == REPO_FT_DIR)) {
            fs.matched = true;
            rc = cb(arg, &f);
        }
        repo_file_free(&f);
    }
    browse_cursor_free(&c);
    if (skip != NULL && skip->n > 0) {
        qsort(skip->v, skip->n, REPO_HASH_LEN, browse_hash_cmp);
        skip->nsorted = skip->n;
    }
    return rc;
}

/* ---- dump ---- */

int browse_dump(struct browse *b, const char *path, browse_data_cb cb, void *arg,
                struct util_err *err)
{
    struct repo_chunkset set = {0};
    struct repo_file f;
    struct meta_src ms;
    struct util_err e = {0};
    uint8_t *plain = NULL;
    int rc;

    if ((rc = browse_stat(b, path, &f, err)) != 0)
        return rc;
    if (f.type == REPO_FT_DIR) {
        rc = util_err_set(err, BROWSE_EISDIR, "%s is a directory in snapshot %s", path, b->id);
        goto out_file;
    }
    if (f.type != REPO_FT_FILE) {
        rc = util_err_set(err, UTIL_EINVAL, "%s is not a regular file in snapshot %s (type %c)",
                          path, b->id, (char)f.type);
        goto out_file;
    }
    meta_src_init(&ms, b->st, &b->src);
    rc = meta_load_chunkset(&ms, b->keys, &b->m.chunks_root, &set, &e);
    b->gets += ms.gets;
    b->bytes += ms.bytes;
    meta_src_free(&ms);
    if (rc != 0) {
        util_err_set(err, rc, "the chunk set of snapshot %s: %s", b->id, e.msg);
        rc = rc == S3_ENOTFOUND || rc == UTIL_EIO || rc == UTIL_EINVAL ? AGENT_EDAMAGED : rc;
        goto out_file;
    }
    for (size_t i = 0; i < f.nchunks && rc == 0; i++) {
        const struct repo_chunk *ch = repo_chunkset_find(&set, f.chunks[i]);
        char hex[2 * REPO_HASH_LEN + 1];
        if (ch == NULL) {
            repo_hex(f.chunks[i], REPO_HASH_LEN, hex);
            rc = util_err_set(err, AGENT_EDAMAGED,
                              "damaged: chunk %s of %s is not in snapshot %s's chunk set", hex,
                              path, b->id);
            break;
        }
        struct repo_key k = {.kind = REPO_KEY_PACK, .src = b->src};
        struct s3_opts o = {
            .range_start = ch->offset, .range_len = ch->stored, .max_bytes = ch->stored};
        char *data = NULL, *key;
        size_t len = 0;
        memcpy(k.pack, set.packs[ch->pack], REPO_HASH_LEN);
        key = repo_key_build(&k);
        b->gets++;
        rc = s3_sync_get(b->st->s3, key, &o, &data, &len, NULL, &e);
        if (rc == S3_ENOTFOUND) {
            rc = util_err_set(err, AGENT_EDAMAGED, "damaged: %s is missing", key);
        } else if (rc != 0) {
            util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
        } else if (len < ch->stored) {
            rc = util_err_set(err, AGENT_EDAMAGED, "damaged: %s is shorter than its table says",
                              key);
        } else {
            b->bytes += len;
            plain = util_malloc(ch->plain ? ch->plain : 1);
            if (repo_blob_open(b->keys, ch, (const uint8_t *)data, plain, &e) != 0) {
                repo_hex(ch->hash, REPO_HASH_LEN, hex);
                rc =
                    util_err_set(err, AGENT_EDAMAGED, "damaged: %s: chunk %s: %s", key, hex, e.msg);
            } else {
                rc = cb(arg, plain, ch->plain);
            }
            free(plain);
        }
        free(data);
        free(key);
    }
    repo_chunkset_free(&set);
out_file:
    repo_file_free(&f);
    return rc;
}
