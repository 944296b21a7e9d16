/*
 * /metrics for the GC Jobs (docs/operator.md): one family per line of the table
 * below, one sample per repository. Reading the state gcjobs.c keeps costs no
 * request; the last success and outcome come from status.gc, so a restart keeps them.
 */
#include "gcjobs.h"

void ctl_gc_metrics(struct ctl *c, struct util_buf *b)
{
    static const char *const fams[][3] = {
        {"lodestore_gc_last_success_timestamp_seconds", "gauge",
         "When the repository's last successful GC Job ended."},
        {"lodestore_gc_last_failed", "gauge",
         "1 when the repository's last GC Job failed (status.gc.result Failed)."},
        {"lodestore_gc_alert_limit_seconds", "gauge",
         "How old the last successful GC may get before the repository is overdue: twice the "
         "longest gap of spec.gc.schedule."},
        {"lodestore_gc_overdue", "gauge",
         "1 when the repository has had no successful GC within its alert limit (never while "
         "spec.gc.suspend is true)."},
        {"lodestore_gc_runs_total", "counter",
         "GC Jobs that ended, by result (succeeded, failed), since the controller started."},
        {"lodestore_gc_packs_deleted_total", "counter",
         "Packs deleted by successful GC Jobs since the controller started."},
        {"lodestore_gc_bytes_freed_total", "counter",
         "Bytes freed by successful GC Jobs since the controller started."},
    };
    struct ctl_gc *g = c->gc;
    if (g == NULL)
        return;
    for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
        size_t i = 0;
        const char *k;
        void *v;
        ctl_metrics_family(b, fams[f][0], fams[f][1], fams[f][2]);
        while (util_map_next(&g->repos, &i, &k, &v)) {
            const struct gc_repo *r = v;
            const char *l[] = {"repository", k, NULL};
            switch (f) {
            case 0:
                if (r->has_success)
                    ctl_metrics_sample(b, fams[f][0], l, (double)r->last_success);
                break;
            case 1:
                ctl_metrics_sample(b, fams[f][0], l, r->last_failed);
                break;
            case 2:
                if (r->limit != SCHED_NO_LIMIT)
                    ctl_metrics_sample(b, fams[f][0], l, (double)r->limit);
                break;
            case 3:
                ctl_metrics_sample(b, fams[f][0], l,
                                   !r->suspended &&
                                       sched_overdue(r->limit, r->has_success, r->last_success,
                                                     r->created, r->created, ctl_now(c)));
                break;
            case 4: {
                const char *ls[] = {"repository", k, "result", "succeeded", NULL};
                const char *lf[] = {"repository", k, "result", "failed", NULL};
                ctl_metrics_sample(b, fams[f][0], ls, (double)r->succeeded);
                ctl_metrics_sample(b, fams[f][0], lf, (double)r->failed);
                break;
            }
            case 5:
                ctl_metrics_sample(b, fams[f][0], l, (double)r->packs_deleted);
                break;
            default:
                ctl_metrics_sample(b, fams[f][0], l, (double)r->bytes_freed);
            }
        }
    }
}
