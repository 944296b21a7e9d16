/*
 * pin: the .pinned mark, its one writer and reader (pin.h).
 */
#include "pin.h"

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

int pin_set(struct storage *st, const struct repo_snapshot *snap, const char *reason, bool *changed,
            struct util_err *err)
{
    struct util_err e = {0};
    char *old = NULL;
    int rc = pin_reason_check(reason, err);
    *changed = false;
    if (rc != 0)
        return rc;
    if (snap->pinned && pin_reason(st, snap, &old, NULL) == 0 && strcmp(old, reason) == 0) {
        free(old);
        return 0;
    }
    free(old);
    char *key = pin_key(snap);
    json_t *o = json_pack("{s:s}", "reason", reason);
    char *text = json_dumps(o, JSON_COMPACT);
    struct s3_body body = {.data = text, .len = strlen(text)};
    rc = s3_sync_put(st->s3, key, &body, NULL, NULL, &e);
    if (rc != 0)
        util_err_set(err, rc, "cannot write %s: %s", key, e.msg);
    else
        *changed = true;
    free(text);
    json_decref(o);
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

int pin_reason(struct storage *st, const struct repo_snapshot *snap, char **reason,
               struct util_err *err)
{
    struct util_err e = {0};
    char *key = pin_key(snap), *data = NULL;
    size_t len = 0;
    int rc = s3_sync_get(st->s3, key, NULL, &data, &len, NULL, &e);
    *reason = NULL;
    if (rc != 0) {
        util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
        free(key);
        return rc;
    }
    json_t *o = json_loadb(data, len, 0, NULL);
    const char *r = json_string_value(json_object_get(o, "reason"));
    *reason = util_strdup(r != NULL ? r : "");
    json_decref(o);
    free(data);
    free(key);
    return 0;
}
