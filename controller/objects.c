#include "objects.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "kube/kube.h"
#include "objects_int.h"
#include "podsec.h"

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

void ctl_pod_set_network(json_t *pod, const struct ctl_job_opts *opts)
{
    if (!opts->host_network)
        return;
    /* Without ClusterFirstWithHostNet a host-network pod would resolve names with the
     * node's resolver, not the cluster's. */
    json_object_set_new(pod, "hostNetwork", json_true());
    json_object_set_new(pod, "dnsPolicy", json_string("ClusterFirstWithHostNet"));
}

json_t *ctl_job_json(const struct policy *p, const struct ctl_run *run,
                     const struct ctl_job_opts *opts)
{
    char *ref = util_asprintf("%s/%s", p->namespace, p->name);
    /* The agent reads the policy from LODE_POLICY_DOCUMENT (the spec when the run was
     * created), so it needs no API access; --policy names it in the snapshot. */
    json_t *args =
        json_pack("[s, s, s, s, s, s, s, s, s, s]", "--policy", ref, "--host", run->host, "--root",
                  CTL_HOST_ROOT, "--output", "json", "--termination-log", "/dev/termination-log");
    json_t *env = json_pack("[{s:s, s:{s:{s:s}}}]", "name", "NODE_NAME", "valueFrom", "fieldRef",
                            "fieldPath", "spec.nodeName");
    if (run->policy_document != NULL)
        json_array_append_new(env, json_pack("{s:s, s:s}", "name", "LODE_POLICY_DOCUMENT", "value",
                                             run->policy_document));
    free(ref);
    bool cache = opts->cache_dir != NULL && opts->cache_dir[0] != '\0';
    if (cache) {
        json_array_append_new(args, json_string("--cache-dir"));
        json_array_append_new(args, json_string(CTL_CACHE_DIR));
    } else {
        json_array_append_new(args, json_string("--no-cache"));
    }
    /* A Backup made by hand may ask for its snapshot to be pinned (docs/retention.md). */
    if (run->pin_reason != NULL) {
        json_array_append_new(args, json_string("--pin"));
        json_array_append_new(args, json_string(run->pin_reason));
    }
    /* The whole node, read-only: the policy's paths are looked up under --root, and a
     * path the node lacks is the agent's to report, not a mount failure. The runtime
     * binds it recursively, so file systems mounted below "/" are there too (the
     * agent does not cross into them unless they are listed). /tmp is the one
     * writable place. */
    json_t *mounts = json_pack("[{s:s, s:s, s:b}, {s:s, s:s}]", "name", "host-root", "mountPath",
                               CTL_HOST_ROOT, "readOnly", 1, "name", "tmp", "mountPath", "/tmp");
    json_t *volumes =
        json_pack("[{s:s, s:{s:s, s:s}}, {s:s, s:{}}]", "name", "host-root", "hostPath", "path",
                  "/", "type", "Directory", "name", "tmp", "emptyDir");
    /* The node cache: the parent's encrypted metadata kept on the node between runs, so a
     * re-run reads it from disk, not from the bucket (docs/operator.md, "The node cache");
     * the agent's only writable place on the node. */
    if (cache) {
        json_array_append_new(
            mounts, json_pack("{s:s, s:s}", "name", "node-cache", "mountPath", CTL_CACHE_DIR));
        json_array_append_new(volumes,
                              json_pack("{s:s, s:{s:s, s:s}}", "name", "node-cache", "hostPath",
                                        "path", opts->cache_dir, "type", "DirectoryOrCreate"));
    }
    /* uid 0 with DAC_READ_SEARCH alone: reads and lists every file and directory, and
     * overrides nothing else (no DAC_OVERRIDE, FOWNER, CHOWN...). A non-root user would lose the
     * capability at exec, as Kubernetes sets no ambient capabilities. The capabilities and
     * the rest of the hardening are podsec.c's. */
    json_t *security = json_pack("{s:i, s:b}", "runAsUser", 0, "runAsNonRoot", 0);
    json_t *container =
        json_pack("{s:s, s:s, s:[s, s], s:o, s:o, s:o, s:o, s:s}", "name", "backup", "image",
                  opts->agent_image, "command", "/usr/local/bin/lode", "backup", "args", args,
                  "env", env, "volumeMounts", mounts, "securityContext", security,
                  "terminationMessagePolicy", "FallbackToLogsOnError");
    json_t *pod = json_pack("{s:s, s:s, s:[{s:s}], s:[o], s:o}", "nodeName", run->host,
                            "restartPolicy", "Never", "tolerations", "operator", "Exists",
                            "containers", container, "volumes", volumes);
    ctl_pod_set_network(pod, opts);
    ctl_pod_harden(pod, CTL_POD_BACKUP, "host-root", run->host_rro);
    json_t *meta =
        json_pack("{s:s, s:s, s:o, s:{s:s}}", "name", run->backup_name, "namespace", p->namespace,
                  "labels", ctl_labels(p, run), "annotations", CTL_ANNOT_HOST, run->host);
    if (run->backup_uid != NULL)
        json_object_set_new(meta, "ownerReferences",
                            ctl_owner("Backup", run->backup_name, run->backup_uid));
    json_t *job = json_pack("{s:s, s:s, s:o, s:{s:i, s:I, s:I, s:{s:{s:o}, s:o}}}", "apiVersion",
                            "batch/v1", "kind", "Job", "metadata", meta, "spec", "backoffLimit", 0,
                            "activeDeadlineSeconds", (json_int_t)p->limits.max_runtime,
                            "ttlSecondsAfterFinished", (json_int_t)opts->ttl_seconds, "template",
                            "metadata", "labels", ctl_labels(p, run), "spec", pod);
    ctl_job_set_hooks(job, p, opts);
    ctl_job_set_pod(job, p);
    return job;
}

