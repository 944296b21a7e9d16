/*
 * The caches: informer callbacks reduce each object to its compact struct (state.h) and
 * mark the (policy, host) pairs it touches. This file keeps the policies and nodes and
 * runs the four reflectors; the pairs and the Backups and Jobs filed under them are
 * pairs.c's. Nothing here decides or writes.
 */
#include "ctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

static void ctl_synced_cb(struct kube_reflector *r, void *arg);

/* ---- policies and nodes ---- */

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
    while (util_map_next(&c->pairs, &it, &k, &v)) {
        struct ctl_pair *pr = v;
        bool hit = host != NULL ? strcmp(pr->host, host) == 0
                                : strcmp(pr->ns, ns) == 0 && strcmp(pr->policy, policy) == 0;
        if (!hit)
            continue;
        if (unselect) {
            pr->selected = false;
            pr->enrolled = 0;
        }
        ctl_cache_mark(c, pr);
    }
}

/* A pair is created only when the node is selected; an existing one is updated either way. */
static void ctl_select(struct ctl *c, struct ctl_policy_entry *e, const struct ctl_node *n)
{
    bool match = ctl_node_selected(n, &e->p);
    struct ctl_pair *pr = ctl_cache_pair_get(c, e->p.ns, e->p.name, n->name, match);
    if (pr == NULL)
        return;
    /* Selected while the controller watches (not a start's first listing): a slot that
     * passed before is one the host missed, so its run is a catch-up (reconcile.h). */
    if (match && !pr->selected && ctl_cache_synced(c))
        pr->selected_since = ctl_now(c);
    /* Enrolled once per selection (docs/schedule.md): the status keeps it from then on. */
    if (match && (!pr->selected || pr->enrolled == 0))
        pr->enrolled =
            ctl_policy_enrolled(&e->p, n->name, pr->selected_since, n->created, ctl_now(c));
    else if (!match)
        pr->enrolled = 0;
    pr->selected = match;
    ctl_cache_mark(c, pr);
}

static void ctl_policy_entry_free(struct ctl_policy_entry *e)
{
    json_decref(e->conditions);
    free(e->last_status);
    free(e->document);
    free(e->alarmed);
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
    ctl_policy_apply_allowlist(&e->p, obj, &c->allow, c->db);
    struct ctl_policy_entry *old = util_map_set(&c->policies, e->p.key, e);
    bool fresh = old == NULL;
    /*
     * The same spec (generation), object and deletion state: a status write, most often our
     * own coming back. Nothing a pair decides with changed, so the nodes are not selected
     * again nor the pairs reconciled: at a slot that was the largest cost of a status
     * write (every node, every pair of the policy).
     */
    bool same = old != NULL && ctl_policy_same_spec(&old->p, &e->p);
    bool old_dirty = old != NULL && old->status_dirty;
    if (old != NULL) {
        e->status_pace = old->status_pace;
        e->queued_slot = old->queued_slot;
        /* The recorded change time may lag our own write: keep what we know. */
        if (strcmp(old->p.schedule_hash, e->p.schedule_hash) == 0)
            e->p.schedule_changed = old->p.schedule_changed;
        e->last_status = old->last_status;
        old->last_status = NULL;
        e->alarmed = old->alarmed;
        old->alarmed = NULL;
        e->started = old->started;
        e->caught_up = old->caught_up;
        e->succeeded = old->succeeded;
        e->failed = old->failed;
        e->time_limit = old->time_limit;
        e->incomplete = old->incomplete;
        ctl_policy_entry_free(old);
    }
    e->conditions = json_deep_copy(json_object_get(json_object_get(obj, "status"), "conditions"));
    e->document = ctl_policy_document(obj);
    if (fresh) {
        /* A restart writes no status that only repeats what the object says (status.c
         * compares the status it builds with this text), nor announces it again. */
        const json_t *ost = json_object_get(obj, "status");
        if (json_is_object(ost))
            e->last_status = json_dumps(ost, JSON_COMPACT | JSON_SORT_KEYS);
        size_t i;
        const json_t *x;
        json_array_foreach(e->conditions, i, x)
        {
            const char *type = json_string_value(json_object_get(x, "type"));
            const char *st = json_string_value(json_object_get(x, "status"));
            const char *reason = json_string_value(json_object_get(x, "reason"));
            if (type != NULL && strcmp(type, "Ready") == 0 && st != NULL &&
                strcmp(st, "False") == 0 && reason != NULL)
                e->alarmed = util_strdup(reason);
        }
    }
    e->limit = binding_alert_limit(&e->p.bind, ctl_now(c));
    e->limit_at = ctl_now(c);
    if (same) {
        /* Written again only if what it would say now differs from what was written. */
        e->status_dirty = old_dirty;
        return;
    }
    e->status_dirty = true;
    c->work_cb(c); /* a policy with no pairs still gets its status */
    if (!e->p.valid)
        ctl_log(c, 1, "policy %s is invalid: %s", e->p.key, e->p.invalid_message);

    /* Every node may now be selected or not; every pair of the policy is looked at. */
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->nodes, &it, &k, &v))
        ctl_select(c, e, v);
    ctl_mark_pairs(c, e->p.ns, e->p.name, NULL, false);
}

