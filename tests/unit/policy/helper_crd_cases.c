/*
 * The documents of crd_cases.h: the CRD read with libyaml into jansson, its schema
 * walked, and a few documents made for each limit met on the way.
 */
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "crd_cases.h"
#include "policy/policy.h"

/* ---- the CRD, YAML to JSON ---- */

/* Plain scalars are typed as YAML 1.2's core schema types them; quoted ones are strings. */
static json_t *crd_scalar(const yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    size_t i = len > 0 && s[0] == '-' ? 1 : 0;
    bool digits = i < len;

    for (size_t k = i; k < len; k++)
        digits = digits && s[k] >= '0' && s[k] <= '9';
    if (plain && digits)
        return json_integer(strtoll(s, NULL, 10));
    if (plain && (strcmp(s, "true") == 0 || strcmp(s, "false") == 0))
        return json_boolean(s[0] == 't');
    if (plain && (len == 0 || strcmp(s, "null") == 0 || strcmp(s, "~") == 0))
        return json_null();
    return json_stringn(s, len);
}

/* The value that starts with ev (consumed by the caller); NULL on an error. */
static json_t *crd_value(yaml_parser_t *p, yaml_event_t *ev, int depth)
{
    yaml_event_t next;
    json_t *out = NULL, *v;

    if (depth > 64)
        return NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return crd_scalar(ev);
    case YAML_SEQUENCE_START_EVENT:
        out = json_array();
        for (;;) {
            if (!yaml_parser_parse(p, &next))
                goto fail;
            if (next.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&next);
                return out;
            }
            v = crd_value(p, &next, depth + 1);
            yaml_event_delete(&next);
            if (v == NULL)
                goto fail;
            json_array_append_new(out, v);
        }
    case YAML_MAPPING_START_EVENT:
        out = json_object();
        for (;;) {
            char *key;
            if (!yaml_parser_parse(p, &next))
                goto fail;
            if (next.type == YAML_MAPPING_END_EVENT) {
                yaml_event_delete(&next);
                return out;
            }
            if (next.type != YAML_SCALAR_EVENT) {
                yaml_event_delete(&next);
                goto fail;
            }
            key = util_strdup((const char *)next.data.scalar.value);
            yaml_event_delete(&next);
            if (!yaml_parser_parse(p, &next)) {
                free(key);
                goto fail;
            }
            v = crd_value(p, &next, depth + 1);
            yaml_event_delete(&next);
            if (v == NULL) {
                free(key);
                goto fail;
            }
            json_object_set_new(out, key, v);
            free(key);
        }
    default:
        return NULL;
    }
fail:
    json_decref(out);
    return NULL;
}

static json_t *crd_read(const char *path, struct util_err *err)
{
    yaml_parser_t p;
    yaml_event_t ev;
    json_t *root = NULL;
    char *data = NULL;
    size_t len = 0;
    int rc = util_read_file(path, &data, &len, err);

    if (rc != 0)
        return NULL;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    /* Stream and document starts come first; the document's map is the CRD. */
    while (yaml_parser_parse(&p, &ev)) {
        yaml_event_type_t type = ev.type;
        if (type == YAML_MAPPING_START_EVENT)
            root = crd_value(&p, &ev, 0);
        yaml_event_delete(&ev);
        if (type == YAML_MAPPING_START_EVENT || type == YAML_STREAM_END_EVENT)
            break;
    }
    if (root == NULL)
        util_err_set(err, UTIL_EINVAL, "%s: not a YAML map, or a YAML error at line %zu", path,
                     p.problem_mark.line + 1);
    yaml_parser_delete(&p);
    free(data);
    return root;
}

/* ---- what the generator knows per field ---- */

enum crd_kind {
    CK_NAME,
    CK_PATH,
    CK_LABEL_VALUE,
    CK_CRON,
    CK_ZONE,
    CK_DURATION,
    CK_RATE,
    CK_GLOB,
    CK_ARGV /* a command: its good value is the one item of a list */
};

struct crd_field {
    const char *field;
    enum crd_kind kind;
    const char *good;
    const char *bad[8]; /* each breaks the field's pattern */
};

