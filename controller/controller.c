#include "controller.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heap.h"
#include "httpd.h"
#include "leader.h"
#include "map.h"
#include "metrics.h"
#include "queue.h"
#include "state.h"

#ifndef LODE_VERSION
#define LODE_VERSION "0.0.0-dev"
#endif

#define CTL_COMPONENT      "lodestore-controller"
#define CTL_RETRY_SECONDS  10   /* a failed write is looked at again after this */
#define CTL_LIMIT_REFRESH  3600 /* the alert limit is recomputed hourly (it moves with DST) */
#define CTL_OVERDUE_LISTED 20   /* hosts named in a policy's status */

/* One (policy, host): its Backups and what the last reconcile found. */
struct ctl_pair {
    uint32_t id;
    char *key; /* "ns/policy\nhost" */
    char *ns, *policy, *host;
    struct ctl_backup **backups;
    size_t nbackups, cap;
    int64_t reported_slot;
    int inflight; /* writes not yet answered: skip reconciling until they are */
    /* The last reconcile's view, for status and metrics. */
    bool selected, running, overdue, has_success;
    int64_t last_success, overdue_start, next_run;
    uint64_t missed;
};

struct ctl_policy_entry {
    struct ctl_policy p;
    json_t *conditions; /* the status conditions last seen or written, for transition times */
    char *last_status;  /* the status last written, to skip writes that change nothing */
    int64_t limit;
    int64_t limit_at;
    bool status_dirty;
    uint64_t started, caught_up, succeeded, failed, time_limit;
};

struct ctl {
    uv_loop_t *loop;
    struct ctl_options opts;
    char *identity;
    struct tz_db *db;
    struct kube_config cfg;
    struct kube_client *kube;
    struct kube_client
        *lease_kube; /* the Lease's own client: renewals never queue behind creates */
    struct ctl_leader *leader;
    struct ctl_httpd httpd;
    struct kube_reflector *refl[4];
    struct ctl_map policies; /* ns/name -> ctl_policy_entry */
    struct ctl_map nodes;    /* name -> ctl_node */
    struct ctl_map backups;  /* ns/name -> ctl_backup */
    struct ctl_map jobs;     /* ns/name -> ctl_job */
    struct ctl_map pairs;    /* key -> ctl_pair */
    struct ctl_pair **by_id;
    size_t nids, idcap;
    uint32_t *free_ids;
    size_t nfree, freecap;
    struct ctl_queue queue; /* pair ids to reconcile, de-duplicated */
    struct ctl_heap heap;
    uv_timer_t wake_timer;
    uv_idle_t work;
    uv_timer_t status_timer;
    uv_timer_t status_soon; /* one flush a second at most, however busy the loop */
    bool acting;
    bool stopping;
    struct ctl_config rcfg;
    /* metrics */
    struct ctl_metrics_histogram reconcile_hist;
    struct ctl_metrics_histogram skew_hist; /* run created minus run time */
    struct ctl_map api_counts;              /* "VERB code" -> counter (uint64_t*) */
    struct ctl_metrics_histogram api_hist;
    uint64_t reconciles;
};

enum { CTL_R_POLICIES, CTL_R_BACKUPS, CTL_R_JOBS, CTL_R_NODES };

static const struct kube_resource ctl_res_backups = {"lodestore.io", "v1alpha1", "backups", NULL};
static const struct kube_resource ctl_res_jobs = {"batch", "v1", "jobs", NULL};

static void ctl_work_cb(uv_idle_t *h);
static void ctl_wake_cb(uv_timer_t *t);

/* ---- small helpers ---- */

static void ctl_log(const struct ctl *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void ctl_log(const struct ctl *c, int level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "info", "debug"};
    char ts[UTIL_TIME_BUF];
    va_list ap;
    if (level > c->opts.log_level)
        return;
    util_format_utc(ctl_now(c), ts, sizeof(ts));
    fprintf(stderr, "%s %s ", ts, names[level]);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int64_t ctl_now(const struct ctl *c)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec + c->opts.clock_offset;
}

void ctl_options_defaults(struct ctl_options *o)
{
    memset(o, 0, sizeof(*o));
    o->metrics_host = "127.0.0.1";
    o->metrics_port = 8080;
    o->agent_image = "ghcr.io/lodestore/lodestore:latest";
    o->job_ttl = 3600;
    o->history = 5;
    o->qps = 20;
    o->burst = 30;
    o->lease_name = "lodestore-controller";
    o->lease_duration_ms = 15000;
    o->renew_deadline_ms = 10000;
    o->retry_period_ms = 2000;
    o->log_level = 1;
}

/* "ns/name", the key of the namespaced caches, in a caller's buffer (names are bounded). */
#define CTL_KEY_MAX (63 + 1 + 253 + 1)
static const char *ctl_key(char buf[CTL_KEY_MAX], const char *ns, const char *name)
{
    snprintf(buf, CTL_KEY_MAX, "%s/%s", ns, name);
    return buf;
}

static char *ctl_pair_key(const char *ns, const char *policy, const char *host)
{
    return util_asprintf("%s/%s\n%s", ns, policy, host);
}

/* Runs the work callback on the next loop iteration (reconcile dirty pairs, write status). */
static void ctl_kick(struct ctl *c)
{
    if (c->acting && !c->stopping)
        uv_idle_start(&c->work, ctl_work_cb);
}

static void ctl_mark(struct ctl *c, struct ctl_pair *pr)
{
    ctl_queue_add(&c->queue, pr->id);
    ctl_kick(c);
}

static struct ctl_pair *ctl_pair_get(struct ctl *c, const char *ns, const char *policy,
                                     const char *host, bool create)
{
    char *key = ctl_pair_key(ns, policy, host);
    struct ctl_pair *pr = ctl_map_get(&c->pairs, key);
    if (pr != NULL || !create) {
        free(key);
        return pr;
    }
    pr = util_calloc(1, sizeof(*pr));
    pr->key = key;
    pr->ns = util_strdup(ns);
    pr->policy = util_strdup(policy);
    pr->host = util_strdup(host);
    pr->next_run = INT64_MAX;
    if (c->nfree > 0) {
        pr->id = c->free_ids[--c->nfree];
    } else {
        c->by_id = util_grow(c->by_id, &c->idcap, c->nids + 1, sizeof(*c->by_id));
        pr->id = (uint32_t)c->nids++;
    }
    c->by_id[pr->id] = pr;
    ctl_map_set(&c->pairs, key, pr);
    return pr;
}

