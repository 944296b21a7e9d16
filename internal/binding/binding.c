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

int64_t binding_success_time(int64_t completed, int64_t created)
{
    return completed != 0 ? completed : created;
}
