/*
 * The overdue clock and incomplete runs, through the controller's real parts: Backups
 * and policies reduced from the JSON the API server returns (state.h), the reconcile of
 * one (policy, host) with a fake clock (reconcile.h), and the agent's result read into a
 * Backup's status (objects.h). docs/schedule.md ("The alert limit") and docs/operator.md
 * ("Backup") state what is asserted here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile.h"
#include "tz/tz_fixture.h"

/* Daily at 02:00 UTC, jitter 15m: the alert limit is 48h15m. */
#define DAILY "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"schedule\":{\"cron\":\"0 2 * * *\"}}"
#define LIMIT (48 * 3600 + 900)

/* A policy created 2026-03-01T00:00Z, with status (JSON text) or none. */
static void load_policy(struct ctl_policy *p, const char *status, int64_t now)
{
    char *text = util_asprintf(
        "{\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\","
        "\"metadata\":{\"name\":\"etc\",\"namespace\":\"ops\",\"uid\":\"puid\",\"generation\":1,"
        "\"creationTimestamp\":\"2026-03-01T00:00:00Z\"},\"spec\":" DAILY "%s%s}",
        status ? ",\"status\":" : "", status ? status : "");
    json_t *obj = json_loads(text, 0, NULL);
    assert_non_null(obj);
    struct util_err err = {0};
    assert_int_equal(ctl_policy_from_json(p, obj, tzf_db, now, &err), 0);
    assert_true(p->valid);
    json_decref(obj);
    free(text);
}

/* A Backup object of ops/etc on node-1 created at `created`, with status as JSON text. */
static json_t *backup_obj(const char *name, const char *created, const char *status)
{
    char *text = util_asprintf("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ops\",\"uid\":"
                               "\"u-%s\",\"creationTimestamp\":\"%s\"},\"spec\":{\"policy\":"
                               "\"etc\",\"host\":\"node-1\",\"trigger\":\"manual\"},\"status\":%s}",
                               name, name, created, status);
    json_t *obj = json_loads(text, 0, NULL);
    assert_non_null(obj);
    free(text);
    return obj;
}

/* A Succeeded run completed at `done` whose snapshot has the marks given. */
static char *succeeded(const char *done, bool suspicious, bool incomplete)
{
    return util_asprintf("{\"phase\":\"Succeeded\",\"reason\":%s,\"completionTime\":\"%s\","
                         "\"snapshot\":{\"id\":\"s-%s\",\"suspicious\":%s,\"incomplete\":%s}}",
                         incomplete ? "\"incomplete\"" : "null", done, done,
                         suspicious ? "true" : "false", incomplete ? "true" : "false");
}

struct fixture {
    struct ctl_policy policy;
    struct ctl_node node;
    struct ctl_backup backups[8];
    struct ctl_backup *bp[8];
    const struct ctl_job *jp[8];
    size_t n;
    struct ctl_config cfg;
    struct ctl_actions acts;
    struct ctl_pair_output out;
    int64_t enrolled;
    bool was_overdue;
};

static void fixture_init(struct fixture *f, const char *status)
{
    memset(f, 0, sizeof(*f));
    load_policy(&f->policy, status, tzf_at("2026-03-01T00:00:00Z"));
    f->node.name = "node-1";
    f->node.created = tzf_at("2025-01-01T00:00:00Z"); /* long before the policy */
    f->node.ready = true;
    f->cfg.history = 3;
    f->cfg.job.agent_image = "lodestore:test";
    ctl_actions_init(&f->acts);
}

static void fixture_free(struct fixture *f)
{
    for (size_t i = 0; i < f->n; i++)
        ctl_backup_free(&f->backups[i]);
    ctl_actions_free(&f->acts);
    ctl_policy_free(&f->policy);
}

/* Reduces a Backup object as the cache does and adds it to the pair. */
static struct ctl_backup *add(struct fixture *f, json_t *obj)
{
    struct util_err err = {0};
    size_t i = f->n++;
    assert_int_equal(ctl_backup_from_json(&f->backups[i], obj, &err), 0);
    f->bp[i] = &f->backups[i];
    f->jp[i] = NULL;
    json_decref(obj);
    return &f->backups[i];
}