static void ctl_pair_drop(struct ctl *c, struct ctl_pair *pr)
{
    ctl_map_del(&c->pairs, pr->key);
    ctl_heap_remove(&c->heap, pr->id);
    c->by_id[pr->id] = NULL;
    c->free_ids = util_grow(c->free_ids, &c->freecap, c->nfree + 1, sizeof(*c->free_ids));
    c->free_ids[c->nfree++] = pr->id;
    free(pr->key);
    free(pr->ns);
    free(pr->policy);
    free(pr->host);
    free(pr->backups);
    free(pr);
}

/* A pair with nothing left to watch over goes. */
static void ctl_pair_maybe_drop(struct ctl *c, struct ctl_pair *pr)
{
    if (!pr->selected && pr->nbackups == 0 && pr->inflight == 0)
        ctl_pair_drop(c, pr);
}

static struct ctl_policy_entry *ctl_policy_of(struct ctl *c, const struct ctl_pair *pr)
{
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, pr->ns, pr->policy);
    struct ctl_policy_entry *e = ctl_map_get(&c->policies, key);
    return e;
}

/* ---- informer callbacks ---- */

/*
 * Marks every pair of a policy (ns and policy set) or of a host (host set) for
 * reconciling; with unselect, they are no longer scheduled (kept while they hold Backups).
 */
static void ctl_mark_pairs(struct ctl *c, const char *ns, const char *policy, const char *host,
                           bool unselect)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (ctl_map_next(&c->pairs, &it, &k, &v)) {
        struct ctl_pair *pr = v;
        bool hit = host != NULL ? strcmp(pr->host, host) == 0
                                : strcmp(pr->ns, ns) == 0 && strcmp(pr->policy, policy) == 0;
        if (!hit)
            continue;
        if (unselect)
            pr->selected = false;
        ctl_mark(c, pr);
    }
}

static void ctl_select(struct ctl *c, struct ctl_policy_entry *e, const struct ctl_node *n)
{
    bool match = e->p.valid && ctl_node_matches(n, &e->p.spec);
    struct ctl_pair *pr = ctl_pair_get(c, e->p.ns, e->p.name, n->name, match);
    if (pr == NULL)
        return;
    pr->selected = match;
    ctl_mark(c, pr);
}

static void ctl_policy_entry_free(struct ctl_policy_entry *e)
{
    json_decref(e->conditions);
    free(e->last_status);
    ctl_policy_free(&e->p);
    free(e);
}

static void ctl_policy_upsert(struct kube_reflector *r, const char *ns, const char *name,
                              json_t *obj, void *arg)
{
    struct ctl *c = arg;
    struct util_err err = {0};
    struct ctl_policy_entry *e = util_calloc(1, sizeof(*e));
    if (ctl_policy_from_json(&e->p, obj, c->db, ctl_now(c), &err) != 0) {
        ctl_log(c, 0, "policy %s/%s ignored: %s", ns, name, err.msg);
        free(e);
        return;
    }
    struct ctl_policy_entry *old = ctl_map_set(&c->policies, e->p.key, e);
    if (old != NULL) {
        /* The recorded change time may lag our own write: keep what we know. */
        if (strcmp(old->p.schedule_hash, e->p.schedule_hash) == 0)
            e->p.schedule_changed = old->p.schedule_changed;
        e->last_status = old->last_status;
        old->last_status = NULL;
        e->started = old->started;
        e->caught_up = old->caught_up;
        e->succeeded = old->succeeded;
        e->failed = old->failed;
        e->time_limit = old->time_limit;
        json_decref(old->conditions);
        ctl_policy_free(&old->p);
        free(old);
    }
    e->conditions = json_deep_copy(json_object_get(json_object_get(obj, "status"), "conditions"));
    e->limit =
        sched_alert_limit(e->p.has_sched ? &e->p.sched : NULL,
                          e->p.valid && e->p.spec.has_schedule ? e->p.spec.schedule.jitter : 0,
                          e->p.valid ? e->p.spec.alerts_max_age : 0, ctl_now(c));
    e->limit_at = ctl_now(c);
    e->status_dirty = true;
    ctl_kick(c); /* a policy with no pairs still gets its status */
    if (!e->p.valid)
        ctl_log(c, 1, "policy %s is invalid: %s", e->p.key, e->p.invalid_message);

    /* Every node may now be selected or not; every pair of the policy is looked at. */
    size_t it = 0;
    const char *k;
    void *v;
    while (ctl_map_next(&c->nodes, &it, &k, &v))
        ctl_select(c, e, v);
    ctl_mark_pairs(c, e->p.ns, e->p.name, NULL, false);
}

static void ctl_policy_delete(struct kube_reflector *r, const char *ns, const char *name,
                              json_t *obj, void *arg)
{
    struct ctl *c = arg;
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, ns, name);
    struct ctl_policy_entry *e = ctl_map_del(&c->policies, key);
    if (e == NULL)
        return;
    ctl_mark_pairs(c, ns, name, NULL, true);
    ctl_policy_entry_free(e);
}

static void ctl_node_upsert(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                            void *arg)
{
    struct ctl *c = arg;
    struct util_err err = {0};
    struct ctl_node *n;
    if (ctl_node_from_json(&n, obj, &err) != 0)
        return;
    struct ctl_node *old = ctl_map_set(&c->nodes, n->name, n);
    bool changed = old == NULL || old->ready != n->ready || old->nlabels != n->nlabels ||
                   memcmp(old->labels, n->labels, n->nlabels * sizeof(*n->labels)) != 0 ||
                   old->created != n->created;
    if (old != NULL)
        ctl_node_free(old);
    if (!changed)
        return; /* status heartbeats change nothing we decide with */
    size_t it = 0;
    const char *k;
    void *v;
    while (ctl_map_next(&c->policies, &it, &k, &v)) {
        ctl_select(c, v, n);
        ((struct ctl_policy_entry *)v)->status_dirty = true;
    }
}

static void ctl_node_delete(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                            void *arg)
{
    struct ctl *c = arg;
    struct ctl_node *n = ctl_map_del(&c->nodes, name);
    if (n == NULL)
        return;
    ctl_mark_pairs(c, NULL, NULL, name, true);
    size_t it = 0;
    const char *k;
    void *v;
    while (ctl_map_next(&c->policies, &it, &k, &v))
        ((struct ctl_policy_entry *)v)->status_dirty = true;
    ctl_kick(c);
    ctl_node_free(n);
}

