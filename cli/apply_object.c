/*
 * apply_object: the object `lode apply` and `lode ui` send for a policy's YAML text
 * (cli.h, cli_apply_object): the YAML converted to JSON as written, with the
 * integers the schema names as integers, validated before and after.
 */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "api/api.h"
#include "cli.h"

/* ---- YAML to JSON ---- */

/* The fields whose plain scalars are integers; every other scalar is a string. */
static const char *const apply_object_int_paths[] = {
    "spec.retention.keepLast",
    "spec.retention.keepDaily",
    "spec.retention.keepWeekly",
    "spec.retention.keepMonthly",
    "spec.limits.nice",
    "spec.limits.ioniceLevel",
    NULL,
};

struct apply_object_conv {
    yaml_parser_t parser;
    struct util_buf path; /* dotted keys of the value being read; "[]" for list items */
    struct util_err *err;
};

static bool apply_object_int_path(const char *path)
{
    for (size_t i = 0; apply_object_int_paths[i] != NULL; i++)
        if (strcmp(path, apply_object_int_paths[i]) == 0)
            return true;
    return false;
}

static int apply_object_next(struct apply_object_conv *cv, yaml_event_t *e)
{
    if (!yaml_parser_parse(&cv->parser, e))
        return util_err_set(cv->err, UTIL_EINVAL, "YAML error at line %zu: %s",
                            cv->parser.problem_mark.line + 1,
                            cv->parser.problem ? cv->parser.problem : "unknown");
    return 0;
}

static int apply_object_node(struct apply_object_conv *cv, yaml_event_t *e, int depth,
                             json_t **out);

static int apply_object_scalar(struct apply_object_conv *cv, const yaml_event_t *e, json_t **out)
{
    const char *text = (const char *)e->data.scalar.value;
    size_t len = e->data.scalar.length;
    const char *path = cv->path.data != NULL ? cv->path.data : "";

    if (apply_object_int_path(path)) {
        uint64_t v;
        if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
            util_parse_u64(text, len, INT32_MAX, &v) != 0)
            return util_err_set(cv->err, UTIL_EINVAL, "%s: not a plain integer", path);
        *out = json_integer((json_int_t)v);
        return 0;
    }
    *out = json_stringn(text, len);
    if (*out == NULL)
        return util_err_set(cv->err, UTIL_EINVAL, "%s: the value is not valid UTF-8", path);
    return 0;
}

static int apply_object_mapping(struct apply_object_conv *cv, int depth, json_t **out)
{
    json_t *obj = json_object();
    yaml_event_t e;
    int rc;

    for (;;) {
        if ((rc = apply_object_next(cv, &e)) != 0)
            goto fail;
        if (e.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&e);
            *out = obj;
            return 0;
        }
        if (e.type != YAML_SCALAR_EVENT) {
            yaml_event_delete(&e);
            rc = util_err_set(cv->err, UTIL_EINVAL, "a key that is not a string");
            goto fail;
        }
        char *key = util_strndup((const char *)e.data.scalar.value, e.data.scalar.length);
        size_t mark = cv->path.len;
        yaml_event_delete(&e);
        util_buf_printf(&cv->path, "%s%s", mark ? "." : "", key);
        json_t *value = NULL;
        if ((rc = apply_object_next(cv, &e)) == 0) {
            rc = apply_object_node(cv, &e, depth + 1, &value);
            yaml_event_delete(&e);
        }
        cv->path.len = mark;
        cv->path.data[mark] = '\0';
        if (rc == 0)
            json_object_set_new(obj, key, value);
        free(key);
        if (rc != 0)
            goto fail;
    }
fail:
    json_decref(obj);
    return rc;
}

static int apply_object_sequence(struct apply_object_conv *cv, int depth, json_t **out)
{
    json_t *arr = json_array();
    size_t mark = cv->path.len;
    yaml_event_t e;
    int rc;

    util_buf_puts(&cv->path, "[]");
    for (;;) {
        if ((rc = apply_object_next(cv, &e)) != 0)
            break;
        if (e.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&e);
            break;
        }
        json_t *item = NULL;
        rc = apply_object_node(cv, &e, depth + 1, &item);
        yaml_event_delete(&e);
        if (rc != 0)
            break;
        json_array_append_new(arr, item);
    }
    cv->path.len = mark;
    cv->path.data[mark] = '\0';
    if (rc != 0) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

