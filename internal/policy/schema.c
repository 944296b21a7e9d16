/*
 * The walk that checks a node tree against the schema of a BackupPolicy (the
 * table is schema_table.c, the checks of one value schema_values.c) and fills
 * struct policy.
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
#include <stdlib.h>
#include <string.h>

#include "schema_int.h"

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
    case SLOT_HOOK_NAME:
        schema_hook_string(w, slot, n);
        return;
    case SLOT_POD_PRIORITY:
    case SLOT_TOL_KEY:
    case SLOT_TOL_VALUE:
    case SLOT_REQ_CPU:
    case SLOT_REQ_MEMORY:
    case SLOT_LIM_CPU:
    case SLOT_LIM_MEMORY:
        schema_pod_string(w, slot, n);
        return;
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

void schema_walk_map(struct schema_walk *w, const struct schema_field *f,
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
            schema_duplicate_item(w, list, i, first[i], "path");
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
        if ((f->slot == SLOT_TOL_OPERATOR || f->slot == SLOT_TOL_EFFECT) && f->choices[i] != NULL)
            schema_pod_string(w, f->slot, n);
        if (f->slot == SLOT_HOOK_ON_ERROR && f->choices[i] != NULL && w->hook != NULL)
            w->hook->on_error_continue = i == 1;
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
        if (schema_int(w, f, n, &v)) {
            if (f->slot == SLOT_TOL_SECONDS && w->toleration != NULL) {
                w->toleration->has_seconds = true;
                w->toleration->seconds = v;
            }
            schema_store_int(w, f->slot, v);
        }
        return;
    case SK_QUANTITY:
        if (!schema_string(w, n, "a quantity such as 500m or 512Mi") ||
            !schema_length_ok(w, f, n, "the quantity", "write it in a larger unit"))
            return;
        if (schema_check_quantity(w, n->text, n->len, &err) != 0) {
            schema_error(w, n, "%s", err.msg);
            return;
        }
        schema_pod_string(w, f->slot, n);
        return;
    case SK_NAMES:
        if (n->kind != POLICY_NODE_LIST) {
            schema_kind_error(w, n, "a list of Secret names", NULL);
            return;
        }
        schema_walk_names(w, f, n);
        return;
    case SK_TOLERATIONS:
        if (n->kind != POLICY_NODE_LIST) {
            schema_kind_error(w, n, "a list of tolerations", NULL);
            return;
        }
        schema_walk_tolerations(w, f, n);
        return;
    case SK_DURATION:
        if (schema_duration(w, f, n, &v)) {
            if (f->slot == SLOT_HOOK_TIMEOUT && w->hook != NULL)
                w->hook->timeout = v;
            schema_store_int(w, f->slot, v);
        }
        return;
    case SK_RATE:
        if (schema_rate(w, f, n, &rate))
            w->p->limits.upload_rate = rate;
        return;
    case SK_BOOL: {
        bool b;
        if (!schema_bool(w, n, &b))
            return;
        if (f->slot == SLOT_SUSPEND)
            w->p->suspend = b;
        else if (f->slot == SLOT_EXCLUDE_CACHES)
            w->p->exclude.caches = b;
        return;
    }
    case SK_GLOBS:
        if (n->kind != POLICY_NODE_LIST) {
            schema_kind_error(w, n, "a list of patterns",
                              n->kind == POLICY_NODE_SCALAR && !schema_is_null(n)
                                  ? ": write each pattern as a list item (\"- *.tmp\") or in "
                                    "brackets ([\"*.tmp\"])"
                                  : NULL);
            return;
        }
        schema_walk_globs(w, f, n);
        return;
    case SK_HOOKS:
        if (n->kind != POLICY_NODE_LIST) {
            schema_kind_error(w, n, "a list of hooks", NULL);
            return;
        }
        schema_walk_hooks(w, f, n);
        return;
    case SK_ARGV:
        if (n->kind != POLICY_NODE_LIST) {
            schema_kind_error(w, n, "a list of strings (the command and its arguments)",
                              n->kind == POLICY_NODE_SCALAR && !schema_is_null(n)
                                  ? ": write [/bin/sh, -c, \"...\"] or one item a line"
                                  : NULL);
            return;
        }
        schema_walk_argv(w, f, n);
        return;
    case SK_SIZE: {
        uint64_t size;
        if (schema_size(w, f, n, &size))
            w->p->exclude.larger_than = size;
        return;
    }
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
    schema_excludes_end(&w);
    if (out->namespace == NULL)
        out->namespace = util_strdup("default");
    if (out->has_schedule && out->schedule.timezone == NULL)
        out->schedule.timezone = util_strdup("UTC");
    util_buf_free(&w.path);
}
