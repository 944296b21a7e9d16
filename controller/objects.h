/*
 * objects: the Backup and Job objects the controller creates, built as JSON.
 *
 * Names are derived from (namespace, policy, host, slot), so the same run always has
 * the same name: after a restart, with two replicas acting at once, or when a
 * catch-up and a timer fire together, the API server refuses the second create with
 * 409 and a slot never runs twice. A name reads "<policy>-<slot>-<hash>": the policy
 * (cut to 36 characters), the slot's local wall clock as YYYYMMDDhhmm, and 10 hex
 * digits of SHA-256 over all four parts, at most 60 characters, so it fits the Job's
 * 63-character limit. Label values that could exceed 63 characters (host names may
 * have 253) are replaced by a hash, and the full values go in annotations.
 *
 * The Job is pinned to its node with nodeName (as a DaemonSet's pods are, and so it
 * needs no scheduler), tolerates every taint, mounts the node's "/" read-only at
 * CTL_HOST_ROOT, stops at maxRuntime (activeDeadlineSeconds), never retries
 * (backoffLimit 0: the next slot or a catch-up is the retry), and is deleted
 * ttlSecondsAfterFinished after it ends. Its container runs
 * `lode backup --policy NS/NAME --host H --root CTL_HOST_ROOT --output json
 * --termination-log /dev/termination-log` as uid 0
 * with every capability dropped but DAC_READ_SEARCH (read and list any file, override
 * no permission to write), no privilege escalation and a read-only root file system, and
 * the rest of the hardening of podsec.h (seccomp, no token, resources, recursiveReadOnly
 * when run->host_rro). The
 * policy reaches the agent as LODE_POLICY_DOCUMENT (ctl_policy_document), so the Job runs
 * the policy as it was when the run was created and the agent needs no API access. The
 * agent writes its result ({"snapshot": {...}}) as the container's termination message;
 * when it fails without one, the tail of its log is the termination message
 * (docs/operator.md). ctl_backup_result() turns that message into the Backup's status.
 * ctl_job_set_repository() then gives it the repository: LODE_REPOSITORY and
 * AWS_REGION by value, the S3 keys as secretKeyRef env and the repository key as a
 * file from the same Secret (LODE_KEY_FILE), and the CA bundle as a file.
 *
 * Pure: no I/O; the caller owns the returned JSON.
 */
#ifndef LODE_CTL_OBJECTS_H
#define LODE_CTL_OBJECTS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "api/api.h"
#include "policy/policy.h"
#include "util/util.h"

#define CTL_LABEL_MANAGED   "app.kubernetes.io/managed-by"
#define CTL_MANAGER         "lodestore"
#define CTL_LABEL_POLICY    "lodestore.io/policy"
#define CTL_LABEL_HOST      "lodestore.io/host"
#define CTL_LABEL_SLOT      "lodestore.io/slot"
#define CTL_ANNOT_HOST      "lodestore.io/host"
#define CTL_ANNOT_SLOT_TIME "lodestore.io/slot-time"

/* Room for any name or label value built here, with its NUL. */
#define CTL_NAME_MAX 64

/* A slot's identity: its local wall-clock minute, "YYYY-MM-DDTHH:MM". */
#define CTL_SLOT_MAX 17

/* The deterministic name of the run of slot (local text) of policy on host. */
void ctl_backup_name(const char *ns, const char *policy, const char *host, const char *slot,
                     char out[CTL_NAME_MAX]);

/* A label value for host: the name itself when it fits, else "h-" and a hash. */
void ctl_host_label(const char *host, char out[CTL_NAME_MAX]);

/* A slot as a label value: "2026-03-29T03:30" -> "20260329T0330". */
void ctl_slot_label(const char *slot, char out[CTL_NAME_MAX]);

enum ctl_trigger { CTL_TRIGGER_SCHEDULED, CTL_TRIGGER_CATCH_UP, CTL_TRIGGER_MANUAL };
const char *ctl_trigger_name(enum ctl_trigger t);

enum ctl_phase { CTL_PHASE_PENDING, CTL_PHASE_RUNNING, CTL_PHASE_SUCCEEDED, CTL_PHASE_FAILED };
const char *ctl_phase_name(enum ctl_phase p);
bool ctl_phase_done(enum ctl_phase p);