static void add_succeeded(struct fixture *f, const char *name, const char *created,
                          const char *done, bool suspicious, bool incomplete)
{
    char *st = succeeded(done, suspicious, incomplete);
    add(f, backup_obj(name, created, st));
    free(st);
}

static void run(struct fixture *f, const char *now)
{
    struct ctl_pair_input in = {
        .policy = &f->policy,
        .host = "node-1",
        .node = &f->node,
        .node_exists = true,
        .backups = f->bp,
        .jobs = f->jp,
        .nbackups = f->n,
        .limit = binding_alert_limit(&f->policy.bind, tzf_at(now)),
        .enrolled = f->enrolled,
        .was_overdue = f->was_overdue,
        .started_slot = tzf_at(now), /* every slot started: only overdue is looked at */
        .now = tzf_at(now),
    };
    ctl_actions_free(&f->acts);
    ctl_reconcile_pair(&in, &f->cfg, &f->acts, &f->out);
}

static size_t count_events(const struct fixture *f, const char *reason)
{
    size_t n = 0;
    for (size_t i = 0; i < f->acts.n; i++)
        n += f->acts.v[i].type == CTL_ACT_EVENT && strcmp(f->acts.v[i].reason, reason) == 0;
    return n;
}

/* A newer success whose snapshot is suspicious (or incomplete) does not reset the clock. */
static void test_bad_newest_success_does_not_reset(void **state)
{
    for (int bad = 0; bad < 2; bad++) {
        struct fixture f;
        fixture_init(&f, NULL);
        assert_int_equal(binding_alert_limit(&f.policy.bind, tzf_at("2026-03-10T00:00:00Z")),
                         LIMIT);
        add_succeeded(&f, "good", "2026-03-10T02:00:00Z", "2026-03-10T02:10:00Z", false, false);
        add_succeeded(&f, "bad", "2026-03-11T02:00:00Z", "2026-03-11T02:10:00Z", bad == 0,
                      bad == 1);
        assert_true(f.backups[0].good);
        assert_false(f.backups[1].good);
        run(&f, "2026-03-12T02:25:00Z"); /* 48h15m after the good one, to the second */
        assert_false(f.out.overdue);
        assert_int_equal(f.out.last_success, tzf_at("2026-03-10T02:10:00Z"));
        run(&f, "2026-03-12T02:25:01Z");
        assert_true(f.out.overdue);
        assert_int_equal(f.out.overdue_start, tzf_at("2026-03-10T02:10:00Z"));
        assert_int_equal(count_events(&f, "Overdue"), 1);
        /* History keeps the good one, which the clock reads, whatever else is trimmed. */
        f.cfg.history = 1;
        run(&f, "2026-03-12T03:00:00Z");
        for (size_t i = 0; i < f.acts.n; i++)
            if (f.acts.v[i].type == CTL_ACT_DELETE_BACKUP)
                assert_string_not_equal(f.acts.v[i].name, "good");
        fixture_free(&f);
    }

    /* With no good snapshot at all, the age counts from the enrolment (here the policy's
     * creation), not from the suspicious run. */
    struct fixture f;
    fixture_init(&f, NULL);
    add_succeeded(&f, "bad", "2026-03-02T02:00:00Z", "2026-03-02T02:10:00Z", true, false);
    run(&f, "2026-03-03T00:15:01Z");
    assert_false(f.out.has_success);
    assert_true(f.out.overdue);
    assert_int_equal(f.out.overdue_start, tzf_at("2026-03-01T00:00:00Z"));
    fixture_free(&f);
}

/* A node that existed long before and is added to the nodeSelector later. */
static void test_selected_later_counts_from_selection(void **state)
{
    struct fixture f;
    fixture_init(&f, NULL);
    int64_t seen = tzf_at("2026-03-20T09:00:00Z");
    /* Before the enrolment existed, the node's creation (2025) lost to the policy's
     * (03-01): a host selected on 03-20 was overdue at once. */
    run(&f, "2026-03-20T09:00:01Z");
    assert_true(f.out.overdue);
    /* Seen being selected: its age starts then. */
    f.enrolled = ctl_policy_enrolled(&f.policy, "node-1", seen, f.node.created,
                                     tzf_at("2026-03-20T09:00:01Z"));
    assert_int_equal(f.enrolled, seen);
    run(&f, "2026-03-20T09:00:01Z");
    assert_false(f.out.overdue);
    assert_int_equal(f.out.overdue_start, seen);
    run(&f, "2026-03-22T09:15:00Z");
    assert_false(f.out.overdue);
    run(&f, "2026-03-22T09:15:01Z");
    assert_true(f.out.overdue);
    fixture_free(&f);
}

