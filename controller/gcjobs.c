/*
 * GC Jobs: the controller runs `lode gc` as a Job for each BackupRepository on the
 * schedule of spec.gc (gcplan.h decides; docs/gc.md, "Run by the controller"), one at
 * a time per repository, and records each outcome in status.gc with an Event.
 *
 * One timer looks at every repository each CTL_GC_TICK_MS while this replica acts. A
 * repository whose GC Job is active costs one GET of the Job a tick; when the Job has
 * ended, one LIST of its pods (by job-name) reads the result from the termination
 * message, then one status patch and one Event. Otherwise a tick is arithmetic (the
 * zone is loaded again only when spec.gc changes). The active Job's name and the slot
 * started are written to status.gc at once, so a restarted controller neither starts a
 * second GC nor loses the first one's result; the Job name is derived from the slot, so
 * a create repeated after a crash is refused (409) rather than run twice.
 */
#include "ctl_int.h"
#include "gcjobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_GC_TICK_MS 5000

struct gc_op {
    struct ctl_write w; /* first */
    struct ctl_gc *g;
    char *key;
    char *job;
    char *uid;
    json_t *job_obj; /* the ended Job, while its pods are read */
    int64_t slot;
};

static void gc_op_free_cb(struct ctl_write *w)
{
    struct gc_op *op = (struct gc_op *)w;
    free(op->key);
    free(op->job);
    free(op->uid);
    json_decref(op->job_obj);
    free(op);
}

static struct gc_op *gc_op_new(struct ctl_gc *g, struct gc_repo *r, const char *job)
{
    struct gc_op *op = util_calloc(1, sizeof(*op));
    char keybuf[CTL_KEY_MAX];
    op->g = g;
    op->key = util_strdup(ctl_key(keybuf, r->ns, r->name));
    op->job = job != NULL ? util_strdup(job) : NULL;
    r->busy = true;
    ctl_write_track(g->c, &op->w, gc_op_free_cb);
    return op;
}

/* The op's repository (it may have gone meanwhile: NULL), no longer busy. */
static struct gc_repo *gc_op_end(struct gc_op *op)
{
    struct gc_repo *r = util_map_get(&op->g->repos, op->key);
    if (r != NULL)
        r->busy = false;
    ctl_write_untrack(op->g->c, &op->w);
    return r;
}

static bool gc_ok(const struct kube_result *res)
{
    return res->error == 0 && res->status >= 200 && res->status < 300;
}

static void gc_quiet_cb(const struct kube_result *res, void *arg)
{
    struct gc_op *op = arg;
    if (!gc_ok(res) && !ctl_ns_deleting(op->g->c, res, "a GC write"))
        ctl_log(op->g->c, 0, "GC of %s: a write failed: HTTP %ld %s", op->key, res->status,
                res->message ? res->message : "");
    gc_op_end(op);
    gc_op_free_cb(&op->w);
}

/* A fire-and-forget status patch ({"gc": gc}, which it takes) about r. */
static void gc_patch(struct ctl_gc *g, struct gc_repo *r, json_t *gc)
{
    struct util_err err = {0};
    struct kube_resource rr = {"lodestore.io", "v1alpha1", "backuprepositories", r->ns};
    json_t *patch = json_pack("{s:{s:o}}", "status", "gc", gc);
    struct gc_op *op = gc_op_new(g, r, NULL);
    if (kube_merge_patch(g->c->kube, &rr, r->name, "status", patch, gc_quiet_cb, op, NULL, &err) !=
        0) {
        ctl_log(g->c, 0, "GC of %s/%s: status not written: %s", r->ns, r->name, err.msg);
        gc_op_end(op);
        gc_op_free_cb(&op->w);
    }
    json_decref(patch);
}

static void gc_event(struct ctl_gc *g, struct gc_repo *r, const char *uid, const char *type,
                     const char *reason, const char *msg)
{
    struct util_err err = {0};
    struct kube_object_ref ref = {API_GROUP_VERSION, "BackupRepository", r->ns, r->name, uid};
    struct gc_op *op = gc_op_new(g, r, NULL);
    ctl_log(g->c, type[0] == 'W' ? 0 : 1, "event %s %s on BackupRepository %s/%s: %s", type, reason,
            r->ns, r->name, msg);
    if (kube_event_create(g->c->kube, &ref, type, reason, msg, CTL_COMPONENT, ctl_now(g->c),
                          gc_quiet_cb, op, NULL, &err) != 0) {
        gc_op_end(op);
        gc_op_free_cb(&op->w);
    }
}

