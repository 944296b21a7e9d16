/*
 * A policy's status from the caches' view and the clock (policy_status.h): the counts in
 * one pass over the hosts, then the conditions, which read the counts.
 */
#include "policy_status.h"

#include <stdlib.h>
#include <string.h>

#include "binding/binding.h"
#include "util/util.h"

/* The condition type with status st; lastTransitionTime stays while the status does. */
static json_t *ps_condition3(const struct ctl_policy_status_input *in, const char *type,
                             const char *st, const char *reason, const char *message)
{
    const json_t *prev = NULL;
    size_t i;
    const json_t *x;
    json_array_foreach(in->conditions, i, x)
    {
        const char *t = json_string_value(json_object_get(x, "type"));
        if (t != NULL && strcmp(t, type) == 0)
            prev = x;
    }
    const char *prev_status = json_string_value(json_object_get(prev, "status"));
    const char *prev_time = json_string_value(json_object_get(prev, "lastTransitionTime"));
    char now[UTIL_TIME_BUF];
    util_format_utc(in->now, now, sizeof(now));
    return json_pack("{s:s, s:s, s:I, s:s, s:s, s:s}", "type", type, "status", st,
                     "observedGeneration", (json_int_t)in->policy->generation, "lastTransitionTime",
                     prev_status != NULL && strcmp(prev_status, st) == 0 && prev_time ? prev_time
                                                                                      : now,
                     "reason", reason, "message", message);
}

static json_t *ps_condition(const struct ctl_policy_status_input *in, const char *type, bool status,
                            const char *reason, const char *message)
{
    return ps_condition3(in, type, status ? "True" : "False", reason, message);
}

/* Longest overdue first; the host's name breaks ties, so the order is the input's own. */
/* status.enrolledHosts: when each host the policy selects enrolled (state.h). */
static json_t *ps_enrolled(const struct ctl_policy_status_input *in)
{
    const char **hosts = util_calloc(in->nhosts + 1, sizeof(*hosts));
    int64_t *times = util_calloc(in->nhosts + 1, sizeof(*times));
    size_t n = 0;
    for (size_t i = 0; i < in->nhosts; i++) {
        if (!in->hosts[i].selected)
            continue;
        hosts[n] = in->hosts[i].host;
        times[n++] = in->hosts[i].enrolled;
    }
    json_t *out = ctl_policy_enrolled_json(in->policy, hosts, times, n);
    free(hosts);
    free(times);
    return out;
}

static int ps_overdue_cmp(const void *a, const void *b)
{
    const struct ctl_policy_status_host *x = *(const struct ctl_policy_status_host *const *)a;
    const struct ctl_policy_status_host *y = *(const struct ctl_policy_status_host *const *)b;
    if (x->overdue_start != y->overdue_start)
        return x->overdue_start < y->overdue_start ? -1 : 1;
    return strcmp(x->host, y->host);
}

/* What one pass over the hosts counts. */
struct ps_counts {
    size_t hosts, running, overdue, with_success;
    int64_t next;
    const struct ctl_policy_status_host **od; /* the overdue hosts, sorted */
    const struct ctl_backup *last;            /* the newest Backup, for status.lastRun */
    json_t *started;                          /* status.startedSlots */
};

static void ps_count(const struct ctl_policy_status_input *in, struct ps_counts *n)
{
    char buf[UTIL_TIME_BUF];
    size_t odcap = 0;
    memset(n, 0, sizeof(*n));
    n->next = INT64_MAX;
    n->started = json_object();
    for (size_t h = 0; h < in->nhosts; h++) {
        const struct ctl_policy_status_host *ph = &in->hosts[h];
        for (size_t i = 0; i < ph->nbackups; i++) {
            const struct ctl_backup *b = ph->backups[i];
            if (n->last == NULL || b->created > n->last->created ||
                (b->created == n->last->created && strcmp(b->name, n->last->name) > 0))
                n->last = b;
        }
        int64_t slot = ctl_policy_started_slot(in->policy, ph->host);
        if (ph->started_slot > slot)
            slot = ph->started_slot;
        if (slot > 0) {
            util_format_utc(slot, buf, sizeof(buf));
            json_object_set_new(n->started, ph->host, json_string(buf));
        }
        n->running += ph->running;
        if (!ph->selected)
            continue;
        n->hosts++;
        n->with_success += ph->has_success;
        if (ph->next_run < n->next)
            n->next = ph->next_run;
        if (ph->overdue) {
            n->od = util_grow(n->od, &odcap, n->overdue + 1, sizeof(*n->od));
            n->od[n->overdue++] = ph;
        }
    }
    if (n->overdue > 1)
        qsort(n->od, n->overdue, sizeof(*n->od), ps_overdue_cmp);
}