static const struct crd_field crd_fields[] = {
    {"metadata.name", CK_NAME, "etc-and-home", {"Etc", "-etc", "etc-", "etc_home", "etc.home"}},
    {"spec.repository", CK_NAME, "main", {"Main", "-main", "main.", "a..b", "a_b", ".main"}},
    {"spec.paths[]", CK_PATH, "/etc", {"etc", "./etc", " /etc", "~/etc"}},
    {"spec.nodeSelector{}", CK_LABEL_VALUE, "db", {NULL}},
    {"spec.schedule.cron", CK_CRON, "30 2 * * *", {NULL}},
    {"spec.schedule.timezone",
     CK_ZONE,
     "Europe/Kyiv",
     {"/etc/localtime", "Europe//Kyiv", "Europe/Kyiv/", "Europe/Ky iv", "../UTC", "Europe/Kyiv.x"}},
    {"spec.schedule.jitter", CK_DURATION, "15m", {"1.5h", "1h30m", "-1m", "+1m", "15", "15M", "m"}},
    {"spec.schedule.catchUpWindow", CK_DURATION, "24h", {"1.5h", "1h30m", "-1h", "24", "24H"}},
    {"spec.retention.keepWithin", CK_DURATION, "30d", {"1.5d", "1d12h", "-30d", "30", "30D"}},
    {"spec.limits.maxRuntime", CK_DURATION, "12h", {"1.5h", "12h30m", "-12h", "12", " 12h"}},
    {"spec.alerts.maxAge", CK_DURATION, "36h", {"1.5d", "1d12h", "-36h", "36", "36h "}},
    {"spec.exclude.patterns[]", CK_GLOB, "*.tmp", {NULL}},
    {"spec.pod.priorityClassName", CK_NAME, "backup-low", {"Backup", "-low", "low-", "a_b"}},
    {"spec.pod.imagePullSecrets[]", CK_NAME, "regcred", {"Reg", "-reg", "reg-", "a_b"}},
    {"spec.pod.tolerations[].value", CK_LABEL_VALUE, "db", {NULL}},
    {"spec.pod.resources.requests.cpu", CK_RATE, "100m", {"1.5.5", "-1", "m", "1 m", "1x"}},
    {"spec.pod.resources.requests.memory", CK_RATE, "128Mi", {"128MB", "Mi", "1 Mi", ".5Gi"}},
    {"spec.pod.resources.limits.cpu", CK_RATE, "100m", {"1.5.5", "-1", "m", "1 m", "1x"}},
    {"spec.pod.resources.limits.memory", CK_RATE, "128Mi", {"128MB", "Mi", "1 Mi", ".5Gi"}},
    {"spec.hooks.before[].name", CK_NAME, "dump", {"Dump", "-dump", "dump-", "a_b", "a.b"}},
    {"spec.hooks.after[].name", CK_NAME, "dump", {"Dump", "-dump", "dump-", "a_b", "a.b"}},
    {"spec.hooks.before[].command", CK_ARGV, "/bin/true", {NULL}},
    {"spec.hooks.after[].command", CK_ARGV, "/bin/true", {NULL}},
    {"spec.hooks.before[].command[]", CK_LABEL_VALUE, "/bin/true", {NULL}},
    {"spec.hooks.after[].command[]", CK_LABEL_VALUE, "/bin/true", {NULL}},
    {"spec.hooks.before[].timeout", CK_DURATION, "5m", {"1.5m", "1m30s", "-1m", "5", "5M"}},
    {"spec.hooks.after[].timeout", CK_DURATION, "5m", {"1.5m", "1m30s", "-1m", "5", "5M"}},
    /* A size is written like a rate without /s: the same leading-zero lengths. */
    {"spec.exclude.largerThan", CK_RATE, "512MiB", {"512MB", "1.5GiB", "-1KiB", "512mib", "512"}},
    {"spec.limits.uploadRate",
     CK_RATE,
     "50MiB/s",
     {"50MB/s", "50MiB", "1.5MiB/s", "-1KiB/s", "50mib/s", "50 MiB/s", "50Mbit/s", "/s"}},
};

static const struct crd_field *crd_field_find(const char *field)
{
    for (size_t i = 0; i < sizeof(crd_fields) / sizeof(crd_fields[0]); i++) {
        if (strcmp(crd_fields[i].field, field) == 0)
            return &crd_fields[i];
    }
    return NULL;
}

