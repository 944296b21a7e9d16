#include "reconcile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctl_actions_init(struct ctl_actions *a)
{
    memset(a, 0, sizeof(*a));
}

void ctl_actions_free(struct ctl_actions *a)
{
    for (size_t i = 0; i < a->n; i++) {
        struct ctl_action *x = &a->v[i];
        free(x->ns);
        free(x->name);
        free(x->host);
        free(x->backup_uid);
        free(x->pin_reason);
        free(x->result_job);
        free(x->status.message);
        free(x->message);
    }
    free(a->v);
    ctl_actions_init(a);
}

static struct ctl_action *ctl_action_add(struct ctl_actions *a, enum ctl_action_type type,
                                         const char *ns, const char *name)
{
    a->v = util_grow(a->v, &a->cap, a->n + 1, sizeof(*a->v));
    struct ctl_action *x = &a->v[a->n++];
    memset(x, 0, sizeof(*x));
    x->type = type;
    x->ns = util_strdup(ns);
    x->name = util_strdup(name ? name : "");
    return x;
}

static void ctl_event(struct ctl_actions *a, const char *ns, const char *backup, const char *type,
                      const char *reason, char *message)
{
    struct ctl_action *x = ctl_action_add(a, CTL_ACT_EVENT, ns, backup);
    x->event_type = type;
    x->reason = reason;
    x->message = message;
}

bool ctl_write_refused(long status, int error)
{
    if (error == UTIL_EINVAL)
        return true;
    return error == 0 && status >= 400 && status < 500 && status != 408 && status != 429;
}

void ctl_slot_text(int64_t local, char out[CTL_SLOT_MAX])
{
    util_format_time(local, 0, UTIL_TIME_MINUTE, out, CTL_SLOT_MAX);
}

/*
 * The first status of a run (its Job's name; a scheduled run's slot and run time) rides on
 * whichever patch comes first, so a run that starts at once costs one status write. The
 * Job is named after its Backup (execute.c), so a run that ends before any status was
 * written, a run made by hand included, still names its Job.
 */
static void ctl_first_status(const struct ctl_pair_input *in, const struct ctl_backup *b,
                             struct ctl_action *x)
{
    if (b->has_status)
        return;
    if (x->status.job_name == NULL)
        x->status.job_name = x->name;
    if (!b->has_slot_time)
        return;
    x->status.slot_time = b->slot_time;
    x->status.run_time = b->slot_time + in->offset;
}

/* The status patch that makes a Backup final. */
static struct ctl_action *ctl_finish_backup(const struct ctl_pair_input *in,
                                            struct ctl_actions *acts, const struct ctl_backup *b,
                                            enum ctl_phase phase, const char *reason,
                                            const char *message, int64_t started, int64_t completed)
{
    struct ctl_action *x = ctl_action_add(acts, CTL_ACT_BACKUP_STATUS, b->ns, b->name);
    x->status = (struct ctl_backup_status){
        .phase = phase,
        .reason = reason,
        .message = util_strdup(message ? message : ""),
        .started = started > 0 ? started : 0,
        .completed = completed,
        .has_duration = true,
        .duration = completed - (started > 0 ? started : b->created),
    };
    ctl_first_status(in, b, x);
    return x;
}

