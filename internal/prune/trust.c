/*
 * trust: the listed objects a forget may believe, and what it read of them (trust.h).
 */
#include "prune/trust.h"

#include <stdlib.h>
#include <string.h>

/* An object as listed, or as read with its verdict (why: NULL when good). */
struct prune_seen {
    char *etag;
    uint64_t size;
    bool good;
    char *why;
};

static void prune_seen_free(struct prune_seen *s)
{
    if (s == NULL)
        return;
    free(s->etag);
    free(s->why);
    free(s);
}

static void prune_trust_clear(struct util_map *m)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(m, &it, &k, &v))
        prune_seen_free(v);
    util_map_close(m);
    util_map_init(m);
}

void prune_trust_init(struct prune_trust *t)
{
    memset(t, 0, sizeof(*t));
    util_map_init(&t->seen);
    util_map_init(&t->listed);
}

void prune_trust_begin(struct prune_trust *t, const char *scope)
{
    prune_trust_clear(&t->listed);
    if (t->scope == NULL || strcmp(t->scope, scope) != 0) {
        prune_trust_clear(&t->seen);
        free(t->scope);
        t->scope = util_strdup(scope);
    }
}

void prune_trust_listed(struct prune_trust *t, const char *key, const char *etag, uint64_t size)
{
    struct repo_key k;
    if (repo_key_parse(key, &k, NULL) != 0 ||
        (k.kind != REPO_KEY_MANIFEST && k.kind != REPO_KEY_PINNED))
        return;
    struct prune_seen *s = util_calloc(1, sizeof(*s));
    s->etag = util_strdup(etag != NULL ? etag : "");
    s->size = size;
    prune_seen_free(util_map_set(&t->listed, key, s));
}

enum prune_verdict prune_trust_get(const struct prune_trust *t, const char *key, const char **why)
{
    const struct prune_seen *l = util_map_get(&t->listed, key);
    const struct prune_seen *s = util_map_get(&t->seen, key);
    *why = NULL;
    if (l != NULL && l->size > PRUNE_OBJECT_MAX) {
        *why = "it is larger than any manifest or pin lode writes";
        return PRUNE_BAD;
    }
    /* Without an ETag nothing tells the object read from another of the same size. */
    if (l == NULL || s == NULL || l->etag[0] == '\0' || strcmp(l->etag, s->etag) != 0 ||
        l->size != s->size)
        return PRUNE_UNKNOWN;
    *why = s->why;
    return s->good ? PRUNE_GOOD : PRUNE_BAD;
}

void prune_trust_set(struct prune_trust *t, const char *key, const char *etag, uint64_t size,
                     bool good, const char *why)
{
    const struct prune_seen *l = util_map_get(&t->listed, key);
    if (l == NULL || etag == NULL || etag[0] == '\0' || strcmp(l->etag, etag) != 0 ||
        l->size != size)
        return; /* changed since the listing, or not to be told apart: read again next time */
    struct prune_seen *s = util_calloc(1, sizeof(*s));
    s->etag = util_strdup(etag);
    s->size = size;
    s->good = good;
    s->why = good ? NULL : util_strdup(why != NULL ? why : "");
    prune_seen_free(util_map_set(&t->seen, key, s));
}

void prune_trust_end(struct prune_trust *t)
{
    size_t it = 0, n = 0;
    const char *k;
    void *v;
    char **gone = util_calloc(t->seen.len + 1, sizeof(*gone));
    while (util_map_next(&t->seen, &it, &k, &v))
        if (util_map_get(&t->listed, k) == NULL)
            gone[n++] = util_strdup(k);
    for (size_t i = 0; i < n; i++) {
        prune_seen_free(util_map_del(&t->seen, gone[i]));
        free(gone[i]);
    }
    free(gone);
    prune_trust_clear(&t->listed);
}

void prune_trust_free(struct prune_trust *t)
{
    prune_trust_clear(&t->seen);
    prune_trust_clear(&t->listed);
    util_map_close(&t->seen);
    util_map_close(&t->listed);
    free(t->scope);
    t->scope = NULL;
}

int prune_check_manifest(const struct repo_keys *keys, const struct repo_snapshot *s,
                         const char *data, size_t len, struct util_err *err)
{
    struct repo_manifest m;
    /* The decoder binds the manifest to the place its key names: one moved or copied
     * here does not open. */
    int rc = repo_manifest_decode(&m, &s->src, s->id, (const uint8_t *)data, len, keys, err);
    if (rc != 0)
        return rc;
    repo_manifest_free(&m);
    return 0;
}

int prune_check_pin(const struct repo_keys *keys, const struct repo_snapshot *s, const char *data,
                    size_t len, struct util_err *err)
{
    char *reason = NULL;
    int rc = repo_pin_decode(keys, &s->src, s->id, data, len, &reason, err);
    free(reason);
    return rc;
}

size_t prune_kept(const struct prune_plan *plan, size_t *out)
{
    size_t n = 0;
    for (size_t h = 0; h < plan->nhosts; h++) {
        const struct prune_host *ph = &plan->hosts[h];
        for (size_t i = 0; i < ph->n; i++) {
            const struct ret_decision *d = &plan->dec[ph->from + i];
            if (d->keep)
                out[n++] = ph->from + d->index;
        }
    }
    return n;
}

size_t prune_catalog_drop(struct repo_catalog *cat, const bool *drop)
{
    size_t k = 0;
    for (size_t i = 0; i < cat->n; i++)
        if (!drop[i])
            cat->v[k++] = cat->v[i];
    size_t gone = cat->n - k;
    cat->n = k;
    return gone;
}