/* A valid value of exactly n characters, or NULL when the field has none. */
static char *crd_sized(const struct crd_field *f, size_t n)
{
    struct util_buf b;
    size_t digits = 0, glen = strlen(f->good);

    util_buf_init(&b);
    util_buf_puts(&b, "");
    switch (f->kind) {
    case CK_NAME:
        if (n == 0)
            goto none;
        for (size_t i = 0; i < n; i++)
            util_buf_puts(&b, "a");
        break;
    case CK_PATH:
        if (n == 0)
            goto none;
        util_buf_puts(&b, "/");
        for (size_t i = 1; i < n; i++)
            util_buf_puts(&b, "a");
        break;
    case CK_LABEL_VALUE:
        for (size_t i = 0; i < n; i++)
            util_buf_puts(&b, "v");
        break;
    case CK_ARGV:
        goto none;
    case CK_GLOB: /* an unanchored name: it can match under any path */
        if (n == 0)
            goto none;
        for (size_t i = 0; i < n; i++)
            util_buf_puts(&b, "g");
        break;
    case CK_CRON: /* "0 0 * * *" with the first gap widened */
        if (n < 9)
            goto none;
        util_buf_puts(&b, "0");
        for (size_t i = 0; i < n - 8; i++)
            util_buf_puts(&b, " ");
        util_buf_puts(&b, "0 * * *");
        break;
    case CK_ZONE: /* components of at most 99 letters */
        if (n == 0)
            goto none;
        for (size_t i = 0; i < n; i++)
            util_buf_puts(&b, i % 100 == 99 && i + 1 < n ? "/" : "Z");
        break;
    case CK_DURATION:
    case CK_RATE: /* the good value with leading zeros */
        while (digits < glen && f->good[digits] >= '0' && f->good[digits] <= '9')
            digits++;
        if (n < glen)
            goto none;
        for (size_t i = 0; i < n - glen; i++)
            util_buf_puts(&b, "0");
        util_buf_puts(&b, f->good);
        break;
    }
    return util_buf_steal(&b);
none:
    util_buf_free(&b);
    return NULL;
}

/* ---- bookkeeping ---- */

struct crd_gen {
    struct crd_cases *c;
    json_t *fill; /* dotted map path -> {key: value} the map needs (its required fields) */
};

/* Where a value goes: the keys from the root, and how the value is wrapped there. */
enum crd_wrap { CW_NONE, CW_ITEM, CW_PROP };

struct crd_loc {
    const char *keys[8];
    size_t nkeys;
    /* keys[item_key] holds a list of one map, in which keys[item_key + 1 ...] are (the
     * fields of a list of maps, such as spec.hooks.before[].command); 0 for none. */
    size_t item_key;
    enum crd_wrap wrap;
    const char *field; /* dotted, with [] or {} for the wrap */
};

static void crd_add_str(char ***v, size_t *n, size_t *cap, char *s)
{
    *v = util_grow(*v, cap, *n + 1, sizeof(**v));
    (*v)[(*n)++] = s;
}

static void crd_unknown(struct crd_gen *g, const char *field, const char *keyword)
{
    crd_add_str(&g->c->unknown, &g->c->nunknown, &g->c->unknown_cap,
                util_asprintf("%s: %s", field, keyword));
}

static void crd_problem(struct crd_gen *g, char *msg)
{
    crd_add_str(&g->c->problems, &g->c->nproblems, &g->c->problems_cap, msg);
}

static void crd_limit_add(struct crd_gen *g, const char *field, const char *keyword,
                          const json_t *value)
{
    struct crd_cases *c = g->c;
    c->limits = util_grow(c->limits, &c->limits_cap, c->nlimits + 1, sizeof(*c->limits));
    c->limits[c->nlimits].field = util_strdup(field);
    c->limits[c->nlimits].keyword = util_strdup(keyword);
    c->limits[c->nlimits].value = json_is_string(value)
                                      ? util_strdup(json_string_value(value))
                                      : json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
    c->nlimits++;
}

static json_t *crd_base(void)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[s]}}", "apiVersion", "lodestore.io/v1alpha1",
                     "kind", "BackupPolicy", "metadata", "name", "crd-case", "spec", "repository",
                     "main", "paths", "/etc");
}

/* The map at keys[0..n) of doc, made (with the fields it requires) where missing. */
static json_t *crd_map_at(struct crd_gen *g, json_t *doc, const char *const *keys, size_t n,
                          size_t item_key)
{
    json_t *m = doc;
    struct util_buf path;

    util_buf_init(&path);
    util_buf_puts(&path, "");
    for (size_t i = 0; i < n; i++) {
        json_t *next = json_object_get(m, keys[i]);
        if (path.len > 0)
            util_buf_puts(&path, ".");
        util_buf_puts(&path, keys[i]);
        if (item_key > 0 && i == item_key) {
            /* A list of one map, made with the fields the items require. */
            util_buf_puts(&path, "[]");
            if (!json_is_array(next) || json_array_size(next) != 1) {
                json_t *item = json_object();
                json_object_update(item, json_object_get(g->fill, path.data));
                next = json_pack("[o]", item);
                json_object_set_new(m, keys[i], next);
            }
            m = json_array_get(next, 0);
            continue;
        }
        if (!json_is_object(next)) {
            next = json_object();
            json_object_update(next, json_object_get(g->fill, path.data));
            json_object_set_new(m, keys[i], next);
        }
        m = next;
    }
    util_buf_free(&path);
    return m;
}

