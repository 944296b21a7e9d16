/*
 * The work queue: an idle handle reconciles the queued pairs once per loop iteration
 * (reconcile.h decides) and carries the actions out with the API client; one timer over
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

/* ---- carrying out actions ---- */

/* One write in flight; the pair is found again by key, as it may have gone meanwhile. */
struct ctl_op {
    struct ctl_write w; /* first: the record of the write in flight */
    struct ctl *c;
    char *pair_key;
    char *ns, *name;
    enum ctl_action_type type;
    json_t *status;   /* CREATE_RUN: the first status, patched once the Backup exists */
    int64_t run_time; /* CREATE_RUN: for the start-delay histogram */
};

static void ctl_op_free_cb(struct ctl_write *w);

static struct ctl_op *ctl_op_new(struct ctl *c, struct ctl_pair *pr, enum ctl_action_type type,
                                 const char *ns, const char *name)
{
    struct ctl_op *op = util_calloc(1, sizeof(*op));
    op->c = c;
    op->pair_key = util_strdup(pr->key);
    op->ns = util_strdup(ns);
    op->name = util_strdup(name);
    op->type = type;
    pr->inflight++;
    ctl_write_track(c, &op->w, ctl_op_free_cb);
    return op;
}

static void ctl_op_free_cb(struct ctl_write *w)
{
    struct ctl_op *op = (struct ctl_op *)w;
    free(op->pair_key);
    free(op->ns);
    free(op->name);
    json_decref(op->status);
    free(op);
}

static const char *ctl_op_what(enum ctl_action_type type)
{
    static const char *const what[] = {"create Backup", "create Job",    "status of Backup",
                                       "delete Job",    "delete Backup", "event"};
    return what[type];
}

/* A write ended: the pair may be reconciled again; on failure, in CTL_RETRY_SECONDS. */
static void ctl_op_done(struct ctl_op *op, const struct kube_result *res)
{
    struct ctl *c = op->c;
    struct ctl_pair *pr = ctl_cache_pair_by_key(c, op->pair_key);
    /* 404 and 409 are answers too: the object is gone, or exists (made by an earlier try). */
    bool ok = res->error == 0 && ((res->status >= 200 && res->status < 300) || res->status == 404 ||
                                  res->status == 409);
    if (!ok && res->error != 0)
        ctl_log(c, 0, "%s %s/%s failed: %s", ctl_op_what(op->type), op->ns, op->name,
                res->message ? res->message : "no answer");
    else if (!ok)
        ctl_log(c, 0, "%s %s/%s failed: HTTP %ld %s", ctl_op_what(op->type), op->ns, op->name,
                res->status, res->message ? res->message : "");
    if (pr != NULL) {
        pr->inflight--;
        if (!ok)
            ctl_heap_set(&c->heap, pr->id, ctl_now(c) + CTL_RETRY_SECONDS);
        else
            ctl_cache_mark(c, pr);
    }
    ctl_write_untrack(c, &op->w);
    ctl_op_free_cb(&op->w);
}

/* A request that could not even be sent ends like one that failed. */
static void ctl_op_fail(struct ctl_op *op, int rc, const char *msg)
{
    struct kube_result fake = {.error = rc, .message = msg};
    ctl_op_done(op, &fake);
}

/*
 * The API server answers a write with the object as written: put it in the cache at
 * once, so a reconcile that runs before the watch delivers it does not write again.
 */
static void ctl_write_through(struct ctl_op *op, const struct kube_result *res)
{
    if (res->error != 0 || res->status < 200 || res->status >= 300 || !json_is_object(res->body))
        return;
    const char *kind = ctl_json_str(res->body, "kind");
    if (kind == NULL)
        return;
    if (strcmp(kind, "Backup") == 0 &&
        (op->type == CTL_ACT_CREATE_RUN || op->type == CTL_ACT_BACKUP_STATUS))
        ctl_cache_put_backup(op->c, op->ns, op->name, res->body);
    else if (strcmp(kind, "Job") == 0 && op->type == CTL_ACT_CREATE_JOB)
        ctl_cache_put_job(op->c, op->ns, op->name, res->body);
}

static void ctl_simple_cb(const struct kube_result *res, void *arg)
{
    struct ctl_op *op = arg;
    ctl_write_through(op, res);
    ctl_op_done(op, res);
}

/*
 * A run's Backup exists: its first status follows. Its Job is not created here: the
 * answers queue the pair, and the reconcile that sees a Backup without a Job asks for
 * one (the only route to a Job, so it gets its owner's uid from the cache).
 */