static void ctl_pair_remove_backup(struct ctl_pair *pr, const struct ctl_backup *b)
{
    for (size_t i = 0; i < pr->nbackups; i++) {
        if (pr->backups[i] == b) {
            pr->backups[i] = pr->backups[--pr->nbackups];
            return;
        }
    }
}

/* A run that the cache sees end, once: the counters of lodestore_runs_total. */
static void ctl_count_outcome(struct ctl *c, const struct ctl_backup *b)
{
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, b->ns, b->policy);
    struct ctl_policy_entry *e = ctl_map_get(&c->policies, key);
    if (e == NULL)
        return;
    if (b->phase == CTL_PHASE_SUCCEEDED)
        e->succeeded++;
    else
        e->failed++;
    if (b->phase == CTL_PHASE_FAILED && b->reason != NULL && strcmp(b->reason, "time_limit") == 0)
        e->time_limit++;
}

/* Files b under its (policy, host) pair, creating the pair, and marks it. */
static void ctl_pair_add_backup(struct ctl *c, struct ctl_backup *b)
{
    struct ctl_pair *pr = ctl_pair_get(c, b->ns, b->policy, b->host, true);
    pr->backups = util_grow(pr->backups, &pr->cap, pr->nbackups + 1, sizeof(*pr->backups));
    pr->backups[pr->nbackups++] = b;
    ctl_mark(c, pr);
}

static void ctl_backup_upsert(struct kube_reflector *r, const char *ns, const char *name,
                              json_t *obj, void *arg)
{
    struct ctl *c = arg;
    struct util_err err = {0};
    struct ctl_backup fresh;
    if (ctl_backup_from_json(&fresh, obj, &err) != 0) {
        ctl_log(c, 1, "Backup %s/%s ignored: %s", ns, name, err.msg);
        return;
    }
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, ns, name);
    struct ctl_backup *b = ctl_map_get(&c->backups, key);
    if (b != NULL && (strcmp(b->policy, fresh.policy) != 0 || strcmp(b->host, fresh.host) != 0)) {
        /* The spec is immutable (the CRD says so); should it change anyway, move the Backup. */
        struct ctl_pair *old = ctl_pair_get(c, b->ns, b->policy, b->host, false);
        if (old != NULL) {
            ctl_pair_remove_backup(old, b);
            ctl_mark(c, old);
        }
        ctl_backup_free(b);
        *b = fresh;
        ctl_pair_add_backup(c, b);
    } else if (b != NULL) {
        if (!ctl_phase_done(b->phase) && ctl_phase_done(fresh.phase))
            ctl_count_outcome(c, &fresh);
        ctl_backup_free(b);
        *b = fresh; /* in place: the pair's pointer stays valid */
        ctl_mark(c, ctl_pair_get(c, b->ns, b->policy, b->host, true));
    } else {
        b = util_malloc(sizeof(*b));
        *b = fresh;
        ctl_map_set(&c->backups, key, b);
        ctl_pair_add_backup(c, b);
    }
}

static void ctl_backup_delete(struct kube_reflector *r, const char *ns, const char *name,
                              json_t *obj, void *arg)
{
    struct ctl *c = arg;
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, ns, name);
    struct ctl_backup *b = ctl_map_del(&c->backups, key);
    if (b == NULL)
        return;
    struct ctl_pair *pr = ctl_pair_get(c, b->ns, b->policy, b->host, false);
    if (pr != NULL) {
        ctl_pair_remove_backup(pr, b);
        ctl_mark(c, pr);
    }
    ctl_backup_free(b);
    free(b);
}

static void ctl_job_touch(struct ctl *c, const struct ctl_job *j)
{
    if (j->owner == NULL)
        return;
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, j->ns, j->owner);
    struct ctl_backup *b = ctl_map_get(&c->backups, key);
    if (b != NULL)
        ctl_mark(c, ctl_pair_get(c, b->ns, b->policy, b->host, true));
}

static void ctl_job_upsert(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                           void *arg)
{
    struct ctl *c = arg;
    struct util_err err = {0};
    struct ctl_job *j = util_calloc(1, sizeof(*j));
    if (ctl_job_from_json(j, obj, &err) != 0) {
        free(j);
        return;
    }
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, ns, name);
    struct ctl_job *old = ctl_map_set(&c->jobs, key, j);
    if (old != NULL) {
        ctl_job_free(old);
        free(old);
    }
    ctl_job_touch(c, j);
}

static void ctl_job_delete(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                           void *arg)
{
    struct ctl *c = arg;
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, ns, name);
    struct ctl_job *j = ctl_map_del(&c->jobs, key);
    if (j == NULL)
        return;
    ctl_job_touch(c, j);
    ctl_job_free(j);
    free(j);
}

static void ctl_synced_cb(struct kube_reflector *r, void *arg)
{
    struct ctl *c = arg;
    for (int i = 0; i < 4; i++)
        if (c->refl[i] == NULL || !kube_reflector_synced(c->refl[i]))
            return;
    ctl_log(c, 1, "caches synced: %zu policies, %zu nodes, %zu backups, %zu jobs", c->policies.len,
            c->nodes.len, c->backups.len, c->jobs.len);
    uv_idle_start(&c->work, ctl_work_cb);
}

static void ctl_reflector_error_cb(struct kube_reflector *r, const char *what, uint64_t delay_ms,
                                   void *arg)
{
    ctl_log(arg, 0, "watch: %s; retrying in %llu ms", what, (unsigned long long)delay_ms);
}

static bool ctl_synced(const struct ctl *c)
{
    for (int i = 0; i < 4; i++)
        if (c->refl[i] == NULL || !kube_reflector_synced(c->refl[i]))
            return false;
    return true;
}

/* ---- carrying out actions ---- */

struct ctl_op {
    struct ctl *c;
    uint32_t pair_id;
    char *pair_key;
    char *ns, *name;
    json_t *status, *job;
    enum ctl_action_type type;
};

static struct ctl_pair *ctl_op_pair(struct ctl_op *op)
{
    return ctl_map_get(&op->c->pairs, op->pair_key);
}

static void ctl_op_free(struct ctl_op *op)
{
    free(op->pair_key);
    free(op->ns);
    free(op->name);
    json_decref(op->status);
    json_decref(op->job);
    free(op);
}

