/*
 * The policy conditions a person reads in `kubectl describe` (docs/operator.md, "The three
 * resources"): Ready=True/ManualOnly for a policy without a schedule, and
 * Overdue=False/NoLimit for one with neither a schedule nor alerts.maxAge, each seen set
 * and cleared as the policy changes.
 *
 * The controller's own caches, work queue, repository resolution and status writer run
 * on a loop against the fake API server of the kube tests: the policy, a Ready node and
 * a Ready BackupRepository are listed, the policy is changed by watch events, and the
 * status patches the controller sends are what the test reads. Only the API client is
 * the test's (plain http, which ctl_init refuses on purpose).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_int.h"
#include "kube/fake_api.h"

#define NS "team"

struct t {
    uv_loop_t loop;
    uv_timer_t deadline;
    bool late;
    struct fake_server srv;
    struct ctl *c;
    char *policy;                /* the BackupPolicy as listed and sent in watch events */
    struct fake_conn *policy_ws; /* the policies' watch stream, once the controller opened it */
    json_t *status;              /* the last status the controller patched, or NULL */
};

static const char node_json[] =
    "{\"metadata\":{\"name\":\"node-1\",\"uid\":\"n1\",\"resourceVersion\":\"2\","
    "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{\"role\":\"db\"}},"
    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";

/* Ready as the controller itself last wrote it: it stands until this process checks. */
static const char repo_json[] =
    "{\"metadata\":{\"name\":\"main\",\"namespace\":\"" NS "\",\"uid\":\"r1\","
    "\"generation\":1,\"resourceVersion\":\"3\"},"
    "\"spec\":{\"endpoint\":\"http://127.0.0.1:9\",\"bucket\":\"b\",\"allowPlainHTTP\":true,"
    "\"credentialsSecret\":{\"name\":\"creds\"}},"
    "\"status\":{\"observedGeneration\":1,\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"True\",\"reason\":\"BucketReachable\",\"message\":\"reachable\"}]}}";

/* The policy at generation gen with the spec members given (JSON, after paths). */
static void set_policy(struct t *t, int gen, const char *more)
{
    free(t->policy);
    t->policy = util_asprintf(
        "{\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\","
        "\"metadata\":{\"name\":\"p\",\"namespace\":\"" NS "\",\"uid\":\"u1\",\"generation\":%d,"
        "\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
        "\"spec\":{\"repository\":\"main\",\"paths\":[\"/etc\"],"
        "\"nodeSelector\":{\"role\":\"db\"}%s}}",
        gen, 10 + gen, more);
}

static void list(struct fake_conn *c, const char *kind, const char *item)
{
    char *body = util_asprintf("{\"kind\":\"%sList\",\"metadata\":{\"resourceVersion\":\"9\"},"
                               "\"items\":[%s]}",
                               kind, item ? item : "");
    fake_respond(c, 200, body);
    free(body);
}

static void handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    char q[16];
    bool watch = fake_query(r, "watch", q, sizeof(q))[0] != '\0';

    if (strcmp(r->method, "PATCH") == 0 &&
        fake_path_is(r, "/apis/lodestore.io/v1alpha1/namespaces/" NS "/backuppolicies/p/status")) {
        json_t *patch = json_loads(r->body, 0, NULL);
        assert_non_null(patch);
        json_decref(t->status);
        t->status = json_incref(json_object_get(patch, "status"));
        json_decref(patch);
        fake_respond(c, 200, "{}");
        return;
    }
    if (strcmp(r->method, "POST") == 0) { /* Events */
        fake_respond(c, 201, "{}");
        return;
    }
    if (strcmp(r->method, "GET") != 0) {
        fake_respond(c, 404, "{}");
        return;
    }
    if (fake_path_is(r, "/api/v1/namespaces/" NS "/secrets/creds"))
        return; /* never answered: the repository stays as last recorded, Ready */
    if (watch) {
        /* Held open; only the policies' stream is fed. */
        fake_stream_begin(c, 200);
        if (fake_path_is(r, "/apis/lodestore.io/v1alpha1/backuppolicies"))
            t->policy_ws = c;
        return;
    }
    if (fake_path_is(r, "/apis/lodestore.io/v1alpha1/backuppolicies"))
        list(c, "BackupPolicy", t->policy);
    else if (fake_path_is(r, "/apis/lodestore.io/v1alpha1/backuprepositories"))
        list(c, "BackupRepository", repo_json);
    else if (fake_path_is(r, "/api/v1/nodes"))
        list(c, "Node", node_json);
    else if (fake_path_is(r, "/apis/lodestore.io/v1alpha1/backups"))
        list(c, "Backup", NULL);
    else if (fake_path_is(r, "/apis/batch/v1/jobs"))
        list(c, "Job", NULL);
    else if (fake_path_is(r, "/api/v1/pods"))
        list(c, "Pod", NULL);
    else
        fake_respond(c, 404, "{}");
}

