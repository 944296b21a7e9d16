/*
 * objects_result: a finished run's Backup status from what its Job's pod left (the
 * termination message, the exit code, the runtime's reason), and whether a Backup
 * still wants its retention record (objects.h declares both).
 */
#include "objects.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects_int.h"

/*
 * The termination message of the backup container of the newest pod, or NULL; *exit_code
 * gets the container's exit code, or -1 when it has none.
 */
static const char *ctl_termination_message(const json_t *pods, int *exit_code,
                                           const char **term_reason)
{
    const json_t *newest = NULL;
    const char *newest_at = "";
    size_t i;
    *exit_code = -1;
    *term_reason = NULL;
    const json_t *pod;
    json_array_foreach(json_object_get(pods, "items"), i, pod)
    {
        const char *at = ctl_str_or(json_object_get(pod, "metadata"), "creationTimestamp", "");
        if (newest == NULL || strcmp(at, newest_at) > 0) {
            newest = pod;
            newest_at = at;
        }
    }
    const json_t *st = json_object_get(json_object_get(newest, "status"), "containerStatuses");
    const json_t *cs;
    json_array_foreach(st, i, cs)
    {
        if (strcmp(ctl_str_or(cs, "name", ""), "backup") != 0)
            continue;
        const json_t *term = json_object_get(json_object_get(cs, "state"), "terminated");
        if (json_is_integer(json_object_get(term, "exitCode")))
            *exit_code = (int)json_integer_value(json_object_get(term, "exitCode"));
        *term_reason = ctl_str_or(term, "reason", NULL);
        return ctl_str_or(term, "message", NULL);
    }
    return NULL;
}

/* The snapshot members the agent reports, each copied only with its own type. */
static json_t *ctl_snapshot_copy(const json_t *in)
{
    static const char *const strs[] = {"id", "policy", "host", "time"};
    static const char *const bools[] = {"incomplete", "suspicious"};
    static const char *const ints[] = {"files", "bytes", "newBytes", "uploadedBytes"};
    const char *id = json_string_value(json_object_get(in, "id"));
    if (!json_is_object(in) || id == NULL || id[0] == '\0')
        return NULL;
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof(strs) / sizeof(*strs); i++)
        if (json_is_string(json_object_get(in, strs[i])))
            json_object_set(out, strs[i], json_object_get(in, strs[i]));
    for (size_t i = 0; i < sizeof(bools) / sizeof(*bools); i++)
        if (json_is_boolean(json_object_get(in, bools[i])))
            json_object_set(out, bools[i], json_object_get(in, bools[i]));
    for (size_t i = 0; i < sizeof(ints) / sizeof(*ints); i++)
        if (json_is_integer(json_object_get(in, ints[i])) &&
            json_integer_value(json_object_get(in, ints[i])) >= 0)
            json_object_set(out, ints[i], json_object_get(in, ints[i]));
    return out;
}

static json_t *ctl_result_condition(const char *type, bool status, const char *reason,
                                    const char *message, const char *now)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status ? "True" : "False",
                     "reason", reason, "message", message, "lastTransitionTime", now);
}

/* At most CTL_RESULT_QUOTE bytes of the end of text, cut at a UTF-8 character boundary. */
static const char *ctl_tail(const char *text)
{
    size_t n = strlen(text);
    const char *t = n > CTL_RESULT_QUOTE ? text + n - CTL_RESULT_QUOTE : text;
    while ((*t & 0xc0) == 0x80)
        t++;
    return t;
}

/*
 * The files the agent could not read, as part of a sentence, from its result doc. Its
 * list is cut to fit the termination message, so the count is a lower bound; the pod's
 * log lists every one.
 */
static void ctl_unread(const json_t *doc, struct ctl_result *out)
{
    const json_t *errs = json_object_get(doc, "errors");
    const json_t *e = json_array_get(errs, 0);
    size_t n = json_array_size(errs);
    if (e == NULL) {
        snprintf(out->unread, sizeof(out->unread),
                 "some files could not be read (the Job's pod log lists them)");
        return;
    }
    snprintf(out->unread, sizeof(out->unread),
             "at least %zu file%s could not be read (the Job's pod log lists every one), the "
             "first %s: %s",
             n, n == 1 ? "" : "s", ctl_str_or(e, "path", "?"), ctl_str_or(e, "message", "?"));
}

/*
 * spec.hooks as the agent ran them (the result doc's "hooks", docs/policy.md): the first
 * that failed is described in out->hook, with what followed from its onError, and gives
 * the condition HookFailed; none failed: HookFailed=False. Returns whether one failed and
 * stopped the run (onError: fail).
 */
