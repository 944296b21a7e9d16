/*
 * lode status [POLICY]: per host of a BackupPolicy, the last successful backup, its
 * age, the alert limit, whether the host is overdue, and its next run.
 *
 * What it reads: the policy (or every policy of a namespace, or of the cluster),
 * its status as the controller wrote it, the Backups of the namespace (grouped by
 * spec.policy and spec.host, as the controller groups them, so a Backup started by
 * hand without labels counts too), and the nodes (metadata only) to find the hosts
 * the nodeSelector picks. The hosts are those the controller counts: the selected
 * nodes, plus the hosts that have Backups (a node that left or no longer matches is
 * shown as not selected: it has no next run and is never overdue).
 *
 * What it computes itself, so the answer holds when the controller is down (which
 * is when it matters): the last success (the newest Succeeded Backup's
 * completionTime), the age, the next run (the schedule engine plus the host's
 * jitter offset), and overdue (SPEC section 6, with the limit the status records
 * when it describes the current generation, else the one the spec gives). A host
 * that the status lists as overdue stays overdue unless a newer success is seen.
 *
 * Exit codes: 0 when every host is within its limit, 1 when a host is overdue or a
 * policy is invalid (a check failed: scripts and monitors can run `lode status`
 * as a check), 2 on a usage error, a policy that does not exist, or an API error.
 *
 * Costs: three or four requests whatever the number of policies (the policy or
 * list, one list of Backups, one metadata-only list of nodes); memory is those
 * lists.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "kubeutil.h"
#include "schedule/schedule.h"

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
    const char *namespace;
    bool all;
    bool utc;
    const char *kubeconfig;
    const char *context;
    const char *zoneinfo;
    enum cli_output output;
};

struct cmd_status_host {
    const char *name; /* borrowed from the node or Backup JSON */
    int selected;     /* 1 selected, 0 not, -1 unknown (nodes could not be listed) */
    int64_t node_created;
    bool has_success;
    int64_t last_success;
    bool running;
    bool overdue;
    bool has_next;
    int64_t next_run;
};

struct cmd_status_policy {
    const json_t *obj; /* borrowed from the reply */
    const char *ns, *name;
    int64_t created, generation;
    bool valid;
    struct policy spec; /* when valid */
    struct policy_diags diags;
    struct tz_zone *zone; /* the schedule's, else UTC */
    bool has_sched;
    struct sched sched;
    int64_t limit;
    const char *limit_source;
    struct cmd_status_host *hosts;
    size_t nhosts, hosts_cap;
    size_t overdue;
    int64_t next_run; /* INT64_MAX when none */
};

/* What the lists hold, and the evaluation time. */
struct cmd_status_world {
    const struct tz_db *db;
    json_t *policies; /* array, borrowed from a reply */
    json_t *backups;  /* array */
    json_t *nodes;    /* array, or NULL when nodes could not be listed */
    int64_t now;
};

/* ---- small helpers ---- */

static const json_t *cmd_status_get(const json_t *obj, const char *a, const char *b)
{
    const json_t *v = json_object_get(obj, a);
    return b != NULL ? json_object_get(v, b) : v;
}

static const char *cmd_status_str(const json_t *obj, const char *a, const char *b)
{
    return json_string_value(cmd_status_get(obj, a, b));
}

/* An RFC 3339 member; false when absent or unreadable. */
static bool cmd_status_time(const json_t *obj, const char *a, const char *b, int64_t *out)
{
    const char *s = cmd_status_str(obj, a, b);
    return s != NULL && util_parse_rfc3339(s, out, NULL) == 0;
}