/* A document with value (stolen; NULL: the field removed) at loc, and its verdict. */
static void crd_case_at(struct crd_gen *g, const struct crd_loc *loc, json_t *value, bool valid,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void crd_case_at(struct crd_gen *g, const struct crd_loc *loc, json_t *value, bool valid,
                        const char *fmt, ...)
{
    struct crd_cases *c = g->c;
    json_t *doc = crd_base();
    json_t *parent = crd_map_at(g, doc, loc->keys, loc->nkeys - 1, loc->item_key);
    const char *key = loc->keys[loc->nkeys - 1];
    struct util_buf what;
    va_list ap;

    if (value == NULL)
        json_object_del(parent, key);
    else if (loc->wrap == CW_ITEM)
        json_object_set_new(parent, key, json_pack("[o]", value));
    else if (loc->wrap == CW_PROP)
        json_object_set_new(parent, key, json_pack("{s:o}", "role", value));
    else
        json_object_set_new(parent, key, value);
    /* A toleration needs a key (or operator Exists), and tolerationSeconds effect:
     * NoExecute: rules of the validator's own, kept out of the cases of other limits. */
    if (strncmp(loc->field, "spec.pod.tolerations[].", 23) == 0 && value != NULL) {
        if (strcmp(key, "key") != 0)
            json_object_set_new(parent, "key", json_string("k"));
        if (strcmp(key, "tolerationSeconds") == 0)
            json_object_set_new(parent, "effect", json_string("NoExecute"));
    }
    /* ioniceLevel is valid only beside ioniceClass: best-effort (a rule of its own). */
    if (strcmp(loc->field, "spec.limits.ioniceLevel") == 0)
        json_object_set_new(parent, "ioniceClass", json_string("best-effort"));

    util_buf_init(&what);
    util_buf_printf(&what, "%s: ", loc->field);
    va_start(ap, fmt);
    util_buf_vprintf(&what, fmt, ap);
    va_end(ap);
    c->v = util_grow(c->v, &c->cap, c->n + 1, sizeof(*c->v));
    c->v[c->n].what = util_buf_steal(&what);
    c->v[c->n].field = util_strdup(loc->field);
    c->v[c->n].valid = valid;
    c->v[c->n].doc = doc;
    c->n++;
}

/* A short form of a long value for a case's name. */
static char *crd_show(const char *s)
{
    size_t n = strlen(s);
    if (n <= 24)
        return util_asprintf("\"%s\"", s);
    return util_asprintf("\"%.12s...\" (%zu bytes)", s, n);
}

static void crd_case_str(struct crd_gen *g, const struct crd_loc *loc, const char *value,
                         bool valid, const char *why)
{
    char *shown = crd_show(value);
    crd_case_at(g, loc, json_string(value), valid, "%s %s", why, shown);
    free(shown);
}

/* ---- the limits ---- */

static void crd_items(struct crd_gen *g, const struct crd_loc *loc, const char *keyword,
                      size_t count, bool valid)
{
    json_t *v = loc->wrap == CW_NONE && strcmp(keyword, "maxProperties") == 0 ? json_object()
                                                                              : json_array();
    for (size_t i = 0; i < count; i++) {
        char item[32];
        if (json_is_object(v)) {
            snprintf(item, sizeof(item), "k%zu", i);
            json_object_set_new(v, item, json_string("v"));
        } else {
            /* Paths are absolute; exclude patterns unanchored, so each can match. */
            snprintf(item, sizeof(item), strstr(loc->field, "exclude") ? "p%zu" : "/p%zu", i);
            /* A list of hooks holds maps, each with its command. */
            if (strstr(loc->field, "hooks") != NULL && strstr(loc->field, "command") == NULL)
                json_array_append_new(v, json_pack("{s:[s]}", "command", "/bin/true"));
            else if (strstr(loc->field, "tolerations") != NULL)
                json_array_append_new(v, json_pack("{s:s}", "operator", "Exists"));
            else if (strstr(loc->field, "imagePullSecrets") != NULL)
                json_array_append_new(v, json_sprintf("p%zu", i));
            else
                json_array_append_new(v, json_string(item));
        }
    }
    crd_case_at(g, loc, v, valid, "%s: %zu", keyword, count);
}

static void crd_length(struct crd_gen *g, const struct crd_loc *loc, const struct crd_field *f,
                       const char *keyword, size_t n, bool valid)
{
    char *s = crd_sized(f, n);
    if (s == NULL) {
        if (valid)
            return; /* no valid value of this length exists: the bound is tested from outside */
        /* Past a bound: any string of that length; the field's kind does not matter. */
        s = util_calloc(n + 1, 1);
        memset(s, f->kind == CK_PATH ? '/' : 'a', n);
    }
    crd_case_at(g, loc, json_string(s), valid, "%s: %zu characters", keyword, n);
    free(s);
}

static void crd_pattern(struct crd_gen *g, const struct crd_loc *loc, const struct crd_field *f,
                        const char *pattern)
{
    regex_t re;
    size_t nbad = 0;

    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0) {
        crd_problem(g, util_asprintf("%s: the pattern %s is not a POSIX ERE", loc->field, pattern));
        return;
    }
    if (regexec(&re, f->good, 0, NULL, 0) != 0)
        crd_problem(g, util_asprintf("%s: the good example \"%s\" does not match %s", loc->field,
                                     f->good, pattern));
    crd_case_str(g, loc, f->good, true, "pattern: matches");
    for (size_t i = 0; i < sizeof(f->bad) / sizeof(f->bad[0]) && f->bad[i] != NULL; i++) {
        if (regexec(&re, f->bad[i], 0, NULL, 0) == 0)
            crd_problem(g, util_asprintf("%s: the bad example \"%s\" matches %s", loc->field,
                                         f->bad[i], pattern));
        crd_case_str(g, loc, f->bad[i], false, "pattern: does not match");
        nbad++;
    }
    if (nbad == 0)
        crd_problem(g, util_asprintf("%s: no example breaks the pattern %s", loc->field, pattern));
    regfree(&re);
}