static void ctl_run_created_cb(const struct kube_result *res, void *arg)
{
    struct ctl_op *op = arg;
    struct ctl *c = op->c;
    struct util_err err = {0};
    if (res->error == 0 && res->status == 201) {
        ctl_write_through(op, res);
        struct ctl_pair *pr = ctl_cache_pair_by_key(c, op->pair_key);
        if (pr != NULL) {
            struct ctl_op *st = ctl_op_new(c, pr, CTL_ACT_BACKUP_STATUS, op->ns, op->name);
            struct kube_resource rb = api_in(&api_backups, op->ns);
            int rc = kube_merge_patch(c->kube, &rb, op->name, "status", op->status, ctl_simple_cb,
                                      st, NULL, &err);
            if (rc != 0)
                ctl_op_fail(st, rc, err.msg);
        }
        /* How late the run started against its run time (slot + jitter offset). */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double now = (double)ts.tv_sec + (double)c->opts.clock_offset + ts.tv_nsec / 1e9;
        double skew = now - (double)op->run_time;
        ctl_metrics_observe(&c->skew_hist, skew > 0 ? skew : 0);
        ctl_log(c, 1, "started %s/%s skew_ms=%.0f", op->ns, op->name, skew * 1000);
    }
    ctl_op_done(op, res);
}

static int ctl_execute_event(struct ctl *c, struct ctl_policy_entry *e, const struct ctl_action *a,
                             struct ctl_op *op, struct util_err *err)
{
    struct kube_object_ref ref = {API_GROUP_VERSION, "BackupPolicy", a->ns, e->p.name, e->p.uid};
    if (a->name[0] != '\0') {
        char keybuf[CTL_KEY_MAX];
        struct ctl_backup *b = util_map_get(&c->backups, ctl_key(keybuf, a->ns, a->name));
        ref = (struct kube_object_ref){API_GROUP_VERSION, "Backup", a->ns, a->name,
                                       b ? b->uid : NULL};
    }
    ctl_log(c, 1, "event %s %s: %s", a->event_type, a->reason, a->message);
    return kube_event_create(c->kube, &ref, a->event_type, a->reason, a->message, CTL_COMPONENT,
                             ctl_now(c), ctl_simple_cb, op, NULL, err);
}

static void ctl_execute(struct ctl *c, struct ctl_pair *pr, struct ctl_policy_entry *e,
                        const struct ctl_action *a)
{
    struct util_err err = {0};
    struct kube_resource rb = api_in(&api_backups, a->ns), rj = api_in(&api_jobs, a->ns);
    struct ctl_op *op = ctl_op_new(c, pr, a->type, a->ns, a->name);
    struct ctl_run run = {a->host, a->slot,       a->trigger,         e->p.uid,
                          a->name, a->backup_uid, a->status.slot_time};
    json_t *obj = NULL;
    int rc = 0;
    switch (a->type) {
    case CTL_ACT_CREATE_RUN:
        obj = ctl_backup_json(&e->p.spec, &run);
        op->status = ctl_backup_status_json(&a->status);
        op->run_time = a->status.run_time;
        e->started++;
        if (a->trigger == CTL_TRIGGER_CATCH_UP)
            e->caught_up++;
        rc = kube_create(c->kube, &rb, obj, ctl_run_created_cb, op, NULL, &err);
        break;
    case CTL_ACT_CREATE_JOB:
        obj = ctl_job_json(&e->p.spec, &run, &c->rcfg.job);
        rc = kube_create(c->kube, &rj, obj, ctl_simple_cb, op, NULL, &err);
        break;
    case CTL_ACT_BACKUP_STATUS:
        obj = ctl_backup_status_json(&a->status);
        rc = kube_merge_patch(c->kube, &rb, a->name, "status", obj, ctl_simple_cb, op, NULL, &err);
        break;
    case CTL_ACT_DELETE_JOB:
        rc = kube_delete(c->kube, &rj, a->name, "Background", ctl_simple_cb, op, NULL, &err);
        break;
    case CTL_ACT_DELETE_BACKUP:
        rc = kube_delete(c->kube, &rb, a->name, "Background", ctl_simple_cb, op, NULL, &err);
        break;
    case CTL_ACT_EVENT:
        rc = ctl_execute_event(c, e, a, op, &err);
        break;
    }
    json_decref(obj);
    if (rc != 0)
        ctl_op_fail(op, rc, err.msg);
}

/* ---- reconciling ---- */

static void ctl_reconcile(struct ctl *c, struct ctl_pair *pr)
{
    struct ctl_policy_entry *e = ctl_cache_policy_of(c, pr);
    int64_t now = ctl_now(c);
    if (e == NULL) {
        /* Backups of a deleted policy: the garbage collector removes them with it. */
        pr->selected = false;
        ctl_heap_remove(&c->heap, pr->id);
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
    struct ctl_pair_input in = {
        .policy = &e->p,
        .host = pr->host,
        .node = node,
        .backups = pr->backups,
        .jobs = jobs,
        .nbackups = pr->nbackups,
        .limit = e->limit,
        .offset = binding_offset(&e->p.bind, pr->host),
        .reported_slot = pr->reported_slot,
        .started_slot = pr->started_slot,
        .was_overdue = pr->overdue,
        .now = now,
    };
    struct ctl_actions acts;
    struct ctl_pair_output out;
    ctl_actions_init(&acts);
    ctl_reconcile_pair(&in, &c->rcfg, &acts, &out);
    free(jobs);

    if (out.missed)
        pr->missed++;
    pr->reported_slot = out.reported_slot;
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
