/*
 * Restores: the controller runs each Restore as a Job of `lode restore` (restorejob.h
 * builds it; docs/restoring.md), one at a time per target, and writes its status and
 * Events.
 *
 * A reflector of its own keeps the Restores (they are few and rarely change); a timer
 * looks at those not finished every CTL_RESTORE_TICK_MS while this replica acts, in
 * the order they were created. A Restore whose target overlaps that of one running, or
 * of one created before it and not finished, waits (Pending, WaitingForTarget). One
 * that may start costs, when it names a policy rather than a snapshot id, one LIST of
 * the namespace's Backups (the newest good snapshot of the policy and host); then one create of the
 * Job and one status patch with an Event. A running one costs one GET of its Job a tick,
 * and while the Job has no ready pod one LIST of its pods too: a pod the kubelet can never
 * start (a file in the way of the target's directories) fails the Restore, PodNotStarted,
 * and its Job is deleted. When the Job has ended, one LIST of its pods reads the result
 * from the termination message, then one status patch and one Event. The Job's name comes from the
 * Restore's uid, so a create repeated after a restart is refused (409) rather than run twice, and
 * the Job's name is in status.jobName before anything else is written.
 *
 * A Restore deleted while it runs: the Job is deleted at once (the garbage collector
 * would too, the Restore owns it), its pod gets SIGTERM and `lode restore --staged`
 * removes what it wrote.
 */
#include "ctl_int.h"
#include "restorejob.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_RESTORE_TICK_MS 2000

struct ctl_restores {
    struct ctl *c;
    struct kube_reflector *refl;
    uv_timer_t timer;
    struct util_map items; /* ns/name -> rst_item */
    bool stopped;
};

/* A Restore as last seen. */
struct rst_item {
    json_t *obj;
    bool busy; /* a request about it is in flight */
};

struct rst_op {
    struct ctl_write w; /* first */
    struct ctl_restores *r;
    char *key;
    char *ns, *name, *uid;
    char *job;
    char *id;
    char *target;
    json_t *job_obj; /* the ended Job, while its pods are read */
    json_t *obj;     /* the Restore, while it starts */
    int64_t started;
};

static void rst_op_free_cb(struct ctl_write *w)
{
    struct rst_op *op = (struct rst_op *)w;
    free(op->key);
    free(op->ns);
    free(op->name);
    free(op->uid);
    free(op->job);
    free(op->id);
    free(op->target);
    json_decref(op->job_obj);
    json_decref(op->obj);
    free(op);
}

static struct rst_op *rst_op_new(struct ctl_restores *r, const struct ctl_restore_spec *s,
                                 bool busy)
{
    struct rst_op *op = util_calloc(1, sizeof(*op));
    char keybuf[CTL_KEY_MAX];
    op->r = r;
    op->key = util_strdup(ctl_key(keybuf, s->ns, s->name));
    op->ns = util_strdup(s->ns);
    op->name = util_strdup(s->name);
    op->uid = util_strdup(s->uid);
    if (busy) {
        struct rst_item *it = util_map_get(&r->items, op->key);
        if (it != NULL)
            it->busy = true;
    }
    ctl_write_track(r->c, &op->w, rst_op_free_cb);
    return op;
}

/* The op is answered: its Restore (NULL when it went) is no longer busy. */
static struct rst_item *rst_op_end(struct rst_op *op)
{
    struct rst_item *it = util_map_get(&op->r->items, op->key);
    if (it != NULL)
        it->busy = false;
    ctl_write_untrack(op->r->c, &op->w);
    return it;
}

static bool rst_ok(const struct kube_result *res)
{
    return res->error == 0 && res->status >= 200 && res->status < 300;
}

static void rst_quiet_cb(const struct kube_result *res, void *arg)
{
    struct rst_op *op = arg;
    if (!rst_ok(res) && !(res->error == 0 && res->status == 404))
        ctl_log(op->r->c, 0, "Restore %s: a write failed: HTTP %ld %s", op->key, res->status,
                res->message ? res->message : "");
    ctl_write_untrack(op->r->c, &op->w);
    rst_op_free_cb(&op->w);
}

/* The status patch's answer is the Restore as it is now: kept, so the next tick does not
 * act on the state before it. */
