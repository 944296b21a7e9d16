/*
 * Policy status: hosts, running, overdue, the next run and the conditions, written only
 * when it changed and at most once a second, and looked at again every minute because
 * overdue is a matter of time passing.
 */
#include "ctl_int.h"

#include <stdlib.h>
#include <string.h>

static json_t *ctl_condition3(struct ctl *c, struct ctl_policy_entry *e, const char *type,
                              const char *st, const char *reason, const char *message)
{
    json_t *prev = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(e->conditions, i, x)
    {
        const char *t = json_string_value(json_object_get(x, "type"));
        if (t != NULL && strcmp(t, type) == 0)
            prev = x;
    }
    const char *prev_status = json_string_value(json_object_get(prev, "status"));
    const char *prev_time = json_string_value(json_object_get(prev, "lastTransitionTime"));
    char now[UTIL_TIME_BUF];
    util_format_utc(ctl_now(c), now, sizeof(now));
    return json_pack("{s:s, s:s, s:I, s:s, s:s, s:s}", "type", type, "status", st,
                     "observedGeneration", (json_int_t)e->p.generation, "lastTransitionTime",
                     prev_status != NULL && strcmp(prev_status, st) == 0 && prev_time ? prev_time
                                                                                      : now,
                     "reason", reason, "message", message);
}

static json_t *ctl_condition(struct ctl *c, struct ctl_policy_entry *e, const char *type,
                             bool status, const char *reason, const char *message)
{
    return ctl_condition3(c, e, type, status ? "True" : "False", reason, message);
}

static int ctl_overdue_cmp(const void *a, const void *b)
{
    const struct ctl_pair *x = *(struct ctl_pair *const *)a, *y = *(struct ctl_pair *const *)b;
    if (x->overdue_start != y->overdue_start)
        return x->overdue_start < y->overdue_start ? -1 : 1;
    return strcmp(x->host, y->host);
}

struct ctl_status_op {
    struct ctl_write w; /* first: the record of the write in flight */
    struct ctl *c;
    char *key;
};

static void ctl_status_op_free_cb(struct ctl_write *w)
{
    struct ctl_status_op *op = (struct ctl_status_op *)w;
    free(op->key);
    free(op);
}

static void ctl_status_cb(const struct kube_result *res, void *arg)
{
    struct ctl_status_op *op = arg;
    bool ok = res->error == 0 && res->status >= 200 && res->status < 300;
    struct ctl_policy_entry *e = util_map_get(&op->c->policies, op->key);
    if (!ok && res->status != 404) {
        ctl_log(op->c, 0, "status of %s not written: %s", op->key,
                res->message ? res->message : "no answer");
        /* Forget what was written so the next flush writes it again. */
        if (e != NULL) {
            free(e->last_status);
            e->last_status = NULL;
            e->status_dirty = true;
        }
    }
    ctl_write_untrack(op->c, &op->w);
    ctl_status_op_free_cb(&op->w);
}

struct ctl_event_op {
    struct ctl_write w; /* first: the record of the write in flight */
    struct ctl *c;
};

static void ctl_event_op_free_cb(struct ctl_write *w)
{
    free(w);
}

static void ctl_event_cb(const struct kube_result *res, void *arg)
{
    struct ctl_event_op *op = arg;
    if (res->error != 0 || res->status >= 300)
        ctl_log(op->c, 0, "an Event could not be written: %s",
                res->message ? res->message : "no answer");
    ctl_write_untrack(op->c, &op->w);
    free(op);
}

/* A Warning Event on the policy, and its log line. */
static void ctl_policy_event(struct ctl *c, struct ctl_policy_entry *e, const char *reason,
                             const char *message)
{
    struct util_err err = {0};
    struct kube_object_ref ref = {API_GROUP_VERSION, "BackupPolicy", e->p.ns, e->p.name, e->p.uid};
    struct ctl_event_op *op = util_calloc(1, sizeof(*op));
    op->c = c;
    ctl_write_track(c, &op->w, ctl_event_op_free_cb);
    ctl_log(c, 0, "event Warning %s on BackupPolicy %s: %s", reason, e->p.key, message);
    if (kube_event_create(c->kube, &ref, "Warning", reason, message, CTL_COMPONENT, ctl_now(c),
                          ctl_event_cb, op, NULL, &err) != 0) {
        ctl_log(c, 0, "Event on BackupPolicy %s: %s", e->p.key, err.msg);
        ctl_write_untrack(c, &op->w);
        free(op);
    }
}

