/*
 * lode forget: which snapshots a policy's retention rules keep, and why.
 *
 * Today the snapshots come from a file (--snapshots), so nothing can be deleted
 * and the command is always a dry run; --dry-run is accepted so that scripts
 * written now keep working when a later version points forget at a repository,
 * where leaving it out will delete. The periods are counted in the policy's
 * schedule zone, UTC without a schedule (SPEC section 5).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "binding/binding.h"
#include "cli.h"
#include "retention/retention.h"

static void cmd_forget_usage(FILE *f)
{
    fprintf(
        f,
        "usage: lode forget --policy FILE --snapshots FILE [--dry-run] [--output text|json]\n"
        "                   [--zoneinfo DIR]\n\n"
        "Applies the retention rules of a BackupPolicy to a list of snapshots of one host\n"
        "and shows which are kept (with every reason) and which would be forgotten, newest\n"
        "first. Days, weeks and months are counted in the policy's schedule timezone, UTC\n"
        "without a schedule.\n\n"
        "  --policy FILE     the BackupPolicy YAML (\"-\" for standard input)\n"
        "  --snapshots FILE  "
        "[{\"id\":S,\"time\":RFC3339,\"incomplete\":bool,\"suspicious\":bool}]\n"
        "  --dry-run         delete nothing; a snapshot list from a file is never deleted from,\n"
        "                    so today this is what forget always does\n"
        "  --output json     {\"keep\":[{\"id\":S,\"reasons\":[...]}],\"forget\":[{\"id\":S}]}\n"
        "  --zoneinfo DIR    the tz database (default $LODE_ZONEINFO, else %s)\n\n"
        "Exit codes: 0 ok, 1 invalid policy or snapshot list, 2 usage or I/O error.\n",
        TZ_DEFAULT_DIR);
}

/* The ids as people see them: control bytes would move the cursor, so they print as '?'. */
static void cmd_forget_print_id(const char *id, int width)
{
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++, n++)
        putchar(*p < 0x20 || *p == 0x7f ? '?' : *p);
    for (; n < width; n++)
        putchar(' ');
}

static void cmd_forget_print_rules(const struct policy *pol, const struct tz_zone *zone)
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

static void cmd_forget_print_text(const struct policy *pol, const struct tz_zone *zone,
                                  const struct ret_snapshot_list *list,
                                  const struct ret_decision *d)
{
    int idw = 2;
    size_t kept = 0;

    cmd_forget_print_rules(pol, zone);
    for (size_t i = 0; i < list->n; i++) {
        size_t l = strlen(list->v[i].id);
        if (l > (size_t)idw)
            idw = l > 200 ? 200 : (int)l;
    }
    printf("%-*s  %-25s %-7s %s\n", idw, "ID", "Time", "Action", "Reasons");
    for (size_t i = 0; i < list->n; i++) {
        const struct ret_snapshot *s = &list->v[d[i].index];
        struct util_civil c;
        char when[48];
        const char *sep = "";

        util_civil_from_seconds(s->time + tz_offset_at(zone, s->time), &c);
        snprintf(when, sizeof(when), "%04lld-%02u-%02u %02u:%02u:%02u %s", (long long)c.year,
                 c.month, c.day, c.hour, c.minute, c.second, tz_abbrev_at(zone, s->time));
        cmd_forget_print_id(s->id, idw);
        if (!d[i].keep) {
            printf("  %-25s forget\n", when);
            continue;
        }
        printf("  %-25s keep    ", when);
        for (unsigned r = 0; r < RET_REASON_COUNT; r++) {
            if (d[i].reasons & (1u << r)) {
                printf("%s%s", sep, ret_reason_name(r));
                sep = ", ";
            }
        }
        putchar('\n');
        kept++;
    }
    printf("\nkeep %zu snapshot%s, forget %zu\n", kept, kept == 1 ? "" : "s", list->n - kept);
}

json_t *cli_forget_json(const struct ret_snapshot_list *list, const struct ret_decision *d)
{
    json_t *root = json_object();
    json_t *keep = json_array();
    json_t *forget = json_array();

    for (size_t i = 0; i < list->n; i++) {
        const char *id = list->v[d[i].index].id;
        if (d[i].keep) {
            json_t *reasons = json_array();
            for (unsigned r = 0; r < RET_REASON_COUNT; r++)
                if (d[i].reasons & (1u << r))
                    json_array_append_new(reasons, json_string(ret_reason_name(r)));
            json_array_append_new(keep, json_pack("{s:s, s:o}", "id", id, "reasons", reasons));
        } else {
            json_array_append_new(forget, json_pack("{s:s}", "id", id));
        }
    }
    json_object_set_new(root, "keep", keep);
    json_object_set_new(root, "forget", forget);
    return root;
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
    const char *policy_path = NULL, *snapshots_path = NULL, *zoneinfo = NULL;
    static const struct option opts[] = {
        {"policy", required_argument, NULL, 'p'},
        {"snapshots", required_argument, NULL, 's'},
        {"dry-run", no_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'},
        {"zoneinfo", required_argument, NULL, 'z'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct tz_db *db = NULL;
    struct tz_zone *zone = NULL;
    struct policy pol;
    struct ret_snapshot_list list = {0};
    struct ret_decision *decisions = NULL;
    struct util_err err = {0};
    char *data = NULL;
    size_t len = 0;
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
            break; /* always a dry run today: see the top of this file */
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
            cmd_forget_usage(stderr);
            return CLI_USAGE;
        }
    }
    if (optind != argc)
        return cli_usage_error("forget", "unexpected argument \"%s\"", argv[optind]);
    if (policy_path == NULL)
        return cli_usage_error("forget", "--policy FILE is required");
    if (snapshots_path == NULL)
        return cli_usage_error("forget", "--snapshots FILE is required");
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

    if (util_read_file(snapshots_path, &data, &len, &err) != 0) {
        fprintf(stderr, "lode forget: %s\n", err.msg);
        rc = CLI_USAGE;
        goto free_zone;
    }
    if (ret_snapshots_from_json(&list, data, len, &err) != 0) {
        fprintf(stderr, "lode forget: %s: %s\n",
                strcmp(snapshots_path, "-") == 0 ? "<stdin>" : snapshots_path, err.msg);
        rc = CLI_INVALID;
        goto free_data;
    }
    decisions = util_calloc(list.n ? list.n : 1, sizeof(*decisions));
    if (ret_evaluate(list.v, list.n, &pol.retention, zone, decisions, &err) != 0) {
        fprintf(stderr, "lode forget: %s\n", err.msg);
        rc = CLI_INVALID;
        goto free_list;
    }
    if (output == CLI_OUTPUT_JSON) {
        json_t *doc = cli_forget_json(&list, decisions);
        cli_print_json(doc);
        json_decref(doc);
    } else
        cmd_forget_print_text(&pol, zone, &list, decisions);
    rc = CLI_OK;

free_list:
    free(decisions);
    ret_snapshot_list_free(&list);
free_data:
    free(data);
free_zone:
    tz_zone_free(zone);
free_policy:
    policy_free(&pol);
close_db:
    tz_db_close(db);
    return rc;
}
