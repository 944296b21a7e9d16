/*
 * The schema of a BackupPolicy as a table, and the walk that checks a node tree
 * against it and fills struct policy.
 *
 * Each field says its name, its kind (a map of further fields, a list of paths, a
 * map of labels, a string, an integer, a duration, a rate or one of a few words),
 * whether it is required, its range and, for strings, the function that checks
 * them. The walk visits the pairs of each map in document order, so the errors
 * come out in that order (policy_diags_sort makes it exact, as a missing field is
 * reported at the key of its parent map). Nothing stops at the first error.
 *
 * A scalar is read as the field it fills: a plain YAML scalar is a string where a
 * string belongs and must be a plain decimal integer where an integer belongs; a
 * quoted scalar is always a string. In the JSON form, the JSON type must match
 * and null counts as absent (the API server treats it so).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    SK_RATE
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
    SLOT_MAX_AGE
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
};

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

static const struct schema_field schema_spec[] = {
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

static const struct schema_field schema_document = {
    .name = "",
    .kind = SK_MAP,
    .fields = schema_root,
    .json_ignored = schema_root_json_ignored,
};

/* ---- errors ---- */

static void schema_error_at(struct schema_walk *w, int line, int column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void schema_error_at(struct schema_walk *w, int line, int column, const char *fmt, ...)
{
    struct util_buf msg;
    va_list ap;

    util_buf_init(&msg);
    va_start(ap, fmt);
    util_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    policy_diags_add(w->diags, line, column, w->path.data ? w->path.data : "", "%s", msg.data);
    util_buf_free(&msg);
}

#define schema_error(w, n, ...) schema_error_at((w), (n)->line, (n)->column, __VA_ARGS__)

static size_t schema_path_push_key(struct schema_walk *w, const char *key, size_t len)
{
    size_t mark = w->path.len;
    policy_path_key(&w->path, key, len);
    return mark;
}

static size_t schema_path_push_index(struct schema_walk *w, size_t i)
{
    size_t mark = w->path.len;
    util_buf_printf(&w->path, "[%zu]", i);
    return mark;
}

static void schema_path_pop(struct schema_walk *w, size_t mark)
{
    w->path.len = mark;
    w->path.data[mark] = '\0';
}

/* A plain scalar that YAML would read as null: no value, ~ or null. */
static bool schema_is_null(const struct policy_node *n)
{
    if (n->kind != POLICY_NODE_SCALAR)
        return false;
    if (n->style == POLICY_SCALAR_NULL)
        return true;
    if (n->style != POLICY_SCALAR_PLAIN)
        return false;
    return n->len == 0 || strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 ||
           strcmp(n->text, "Null") == 0 || strcmp(n->text, "NULL") == 0;
}

/* What a node is, for "expected X, got Y". */
static void schema_describe(struct util_buf *b, const struct policy_node *n)
{
    if (n->kind == POLICY_NODE_MAP) {
        util_buf_puts(b, "a map");
        return;
    }
    if (n->kind == POLICY_NODE_LIST) {
        util_buf_puts(b, "a list");
        return;
    }
    if (schema_is_null(n)) {
        util_buf_puts(b, n->style == POLICY_SCALAR_PLAIN && n->len == 0 ? "no value" : "null");
        return;
    }
    switch (n->style) {
    case POLICY_SCALAR_QUOTED:
        util_buf_puts(b, "the string ");
        policy_quote(b, n->text, n->len);
        return;
    case POLICY_SCALAR_INT:
    case POLICY_SCALAR_REAL:
        util_buf_puts(b, "the number ");
        policy_escape(b, n->text, n->len, 40);
        return;
    case POLICY_SCALAR_BOOL:
        util_buf_puts(b, n->text);
        return;
    default:
        policy_quote(b, n->text, n->len);
        return;
    }
}

static void schema_kind_error(struct schema_walk *w, const struct policy_node *n,
                              const char *expected, const char *advice)
{
    struct util_buf got;
    util_buf_init(&got);
    schema_describe(&got, n);
    schema_error(w, n, "expected %s, got %s%s", expected, got.data, advice ? advice : "");
    util_buf_free(&got);
}

/*
 * The string in a scalar node, or an error that names what was expected. A plain
 * scalar is a string here, except for the nulls, which YAML would not read as text.
 */
static bool schema_string(struct schema_walk *w, const struct policy_node *n, const char *expected)
{
    if (n->kind != POLICY_NODE_SCALAR || schema_is_null(n) ||
        (n->style != POLICY_SCALAR_PLAIN && n->style != POLICY_SCALAR_QUOTED)) {
        schema_kind_error(w, n, expected, NULL);
        return false;
    }
    if (memchr(n->text, '\0', n->len) != NULL) {
        schema_error(w, n, "the value contains a NUL character");
        return false;
    }
    return true;
}

/* ---- lengths ---- */

/* OpenAPI's maxLength counts characters (code points), so this does too. */
static size_t schema_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

/* False, with an error, when the string is longer than the field's max_chars. */
static bool schema_length_ok(struct schema_walk *w, const struct schema_field *f,
                             const struct policy_node *n, const char *what, const char *advice)
{
    size_t chars;

    if (f->max_chars == 0)
        return true;
    chars = schema_chars(n->text, n->len);
    if (chars <= f->max_chars)
        return true;
    schema_error(w, n, "%s is %zu characters long, more than %zu: %s", what, chars, f->max_chars,
                 advice);
    return false;
}

/* ---- integers ---- */

static bool schema_all(const char *s, size_t len, const char *set)
{
    for (size_t i = 0; i < len; i++) {
        if (strchr(set, s[i]) == NULL || s[i] == '\0')
            return false;
    }
    return len > 0;
}

/* A plain decimal integer: -?(0|[1-9][0-9]*). */
static bool schema_plain_integer(const char *s, size_t len)
{
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == len || !schema_all(s + i, len - i, "0123456789"))
        return false;
    return s[i] != '0' || len - i == 1;
}

