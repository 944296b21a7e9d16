/*
 * gcplan: the pure part of the controller's GC Jobs (gcplan.h; docs/gc.md, "Run by the
 * controller").
 */
#include "gcplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podsec.h"
#include "policy/policy.h"
#include "state.h"

int ctl_gc_spec_read(const json_t *repo, struct ctl_gc_spec *out, struct util_err *err)
{
    const json_t *gc = json_object_get(json_object_get(repo, "spec"), "gc");
    memset(out, 0, sizeof(*out));
    snprintf(out->schedule, sizeof(out->schedule), "%s", CTL_GC_DEFAULT_SCHEDULE);
    snprintf(out->zone, sizeof(out->zone), "%s", CTL_GC_DEFAULT_ZONE);
    if (gc != NULL && !json_is_null(gc) && !json_is_object(gc))
        return util_err_set(err, UTIL_EINVAL, "spec.gc must be an object");
    const json_t *v = json_object_get(gc, "schedule");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_string(v) || json_string_length(v) == 0 ||
            json_string_length(v) > CTL_GC_SCHEDULE_MAX)
            return util_err_set(err, UTIL_EINVAL,
                                "spec.gc.schedule must be a cron expression of 1 to %d characters",
                                CTL_GC_SCHEDULE_MAX);
        snprintf(out->schedule, sizeof(out->schedule), "%s", json_string_value(v));
    }
    v = json_object_get(gc, "timezone");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_string(v) || json_string_length(v) == 0 ||
            json_string_length(v) > CTL_GC_ZONE_MAX)
            return util_err_set(err, UTIL_EINVAL,
                                "spec.gc.timezone must be a zone name of 1 to %d characters",
                                CTL_GC_ZONE_MAX);
        snprintf(out->zone, sizeof(out->zone), "%s", json_string_value(v));
    }
    v = json_object_get(gc, "suspend");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_boolean(v))
            return util_err_set(err, UTIL_EINVAL, "spec.gc.suspend must be true or false");
        out->suspend = json_is_true(v);
    }
    struct util_err cerr = {0};
    if (cron_parse(&out->cron, out->schedule, &cerr) != 0)
        return util_err_set(err, UTIL_EINVAL, "spec.gc.schedule \"%s\": %s", out->schedule,
                            cerr.msg);
    return 0;
}

void ctl_gc_decide(const struct sched *s, const struct ctl_gc_state *st, int64_t now,
                   struct sched_decision *out)
{
    struct sched_host h = {
        .ready = st->ready,
        .backup_running = st->job_active,
        .node_joined = 0,
        .policy_created = st->since,
        .schedule_changed = st->since,
        .has_last_started = st->has_last_started,
        .last_started_slot = st->last_started_slot,
        .offset = 0,
        .catch_up_window = CTL_GC_CATCH_UP,
    };
    sched_decide(s, &h, now, out);
}

int64_t ctl_gc_max_runtime(const int64_t *max_runtimes, size_t n)
{
    int64_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (max_runtimes[i] > m)
            m = max_runtimes[i];
    return m > 0 ? m : POLICY_DEFAULT_MAX_RUNTIME;
}

/*
 * "gc-<name cut to 36>-<slot digits>-<10 hex of a hash of ns, name and slot>": at most 63
 * characters, distinct per repository and slot.
 */
void ctl_gc_job_name(const char *ns, const char *name, const char *slot, char out[CTL_NAME_MAX])
{
    char digits[13];
    size_t j = 0;
    for (size_t i = 0; slot[i] != '\0' && j < 12; i++)
        if (slot[i] >= '0' && slot[i] <= '9')
            digits[j++] = slot[i];
    digits[j] = '\0';
    char *key = util_asprintf("lodestore-gc%c%s%c%s%c%s", 0, ns, 0, name, 0, slot);
    size_t klen = strlen("lodestore-gc") + 1 + strlen(ns) + 1 + strlen(name) + 1 + strlen(slot);
    uint64_t h = util_hash(key, klen);
    free(key);
    snprintf(out, CTL_NAME_MAX, "gc-%.36s-%s-%010llx", name, digits,
             (unsigned long long)(h & 0xffffffffffULL));
}

json_t *ctl_gc_job_json(const char *ns, const char *name, const char *uid, const char *job_name,
                        int64_t max_runtime, const struct ctl_job_opts *opts)
{
    char mr[32];
    snprintf(mr, sizeof(mr), "%llds", (long long)max_runtime);
    json_t *args = json_pack("[s, s, s, s, s, s]", "--output", "json", "--max-runtime", mr,
                             "--termination-log", "/dev/termination-log");
    /* No host mount and no capability (podsec.c): gc only talks to the storage. /tmp is
     * writable. */
    json_t *container =
        json_pack("{s:s, s:s, s:[s, s], s:o, s:[], s:[{s:s, s:s}], s:s}", "name", "gc", "image",
                  opts->agent_image, "command", "/usr/local/bin/lode", "gc", "args", args, "env",
                  "volumeMounts", "name", "tmp", "mountPath", "/tmp", "terminationMessagePolicy",
                  "FallbackToLogsOnError");
    json_t *pod_security = json_pack("{s:i, s:i, s:b, s:i}", "runAsUser", CTL_GC_USER, "runAsGroup",
                                     CTL_GC_USER, "runAsNonRoot", 1, "fsGroup", CTL_GC_USER);
    json_t *pod =
        json_pack("{s:s, s:[o], s:[{s:s, s:{}}], s:o}", "restartPolicy", "Never", "containers",
                  container, "volumes", "name", "tmp", "emptyDir", "securityContext", pod_security);
    ctl_pod_set_network(pod, opts);
    ctl_pod_harden(pod, CTL_POD_GC, NULL, false);
    json_t *labels = json_pack("{s:s, s:s, s:s}", CTL_LABEL_MANAGED, CTL_MANAGER,
                               CTL_LABEL_COMPONENT, CTL_GC_COMPONENT, CTL_LABEL_REPOSITORY, name);
    json_t *meta =
        json_pack("{s:s, s:s, s:O}", "name", job_name, "namespace", ns, "labels", labels);
    if (uid != NULL)
        json_object_set_new(meta, "ownerReferences",
                            json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", API_GROUP_VERSION,
                                      "kind", "BackupRepository", "name", name, "uid", uid));
    /* A backstop for a GC that hangs (a stalled storage): gc of 10,000 packs takes under a
     * minute (docs/gc.md, "Measured"), and D is at least an hour. */
    return json_pack("{s:s, s:s, s:o, s:{s:i, s:I, s:I, s:{s:{s:o}, s:o}}}", "apiVersion",
                     "batch/v1", "kind", "Job", "metadata", meta, "spec", "backoffLimit", 0,
                     "activeDeadlineSeconds", (json_int_t)(2 * max_runtime),
                     "ttlSecondsAfterFinished", (json_int_t)opts->ttl_seconds, "template",
                     "metadata", "labels", labels, "spec", pod);
}

