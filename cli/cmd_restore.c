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
 */
#include <getopt.h>
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
            "%s\n"
            "Exit codes: 0 restored; 1 no such snapshot or --include path, a wrong key, or\n"
            "damaged data (each damaged object and file named; the rest is restored);\n"
            "2 usage, a non-empty target without --overwrite, or an I/O error.\n",
            cli_storage_usage);
}

static void cmd_restore_say_cb(const char *line, void *arg)
{
    fprintf(stderr, "lode restore: %s\n", line);
}

static void cmd_restore_print(const struct rx *x, const char *target)
{
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
                                         {"setid", no_argument, NULL, 's'},
                                         {"devices", no_argument, NULL, 'd'},
                                         {"system-xattrs", no_argument, NULL, 'x'},
                                         {"help", no_argument, NULL, 'h'},
                                         STORAGE_OPTIONS,
                                         {0, 0, 0, 0}};
    struct storage_opts so = {0};
    struct storage st;
    struct util_err e = {0};
    struct rx x;
    const char *target = NULL;
    struct rs_opts ro = {0};
    char **inc = NULL;
    size_t ninc = 0, capinc = 0;
    int c, rc;

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
            ro.overwrite = true;
            break;
        case 's':
            ro.setid = true;
            break;
        case 'd':
            ro.devices = true;
            break;
        case 'x':
            ro.system_xattrs = true;
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
    if ((rc = storage_open_keyed(&st, &so, &e)) != 0) {
        fprintf(stderr, "lode restore: %s\n", e.msg);
        rc = cli_exit_code(rc);
        goto out;
    }
    memset(&x, 0, sizeof(x));
    x.st = &st;
    x.keys = &st.config.keys;
    x.say_cb = cmd_restore_say_cb;
    if ((rc = rx_find(&x, argv[optind])) == 0) {
        rc = rx_restore(&x, target, &ro, inc, ninc);
        if (x.ran) /* the summary, whatever came after the target was opened */
            cmd_restore_print(&x, target);
    }
    rc = cli_exit_code(rc);
    free(x.files_key);
    free(x.chunks_key);
    rx_batch_free(&x);
    storage_close(&st);
out:
    for (size_t i = 0; i < ninc; i++)
        free(inc[i]);
    free(inc);
    return rc;
}
