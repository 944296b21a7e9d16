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

struct cmd_apply_opts {
    const char *file;
    struct cli_kube_opts kube;
    const char *zoneinfo;
    enum cli_output output;
    bool dry_run; /* --dry-run=server */
};

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
    char *ns = util_strdup(file_ns != NULL             ? file_ns
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
