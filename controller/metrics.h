/*
 * metrics: writing the Prometheus text exposition format (version 0.0.4).
 *
 * The controller keeps its numbers in its own compact structs and renders them on
 * each scrape, so nothing here holds state but the histograms, which are fixed
 * arrays of buckets. Label values are escaped (backslash, quote, newline) because
 * host and policy names come from the cluster.
 *
 * Costs: rendering is linear in the number of samples; a histogram is
 * CTL_METRICS_BUCKETS + 2 numbers.
 */
#ifndef LODE_CTL_METRICS_H
#define LODE_CTL_METRICS_H

#include <stdint.h>

#include "util/util.h"

/* "# HELP" and "# TYPE" lines of one family; type is gauge, counter or histogram. */
void ctl_metrics_family(struct util_buf *b, const char *name, const char *type, const char *help);

/*
 * One sample: name{k1="v1",k2="v2"} value. labels is a NULL-terminated list of
 * alternating keys and values (NULL itself for none).
 */
void ctl_metrics_sample(struct util_buf *b, const char *name, const char *const *labels,
                        double value);

#define CTL_METRICS_BUCKETS 12

/* A histogram of seconds with fixed buckets from 1 ms to 60 s. */
struct ctl_metrics_histogram {
    uint64_t counts[CTL_METRICS_BUCKETS]; /* observations <= bound[i], not cumulative */
    uint64_t count;
    double sum;
};

void ctl_metrics_observe(struct ctl_metrics_histogram *h, double seconds);
/* Writes the _bucket (cumulative, with +Inf), _sum and _count samples. */
void ctl_metrics_histogram_write(struct util_buf *b, const char *name, const char *const *labels,
                                 const struct ctl_metrics_histogram *h);

#endif
