/*
 * state: what the controller remembers of the cluster, as compact structs.
 *
 * Informers hand over whole JSON objects; each is reduced here to the few fields the
 * controller decides with and the JSON is dropped. A node keeps its name, creation
 * time, readiness and one 64-bit hash per label (a nodeSelector is matched by
 * hashing its pairs), so a node costs about 190 bytes plus 8 per label whatever its
 * JSON weighs (often 10 KiB). A Backup keeps its identity, slot and phase; a Job its
 * owner and outcome; a policy its validated spec, zone and bound schedule.
 *
 * Pure: JSON in, structs out, time as RFC 3339 strings parsed to seconds.
 */
#ifndef LODE_CTL_STATE_H
#define LODE_CTL_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "objects.h"
#include "binding/binding.h"
#include "policy/policy.h"
#include "schedule/schedule.h"
#include "tz/tz.h"
#include "util/map.h"

struct ctl_policy;

/* A node: the struct, its label hashes and its name share one allocation. */
struct ctl_node {
    char *name;
    int64_t created;
    bool ready;
    bool rro; /* its runtime mounts recursively read-only (ctl_node_rro_supported) */
    size_t nlabels;
    uint64_t *labels; /* ctl_label_hash(key, value) of each label, sorted */
};

/*
 * Builds a node from a core/v1 Node in one allocation (freed by ctl_node_free).
 * UTIL_EINVAL (with a message) when it has no name.
 */
int ctl_node_from_json(struct ctl_node **out, const json_t *obj, struct util_err *err);
void ctl_node_free(struct ctl_node *n);
uint64_t ctl_label_hash(const char *key, const char *value);
/*
 * True when the policy selects the node (binding_selects over the label hashes); for a
 * policy that is not valid, by its nodeSelector alone when that is well formed.
 */
bool ctl_node_selected(const struct ctl_node *n, const struct ctl_policy *p);

struct ctl_backup {
    char *ns, *name, *uid;
    char *policy, *host;
    char *slot; /* "" for a backup started by hand */
    enum ctl_trigger trigger;
    bool has_slot_time;
    int64_t slot_time; /* from the lodestore.io/slot-time annotation, set at creation */
    int64_t created;
    enum ctl_phase phase; /* Pending when the status has none yet */
    bool has_status;      /* status.phase is set: the first status was written */
    char *reason;         /* status.reason, or NULL */
    int64_t started;      /* status.startTime, else 0 */
    int64_t completed;    /* status.completionTime, else 0 */
    bool deleting;        /* metadata.deletionTimestamp is set */
    /* A success the overdue clock counts from (binding_backup_success: Succeeded, its
     * snapshot neither suspicious nor incomplete), and when. */
    bool good;
    int64_t good_at;
    char *pin_reason; /* spec.pin.reason: the snapshot is pinned with it (docs/retention.md) */
};

int ctl_backup_from_json(struct ctl_backup *b, const json_t *obj, struct util_err *err);
void ctl_backup_free(struct ctl_backup *b);

struct ctl_job {
    char *ns, *name;
    char *owner;       /* the name of the Backup that owns it, or NULL */
    int64_t started;   /* status.startTime, else 0 */
    int64_t completed; /* the time of its Complete or Failed condition, else 0 */
    bool finished;
    bool succeeded;
    char *fail_reason; /* the Failed condition's reason (DeadlineExceeded, ...), or NULL */
    int active;        /* pods running or pending */
    bool deleting;     /* metadata.deletionTimestamp is set */
};

int ctl_job_from_json(struct ctl_job *j, const json_t *obj, struct util_err *err);
void ctl_job_free(struct ctl_job *j);

/* A policy as the controller keeps it. */
struct ctl_policy {
    char *ns, *name, *uid, *key; /* key: "ns/name" */
    int64_t generation;
    int64_t created;
    bool valid;
    char *invalid_message; /* every validator error, "; "-joined, when !valid */
    bool not_allowed;      /* !valid because of the node-backup allowlist (invalid_message why) */
    struct policy spec;    /* filled when valid */
    /* When not valid: its spec.nodeSelector alone, when that part is well formed, so the
     * status still counts the hosts the policy would select (docs/operator.md). */
    struct policy selector;
    bool has_selector;
    struct binding bind;      /* the zone and schedule; bind.spec points at spec: do not move p */
    bool deleting;            /* metadata.deletionTimestamp is set: no new runs */
    struct util_map started;  /* status.startedSlots: host -> int64_t * slot time */
    struct util_map enrolled; /* status.enrolledHosts: host -> int64_t * enrolment time */
    bool enrolled_kept;       /* the status has enrolledHosts at all (sched_enrolled) */
    /* The schedule's identity (cron, zone, jitter) and since when it holds. */
    char schedule_hash[17];
    bool status_has_hash;      /* the status records a schedule hash... */
    char status_hash[17];      /* ...this one */
    int64_t status_changed_at; /* status.scheduleChangedAt, else 0 */
    int64_t schedule_changed;  /* the effective time the current schedule began */
};

