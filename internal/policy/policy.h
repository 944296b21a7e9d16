/*
 * policy: the BackupPolicy document, decoded and validated.
 *
 * One validator serves both shapes a policy arrives in: the YAML file a person
 * writes (lode validate, lode apply, the UI), read from libyaml events so that
 * every error carries its line and column, and the JSON object the Kubernetes API
 * delivers (jansson), where errors carry the field path only. Both fill the same
 * struct policy with the defaults of docs/policy.md applied.
 *
 * Every error of a document is collected in document order, so a person fixes
 * ten mistakes in one round, not ten. The YAML reader is strict: unknown fields
 * (with a "did you mean"), duplicate keys, a second document, anchors, aliases,
 * tags, non-string keys, a scalar where a map or list belongs and the reverse,
 * quoted numbers where an integer belongs; a plain scalar is a string wherever a
 * string belongs (`NO` is the string "NO").
 *
 * The zone name is checked for its syntax (tz_name_check) and, when a struct
 * tz_db is given, looked up in it (tz_db_check_zone: one small file read); with
 * db NULL the module does no I/O at all.
 *
 * Field paths read like Kubernetes': spec.retention.keepLast, spec.paths[0]
 * (list indexes count from 0), metadata.labels[app.kubernetes.io/name] (keys
 * that are not plain words go in brackets). Line and column count from 1, the
 * column in characters. docs/policy.md is the reference for people.
 *
 * Costs: one pass over the events into a small node tree (one allocation per
 * node), one walk over it; duplicate keys are found by sorting, so a hostile
 * document with many keys costs O(n log n). Input is capped at 1 MiB and 64
 * levels of nesting.
 */
#ifndef LODE_POLICY_H
#define LODE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cron/cron.h"
#include "tz/tz.h"
#include "util/util.h"

#define POLICY_API_VERSION "lodestore.io/v1alpha1"
#define POLICY_KIND        "BackupPolicy"

/*
 * Limits the API server enforces as well (crd/backuppolicies.yaml states the same
 * numbers, and a test proves they agree), so that a file lode accepts is never one
 * the cluster refuses; docs/policy.md lists them. Lengths count characters, as
 * OpenAPI's maxLength does. A duration of 12 characters (11 digits and a unit) and
 * a rate of 14 always fit the API server's 64-bit integers, which is why they stop
 * there.
 */
#define POLICY_MAX_PATHS          64   /* spec.paths items */
#define POLICY_MAX_PATH_BYTES     4095 /* one path, in UTF-8 bytes (PATH_MAX less the NUL) */
#define POLICY_MAX_NODE_SELECTOR  32   /* spec.nodeSelector labels */
#define POLICY_MAX_CRON_CHARS     256  /* spec.schedule.cron */
#define POLICY_MAX_DURATION_CHARS 12   /* every duration field */
#define POLICY_MAX_RATE_CHARS     14   /* spec.limits.uploadRate */
#define POLICY_MAX_EXCLUDES       128  /* spec.exclude.patterns items */
#define POLICY_MAX_SIZE_CHARS     14   /* spec.exclude.largerThan */
#define POLICY_MAX_HOOKS          8    /* spec.hooks.before and .after items, each */
#define POLICY_MAX_HOOK_ARGS      64   /* one hook's command items */
#define POLICY_MAX_HOOK_ARG_CHARS 4096 /* one command item */
#define POLICY_MAX_TOLERATIONS    16   /* spec.pod.tolerations items */
#define POLICY_MAX_PULL_SECRETS   8    /* spec.pod.imagePullSecrets items */
#define POLICY_MAX_QUANTITY_CHARS 20   /* a resource quantity, such as 512Mi */

/* Defaults of docs/policy.md, in seconds. */
#define POLICY_DEFAULT_HOOK_TIMEOUT (5 * 60)
#define POLICY_DEFAULT_JITTER       (15 * 60)
#define POLICY_DEFAULT_CATCH_UP     (24 * 3600)
#define POLICY_DEFAULT_MAX_RUNTIME  (12 * 3600)

struct policy_label {
    char *key;
    char *value;
};

enum policy_ionice_class {
    POLICY_IONICE_DEFAULT = 0, /* absent: the system default */
    POLICY_IONICE_BEST_EFFORT,
    POLICY_IONICE_IDLE
};

struct policy_schedule {
    char *cron_text; /* as written, for display */
    struct cron_expr cron;
    char *timezone;          /* as written; "UTC" by default */
    int64_t jitter;          /* seconds, 0 .. 86400 */
    int64_t catch_up_window; /* seconds, 60 .. 30d */
};

struct policy_retention {
    /* 0 means absent for every field. */
    int64_t keep_last, keep_daily, keep_weekly, keep_monthly;
    int64_t keep_within; /* seconds */
};