/* The status condition of a type, or NULL. */
static const json_t *cmd_status_condition(const json_t *obj, const char *type)
{
    const json_t *conds = cmd_status_get(obj, "status", "conditions");
    size_t i;
    const json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t != NULL && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

static bool cmd_status_condition_true(const json_t *obj, const char *type)
{
    const char *s = json_string_value(json_object_get(cmd_status_condition(obj, type), "status"));
    return s != NULL && strcmp(s, "True") == 0;
}

static struct cmd_status_host *cmd_status_host(struct cmd_status_policy *p, const char *name)
{
    for (size_t i = 0; i < p->nhosts; i++)
        if (strcmp(p->hosts[i].name, name) == 0)
            return &p->hosts[i];
    p->hosts = util_grow(p->hosts, &p->hosts_cap, p->nhosts + 1, sizeof(*p->hosts));
    struct cmd_status_host *h = &p->hosts[p->nhosts++];
    memset(h, 0, sizeof(*h));
    h->name = name;
    h->selected = 0;
    return h;
}

static int cmd_status_host_cmp(const void *a, const void *b)
{
    return strcmp(((const struct cmd_status_host *)a)->name,
                  ((const struct cmd_status_host *)b)->name);
}

/* True when the node's labels hold every pair of the policy's nodeSelector. */
static bool cmd_status_node_matches(const json_t *node, const struct policy *spec)
{
    const json_t *labels = cmd_status_get(node, "metadata", "labels");
    for (size_t i = 0; i < spec->nnode_selector; i++) {
        const char *v = json_string_value(json_object_get(labels, spec->node_selector[i].key));
        if (v == NULL || strcmp(v, spec->node_selector[i].value) != 0)
            return false;
    }
    return true;
}

/* ---- evaluation ---- */

static int cmd_status_prepare(struct cmd_status_policy *p, const json_t *obj,
                              const struct cmd_status_world *w, struct util_err *err)
{
    memset(p, 0, sizeof(*p));
    p->obj = obj;
    p->ns = cmd_status_str(obj, "metadata", "namespace");
    p->name = cmd_status_str(obj, "metadata", "name");
    if (p->ns == NULL || p->name == NULL)
        return util_err_set(err, UTIL_EINVAL, "the API server sent a BackupPolicy without a name");
    cmd_status_time(obj, "metadata", "creationTimestamp", &p->created);
    p->generation = json_integer_value(cmd_status_get(obj, "metadata", "generation"));
    p->next_run = INT64_MAX;
    policy_diags_init(&p->diags);
    p->valid = policy_parse_json(&p->spec, obj, w->db, &p->diags) == 0;
    if (p->valid && p->spec.has_schedule) {
        int rc = tz_zone_load(&p->zone, w->db, p->spec.schedule.timezone, err);
        if (rc != 0)
            return rc;
        sched_init(&p->sched, &p->spec.schedule.cron, p->zone);
        p->has_sched = true;
    } else {
        p->zone = tz_zone_utc();
    }
    return 0;
}

/*
 * The alert limit: the status's when it describes this generation (the controller
 * computed it at its own clock), else the spec's at now, else the status's.
 */
static void cmd_status_limit(struct cmd_status_policy *p, int64_t now)
{
    const json_t *st = json_object_get(p->obj, "status");
    const json_t *lim = json_object_get(st, "alertLimitSeconds");
    bool current = json_is_integer(json_object_get(st, "observedGeneration")) &&
                   json_integer_value(json_object_get(st, "observedGeneration")) == p->generation;

    p->limit = SCHED_NO_LIMIT;
    p->limit_source = NULL;
    if (json_is_integer(lim) && (current || !p->valid)) {
        p->limit = json_integer_value(lim);
    } else if (p->valid) {
        p->limit = sched_alert_limit(p->has_sched ? &p->sched : NULL,
                                     p->spec.has_schedule ? p->spec.schedule.jitter : 0,
                                     p->spec.alerts_max_age, now);
    }
    if (p->limit == SCHED_NO_LIMIT)
        return;
    if (p->valid && p->spec.alerts_max_age > 0)
        p->limit_source = "alerts.maxAge";
    else if (p->valid && p->spec.has_schedule)
        p->limit_source = "twice the longest gap between slots, plus the jitter";
}

static void cmd_status_evaluate(struct cmd_status_policy *p, const struct cmd_status_world *w)
{
    size_t i;
    const json_t *x;

    cmd_status_limit(p, w->now);
    /* The selected nodes. */
    if (w->nodes != NULL && p->valid) {
        json_array_foreach(w->nodes, i, x)
        {
            const char *name = cmd_status_str(x, "metadata", "name");
            if (name == NULL || !cmd_status_node_matches(x, &p->spec))
                continue;
            struct cmd_status_host *h = cmd_status_host(p, name);
            h->selected = 1;
            cmd_status_time(x, "metadata", "creationTimestamp", &h->node_created);
        }
    }
    /* The Backups of the policy, by host. */
    json_array_foreach(w->backups, i, x)
    {
        const char *ns = cmd_status_str(x, "metadata", "namespace");
        const char *pol = cmd_status_str(x, "spec", "policy");
        const char *host = cmd_status_str(x, "spec", "host");
        if (ns == NULL || pol == NULL || host == NULL || strcmp(ns, p->ns) != 0 ||
            strcmp(pol, p->name) != 0)
            continue;
        struct cmd_status_host *h = cmd_status_host(p, host);
        if (w->nodes == NULL)
            h->selected = -1;
        const char *phase = cmd_status_str(x, "status", "phase");
        if (phase != NULL && strcmp(phase, "Succeeded") == 0) {
            /* As the controller counts it: the completion, else the creation. */
            int64_t t = 0;
            if (!cmd_status_time(x, "status", "completionTime", &t))
                cmd_status_time(x, "metadata", "creationTimestamp", &t);
            if (!h->has_success || t > h->last_success) {
                h->has_success = true;
                h->last_success = t;
            }
        } else if (phase == NULL || strcmp(phase, "Failed") != 0) {
            h->running = true; /* Pending or Running */
        }
    }
    /* The hosts the status lists as overdue (some may be unknown to the lists). */
    const json_t *listed = cmd_status_get(p->obj, "status", "overdueHosts");
    json_array_foreach(listed, i, x)
    {
        const char *host = json_string_value(json_object_get(x, "host"));
        if (host == NULL)
            continue;
        struct cmd_status_host *h = cmd_status_host(p, host);
        if (w->nodes == NULL)
            h->selected = -1;
    }

    for (size_t k = 0; k < p->nhosts; k++) {
        struct cmd_status_host *h = &p->hosts[k];
        bool computed = false, stands = false;
        if (h->selected != 0 && p->limit != SCHED_NO_LIMIT)
            computed = sched_overdue(p->limit, h->has_success, h->last_success, h->node_created,
                                     p->created, w->now);
        json_array_foreach(listed, i, x)
        {
            const char *host = json_string_value(json_object_get(x, "host"));
            int64_t since = 0;
            if (host == NULL || strcmp(host, h->name) != 0)
                continue;
            /* The controller's verdict stands unless a newer success refutes it. */
            cmd_status_time(x, "since", NULL, &since);
            stands = !(h->has_success && h->last_success > since);
        }
        h->overdue = computed || stands;
        if (h->overdue)
            p->overdue++;
        if (h->selected != 0 && p->has_sched) {
            struct sched_slot slot;
            int64_t off = sched_jitter_offset(p->ns, p->name, h->name, p->spec.schedule.jitter);
            if (sched_next(&p->sched, w->now - off, &slot) == 0) {
                h->has_next = true;
                h->next_run = slot.at + off;
                if (h->next_run < p->next_run)
                    p->next_run = h->next_run;
            }
        }
    }
    if (p->nhosts > 1)
        qsort(p->hosts, p->nhosts, sizeof(*p->hosts), cmd_status_host_cmp);
}

static void cmd_status_policy_free(struct cmd_status_policy *p)
{
    if (p->valid)
        policy_free(&p->spec);
    policy_diags_free(&p->diags);
    if (p->zone != NULL)
        tz_zone_free(p->zone);
    free(p->hosts);
}

/* ---- JSON ---- */

static json_t *cmd_status_json_time(bool has, int64_t t)
{
    return has ? cli_json_time(t) : json_null();
}

static json_t *cmd_status_json_policy(const struct cmd_status_policy *p, int64_t now)
{
    json_t *o = json_object(), *hosts = json_array(), *conds = json_array(), *errors = json_array();
    const json_t *st_conds = cmd_status_get(p->obj, "status", "conditions");
    const char *tzv = cmd_status_str(p->obj, "status", "tzdataVersion");
    size_t i;
    const json_t *c;

    json_object_set_new(o, "policy", json_sprintf("%s/%s", p->ns, p->name));
    json_object_set_new(o, "valid", json_boolean(p->valid));
    json_object_set_new(o, "ready", json_boolean(cmd_status_condition_true(p->obj, "Ready")));
    json_object_set_new(o, "schedule",
                        p->has_sched ? json_string(p->spec.schedule.cron_text) : json_null());
    json_object_set_new(o, "timezone",
                        p->has_sched ? json_string(p->spec.schedule.timezone) : json_null());
    json_object_set_new(o, "alertLimitSeconds",
                        p->limit == SCHED_NO_LIMIT ? json_null() : json_integer(p->limit));
    json_object_set_new(o, "overdue", json_integer((json_int_t)p->overdue));
    json_object_set_new(o, "nextRun", cmd_status_json_time(p->next_run != INT64_MAX, p->next_run));
    json_object_set_new(o, "tzdataVersion", tzv != NULL ? json_string(tzv) : json_null());
    json_array_foreach(st_conds, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *status = json_string_value(json_object_get(c, "status"));
        const char *reason = json_string_value(json_object_get(c, "reason"));
        const char *message = json_string_value(json_object_get(c, "message"));
        if (type == NULL || status == NULL)
            continue;
        json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status",
                                               status, "reason", reason ? reason : "", "message",
                                               message ? message : ""));
    }
    json_object_set_new(o, "conditions", conds);
    for (size_t k = 0; k < p->diags.n; k++)
        json_array_append_new(errors, json_pack("{s:s, s:s}", "path", p->diags.v[k].path, "message",
                                                p->diags.v[k].message));
    json_object_set_new(o, "errors", errors);
    for (size_t k = 0; k < p->nhosts; k++) {
        const struct cmd_status_host *h = &p->hosts[k];
        json_t *ho = json_object();
        json_object_set_new(ho, "host", json_string(h->name));
        json_object_set_new(ho, "selected",
                            h->selected < 0 ? json_null() : json_boolean(h->selected == 1));
        json_object_set_new(ho, "lastSuccess",
                            cmd_status_json_time(h->has_success, h->last_success));
        json_object_set_new(ho, "ageSeconds",
                            h->has_success ? json_integer(now - h->last_success) : json_null());
        json_object_set_new(ho, "running", json_boolean(h->running));
        json_object_set_new(ho, "overdue", json_boolean(h->overdue));
        json_object_set_new(ho, "nextRun", cmd_status_json_time(h->has_next, h->next_run));
        json_array_append_new(hosts, ho);
    }
    json_object_set_new(o, "hosts", hosts);
    return o;
}

