/*
 * The lifecycle: ctl_init builds every part in order (the files are listed in ctl_int.h),
 * ctl_start hands over to acting.c, ctl_stop closes them in reverse, ctl_close frees.
 */
#include "ctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef LODE_VERSION
#define LODE_VERSION "0.0.0-dev"
#endif

void ctl_options_defaults(struct ctl_options *o)
{
    memset(o, 0, sizeof(*o));
    o->metrics_host = "127.0.0.1";
    o->metrics_port = 8080;
    o->agent_image = "ghcr.io/lodestore/lodestore:latest";
    o->job_ttl = 3600;
    o->agent_cache_dir = CTL_CACHE_HOST_DIR;
    o->history = 5;
    o->qps = 20;
    o->burst = 30;
    o->lease_name = "lodestore-controller";
    o->lease_duration_ms = 15000;
    o->renew_deadline_ms = 10000;
    o->retry_period_ms = 2000;
    o->log_level = 1;
}

/*
 * Who may back up a node (docs/security.md, "Who may back up a node"): the flags, else the
 * watched namespace, else the controller's own (the Lease's, or the kubeconfig's).
 */
static int ctl_allow_parse(struct ctl *c, const struct ctl_options *opts, struct util_err *err)
{
    for (size_t i = 0; i < opts->nallow_node_backups; i++) {
        struct util_err e = {0};
        if (ctl_allowlist_add(&c->allow, opts->allow_node_backups[i], &e) != 0) {
            ctl_allowlist_free(&c->allow);
            return util_err_set(err, UTIL_EINVAL, "--allow-node-backups %s", e.msg);
        }
    }
    return 0;
}

/* The default, once the kubeconfig names the controller's namespace. */
static void ctl_allow_default(struct ctl *c, const struct ctl_options *opts)
{
    if (c->allow.n > 0)
        return;
    const char *own = opts->namespace         ? opts->namespace
                      : opts->lease_namespace ? opts->lease_namespace
                                              : c->cfg.namespace;
    struct util_err e = {0};
    if (own != NULL && ctl_allowlist_add(&c->allow, own, &e) == 0)
        ctl_log(c, 1, "node backups allowed in namespace %s only (--allow-node-backups)", own);
}

/* The Lease names its holder: the pod's name in a cluster, host and pid elsewhere. */
static char *ctl_identity(const struct ctl_options *opts)
{
    char host[256];
    if (opts->identity != NULL)
        return util_strdup(opts->identity);
    if (getenv("POD_NAME") != NULL)
        return util_strdup(getenv("POD_NAME"));
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    return util_asprintf("%s_%ld", host, (long)getpid());
}

static void ctl_repos_log(int level, const char *msg, void *arg)
{
    ctl_log(arg, level, "%s", msg);
}

static void ctl_repos_changed(const char *ns, const char *name, void *arg)
{
    ctl_cache_repository_changed(arg, ns, name);
}

static void ctl_drained_cb(uv_timer_t *t);

int ctl_init(uv_loop_t *loop, struct ctl **out, const struct ctl_options *opts,
             struct util_err *err)
{
    struct ctl *c = util_calloc(1, sizeof(*c));
    struct kube_config_opts kopts = {opts->context, false};
    struct kube_client_opts copts;
    const char *user_agent = "lodestore-controller/" LODE_VERSION;
    int rc;

    c->loop = loop;
    c->opts = *opts;
    c->version = LODE_VERSION;
    c->work_cb = ctl_work_kick;
    c->backup_cb = ctl_prune_seen;
    c->drained_cb = ctl_drained_cb;
    util_list_init(&c->writes);
    c->rcfg.history = opts->history;
    c->rcfg.job.agent_image = opts->agent_image;
    c->rcfg.job.ttl_seconds = opts->job_ttl;
    c->rcfg.job.host_network = opts->agent_host_network;
    c->rcfg.job.hook_namespaces = opts->hook_namespaces;
    c->rcfg.job.cache_dir = opts->agent_cache_dir;
    c->identity = ctl_identity(opts);

