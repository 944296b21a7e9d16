/*
 * lode restore ID --target DIR [--include PATH]... [--overwrite]: one snapshot back
 * onto disk (docs/repository.md, "Restoring"). The restore is agent/restore.h's;
 * this file parses the flags, prints the engine's lines as "lode restore: ..." on
 * stderr and the summary on stdout.
 *
 * Exit codes: 0 everything restored; 1 the snapshot is missing or damaged (each
 * damaged object and each file not restored because of it is named on stderr, and
 * the rest is restored); 2 usage, the target or the repository cannot be used, or
 * writing failed.
 *
 * A Restore's Job adds --staged (restore_stage.c), --dry-run, --output json and
 * --termination-log: the outcome as one JSON object with a reason the controller puts
 * in the Restore's status (docs/restoring.md).
 */
#include <getopt.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "cli.h"

static void cmd_restore_usage(FILE *f)
{
    fprintf(f,
            "usage: lode restore ID --target DIR [--include PATH]... [--overwrite]\n"
            "                    [--setid] [--devices] [--system-xattrs]\n"
            "                    [--dry-run] [--staged] [--output text|json]\n"
            "                    [--termination-log FILE]\n"
            "                    [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
            "Restores snapshot ID (see lode snapshots) under DIR: each path lands where it\n"
            "was on the node under DIR (/etc/hosts -> DIR/etc/hosts), with its mode, times\n"
            "and xattrs, and its owner when run as root. Files are written without a name\n"
            "(or under a temporary one) and put in place when whole. DIR is created when\n"
            "missing and must be empty unless --overwrite.\n\n"
            "  --target DIR      where to restore (required)\n"
            "  --include PATH    restore only PATH (a directory: with everything under it);\n"
            "                    may be repeated\n"
            "  --overwrite       restore into a directory that is not empty, replacing\n"
            "                    files in the way\n"
            "  --setid           restore set-user-ID and set-group-ID bits (cleared unless\n"
            "                    given)\n"
            "  --devices         make device nodes (as root; not made unless given)\n"
            "  --system-xattrs   set security.* and trusted.* xattrs: file capabilities,\n"
            "                    SELinux labels (as root; not set unless given)\n"
            "                    What is withheld is counted; docs/repository.md, \"What a\n"
            "                    restore withholds\", says when to give these.\n"
            "  --dry-run         list what would be written, write nothing (DIR is only\n"
            "                    looked at)\n"
            "  --staged          restore into a hidden directory inside DIR and move its\n"
            "                    entries into place at the end; SIGTERM removes it (what\n"
            "                    a Restore's Job runs)\n"
            "  --output FORMAT   text (default) or json: the outcome as one object\n"
            "  --termination-log FILE also write that JSON, at most 4096 bytes, to FILE\n"
            "%s\n"
            "Exit codes: 0 restored; 1 no such snapshot or --include path, a wrong key, or\n"
            "damaged data (each damaged object and file named; the rest is restored);\n"
            "2 usage, a non-empty target without --overwrite, or an I/O error.\n",
            cli_storage_usage);
}

/* What the run found, for --output json and the termination log. */
struct cmd_restore_out {
    const char *target;
    bool dry_run, json;
    const char *reason; /* why it failed (docs/restoring.md), NULL when it did not */
    char message[1024]; /* the first problem said */
    json_t *paths;      /* a dry run's entries */
    uint64_t dirs, links, other;
};

static void cmd_restore_say_cb(const char *line, void *arg)
{
    struct cmd_restore_out *o = arg;
    fprintf(stderr, "lode restore: %s\n", line);
    if (o->message[0] == '\0' && strncmp(line, "note: ", 6) != 0)
        snprintf(o->message, sizeof(o->message), "%s", line);
}

static void cmd_restore_list_cb(const struct repo_file *f, void *arg)
{
    struct cmd_restore_out *o = arg;
    if (f->type == REPO_FT_DIR)
        o->dirs++;
    else if (f->type == REPO_FT_SYMLINK)
        o->links++;
    else if (f->type != REPO_FT_FILE)
        o->other++;
    if (o->json)
        json_array_append_new(o->paths, cli_json_string_lossy(f->path));
    else
        printf("would restore: %c %s\n", (char)f->type, f->path);
}