static bool ctl_hooks_outcome(const json_t *doc, json_t *conds, const char *ts,
                              struct ctl_result *out)
{
    const json_t *hooks = json_object_get(doc, "hooks");
    const json_t *h, *first = NULL;
    size_t i, nfailed = 0;
    if (!json_is_array(hooks) || json_array_size(hooks) == 0)
        return false;
    json_array_foreach(hooks, i, h)
    {
        if (strcmp(ctl_str_or(h, "result", "failed"), "succeeded") == 0)
            continue;
        if (first == NULL)
            first = h;
        nfailed++;
    }
    if (first == NULL) {
        char *m = util_asprintf("every hook of spec.hooks succeeded (%zu)", json_array_size(hooks));
        json_array_append_new(conds,
                              ctl_result_condition("HookFailed", false, "HooksSucceeded", m, ts));
        free(m);
        return false;
    }
    const char *phase = ctl_str_or(first, "phase", "before");
    const char *name = ctl_str_or(first, "name", "?");
    bool timed_out = strcmp(ctl_str_or(first, "result", ""), "timedOut") == 0;
    bool went_on = json_is_true(json_object_get(first, "continued"));
    const json_t *code = json_object_get(first, "exitCode");
    char how[48];
    if (timed_out)
        snprintf(how, sizeof(how), "timed out");
    else if (json_is_integer(code))
        snprintf(how, sizeof(how), "exit code %lld", (long long)json_integer_value(code));
    else
        snprintf(how, sizeof(how), "no exit code");
    const char *then = went_on                        ? "onError: continue, so the run went on"
                       : strcmp(phase, "before") == 0 ? "onError: fail, so no backup ran"
                                                      : "onError: fail, so the run failed";
    const char *error = ctl_str_or(first, "error", NULL);
    char more[48] = "";
    if (nfailed > 1)
        snprintf(more, sizeof(more), "; %zu more hook%s failed", nfailed - 1,
                 nfailed == 2 ? "" : "s");
    snprintf(out->hook, sizeof(out->hook), "%s-hook %s failed (%s; %s)%s%s%s", phase, name, how,
             then, error != NULL ? ": " : "", error != NULL ? ctl_tail(error) : "", more);
    json_array_append_new(conds,
                          ctl_result_condition("HookFailed", true, "HookFailed", out->hook, ts));
    return !went_on;
}

/*
 * An incomplete snapshot was written (docs/operator.md, "Backup"): the run is Succeeded
 * with reason incomplete, whether the Job failed on the agent's exit code 3 (as it does:
 * the Job knows only zero and not zero) or, from an older agent, succeeded.
 */
static void ctl_mark_incomplete(json_t *st, int exit_code, const struct ctl_result *r)
{
    const char *phase = json_string_value(json_object_get(st, "phase"));
    const char *reason = json_string_value(json_object_get(st, "reason"));
    bool failed_on_3 = phase != NULL && strcmp(phase, "Failed") == 0 && reason != NULL &&
                       strcmp(reason, "job_failed") == 0 && exit_code == CTL_EXIT_INCOMPLETE;
    bool succeeded = phase != NULL && strcmp(phase, "Succeeded") == 0;
    if (!failed_on_3 && !succeeded)
        return;
    char *m = util_asprintf("snapshot %s was written but is incomplete: %s; it takes part in "
                            "retention, but the overdue clock does not count from it",
                            r->id, r->unread);
    json_object_set_new(st, "phase", json_string("Succeeded"));
    json_object_set_new(st, "reason", json_string("incomplete"));
    json_object_set_new(st, "message", json_string(m));
    free(m);
}

