#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "cli.h"

int cli_output_value(const char *value, enum cli_output *out)
{
    if (strcmp(value, "json") == 0) {
        *out = CLI_OUTPUT_JSON;
        return 0;
    }
    if (strcmp(value, "text") == 0) {
        *out = CLI_OUTPUT_TEXT;
        return 0;
    }
    return -1;
}

int cli_parse_output(const char *value, enum cli_output *out)
{
    if (cli_output_value(value, out) == 0)
        return 0;
    fprintf(stderr, "lode: --output must be \"text\" or \"json\", not \"%s\"\n", value);
    return -1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "lode %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'lode %s --help' for usage.\n", cmd);
    return CLI_USAGE;
}

int cli_open_tzdb(struct tz_db **db, const char *dir)
{
    struct util_err err = {0};
    if (tz_db_open(db, dir, &err) != 0) {
        fprintf(stderr, "lode: %s\n", err.msg);
        return CLI_USAGE;
    }
    return CLI_OK;
}

void cli_print_diags(FILE *f, const char *file, const struct policy_diags *d)
{
    for (size_t i = 0; i < d->n; i++) {
        const struct policy_diag *g = &d->v[i];
        fprintf(f, "%s:%d:%d: error: %s%s%s\n", file, g->line, g->column, g->path,
                g->path[0] ? ": " : "", g->message);
    }
}

int cli_load_policy(const char *path, const struct tz_db *db, struct policy *out)
{
    struct util_err err = {0};
    struct policy_diags diags;
    char *data = NULL;
    size_t len = 0;
    int rc;

    if (util_read_file(path, &data, &len, &err) != 0) {
        fprintf(stderr, "lode: %s\n", err.msg);
        return CLI_USAGE;
    }
    policy_diags_init(&diags);
    rc = policy_parse_yaml(out, data, len, db, &diags);
    if (rc != 0) {
        cli_print_diags(stderr, strcmp(path, "-") == 0 ? "<stdin>" : path, &diags);
        rc = CLI_INVALID;
    }
    policy_diags_free(&diags);
    free(data);
    return rc;
}

void cli_print_json(json_t *v)
{
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s == NULL) {
        fprintf(stderr, "lode: cannot encode JSON output\n");
        abort();
    }
    fputs(s, stdout);
    fputc('\n', stdout);
    free(s);
}

json_t *cli_json_time(int64_t t)
{
    char buf[UTIL_TIME_BUF];
    util_format_utc(t, buf, sizeof(buf));
    return json_string(buf);
}

int cli_exit_code(int rc)
{
    switch (rc) {
    case 0:
        return CLI_OK;
    case AGENT_EKEY:
    case AGENT_EDAMAGED:
    case AGENT_EABSENT:
        return CLI_INVALID;
    default:
        return CLI_USAGE;
    }
}
