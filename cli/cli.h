/*
 * The `lode` command: one function per subcommand, each in its own file
 * (cmd_<name>.c), and the helpers they share (common.c).
 *
 * Exit codes (SPEC section 8): 0 ok, 1 the input is invalid or a check failed,
 * 2 usage or I/O error. JSON output (--output json) is the stable contract for
 * scripts; human output may change between versions.
 */
#ifndef LODE_CLI_H
#define LODE_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "policy/policy.h"
#include "tz/tz.h"

#define CLI_OK      0
#define CLI_INVALID 1
#define CLI_USAGE   2

enum cli_output { CLI_OUTPUT_TEXT, CLI_OUTPUT_JSON };

int cmd_validate(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_forget(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_status(int argc, char **argv);

/* Parses the value of --output; prints a usage error and returns -1 when unknown. */
int cli_parse_output(const char *value, enum cli_output *out);

/* Prints "lode CMD: message" to stderr and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Opens the zoneinfo directory named by --zoneinfo (NULL: $LODE_ZONEINFO, else the
 * system one). Prints the error and returns CLI_USAGE on failure.
 */
int cli_open_tzdb(struct tz_db **db, const char *dir);

/*
 * Reads and validates a policy file for a command that needs a valid one; on an
 * invalid document prints every error as `lode validate` does and returns
 * CLI_INVALID; on an unreadable file returns CLI_USAGE.
 */
int cli_load_policy(const char *path, const struct tz_db *db, struct policy *out);

/* Prints diags in the `FILE:LINE:COL: error: PATH: message` form. */
void cli_print_diags(FILE *f, const char *file, const struct policy_diags *d);

/* Writes a JSON value to stdout, indented, keys in insertion order, then a newline. */
void cli_print_json(json_t *v);

/* "2026-03-29T01:00:00Z" as a new JSON string. */
json_t *cli_json_time(int64_t t);

#endif
