/*
 * lode diff A B: what was added, removed and changed from snapshot A to snapshot B
 * (docs/browsing.md). agent/browse.h compares their file lists chunk by chunk and
 * reads only the chunks that differ; no data is read.
 *
 * Exit codes: 0 compared (whether or not anything differs); 1 no such snapshot, a wrong
 * key, or damaged metadata; 2 usage or the repository cannot be read.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "cli.h"

static void cmd_diff_usage(FILE *f)
{
    fprintf(f,
            "usage: lode diff A B [--output text|json]\n"
            "                 [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
            "Shows what changed from snapshot A to snapshot B (of any hosts and policies),\n"
            "in path order: + added, - removed, M changed (with what changed: content,\n"
            "mode, owner, mtime, type, target, link, xattrs, inode), with sizes, then the\n"
            "counts. Only the parts of the two file lists that differ are read.\n\n"
            "  --output json     {\"from\",\"to\",\"added\",\"removed\",\"changed\",\n"
            "                    \"bytesAdded\",\"bytesRemoved\",\"changes\":[{\"path\",\n"
            "                    \"change\",\"what\",\"before\",\"after\"}]} (docs/browsing.md)\n"
            "%s\n"
            "Exit codes: 0 compared; 1 no such snapshot, a wrong key, or damaged metadata;\n"
            "2 usage, or the repository cannot be read.\n",
            cli_storage_usage);
}

struct cmd_diff_out {
    json_t *changes; /* --output json */
    uint64_t added, removed, changed, bytes_added, bytes_removed;
};

static int cmd_diff_cb(void *arg, const struct repo_file *a, const struct repo_file *b,
                       unsigned what)
{
    struct cmd_diff_out *o = arg;
    const char *change = a == NULL ? "added" : b == NULL ? "removed" : "changed";
    uint64_t before = a != NULL && a->type == REPO_FT_FILE ? a->size : 0;
    uint64_t after = b != NULL && b->type == REPO_FT_FILE ? b->size : 0;
    if (a == NULL)
        o->added++;
    else if (b == NULL)
        o->removed++;
    else
        o->changed++;
    if (after > before)
        o->bytes_added += after - before;
    else
        o->bytes_removed += before - after;
    if (o->changes != NULL) {
        json_t *c = json_object(), *w = json_array();
        json_object_set_new(c, "path", cli_json_string_lossy(a != NULL ? a->path : b->path));
        json_object_set_new(c, "change", json_string(change));
        for (unsigned i = 0; i < BROWSE_WHAT_N; i++)
            if (what & (1u << i))
                json_array_append_new(w, json_string(browse_what_name(1u << i)));
        json_object_set_new(c, "what", w);
        json_object_set_new(c, "before", a != NULL ? cli_browse_entry_json(a) : json_null());
        json_object_set_new(c, "after", b != NULL ? cli_browse_entry_json(b) : json_null());
        json_array_append_new(o->changes, c);
        return 0;
    }
    if (a == NULL)
        printf("+ %12" PRIu64 "  ", b->size);
    else if (b == NULL)
        printf("- %12" PRIu64 "  ", a->size);
    else if (a->size != b->size)
        printf("M %12" PRIu64 "  (was %" PRIu64 ") ", b->size, a->size);
    else
        printf("M %12" PRIu64 "  ", b->size);
    cli_print_path(stdout, a != NULL ? a->path : b->path);
    if (a != NULL && b != NULL) {
        const char *sep = "  (";
        for (unsigned i = 0; i < BROWSE_WHAT_N; i++) {
            if (what & (1u << i)) {
                printf("%s%s", sep, browse_what_name(1u << i));
                sep = ", ";
            }
        }
        putchar(')');
    }
    putchar('\n');
    return 0;
}

int cmd_diff(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         STORAGE_OPTIONS,
                                         {0, 0, 0, 0}};
    struct cli_storage_cmd sc = {.name = "diff", .usage = cmd_diff_usage};
    struct storage st;
    struct browse a, b;
    struct util_err e = {0};
    struct cmd_diff_out out = {0};
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
        }
    }
    if (argc - optind != 2)
        return cli_usage_error("diff", "give two snapshots, A and B");
    if ((rc = cli_browse_open("diff", &st, &sc.so, &a, argv[optind])) != CLI_OK)
        return rc;
    if ((rc = browse_open(&b, &st, argv[optind + 1], &e)) != 0) {
        fprintf(stderr, "lode diff: %s\n", e.msg);
        rc = rc == UTIL_EINVAL ? CLI_USAGE : cli_exit_code(rc);
        goto out_a;
    }
    if (sc.output == CLI_OUTPUT_JSON)
        out.changes = json_array();
    if ((rc = browse_diff(&a, &b, cmd_diff_cb, &out, &e)) != 0) {
        fprintf(stderr, "lode diff: %s\n", e.msg);
        rc = cli_exit_code(rc);
    } else if (out.changes != NULL) {
        json_t *j = json_object();
        json_object_set_new(j, "from", json_string(a.id));
        json_object_set_new(j, "to", json_string(b.id));
        json_object_set_new(j, "added", json_integer((json_int_t)out.added));
        json_object_set_new(j, "removed", json_integer((json_int_t)out.removed));
        json_object_set_new(j, "changed", json_integer((json_int_t)out.changed));
        json_object_set_new(j, "bytesAdded", json_integer((json_int_t)out.bytes_added));
        json_object_set_new(j, "bytesRemoved", json_integer((json_int_t)out.bytes_removed));
        json_object_set_new(j, "changes", out.changes);
        out.changes = NULL;
        cli_print_json(j);
        json_decref(j);
    } else {
        printf("%" PRIu64 " added, %" PRIu64 " removed, %" PRIu64 " changed; %" PRIu64
               " bytes added, %" PRIu64 " removed\n",
               out.added, out.removed, out.changed, out.bytes_added, out.bytes_removed);
    }
    json_decref(out.changes);
    browse_close(&b);
out_a:
    browse_close(&a);
    storage_close(&st);
    return rc;
}
