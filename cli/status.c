#include "status.h"

#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "cli.h"

/* What the lists hold, and the evaluation time. */
struct cli_status_world {
    const struct tz_db *db;
    json_t *policies; /* array, borrowed from a reply */
    json_t *backups;  /* array */
    json_t *nodes;    /* array, or NULL when nodes could not be listed */
    int64_t now;
};

/* ---- small helpers ---- */

static const json_t *cli_status_get(const json_t *obj, const char *a, const char *b)
{
    const json_t *v = json_object_get(obj, a);
    return b != NULL ? json_object_get(v, b) : v;
}

static const char *cli_status_str(const json_t *obj, const char *a, const char *b)
{
    return json_string_value(cli_status_get(obj, a, b));
}

/* An RFC 3339 member; false when absent or unreadable. */
static bool cli_status_time(const json_t *obj, const char *a, const char *b, int64_t *out)
{
    const char *s = cli_status_str(obj, a, b);
    return s != NULL && util_parse_rfc3339(s, out, NULL) == 0;
}

/* The status condition of a type, or NULL. */
const json_t *cli_status_condition(const json_t *obj, const char *type)
{
    const json_t *conds = cli_status_get(obj, "status", "conditions");
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

static bool cli_status_condition_true(const json_t *obj, const char *type)
{
    const char *s = json_string_value(json_object_get(cli_status_condition(obj, type), "status"));
    return s != NULL && strcmp(s, "True") == 0;
}

static struct cli_status_host *cli_status_host(struct cli_status_policy *p, const char *name)
{
    for (size_t i = 0; i < p->nhosts; i++)
        if (strcmp(p->hosts[i].name, name) == 0)
            return &p->hosts[i];
    p->hosts = util_grow(p->hosts, &p->hosts_cap, p->nhosts + 1, sizeof(*p->hosts));
    struct cli_status_host *h = &p->hosts[p->nhosts++];
    memset(h, 0, sizeof(*h));
    h->name = name;
    h->selected = 0;
    return h;
}

static int cli_status_host_cmp(const void *a, const void *b)
{
    return strcmp(((const struct cli_status_host *)a)->name,
                  ((const struct cli_status_host *)b)->name);
}

/* A Node object's label, for binding_selects. */
static bool cli_status_node_has_label(const void *node, const char *key, const char *value)
{
    const json_t *labels = cli_status_get(node, "metadata", "labels");
    const char *v = json_string_value(json_object_get(labels, key));
    return v != NULL && strcmp(v, value) == 0;
}

/* ---- evaluation ---- */

static int cli_status_prepare(struct cli_status_policy *p, const json_t *obj,
                              const struct cli_status_world *w, struct util_err *err)
{
    memset(p, 0, sizeof(*p));
    p->obj = obj;
    p->ns = cli_status_str(obj, "metadata", "namespace");
    p->name = cli_status_str(obj, "metadata", "name");
    if (p->ns == NULL || p->name == NULL)
        return util_err_set(err, UTIL_EINVAL, "the API server sent a BackupPolicy without a name");
    cli_status_time(obj, "metadata", "creationTimestamp", &p->created);
    p->generation = json_integer_value(cli_status_get(obj, "metadata", "generation"));
    p->next_run = INT64_MAX;
    policy_diags_init(&p->diags);
    p->valid = policy_parse_json(&p->spec, obj, w->db, &p->diags) == 0;
    return binding_init(&p->bind, p->valid ? &p->spec : NULL, w->db, err);
}

/*
 * The alert limit: the status's when it describes this generation (the controller
 * computed it at its own clock), else the spec's at now, else the status's.
 */
static void cli_status_limit(struct cli_status_policy *p, int64_t now)
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
        p->limit = binding_alert_limit(&p->bind, now);
    }
    if (p->limit == SCHED_NO_LIMIT)
        return;
    if (p->valid && p->spec.alerts_max_age > 0)
        p->limit_source = "alerts.maxAge";
    else if (p->valid && p->spec.has_schedule)
        p->limit_source = "twice the longest gap between slots, plus the jitter";
}

