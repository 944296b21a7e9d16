/*
 * ctl_int: the daemon's state, shared by the files of controller/ and by nothing else.
 *
 * One file per job, in layers: a file calls only functions defined in the files listed
 * below it (scripts/lint_layers.sh reads this list and fails `make lint` on a call
 * upward; every file of controller/ is listed, one a line):
 *   main.c           lode-controller: flags, signals and the loop (controller.h)
 *   controller.c     the lifecycle: init, start, stop, close; it sets the hooks below
 *   acting.c         when this replica acts: at once, or while it holds the Lease
 *   endpoints.c      /metrics, /healthz and /readyz
 *   work.c           the work queue: reconcile dirty pairs, the wake timer
 *   execute.c        carry out a pair's actions: its writes and their answers
 *   status.c         policy status, written at most once a second
 *   gcjobs.c         the GC Job of each BackupRepository on spec.gc's schedule (gcjobs.h)
 *   gcmetrics.c      the GC Jobs' state on /metrics
 *   restores.c       the Restores: which to look at each tick (docs/restoring.md)
 *   restores_run.c   a Restore's requests: its Job, its status and Events (restores_int.h)
 *   prune.c          the forget after a backup (prune_int.h)
 *   prune_key.c      the forget's repository key, unlocked once per repository and key
 *   prune_check.c    the forget's checks of the pins and kept manifests with that key
 *   prune_report.c   the forget's outcome: status.retention, Events, counters
 *   events.c         Events about policies, paced and combined (eventagg.h)
 *   cache.c          informer callbacks and the caches they fill: policies, nodes
 *   pairs.c          (policy, host) pairs, the Backups and Jobs filed under them, pods' ends
 *   log.c            the clock, the log, cache keys and the list of writes in flight
 * and below them the modules with a header of their own, which know nothing of struct ctl:
 *   repository.c     BackupRepository resolution (repository.h)
 *   leader.c         the Lease (leader.h)
 *   httpd.c          the endpoints' HTTP server (httpd.h)
 *   metrics.c        Prometheus text (metrics.h)
 *   policy_status.c  a policy's status from the caches' view and the clock (policy_status.h)
 *   eventagg.c       Events paced and combined per object, type and reason (eventagg.h)
 *   reconcile.c      what to do for one (policy, host) now (reconcile.h)
 *   gcplan.c         a repository's GC decisions (gcplan.h)
 *   restorejob.c     a Restore's Job and status (restorejob.h)
 *   state.c          the compact structs the caches hold (state.h)
 *   objects_result.c a finished run's Backup status from its pod (objects.h)
 *   objects.c        the objects the controller writes (objects.h, objects_int.h)
 *   queue.c          the pairs to reconcile (queue.h)
 *   heap.c           their wake times (heap.h)
 *   podsec.c         the pods' hardening (podsec.h)
 * Whatever consumes the cache sits above it and hears from it through a hook the
 * lifecycle sets, so the cache never calls up: work_cb (a pair is queued: work.c) and
 * backup_cb (a Backup came in: prune.c forgets after a success). gcjobs.c and prune.c
 * read the cache (is it synced?) and prune_report.c puts the API server's answer to its
 * patch into it, so they sit above cache.c, as they must above log.c, whose functions
 * they call. The last write of a graceful stop resumes it through drained_cb, which the
 * lifecycle sets, so log.c names nothing above it. work.c puts the API server's answers
 * to its writes into the cache through the same functions the informers use.
 */
#ifndef LODE_CTL_INT_H
#define LODE_CTL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "repository.h"
#include "controller.h"
#include "eventagg.h"
#include "heap.h"
#include "httpd.h"
#include "leader.h"
#include "metrics.h"
#include "queue.h"
#include "reconcile.h"
#include "state.h"
#include "util/list.h"
#include "util/map.h"

#define CTL_COMPONENT     "lodestore-controller"
#define CTL_RETRY_SECONDS 10   /* a failed write is looked at again after this */
#define CTL_LIMIT_REFRESH 3600 /* the alert limit is recomputed hourly (it moves with DST) */

/* "ns/name", the key of the namespaced caches, in a caller's buffer (names are bounded). */
#define CTL_KEY_MAX (63 + 1 + 253 + 1)

/* The resources the controller watches, one reflector each. */
enum ctl_reflector_kind {
    CTL_R_POLICIES,
    CTL_R_BACKUPS,
    CTL_R_JOBS,
    CTL_R_NODES,
    CTL_R_PODS, /* the pods of Lodestore's Jobs: how a backup container ended */
    CTL_R_COUNT
};

/*
 * How a backup pod's container ended, as its watch said: kept from the pod's end until its
 * run's result is read (execute.c), so reading it costs no request. Small: the agent's
 * result is a few hundred bytes.
 */
