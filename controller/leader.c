#include "leader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "util/util.h"

struct ctl_leader {
    uv_loop_t *loop;
    struct kube_client *kube;
    uv_timer_t timer;
    struct kube_resource res;
    char *namespace, *name, *identity;
    struct ctl_leader_opts opts;
    bool leading;
    bool stopped;
    bool closing;
    int busy;             /* a request in flight */
    uint64_t last_renew;  /* uv_now of the last successful write as leader */
    char *observed;       /* the holder and renewTime last seen, to measure expiry locally */
    uint64_t observed_at; /* uv_now when `observed` last changed */
};

static void ctl_leader_tick_cb(uv_timer_t *t);

/* Lease times are MicroTime; client-go writes them this way and reads nothing else. */
static void ctl_leader_micro_time(char *buf, size_t size)
{
    struct timespec ts;
    char base[UTIL_TIME_BUF];
    clock_gettime(CLOCK_REALTIME, &ts);
    util_format_utc(ts.tv_sec, base, sizeof(base));
    /* MicroTime: RFC 3339 with microseconds. */
    snprintf(buf, size, "%.19s.%06ldZ", base, ts.tv_nsec / 1000);
}

int ctl_leader_init(uv_loop_t *loop, struct ctl_leader **out, struct kube_client *kube,
                    const struct ctl_leader_opts *opts, struct util_err *err)
{
    if (opts->namespace == NULL || opts->name == NULL || opts->identity == NULL)
        return util_err_set(err, UTIL_EINVAL,
                            "leader election needs a namespace, a name and an identity");
    struct ctl_leader *l = util_calloc(1, sizeof(*l));
    l->loop = loop;
    l->kube = kube;
    l->opts = *opts;
    l->namespace = util_strdup(opts->namespace);
    l->name = util_strdup(opts->name);
    l->identity = util_strdup(opts->identity);
    l->res = api_in(&api_leases, l->namespace);
    uv_timer_init(loop, &l->timer);
    l->timer.data = l;
    *out = l;
    return 0;
}

bool ctl_leader_is_leader(const struct ctl_leader *l)
{
    return l->leading;
}

static void ctl_leader_lose(struct ctl_leader *l)
{
    if (!l->leading)
        return;
    l->leading = false;
    if (l->opts.lost_cb != NULL)
        l->opts.lost_cb(l->opts.arg);
}

static void ctl_leader_written_cb(const struct kube_result *res, void *arg)
{
    struct ctl_leader *l = arg;
    l->busy--;
    if (l->stopped)
        return;
    if (res->error == 0 && res->status >= 200 && res->status < 300) {
        l->last_renew = uv_now(l->loop);
        if (!l->leading) {
            l->leading = true;
            if (l->opts.acquired_cb != NULL)
                l->opts.acquired_cb(l->opts.arg);
        }
    }
}

/* The Lease as read, with our holder and times: the write carries its resourceVersion. */
static json_t *ctl_leader_lease(struct ctl_leader *l, const json_t *current, bool take)
{
    char now[48];
    ctl_leader_micro_time(now, sizeof(now));
    json_t *spec =
        json_pack("{s:s, s:I, s:s}", "holderIdentity", l->identity, "leaseDurationSeconds",
                  (json_int_t)(l->opts.lease_duration_ms / 1000), "renewTime", now);
    json_int_t transitions = 0;
    const json_t *cur_spec = json_object_get(current, "spec");
    if (cur_spec != NULL) {
        transitions = json_integer_value(json_object_get(cur_spec, "leaseTransitions"));
        const json_t *acq = json_object_get(cur_spec, "acquireTime");
        if (!take && json_is_string(acq))
            json_object_set(spec, "acquireTime", (json_t *)acq);
    }
    if (take) {
        json_object_set_new(spec, "acquireTime", json_string(now));
        if (current != NULL)
            transitions++;
    }
    json_object_set_new(spec, "leaseTransitions", json_integer(transitions));
    json_t *meta = json_pack("{s:s, s:s}", "name", l->name, "namespace", l->namespace);
    const char *rv =
        json_string_value(json_object_get(json_object_get(current, "metadata"), "resourceVersion"));
    if (rv != NULL)
        json_object_set_new(meta, "resourceVersion", json_string(rv));
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "coordination.k8s.io/v1", "kind",
                     "Lease", "metadata", meta, "spec", spec);
}