/* Converts -?[0-9]+ with saturation (the range check then reports it as too large). */
static int64_t schema_saturating_int(const char *s, size_t len)
{
    bool neg = s[0] == '-';
    uint64_t v;
    size_t i = neg ? 1 : 0;
    if (util_parse_u64(s + i, len - i, (uint64_t)INT64_MAX, &v) != 0)
        v = (uint64_t)INT64_MAX;
    return neg ? -(int64_t)v : (int64_t)v;
}

/*
 * Why a plain YAML scalar is not a plain decimal integer, when it is one of the
 * forms YAML 1.1 or other languages read as a number, with the spelling to use.
 */
static bool schema_integer_trap(struct schema_walk *w, const struct policy_node *n)
{
    const char *s = n->text;
    size_t len = n->len;
    size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
    const char *digits = s + i;
    size_t dlen = len - i;

    if (s[0] == '+' && schema_plain_integer(digits, dlen)) {
        schema_error(w, n, "an integer has no '+' sign: write %s", digits);
        return true;
    }
    if (dlen > 2 && digits[0] == '0' && strchr("xXoObB", digits[1]) != NULL) {
        /* Say which decimal number was meant, when the digits make one. */
        int base = strchr("xX", digits[1]) ? 16 : strchr("oO", digits[1]) ? 8 : 2;
        const char *set = base == 16 ? "0123456789abcdefABCDEF" : base == 8 ? "01234567" : "01";
        if (schema_all(digits + 2, dlen - 2, set) && dlen - 2 <= 15) {
            unsigned long long v = strtoull(digits + 2, NULL, base);
            schema_error(w, n,
                         "hexadecimal, octal and binary numbers are not accepted: write %s%llu",
                         s[0] == '-' ? "-" : "", v);
        } else {
            schema_error(w, n,
                         "hexadecimal, octal and binary numbers are not accepted: write the "
                         "number in decimal");
        }
        return true;
    }
    if (schema_all(digits, dlen, "0123456789_") && memchr(digits, '_', dlen) != NULL) {
        struct util_buf plain;
        util_buf_init(&plain);
        util_buf_append(&plain, s, i);
        for (size_t k = 0; k < dlen; k++) {
            if (digits[k] != '_')
                util_buf_append(&plain, &digits[k], 1);
        }
        schema_error(w, n, "digit separators are not accepted: write %s", plain.data);
        util_buf_free(&plain);
        return true;
    }
    if (schema_all(digits, dlen, "0123456789") && digits[0] == '0') {
        size_t z = 0;
        while (z + 1 < dlen && digits[z] == '0')
            z++;
        schema_error(w, n,
                     "leading zeros are not accepted (YAML 1.1 reads 010 as the octal number "
                     "8): write %s%.*s",
                     s[0] == '-' ? "-" : "", (int)(dlen - z), digits + z);
        return true;
    }
    if (schema_all(digits, dlen, "0123456789.eE+-_") && digits[0] >= '0' && digits[0] <= '9') {
        schema_error(w, n,
                     "fractions and exponents are not accepted: write a whole number in plain "
                     "decimal, such as 7");
        return true;
    }
    return false;
}