/* The largest of s, m, h, d, w, y that divides seconds (s for 0). */
static void crd_big_unit(int64_t seconds, int64_t *count, const char **unit)
{
    static const struct {
        const char *name;
        int64_t factor;
    } units[] = {{"y", 31536000}, {"w", 604800}, {"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (seconds != 0 && seconds % units[i].factor == 0) {
            *count = seconds / units[i].factor;
            *unit = units[i].name;
            return;
        }
    }
    *count = seconds;
    *unit = "s";
}

static void crd_duration_case(struct crd_gen *g, const struct crd_loc *loc, int64_t count,
                              const char *unit, bool valid, const char *why)
{
    char s[48];
    snprintf(s, sizeof(s), "%" PRId64 "%s", count, unit);
    crd_case_str(g, loc, s, valid, why);
}

/* "X must be between A and B" or "X must be at least A", on a duration. */
static bool crd_duration_rule(struct crd_gen *g, const struct crd_loc *loc, const char *message)
{
    const char *p = strstr(message, " must be ");
    char lo_text[32] = "", hi_text[32] = "";
    int64_t lo, hi = -1, count;
    const char *unit;

    if (p == NULL)
        return false;
    p += strlen(" must be ");
    if (sscanf(p, "between %31s and %31s", lo_text, hi_text) != 2 &&
        sscanf(p, "at least %31s", lo_text) != 1)
        return false;
    if (policy_parse_duration(lo_text, &lo, NULL) != 0 ||
        (hi_text[0] != '\0' && policy_parse_duration(hi_text, &hi, NULL) != 0))
        return false;
    if (lo > 0)
        crd_duration_case(g, loc, lo - 1, "s", false, "rule: below the least");
    crd_duration_case(g, loc, lo, "s", true, "rule: the least");
    crd_big_unit(lo, &count, &unit);
    if (strcmp(unit, "s") != 0)
        crd_duration_case(g, loc, count, unit, true, "rule: the least");
    if (hi < 0) {
        /* No most: the largest value a duration can spell fits the rule's arithmetic. */
        crd_case_str(g, loc, "99999999999y", true, "rule: the longest number, in years");
        return true;
    }
    crd_duration_case(g, loc, hi, "s", true, "rule: the most");
    crd_duration_case(g, loc, hi + 1, "s", false, "rule: above the most");
    crd_big_unit(hi, &count, &unit);
    crd_duration_case(g, loc, count, unit, true, "rule: the most");
    crd_duration_case(g, loc, count + 1, unit, false, "rule: above the most");
    crd_case_str(g, loc, "99999999999y", false, "rule: the longest number, in years");
    return true;
}