static void rst_patched_cb(const struct kube_result *res, void *arg)
{
    struct rst_op *op = arg;
    struct rst_item *it = rst_op_end(op);
    if (rst_ok(res) && it != NULL && json_is_object(res->body)) {
        json_decref(it->obj);
        it->obj = json_incref(res->body);
    } else if (!rst_ok(res)) {
        ctl_log(op->r->c, 0, "Restore %s: status not written: HTTP %ld %s", op->key, res->status,
                res->message ? res->message : "");
    }
    rst_op_free_cb(&op->w);
}

/* A status merge patch (taken) of the Restore of s; busy until answered. */
static void rst_patch(struct ctl_restores *r, const struct ctl_restore_spec *s, json_t *patch)
{
    struct util_err err = {0};
    struct kube_resource rr = api_in(&api_restores, s->ns);
    struct rst_op *op = rst_op_new(r, s, true);
    if (kube_merge_patch(r->c->kube, &rr, s->name, "status", patch, rst_patched_cb, op, NULL,
                         &err) != 0) {
        struct kube_result fake = {.error = UTIL_EIO, .message = err.msg};
        rst_patched_cb(&fake, op);
    }
    json_decref(patch);
}

static void rst_event(struct ctl_restores *r, const char *ns, const char *name, const char *uid,
                      const char *type, const char *reason, const char *msg)
{
    struct util_err err = {0};
    struct kube_object_ref ref = {API_GROUP_VERSION, "Restore", ns, name, uid};
    struct ctl_restore_spec s = {.ns = ns, .name = name, .uid = uid};
    struct rst_op *op = rst_op_new(r, &s, false);
    ctl_log(r->c, type[0] == 'W' ? 0 : 1, "event %s %s on Restore %s/%s: %s", type, reason, ns,
            name, msg);
    if (kube_event_create(r->c->kube, &ref, type, reason, msg, CTL_COMPONENT, ctl_now(r->c),
                          rst_quiet_cb, op, NULL, &err) != 0) {
        ctl_write_untrack(r->c, &op->w);
        rst_op_free_cb(&op->w);
    }
}

/* Failed before a Job ran: status and a Warning Event. */
static void rst_fail(struct ctl_restores *r, const struct ctl_restore_spec *s, const char *reason,
                     const char *msg)
{
    json_t *patch = ctl_restore_failed(reason, msg, ctl_now(r->c));
    if (s->path != NULL && (s->node != NULL || s->pvc != NULL)) {
        char *target = ctl_restore_target_text(s);
        json_object_set_new(json_object_get(patch, "status"), "target", json_string(target));
        free(target);
    }
    rst_patch(r, s, patch);
    rst_event(r, s->ns, s->name, s->uid, "Warning", reason, msg);
}

/* ---- a Job that ended ---- */

static void rst_pods_cb(const struct kube_result *res, void *arg)
{
    struct rst_op *op = arg;
    struct ctl_restores *r = op->r;
    const char *reason, *message;
    json_t *patch = ctl_restore_result(op->job_obj, rst_ok(res) ? res->body : NULL, op->started,
                                       ctl_now(r->c), &reason, &message);
    rst_op_end(op);
    struct ctl_restore_spec s = {.ns = op->ns, .name = op->name, .uid = op->uid};
    bool ok = strcmp(json_string_value(ctl_json_path(patch, "status.phase")), "Succeeded") == 0;
    char *msg = util_asprintf("Job %s: %s", op->job, message);
    rst_event(r, op->ns, op->name, op->uid, ok ? "Normal" : "Warning",
              ok ? (strcmp(reason, "DryRun") == 0 ? "DryRun" : "Restored") : reason, msg);
    free(msg);
    rst_patch(r, &s, patch);
    rst_op_free_cb(&op->w);
}

static bool rst_job_ended(const json_t *job)
{
    size_t i;
    const json_t *c;
    json_array_foreach(ctl_json_path(job, "status.conditions"), i, c)
    {
        const char *type = ctl_json_str(c, "type");
        const char *st = ctl_json_str(c, "status");
        if (type != NULL && st != NULL && strcmp(st, "True") == 0 &&
            (strcmp(type, "Complete") == 0 || strcmp(type, "Failed") == 0))
            return true;
    }
    return false;
}

/* Deletes the Job of a Restore that ends or goes while it runs (its pod gets SIGTERM). */
static void rst_delete_job(struct ctl_restores *r, const struct ctl_restore_spec *s,
                           const char *job)
{
    struct util_err err = {0};
    struct rst_op *op = rst_op_new(r, s, false);
    struct kube_resource rj = api_in(&api_jobs, s->ns);
    if (kube_delete(r->c->kube, &rj, job, "Background", rst_quiet_cb, op, NULL, &err) != 0) {
        ctl_write_untrack(r->c, &op->w);
        rst_op_free_cb(&op->w);
    }
}