static void cli_status_evaluate(struct cli_status_policy *p, const struct cli_status_world *w)
{
    size_t i;
    const json_t *x;

    cli_status_limit(p, w->now);
    /* The selected nodes; an invalid policy's by its nodeSelector alone, as the controller
     * counts them (internal/binding). */
    struct policy sel;
    bool sel_ok = p->valid || binding_selector_of(p->obj, &sel);
    if (w->nodes != NULL && sel_ok) {
        json_array_foreach(w->nodes, i, x)
        {
            const char *name = cli_status_str(x, "metadata", "name");
            if (name == NULL ||
                !binding_selects(p->valid ? &p->spec : &sel, cli_status_node_has_label, x))
                continue;
            struct cli_status_host *h = cli_status_host(p, name);
            h->selected = 1;
            cli_status_time(x, "metadata", "creationTimestamp", &h->node_created);
            /* From here on the enrolment, which the age counts from without a success. */
            h->node_created = binding_enrolled(p->obj, name, 0, h->node_created, w->now);
        }
    }
    if (!p->valid)
        binding_selector_free(&sel);
    /* The Backups of the policy, by host. */
    json_array_foreach(w->backups, i, x)
    {
        const char *ns = cli_status_str(x, "metadata", "namespace");
        const char *pol = cli_status_str(x, "spec", "policy");
        const char *host = cli_status_str(x, "spec", "host");
        if (ns == NULL || pol == NULL || host == NULL || strcmp(ns, p->ns) != 0 ||
            strcmp(pol, p->name) != 0)
            continue;
        struct cli_status_host *h = cli_status_host(p, host);
        if (w->nodes == NULL)
            h->selected = -1;
        const char *phase = cli_status_str(x, "status", "phase");
        const json_t *snap = cli_status_get(x, "status", "snapshot");
        if (json_is_true(json_object_get(snap, "suspicious"))) {
            int64_t created = 0;
            cli_status_time(x, "metadata", "creationTimestamp", &created);
            h->suspicious++;
            if (h->suspicious_id == NULL || created >= h->suspicious_created) {
                h->suspicious_id = json_string_value(json_object_get(snap, "id"));
                h->suspicious_created = created;
            }
        }
        int64_t t;
        if (binding_backup_success(x, &t)) {
            /* As the controller counts it: the newest good snapshot. */
            if (!h->has_success || t > h->last_success) {
                h->has_success = true;
                h->last_success = t;
            }
        } else if (phase == NULL ||
                   (strcmp(phase, "Failed") != 0 && strcmp(phase, "Succeeded") != 0)) {
            h->running = true; /* Pending or Running */
        }
    }
    /* The hosts the status lists as overdue (some may be unknown to the lists). */
    const json_t *listed = cli_status_get(p->obj, "status", "overdueHosts");
    json_array_foreach(listed, i, x)
    {
        const char *host = json_string_value(json_object_get(x, "host"));
        if (host == NULL)
            continue;
        struct cli_status_host *h = cli_status_host(p, host);
        if (w->nodes == NULL)
            h->selected = -1;
    }

    for (size_t k = 0; k < p->nhosts; k++) {
        struct cli_status_host *h = &p->hosts[k];
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
            cli_status_time(x, "since", NULL, &since);
            stands = !(h->has_success && h->last_success > since);
        }
        h->overdue = computed || stands;
        if (h->overdue)
            p->overdue++;
        if (h->selected != 0 && p->bind.has_sched) {
            struct sched_slot slot;
            int64_t off = binding_offset(&p->bind, h->name);
            if (sched_next(&p->bind.sched, w->now - off, &slot) == 0) {
                h->has_next = true;
                h->next_run = slot.at + off;
                if (h->next_run < p->next_run)
                    p->next_run = h->next_run;
            }
        }
    }
    if (p->nhosts > 1)
        qsort(p->hosts, p->nhosts, sizeof(*p->hosts), cli_status_host_cmp);
}

static void cli_status_policy_free(struct cli_status_policy *p)
{
    if (p->valid)
        policy_free(&p->spec);
    policy_diags_free(&p->diags);
    binding_close(&p->bind);
    free(p->hosts);
}

/* ---- JSON ---- */

static json_t *cli_status_json_time(bool has, int64_t t)
{
    return has ? cli_json_time(t) : json_null();
}

static json_t *cli_status_json_policy(const struct cli_status_policy *p, int64_t now)
{
    json_t *o = json_object(), *hosts = json_array(), *conds = json_array(), *errors = json_array();
    const json_t *st_conds = cli_status_get(p->obj, "status", "conditions");
    const char *tzv = cli_status_str(p->obj, "status", "tzdataVersion");
    size_t i;
    const json_t *c;

    json_object_set_new(o, "policy", json_sprintf("%s/%s", p->ns, p->name));
    json_object_set_new(o, "valid", json_boolean(p->valid));
    json_object_set_new(o, "ready", json_boolean(cli_status_condition_true(p->obj, "Ready")));
    json_object_set_new(o, "schedule",
                        p->bind.has_sched ? json_string(p->spec.schedule.cron_text) : json_null());
    json_object_set_new(o, "timezone",
                        p->bind.has_sched ? json_string(p->spec.schedule.timezone) : json_null());
    json_object_set_new(o, "alertLimitSeconds",
                        p->limit == SCHED_NO_LIMIT ? json_null() : json_integer(p->limit));
    json_object_set_new(o, "overdue", json_integer((json_int_t)p->overdue));
    json_object_set_new(o, "nextRun", cli_status_json_time(p->next_run != INT64_MAX, p->next_run));
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
        const struct cli_status_host *h = &p->hosts[k];
        json_t *ho = json_object();
        json_object_set_new(ho, "host", json_string(h->name));
        json_object_set_new(ho, "selected",
                            h->selected < 0 ? json_null() : json_boolean(h->selected == 1));
        json_object_set_new(ho, "lastSuccess",
                            cli_status_json_time(h->has_success, h->last_success));
        json_object_set_new(ho, "ageSeconds",
                            h->has_success ? json_integer(now - h->last_success) : json_null());
        json_object_set_new(ho, "running", json_boolean(h->running));
        json_object_set_new(ho, "overdue", json_boolean(h->overdue));
        json_object_set_new(ho, "nextRun", cli_status_json_time(h->has_next, h->next_run));
        json_object_set_new(ho, "suspicious", json_integer(h->suspicious));
        json_object_set_new(ho, "lastSuspicious",
                            h->suspicious_id != NULL ? json_string(h->suspicious_id) : json_null());
        json_array_append_new(hosts, ho);
    }
    json_object_set_new(o, "hosts", hosts);
    return o;
}