/* The time as status.gc writes it, or JSON null for 0 / INT64_MAX. */
static json_t *gc_time(int64_t t)
{
    char buf[UTIL_TIME_BUF];
    if (t <= 0 || t == INT64_MAX)
        return json_null();
    util_format_utc(t, buf, sizeof(buf));
    return json_string(buf);
}

/* ---- an ended Job's result ---- */

static void gc_pods_cb(const struct kube_result *res, void *arg)
{
    struct gc_op *op = arg;
    struct ctl_gc *g = op->g;
    struct ctl_gc_result out;
    bool ok = gc_ok(res) && json_is_object(res->body);
    ctl_gc_result_read(op->job_obj, ok ? res->body : NULL, ctl_now(g->c), &out);
    struct gc_repo *r = gc_op_end(op);
    if (r != NULL) {
        int64_t end = ctl_json_time(op->job_obj, "status.completionTime");
        json_t *gc = json_pack(
            "{s:o, s:s, s:I, s:I, s:I, s:s, s:n, s:s}", "lastRun",
            gc_time(end > 0 ? end : ctl_now(g->c)), "result",
            out.succeeded ? "Succeeded" : "Failed", "packsDeleted", (json_int_t)out.packs_deleted,
            "bytesFreed", (json_int_t)out.bytes_freed, "durationSeconds", (json_int_t)out.duration,
            "message", out.message, "activeJob", "lastJob", op->job);
        if (out.succeeded) {
            r->has_success = true;
            r->last_success = end > 0 ? end : ctl_now(g->c);
            json_object_set_new(gc, "lastSuccess", gc_time(r->last_success));
            r->succeeded++;
            r->packs_deleted += (uint64_t)(out.packs_deleted > 0 ? out.packs_deleted : 0);
            r->bytes_freed += (uint64_t)(out.bytes_freed > 0 ? out.bytes_freed : 0);
        } else {
            r->failed++;
        }
        r->last_failed = !out.succeeded;
        free(r->job);
        r->job = NULL;
        free(r->result_msg);
        r->result_msg = util_strdup(out.message);
        gc_patch(g, r, gc);
        char *msg = util_asprintf("GC Job %s: %s", op->job, out.message);
        gc_event(g, r, op->uid, out.succeeded ? "Normal" : "Warning",
                 out.succeeded ? "GarbageCollected" : "GarbageCollectionFailed", msg);
        free(msg);
    }
    gc_op_free_cb(&op->w);
}

static void gc_job_got_cb(const struct kube_result *res, void *arg)
{
    struct gc_op *op = arg;
    struct ctl_gc *g = op->g;
    struct util_err err = {0};
    bool failed;
    if (res->error == 0 && res->status == 404) {
        /* Deleted before its result was read (by hand, or its TTL passed while no
         * controller acted): it is over, and said so. */
        struct gc_repo *r = gc_op_end(op);
        if (r != NULL) {
            char *msg =
                util_asprintf("the GC Job %s was deleted before its result was read", op->job);
            json_t *gc =
                json_pack("{s:o, s:s, s:s, s:n, s:s}", "lastRun", gc_time(ctl_now(g->c)), "result",
                          "Failed", "message", msg, "activeJob", "lastJob", op->job);
            r->failed++;
            r->last_failed = true;
            free(r->job);
            r->job = NULL;
            free(r->result_msg);
            r->result_msg = util_strdup(msg);
            gc_patch(g, r, gc);
            gc_event(g, r, op->uid, "Warning", "GarbageCollectionFailed", msg);
            free(msg);
        }
        gc_op_free_cb(&op->w);
        return;
    }
    if (!gc_ok(res) || !ctl_gc_job_ended(res->body, &failed)) {
        gc_op_end(op); /* running, or not read: the next tick looks again */
        gc_op_free_cb(&op->w);
        return;
    }
    op->job_obj = json_incref(res->body);
    struct kube_resource rp = {"", "v1", "pods", NULL};
    struct gc_repo *r = util_map_get(&g->repos, op->key);
    rp.namespace = r != NULL ? r->ns : "";
    char *sel = util_asprintf("job-name=%s", op->job);
    struct kube_list_opts lo = {.label_selector = sel};
    int rc = kube_list(g->c->kube, &rp, &lo, gc_pods_cb, op, NULL, &err);
    free(sel);
    if (rc != 0) {
        struct kube_result fake = {.error = rc, .message = err.msg};
        gc_pods_cb(&fake, op);
    }
}