/* A write ended: the pair may be reconciled again; on failure, soon. */
static void ctl_op_done(struct ctl_op *op, const struct kube_result *res, const char *what)
{
    struct ctl *c = op->c;
    struct ctl_pair *pr = ctl_op_pair(op);
    bool ok = res->error == 0 && ((res->status >= 200 && res->status < 300) || res->status == 404 ||
                                  res->status == 409);
    if (!ok && res->error != 0)
        ctl_log(c, 0, "%s %s/%s failed: %s", what, op->ns, op->name,
                res->message ? res->message : "no answer");
    else if (!ok)
        ctl_log(c, 0, "%s %s/%s failed: HTTP %ld %s", what, op->ns, op->name, res->status,
                res->message ? res->message : "");
    if (pr != NULL) {
        pr->inflight--;
        if (!ok)
            ctl_heap_set(&c->heap, pr->id, ctl_now(c) + CTL_RETRY_SECONDS);
        else
            ctl_mark(c, pr);
    }
    ctl_op_free(op);
}

static void ctl_backup_upsert(struct kube_reflector *r, const char *ns, const char *name,
                              json_t *obj, void *arg);
static void ctl_job_upsert(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                           void *arg);

/*
 * The API server answers a write with the object as written: put it in the cache at
 * once, so a reconcile that runs before the watch delivers it does not write again.
 */
static void ctl_write_through(struct ctl *c, enum ctl_action_type type,
                              const struct kube_result *res, const char *ns, const char *name)
{
    if (res->error != 0 || res->status < 200 || res->status >= 300 || !json_is_object(res->body))
        return;
    const char *kind = ctl_json_str(res->body, "kind");
    if (kind == NULL)
        return;
    if (strcmp(kind, "Backup") == 0 &&
        (type == CTL_ACT_CREATE_RUN || type == CTL_ACT_BACKUP_STATUS))
        ctl_backup_upsert(NULL, ns, name, res->body, c);
    else if (strcmp(kind, "Job") == 0 && type == CTL_ACT_CREATE_JOB)
        ctl_job_upsert(NULL, ns, name, res->body, c);
}

static void ctl_simple_cb(const struct kube_result *res, void *arg)
{
    struct ctl_op *op = arg;
    ctl_write_through(op->c, op->type, res, op->ns, op->name);
    static const char *const what[] = {"create run", "create Job",    "status of Backup",
                                       "delete Job", "delete Backup", "event"};
    ctl_op_done(op, res, what[op->type]);
}

static void ctl_run_created_cb(const struct kube_result *res, void *arg)
{
    struct ctl_op *op = arg;
    struct ctl *c = op->c;
    struct util_err err = {0};
    if (res->error == 0 && res->status == 201) {
        ctl_write_through(c, CTL_ACT_CREATE_RUN, res, op->ns, op->name);
        const char *uid = ctl_json_str(res->body, "metadata.uid");
        json_t *owner = json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", CTL_API_VERSION,
                                  "kind", "Backup", "name", op->name, "uid", uid ? uid : "",
                                  "controller", 1, "blockOwnerDeletion", 1);
        json_object_set_new(json_object_get(op->job, "metadata"), "ownerReferences", owner);
        struct ctl_op *st = util_calloc(1, sizeof(*st));
        struct ctl_op *jb = util_calloc(1, sizeof(*jb));
        *st = (struct ctl_op){c,
                              op->pair_id,
                              util_strdup(op->pair_key),
                              util_strdup(op->ns),
                              util_strdup(op->name),
                              NULL,
                              NULL,
                              CTL_ACT_BACKUP_STATUS};
        *jb = (struct ctl_op){c,
                              op->pair_id,
                              util_strdup(op->pair_key),
                              util_strdup(op->ns),
                              util_strdup(op->name),
                              NULL,
                              NULL,
                              CTL_ACT_CREATE_JOB};
        struct kube_resource rb = ctl_res_backups, rj = ctl_res_jobs;
        rb.namespace = rj.namespace = op->ns;
        struct ctl_pair *pr = ctl_op_pair(op);
        if (pr != NULL)
            pr->inflight += 2;
        if (kube_merge_patch(c->kube, &rb, op->name, "status", op->status, ctl_simple_cb, st, NULL,
                             &err) != 0) {
            struct kube_result fake = {.error = UTIL_EIO, .message = err.msg};
            ctl_op_done(st, &fake, "status of Backup");
        }
        if (kube_create(c->kube, &rj, op->job, ctl_simple_cb, jb, NULL, &err) != 0) {
            struct kube_result fake = {.error = UTIL_EIO, .message = err.msg};
            ctl_op_done(jb, &fake, "create Job");
        }
        /* How late the run started against its run time (slot + jitter offset). */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double now = (double)ts.tv_sec + (double)c->opts.clock_offset + ts.tv_nsec / 1e9;
        int64_t run_time = ctl_json_time(op->status, "status.runTime");
        double skew = now - (double)run_time;
        ctl_metrics_observe(&c->skew_hist, skew > 0 ? skew : 0);
        ctl_log(c, 1, "started %s/%s skew_ms=%.0f", op->ns, op->name, skew * 1000);
    }
    ctl_op_done(op, res, "create Backup");
}