struct ctl_pod_result {
    char *pod;     /* the pod's name: a later pod of the same Job replaces it */
    char *created; /* the pod's creationTimestamp (RFC 3339): the newest pod wins */
    char *reason;  /* the container's terminated reason, or NULL */
    char *message; /* its termination message (the agent's result), or NULL */
    int exit_code; /* -1 when not given */
};

/*
 * A write in flight, embedded first in each file's own record of it. Closing the API
 * client cancels what is in flight without calling back, so every record is linked
 * into ctl.writes and ctl_close frees whatever a stop left there.
 */
struct ctl_write {
    struct util_list link; /* on ctl.writes */
    void (*free_cb)(struct ctl_write *w);
};

/* One (policy, host): its Backups and what the last reconcile found. */
struct ctl_pair {
    uint32_t id;
    char *key; /* "ns/policy\nhost" */
    char *ns, *policy, *host;
    struct ctl_backup **backups;
    size_t nbackups, cap;
    int64_t reported_slot;
    int64_t gap_slot;       /* missed slots before this one are counted (reconcile.h) */
    int64_t started_slot;   /* the newest slot started, as status.startedSlots records it */
    int inflight;           /* writes not yet answered: skip reconciling until they are */
    uint64_t error_hash;    /* the refusal last reported by an Event, 0 when none */
    int64_t selected_since; /* when the policy last came to select the host, 0: unknown */
    int64_t enrolled;       /* when the host enrolled (ctl_policy_enrolled), 0 unselected */
    /* The last reconcile's view, for status and metrics. */
    bool selected, running, overdue, has_success;
    /* The last result said the I/O priority had no effect: its Event was sent once, and is
     * sent again only after a result without it (one Event, not one per run). */
    bool ioprio_warned;
    bool rro_warned; /* RecursiveReadOnlyUnavailable was said for this pair (once a process) */
    int64_t last_success, overdue_start, next_run;
    uint64_t missed;
    /* The host's jitter offset (binding_offset) for the jitter it was computed for: it
     * hashes the policy and host with SHA-256, a tenth of a reconcile's cost, and only the
     * jitter can change it (ns, policy and host are the pair's key). -1: not computed. */
    int64_t offset, offset_jitter;
};

struct ctl_policy_entry {
    struct ctl_policy p;
    json_t *conditions; /* the status conditions last seen or written, for transition times */
    char *last_status;  /* the status last written, to skip writes that change nothing */
    char *document;     /* the policy as its Jobs carry it (ctl_policy_document) */
    char *alarmed;      /* the Ready reason last announced by a Warning Event, or NULL */
    int64_t limit;
    int64_t limit_at;
    bool status_dirty;
    struct ctl_pace status_pace; /* of status writes (status.c) */
    int64_t queued_slot;         /* the slot whose runs were last reported queuing (RateLimited) */
    uint64_t started, caught_up, succeeded, failed, time_limit;
    uint64_t incomplete; /* among the succeeded: reason incomplete */
};

struct ctl {
    uv_loop_t *loop;
    struct ctl_options opts;
    const char *version; /* LODE_VERSION, set where the build defines it */
    char *identity;
    struct tz_db *db;
    struct kube_config cfg;
    struct kube_client *kube;
    struct kube_client
        *lease_kube; /* the Lease's own client: renewals never queue behind creates */
    struct ctl_leader *leader;
    struct ctl_httpd httpd;
    struct kube_reflector *refl[CTL_R_COUNT];
    struct ctl_repos *repos;       /* BackupRepository resolution (repository.c) */
    struct ctl_prune *prune;       /* the forget after a backup (prune.c) */
    struct ctl_gc *gc;             /* the GC Jobs (gcjobs.c) */
    struct ctl_restores *restores; /* the Restores (restores.c) */
    struct util_map policies;      /* ns/name -> ctl_policy_entry */
    struct util_map nodes;         /* name -> ctl_node */
    struct util_map backups;       /* ns/name -> ctl_backup */
    struct util_map jobs;          /* ns/name -> ctl_job */
    struct util_map pod_results;   /* ns/job -> ctl_pod_result, until the run's result is read */
    struct util_map pairs;         /* key -> ctl_pair */
    struct ctl_pair **by_id;
    size_t nids, idcap;
    uint32_t *free_ids;
    size_t nfree, freecap;
    struct ctl_queue queue; /* pair ids to reconcile, de-duplicated */
    /* The hooks, set by the lifecycle (the layers above). */
    void (*work_cb)(struct ctl *c); /* something is queued or a status is dirty */
    /* The cache took in a Backup. */
    void (*backup_cb)(struct ctl *c, const char *ns, const char *name, const json_t *obj);
    uv_timer_cb drained_cb; /* a graceful stop's writes are all answered */
    struct ctl_heap heap;
    uv_timer_t wake_timer;
    uv_idle_t work;
    uv_timer_t status_timer;
    uv_timer_t status_soon;     /* one flush a second at most, however busy the loop */
    uv_timer_t drain_timer;     /* a graceful stop: the writes' deadline, then the rest */
    struct ctl_eventagg events; /* Events about policies, paced (events.c) */
    uv_timer_t events_timer;    /* when the held Events may go */
    bool draining;              /* stopping, waiting for the writes in flight */
    bool acting;
    bool stopping;
    struct ctl_config rcfg;
    struct ctl_allowlist allow; /* who may back up a node (state.h) */
    /* metrics */
    struct ctl_metrics_histogram reconcile_hist;
    struct ctl_metrics_histogram skew_hist; /* run created minus run time */
    struct util_map api_counts;             /* "VERB code resource" -> counter (uint64_t*) */
    struct ctl_metrics_histogram api_hist;
    uint64_t reconciles;
    struct util_list writes; /* of ctl_write, in flight, newest first */
};