/* ---- starting a Job ---- */

static void gc_created_cb(const struct kube_result *res, void *arg)
{
    struct gc_op *op = arg;
    struct ctl_gc *g = op->g;
    struct gc_repo *r = gc_op_end(op);
    /* 409: an earlier try of this slot created it. */
    bool ok = gc_ok(res) || (res->error == 0 && res->status == 409);
    if (r != NULL && ok) {
        free(r->job);
        r->job = util_strdup(op->job);
        r->has_last = true;
        r->last_slot = op->slot;
        ctl_log(g->c, 1, "GC of %s/%s: started Job %s", r->ns, r->name, op->job);
        gc_patch(g, r,
                 json_pack("{s:s, s:o}", "activeJob", op->job, "lastSlot", gc_time(op->slot)));
    } else if (r != NULL && !ctl_ns_deleting(g->c, res, "a GC Job")) {
        char *msg = util_asprintf("the GC Job %s was refused, retrying: HTTP %ld %s", op->job,
                                  res->status, res->message ? res->message : "no answer");
        gc_event(g, r, op->uid, "Warning", "GarbageCollectionFailed", msg);
        free(msg);
    }
    gc_op_free_cb(&op->w);
}

/* The largest limits.maxRuntime of the valid policies naming repository ns/name. */
static int64_t gc_max_runtime(struct ctl *c, const char *ns, const char *name)
{
    int64_t *mr = NULL;
    size_t n = 0, cap = 0, i = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->policies, &i, &k, &v)) {
        const struct ctl_policy_entry *e = v;
        if (!e->p.valid || strcmp(e->p.ns, ns) != 0 || e->p.spec.repository == NULL ||
            strcmp(e->p.spec.repository, name) != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            mr = util_realloc(mr, cap * sizeof(*mr));
        }
        mr[n++] = e->p.spec.limits.max_runtime;
    }
    int64_t m = ctl_gc_max_runtime(mr, n);
    free(mr);
    return m;
}

static void gc_start(struct ctl_gc *g, struct gc_repo *r, const struct ctl_repo_view *v,
                     const struct sched_decision *d)
{
    struct ctl *c = g->c;
    struct util_err err = {0};
    char slot[CTL_SLOT_MAX], name[CTL_NAME_MAX];
    ctl_slot_text(d->slot.local, slot);
    ctl_gc_job_name(r->ns, r->name, slot, name);
    const char *uid = ctl_json_str(v->obj, "metadata.uid");
    json_t *job =
        ctl_gc_job_json(r->ns, r->name, uid, name, gc_max_runtime(c, r->ns, r->name), &c->rcfg.job);
    struct gc_op *op = gc_op_new(g, r, name);
    op->slot = d->slot.at;
    op->uid = uid != NULL ? util_strdup(uid) : NULL;
    struct kube_resource rj = api_in(&api_jobs, r->ns);
    int rc = ctl_job_set_repository(job, v->obj, &err);
    if (rc == 0) {
        ctl_gc_job_key_readable(job);
        rc = kube_create(c->kube, &rj, job, gc_created_cb, op, NULL, &err);
    }
    json_decref(job);
    if (rc != 0) {
        struct kube_result fake = {.error = rc, .message = err.msg};
        gc_created_cb(&fake, op);
    }
}

/* ---- the tick ---- */

/*
 * Writes status.gc.nextRun, and message when there is a note (suspended, not Ready, an
 * invalid spec) or one to clear, when they changed since last written: the last run's
 * message stays otherwise.
 */
