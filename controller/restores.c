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
#include "restores_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_RESTORE_TICK_MS 2000

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