/* log.c */
/*
 * A write the API server refused because its namespace is being deleted
 * (kube_result_ns_terminating): expected while a namespace goes, not an error and no
 * RBAC refusal. Logged at debug level ("WHAT not written: its namespace is being
 * deleted"); true then, and the caller logs nothing more and raises no Event (it would
 * be refused too). /metrics counts it with code="terminating" (endpoints.c).
 */
bool ctl_ns_deleting(const struct ctl *c, const struct kube_result *res, const char *what);
void ctl_log(const struct ctl *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *ctl_key(char buf[CTL_KEY_MAX], const char *ns, const char *name);
void ctl_write_track(struct ctl *c, struct ctl_write *w, void (*free_cb)(struct ctl_write *w));
void ctl_write_untrack(struct ctl *c, struct ctl_write *w);
/* Frees the records of writes that were cancelled, at close. */
void ctl_write_free_all(struct ctl *c);

/* cache.c */
/* The maps and the reflectors (after the API client exists); nothing is requested yet. */
int ctl_cache_init(struct ctl *c, struct util_err *err);
void ctl_cache_start(struct ctl *c);
/* Closes the reflectors: nothing more comes in. */
void ctl_cache_stop(struct ctl *c);
/* Frees what the caches hold. */
void ctl_cache_close(struct ctl *c);
bool ctl_cache_synced(const struct ctl *c);
/* Queues a pair for reconciling and tells the loop. */
void ctl_cache_mark(struct ctl *c, struct ctl_pair *pr);
struct ctl_pair *ctl_cache_pair_by_key(struct ctl *c, const char *key);
struct ctl_policy_entry *ctl_cache_policy_of(struct ctl *c, const struct ctl_pair *pr);
/* A pair with nothing left to watch over goes. */
void ctl_cache_pair_maybe_drop(struct ctl *c, struct ctl_pair *pr);
/* A BackupRepository changed (name NULL: all of them were listed): its policies are looked at. */
void ctl_cache_repository_changed(struct ctl *c, const char *ns, const char *name);
/*
 * Why the policy's runs cannot start because of its repository, as the end of a sentence
 * in buf ("its BackupRepository ns/main does not exist"), or NULL when it is Ready. reason
 * gets the policy's Ready reason (RepositoryNotFound, RepositoryNotReady); checking is set
 * when the repository is merely not checked yet (no Event is worth it).
 */
const char *ctl_cache_repository_blocked(struct ctl *c, const struct ctl_policy *p, char *buf,
                                         size_t size, const char **reason, bool *checking);
/*
 * The end of Job ns/job's pod as the pod watch saw it, as the pod list the result reader
 * takes ({"items": [pod]}), and forgotten; NULL when the watch has not seen it end (the
 * caller then lists the pods).
 */
json_t *ctl_cache_take_pod_result(struct ctl *c, const char *ns, const char *job);
/* The objects the API server answered a write with, as if a watch had brought them; the
 * watch event of the same version is then left undecoded (kube_reflector_note). */
void ctl_cache_put_backup(struct ctl *c, const char *ns, const char *name, json_t *obj);
void ctl_cache_put_job(struct ctl *c, const char *ns, const char *name, json_t *obj);
/* pairs.c, for cache.c: the pair of (ns, policy, host), made when create; freeing one. */
struct ctl_pair *ctl_cache_pair_get(struct ctl *c, const char *ns, const char *policy,
                                    const char *host, bool create);
/* The host's jitter offset under b (binding_offset), hashed again only when b's jitter
 * is not the one it was computed for: ns, policy and host are the pair's own. */
int64_t ctl_cache_pair_offset(struct ctl_pair *pr, const struct binding *b);
void ctl_cache_pair_free(struct ctl_pair *pr);
/* pairs.c: the informer callbacks of Backups and Jobs (ctl_cache_init registers them). */
void ctl_cache_backup_upsert(struct kube_reflector *r, const char *ns, const char *name,
                             json_t *obj, void *arg);
void ctl_cache_backup_delete(struct kube_reflector *r, const char *ns, const char *name,
                             json_t *obj, void *arg);
void ctl_cache_job_upsert(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                          void *arg);
void ctl_cache_job_delete(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                          void *arg);
/* pairs.c: the pod watch's skip_cb, true for an event without "terminated" in its text,
 * which ctl_cache_pod_upsert would do nothing with, so it is not decoded. */
bool ctl_cache_pod_skip(const struct kube_watch_peek *peek, void *arg);
/* pairs.c: the pods' informer callbacks (a backup container's end is kept), and the close. */
void ctl_cache_pod_upsert(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                          void *arg);
void ctl_cache_pod_delete(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                          void *arg);
void ctl_cache_pod_results_close(struct ctl *c);

/* prune.c: the forget after a backup (ctl_prune_metrics: prune_report.c) */
void ctl_prune_init(struct ctl *c);
/* backup_cb: a Succeeded Backup without status.retention is forgotten after. */
void ctl_prune_seen(struct ctl *c, const char *ns, const char *name, const json_t *obj);
/* Cancels the forgets in flight (before the API client's close: they share its transport). */
void ctl_prune_stop(struct ctl *c);
void ctl_prune_close(struct ctl *c);
void ctl_prune_metrics(struct ctl *c, struct util_buf *b);

/* gcjobs.c: the GC Job of each repository (docs/gc.md; ctl_gc_metrics: gcmetrics.c) */
void ctl_gc_init(struct ctl *c);
/* Looks at the repositories every few seconds while acting. */
void ctl_gc_start(struct ctl *c);
void ctl_gc_stop(struct ctl *c);
void ctl_gc_close(struct ctl *c);
/* The GC series of /metrics (docs/operator.md, "Metrics"): per repository this replica looked at.
 */
void ctl_gc_metrics(struct ctl *c, struct util_buf *b);

/* restores.c: the Restores (docs/restoring.md) */
void ctl_restores_init(struct ctl *c);
/* Watches the Restores and runs them while acting. */
void ctl_restores_start(struct ctl *c);
/* Before the API client's close: the watch and the timer. */
void ctl_restores_stop(struct ctl *c);
void ctl_restores_close(struct ctl *c);
/* events.c: Events about policies, paced and combined (docs/operator.md) */
void ctl_events_init(struct ctl *c);
/* Logs the Event and sends it now, or holds it for a combined Event within seconds. */
void ctl_events_policy(struct ctl *c, const struct ctl_policy_entry *e, const char *type,
                       const char *reason, const char *message);
/* Sends every held Event now (a graceful stop). */
void ctl_events_flush(struct ctl *c);
void ctl_events_stop(struct ctl *c);
void ctl_events_close(struct ctl *c);

/* status.c */
void ctl_status_init(struct ctl *c);
void ctl_status_start(struct ctl *c);
void ctl_status_stop(struct ctl *c);
/* Writes the status of dirty policies within a second. */
void ctl_status_soon(struct ctl *c);
/*
 * Writes the status of dirty policies, each at its pace (a busy policy once every few
 * seconds); force: every one now (a graceful stop sends what was decided).
 */
void ctl_status_flush(struct ctl *c, bool force);

/* work.c */
void ctl_work_init(struct ctl *c);
/* Reconciles the queued pairs on the next loop iteration. */
void ctl_work_kick(struct ctl *c);
void ctl_work_stop(struct ctl *c);
void ctl_work_close(struct ctl *c);

/* execute.c: one action of pair pr (e: its policy, NULL when gone), sent; pr waits for it. */
void ctl_execute(struct ctl *c, struct ctl_pair *pr, struct ctl_policy_entry *e,
                 const struct ctl_action *a);

/* endpoints.c */
int ctl_endpoints_init(struct ctl *c, struct util_err *err);
void ctl_endpoints_stop(struct ctl *c);
void ctl_endpoints_close(struct ctl *c);
void ctl_observe_cb(const char *verb, const char *resource, const struct kube_result *res,
                    uint64_t ms, void *arg);

/* acting.c */
int ctl_acting_init(struct ctl *c, const char *user_agent, struct util_err *err);
void ctl_acting_start(struct ctl *c);
void ctl_acting_stop(struct ctl *c);
void ctl_acting_close(struct ctl *c);

#endif
