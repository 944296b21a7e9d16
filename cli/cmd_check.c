/*
 * lode check [--read-data]: is the repository whole? (docs/repository.md,
 * "Checking"). The check is agent/check.h's; this file parses the flags and prints
 * the summary. Exit codes: 0 no damage; 1 damage found (or a wrong key); 2 usage,
 * or the repository could not be read.
 */
#include <getopt.h>
#include <stdio.h>

#include "agent/agent.h"
#include "cli.h"

static void cmd_check_usage(FILE *f)
{
    fprintf(f,
            "usage: lode check [--read-data] [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
            "Checks the repository's structure: config.json, every run record, every\n"
            "snapshot's manifest, file list and chunk set, and that every chunk a snapshot\n"
            "needs is in a pack's table. --read-data also reads every pack and authenticates\n"
            "every chunk in it. Each damaged object is named.\n\n"
            "  --read-data       read and authenticate all data (as much traffic as the\n"
            "                    repository's size)\n"
            "%s\n"
            "Exit codes: 0 no damage; 1 damage found or a wrong key; 2 usage or I/O error.\n",
            cli_storage_usage);
}

int cmd_check(int argc, char **argv)
{
    static const struct option opts[] = {{"read-data", no_argument, NULL, 'r'},
                                         {"help", no_argument, NULL, 'h'},
                                         STORAGE_OPTIONS,
                                         {0, 0, 0, 0}};
    struct cli_storage_cmd sc = {.name = "check", .usage = cmd_check_usage};
    struct storage st;
    struct util_err e = {0};
    struct ck_result r;
    bool read_data = false;
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if ((rc = cli_storage_cmd_opt(&sc, c, optarg, argv)) != CLI_OPT_OWN) {
            if (rc == CLI_OPT_NEXT)
                continue;
            return rc;
        }
        switch (c) {
        case 'r':
            read_data = true;
            break;
        }
    }
    if (optind != argc)
        return cli_usage_error("check", "unexpected argument %s", argv[optind]);
    if ((rc = storage_open_keyed(&st, &sc.so, &e)) != 0) {
        fprintf(stderr, "lode check: %s\n", e.msg);
        return cli_exit_code(rc);
    }
    rc = ck_run(&st, read_data, &r);
    if (rc == 0 || rc == AGENT_EDAMAGED) {
        printf("checked %s: %zu snapshots (%u whole), %zu packs%s, %u run records; %.1f MiB "
               "read%s\n",
               st.url, r.snapshots, r.whole, r.packs, read_data ? " read whole" : " (tables)",
               r.runs, (double)r.read_bytes / 1048576.0,
               read_data ? "" : " (--read-data reads all data)");
        if (r.damaged > 0)
            printf("%u damaged object(s) or reference(s): see above\n", r.damaged);
        else
            printf("no damage found\n");
    }
    storage_close(&st);
    return cli_exit_code(rc);
}
