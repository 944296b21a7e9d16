/*
 * lode: the Lodestore command line. main() only dispatches; each subcommand lives
 * in cli/cmd_<name>.c and parses its own flags.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct cli_command cli_commands[] = {
    {"validate", cmd_validate,
     "check policy files, reporting every error with its line and column"},
    {"schedule", cmd_schedule, "show the next runs of a policy for a host, with DST notes"},
    {"forget", cmd_forget,
     "apply retention: show which snapshots are kept and why, delete the rest"},
    {"mark", cmd_mark, "mark a snapshot suspicious (kept until cleared) or clear the mark"},
    {"gc", cmd_gc, "delete the data no snapshot or running backup can reference"},
    {"apply", cmd_apply, "validate a policy file, then create or update it in the cluster"},
    {"status", cmd_status, "per host: last success, age, limit, overdue and next run"},
    {"ui", cmd_ui, "serve the web interface (policy editor, schedule, retention, fleet)"},
    {"init", cmd_init, "create a repository (config.json with a wrapped master key)"},
    {"backup", cmd_backup, "back up a policy's paths on one host into the repository"},
    {"snapshots", cmd_snapshots, "list a repository's snapshots, newest first"},
    {"restore", cmd_restore, "restore a snapshot (or some of its paths) into a directory"},
    {"ls", cmd_ls, "list a directory of a snapshot (mode, size, time), --recursive"},
    {"find", cmd_find, "which snapshots hold a path or a pattern, newest first"},
    {"diff", cmd_diff, "what was added, removed and changed between two snapshots"},
    {"dump", cmd_dump, "write one file of a snapshot to stdout"},
    {"check", cmd_check, "check a repository's structure, and with --read-data every pack"},
    {"version", cmd_version, "print the version and the tz database version"},
};

static void cli_main_usage(FILE *f)
{
    fprintf(f, "usage: lode COMMAND [ARGS...]\n\nCommands:\n");
    for (size_t i = 0; i < sizeof(cli_commands) / sizeof(cli_commands[0]); i++)
        fprintf(f, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
    fprintf(f, "\nRun 'lode COMMAND --help' for a command's flags.\n"
               "Exit codes: 0 ok, 1 invalid input or failed check, 2 usage or I/O error.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_main_usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        cli_main_usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(1, argv + 1);
    for (size_t i = 0; i < sizeof(cli_commands) / sizeof(cli_commands[0]); i++) {
        if (strcmp(argv[1], cli_commands[i].name) == 0)
            return cli_commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "lode: unknown command \"%s\"\n\n", argv[1]);
    cli_main_usage(stderr);
    return CLI_USAGE;
}