/* Sets the failure's reason and, when nothing was said yet, its message. */
static void cmd_restore_fail(struct cmd_restore_out *o, const char *reason, const char *msg)
{
    if (o->reason == NULL)
        o->reason = reason;
    if (msg != NULL && o->message[0] == '\0')
        snprintf(o->message, sizeof(o->message), "%s", msg);
}

/* The outcome as one object (docs/restoring.md); paths cut to max of them. */
static json_t *cmd_restore_json(const struct rx *x, const struct cmd_restore_out *o, size_t max)
{
    json_t *j = json_object();
    json_object_set_new(j, "snapshot", json_string(x->id));
    if (x->src.ns[0] != '\0') {
        char *src = util_asprintf("%s/%s/%s", x->src.ns, x->src.policy, x->src.host);
        json_object_set_new(j, "source", cli_json_string_lossy(src));
        free(src);
    }
    json_object_set_new(j, "target", cli_json_string_lossy(o->target));
    json_object_set_new(j, "dryRun", json_boolean(o->dry_run));
    json_object_set_new(j, "files",
                        json_integer((json_int_t)(o->dry_run ? x->want_files : x->nfiles_done)));
    json_object_set_new(j, "bytes",
                        json_integer((json_int_t)(o->dry_run ? x->want_bytes : x->bytes)));
    json_object_set_new(j, "directories",
                        json_integer((json_int_t)(o->dry_run ? o->dirs : x->ndirs)));
    json_object_set_new(j, "symlinks",
                        json_integer((json_int_t)(o->dry_run ? o->links : x->nlinks)));
    json_object_set_new(j, "other",
                        json_integer((json_int_t)(o->dry_run ? o->other : x->nspecial)));
    if (!o->dry_run) {
        json_object_set_new(j, "hardLinks", json_integer((json_int_t)x->nhardlinks_done));
        json_object_set_new(j, "notMade", json_integer((json_int_t)x->nskipped));
        json_object_set_new(j, "xattrsNotSet", json_integer((json_int_t)x->xattrs_skipped));
        json_object_set_new(j, "ownersRestored", json_boolean(x->as_root));
        json_object_set_new(j, "damaged", json_integer((json_int_t)x->damaged));
        json_object_set_new(j, "seconds", json_real(x->seconds));
    }
    if (o->paths != NULL) {
        size_t n = json_array_size(o->paths);
        json_t *p = json_array();
        for (size_t i = 0; i < n && i < max; i++)
            json_array_append(p, json_array_get(o->paths, i));
        json_object_set_new(j, "paths", p);
        json_object_set_new(j, "pathsNotShown", json_integer((json_int_t)(n > max ? n - max : 0)));
    }
    if (o->reason != NULL)
        json_object_set_new(j, "error",
                            json_pack("{s:s, s:o}", "reason", o->reason, "message",
                                      cli_json_string_lossy(o->message)));
    else
        json_object_set_new(j, "error", json_null());
    return j;
}

/* The termination log: the object at most 4096 bytes, dropping listed paths to fit. */
static void cmd_restore_termlog(const char *path, const struct rx *x,
                                const struct cmd_restore_out *o)
{
    size_t max = 64;
    char *s;
    for (;;) {
        json_t *j = cmd_restore_json(x, o, max);
        s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(j);
        if (strlen(s) <= 4000 || max == 0)
            break;
        free(s);
        max /= 2;
    }
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "lode restore: cannot write --termination-log %s: %s\n", path,
                strerror(errno));
    } else {
        fputs(s, f);
        fclose(f);
    }
    free(s);
}

