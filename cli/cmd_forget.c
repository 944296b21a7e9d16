/*
 * lode forget: which snapshots a policy's retention rules keep, and why.
 *
 * Two modes. With --snapshots FILE the snapshots come from a file, nothing can
 * be deleted and the command is always a dry run. Without it, the snapshots are
 * the repository's (--repo or LODE_REPOSITORY): cmd_forget_storage.c lists them,
 * decides per host, and deletes the forgotten manifests unless --dry-run. The
 * periods are counted in the policy's schedule zone, UTC without a schedule
 * (docs/retention.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binding/binding.h"
#include "cli.h"
#include "retention/retention.h"
#include "agent/storage.h"

static void cmd_forget_usage(FILE *f)
{
    fprintf(f,
            "usage: lode forget --policy FILE --snapshots FILE [--dry-run] [--output text|json]\n"
            "                   [--zoneinfo DIR]\n"
            "       lode forget --policy FILE|NS/NAME [--host H] [--dry-run] [--output text|json]\n"
            "                   [--repo URL] [--cacert FILE] [--zoneinfo DIR]\n\n"
            "Applies the retention rules of a BackupPolicy to the snapshots of each host and\n"
            "shows which are kept (with every reason) and which are forgotten, newest first.\n"
            "Days, weeks and months are counted in the policy's schedule timezone, UTC without\n"
            "a schedule. With --snapshots the list comes from a file and nothing is deleted;\n"
            "without it the snapshots are the repository's and the forgotten ones' manifests\n"
            "(and .incomplete marks) are deleted, unless --dry-run. Suspicious snapshots are\n"
            "always kept. A listing that fails deletes nothing.\n\n"
            "  --policy FILE     the BackupPolicy YAML (\"-\" for standard input), or NS/NAME\n"
            "                    (read from the cluster) in the repository mode\n"
            "  --snapshots FILE  "
            "[{\"id\":S,\"time\":RFC3339,\"incomplete\":bool,\"suspicious\":bool}]\n"
            "  --host H          the repository mode: only this host (default every host)\n"
            "  --dry-run         delete nothing\n"
            "  --output json     with --snapshots: "
            "{\"keep\":[{\"id\":S,\"reasons\":[...]}],\"forget\":[{\"id\":S}]}\n"
            "                    from a repository: {\"hosts\":[{\"host\":H,\"keep\":[...],"
            "\"forget\":[...]}]}\n"
            "  --zoneinfo DIR    the tz database (default $LODE_ZONEINFO, else %s)\n"
            "%s\n"
            "Exit codes: 0 ok, 1 invalid policy or snapshot list, 2 usage or I/O error.\n",
            TZ_DEFAULT_DIR, cli_storage_usage);
}

/*
 * Both outputs are written as they go, through one 64 KiB buffer, instead of
 * built (as a jansson tree) and then printed: a million snapshots took hundreds
 * of MiB and seconds that way. cli_forget_json, which lode ui serves, still
 * builds the tree; the bytes here are the ones cli_print_json gives for it,
 * escapes included (tests/cli/test_forget.sh compares them).
 */
struct cmd_forget_out {
    char buf[1 << 16];
    size_t len;
};

static void cmd_forget_flush(struct cmd_forget_out *o)
{
    fwrite(o->buf, 1, o->len, stdout);
    o->len = 0;
}

