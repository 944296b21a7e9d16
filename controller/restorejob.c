#include "restorejob.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podsec.h"
#include "state.h"

static const char *rj_str(const json_t *obj, const char *key)
{
    const char *v = json_string_value(json_object_get(obj, key));
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* Absolute, no empty, "." or ".." component ("/" alone is fine). */
static bool rj_path_ok(const char *p)
{
    if (p == NULL || p[0] != '/')
        return false;
    if (p[1] == '\0')
        return true;
    for (const char *c = p; *c != '\0';) {
        const char *e = c + 1;
        size_t len = strcspn(e, "/");
        if ((len == 0 && e[0] != '\0') || (len == 1 && e[0] == '.') ||
            (len == 2 && e[0] == '.' && e[1] == '.'))
            return false;
        c = e + len;
    }
    return true;
}

int ctl_restore_spec_read(const json_t *obj, struct ctl_restore_spec *s, struct util_err *err)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *snap = json_object_get(spec, "snapshot");
    const json_t *target = json_object_get(spec, "target");
    memset(s, 0, sizeof(*s));
    s->ns = rj_str(meta, "namespace");
    s->name = rj_str(meta, "name");
    s->uid = rj_str(meta, "uid");
    s->id = rj_str(snap, "id");
    s->policy = rj_str(snap, "policy");
    s->host = rj_str(snap, "host");
    s->repository = rj_str(spec, "repository");
    s->node = rj_str(target, "node");
    s->path = rj_str(target, "path");
    s->pvc = rj_str(target, "persistentVolumeClaim");
    s->overwrite = json_is_true(json_object_get(spec, "overwrite"));
    s->dry_run = json_is_true(json_object_get(spec, "dryRun"));
    s->setid = json_is_true(json_object_get(spec, "setid"));
    s->devices = json_is_true(json_object_get(spec, "devices"));
    s->system_xattrs = json_is_true(json_object_get(spec, "systemXattrs"));
    if (s->ns == NULL || s->name == NULL || s->uid == NULL)
        return util_err_set(err, UTIL_EINVAL, "the Restore lacks metadata.namespace, name or uid");
    if ((s->id == NULL) == (s->policy == NULL) || (s->policy == NULL) != (s->host == NULL))
        return util_err_set(err, UTIL_EINVAL, "spec.snapshot needs either id, or policy and host");
    if (s->id != NULL && s->repository == NULL)
        return util_err_set(err, UTIL_EINVAL,
                            "a snapshot given by id needs spec.repository (the BackupRepository "
                            "that holds it)");
    if ((s->node == NULL) == (s->pvc == NULL) || (s->node != NULL && s->path == NULL))
        return util_err_set(err, UTIL_EINVAL,
                            "spec.target needs either node and path, or persistentVolumeClaim");
    if (s->path == NULL)
        s->path = "/";
    if (!rj_path_ok(s->path))
        return util_err_set(err, UTIL_EINVAL,
                            "spec.target.path %s: give an absolute path without . or .. parts",
                            s->path);
    const json_t *inc = json_object_get(spec, "include");
    size_t i;
    const json_t *v;
    s->include = util_calloc(json_array_size(inc) + 1, sizeof(*s->include));
    json_array_foreach(inc, i, v)
    {
        const char *p = json_string_value(v);
        if (!rj_path_ok(p))
            return util_err_set(err, UTIL_EINVAL,
                                "spec.include: %s is not an absolute path without . or .. parts",
                                p != NULL ? p : "(not a string)");
        s->include[s->ninclude++] = p;
    }
    return 0;
}

void ctl_restore_spec_free(struct ctl_restore_spec *s)
{
    free(s->include);
    s->include = NULL;
    s->ninclude = 0;
}

char *ctl_restore_target_text(const struct ctl_restore_spec *s)
{
    if (s->pvc != NULL)
        return util_asprintf("pvc/%s:%s", s->pvc, s->path);
    return util_asprintf("%s:%s", s->node, s->path);
}

