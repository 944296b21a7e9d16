/*
 * reconcile: what the controller should do for one (policy, host) now, as a list of
 * actions. A pure function of the caches and the clock, so every decision of
 * docs/schedule.md and docs/operator.md is unit-tested with a fake clock and the event loop only
 * carries the actions out.
 *
 * Level-triggered: the same input gives the same actions, and carrying them out
 * twice is harmless (creates are refused with 409 by name, patches are idempotent),
 * so the caller may reconcile whenever anything changed or a timer fired, including
 * after a restart, with nothing remembered but what the API server holds.
 *
 * A Backup that names a policy that does not exist, a node that does not exist, or a
 * node the policy does not select, and has no Job, ends Failed with reason
 * unknown_policy, unknown_host or host_not_selected and a Warning Event: nothing will
 * ever run it (docs/operator.md, "Running a backup by hand").
 *
 * For each Backup of the pair, in order:
 *   - a Backup that is still active an hour past start + maxRuntime is failed with
 *     reason time_limit and its Job deleted (the node is gone or the pod stuck);
 *   - a Backup whose Job finished takes its outcome (Succeeded, or Failed with reason
 *     max_runtime when the Job hit its deadline, job_failed otherwise);
 *   - a Backup without a Job gets one, unless another backup of the pair is active
 *     (two backups of one policy never run at once on one host) or the node is not
 *     Ready;
 * then the schedule: sched_decide() says whether the last due slot runs now (on
 * time, or as the one catch-up), and when to look again; every slot that passed
 * without a run is counted and reported missed once, including those before a slot
 * that runs now (the catch-up merges them); then overdue (docs/schedule.md, "The alert
 * limit"): the age runs from the newest good success (binding_backup_success), else from
 * the later of the host's enrolment and the policy's creation, and while a finished Job's
 * verdict is not yet recorded the host stays as overdue as it was;
 * then the history: finished Backups beyond the limit are deleted, oldest first,
 * but never the newest good success, which the overdue check reads.
 *
 * Costs: linear in the pair's Backups (bounded by the history limit plus one).
 */
#ifndef LODE_CTL_RECONCILE_H
#define LODE_CTL_RECONCILE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "objects.h"
#include "state.h"

/*
 * What a run may be late by and still count as on time rather than a catch-up (a slot
 * that was reported skipped or missed is a catch-up however soon it runs).
 */
#define CTL_ON_TIME_SECONDS 60
/* A Backup still active this long past start + maxRuntime fails with time_limit. */
#define CTL_TIME_LIMIT_GRACE 3600
/*
 * A run's first status (slotTime, runTime, jobName) goes with the patch that says Running,
 * one write instead of two; a run whose Job has not started this long after its Backup was
 * created gets it as Pending on its own (docs/operator.md, "Requests a run makes").
 */
#define CTL_FIRST_STATUS_GRACE 30

enum ctl_action_type {
    CTL_ACT_CREATE_RUN,    /* create Backup name for run (its first status comes later) */
    CTL_ACT_CREATE_JOB,    /* create the Job of Backup name (the only route to a Job) */
    CTL_ACT_BACKUP_STATUS, /* merge-patch status into Backup name's status */
    CTL_ACT_DELETE_JOB,    /* delete Job name (background propagation) */
    CTL_ACT_DELETE_BACKUP, /* delete Backup name (its Job goes with it) */
    CTL_ACT_EVENT,         /* an Event about the policy (name empty) or Backup name */
};

/*
 * One thing to do, in typed fields: the executor builds the objects (objects.h) from
 * them and the policy, so nothing is parsed back out of JSON on the way.
 */
