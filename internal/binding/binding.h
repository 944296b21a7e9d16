/*
 * binding: a policy put to work, and the per-host rules every reader of it shares.
 *
 * The controller, `lode status`, `lode schedule` and `lode forget` each need a
 * validated policy bound to its time zone and schedule, and the controller and
 * `lode status` must agree on which nodes a policy selects, what counts as a host's
 * last success (a good snapshot), when it enrolled, where its overdue age starts and
 * what its alert limit is. Each of
 * those rules is written once, here (docs/policy.md and docs/schedule.md state them
 * for users), so a command can never disagree with the controller.
 *
 * Costs: binding_init loads one zone (tz_zone_load: one file read) and copies its
 * changes into the schedule (sched_init, about 1.5 KiB); the rest is arithmetic, but
 * binding_alert_limit walks a year of slots (sched_alert_limit), so callers that ask
 * often keep its answer (the controller recomputes it hourly).
 */
#ifndef LODE_BINDING_H
#define LODE_BINDING_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "policy/policy.h"
#include "schedule/schedule.h"
#include "tz/tz.h"

struct binding {
    const struct policy *spec; /* borrowed; NULL for a policy that is not valid */
    struct tz_zone *zone;      /* owned: the schedule's zone, or UTC without a schedule */
    bool has_sched;
    struct sched sched; /* when has_sched; borrows zone */
};

/*
 * Binds spec (a policy that passed validation, or NULL for one that did not: UTC and
 * no schedule) to its zone from db. UTIL_ENOENT when the zone is not in db (the
 * policy's fault), another code when db cannot be read (the system's); err says which.
 */
int binding_init(struct binding *b, const struct policy *spec, const struct tz_db *db,
                 struct util_err *err);
void binding_close(struct binding *b);
/*
 * Only the zone (docs/policy.md: retention periods and the schedule use the schedule's
 * zone, UTC without one), owned by the caller; errors as binding_init.
 */
int binding_zone(const struct policy *spec, const struct tz_db *db, struct tz_zone **out,
                 struct util_err *err);

/*
 * The alert limit at `at` (docs/policy.md, alerts): alerts.maxAge when set, else
 * twice the longest gap between slots plus the jitter; SCHED_NO_LIMIT without either
 * or for a policy that is not valid.
 */
int64_t binding_alert_limit(const struct binding *b, int64_t at);

/* This host's jitter offset (0 without a schedule). */
int64_t binding_offset(const struct binding *b, const char *host);

/* A node's labels, as the caller keeps them: true when key has exactly value. */
typedef bool (*binding_has_label_cb)(const void *node, const char *key, const char *value);

/* True when the policy is valid and the node has every label of its nodeSelector. */
bool binding_selects(const struct policy *spec, binding_has_label_cb has_label, const void *node);

/*
 * A policy that is not valid still has hosts (docs/operator.md: its status counts them,
 * so fixing it changes only what runs): its spec.nodeSelector alone, read from the
 * BackupPolicy object obj into out (only node_selector is set; free it with
 * binding_selector_free). Returns true when that part is well formed — absent (every
 * node) or an object of at most POLICY_MAX_NODE_SELECTOR string values — and then
 * binding_selects(out, ...) selects as the policy will once valid; false selects nothing.
 */
bool binding_selector_of(const json_t *obj, struct policy *out);
void binding_selector_free(struct policy *sel);

/*
 * When a successful backup counts as done for overdue and lastSuccess: its
 * completion time, else (a status written without one) its creation.
 */
int64_t binding_success_time(int64_t completed, int64_t created);

/*
 * Whether a Backup (the object as the API returns it) is a success that the overdue
 * clock counts from (docs/schedule.md, "The alert limit": the newest good snapshot):
 * status.phase Succeeded, and neither its status.snapshot marked suspicious or incomplete
 * nor its status.reason `incomplete`. A Succeeded Backup whose agent reported no
 * snapshot counts: the agent exits 0 only once a complete snapshot is written (the
 * Backup's SnapshotReported=False condition and a Warning Event say the result is
 * missing). When it counts, *at gets binding_success_time of status.completionTime and
 * metadata.creationTimestamp.
 */
bool binding_backup_success(const json_t *backup, int64_t *at);

/*
 * Where the controller keeps, in a BackupPolicy's status, when each host it selects
 * enrolled: an object of host name to RFC 3339 time (docs/schedule.md).
 */
#define BINDING_ENROLLED "enrolledHosts"

/*
 * When host enrolled in the policy whose BackupPolicy object is obj (sched_enrolled):
 * the time status.enrolledHosts keeps for it, if any; records_kept when the status has
 * that object at all. selected_since and node_created as sched_enrolled takes them.
 */
int64_t binding_enrolled(const json_t *obj, const char *host, int64_t selected_since,
                         int64_t node_created, int64_t now);

#endif
