/*
 * lode ls SNAPSHOT [PATH] [--recursive]: the entries of a directory of a snapshot
 * (docs/browsing.md). agent/browse.h finds the directory with ranged reads of the
 * snapshot's file list; no data is read.
 *
 * Exit codes: 0 listed; 1 no such snapshot or path, a wrong key, or damaged metadata;
 * 2 usage or the repository cannot be read.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "cli.h"

static void cmd_ls_usage(FILE *f)
{
    fprintf(
        f,
        "usage: lode ls SNAPSHOT [PATH] [--recursive] [--output text|json]\n"
        "               [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
        "Lists the entries of directory PATH (default /) of snapshot SNAPSHOT (see lode\n"
        "snapshots), as the node had them: mode, owner, size, modification time (UTC),\n"
        "path, a symlink's target and a hard link's first path. PATH a file: that file.\n"
        "Only the metadata it needs is read (ranged GETs), never the data.\n\n"
        "  --recursive, -R   everything under PATH, not only its entries\n"
        "  --output json     {\"snapshot\",\"path\",\"entries\":[{\"path\",\"name\",\"type\",\n"
        "                    \"mode\",\"uid\",\"gid\",\"size\",\"mtime\",\"target\",\"link\"}]}\n"
        "%s\n"
        "Exit codes: 0 listed; 1 no such snapshot or path, a wrong key, or damaged\n"
        "metadata; 2 usage, or the repository cannot be read.\n",
        cli_storage_usage);
}

struct cmd_ls_out {
    json_t *entries; /* --output json */
};

static int cmd_ls_entry_cb(void *arg, const struct repo_file *f)
{
    struct cmd_ls_out *o = arg;
    if (o->entries != NULL)
        json_array_append_new(o->entries, cli_browse_entry_json(f));
    else
        cli_browse_entry_text(stdout, f);
    return 0;
}

int cmd_ls(int argc, char **argv)
{
    static const struct option opts[] = {{"recursive", no_argument, NULL, 'R'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         STORAGE_OPTIONS,
                                         {0, 0, 0, 0}};
    struct cli_storage_cmd sc = {.name = "ls", .usage = cmd_ls_usage};
    struct storage st;
    struct browse b;
    struct util_err e = {0};
    struct cmd_ls_out out = {0};
    bool recursive = false;
    char *path = NULL;
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hR", opts, NULL)) != -1) {
        if ((rc = cli_storage_cmd_opt(&sc, c, optarg, argv)) != CLI_OPT_OWN) {
            if (rc == CLI_OPT_NEXT)
                continue;
            return rc;
        }
        switch (c) {
        case 'R':
            recursive = true;
            break;
        }
    }
    if (optind >= argc || argc - optind > 2)
        return cli_usage_error("ls", optind >= argc ? "give the SNAPSHOT to list"
                                                    : "give one SNAPSHOT and at most one PATH");
    path = browse_path_norm(argc - optind == 2 ? argv[optind + 1] : "/");
    if (path == NULL)
        return cli_usage_error("ls", "%s: give an absolute path as on the node, without . or ..",
                               argv[optind + 1]);
    if ((rc = cli_browse_open("ls", &st, &sc.so, &b, argv[optind])) != CLI_OK)
        goto out;
    if (sc.output == CLI_OUTPUT_JSON)
        out.entries = json_array();
    rc = browse_ls(&b, path, recursive, cmd_ls_entry_cb, &out, &e);
    if (rc != 0) {
        fprintf(stderr, "lode ls: %s\n", e.msg);
    } else if (out.entries != NULL) {
        json_t *j = json_object();
        json_object_set_new(j, "snapshot", json_string(b.id));
        json_object_set_new(j, "path", cli_json_string_lossy(path));
        json_object_set_new(j, "entries", out.entries);
        out.entries = NULL;
        cli_print_json(j);
        json_decref(j);
    }
    rc = cli_exit_code(rc);
    json_decref(out.entries);
    browse_close(&b);
    storage_close(&st);
out:
    free(path);
    return rc;
}