static void ctl_execute(struct ctl *c, struct ctl_pair *pr, struct ctl_policy_entry *e,
                        struct ctl_action *a)
{
    struct util_err err = {0};
    struct kube_resource rb = ctl_res_backups, rj = ctl_res_jobs;
    rb.namespace = rj.namespace = a->ns;
    struct ctl_op *op = util_calloc(1, sizeof(*op));
    op->c = c;
    op->pair_id = pr->id;
    op->pair_key = util_strdup(pr->key);
    op->ns = util_strdup(a->ns);
    op->name = util_strdup(a->name);
    op->type = a->type;
    int rc = 0;
    pr->inflight++;
    switch (a->type) {
    case CTL_ACT_CREATE_RUN:
        op->status = json_incref(a->status);
        op->job = json_deep_copy(a->job);
        e->started++;
        if (strcmp(ctl_json_str(a->obj, "spec.trigger"), "catch-up") == 0)
            e->caught_up++;
        rc = kube_create(c->kube, &rb, a->obj, ctl_run_created_cb, op, NULL, &err);
        break;
    case CTL_ACT_CREATE_JOB:
        rc = kube_create(c->kube, &rj, a->obj, ctl_simple_cb, op, NULL, &err);
        break;
    case CTL_ACT_BACKUP_STATUS:
        rc = kube_merge_patch(c->kube, &rb, a->name, "status", a->obj, ctl_simple_cb, op, NULL,
                              &err);
        break;
    case CTL_ACT_DELETE_JOB:
        rc = kube_delete(c->kube, &rj, a->name, "Background", ctl_simple_cb, op, NULL, &err);
        break;
    case CTL_ACT_DELETE_BACKUP:
        rc = kube_delete(c->kube, &rb, a->name, "Background", ctl_simple_cb, op, NULL, &err);
        break;
    case CTL_ACT_EVENT: {
        struct kube_object_ref ref = {CTL_API_VERSION, "BackupPolicy", a->ns, e->p.name, e->p.uid};
        if (a->name[0] != '\0') {
            struct ctl_backup *b;
            char keybuf[CTL_KEY_MAX];
            const char *key = ctl_key(keybuf, a->ns, a->name);
            b = ctl_map_get(&c->backups, key);
            ref = (struct kube_object_ref){CTL_API_VERSION, "Backup", a->ns, a->name,
                                           b ? b->uid : NULL};
        }
        ctl_log(c, 1, "event %s %s: %s", a->event_type, a->reason, a->message);
        rc = kube_event_create(c->kube, &ref, a->event_type, a->reason, a->message, CTL_COMPONENT,
                               ctl_now(c), ctl_simple_cb, op, NULL, &err);
        break;
    }
    }
    if (rc != 0) {
        struct kube_result fake = {.error = rc, .message = err.msg};
        ctl_op_done(op, &fake, "request");
    }
}

/* ---- reconciling ---- */

