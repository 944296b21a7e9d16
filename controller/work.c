/*
 * The work queue: an idle handle reconciles the queued pairs once per loop iteration
 * (reconcile.h decides) and carries the actions out (execute.c); one timer over
 * the heap of wake times queues a pair when its next run, time limit or overdue moment
 * comes. A pair with writes in flight waits for their answers, which queue it again.
 */
#include "ctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void ctl_work_cb(uv_idle_t *h);
static void ctl_wake_cb(uv_timer_t *t);

void ctl_work_kick(struct ctl *c)
{
    if (c->acting && !c->stopping)
        uv_idle_start(&c->work, ctl_work_cb);
}

/* ---- reconciling ---- */

static void ctl_reconcile(struct ctl *c, struct ctl_pair *pr)
{
    struct ctl_policy_entry *e = ctl_cache_policy_of(c, pr);
    int64_t now = ctl_now(c);
    if (e == NULL) {
        /*
         * Backups of a deleted policy go with it (the garbage collector); one made by hand
         * for a policy that does not exist fails with unknown_policy.
         */
        pr->selected = false;
        ctl_heap_remove(&c->heap, pr->id);
        const struct ctl_job **jobs = util_calloc(pr->nbackups + 1, sizeof(*jobs));
        for (size_t i = 0; i < pr->nbackups; i++) {
            char keybuf[CTL_KEY_MAX];
            jobs[i] =
                util_map_get(&c->jobs, ctl_key(keybuf, pr->backups[i]->ns, pr->backups[i]->name));
        }
        struct ctl_pair_input in = {.host = pr->host,
                                    .backups = pr->backups,
                                    .jobs = jobs,
                                    .nbackups = pr->nbackups,
                                    .now = now};
        struct ctl_actions acts;
        struct ctl_pair_output out;
        ctl_actions_init(&acts);
        ctl_reconcile_pair(&in, &c->rcfg, &acts, &out);
        free(jobs);
        for (size_t i = 0; i < acts.n; i++)
            ctl_execute(c, pr, NULL, &acts.v[i]);
        ctl_actions_free(&acts);
        ctl_cache_pair_maybe_drop(c, pr);
        return;
    }
    if (now - e->limit_at >= CTL_LIMIT_REFRESH) {
        e->limit = binding_alert_limit(&e->p.bind, now);
        e->limit_at = now;
    }
    struct ctl_node *node = pr->selected ? util_map_get(&c->nodes, pr->host) : NULL;
    int64_t persisted = ctl_policy_started_slot(&e->p, pr->host);
    if (persisted > pr->started_slot)
        pr->started_slot = persisted;
    const struct ctl_job **jobs = util_calloc(pr->nbackups + 1, sizeof(*jobs));
    for (size_t i = 0; i < pr->nbackups; i++) {
        char keybuf[CTL_KEY_MAX];
        jobs[i] = util_map_get(&c->jobs, ctl_key(keybuf, pr->backups[i]->ns, pr->backups[i]->name));
    }
    char why[768];
    const char *why_reason;
    bool checking;
    struct ctl_pair_input in = {
        .policy = &e->p,
        .host = pr->host,
        .node = node,
        .node_exists = util_map_get(&c->nodes, pr->host) != NULL,
        .blocked = ctl_cache_repository_blocked(c, &e->p, why, sizeof(why), &why_reason, &checking),
        .backups = pr->backups,
        .jobs = jobs,
        .nbackups = pr->nbackups,
        .limit = e->limit,
        .offset = ctl_cache_pair_offset(pr, &e->p.bind),
        .reported_slot = pr->reported_slot,
        .gap_slot = pr->gap_slot,
        .selected_since = pr->selected_since,
        .enrolled = pr->enrolled,
        .started_slot = pr->started_slot,
        .was_overdue = pr->overdue,
        .now = now,
    };
    struct ctl_actions acts;
    struct ctl_pair_output out;
    ctl_actions_init(&acts);
    ctl_reconcile_pair(&in, &c->rcfg, &acts, &out);
    free(jobs);

    pr->missed += out.missed;
    pr->reported_slot = out.reported_slot;
    pr->gap_slot = out.gap_slot;
    if (out.started_slot != pr->started_slot) {
        pr->started_slot = out.started_slot;
        e->status_dirty = true;
    }
    if (pr->running != out.running || pr->overdue != out.overdue ||
        pr->has_success != out.has_success || pr->last_success != out.last_success ||
        pr->next_run != out.next_run)
        e->status_dirty = true;
    pr->running = out.running;
    pr->overdue = out.overdue;
    pr->has_success = out.has_success;
    pr->last_success = out.last_success;
    pr->overdue_start = out.overdue_start;
    pr->next_run = out.next_run;
    for (size_t i = 0; i < acts.n; i++)
        ctl_execute(c, pr, e, &acts.v[i]);
    ctl_actions_free(&acts);
    if (out.wake != INT64_MAX)
        ctl_heap_set(&c->heap, pr->id, out.wake);
    else
        ctl_heap_remove(&c->heap, pr->id);
    c->reconciles++;
}

