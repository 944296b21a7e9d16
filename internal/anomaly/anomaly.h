/*
 * anomaly: does a new snapshot look like ransomware or an accident
 * (docs/anomaly.md)?
 *
 * At the end of a backup the agent compares the new snapshot's counters with
 * its parent's and with the median of up to seven recent good snapshots (the
 * parent among them). Five rules, each with documented thresholds
 * (struct anomaly_thresholds, set on the BackupRepository):
 *
 *   mass-change      files changed or deleted >= massChangePercent of the
 *                    parent's files and >= massChangeMinFiles, and
 *                    >= massChangeFactor x the recent median of that count;
 *   deletion-spike   files deleted >= deletionPercent of the parent's files and
 *                    >= deletionMinFiles;
 *   shrink           files or bytes fell by >= shrinkPercent from the parent
 *                    (files when the parent had >= shrinkMinFiles, bytes when it
 *                    had >= shrinkMinBytes);
 *   encryption-like  changed files' data >= encryptionMinBytes, of which
 *                    >= encryptionPercent did not compress, where the recent
 *                    median of the data read that did not compress is
 *                    <= encryptionBaselinePercent;
 *   sudden-growth    data new to the repository >= growthMinBytes and
 *                    >= growthFactor x its recent median.
 *
 * A hit makes the snapshot suspicious: the agent writes `<id>.suspicious`
 * before the manifest; retention keeps it and gives it no slot. The detector
 * never stops a backup. Without a parent nothing fires (there is nothing to
 * compare with).
 *
 * Pure: integers in, a report out; no I/O, no clock, no allocation. Costs: a
 * few dozen integer operations and one sort of at most seven numbers per rule.
 */
#ifndef LODE_ANOMALY_H
#define LODE_ANOMALY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* The counters of one snapshot, as the manifest records them. */
struct anomaly_stats {
    uint64_t files;                        /* regular files in the snapshot */
    uint64_t bytes;                        /* their bytes */
    uint64_t new_files;                    /* files the parent did not have */
    uint64_t changed_files;                /* files the parent had, with other content */
    uint64_t deleted_files;                /* files the parent had and this one has not */
    uint64_t read_bytes;                   /* bytes of new and changed files, chunked this run */
    uint64_t incompressible_read_bytes;    /* of read_bytes, stored without compression */
    uint64_t changed_bytes;                /* bytes of the changed files (not the new ones) */
    uint64_t incompressible_changed_bytes; /* of changed_bytes, stored without compression */
    uint64_t new_bytes;                    /* bytes of chunks new to the repository */
};

/* The thresholds; anomaly_thresholds_default() gives the documented defaults. */
struct anomaly_thresholds {
    unsigned mass_change_percent;         /* 25 */
    uint64_t mass_change_min_files;       /* 50 */
    unsigned mass_change_factor;          /* 5 */
    unsigned deletion_percent;            /* 20 */
    uint64_t deletion_min_files;          /* 50 */
    unsigned shrink_percent;              /* 30 */
    uint64_t shrink_min_files;            /* 50 */
    uint64_t shrink_min_bytes;            /* 1 MiB */
    uint64_t encryption_min_bytes;        /* 1 MiB */
    unsigned encryption_percent;          /* 80 */
    unsigned encryption_baseline_percent; /* 40 */
    unsigned growth_factor;               /* 10 */
    uint64_t growth_min_bytes;            /* 1 GiB */
};

void anomaly_thresholds_default(struct anomaly_thresholds *t);

/*
 * Checks ranges: percentages 1..100, factors 1..1000; counts and byte sizes
 * any. Returns 0 or UTIL_ERANGE with a message naming the field as the
 * BackupRepository spells it (anomaly.massChangePercent, ...).
 */
int anomaly_thresholds_check(const struct anomaly_thresholds *t, struct util_err *err);

/*
 * Sets one threshold by its documented name ("massChangePercent", ... as in
 * docs/anomaly.md and the BackupRepository's `anomaly` field). An unknown name is
 * UTIL_EINVAL; a value out of the field's range is UTIL_ERANGE, each naming the
 * field; t is unchanged on error.
 */
int anomaly_thresholds_set(struct anomaly_thresholds *t, const char *name, uint64_t value,
                           struct util_err *err);

enum anomaly_rule {
    ANOMALY_MASS_CHANGE = 1u << 0,
    ANOMALY_DELETION_SPIKE = 1u << 1,
    ANOMALY_SHRINK = 1u << 2,
    ANOMALY_ENCRYPTION = 1u << 3,
    ANOMALY_GROWTH = 1u << 4
};
#define ANOMALY_RULE_COUNT 5

/* "mass-change", "deletion-spike", "shrink", "encryption-like", "sudden-growth"; NULL past the end.
 */
const char *anomaly_rule_name(unsigned i);

/* What fired, and the numbers, one sentence per rule. */
struct anomaly_report {
    unsigned rules; /* a set of enum anomaly_rule bits; 0: not suspicious */
    char why[ANOMALY_RULE_COUNT][160];
};

/*
 * The one call the agent makes. recent: the recent good snapshots, newest
 * first, recent[0] being the parent; at most seven are read; nrecent 0 means no
 * parent. Returns the rules that fired (also in out->rules).
 */
unsigned anomaly_check(const struct anomaly_thresholds *t, const struct anomaly_stats *snap,
                       const struct anomaly_stats *recent, size_t nrecent,
                       struct anomaly_report *out);

/* The report as one line for a condition or an Event: "mass-change: ...; shrink: ...". */
void anomaly_report_format(const struct anomaly_report *r, char *buf, size_t size);

#endif