/* What a run needs beyond the policy. */
struct ctl_run {
    const char *host;
    const char *slot; /* local slot text, or "" for a manual run */
    enum ctl_trigger trigger;
    const char *policy_uid; /* the owner of the Backup */
    const char *backup_name;
    const char *backup_uid; /* the owner of the Job */
    int64_t slot_time;      /* the slot's instant (the slot-time annotation), 0 for a manual run */
    const char
        *policy_document;   /* ctl_policy_document(), the Job's LODE_POLICY_DOCUMENT, or NULL */
    bool host_rro;          /* the node mounts recursively read-only (ctl_node_rro_supported) */
    const char *pin_reason; /* the Backup's spec.pin.reason (lode backup --pin), or NULL */
};

/* Where the Job mounts the node's "/" (read-only), passed to lode backup --root. */
#define CTL_HOST_ROOT "/host"
/* Where the repository key (a file of the credentials Secret) and the CA bundle go. */
#define CTL_KEY_DIR  "/var/run/lodestore/repository"
#define CTL_KEY_FILE CTL_KEY_DIR "/key"
#define CTL_CA_DIR   "/var/run/lodestore/ca"
#define CTL_CA_FILE  CTL_CA_DIR "/ca.crt"
#define CTL_ANNOT_CA "lodestore.io/ca-bundle"

/* Where the agent's node cache is mounted (lode backup --cache-dir; docs/operator.md,
 * "The node cache"), and the node's directory by default. */
#define CTL_CACHE_DIR      "/var/cache/lodestore"
#define CTL_CACHE_HOST_DIR "/var/cache/lodestore"

/* What every Job shares. */
struct ctl_job_opts {
    const char *agent_image;
    int64_t ttl_seconds; /* ttlSecondsAfterFinished */
    bool host_network;   /* pods use the node's network (docs/operator.md, agentHostNetwork) */
    /* The namespaces whose policies may run spec.hooks (docs/policy.md, "Where a hook
     * runs"), comma-separated; NULL or "" for none. */
    const char *hook_namespaces;
    /* The node's directory for the agent's metadata cache (a hostPath, DirectoryOrCreate,
     * mounted at CTL_CACHE_DIR); NULL or "": no cache (lode backup --no-cache). */
    const char *cache_dir;
};

/*
 * Whether ns is one of opts->hook_namespaces (a comma-separated list; "*" is every
 * namespace).
 */
bool ctl_hooks_allowed(const struct ctl_job_opts *opts, const char *ns);
/*
 * For a policy with spec.hooks: in a namespace the operator allows, the agent's
 * container gets CAP_SYS_CHROOT (to enter the node's root) and the node's root
 * writable (for a dump); elsewhere LODE_HOOKS_ALLOWED=0, which makes the agent refuse
 * the hooks and fail the run with a message that says so. A policy without hooks is
 * left as it is.
 */
void ctl_job_set_hooks(json_t *job, const struct policy *p, const struct ctl_job_opts *opts);
/*
 * spec.pod (docs/policy.md, "spec.pod"): the policy's priorityClassName,
 * imagePullSecrets and tolerations on the Job's pod (its tolerations replace the
 * default, which tolerates every taint), and its resources on the container, each
 * value over any default set before it. Called last, so what the policy author wrote
 * wins over the defaults.
 */
void ctl_job_set_pod(json_t *job, const struct policy *p);

/* Sets hostNetwork (and the DNS policy that goes with it) on pod when opts asks for it. */
void ctl_pod_set_network(json_t *pod, const struct ctl_job_opts *opts);

/*
 * A Backup's status, or a patch of it: each member is written when set (0, NULL and
 * has_duration false leave it out), except that a final phase always writes reason
 * (null when NULL) and message.
 */
struct ctl_backup_status {
    enum ctl_phase phase;
    const char *reason; /* static text: max_runtime, job_failed, time_limit */
    char *message;      /* owned by whoever fills the struct */
    int64_t slot_time, run_time;
    int64_t started, completed;
    bool has_duration;
    int64_t duration; /* seconds; negative is written as 0 */
    const char *job_name;
};

/* {"status": {...}}, the merge patch that writes s. */
json_t *ctl_backup_status_json(const struct ctl_backup_status *s);

/* The Backup object for a scheduled or catch-up run (status is set separately). */
json_t *ctl_backup_json(const struct policy *p, const struct ctl_run *run);

/* The Job that performs run, without its repository (see ctl_job_set_repository). */
json_t *ctl_job_json(const struct policy *p, const struct ctl_run *run,
                     const struct ctl_job_opts *opts);