static void on_deadline(uv_timer_t *h)
{
    ((struct t *)h->data)->late = true;
}

/* The condition of type in the last status: its status and reason, or false. */
static bool condition(const struct t *t, const char *type, const char **st, const char **reason)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(t->status, "conditions"), i, x)
    {
        if (strcmp(json_string_value(json_object_get(x, "type")), type) == 0) {
            *st = json_string_value(json_object_get(x, "status"));
            *reason = json_string_value(json_object_get(x, "reason"));
            return true;
        }
    }
    return false;
}

/*
 * Runs the loop until the controller has patched a status for generation gen whose
 * Ready and Overdue conditions have the reasons given, at most 30 s (valgrind on a busy
 * machine is slow); then checks their statuses.
 */
static void wait_conditions(struct t *t, int gen, const char *ready_st, const char *ready,
                            const char *overdue_st, const char *overdue)
{
    const char *st1 = NULL, *r1 = NULL, *st2 = NULL, *r2 = NULL;
    t->late = false;
    uv_timer_start(&t->deadline, on_deadline, 30000, 0);
    for (;;) {
        if (t->status != NULL &&
            json_integer_value(json_object_get(t->status, "observedGeneration")) == gen &&
            condition(t, "Ready", &st1, &r1) && condition(t, "Overdue", &st2, &r2) &&
            strcmp(r1, ready) == 0 && strcmp(r2, overdue) == 0)
            break;
        if (t->late)
            fail_msg("generation %d: no status with Ready %s and Overdue %s in 30 s; last: "
                     "Ready %s, Overdue %s",
                     gen, ready, overdue, r1 ? r1 : "-", r2 ? r2 : "-");
        uv_run(&t->loop, UV_RUN_ONCE);
    }
    uv_timer_stop(&t->deadline);
    assert_string_equal(st1, ready_st);
    assert_string_equal(st2, overdue_st);
}

/* A change of the policy, as a watch event on the stream the controller holds. */
static void modify(struct t *t, int gen, const char *more)
{
    set_policy(t, gen, more);
    t->late = false;
    uv_timer_start(&t->deadline, on_deadline, 30000, 0);
    while (t->policy_ws == NULL && !t->late)
        uv_run(&t->loop, UV_RUN_ONCE);
    uv_timer_stop(&t->deadline);
    assert_non_null(t->policy_ws);
    char *ev = util_asprintf("{\"type\":\"MODIFIED\",\"object\":%s}\n", t->policy);
    fake_stream_puts(t->policy_ws, ev);
    free(ev);
}

static void ctl_log_cb(int level, const char *msg, void *arg)
{
}

static void repo_changed_cb(const char *ns, const char *name, void *arg)
{
    ctl_cache_repository_changed(arg, ns, name);
}