/* Brings one Backup in line with its Job; returns true when it is still active after. */
static bool ctl_reconcile_backup(const struct ctl_pair_input *in, const struct ctl_backup *b,
                                 const struct ctl_job *job, struct ctl_actions *acts, int64_t *wake)
{
    const struct policy *spec = &in->policy->spec;
    char buf[64];

    if (b->deleting)
        return false;
    if (ctl_phase_done(b->phase)) {
        /*
         * A run failed with time_limit may have got its Job after the verdict (the Job is
         * created right after the Backup): it must not run on.
         */
        if (job != NULL && !job->finished && !job->deleting && b->reason != NULL &&
            strcmp(b->reason, "time_limit") == 0)
            ctl_action_add(acts, CTL_ACT_DELETE_JOB, b->ns, job->name);
        return false;
    }

    int64_t start = b->started > 0 ? b->started : (job && job->started ? job->started : b->created);
    int64_t max_runtime = in->policy->valid ? spec->limits.max_runtime : POLICY_DEFAULT_MAX_RUNTIME;

    if (job != NULL && job->finished) {
        struct ctl_action *x;
        if (job->succeeded) {
            x = ctl_finish_backup(in, acts, b, CTL_PHASE_SUCCEEDED, NULL, "", start,
                                  job->completed ? job->completed : in->now);
        } else if (job->fail_reason != NULL && strcmp(job->fail_reason, "DeadlineExceeded") == 0) {
            policy_format_duration(max_runtime, buf, sizeof(buf));
            char *msg =
                util_asprintf("stopped at its maxRuntime of %s; no snapshot was written", buf);
            x = ctl_finish_backup(in, acts, b, CTL_PHASE_FAILED, "max_runtime", msg, start,
                                  job->completed ? job->completed : in->now);
            free(msg);
        } else {
            char *msg = util_asprintf("the backup Job %s failed (%s)", job->name,
                                      job->fail_reason ? job->fail_reason : "no reason given");
            x = ctl_finish_backup(in, acts, b, CTL_PHASE_FAILED, "job_failed", msg, start,
                                  job->completed ? job->completed : in->now);
            free(msg);
        }
        /* The agent's result is in its pod's termination message: the executor reads it. */
        x->result_job = util_strdup(job->name);
        return false;
    }
    /*
     * time_limit: the Job's own deadline should have ended it an hour ago. A Job that
     * did end has its outcome recorded above, however late we look.
     */
    int64_t deadline = start + max_runtime + CTL_TIME_LIMIT_GRACE;
    if (in->now >= deadline) {
        policy_format_duration(max_runtime, buf, sizeof(buf));
        char *msg = util_asprintf("still active one hour after its maxRuntime of %s ended; the "
                                  "node may be gone or the pod stuck, so the run was stopped",
                                  buf);
        ctl_finish_backup(in, acts, b, CTL_PHASE_FAILED, "time_limit", msg, start, in->now);
        if (job != NULL)
            ctl_action_add(acts, CTL_ACT_DELETE_JOB, b->ns, job->name);
        ctl_event(acts, b->ns, b->name, "Warning", "TimeLimit",
                  util_asprintf("backup of %s on %s failed: %s",
                                b->slot[0] ? b->slot : "a manual run", b->host, msg));
        free(msg);
        return false;
    }
    if (deadline < *wake)
        *wake = deadline;

    /*
     * Running goes out as soon as the Job has started, with the first status: what a person
     * watching the run reads (its phase, its Job) is never behind the run. Only a run whose
     * Job has not started within CTL_FIRST_STATUS_GRACE gets a first status of its own.
     */
    if (job != NULL && b->phase == CTL_PHASE_PENDING && (job->active > 0 || job->started > 0)) {
        struct ctl_action *x = ctl_action_add(acts, CTL_ACT_BACKUP_STATUS, b->ns, b->name);
        x->status = (struct ctl_backup_status){
            .phase = CTL_PHASE_RUNNING,
            .started = job->started ? job->started : in->now,
            .job_name = job->name,
        };
        ctl_first_status(in, b, x);
    } else if (!b->has_status && b->has_slot_time) {
        /* Not started within the grace: Pending says which slot it waits for, and why not
         * is in the Job (or the Events about the pair). */
        int64_t due = b->created + CTL_FIRST_STATUS_GRACE;
        if (in->now >= due) {
            struct ctl_action *x = ctl_action_add(acts, CTL_ACT_BACKUP_STATUS, b->ns, b->name);
            x->status = (struct ctl_backup_status){.phase = CTL_PHASE_PENDING};
            ctl_first_status(in, b, x);
        } else if (due < *wake) {
            *wake = due;
        }
    }
    return true;
}