static bool schema_int(struct schema_walk *w, const struct schema_field *f,
                       const struct policy_node *n, int64_t *out)
{
    char expected[96];
    int64_t v;

    snprintf(expected, sizeof(expected), "an integer from %" PRId64 " to %" PRId64, f->min, f->max);
    if (n->kind != POLICY_NODE_SCALAR || schema_is_null(n) || n->style == POLICY_SCALAR_BOOL) {
        schema_kind_error(w, n, expected, NULL);
        return false;
    }
    if (n->style == POLICY_SCALAR_QUOTED) {
        if (n->len > 0 && schema_plain_integer(n->text, n->len))
            schema_error(w, n, "an integer is written without quotes: write %s, not \"%s\"",
                         n->text, n->text);
        else
            schema_kind_error(w, n, expected, NULL);
        return false;
    }
    if (n->style == POLICY_SCALAR_REAL) {
        schema_error(w, n, "expected %s, got the number %s (a whole number has no fraction)",
                     expected, n->text);
        return false;
    }
    if (!schema_plain_integer(n->text, n->len)) {
        if (!schema_integer_trap(w, n))
            schema_kind_error(w, n, expected, NULL);
        return false;
    }
    v = schema_saturating_int(n->text, n->len);
    if (v < f->min || v > f->max) {
        schema_error(w, n, "must be from %" PRId64 " to %" PRId64 ", not %s", f->min, f->max,
                     n->text);
        return false;
    }
    *out = v;
    return true;
}

/* ---- durations and rates ---- */

static void schema_range_error(struct schema_walk *w, const struct schema_field *f,
                               const struct policy_node *n)
{
    struct util_buf got;
    util_buf_init(&got);
    policy_escape(&got, n->text, n->len, 40);
    if (f->max_text != NULL)
        schema_error(w, n, "must be from %s to %s, not %s", f->min_text, f->max_text, got.data);
    else
        schema_error(w, n, "must be at least %s, not %s", f->min_text, got.data);
    util_buf_free(&got);
}

static bool schema_duration(struct schema_walk *w, const struct schema_field *f,
                            const struct policy_node *n, int64_t *out)
{
    struct util_err err = {0};
    char expected[96];
    int64_t v;
    int rc;

    if (f->max_text != NULL)
        snprintf(expected, sizeof(expected), "a duration from %s to %s", f->min_text, f->max_text);
    else
        snprintf(expected, sizeof(expected), "a duration of at least %s", f->min_text);
    if (!schema_string(w, n, expected))
        return false;
    rc = policy_parse_duration(n->text, &v, &err);
    /*
     * What is wrong with the spelling says more than the length, and so does a
     * value out of range ("25h", "99999999999999y"); the length is left for a value
     * in range spelt with too many digits ("000000000015m"), which the API server
     * refuses all the same.
     */
    if (rc != 0 && rc != UTIL_ERANGE) {
        schema_error(w, n, "%s", err.msg);
        return false;
    }
    if (f->max_text != NULL && (rc == UTIL_ERANGE || v < f->min || v > f->max)) {
        schema_range_error(w, f, n);
        return false;
    }
    if (!schema_length_ok(w, f, n, "the duration",
                          "write it without leading zeros, or in a larger unit (90m, not "
                          "0000005400s)"))
        return false;
    if (rc != 0) {
        schema_error(w, n, "%s", err.msg);
        return false;
    }
    if (v < f->min) {
        schema_range_error(w, f, n);
        return false;
    }
    *out = v;
    return true;
}

