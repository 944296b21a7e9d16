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