/* One timer for every pair: it fires at the earliest wake time in the heap. */
static void ctl_arm_timer(struct ctl *c)
{
    uint32_t id;
    int64_t when;
    if (c->stopping || !ctl_heap_peek(&c->heap, &id, &when)) {
        uv_timer_stop(&c->wake_timer);
        return;
    }
    int64_t delay = (when - ctl_now(c)) * 1000;
    uv_timer_start(&c->wake_timer, ctl_wake_cb, delay > 0 ? (uint64_t)delay : 0, 0);
}

static void ctl_work_cb(uv_idle_t *h)
{
    struct ctl *c = h->data;
    uv_idle_stop(h);
    if (!c->acting || c->stopping || !ctl_cache_synced(c))
        return;
    uint64_t t0 = uv_hrtime();
    /*
     * The pairs queued now; a pair marked while reconciled (its own writes come back
     * through the cache) is queued again by ctl_queue_done, for the next round.
     */
    size_t n = ctl_queue_len(&c->queue);
    for (size_t i = 0; i < n; i++) {
        uint32_t id;
        if (!ctl_queue_pop(&c->queue, &id))
            break;
        struct ctl_pair *pr = id < c->nids ? c->by_id[id] : NULL;
        /* A pair with writes in flight waits: their answers queue it again. */
        if (pr != NULL && pr->inflight == 0)
            ctl_reconcile(c, pr);
        ctl_queue_done(&c->queue, id);
    }
    if (ctl_queue_len(&c->queue) > 0)
        ctl_work_kick(c);
    if (n > 0)
        ctl_metrics_observe(&c->reconcile_hist, (double)(uv_hrtime() - t0) / 1e9);
    ctl_status_soon(c);
    ctl_arm_timer(c);
}

static void ctl_wake_cb(uv_timer_t *t)
{
    struct ctl *c = t->data;
    uint32_t id;
    int64_t when;
    int64_t now = ctl_now(c);
    while (ctl_heap_peek(&c->heap, &id, &when) && when <= now) {
        ctl_heap_remove(&c->heap, id);
        ctl_cache_mark(c, c->by_id[id]);
    }
    ctl_arm_timer(c);
}

static void ctl_handle_closed_cb(uv_handle_t *h)
{
}

void ctl_work_init(struct ctl *c)
{
    ctl_heap_init(&c->heap);
    ctl_queue_init(&c->queue);
    uv_timer_init(c->loop, &c->wake_timer);
    c->wake_timer.data = c;
    uv_idle_init(c->loop, &c->work);
    c->work.data = c;
}

void ctl_work_stop(struct ctl *c)
{
    uv_close((uv_handle_t *)&c->wake_timer, ctl_handle_closed_cb);
    uv_close((uv_handle_t *)&c->work, ctl_handle_closed_cb);
}

void ctl_work_close(struct ctl *c)
{
    ctl_heap_close(&c->heap);
    ctl_queue_close(&c->queue);
}
