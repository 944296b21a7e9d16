/*
 * controller: the Lodestore daemon on one libuv loop.
 *
 * Four reflectors (BackupPolicies, Backups, Jobs labelled as Lodestore's, Nodes;
 * enum ctl_reflector_kind) feed compact caches (state.h). Every change marks the (policy, host)
 * pairs it touches dirty; an idle handle reconciles the queued pairs once per loop iteration
 * (reconcile.h) and carries out the actions with the API client; one timer over a
 * heap of wake times (heap.h) marks pairs dirty when their next run, time_limit
 * deadline or overdue moment comes. Policy status is written after the pairs, only
 * when it changed. Nothing is remembered that the API server does not hold: a
 * restart lists everything again and reaches the same decisions, and the Backup
 * names derived from (policy, host, slot) make a second start of a slot impossible.
 *
 * With leader election on, nothing is listed or written until the Lease is held, and
 * a leader that cannot renew in time stops acting at once and reports it through
 * lease_lost_cb (lode-controller then exits, so the Deployment starts a fresh
 * candidate); two replicas never act at once for long, and even then the names keep
 * runs unique.
 *
 * Costs (bench/controller, allocator counts): a node 285 bytes with 12 labels (about
 * 190 plus 8 per label), a Backup kept 384 bytes plus its map entry, a schedule entry 26 bytes of
 * heap; a (policy, host) pair's struct and strings are not measured yet. JSON trees live only
 * inside informer callbacks.
 */
#ifndef LODE_CTL_CONTROLLER_H
#define LODE_CTL_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "kube/kube.h"
#include "reconcile.h"
#include "tz/tz.h"

struct ctl_options {
    const char *kubeconfig; /* NULL: the usual search (in-cluster, $KUBECONFIG, ~/.kube) */
    const char *context;    /* kubeconfig context, NULL = current */
    const char *namespace;  /* watch one namespace; NULL = all */
    const char *metrics_host;
    int metrics_port; /* 0 = pick a free one (tests) */
    const char *agent_image;
    bool agent_host_network;     /* Jobs' pods use the node's network */
    const char *hook_namespaces; /* --hook-namespaces: where spec.hooks may run */
    const char *agent_cache_dir; /* --agent-cache-dir: the node cache's hostPath, "" none */
    int64_t job_ttl;             /* seconds */
    int64_t history;             /* finished Backups kept per (policy, host) */
    double qps;
    unsigned burst;
    const char *zoneinfo; /* NULL = $LODE_ZONEINFO or the system's */
    int64_t clock_offset; /* seconds added to the wall clock: for tests only */
    bool leader_elect;
    const char *lease_namespace; /* NULL = the kubeconfig's namespace */
    const char *lease_name;
    const char *identity; /* NULL = $POD_NAME or the host name and pid */
    int64_t lease_duration_ms, renew_deadline_ms, retry_period_ms;
    int log_level; /* 0 error, 1 info, 2 debug */
    /* --allow-node-backups, each "NS" or "NS:/PREFIX,..." (ctl_allowlist_add); none: the
     * watched namespace, else the controller's own (docs/security.md). */
    const char *const *allow_node_backups;
    size_t nallow_node_backups;
    /* Called once when the Lease is lost (acting has stopped); required with leader_elect. */
    void (*lease_lost_cb)(void *arg);
    void *cb_arg;
};

void ctl_options_defaults(struct ctl_options *o);

struct ctl; /* opaque: the daemon */

/* Builds the daemon on loop: reads the kubeconfig and the tz database, binds /metrics. */
int ctl_init(uv_loop_t *loop, struct ctl **out, const struct ctl_options *opts,
             struct util_err *err);
/* Starts leader election (or acting at once), the informers and the server. */
void ctl_start(struct ctl *c);
/* Stops everything gracefully; the loop then runs out, after which ctl_close. */
void ctl_stop(struct ctl *c);
void ctl_close(struct ctl *c);
/* The port /metrics listens on (after ctl_init). */
int ctl_metrics_port(const struct ctl *c);
/* The controller's clock: the wall clock plus the test offset. */
int64_t ctl_now(const struct ctl *c);

#endif