static void ctl_policy_delete(struct kube_reflector *r, const char *ns, const char *name,
                              json_t *obj, void *arg)
{
    struct ctl *c = arg;
    char keybuf[CTL_KEY_MAX];
    struct ctl_policy_entry *e = util_map_del(&c->policies, ctl_key(keybuf, ns, name));
    if (e == NULL)
        return;
    ctl_mark_pairs(c, ns, name, NULL, true);
    ctl_policy_entry_free(e);
}

static void ctl_all_status_dirty(struct ctl *c)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->policies, &it, &k, &v))
        ((struct ctl_policy_entry *)v)->status_dirty = true;
}

static void ctl_node_upsert(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                            void *arg)
{
    struct ctl *c = arg;
    struct util_err err = {0};
    struct ctl_node *n;
    if (ctl_node_from_json(&n, obj, &err) != 0)
        return;
    struct ctl_node *old = util_map_set(&c->nodes, n->name, n);
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
    while (util_map_next(&c->policies, &it, &k, &v))
        ctl_select(c, v, n);
    ctl_all_status_dirty(c);
}

static void ctl_node_delete(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                            void *arg)
{
    struct ctl *c = arg;
    struct ctl_node *n = util_map_del(&c->nodes, name);
    if (n == NULL)
        return;
    ctl_mark_pairs(c, NULL, NULL, name, true);
    ctl_all_status_dirty(c);
    c->work_cb(c);
    ctl_node_free(n);
}

/* ---- the reflectors ---- */

bool ctl_cache_synced(const struct ctl *c)
{
    for (int i = 0; i < CTL_R_COUNT; i++)
        if (c->refl[i] == NULL || !kube_reflector_synced(c->refl[i]))
            return false;
    /* Before the repositories are listed, every policy's would look missing. */
    return ctl_repos_synced(c->repos);
}

void ctl_cache_repository_changed(struct ctl *c, const char *ns, const char *name)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->policies, &it, &k, &v)) {
        struct ctl_policy_entry *e = v;
        if (name != NULL &&
            (!e->p.valid || strcmp(e->p.ns, ns) != 0 || strcmp(e->p.spec.repository, name) != 0))
            continue;
        e->status_dirty = true;
        ctl_mark_pairs(c, e->p.ns, e->p.name, NULL, false);
    }
    if (name == NULL)
        ctl_synced_cb(NULL, c);
    c->work_cb(c);
}

const char *ctl_cache_repository_blocked(struct ctl *c, const struct ctl_policy *p, char *buf,
                                         size_t size, const char **reason, bool *checking)
{
    struct ctl_repo_view v;
    *reason = NULL;
    *checking = false;
    if (!p->valid)
        return NULL;
    if (!ctl_repos_get(c->repos, p->ns, p->spec.repository, &v)) {
        *reason = "RepositoryNotFound";
        snprintf(buf, size, "its BackupRepository %s/%s does not exist", p->ns, p->spec.repository);
        return buf;
    }
    if (v.ready)
        return NULL;
    *reason = "RepositoryNotReady";
    *checking = strcmp(v.reason, CTL_REPO_CHECKING) == 0;
    snprintf(buf, size, "its BackupRepository %s/%s is not Ready (%s: %s)", p->ns,
             p->spec.repository, v.reason, v.message);
    return buf;
}

