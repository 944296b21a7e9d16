/*
 * lode status [POLICY]: per host of a BackupPolicy, the last successful backup, its
 * age, the alert limit, whether the host is overdue, and its next run. What is
 * read and how it is evaluated is in status.h (shared with `lode ui`); this file
 * holds the flags and the human output.
 *
 * Exit codes: 0 when every host is within its limit, 1 when a host is overdue or a
 * policy is invalid (a check failed: scripts and monitors can run `lode status`
 * as a check), 2 on a usage error, a policy that does not exist, or an API error.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "kubeutil.h"
#include "schedule/schedule.h"
#include "status.h"

static void cmd_status_usage(FILE *f)
{
    fprintf(
        f,
        "usage: lode status [POLICY] [--namespace NS | --all-namespaces]\n"
        "                   [--output text|json] [--utc] [--kubeconfig PATH]\n"
        "                   [--context NAME] [--zoneinfo DIR]\n"
        "\n"
        "Shows each host of a BackupPolicy (every policy of the namespace without\n"
        "POLICY): the last successful backup, its age, the alert limit, whether the\n"
        "host is overdue, and its next run. Times are in the policy's time zone.\n"
        "\n"
        "  -n, --namespace NS      default: the kubeconfig context's, else \"default\"\n"
        "  -A, --all-namespaces    every policy of the cluster\n"
        "  -o, --output json       {\"time\":T,\"policies\":[{\"policy\":\"NS/NAME\",\"valid\":B,\n"
        "                          \"ready\":B,\"schedule\",\"timezone\",\"alertLimitSeconds\",\n"
        "                          \"overdue\":N,\"nextRun\",\"conditions\",\"errors\",\n"
        "                          \"hosts\":[{\"host\",\"selected\",\"lastSuccess\",\n"
        "                          \"ageSeconds\",\"running\",\"overdue\",\"nextRun\"}]}]}\n"
        "  --utc                   show times in UTC instead of the policy's zone\n"
        "  --kubeconfig PATH       default $KUBECONFIG, else in-cluster, else\n"
        "                          ~/.kube/config\n"
        "  --context NAME          a kubeconfig context (default: the current one)\n"
        "  --zoneinfo DIR          the tz database (default $LODE_ZONEINFO, else %s)\n"
        "\n"
        "Exit codes: 0 no host is overdue, 1 a host is overdue or a policy is invalid,\n"
        "2 usage error, no such policy, or the API server could not be read.\n",
        TZ_DEFAULT_DIR);
}

struct cmd_status_opts {
    const char *policy;
    struct cli_kube_opts kube;
    bool all;
    bool utc;
    const char *zoneinfo;
    enum cli_output output;
};
/* ---- text ---- */

/* "2026-03-28 02:41:07 EET" in the policy's zone, or "2026-03-28T00:41:07Z" with --utc. */
static void cmd_status_fmt_time(const struct cli_status_policy *p, bool utc, int64_t t, char *buf,
                                size_t size)
{
    char text[UTIL_TIME_BUF];
    if (utc) {
        util_format_utc(t, buf, size);
        return;
    }
    util_format_time(t, tz_offset_at(p->bind.zone, t), UTIL_TIME_TEXT, text, sizeof(text));
    snprintf(buf, size, "%s %s", text, tz_abbrev_at(p->bind.zone, t));
}