/* The pods of a Job that has no ready pod: one that can never start fails the Restore. */
static void rst_waiting_pods_cb(const struct kube_result *res, void *arg)
{
    struct rst_op *op = arg;
    struct rst_item *it = rst_op_end(op);
    char *why = it != NULL && rst_ok(res) ? ctl_restore_pod_stuck(res->body) : NULL;
    if (why != NULL) {
        struct ctl_restore_spec s = {.ns = op->ns, .name = op->name, .uid = op->uid};
        rst_delete_job(op->r, &s, op->job);
        rst_fail(op->r, &s, "PodNotStarted", why);
        free(why);
    }
    rst_op_free_cb(&op->w);
}

/* A Job with a pod but none ready yet (status.ready is 0 or not reported). */
static bool rst_job_waiting(const json_t *job)
{
    return json_integer_value(ctl_json_path(job, "status.active")) > 0 &&
           json_integer_value(ctl_json_path(job, "status.ready")) == 0;
}

static void rst_list_pods(struct rst_op *op, kube_result_cb cb)
{
    struct util_err err = {0};
    struct kube_resource rp = {"", "v1", "pods", op->ns};
    char *sel = util_asprintf("job-name=%s", op->job);
    struct kube_list_opts lo = {.label_selector = sel};
    int rc = kube_list(op->r->c->kube, &rp, &lo, cb, op, NULL, &err);
    free(sel);
    if (rc != 0) {
        struct kube_result fake = {.error = rc, .message = err.msg};
        cb(&fake, op);
    }
}

static void rst_job_got_cb(const struct kube_result *res, void *arg)
{
    struct rst_op *op = arg;
    struct ctl_restores *r = op->r;
    if (res->error == 0 && res->status == 404) {
        rst_op_end(op);
        struct ctl_restore_spec s = {.ns = op->ns, .name = op->name, .uid = op->uid};
        char *msg = util_asprintf("the restore Job %s was deleted before its result was read; "
                                  "what it wrote was removed unless the restore had overwrite",
                                  op->job);
        rst_fail(r, &s, "JobDeleted", msg);
        free(msg);
        rst_op_free_cb(&op->w);
        return;
    }
    if (rst_ok(res) && !rst_job_ended(res->body) && rst_job_waiting(res->body)) {
        rst_list_pods(op, rst_waiting_pods_cb); /* one LIST a tick until a pod is ready */
        return;
    }
    if (!rst_ok(res) || !rst_job_ended(res->body)) {
        rst_op_end(op); /* running, or not read: the next tick looks again */
        rst_op_free_cb(&op->w);
        return;
    }
    op->job_obj = json_incref(res->body);
    rst_list_pods(op, rst_pods_cb);
}

static void rst_watch_job(struct ctl_restores *r, const struct ctl_restore_spec *s, const char *job,
                          const json_t *obj)
{
    struct util_err err = {0};
    struct rst_op *op = rst_op_new(r, s, true);
    op->job = util_strdup(job);
    op->started = ctl_json_time(obj, "status.startTime");
    struct kube_resource rj = api_in(&api_jobs, s->ns);
    if (kube_get(r->c->kube, &rj, job, NULL, rst_job_got_cb, op, NULL, &err) != 0) {
        rst_op_end(op);
        rst_op_free_cb(&op->w);
    }
}

/* ---- starting ---- */

static void rst_created_cb(const struct kube_result *res, void *arg)
{
    struct rst_op *op = arg;
    struct ctl_restores *r = op->r;
    struct rst_item *it = rst_op_end(op);
    struct ctl_restore_spec s = {.ns = op->ns, .name = op->name, .uid = op->uid};
    /* 409: an earlier try created it (the name comes from the uid). */
    if (it != NULL && (rst_ok(res) || (res->error == 0 && res->status == 409))) {
        int64_t now = ctl_now(r->c);
        char *msg =
            util_asprintf("Job %s restores snapshot %s into %s", op->job, op->id, op->target);
        json_t *patch = ctl_restore_status(CTL_PHASE_RUNNING, "Running", msg, now);
        json_t *st = json_object_get(patch, "status");
        char buf[UTIL_TIME_BUF];
        util_format_utc(now, buf, sizeof(buf));
        json_object_set_new(st, "jobName", json_string(op->job));
        json_object_set_new(st, "snapshot", json_string(op->id));
        json_object_set_new(st, "target", json_string(op->target));
        if (ctl_json_str(op->obj, "status.startTime") == NULL)
            json_object_set_new(st, "startTime", json_string(buf));
        rst_patch(r, &s, patch);
        rst_event(r, op->ns, op->name, op->uid, "Normal", "Started", msg);
        free(msg);
    } else if (it != NULL) {
        char *msg = util_asprintf("the restore Job %s was refused, retrying: HTTP %ld %s", op->job,
                                  res->status, res->message ? res->message : "no answer");
        rst_event(r, op->ns, op->name, op->uid, "Warning", "JobRefused", msg);
        free(msg);
    }
    rst_op_free_cb(&op->w);
}