/* The Job is asked for only here, so its owner uid always comes from a Backup the cache holds. */
static void ctl_add_job(const struct ctl_backup *b, struct ctl_actions *acts)
{
    struct ctl_action *x = ctl_action_add(acts, CTL_ACT_CREATE_JOB, b->ns, b->name);
    x->host = util_strdup(b->host);
    snprintf(x->slot, sizeof(x->slot), "%s", b->slot);
    x->trigger = b->trigger;
    x->backup_uid = b->uid ? util_strdup(b->uid) : NULL;
    x->pin_reason = b->pin_reason ? util_strdup(b->pin_reason) : NULL;
}

/* Ties on creation time fall back to the name, so the same history is trimmed on every replica. */
static int ctl_backup_newer(const void *a, const void *b)
{
    const struct ctl_backup *x = *(struct ctl_backup *const *)a;
    const struct ctl_backup *y = *(struct ctl_backup *const *)b;
    if (x->created != y->created)
        return x->created > y->created ? -1 : 1;
    return -strcmp(x->name, y->name);
}

static void ctl_trim_history(const struct ctl_pair_input *in, const struct ctl_config *cfg,
                             struct ctl_actions *acts, const struct ctl_backup *newest_success)
{
    size_t n = 0;
    struct ctl_backup **done = util_calloc(in->nbackups + 1, sizeof(*done));
    for (size_t i = 0; i < in->nbackups; i++) {
        if (ctl_phase_done(in->backups[i]->phase) && !in->backups[i]->deleting)
            done[n++] = in->backups[i];
    }
    qsort(done, n, sizeof(*done), ctl_backup_newer);
    for (size_t i = (size_t)(cfg->history > 0 ? cfg->history : 1); i < n; i++) {
        if (done[i] != newest_success)
            ctl_action_add(acts, CTL_ACT_DELETE_BACKUP, done[i]->ns, done[i]->name);
    }
    free(done);
}

static void ctl_create_run(const struct ctl_pair_input *in, const struct sched_decision *d,
                           struct ctl_actions *acts)
{
    const struct ctl_policy *p = in->policy;
    char slot[CTL_SLOT_MAX], name[CTL_NAME_MAX], late[32], window[32];
    /* A slot reported skipped or missed that now runs is a catch-up, however soon; so is
     * one whose run time passed while the policy did not select the host. */
    bool caught_up = d->late > CTL_ON_TIME_SECONDS || d->slot.at == in->reported_slot ||
                     in->selected_since > d->run_time;
    enum ctl_trigger trigger = caught_up ? CTL_TRIGGER_CATCH_UP : CTL_TRIGGER_SCHEDULED;

    ctl_slot_text(d->slot.local, slot);
    ctl_backup_name(p->ns, p->name, in->host, slot, name);
    struct ctl_action *x = ctl_action_add(acts, CTL_ACT_CREATE_RUN, p->ns, name);
    x->host = util_strdup(in->host);
    memcpy(x->slot, slot, sizeof(slot));
    x->trigger = trigger;
    x->status = (struct ctl_backup_status){
        .phase = CTL_PHASE_PENDING,
        .slot_time = d->slot.at,
        .run_time = d->run_time,
    };

    if (trigger == CTL_TRIGGER_CATCH_UP) {
        policy_format_duration(d->late, late, sizeof(late));
        policy_format_duration(p->spec.schedule.catch_up_window, window, sizeof(window));
        ctl_event(acts, p->ns, NULL, "Normal", "CaughtUp",
                  util_asprintf("catch-up backup of slot %s on %s, %s after its run time "
                                "(catch-up window %s)",
                                slot, in->host, late, window));
    } else {
        ctl_event(acts, p->ns, NULL, "Normal", "BackupStarted",
                  util_asprintf("backup of slot %s started on %s", slot, in->host));
    }
}

/* Events only for slots newly found missed: the pair is reconciled many times while it waits. */
static void ctl_report_missed(const struct ctl_pair_input *in, const struct sched_decision *d,
                              int64_t last_started, struct ctl_actions *acts,
                              struct ctl_pair_output *out)
{
    const struct ctl_policy *p = in->policy;
    char slot[CTL_SLOT_MAX], window[32];

