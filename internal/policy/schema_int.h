/*
 * schema_int: what the files of the policy schema share, and nothing else sees.
 *
 * The schema of a BackupPolicy is a table of fields (schema_table.c); the walk
 * (schema.c) checks a node tree against it and stores what it finds in struct
 * policy; the checks of one value (schema_values.c: kinds, strings, lengths,
 * integers, durations, rates, duplicate keys) report into the walk's diagnostics
 * at the walk's current path. The checks store nothing, so that a value that
 * fails one leaves the policy as it was.
 */
#ifndef LODE_POLICY_SCHEMA_INT_H
#define LODE_POLICY_SCHEMA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy_int.h"

enum schema_kind {
    SK_MAP,
    SK_PATHS,
    SK_LABELS,      /* label keys to label values (labels, nodeSelector) */
    SK_ANNOTATIONS, /* label keys to any string */
    SK_STRING,
    SK_ENUM,
    SK_INT,
    SK_DURATION,
    SK_RATE,
    SK_BOOL,        /* true or false, unquoted */
    SK_GLOBS,       /* a list of exclude patterns (glob.h) */
    SK_SIZE,        /* 512MiB */
    SK_HOOKS,       /* a list of hook maps (schema_hooks.c) */
    SK_ARGV,        /* a list of strings: a command and its arguments */
    SK_NAMES,       /* a list of object names (spec.pod.imagePullSecrets) */
    SK_TOLERATIONS, /* a list of toleration maps (schema_pod.c) */
    SK_QUANTITY     /* a Kubernetes quantity such as 500m or 512Mi */
};

enum schema_slot {
    SLOT_NONE,
    SLOT_NAME,
    SLOT_NAMESPACE,
    SLOT_LABELS,
    SLOT_ANNOTATIONS,
    SLOT_REPOSITORY,
    SLOT_PATHS,
    SLOT_NODE_SELECTOR,
    SLOT_SCHEDULE,
    SLOT_CRON,
    SLOT_TIMEZONE,
    SLOT_JITTER,
    SLOT_CATCH_UP,
    SLOT_RETENTION,
    SLOT_KEEP_LAST,
    SLOT_KEEP_WITHIN,
    SLOT_KEEP_DAILY,
    SLOT_KEEP_WEEKLY,
    SLOT_KEEP_MONTHLY,
    SLOT_LIMITS,
    SLOT_UPLOAD_RATE,
    SLOT_NICE,
    SLOT_IONICE_CLASS,
    SLOT_IONICE_LEVEL,
    SLOT_MAX_RUNTIME,
    SLOT_MAX_AGE,
    SLOT_SUSPEND,
    SLOT_EXCLUDE,
    SLOT_EXCLUDE_PATTERNS,
    SLOT_EXCLUDE_CACHES,
    SLOT_EXCLUDE_LARGER,
    SLOT_HOOKS,
    SLOT_HOOKS_BEFORE,
    SLOT_HOOKS_AFTER,
    SLOT_HOOK_NAME,
    SLOT_HOOK_COMMAND,
    SLOT_HOOK_TIMEOUT,
    SLOT_HOOK_ON_ERROR,
    SLOT_POD_PRIORITY,
    SLOT_POD_PULL_SECRETS,
    SLOT_POD_TOLERATIONS,
    SLOT_TOL_KEY,
    SLOT_TOL_OPERATOR,
    SLOT_TOL_VALUE,
    SLOT_TOL_EFFECT,
    SLOT_TOL_SECONDS,
    SLOT_REQ_CPU,
    SLOT_REQ_MEMORY,
    SLOT_LIM_CPU,
    SLOT_LIM_MEMORY
};

struct schema_walk;

struct schema_field {
    const char *name;
    enum schema_kind kind;
    bool required;
    const char *missing;               /* required: what to write, for the message */
    const struct schema_field *fields; /* SK_MAP: NULL-name terminated */
    const char *const *json_ignored;   /* SK_MAP: names the JSON form may carry, ignored */
    int64_t min, max;                  /* SK_INT, SK_DURATION, SK_RATE */
    const char *min_text, *max_text;   /* the bounds as a person writes them; max_text NULL: none */
    const char *const *choices;        /* SK_ENUM */
    /*
     * The limits the CRD states as maxLength (max_chars: characters, as OpenAPI
     * counts them) and maxItems or maxProperties (max_items); 0 for none. They are
     * here so that a file lode accepts is never one the API server refuses; the
     * names, the repository, the zone and a path carry theirs in their own checks
     * (names.c, tz_name_check), with the same numbers.
     */
    size_t max_chars;
    size_t max_items;
    int (*check)(struct schema_walk *w, const char *s, size_t len, struct util_err *err);
    enum schema_slot slot;
};

struct schema_walk {
    struct policy *p;
    struct policy_diags *diags;
    const struct tz_db *db;
    bool json;
    struct util_buf path;
    /* The cross-field rule of limits: ioniceLevel only with ioniceClass: best-effort. */
    const struct policy_node *ionice_level;
    int ionice_class; /* 0 absent, 1 best-effort, 2 idle, -1 invalid */
    /* The exclude patterns stored, and their nodes: whether each can match under the
     * policy's paths is known only once the paths are read (schema_excludes_end). */
    const struct policy_node **globs;
    size_t *glob_at; /* each one's index in the list */
    size_t nglobs;
    struct policy_hook *hook;             /* the hook being walked, or NULL */
    struct policy_toleration *toleration; /* the toleration being walked, or NULL */
};