/* a is b or under it ("/" holds every path). */
static bool rj_under(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (n == 1)
        return true;
    while (n > 1 && b[n - 1] == '/')
        n--;
    return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

bool ctl_restore_targets_overlap(const struct ctl_restore_spec *a, const struct ctl_restore_spec *b)
{
    if (a->pvc != NULL || b->pvc != NULL) {
        if (a->pvc == NULL || b->pvc == NULL || strcmp(a->pvc, b->pvc) != 0 ||
            strcmp(a->ns, b->ns) != 0)
            return false;
    } else if (strcmp(a->node, b->node) != 0) {
        return false;
    }
    return rj_under(a->path, b->path) || rj_under(b->path, a->path);
}

void ctl_restore_job_name(const struct ctl_restore_spec *s, char out[CTL_NAME_MAX])
{
    uint64_t h = util_hash(s->uid, strlen(s->uid));
    snprintf(out, CTL_NAME_MAX, "%.52s-%08x", s->name, (unsigned)(h >> 32));
}

json_t *ctl_restore_job_json(const struct ctl_restore_spec *s, const char *id,
                             const struct ctl_job_opts *opts)
{
    char job[CTL_NAME_MAX];
    ctl_restore_job_name(s, job);
    json_t *args = json_pack("[s]", id);
    json_t *mounts = json_pack("[{s:s, s:s}]", "name", "tmp", "mountPath", "/tmp");
    json_t *volumes = json_pack("[{s:s, s:{}}]", "name", "tmp", "emptyDir");
    char *target;
    if (s->dry_run && s->node != NULL) {
        /* Only looked at: the node's "/" read-only, as a backup Job mounts it. */
        target = util_asprintf("%s%s", CTL_HOST_ROOT, strcmp(s->path, "/") == 0 ? "" : s->path);
        json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "name", "host-root", "mountPath",
                                                CTL_HOST_ROOT, "readOnly", 1));
        json_array_append_new(volumes, json_pack("{s:s, s:{s:s, s:s}}", "name", "host-root",
                                                 "hostPath", "path", "/", "type", "Directory"));
    } else {
        target = s->node != NULL || strcmp(s->path, "/") == 0
                     ? util_strdup(CTL_RESTORE_DIR)
                     : util_asprintf("%s%s", CTL_RESTORE_DIR, s->path);
        json_t *mount = json_pack("{s:s, s:s, s:b}", "name", "target", "mountPath", CTL_RESTORE_DIR,
                                  "readOnly", s->dry_run);
        if (s->node != NULL && strcmp(s->path, "/") != 0)
            /* The node's "/" is the volume and only the target, its subPath, is mounted: the
             * kubelet makes the target's missing directories, and a target that exists as a
             * file is mounted as that file, which lode restore refuses (TargetUnusable) at
             * once. A hostPath of the target itself would keep the pod waiting forever
             * (the kubelet's type check fails, and says so only in an Event). */
            json_object_set_new(mount, "subPath", json_string(s->path + 1));
        json_array_append_new(mounts, mount);
        if (s->node != NULL)
            json_array_append_new(volumes, json_pack("{s:s, s:{s:s, s:s}}", "name", "target",
                                                     "hostPath", "path", "/", "type", "Directory"));
        else
            json_array_append_new(volumes, json_pack("{s:s, s:{s:s, s:b}}", "name", "target",
                                                     "persistentVolumeClaim", "claimName", s->pvc,
                                                     "readOnly", s->dry_run));
    }
    json_array_append_new(args, json_string("--target"));
    json_array_append_new(args, json_string(target));
    free(target);
    for (size_t i = 0; i < s->ninclude; i++) {
        json_array_append_new(args, json_string("--include"));
        json_array_append_new(args, json_string(s->include[i]));
    }
    if (s->overwrite)
        json_array_append_new(args, json_string("--overwrite"));
    /* What a restore withholds unless asked (docs/repository.md, "What a restore
     * withholds"): the Restore's author asks for it in the spec. */
    if (s->setid)
        json_array_append_new(args, json_string("--setid"));
    if (s->devices)
        json_array_append_new(args, json_string("--devices"));
    if (s->system_xattrs)
        json_array_append_new(args, json_string("--system-xattrs"));
    json_array_append_new(args, json_string(s->dry_run ? "--dry-run" : "--staged"));
    json_t *tail =
        json_pack("[s, s, s, s]", "--output", "json", "--termination-log", "/dev/termination-log");
    json_array_extend(args, tail);
    json_decref(tail);

    /* uid 0 with what giving files their owners, modes, times and devices takes; no
     * SYS_ADMIN, so trusted.* xattrs are not set (counted). A dry run only reads. */
    json_t *caps = s->dry_run
                       ? json_pack("[s]", "DAC_READ_SEARCH")
                       : json_pack("[s, s, s, s, s, s, s]", "CHOWN", "DAC_OVERRIDE",
                                   "DAC_READ_SEARCH", "FOWNER", "FSETID", "MKNOD", "SETFCAP");
    json_t *security =
        json_pack("{s:i, s:b, s:b, s:b, s:{s:[s], s:o}}", "runAsUser", 0, "runAsNonRoot", 0,
                  "readOnlyRootFilesystem", 1, "allowPrivilegeEscalation", 0, "capabilities",
                  "drop", "ALL", "add", caps);
    json_t *container =
        json_pack("{s:s, s:s, s:[s, s], s:o, s:[], s:o, s:o, s:s}", "name", "restore", "image",
                  opts->agent_image, "command", "/usr/local/bin/lode", "restore", "args", args,
                  "env", "volumeMounts", mounts, "securityContext", security,
                  "terminationMessagePolicy", "FallbackToLogsOnError");
    json_t *pod = json_pack("{s:s, s:[{s:s}], s:[o], s:o}", "restartPolicy", "Never", "tolerations",
                            "operator", "Exists", "containers", container, "volumes", volumes);
    if (s->node != NULL)
        json_object_set_new(pod, "nodeName", json_string(s->node));
    ctl_pod_set_network(pod, opts);
    ctl_pod_harden(pod, CTL_POD_RESTORE, NULL, false);
    json_t *labels =
        json_pack("{s:s, s:s}", CTL_LABEL_MANAGED, CTL_MANAGER, CTL_LABEL_RESTORE, s->name);
    json_t *owner = json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", API_GROUP_VERSION,
                              "kind", "Restore", "name", s->name, "uid", s->uid, "controller", 1,
                              "blockOwnerDeletion", 1);
    json_t *meta = json_pack("{s:s, s:s, s:O, s:o}", "name", job, "namespace", s->ns, "labels",
                             labels, "ownerReferences", owner);
    return json_pack("{s:s, s:s, s:o, s:{s:i, s:I, s:{s:{s:o}, s:o}}}", "apiVersion", "batch/v1",
                     "kind", "Job", "metadata", meta, "spec", "backoffLimit", 0,
                     "ttlSecondsAfterFinished", (json_int_t)opts->ttl_seconds, "template",
                     "metadata", "labels", labels, "spec", pod);
}

