/*
 * lode validate FILE...: checks policy files and reports every error of each.
 *
 * Errors are the command's output, so they go to standard output, one line per
 * error in document order; a valid file prints "FILE: valid". Problems with the
 * command itself (a flag, an unreadable file, no tz database) go to standard
 * error. With --output json one document describes every file, including one
 * that could not be read (valid false, an error at line 0), so a script sees
 * what happened to each; the exit code is then 2.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void cmd_validate_usage(FILE *f)
{
    fprintf(f,
            "usage: lode validate [--output text|json] [--zoneinfo DIR] FILE...\n"
            "\n"
            "Checks BackupPolicy files (YAML) and reports every error of each file in one\n"
            "run, in document order, as FILE:LINE:COL: error: FIELD.PATH: message.\n"
            "A valid file prints \"FILE: valid\". FILE \"-\" reads standard input\n"
            "(shown as <stdin>).\n"
            "\n"
            "  --output json   {\"files\":[{\"file\":F,\"valid\":B,\"errors\":[{\"line\":L,\n"
            "                  \"column\":C,\"path\":P,\"message\":M}]}]}\n"
            "  --zoneinfo DIR  the tz database that time zones are checked against\n"
            "                  (default $LODE_ZONEINFO, else %s)\n"
            "\n"
            "Exit codes: 0 every file is valid, 1 a file is invalid, 2 usage error or a\n"
            "file or the tz database could not be read.\n",
            TZ_DEFAULT_DIR);
}

/* Validates one file; returns CLI_OK, CLI_INVALID or CLI_USAGE (unreadable). */
static int cmd_validate_file(const char *path, const struct tz_db *db, enum cli_output output,
                             json_t *files)
{
    const char *shown = strcmp(path, "-") == 0 ? "<stdin>" : path;
    struct util_err err = {0};
    struct policy_diags diags;
    struct policy p;
    char *data = NULL;
    size_t len = 0;
    int rc;

    policy_diags_init(&diags);
    if (util_read_file(path, &data, &len, &err) != 0) {
        fprintf(stderr, "lode validate: %s\n", err.msg);
        if (output == CLI_OUTPUT_JSON) {
            const char *msg = err.msg;
            /* util_read_file names the file first; the JSON "file" field already does. */
            if (strncmp(msg, path, strlen(path)) == 0 && strncmp(msg + strlen(path), ": ", 2) == 0)
                msg += strlen(path) + 2;
            policy_diags_add(&diags, 0, 0, "", "%s", msg);
            json_array_append_new(files, cli_validate_json_file(path, false, &diags));
        }
        rc = CLI_USAGE;
        goto free_diags;
    }
    if (policy_parse_yaml(&p, data, len, db, &diags) == 0) {
        policy_free(&p);
        rc = CLI_OK;
    } else {
        rc = CLI_INVALID;
    }
    if (output == CLI_OUTPUT_JSON)
        json_array_append_new(files, cli_validate_json_file(path, rc == CLI_OK, &diags));
    else if (rc == CLI_OK)
        printf("%s: valid\n", shown);
    else
        cli_print_diags(stdout, shown, &diags);
    free(data);
free_diags:
    policy_diags_free(&diags);
    return rc;
}

int cmd_validate(int argc, char **argv)
{
    enum cli_output output = CLI_OUTPUT_TEXT;
    const char *zoneinfo = NULL;
    struct tz_db *db = NULL;
    json_t *files = NULL;
    int c, status = CLI_OK;
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"zoneinfo", required_argument, NULL, 'z'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (cli_parse_output(optarg, &output) != 0)
                return CLI_USAGE;
            break;
        case 'z':
            zoneinfo = optarg;
            break;
        case 'h':
            cmd_validate_usage(stdout);
            return CLI_OK;
        default:
            return cli_usage_error("validate", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
    }
    if (optind == argc)
        return cli_usage_error("validate", "no file given (use - for standard input)");
    if (cli_open_tzdb(&db, zoneinfo) != CLI_OK)
        return CLI_USAGE;
    if (output == CLI_OUTPUT_JSON)
        files = json_array();
    for (int i = optind; i < argc; i++) {
        int rc = cmd_validate_file(argv[i], db, output, files);
        if (rc > status)
            status = rc;
    }
    if (output == CLI_OUTPUT_JSON) {
        json_t *doc = json_pack("{s:o}", "files", files);
        cli_print_json(doc);
        json_decref(doc);
    }
    tz_db_close(db);
    return status;
}