static bool schema_rate(struct schema_walk *w, const struct schema_field *f,
                        const struct policy_node *n, uint64_t *out)
{
    struct util_err err = {0};
    uint64_t v;
    int rc;

    if (!schema_string(w, n, "a rate such as 50MiB/s"))
        return false;
    rc = policy_parse_rate(n->text, &v, &err);
    if ((rc == 0 || rc == UTIL_ERANGE) &&
        !schema_length_ok(w, f, n, "the rate",
                          "write it without leading zeros, or in a larger unit (50MiB/s, not "
                          "52428800B/s)"))
        return false;
    if (rc != 0) {
        schema_error(w, n, "%s", err.msg);
        return false;
    }
    if (v < (uint64_t)f->min) {
        schema_range_error(w, f, n);
        return false;
    }
    *out = v;
    return true;
}

/* ---- duplicates ---- */

struct schema_text {
    const char *s;
    size_t len;
    size_t index;
};

static int schema_text_cmp(const void *a, const void *b)
{
    const struct schema_text *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    int c = memcmp(x->s, y->s, x->len);
    if (c != 0)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * first[i] is the index of the first text equal to text i (i itself for the first
 * one), or SIZE_MAX where texts[i].s is NULL. Sorting keeps this O(n log n), so a
 * map with a hundred thousand keys costs no more than reading it.
 */
static size_t *schema_first_equal(struct schema_text *texts, size_t n)
{
    size_t *first = util_calloc(n > 0 ? n : 1, sizeof(*first));
    struct schema_text *sorted = util_calloc(n > 0 ? n : 1, sizeof(*sorted));
    size_t m = 0;

    for (size_t i = 0; i < n; i++) {
        first[i] = SIZE_MAX;
        if (texts[i].s != NULL)
            sorted[m++] = texts[i];
    }
    qsort(sorted, m, sizeof(*sorted), schema_text_cmp);
    for (size_t i = 0; i < m; i++) {
        if (i > 0 && sorted[i].len == sorted[i - 1].len &&
            memcmp(sorted[i].s, sorted[i - 1].s, sorted[i].len) == 0)
            first[sorted[i].index] = first[sorted[i - 1].index];
        else
            first[sorted[i].index] = sorted[i].index;
    }
    free(sorted);
    return first;
}

/* first[] for the keys of a map (complex keys are left out). */
static size_t *schema_first_keys(const struct policy_node *map)
{
    struct schema_text *texts = util_calloc(map->npairs > 0 ? map->npairs : 1, sizeof(*texts));
    size_t *first;
    for (size_t i = 0; i < map->npairs; i++) {
        const struct policy_node *k = map->pairs[i].key;
        texts[i].index = i;
        if (k->kind == POLICY_NODE_SCALAR) {
            texts[i].s = k->text;
            texts[i].len = k->len;
        }
    }
    first = schema_first_equal(texts, map->npairs);
    free(texts);
    return first;
}

static void schema_duplicate_error(struct schema_walk *w, const struct policy_node *n,
                                   const char *what, const struct policy_node *first,
                                   const char *first_path)
{
    struct util_buf q;
    util_buf_init(&q);
    policy_quote(&q, n->text, n->len);
    if (first->line > 0)
        schema_error(w, n, "duplicate %s %s (first at line %d)", what, q.data, first->line);
    else
        schema_error(w, n, "duplicate %s %s (first at %s)", what, q.data, first_path);
    util_buf_free(&q);
}

/*
 * Checks the keys of a map: a key is a plain or quoted string, and appears once.
 * Returns first[] as schema_first_keys does; a pair to skip has first[i] != i.
 */
static size_t *schema_check_keys(struct schema_walk *w, const struct policy_node *map)
{
    size_t *first = schema_first_keys(map);
    for (size_t i = 0; i < map->npairs; i++) {
        const struct policy_node *k = map->pairs[i].key;
        if (k->kind == POLICY_NODE_BAD)
            continue; /* an alias as a key: already reported */
        if (k->kind != POLICY_NODE_SCALAR) {
            schema_error(w, k, "a key must be a plain or quoted string, not %s",
                         k->kind == POLICY_NODE_MAP ? "a map" : "a list");
            continue;
        }
        if (first[i] != i) {
            struct util_buf q;
            size_t mark = schema_path_push_key(w, k->text, k->len);
            util_buf_init(&q);
            policy_quote(&q, k->text, k->len);
            schema_error(w, k, "duplicate key %s (first at line %d)", q.data,
                         map->pairs[first[i]].key->line);
            util_buf_free(&q);
            schema_path_pop(w, mark);
        }
    }
    return first;
}

/* ---- storing ---- */

static void schema_store_string(struct schema_walk *w, enum schema_slot slot,
                                const struct policy_node *n)
{
    struct policy *p = w->p;
    char **dst = NULL;

    switch (slot) {
    case SLOT_NAME:
        dst = &p->name;
        break;
    case SLOT_NAMESPACE:
        dst = &p->namespace;
        break;
    case SLOT_REPOSITORY:
        dst = &p->repository;
        break;
    case SLOT_CRON:
        dst = &p->schedule.cron_text;
        /* Checked already; parsing twice keeps the checks free of side effects. */
        if (cron_parse(&p->schedule.cron, n->text, NULL) != 0)
            return;
        break;
    case SLOT_TIMEZONE:
        dst = &p->schedule.timezone;
        break;
    default:
        return;
    }
    free(*dst);
    *dst = util_strdup(n->text);
}

static void schema_store_int(struct schema_walk *w, enum schema_slot slot, int64_t v)
{
    struct policy *p = w->p;

    switch (slot) {
    case SLOT_JITTER:
        p->schedule.jitter = v;
        break;
    case SLOT_CATCH_UP:
        p->schedule.catch_up_window = v;
        break;
    case SLOT_KEEP_LAST:
        p->retention.keep_last = v;
        break;
    case SLOT_KEEP_WITHIN:
        p->retention.keep_within = v;
        break;
    case SLOT_KEEP_DAILY:
        p->retention.keep_daily = v;
        break;
    case SLOT_KEEP_WEEKLY:
        p->retention.keep_weekly = v;
        break;
    case SLOT_KEEP_MONTHLY:
        p->retention.keep_monthly = v;
        break;
    case SLOT_NICE:
        p->limits.nice = (int)v;
        break;
    case SLOT_IONICE_LEVEL:
        p->limits.ionice_level = (int)v;
        break;
    case SLOT_MAX_RUNTIME:
        p->limits.max_runtime = v;
        break;
    case SLOT_MAX_AGE:
        p->alerts_max_age = v;
        break;
    default:
        break;
    }
}

static void schema_store_label(struct schema_walk *w, enum schema_slot slot,
                               const struct policy_node *k, const struct policy_node *v)
{
    struct policy *p = w->p;
    struct policy_label **arr;
    size_t *n;

    switch (slot) {
    case SLOT_LABELS:
        arr = &p->labels;
        n = &p->nlabels;
        break;
    case SLOT_ANNOTATIONS:
        arr = &p->annotations;
        n = &p->nannotations;
        break;
    case SLOT_NODE_SELECTOR:
        arr = &p->node_selector;
        n = &p->nnode_selector;
        break;
    default:
        return;
    }
    /* Grown one at a time: a policy has a handful of labels. */
    *arr = util_realloc(*arr, (*n + 1) * sizeof(**arr));
    (*arr)[*n].key = util_strdup(k->text);
    (*arr)[*n].value = util_strdup(v->text);
    (*n)++;
}

/* ---- the walk ---- */

static void schema_walk_value(struct schema_walk *w, const struct schema_field *f,
                              const struct policy_node *n, const struct policy_node *key);

static void schema_unknown_field(struct schema_walk *w, const struct schema_field *fields,
                                 const struct policy_node *k, bool root)
{
    const char *names[32];
    size_t m = 0;
    const char *near;

    if (root && !w->json && strcmp(k->text, "status") == 0) {
        schema_error(w, k,
                     "unknown field: status is written by the controller, not in a "
                     "policy file");
        return;
    }
    for (size_t i = 0; fields[i].name != NULL && m + 1 < sizeof(names) / sizeof(names[0]); i++)
        names[m++] = fields[i].name;
    names[m] = NULL;
    near = policy_suggest(k->text, names);
    if (near != NULL)
        schema_error(w, k, "unknown field (did you mean \"%s\"?)", near);
    else
        schema_error(w, k, "unknown field");
}

static bool schema_listed(const char *const *list, const char *s)
{
    for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
        if (strcmp(list[i], s) == 0)
            return true;
    }
    return false;
}