/* The enrolment is written into the policy's status and read back after a restart. */
static void test_enrolment_survives_restart(void **state)
{
    struct fixture f;
    fixture_init(&f, "{\"enrolledHosts\":{}}");
    int64_t seen = tzf_at("2026-03-20T09:00:00Z");
    int64_t now = tzf_at("2026-03-21T00:00:00Z");
    int64_t enrolled = ctl_policy_enrolled(&f.policy, "node-1", seen, f.node.created, now);
    const char *hosts[] = {"node-1", "node-2"};
    int64_t times[] = {enrolled, 0}; /* node-2 not reconciled yet: nothing said */
    json_t *patch = ctl_policy_enrolled_json(&f.policy, hosts, times, 2);
    char *text = json_dumps(patch, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"node-1\":\"2026-03-20T09:00:00Z\"}");
    free(text);

    /* The controller restarts: a new process reads the policy with that status and did
     * not see the host become selected (selected_since 0). */
    text = json_dumps(patch, JSON_COMPACT);
    char *status = util_asprintf("{\"enrolledHosts\":%s}", text);
    free(text);
    json_decref(patch);
    fixture_free(&f);
    fixture_init(&f, status);
    free(status);
    int64_t later = tzf_at("2026-03-22T00:00:00Z");
    f.enrolled = ctl_policy_enrolled(&f.policy, "node-1", 0, f.node.created, later);
    assert_int_equal(f.enrolled, seen);
    run(&f, "2026-03-22T09:15:00Z");
    assert_false(f.out.overdue);
    assert_int_equal(f.out.overdue_start, seen);
    run(&f, "2026-03-22T09:15:01Z");
    assert_true(f.out.overdue);

    /* A host selected while the controller was down (times kept, none for it): from when
     * the restarted controller first sees it, never at once. */
    assert_int_equal(ctl_policy_enrolled(&f.policy, "node-9", 0, f.node.created, later), later);
    /* A host no longer selected is removed, so a later selection starts afresh. */
    patch = ctl_policy_enrolled_json(&f.policy, NULL, NULL, 0);
    text = json_dumps(patch, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"node-1\":null}");
    free(text);
    json_decref(patch);
    fixture_free(&f);

    /* A policy whose status predates the record: the node's creation, as before. */
    fixture_init(&f, "{\"startedSlots\":{}}");
    assert_int_equal(ctl_policy_enrolled(&f.policy, "node-1", 0, f.node.created, later),
                     f.node.created);
    fixture_free(&f);
}

/* The pod list of a Job whose backup container exited with code, leaving message. */
static json_t *pods(int code, const char *message)
{
    return json_pack("{s:[{s:{s:s}, s:{s:[{s:s, s:{s:{s:i, s:s}}}]}}]}", "items", "metadata",
                     "creationTimestamp", "2026-03-10T02:00:00Z", "status", "containerStatuses",
                     "name", "backup", "state", "terminated", "exitCode", code, "message", message);
}

static const json_t *cond(const json_t *st, const char *type)
{
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(st, "conditions"), i, x)
    {
        if (strcmp(json_string_value(json_object_get(x, "type")), type) == 0)
            return x;
    }
    return NULL;
}

#define INCOMPLETE_RESULT                                                                          \
    "{\"snapshot\":{\"id\":\"20260310T020000Z-00aa\",\"policy\":\"ops/etc\",\"host\":\"node-1\","  \
    "\"time\":\"2026-03-10T02:05:00Z\",\"incomplete\":true,\"suspicious\":false,\"files\":9},"     \
    "\"errors\":[{\"path\":\"/etc/shadow-\",\"message\":\"Permission denied\"},{\"path\":\"/etc/"  \
    "x\",\"message\":\"No such file or directory\"}]}"

/*
 * The Job of an incomplete run fails (the agent exits 3); reconcile asks for Failed
 * job_failed with the result read from the pod, and the result makes it Succeeded with
 * reason incomplete: phase, reason, message, conditions, retention owed, no good success.
 */