/* Valid and Ready; Ready's message goes to out->alarm when a person must act on it. */
static void ps_ready(const struct ctl_policy_status_input *in, const struct ps_counts *n,
                     json_t *conds, struct ctl_policy_status *out)
{
    const struct ctl_policy *p = in->policy;
    char buf[UTIL_TIME_BUF];
    char *msg;
    if (p->valid)
        json_array_append_new(
            conds, ps_condition(in, "Valid", true, "Valid", "the policy passed validation"));
    else
        json_array_append_new(conds, ps_condition(in, "Valid", false,
                                                  p->not_allowed ? "NotAllowed" : "Invalid",
                                                  p->invalid_message));
    if (!p->valid && p->not_allowed) {
        /* docs/security.md, "Who may back up a node". */
        out->alarm = util_asprintf("no backup runs: %s", p->invalid_message);
        json_array_append_new(conds, ps_condition(in, "Ready", false, "NotAllowed", out->alarm));
    } else if (!p->valid) {
        out->alarm =
            util_asprintf("the policy is not valid, so no backup runs: %s", p->invalid_message);
        json_array_append_new(conds, ps_condition(in, "Ready", false, "Invalid", out->alarm));
    } else if (in->blocked != NULL) {
        out->alarm =
            util_asprintf("no backup runs: %s; runs start by themselves when it is Ready "
                          "(a slot missed meanwhile is caught up within the catch-up window)",
                          in->blocked);
        json_array_append_new(conds,
                              ps_condition(in, "Ready", false, in->blocked_reason, out->alarm));
    } else if (p->spec.suspend && p->bind.has_sched) {
        /* Asked for, so no alarm: the Suspended condition says the rest. */
        json_array_append_new(
            conds, ps_condition(in, "Ready", false, "Suspended",
                                "spec.suspend is true: no scheduled backup starts; a Backup "
                                "made by hand still runs"));
    } else if (n->hosts == 0) {
        json_array_append_new(conds, ps_condition(in, "Ready", false, "NoMatchingNodes",
                                                  "no node matches the policy's nodeSelector"));
    } else if (!p->bind.has_sched) {
        msg = util_asprintf("%zu hosts; no schedule: backups run only when started by hand",
                            n->hosts);
        json_array_append_new(conds, ps_condition(in, "Ready", true, "ManualOnly", msg));
        free(msg);
    } else {
        util_format_utc(n->next, buf, sizeof(buf));
        msg = util_asprintf("%zu hosts scheduled; next run %s", n->hosts,
                            n->next != INT64_MAX ? buf : "none");
        json_array_append_new(conds, ps_condition(in, "Ready", true, "Scheduled", msg));
        free(msg);
    }
}

static void ps_overdue(const struct ctl_policy_status_input *in, const struct ps_counts *n,
                       json_t *conds)
{
    char lim[32];
    char *msg;
    if (!in->policy->valid) {
        json_array_append_new(conds, ps_condition3(in, "Overdue", "Unknown", "Invalid",
                                                   "the policy is not valid: overdue is not "
                                                   "evaluated until it is"));
        return;
    }
    if (in->limit == SCHED_NO_LIMIT) {
        json_array_append_new(conds, ps_condition(in, "Overdue", false, "NoLimit",
                                                  "no schedule and no alerts.maxAge: a policy run "
                                                  "by hand is never overdue"));
        return;
    }
    policy_format_duration(in->limit, lim, sizeof(lim));
    if (n->overdue > 0) {
        struct util_buf b;
        util_buf_init(&b);
        util_buf_printf(&b,
                        "%zu of %zu hosts have no successful backup in the last %s:", n->overdue,
                        n->hosts, lim);
        for (size_t i = 0; i < n->overdue && i < 5; i++)
            util_buf_printf(&b, "%s %s", i ? "," : "", n->od[i]->host);
        if (n->overdue > 5)
            util_buf_printf(&b, " and %zu more", n->overdue - 5);
        json_array_append_new(conds, ps_condition(in, "Overdue", true, "NoRecentBackup", b.data));
        util_buf_free(&b);
    } else if (n->hosts > 0 && n->with_success == 0) {
        msg = util_asprintf("no host has a successful backup yet; a host is overdue when it "
                            "has none %s after it enrolled (was selected by the policy) or "
                            "the policy was created, whichever is later",
                            lim);
        json_array_append_new(conds, ps_condition(in, "Overdue", false, "NoBackupYet", msg));
        free(msg);
    } else {
        msg = util_asprintf("every host has a successful backup within %s", lim);
        json_array_append_new(conds, ps_condition(in, "Overdue", false, "Recent", msg));
        free(msg);
    }
}