/* "X must be at least A", on a rate. */
static bool crd_rate_rule(struct crd_gen *g, const struct crd_loc *loc, const char *message)
{
    const char *p = strstr(message, " must be at least ");
    uint64_t lo;
    char s[48];

    if (p == NULL || policy_parse_rate(p + strlen(" must be at least "), &lo, NULL) != 0 || lo == 0)
        return false;
    snprintf(s, sizeof(s), "%" PRIu64 "B/s", lo);
    crd_case_str(g, loc, s, true, "rule: the least");
    snprintf(s, sizeof(s), "%" PRIu64 "B/s", lo - 1);
    crd_case_str(g, loc, s, false, "rule: below the least");
    if (lo % 1024 == 0) {
        snprintf(s, sizeof(s), "%" PRIu64 "KiB/s", lo / 1024);
        crd_case_str(g, loc, s, true, "rule: the least");
    }
    crd_case_str(g, loc, "0KiB/s", false, "rule: nothing");
    crd_case_str(g, loc, "0MiB/s", false, "rule: nothing");
    crd_case_str(g, loc, "0GiB/s", false, "rule: nothing");
    crd_case_str(g, loc, "999999999GiB/s", true, "rule: the longest number, in GiB");
    crd_case_str(g, loc, "99999999999B/s", true, "rule: the longest number, in bytes");
    return true;
}

static bool crd_path_rule(struct crd_gen *g, const struct crd_loc *loc, const char *message)
{
    unsigned max = 0;
    const char *p = strstr(message, "at most ");

    if (strcmp(message, "a path must not contain \"..\"") == 0) {
        crd_case_str(g, loc, "/a/../b", false, "rule:");
        crd_case_str(g, loc, "/..", false, "rule:");
        crd_case_str(g, loc, "/a/..", false, "rule:");
        crd_case_str(g, loc, "/a/..b", true, "rule:");
        crd_case_str(g, loc, "/...", true, "rule:");
        crd_case_str(g, loc, "/a../b", true, "rule:");
        return true;
    }
    if (p != NULL && sscanf(p, "at most %u bytes", &max) == 1 && max > 2 && max % 2 == 1) {
        /* "/" and two-byte letters: max bytes in about max/2 characters, then one byte more. */
        struct util_buf b;
        util_buf_init(&b);
        util_buf_puts(&b, "/");
        for (unsigned i = 0; i < (max - 1) / 2; i++)
            util_buf_puts(&b, "\xc3\xa9");
        crd_case_str(g, loc, b.data, true, "rule: the most bytes");
        util_buf_puts(&b, "a");
        crd_case_str(g, loc, b.data, false, "rule: one byte more");
        util_buf_free(&b);
        return true;
    }
    return false;
}

static bool crd_rule(struct crd_gen *g, const struct crd_loc *loc, const char *message)
{
    const struct crd_field *f = crd_field_find(loc->field);

    if (f != NULL && f->kind == CK_DURATION)
        return crd_duration_rule(g, loc, message);
    if (f != NULL && f->kind == CK_RATE)
        return crd_rate_rule(g, loc, message);
    if (f != NULL && f->kind == CK_PATH)
        return crd_path_rule(g, loc, message);
    if (f != NULL && f->kind == CK_ZONE && strncmp(message, "right/ and posix/", 17) == 0) {
        crd_case_str(g, loc, "right/UTC", false, "rule:");
        crd_case_str(g, loc, "posix/Europe/Kyiv", false, "rule:");
        crd_case_str(g, loc, "rightish/Zone", true, "rule:");
        crd_case_str(g, loc, "Etc/posix", true, "rule:");
        return true;
    }
    if (strcmp(loc->field, "spec.limits") == 0 &&
        strcmp(message, "ioniceLevel is only valid with ioniceClass best-effort") == 0) {
        crd_case_at(g, loc, json_pack("{s:i}", "ioniceLevel", 4), false, "rule: level alone");
        crd_case_at(g, loc, json_pack("{s:s, s:i}", "ioniceClass", "idle", "ioniceLevel", 4), false,
                    "rule: level with idle");
        crd_case_at(g, loc, json_pack("{s:s, s:i}", "ioniceClass", "best-effort", "ioniceLevel", 4),
                    true, "rule: level with best-effort");
        crd_case_at(g, loc, json_pack("{s:s}", "ioniceClass", "idle"), true, "rule: idle alone");
        crd_case_at(g, loc, json_object(), true, "rule: neither");
        return true;
    }
    return false;
}

/* ---- the walk ---- */