static void cmd_forget_put(struct cmd_forget_out *o, const char *s, size_t n)
{
    if (o->len + n > sizeof(o->buf)) {
        cmd_forget_flush(o);
        if (n > sizeof(o->buf)) {
            fwrite(s, 1, n, stdout);
            return;
        }
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

#define CMD_FORGET_PUTS(o, lit) cmd_forget_put((o), (lit), sizeof(lit) - 1)

/* The ids as people see them: control bytes would move the cursor, so they print as '?'. */
static void cmd_forget_put_id(struct cmd_forget_out *o, const char *id, int width)
{
    static const char spaces[] = "                                ";
    int n = 0;
    const char *run = id;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++, n++) {
        if (*p < 0x20 || *p == 0x7f) {
            cmd_forget_put(o, run, (size_t)((const char *)p - run));
            cmd_forget_put(o, "?", 1);
            run = (const char *)p + 1;
        }
    }
    cmd_forget_put(o, run, strlen(run));
    while (n < width) {
        int k = width - n < (int)sizeof(spaces) - 1 ? width - n : (int)sizeof(spaces) - 1;
        cmd_forget_put(o, spaces, (size_t)k);
        n += k;
    }
}

void cli_forget_print_rules(const struct policy *pol, const struct tz_zone *zone)
{
    const struct policy_retention *r = &pol->retention;
    char dur[64];
    const char *sep = "";

    printf("policy %s/%s: ", pol->namespace, pol->name);
    if (ret_rules_empty(r)) {
        printf("no retention rules, every snapshot is kept\n");
    } else {
        printf("keep");
        if (r->keep_last) {
            printf(" last %lld", (long long)r->keep_last);
            sep = ",";
        }
        if (r->keep_within) {
            policy_format_duration(r->keep_within, dur, sizeof(dur));
            printf("%s within %s", sep, dur);
            sep = ",";
        }
        if (r->keep_daily) {
            printf("%s daily %lld", sep, (long long)r->keep_daily);
            sep = ",";
        }
        if (r->keep_weekly) {
            printf("%s weekly %lld", sep, (long long)r->keep_weekly);
            sep = ",";
        }
        if (r->keep_monthly)
            printf("%s monthly %lld", sep, (long long)r->keep_monthly);
        printf("; periods in %s\n", tz_zone_name(zone));
    }
    printf("the two newest good snapshots and every suspicious one are always kept\n\n");
}

void cli_forget_print_table(const struct tz_zone *zone, const struct ret_snapshot_list *list,
                            const struct ret_decision *d)
{
    static struct cmd_forget_out o; /* 64 KiB: not on the stack */
    int idw = 2;
    size_t kept = 0;

    for (size_t i = 0; i < list->n; i++) {
        size_t l = strlen(list->v[i].id);
        if (l > (size_t)idw)
            idw = l > 200 ? 200 : (int)l;
    }
    printf("%-*s  %-25s %-7s %s\n", idw, "ID", "Time", "Action", "Reasons");
    o.len = 0;
    for (size_t i = 0; i < list->n; i++) {
        const struct ret_snapshot *s = &list->v[d[i].index];
        char when[64];
        const char *sep = "";

        /* Without printf, which cost a fifth of the command: "  " TEXT " " abbreviation. */
        const char *abbr = tz_abbrev_at(zone, s->time);
        size_t al = strnlen(abbr, 16);
        int w = 2;
        when[0] = when[1] = ' ';
        w += (int)util_format_time(s->time, tz_offset_at(zone, s->time), UTIL_TIME_TEXT, when + 2,
                                   UTIL_TIME_BUF);
        when[w++] = ' ';
        memcpy(when + w, abbr, al);
        w += (int)al;
        while (w < 2 + 25) /* "  %-25s " */
            when[w++] = ' ';
        when[w++] = ' ';
        cmd_forget_put_id(&o, s->id, idw);
        cmd_forget_put(&o, when, (size_t)w);
        if (!d[i].keep) {
            CMD_FORGET_PUTS(&o, "forget\n");
            continue;
        }
        CMD_FORGET_PUTS(&o, "keep    ");
        for (unsigned r = 0; r < RET_REASON_COUNT; r++) {
            if (d[i].reasons & (1u << r)) {
                const char *name = ret_reason_name(r);
                cmd_forget_put(&o, sep, strlen(sep));
                cmd_forget_put(&o, name, strlen(name));
                sep = ", ";
            }
        }
        cmd_forget_put(&o, "\n", 1);
        kept++;
    }
    cmd_forget_flush(&o);
    printf("\nkeep %zu snapshot%s, forget %zu\n", kept, kept == 1 ? "" : "s", list->n - kept);
}

static void cmd_forget_print_text(const struct policy *pol, const struct tz_zone *zone,
                                  const struct ret_snapshot_list *list,
                                  const struct ret_decision *d)
{
    cli_forget_print_rules(pol, zone);
    cli_forget_print_table(zone, list, d);
}

/* A JSON string as jansson writes it: ", \ and control bytes escaped, the rest as is. */
static void cmd_forget_put_string(struct cmd_forget_out *o, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *run = s;

    cmd_forget_put(o, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[6];
        size_t n = 2;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        cmd_forget_put(o, run, (size_t)(s - run));
        run = s + 1;
        esc[0] = '\\';
        switch (c) {
        case '"':
        case '\\':
            esc[1] = (char)c;
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        cmd_forget_put(o, esc, n);
    }
    cmd_forget_put(o, run, (size_t)(s - run));
    cmd_forget_put(o, "\"", 1);
}

/* One of the two lists: the kept snapshots (with reasons) or the forgotten ones. */
static void cmd_forget_put_list(struct cmd_forget_out *o, const struct ret_snapshot_list *list,
                                const struct ret_decision *d, bool keep)
{
    bool first = true;

    for (size_t i = 0; i < list->n; i++) {
        if (d[i].keep != keep)
            continue;
        if (first)
            CMD_FORGET_PUTS(o, "\n    {\n      \"id\": ");
        else
            CMD_FORGET_PUTS(o, ",\n    {\n      \"id\": ");
        first = false;
        cmd_forget_put_string(o, list->v[d[i].index].id);
        if (keep) {
            const char *sep = ",\n      \"reasons\": [\n        \"";
            for (unsigned r = 0; r < RET_REASON_COUNT; r++) {
                if (d[i].reasons & (1u << r)) {
                    const char *name = ret_reason_name(r);
                    cmd_forget_put(o, sep, strlen(sep));
                    cmd_forget_put(o, name, strlen(name));
                    cmd_forget_put(o, "\"", 1);
                    sep = ",\n        \"";
                }
            }
            CMD_FORGET_PUTS(o, "\n      ]");
        }
        CMD_FORGET_PUTS(o, "\n    }");
    }
    if (!first)
        CMD_FORGET_PUTS(o, "\n  ");
}

static void cmd_forget_print_json(const struct ret_snapshot_list *list,
                                  const struct ret_decision *d)
{
    static struct cmd_forget_out o; /* 64 KiB: not on the stack */

    o.len = 0;
    CMD_FORGET_PUTS(&o, "{\n  \"keep\": [");
    cmd_forget_put_list(&o, list, d, true);
    CMD_FORGET_PUTS(&o, "],\n  \"forget\": [");
    cmd_forget_put_list(&o, list, d, false);
    CMD_FORGET_PUTS(&o, "]\n}\n");
    cmd_forget_flush(&o);
}

/*
 * The snapshot file, mapped rather than read: the scanner reads it once, front
 * to back, and the pages behind it are dropped as it goes (they come back from
 * the file if the jansson reader has to read it again), so a 60 MB list does
 * not cost 60 MB. Standard input, an empty file or anything that cannot be
 * mapped is read into memory as before.
 */
struct cmd_forget_input {
    char *data;
    size_t len;
    bool mapped;
};

static void cmd_forget_release_cb(size_t consumed, void *arg)
{
    struct cmd_forget_input *in = arg;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t upto = consumed / page * page;
    if (in->mapped && upto > 0)
        madvise(in->data, upto, MADV_DONTNEED);
}

static int cmd_forget_open_input(const char *path, struct cmd_forget_input *in,
                                 struct util_err *err)
{
    struct stat st;
    int fd;

    memset(in, 0, sizeof(*in));
    if (strcmp(path, "-") != 0) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return util_err_set(err, UTIL_EIO, "%s: cannot open: %s", path, strerror(errno));
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
            (uintmax_t)st.st_size <= SIZE_MAX) {
            void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p != MAP_FAILED) {
                close(fd);
                madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
                in->data = p;
                in->len = (size_t)st.st_size;
                in->mapped = true;
                return 0;
            }
        }
        close(fd);
    }
    return util_read_file(path, &in->data, &in->len, err);
}

