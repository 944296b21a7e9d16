/*
 * lode apply -f FILE: validates a BackupPolicy as `lode validate` does and, only if
 * it is valid, creates or updates it in the cluster by server-side apply.
 *
 * Validation comes first and needs no cluster: an invalid file prints every error
 * as FILE:LINE:COL: error: PATH: message and exits 1 before the kubeconfig is even
 * read, so a CI job can run it without credentials and a person fixes all
 * mistakes in one round.
 *
 * The object sent is the file itself turned into JSON, not the validated struct
 * written back: the defaults the validator applies stay out of the object, so the
 * server's defaults and other field managers keep what is theirs, and a value is
 * sent as written ("NO" stays the string "NO"). A YAML scalar is a string except
 * in the few integer fields (the keep counts, nice and ioniceLevel), where the
 * validator has already checked it is a plain decimal in range. As a guard against
 * the two drifting apart, the JSON is run through the validator's JSON form too
 * (the one the controller uses) before anything is sent.
 *
 * Server-side apply with field manager "lodestore-cli" and force: lode owns the
 * fields of the file, as `kubectl apply --server-side --force-conflicts` would.
 * --dry-run=server sends the same request with dryRun=All, so the API server's
 * schema, admission and defaults judge the policy and nothing is stored.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "api/api.h"
#include "cli.h"
#include "kubeutil.h"

static void cmd_apply_usage(FILE *f)
{
    fprintf(f,
            "usage: lode apply -f FILE [--namespace NS] [--kubeconfig PATH] [--context NAME]\n"
            "                  [--dry-run=server] [--output text|json] [--zoneinfo DIR]\n"
            "\n"
            "Validates a BackupPolicy file as 'lode validate' does, then creates or updates\n"
            "it in the cluster (server-side apply, field manager %s).\n"
            "An invalid file prints FILE:LINE:COL: error: FIELD.PATH: message lines on\n"
            "standard error and nothing is sent.\n"
            "\n"
            "  -f, --filename FILE  the policy (YAML); \"-\" reads standard input\n"
            "  -n, --namespace NS   the namespace when the file names none (default: the\n"
            "                       kubeconfig context's, else \"default\"); a file that names\n"
            "                       another one is a usage error\n"
            "  --kubeconfig PATH    default $KUBECONFIG, else in-cluster, else ~/.kube/config\n"
            "  --context NAME       a kubeconfig context (default: the current one)\n"
            "  --dry-run=server     the API server checks and answers as if it applied the\n"
            "                       policy, and stores nothing (--dry-run=none: apply)\n"
            "  -o, --output json    {\"action\":\"created\"|\"configured\",\"dryRun\":false|true,\n"
            "                       \"object\":{...}}\n"
            "  --zoneinfo DIR       the tz database zones are checked against\n"
            "                       (default $LODE_ZONEINFO, else %s)\n"
            "\n"
            "Exit codes: 0 applied (or would be, with --dry-run=server), 1 the policy is invalid "
            "(here, or refused by the API\n"
            "server's schema with 422), 2 usage error, unreadable file or kubeconfig, or the\n"
            "API server could not be reached or refused for another reason.\n",
            CLI_KUBE_FIELD_MANAGER, TZ_DEFAULT_DIR);
}

/* ---- YAML to JSON ---- */

/* The fields whose plain scalars are integers; every other scalar is a string. */
static const char *const cmd_apply_int_paths[] = {
    "spec.retention.keepLast",
    "spec.retention.keepDaily",
    "spec.retention.keepWeekly",
    "spec.retention.keepMonthly",
    "spec.limits.nice",
    "spec.limits.ioniceLevel",
    NULL,
};

struct cmd_apply_conv {
    yaml_parser_t parser;
    struct util_buf path; /* dotted keys of the value being read; "[]" for list items */
    struct util_err *err;
};

