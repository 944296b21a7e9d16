#include "objects.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* SHA-256, not a fast hash: a collision would give two runs one name, even for chosen names. */
static void ctl_hash_hex(const char *const *parts, size_t nparts, char *out, size_t ndigits)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    static const char hex[] = "0123456789abcdef";
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();

    if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        fprintf(stderr, "lodestore: OpenSSL cannot compute SHA-256\n");
        abort();
    }
    for (size_t i = 0; i < nparts; i++) {
        /* A NUL after each part, so ("ab","c") and ("a","bc") hash apart. */
        EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]) + 1);
    }
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    for (size_t i = 0; i < ndigits; i++)
        out[i] = hex[(md[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
    out[ndigits] = '\0';
}

void ctl_slot_label(const char *slot, char out[CTL_NAME_MAX])
{
    size_t j = 0;
    for (size_t i = 0; slot[i] != '\0' && j < CTL_NAME_MAX - 1; i++) {
        if (slot[i] != '-' && slot[i] != ':')
            out[j++] = slot[i];
    }
    out[j] = '\0';
}

void ctl_backup_name(const char *ns, const char *policy, const char *host, const char *slot,
                     char out[CTL_NAME_MAX])
{
    const char *parts[] = {ns, policy, host, slot};
    char hash[11];
    char slot_digits[CTL_NAME_MAX];
    size_t j = 0;

    ctl_hash_hex(parts, 4, hash, 10);
    for (size_t i = 0; slot[i] != '\0' && j < 12; i++) {
        if (slot[i] >= '0' && slot[i] <= '9')
            slot_digits[j++] = slot[i];
    }
    slot_digits[j] = '\0';
    snprintf(out, CTL_NAME_MAX, "%.36s-%s%s%s", policy, slot_digits, j ? "-" : "", hash);
}

void ctl_host_label(const char *host, char out[CTL_NAME_MAX])
{
    if (strlen(host) <= 63) {
        snprintf(out, CTL_NAME_MAX, "%s", host);
        return;
    }
    const char *parts[] = {host};
    char hash[21];
    ctl_hash_hex(parts, 1, hash, 20);
    snprintf(out, CTL_NAME_MAX, "h-%s", hash);
}

const char *ctl_trigger_name(enum ctl_trigger t)
{
    switch (t) {
    case CTL_TRIGGER_SCHEDULED:
        return "scheduled";
    case CTL_TRIGGER_CATCH_UP:
        return "catch-up";
    default:
        return "manual";
    }
}

const char *ctl_phase_name(enum ctl_phase p)
{
    static const char *const names[] = {"Pending", "Running", "Succeeded", "Failed"};
    return names[p];
}

bool ctl_phase_done(enum ctl_phase p)
{
    return p == CTL_PHASE_SUCCEEDED || p == CTL_PHASE_FAILED;
}

static json_t *ctl_time_json(int64_t t)
{
    char buf[UTIL_TIME_BUF];
    util_format_utc(t, buf, sizeof(buf));
    return json_string(buf);
}

json_t *ctl_backup_status_json(const struct ctl_backup_status *s)
{
    json_t *st = json_object();
    json_object_set_new(st, "phase", json_string(ctl_phase_name(s->phase)));
    if (ctl_phase_done(s->phase)) {
        json_object_set_new(st, "reason", s->reason ? json_string(s->reason) : json_null());
        json_object_set_new(st, "message", json_string(s->message ? s->message : ""));
    } else if (s->reason != NULL) {
        json_object_set_new(st, "reason", json_string(s->reason));
    }
    if (s->slot_time != 0)
        json_object_set_new(st, "slotTime", ctl_time_json(s->slot_time));
    if (s->run_time != 0)
        json_object_set_new(st, "runTime", ctl_time_json(s->run_time));
    if (s->started != 0)
        json_object_set_new(st, "startTime", ctl_time_json(s->started));
    if (s->completed != 0)
        json_object_set_new(st, "completionTime", ctl_time_json(s->completed));
    if (s->has_duration) {
        char buf[32];
        policy_format_duration(s->duration > 0 ? s->duration : 0, buf, sizeof(buf));
        json_object_set_new(st, "duration", json_string(buf));
    }
    if (s->job_name != NULL)
        json_object_set_new(st, "jobName", json_string(s->job_name));
    return json_pack("{s:o}", "status", st);
}

static json_t *ctl_labels(const struct policy *p, const struct ctl_run *run)
{
    char host[CTL_NAME_MAX], slot[CTL_NAME_MAX];
    json_t *l = json_object();
    ctl_host_label(run->host, host);
    json_object_set_new(l, CTL_LABEL_MANAGED, json_string(CTL_MANAGER));
    json_object_set_new(l, CTL_LABEL_POLICY, json_string(p->name));
    json_object_set_new(l, CTL_LABEL_HOST, json_string(host));
    if (run->slot[0] != '\0') {
        ctl_slot_label(run->slot, slot);
        json_object_set_new(l, CTL_LABEL_SLOT, json_string(slot));
    }
    return l;
}

/* controller and blockOwnerDeletion: the garbage collector deletes children with the owner. */
static json_t *ctl_owner(const char *kind, const char *name, const char *uid)
{
    return json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", API_GROUP_VERSION, "kind",
                     kind, "name", name, "uid", uid, "controller", 1, "blockOwnerDeletion", 1);
}

json_t *ctl_backup_json(const struct policy *p, const struct ctl_run *run)
{
    json_t *meta =
        json_pack("{s:s, s:s, s:o, s:{s:s}}", "name", run->backup_name, "namespace", p->namespace,
                  "labels", ctl_labels(p, run), "annotations", CTL_ANNOT_HOST, run->host);
    if (run->slot_time != 0)
        json_object_set_new(json_object_get(meta, "annotations"), CTL_ANNOT_SLOT_TIME,
                            ctl_time_json(run->slot_time));
    if (run->policy_uid != NULL)
        json_object_set_new(meta, "ownerReferences",
                            ctl_owner("BackupPolicy", p->name, run->policy_uid));
    return json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:s, s:s}}", "apiVersion", API_GROUP_VERSION,
                     "kind", "Backup", "metadata", meta, "spec", "policy", p->name, "host",
                     run->host, "slot", run->slot, "trigger", ctl_trigger_name(run->trigger));
}