const char *ctl_restore_pick(const json_t *list, const char *policy, const char *host)
{
    const char *best = NULL, *best_at = "";
    size_t i;
    const json_t *b;
    json_array_foreach(json_object_get(list, "items"), i, b)
    {
        const json_t *spec = json_object_get(b, "spec");
        const json_t *st = json_object_get(b, "status");
        const json_t *snap = json_object_get(st, "snapshot");
        const char *id = rj_str(snap, "id");
        const char *phase = rj_str(st, "phase");
        const char *reason = rj_str(st, "reason");
        if (id == NULL || phase == NULL || strcmp(phase, "Succeeded") != 0 ||
            (reason != NULL && strcmp(reason, "incomplete") == 0) ||
            json_is_true(json_object_get(snap, "incomplete")) ||
            json_is_true(json_object_get(snap, "suspicious")) ||
            strcmp(rj_str(spec, "policy") ? rj_str(spec, "policy") : "", policy) != 0 ||
            strcmp(rj_str(spec, "host") ? rj_str(spec, "host") : "", host) != 0)
            continue;
        /* RFC 3339 in UTC, as the agent and the API server write them: text order is time
         * order. */
        const char *at = rj_str(snap, "time");
        if (at == NULL)
            at = rj_str(st, "completionTime");
        if (at == NULL)
            at = "";
        if (best == NULL || strcmp(at, best_at) > 0 ||
            (strcmp(at, best_at) == 0 && strcmp(id, best) > 0)) {
            best = id;
            best_at = at;
        }
    }
    return best;
}

