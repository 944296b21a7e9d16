/*
 * The (policy, host) pairs, and the Backups and Jobs filed under them: each Backup taken
 * in is reduced to its compact struct (state.h), filed under its pair, and handed to the
 * backup hook; a Job marks its owner Backup's pair. Marking queues the pair and calls
 * the loop's hook (ctl_int.h). Ids of dropped pairs are reused, so the queue and the
 * heap, indexed by id, stay as small as the pair count.
 */
#include "ctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *ctl_pair_key(const char *ns, const char *policy, const char *host)
{
    return util_asprintf("%s/%s\n%s", ns, policy, host);
}

void ctl_cache_mark(struct ctl *c, struct ctl_pair *pr)
{
    ctl_queue_add(&c->queue, pr->id);
    c->work_cb(c);
}

struct ctl_pair *ctl_cache_pair_by_key(struct ctl *c, const char *key)
{
    return util_map_get(&c->pairs, key);
}

/* Ids are reused so the queue and the heap, indexed by id, stay as small as the pair count. */
struct ctl_pair *ctl_cache_pair_get(struct ctl *c, const char *ns, const char *policy,
                                    const char *host, bool create)
{
    char *key = ctl_pair_key(ns, policy, host);
    struct ctl_pair *pr = util_map_get(&c->pairs, key);
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
    pr->offset = -1;
    if (c->nfree > 0) {
        pr->id = c->free_ids[--c->nfree];
    } else {
        c->by_id = util_grow(c->by_id, &c->idcap, c->nids + 1, sizeof(*c->by_id));
        pr->id = (uint32_t)c->nids++;
    }
    c->by_id[pr->id] = pr;
    util_map_set(&c->pairs, key, pr);
    return pr;
}

int64_t ctl_cache_pair_offset(struct ctl_pair *pr, const struct binding *b)
{
    int64_t jitter = b->spec != NULL && b->spec->has_schedule ? b->spec->schedule.jitter : 0;
    if (pr->offset < 0 || pr->offset_jitter != jitter) {
        pr->offset = binding_offset(b, pr->host);
        pr->offset_jitter = jitter;
    }
    return pr->offset;
}

void ctl_cache_pair_free(struct ctl_pair *pr)
{
    free(pr->key);
    free(pr->ns);
    free(pr->policy);
    free(pr->host);
    free(pr->backups);
    free(pr);
}

static void ctl_pair_drop(struct ctl *c, struct ctl_pair *pr)
{
    util_map_del(&c->pairs, pr->key);
    ctl_heap_remove(&c->heap, pr->id);
    c->by_id[pr->id] = NULL;
    c->free_ids = util_grow(c->free_ids, &c->freecap, c->nfree + 1, sizeof(*c->free_ids));
    c->free_ids[c->nfree++] = pr->id;
    ctl_cache_pair_free(pr);
}

void ctl_cache_pair_maybe_drop(struct ctl *c, struct ctl_pair *pr)
{
    if (!pr->selected && pr->nbackups == 0 && pr->inflight == 0)
        ctl_pair_drop(c, pr);
}

struct ctl_policy_entry *ctl_cache_policy_of(struct ctl *c, const struct ctl_pair *pr)
{
    char keybuf[CTL_KEY_MAX];
    return util_map_get(&c->policies, ctl_key(keybuf, pr->ns, pr->policy));
}

/* ---- Backups and Jobs ---- */

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
    struct ctl_policy_entry *e = util_map_get(&c->policies, ctl_key(keybuf, b->ns, b->policy));
    if (e == NULL)
        return;
    if (b->phase == CTL_PHASE_SUCCEEDED)
        e->succeeded++;
    else
        e->failed++;
    if (b->phase == CTL_PHASE_FAILED && b->reason != NULL && strcmp(b->reason, "time_limit") == 0)
        e->time_limit++;
    if (b->phase == CTL_PHASE_SUCCEEDED && b->reason != NULL &&
        strcmp(b->reason, "incomplete") == 0)
        e->incomplete++;
}

/* Files b under its (policy, host) pair, creating the pair, and marks it. */
static void ctl_pair_add_backup(struct ctl *c, struct ctl_backup *b)
{
    struct ctl_pair *pr = ctl_cache_pair_get(c, b->ns, b->policy, b->host, true);
    pr->backups = util_grow(pr->backups, &pr->cap, pr->nbackups + 1, sizeof(*pr->backups));
    pr->backups[pr->nbackups++] = b;
    ctl_cache_mark(c, pr);
}