static void start(struct t *t)
{
    struct util_err err = {0};
    struct kube_client_opts copts;
    struct ctl *c;

    assert_int_equal(uv_loop_init(&t->loop), 0);
    uv_timer_init(&t->loop, &t->deadline);
    t->deadline.data = t;
    assert_int_equal(fake_start(&t->srv, &t->loop, handler, t), 0);

    /* What ctl_init and ctl_start do, but with the test's API client. */
    c = t->c = util_calloc(1, sizeof(*c));
    c->loop = &t->loop;
    ctl_options_defaults(&c->opts);
    c->opts.log_level = -1;
    c->version = "test";
    c->identity = util_strdup("test");
    c->work_cb = ctl_work_kick;
    util_list_init(&c->writes);
    c->rcfg.history = c->opts.history;
    c->rcfg.job.agent_image = "lode:test";
    c->rcfg.job.ttl_seconds = c->opts.job_ttl;
    assert_int_equal(tz_db_open(&c->db, NULL, &err), 0);
    c->cfg.server = util_asprintf("http://127.0.0.1:%d", t->srv.port);
    c->cfg.namespace = util_strdup("default");
    c->cfg.insecure = true;
    /* Node backups allowed in the policy's namespace (docs/security.md). */
    assert_int_equal(ctl_allowlist_add(&c->allow, NS, &err), 0);
    memset(&copts, 0, sizeof(copts));
    copts.qps = -1;
    assert_int_equal(kube_client_init(&t->loop, &c->kube, &c->cfg, &copts, &err), 0);
    assert_int_equal(ctl_cache_init(c, &err), 0);
    assert_int_equal(ctl_repos_init(&t->loop, c->kube, NULL, ctl_log_cb, c, &c->repos, &err), 0);
    ctl_repos_set_change_cb(c->repos, repo_changed_cb, c);
    ctl_work_init(c);
    ctl_events_init(c);
    ctl_status_init(c);
    c->acting = true;
    ctl_cache_start(c);
    ctl_repos_start(c->repos);
}

static void stop(struct t *t)
{
    struct ctl *c = t->c;
    c->stopping = true;
    ctl_cache_stop(c);
    ctl_repos_close(c->repos);
    kube_client_close(c->kube, NULL, NULL);
    ctl_work_stop(c);
    ctl_events_stop(c);
    ctl_status_stop(c);
    uv_close((uv_handle_t *)&t->deadline, NULL);
    fake_stop(&t->srv);
    uv_run(&t->loop, UV_RUN_DEFAULT);
    ctl_write_free_all(c);
    ctl_cache_close(c);
    ctl_work_close(c);
    ctl_events_close(c);
    tz_db_close(c->db);
    ctl_allowlist_free(&c->allow);
    kube_config_free(&c->cfg);
    free(c->identity);
    free(c);
    assert_int_equal(uv_loop_close(&t->loop), 0);
    json_decref(t->status);
    free(t->policy);
}

static void test_manual_only_and_no_limit(void **state)
{
    struct t t;
    memset(&t, 0, sizeof(t));
    /* No schedule, no alerts: run only by hand, never overdue. */
    set_policy(&t, 1, "");
    start(&t);
    wait_conditions(&t, 1, "True", "ManualOnly", "False", "NoLimit");
    assert_true(json_is_null(json_object_get(t.status, "alertLimitSeconds")));

    /*
     * alerts.maxAge gives a limit without a schedule: NoLimit goes, ManualOnly stays. The
     * node and the policy are older than 36 h and no backup ever ran, so the host is due.
     */
    modify(&t, 2, ",\"alerts\":{\"maxAge\":\"36h\"}");
    wait_conditions(&t, 2, "True", "ManualOnly", "True", "NoRecentBackup");
    assert_int_equal(json_integer_value(json_object_get(t.status, "alertLimitSeconds")), 36 * 3600);

    /* A schedule: the policy is Scheduled, and its limit comes from the schedule. */
    modify(&t, 3, ",\"schedule\":{\"cron\":\"0 3 1 1 *\",\"timezone\":\"UTC\"}");
    wait_conditions(&t, 3, "True", "Scheduled", "False", "NoBackupYet");
    assert_true(json_integer_value(json_object_get(t.status, "alertLimitSeconds")) > 0);

    /* Both gone again: both conditions come back. */
    modify(&t, 4, "");
    wait_conditions(&t, 4, "True", "ManualOnly", "False", "NoLimit");
    stop(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manual_only_and_no_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