static void test_incomplete_run(void **state)
{
    struct fixture f;
    fixture_init(&f, NULL);
    add(&f, backup_obj("run", "2026-03-10T02:00:00Z",
                       "{\"phase\":\"Running\",\"startTime\":\"2026-03-10T02:00:05Z\"}"));
    struct ctl_job job = {.ns = "ops",
                          .name = "run",
                          .owner = "run",
                          .started = tzf_at("2026-03-10T02:00:05Z"),
                          .completed = tzf_at("2026-03-10T02:05:00Z"),
                          .finished = true,
                          .fail_reason = "BackoffLimitExceeded"};
    f.jp[0] = &job;
    run(&f, "2026-03-10T02:05:01Z");
    const struct ctl_action *a = NULL;
    for (size_t i = 0; i < f.acts.n; i++)
        if (f.acts.v[i].type == CTL_ACT_BACKUP_STATUS)
            a = &f.acts.v[i];
    assert_non_null(a);
    assert_string_equal(a->result_job, "run");
    assert_int_equal(a->status.phase, CTL_PHASE_FAILED);

    /* What the executor does with it: the patch, then the pods' result. */
    json_t *patch = ctl_backup_status_json(&a->status);
    json_t *p = pods(CTL_EXIT_INCOMPLETE, INCOMPLETE_RESULT);
    struct ctl_result r;
    ctl_backup_result(patch, p, tzf_at("2026-03-10T02:05:01Z"), &r);
    json_decref(p);
    assert_true(r.reported);
    assert_true(r.incomplete);
    const json_t *st = json_object_get(patch, "status");
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Succeeded");
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "incomplete");
    assert_non_null(strstr(json_string_value(json_object_get(st, "message")),
                           "at least 2 files could not be read (the Job's pod log lists every "
                           "one), the first /etc/shadow-: Permission denied"));
    assert_string_equal(json_string_value(json_object_get(cond(st, "Incomplete"), "status")),
                        "True");
    assert_true(json_is_true(json_object_get(json_object_get(st, "snapshot"), "incomplete")));

    /* The Backup as the API server then holds it: retention is owed after it, and it is
     * no success for the overdue clock. */
    json_t *obj = backup_obj("run", "2026-03-10T02:00:00Z", "{}");
    json_object_update(json_object_get(obj, "status"), (json_t *)st);
    assert_true(ctl_backup_wants_retention(obj));
    struct ctl_backup b;
    struct util_err err = {0};
    assert_int_equal(ctl_backup_from_json(&b, obj, &err), 0);
    assert_int_equal(b.phase, CTL_PHASE_SUCCEEDED);
    assert_true(b.has_status);
    assert_string_equal(b.reason, "incomplete");
    assert_false(b.good);
    ctl_backup_free(&b);
    /* Not for a Backup being deleted, nor one without its host; once recorded, not again. */
    json_t *meta = json_object_get(obj, "metadata");
    json_object_set_new(meta, "deletionTimestamp", json_string("2026-03-10T02:06:00Z"));
    assert_false(ctl_backup_wants_retention(obj));
    json_object_del(meta, "deletionTimestamp");
    json_object_del(json_object_get(obj, "spec"), "host");
    assert_false(ctl_backup_wants_retention(obj));
    json_object_set_new(json_object_get(obj, "spec"), "host", json_string("node-1"));
    assert_true(ctl_backup_wants_retention(obj));
    json_object_set_new(json_object_get(obj, "status"), "retention", json_object());
    assert_false(ctl_backup_wants_retention(obj));
    json_decref(obj);
    json_decref(patch);
    fixture_free(&f);
}

/* Exit 3 without an incomplete snapshot, or an incomplete one with another exit code, or
 * a failure for another reason: the run stays Failed and no retention is owed. */
