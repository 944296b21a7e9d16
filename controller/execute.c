/*
 * Carrying out a pair's actions (reconcile.h) with the API client: the creates, status
 * patches, deletes and Events of runs, each a write in flight recorded with the pair,
 * whose answer goes into the cache and queues the pair again (work.c reconciles it).
 * A finished run's result (the agent's, in its pod's termination message) comes from the
 * pod watch, or when it missed the pod's end from one LIST of the Job's pods, before its
 * final status patch.
 */
#include "ctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One write in flight; the pair is found again by key, as it may have gone meanwhile. */
struct ctl_op {
    struct ctl_write w; /* first: the record of the write in flight */
    struct ctl *c;
    char *pair_key;
    char *ns, *name;
    enum ctl_action_type type;
    json_t *status;           /* BACKUP_STATUS of an ended Job: the patch, after the pods */
    int64_t run_time;         /* CREATE_RUN: for the start-delay histogram */
    int64_t slot_time;        /* CREATE_RUN: the slot, for the RateLimited Warning */
    enum ctl_trigger trigger; /* CREATE_JOB: what lodestore_runs_total counts it as; CREATE_RUN */
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

static int ctl_event_create(struct ctl *c, struct ctl_policy_entry *e, const char *ns,
                            const char *name, const char *type, const char *reason,
                            const char *message, struct ctl_op *op, struct util_err *err);

/*
 * A run or Job the API server refused (RBAC, admission, quota, a namespace being
 * deleted) is a person's to fix: a Warning Event says so, on the Backup (Job) or the
 * policy (its Backup does not exist), once per distinct error of the pair, not at every
 * retry.
 */
static void ctl_report_refusal(struct ctl *c, struct ctl_pair *pr, const struct ctl_op *op,
                               const char *why)
{
    uint64_t h = util_hash(why, strlen(why)) | 1;
    if (pr->error_hash == h)
        return;
    pr->error_hash = h;
    struct ctl_policy_entry *e = ctl_cache_policy_of(c, pr);
    bool job = op->type == CTL_ACT_CREATE_JOB;
    char *msg =
        util_asprintf("%s %s/%s was refused, retrying every %ds: %s",
                      job ? "the Job" : "the Backup", op->ns, op->name, CTL_RETRY_SECONDS, why);
    /* About the policy: paced with the others (a fleet refused by RBAC is one Event a
     * policy every few seconds, not one a host). */
    if (!job && e != NULL) {
        ctl_events_policy(c, e, "Warning", "BackupRefused", msg);
        free(msg);
        return;
    }
    struct util_err err = {0};
    struct ctl_op *ev = ctl_op_new(c, pr, CTL_ACT_EVENT, op->ns, job ? op->name : "");
    if (ctl_event_create(c, e, op->ns, job ? op->name : "", "Warning",
                         job ? "JobRefused" : "BackupRefused", msg, ev, &err) != 0) {
        ctl_log(c, 0, "Event about %s/%s: %s", op->ns, op->name, err.msg);
        pr->inflight--;
        ctl_write_untrack(c, &ev->w);
        ctl_op_free_cb(&ev->w);
    }
    free(msg);
}

/* A write ended: the pair may be reconciled again; on failure, in CTL_RETRY_SECONDS. */
static void ctl_op_done(struct ctl_op *op, const struct kube_result *res)
{
    struct ctl *c = op->c;
    struct ctl_pair *pr = ctl_cache_pair_by_key(c, op->pair_key);
    /* 404 and 409 are answers too: the object is gone, or exists (made by an earlier try). */
    bool ok = res->error == 0 && ((res->status >= 200 && res->status < 300) || res->status == 404 ||
                                  res->status == 409);
    char *why = NULL;
    /* Refused because the namespace is being deleted: retried as any failure, quietly,
     * and no refusal Event (the pair goes with the namespace). */
    bool deleting = false;
    if (!ok) {
        char *what = util_asprintf("%s %s/%s", ctl_op_what(op->type), op->ns, op->name);
        deleting = ctl_ns_deleting(c, res, what);
        free(what);
    }
    if (!ok && !deleting && res->error != 0)
        why = util_asprintf("%s", res->message ? res->message : "no answer");
    else if (!ok && !deleting)
        why = util_asprintf("HTTP %ld %s", res->status, res->message ? res->message : "");
    if (why != NULL)
        ctl_log(c, 0, "%s %s/%s failed: %s", ctl_op_what(op->type), op->ns, op->name, why);
    bool create = op->type == CTL_ACT_CREATE_RUN || op->type == CTL_ACT_CREATE_JOB;
    if (pr != NULL && create && ok)
        pr->error_hash = 0;
    /* Refused by the server (4xx but throttling), or not sent because of what the cluster
     * holds (reconcile.h). */
    if (pr != NULL && create && why != NULL && ctl_write_refused(res->status, res->error))
        ctl_report_refusal(c, pr, op, why);
    free(why);
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

/*
 * lodestore_runs_total{result="started"} counts the Jobs created, whatever made their
 * Backup (a slot, a catch-up, a person), once each (a 409 is an earlier try's);
 * caught_up is the part of them that are catch-ups (docs/operator.md).
 */
static void ctl_count_started(struct ctl_op *op)
{
    struct ctl_pair *pr = ctl_cache_pair_by_key(op->c, op->pair_key);
    struct ctl_policy_entry *e = pr != NULL ? ctl_cache_policy_of(op->c, pr) : NULL;
    if (e == NULL)
        return;
    e->started++;
    if (op->trigger == CTL_TRIGGER_CATCH_UP)
        e->caught_up++;
}

static void ctl_simple_cb(const struct kube_result *res, void *arg)
{
    struct ctl_op *op = arg;
    if (op->type == CTL_ACT_CREATE_JOB && res->error == 0 && res->status == 201)
        ctl_count_started(op);
    ctl_write_through(op, res);
    ctl_op_done(op, res);
}

/*
 * A run's Backup exists. Its Job is not created here: the answer queues the pair, and the
 * reconcile that sees a Backup without a Job asks for one (the only route to a Job, so it
 * gets its owner's uid from the cache). Its first status waits CTL_FIRST_STATUS_GRACE
 * (reconcile.h): a run that ends within it costs one status write, not two.
 */
static void ctl_run_created_cb(const struct kube_result *res, void *arg)
{
    struct ctl_op *op = arg;
    struct ctl *c = op->c;
    if (res->error == 0 && res->status == 201) {
        ctl_write_through(op, res);
        /* How late the run started against its run time (slot + jitter offset). */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double now = (double)ts.tv_sec + (double)c->opts.clock_offset + ts.tv_nsec / 1e9;
        double skew = now - (double)op->run_time;
        ctl_metrics_observe(&c->skew_hist, skew > 0 ? skew : 0);
        ctl_log(c, 1, "started %s/%s skew_ms=%.0f", op->ns, op->name, skew * 1000);
        /* Late with requests waiting for the rate limit: the policy is told, once a slot. */
        struct ctl_pair *pr = ctl_cache_pair_by_key(c, op->pair_key);
        struct ctl_policy_entry *e = pr != NULL ? ctl_cache_policy_of(c, pr) : NULL;
        char msg[512];
        if (e != NULL && op->trigger == CTL_TRIGGER_SCHEDULED &&
            ctl_queue_warning(skew, kube_client_queued(c->kube), c->opts.qps, op->slot_time,
                              &e->queued_slot, msg, sizeof(msg)))
            ctl_events_policy(c, e, "Warning", "RateLimited", msg);
    }
    ctl_op_done(op, res);
}

/* An Event about a Backup (name set) or about the policy e (name ""); logged with its object. */
static int ctl_event_create(struct ctl *c, struct ctl_policy_entry *e, const char *ns,
                            const char *name, const char *type, const char *reason,
                            const char *message, struct ctl_op *op, struct util_err *err)
{
    struct kube_object_ref ref;
    if (name[0] != '\0') {
        char keybuf[CTL_KEY_MAX];
        struct ctl_backup *b = util_map_get(&c->backups, ctl_key(keybuf, ns, name));
        ref = (struct kube_object_ref){API_GROUP_VERSION, "Backup", ns, name, b ? b->uid : NULL};
    } else if (e != NULL) {
        ref = (struct kube_object_ref){API_GROUP_VERSION, "BackupPolicy", ns, e->p.name, e->p.uid};
    } else {
        return util_err_set(err, UTIL_EINVAL, "an Event about no object");
    }
    ctl_log(c, type[0] == 'W' ? 0 : 1, "event %s %s on %s %s/%s: %s", type, reason, ref.kind,
            ref.namespace, ref.name, message);
    return kube_event_create(c->kube, &ref, type, reason, message, CTL_COMPONENT, ctl_now(c),
                             ctl_simple_cb, op, NULL, err);
}

/*
 * The agent's result, read once its Job ended: one LIST of the Job's pods (by the
 * job-name label the Job controller sets), then the Backup's final status with the
 * snapshot, or with why there is none. A pod list that cannot be read does not stop
 * the Backup from ending: its status says so.
 */
static void ctl_result_pods_cb(const struct kube_result *res, void *arg)
{
    struct ctl_op *op = arg;
    struct ctl *c = op->c;
    struct util_err err = {0};
    struct ctl_result r;
    bool ok = res->error == 0 && res->status == 200 && json_is_object(res->body);
    if (!ok)
        ctl_log(c, 0, "pods of Job %s/%s not read (%s), so its result is not either", op->ns,
                op->name, res->message && res->message[0] ? res->message : "no answer");
    ctl_backup_result(op->status, ok ? res->body : NULL, ctl_now(c), &r);
    const char *phase = ctl_json_str(op->status, "status.phase");
    bool succeeded = phase != NULL && strcmp(phase, "Succeeded") == 0;
    struct ctl_pair *pr = ctl_cache_pair_by_key(c, op->pair_key);
    struct ctl_policy_entry *e = pr != NULL ? ctl_cache_policy_of(c, pr) : NULL;
    char *msg = NULL;
    const char *type = NULL, *reason = NULL;
    if (r.reported) {
        ctl_log(c, 1, "Backup %s/%s: snapshot %s%s%s", op->ns, op->name, r.id,
                r.suspicious ? " (suspicious)" : "", r.incomplete ? " (incomplete)" : "");
        if (r.incomplete && !r.suspicious) {
            type = "Warning";
            reason = "Incomplete";
            msg = util_asprintf("snapshot %s is incomplete: %s; fix what the agent cannot read "
                                "or leave it out of spec.paths (docs/operator.md)",
                                r.id, r.unread);
        }
        if (r.suspicious) {
            type = "Warning";
            reason = "Suspicious";
            msg = util_asprintf("snapshot %s was marked suspicious by the backup agent%s%s: "
                                "look at what changed on the host before trusting it "
                                "(docs/anomaly.md)",
                                r.id, r.why[0] ? ": " : "", r.why);
        }
    } else if (succeeded && e != NULL && pr != NULL) {
        /*
         * An agent image that reports nothing does so on every host: one Event per policy,
         * paced and combined with its like (docs/operator.md, "Events"), not one a run; the
         * Backup's SnapshotReported condition says it for each run.
         */
        const json_t *conds = ctl_json_path(op->status, "status.conditions");
        const char *why = json_string_value(json_object_get(json_array_get(conds, 0), "message"));
        char *nm = util_asprintf("the backup Job %s/%s on host %s succeeded without reporting a "
                                 "snapshot (%s); is the agent image a Lodestore image of this "
                                 "version?",
                                 op->ns, op->name, pr->host, why ? why : "no result");
        ctl_events_policy(c, e, "Warning", "NoResult", nm);
        free(nm);
    }
    if (msg != NULL && pr != NULL) {
        struct ctl_op *ev = ctl_op_new(c, pr, CTL_ACT_EVENT, op->ns, op->name);
        if (ctl_event_create(c, e, op->ns, op->name, type, reason, msg, ev, &err) != 0)
            ctl_op_fail(ev, UTIL_EINVAL, err.msg);
    }
    free(msg);
    /* A failed hook is the policy author's to fix (docs/operator.md, "Events"): paced and
     * combined with its like per policy, as the other Events about a policy are. */
    if (r.hook[0] != '\0' && e != NULL && pr != NULL) {
        char *hm = util_asprintf("Backup %s/%s on host %s: %s", op->ns, op->name, pr->host, r.hook);
        ctl_events_policy(c, e, "Warning", "HookFailed", hm);
        free(hm);
    }
    bool ioprio_warn = pr != NULL && r.ioprio[0] != '\0' && !pr->ioprio_warned;
    if (pr != NULL)
        pr->ioprio_warned = r.ioprio[0] != '\0';
    if (ioprio_warn) {
        struct ctl_op *ev = ctl_op_new(c, pr, CTL_ACT_EVENT, op->ns, op->name);
        if (ctl_event_create(c, e, op->ns, op->name, "Warning", "IOPriorityIneffective", r.ioprio,
                             ev, &err) != 0)
            ctl_op_fail(ev, UTIL_EINVAL, err.msg);
    }
    struct kube_resource rb = api_in(&api_backups, op->ns);
    json_t *patch = op->status;
    op->status = NULL;
    int rc =
        kube_merge_patch(c->kube, &rb, op->name, "status", patch, ctl_simple_cb, op, NULL, &err);
    json_decref(patch);
    if (rc != 0)
        ctl_op_fail(op, rc, err.msg);
}

static int ctl_read_result(struct ctl *c, struct ctl_op *op, const struct ctl_action *a,
                           struct util_err *err)
{
    /* The pod watch saw how the pod ended: no request (pairs.c). */
    json_t *seen = ctl_cache_take_pod_result(c, a->ns, a->result_job);
    if (seen != NULL) {
        op->status = ctl_backup_status_json(&a->status);
        struct kube_result res = {.status = 200, .body = seen, .reason = "", .message = ""};
        ctl_result_pods_cb(&res, op);
        json_decref(seen);
        return 0;
    }
    struct kube_resource rp = {"", "v1", "pods", a->ns};
    char *sel = util_asprintf("job-name=%s", a->result_job);
    struct kube_list_opts lo = {.label_selector = sel};
    op->status = ctl_backup_status_json(&a->status);
    int rc = kube_list(c->kube, &rp, &lo, ctl_result_pods_cb, op, NULL, err);
    free(sel);
    return rc;
}

/* The Job of a run, with its policy and its repository by reference. */
static json_t *ctl_job_for(struct ctl *c, struct ctl_policy_entry *e, struct ctl_run *run,
                           struct util_err *err)
{
    struct ctl_repo_view v;
    run->policy_document = e->document;
    if (!e->p.valid)
        return util_err_set(err, UTIL_EINVAL, "the policy is not valid"), NULL;
    if (!ctl_repos_get(c->repos, e->p.ns, e->p.spec.repository, &v) || !v.ready)
        return util_err_set(err, UTIL_EINVAL, "its BackupRepository %s/%s is not Ready", e->p.ns,
                            e->p.spec.repository),
               NULL;
    const struct ctl_node *n = util_map_get(&c->nodes, run->host);
    run->host_rro = n != NULL && n->rro;
    json_t *job = ctl_job_json(&e->p.spec, run, &c->rcfg.job);
    if (ctl_backup_job_set_repository(job, v.obj, err) != 0) {
        json_decref(job);
        return NULL;
    }
    return job;
}

/*
 * The node's runtime cannot make the host mount recursively read-only (podsec.h): the
 * backup runs, and the policy is told what that leaves open (docs/security.md, "Backup and
 * GC pods"), paced and combined with its like: a fleet on an older runtime says it of every
 * host at once, at a slot's start, where one Event a run would queue behind the rate limit.
 */
static void ctl_warn_no_rro(struct ctl *c, struct ctl_policy_entry *e, const struct ctl_action *a)
{
    char *msg = util_asprintf(
        "node %s does not report recursive read-only mounts (status.runtimeHandlers): its "
        "file systems mounted below / (/var, /boot, the kubelet's) are writable by the backup "
        "container's root for files root owns (Backup %s/%s); use a runtime that supports them "
        "(containerd 2.0, CRI-O 1.30 or later)",
        a->host, a->ns, a->name);
    ctl_events_policy(c, e, "Warning", "RecursiveReadOnlyUnavailable", msg);
    free(msg);
}

void ctl_execute(struct ctl *c, struct ctl_pair *pr, struct ctl_policy_entry *e,
                 const struct ctl_action *a)
{
    struct util_err err = {0};
    /* An Event about the policy is paced and combined with its like (events.c); the pair
     * does not wait for its answer. */
    if (a->type == CTL_ACT_EVENT && a->name[0] == '\0' && e != NULL) {
        ctl_events_policy(c, e, a->event_type, a->reason, a->message);
        return;
    }
    struct kube_resource rb = api_in(&api_backups, a->ns), rj = api_in(&api_jobs, a->ns);
    struct ctl_op *op = ctl_op_new(c, pr, a->type, a->ns, a->name);
    struct ctl_run run = {.host = a->host,
                          .slot = a->slot,
                          .trigger = a->trigger,
                          .policy_uid = e ? e->p.uid : NULL,
                          .backup_name = a->name,
                          .backup_uid = a->backup_uid,
                          .slot_time = a->status.slot_time,
                          .pin_reason = a->pin_reason};
    json_t *obj = NULL;
    int rc = 0;
    if (e == NULL && (a->type == CTL_ACT_CREATE_RUN || a->type == CTL_ACT_CREATE_JOB)) {
        ctl_op_fail(op, UTIL_EINVAL, "the policy is gone");
        return;
    }
    switch (a->type) {
    case CTL_ACT_CREATE_RUN:
        obj = ctl_backup_json(&e->p.spec, &run);
        op->run_time = a->status.run_time;
        op->slot_time = a->status.slot_time;
        op->trigger = a->trigger;
        rc = kube_create(c->kube, &rb, obj, ctl_run_created_cb, op, NULL, &err);
        break;
    case CTL_ACT_CREATE_JOB:
        op->trigger = a->trigger;
        obj = ctl_job_for(c, e, &run, &err);
        rc = obj != NULL ? kube_create(c->kube, &rj, obj, ctl_simple_cb, op, NULL, &err)
                         : UTIL_EINVAL;
        /* Once per pair and process: every run of the pair would say the same. */
        if (rc == 0 && !run.host_rro && pr != NULL && !pr->rro_warned) {
            pr->rro_warned = true;
            ctl_warn_no_rro(c, e, a);
        }
        break;
    case CTL_ACT_BACKUP_STATUS:
        if (a->result_job != NULL) {
            rc = ctl_read_result(c, op, a, &err);
            break;
        }
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
        rc = ctl_event_create(c, e, a->ns, a->name, a->event_type, a->reason, a->message, op, &err);
        break;
    }
    json_decref(obj);
    if (rc != 0)
        ctl_op_fail(op, rc, err.msg);
}