static void ctl_args_add(json_t *args, const char *flag, const char *value)
{
    json_array_append_new(args, json_string(flag));
    json_array_append_new(args, json_string(value));
}

json_t *ctl_job_json(const struct policy *p, const struct ctl_run *run,
                     const struct ctl_job_opts *opts)
{
    char buf[64];
    char *ref = util_asprintf("%s/%s", p->namespace, p->name);
    json_t *args = json_array();
    json_t *mounts = json_array();
    json_t *volumes = json_array();
    json_t *env = json_array();

    ctl_args_add(args, "--policy", ref);
    ctl_args_add(args, "--host", run->host);
    if (run->slot[0] != '\0')
        ctl_args_add(args, "--slot", run->slot);
    ctl_args_add(args, "--repository", p->repository);
    snprintf(buf, sizeof(buf), "%lld", (long long)p->limits.max_runtime);
    ctl_args_add(args, "--max-runtime-seconds", buf);
    if (p->limits.nice >= 0) {
        snprintf(buf, sizeof(buf), "%d", p->limits.nice);
        ctl_args_add(args, "--nice", buf);
    }
    if (p->limits.ionice_class != POLICY_IONICE_DEFAULT) {
        ctl_args_add(args, "--ionice-class",
                     p->limits.ionice_class == POLICY_IONICE_IDLE ? "idle" : "best-effort");
        if (p->limits.ionice_level >= 0) {
            snprintf(buf, sizeof(buf), "%d", p->limits.ionice_level);
            ctl_args_add(args, "--ionice-level", buf);
        }
    }
    if (p->limits.upload_rate > 0) {
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)p->limits.upload_rate);
        ctl_args_add(args, "--upload-rate-bytes", buf);
    }
    for (size_t i = 0; i < p->npaths; i++) {
        char *mount = util_asprintf("/host%s", p->paths[i]);
        snprintf(buf, sizeof(buf), "path-%zu", i);
        ctl_args_add(args, "--path", p->paths[i]);
        json_array_append_new(
            mounts, json_pack("{s:s, s:s, s:b}", "name", buf, "mountPath", mount, "readOnly", 1));
        json_array_append_new(
            volumes, json_pack("{s:s, s:{s:s}}", "name", buf, "hostPath", "path", p->paths[i]));
        free(mount);
    }
    json_array_append_new(env, json_pack("{s:s, s:{s:{s:s}}}", "name", "NODE_NAME", "valueFrom",
                                         "fieldRef", "fieldPath", "spec.nodeName"));
    if (opts->secret_name != NULL) {
        const char *ak = opts->access_key_key ? opts->access_key_key : "AWS_ACCESS_KEY_ID";
        const char *sk = opts->secret_key_key ? opts->secret_key_key : "AWS_SECRET_ACCESS_KEY";
        json_array_append_new(env, json_pack("{s:s, s:{s:{s:s, s:s}}}", "name", "AWS_ACCESS_KEY_ID",
                                             "valueFrom", "secretKeyRef", "name", opts->secret_name,
                                             "key", ak));
        json_array_append_new(env, json_pack("{s:s, s:{s:{s:s, s:s}}}", "name",
                                             "AWS_SECRET_ACCESS_KEY", "valueFrom", "secretKeyRef",
                                             "name", opts->secret_name, "key", sk));
    }
    free(ref);

    json_t *container = json_pack(
        "{s:s, s:s, s:[s, s], s:o, s:o, s:o, s:{s:b, s:b, s:{s:[s], s:[s]}}}", "name", "backup",
        "image", opts->agent_image, "command", "/usr/local/bin/lode", "backup", "args", args, "env",
        env, "volumeMounts", mounts, "securityContext", "readOnlyRootFilesystem", 1,
        "allowPrivilegeEscalation", 0, "capabilities", "drop", "ALL", "add", "DAC_READ_SEARCH");
    json_t *pod = json_pack("{s:s, s:s, s:[{s:s}], s:[o], s:o}", "nodeName", run->host,
                            "restartPolicy", "Never", "tolerations", "operator", "Exists",
                            "containers", container, "volumes", volumes);
    json_t *meta =
        json_pack("{s:s, s:s, s:o, s:{s:s}}", "name", run->backup_name, "namespace", p->namespace,
                  "labels", ctl_labels(p, run), "annotations", CTL_ANNOT_HOST, run->host);
    if (run->backup_uid != NULL)
        json_object_set_new(meta, "ownerReferences",
                            ctl_owner("Backup", run->backup_name, run->backup_uid));
    return json_pack("{s:s, s:s, s:o, s:{s:i, s:I, s:I, s:{s:{s:o}, s:o}}}", "apiVersion",
                     "batch/v1", "kind", "Job", "metadata", meta, "spec", "backoffLimit", 0,
                     "activeDeadlineSeconds", (json_int_t)p->limits.max_runtime,
                     "ttlSecondsAfterFinished", (json_int_t)opts->ttl_seconds, "template",
                     "metadata", "labels", ctl_labels(p, run), "spec", pod);
}