/* Called when a map of the schema starts and ends, for defaults and cross-field rules. */
static void schema_map_begin(struct schema_walk *w, const struct schema_field *f)
{
    switch (f->slot) {
    case SLOT_SCHEDULE:
        w->p->has_schedule = true;
        w->p->schedule.jitter = POLICY_DEFAULT_JITTER;
        w->p->schedule.catch_up_window = POLICY_DEFAULT_CATCH_UP;
        break;
    case SLOT_RETENTION:
        w->p->has_retention = true;
        break;
    case SLOT_LIMITS:
        w->ionice_level = NULL;
        w->ionice_class = 0;
        break;
    default:
        break;
    }
}

static void schema_map_end(struct schema_walk *w, const struct schema_field *f,
                           const struct policy_node *map)
{
    if (f->slot != SLOT_LIMITS || !map->closed || w->ionice_level == NULL)
        return;
    if (w->ionice_class == 0 || w->ionice_class == 2) {
        size_t mark = schema_path_push_key(w, "ioniceLevel", 11);
        schema_error(w, w->ionice_level, "%s",
                     w->ionice_class == 0
                         ? "ioniceLevel needs ioniceClass: best-effort (the only class with "
                           "levels); add it or remove ioniceLevel"
                         : "ioniceLevel is only valid with ioniceClass: best-effort (idle has "
                           "no levels); remove it");
        schema_path_pop(w, mark);
    }
}