/* ---- text ---- */

/* "2026-03-28 02:41:07 EET" in the policy's zone, or "2026-03-28T00:41:07Z" with --utc. */
static void cmd_status_fmt_time(const struct cmd_status_policy *p, bool utc, int64_t t, char *buf,
                                size_t size)
{
    struct util_civil c;
    if (utc) {
        util_format_utc(t, buf, size);
        return;
    }
    util_civil_from_seconds(t + tz_offset_at(p->zone, t), &c);
    snprintf(buf, size, "%04lld-%02u-%02u %02u:%02u:%02u %s", (long long)c.year, c.month, c.day,
             c.hour, c.minute, c.second, tz_abbrev_at(p->zone, t));
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

static void cmd_status_print_condition(const struct cmd_status_policy *p, const char *type)
{
    const json_t *c = cmd_status_condition(p->obj, type);
    const char *status = json_string_value(json_object_get(c, "status"));
    const char *reason = json_string_value(json_object_get(c, "reason"));
    const char *message = json_string_value(json_object_get(c, "message"));
    if (c == NULL || status == NULL)
        return;
    printf("  %-9s %-6s %s%s%s\n", type, status, reason ? reason : "",
           reason && message && message[0] ? ": " : "", message ? message : "");
}

static void cmd_status_print_policy(const struct cmd_status_policy *p, const struct tz_db *db,
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
    } else if (p->has_sched) {
        policy_format_duration(p->spec.schedule.jitter, buf, sizeof(buf));
        printf("  %-9s \"%s\" in %s, jitter %s\n", "Schedule", p->spec.schedule.cron_text,
               p->spec.schedule.timezone, buf);
    } else {
        printf("  %-9s none: backups run only when started by hand\n", "Schedule");
    }
    if (p->limit == SCHED_NO_LIMIT) {
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
        if (tzv != NULL && strcmp(tzv, tz_db_version(db)) != 0)
            printf("  %-9s the controller uses tz database %s, this lode %s\n", "Note", tzv,
                   tz_db_version(db));
    }
    if (p->nhosts == 0) {
        printf("  %-9s none: no node matches the nodeSelector and no Backups exist\n\n", "Hosts");
        return;
    }
    printf("  %-9s %zu, %zu overdue\n\n", "Hosts", p->nhosts, p->overdue);

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
        const struct cmd_status_host *h = &p->hosts[i];
        char(*r)[64] = cell[i + 1];
        snprintf(r[0], sizeof(r[0]), "%s", h->name);
        if (h->has_success) {
            cmd_status_fmt_time(p, utc, h->last_success, r[1], sizeof(r[1]));
            cmd_status_fmt_age(now - h->last_success, r[2], sizeof(r[2]));
        } else {
            snprintf(r[1], sizeof(r[1]), "never");
            snprintf(r[2], sizeof(r[2]), "-");
        }
        snprintf(r[3], sizeof(r[3]), "%s", lim);
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
    putchar('\n');
    free(cell);
}

