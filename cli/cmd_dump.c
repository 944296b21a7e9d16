/*
 * lode dump SNAPSHOT FILE: one regular file of a snapshot to stdout (docs/browsing.md).
 * agent/browse.h finds the file with ranged reads of the file list, reads the chunk
 * set, and fetches each of the file's chunks with a ranged GET, authenticated before a
 * byte of it is written.
 *
 * Exit codes: 0 written; 1 no such snapshot or file, FILE a directory or not a regular
 * file, a wrong key, or damaged data; 2 usage, the repository cannot be read, or stdout
 * cannot be written.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cli.h"

static void cmd_dump_usage(FILE *f)
{
    fprintf(f,
            "usage: lode dump SNAPSHOT FILE [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
            "Writes regular file FILE (an absolute path as on the node) of snapshot SNAPSHOT\n"
            "to stdout, each chunk checked before it is written. A symlink is not followed;\n"
            "a directory is refused (lode restore --include brings one back).\n"
            "%s\n"
            "Exit codes: 0 written; 1 no such snapshot or file, not a regular file, a wrong\n"
            "key, or damaged data (what was written before it stays written); 2 usage, the\n"
            "repository cannot be read, or stdout cannot be written.\n",
            cli_storage_usage);
}

#define CMD_DUMP_EWRITE 1 /* the callback's own stop: stdout failed */

static int cmd_dump_data_cb(void *arg, const uint8_t *data, size_t len)
{
    int *err = arg;
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            *err = errno;
            return CMD_DUMP_EWRITE;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int cmd_dump(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'}, STORAGE_OPTIONS, {0, 0, 0, 0}};
    struct cli_storage_cmd sc = {.name = "dump", .usage = cmd_dump_usage};
    struct storage st;
    struct browse b;
    struct util_err e = {0};
    char *path;
    int c, rc, werr = 0;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if ((rc = cli_storage_cmd_opt(&sc, c, optarg, argv)) != CLI_OPT_OWN) {
            if (rc == CLI_OPT_NEXT)
                continue;
            return rc;
        }
        return cli_usage_error("dump", "unknown or incomplete option %s", argv[optind - 1]);
    }
    if (argc - optind != 2)
        return cli_usage_error("dump", "give the SNAPSHOT and the FILE to write");
    if ((path = browse_path_norm(argv[optind + 1])) == NULL)
        return cli_usage_error("dump", "%s: give an absolute path as on the node, without . or ..",
                               argv[optind + 1]);
    if ((rc = cli_browse_open("dump", &st, &sc.so, &b, argv[optind])) != CLI_OK)
        goto out;
    rc = browse_dump(&b, path, cmd_dump_data_cb, &werr, &e);
    if (rc == CMD_DUMP_EWRITE) {
        fprintf(stderr, "lode dump: cannot write to stdout: %s\n", strerror(werr));
        rc = CLI_USAGE;
    } else if (rc != 0) {
        fprintf(stderr, "lode dump: %s\n", e.msg);
        rc = rc == BROWSE_EISDIR || rc == UTIL_EINVAL ? CLI_INVALID : cli_exit_code(rc);
    }
    browse_close(&b);
    storage_close(&st);
out:
    free(path);
    return rc;
}