/* Converts the node that starts with event e (owned by the caller). */
static int apply_object_node(struct apply_object_conv *cv, yaml_event_t *e, int depth, json_t **out)
{
    if (depth > 64)
        return util_err_set(cv->err, UTIL_EINVAL, "nested too deeply");
    switch (e->type) {
    case YAML_SCALAR_EVENT:
        return apply_object_scalar(cv, e, out);
    case YAML_MAPPING_START_EVENT:
        return apply_object_mapping(cv, depth, out);
    case YAML_SEQUENCE_START_EVENT:
        return apply_object_sequence(cv, depth, out);
    default:
        return util_err_set(cv->err, UTIL_EINVAL, "unexpected YAML event %d", (int)e->type);
    }
}

/*
 * The document as JSON. Called on a document the validator accepted, so anything
 * unexpected here (an alias, a second document) is a bug, reported as such.
 */
static int apply_object_to_json(const char *data, size_t len, json_t **out, struct util_err *err)
{
    struct apply_object_conv cv = {.err = err};
    yaml_event_t e;
    int rc = 0;

    *out = NULL;
    if (!yaml_parser_initialize(&cv.parser))
        return util_err_set(err, UTIL_EIO, "cannot create a YAML parser");
    yaml_parser_set_input_string(&cv.parser, (const unsigned char *)data, len);
    util_buf_init(&cv.path);
    util_buf_puts(&cv.path, "");
    /* STREAM-START, DOCUMENT-START, the root, DOCUMENT-END, STREAM-END. */
    for (int step = 0; rc == 0; step++) {
        if ((rc = apply_object_next(&cv, &e)) != 0)
            break;
        yaml_event_type_t t = e.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&e);
            break;
        }
        if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT ||
            t == YAML_SCALAR_EVENT) {
            if (*out != NULL)
                rc = util_err_set(err, UTIL_EINVAL, "more than one document");
            else
                rc = apply_object_node(&cv, &e, 0, out);
        } else if (t != YAML_STREAM_START_EVENT && t != YAML_DOCUMENT_START_EVENT &&
                   t != YAML_DOCUMENT_END_EVENT) {
            rc = util_err_set(err, UTIL_EINVAL, "unexpected YAML event %d", (int)t);
        }
        yaml_event_delete(&e);
    }
    if (rc == 0 && !json_is_object(*out))
        rc = util_err_set(err, UTIL_EINVAL, "the document is not a map");
    if (rc != 0) {
        json_decref(*out);
        *out = NULL;
    }
    util_buf_free(&cv.path);
    yaml_parser_delete(&cv.parser);
    return rc;
}

/* ---- the command ---- */

int cli_apply_object(const char *data, size_t len, const struct tz_db *db, json_t **obj,
                     struct policy_diags *diags, struct util_err *err)
{
    struct policy p;
    int rc;

    *obj = NULL;
    if (policy_parse_yaml(&p, data, len, db, diags) != 0)
        return UTIL_EINVAL;
    policy_free(&p);
    if ((rc = apply_object_to_json(data, len, obj, err)) != 0) {
        char why[sizeof(err->msg)];
        snprintf(why, sizeof(why), "%s", err->msg);
        return util_err_set(err, UTIL_EIO, "internal error: cannot convert the valid document: %s",
                            why);
    }
    if (policy_parse_json(&p, *obj, db, diags) != 0) {
        json_decref(*obj);
        *obj = NULL;
        return util_err_set(err, UTIL_EIO,
                            "internal error: the document converted to JSON is not valid: "
                            "%s%s%s",
                            diags->n ? diags->v[0].path : "", diags->n ? ": " : "",
                            diags->n ? diags->v[0].message : "");
    }
    policy_free(&p);
    return 0;
}