/* ---- fetching ---- */

/* Prints what went wrong with a request; returns CLI_USAGE. */
static int cmd_status_api_error(const char *what, const struct cli_kube *k,
                                const struct cli_kube_reply *r, const struct util_err *transport)
{
    struct util_err err = {0};
    if (r == NULL) {
        fprintf(stderr, "lode status: %s\n", transport->msg);
        return CLI_USAGE;
    }
    cli_kube_reply_error(r, UTIL_EIO, &err);
    fprintf(stderr, "lode status: cannot read %s from %s: %s\n", what, cli_kube_server(k), err.msg);
    if (r->status == 404)
        fprintf(stderr, "lode status: are the Lodestore CRDs installed? "
                        "(kubectl apply --server-side -f crd/)\n");
    return CLI_USAGE;
}

static bool cmd_status_ok(const struct cli_kube_reply *r)
{
    return r->status >= 200 && r->status < 300;
}

static int cmd_status_run(const struct cmd_status_opts *o)
{
    struct util_err err = {0};
    struct tz_db *db = NULL;
    struct cli_kube k;
    struct cli_kube_reply pol = {0}, bk = {0}, nodes = {0};
    struct cmd_status_world w = {0};
    struct cmd_status_policy *ps = NULL;
    size_t nps = 0;
    int rc;

    if (cli_open_tzdb(&db, o->zoneinfo) != CLI_OK)
        return CLI_USAGE;
    w.db = db;
    if (cli_kube_open(&k, o->kubeconfig, o->context, &err) != 0) {
        fprintf(stderr, "lode status: %s\n", err.msg);
        rc = CLI_USAGE;
        goto close;
    }
    const char *ns = o->all ? NULL : o->namespace != NULL ? o->namespace : cli_kube_namespace(&k);
    struct kube_resource rp = {"lodestore.io", "v1alpha1", "backuppolicies", ns};
    struct kube_resource rb = {"lodestore.io", "v1alpha1", "backups", ns};
    struct kube_resource rn = {"", "v1", "nodes", NULL};

    /* The policies. */
    if (o->policy != NULL) {
        if (cli_kube_get(&k, &rp, o->policy, &pol, &err) != 0) {
            rc = cmd_status_api_error("the policy", &k, NULL, &err);
            goto close;
        }
        if (pol.status == 404 && json_is_string(cmd_status_get(pol.body, "details", "name"))) {
            fprintf(stderr, "lode status: backuppolicy \"%s\" not found in namespace \"%s\"\n",
                    o->policy, ns);
            rc = CLI_USAGE;
            goto close;
        }
        if (!cmd_status_ok(&pol)) {
            rc = cmd_status_api_error("the policy", &k, &pol, NULL);
            goto close;
        }
        w.policies = json_array();
        json_array_append(w.policies, pol.body);
    } else {
        if (cli_kube_list(&k, &rp, NULL, false, &pol, &err) != 0) {
            rc = cmd_status_api_error("the policies", &k, NULL, &err);
            goto close;
        }
        if (!cmd_status_ok(&pol)) {
            rc = cmd_status_api_error("the policies", &k, &pol, NULL);
            goto close;
        }
        w.policies = json_incref(json_object_get(pol.body, "items"));
    }

    /* The Backups of the namespace (or cluster) and, when a policy selects, the nodes. */
    if (json_array_size(w.policies) > 0) {
        if (cli_kube_list(&k, &rb, NULL, false, &bk, &err) != 0) {
            rc = cmd_status_api_error("the Backups", &k, NULL, &err);
            goto close;
        }
        if (!cmd_status_ok(&bk)) {
            rc = cmd_status_api_error("the Backups", &k, &bk, NULL);
            goto close;
        }
        w.backups = json_object_get(bk.body, "items");
        if (cli_kube_list(&k, &rn, NULL, true, &nodes, &err) != 0) {
            rc = cmd_status_api_error("the nodes", &k, NULL, &err);
            goto close;
        }
        if (cmd_status_ok(&nodes)) {
            w.nodes = json_object_get(nodes.body, "items");
        } else if (nodes.status == 403) {
            /* A namespace user may not see nodes: say what is missing, show the rest. */
            fprintf(stderr,
                    "lode status: warning: cannot list nodes (%s); hosts without Backups "
                    "are not shown and next runs are computed for every host\n",
                    nodes.message);
        } else {
            rc = cmd_status_api_error("the nodes", &k, &nodes, NULL);
            goto close;
        }
    }

    w.now = (int64_t)time(NULL);
    nps = json_array_size(w.policies);
    ps = util_calloc(nps + 1, sizeof(*ps));
    for (size_t i = 0; i < nps; i++) {
        if (cmd_status_prepare(&ps[i], json_array_get(w.policies, i), &w, &err) != 0) {
            fprintf(stderr, "lode status: %s\n", err.msg);
            nps = i + 1;
            rc = CLI_USAGE;
            goto free_policies;
        }
        cmd_status_evaluate(&ps[i], &w);
    }

    rc = CLI_OK;
    for (size_t i = 0; i < nps; i++)
        if (ps[i].overdue > 0 || !ps[i].valid)
            rc = CLI_INVALID;
    if (o->output == CLI_OUTPUT_JSON) {
        json_t *arr = json_array();
        for (size_t i = 0; i < nps; i++)
            json_array_append_new(arr, cmd_status_json_policy(&ps[i], w.now));
        json_t *doc = json_pack("{s:o, s:o}", "time", cli_json_time(w.now), "policies", arr);
        cli_print_json(doc);
        json_decref(doc);
    } else if (nps == 0) {
        if (o->all)
            printf("No BackupPolicies in the cluster.\n");
        else
            printf("No BackupPolicies in namespace %s.\n", ns);
    } else {
        for (size_t i = 0; i < nps; i++)
            cmd_status_print_policy(&ps[i], db, o->utc, w.now);
    }
free_policies:
    for (size_t i = 0; i < nps; i++)
        cmd_status_policy_free(&ps[i]);
    free(ps);
close:
    json_decref(w.policies);
    cli_kube_reply_free(&pol);
    cli_kube_reply_free(&bk);
    cli_kube_reply_free(&nodes);
    cli_kube_close(&k);
    tz_db_close(db);
    return rc;
}

