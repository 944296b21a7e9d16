/*
 * The schema of a BackupPolicy as a table (schema_int.h): each field's name, kind,
 * whether it is required, its range, its CRD limits and, for strings, the
 * function that checks them. docs/policy.md states the same fields for users.
 */
#include <stdint.h>

#include "glob/glob.h"
#include "schema_int.h"

/* ---- checks of strings ---- */

static int schema_check_name(struct schema_walk *w, const char *s, size_t len, struct util_err *err)
{
    return policy_check_dns_label(s, len, err);
}

static int schema_check_subdomain(struct schema_walk *w, const char *s, size_t len,
                                  struct util_err *err)
{
    return policy_check_dns_subdomain(s, len, err);
}

static int schema_check_cron(struct schema_walk *w, const char *s, size_t len, struct util_err *err)
{
    struct cron_expr e;
    return cron_parse(&e, s, err);
}

static int schema_check_zone(struct schema_walk *w, const char *s, size_t len, struct util_err *err)
{
    int rc = tz_name_check(s, err);
    if (rc != 0 || w->db == NULL)
        return rc;
    /* The zone file exists and is TZif: a few microseconds, where a full load
     * (which the scheduler does anyway) costs about a millisecond. */
    return tz_db_check_zone(w->db, s, err);
}

/* ---- the table ---- */

static const char *const schema_root_json_ignored[] = {"status", NULL};
static const char *const schema_metadata_json_ignored[] = {"uid",
                                                           "resourceVersion",
                                                           "generation",
                                                           "creationTimestamp",
                                                           "deletionTimestamp",
                                                           "deletionGracePeriodSeconds",
                                                           "managedFields",
                                                           "selfLink",
                                                           "ownerReferences",
                                                           "finalizers",
                                                           "generateName",
                                                           NULL};
static const char *const schema_api_versions[] = {POLICY_API_VERSION, NULL};
static const char *const schema_kinds[] = {POLICY_KIND, NULL};
static const char *const schema_ionice_classes[] = {"best-effort", "idle", NULL};

#define KEEP_COUNT(n, s)                                                                           \
    {                                                                                              \
        .name = n, .kind = SK_INT, .min = 1, .max = INT32_MAX, .slot = s                           \
    }

static const struct schema_field schema_metadata[] = {
    {.name = "name",
     .kind = SK_STRING,
     .required = true,
     .missing = "the policy's name, such as etc-and-home",
     .check = schema_check_name,
     .slot = SLOT_NAME},
    {.name = "namespace", .kind = SK_STRING, .check = schema_check_name, .slot = SLOT_NAMESPACE},
    {.name = "labels", .kind = SK_LABELS, .slot = SLOT_LABELS},
    {.name = "annotations", .kind = SK_ANNOTATIONS, .slot = SLOT_ANNOTATIONS},
    {.name = NULL},
};

static const struct schema_field schema_schedule[] = {
    {.name = "cron",
     .kind = SK_STRING,
     .required = true,
     .missing = "five fields (minute hour day month weekday) or @hourly, @daily, @weekly, "
                "@monthly",
     .check = schema_check_cron,
     .max_chars = POLICY_MAX_CRON_CHARS,
     .slot = SLOT_CRON},
    {.name = "timezone", .kind = SK_STRING, .check = schema_check_zone, .slot = SLOT_TIMEZONE},
    {.name = "jitter",
     .kind = SK_DURATION,
     .min = 0,
     .max = 86400,
     .min_text = "0s",
     .max_text = "24h",
     .max_chars = POLICY_MAX_DURATION_CHARS,
     .slot = SLOT_JITTER},
    {.name = "catchUpWindow",
     .kind = SK_DURATION,
     .min = 60,
     .max = 30 * 86400,
     .min_text = "1m",
     .max_text = "30d",
     .max_chars = POLICY_MAX_DURATION_CHARS,
     .slot = SLOT_CATCH_UP},
    {.name = NULL},
};

static const struct schema_field schema_retention[] = {
    KEEP_COUNT("keepLast", SLOT_KEEP_LAST),
    {.name = "keepWithin",
     .kind = SK_DURATION,
     .min = 60,
     .max = INT64_MAX,
     .min_text = "1m",
     .max_chars = POLICY_MAX_DURATION_CHARS,
     .slot = SLOT_KEEP_WITHIN},
    KEEP_COUNT("keepDaily", SLOT_KEEP_DAILY),
    KEEP_COUNT("keepWeekly", SLOT_KEEP_WEEKLY),
    KEEP_COUNT("keepMonthly", SLOT_KEEP_MONTHLY),
    {.name = NULL},
};