static void gc_note(struct ctl_gc *g, struct gc_repo *r, int64_t next_run, const char *message)
{
    json_t *gc = json_pack("{s:o, s:s}", "nextRun", gc_time(next_run), "message", message);
    char *text = json_dumps(gc, JSON_COMPACT | JSON_SORT_KEYS);
    if (r->written != NULL && strcmp(r->written, text) == 0) {
        free(text);
        json_decref(gc);
        return;
    }
    bool had_note = r->written != NULL && strstr(r->written, "\"message\":\"\"") == NULL;
    free(r->written);
    r->written = text;
    if (message[0] == '\0' && !had_note)
        json_object_del(gc, "message");
    else if (message[0] == '\0' && r->result_msg != NULL)
        json_object_set_new(gc, "message", json_string(r->result_msg));
    gc_patch(g, r, gc);
}

/* The hash of the schedule and zone status.gc.scheduleHash records, 16 hex digits. */
static void gc_schedule_hash(const char *key, char out[17])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t h = util_hash(key, strlen(key));
    for (int i = 0; i < 16; i++)
        out[i] = hex[(h >> (60 - 4 * i)) & 0xf];
    out[16] = '\0';
}

/*
 * Binds spec.gc's schedule to its zone, again only when it changed. Slots count from
 * the repository's creation, or from when the schedule or zone last changed; that time
 * is kept in status.gc (scheduleHash, scheduleChangedAt) as a policy keeps its own
 * (docs/schedule.md), so a restarted controller does not count the slots of an older
 * schedule. A change seen first by a restarted controller counts from then.
 */
static int gc_bind(struct ctl_gc *g, struct gc_repo *r, const struct ctl_gc_spec *spec,
                   const json_t *obj, struct util_err *err)
{
    char *key = util_asprintf("%s\n%s", spec->schedule, spec->zone);
    if (r->sched_key != NULL && strcmp(r->sched_key, key) == 0) {
        free(key);
        return r->sched_ok ? 0
                           : util_err_set(err, UTIL_EINVAL,
                                          "spec.gc.timezone \"%s\" is "
                                          "not in the time zone database",
                                          spec->zone);
    }
    char hash[17];
    gc_schedule_hash(key, hash);
    int64_t created = ctl_json_time(obj, "metadata.creationTimestamp");
    if (r->sched_key != NULL)
        r->since = ctl_now(g->c); /* changed now: counts from now (docs/schedule.md) */
    else if (r->status_hash[0] == '\0')
        r->since = created; /* never bound: the schedule began with the repository */
    else if (strcmp(r->status_hash, hash) == 0 && r->status_changed_at != 0)
        r->since = r->status_changed_at;
    else
        r->since = ctl_now(g->c); /* changed while no controller acted */
    if (strcmp(r->status_hash, hash) != 0 || r->status_changed_at != r->since) {
        memcpy(r->status_hash, hash, sizeof(hash));
        r->status_changed_at = r->since;
        gc_patch(
            g, r,
            json_pack("{s:s, s:o}", "scheduleHash", hash, "scheduleChangedAt", gc_time(r->since)));
    }
    char since[UTIL_TIME_BUF];
    util_format_utc(r->since, since, sizeof(since));
    ctl_log(g->c, 2, "GC of %s/%s: schedule \"%s\" in %s, slots count from %s", r->ns, r->name,
            spec->schedule, spec->zone, since);
    free(r->sched_key);
    r->sched_key = key;
    tz_zone_free(r->zone);
    r->zone = NULL;
    r->sched_ok = false;
    if (tz_zone_load(&r->zone, g->c->db, spec->zone, err) != 0)
        return UTIL_EINVAL;
    sched_init(&r->sched, &spec->cron, r->zone);
    r->sched_ok = true;
    r->limit = sched_alert_limit(&r->sched, 0, 0, ctl_now(g->c));
    return 0;
}