int cmd_status(int argc, char **argv)
{
    struct cmd_status_opts o = {.output = CLI_OUTPUT_TEXT};
    int c;
    static const struct option opts[] = {
        {"namespace", required_argument, NULL, 'n'},
        {"all-namespaces", no_argument, NULL, 'A'},
        {"output", required_argument, NULL, 'o'},
        {"utc", no_argument, NULL, 'u'},
        {"kubeconfig", required_argument, NULL, 'k'},
        {"context", required_argument, NULL, 'c'},
        {"zoneinfo", required_argument, NULL, 'z'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "n:Ao:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (optarg[0] == '\0')
                return cli_usage_error("status", "--namespace is empty");
            o.namespace = optarg;
            break;
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
        case 'k':
            o.kubeconfig = optarg;
            break;
        case 'c':
            o.context = optarg;
            break;
        case 'z':
            o.zoneinfo = optarg;
            break;
        case 'h':
            cmd_status_usage(stdout);
            return CLI_OK;
        default:
            return cli_usage_error("status", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
    }
    if (optind < argc)
        o.policy = argv[optind++];
    if (optind < argc)
        return cli_usage_error("status", "give at most one POLICY, not also \"%s\"", argv[optind]);
    if (o.all && o.namespace != NULL)
        return cli_usage_error("status", "--namespace and --all-namespaces exclude each other");
    if (o.all && o.policy != NULL)
        return cli_usage_error("status", "a POLICY is looked up in one namespace: drop "
                                         "--all-namespaces or the POLICY");
    return cmd_status_run(&o);
}