static void schema_walk_map(struct schema_walk *w, const struct schema_field *f,
                            const struct policy_node *map, const struct policy_node *key)
{
    const struct schema_field *fields = f->fields;
    bool seen[32] = {false};
    size_t *first = schema_check_keys(w, map);
    bool root = f == &schema_document;

    for (size_t i = 0; i < map->npairs; i++) {
        const struct policy_node *k = map->pairs[i].key, *v = map->pairs[i].value;
        const struct schema_field *field = NULL;
        size_t fi = 0, mark;

        if (k->kind != POLICY_NODE_SCALAR || first[i] != i)
            continue;
        for (fi = 0; fields[fi].name != NULL; fi++) {
            if (strlen(fields[fi].name) == k->len &&
                memcmp(fields[fi].name, k->text, k->len) == 0) {
                field = &fields[fi];
                break;
            }
        }
        if (field == NULL) {
            if (w->json && schema_listed(f->json_ignored, k->text))
                continue;
            mark = schema_path_push_key(w, k->text, k->len);
            schema_unknown_field(w, fields, k, root);
            schema_path_pop(w, mark);
            continue;
        }
        if (v == NULL)
            continue; /* a syntax error came before the value */
        if (v->kind == POLICY_NODE_SCALAR && v->style == POLICY_SCALAR_NULL)
            continue; /* JSON null: absent */
        seen[fi] = true;
        mark = schema_path_push_key(w, k->text, k->len);
        schema_walk_value(w, field, v, k);
        schema_path_pop(w, mark);
    }
    free(first);

    /* A map a syntax error cut short says nothing about what it lacks. */
    if (map->closed) {
        for (size_t fi = 0; fields[fi].name != NULL; fi++) {
            if (!fields[fi].required || seen[fi])
                continue;
            size_t mark = schema_path_push_key(w, fields[fi].name, strlen(fields[fi].name));
            const struct policy_node *at = key != NULL ? key : map;
            schema_error(w, at, "required field is missing: %s", fields[fi].missing);
            schema_path_pop(w, mark);
        }
    }
}