struct policy_limits {
    uint64_t upload_rate; /* bytes per second; 0 = unlimited */
    int nice;             /* -1 = host default */
    enum policy_ionice_class ionice_class;
    int ionice_level;    /* -1 = none */
    int64_t max_runtime; /* seconds */
};

/* spec.exclude (docs/policy.md, "spec.exclude"): what the walk leaves out. */
struct policy_exclude {
    char **patterns; /* glob.h patterns, as written */
    size_t npatterns;
    bool caches;          /* directories holding a CACHEDIR.TAG with its signature */
    uint64_t larger_than; /* bytes; 0 = no limit */
};

/* One command of spec.hooks (docs/policy.md, "spec.hooks"). */
struct policy_hook {
    char *name;  /* as written, or "before[0]" when absent */
    char **argv; /* NULL-terminated */
    size_t argc;
    int64_t timeout;        /* seconds */
    bool on_error_continue; /* onError: continue; false: fail */
};

struct policy_hooks {
    struct policy_hook *before, *after;
    size_t nbefore, nafter;
};

/* One of spec.pod.tolerations, as Kubernetes has it; NULL members are absent. */
struct policy_toleration {
    char *key, *op, *value, *effect;
    bool has_seconds;
    int64_t seconds;
};

/* spec.pod (docs/policy.md, "spec.pod"): the backup Job's pod; NULL or 0 is absent. */
struct policy_pod {
    char *priority_class;
    char **pull_secrets;
    size_t npull_secrets;
    bool has_tolerations; /* set: they replace the Job's default (tolerate every taint) */
    struct policy_toleration *tolerations;
    size_t ntolerations;
    char *requests_cpu, *requests_memory, *limits_cpu, *limits_memory;
};

struct policy {
    char *name;
    char *namespace; /* "default" when the document has none */
    char *repository;
    char **paths;
    size_t npaths;
    struct policy_label *node_selector;
    size_t nnode_selector;
    struct policy_label *labels;
    size_t nlabels;
    struct policy_label *annotations;
    size_t nannotations;
    bool has_schedule;
    struct policy_schedule schedule;
    bool has_retention;
    struct policy_retention retention;
    struct policy_limits limits;
    int64_t alerts_max_age; /* seconds; 0 = derived from the schedule (docs/schedule.md, "The alert
                               limit") */
    struct policy_exclude exclude;
    struct policy_hooks hooks;
    struct policy_pod pod;
    bool suspend; /* spec.suspend: no scheduled run starts (docs/policy.md, "Suspend") */
};

/* One error: line and column are 1-based, 0 when unknown (the JSON form). */
struct policy_diag {
    int line;
    int column;
    char *path; /* "spec.retention.keepLast"; "" for the document itself */
    char *message;
};

struct policy_diags {
    struct policy_diag *v;
    size_t n;
    size_t cap;
};

void policy_diags_init(struct policy_diags *d);
/* Frees the messages and paths and leaves d empty, ready for reuse. */
void policy_diags_free(struct policy_diags *d);
/*
 * Appends an error (the message is formatted). The parsers use it, and so may a
 * caller that reports a problem of its own in the same list, such as a file that
 * cannot be read (line and column 0, path "").
 */
void policy_diags_add(struct policy_diags *d, int line, int column, const char *path,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/*
 * Decodes and validates a YAML document. Returns 0 when valid (out is filled and
 * owned by the caller, to be released with policy_free), UTIL_EINVAL when any
 * error was found (all of them are in diags, in document order; out is left
 * zeroed). db may be NULL (zone names are then checked for syntax only).
 */
int policy_parse_yaml(struct policy *out, const char *data, size_t len, const struct tz_db *db,
                      struct policy_diags *diags);

/*
 * The same for the JSON object of a BackupPolicy as the Kubernetes API returns it:
 * server fields of metadata (uid, resourceVersion, managedFields, ...) and status
 * are ignored, null counts as absent (as the API server prunes it), and a value's
 * JSON type must fit its field (7, not "7" or 7.0, for an integer). Errors have
 * line and column 0. obj NULL is an error, not a crash.
 */
int policy_parse_json(struct policy *out, const json_t *obj, const struct tz_db *db,
                      struct policy_diags *diags);

void policy_free(struct policy *p);

/* Durations (docs/policy.md, "Durations and rates"): "15m" -> 900. UTIL_EINVAL or UTIL_ERANGE with
 * a message. */
int policy_parse_duration(const char *s, int64_t *seconds, struct util_err *err);
/* Rates: "50MiB/s" -> bytes per second. */
int policy_parse_rate(const char *s, uint64_t *bytes_per_second, struct util_err *err);
/* Sizes: "512MiB" -> bytes (B, KiB, MiB, GiB, TiB); at most INT64_MAX. */
int policy_parse_size(const char *s, uint64_t *bytes, struct util_err *err);
/* Formats a duration in the largest exact unit mix for people: 181500 -> "50h25m". */
void policy_format_duration(int64_t seconds, char *buf, size_t size);

#endif