/*
 * Fills p from a BackupPolicy object: metadata, the validator's verdict (the whole
 * policy_parse_json run; an invalid policy is kept with its message), the zone from
 * db, and the schedule's start time: the recorded scheduleChangedAt when the recorded
 * hash matches, else `now` (the controller saw it change), or the creation time for a
 * policy with no status yet. Returns 0, or UTIL_EINVAL when the object lacks the
 * metadata every object has (then nothing is kept).
 */
int ctl_policy_from_json(struct ctl_policy *p, const json_t *obj, const struct tz_db *db,
                         int64_t now, struct util_err *err);
void ctl_policy_free(struct ctl_policy *p);

/*
 * Who may back up a node (docs/security.md, "Who may back up a node"): namespaces whose
 * policies may run node backup Jobs, each with the path prefixes its policies' paths
 * must lie under (none: any path). An administrator sets it (lode-controller
 * --allow-node-backups); a tenant who may create a BackupPolicy cannot.
 */
struct ctl_allow {
    char *ns; /* a namespace, or "*" for every one */
    char **prefixes;
    size_t nprefixes;
};
struct ctl_allowlist {
    struct ctl_allow *v;
    size_t n;
};

/*
 * Adds "NAMESPACE" or "NAMESPACE:/PREFIX[,/PREFIX...]" to a. UTIL_EINVAL, with a message,
 * for an empty namespace or a prefix that is not an absolute path without "." or ".."
 * components.
 */
int ctl_allowlist_add(struct ctl_allowlist *a, const char *text, struct util_err *err);
void ctl_allowlist_free(struct ctl_allowlist *a);

/*
 * NULL when a lets the policy spec of namespace ns run, else why not, as a sentence
 * (owned by the caller): its namespace is not listed, or the first of its paths outside
 * every prefix its namespace's entries give. A path is under a prefix when it equals it
 * or continues it after a "/"; "/" holds every path.
 */
char *ctl_allowlist_refuses(const struct ctl_allowlist *a, const char *ns,
                            const struct policy *spec);

/*
 * Makes a valid policy that a refuses not valid (not_allowed, invalid_message the
 * reason), as an invalid one is kept: no runs, its nodeSelector (from obj) still counted.
 */
void ctl_policy_apply_allowlist(struct ctl_policy *p, const json_t *obj,
                                const struct ctl_allowlist *a, const struct tz_db *db);
/*
 * True when b is a by the things the controller decides with: the same object (uid), spec
 * (generation), validity and deletion state; what differs is then the status, most often
 * the controller's own write coming back, which selects no node and reconciles no pair.
 */
bool ctl_policy_same_spec(const struct ctl_policy *a, const struct ctl_policy *b);
/* The slot time the status records as last started on host, or 0. */
int64_t ctl_policy_started_slot(const struct ctl_policy *p, const char *host);
/*
 * When host, which p selects, enrolled (sched_enrolled over what p's status keeps in
 * enrolledHosts); selected_since is when the caller saw p come to select it, or 0.
 */
int64_t ctl_policy_enrolled(const struct ctl_policy *p, const char *host, int64_t selected_since,
                            int64_t node_created, int64_t now);
/*
 * The status.enrolledHosts merge patch that keeps the enrolment of the n hosts p selects
 * (hosts[i] enrolled at times[i]; a time of 0 is not known yet and left as it is) and
 * removes (null) every other host p's status still keeps, so a host selected again later
 * starts afresh. An object even when empty: its presence says times are kept. One entry
 * of about 50 bytes per selected host, as startedSlots. Owned by the caller.
 */
json_t *ctl_policy_enrolled_json(const struct ctl_policy *p, const char *const *hosts,
                                 const int64_t *times, size_t n);

/* Parses an RFC 3339 member of obj (a dotted path such as "status.startTime"); 0 when absent. */
int64_t ctl_json_time(const json_t *obj, const char *path);
/* A member by dotted path of object keys (keys with dots cannot be named), or NULL. */
const json_t *ctl_json_path(const json_t *obj, const char *path);
/* A string member by dotted path, or NULL. */
const char *ctl_json_str(const json_t *obj, const char *path);

#endif