static json_t *rj_time(int64_t t)
{
    char buf[UTIL_TIME_BUF];
    util_format_utc(t, buf, sizeof(buf));
    return json_string(buf);
}

static json_t *rj_condition(const char *status, const char *reason, const char *message,
                            int64_t now)
{
    return json_pack("[{s:s, s:s, s:s, s:s, s:o}]", "type", "Restored", "status", status, "reason",
                     reason, "message", message, "lastTransitionTime", rj_time(now));
}

json_t *ctl_restore_status(enum ctl_phase phase, const char *reason, const char *message,
                           int64_t now)
{
    json_t *st =
        json_pack("{s:s, s:s, s:s, s:o}", "phase", ctl_phase_name(phase), "reason", reason,
                  "message", message, "conditions", rj_condition("Unknown", reason, message, now));
    return json_pack("{s:o}", "status", st);
}

json_t *ctl_restore_failed(const char *reason, const char *message, int64_t now)
{
    json_t *st = json_pack("{s:s, s:s, s:s, s:o, s:o}", "phase", "Failed", "reason", reason,
                           "message", message, "completionTime", rj_time(now), "conditions",
                           rj_condition("False", reason, message, now));
    return json_pack("{s:o}", "status", st);
}

/* The newest pod's "restore" container: its termination message (or NULL). */
static const char *rj_message(const json_t *pods)
{
    const json_t *newest = NULL;
    const char *newest_at = "";
    size_t i;
    const json_t *pod;
    json_array_foreach(json_object_get(pods, "items"), i, pod)
    {
        const char *at = rj_str(json_object_get(pod, "metadata"), "creationTimestamp");
        if (at == NULL)
            at = "";
        if (newest == NULL || strcmp(at, newest_at) > 0) {
            newest = pod;
            newest_at = at;
        }
    }
    const json_t *cs;
    json_array_foreach(ctl_json_path(newest, "status.containerStatuses"), i, cs)
    {
        if (strcmp(rj_str(cs, "name") ? rj_str(cs, "name") : "", "restore") != 0)
            continue;
        return rj_str(ctl_json_path(cs, "state.terminated"), "message");
    }
    return NULL;
}

char *ctl_restore_pod_stuck(const json_t *pods)
{
    static const char *const never[] = {"CreateContainerConfigError", "CreateContainerError",
                                        "InvalidImageName"};
    size_t i, j;
    const json_t *pod, *cs;
    json_array_foreach(json_object_get(pods, "items"), i, pod)
    {
        json_array_foreach(ctl_json_path(pod, "status.containerStatuses"), j, cs)
        {
            const json_t *w = ctl_json_path(cs, "state.waiting");
            const char *reason = rj_str(w, "reason");
            for (size_t k = 0; reason != NULL && k < sizeof(never) / sizeof(*never); k++)
                if (strcmp(reason, never[k]) == 0)
                    return util_asprintf(
                        "the restore's pod %s cannot start: %s: %s",
                        rj_str(json_object_get(pod, "metadata"), "name")
                            ? rj_str(json_object_get(pod, "metadata"), "name")
                            : "?",
                        reason, rj_str(w, "message") ? rj_str(w, "message") : "(no message)");
        }
    }
    return NULL;
}

/* Whether the Job ended, and how: its Complete or Failed condition. */
static bool rj_job_succeeded(const json_t *job, const char **fail_reason)
{
    size_t i;
    const json_t *c;
    *fail_reason = NULL;
    json_array_foreach(ctl_json_path(job, "status.conditions"), i, c)
    {
        const char *type = rj_str(c, "type");
        if (type == NULL || strcmp(rj_str(c, "status") ? rj_str(c, "status") : "", "True") != 0)
            continue;
        if (strcmp(type, "Complete") == 0)
            return true;
        if (strcmp(type, "Failed") == 0)
            *fail_reason = rj_str(c, "reason");
    }
    return false;
}