static void crd_walk(struct crd_gen *g, const json_t *s, const struct crd_loc *loc);

static void crd_child(struct crd_gen *g, const json_t *s, const struct crd_loc *loc,
                      const char *key, enum crd_wrap wrap)
{
    struct crd_loc child = *loc;
    char *field;

    if (loc->wrap == CW_ITEM && loc->item_key == 0 && wrap == CW_NONE &&
        loc->nkeys + 1 <= sizeof(loc->keys) / sizeof(loc->keys[0])) {
        /* A field of the maps in a list (one level of them). */
        child.item_key = loc->nkeys - 1;
        child.wrap = CW_NONE;
        child.keys[child.nkeys++] = key;
        field = util_asprintf("%s.%s", loc->field, key);
        child.field = field;
        crd_walk(g, s, &child);
        free(field);
        return;
    }
    if (loc->wrap != CW_NONE || loc->nkeys + 1 > sizeof(loc->keys) / sizeof(loc->keys[0])) {
        crd_unknown(g, loc->field, "a schema nested inside items or additionalProperties");
        return;
    }
    if (wrap == CW_NONE) {
        field = loc->nkeys == 0 ? util_strdup(key) : util_asprintf("%s.%s", loc->field, key);
        child.keys[child.nkeys++] = key;
    } else {
        field = util_asprintf("%s%s", loc->field, wrap == CW_ITEM ? "[]" : "{}");
    }
    child.wrap = wrap;
    child.field = field;
    crd_walk(g, s, &child);
    free(field);
}

static void crd_walk(struct crd_gen *g, const json_t *s, const struct crd_loc *loc)
{
    const struct crd_field *f = crd_field_find(loc->field);
    const char *key;
    json_t *v;
    bool is_int = json_is_string(json_object_get(s, "type")) &&
                  strcmp(json_string_value(json_object_get(s, "type")), "integer") == 0;

    json_object_foreach((json_t *)s, key, v)
    {
        if (strcmp(key, "type") == 0 || strcmp(key, "description") == 0)
            continue;
        if (strcmp(key, "properties") == 0 || strcmp(key, "items") == 0 ||
            strcmp(key, "additionalProperties") == 0 || strcmp(key, "required") == 0)
            continue; /* below, once this node's own limits are done */
        crd_limit_add(g, loc->field, key, v);
        if (strcmp(key, "default") == 0)
            continue; /* not a limit: the tests compare it with the validator's default */
        if (strcmp(key, "minimum") == 0 || strcmp(key, "maximum") == 0) {
            json_int_t b = json_integer_value(v);
            bool min = key[1] == 'i';
            if (!is_int || !json_is_integer(v)) {
                crd_unknown(g, loc->field, key);
                continue;
            }
            crd_case_at(g, loc, json_integer(b), true, "%s: %" JSON_INTEGER_FORMAT, key, b);
            crd_case_at(g, loc, json_integer(min ? b - 1 : b + 1), false,
                        "%s: %" JSON_INTEGER_FORMAT, key, min ? b - 1 : b + 1);
        } else if (strcmp(key, "minItems") == 0 || strcmp(key, "maxItems") == 0 ||
                   strcmp(key, "maxProperties") == 0) {
            size_t b = (size_t)json_integer_value(v);
            bool min = key[1] == 'i';
            if (!min || b > 0)
                crd_items(g, loc, key, b, true);
            if (!min || b > 0)
                crd_items(g, loc, key, min ? b - 1 : b + 1, false);
        } else if (strcmp(key, "x-kubernetes-list-type") == 0 &&
                   strcmp(json_string_value(v), "set") == 0) {
            crd_case_at(g, loc, json_pack("[s, s]", "/etc", "/etc"), false, "set: twice /etc");
            crd_case_at(g, loc, json_pack("[s, s]", "/etc", "/home"), true, "set: /etc, /home");
        } else if ((strcmp(key, "minLength") == 0 || strcmp(key, "maxLength") == 0) && f != NULL) {
            size_t b = (size_t)json_integer_value(v);
            bool min = key[1] == 'i';
            crd_length(g, loc, f, key, b, true);
            if (!min || b > 0)
                crd_length(g, loc, f, key, min ? b - 1 : b + 1, false);
        } else if (strcmp(key, "pattern") == 0 && f != NULL) {
            crd_pattern(g, loc, f, json_string_value(v));
        } else if (strcmp(key, "enum") == 0) {
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e)
            {
                crd_case_str(g, loc, json_string_value(e), true, "enum:");
            }
            crd_case_str(g, loc, "realtime", false, "enum: not listed");
        } else if (strcmp(key, "x-kubernetes-validations") == 0) {
            size_t i;
            json_t *r;
            json_array_foreach(v, i, r)
            {
                const char *msg = json_string_value(json_object_get(r, "message"));
                if (msg == NULL || !crd_rule(g, loc, msg))
                    crd_unknown(g, loc->field, msg ? msg : "a rule without a message");
            }
        } else {
            crd_unknown(g, loc->field, key);
        }
    }

    v = json_object_get(s, "required");
    if (v != NULL) {
        size_t i;
        json_t *r;
        json_t *fill = json_object();
        json_array_foreach(v, i, r)
        {
            const char *name = json_string_value(r);
            char *field =
                loc->nkeys == 0 ? util_strdup(name) : util_asprintf("%s.%s", loc->field, name);
            const struct crd_field *rf = crd_field_find(field);
            struct crd_loc child = *loc;
            child.keys[child.nkeys++] = name;
            child.field = field;
            crd_limit_add(g, loc->field, "required", r);
            /* The base document has spec, repository and paths; others are filled here. */
            if (rf != NULL)
                json_object_set_new(fill, name,
                                    rf->kind == CK_ARGV ? json_pack("[s]", rf->good)
                                                        : json_string(rf->good));
            crd_case_at(g, &child, NULL, false, "required: missing");
            free(field);
        }
        if (loc->nkeys > 0)
            json_object_set(g->fill, loc->field, fill);
        json_decref(fill);
    }
    v = json_object_get(s, "properties");
    if (v != NULL) {
        json_t *p;
        json_object_foreach(v, key, p)
        {
            /* status is the controller's; apiVersion and kind are the API server's. */
            if (loc->nkeys == 0 && (strcmp(key, "status") == 0 || strcmp(key, "apiVersion") == 0 ||
                                    strcmp(key, "kind") == 0))
                continue;
            crd_child(g, p, loc, key, CW_NONE);
        }
    }
    if ((v = json_object_get(s, "items")) != NULL)
        crd_child(g, v, loc, "", CW_ITEM);
    if ((v = json_object_get(s, "additionalProperties")) != NULL && json_is_object(v))
        crd_child(g, v, loc, "", CW_PROP);
}