static const struct schema_field schema_limits[] = {
    {.name = "uploadRate",
     .kind = SK_RATE,
     .min = 1024,
     .max = INT64_MAX,
     .min_text = "1KiB/s",
     .max_chars = POLICY_MAX_RATE_CHARS,
     .slot = SLOT_UPLOAD_RATE},
    {.name = "nice", .kind = SK_INT, .min = 0, .max = 19, .slot = SLOT_NICE},
    {.name = "ioniceClass",
     .kind = SK_ENUM,
     .choices = schema_ionice_classes,
     .slot = SLOT_IONICE_CLASS},
    {.name = "ioniceLevel", .kind = SK_INT, .min = 0, .max = 7, .slot = SLOT_IONICE_LEVEL},
    {.name = "maxRuntime",
     .kind = SK_DURATION,
     .min = 3600,
     .max = 7 * 86400,
     .min_text = "1h",
     .max_text = "7d",
     .max_chars = POLICY_MAX_DURATION_CHARS,
     .slot = SLOT_MAX_RUNTIME},
    {.name = NULL},
};

static const struct schema_field schema_alerts[] = {
    {.name = "maxAge",
     .kind = SK_DURATION,
     .min = 3600,
     .max = 365 * 86400,
     .min_text = "1h",
     .max_text = "365d",
     .max_chars = POLICY_MAX_DURATION_CHARS,
     .slot = SLOT_MAX_AGE},
    {.name = NULL},
};

static const char *const schema_on_error[] = {"fail", "continue", NULL};

static const struct schema_field schema_hook[] = {
    {.name = "name", .kind = SK_STRING, .check = schema_check_name, .slot = SLOT_HOOK_NAME},
    {.name = "command",
     .kind = SK_ARGV,
     .required = true,
     .missing = "the command and its arguments, such as [/bin/sh, -c, \"pg_dump app > "
                "/var/backups/app.sql\"]",
     .max_items = POLICY_MAX_HOOK_ARGS,
     .max_chars = POLICY_MAX_HOOK_ARG_CHARS,
     .slot = SLOT_HOOK_COMMAND},
    {.name = "timeout",
     .kind = SK_DURATION,
     .min = 1,
     .max = 86400,
     .min_text = "1s",
     .max_text = "24h",
     .max_chars = POLICY_MAX_DURATION_CHARS,
     .slot = SLOT_HOOK_TIMEOUT},
    {.name = "onError", .kind = SK_ENUM, .choices = schema_on_error, .slot = SLOT_HOOK_ON_ERROR},
    {.name = NULL},
};

static const struct schema_field schema_hooks[] = {
    {.name = "before",
     .kind = SK_HOOKS,
     .fields = schema_hook,
     .max_items = POLICY_MAX_HOOKS,
     .slot = SLOT_HOOKS_BEFORE},
    {.name = "after",
     .kind = SK_HOOKS,
     .fields = schema_hook,
     .max_items = POLICY_MAX_HOOKS,
     .slot = SLOT_HOOKS_AFTER},
    {.name = NULL},
};

static int schema_check_label_key(struct schema_walk *w, const char *s, size_t len,
                                  struct util_err *err)
{
    return policy_check_qualified_name(s, len, err);
}

static int schema_check_label_value(struct schema_walk *w, const char *s, size_t len,
                                    struct util_err *err)
{
    return policy_check_label_value(s, len, err);
}

static const char *const schema_tol_operators[] = {"Exists", "Equal", NULL};
static const char *const schema_tol_effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute",
                                                 NULL};

static const struct schema_field schema_toleration[] = {
    {.name = "key", .kind = SK_STRING, .check = schema_check_label_key, .slot = SLOT_TOL_KEY},
    {.name = "operator",
     .kind = SK_ENUM,
     .choices = schema_tol_operators,
     .slot = SLOT_TOL_OPERATOR},
    {.name = "value", .kind = SK_STRING, .check = schema_check_label_value, .slot = SLOT_TOL_VALUE},
    {.name = "effect", .kind = SK_ENUM, .choices = schema_tol_effects, .slot = SLOT_TOL_EFFECT},
    {.name = "tolerationSeconds",
     .kind = SK_INT,
     .min = 0,
     .max = INT32_MAX,
     .slot = SLOT_TOL_SECONDS},
    {.name = NULL},
};

#define QUANTITY(n, s)                                                                             \
    {                                                                                              \
        .name = n, .kind = SK_QUANTITY, .check = schema_check_quantity,                            \
        .max_chars = POLICY_MAX_QUANTITY_CHARS, .slot = s                                          \
    }

