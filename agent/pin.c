/*
 * pin: the .pinned mark, its one writer and reader (pin.h).
 */
#include "pin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *pin_key(const struct repo_snapshot *snap)
{
    struct repo_key k = {.kind = REPO_KEY_PINNED, .src = snap->src};
    memcpy(k.id, snap->id, sizeof(k.id));
    return repo_key_build(&k);
}

int pin_reason_check(const char *reason, struct util_err *err)
{
    size_t n = strlen(reason);
    if (n == 0)
        return util_err_set(err, UTIL_EINVAL,
                            "a pin needs a reason, such as \"before the 3.2 upgrade\"");
    if (n > PIN_REASON_MAX)
        return util_err_set(err, UTIL_EINVAL, "the reason is %zu bytes long, more than %d", n,
                            PIN_REASON_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)reason[i] < 0x20 || reason[i] == 0x7f)
            return util_err_set(err, UTIL_EINVAL,
                                "the reason holds a control character: write it on one line");
    return 0;
}

int pin_set(struct storage *st, const struct repo_keys *keys, const struct repo_snapshot *snap,
            const char *reason, bool *changed, struct util_err *err)
{
    struct util_err e = {0};
    char *old = NULL;
    int rc = pin_reason_check(reason, err);
    *changed = false;
    if (rc != 0)
        return rc;
    /* An authentic pin with this reason already: nothing to write. A forged one is
     * replaced by one with a tag. */
    if (snap->pinned && pin_reason(st, keys, snap, &old, NULL) == 0 && strcmp(old, reason) == 0) {
        free(old);
        return 0;
    }
    free(old);
    char *key = pin_key(snap);
    char *text = repo_pin_encode(keys, &snap->src, snap->id, reason);
    struct s3_body body = {.data = text, .len = strlen(text)};
    rc = s3_sync_put(st->s3, key, &body, NULL, NULL, &e);
    if (rc != 0)
        util_err_set(err, rc, "cannot write %s: %s", key, e.msg);
    else
        *changed = true;
    free(text);
    free(key);
    return rc;
}

int pin_clear(struct storage *st, const struct repo_snapshot *snap, bool *changed,
              struct util_err *err)
{
    struct util_err e = {0};
    *changed = false;
    if (!snap->pinned)
        return 0;
    char *key = pin_key(snap);
    int rc = s3_sync_delete(st->s3, key, &e);
    if (rc != 0)
        util_err_set(err, rc, "cannot delete %s: %s", key, e.msg);
    else
        *changed = true;
    free(key);
    return rc;
}

int pin_reason(struct storage *st, const struct repo_keys *keys, const struct repo_snapshot *snap,
               char **reason, struct util_err *err)
{
    struct util_err e = {0};
    char *key = pin_key(snap), *data = NULL;
    size_t len = 0;
    int rc = s3_sync_get(st->s3, key, NULL, &data, &len, NULL, &e);
    *reason = NULL;
    if (rc != 0)
        util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
    else if ((rc = repo_pin_decode(keys, &snap->src, snap->id, data, len, reason, &e)) != 0)
        util_err_set(err, rc, "%s: %s", key, e.msg);
    free(data);
    free(key);
    return rc;
}

int pin_check_catalog(struct storage *st, const struct repo_keys *keys, struct repo_catalog *cat,
                      const char *cmd, struct pin_list *pins, struct util_err *err)
{
    memset(pins, 0, sizeof(*pins));
    for (size_t i = 0; i < cat->n; i++) {
        struct repo_snapshot *s = &cat->v[i];
        struct util_err e = {0};
        char *why = NULL;
        if (!s->pinned)
            continue;
        int rc = pin_reason(st, keys, s, &why, &e);
        if (rc == S3_ENOTFOUND) {
            s->pinned = false; /* unpinned since the listing */
            continue;
        }
        if (rc == UTIL_EIO) {
            /* A pin that does not authenticate keeps nothing (docs/retention.md). */
            fprintf(stderr, "lode %s: ignoring a pin: %s\n", cmd, e.msg);
            s->pinned = false;
            pins->ignored++;
            continue;
        }
        if (rc != 0) {
            pin_list_free(pins);
            return util_err_set(err, rc, "%s", e.msg);
        }
        pins->v = util_grow(pins->v, &pins->cap, pins->n + 1, sizeof(*pins->v));
        pins->v[pins->n++] = (struct pin_entry){.snap = *s, .reason = why};
    }
    return 0;
}

const char *pin_list_reason(const struct pin_list *pins, const struct repo_snapshot *snap)
{
    for (size_t i = 0; i < pins->n; i++) {
        const struct repo_snapshot *p = &pins->v[i].snap;
        if (strcmp(p->id, snap->id) == 0 && strcmp(p->src.ns, snap->src.ns) == 0 &&
            strcmp(p->src.policy, snap->src.policy) == 0 &&
            strcmp(p->src.host, snap->src.host) == 0)
            return pins->v[i].reason;
    }
    return "";
}

void pin_list_free(struct pin_list *pins)
{
    for (size_t i = 0; i < pins->n; i++)
        free(pins->v[i].reason);
    free(pins->v);
    memset(pins, 0, sizeof(*pins));
}
