/*
 * Events: a core/v1 Event about one object, in the legacy shape (firstTimestamp,
 * lastTimestamp, count, source) that `kubectl describe` shows. No client-side
 * aggregation: the caller decides when an Event is worth sending.
 */
#include "kube/kube.h"

#include <stdlib.h>
#include <string.h>

#define EVENT_MESSAGE_MAX 1024

/* A JSON string of at most max bytes, cut at a character boundary; bad UTF-8 becomes '?'. */
static json_t *event_string(const char *s, size_t max)
{
    size_t n = strlen(s);
    char *copy;
    json_t *j;
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    j = json_stringn(s, n);
    if (j != NULL)
        return j;
    copy = util_strndup(s, n);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)copy[i] >= 0x80)
            copy[i] = '?';
    j = json_stringn(copy, n);
    free(copy);
    return j;
}

json_t *kube_event_build(const struct kube_object_ref *obj, const char *type, const char *reason,
                         const char *message, const char *component, int64_t now)
{
    char ts[UTIL_TIME_BUF];
    const char *ns = obj->namespace != NULL && obj->namespace[0] ? obj->namespace : "default";
    char *gen = util_asprintf("%s.", obj->name);
    json_t *involved, *ev;

    util_format_utc(now, ts, sizeof(ts));
    involved = json_pack("{s:s, s:s, s:s}", "apiVersion", obj->api_version, "kind", obj->kind,
                         "name", obj->name);
    if (obj->namespace != NULL && obj->namespace[0] != '\0')
        json_object_set_new(involved, "namespace", json_string(obj->namespace));
    if (obj->uid != NULL && obj->uid[0] != '\0')
        json_object_set_new(involved, "uid", json_string(obj->uid));
    ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:o, s:s, s:{s:s}, s:s, s:s, s:i}",
                   "apiVersion", "v1", "kind", "Event", "metadata", "generateName", gen,
                   "namespace", ns, "involvedObject", involved, "reason", reason, "message",
                   event_string(message, EVENT_MESSAGE_MAX), "type", type, "source", "component",
                   component, "firstTimestamp", ts, "lastTimestamp", ts, "count", 1);
    free(gen);
    return ev;
}

int kube_event_create(struct kube_client *c, const struct kube_object_ref *obj, const char *type,
                      const char *reason, const char *message, const char *component, int64_t now,
                      kube_result_cb cb, void *arg, struct kube_request **out, struct util_err *err)
{
    struct kube_resource res = {"", "v1", "events", NULL};
    json_t *ev;
    int rc;

    if (obj == NULL || obj->api_version == NULL || obj->kind == NULL || obj->name == NULL ||
        obj->name[0] == '\0')
        return util_err_set(err, UTIL_EINVAL,
                            "an Event needs the object's apiVersion, kind and "
                            "name");
    if (type == NULL || (strcmp(type, "Normal") != 0 && strcmp(type, "Warning") != 0))
        return util_err_set(err, UTIL_EINVAL, "an Event's type is Normal or Warning");
    if (reason == NULL || reason[0] == '\0' || message == NULL || component == NULL)
        return util_err_set(err, UTIL_EINVAL, "an Event needs a reason, a message and a component");
    ev = kube_event_build(obj, type, reason, message, component, now);
    if (ev == NULL)
        return util_err_set(err, UTIL_EINVAL, "an Event's strings must be UTF-8");
    res.namespace = obj->namespace != NULL && obj->namespace[0] ? obj->namespace : "default";
    rc = kube_create(c, &res, ev, cb, arg, out, err);
    json_decref(ev);
    return rc;
}
