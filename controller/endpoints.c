/*
 * The HTTP endpoints: /metrics (Prometheus text, written from the caches on each scrape,
 * so a scrape costs a walk of the pairs and nothing between scrapes), /healthz and
 * /readyz; and the API client's observer that counts requests for /metrics.
 */
#include "ctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctl_observe_cb(const char *verb, const char *resource, const struct kube_result *res,
                    uint64_t ms, void *arg)
{
    struct ctl *c = arg;
    char key[112], code[16];
    /* A write into a namespace being deleted is refused with 403 by admission, not by
     * RBAC: counted apart, so that a 403 always means a grant is missing. */
    if (kube_result_ns_terminating(res))
        snprintf(code, sizeof(code), "terminating");
    else
        snprintf(code, sizeof(code), "%ld", res->error ? 0L : res->status);
    snprintf(key, sizeof(key), "%s %s %s", verb, code, resource[0] ? resource : "-");
    uint64_t *n = util_map_get(&c->api_counts, key);
    if (n == NULL) {
        n = util_calloc(1, sizeof(*n));
        util_map_set(&c->api_counts, key, n);
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
    const char *bl[] = {"version", c->version, "tzdata", tz_db_version(c->db), NULL};
    ctl_metrics_sample(b, "lodestore_build_info", bl, 1);
    ctl_metrics_family(b, "lodestore_leader", "gauge",
                       "1 when this replica holds the Lease and acts.");
    ctl_metrics_sample(b, "lodestore_leader", NULL, c->acting);

    ctl_metrics_family(b, "lodestore_policy_valid", "gauge",
                       "1 when the policy passed validation.");
    it = 0;
    while (util_map_next(&c->policies, &it, &k, &v)) {
        struct ctl_policy_entry *e = v;
        const char *l[] = {"policy", e->p.key, NULL};
        ctl_metrics_sample(b, "lodestore_policy_valid", l, e->p.valid);
    }
    ctl_metrics_family(
        b, "lodestore_runs_total", "counter",
        "Backup Jobs created (started; caught_up: catch-ups among them) and Backups ended "
        "(succeeded, failed; incomplete among the succeeded, time_limit among the failed).");
    it = 0;
    while (util_map_next(&c->policies, &it, &k, &v)) {
        struct ctl_policy_entry *e = v;
        const char *r[][2] = {{"started", NULL}, {"caught_up", NULL},  {"succeeded", NULL},
                              {"failed", NULL},  {"time_limit", NULL}, {"incomplete", NULL}};
        uint64_t n[] = {e->started, e->caught_up,  e->succeeded,
                        e->failed,  e->time_limit, e->incomplete};
        for (size_t i = 0; i < sizeof(n) / sizeof(*n); i++) {
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
        while (util_map_next(&c->pairs, &it, &k, &v)) {
            struct ctl_pair *pr = v;
            if (!pr->selected)
                continue;
            struct ctl_policy_entry *e = ctl_cache_policy_of(c, pr);
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
    ctl_prune_metrics(c, b);
    ctl_gc_metrics(c, b);
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
                       "Requests to the Kubernetes API by verb, HTTP code (0: no answer) and "
                       "resource (with its subresource: backups/status).");
    it = 0;
    while (util_map_next(&c->api_counts, &it, &k, &v)) {
        char verb[32], code[16], resource[64];
        if (sscanf(k, "%31s %15s %63s", verb, code, resource) != 3)
            continue;
        const char *l[] = {"verb", verb, "code", code, "resource", resource, NULL};
        ctl_metrics_sample(b, "lodestore_api_requests_total", l, (double)*(uint64_t *)v);
    }
    /* What the watches bring in, by resource: the larger part of the controller's CPU in a
     * slot (docs/operator.md, "Requests a run makes"). */
    ctl_metrics_family(b, "lodestore_watch_events_total", "counter",
                       "Watch events received by resource; decoded=\"false\" counts those left "
                       "undecoded (the controller's own writes coming back, pods' events "
                       "without a result).");
    for (int i = 0; i < CTL_R_COUNT; i++) {
        if (c->refl[i] == NULL)
            continue;
        const char *plural = kube_reflector_resource(c->refl[i]);
        uint64_t all = kube_reflector_events(c->refl[i]);
        uint64_t skipped = kube_reflector_skipped(c->refl[i]);
        const char *l1[] = {"resource", plural, "decoded", "true", NULL};
        const char *l2[] = {"resource", plural, "decoded", "false", NULL};
        ctl_metrics_sample(b, "lodestore_watch_events_total", l1, (double)(all - skipped));
        ctl_metrics_sample(b, "lodestore_watch_events_total", l2, (double)skipped);
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
        if (c->acting && !ctl_cache_synced(c)) {
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

static void ctl_httpd_closed_cb(struct ctl_httpd *s)
{
}

int ctl_endpoints_init(struct ctl *c, struct util_err *err)
{
    util_map_init(&c->api_counts);
    return ctl_httpd_init(c->loop, &c->httpd, c->opts.metrics_host, c->opts.metrics_port,
                          ctl_http_cb, c, err);
}

void ctl_endpoints_stop(struct ctl *c)
{
    ctl_httpd_close(&c->httpd, ctl_httpd_closed_cb);
}

void ctl_endpoints_close(struct ctl *c)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->api_counts, &it, &k, &v))
        free(v);
    util_map_close(&c->api_counts);
}