/* Files a Backup as a watch event or a write's answer brought it; false if it is not one. */
static bool ctl_backup_apply(struct ctl *c, const char *ns, const char *name, json_t *obj)
{
    struct util_err err = {0};
    struct ctl_backup fresh;
    if (ctl_backup_from_json(&fresh, obj, &err) != 0) {
        ctl_log(c, 1, "Backup %s/%s ignored: %s", ns, name, err.msg);
        return false;
    }
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, ns, name);
    struct ctl_backup *b = util_map_get(&c->backups, key);
    if (b != NULL && (strcmp(b->policy, fresh.policy) != 0 || strcmp(b->host, fresh.host) != 0)) {
        /* The spec is immutable (the CRD says so); should it change anyway, move the Backup. */
        struct ctl_pair *old = ctl_cache_pair_get(c, b->ns, b->policy, b->host, false);
        if (old != NULL) {
            ctl_pair_remove_backup(old, b);
            ctl_cache_mark(c, old);
        }
        ctl_backup_free(b);
        *b = fresh;
        ctl_pair_add_backup(c, b);
    } else if (b != NULL) {
        if (!ctl_phase_done(b->phase) && ctl_phase_done(fresh.phase))
            ctl_count_outcome(c, &fresh);
        ctl_backup_free(b);
        *b = fresh; /* in place: the pair's pointer stays valid */
        ctl_cache_mark(c, ctl_cache_pair_get(c, b->ns, b->policy, b->host, true));
    } else {
        b = util_malloc(sizeof(*b));
        *b = fresh;
        util_map_set(&c->backups, key, b);
        ctl_pair_add_backup(c, b);
    }
    c->backup_cb(c, ns, name, obj);
    return true;
}

/*
 * The reflector is told the version a write's answer brought (kube_reflector_note): the
 * watch event of that same version is then not decoded again, nor filed again. Each of
 * a run's writes comes back that way: at a slot most watch events are those.
 */
static void ctl_note_version(struct ctl *c, int which, const char *ns, const char *name,
                             const json_t *obj)
{
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (c->refl[which] != NULL)
        kube_reflector_note(c->refl[which], ns, name, rv);
}

void ctl_cache_put_backup(struct ctl *c, const char *ns, const char *name, json_t *obj)
{
    if (ctl_backup_apply(c, ns, name, obj))
        ctl_note_version(c, CTL_R_BACKUPS, ns, name, obj);
}

void ctl_cache_backup_upsert(struct kube_reflector *r, const char *ns, const char *name,
                             json_t *obj, void *arg)
{
    ctl_backup_apply(arg, ns, name, obj);
}

void ctl_cache_backup_delete(struct kube_reflector *r, const char *ns, const char *name,
                             json_t *obj, void *arg)
{
    struct ctl *c = arg;
    char keybuf[CTL_KEY_MAX];
    struct ctl_backup *b = util_map_del(&c->backups, ctl_key(keybuf, ns, name));
    if (b == NULL)
        return;
    struct ctl_pair *pr = ctl_cache_pair_get(c, b->ns, b->policy, b->host, false);
    if (pr != NULL) {
        ctl_pair_remove_backup(pr, b);
        ctl_cache_mark(c, pr);
    }
    ctl_backup_free(b);
    free(b);
}

/* A Job's change is its owner Backup's pair's business. */
static void ctl_job_touch(struct ctl *c, const struct ctl_job *j)
{
    if (j->owner == NULL)
        return;
    char keybuf[CTL_KEY_MAX];
    struct ctl_backup *b = util_map_get(&c->backups, ctl_key(keybuf, j->ns, j->owner));
    if (b != NULL)
        ctl_cache_mark(c, ctl_cache_pair_get(c, b->ns, b->policy, b->host, true));
}