/* An age for people: "45s", "12m30s", "9h12m", "2d3h". */
static void cmd_status_fmt_age(int64_t s, char *buf, size_t size)
{
    if (s < 0)
        s = 0;
    if (s < 60)
        snprintf(buf, size, "%llds", (long long)s);
    else if (s < 3600)
        snprintf(buf, size, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
    else if (s < 86400)
        snprintf(buf, size, "%lldh%lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else
        snprintf(buf, size, "%lldd%lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

#define CMD_STATUS_COLS 6

static void cmd_status_print_condition(const struct cli_status_policy *p, const char *type)
{
    const json_t *c = cli_status_condition(p->obj, type);
    const char *status = json_string_value(json_object_get(c, "status"));
    const char *reason = json_string_value(json_object_get(c, "reason"));
    const char *message = json_string_value(json_object_get(c, "message"));
    if (c == NULL || status == NULL)
        return;
    printf("  %-9s %-6s %s%s%s\n", type, status, reason ? reason : "",
           reason && message && message[0] ? ": " : "", message ? message : "");
}

/* How long past its nextRun a status is still taken as current (a write takes a second). */
#define CMD_STATUS_STALE_SECONDS 120

static void cmd_status_print_policy(const struct cli_status_policy *p, const struct tz_db *db,
                                    bool utc, int64_t now)
{
    const json_t *st = json_object_get(p->obj, "status");
    const json_t *og = json_object_get(st, "observedGeneration");
    const char *tzv = json_string_value(json_object_get(st, "tzdataVersion"));
    char buf[160];

    printf("Policy %s/%s\n", p->ns, p->name);
    if (!p->valid) {
        printf("  %-9s this policy is invalid and runs nothing:\n", "Schedule");
        for (size_t i = 0; i < p->diags.n; i++)
            printf("    error: %s%s%s\n", p->diags.v[i].path, p->diags.v[i].path[0] ? ": " : "",
                   p->diags.v[i].message);
    } else if (p->bind.has_sched) {
        policy_format_duration(p->spec.schedule.jitter, buf, sizeof(buf));
        printf("  %-9s \"%s\" in %s, jitter %s\n", "Schedule", p->spec.schedule.cron_text,
               p->spec.schedule.timezone, buf);
    } else {
        printf("  %-9s none: backups run only when started by hand\n", "Schedule");
    }
    if (p->limit == SCHED_NO_LIMIT && !p->valid) {
        printf("  %-9s unknown until the policy is valid\n", "Limit");
    } else if (p->limit == SCHED_NO_LIMIT) {
        printf("  %-9s none: a policy run only by hand is never overdue\n", "Limit");
    } else {
        policy_format_duration(p->limit, buf, sizeof(buf));
        printf("  %-9s overdue after %s without a successful backup%s%s%s\n", "Limit", buf,
               p->limit_source ? " (" : "", p->limit_source ? p->limit_source : "",
               p->limit_source ? ")" : "");
    }
    if (st == NULL || !json_is_integer(og)) {
        printf("  %-9s none yet: the controller has not reported on this policy (is it "
               "running?)\n",
               "Status");
    } else {
        cmd_status_print_condition(p, "Valid");
        cmd_status_print_condition(p, "Ready");
        cmd_status_print_condition(p, "Overdue");
        if (json_integer_value(og) != p->generation)
            printf("  %-9s the controller has not yet seen generation %lld (it reported on "
                   "%lld)\n",
                   "Note", (long long)p->generation, (long long)json_integer_value(og));
        /* The controller moves nextRun on at every slot: one long past means the status
         * is no longer being written (the controller is down or not acting). */
        const char *nr = json_string_value(json_object_get(st, "nextRun"));
        int64_t nrt;
        if (nr != NULL && util_parse_rfc3339(nr, &nrt, NULL) == 0 &&
            now - nrt > CMD_STATUS_STALE_SECONDS) {
            cmd_status_fmt_age(now - nrt, buf, sizeof(buf));
            printf("  %-9s stale: the status's next run (%s) passed %s ago and no newer status "
                   "was written (is the controller running?); the conditions above are as it "
                   "last wrote them, the table below is computed now\n",
                   "Note", nr, buf);
        }
        if (tzv != NULL && strcmp(tzv, tz_db_version(db)) != 0)
            printf("  %-9s the controller uses tz database %s, this lode %s\n", "Note", tzv,
                   tz_db_version(db));
    }
    if (p->nhosts == 0) {
        printf("  %-9s none: no node matches the nodeSelector and no Backups exist\n\n", "Hosts");
        return;
    }
    /* Counted as kubectl's HOSTS column: the selected nodes; other hosts (gone, not
     * selected, named by a Backup made by hand) are listed but counted apart. */
    size_t selected = 0, unknown = 0;
    for (size_t i = 0; i < p->nhosts; i++) {
        selected += p->hosts[i].selected == 1;
        unknown += p->hosts[i].selected < 0;
    }
    if (unknown > 0)
        printf("  %-9s %zu with Backups (whether selected is unknown: nodes not readable), %zu "
               "overdue\n\n",
               "Hosts", p->nhosts, p->overdue);
    else if (selected == p->nhosts)
        printf("  %-9s %zu, %zu overdue\n\n", "Hosts", selected, p->overdue);
    else
        printf("  %-9s %zu, %zu overdue; %zu more with Backups only (node gone or not "
               "selected)\n\n",
               "Hosts", selected, p->overdue, p->nhosts - selected);

    /* The table: every cell formatted first, so the columns can be sized. */
    static const char *const head[CMD_STATUS_COLS] = {"HOST",  "LAST-SUCCESS", "AGE",
                                                      "LIMIT", "OVERDUE",      "NEXT-RUN"};
    size_t rows = p->nhosts + 1;
    char(*cell)[CMD_STATUS_COLS][64] = util_calloc(rows, sizeof(*cell));
    size_t width[CMD_STATUS_COLS] = {0};
    char lim[32] = "-";
    if (p->limit != SCHED_NO_LIMIT)
        policy_format_duration(p->limit, lim, sizeof(lim));
    for (int j = 0; j < CMD_STATUS_COLS; j++)
        snprintf(cell[0][j], sizeof(cell[0][j]), "%s", head[j]);
    for (size_t i = 0; i < p->nhosts; i++) {
        const struct cli_status_host *h = &p->hosts[i];
        char(*r)[64] = cell[i + 1];
        snprintf(r[0], sizeof(r[0]), "%s", h->name);
        if (h->has_success) {
            cmd_status_fmt_time(p, utc, h->last_success, r[1], sizeof(r[1]));
            cmd_status_fmt_age(now - h->last_success, r[2], sizeof(r[2]));
        } else {
            snprintf(r[1], sizeof(r[1]), "never");
            snprintf(r[2], sizeof(r[2]), "-");
        }
        snprintf(r[3], sizeof(r[3]), "%s", h->selected == 0 ? "-" : lim);
        snprintf(r[4], sizeof(r[4]), "%s",
                 h->overdue ? "YES"
                            : (p->limit == SCHED_NO_LIMIT || h->selected == 0 ? "-" : "no"));
        if (h->has_next)
            cmd_status_fmt_time(p, utc, h->next_run, r[5], sizeof(r[5]));
        else
            snprintf(r[5], sizeof(r[5]), "%s",
                     h->selected == 0 ? "- (node gone or not selected)" : "-");
        if (h->running) {
            size_t n = strlen(r[5]);
            snprintf(r[5] + n, sizeof(r[5]) - n, "%s", " (running now)");
        }
    }
    for (size_t i = 0; i < rows; i++)
        for (int j = 0; j < CMD_STATUS_COLS; j++)
            if (strlen(cell[i][j]) > width[j])
                width[j] = strlen(cell[i][j]);
    for (size_t i = 0; i < rows; i++) {
        printf(" ");
        for (int j = 0; j < CMD_STATUS_COLS; j++) {
            if (j + 1 < CMD_STATUS_COLS)
                printf(" %-*s ", (int)width[j], cell[i][j]);
            else
                printf(" %s\n", cell[i][j]);
        }
    }
    /* Suspicious snapshots are rare and need a person: a line each, only when any. */
    for (size_t i = 0; i < p->nhosts; i++) {
        const struct cli_status_host *h = &p->hosts[i];
        if (h->suspicious > 0)
            printf("  %s: %u suspicious snapshot%s, the newest %s (docs/anomaly.md)\n", h->name,
                   h->suspicious, h->suspicious == 1 ? "" : "s",
                   h->suspicious_id != NULL ? h->suspicious_id : "unnamed");
    }
    putchar('\n');
    free(cell);
}
static int cmd_status_run(const struct cmd_status_opts *o)
{
    struct util_err err = {0};
    struct tz_db *db = NULL;
    struct cli_kube k;
    struct cli_status st = {0};
    int rc;

    if (cli_open_tzdb(&db, o->zoneinfo) != CLI_OK)
        return CLI_USAGE;
    if (cli_kube_open(&k, o->kube.kubeconfig, o->kube.context, &err) != 0) {
        fprintf(stderr, "lode status: %s\n", err.msg);
        rc = CLI_USAGE;
        goto close;
    }
    const char *ns = o->all                      ? NULL
                     : o->kube.namespace != NULL ? o->kube.namespace
                                                 : cli_kube_namespace(&k);
    struct cli_status_query q = {ns, o->policy};
    if (cli_status_load(&st, &k, db, &q, (int64_t)time(NULL), &err) != 0) {
        fprintf(stderr, "lode status: %s\n", err.msg);
        rc = CLI_USAGE;
        goto close;
    }
    if (st.warning[0] != '\0')
        fprintf(stderr, "lode status: warning: %s\n", st.warning);

    rc = CLI_OK;
    for (size_t i = 0; i < st.n; i++)
        if (st.v[i].overdue > 0 || !st.v[i].valid)
            rc = CLI_INVALID;
    if (o->output == CLI_OUTPUT_JSON) {
        json_t *doc = cli_status_json(&st);
        cli_print_json(doc);
        json_decref(doc);
    } else if (st.n == 0) {
        if (o->all)
            printf("No BackupPolicies in the cluster.\n");
        else
            printf("No BackupPolicies in namespace %s.\n", ns);
    } else {
        for (size_t i = 0; i < st.n; i++)
            cmd_status_print_policy(&st.v[i], db, o->utc, st.now);
    }
close:
    cli_status_free(&st);
    cli_kube_close(&k);
    tz_db_close(db);
    return rc;
}

int cmd_status(int argc, char **argv)
{
    struct cmd_status_opts o = {.output = CLI_OUTPUT_TEXT};
    int c, k;
    static const struct option opts[] = {
        {"all-namespaces", no_argument, NULL, 'A'},
        {"output", required_argument, NULL, 'o'},
        {"utc", no_argument, NULL, 'u'},
        {"zoneinfo", required_argument, NULL, 'z'},
        {"help", no_argument, NULL, 'h'},
        KUBE_OPTIONS,
        {NULL, 0, NULL, 0},
    };

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "n:Ao:h", opts, NULL)) != -1) {
        switch (c) {
        case 'A':
            o.all = true;
            break;
        case 'o':
            if (cli_parse_output(optarg, &o.output) != 0)
                return CLI_USAGE;
            break;
        case 'u':
            o.utc = true;
            break;
        case 'z':
            o.zoneinfo = optarg;
            break;
        case 'h':
            cmd_status_usage(stdout);
            return CLI_OK;
        default:
            if ((k = cli_kube_opt(&o.kube, "status", c, optarg)) > 0)
                break;
            if (k < 0)
                return CLI_USAGE;
            return cli_usage_error("status", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
    }
    if (optind < argc)
        o.policy = argv[optind++];
    if (optind < argc)
        return cli_usage_error("status", "give at most one POLICY, not also \"%s\"", argv[optind]);
    if (o.all && o.kube.namespace != NULL)
        return cli_usage_error("status", "--namespace and --all-namespaces exclude each other");
    if (o.all && o.policy != NULL)
        return cli_usage_error("status", "a POLICY is looked up in one namespace: drop "
                                         "--all-namespaces or the POLICY");
    return cmd_status_run(&o);
}