void ctl_backup_result(json_t *patch, const json_t *pods, int64_t now, struct ctl_result *out)
{
    json_t *st = json_object_get(patch, "status");
    int exit_code = -1;
    const char *term_reason = NULL;
    const char *msg = pods != NULL ? ctl_termination_message(pods, &exit_code, &term_reason) : NULL;
    char ts[UTIL_TIME_BUF];
    json_t *conds = json_array();
    json_t *snap = NULL;
    bool hook_stopped = false;

    memset(out, 0, sizeof(*out));
    util_format_utc(now, ts, sizeof(ts));
    if (msg != NULL) {
        json_t *doc = json_loads(msg, 0, NULL);
        snap = ctl_snapshot_copy(json_object_get(doc, "snapshot"));
        if (json_is_string(json_object_get(doc, "anomaly")))
            snprintf(out->why, sizeof(out->why), "%s",
                     json_string_value(json_object_get(doc, "anomaly")));
        if (json_is_string(json_object_get(doc, "ioPriority")))
            snprintf(out->ioprio, sizeof(out->ioprio), "%s",
                     json_string_value(json_object_get(doc, "ioPriority")));
        ctl_unread(doc, out);
        hook_stopped = ctl_hooks_outcome(doc, conds, ts, out);
        json_decref(doc);
    }
    if (snap != NULL) {
        out->reported = true;
        out->suspicious = json_is_true(json_object_get(snap, "suspicious"));
        out->incomplete = json_is_true(json_object_get(snap, "incomplete"));
        snprintf(out->id, sizeof(out->id), "%s", json_string_value(json_object_get(snap, "id")));
        json_object_set_new(st, "snapshot", snap);
        json_array_append_new(conds, ctl_result_condition("SnapshotReported", true, "Reported",
                                                          "the agent reported its snapshot", ts));
        if (out->incomplete)
            ctl_mark_incomplete(st, exit_code, out);
        char *gap = util_asprintf("the snapshot is incomplete: %s", out->unread);
        json_array_append_new(
            conds, ctl_result_condition(
                       "Incomplete", out->incomplete, out->incomplete ? "Incomplete" : "Complete",
                       out->incomplete ? gap : "the agent read every file it was to back up", ts));
        free(gap);
        char *why = util_asprintf("the agent marked the snapshot suspicious%s%s: check what "
                                  "changed on the host before trusting it",
                                  out->why[0] ? ": " : "", out->why);
        json_array_append_new(
            conds,
            ctl_result_condition(
                "Suspicious", out->suspicious, out->suspicious ? "Suspicious" : "NotSuspicious",
                out->suspicious ? why : "the snapshot was not marked suspicious", ts));
        free(why);
    } else {
        const char *why = pods == NULL  ? "the Job's pods could not be read"
                          : msg == NULL ? "the backup container left no termination message"
                                        : "the termination message is not {\"snapshot\": {...}}";
        json_array_append_new(
            conds, ctl_result_condition("SnapshotReported", false,
                                        msg == NULL ? "NoResult" : "UnparsableResult", why, ts));
        const char *phase = json_string_value(json_object_get(st, "phase"));
        const char *prev = json_string_value(json_object_get(st, "message"));
        if (msg != NULL && msg[0] != '\0' && phase != NULL && strcmp(phase, "Failed") == 0) {
            char *m = util_asprintf("%s%sthe agent's last output: %s", prev ? prev : "",
                                    prev && prev[0] ? "; " : "", ctl_tail(msg));
            json_object_set_new(st, "message", json_string(m));
            free(m);
        }
    }
    /*
     * The kernel killed the agent at its container's memory limit: it wrote no result and
     * its log ends mid-sentence, so only the runtime's reason says why (docs/operator.md).
     */
    const char *phase = json_string_value(json_object_get(st, "phase"));
    if (term_reason != NULL && strcmp(term_reason, "OOMKilled") == 0 && phase != NULL &&
        strcmp(phase, "Failed") == 0) {
        const char *prev = json_string_value(json_object_get(st, "message"));
        char *m = util_asprintf("OOMKilled: the agent went over its container's memory limit "
                                "(exit code %d) and was killed before it reported a snapshot; "
                                "raise the limit (a LimitRange of the namespace sets it)%s%s",
                                exit_code, prev && prev[0] ? "; " : "", prev ? prev : "");
        json_object_set_new(st, "message", json_string(m));
        free(m);
    }
    /* A hook that stopped the run says why first: the rest is what the Job saw. */
    phase = json_string_value(json_object_get(st, "phase"));
    if (hook_stopped && phase != NULL && strcmp(phase, "Failed") == 0) {
        const char *prev = json_string_value(json_object_get(st, "message"));
        char *m = util_asprintf("%s%s%s", out->hook, prev && prev[0] ? "; " : "", prev ? prev : "");
        json_object_set_new(st, "message", json_string(m));
        free(m);
    }
    /* Only when the agent said so: a policy without an I/O priority has nothing to say. */
    if (out->ioprio[0] != '\0')
        json_array_append_new(conds,
                              ctl_result_condition("IOPriorityIneffective", true,
                                                   "SchedulerIgnoresPriority", out->ioprio, ts));
    json_object_set_new(st, "conditions", conds);
}

bool ctl_backup_wants_retention(const json_t *obj)
{
    const json_t *st = json_object_get(obj, "status");
    const json_t *spec = json_object_get(obj, "spec");
    const char *phase = ctl_str_or(st, "phase", "");
    return json_object_get(st, "retention") == NULL && strcmp(phase, "Succeeded") == 0 &&
           ctl_str_or(spec, "policy", NULL) != NULL && ctl_str_or(spec, "host", NULL) != NULL &&
           json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") == NULL;
}