json_t *cli_status_json(const struct cli_status *st)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < st->n; i++)
        json_array_append_new(arr, cli_status_json_policy(&st->v[i], st->now));
    return json_pack("{s:o, s:o}", "time", cli_json_time(st->now), "policies", arr);
}

/* ---- fetching ---- */

/* Describes a failed request in err; returns code. */
static int cli_status_api_error(const char *what, const struct cli_kube *k,
                                const struct cli_kube_reply *r, struct util_err *err)
{
    struct util_err e = {0};
    cli_kube_reply_error(r, UTIL_EIO, &e);
    return util_err_set(err, UTIL_EIO, "cannot read %s from %s: %s%s", what, cli_kube_server(k),
                        e.msg,
                        r->status == 404 ? " (are the Lodestore CRDs installed? kubectl apply "
                                           "--server-side -f crd/)"
                                         : "");
}

static bool cli_status_ok(const struct cli_kube_reply *r)
{
    return r->status >= 200 && r->status < 300;
}

int cli_status_load(struct cli_status *st, struct cli_kube *k, const struct tz_db *db,
                    const struct cli_status_query *q, int64_t now, struct util_err *err)
{
    struct cli_status_world w = {0};
    const char *ns = q->namespace;
    struct kube_resource rp = api_in(&api_backuppolicies, ns);
    struct kube_resource rb = api_in(&api_backups, ns);
    struct kube_resource rn = api_nodes;
    int rc;

    memset(st, 0, sizeof(*st));
    st->now = now;
    w.db = db;
    w.now = now;

    /* The policies. */
    if (q->policy != NULL) {
        if ((rc = cli_kube_get(k, &rp, q->policy, &st->pol, err)) != 0)
            return rc;
        if (st->pol.status == 404 &&
            json_is_string(cli_status_get(st->pol.body, "details", "name")))
            return util_err_set(err, UTIL_ENOENT,
                                "backuppolicy \"%s\" not found in namespace \"%s\"", q->policy,
                                ns != NULL ? ns : "");
        if (!cli_status_ok(&st->pol))
            return cli_status_api_error("the policy", k, &st->pol, err);
        st->policies = json_array();
        json_array_append(st->policies, st->pol.body);
    } else {
        if ((rc = cli_kube_list(k, &rp, NULL, false, &st->pol, err)) != 0)
            return rc;
        if (!cli_status_ok(&st->pol))
            return cli_status_api_error("the policies", k, &st->pol, err);
        st->policies = json_incref(json_object_get(st->pol.body, "items"));
    }
    w.policies = st->policies;

    /* The Backups of the namespace (or cluster) and, when a policy selects, the nodes. */
    if (json_array_size(st->policies) > 0) {
        if ((rc = cli_kube_list(k, &rb, NULL, false, &st->bk, err)) != 0)
            return rc;
        if (!cli_status_ok(&st->bk))
            return cli_status_api_error("the Backups", k, &st->bk, err);
        w.backups = json_object_get(st->bk.body, "items");
        if ((rc = cli_kube_list(k, &rn, NULL, true, &st->nodes, err)) != 0)
            return rc;
        if (cli_status_ok(&st->nodes)) {
            w.nodes = json_object_get(st->nodes.body, "items");
        } else if (st->nodes.status == 403) {
            /* A namespace user may not see nodes: say what is missing, show the rest. */
            snprintf(st->warning, sizeof(st->warning),
                     "cannot list nodes (%s); hosts without Backups are not shown and next "
                     "runs are computed for every host",
                     st->nodes.message);
        } else {
            return cli_status_api_error("the nodes", k, &st->nodes, err);
        }
    }

    st->v = util_calloc(json_array_size(st->policies) + 1, sizeof(*st->v));
    for (size_t i = 0; i < json_array_size(st->policies); i++) {
        st->n = i + 1;
        if ((rc = cli_status_prepare(&st->v[i], json_array_get(st->policies, i), &w, err)) != 0)
            return rc;
        cli_status_evaluate(&st->v[i], &w);
    }
    return 0;
}

void cli_status_free(struct cli_status *st)
{
    for (size_t i = 0; i < st->n; i++)
        cli_status_policy_free(&st->v[i]);
    free(st->v);
    json_decref(st->policies);
    cli_kube_reply_free(&st->pol);
    cli_kube_reply_free(&st->bk);
    cli_kube_reply_free(&st->nodes);
    memset(st, 0, sizeof(*st));
}