static void cmd_restore_print(const struct rx *x, const char *target)
{
    if (x->dry_run) {
        printf("dry run of %s (%s/%s/%s) into %s: %" PRIu64 " files (%.1f MiB) would be "
               "restored, nothing was written\n",
               x->id, x->src.ns, x->src.policy, x->src.host, target, x->want_files,
               (double)x->want_bytes / 1048576.0);
        return;
    }
    printf("restored %s (%s/%s/%s) into %s: %" PRIu64 " of %" PRIu64 " files (%.1f MiB), %" PRIu64
           " directories, %" PRIu64 " symlinks, %" PRIu64 " hard links, %" PRIu64
           " other in %.1f s (%.1f MB/s, %" PRIu64
           " ranged GETs, %.1f MiB read, %.1f s of it flushing to disk)\n",
           x->id, x->src.ns, x->src.policy, x->src.host, target, x->nfiles_done, x->want_files,
           (double)x->bytes / 1048576.0, x->ndirs, x->nlinks, x->nhardlinks_done, x->nspecial,
           x->seconds, x->seconds > 0 ? (double)x->bytes / 1e6 / x->seconds : 0.0, x->gets,
           (double)x->fetched / 1048576.0, x->sync_s);
    if (x->nskipped > 0)
        printf("not made: %" PRIu64 " device nodes (%s)\n", x->nskipped,
               x->as_root ? "--devices makes them" : "only root can make them");
    if (x->setid_withheld > 0)
        printf("withheld: set-id bits of %" PRIu64 " entries (--setid restores them)\n",
               x->setid_withheld);
    if (x->xattrs_withheld > 0)
        printf("withheld: %" PRIu64 " security.* and trusted.* xattrs (--system-xattrs sets "
               "them)\n",
               x->xattrs_withheld);
    if (x->xattrs_skipped > 0)
        printf("not set: %" PRIu64 " xattrs (outside user.* without root, or unsupported here)\n",
               x->xattrs_skipped);
    if (!x->as_root)
        printf("owners were not restored (not running as root)\n");
}

