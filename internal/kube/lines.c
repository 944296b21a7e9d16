/*
 * Watch streams: the incremental line splitter and the event decoder.
 *
 * A watch body is a sequence of JSON objects, one per line. The splitter scans each
 * byte once with memchr; a line that arrives whole inside one chunk is handed out in
 * place, and only a line that spans chunks is copied into the partial buffer, which
 * never holds more than one line.
 */
#include "kube/kube.h"

#include <string.h>

void kube_lines_init(struct kube_lines *l, size_t max)
{
    util_buf_init(&l->partial);
    l->max = max ? max : KUBE_MAX_LINE_DEFAULT;
}

void kube_lines_reset(struct kube_lines *l)
{
    l->partial.len = 0;
    if (l->partial.data != NULL)
        l->partial.data[0] = '\0';
}

void kube_lines_free(struct kube_lines *l)
{
    util_buf_free(&l->partial);
}

size_t kube_lines_pending(const struct kube_lines *l)
{
    return l->partial.len;
}

/* Hands out one line without its "\r", if any. */
static int lines_emit(const char *line, size_t len, kube_line_cb cb, void *arg)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    return cb(line, len, arg);
}

static int lines_too_long(struct kube_lines *l, struct util_err *err)
{
    kube_lines_reset(l);
    return util_err_set(err, KUBE_ETOOBIG, "a watch event is longer than %zu bytes", l->max);
}

int kube_lines_feed(struct kube_lines *l, const char *data, size_t len, kube_line_cb cb, void *arg,
                    struct util_err *err)
{
    const char *p = data, *end = data + len;
    int rc;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
        /* The bound counts every byte of a line but its "\n". */
        if (l->partial.len + n > l->max)
            return lines_too_long(l, err);
        if (nl == NULL) {
            /* The rest starts (or continues) a line whose end is in a later chunk. */
            util_buf_append(&l->partial, p, n);
            return 0;
        }
        if (l->partial.len > 0) {
            util_buf_append(&l->partial, p, n);
            size_t full = l->partial.len;
            /* Emptied first: the next line starts afresh whatever the callback returns. */
            l->partial.len = 0;
            rc = lines_emit(l->partial.data, full, cb, arg);
        } else {
            rc = lines_emit(p, n, cb, arg);
        }
        if (rc != 0)
            return rc;
        p = nl + 1;
    }
    return 0;
}

const char *kube_event_type_name(enum kube_event_type t)
{
    switch (t) {
    case KUBE_EVENT_ADDED:
        return "ADDED";
    case KUBE_EVENT_MODIFIED:
        return "MODIFIED";
    case KUBE_EVENT_DELETED:
        return "DELETED";
    case KUBE_EVENT_BOOKMARK:
        return "BOOKMARK";
    case KUBE_EVENT_ERROR:
        return "ERROR";
    }
    return "?";
}

static const char *json_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

int kube_watch_decode(const char *line, size_t len, json_t **root, struct kube_watch_event *ev,
                      struct util_err *err)
{
    json_error_t jerr;
    const char *type;
    json_t *obj, *meta;

    memset(ev, 0, sizeof(*ev));
    ev->reason = "";
    ev->message = "";
    *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (*root == NULL)
        return util_err_set(err, KUBE_EPROTO, "watch event is not JSON: %s at column %d", jerr.text,
                            jerr.column);
    if (!json_is_object(*root))
        return util_err_set(err, KUBE_EPROTO, "watch event is not a JSON object");
    type = json_str(*root, "type");
    obj = json_object_get(*root, "object");
    if (type == NULL)
        return util_err_set(err, KUBE_EPROTO, "watch event has no \"type\"");
    if (!json_is_object(obj))
        return util_err_set(err, KUBE_EPROTO, "watch event of type %.32s has no \"object\"", type);
    if (strcmp(type, "ADDED") == 0)
        ev->type = KUBE_EVENT_ADDED;
    else if (strcmp(type, "MODIFIED") == 0)
        ev->type = KUBE_EVENT_MODIFIED;
    else if (strcmp(type, "DELETED") == 0)
        ev->type = KUBE_EVENT_DELETED;
    else if (strcmp(type, "BOOKMARK") == 0)
        ev->type = KUBE_EVENT_BOOKMARK;
    else if (strcmp(type, "ERROR") == 0)
        ev->type = KUBE_EVENT_ERROR;
    else
        return util_err_set(err, KUBE_EPROTO, "watch event has an unknown type \"%.32s\"", type);
    ev->object = obj;
    if (ev->type == KUBE_EVENT_ERROR) {
        /* A metav1.Status: code 410 with reason "Expired" or "Gone" means relist. */
        json_t *code = json_object_get(obj, "code");
        const char *s;
        ev->code = json_is_integer(code) && json_integer_value(code) >= 0 &&
                           json_integer_value(code) < 1000
                       ? (int)json_integer_value(code)
                       : 0;
        if ((s = json_str(obj, "reason")) != NULL)
            ev->reason = s;
        if ((s = json_str(obj, "message")) != NULL)
            ev->message = s;
        return 0;
    }
    meta = json_object_get(obj, "metadata");
    ev->resource_version = json_str(meta, "resourceVersion");
    ev->name = json_str(meta, "name");
    ev->namespace = json_str(meta, "namespace");
    if (ev->resource_version == NULL || ev->resource_version[0] == '\0')
        return util_err_set(err, KUBE_EPROTO, "watch event of type %s has no resourceVersion",
                            kube_event_type_name(ev->type));
    if (ev->type != KUBE_EVENT_BOOKMARK && (ev->name == NULL || ev->name[0] == '\0'))
        return util_err_set(err, KUBE_EPROTO, "watch event of type %s has no metadata.name",
                            kube_event_type_name(ev->type));
    return 0;
}