static void schema_walk_paths(struct schema_walk *w, const struct schema_field *f,
                              const struct policy_node *list)
{
    struct schema_text *texts;
    size_t *first;
    struct policy *p = w->p;

    if (list->nitems == 0 && list->closed) {
        schema_error(w, list, "at least one path is required, such as [/etc]");
        return;
    }
    if (f->max_items > 0 && list->nitems > f->max_items)
        schema_error(w, list,
                     "%zu paths, more than %zu: back up a common parent directory, or split "
                     "the paths over several policies",
                     list->nitems, f->max_items);
    texts = util_calloc(list->nitems > 0 ? list->nitems : 1, sizeof(*texts));
    for (size_t i = 0; i < list->nitems; i++) {
        const struct policy_node *n = list->items[i];
        struct util_err err = {0};
        size_t mark = schema_path_push_index(w, i);

        texts[i].index = i;
        if (n->kind == POLICY_NODE_BAD) {
            schema_path_pop(w, mark);
            continue;
        }
        if (!schema_string(w, n, "an absolute path")) {
            schema_path_pop(w, mark);
            continue;
        }
        if (policy_check_path(n->text, n->len, &err) != 0) {
            schema_error(w, n, "%s", err.msg);
            schema_path_pop(w, mark);
            continue;
        }
        schema_path_pop(w, mark);
        /* "/etc/" and "/etc" are the same directory. */
        texts[i].s = n->text;
        texts[i].len = n->len;
        while (texts[i].len > 1 && texts[i].s[texts[i].len - 1] == '/')
            texts[i].len--;
    }
    first = schema_first_equal(texts, list->nitems);
    for (size_t i = 0; i < list->nitems; i++) {
        if (first[i] == SIZE_MAX)
            continue;
        if (first[i] != i) {
            /* The first one's path, for the JSON form, which has no lines to point at. */
            struct util_buf fp;
            util_buf_init(&fp);
            util_buf_append(&fp, w->path.data, w->path.len);
            util_buf_printf(&fp, "[%zu]", first[i]);
            size_t mark = schema_path_push_index(w, i);
            schema_duplicate_error(w, list->items[i], "path", list->items[first[i]], fp.data);
            schema_path_pop(w, mark);
            util_buf_free(&fp);
            continue;
        }
        p->paths = util_realloc(p->paths, (p->npaths + 1) * sizeof(*p->paths));
        p->paths[p->npaths++] = util_strdup(list->items[i]->text);
    }
    free(first);
    free(texts);
}

static void schema_walk_labels(struct schema_walk *w, const struct schema_field *f,
                               const struct policy_node *map)
{
    size_t *first = schema_check_keys(w, map);
    size_t total = 0;
    bool labels = f->kind == SK_LABELS;

    if (f->max_items > 0 && map->npairs > f->max_items)
        schema_error(w, map,
                     "%zu labels, more than %zu: select the nodes by fewer labels (give them "
                     "one of their own, such as lodestore.io/backup=true)",
                     map->npairs, f->max_items);
    for (size_t i = 0; i < map->npairs; i++) {
        const struct policy_node *k = map->pairs[i].key, *v = map->pairs[i].value;
        struct util_err err = {0};
        size_t mark;
        bool ok = true;

        if (k->kind != POLICY_NODE_SCALAR || first[i] != i)
            continue;
        mark = schema_path_push_key(w, k->text, k->len);
        if (memchr(k->text, '\0', k->len) != NULL) {
            schema_error(w, k, "the key contains a NUL character");
            ok = false;
        } else if (policy_check_qualified_name(k->text, k->len, &err) != 0) {
            schema_error(w, k, "%s", err.msg);
            ok = false;
        }
        if (v == NULL || v->kind == POLICY_NODE_BAD) {
            schema_path_pop(w, mark);
            continue;
        }
        if (w->json && v->kind == POLICY_NODE_SCALAR && v->style == POLICY_SCALAR_NULL) {
            schema_path_pop(w, mark);
            continue;
        }
        if (!schema_string(w, v, labels ? "a label value" : "a string")) {
            ok = false;
        } else if (labels && policy_check_label_value(v->text, v->len, &err) != 0) {
            schema_error(w, v, "%s", err.msg);
            ok = false;
        }
        schema_path_pop(w, mark);
        if (ok) {
            total += k->len + v->len;
            schema_store_label(w, f->slot, k, v);
        }
    }
    free(first);
    /* Kubernetes refuses an object whose annotations add up to more than 256 KiB. */
    if (!labels && total > 256 * 1024)
        schema_error(w, map, "the annotations add up to %zu bytes, more than 262144 (256 KiB)",
                     total);
}