static const struct schema_field schema_requests[] = {
    QUANTITY("cpu", SLOT_REQ_CPU),
    QUANTITY("memory", SLOT_REQ_MEMORY),
    {.name = NULL},
};

static const struct schema_field schema_limits_res[] = {
    QUANTITY("cpu", SLOT_LIM_CPU),
    QUANTITY("memory", SLOT_LIM_MEMORY),
    {.name = NULL},
};

static const struct schema_field schema_resources[] = {
    {.name = "requests", .kind = SK_MAP, .fields = schema_requests},
    {.name = "limits", .kind = SK_MAP, .fields = schema_limits_res},
    {.name = NULL},
};

static const struct schema_field schema_pod[] = {
    {.name = "priorityClassName",
     .kind = SK_STRING,
     .check = schema_check_subdomain,
     .slot = SLOT_POD_PRIORITY},
    {.name = "imagePullSecrets",
     .kind = SK_NAMES,
     .max_items = POLICY_MAX_PULL_SECRETS,
     .slot = SLOT_POD_PULL_SECRETS},
    {.name = "tolerations",
     .kind = SK_TOLERATIONS,
     .fields = schema_toleration,
     .max_items = POLICY_MAX_TOLERATIONS,
     .slot = SLOT_POD_TOLERATIONS},
    {.name = "resources", .kind = SK_MAP, .fields = schema_resources},
    {.name = NULL},
};

static const struct schema_field schema_exclude[] = {
    {.name = "patterns",
     .kind = SK_GLOBS,
     .max_items = POLICY_MAX_EXCLUDES,
     .max_chars = GLOB_MAX_CHARS,
     .slot = SLOT_EXCLUDE_PATTERNS},
    {.name = "caches", .kind = SK_BOOL, .slot = SLOT_EXCLUDE_CACHES},
    {.name = "largerThan",
     .kind = SK_SIZE,
     .min = 1,
     .max = INT64_MAX,
     .min_text = "1B",
     .max_chars = POLICY_MAX_SIZE_CHARS,
     .slot = SLOT_EXCLUDE_LARGER},
    {.name = NULL},
};

static const struct schema_field schema_spec[] = {
    {.name = "suspend", .kind = SK_BOOL, .slot = SLOT_SUSPEND},
    {.name = "repository",
     .kind = SK_STRING,
     .required = true,
     .missing = "the name of a BackupRepository in the same namespace, such as main",
     .check = schema_check_subdomain,
     .slot = SLOT_REPOSITORY},
    {.name = "paths",
     .kind = SK_PATHS,
     .required = true,
     .missing = "a list of 1 or more absolute paths on the node, such as [/etc]",
     .max_items = POLICY_MAX_PATHS,
     .slot = SLOT_PATHS},
    {.name = "exclude", .kind = SK_MAP, .fields = schema_exclude, .slot = SLOT_EXCLUDE},
    {.name = "hooks", .kind = SK_MAP, .fields = schema_hooks, .slot = SLOT_HOOKS},
    {.name = "pod", .kind = SK_MAP, .fields = schema_pod},
    {.name = "nodeSelector",
     .kind = SK_LABELS,
     .max_items = POLICY_MAX_NODE_SELECTOR,
     .slot = SLOT_NODE_SELECTOR},
    {.name = "schedule", .kind = SK_MAP, .fields = schema_schedule, .slot = SLOT_SCHEDULE},
    {.name = "retention", .kind = SK_MAP, .fields = schema_retention, .slot = SLOT_RETENTION},
    {.name = "limits", .kind = SK_MAP, .fields = schema_limits, .slot = SLOT_LIMITS},
    {.name = "alerts", .kind = SK_MAP, .fields = schema_alerts, .slot = SLOT_NONE},
    {.name = NULL},
};

static const struct schema_field schema_root[] = {
    {.name = "apiVersion",
     .kind = SK_ENUM,
     .required = true,
     .missing = "write apiVersion: " POLICY_API_VERSION,
     .choices = schema_api_versions},
    {.name = "kind",
     .kind = SK_ENUM,
     .required = true,
     .missing = "write kind: " POLICY_KIND,
     .choices = schema_kinds},
    {.name = "metadata",
     .kind = SK_MAP,
     .required = true,
     .missing = "a map with the policy's name",
     .fields = schema_metadata,
     .json_ignored = schema_metadata_json_ignored},
    {.name = "spec",
     .kind = SK_MAP,
     .required = true,
     .missing = "a map with repository and paths",
     .fields = schema_spec},
    {.name = NULL},
};

const struct schema_field schema_document = {
    .name = "",
    .kind = SK_MAP,
    .fields = schema_root,
    .json_ignored = schema_root_json_ignored,
};