/* The document: a map of apiVersion, kind, metadata and spec (schema_table.c). */
extern const struct schema_field schema_document;

/* ---- errors and paths (schema_values.c) ---- */

/* An error at line:column under the walk's current path. */
void schema_error_at(struct schema_walk *w, int line, int column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define schema_error(w, n, ...) schema_error_at((w), (n)->line, (n)->column, __VA_ARGS__)

/* Appends ".key" or "[i]" to the path; returns the mark schema_path_pop goes back to. */
size_t schema_path_push_key(struct schema_walk *w, const char *key, size_t len);
size_t schema_path_push_index(struct schema_walk *w, size_t i);
void schema_path_pop(struct schema_walk *w, size_t mark);

/* ---- the checks of one value (schema_values.c) ---- */

/* A plain scalar that YAML would read as null: no value, ~ or null (or JSON null). */
bool schema_is_null(const struct policy_node *n);
/* "expected EXPECTED, got WHAT N IS" and the advice, if any. */
void schema_kind_error(struct schema_walk *w, const struct policy_node *n, const char *expected,
                       const char *advice);
/* True when n is a string (a plain scalar other than a null, or a quoted one) without NUL. */
bool schema_string(struct schema_walk *w, const struct policy_node *n, const char *expected);
/* False, with an error, when the string is longer than the field's max_chars. */
bool schema_length_ok(struct schema_walk *w, const struct schema_field *f,
                      const struct policy_node *n, const char *what, const char *advice);
/* An integer, a duration (seconds) or a rate (bytes a second) in the field's range. */
bool schema_int(struct schema_walk *w, const struct schema_field *f, const struct policy_node *n,
                int64_t *out);
bool schema_duration(struct schema_walk *w, const struct schema_field *f,
                     const struct policy_node *n, int64_t *out);
bool schema_rate(struct schema_walk *w, const struct schema_field *f, const struct policy_node *n,
                 uint64_t *out);
/* A size such as 512MiB (policy_parse_size), at least the field's min. */
bool schema_size(struct schema_walk *w, const struct schema_field *f, const struct policy_node *n,
                 uint64_t *out);
/* The walk of one map against its fields (schema.c), for the items of a list of maps. */
void schema_walk_map(struct schema_walk *w, const struct schema_field *f,
                     const struct policy_node *map, const struct policy_node *key);
/* ---- hooks (schema_hooks.c) ---- */
void schema_walk_hooks(struct schema_walk *w, const struct schema_field *f,
                       const struct policy_node *list);
void schema_walk_argv(struct schema_walk *w, const struct schema_field *f,
                      const struct policy_node *list);
void schema_hook_string(struct schema_walk *w, enum schema_slot slot, const struct policy_node *n);
/* ---- spec.pod (schema_pod.c) ---- */
void schema_walk_names(struct schema_walk *w, const struct schema_field *f,
                       const struct policy_node *list);
void schema_walk_tolerations(struct schema_walk *w, const struct schema_field *f,
                             const struct policy_node *list);
int schema_check_quantity(struct schema_walk *w, const char *s, size_t len, struct util_err *err);
/* Stores the strings of spec.pod; true when slot is one of them. */
bool schema_pod_string(struct schema_walk *w, enum schema_slot slot, const struct policy_node *n);
void schema_pod_free(struct policy_pod *pod);
/* ---- exclude patterns (schema_exclude.c) ---- */
void schema_walk_globs(struct schema_walk *w, const struct schema_field *f,
                       const struct policy_node *list);
/* After the whole document: each anchored pattern can match under some path. */
void schema_excludes_end(struct schema_walk *w);
/* true or false: a plain (or JSON) true or false; "true" quoted, yes, on and 1 are errors. */
bool schema_bool(struct schema_walk *w, const struct policy_node *n, bool *out);

/* ---- duplicates (schema_values.c) ---- */

struct schema_text {
    const char *s;
    size_t len;
    size_t index;
};

/*
 * first[i] is the index of the first text equal to text i (i itself for the first
 * one), or SIZE_MAX where texts[i].s is NULL. O(n log n). The caller frees it.
 */
size_t *schema_first_equal(struct schema_text *texts, size_t n);
/*
 * Checks the keys of a map: a key is a plain or quoted string, and appears once.
 * Returns first[] as schema_first_equal does; a pair to skip has first[i] != i.
 */
size_t *schema_check_keys(struct schema_walk *w, const struct policy_node *map);
/* Item i of list repeats item first: the duplicate error at list[i], naming list[first]. */
void schema_duplicate_item(struct schema_walk *w, const struct policy_node *list, size_t i,
                           size_t first, const char *what);
/* "duplicate WHAT "n" (first at line L)", or at first_path in the JSON form. */
void schema_duplicate_error(struct schema_walk *w, const struct policy_node *n, const char *what,
                            const struct policy_node *first, const char *first_path);

#endif