/* Decisions wait for every cache to be whole: a half-listed cache would look like deletions. */
static void ctl_synced_cb(struct kube_reflector *r, void *arg)
{
    struct ctl *c = arg;
    if (!ctl_cache_synced(c))
        return;
    ctl_log(c, 1, "caches synced: %zu policies, %zu nodes, %zu backups, %zu jobs", c->policies.len,
            c->nodes.len, c->backups.len, c->jobs.len);
    c->work_cb(c);
}

static void ctl_reflector_error_cb(struct kube_reflector *r, const char *what, uint64_t delay_ms,
                                   void *arg)
{
    ctl_log(arg, 0, "watch: %s; retrying in %llu ms", what, (unsigned long long)delay_ms);
}

int ctl_cache_init(struct ctl *c, struct util_err *err)
{
    static const struct kube_reflector_cbs cbs[CTL_R_COUNT] = {
        [CTL_R_POLICIES] = {ctl_policy_upsert, ctl_policy_upsert, ctl_policy_delete, ctl_synced_cb,
                            ctl_reflector_error_cb},
        [CTL_R_BACKUPS] = {ctl_cache_backup_upsert, ctl_cache_backup_upsert,
                           ctl_cache_backup_delete, ctl_synced_cb, ctl_reflector_error_cb},
        [CTL_R_JOBS] = {ctl_cache_job_upsert, ctl_cache_job_upsert, ctl_cache_job_delete,
                        ctl_synced_cb, ctl_reflector_error_cb},
        [CTL_R_NODES] = {ctl_node_upsert, ctl_node_upsert, ctl_node_delete, ctl_synced_cb,
                         ctl_reflector_error_cb},
        [CTL_R_PODS] = {ctl_cache_pod_upsert, ctl_cache_pod_upsert, ctl_cache_pod_delete,
                        ctl_synced_cb, ctl_reflector_error_cb},
    };
    /* Only the Jobs Lodestore made: a cluster's other Jobs are none of its business. */
    static const char *const selectors[CTL_R_COUNT] = {
        [CTL_R_JOBS] = CTL_LABEL_MANAGED "=" CTL_MANAGER,
        [CTL_R_PODS] = CTL_LABEL_MANAGED "=" CTL_MANAGER,
    };
    /*
     * Of those pods, only the ones that ended: a backup pod (restartPolicy Never, one
     * container) is Succeeded or Failed in the same status write that shows its container
     * terminated, which is all ctl_cache_pod_upsert reads (pairs.c). The server then sends
     * none of a pod's pending, scheduled and running versions, each a TLS record, a wake of
     * the loop and a peek here, about three a run at a slot. A result the watch misses is
     * read with a LIST of the Job's pods (execute.c), as before.
     */
    static const char *const field_selectors[CTL_R_COUNT] = {
        [CTL_R_PODS] = "status.phase!=Pending,status.phase!=Running",
    };
    /*
     * What the caches never read is left out of each watch event before it is decoded
     * (kube_json_strip): managedFields everywhere, a Job's pod template (most of a Job),
     * a Node's list of images (most of a real Node). Decoding is the largest cost per event.
     */
    static const char *const strip_meta[] = {"object.metadata.managedFields", NULL};
    static const char *const strip_job[] = {"object.metadata.managedFields", "object.spec.template",
                                            NULL};
    static const char *const strip_node[] = {"object.metadata.managedFields",
                                             "object.status.images", NULL};
    /* Of a pod, its labels, creation and container states are read (pairs.c). */
    static const char *const strip_pod[] = {"object.metadata.managedFields", "object.spec",
                                            "object.status.conditions", NULL};
    /*
     * Of a Job's or a pod's event only what their caches read is kept before decoding
     * (kube_json_keep): ctl_job_from_json (state.c) and ctl_cache_pod_upsert/delete
     * (pairs.c). The Job controller's status updates are most of a slot's decoded events,
     * and what a Job event still held after the strip (its labels, spec, uid) was most of
     * each. A field these readers start to read must be added here.
     */
    static const char *const keep_job[] = {"type",
                                           "object.metadata.name",
                                           "object.metadata.namespace",
                                           "object.metadata.resourceVersion",
                                           "object.metadata.ownerReferences",
                                           "object.metadata.deletionTimestamp",
                                           "object.status",
                                           NULL};
    static const char *const keep_pod[] = {"type",
                                           "object.metadata.name",
                                           "object.metadata.namespace",
                                           "object.metadata.resourceVersion",
                                           "object.metadata.creationTimestamp",
                                           "object.metadata.labels.job-name",
                                           "object.status.containerStatuses",
                                           NULL};
    static const char *const *const keep[CTL_R_COUNT] = {
        [CTL_R_JOBS] = keep_job, [CTL_R_PODS] = keep_pod};
    static const struct kube_resource api_pods = {"", "v1", "pods", NULL};
    static const char *const *const strip[CTL_R_COUNT] = {
        [CTL_R_POLICIES] = strip_meta, [CTL_R_BACKUPS] = strip_meta, [CTL_R_JOBS] = strip_job,
        [CTL_R_NODES] = strip_node,    [CTL_R_PODS] = strip_pod,
    };
    const struct kube_resource *res[CTL_R_COUNT] = {
        [CTL_R_POLICIES] = &api_backuppolicies,
        [CTL_R_BACKUPS] = &api_backups,
        [CTL_R_JOBS] = &api_jobs,
        [CTL_R_NODES] = &api_nodes,
        [CTL_R_PODS] = &api_pods,
    };
    util_map_init(&c->policies);
    util_map_init(&c->nodes);
    util_map_init(&c->backups);
    util_map_init(&c->jobs);
    util_map_init(&c->pod_results);
    util_map_init(&c->pairs);
    for (int i = 0; i < CTL_R_COUNT; i++) {
        struct kube_reflector_opts o;
        memset(&o, 0, sizeof(o));
        o.res = *res[i];
        o.res.namespace = i == CTL_R_NODES ? NULL : c->opts.namespace;
        o.label_selector = selectors[i];
        o.field_selector = field_selectors[i];
        o.strip = strip[i];
        o.keep = keep[i];
        if (i == CTL_R_PODS)
            o.skip_cb = ctl_cache_pod_skip;
        int rc = kube_reflector_init(c->kube, &c->refl[i], &o, &cbs[i], c, err);
        if (rc != 0) {
            ctl_cache_stop(c);
            ctl_cache_close(c);
            return rc;
        }
    }
    return 0;
}