static void cmd_forget_close_input(struct cmd_forget_input *in)
{
    if (in->mapped)
        munmap(in->data, in->len);
    else
        free(in->data);
    memset(in, 0, sizeof(*in));
}

/* The zone of the policy's periods; CLI_USAGE or CLI_INVALID (printed) on failure. */
static int cmd_forget_zone(const struct policy *pol, const struct tz_db *db, struct tz_zone **zone)
{
    struct util_err err = {0};
    int rc = binding_zone(pol, db, zone, &err);
    if (rc == 0)
        return CLI_OK;
    fprintf(stderr, "lode forget: %s\n", err.msg);
    /* An unknown zone is the policy's fault; a damaged or unreadable one the system's. */
    return rc == UTIL_ENOENT ? CLI_INVALID : CLI_USAGE;
}

int cmd_forget(int argc, char **argv)
{
    enum cli_output output = CLI_OUTPUT_TEXT;
    const char *policy_path = NULL, *snapshots_path = NULL, *zoneinfo = NULL, *host = NULL;
    bool dry_run = false;
    struct storage_opts sopts = {0};
    static const struct option opts[] = {
        {"policy", required_argument, NULL, 'p'},
        {"snapshots", required_argument, NULL, 's'},
        {"host", required_argument, NULL, 'H'},
        {"dry-run", no_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'},
        {"zoneinfo", required_argument, NULL, 'z'},
        {"help", no_argument, NULL, 'h'},
        STORAGE_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct tz_db *db = NULL;
    struct tz_zone *zone = NULL;
    struct policy pol;
    struct ret_snapshot_list list = {0};
    struct ret_decision *decisions = NULL;
    struct util_err err = {0};
    struct cmd_forget_input in;
    int c, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            policy_path = optarg;
            break;
        case 's':
            snapshots_path = optarg;
            break;
        case 'n':
            dry_run = true; /* a snapshot list from a file is never deleted from */
            break;
        case 'H':
            host = optarg;
            break;
        case 'o':
            if (cli_parse_output(optarg, &output) != 0)
                return CLI_USAGE;
            break;
        case 'z':
            zoneinfo = optarg;
            break;
        case 'h':
            cmd_forget_usage(stdout);
            return CLI_OK;
        default:
            if (cli_storage_opt(&sopts, c, optarg))
                break;
            cmd_forget_usage(stderr);
            return CLI_USAGE;
        }
    }
    if (optind != argc)
        return cli_usage_error("forget", "unexpected argument \"%s\"", argv[optind]);
    if (policy_path == NULL)
        return cli_usage_error("forget", "--policy FILE is required");
    if (snapshots_path == NULL && (sopts.repo != NULL || getenv("LODE_REPOSITORY") != NULL)) {
        struct cmd_forget_storage_args a = {.policy = policy_path,
                                            .host = host,
                                            .zoneinfo = zoneinfo,
                                            .dry_run = dry_run,
                                            .output = output,
                                            .storage = &sopts};
        return cmd_forget_storage(&a);
    }
    if (snapshots_path == NULL)
        return cli_usage_error("forget", "--snapshots FILE is required, or a repository to "
                                         "forget from (--repo URL or LODE_REPOSITORY)");
    if (host != NULL || sopts.repo != NULL || sopts.cacert != NULL || sopts.key_file != NULL)
        return cli_usage_error("forget", "--host, --repo, --cacert and --key-file are for a "
                                         "repository, not for --snapshots FILE");
    if (strcmp(policy_path, "-") == 0 && strcmp(snapshots_path, "-") == 0)
        return cli_usage_error("forget", "--policy and --snapshots cannot both be \"-\"");

    rc = cli_open_tzdb(&db, zoneinfo);
    if (rc != CLI_OK)
        return rc;
    memset(&pol, 0, sizeof(pol));
    rc = cli_load_policy(policy_path, db, &pol);
    if (rc != CLI_OK)
        goto close_db;
    rc = cmd_forget_zone(&pol, db, &zone);
    if (rc != CLI_OK)
        goto free_policy;

    if (cmd_forget_open_input(snapshots_path, &in, &err) != 0) {
        fprintf(stderr, "lode forget: %s\n", err.msg);
        rc = CLI_USAGE;
        goto free_zone;
    }
    rc = ret_snapshots_scan(&list, in.data, in.len, cmd_forget_release_cb, &in, &err);
    cmd_forget_close_input(&in); /* the list owns its ids */
    if (rc != 0) {
        fprintf(stderr, "lode forget: %s: %s\n",
                strcmp(snapshots_path, "-") == 0 ? "<stdin>" : snapshots_path, err.msg);
        rc = CLI_INVALID;
        goto free_zone;
    }
    decisions = util_calloc(list.n ? list.n : 1, sizeof(*decisions));
    if (ret_evaluate(list.v, list.n, &pol.retention, zone, decisions, &err) != 0) {
        fprintf(stderr, "lode forget: %s\n", err.msg);
        rc = CLI_INVALID;
        goto free_list;
    }
    if (output == CLI_OUTPUT_JSON)
        cmd_forget_print_json(&list, decisions);
    else
        cmd_forget_print_text(&pol, zone, &list, decisions);
    rc = CLI_OK;

free_list:
    free(decisions);
    ret_snapshot_list_free(&list);
free_zone:
    tz_zone_free(zone);
free_policy:
    policy_free(&pol);
close_db:
    tz_db_close(db);
    return rc;
}