    if (!d->has_slot || d->slot.at == in->reported_slot)
        return;
    /* The slot that is running (or ran) is not missed, whatever else holds the host. */
    if (last_started != 0 && last_started >= d->slot.at)
        return;
    /* Reported once per slot: a pair is reconciled many times while it waits. */
    out->reported_slot = d->slot.at;
    out->missed++;
    ctl_slot_text(d->slot.local, slot);
    switch (d->reason) {
    case SCHED_RUNNING:
        ctl_event(acts, p->ns, NULL, "Warning", "Skipped",
                  util_asprintf("slot %s on %s skipped: the previous backup of this policy is "
                                "still running; one catch-up runs when it ends, if in time",
                                slot, in->host));
        break;
    case SCHED_NOT_READY:
        if (in->blocked != NULL && in->node != NULL && in->node->ready)
            ctl_event(acts, p->ns, NULL, "Warning", "Missed",
                      util_asprintf("slot %s on %s missed: %s; one catch-up runs when it is, if "
                                    "in time",
                                    slot, in->host, in->blocked));
        else
            ctl_event(acts, p->ns, NULL, "Warning", "Missed",
                      util_asprintf("slot %s on %s missed: the node is not Ready; one catch-up "
                                    "runs when it is, if in time",
                                    slot, in->host));
        break;
    case SCHED_TOO_LATE:
        policy_format_duration(p->spec.schedule.catch_up_window, window, sizeof(window));
        ctl_event(acts, p->ns, NULL, "Warning", "Missed",
                  util_asprintf("slot %s on %s missed and not caught up: its run time is more "
                                "than the catch-up window of %s ago",
                                slot, in->host, window));
        break;
    default:
        out->missed--;
        out->reported_slot = in->reported_slot;
        break;
    }
}

/* A gap longer than this many slots is counted as this many ("at least"). */
#define CTL_GAP_MAX 100000

/*
 * The slots before the last due one (R) that passed without a run: after the newest slot
 * started or already reported, and not before the slots began for the host
 * (sched_decide's rule). None of them will ever run (only R may be caught up), so each
 * is counted and reported now, once: the next reconcile starts after R.
 */
static void ctl_report_gap(const struct ctl_pair_input *in, const struct sched_decision *d,
                           int64_t last_started, struct ctl_actions *acts,
                           struct ctl_pair_output *out)
{
    const struct ctl_policy *p = in->policy;
    int64_t from = last_started > in->reported_slot ? last_started : in->reported_slot;
    if (in->gap_slot > from)
        from = in->gap_slot;
    int64_t begin = in->node->created;
    if (p->created > begin)
        begin = p->created;
    if (p->schedule_changed > begin)
        begin = p->schedule_changed;
    if (d->has_slot && d->slot.at > out->gap_slot)
        out->gap_slot = d->slot.at;
    if (!d->has_slot || from == 0 || d->slot.at <= from)
        return;
    /* Slots before the beginning are not missed; a slot at it is. */
    if (begin - 1 > from)
        from = begin - 1;
    struct sched_slot s, first = {0}, last = {0};
    uint64_t n = 0;
    int64_t at = from;
    while (n < CTL_GAP_MAX && sched_next(&p->bind.sched, at, &s) == 0 && s.at < d->slot.at) {
        if (n == 0)
            first = s;
        last = s;
        n++;
        at = s.at;
    }
    if (n == 0)
        return;
    out->missed += n;
    char a[CTL_SLOT_MAX], b[CTL_SLOT_MAX], r[CTL_SLOT_MAX];
    ctl_slot_text(first.local, a);
    ctl_slot_text(last.local, b);
    ctl_slot_text(d->slot.local, r);
    const char *then = d->run ? "runs now" : "is the only one that can still be caught up";
    if (n == 1)
        ctl_event(acts, p->ns, NULL, "Warning", "Missed",
                  util_asprintf("slot %s on %s missed: no backup started for it (the controller "
                                "or the node was down); missed slots are not replayed, slot %s %s",
                                a, in->host, r, then));
    else
        ctl_event(acts, p->ns, NULL, "Warning", "Missed",
                  util_asprintf("%s%llu slots on %s missed, %s to %s: no backup started for them "
                                "(the controller or the node was down); missed slots are not "
                                "replayed, slot %s %s",
                                n == CTL_GAP_MAX ? "at least " : "", (unsigned long long)n,
                                in->host, a, b, r, then));
}