void ctl_cache_start(struct ctl *c)
{
    for (int i = 0; i < CTL_R_COUNT; i++)
        kube_reflector_start(c->refl[i]);
}

void ctl_cache_stop(struct ctl *c)
{
    for (int i = 0; i < CTL_R_COUNT; i++) {
        if (c->refl[i] != NULL) {
            kube_reflector_close(c->refl[i]);
            c->refl[i] = NULL;
        }
    }
}

void ctl_cache_close(struct ctl *c)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->policies, &it, &k, &v))
        ctl_policy_entry_free(v);
    it = 0;
    while (util_map_next(&c->nodes, &it, &k, &v))
        ctl_node_free(v);
    it = 0;
    while (util_map_next(&c->backups, &it, &k, &v)) {
        ctl_backup_free(v);
        free(v);
    }
    it = 0;
    while (util_map_next(&c->jobs, &it, &k, &v)) {
        ctl_job_free(v);
        free(v);
    }
    for (size_t i = 0; i < c->nids; i++)
        if (c->by_id[i] != NULL)
            ctl_cache_pair_free(c->by_id[i]);
    util_map_close(&c->policies);
    util_map_close(&c->nodes);
    util_map_close(&c->backups);
    util_map_close(&c->jobs);
    ctl_cache_pod_results_close(c);
    util_map_close(&c->pairs);
    free(c->by_id);
    free(c->free_ids);
    c->by_id = NULL;
    c->free_ids = NULL;
    c->nids = c->nfree = c->idcap = c->freecap = 0;
}