/* ---- spec.hooks (docs/policy.md, "Where a hook runs") ---- */

bool ctl_hooks_allowed(const struct ctl_job_opts *opts, const char *ns)
{
    const char *s = opts->hook_namespaces;
    size_t n = strlen(ns);
    while (s != NULL && *s != '\0') {
        const char *comma = strchr(s, ',');
        size_t len = comma != NULL ? (size_t)(comma - s) : strlen(s);
        if ((len == 1 && s[0] == '*') || (len == n && strncmp(s, ns, n) == 0))
            return true;
        s = comma != NULL ? comma + 1 : NULL;
    }
    return false;
}

void ctl_job_set_hooks(json_t *job, const struct policy *p, const struct ctl_job_opts *opts)
{
    if (p->hooks.nbefore == 0 && p->hooks.nafter == 0)
        return;
    json_t *c = json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec"),
            "containers"),
        0);
    if (!ctl_hooks_allowed(opts, p->namespace)) {
        json_array_append_new(json_object_get(c, "env"),
                              json_pack("{s:s, s:s}", "name", "LODE_HOOKS_ALLOWED", "value", "0"));
        return;
    }
    /* Entering the node's root (chroot) and writing a dump there; nothing else. */
    json_t *add = json_object_get(
        json_object_get(json_object_get(c, "securityContext"), "capabilities"), "add");
    if (json_is_array(add))
        json_array_append_new(add, json_string("SYS_CHROOT"));
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(c, "volumeMounts"), i, m)
    {
        if (strcmp(json_string_value(json_object_get(m, "name")), "host-root") == 0) {
            /* recursiveReadOnly is only valid on a read-only mount: the API server refuses
             * the Job otherwise (docs/security.md, "Hooks"). */
            json_object_set_new(m, "readOnly", json_false());
            json_object_del(m, "recursiveReadOnly");
        }
    }
}

/* ---- spec.pod ---- */

/* obj[key], made an object when it is not one. */
static json_t *ctl_obj_at(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_object(v)) {
        v = json_object();
        json_object_set_new(obj, key, v);
    }
    return v;
}

static void ctl_set_quantity(json_t *resources, const char *kind, const char *name,
                             const char *value)
{
    if (value != NULL)
        json_object_set_new(ctl_obj_at(resources, kind), name, json_string(value));
}

void ctl_job_set_pod(json_t *job, const struct policy *p)
{
    const struct policy_pod *pod = &p->pod;
    json_t *spec =
        json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec");
    json_t *c = json_array_get(json_object_get(spec, "containers"), 0);
    if (pod->priority_class != NULL)
        json_object_set_new(spec, "priorityClassName", json_string(pod->priority_class));
    if (pod->npull_secrets > 0) {
        json_t *a = json_array();
        for (size_t i = 0; i < pod->npull_secrets; i++)
            json_array_append_new(a, json_pack("{s:s}", "name", pod->pull_secrets[i]));
        json_object_set_new(spec, "imagePullSecrets", a);
    }
    if (pod->has_tolerations) {
        json_t *a = json_array();
        for (size_t i = 0; i < pod->ntolerations; i++) {
            const struct policy_toleration *t = &pod->tolerations[i];
            json_t *o = json_object();
            if (t->key != NULL)
                json_object_set_new(o, "key", json_string(t->key));
            if (t->op != NULL)
                json_object_set_new(o, "operator", json_string(t->op));
            if (t->value != NULL)
                json_object_set_new(o, "value", json_string(t->value));
            if (t->effect != NULL)
                json_object_set_new(o, "effect", json_string(t->effect));
            if (t->has_seconds)
                json_object_set_new(o, "tolerationSeconds", json_integer(t->seconds));
            json_array_append_new(a, o);
        }
        json_object_set_new(spec, "tolerations", a);
    }
    if (pod->requests_cpu || pod->requests_memory || pod->limits_cpu || pod->limits_memory) {
        json_t *res = ctl_obj_at(c, "resources");
        ctl_set_quantity(res, "requests", "cpu", pod->requests_cpu);
        ctl_set_quantity(res, "requests", "memory", pod->requests_memory);
        ctl_set_quantity(res, "limits", "cpu", pod->limits_cpu);
        ctl_set_quantity(res, "limits", "memory", pod->limits_memory);
    }
}