static void schema_walk_value(struct schema_walk *w, const struct schema_field *f,
                              const struct policy_node *n, const struct policy_node *key)
{
    struct util_err err = {0};
    int64_t v = 0;
    uint64_t rate = 0;

    if (n->kind == POLICY_NODE_BAD)
        return;
    switch (f->kind) {
    case SK_MAP:
        if (n->kind != POLICY_NODE_MAP) {
            schema_kind_error(w, n, "a map", NULL);
            return;
        }
        schema_map_begin(w, f);
        schema_walk_map(w, f, n, key);
        schema_map_end(w, f, n);
        return;
    case SK_PATHS:
        if (n->kind != POLICY_NODE_LIST) {
            const char *advice = NULL;
            if (n->kind == POLICY_NODE_SCALAR && !schema_is_null(n) &&
                (n->style == POLICY_SCALAR_PLAIN || n->style == POLICY_SCALAR_QUOTED))
                advice = ": write each path as a list item (\"- /etc\") or in brackets ([/etc])";
            schema_kind_error(w, n, "a list of absolute paths", advice);
            return;
        }
        schema_walk_paths(w, f, n);
        return;
    case SK_LABELS:
    case SK_ANNOTATIONS:
        if (n->kind != POLICY_NODE_MAP) {
            schema_kind_error(w, n, f->kind == SK_LABELS ? "a map of labels" : "a map of strings",
                              NULL);
            return;
        }
        schema_walk_labels(w, f, n);
        return;
    case SK_STRING:
        if (!schema_string(w, n, "a string"))
            return;
        if (!schema_length_ok(w, f, n, f->slot == SLOT_CRON ? "the cron expression" : "the value",
                              "the API server refuses longer ones (ranges and steps such as "
                              "0-30/5 are shorter than lists)"))
            return;
        if (f->check != NULL && f->check(w, n->text, n->len, &err) != 0) {
            schema_error(w, n, "%s", err.msg);
            return;
        }
        schema_store_string(w, f->slot, n);
        return;
    case SK_ENUM: {
        struct util_buf msg;
        size_t i;
        if (!schema_string(w, n, f->choices[1] == NULL ? "a string" : "a word"))
            return;
        for (i = 0; f->choices[i] != NULL; i++) {
            if (strcmp(f->choices[i], n->text) == 0)
                break;
        }
        if (f->slot == SLOT_IONICE_CLASS) {
            w->ionice_class = f->choices[i] == NULL ? -1 : (int)i + 1;
            if (f->choices[i] != NULL)
                w->p->limits.ionice_class = i == 0 ? POLICY_IONICE_BEST_EFFORT : POLICY_IONICE_IDLE;
        }
        if (f->choices[i] != NULL)
            return;
        util_buf_init(&msg);
        util_buf_puts(&msg, "must be ");
        for (i = 0; f->choices[i] != NULL; i++) {
            if (i > 0)
                util_buf_puts(&msg, f->choices[i + 1] == NULL ? " or " : ", ");
            util_buf_printf(&msg, "\"%s\"", f->choices[i]);
        }
        util_buf_puts(&msg, ", not ");
        policy_quote(&msg, n->text, n->len);
        if (f->choices[1] != NULL) {
            const char *near = policy_suggest(n->text, f->choices);
            if (near != NULL)
                util_buf_printf(&msg, " (did you mean \"%s\"?)", near);
        }
        schema_error(w, n, "%s", msg.data);
        util_buf_free(&msg);
        return;
    }
    case SK_INT:
        if (f->slot == SLOT_IONICE_LEVEL)
            w->ionice_level = n;
        if (schema_int(w, f, n, &v))
            schema_store_int(w, f->slot, v);
        return;
    case SK_DURATION:
        if (schema_duration(w, f, n, &v))
            schema_store_int(w, f->slot, v);
        return;
    case SK_RATE:
        if (schema_rate(w, f, n, &rate))
            w->p->limits.upload_rate = rate;
        return;
    }
}

void policy_walk(struct policy *out, const struct policy_node *root, bool json,
                 const struct tz_db *db, struct policy_diags *diags)
{
    struct schema_walk w;

    memset(&w, 0, sizeof(w));
    w.p = out;
    w.diags = diags;
    w.db = db;
    w.json = json;
    util_buf_init(&w.path);
    util_buf_puts(&w.path, "");

    out->limits.nice = -1;
    out->limits.ionice_level = -1;
    out->limits.max_runtime = POLICY_DEFAULT_MAX_RUNTIME;

    if (root->kind != POLICY_NODE_MAP) {
        if (schema_is_null(root) && !json)
            schema_error(&w, root,
                         "the document is empty: a BackupPolicy needs apiVersion, kind, "
                         "metadata and spec");
        else if (root->kind != POLICY_NODE_BAD)
            schema_kind_error(&w, root, "a map with apiVersion, kind, metadata and spec", NULL);
    } else {
        schema_walk_map(&w, &schema_document, root, NULL);
    }
    if (out->namespace == NULL)
        out->namespace = util_strdup("default");
    if (out->has_schedule && out->schedule.timezone == NULL)
        out->schedule.timezone = util_strdup("UTC");
    util_buf_free(&w.path);
}