/* Creates the Job that restores snapshot id for s (from the object obj). */
static void rst_start(struct ctl_restores *r, const struct ctl_restore_spec *s, const char *id,
                      const json_t *obj)
{
    struct ctl *c = r->c;
    struct util_err err = {0};
    struct ctl_repo_view v;
    const char *repo = s->repository;
    if (repo == NULL) {
        char keybuf[CTL_KEY_MAX];
        struct ctl_policy_entry *e = util_map_get(&c->policies, ctl_key(keybuf, s->ns, s->policy));
        repo = e != NULL && e->p.valid ? e->p.spec.repository : NULL;
    }
    if (repo == NULL || !ctl_repos_get(c->repos, s->ns, repo, &v)) {
        char *msg = util_asprintf("the BackupRepository %s/%s does not exist", s->ns,
                                  repo != NULL ? repo : "(the policy's)");
        rst_fail(r, s, "RepositoryNotFound", msg);
        free(msg);
        return;
    }
    json_t *job = ctl_restore_job_json(s, id, &c->rcfg.job);
    if (ctl_job_set_repository(job, v.obj, &err) != 0) {
        json_decref(job);
        rst_fail(r, s, "RepositoryNotFound", err.msg);
        return;
    }
    struct rst_op *op = rst_op_new(r, s, true);
    char name[CTL_NAME_MAX];
    ctl_restore_job_name(s, name);
    op->job = util_strdup(name);
    op->id = util_strdup(id);
    op->target = ctl_restore_target_text(s);
    op->obj = json_incref((json_t *)obj);
    struct kube_resource rj = api_in(&api_jobs, s->ns);
    int rc = kube_create(c->kube, &rj, job, rst_created_cb, op, NULL, &err);
    json_decref(job);
    if (rc != 0) {
        struct kube_result fake = {.error = rc, .message = err.msg};
        rst_created_cb(&fake, op);
    }
}

/* The policy's Backups are listed: the newest good snapshot is restored. */
static void rst_backups_cb(const struct kube_result *res, void *arg)
{
    struct rst_op *op = arg;
    struct ctl_restores *r = op->r;
    struct rst_item *it = rst_op_end(op);
    struct ctl_restore_spec s;
    struct util_err err = {0};
    if (it != NULL && rst_ok(res) && ctl_restore_spec_read(it->obj, &s, &err) == 0) {
        const char *id = ctl_restore_pick(res->body, s.policy, s.host);
        if (id == NULL) {
            char *msg = util_asprintf(
                "no Backup of policy %s on host %s holds a good snapshot (Succeeded, complete, "
                "not suspicious) among those the controller keeps; name one by "
                "snapshot.id (lode snapshots lists them)",
                s.policy, s.host);
            rst_fail(r, &s, "NoGoodSnapshot", msg);
            free(msg);
        } else {
            rst_start(r, &s, id, it->obj);
        }
        ctl_restore_spec_free(&s);
    } else if (it != NULL && !rst_ok(res)) {
        ctl_log(r->c, 0, "Restore %s: the Backups could not be listed, retrying: HTTP %ld %s",
                op->key, res->status, res->message ? res->message : "");
    }
    rst_op_free_cb(&op->w);
}

