/*
 * restorejob: what the controller writes for a Restore (docs/restoring.md), built as
 * JSON: its Job, and its status from the Job's outcome.
 *
 * The Job runs the image's `lode restore ID --output json --termination-log
 * /dev/termination-log` with the repository of ctl_job_set_repository (S3 keys by
 * secretKeyRef, the repository key as a file): read-only S3 access is enough, a restore
 * deletes nothing. Onto a node it is pinned with nodeName, tolerates every taint and
 * mounts only the target directory, read-write, at CTL_RESTORE_DIR (the node's "/" as a
 * hostPath volume, the target its subPath, which the kubelet makes when missing), with
 * --staged: the restore goes into a hidden stage inside it and is
 * moved into place at the end, and a SIGTERM (the Restore deleted) removes the stage. A
 * PersistentVolumeClaim is mounted there instead and the scheduler places the pod. A
 * dry run writes nothing: onto a node it mounts the node's "/" read-only at
 * CTL_HOST_ROOT (to look whether the target is empty), a claim read-only. The
 * container runs as uid 0 with a read-only root file system, no privilege escalation,
 * and only the capabilities a restore needs to give files their owners, modes and
 * devices (CHOWN, DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER, FSETID, MKNOD, SETFCAP; a dry
 * run DAC_READ_SEARCH alone). It never retries (backoffLimit 0) and goes
 * ttlSecondsAfterFinished after it ends; the Restore owns it, so deleting the Restore
 * deletes the Job and stops its pod.
 *
 * Pure: no I/O; the caller owns the returned JSON.
 */
#ifndef LODE_CTL_RESTOREJOB_H
#define LODE_CTL_RESTOREJOB_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "objects.h"
#include "util/util.h"

#define CTL_LABEL_RESTORE "lodestore.io/restore"
/* Where the Job mounts the target (a node's directory or the claim). */
#define CTL_RESTORE_DIR "/restore"

/* A Restore's spec, its strings borrowed from the object it was read from. */
struct ctl_restore_spec {
    const char *ns, *name, *uid;
    const char *id;            /* snapshot.id, or NULL */
    const char *policy, *host; /* snapshot.policy and host, or NULL */
    const char *repository;    /* spec.repository, or NULL (the policy's) */
    const char **include;      /* owned array of borrowed strings */
    size_t ninclude;
    const char *node, *path; /* target.node and target.path */
    const char *pvc;         /* target.persistentVolumeClaim, or NULL */
    bool overwrite, dry_run;
    bool setid, devices, system_xattrs; /* what lode restore withholds unless asked */
};

/*
 * Reads the Restore object obj into s (which borrows its strings: keep obj). Checks what
 * the CRD's rules check, for a Restore written past them: UTIL_EINVAL with a message.
 */
int ctl_restore_spec_read(const json_t *obj, struct ctl_restore_spec *s, struct util_err *err);
void ctl_restore_spec_free(struct ctl_restore_spec *s);

/* The target as status.target shows it: "NODE:PATH" or "pvc/CLAIM:PATH". Owned. */
char *ctl_restore_target_text(const struct ctl_restore_spec *s);

/*
 * Whether a and b restore into one place, so that one must wait for the other: the same
 * node (or the same claim of one namespace) and paths equal or one under the other.
 */
bool ctl_restore_targets_overlap(const struct ctl_restore_spec *a,
                                 const struct ctl_restore_spec *b);

/* The Job's name: the Restore's name and 8 hex digits of a hash of its uid. */
void ctl_restore_job_name(const struct ctl_restore_spec *s, char out[CTL_NAME_MAX]);

/* The Job that restores snapshot id for s, without its repository (ctl_job_set_repository). */
json_t *ctl_restore_job_json(const struct ctl_restore_spec *s, const char *id,
                             const struct ctl_job_opts *opts);

/*
 * The newest good snapshot of policy on host among the Backups of list (a BackupList as
 * the API returns it): a Backup of that policy and host, Succeeded without reason
 * incomplete, whose status.snapshot has an id and is neither incomplete nor suspicious;
 * the newest by status.snapshot.time, then completionTime. Borrowed from list, or NULL.
 */
const char *ctl_restore_pick(const json_t *list, const char *policy, const char *host);

/*
 * The final status of a Restore whose Job ended: job is the Job, pods the PodList of its
 * pods (NULL when it could not be read), started the status.startTime (0: unknown). From
 * the termination message of the "restore" container ({"error": ...} and the counts;
 * docs/restoring.md): phase Succeeded when the Job succeeded and the message has no
 * error, else Failed with the message's reason, or JobFailed with the Job's reason and
 * the tail of the container's output. Sets status.conditions (Restored) and the counts.
 * Returns {"status": {...}}; *reason and *message point into it (for the Event).
 */
json_t *ctl_restore_result(const json_t *job, const json_t *pods, int64_t started, int64_t now,
                           const char **reason, const char **message);

/*
 * Why the Job's pod cannot start, when waiting will not help, from the PodList of its pods:
 * a container waiting with CreateContainerConfigError (the kubelet could not make the
 * target's directories, a file in the way, or read a Secret's key), CreateContainerError
 * or InvalidImageName, which the kubelet retries forever. Returns "the restore's pod POD
 * cannot start: REASON: MESSAGE" (owned), or NULL.
 */
char *ctl_restore_pod_stuck(const json_t *pods);

/*
 * A status patch {"status": {...}} of phase (not final), reason and message, with the
 * Restored condition Unknown (stamped now); the other members are the caller's to add.
 */
json_t *ctl_restore_status(enum ctl_phase phase, const char *reason, const char *message,
                           int64_t now);

/* A Failed status patch before any Job ran (the repository or snapshot is not found). */
json_t *ctl_restore_failed(const char *reason, const char *message, int64_t now);

#endif