/*
 * Gives job (from ctl_job_json) the repository of the BackupRepository object repo, as
 * the API returns it: LODE_REPOSITORY (s3:ENDPOINT/BUCKET[/PREFIX]) and AWS_REGION;
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN when the repository
 * names its key) from the credentials Secret by reference, never by value;
 * LODE_ALLOW_PLAIN_HTTP=true when the repository has allowPlainHTTP; the
 * repository key as the file CTL_KEY_FILE from the same Secret (LODE_KEY_FILE); and
 * caBundle, when set, as the file CTL_CA_FILE (LODE_CACERT) through a pod annotation.
 * Returns 0, or UTIL_EINVAL with a message when repo lacks endpoint, bucket or
 * credentialsSecret.name (job is then unchanged).
 */
int ctl_job_set_repository(json_t *job, const json_t *repo, struct util_err *err);

/*
 * The same for a node's backup Job, with the agent's own credentials: from
 * spec.agentCredentialsSecret (name, accessKeyIDKey, secretAccessKeyKey, sessionTokenKey,
 * repositoryKeyKey) when the repository names one, so the Secret that can delete (the
 * credentialsSecret, for forget and GC) is never referenced by a pod on a node; else from
 * credentialsSecret as ctl_job_set_repository does (docs/security.md, "Roles with their
 * own credentials"). UTIL_EINVAL as there, naming agentCredentialsSecret.name when it
 * lacks one.
 */
int ctl_backup_job_set_repository(json_t *job, const json_t *repo, struct util_err *err);

/*
 * The policy as the agent reads it (LODE_POLICY_DOCUMENT): compact JSON of apiVersion,
 * kind, metadata.namespace, metadata.name and spec of the BackupPolicy object obj.
 * Owned by the caller.
 */
char *ctl_policy_document(const json_t *obj);

/* Room for the part of a termination message quoted in a status or an Event. */
#define CTL_RESULT_QUOTE 300

/* The agent's exit code for "snapshot written but incomplete" (docs/operator.md). */
#define CTL_EXIT_INCOMPLETE 3

/* What the agent's termination message said, for the Backup's Events. */
struct ctl_result {
    bool reported;    /* the message held a snapshot */
    bool suspicious;  /* ...marked suspicious */
    bool incomplete;  /* ...marked incomplete: some files could not be read */
    char id[80];      /* its id, cut to fit */
    char why[512];    /* a suspicious snapshot's rules and numbers, when the agent gave them */
    char unread[400]; /* an incomplete snapshot's unread files: how many, and the first */
    char ioprio[512]; /* why the policy's I/O priority had no effect (device, scheduler), or "" */
    char hook[640];   /* the first spec.hooks entry that failed: which, how, what followed; or "" */
};

/*
 * Adds the agent's result to patch (from ctl_backup_status_json, for a Backup whose Job
 * ended): pods is the PodList of the Job's pods (or NULL when it could not be read).
 * The termination message of the "backup" container of the newest pod, when it is
 * {"snapshot": {...}}, becomes status.snapshot (id, policy, host, time, incomplete,
 * suspicious, files, bytes, newBytes, uploadedBytes) and the conditions
 * SnapshotReported=True, Suspicious and Incomplete; its "ioPriority" (why the policy's
 * I/O priority had no effect) becomes IOPriorityIneffective=True and out->ioprio; its "hooks"
 * (spec.hooks as they ran) become the condition HookFailed: True with reason HookFailed and
 * a message naming the first hook that failed, its phase, its exit code (or its timeout)
 * and what followed (out->hook, for the policy's Event; a failure that stopped the run also
 * leads status.message), False with reason HooksSucceeded; no condition without hooks. An
 * incomplete snapshot makes the run Succeeded with reason `incomplete` (and a message naming the
 * first unread file), also when the Job failed because the container exited CTL_EXIT_INCOMPLETE:
 * the snapshot exists, so retention runs after it (ctl_backup_wants_retention), but it is no good
 * success for the overdue clock (binding_backup_success). When there is none or it does
 * not parse, the condition SnapshotReported=False says so (NoResult, UnparsableResult)
 * and, for a failed run, the message's tail (the agent's log) is added to
 * status.message. now stamps the conditions. Never fails: a bad message is reported, not
 * an error.
 */
void ctl_backup_result(json_t *patch, const json_t *pods, int64_t now, struct ctl_result *out);

/*
 * Whether the forget after a backup (docs/operator.md, "Retention") is owed for the
 * Backup object obj: it is Succeeded (an incomplete run too), names its policy and host,
 * is not being deleted, and its status has no retention record yet.
 */
bool ctl_backup_wants_retention(const json_t *obj);

#endif
