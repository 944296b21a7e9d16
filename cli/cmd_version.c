#include <getopt.h>
#include <string.h>

#include "cli.h"

#ifndef LODE_VERSION
#define LODE_VERSION "0.0.0-dev"
#endif

static void cmd_version_usage(FILE *f)
{
    fprintf(f, "usage: lode version [--output text|json] [--zoneinfo DIR]\n\n"
               "Prints the version of lode and the version of the tz database it reads\n"
               "time zones from (the controller reports the same in its status and metrics).\n");
}

int cmd_version(int argc, char **argv)
{
    enum cli_output output = CLI_OUTPUT_TEXT;
    const char *zoneinfo = NULL;
    struct tz_db *db = NULL;
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"zoneinfo", required_argument, NULL, 'z'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;

    optind = 1;
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
            cmd_version_usage(stdout);
            return CLI_OK;
        default:
            cmd_version_usage(stderr);
            return CLI_USAGE;
        }
    }
    if (optind != argc)
        return cli_usage_error("version", "unexpected argument \"%s\"", argv[optind]);
    if (cli_open_tzdb(&db, zoneinfo) != CLI_OK)
        return CLI_USAGE;
    if (output == CLI_OUTPUT_JSON) {
        json_t *o = json_pack("{s:s, s:s, s:s}", "version", LODE_VERSION, "tzdata",
                              tz_db_version(db), "zoneinfo", tz_db_dir(db));
        cli_print_json(o);
        json_decref(o);
    } else {
        printf("lode %s\ntz database %s (%s)\n", LODE_VERSION, tz_db_version(db), tz_db_dir(db));
    }
    tz_db_close(db);
    return CLI_OK;
}
