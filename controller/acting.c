/*
 * When this replica acts: at once without leader election, else from the moment it
 * holds the Lease. The Lease has its own API client, so renewals never queue behind
 * the creates of a busy slot. Losing the Lease stops all acting here and is reported
 * to the program (ctl_options.lease_lost_cb), which decides what happens next.
 */
#include "ctl_int.h"

#include <string.h>

static void ctl_start_acting(void *arg)
{
    struct ctl *c = arg;
    if (c->acting || c->stopping)
        return;
    c->acting = true;
    ctl_log(c, 1, "acting as %s%s", c->identity, c->opts.leader_elect ? " (leader)" : "");
    ctl_cache_start(c);
    ctl_repos_start(c->repos);
    ctl_status_start(c);
    ctl_gc_start(c);
    ctl_restores_start(c);
}

static void ctl_lost_cb(void *arg)
{
    struct ctl *c = arg;
    /* Acting without the Lease could race the new leader: not one more write from here. */
    c->acting = false;
    ctl_log(c, 0, "lost the leader Lease; no longer acting");
    c->opts.lease_lost_cb(c->opts.cb_arg);
}

int ctl_acting_init(struct ctl *c, const char *user_agent, struct util_err *err)
{
    const struct ctl_options *opts = &c->opts;
    if (!opts->leader_elect)
        return 0;
    if (opts->lease_lost_cb == NULL)
        return util_err_set(err, UTIL_EINVAL, "leader election needs a lease_lost_cb");
    struct kube_client_opts lopts;
    memset(&lopts, 0, sizeof(lopts));
    lopts.qps = -1; /* one GET and at most one PUT per retry period */
    lopts.timeout_ms = (uint64_t)opts->renew_deadline_ms;
    lopts.user_agent = user_agent;
    int rc = kube_client_init(c->loop, &c->lease_kube, &c->cfg, &lopts, err);
    if (rc != 0)
        return rc;
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
    rc = ctl_leader_init(c->loop, &c->leader, c->lease_kube, &lo, err);
    if (rc != 0) {
        kube_client_close(c->lease_kube, NULL, NULL);
        c->lease_kube = NULL;
    }
    return rc;
}

void ctl_acting_start(struct ctl *c)
{
    if (c->leader != NULL)
        ctl_leader_start(c->leader);
    else
        ctl_start_acting(c);
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

void ctl_acting_stop(struct ctl *c)
{
    if (c->leader != NULL)
        ctl_leader_stop(c->leader, ctl_lease_released_cb, c);
}

/* Only for an init that failed before the loop ran: a started leader goes through stop. */
void ctl_acting_close(struct ctl *c)
{
    if (c->leader != NULL)
        ctl_leader_close(c->leader);
    if (c->lease_kube != NULL)
        kube_client_close(c->lease_kube, NULL, NULL);
    c->leader = NULL;
    c->lease_kube = NULL;
}
