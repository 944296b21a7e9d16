#include "metrics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const double ctl_metrics_bounds[CTL_METRICS_BUCKETS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 60,
};

/* The text format escapes backslash, newline and (in label values) the double quote. */
static void ctl_metrics_escape(struct util_buf *b, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            util_buf_puts(b, "\\\\");
        else if (*s == '\n')
            util_buf_puts(b, "\\n");
        else if (quote && *s == '"')
            util_buf_puts(b, "\\\"");
        else
            util_buf_append(b, s, 1);
    }
}

void ctl_metrics_family(struct util_buf *b, const char *name, const char *type, const char *help)
{
    util_buf_printf(b, "# HELP %s ", name);
    ctl_metrics_escape(b, help, false);
    util_buf_printf(b, "\n# TYPE %s %s\n", name, type);
}

/* Integers print exactly, so counters never show as 1e+06 to a scraper. */
static void ctl_metrics_value(struct util_buf *b, double v)
{
    if (isnan(v))
        util_buf_puts(b, "NaN");
    else if (isinf(v))
        util_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        util_buf_printf(b, "%lld", (long long)v);
    else
        util_buf_printf(b, "%.17g", v);
}

static void ctl_metrics_labels(struct util_buf *b, const char *const *labels, const char *le)
{
    bool any = false;
    if ((labels == NULL || labels[0] == NULL) && le == NULL)
        return;
    util_buf_puts(b, "{");
    for (size_t i = 0; labels != NULL && labels[i] != NULL && labels[i + 1] != NULL; i += 2) {
        util_buf_printf(b, "%s%s=\"", any ? "," : "", labels[i]);
        ctl_metrics_escape(b, labels[i + 1], true);
        util_buf_puts(b, "\"");
        any = true;
    }
    if (le != NULL)
        util_buf_printf(b, "%sle=\"%s\"", any ? "," : "", le);
    util_buf_puts(b, "}");
}

void ctl_metrics_sample(struct util_buf *b, const char *name, const char *const *labels,
                        double value)
{
    util_buf_puts(b, name);
    ctl_metrics_labels(b, labels, NULL);
    util_buf_puts(b, " ");
    ctl_metrics_value(b, value);
    util_buf_puts(b, "\n");
}

void ctl_metrics_observe(struct ctl_metrics_histogram *h, double seconds)
{
    for (size_t i = 0; i < CTL_METRICS_BUCKETS; i++) {
        if (seconds <= ctl_metrics_bounds[i]) {
            h->counts[i]++;
            break;
        }
    }
    h->count++;
    h->sum += seconds;
}

void ctl_metrics_histogram_write(struct util_buf *b, const char *name, const char *const *labels,
                                 const struct ctl_metrics_histogram *h)
{
    uint64_t cumulative = 0;
    char le[32];
    for (size_t i = 0; i < CTL_METRICS_BUCKETS; i++) {
        cumulative += h->counts[i];
        snprintf(le, sizeof(le), "%g", ctl_metrics_bounds[i]);
        util_buf_printf(b, "%s_bucket", name);
        ctl_metrics_labels(b, labels, le);
        util_buf_printf(b, " %llu\n", (unsigned long long)cumulative);
    }
    util_buf_printf(b, "%s_bucket", name);
    ctl_metrics_labels(b, labels, "+Inf");
    util_buf_printf(b, " %llu\n", (unsigned long long)h->count);
    util_buf_printf(b, "%s_sum", name);
    ctl_metrics_labels(b, labels, NULL);
    util_buf_puts(b, " ");
    ctl_metrics_value(b, h->sum);
    util_buf_printf(b, "\n%s_count", name);
    ctl_metrics_labels(b, labels, NULL);
    util_buf_printf(b, " %llu\n", (unsigned long long)h->count);
}