const char *ctl_str_or(const json_t *obj, const char *key, const char *dflt)
{
    const char *v = json_string_value(json_object_get(obj, key));
    return v != NULL && v[0] != '\0' ? v : dflt;
}

static json_t *ctl_secret_env(const char *name, const char *secret, const char *key)
{
    return json_pack("{s:s, s:{s:{s:s, s:s}}}", "name", name, "valueFrom", "secretKeyRef", "name",
                     secret, "key", key);
}

/*
 * The body of ctl_job_set_repository and ctl_backup_job_set_repository: field names the
 * member of the spec (a Secret's name and its keys) the Job's S3 keys and repository key
 * come from.
 */
static int ctl_job_set_repository_from(json_t *job, const json_t *repo, const char *field,
                                       struct util_err *err)
{
    const json_t *spec = json_object_get(repo, "spec");
    const json_t *creds = json_object_get(spec, field);
    const char *endpoint = json_string_value(json_object_get(spec, "endpoint"));
    const char *bucket = json_string_value(json_object_get(spec, "bucket"));
    const char *secret = json_string_value(json_object_get(creds, "name"));
    if (endpoint == NULL || bucket == NULL || secret == NULL)
        return util_err_set(err, UTIL_EINVAL,
                            "the BackupRepository lacks spec.endpoint, spec.bucket or spec.%s.name",
                            field);
    const char *ca = json_string_value(json_object_get(spec, "caBundle"));
    char *pem = NULL;
    size_t npem = 0;
    if (ca != NULL && ca[0] != '\0') {
        struct util_err b64;
        if (kube_base64_decode(ca, strlen(ca), &pem, &npem, &b64) != 0)
            return util_err_set(err, UTIL_EINVAL, "the BackupRepository's caBundle: %s", b64.msg);
    }

    json_t *tmpl = json_object_get(json_object_get(job, "spec"), "template");
    json_t *pod = json_object_get(tmpl, "spec");
    json_t *c = json_array_get(json_object_get(pod, "containers"), 0);
    json_t *env = json_object_get(c, "env");
    json_t *mounts = json_object_get(c, "volumeMounts");
    json_t *volumes = json_object_get(pod, "volumes");

