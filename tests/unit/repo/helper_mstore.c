/* mstore.h: metadata chunks stored in memory for the repo tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mstore.h"

/* A store in memory: every chunk by name, its sealed bytes at its place. */

static const struct repo_mref *mstore_find(const struct mstore *s, const uint8_t *hash)
{
    for (size_t i = 0; i < s->n; i++)
        if (memcmp(s->refs[i].hash, hash, REPO_HASH_LEN) == 0)
            return &s->refs[i];
    return NULL;
}

int mstore_cb(void *arg, const uint8_t hash[REPO_HASH_LEN], const uint8_t *plain, size_t len,
              struct repo_mref *ref, struct util_err *err)
{
    struct mstore *s = arg;
    const struct repo_mref *have = mstore_find(s, hash);
    uint8_t *sealed, flags;
    size_t slen;
    if (have) {
        *ref = *have;
        return 0;
    }
    repo_blob_seal(s->k, 3, hash, plain, len, &sealed, &slen, &flags);
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->refs = util_realloc(s->refs, s->cap * sizeof(*s->refs));
        s->sealed = util_realloc(s->sealed, s->cap * sizeof(*s->sealed));
    }
    memset(ref, 0, sizeof(*ref));
    memcpy(ref->hash, hash, REPO_HASH_LEN);
    memcpy(ref->run, s->run, sizeof(ref->run));
    ref->seq = 0;
    ref->offset = (uint32_t)s->n; /* the index stands for the place */
    ref->stored = (uint32_t)slen;
    ref->plain = (uint32_t)len;
    ref->flags = flags;
    s->refs[s->n] = *ref;
    s->sealed[s->n++] = sealed;
    s->new_chunks++;
    s->new_bytes += slen;
    return 0;
}

int mstore_fetch(void *arg, const struct repo_mref *ref, uint8_t *sealed, struct util_err *err)
{
    struct mstore *s = arg;
    if (ref->offset >= s->n || strcmp(s->refs[ref->offset].run, ref->run) != 0)
        return util_err_set(err, UTIL_EIO, "no such chunk");
    memcpy(sealed, s->sealed[ref->offset], ref->stored);
    return 0;
}

void mstore_free(struct mstore *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->sealed[i]);
    free(s->sealed);
    free(s->refs);
}

struct repo_keys mstore_keys(uint8_t fill)
{
    struct repo_keys k;
    uint8_t master[32];
    memset(master, fill, sizeof(master));
    repo_keys_derive(&k, master);
    return k;
}

void mstore_tree_begin(struct mstore_tree *t)
{
    memset(t, 0, sizeof(*t));
    t->k = mstore_keys(7);
    t->ms.k = &t->k;
    snprintf(t->ms.run, sizeof(t->ms.run), "20261202T170127Z-9f3c2a1b7d4e6058");
    repo_tree_writer_init(&t->w, REPO_TREE_CHUNKS, &t->k, mstore_cb, &t->ms);
}

int mstore_tree_end(struct mstore_tree *t, struct util_err *err)
{
    int rc = repo_tree_writer_finish(&t->w, &t->root, err);
    repo_tree_writer_free(&t->w);
    return rc;
}