/*
 * A suspended policy (docs/policy.md, "Suspend") starts nothing and reports nothing
 * missed, but the slots that pass count as seen: resuming then reports no gap for them
 * and runs one catch-up of the last one if it is within the catch-up window, as after
 * an outage. The pair still wakes at each slot, to see it; the status shows no next run.
 */
static void ctl_pass_suspended(const struct sched_decision *d, struct ctl_pair_output *out)
{
    if (d->has_slot) {
        out->reported_slot = d->slot.at;
        if (d->slot.at > out->gap_slot)
            out->gap_slot = d->slot.at;
    }
    out->next_run = INT64_MAX;
}

/* Nothing will ever run these: say so on each, once (their phase then ends it). */
static void ctl_reject_backups(const struct ctl_pair_input *in, struct ctl_actions *acts)
{
    const char *reason, *event, *why;
    if (in->policy == NULL) {
        reason = "unknown_policy";
        event = "UnknownPolicy";
        why = "no BackupPolicy of that name exists in the namespace";
    } else if (!in->node_exists) {
        reason = "unknown_host";
        event = "UnknownHost";
        why = "no Node of that name exists";
    } else {
        reason = "host_not_selected";
        event = "HostNotSelected";
        why = "the policy's nodeSelector does not select that node";
    }
    for (size_t i = 0; i < in->nbackups; i++) {
        const struct ctl_backup *b = in->backups[i];
        if (b->deleting || ctl_phase_done(b->phase) || in->jobs[i] != NULL)
            continue;
        char *msg =
            util_asprintf("backup of policy %s on host %s cannot run: %s", b->policy, b->host, why);
        ctl_finish_backup(in, acts, b, CTL_PHASE_FAILED, reason, msg, 0, in->now);
        ctl_event(acts, b->ns, b->name, "Warning", event, msg);
    }
}

void ctl_reconcile_pair(const struct ctl_pair_input *in, const struct ctl_config *cfg,
                        struct ctl_actions *acts, struct ctl_pair_output *out)
{
    if (in->policy == NULL) {
        memset(out, 0, sizeof(*out));
        out->wake = INT64_MAX;
        out->next_run = INT64_MAX;
        out->reported_slot = in->reported_slot;
        ctl_reject_backups(in, acts);
        return;
    }

    const struct ctl_policy *p = in->policy;
    const struct ctl_backup *newest_success = NULL;
    const struct ctl_backup *last_slot = NULL;
    bool running = false, verdict_pending = false;
    bool node_ready = in->node != NULL && in->node->ready;

    memset(out, 0, sizeof(*out));
    out->wake = INT64_MAX;
    out->next_run = INT64_MAX;
    out->reported_slot = in->reported_slot;
    out->gap_slot = in->gap_slot;

    /* 1. Each Backup against its Job. */
    bool *active = util_calloc(in->nbackups + 1, sizeof(*active));
    for (size_t i = 0; i < in->nbackups; i++) {
        const struct ctl_backup *b = in->backups[i];
        active[i] = ctl_reconcile_backup(in, b, in->jobs[i], acts, &out->wake);
        if (active[i] && in->jobs[i] != NULL)
            running = true;
        /* The last success: the newest good snapshot (binding_backup_success). */
        if (b->good && (newest_success == NULL || b->good_at > newest_success->good_at))
            newest_success = b;
        if (b->has_slot_time && (last_slot == NULL || b->slot_time > last_slot->slot_time))
            last_slot = b;
        /* A Job ended whose verdict this pass only asks for: whether its snapshot is good
         * is known once the agent's result is read into the Backup. */
        if (!ctl_phase_done(b->phase) && !b->deleting && in->jobs[i] != NULL &&
            in->jobs[i]->finished)
            verdict_pending = true;
    }
    if (newest_success != NULL) {
        out->has_success = true;
        out->last_success = newest_success->good_at;
    }