static bool ctl_str_same(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Whether two versions of a Job differ in what the cache keeps of it (state.h). */
static bool ctl_job_same(const struct ctl_job *a, const struct ctl_job *b)
{
    return ctl_str_same(a->owner, b->owner) && a->started == b->started &&
           a->completed == b->completed && a->finished == b->finished &&
           a->succeeded == b->succeeded && ctl_str_same(a->fail_reason, b->fail_reason) &&
           a->active == b->active && a->deleting == b->deleting;
}

/*
 * A Job's version that changes nothing the cache keeps (the Job controller's counts of
 * ready, terminating and uncounted pods, its finalizer bookkeeping: most of a run's Job
 * events) queues no reconcile of its pair, which could decide nothing new from it.
 */
static bool ctl_job_apply(struct ctl *c, const char *ns, const char *name, json_t *obj)
{
    struct util_err err = {0};
    struct ctl_job *j = util_calloc(1, sizeof(*j));
    if (ctl_job_from_json(j, obj, &err) != 0) {
        free(j);
        return false;
    }
    char keybuf[CTL_KEY_MAX];
    struct ctl_job *old = util_map_set(&c->jobs, ctl_key(keybuf, ns, name), j);
    bool same = old != NULL && ctl_job_same(old, j);
    if (old != NULL) {
        ctl_job_free(old);
        free(old);
    }
    if (!same)
        ctl_job_touch(c, j);
    return true;
}

void ctl_cache_put_job(struct ctl *c, const char *ns, const char *name, json_t *obj)
{
    if (ctl_job_apply(c, ns, name, obj))
        ctl_note_version(c, CTL_R_JOBS, ns, name, obj);
}

void ctl_cache_job_upsert(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                          void *arg)
{
    ctl_job_apply(arg, ns, name, obj);
}

void ctl_cache_job_delete(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                          void *arg)
{
    struct ctl *c = arg;
    char keybuf[CTL_KEY_MAX];
    struct ctl_job *j = util_map_del(&c->jobs, ctl_key(keybuf, ns, name));
    if (j == NULL)
        return;
    ctl_job_touch(c, j);
    ctl_job_free(j);
    free(j);
}

/* ---- the pods of Lodestore's Jobs ---- */

static void ctl_pod_result_free(struct ctl_pod_result *p)
{
    if (p == NULL)
        return;
    free(p->pod);
    free(p->created);
    free(p->reason);
    free(p->message);
    free(p);
}

/*
 * A backup pod whose container ended keeps how it ended until its run's result is read:
 * the Job controller marks the Job finished only after it saw the pod end, so the result
 * is here when the run's reconcile asks for it, and the run's end costs no LIST of pods.
 * A pod whose Backup is already final is not kept (a restart lists every pod still there).
 */
void ctl_cache_pod_upsert(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                          void *arg)
{
    struct ctl *c = arg;
    const char *job = ctl_json_str(obj, "metadata.labels.job-name");
    const json_t *cs;
    const json_t *term = NULL;
    size_t i;
    if (job == NULL)
        return;
    json_array_foreach(ctl_json_path(obj, "status.containerStatuses"), i, cs)
    {
        const char *cname = json_string_value(json_object_get(cs, "name"));
        if (cname != NULL && strcmp(cname, "backup") == 0)
            term = ctl_json_path(cs, "state.terminated");
    }
    if (!json_is_object(term))
        return;
    char keybuf[CTL_KEY_MAX];
    const char *key = ctl_key(keybuf, ns, job);
    const struct ctl_backup *b = util_map_get(&c->backups, key);
    if (b != NULL && ctl_phase_done(b->phase))
        return;
    const char *created = ctl_json_str(obj, "metadata.creationTimestamp");
    struct ctl_pod_result *old = util_map_get(&c->pod_results, key);
    if (old != NULL && created != NULL && strcmp(old->pod, name) != 0 &&
        strcmp(old->created, created) > 0)
        return; /* an older pod of the Job */
    struct ctl_pod_result *p = util_calloc(1, sizeof(*p));
    const char *reason = json_string_value(json_object_get(term, "reason"));
    const char *message = json_string_value(json_object_get(term, "message"));
    const json_t *code = json_object_get(term, "exitCode");
    p->pod = util_strdup(name);
    p->created = util_strdup(created != NULL ? created : "");
    p->reason = reason != NULL ? util_strdup(reason) : NULL;
    p->message = message != NULL ? util_strdup(message) : NULL;
    p->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
    ctl_pod_result_free(util_map_set(&c->pod_results, key, p));
}

/*
 * A pod's event matters only once a container of it has terminated (ctl_cache_pod_upsert
 * reads nothing else): one without the member name "terminated" anywhere in its text (the
 * API server escapes no letter) is not decoded. The watch asks only for ended pods
 * (cache.c), so few such events come; this keeps one that does from costing a decode.
 */
bool ctl_cache_pod_skip(const struct kube_watch_peek *peek, void *arg)
{
    static const char needle[] = "\"terminated\"";
    const size_t n = sizeof(needle) - 1;
    const char *p = peek->line, *end = peek->line + peek->len;
    while ((size_t)(end - p) >= n && (p = memchr(p, '"', (size_t)(end - p) - n + 1)) != NULL) {
        if (memcmp(p, needle, n) == 0)
            return false;
        p++;
    }
    return true;
}

void ctl_cache_pod_delete(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                          void *arg)
{
    struct ctl *c = arg;
    const char *job = ctl_json_str(obj, "metadata.labels.job-name");
    char keybuf[CTL_KEY_MAX];
    if (job == NULL)
        return;
    const char *key = ctl_key(keybuf, ns, job);
    struct ctl_pod_result *p = util_map_get(&c->pod_results, key);
    if (p != NULL && strcmp(p->pod, name) == 0)
        ctl_pod_result_free(util_map_del(&c->pod_results, key));
}

json_t *ctl_cache_take_pod_result(struct ctl *c, const char *ns, const char *job)
{
    char keybuf[CTL_KEY_MAX];
    struct ctl_pod_result *p = util_map_del(&c->pod_results, ctl_key(keybuf, ns, job));
    if (p == NULL)
        return NULL;
    json_t *term = json_object();
    if (p->exit_code >= 0)
        json_object_set_new(term, "exitCode", json_integer(p->exit_code));
    if (p->reason != NULL)
        json_object_set_new(term, "reason", json_string(p->reason));
    if (p->message != NULL)
        json_object_set_new(term, "message", json_string(p->message));
    json_t *pods = json_pack("{s:[{s:{s:s, s:s}, s:{s:[{s:s, s:{s:o}}]}}]}", "items", "metadata",
                             "name", p->pod, "creationTimestamp", p->created, "status",
                             "containerStatuses", "name", "backup", "state", "terminated", term);
    ctl_pod_result_free(p);
    return pods;
}

void ctl_cache_pod_results_close(struct ctl *c)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->pod_results, &it, &k, &v))
        ctl_pod_result_free(v);
    util_map_close(&c->pod_results);
}