struct ctl_action {
    enum ctl_action_type type;
    char *ns, *name; /* the Backup (its Job has the same name); name "" for a policy Event */
    /* CREATE_RUN, CREATE_JOB: the run */
    char *host;
    char slot[CTL_SLOT_MAX]; /* local slot text, "" for a run started by hand */
    enum ctl_trigger trigger;
    char *backup_uid; /* CREATE_JOB: the Backup that owns the Job */
    char *pin_reason; /* CREATE_JOB: the Backup's spec.pin.reason, or NULL */
    /* CREATE_RUN: the Backup's first status (phase Pending, slot and run time, job name);
     * BACKUP_STATUS: the patch. Its job_name is borrowed: carry actions out before the
     * caches or the action list change. */
    struct ctl_backup_status status;
    /* BACKUP_STATUS of a run whose Job ended: the Job, whose pod's termination message
     * (the agent's result) the executor reads into the patch (ctl_backup_result), or NULL */
    char *result_job;
    /* EVENT */
    const char *event_type; /* "Normal" or "Warning" */
    const char *reason;     /* CamelCase */
    char *message;
};

struct ctl_actions {
    struct ctl_action *v;
    size_t n, cap;
};

void ctl_actions_init(struct ctl_actions *a);
void ctl_actions_free(struct ctl_actions *a);

struct ctl_config {
    int64_t history; /* finished Backups kept per (policy, host) */
    struct ctl_job_opts job;
};

struct ctl_pair_input {
    const struct ctl_policy *policy; /* NULL: no such policy (a Backup named one by hand) */
    const char *host;
    const struct ctl_node *node; /* NULL when the node is gone or no longer selected */
    bool node_exists;            /* the Node exists (selected or not) */
    /* Why no run may start now although the host could (the repository is missing or not
     * Ready), as the end of a sentence, or NULL. Slots then pass as missed. */
    const char *blocked;
    struct ctl_backup *const *backups;
    const struct ctl_job *const *jobs; /* jobs[i]: the Job of backups[i], or NULL */
    size_t nbackups;
    int64_t limit;          /* the policy's alert limit now (sched_alert_limit) */
    int64_t offset;         /* this host's jitter offset */
    int64_t reported_slot;  /* the last due slot already reported skipped or missed, or 0 */
    int64_t gap_slot;       /* the slots before this one are already counted missed, or 0 */
    int64_t selected_since; /* when the policy came to select the host (seen happen), or 0 */
    int64_t enrolled;       /* when the host enrolled (ctl_policy_enrolled), 0: node creation */
    int64_t started_slot;   /* the newest slot known started (policy status), or 0 */
    bool was_overdue;       /* the last reconcile found the host overdue (Events on change) */
    int64_t now;
};

struct ctl_pair_output {
    int64_t wake; /* when to reconcile this pair again, or INT64_MAX */
    bool running; /* a backup of the pair is active (after these actions) */
    bool has_success;
    int64_t last_success; /* completion of the newest good success (binding_backup_success) */
    bool overdue;
    int64_t overdue_start; /* what the age counts from */
    int64_t next_run;      /* INT64_MAX when none */
    uint64_t missed;       /* slots newly found missed (reported by Missed or Skipped Events) */
    int64_t reported_slot; /* the caller keeps this for the next call */
    int64_t gap_slot;      /* likewise */
    int64_t started_slot;  /* the newest slot started, by the input or a Backup: persist it */
    struct sched_decision decision;
    bool decided;
};

/* Appends the pair's actions to acts and fills out. */
void ctl_reconcile_pair(const struct ctl_pair_input *in, const struct ctl_config *cfg,
                        struct ctl_actions *acts, struct ctl_pair_output *out);

/*
 * Whether a create that failed with this HTTP status (0: not answered) or error is a
 * refusal a person must fix, worth a Warning Event (docs/operator.md): a 4xx from the API
 * server, or not sent because of what the cluster holds (UTIL_EINVAL). Throttling (429),
 * a timeout (408), a server error and no answer are retried without one: an Event then
 * would add requests to an API server that asked for fewer.
 */
bool ctl_write_refused(long status, int error);

/* "YYYY-MM-DDTHH:MM" of a local time (seconds as in tz.h). */
void ctl_slot_text(int64_t local, char out[CTL_SLOT_MAX]);

#endif