static void rst_resolve(struct ctl_restores *r, const struct ctl_restore_spec *s, const json_t *obj)
{
    struct ctl *c = r->c;
    struct util_err err = {0};
    if (s->id != NULL) {
        rst_start(r, s, s->id, obj);
        return;
    }
    char keybuf[CTL_KEY_MAX];
    if (util_map_get(&c->policies, ctl_key(keybuf, s->ns, s->policy)) == NULL) {
        char *msg = util_asprintf("the BackupPolicy %s/%s does not exist", s->ns, s->policy);
        rst_fail(r, s, "PolicyNotFound", msg);
        free(msg);
        return;
    }
    struct rst_op *op = rst_op_new(r, s, true);
    /* Every Backup of the namespace: one made by hand carries no labels, and
     * ctl_restore_pick reads spec.policy and spec.host. */
    struct kube_resource rb = api_in(&api_backups, s->ns);
    struct kube_list_opts lo = {0};
    int rc = kube_list(c->kube, &rb, &lo, rst_backups_cb, op, NULL, &err);
    if (rc != 0) {
        struct kube_result fake = {.error = rc, .message = err.msg};
        rst_backups_cb(&fake, op);
    }
}

/* ---- the tick ---- */

static const char *rst_phase(const json_t *obj)
{
    const char *p = ctl_json_str(obj, "status.phase");
    return p != NULL ? p : "";
}

static bool rst_done(const json_t *obj)
{
    const char *p = rst_phase(obj);
    return strcmp(p, "Succeeded") == 0 || strcmp(p, "Failed") == 0 ||
           ctl_json_path(obj, "metadata.deletionTimestamp") != NULL;
}

/* Creation order: time, then namespace/name. */
static int rst_cmp(const void *a, const void *b)
{
    const struct rst_item *x = *(struct rst_item *const *)a, *y = *(struct rst_item *const *)b;
    int64_t tx = ctl_json_time(x->obj, "metadata.creationTimestamp");
    int64_t ty = ctl_json_time(y->obj, "metadata.creationTimestamp");
    if (tx != ty)
        return tx < ty ? -1 : 1;
    int c = strcmp(ctl_json_str(x->obj, "metadata.namespace"),
                   ctl_json_str(y->obj, "metadata.namespace"));
    return c != 0 ? c
                  : strcmp(ctl_json_str(x->obj, "metadata.name"),
                           ctl_json_str(y->obj, "metadata.name"));
}

/* The first Restore before item i in v whose target overlaps s, or NULL. */
static const struct rst_item *rst_blocker(struct rst_item **v, size_t i,
                                          const struct ctl_restore_spec *s)
{
    for (size_t j = 0; j < i; j++) {
        struct ctl_restore_spec o;
        struct util_err err = {0};
        if (rst_done(v[j]->obj) || ctl_restore_spec_read(v[j]->obj, &o, &err) != 0) {
            ctl_restore_spec_free(&o);
            continue;
        }
        bool overlap = ctl_restore_targets_overlap(s, &o);
        ctl_restore_spec_free(&o);
        if (overlap)
            return v[j];
    }
    return NULL;
}

static void rst_look(struct ctl_restores *r, struct rst_item **v, size_t i)
{
    struct rst_item *it = v[i];
    struct ctl_restore_spec s;
    struct util_err err = {0};
    if (ctl_restore_spec_read(it->obj, &s, &err) != 0) {
        if (s.ns != NULL && s.name != NULL && s.uid != NULL)
            rst_fail(r, &s, "InvalidSpec", err.msg);
        goto free_spec;
    }
    const char *job = ctl_json_str(it->obj, "status.jobName");
    if (strcmp(rst_phase(it->obj), "Running") == 0 && job != NULL) {
        rst_watch_job(r, &s, job, it->obj);
        goto free_spec;
    }
    const struct rst_item *b = rst_blocker(v, i, &s);
    if (b != NULL) {
        char *target = ctl_restore_target_text(&s);
        char *msg = util_asprintf("waits for Restore %s/%s, which restores into the same "
                                  "place (%s): one restore at a time per target",
                                  ctl_json_str(b->obj, "metadata.namespace"),
                                  ctl_json_str(b->obj, "metadata.name"), target);
        const char *was = ctl_json_str(it->obj, "status.message");
        if (was == NULL || strcmp(was, msg) != 0) {
            json_t *patch =
                ctl_restore_status(CTL_PHASE_PENDING, "WaitingForTarget", msg, ctl_now(r->c));
            json_object_set_new(json_object_get(patch, "status"), "target", json_string(target));
            rst_patch(r, &s, patch);
            rst_event(r, s.ns, s.name, s.uid, "Normal", "WaitingForTarget", msg);
        }
        free(msg);
        free(target);
        goto free_spec;
    }
    rst_resolve(r, &s, it->obj);
free_spec:
    ctl_restore_spec_free(&s);
}