int cmd_restore(int argc, char **argv)
{
    static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                         {"include", required_argument, NULL, 'i'},
                                         {"overwrite", no_argument, NULL, 'w'},
                                         {"setid", no_argument, NULL, 'S'},
                                         {"devices", no_argument, NULL, 'd'},
                                         {"system-xattrs", no_argument, NULL, 'x'},
                                         {"dry-run", no_argument, NULL, 'n'},
                                         {"staged", no_argument, NULL, 's'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"termination-log", required_argument, NULL, 'l'},
                                         {"help", no_argument, NULL, 'h'},
                                         STORAGE_OPTIONS,
                                         {0, 0, 0, 0}};
    struct storage_opts so = {0};
    struct storage st;
    struct util_err e = {0};
    struct rx x;
    struct rs_opts ro = {0};
    struct cli_stage stage = {.fd = -1};
    struct cmd_restore_out out = {0};
    const char *target = NULL, *termlog = NULL, *dir;
    enum cli_output output = CLI_OUTPUT_TEXT;
    bool overwrite = false, dry_run = false, staged = false;
    char **inc = NULL;
    size_t ninc = 0, capinc = 0;
    int c, rc;

    memset(&x, 0, sizeof(x));
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (cli_storage_opt(&so, c, optarg))
            continue;
        switch (c) {
        case 't':
            target = optarg;
            break;
        case 'i': {
            char *p = rx_include_norm(optarg);
            if (p == NULL) {
                rc = cli_usage_error("restore",
                                     "--include %s: give an absolute path as on the node, "
                                     "without . or .. parts",
                                     optarg);
                goto out;
            }
            inc = util_grow(inc, &capinc, ninc + 1, sizeof(*inc));
            inc[ninc++] = p;
            break;
        }
        case 'w':
            overwrite = ro.overwrite = true;
            break;
        case 'S':
            ro.setid = true;
            break;
        case 'd':
            ro.devices = true;
            break;
        case 'x':
            ro.system_xattrs = true;
            break;
        case 'n':
            dry_run = true;
            break;
        case 's':
            staged = true;
            break;
        case 'o':
            if (cli_parse_output(optarg, &output) != 0) {
                rc = cli_usage_error("restore", "--output %s: give text or json", optarg);
                goto out;
            }
            break;
        case 'l':
            termlog = optarg;
            break;
        case 'h':
            cmd_restore_usage(stdout);
            rc = CLI_OK;
            goto out;
        default:
            rc = cli_usage_error("restore", "unknown or incomplete option %s", argv[optind - 1]);
            goto out;
        }
    }
    if (optind != argc - 1) {
        rc = cli_usage_error("restore", optind >= argc ? "give the snapshot ID to restore"
                                                       : "give one snapshot ID");
        goto out;
    }
    if (target == NULL || target[0] == '\0') {
        rc = cli_usage_error("restore", "give --target DIR");
        goto out;
    }
    out.target = target;
    out.dry_run = dry_run;
    out.json = output == CLI_OUTPUT_JSON;
    out.paths = dry_run && (out.json || termlog != NULL) ? json_array() : NULL;
    snprintf(x.id, sizeof(x.id), "%s", argv[optind]);
    dir = target;
    /* The target first: a restore that would be refused costs no request. */
    if (dry_run) {
        if ((rc = cli_restore_target_check(target, overwrite, &e)) != 0) {
            fprintf(stderr, "lode restore: %s\n", e.msg);
            cmd_restore_fail(&out, rc == UTIL_EINVAL ? "TargetNotEmpty" : "TargetUnusable", e.msg);
            goto report;
        }
    } else if (staged) {
        if ((rc = cli_stage_prepare(&stage, target, overwrite, &e)) != 0) {
            fprintf(stderr, "lode restore: %s\n", e.msg);
            cmd_restore_fail(&out, rc == UTIL_EINVAL ? "TargetNotEmpty" : "TargetUnusable", e.msg);
            goto report;
        }
        int code;
        if (cli_stage_guard(&stage, &code) == 1) {
            rc = code; /* the parent: the child reported, the stage is gone */
            goto out;
        }
        dir = stage.dir;
    }
    if ((rc = storage_open_keyed(&st, &so, &e)) != 0) {
        fprintf(stderr, "lode restore: %s\n", e.msg);
        if (rc == AGENT_EKEY) {
            char *m = util_asprintf("wrong key: %s", e.msg);
            cmd_restore_fail(&out, "WrongKey", m);
            free(m);
        } else {
            cmd_restore_fail(&out, "RepositoryUnavailable", e.msg);
        }
        goto report;
    }
    x.st = &st;
    x.keys = &st.config.keys;
    x.say_cb = cmd_restore_say_cb;
    x.say_arg = &out;
    x.dry_run = dry_run;
    x.list_cb = cmd_restore_list_cb;
    if ((rc = rx_find(&x, argv[optind])) != 0) {
        cmd_restore_fail(&out, rc == AGENT_EABSENT ? "SnapshotNotFound" : "RepositoryUnavailable",
                         NULL);
    } else {
        rc = rx_restore(&x, dir, &ro, inc, ninc);
        if (rc == 0 && staged && !dry_run && (rc = cli_stage_commit(&stage, &e)) != 0) {
            fprintf(stderr, "lode restore: %s\n", e.msg);
            cmd_restore_fail(&out, "WriteFailed", e.msg);
        }
        if (rc == AGENT_EABSENT)
            cmd_restore_fail(&out, "PathNotInSnapshot", NULL);
        else if (rc == AGENT_EDAMAGED)
            cmd_restore_fail(&out, "Damaged", NULL);
        else if (rc == UTIL_EINVAL && !x.ran)
            cmd_restore_fail(&out, "TargetNotEmpty", NULL);
        else if (rc == UTIL_EIO)
            cmd_restore_fail(&out, "WriteFailed", NULL);
        else if (rc != 0)
            cmd_restore_fail(&out, "RepositoryUnavailable", NULL);
        if ((x.ran || (dry_run && rc == 0)) && !out.json) /* the summary, whatever came after
                                                             the target was opened */
            cmd_restore_print(&x, target);
    }
    free(x.files_key);
    free(x.chunks_key);
    rx_batch_free(&x);
    storage_close(&st);
report:
    if (out.json) {
        json_t *j = cmd_restore_json(&x, &out, SIZE_MAX);
        cli_print_json(j);
        json_decref(j);
    }
    if (termlog != NULL)
        cmd_restore_termlog(termlog, &x, &out);
    rc = cli_exit_code(rc);
out:
    cli_stage_close(&stage);
    json_decref(out.paths);
    for (size_t i = 0; i < ninc; i++)
        free(inc[i]);
    free(inc);
    return rc;
}