    /*
     * The newest slot started: from the Backups, or from the policy's status when its
     * Backup was deleted, so a slot never runs twice whatever is deleted.
     */
    int64_t last_started = last_slot != NULL ? last_slot->slot_time : 0;
    if (in->started_slot > last_started)
        last_started = in->started_slot;
    out->started_slot = last_started;

    /* 2. Backups waiting for a Job: one at a time per pair, on a Ready node, with the
     * repository Ready; on a node that is gone or not selected, none will ever run. */
    if (in->node == NULL && !p->deleting) {
        ctl_reject_backups(in, acts);
        for (size_t i = 0; i < in->nbackups; i++)
            if (in->jobs[i] == NULL)
                active[i] = false;
    }
    if (p->valid && !p->deleting && node_ready && !running && in->blocked == NULL) {
        for (size_t i = 0; i < in->nbackups; i++) {
            if (active[i] && in->jobs[i] == NULL) {
                ctl_add_job(in->backups[i], acts);
                running = true;
                break;
            }
        }
    }
    for (size_t i = 0; i < in->nbackups; i++)
        running = running || active[i];
    free(active);

    /* 3. The schedule. */
    if (p->valid && !p->deleting && p->bind.has_sched && in->node != NULL) {
        struct sched_host h = {
            .ready = node_ready && in->blocked == NULL && !p->spec.suspend,
            .backup_running = running,
            .node_joined = in->node->created,
            .policy_created = p->created,
            .schedule_changed = p->schedule_changed,
            .has_last_started = last_started != 0,
            .last_started_slot = last_started,
            .offset = in->offset,
            .catch_up_window = p->spec.schedule.catch_up_window,
        };
        sched_decide(&p->bind.sched, &h, in->now, &out->decision);
        out->decided = true;
        out->next_run = out->decision.next_run;
        if (p->spec.suspend) {
            ctl_pass_suspended(&out->decision, out);
        } else if (out->decision.run) {
            ctl_create_run(in, &out->decision, acts);
            running = true;
        } else {
            ctl_report_missed(in, &out->decision, last_started, acts, out);
        }
        if (!p->spec.suspend)
            ctl_report_gap(in, &out->decision, last_started, acts, out);
        if (out->decision.next_run < out->wake)
            out->wake = out->decision.next_run;
    }
    out->running = running;

    /* 4. Overdue (docs/schedule.md, "The alert limit"), for hosts the policy applies to. */
    if (in->node != NULL && in->limit != SCHED_NO_LIMIT) {
        int64_t enrolled = in->enrolled > 0 ? in->enrolled : in->node->created;
        int64_t start =
            sched_overdue_start(out->has_success, out->last_success, enrolled, p->created);
        out->overdue_start = start;
        out->overdue = sched_overdue(in->limit, out->has_success, out->last_success, enrolled,
                                     p->created, in->now);
        /* Until a run's verdict is recorded (a pass away), the host stays as it was: a
         * suspicious snapshot must not clear it for a moment, nor a good one be too late to
         * keep it from being announced overdue. */
        if (verdict_pending)
            out->overdue = in->was_overdue;
        if (out->overdue && !in->was_overdue) {
            char lim[32], since[UTIL_TIME_BUF];
            policy_format_duration(in->limit, lim, sizeof(lim));
            util_format_utc(start, since, sizeof(since));
            ctl_event(acts, p->ns, NULL, "Warning", "Overdue",
                      util_asprintf("host %s has no successful backup within %s (%s %s)", in->host,
                                    lim, out->has_success ? "last success" : "counting since",
                                    since));
        }
        if (!out->overdue && start + in->limit + 1 < out->wake)
            out->wake = start + in->limit + 1;
    }

    /* 5. History. */
    ctl_trim_history(in, cfg, acts, newest_success);
}