json_t *ctl_restore_result(const json_t *job, const json_t *pods, int64_t started, int64_t now,
                           const char **reason, const char **message)
{
    static const char *const counts[] = {"files",    "bytes",   "directories",
                                         "symlinks", "other",   "hardLinks",
                                         "notMade",  "damaged", "pathsNotShown"};
    const char *fail_reason;
    bool job_ok = rj_job_succeeded(job, &fail_reason);
    const char *msg = pods != NULL ? rj_message(pods) : NULL;
    json_t *doc = msg != NULL ? json_loads(msg, 0, NULL) : NULL;
    bool parsed = json_is_object(doc) && json_object_get(doc, "error") != NULL;
    const json_t *error = json_object_get(doc, "error");
    json_t *st = json_object();
    char *text;
    const char *why;

    if (parsed) {
        for (size_t i = 0; i < sizeof(counts) / sizeof(*counts); i++) {
            json_t *v = json_object_get(doc, counts[i]);
            if (json_is_integer(v) && json_integer_value(v) >= 0)
                json_object_set(st, strcmp(counts[i], "damaged") == 0 ? "errors" : counts[i],
                                (json_t *)v);
        }
        const json_t *paths = json_object_get(doc, "paths");
        if (json_is_array(paths))
            json_object_set(st, "paths", (json_t *)paths);
        if (rj_str(doc, "source") != NULL)
            json_object_set(st, "source", json_object_get(doc, "source"));
    }
    bool dry = json_is_true(json_object_get(doc, "dryRun"));
    if (parsed && json_is_object(error)) {
        why = rj_str(error, "reason") ? rj_str(error, "reason") : "RestoreFailed";
        text = util_strdup(rj_str(error, "message") ? rj_str(error, "message") : "");
    } else if (parsed && job_ok) {
        why = dry ? "DryRun" : "Restored";
        const json_t *files = json_object_get(doc, "files");
        const json_t *bytes = json_object_get(doc, "bytes");
        text = util_asprintf(
            "%s %" JSON_INTEGER_FORMAT " files (%" JSON_INTEGER_FORMAT " bytes) of snapshot %s%s",
            dry ? "a dry run: would restore" : "restored", json_integer_value(files),
            json_integer_value(bytes), rj_str(doc, "snapshot") ? rj_str(doc, "snapshot") : "?",
            dry ? "; nothing was written" : "");
    } else {
        why = "JobFailed";
        size_t n = msg != NULL ? strlen(msg) : 0;
        const char *tail = n > 300 ? msg + n - 300 : msg;
        while (tail != NULL && (*tail & 0xc0) == 0x80)
            tail++;
        text = util_asprintf("the restore Job %s%s%s%s",
                             job_ok ? "ended without a result" : "failed", fail_reason ? " (" : "",
                             fail_reason ? fail_reason : "", fail_reason ? ")" : "");
        if (tail != NULL && tail[0] != '\0') {
            char *t = util_asprintf("%s; the restore's last output: %s", text, tail);
            free(text);
            text = t;
        } else if (pods == NULL) {
            char *t = util_asprintf("%s; its pods could not be read", text);
            free(text);
            text = t;
        }
    }
    bool ok = parsed && job_ok && !json_is_object(error);
    json_object_set_new(st, "phase", json_string(ok ? "Succeeded" : "Failed"));
    json_object_set_new(st, "reason", json_string(why));
    json_object_set_new(st, "message", json_string(text));
    int64_t end = ctl_json_time(job, "status.completionTime");
    if (end == 0)
        end = now;
    json_object_set_new(st, "completionTime", rj_time(end));
    if (started != 0) {
        char buf[32];
        policy_format_duration(end > started ? end - started : 0, buf, sizeof(buf));
        json_object_set_new(st, "duration", json_string(buf));
    }
    json_object_set_new(st, "conditions", rj_condition(ok ? "True" : "False", why, text, now));
    free(text);
    json_decref(doc);
    *reason = json_string_value(json_object_get(st, "reason"));
    *message = json_string_value(json_object_get(st, "message"));
    return json_pack("{s:o}", "status", st);
}