static bool cmd_apply_int_path(const char *path)
{
    for (size_t i = 0; cmd_apply_int_paths[i] != NULL; i++)
        if (strcmp(path, cmd_apply_int_paths[i]) == 0)
            return true;
    return false;
}

static int cmd_apply_next(struct cmd_apply_conv *cv, yaml_event_t *e)
{
    if (!yaml_parser_parse(&cv->parser, e))
        return util_err_set(cv->err, UTIL_EINVAL, "YAML error at line %zu: %s",
                            cv->parser.problem_mark.line + 1,
                            cv->parser.problem ? cv->parser.problem : "unknown");
    return 0;
}

static int cmd_apply_node(struct cmd_apply_conv *cv, yaml_event_t *e, int depth, json_t **out);

static int cmd_apply_scalar(struct cmd_apply_conv *cv, const yaml_event_t *e, json_t **out)
{
    const char *text = (const char *)e->data.scalar.value;
    size_t len = e->data.scalar.length;
    const char *path = cv->path.data != NULL ? cv->path.data : "";

    if (cmd_apply_int_path(path)) {
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

static int cmd_apply_mapping(struct cmd_apply_conv *cv, int depth, json_t **out)
{
    json_t *obj = json_object();
    yaml_event_t e;
    int rc;

    for (;;) {
        if ((rc = cmd_apply_next(cv, &e)) != 0)
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
        if ((rc = cmd_apply_next(cv, &e)) == 0) {
            rc = cmd_apply_node(cv, &e, depth + 1, &value);
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

static int cmd_apply_sequence(struct cmd_apply_conv *cv, int depth, json_t **out)
{
    json_t *arr = json_array();
    size_t mark = cv->path.len;
    yaml_event_t e;
    int rc;

    util_buf_puts(&cv->path, "[]");
    for (;;) {
        if ((rc = cmd_apply_next(cv, &e)) != 0)
            break;
        if (e.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&e);
            break;
        }
        json_t *item = NULL;
        rc = cmd_apply_node(cv, &e, depth + 1, &item);
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
static int cmd_apply_node(struct cmd_apply_conv *cv, yaml_event_t *e, int depth, json_t **out)
{
    if (depth > 64)
        return util_err_set(cv->err, UTIL_EINVAL, "nested too deeply");
    switch (e->type) {
    case YAML_SCALAR_EVENT:
        return cmd_apply_scalar(cv, e, out);
    case YAML_MAPPING_START_EVENT:
        return cmd_apply_mapping(cv, depth, out);
    case YAML_SEQUENCE_START_EVENT:
        return cmd_apply_sequence(cv, depth, out);
    default:
        return util_err_set(cv->err, UTIL_EINVAL, "unexpected YAML event %d", (int)e->type);
    }
}

/*
 * The document as JSON. Called on a document the validator accepted, so anything
 * unexpected here (an alias, a second document) is a bug, reported as such.
 */
static int cmd_apply_to_json(const char *data, size_t len, json_t **out, struct util_err *err)
{
    struct cmd_apply_conv cv = {.err = err};
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
        if ((rc = cmd_apply_next(&cv, &e)) != 0)
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
                rc = cmd_apply_node(&cv, &e, 0, out);
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

struct cmd_apply_opts {
    const char *file;
    struct cli_kube_opts kube;
    const char *zoneinfo;
    enum cli_output output;
    bool dry_run; /* --dry-run=server */
};

int cli_apply_object(const char *data, size_t len, const struct tz_db *db, json_t **obj,
                     struct policy_diags *diags, struct util_err *err)
{
    struct policy p;
    int rc;

    *obj = NULL;
    if (policy_parse_yaml(&p, data, len, db, diags) != 0)
        return UTIL_EINVAL;
    policy_free(&p);
    if ((rc = cmd_apply_to_json(data, len, obj, err)) != 0) {
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

/* The object converted from the file, checked again in its JSON form. */
static int cmd_apply_build(const struct cmd_apply_opts *o, const struct tz_db *db, json_t **obj)
{
    const char *shown = strcmp(o->file, "-") == 0 ? "<stdin>" : o->file;
    struct util_err err = {0};
    struct policy_diags diags;
    char *data = NULL;
    size_t len = 0;
    int rc;

    if (util_read_file(o->file, &data, &len, &err) != 0) {
        fprintf(stderr, "lode apply: %s\n", err.msg);
        return CLI_USAGE;
    }
    policy_diags_init(&diags);
    rc = cli_apply_object(data, len, db, obj, &diags, &err);
    if (rc == UTIL_EINVAL) {
        cli_print_diags(stderr, shown, &diags);
        rc = CLI_INVALID;
    } else if (rc != 0) {
        fprintf(stderr, "lode apply: %s: %s\n", shown, err.msg);
        rc = CLI_USAGE;
    } else {
        rc = CLI_OK;
    }
    policy_diags_free(&diags);
    free(data);
    return rc;
}

/* Prints the answer to a successful apply. */
static void cmd_apply_print(const struct cmd_apply_opts *o, const char *name, long status,
                            json_t *body)
{
    const char *action = status == 201 ? "created" : "configured";
    if (o->output == CLI_OUTPUT_JSON) {
        json_t *copy = json_is_object(body) ? json_deep_copy(body) : json_object();
        json_object_del(json_object_get(copy, "metadata"), "managedFields");
        json_t *doc =
            json_pack("{s:s, s:b, s:o}", "action", action, "dryRun", o->dry_run, "object", copy);
        cli_print_json(doc);
        json_decref(doc);
    } else {
        /* kubectl's words, so a reader of both sees at once that nothing changed. */
        printf("backuppolicy.lodestore.io/%s %s%s\n", name, action,
               o->dry_run ? " (server dry run)" : "");
    }
}

/* Reports a refusal; returns the exit code. */
static int cmd_apply_refused(const struct cmd_apply_opts *o, const struct cli_kube *k,
                             const char *ns, const char *name, const struct cli_kube_reply *r)
{
    const char *shown = strcmp(o->file, "-") == 0 ? "<stdin>" : o->file;
    struct util_err err = {0};

    if (r->status == 422) {
        /*
         * The schema or an admission check said no: the input is invalid. The
         * Status lists each refused field in details.causes; one line each, in the
         * validate form without a position (the server does not know the file's).
         */
        const json_t *causes = json_object_get(json_object_get(r->body, "details"), "causes");
        size_t i;
        const json_t *c;
        fprintf(stderr, "%s: error: the API server refused the policy: %s\n", shown,
                r->message[0] ? r->message : "422 Unprocessable Entity");
        json_array_foreach(causes, i, c)
        {
            const char *field = json_string_value(json_object_get(c, "field"));
            const char *msg = json_string_value(json_object_get(c, "message"));
            if (field == NULL || msg == NULL || strcmp(field, "<nil>") == 0)
                continue;
            fprintf(stderr, "%s: error: %s: %s\n", shown, field, msg);
        }
        return CLI_INVALID;
    }
    cli_kube_reply_error(r, UTIL_EIO, &err);
    fprintf(stderr,
            "lode apply: cannot apply backuppolicy.lodestore.io/%s in namespace %s at %s: %s\n",
            name, ns, cli_kube_server(k), err.msg);
    if (r->status == 404 && strstr(r->message, "namespace") == NULL)
        fprintf(stderr, "lode apply: is the BackupPolicy CRD installed? "
                        "(kubectl apply --server-side -f crd/)\n");
    return CLI_USAGE;
}

static int cmd_apply_run(const struct cmd_apply_opts *o)
{
    struct util_err err = {0};
    struct tz_db *db = NULL;
    json_t *obj = NULL;
    struct cli_kube k;
    struct cli_kube_reply reply;
    int rc;

    if (cli_open_tzdb(&db, o->zoneinfo) != CLI_OK)
        return CLI_USAGE;
    rc = cmd_apply_build(o, db, &obj);
    tz_db_close(db);
    if (rc != CLI_OK)
        return rc;

    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *file_ns = json_string_value(json_object_get(meta, "namespace"));
    if (file_ns != NULL && o->kube.namespace != NULL && strcmp(file_ns, o->kube.namespace) != 0) {
        rc = cli_usage_error("apply", "the file names namespace \"%s\" but --namespace says \"%s\"",
                             file_ns, o->kube.namespace);
        json_decref(obj);
        return rc;
    }

    if (cli_kube_open(&k, o->kube.kubeconfig, o->kube.context, &err) != 0) {
        fprintf(stderr, "lode apply: %s\n", err.msg);
        rc = CLI_USAGE;
        goto close;
    }
    char *ns = util_strdup(file_ns != NULL        ? file_ns
                           : o->kube.namespace != NULL ? o->kube.namespace
                                                  : cli_kube_namespace(&k));
    json_object_set_new(meta, "namespace", json_string(ns));
    struct kube_resource res = api_in(&api_backuppolicies, ns);
    if (cli_kube_apply(&k, &res, name, obj, o->dry_run, &reply, &err) != 0) {
        fprintf(stderr, "lode apply: %s\n", err.msg);
        rc = CLI_USAGE;
    } else {
        if (reply.status == 200 || reply.status == 201) {
            cmd_apply_print(o, name, reply.status, reply.body);
            rc = CLI_OK;
        } else {
            rc = cmd_apply_refused(o, &k, ns, name, &reply);
        }
        cli_kube_reply_free(&reply);
    }
    free(ns);
close:
    cli_kube_close(&k);
    json_decref(obj);
    return rc;
}

int cmd_apply(int argc, char **argv)
{
    struct cmd_apply_opts o = {.output = CLI_OUTPUT_TEXT};
    int c, k;
    static const struct option opts[] = {
        {"filename", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"zoneinfo", required_argument, NULL, 'z'},
        {"dry-run", optional_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        KUBE_OPTIONS,
        {NULL, 0, NULL, 0},
    };

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "f:n:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (o.file != NULL)
                return cli_usage_error("apply", "give one -f FILE");
            o.file = optarg;
            break;
        case 'o':
            if (cli_parse_output(optarg, &o.output) != 0)
                return CLI_USAGE;
            break;
        case 'z':
            o.zoneinfo = optarg;
            break;
        case 'd':
            /*
             * kubectl's values. A bare --dry-run (kubectl's old spelling of "client")
             * is refused rather than guessed, and "client" has no meaning here: the
             * check without a cluster is lode validate.
             */
            if (optarg != NULL && strcmp(optarg, "server") == 0) {
                o.dry_run = true;
            } else if (optarg != NULL && strcmp(optarg, "none") == 0) {
                o.dry_run = false;
            } else if (optarg != NULL && strcmp(optarg, "client") == 0) {
                return cli_usage_error("apply", "--dry-run=client is not supported: 'lode "
                                                "validate' checks a file without a cluster, "
                                                "--dry-run=server asks the API server");
            } else if (optarg == NULL) {
                return cli_usage_error("apply", "--dry-run needs a value: --dry-run=server");
            } else {
                return cli_usage_error("apply", "--dry-run=%s: the value is server or none",
                                       optarg);
            }
            break;
        case 'h':
            cmd_apply_usage(stdout);
            return CLI_OK;
        default:
            if ((k = cli_kube_opt(&o.kube, "apply", c, optarg)) > 0)
                break;
            if (k < 0)
                return CLI_USAGE;
            return cli_usage_error("apply", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("apply", "unexpected argument \"%s\" (the file goes after -f)",
                               argv[optind]);
    if (o.file == NULL)
        return cli_usage_error("apply", "no file given: lode apply -f FILE (- for standard input)");
    return cmd_apply_run(&o);
}