/* The reason of condition type in conds, or NULL. */
static const char *ctl_condition_reason(const json_t *conds, const char *type)
{
    size_t i;
    const json_t *x;
    json_array_foreach(conds, i, x)
    {
        const char *t = json_string_value(json_object_get(x, "type"));
        if (t != NULL && strcmp(t, type) == 0)
            return json_string_value(json_object_get(x, "reason"));
    }
    return NULL;
}

static void ctl_policy_status(struct ctl *c, struct ctl_policy_entry *e)
{
    size_t hosts = 0, running = 0, overdue = 0, nlisted = 0, with_success = 0;
    int64_t next = INT64_MAX;
    struct ctl_pair **od = NULL;
    size_t odcap = 0;
    size_t it = 0;
    const char *k;
    void *v;
    char buf[64], lim[32];

    json_t *started = json_object();
    const struct ctl_backup *last = NULL; /* the newest Backup, for status.lastRun */
    while (util_map_next(&c->pairs, &it, &k, &v)) {
        struct ctl_pair *pr = v;
        if (strcmp(pr->ns, e->p.ns) != 0 || strcmp(pr->policy, e->p.name) != 0)
            continue;
        for (size_t i = 0; i < pr->nbackups; i++) {
            const struct ctl_backup *b = pr->backups[i];
            if (last == NULL || b->created > last->created ||
                (b->created == last->created && strcmp(b->name, last->name) > 0))
                last = b;
        }
        int64_t slot = ctl_policy_started_slot(&e->p, pr->host);
        if (pr->started_slot > slot)
            slot = pr->started_slot;
        if (slot > 0) {
            util_format_utc(slot, buf, sizeof(buf));
            json_object_set_new(started, pr->host, json_string(buf));
        }
        running += pr->running;
        if (!pr->selected)
            continue;
        hosts++;
        with_success += pr->has_success;
        if (pr->next_run < next)
            next = pr->next_run;
        if (pr->overdue) {
            od = util_grow(od, &odcap, overdue + 1, sizeof(*od));
            od[overdue++] = pr;
        }
    }
    if (overdue > 1)
        qsort(od, overdue, sizeof(*od), ctl_overdue_cmp);

    json_t *st = json_object();
    json_object_set_new(st, "observedGeneration", json_integer(e->p.generation));
    json_object_set_new(st, "hosts", json_integer((json_int_t)hosts));
    json_object_set_new(st, "running", json_integer((json_int_t)running));
    json_object_set_new(st, "overdue", json_integer((json_int_t)overdue));
    if (next != INT64_MAX) {
        util_format_utc(next, buf, sizeof(buf));
        json_object_set_new(st, "nextRun", json_string(buf));
    } else {
        json_object_set_new(st, "nextRun", json_null());
    }
    json_object_set_new(st, "alertLimitSeconds",
                        e->limit == SCHED_NO_LIMIT ? json_null() : json_integer(e->limit));
    json_object_set_new(st, "tzdataVersion", json_string(tz_db_version(c->db)));
    json_object_set_new(st, "scheduleHash", json_string(e->p.schedule_hash));
    util_format_utc(e->p.schedule_changed, buf, sizeof(buf));
    json_object_set_new(st, "scheduleChangedAt", json_string(buf));
    json_t *list = json_array();
    for (size_t i = 0; i < overdue && nlisted < CTL_OVERDUE_LISTED; i++, nlisted++) {
        json_t *h = json_pack("{s:s}", "host", od[i]->host);
        util_format_utc(od[i]->overdue_start, buf, sizeof(buf));
        json_object_set_new(h, "since", json_string(buf));
        if (od[i]->has_success)
            json_object_set_new(h, "lastSuccess", json_string(buf));
        json_array_append_new(list, h);
    }
    json_object_set_new(st, "overdueHosts", list);
    json_object_set_new(st, "startedSlots", started);
    json_object_set_new(st, BINDING_ENROLLED, ctl_cache_enrolled_json(c, e));
    if (last != NULL) {
        util_format_utc(last->created, buf, sizeof(buf));
        json_object_set_new(st, "lastRun",
                            json_pack("{s:s, s:s, s:s, s:s}", "backup", last->name, "host",
                                      last->host, "phase", ctl_phase_name(last->phase), "time",
                                      buf));
    }

    json_t *conds = json_array();
    if (e->p.valid)
        json_array_append_new(
            conds, ctl_condition(c, e, "Valid", true, "Valid", "the policy passed validation"));
    else
        json_array_append_new(conds,
                              ctl_condition(c, e, "Valid", false, "Invalid", e->p.invalid_message));
    char *msg;
    char why[768];
    const char *why_reason = NULL;
    bool checking = false;
    const char *blocked =
        ctl_cache_repository_blocked(c, &e->p, why, sizeof(why), &why_reason, &checking);
    char *alarm = NULL; /* the Ready message, when a person must act on it */
    if (!e->p.valid) {
        alarm =
            util_asprintf("the policy is not valid, so no backup runs: %s", e->p.invalid_message);
        json_array_append_new(conds, ctl_condition(c, e, "Ready", false, "Invalid", alarm));
    } else if (blocked != NULL) {
        alarm = util_asprintf("no backup runs: %s; runs start by themselves when it is Ready "
                              "(a slot missed meanwhile is caught up within the catch-up window)",
                              blocked);
        json_array_append_new(conds, ctl_condition(c, e, "Ready", false, why_reason, alarm));
    } else if (hosts == 0) {
        json_array_append_new(conds, ctl_condition(c, e, "Ready", false, "NoMatchingNodes",
                                                   "no node matches the policy's nodeSelector"));
    } else if (!e->p.bind.has_sched) {
        msg = util_asprintf("%zu hosts; no schedule: backups run only when started by hand", hosts);
        json_array_append_new(conds, ctl_condition(c, e, "Ready", true, "ManualOnly", msg));
        free(msg);
    } else {
        util_format_utc(next, buf, sizeof(buf));
        msg = util_asprintf("%zu hosts scheduled; next run %s", hosts,
                            next != INT64_MAX ? buf : "none");
        json_array_append_new(conds, ctl_condition(c, e, "Ready", true, "Scheduled", msg));
        free(msg);
    }
    if (!e->p.valid) {
        json_array_append_new(conds, ctl_condition3(c, e, "Overdue", "Unknown", "Invalid",
                                                    "the policy is not valid: overdue is not "
                                                    "evaluated until it is"));
    } else if (e->limit == SCHED_NO_LIMIT) {
        json_array_append_new(conds, ctl_condition(c, e, "Overdue", false, "NoLimit",
                                                   "no schedule and no alerts.maxAge: a policy run "
                                                   "by hand is never overdue"));
    } else {
        policy_format_duration(e->limit, lim, sizeof(lim));
        if (overdue > 0) {
            struct util_buf b;
            util_buf_init(&b);
            util_buf_printf(&b,
                            "%zu of %zu hosts have no successful backup in the last %s:", overdue,
                            hosts, lim);
            for (size_t i = 0; i < overdue && i < 5; i++)
                util_buf_printf(&b, "%s %s", i ? "," : "", od[i]->host);
            if (overdue > 5)
                util_buf_printf(&b, " and %zu more", overdue - 5);
            json_array_append_new(conds,
                                  ctl_condition(c, e, "Overdue", true, "NoRecentBackup", b.data));
            util_buf_free(&b);
        } else if (hosts > 0 && with_success == 0) {
            msg = util_asprintf(
                "no host has a successful backup yet; a host is overdue when it "
                "has none %s after it enrolled (was selected by the policy) or the policy "
                "was created, whichever is later",
                lim);
            json_array_append_new(conds, ctl_condition(c, e, "Overdue", false, "NoBackupYet", msg));
            free(msg);
        } else {
            msg = util_asprintf("every host has a successful backup within %s", lim);
            json_array_append_new(conds, ctl_condition(c, e, "Overdue", false, "Recent", msg));
            free(msg);
        }
    }
    json_object_set_new(st, "conditions", conds);
    free(od);

    char *text = json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS);
    if (e->last_status != NULL && strcmp(text, e->last_status) == 0) {
        free(text);
        free(alarm);
        json_decref(st);
        return;
    }
    free(e->last_status);
    e->last_status = text;
    /* A Ready reason a person must act on is also an Event, when it first says so. */
    const char *now_reason = ctl_condition_reason(conds, "Ready");
    if (alarm == NULL) {
        free(e->alarmed);
        e->alarmed = NULL;
    } else if (!checking && now_reason != NULL &&
               (e->alarmed == NULL || strcmp(e->alarmed, now_reason) != 0)) {
        ctl_policy_event(c, e, now_reason, alarm);
        free(e->alarmed);
        e->alarmed = util_strdup(now_reason);
    }
    free(alarm);
    json_decref(e->conditions);
    e->conditions = json_incref(conds);

    struct util_err err = {0};
    struct kube_resource res = api_in(&api_backuppolicies, e->p.ns);
    json_t *patch = json_pack("{s:o}", "status", st);
    struct ctl_status_op *op = util_calloc(1, sizeof(*op));
    op->c = c;
    op->key = util_strdup(e->p.key);
    ctl_write_track(c, &op->w, ctl_status_op_free_cb);
    if (kube_merge_patch(c->kube, &res, e->p.name, "status", patch, ctl_status_cb, op, NULL,
                         &err) != 0) {
        ctl_log(c, 0, "status of %s: %s", e->p.key, err.msg);
        ctl_write_untrack(c, &op->w);
        ctl_status_op_free_cb(&op->w);
    }
    json_decref(patch);
}