    rc = ctl_allow_parse(c, opts, err);
    if (rc != 0)
        goto free_ctl;
    rc = tz_db_open(&c->db, opts->zoneinfo, err);
    if (rc != 0)
        goto free_allow;
    rc = kube_config_load_default(&c->cfg, opts->kubeconfig, &kopts, err);
    if (rc != 0)
        goto close_db;
    memset(&copts, 0, sizeof(copts));
    copts.qps = opts->qps;
    copts.burst = opts->burst;
    copts.user_agent = user_agent;
    copts.observe_cb = ctl_observe_cb;
    copts.cb_arg = c;
    /* The answers to the controller's writes go into the caches, which read what the
     * watches read (cache.c): a created Job's pod template is most of its answer. */
    static const char *const strip_answers[] = {"metadata.managedFields", "spec.template", NULL};
    copts.strip_answers = strip_answers;
    /* What the answers to Events and to the policies' status writes say is never read
     * (events.c, status.c and the Events of execute.c, gcjobs.c, prune_report.c,
     * restores_run.c): they are not decoded. */
    static const char *const unread_answers[] = {"events", "backuppolicies/status", NULL};
    copts.unread_answers = unread_answers;
    /* A slot's burst of creates and status writes goes out over a few warm connections,
     * not one new TLS connection per request of the burst (kube.h). At a round trip of
     * 100 ms, qps/10 in flight (at least 8) still carry the whole --qps. */
    copts.max_in_flight = opts->qps > 80 ? (unsigned)(opts->qps / 10) : 8;
    rc = kube_client_init(loop, &c->kube, &c->cfg, &copts, err);
    if (rc != 0)
        goto free_cfg;
    ctl_allow_default(c, opts);
    rc = ctl_cache_init(c, err);
    if (rc != 0)
        goto close_client;
    rc = ctl_repos_init(loop, c->kube, opts->namespace, ctl_repos_log, c, &c->repos, err);
    if (rc != 0)
        goto close_cache;
    ctl_repos_set_change_cb(c->repos, ctl_repos_changed, c);
    rc = ctl_acting_init(c, user_agent, err);
    if (rc != 0)
        goto close_repos;
    rc = ctl_endpoints_init(c, err);
    if (rc != 0)
        goto close_acting;
    /* Handles last: a failed init has none to close, so c can be freed at once. */
    ctl_work_init(c);
    ctl_events_init(c);
    ctl_status_init(c);
    ctl_prune_init(c);
    ctl_gc_init(c);
    ctl_restores_init(c);
    uv_timer_init(loop, &c->drain_timer);
    c->drain_timer.data = c;
    *out = c;
    return 0;

close_acting:
    ctl_acting_close(c);
close_repos:
    ctl_repos_close(c->repos);
    c->repos = NULL;
close_cache:
    ctl_cache_stop(c);
    ctl_cache_close(c);
close_client:
    kube_client_close(c->kube, NULL, NULL);
free_cfg:
    kube_config_free(&c->cfg);
close_db:
    tz_db_close(c->db);
free_allow:
    ctl_allowlist_free(&c->allow);
free_ctl:
    ctl_endpoints_close(c);
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
    ctl_log(c, 1, "lodestore-controller %s, tz database %s, metrics on %s:%d", c->version,
            tz_db_version(c->db), c->opts.metrics_host, c->httpd.port);
    ctl_acting_start(c);
}

/*
 * How long a graceful stop waits for its writes. A pod gets 30 s between SIGTERM and
 * SIGKILL by default; the writes of one reconcile round are answered in well under a
 * second, so 10 s is generous and leaves the Lease's release time to spare.
 */
#define CTL_DRAIN_MS 10000

static void ctl_handle_closed_cb(uv_handle_t *h)
{
}

/*
 * A graceful stop first stops listening (no new decision is taken), sends the policy
 * statuses already decided (status.startedSlots above all: a slot whose Backup was
 * created but not yet recorded would run again after a restart if its Backup were
 * deleted; docs/operator.md) and waits for every write in flight, at most CTL_DRAIN_MS.
 * Only then is the Lease released and the rest closed. Losing the Lease is not a
 * graceful stop (main.c exits at once: a new leader may already be acting).
 */
void ctl_stop(struct ctl *c)
{
    if (c->stopping)
        return;
    c->stopping = true;
    ctl_log(c, 1, "stopping");
    ctl_cache_stop(c);
    if (c->acting) { /* a standby writes nothing */
        ctl_status_flush(c, true);
        ctl_events_flush(c);
    }
    c->draining = true;
    uv_timer_start(&c->drain_timer, ctl_drained_cb, util_list_empty(&c->writes) ? 0 : CTL_DRAIN_MS,
                   0);
}

/* A graceful stop's writes are answered (or their deadline passed): the rest of the stop. */
static void ctl_drained_cb(uv_timer_t *t)
{
    struct ctl *c = t->data;
    if (!c->draining)
        return;
    if (!util_list_empty(&c->writes))
        ctl_log(c, 0, "stopping with writes still unanswered after %d ms", CTL_DRAIN_MS);
    else
        ctl_log(c, 2, "every write answered; releasing the Lease");
    c->draining = false;
    uv_close((uv_handle_t *)&c->drain_timer, ctl_handle_closed_cb);
    /* The Lease is given up through its own client, which acting.c closes once answered. */
    ctl_acting_stop(c);
    ctl_prune_stop(c); /* its S3 clients too */
    ctl_gc_stop(c);
    ctl_restores_stop(c);
    ctl_repos_close(c->repos); /* its S3 checks share the client's transport: first */
    c->repos = NULL;
    /* Writes still in flight are cancelled without a callback; ctl_close frees their records. */
    kube_client_close(c->kube, NULL, NULL);
    c->kube = NULL;
    ctl_work_stop(c);
    ctl_events_stop(c);
    ctl_status_stop(c);
    ctl_endpoints_stop(c);
}

void ctl_close(struct ctl *c)
{
    ctl_write_free_all(c);
    ctl_prune_close(c);
    ctl_gc_close(c);
    ctl_restores_close(c);
    ctl_cache_close(c);
    ctl_endpoints_close(c);
    ctl_work_close(c);
    ctl_events_close(c);
    kube_config_free(&c->cfg);
    tz_db_close(c->db);
    ctl_allowlist_free(&c->allow);
    free(c->identity);
    free(c);
}