/*
 * Suspended (docs/policy.md, "Suspend"): True while spec.suspend holds. The alert limit
 * stays in force, so a policy left suspended too long still goes Overdue.
 */
static void ps_suspended(const struct ctl_policy_status_input *in, json_t *conds)
{
    const struct ctl_policy *p = in->policy;
    if (p->valid && p->spec.suspend)
        json_array_append_new(
            conds, ps_condition(in, "Suspended", true, "Suspended",
                                p->bind.has_sched
                                    ? "spec.suspend is true: no scheduled backup starts; on "
                                      "resuming, the last slot missed runs once if it is within "
                                      "the catch-up window"
                                    : "spec.suspend is true (the policy has no schedule, so "
                                      "nothing would start by itself anyway)"));
    else
        json_array_append_new(conds, ps_condition(in, "Suspended", false, "Active",
                                                  "scheduled backups start as the schedule says"));
}

void ctl_policy_status_build(const struct ctl_policy_status_input *in,
                             struct ctl_policy_status *out)
{
    const struct ctl_policy *p = in->policy;
    struct ps_counts n;
    char buf[UTIL_TIME_BUF];

    memset(out, 0, sizeof(*out));
    ps_count(in, &n);
    json_t *st = json_object();
    json_object_set_new(st, "observedGeneration", json_integer(p->generation));
    json_object_set_new(st, "hosts", json_integer((json_int_t)n.hosts));
    json_object_set_new(st, "running", json_integer((json_int_t)n.running));
    json_object_set_new(st, "overdue", json_integer((json_int_t)n.overdue));
    if (n.next != INT64_MAX) {
        util_format_utc(n.next, buf, sizeof(buf));
        json_object_set_new(st, "nextRun", json_string(buf));
    } else {
        json_object_set_new(st, "nextRun", json_null());
    }
    json_object_set_new(st, "alertLimitSeconds",
                        in->limit == SCHED_NO_LIMIT ? json_null() : json_integer(in->limit));
    json_object_set_new(st, "tzdataVersion", json_string(in->tzdata_version));
    json_object_set_new(st, "scheduleHash", json_string(p->schedule_hash));
    util_format_utc(p->schedule_changed, buf, sizeof(buf));
    json_object_set_new(st, "scheduleChangedAt", json_string(buf));
    json_t *list = json_array();
    for (size_t i = 0; i < n.overdue && i < CTL_OVERDUE_LISTED; i++) {
        json_t *h = json_pack("{s:s}", "host", n.od[i]->host);
        util_format_utc(n.od[i]->overdue_start, buf, sizeof(buf));
        json_object_set_new(h, "since", json_string(buf));
        /* An overdue host's age counts from its last success when it has one. */
        if (n.od[i]->has_success) {
            util_format_utc(n.od[i]->last_success, buf, sizeof(buf));
            json_object_set_new(h, "lastSuccess", json_string(buf));
        }
        json_array_append_new(list, h);
    }
    json_object_set_new(st, "overdueHosts", list);
    json_object_set_new(st, "startedSlots", n.started);
    json_object_set_new(st, BINDING_ENROLLED, ps_enrolled(in));
    if (n.last != NULL) {
        util_format_utc(n.last->created, buf, sizeof(buf));
        json_object_set_new(st, "lastRun",
                            json_pack("{s:s, s:s, s:s, s:s}", "backup", n.last->name, "host",
                                      n.last->host, "phase", ctl_phase_name(n.last->phase), "time",
                                      buf));
    }

    json_t *conds = json_array();
    ps_ready(in, &n, conds, out);
    ps_overdue(in, &n, conds);
    ps_suspended(in, conds);
    json_object_set_new(st, "conditions", conds);
    free(n.od);
    out->status = st;
    out->conditions = conds;
    /* Valid, Ready, Overdue, Suspended: always these four, in this order. */
    out->ready_reason = json_string_value(json_object_get(json_array_get(conds, 1), "reason"));
}

void ctl_policy_status_free(struct ctl_policy_status *out)
{
    json_decref(out->status);
    free(out->alarm);
    memset(out, 0, sizeof(*out));
}
