/*
 * policy_status: a BackupPolicy's status (docs/operator.md, "BackupPolicy") built from
 * what the caches hold and the clock: hosts, running, overdue and the hosts listed,
 * the next run, the alert limit, the started slots, the last run and the Valid, Ready
 * and Overdue conditions. A pure function, so each condition is unit-tested with a fake
 * clock; status.c gathers the input, writes the result when it changed and sends the
 * Warning Event the Ready condition asks for.
 *
 * The output is the same for the same input, whatever the order of the hosts, so an
 * unchanged policy compares equal to the status last written and costs no write.
 *
 * Costs: linear in the policy's hosts and their Backups, plus sorting the overdue hosts.
 */
#ifndef LODE_CTL_POLICY_STATUS_H
#define LODE_CTL_POLICY_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "state.h"

#define CTL_OVERDUE_LISTED 20 /* hosts named in status.overdueHosts */

/* One (policy, host) as its last reconcile left it (reconcile.h, ctl_pair_output). */
struct ctl_policy_status_host {
    const char *host;
    bool selected; /* the policy applies to the host now (only those count as hosts) */
    bool running, overdue, has_success;
    int64_t last_success, overdue_start;
    int64_t next_run;     /* INT64_MAX when none */
    int64_t started_slot; /* the newest slot started, as the last reconcile saw it, or 0 */
    int64_t enrolled;     /* when the host enrolled (state.h, ctl_policy_enrolled), 0 unknown */
    struct ctl_backup *const *backups;
    size_t nbackups;
};

struct ctl_policy_status_input {
    const struct ctl_policy *policy;
    int64_t limit; /* the alert limit now (sched_alert_limit), SCHED_NO_LIMIT when none */
    /* The conditions last written, whose lastTransitionTime stays while the status does;
     * NULL when none. */
    const json_t *conditions;
    const char *tzdata_version;
    /* Why no run starts because of the repository, as the end of a sentence, and the Ready
     * reason it gives (RepositoryNotFound, RepositoryNotReady); NULL when it is Ready. */
    const char *blocked, *blocked_reason;
    const struct ctl_policy_status_host *hosts; /* every pair of the policy, in any order */
    size_t nhosts;
    int64_t now;
};

struct ctl_policy_status {
    json_t *status;           /* the whole status object (owned) */
    const json_t *conditions; /* its conditions (borrowed from status) */
    const char *ready_reason; /* the Ready condition's reason (borrowed from status) */
    char *alarm; /* the Ready message when a person must act on it (owned), else NULL */
};

/* Fills out from in; the caller frees it with ctl_policy_status_free. */
void ctl_policy_status_build(const struct ctl_policy_status_input *in,
                             struct ctl_policy_status *out);
void ctl_policy_status_free(struct ctl_policy_status *out);

#endif