static void test_other_failures_stay_failed(void **state)
{
    static const struct {
        int code;
        const char *message;
        const char *reason;
    } cases[] = {
        {3, "{\"snapshot\":null,\"error\":\"storage failure\",\"errors\":[]}", "job_failed"},
        {1, INCOMPLETE_RESULT, "job_failed"},
        {3, INCOMPLETE_RESULT, "max_runtime"},
        {3, "not json", "job_failed"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        struct ctl_backup_status s = {.phase = CTL_PHASE_FAILED,
                                      .reason = cases[i].reason,
                                      .message = "the backup Job run failed"};
        json_t *patch = ctl_backup_status_json(&s);
        json_t *p = pods(cases[i].code, cases[i].message);
        struct ctl_result r;
        ctl_backup_result(patch, p, tzf_at("2026-03-10T02:05:01Z"), &r);
        const json_t *st = json_object_get(patch, "status");
        assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
        assert_string_equal(json_string_value(json_object_get(st, "reason")), cases[i].reason);
        json_t *obj = backup_obj("run", "2026-03-10T02:00:00Z", "{}");
        json_object_update(json_object_get(obj, "status"), (json_t *)st);
        assert_false(ctl_backup_wants_retention(obj));
        json_decref(obj);
        json_decref(p);
        json_decref(patch);
    }

    /* A whole snapshot says so too. */
    struct ctl_backup_status s = {.phase = CTL_PHASE_SUCCEEDED};
    json_t *patch = ctl_backup_status_json(&s);
    json_t *p = pods(0, "{\"snapshot\":{\"id\":\"a\",\"incomplete\":false,\"suspicious\":false}}");
    struct ctl_result r;
    ctl_backup_result(patch, p, tzf_at("2026-03-10T02:05:01Z"), &r);
    const json_t *st = json_object_get(patch, "status");
    assert_false(r.incomplete);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Succeeded");
    assert_true(json_is_null(json_object_get(st, "reason")));
    assert_string_equal(json_string_value(json_object_get(cond(st, "Incomplete"), "status")),
                        "False");
    json_decref(p);
    json_decref(patch);
}

/* While a finished Job's verdict is not recorded, the host stays as overdue as it was. */
static void test_pending_verdict_holds(void **state)
{
    struct fixture f;
    fixture_init(&f, NULL);
    add(&f, backup_obj("run", "2026-03-10T02:00:00Z", "{\"phase\":\"Running\"}"));
    struct ctl_job job = {.ns = "ops",
                          .name = "run",
                          .owner = "run",
                          .completed = tzf_at("2026-03-10T02:05:00Z"),
                          .finished = true,
                          .succeeded = true};
    f.jp[0] = &job;
    /* Overdue since 03-03 (no success): the run's snapshot may be suspicious, so it
     * neither clears the host nor is it counted until its result is in. */
    f.was_overdue = true;
    run(&f, "2026-03-10T02:05:01Z");
    assert_true(f.out.overdue);
    assert_false(f.out.has_success);
    assert_int_equal(count_events(&f, "Overdue"), 0);
    /* Not overdue before: no Overdue Event while the verdict is pending. */
    f.was_overdue = false;
    run(&f, "2026-03-10T02:05:01Z");
    assert_false(f.out.overdue);
    assert_int_equal(count_events(&f, "Overdue"), 0);
    fixture_free(&f);
}

/* A Backup whose status has no phase yet is Pending with no status written (reconcile.h). */
static void test_backup_without_status(void **state)
{
    json_t *obj = backup_obj("fresh", "2026-03-10T02:00:00Z", "{}");
    struct ctl_backup b;
    struct util_err err = {0};
    assert_int_equal(ctl_backup_from_json(&b, obj, &err), 0);
    assert_int_equal(b.phase, CTL_PHASE_PENDING);
    assert_false(b.has_status);
    ctl_backup_free(&b);
    json_object_set_new(json_object_get(obj, "status"), "phase", json_string("Pending"));
    assert_int_equal(ctl_backup_from_json(&b, obj, &err), 0);
    assert_true(b.has_status);
    ctl_backup_free(&b);
    json_decref(obj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_newest_success_does_not_reset),
        cmocka_unit_test(test_selected_later_counts_from_selection),
        cmocka_unit_test(test_enrolment_survives_restart),
        cmocka_unit_test(test_incomplete_run),
        cmocka_unit_test(test_other_failures_stay_failed),
        cmocka_unit_test(test_pending_verdict_holds),
        cmocka_unit_test(test_backup_without_status),
    };
    return cmocka_run_group_tests(tests, tzf_setup, tzf_teardown);
}
