/*
 * gcplan: the pure part of the garbage collection the controller runs for each
 * BackupRepository (docs/gc.md, "Run by the controller"): the schedule of spec.gc, the
 * decision to start a GC Job, the --max-runtime it passes, the Job itself, and the
 * reading of its result into status.gc.
 *
 * The schedule follows a BackupPolicy's rules exactly (docs/schedule.md): a cron
 * expression in a time zone, bound by internal/schedule, and the same decision
 * (sched_decide): a slot runs once, missed slots are never replayed, only the last one
 * can run late, within CTL_GC_CATCH_UP, and never while the previous GC Job of the
 * repository is active (the "backup running" rule of a host). The default is weekly,
 * Sunday 03:00 UTC. The Job name is derived from the repository and the slot, so the
 * API server refuses a second Job for the same slot (409) whatever restarts happen.
 *
 * Pure: time is an argument, no I/O; the caller owns the returned JSON.
 */
#ifndef LODE_CTL_GCPLAN_H
#define LODE_CTL_GCPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cron/cron.h"
#include "objects.h"
#include "schedule/schedule.h"
#include "util/util.h"

#define CTL_GC_DEFAULT_SCHEDULE "0 3 * * 0" /* weekly: Sunday 03:00 */
#define CTL_GC_DEFAULT_ZONE     "UTC"
#define CTL_GC_CATCH_UP         (24 * 3600) /* a slot missed by a down controller, late */
#define CTL_GC_SCHEDULE_MAX     256
#define CTL_GC_ZONE_MAX         128
#define CTL_LABEL_REPOSITORY    "lodestore.io/repository"
#define CTL_LABEL_COMPONENT     "app.kubernetes.io/component"
#define CTL_GC_COMPONENT        "gc"

/* spec.gc of a BackupRepository, with the defaults filled in. */
struct ctl_gc_spec {
    char schedule[CTL_GC_SCHEDULE_MAX + 1];
    char zone[CTL_GC_ZONE_MAX + 1];
    bool suspend;
    struct cron_expr cron;
};

/*
 * Reads spec.gc of the BackupRepository object repo. Returns 0, or UTIL_EINVAL with a
 * message naming the field (a schedule that is not a cron expression, a zone too long,
 * a member of the wrong type); the zone itself is checked when it is loaded.
 */
int ctl_gc_spec_read(const json_t *repo, struct ctl_gc_spec *out, struct util_err *err);

/* What the controller knows of one repository's GC when it decides. */
struct ctl_gc_state {
    bool ready;            /* the repository is Ready and not suspended */
    bool job_active;       /* a GC Job of this repository has not ended */
    int64_t since;         /* slots before this do not count: repository created, gc changed */
    bool has_last_started; /* a GC Job was started for a slot */
    int64_t last_started_slot;
};

/* sched_decide's answer for the repository's GC at now (offset 0, CTL_GC_CATCH_UP). */
void ctl_gc_decide(const struct sched *s, const struct ctl_gc_state *st, int64_t now,
                   struct sched_decision *out);

/*
 * --max-runtime of the GC Job: the largest of the n maxRuntimes (seconds) of the
 * repository's policies; POLICY_DEFAULT_MAX_RUNTIME when it has none.
 */
int64_t ctl_gc_max_runtime(const int64_t *max_runtimes, size_t n);

/* The Job name of the GC of slot (local text, "YYYY-MM-DDTHH:MM") of repository ns/name. */
void ctl_gc_job_name(const char *ns, const char *name, const char *slot, char out[CTL_NAME_MAX]);

/*
 * The GC Job of repository ns/name (without its repository: ctl_job_set_repository adds
 * it): `lode gc --output json --max-runtime Ns --termination-log /dev/termination-log`,
 * not pinned to a node, no host mount, backoffLimit 0, activeDeadlineSeconds twice
 * max_runtime, labelled with the repository, owned by it when uid is set, run as
 * CTL_GC_USER.
 */
json_t *ctl_gc_job_json(const char *ns, const char *name, const char *uid, const char *job_name,
                        int64_t max_runtime, const struct ctl_job_opts *opts);

/*
 * The image runs as CTL_GC_USER, not root (a backup Job is root, for the host's
 * files; gc needs none): the GC pod runs as that user with fsGroup CTL_GC_USER, and
 * the repository key volume that ctl_job_set_repository added (0400, root's) becomes
 * 0440 so that group reads it. Call it after ctl_job_set_repository.
 */
#define CTL_GC_USER 65532
void ctl_gc_job_key_readable(json_t *job);

/* The outcome of one GC Job, for status.gc and the Event. */
struct ctl_gc_result {
    bool succeeded; /* the Job succeeded and reported no error */
    bool reported;  /* its termination message parsed */
    int64_t packs_deleted, packs_total, bytes_freed;
    int64_t duration;  /* seconds, from the Job's startTime to its completion (or now) */
    char message[512]; /* a sentence for status.gc.message and the Event */
};

/*
 * Reads the ended Job job and the PodList pods (NULL when it could not be read): the
 * termination message of the "gc" container of the newest pod. Never fails: what is
 * missing is said in message.
 */
void ctl_gc_result_read(const json_t *job, const json_t *pods, int64_t now,
                        struct ctl_gc_result *out);

/* True when the Job object has ended (Complete or Failed); *failed says which. */
bool ctl_gc_job_ended(const json_t *job, bool *failed);

#endif