static void ctl_reconcile(struct ctl *c, struct ctl_pair *pr)
{
    struct ctl_policy_entry *e = ctl_policy_of(c, pr);
    int64_t now = ctl_now(c);
    if (e == NULL) {
        /* Backups of a deleted policy: the garbage collector removes them with it. */
        pr->selected = false;
        ctl_heap_remove(&c->heap, pr->id);
        ctl_pair_maybe_drop(c, pr);
        return;
    }
    if (now - e->limit_at >= CTL_LIMIT_REFRESH) {
        e->limit =
            sched_alert_limit(e->p.has_sched ? &e->p.sched : NULL,
                              e->p.valid && e->p.spec.has_schedule ? e->p.spec.schedule.jitter : 0,
                              e->p.valid ? e->p.spec.alerts_max_age : 0, now);
        e->limit_at = now;
    }
    struct ctl_node *node = pr->selected ? ctl_map_get(&c->nodes, pr->host) : NULL;
    const struct ctl_job **jobs = util_calloc(pr->nbackups + 1, sizeof(*jobs));
    for (size_t i = 0; i < pr->nbackups; i++) {
        char keybuf[CTL_KEY_MAX];
        const char *key = ctl_key(keybuf, pr->backups[i]->ns, pr->backups[i]->name);
        jobs[i] = ctl_map_get(&c->jobs, key);
    }
    struct ctl_pair_input in = {
        .policy = &e->p,
        .host = pr->host,
        .node = node,
        .backups = pr->backups,
        .jobs = jobs,
        .nbackups = pr->nbackups,
        .limit = e->limit,
        .offset = e->p.valid && e->p.spec.has_schedule
                      ? sched_jitter_offset(e->p.ns, e->p.name, pr->host, e->p.spec.schedule.jitter)
                      : 0,
        .reported_slot = pr->reported_slot,
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

static void ctl_status_flush(struct ctl *c);

static void ctl_status_soon_cb(uv_timer_t *t)
{
    ctl_status_flush(t->data);
}

/*
 * Policy status is written at most once a second: a slot of thousands of runs changes
 * every pair's view many times, and each flush walks the pairs of every changed policy.
 */
static void ctl_status_soon(struct ctl *c)
{
    if (!c->stopping && !uv_is_active((uv_handle_t *)&c->status_soon))
        uv_timer_start(&c->status_soon, ctl_status_soon_cb, 1000, 0);
}

static void ctl_work_cb(uv_idle_t *h)
{
    struct ctl *c = h->data;
    uv_idle_stop(h);
    if (!c->acting || c->stopping || !ctl_synced(c))
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
        ctl_kick(c);
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
        ctl_mark(c, c->by_id[id]);
    }
    ctl_arm_timer(c);
}

/* ---- policy status ---- */

static json_t *ctl_condition(struct ctl *c, struct ctl_policy_entry *e, const char *type,
                             bool status, const char *reason, const char *message)
{
    const char *st = status ? "True" : "False";
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

static int ctl_overdue_cmp(const void *a, const void *b)
{
    const struct ctl_pair *x = *(struct ctl_pair *const *)a, *y = *(struct ctl_pair *const *)b;
    if (x->overdue_start != y->overdue_start)
        return x->overdue_start < y->overdue_start ? -1 : 1;
    return strcmp(x->host, y->host);
}

struct ctl_status_op {
    struct ctl *c;
    char *key;
};

static void ctl_status_cb(const struct kube_result *res, void *arg)
{
    struct ctl_status_op *op = arg;
    bool ok = res->error == 0 && res->status >= 200 && res->status < 300;
    struct ctl_policy_entry *e = ctl_map_get(&op->c->policies, op->key);
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
    free(op->key);
    free(op);
}

static void ctl_policy_status(struct ctl *c, struct ctl_policy_entry *e)
{
    size_t hosts = 0, running = 0, overdue = 0, nlisted = 0;
    int64_t next = INT64_MAX;
    struct ctl_pair **od = NULL;
    size_t odcap = 0;
    size_t it = 0;
    const char *k;
    void *v;
    char buf[64], lim[32];

    while (ctl_map_next(&c->pairs, &it, &k, &v)) {
        struct ctl_pair *pr = v;
        if (strcmp(pr->ns, e->p.ns) != 0 || strcmp(pr->policy, e->p.name) != 0)
            continue;
        running += pr->running;
        if (!pr->selected)
            continue;
        hosts++;
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

    json_t *conds = json_array();
    if (e->p.valid)
        json_array_append_new(
            conds, ctl_condition(c, e, "Valid", true, "Valid", "the policy passed validation"));
    else
        json_array_append_new(conds,
                              ctl_condition(c, e, "Valid", false, "Invalid", e->p.invalid_message));
    char *msg;
    if (!e->p.valid) {
        json_array_append_new(conds,
                              ctl_condition(c, e, "Ready", false, "Invalid",
                                            "the policy is not valid; see the Valid condition"));
    } else if (hosts == 0) {
        json_array_append_new(conds, ctl_condition(c, e, "Ready", false, "NoMatchingNodes",
                                                   "no node matches the policy's nodeSelector"));
    } else if (!e->p.has_sched) {
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
    if (e->limit == SCHED_NO_LIMIT) {
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
        json_decref(st);
        return;
    }
    free(e->last_status);
    e->last_status = text;
    json_decref(e->conditions);
    e->conditions = json_incref(conds);

    struct util_err err = {0};
    struct kube_resource res = {"lodestore.io", "v1alpha1", "backuppolicies", e->p.ns};
    json_t *patch = json_pack("{s:o}", "status", st);
    struct ctl_status_op *op = util_calloc(1, sizeof(*op));
    op->c = c;
    op->key = util_strdup(e->p.key);
    if (kube_merge_patch(c->kube, &res, e->p.name, "status", patch, ctl_status_cb, op, NULL,
                         &err) != 0) {
        ctl_log(c, 0, "status of %s: %s", e->p.key, err.msg);
        free(op->key);
        free(op);
    }
    json_decref(patch);
}

static void ctl_status_flush(struct ctl *c)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (ctl_map_next(&c->policies, &it, &k, &v)) {
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
    if (!c->acting || !ctl_synced(c))
        return;
    size_t it = 0;
    const char *k;
    void *v;
    while (ctl_map_next(&c->policies, &it, &k, &v))
        ((struct ctl_policy_entry *)v)->status_dirty = true;
    ctl_status_flush(c);
}

/* ---- metrics and probes ---- */

static void ctl_observe_cb(const char *verb, long status, int error, uint64_t ms, void *arg)
{
    struct ctl *c = arg;
    char key[48];
    snprintf(key, sizeof(key), "%s %ld", verb, error ? 0L : status);
    uint64_t *n = ctl_map_get(&c->api_counts, key);
    if (n == NULL) {
        n = util_calloc(1, sizeof(*n));
        ctl_map_set(&c->api_counts, key, n);
    }
    (*n)++;
    ctl_metrics_observe(&c->api_hist, (double)ms / 1000.0);
}

static void ctl_metrics_write(struct ctl *c, struct util_buf *b)
{
    size_t it;
    const char *k;
    void *v;
    char pol[600];

    ctl_metrics_family(b, "lodestore_build_info", "gauge",
                       "The version of the controller and of the tz database it schedules with.");
    const char *bl[] = {"version", LODE_VERSION, "tzdata", tz_db_version(c->db), NULL};
    ctl_metrics_sample(b, "lodestore_build_info", bl, 1);
    ctl_metrics_family(b, "lodestore_leader", "gauge",
                       "1 when this replica holds the Lease and acts.");
    ctl_metrics_sample(b, "lodestore_leader", NULL, c->acting);

    ctl_metrics_family(b, "lodestore_policy_valid", "gauge",
                       "1 when the policy passed validation.");
    it = 0;
    while (ctl_map_next(&c->policies, &it, &k, &v)) {
        struct ctl_policy_entry *e = v;
        const char *l[] = {"policy", e->p.key, NULL};
        ctl_metrics_sample(b, "lodestore_policy_valid", l, e->p.valid);
    }
    ctl_metrics_family(b, "lodestore_runs_total", "counter",
                       "Backups started, caught up and finished, by result.");
    it = 0;
    while (ctl_map_next(&c->policies, &it, &k, &v)) {
        struct ctl_policy_entry *e = v;
        const char *r[][2] = {{"started", NULL},
                              {"caught_up", NULL},
                              {"succeeded", NULL},
                              {"failed", NULL},
                              {"time_limit", NULL}};
        uint64_t n[] = {e->started, e->caught_up, e->succeeded, e->failed, e->time_limit};
        for (size_t i = 0; i < 5; i++) {
            const char *l[] = {"policy", e->p.key, "result", r[i][0], NULL};
            ctl_metrics_sample(b, "lodestore_runs_total", l, (double)n[i]);
        }
    }

    static const char *const fams[][3] = {
        {"lodestore_host_last_success_timestamp_seconds", "gauge",
         "When the newest successful backup of the policy on the host finished."},
        {"lodestore_host_alert_limit_seconds", "gauge",
         "How old the last success may get before the host is overdue."},
        {"lodestore_host_overdue", "gauge",
         "1 when the host has had no successful backup within the alert limit."},
        {"lodestore_host_next_run_timestamp_seconds", "gauge",
         "When the host's next scheduled backup starts (slot plus jitter offset)."},
        {"lodestore_host_missed_slots_total", "counter",
         "Slots missed on the host: node not Ready, previous backup running, or too late."},
    };
    for (size_t f = 0; f < 5; f++) {
        ctl_metrics_family(b, fams[f][0], fams[f][1], fams[f][2]);
        it = 0;
        while (ctl_map_next(&c->pairs, &it, &k, &v)) {
            struct ctl_pair *pr = v;
            if (!pr->selected)
                continue;
            struct ctl_policy_entry *e = ctl_policy_of(c, pr);
            if (e == NULL)
                continue;
            snprintf(pol, sizeof(pol), "%s/%s", pr->ns, pr->policy);
            const char *l[] = {"policy", pol, "host", pr->host, NULL};
            switch (f) {
            case 0:
                if (pr->has_success)
                    ctl_metrics_sample(b, fams[f][0], l, (double)pr->last_success);
                break;
            case 1:
                if (e->limit != SCHED_NO_LIMIT)
                    ctl_metrics_sample(b, fams[f][0], l, (double)e->limit);
                break;
            case 2:
                ctl_metrics_sample(b, fams[f][0], l, pr->overdue);
                break;
            case 3:
                if (pr->next_run != INT64_MAX)
                    ctl_metrics_sample(b, fams[f][0], l, (double)pr->next_run);
                break;
            default:
                ctl_metrics_sample(b, fams[f][0], l, (double)pr->missed);
            }
        }
    }
    ctl_metrics_family(b, "lodestore_run_start_delay_seconds", "histogram",
                       "How long after its run time (slot plus jitter offset) a run's Backup was "
                       "created.");
    ctl_metrics_histogram_write(b, "lodestore_run_start_delay_seconds", NULL, &c->skew_hist);
    ctl_metrics_family(b, "lodestore_workqueue_depth", "gauge", "Pairs waiting to be reconciled.");
    ctl_metrics_sample(b, "lodestore_workqueue_depth", NULL, (double)ctl_queue_len(&c->queue));
    ctl_metrics_family(b, "lodestore_reconcile_duration_seconds", "histogram",
                       "Time to reconcile the dirty pairs of one loop iteration.");
    ctl_metrics_histogram_write(b, "lodestore_reconcile_duration_seconds", NULL,
                                &c->reconcile_hist);
    ctl_metrics_family(b, "lodestore_api_requests_total", "counter",
                       "Requests to the Kubernetes API by verb and HTTP code (0: no answer).");
    it = 0;
    while (ctl_map_next(&c->api_counts, &it, &k, &v)) {
        char verb[32], code[16];
        if (sscanf(k, "%31s %15s", verb, code) != 2)
            continue;
        const char *l[] = {"verb", verb, "code", code, NULL};
        ctl_metrics_sample(b, "lodestore_api_requests_total", l, (double)*(uint64_t *)v);
    }
    ctl_metrics_family(b, "lodestore_api_request_duration_seconds", "histogram",
                       "Latency of requests to the Kubernetes API.");
    ctl_metrics_histogram_write(b, "lodestore_api_request_duration_seconds", NULL, &c->api_hist);
}

static int ctl_http_cb(void *arg, const char *method, const char *path, struct util_buf *body,
                       const char **content_type)
{
    struct ctl *c = arg;
    if (strcmp(path, "/healthz") == 0) {
        util_buf_puts(body, "ok\n");
        return 200;
    }
    if (strcmp(path, "/readyz") == 0) {
        /* A standby is ready to take over; a leader once its caches are whole. */
        if (c->acting && !ctl_synced(c)) {
            util_buf_puts(body, "caches not synced\n");
            return 503;
        }
        util_buf_puts(body, c->acting ? "ok: leading\n" : "ok: standby\n");
        return 200;
    }
    if (strcmp(path, "/metrics") == 0) {
        *content_type = "text/plain; version=0.0.4; charset=utf-8";
        ctl_metrics_write(c, body);
        return 200;
    }
    util_buf_puts(body, "not found: try /metrics, /healthz or /readyz\n");
    return 404;
}

/* ---- lifecycle ---- */

static int ctl_reflector(struct ctl *c, int slot, const char *group, const char *version,
                         const char *resource, const char *selector,
                         const struct kube_reflector_cbs *cbs, struct util_err *err)
{
    struct kube_reflector_opts o;
    memset(&o, 0, sizeof(o));
    o.res.group = group;
    o.res.version = version;
    o.res.resource = resource;
    o.res.namespace = strcmp(resource, "nodes") == 0 ? NULL : c->opts.namespace;
    o.label_selector = selector;
    return kube_reflector_init(c->kube, &c->refl[slot], &o, cbs, c, err);
}

static void ctl_start_acting(void *arg)
{
    struct ctl *c = arg;
    if (c->acting || c->stopping)
        return;
    c->acting = true;
    ctl_log(c, 1, "acting as %s%s", c->identity, c->opts.leader_elect ? " (leader)" : "");
    for (int i = 0; i < 4; i++)
        kube_reflector_start(c->refl[i]);
    uv_timer_start(&c->status_timer, ctl_status_timer_cb, 60000, 60000);
}

static void ctl_lost_cb(void *arg)
{
    struct ctl *c = arg;
    /* Acting without the Lease could race the new leader: stop now, the Deployment restarts us. */
    ctl_log(c, 0, "lost the leader Lease; exiting so a new process starts as a candidate");
    exit(1);
}

int ctl_init(struct ctl **out, uv_loop_t *loop, const struct ctl_options *opts,
             struct util_err *err)
{
    struct ctl *c = util_calloc(1, sizeof(*c));
    struct kube_config_opts kopts = {opts->context, false};
    struct kube_client_opts copts;
    char host[256];
    int rc;

    c->loop = loop;
    c->opts = *opts;
    ctl_map_init(&c->policies);
    ctl_map_init(&c->nodes);
    ctl_map_init(&c->backups);
    ctl_map_init(&c->jobs);
    ctl_map_init(&c->pairs);
    ctl_map_init(&c->api_counts);
    ctl_heap_init(&c->heap);
    ctl_queue_init(&c->queue);
    c->rcfg.history = opts->history;
    c->rcfg.job.agent_image = opts->agent_image;
    c->rcfg.job.ttl_seconds = opts->job_ttl;

    if (opts->identity != NULL) {
        c->identity = util_strdup(opts->identity);
    } else if (getenv("POD_NAME") != NULL) {
        c->identity = util_strdup(getenv("POD_NAME"));
    } else {
        if (gethostname(host, sizeof(host)) != 0)
            snprintf(host, sizeof(host), "unknown");
        host[sizeof(host) - 1] = '\0';
        c->identity = util_asprintf("%s_%ld", host, (long)getpid());
    }
    rc = tz_db_open(&c->db, opts->zoneinfo, err);
    if (rc != 0)
        goto free_ctl;
    rc = kube_config_load_default(&c->cfg, opts->kubeconfig, &kopts, err);
    if (rc != 0)
        goto close_db;
    memset(&copts, 0, sizeof(copts));
    copts.qps = opts->qps;
    copts.burst = opts->burst;
    copts.user_agent = "lodestore-controller/" LODE_VERSION;
    copts.observe_cb = ctl_observe_cb;
    copts.cb_arg = c;
    rc = kube_client_init(loop, &c->kube, &c->cfg, &copts, err);
    if (rc != 0)
        goto free_cfg;

    static const struct kube_reflector_cbs pcbs = {ctl_policy_upsert, ctl_policy_upsert,
                                                   ctl_policy_delete, ctl_synced_cb,
                                                   ctl_reflector_error_cb};
    static const struct kube_reflector_cbs bcbs = {ctl_backup_upsert, ctl_backup_upsert,
                                                   ctl_backup_delete, ctl_synced_cb,
                                                   ctl_reflector_error_cb};
    static const struct kube_reflector_cbs jcbs = {ctl_job_upsert, ctl_job_upsert, ctl_job_delete,
                                                   ctl_synced_cb, ctl_reflector_error_cb};
    static const struct kube_reflector_cbs ncbs = {
        ctl_node_upsert, ctl_node_upsert, ctl_node_delete, ctl_synced_cb, ctl_reflector_error_cb};
    if ((rc = ctl_reflector(c, CTL_R_POLICIES, "lodestore.io", "v1alpha1", "backuppolicies", NULL,
                            &pcbs, err)) != 0 ||
        (rc = ctl_reflector(c, CTL_R_BACKUPS, "lodestore.io", "v1alpha1", "backups", NULL, &bcbs,
                            err)) != 0 ||
        (rc = ctl_reflector(c, CTL_R_JOBS, "batch", "v1", "jobs", CTL_LABEL_MANAGED "=" CTL_MANAGER,
                            &jcbs, err)) != 0 ||
        (rc = ctl_reflector(c, CTL_R_NODES, "", "v1", "nodes", NULL, &ncbs, err)) != 0)
        goto close_client;

    if (opts->leader_elect) {
        struct kube_client_opts lopts;
        memset(&lopts, 0, sizeof(lopts));
        lopts.qps = -1; /* one GET and at most one PUT per retry period */
        lopts.timeout_ms = (uint64_t)opts->renew_deadline_ms;
        lopts.user_agent = copts.user_agent;
        rc = kube_client_init(loop, &c->lease_kube, &c->cfg, &lopts, err);
        if (rc != 0)
            goto close_client;
        struct ctl_leader_opts lo = {opts->lease_namespace ? opts->lease_namespace
                                                           : kube_client_namespace(c->kube),
                                     opts->lease_name,
                                     c->identity,
                                     opts->lease_duration_ms,
                                     opts->renew_deadline_ms,
                                     opts->retry_period_ms,
                                     ctl_start_acting,
                                     ctl_lost_cb,
                                     c};
        rc = ctl_leader_init(&c->leader, loop, c->lease_kube, &lo, err);
        if (rc != 0)
            goto close_client;
    }
    rc = ctl_httpd_start(&c->httpd, loop, opts->metrics_host, opts->metrics_port, ctl_http_cb, c,
                         err);
    if (rc != 0)
        goto close_leader;
    uv_timer_init(loop, &c->wake_timer);
    c->wake_timer.data = c;
    uv_timer_init(loop, &c->status_timer);
    c->status_timer.data = c;
    uv_timer_init(loop, &c->status_soon);
    c->status_soon.data = c;
    uv_idle_init(loop, &c->work);
    c->work.data = c;
    *out = c;
    return 0;

close_leader:
    if (c->leader != NULL)
        ctl_leader_close(c->leader);
close_client:
    if (c->lease_kube != NULL)
        kube_client_close(c->lease_kube, NULL, NULL);
    for (int i = 0; i < 4; i++)
        if (c->refl[i] != NULL)
            kube_reflector_close(c->refl[i]);
    kube_client_close(c->kube, NULL, NULL);
free_cfg:
    kube_config_free(&c->cfg);
close_db:
    tz_db_close(c->db);
free_ctl:
    free(c->identity);
    free(c);
    return rc;
}

int ctl_metrics_port(const struct ctl *c)
{
    return c->httpd.port;
}

void ctl_start(struct ctl *c)
{
    ctl_log(c, 1, "lodestore-controller %s, tz database %s, metrics on %s:%d", LODE_VERSION,
            tz_db_version(c->db), c->opts.metrics_host, c->httpd.port);
    if (c->leader != NULL)
        ctl_leader_start(c->leader);
    else
        ctl_start_acting(c);
}

static void ctl_handle_closed_cb(uv_handle_t *h)
{
}

static void ctl_httpd_closed_cb(struct ctl_httpd *s)
{
}

/* The Lease was handed over (or there was none to give up): its client can go. */
static void ctl_lease_released_cb(void *arg)
{
    struct ctl *c = arg;
    ctl_leader_close(c->leader);
    c->leader = NULL;
    kube_client_close(c->lease_kube, NULL, NULL);
    c->lease_kube = NULL;
}

void ctl_stop(struct ctl *c)
{
    if (c->stopping)
        return;
    c->stopping = true;
    ctl_log(c, 1, "stopping");
    if (c->leader != NULL)
        ctl_leader_stop(c->leader, ctl_lease_released_cb, c);
    for (int i = 0; i < 4; i++) {
        if (c->refl[i] != NULL) {
            kube_reflector_close(c->refl[i]);
            c->refl[i] = NULL;
        }
    }
    /* Pending writes (the Lease hand-over among them) are given to the client to finish or drop. */
    kube_client_close(c->kube, NULL, NULL);
    c->kube = NULL;
    uv_close((uv_handle_t *)&c->wake_timer, ctl_handle_closed_cb);
    uv_close((uv_handle_t *)&c->status_timer, ctl_handle_closed_cb);
    uv_close((uv_handle_t *)&c->status_soon, ctl_handle_closed_cb);
    uv_close((uv_handle_t *)&c->work, ctl_handle_closed_cb);
    ctl_httpd_close(&c->httpd, ctl_httpd_closed_cb);
}

void ctl_free(struct ctl *c)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (ctl_map_next(&c->policies, &it, &k, &v)) {
        ctl_policy_entry_free(v);
    }
    it = 0;
    while (ctl_map_next(&c->nodes, &it, &k, &v))
        ctl_node_free(v);
    it = 0;
    while (ctl_map_next(&c->backups, &it, &k, &v)) {
        ctl_backup_free(v);
        free(v);
    }
    it = 0;
    while (ctl_map_next(&c->jobs, &it, &k, &v)) {
        ctl_job_free(v);
        free(v);
    }
    it = 0;
    while (ctl_map_next(&c->api_counts, &it, &k, &v))
        free(v);
    for (size_t i = 0; i < c->nids; i++) {
        struct ctl_pair *pr = c->by_id[i];
        if (pr == NULL)
            continue;
        free(pr->key);
        free(pr->ns);
        free(pr->policy);
        free(pr->host);
        free(pr->backups);
        free(pr);
    }
    ctl_map_close(&c->policies);
    ctl_map_close(&c->nodes);
    ctl_map_close(&c->backups);
    ctl_map_close(&c->jobs);
    ctl_map_close(&c->pairs);
    ctl_map_close(&c->api_counts);
    ctl_heap_close(&c->heap);
    free(c->by_id);
    free(c->free_ids);
    ctl_queue_close(&c->queue);
    kube_config_free(&c->cfg);
    tz_db_close(c->db);
    free(c->identity);
    free(c);
}
