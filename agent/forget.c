/*
 * forget: the deletions of retention through storage (forget.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "forget.h"

/* The keys of one deletion pass and what became of them. */
struct forget_del {
    const char *const *keys;
    size_t n;
    size_t deleted;
    bool *gone; /* per key: deleted (or already absent) */
    size_t failed;
    size_t locked; /* refused because Object Lock retains them: kept, not failed */
};

static int forget_cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The position of key in d->keys (sorted), or -1. */
static ssize_t forget_find(const struct forget_del *d, const char *key)
{
    const char *const *hit =
        d->n ? bsearch(&key, d->keys, d->n, sizeof(*d->keys), forget_cmp_key) : NULL;
    return hit ? (ssize_t)(hit - d->keys) : -1;
}

static void forget_deleted_cb(const char *key, int error, const char *code, const char *message,
                              void *arg)
{
    struct forget_del *d = arg;
    ssize_t i = forget_find(d, key);

    if (error == 0) {
        d->deleted++;
        if (i >= 0)
            d->gone[i] = true;
        return;
    }
    if (s3_refusal_is_lock(code, message)) {
        /* docs/security.md, "Object Lock": kept until its retention ends, then forgotten. */
        d->locked++;
        fprintf(stderr, "lode forget: kept %s: Object Lock retains it (%s)\n", key, message);
        return;
    }
    d->failed++;
    fprintf(stderr, "lode forget: cannot delete %s: %s%s%s\n", key, code, code[0] ? ": " : "",
            message);
}

/* Deletes keys (sorted by the caller); returns 0 when every one is gone, else -1 (printed). */
static int forget_delete(struct storage *st, struct forget_del *d, unsigned *requests)
{
    struct util_err err = {0};
    struct s3_info info = {0};
    int rc;

    d->gone = util_calloc(d->n ? d->n : 1, sizeof(*d->gone));
    if (d->n == 0)
        return 0;
    rc = s3_sync_delete_objects(st->s3, d->keys, d->n, NULL, forget_deleted_cb, d, &info, &err);
    *requests += info.requests;
    if (rc != 0 && d->failed == 0 && d->deleted + d->locked < d->n) {
        fprintf(stderr, "lode forget: deleting from %s: %s\n", st->url, err.msg);
        d->failed = d->n - d->deleted - d->locked;
    }
    return d->failed ? -1 : 0;
}

int forget_apply(struct storage *st, const struct prune_plan *plan, struct forget_outcome *out)
{
    struct forget_del dm = {.keys = (const char *const *)plan->manifests, .n = plan->nmanifests};
    struct forget_del dk = {0};
    const char **live = util_calloc(plan->nmarks ? plan->nmarks : 1, sizeof(*live));
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (forget_delete(st, &dm, &out->requests) != 0)
        rc = UTIL_EIO;
    dk.keys = live;
    dk.n = prune_marks_after(plan, dm.gone, live);
    if (forget_delete(st, &dk, &out->requests) != 0)
        rc = UTIL_EIO;
    out->manifests = dm.n;
    out->manifests_deleted = dm.deleted;
    out->manifests_failed = dm.failed;
    out->manifests_locked = dm.locked;
    out->marks = dk.n;
    out->marks_deleted = dk.deleted;
    out->marks_failed = dk.failed;
    free(dm.gone);
    free(dk.gone);
    free(live);
    return rc;
}

/* Whether s was authenticated by an earlier pass. */
static bool forget_was_checked(const struct forget_checked *c, const struct repo_snapshot *s)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].id, s->id) == 0 && strcmp(c->v[i].src.host, s->src.host) == 0)
            return true;
    return false;
}

int forget_check_kept(struct storage *st, const struct repo_keys *keys, struct repo_catalog *cat,
                      const struct prune_plan *plan, struct forget_checked *checked,
                      size_t *dropped, struct util_err *err)
{
    bool *drop = util_calloc(cat->n ? cat->n : 1, sizeof(*drop));
    int rc = 0;

    *dropped = 0;
    for (size_t h = 0; h < plan->nhosts && rc == 0; h++) {
        const struct prune_host *ph = &plan->hosts[h];
        for (size_t i = 0; i < ph->n && rc == 0; i++) {
            const struct ret_decision *d = &plan->dec[ph->from + i];
            size_t at = ph->from + d->index;
            const struct repo_snapshot *s = &cat->v[at];
            struct repo_manifest m;
            struct util_err e = {0};
            if (!d->keep || forget_was_checked(checked, s))
                continue;
            int r = storage_get_manifest(st, &s->src, s->id, keys, &m, NULL, &e);
            if (r == 0) {
                repo_manifest_free(&m);
                checked->v =
                    util_grow(checked->v, &checked->cap, checked->n + 1, sizeof(*checked->v));
                checked->v[checked->n++] = *s;
            } else if (r == UTIL_EIO || r == UTIL_EINVAL || r == S3_ENOTFOUND) {
                /* Not a snapshot this repository's key wrote (or forgotten since the
                 * listing): it keeps no slot, and is left where it is for lode check. */
                if (r != S3_ENOTFOUND)
                    fprintf(stderr, "lode forget: ignoring %s\n", e.msg);
                drop[at] = true;
                (*dropped)++;
            } else {
                rc = util_err_set(err, r, "%s", e.msg);
            }
        }
    }
    if (rc == 0 && *dropped > 0) {
        size_t k = 0;
        for (size_t i = 0; i < cat->n; i++)
            if (!drop[i])
                cat->v[k++] = cat->v[i];
        cat->n = k;
    }
    free(drop);
    return rc;
}

void forget_checked_free(struct forget_checked *c)
{
    free(c->v);
    memset(c, 0, sizeof(*c));
}
