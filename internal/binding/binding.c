#include "binding/binding.h"

#include <string.h>

int binding_zone(const struct policy *spec, const struct tz_db *db, struct tz_zone **out,
                 struct util_err *err)
{
    if (spec == NULL || !spec->has_schedule) {
        *out = tz_zone_utc();
        return 0;
    }
    return tz_zone_load(out, db, spec->schedule.timezone, err);
}

int binding_init(struct binding *b, const struct policy *spec, const struct tz_db *db,
                 struct util_err *err)
{
    memset(b, 0, sizeof(*b));
    b->spec = spec;
    int rc = binding_zone(spec, db, &b->zone, err);
    if (rc != 0)
        return rc;
    if (spec == NULL || !spec->has_schedule)
        return 0;
    sched_init(&b->sched, &spec->schedule.cron, b->zone);
    b->has_sched = true;
    return 0;
}

void binding_close(struct binding *b)
{
    if (b->zone != NULL)
        tz_zone_free(b->zone);
    memset(b, 0, sizeof(*b));
}

int64_t binding_alert_limit(const struct binding *b, int64_t at)
{
    if (b->spec == NULL)
        return SCHED_NO_LIMIT;
    return sched_alert_limit(b->has_sched ? &b->sched : NULL,
                             b->spec->has_schedule ? b->spec->schedule.jitter : 0,
                             b->spec->alerts_max_age, at);
}

int64_t binding_offset(const struct binding *b, const char *host)
{
    if (b->spec == NULL || !b->spec->has_schedule)
        return 0;
    return sched_jitter_offset(b->spec->namespace, b->spec->name, host, b->spec->schedule.jitter);
}

bool binding_selects(const struct policy *spec, binding_has_label_cb has_label, const void *node)
{
    if (spec == NULL)
        return false;
    for (size_t i = 0; i < spec->nnode_selector; i++)
        if (!has_label(node, spec->node_selector[i].key, spec->node_selector[i].value))
            return false;
    return true;
}

bool binding_selector_of(const json_t *obj, struct policy *out)
{
    const json_t *sel = json_object_get(json_object_get(obj, "spec"), "nodeSelector");
    const char *k;
    const json_t *v;
    memset(out, 0, sizeof(*out));
    if (sel == NULL || json_is_null(sel))
        return true;
    if (!json_is_object(sel) || json_object_size(sel) > POLICY_MAX_NODE_SELECTOR)
        return false;
    json_object_foreach((json_t *)sel, k, v)
    {
        if (!json_is_string(v))
            return false;
    }
    out->node_selector = util_calloc(json_object_size(sel) + 1, sizeof(*out->node_selector));
    json_object_foreach((json_t *)sel, k, v)
    {
        struct policy_label *l = &out->node_selector[out->nnode_selector++];
        l->key = util_strdup(k);
        l->value = util_strdup(json_string_value(v));
    }
    return true;
}

void binding_selector_free(struct policy *sel)
{
    for (size_t i = 0; i < sel->nnode_selector; i++) {
        free(sel->node_selector[i].key);
        free(sel->node_selector[i].value);
    }
    free(sel->node_selector);
    memset(sel, 0, sizeof(*sel));
}

int64_t binding_success_time(int64_t completed, int64_t created)
{
    return completed != 0 ? completed : created;
}

/* A member by a path of object keys, or NULL. */
static const json_t *binding_get(const json_t *obj, const char *a, const char *b)
{
    const json_t *x = json_object_get(obj, a);
    return b != NULL ? json_object_get(x, b) : x;
}

/* An RFC 3339 string member as seconds; 0 when absent or not a time. */
static int64_t binding_time(const json_t *v)
{
    int64_t t;
    const char *s = json_string_value(v);
    if (s == NULL || util_parse_rfc3339(s, &t, NULL) != 0)
        return 0;
    return t;
}

bool binding_backup_success(const json_t *backup, int64_t *at)
{
    const char *phase = json_string_value(binding_get(backup, "status", "phase"));
    const char *reason = json_string_value(binding_get(backup, "status", "reason"));
    const json_t *snap = binding_get(backup, "status", "snapshot");
    if (phase == NULL || strcmp(phase, "Succeeded") != 0)
        return false;
    if (json_is_true(json_object_get(snap, "suspicious")) ||
        json_is_true(json_object_get(snap, "incomplete")) ||
        (reason != NULL && strcmp(reason, "incomplete") == 0))
        return false;
    *at = binding_success_time(binding_time(binding_get(backup, "status", "completionTime")),
                               binding_time(binding_get(backup, "metadata", "creationTimestamp")));
    return true;
}

int64_t binding_enrolled(const json_t *obj, const char *host, int64_t selected_since,
                         int64_t node_created, int64_t now)
{
    const json_t *kept = binding_get(binding_get(obj, "status", NULL), BINDING_ENROLLED, NULL);
    return sched_enrolled(selected_since, binding_time(json_object_get(kept, host)),
                          json_is_object(kept), node_created, now);
}
