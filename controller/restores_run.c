/*
 * restores_run: the requests of one Restore (restores.c decides when): resolving its
 * snapshot, creating its Job, reading the Job and its pods once it ends, and the status
 * patches and Events that say so. Their costs are in restores.c's design note.
 */
#include "restores_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rst_op_free_cb(struct ctl_write *w)
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

struct rst_op *rst_op_new(struct ctl_restores *r, const struct ctl_restore_spec *s, bool busy)
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

void rst_quiet_cb(const struct kube_result *res, void *arg)
{
    struct rst_op *op = arg;
    if (!rst_ok(res) && !(res->error == 0 && res->status == 404) &&
        !ctl_ns_deleting(op->r->c, res, "a Restore's write"))
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
    } else if (!rst_ok(res) && !ctl_ns_deleting(op->r->c, res, "a Restore's status")) {
        ctl_log(op->r->c, 0, "Restore %s: status not written: HTTP %ld %s", op->key, res->status,
                res->message ? res->message : "");
    }
    rst_op_free_cb(&op->w);
}

/* A status merge patch (taken) of the Restore of s; busy until answered. */
void rst_patch(struct ctl_restores *r, const struct ctl_restore_spec *s, json_t *patch)
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

void rst_event(struct ctl_restores *r, const char *ns, const char *name, const char *uid,
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
void rst_fail(struct ctl_restores *r, const struct ctl_restore_spec *s, const char *reason,
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
void rst_delete_job(struct ctl_restores *r, const struct ctl_restore_spec *s, const char *job)
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

void rst_watch_job(struct ctl_restores *r, const struct ctl_restore_spec *s, const char *job,
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
    } else if (it != NULL && !ctl_ns_deleting(r->c, res, "a restore Job")) {
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

void rst_resolve(struct ctl_restores *r, const struct ctl_restore_spec *s, const json_t *obj)
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
