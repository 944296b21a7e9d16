/*
 * Policy status: built by policy_status.c from the pairs and the clock, written only
 * when it changed, at most once a second, and for each policy at a pace of a few writes at
 * once then one every CTL_STATUS_PACE_MS (a slot's runs change a policy's status with
 * every run: its writes are merged, not one per run); looked at again every minute because
 * overdue is a matter of time passing; a Ready reason a person must act on is also a
 * Warning Event.
 */
#include "ctl_int.h"
#include "policy_status.h"

#include <stdlib.h>
#include <string.h>

/*
 * A busy policy's status is written once every 20 s after a burst of three: the writes
 * of a slot (0.28 a run at a pace of 10 s in the bench of docs/benchmarks.md) share the
 * rate limit with the runs' starts, and what they say (counts, lastRun) may lag that long;
 * a person's change (a node labelled into the policy) is seen within 20 s even after a burst.
 */
#define CTL_STATUS_PACE_MS 20000
#define CTL_STATUS_BURST   3

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
        if (!ctl_ns_deleting(op->c, res, "a policy's status"))
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

/* Builds the policy's status (policy_status.h) and writes it when it changed. */
static void ctl_status_write(struct ctl *c, struct ctl_policy_entry *e)
{
    struct ctl_policy_status_host *hosts = NULL;
    size_t nhosts = 0, cap = 0, it = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->pairs, &it, &k, &v)) {
        const struct ctl_pair *pr = v;
        if (strcmp(pr->ns, e->p.ns) != 0 || strcmp(pr->policy, e->p.name) != 0)
            continue;
        hosts = util_grow(hosts, &cap, nhosts + 1, sizeof(*hosts));
        hosts[nhosts++] = (struct ctl_policy_status_host){
            .host = pr->host,
            .selected = pr->selected,
            .running = pr->running,
            .overdue = pr->overdue,
            .has_success = pr->has_success,
            .last_success = pr->last_success,
            .overdue_start = pr->overdue_start,
            .next_run = pr->next_run,
            .started_slot = pr->started_slot,
            .enrolled = pr->enrolled,
            .backups = pr->backups,
            .nbackups = pr->nbackups,
        };
    }
    char why[768];
    bool checking = false;
    struct ctl_policy_status_input in = {
        .policy = &e->p,
        .limit = e->limit,
        .conditions = e->conditions,
        .tzdata_version = tz_db_version(c->db),
        .hosts = hosts,
        .nhosts = nhosts,
        .now = ctl_now(c),
    };
    in.blocked =
        ctl_cache_repository_blocked(c, &e->p, why, sizeof(why), &in.blocked_reason, &checking);
    struct ctl_policy_status out;
    ctl_policy_status_build(&in, &out);
    free(hosts);

    char *text = json_dumps(out.status, JSON_COMPACT | JSON_SORT_KEYS);
    if (e->last_status != NULL && strcmp(text, e->last_status) == 0) {
        free(text);
        ctl_policy_status_free(&out);
        return;
    }
    ctl_pace_spend(&e->status_pace, CTL_STATUS_PACE_MS);
    free(e->last_status);
    e->last_status = text;
    /* A Ready reason a person must act on is also an Event, when it first says so. */
    if (out.alarm == NULL) {
        free(e->alarmed);
        e->alarmed = NULL;
    } else if (!checking && out.ready_reason != NULL &&
               (e->alarmed == NULL || strcmp(e->alarmed, out.ready_reason) != 0)) {
        ctl_events_policy(c, e, "Warning", out.ready_reason, out.alarm);
        free(e->alarmed);
        e->alarmed = util_strdup(out.ready_reason);
    }
    json_decref(e->conditions);
    e->conditions = json_incref((json_t *)out.conditions);

    struct util_err err = {0};
    struct kube_resource res = api_in(&api_backuppolicies, e->p.ns);
    json_t *patch = json_pack("{s:O}", "status", out.status);
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
    ctl_policy_status_free(&out);
}

static void ctl_status_soon_cb(uv_timer_t *t);

void ctl_status_flush(struct ctl *c, bool force)
{
    size_t it = 0;
    const char *k;
    void *v;
    uint64_t wait = UINT64_MAX, now_ms = uv_now(c->loop);
    while (util_map_next(&c->policies, &it, &k, &v)) {
        struct ctl_policy_entry *e = v;
        if (!e->status_dirty)
            continue;
        /* Held back by its pace (before it is built: building walks the pairs), it is
         * written when the pace allows, with what it says then. */
        uint64_t w = ctl_pace_wait(&e->status_pace, CTL_STATUS_PACE_MS, CTL_STATUS_BURST, now_ms);
        if (w > 0 && !force) {
            if (w < wait)
                wait = w;
            continue;
        }
        e->status_dirty = false;
        ctl_status_write(c, e);
    }
    if (wait != UINT64_MAX && !c->stopping)
        uv_timer_start(&c->status_soon, ctl_status_soon_cb, wait < 1000 ? 1000 : wait, 0);
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
    ctl_status_flush(c, false);
}

static void ctl_status_soon_cb(uv_timer_t *t)
{
    ctl_status_flush(t->data, false);
}

/*
 * Policy status is written at most once a second: a slot of thousands of runs changes
 * every pair's view many times, and each flush walks the pairs of every changed policy.
 */
void ctl_status_soon(struct ctl *c)
{
    /* A timer set for a paced policy must not hold back another one that may go. */
    if (!c->stopping && (!uv_is_active((uv_handle_t *)&c->status_soon) ||
                         uv_timer_get_due_in(&c->status_soon) > 1000))
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