/* ---- the API ---- */

static const json_t *crd_schema(const json_t *crd)
{
    const json_t *versions = json_object_get(json_object_get(crd, "spec"), "versions");
    const json_t *v = json_array_get(versions, 0);
    return json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
}

int crd_cases_load(struct crd_cases *c, const char *crd_path, struct util_err *err)
{
    struct crd_gen g = {c, NULL};
    struct crd_loc root = {.nkeys = 0, .wrap = CW_NONE, .field = ""};
    const json_t *schema;

    memset(c, 0, sizeof(*c));
    c->root = crd_read(crd_path, err);
    if (c->root == NULL)
        return UTIL_EINVAL;
    schema = crd_schema(c->root);
    if (!json_is_object(schema)) {
        crd_cases_free(c);
        return util_err_set(err, UTIL_EINVAL, "%s: no spec.versions[0].schema.openAPIV3Schema",
                            crd_path);
    }
    g.fill = json_object();
    crd_walk(&g, schema, &root);
    json_decref(g.fill);
    return 0;
}

void crd_cases_free(struct crd_cases *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].what);
        free(c->v[i].field);
        json_decref(c->v[i].doc);
    }
    free(c->v);
    for (size_t i = 0; i < c->nlimits; i++) {
        free(c->limits[i].field);
        free(c->limits[i].keyword);
        free(c->limits[i].value);
    }
    free(c->limits);
    for (size_t i = 0; i < c->nunknown; i++)
        free(c->unknown[i]);
    free(c->unknown);
    for (size_t i = 0; i < c->nproblems; i++)
        free(c->problems[i]);
    free(c->problems);
    json_decref(c->root);
    memset(c, 0, sizeof(*c));
}

const struct crd_limit *crd_cases_limit(const struct crd_cases *c, const char *field,
                                        const char *keyword)
{
    for (size_t i = 0; i < c->nlimits; i++) {
        if (strcmp(c->limits[i].field, field) == 0 && strcmp(c->limits[i].keyword, keyword) == 0)
            return &c->limits[i];
    }
    return NULL;
}

char *crd_cases_default_path(void)
{
    const char *root = getenv("LODE_ROOT");
    if (root != NULL && root[0] != '\0')
        return util_asprintf("%s/crd/backuppolicies.yaml", root);
    return util_strdup("crd/backuppolicies.yaml");
}