void ctl_gc_job_key_readable(json_t *job)
{
    json_t *volumes = (json_t *)ctl_json_path(job, "spec.template.spec.volumes");
    size_t i;
    json_t *v;
    json_array_foreach(volumes, i, v)
    {
        json_t *secret = json_object_get(v, "secret");
        const char *name = json_string_value(json_object_get(v, "name"));
        if (secret != NULL && name != NULL && strcmp(name, "repository-key") == 0)
            json_object_set_new(secret, "defaultMode", json_integer(0440));
    }
}

bool ctl_gc_job_ended(const json_t *job, bool *failed)
{
    size_t i;
    const json_t *cond;
    *failed = false;
    json_array_foreach(ctl_json_path(job, "status.conditions"), i, cond)
    {
        const char *type = json_string_value(json_object_get(cond, "type"));
        const char *st = json_string_value(json_object_get(cond, "status"));
        if (type == NULL || st == NULL || strcmp(st, "True") != 0)
            continue;
        if (strcmp(type, "Complete") == 0)
            return true;
        if (strcmp(type, "Failed") == 0) {
            *failed = true;
            return true;
        }
    }
    return false;
}

/* The termination message of the "gc" container of the newest pod, or NULL. */
static const char *ctl_gc_message(const json_t *pods)
{
    const json_t *newest = NULL, *pod, *cs;
    const char *newest_at = "";
    size_t i;
    json_array_foreach(json_object_get(pods, "items"), i, pod)
    {
        const char *at = ctl_json_str(pod, "metadata.creationTimestamp");
        if (at == NULL)
            at = "";
        if (newest == NULL || strcmp(at, newest_at) > 0) {
            newest = pod;
            newest_at = at;
        }
    }
    json_array_foreach(ctl_json_path(newest, "status.containerStatuses"), i, cs)
    {
        const char *n = json_string_value(json_object_get(cs, "name"));
        if (n != NULL && strcmp(n, "gc") == 0)
            return ctl_json_str(cs, "state.terminated.message");
    }
    return NULL;
}

void ctl_gc_result_read(const json_t *job, const json_t *pods, int64_t now,
                        struct ctl_gc_result *out)
{
    bool failed;
    memset(out, 0, sizeof(*out));
    bool ended = ctl_gc_job_ended(job, &failed);
    int64_t start = ctl_json_time(job, "status.startTime");
    int64_t end = ctl_json_time(job, "status.completionTime");
    if (end == 0)
        end = now;
    out->duration = start > 0 && end > start ? end - start : 0;

    const char *msg = pods != NULL ? ctl_gc_message(pods) : NULL;
    json_error_t je;
    json_t *r = msg != NULL ? json_loads(msg, 0, &je) : NULL;
    const json_t *packs = json_object_get(r, "packs");
    const json_t *error = json_object_get(r, "error");
    if (json_is_object(packs) && json_is_integer(json_object_get(r, "bytesFreed"))) {
        out->reported = true;
        out->packs_deleted = json_integer_value(json_object_get(packs, "deleted"));
        out->packs_total = json_integer_value(json_object_get(packs, "total"));
        out->bytes_freed = json_integer_value(json_object_get(r, "bytesFreed"));
    }
    if (ended && !failed && out->reported && !json_is_string(error)) {
        out->succeeded = true;
        snprintf(out->message, sizeof(out->message),
                 "deleted %lld of %lld packs, %lld bytes freed, in %llds",
                 (long long)out->packs_deleted, (long long)out->packs_total,
                 (long long)out->bytes_freed, (long long)out->duration);
    } else if (json_is_string(error)) {
        snprintf(out->message, sizeof(out->message), "lode gc failed: %.400s",
                 json_string_value(error));
    } else if (!ended) {
        snprintf(out->message, sizeof(out->message), "the GC Job has not ended");
    } else if (pods == NULL) {
        snprintf(out->message, sizeof(out->message),
                 "the GC Job %s, and its pods could not be read for its result",
                 failed ? "failed" : "ended");
    } else if (msg == NULL) {
        snprintf(out->message, sizeof(out->message),
                 "the GC Job %s without a result (no termination message: was its pod "
                 "deleted, or did it pass its deadline?)",
                 failed ? "failed" : "ended");
    } else {
        snprintf(out->message, sizeof(out->message), "the GC Job %s: %.300s",
                 failed ? "failed" : "ended without a result", msg);
    }
    json_decref(r);
}
