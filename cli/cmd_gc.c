/*
 * lode gc: deletes the packs, meta objects and run records that no snapshot and
 * no running or future backup can reference (docs/gc.md). The collection is
 * agent/gc_run.h's; this file parses the flags, prints the totals, writes the
 * termination log and gives the exit code: 0 ok, 1 a source skipped or the
 * unfinished uploads unlisted, 2 usage, storage or key error, or keys that could
 * not be deleted.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gc_run.h"
#include "cli.h"

static void cmd_gc_usage(FILE *f)
{
    fprintf(f,
            "usage: lode gc [--dry-run] [--output text|json] [--max-runtime D] [--repo URL]\n"
            "               [--cacert FILE] [--key-file FILE] [--termination-log FILE]\n\n"
            "Deletes the packs, meta objects and run records that no snapshot and no running\n"
            "or future backup can reference, without a lock: an object goes only when it is\n"
            "older than G - W, no listed manifest references it, and no parent named by a run\n"
            "record newer than G - W references it. G is the storage's time; W is the largest\n"
            "maxRuntime of the policies (--max-runtime, and the newest run record of each\n"
            "source) and of the live run records, plus one hour (docs/gc.md). Unfinished\n"
            "uploads of file lists begun before G - W are aborted.\n\n"
            "  --dry-run         list what would be deleted; delete nothing\n"
            "  --max-runtime D   the largest limits.maxRuntime of the repository's policies\n"
            "                    (the controller passes it); widens W, never narrows it\n"
            "  --output json     {\"packs\":{\"total\",\"deleted\",\"kept\"},\"bytesFreed\"}\n"
            "  --termination-log FILE\n"
            "                    also write that JSON to FILE, with \"error\" when gc failed\n"
            "                    (the controller's GC Job reads it back; docs/gc.md)\n"
            "%s\n"
            "Exit codes: 0 ok, 1 a source could not be collected (nothing of it was deleted),\n"
            "2 usage or I/O error.\n",
            cli_storage_usage);
}

/*
 * The outcome for the controller (docs/gc.md, "Run by the controller"): the --output json
 * object, and "error" (null when gc succeeded), at most 4096 bytes as a container's
 * termination message may hold. A file that cannot be written is reported, not fatal.
 */
static void cmd_gc_termlog(const char *path, const struct gc_ctx *g, const char *error)
{
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", error != NULL ? error : "");
    json_t *o =
        json_pack("{s:{s:I, s:I, s:I}, s:I, s:o}", "packs", "total", (json_int_t)g->t.packs_total,
                  "deleted", (json_int_t)g->t.packs_deleted, "kept", (json_int_t)g->t.packs_kept,
                  "bytesFreed", (json_int_t)g->t.bytes_freed, "error",
                  error != NULL ? cli_json_string_lossy(msg) : json_null());
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "lode gc: cannot write --termination-log %s: %s\n", path, strerror(errno));
    } else {
        fputs(s, f);
        fclose(f);
    }
    free(s);
}

int cmd_gc(int argc, char **argv)
{
    struct cli_storage_cmd sc = {.name = "gc", .usage = cmd_gc_usage};
    static const struct option opts[] = {
        {"dry-run", no_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'},
        {"max-runtime", required_argument, NULL, 'm'},
        {"termination-log", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        STORAGE_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct gc_ctx *g = util_calloc(1, sizeof(*g));
    struct util_err err = {0};
    const char *termlog = NULL;
    char failure[1024] = "";
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if ((rc = cli_storage_cmd_opt(&sc, c, optarg, argv)) != CLI_OPT_OWN) {
            if (rc == CLI_OPT_NEXT)
                continue;
            goto out;
        }
        switch (c) {
        case 'n':
            g->dry_run = true;
            break;
        case 'm':
            if (policy_parse_duration(optarg, &g->policy_mr, &err) != 0 || g->policy_mr < 1) {
                rc = cli_usage_error("gc", "--max-runtime \"%s\": %s", optarg,
                                     err.msg[0] ? err.msg : "must be at least 1s");
                goto out;
            }
            break;
        case 't':
            termlog = optarg;
            break;
        }
    }
    if (optind != argc) {
        rc = cli_usage_error("gc", "unexpected argument \"%s\"", argv[optind]);
        goto out;
    }
    g->text = sc.output == CLI_OUTPUT_TEXT;

    /* Nothing deleted, whatever the cause (a wrong key too): exit 2 (docs/commands.md). */
    if (gcrun_run(g, &sc.so, &err) != 0) {
        fprintf(stderr, "lode gc: %s\n", err.msg);
        snprintf(failure, sizeof(failure), "%s", err.msg);
        rc = CLI_USAGE;
        goto report;
    }
    if (sc.output == CLI_OUTPUT_JSON) {
        json_t *o =
            json_pack("{s:{s:I, s:I, s:I}, s:I}", "packs", "total", (json_int_t)g->t.packs_total,
                      "deleted", (json_int_t)g->t.packs_deleted, "kept",
                      (json_int_t)g->t.packs_kept, "bytesFreed", (json_int_t)g->t.bytes_freed);
        cli_print_json(o);
        json_decref(o);
    } else {
        printf("packs: %zu, %s %zu, kept %zu; %zu meta objects and %zu run records %s; %llu "
               "bytes %s\n",
               g->t.packs_total, g->dry_run ? "would delete" : "deleted", g->t.packs_deleted,
               g->t.packs_kept, g->t.meta_deleted, g->t.runs_deleted,
               g->dry_run ? "would go" : "deleted", (unsigned long long)g->t.bytes_freed,
               g->dry_run ? "would be freed" : "freed");
    }
    /* Not in the JSON, whose shape is a contract: on stderr there, when there are any. */
    if (g->t.uploads_total > 0)
        fprintf(g->text ? stdout : stderr,
                "%sunfinished uploads: %zu, %s %zu, kept %zu (begun after the cutoff)\n",
                g->text ? "" : "lode gc: ", g->t.uploads_total,
                g->dry_run ? "would abort" : "aborted", g->t.uploads_aborted, g->t.uploads_kept);
    if (g->t.failed > 0) {
        fprintf(stderr, "lode gc: %zu objects could not be deleted; run gc again\n", g->t.failed);
        snprintf(failure, sizeof(failure), "%zu objects could not be deleted; run gc again",
                 g->t.failed);
        rc = CLI_USAGE;
    } else if (g->t.uploads_unlisted && g->t.skipped == 0) {
        fprintf(stderr, "lode gc: the unfinished uploads could not be listed\n");
        snprintf(failure, sizeof(failure),
                 "the unfinished uploads could not be listed (none was aborted)");
        rc = CLI_INVALID;
    } else if (g->t.skipped > 0) {
        fprintf(stderr, "lode gc: %zu source%s skipped\n", g->t.skipped,
                g->t.skipped == 1 ? "" : "s");
        snprintf(failure, sizeof(failure), "%zu source%s skipped (nothing of %s was deleted)",
                 g->t.skipped, g->t.skipped == 1 ? "" : "s", g->t.skipped == 1 ? "it" : "them");
        rc = CLI_INVALID;
    } else {
        rc = CLI_OK;
    }
report:
    if (termlog != NULL)
        cmd_gc_termlog(termlog, g, failure[0] != '\0' ? failure : NULL);

out:
    gcrun_close(g);
    free(g);
    return rc;
}