static void gc_look_cb(const char *ns, const char *name, const struct ctl_repo_view *v, void *arg)
{
    struct ctl_gc *g = arg;
    struct ctl *c = g->c;
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, ns, name);
    struct gc_repo *r = util_map_get(&g->repos, key);
    if (r == NULL) {
        r = util_calloc(1, sizeof(*r));
        r->ns = util_strdup(ns);
        r->name = util_strdup(name);
        util_map_set(&g->repos, key, r);
    }
    if (r->busy)
        return;
    if (!r->seeded) {
        const char *job = ctl_json_str(v->obj, "status.gc.activeJob");
        r->job = job != NULL && job[0] != '\0' ? util_strdup(job) : NULL;
        r->last_slot = ctl_json_time(v->obj, "status.gc.lastSlot");
        r->has_last = r->last_slot != 0;
        const char *hash = ctl_json_str(v->obj, "status.gc.scheduleHash");
        if (hash != NULL && strlen(hash) == 16)
            memcpy(r->status_hash, hash, 17);
        r->status_changed_at = ctl_json_time(v->obj, "status.gc.scheduleChangedAt");
        r->last_success = ctl_json_time(v->obj, "status.gc.lastSuccess");
        r->has_success = r->last_success != 0;
        const char *result = ctl_json_str(v->obj, "status.gc.result");
        r->last_failed = result != NULL && strcmp(result, "Failed") == 0;
        r->created = ctl_json_time(v->obj, "metadata.creationTimestamp");
        r->limit = SCHED_NO_LIMIT;
        r->seeded = true;
    }
    if (r->job != NULL) {
        struct util_err err = {0};
        struct gc_op *op = gc_op_new(g, r, r->job);
        const char *uid = ctl_json_str(v->obj, "metadata.uid");
        op->uid = uid != NULL ? util_strdup(uid) : NULL;
        struct kube_resource rj = api_in(&api_jobs, ns);
        int rc = kube_get(c->kube, &rj, r->job, NULL, gc_job_got_cb, op, NULL, &err);
        if (rc != 0) {
            gc_op_end(op);
            gc_op_free_cb(&op->w);
        }
        return;
    }
    struct ctl_gc_spec spec;
    struct util_err err = {0};
    if (ctl_gc_spec_read(v->obj, &spec, &err) != 0 || gc_bind(g, r, &spec, v->obj, &err) != 0) {
        r->limit = SCHED_NO_LIMIT;
        gc_note(g, r, 0, err.msg);
        return;
    }
    r->suspended = spec.suspend;
    struct ctl_gc_state st = {.ready = v->ready && !spec.suspend,
                              .job_active = false,
                              .since = r->since,
                              .has_last_started = r->has_last,
                              .last_started_slot = r->last_slot};
    struct sched_decision d;
    ctl_gc_decide(&r->sched, &st, ctl_now(c), &d);
    if (d.run) {
        gc_start(g, r, v, &d);
        return;
    }
    const char *why = spec.suspend ? "suspended (spec.gc.suspend)"
                      : !v->ready  ? "waiting for the repository to be Ready"
                                   : "";
    gc_note(g, r, spec.suspend ? 0 : d.next_run, why);
}

static void gc_tick_cb(uv_timer_t *t)
{
    struct ctl_gc *g = t->data;
    if (!g->c->acting || g->c->stopping || !ctl_repos_synced(g->c->repos) ||
        !ctl_cache_synced(g->c))
        return;
    ctl_repos_each(g->c->repos, gc_look_cb, g);
}

void ctl_gc_init(struct ctl *c)
{
    struct ctl_gc *g = util_calloc(1, sizeof(*g));
    g->c = c;
    util_map_init(&g->repos);
    uv_timer_init(c->loop, &g->timer);
    g->timer.data = g;
    c->gc = g;
}

void ctl_gc_start(struct ctl *c)
{
    uv_timer_start(&c->gc->timer, gc_tick_cb, CTL_GC_TICK_MS, CTL_GC_TICK_MS);
}

static void gc_closed_cb(uv_handle_t *h)
{
}

void ctl_gc_stop(struct ctl *c)
{
    if (c->gc == NULL || c->gc->stopped)
        return;
    c->gc->stopped = true;
    uv_close((uv_handle_t *)&c->gc->timer, gc_closed_cb);
}

void ctl_gc_close(struct ctl *c)
{
    struct ctl_gc *g = c->gc;
    size_t i = 0;
    const char *k;
    void *v;
    if (g == NULL)
        return;
    while (util_map_next(&g->repos, &i, &k, &v)) {
        struct gc_repo *r = v;
        free(r->ns);
        free(r->name);
        free(r->job);
        free(r->sched_key);
        free(r->written);
        free(r->result_msg);
        tz_zone_free(r->zone);
        free(r);
    }
    util_map_close(&g->repos);
    free(g);
    c->gc = NULL;
}