static void rst_tick_cb(uv_timer_t *t)
{
    struct ctl_restores *r = t->data;
    struct ctl *c = r->c;
    if (!c->acting || c->stopping || r->refl == NULL || !kube_reflector_synced(r->refl) ||
        !ctl_repos_synced(c->repos) || !ctl_cache_synced(c))
        return;
    size_t n = 0, i = 0;
    const char *k;
    void *val;
    struct rst_item **v = util_calloc(r->items.len + 1, sizeof(*v));
    while (util_map_next(&r->items, &i, &k, &val)) {
        struct rst_item *it = val;
        if (!rst_done(it->obj))
            v[n++] = it;
    }
    qsort(v, n, sizeof(*v), rst_cmp);
    for (i = 0; i < n; i++)
        if (!v[i]->busy)
            rst_look(r, v, i);
    free(v);
}

/* ---- the reflector ---- */

static void rst_put_cb(struct kube_reflector *refl, const char *ns, const char *name, json_t *obj,
                       void *arg)
{
    struct ctl_restores *r = arg;
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, ns, name);
    struct rst_item *it = util_map_get(&r->items, key);
    if (it == NULL) {
        it = util_calloc(1, sizeof(*it));
        util_map_set(&r->items, key, it);
    }
    json_decref(it->obj);
    it->obj = json_incref(obj);
}

static void rst_delete_cb(struct kube_reflector *refl, const char *ns, const char *name,
                          json_t *obj, void *arg)
{
    struct ctl_restores *r = arg;
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, ns, name);
    struct rst_item *it = util_map_get(&r->items, key);
    const json_t *last = obj != NULL ? obj : it != NULL ? it->obj : NULL;
    const char *job = ctl_json_str(last, "status.jobName");
    const char *uid = ctl_json_str(last, "metadata.uid");
    /* Stop a running restore now rather than when the garbage collector comes to it; the
     * pod's SIGTERM makes lode restore remove its stage. */
    if (job != NULL && uid != NULL && r->c->acting && !r->c->stopping && !rst_done(last)) {
        struct ctl_restore_spec s = {.ns = ns, .name = name, .uid = uid};
        ctl_log(r->c, 1, "Restore %s/%s deleted while running: deleting its Job %s", ns, name, job);
        rst_delete_job(r, &s, job);
    }
    if (it != NULL) {
        util_map_del(&r->items, key);
        json_decref(it->obj);
        free(it);
    }
}

void ctl_restores_init(struct ctl *c)
{
    struct ctl_restores *r = util_calloc(1, sizeof(*r));
    r->c = c;
    util_map_init(&r->items);
    uv_timer_init(c->loop, &r->timer);
    r->timer.data = r;
    c->restores = r;
}

/* The reflector is made here, when acting begins: a standby watches no Restores. */
void ctl_restores_start(struct ctl *c)
{
    static const struct kube_reflector_cbs cbs = {
        .add_cb = rst_put_cb, .update_cb = rst_put_cb, .delete_cb = rst_delete_cb};
    struct ctl_restores *r = c->restores;
    struct kube_reflector_opts o;
    struct util_err err = {0};
    memset(&o, 0, sizeof(o));
    o.res = api_in(&api_restores, c->opts.namespace);
    if (r->refl == NULL && kube_reflector_init(c->kube, &r->refl, &o, &cbs, r, &err) != 0) {
        ctl_log(c, 0, "Restores are not watched: %s", err.msg);
        return;
    }
    kube_reflector_start(r->refl);
    uv_timer_start(&r->timer, rst_tick_cb, CTL_RESTORE_TICK_MS, CTL_RESTORE_TICK_MS);
}

static void rst_closed_cb(uv_handle_t *h)
{
}

void ctl_restores_stop(struct ctl *c)
{
    struct ctl_restores *r = c->restores;
    if (r == NULL || r->stopped)
        return;
    r->stopped = true;
    if (r->refl != NULL) {
        kube_reflector_close(r->refl);
        r->refl = NULL;
    }
    uv_close((uv_handle_t *)&r->timer, rst_closed_cb);
}

void ctl_restores_close(struct ctl *c)
{
    struct ctl_restores *r = c->restores;
    size_t i = 0;
    const char *k;
    void *v;
    if (r == NULL)
        return;
    if (r->refl != NULL)
        kube_reflector_close(r->refl);
    while (util_map_next(&r->items, &i, &k, &v)) {
        struct rst_item *it = v;
        json_decref(it->obj);
        free(it);
    }
    util_map_close(&r->items);
    free(r);
    c->restores = NULL;
}