/* Expiry is judged by when we last saw the record change, on our own clock, never theirs. */
static void ctl_leader_read_cb(const struct kube_result *res, void *arg)
{
    struct ctl_leader *l = arg;
    struct util_err err = {0};
    l->busy--;
    if (l->stopped)
        return;
    if (res->error == 0 && res->status == 404) {
        json_t *lease = ctl_leader_lease(l, NULL, true);
        l->busy++;
        if (kube_create(l->kube, &l->res, lease, ctl_leader_written_cb, l, NULL, &err) != 0)
            l->busy--;
        json_decref(lease);
        return;
    }
    if (res->error != 0 || res->status != 200)
        return; /* try again next period; the renew deadline decides when a leader gives up */

    const json_t *spec = json_object_get(res->body, "spec");
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    const char *renew = json_string_value(json_object_get(spec, "renewTime"));
    char *seen = util_asprintf("%s|%s", holder ? holder : "", renew ? renew : "");
    uint64_t now = uv_now(l->loop);
    if (l->observed == NULL || strcmp(seen, l->observed) != 0) {
        free(l->observed);
        l->observed = seen;
        l->observed_at = now;
    } else {
        free(seen);
    }
    bool mine = holder != NULL && strcmp(holder, l->identity) == 0;
    bool free_lease = holder == NULL || holder[0] == '\0';
    bool expired = now - l->observed_at >= (uint64_t)l->opts.lease_duration_ms;
    if (mine || free_lease || expired) {
        json_t *lease = ctl_leader_lease(l, res->body, !mine);
        l->busy++;
        if (kube_update(l->kube, &l->res, l->name, NULL, lease, ctl_leader_written_cb, l, NULL,
                        &err) != 0)
            l->busy--;
        json_decref(lease);
    } else if (l->leading) {
        /* Someone else holds it: we lost it. */
        ctl_leader_lose(l);
    }
}

static void ctl_leader_tick_cb(uv_timer_t *t)
{
    struct ctl_leader *l = t->data;
    struct util_err err = {0};
    if (l->stopped)
        return;
    if (l->leading && uv_now(l->loop) - l->last_renew > (uint64_t)l->opts.renew_deadline_ms) {
        ctl_leader_lose(l);
        return;
    }
    if (l->busy > 0)
        return;
    l->busy++;
    if (kube_get(l->kube, &l->res, l->name, NULL, ctl_leader_read_cb, l, NULL, &err) != 0)
        l->busy--;
}

void ctl_leader_start(struct ctl_leader *l)
{
    l->stopped = false;
    uv_timer_start(&l->timer, ctl_leader_tick_cb, 0, (uint64_t)l->opts.retry_period_ms);
}

struct ctl_leader_release {
    void (*done_cb)(void *arg);
    void *arg;
};

static void ctl_leader_released_cb(const struct kube_result *res, void *arg)
{
    struct ctl_leader_release *r = arg;
    r->done_cb(r->arg);
    free(r);
}

void ctl_leader_stop(struct ctl_leader *l, void (*done_cb)(void *arg), void *arg)
{
    struct util_err err = {0};
    bool was_leading = l->leading && !l->stopped;
    uv_timer_stop(&l->timer);
    l->stopped = true;
    l->leading = false;
    if (was_leading) {
        /* Hand over at once: a standby need not wait out the lease. */
        struct ctl_leader_release *r = util_calloc(1, sizeof(*r));
        r->done_cb = done_cb;
        r->arg = arg;
        json_t *patch = json_pack("{s:{s:n}}", "spec", "holderIdentity");
        int rc = kube_merge_patch(l->kube, &l->res, l->name, NULL, patch, ctl_leader_released_cb, r,
                                  NULL, &err);
        json_decref(patch);
        if (rc == 0)
            return;
        free(r);
    }
    done_cb(arg);
}

static void ctl_leader_closed_cb(uv_handle_t *h)
{
    struct ctl_leader *l = h->data;
    free(l->namespace);
    free(l->name);
    free(l->identity);
    free(l->observed);
    free(l);
}

void ctl_leader_close(struct ctl_leader *l)
{
    l->stopped = true;
    uv_close((uv_handle_t *)&l->timer, ctl_leader_closed_cb);
}