void ctl_status_flush(struct ctl *c)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->policies, &it, &k, &v)) {
        struct ctl_policy_entry *e = v;
        if (e->status_dirty) {
            e->status_dirty = false;
            ctl_policy_status(c, e);
        }
    }
}

/* Overdue is a matter of time passing: look at every policy's status once a minute. */
static void ctl_status_timer_cb(uv_timer_t *t)
{
    struct ctl *c = t->data;
    if (!c->acting || !ctl_cache_synced(c))
        return;
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->policies, &it, &k, &v))
        ((struct ctl_policy_entry *)v)->status_dirty = true;
    ctl_status_flush(c);
}

static void ctl_status_soon_cb(uv_timer_t *t)
{
    ctl_status_flush(t->data);
}

/*
 * Policy status is written at most once a second: a slot of thousands of runs changes
 * every pair's view many times, and each flush walks the pairs of every changed policy.
 */
void ctl_status_soon(struct ctl *c)
{
    if (!c->stopping && !uv_is_active((uv_handle_t *)&c->status_soon))
        uv_timer_start(&c->status_soon, ctl_status_soon_cb, 1000, 0);
}

static void ctl_handle_closed_cb(uv_handle_t *h)
{
}

void ctl_status_init(struct ctl *c)
{
    uv_timer_init(c->loop, &c->status_timer);
    c->status_timer.data = c;
    uv_timer_init(c->loop, &c->status_soon);
    c->status_soon.data = c;
}

void ctl_status_start(struct ctl *c)
{
    uv_timer_start(&c->status_timer, ctl_status_timer_cb, 60000, 60000);
}

void ctl_status_stop(struct ctl *c)
{
    uv_close((uv_handle_t *)&c->status_timer, ctl_handle_closed_cb);
    uv_close((uv_handle_t *)&c->status_soon, ctl_handle_closed_cb);
}