    /* s3:https://host:port/bucket/prefix, as lode's --repo reads it. */
    size_t elen = strlen(endpoint);
    while (elen > 0 && endpoint[elen - 1] == '/')
        elen--;
    const char *prefix = ctl_str_or(spec, "prefix", NULL);
    char *location = util_asprintf("s3:%.*s/%s%s%s", (int)elen, endpoint, bucket, prefix ? "/" : "",
                                   prefix ? prefix : "");
    json_array_append_new(env,
                          json_pack("{s:s, s:s}", "name", "LODE_REPOSITORY", "value", location));
    free(location);
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", "AWS_REGION", "value",
                                         ctl_str_or(spec, "region", "us-east-1")));
    /* The admission rule allows plain http to a remote host only with allowPlainHTTP; the
     * agent refuses it unless told the same (docs/repository.md). */
    if (json_is_true(json_object_get(spec, "allowPlainHTTP")))
        json_array_append_new(
            env, json_pack("{s:s, s:s}", "name", "LODE_ALLOW_PLAIN_HTTP", "value", "true"));
    /* The anomaly detector's thresholds, as the BackupRepository sets them; the agent
     * reads them before it writes anything (docs/anomaly.md). */
    const json_t *anomaly = json_object_get(spec, "anomaly");
    if (json_is_object(anomaly) && json_object_size(anomaly) > 0) {
        char *text = json_dumps(anomaly, JSON_COMPACT | JSON_SORT_KEYS);
        json_array_append_new(env, json_pack("{s:s, s:s}", "name", "LODE_ANOMALY", "value", text));
        free(text);
    }
    json_array_append_new(env,
                          ctl_secret_env("AWS_ACCESS_KEY_ID", secret,
                                         ctl_str_or(creds, "accessKeyIDKey", "AWS_ACCESS_KEY_ID")));
    json_array_append_new(
        env, ctl_secret_env("AWS_SECRET_ACCESS_KEY", secret,
                            ctl_str_or(creds, "secretAccessKeyKey", "AWS_SECRET_ACCESS_KEY")));
    const char *session = ctl_str_or(creds, "sessionTokenKey", NULL);
    if (session != NULL)
        json_array_append_new(env, ctl_secret_env("AWS_SESSION_TOKEN", secret, session));

    /* The repository key as a file (lode reads it from LODE_KEY_FILE): only root, the
     * container's user, may read it. */
    json_array_append_new(env,
                          json_pack("{s:s, s:s}", "name", "LODE_KEY_FILE", "value", CTL_KEY_FILE));
    json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "name", "repository-key",
                                            "mountPath", CTL_KEY_DIR, "readOnly", 1));
    json_array_append_new(
        volumes, json_pack("{s:s, s:{s:s, s:i, s:[{s:s, s:s}]}}", "name", "repository-key",
                           "secret", "secretName", secret, "defaultMode", 0400, "items", "key",
                           ctl_str_or(creds, "repositoryKeyKey", "repository-key"), "path", "key"));

    /* caBundle is base64 PEM in the spec, not a secret: the pod carries the PEM in an
     * annotation and the downward API makes it a file. */
    if (pem != NULL) {
        json_t *tmeta = json_object_get(tmpl, "metadata");
        if (json_object_get(tmeta, "annotations") == NULL)
            json_object_set_new(tmeta, "annotations", json_object());
        json_object_set_new(json_object_get(tmeta, "annotations"), CTL_ANNOT_CA,
                            json_stringn(pem, npem));
        free(pem);
        json_array_append_new(env,
                              json_pack("{s:s, s:s}", "name", "LODE_CACERT", "value", CTL_CA_FILE));
        json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "name", "ca-bundle", "mountPath",
                                                CTL_CA_DIR, "readOnly", 1));
        json_array_append_new(volumes,
                              json_pack("{s:s, s:{s:[{s:s, s:{s:s}}]}}", "name", "ca-bundle",
                                        "downwardAPI", "items", "path", "ca.crt", "fieldRef",
                                        "fieldPath", "metadata.annotations['" CTL_ANNOT_CA "']"));
    }
    return 0;
}

int ctl_job_set_repository(json_t *job, const json_t *repo, struct util_err *err)
{
    return ctl_job_set_repository_from(job, repo, "credentialsSecret", err);
}

int ctl_backup_job_set_repository(json_t *job, const json_t *repo, struct util_err *err)
{
    const json_t *spec = json_object_get(repo, "spec");
    /* A node must never see the Secret that can delete: the kubelet of a node may read
     * every Secret a pod bound to it names, whole (docs/security.md, "Roles"). */
    bool agent = json_is_object(json_object_get(spec, "agentCredentialsSecret"));
    int rc = ctl_job_set_repository_from(
        job, repo, agent ? "agentCredentialsSecret" : "credentialsSecret", err);
    /* Object Lock on what the backup uploads: "MODE:DAYS" (docs/security.md). */
    const json_t *lock = json_object_get(spec, "objectLock");
    const char *mode = json_string_value(json_object_get(lock, "mode"));
    json_int_t days = json_integer_value(json_object_get(lock, "days"));
    if (rc == 0 && mode != NULL && days > 0) {
        json_t *pod =
            json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec");
        json_t *c = json_array_get(json_object_get(pod, "containers"), 0);
        char *v = util_asprintf("%s:%lld", mode, (long long)days);
        json_array_append_new(json_object_get(c, "env"),
                              json_pack("{s:s, s:s}", "name", "LODE_OBJECT_LOCK", "value", v));
        free(v);
    }
    return rc;
}

char *ctl_policy_document(const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *spec = json_object_get(obj, "spec");
    json_t *doc = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", API_GROUP_VERSION, "kind", "BackupPolicy",
        "metadata", "namespace", ctl_str_or(meta, "namespace", "default"), "name",
        ctl_str_or(meta, "name", ""), "spec", spec != NULL ? json_incref(spec) : json_object());
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(doc);
    if (text == NULL) {
        fprintf(stderr, "lodestore: out of memory\n");
        abort();
    }
    return text;
}
