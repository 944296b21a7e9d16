/*
 * The controller's decisions for one (policy, host), with a fake clock: on-time
 * runs, catch-up after an outage, skips behind a running backup, time_limit, Job
 * outcomes, manual runs, history and overdue. Policies go through the real
 * validator and the system's tz database.
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

static void load_policy(struct ctl_policy *p, const char *spec_json, int64_t now)
{
    char *text = util_asprintf(
        "{\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\","
        "\"metadata\":{\"name\":\"etc\",\"namespace\":\"ops\",\"uid\":\"puid\",\"generation\":1,"
        "\"creationTimestamp\":\"2026-03-01T00:00:00Z\"},\"spec\":%s}",
        spec_json);
    json_error_t jerr;
    json_t *obj = json_loads(text, 0, &jerr);
    assert_non_null(obj);
    struct util_err err = {0};
    assert_int_equal(ctl_policy_from_json(p, obj, tzf_db, now, &err), 0);
    json_decref(obj);
    free(text);
}

#define DAILY_UTC                                                                                  \
    "{\"repository\":\"main\",\"paths\":[\"/etc\"],"                                               \
    "\"schedule\":{\"cron\":\"0 2 * * *\",\"jitter\":\"0s\"},\"limits\":{\"maxRuntime\":\"2h\"}}"

struct fixture {
    struct ctl_policy policy;
    struct ctl_node node;
    struct ctl_backup backups[16];
    struct ctl_job jobs[16];
    struct ctl_backup *bp[16];
    const struct ctl_job *jp[16];
    size_t n;
    struct ctl_config cfg;
    struct ctl_actions acts;
    struct ctl_pair_output out;
};

static void fixture_init(struct fixture *f, const char *spec)
{
    memset(f, 0, sizeof(*f));
    load_policy(&f->policy, spec, tzf_at("2026-03-01T00:00:00Z"));
    assert_true(f->policy.valid);
    f->node.name = "node-1";
    f->node.created = tzf_at("2026-01-01T00:00:00Z");
    f->node.ready = true;
    f->cfg.history = 3;
    f->cfg.job.agent_image = "lodestore:test";
    f->cfg.job.ttl_seconds = 3600;
    ctl_actions_init(&f->acts);
}

static void fixture_free(struct fixture *f)
{
    for (size_t i = 0; i < f->n; i++) {
        ctl_backup_free(&f->backups[i]);
        ctl_job_free(&f->jobs[i]);
    }
    ctl_actions_free(&f->acts);
    ctl_policy_free(&f->policy);
}

/* Adds a Backup of the fixture's pair; job_state: NULL none, "active", "ok", "failed", "deadline".
 */
static struct ctl_backup *add_backup(struct fixture *f, const char *slot, const char *slot_time,
                                     const char *phase, const char *created, const char *job_state)
{
    size_t i = f->n++;
    struct ctl_backup *b = &f->backups[i];
    memset(b, 0, sizeof(*b));
    b->ns = util_strdup("ops");
    b->name = util_asprintf("bk-%zu", i);
    b->uid = util_asprintf("buid-%zu", i);
    b->policy = util_strdup("etc");
    b->host = util_strdup("node-1");
    b->slot = util_strdup(slot);
    b->trigger = slot[0] ? CTL_TRIGGER_SCHEDULED : CTL_TRIGGER_MANUAL;
    if (slot_time != NULL) {
        b->has_slot_time = true;
        b->slot_time = tzf_at(slot_time);
    }
    b->created = tzf_at(created);
    b->phase = CTL_PHASE_PENDING;
    b->has_status = phase[0] != '\0'; /* "": no status written yet */
    for (int p = CTL_PHASE_PENDING; p <= CTL_PHASE_FAILED; p++)
        if (strcmp(phase, ctl_phase_name(p)) == 0)
            b->phase = p;
    if (b->phase == CTL_PHASE_SUCCEEDED || b->phase == CTL_PHASE_FAILED)
        b->completed = b->created + 600;
    /* A Succeeded Backup here has a good snapshot (test_overdue.c tries the others). */
    b->good = b->phase == CTL_PHASE_SUCCEEDED;
    b->good_at = binding_success_time(b->completed, b->created);
    f->bp[i] = b;
    f->jp[i] = NULL;
    if (job_state != NULL) {
        struct ctl_job *j = &f->jobs[i];
        memset(j, 0, sizeof(*j));
        j->ns = util_strdup("ops");
        j->name = util_strdup(b->name);
        j->owner = util_strdup(b->name);
        j->started = b->created + 5;
        if (strcmp(job_state, "active") == 0) {
            j->active = 1;
        } else {
            j->finished = true;
            j->completed = b->created + 300;
            j->succeeded = strcmp(job_state, "ok") == 0;
            if (strcmp(job_state, "deadline") == 0)
                j->fail_reason = util_strdup("DeadlineExceeded");
            else if (strcmp(job_state, "failed") == 0)
                j->fail_reason = util_strdup("BackoffLimitExceeded");
        }
        f->jp[i] = j;
    }
    return b;
}

static bool f_was_overdue;
static int64_t f_started_slot;
static int64_t f_gap_slot;
static int64_t f_selected_since;
static const char *f_blocked;
static bool f_node_gone; /* with node NULL: the Node does not exist (else: not selected) */

static void run(struct fixture *f, const char *now, int64_t reported)
{
    struct ctl_pair_input in = {
        .policy = &f->policy,
        .host = "node-1",
        .node = f->node.name ? &f->node : NULL,
        .node_exists = !f_node_gone,
        .blocked = f_blocked,
        .gap_slot = f_gap_slot,
        .selected_since = f_selected_since,
        .backups = f->bp,
        .jobs = f->jp,
        .nbackups = f->n,
        .limit = binding_alert_limit(&f->policy.bind, tzf_at(now)),
        .offset = 0,
        .reported_slot = reported,
        .was_overdue = f_was_overdue,
        .started_slot = f_started_slot,
        .now = tzf_at(now),
    };
    ctl_actions_free(&f->acts);
    ctl_reconcile_pair(&in, &f->cfg, &f->acts, &f->out);
}

static size_t count(const struct fixture *f, enum ctl_action_type type)
{
    size_t n = 0;
    for (size_t i = 0; i < f->acts.n; i++)
        n += f->acts.v[i].type == type;
    return n;
}

static const struct ctl_action *first(const struct fixture *f, enum ctl_action_type type)
{
    for (size_t i = 0; i < f->acts.n; i++)
        if (f->acts.v[i].type == type)
            return &f->acts.v[i];
    fail_msg("no action of type %d", type);
    return NULL;
}

static size_t count_events(const struct fixture *f, const char *reason)
{
    size_t n = 0;
    for (size_t i = 0; i < f->acts.n; i++)
        n += f->acts.v[i].type == CTL_ACT_EVENT && strcmp(f->acts.v[i].reason, reason) == 0;
    return n;
}

static const struct ctl_action *event(const struct fixture *f, const char *reason)
{
    for (size_t i = 0; i < f->acts.n; i++)
        if (f->acts.v[i].type == CTL_ACT_EVENT && strcmp(f->acts.v[i].reason, reason) == 0)
            return &f->acts.v[i];
    fail_msg("no %s event", reason);
    return NULL;
}

static void test_on_time_run(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    add_backup(&f, "2026-03-09T02:00", "2026-03-09T02:00:00Z", "Succeeded", "2026-03-09T02:00:01Z",
               NULL);
    run(&f, "2026-03-10T01:59:59Z", 0);
    assert_int_equal(f.acts.n, 0); /* nothing due yet */
    assert_int_equal(f.out.wake, tzf_at("2026-03-10T02:00:00Z"));

    run(&f, "2026-03-10T02:00:05Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 1);
    const struct ctl_action *a = first(&f, CTL_ACT_CREATE_RUN);
    char name[CTL_NAME_MAX];
    ctl_backup_name("ops", "etc", "node-1", "2026-03-10T02:00", name);
    assert_string_equal(a->name, name);
    assert_string_equal(a->slot, "2026-03-10T02:00");
    assert_string_equal(ctl_trigger_name(a->trigger), "scheduled");
    assert_int_equal(a->status.slot_time, tzf_at("2026-03-10T02:00:00Z"));
    assert_int_equal(a->status.run_time, tzf_at("2026-03-10T02:00:00Z"));
    /* Its first status is not written with it: it rides on the Running patch. */
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 0);
    assert_string_equal(a->host, "node-1");
    assert_string_equal(first(&f, CTL_ACT_EVENT)->reason, "BackupStarted");
    assert_int_equal(f.out.wake, tzf_at("2026-03-11T02:00:00Z"));
    assert_true(f.out.running);
    fixture_free(&f);
}

/* Deleting a slot's Backup does not run the slot again: the started slot outlives it. */
static void test_deleted_backup_slot_is_not_run_again(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Running", "2026-03-10T02:00:00Z",
               "active");
    run(&f, "2026-03-10T02:00:30Z", 0);
    assert_int_equal(f.out.started_slot, tzf_at("2026-03-10T02:00:00Z")); /* to be persisted */
    fixture_free(&f);

    /* The Backup is gone; without the persisted slot the 02:00 slot would run again. */
    fixture_init(&f, DAILY_UTC);
    run(&f, "2026-03-10T02:00:40Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 1); /* what happened before the fix */
    f_started_slot = tzf_at("2026-03-10T02:00:00Z");
    run(&f, "2026-03-10T02:00:40Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0);
    assert_int_equal(count_events(&f, "Missed") + count_events(&f, "CaughtUp"), 0);
    assert_int_equal(f.out.started_slot, tzf_at("2026-03-10T02:00:00Z"));
    assert_int_equal(f.out.next_run, tzf_at("2026-03-11T02:00:00Z"));
    run(&f, "2026-03-11T02:00:05Z", 0); /* the next slot runs as usual */
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 1);
    f_started_slot = 0;
    fixture_free(&f);
}

static void test_slot_already_started_is_not_run_again(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    /* A restart finds the slot's Backup: done, or still running. */
    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Succeeded", "2026-03-10T02:00:01Z",
               "ok");
    run(&f, "2026-03-10T05:00:00Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0);
    assert_int_equal(count(&f, CTL_ACT_EVENT), 0);
    assert_int_equal(f.out.decision.reason, SCHED_ALREADY_STARTED);
    fixture_free(&f);
}

static void test_the_running_slot_is_not_reported_missed(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Running", "2026-03-10T02:00:01Z",
               "active");
    run(&f, "2026-03-10T02:00:30Z", 0);
    assert_int_equal(count_events(&f, "Skipped") + count_events(&f, "Missed"), 0);
    assert_false(f.out.missed);
    f.node.ready = false; /* the node going away does not make its running slot missed */
    run(&f, "2026-03-10T02:01:00Z", 0);
    assert_int_equal(count_events(&f, "Skipped") + count_events(&f, "Missed"), 0);
    fixture_free(&f);
}

static void test_one_catch_up_after_three_days_offline(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Succeeded", "2026-03-10T02:00:01Z",
               "ok");
    f.node.ready = false;
    run(&f, "2026-03-11T02:00:30Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0);
    assert_string_equal(first(&f, CTL_ACT_EVENT)->reason, "Missed");
    assert_true(f.out.missed);
    int64_t reported = f.out.reported_slot;
    /* Reconciled again while still down: the same slot is not reported twice. */
    run(&f, "2026-03-11T09:00:00Z", reported);
    assert_int_equal(f.acts.n, 0);
    assert_false(f.out.missed);

    /* Back three days later at 10:00: one catch-up, for the last missed slot only. */
    f.node.ready = true;
    run(&f, "2026-03-13T10:00:00Z", reported);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 1);
    const struct ctl_action *a = first(&f, CTL_ACT_CREATE_RUN);
    assert_string_equal(a->slot, "2026-03-13T02:00");
    assert_string_equal(ctl_trigger_name(a->trigger), "catch-up");
    assert_string_equal(first(&f, CTL_ACT_EVENT)->reason, "CaughtUp");
    assert_non_null(strstr(first(&f, CTL_ACT_EVENT)->message, "8h after its run time"));
    fixture_free(&f);
}

#define DAILY_SUSPENDED                                                                            \
    "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"suspend\":true,"                              \
    "\"schedule\":{\"cron\":\"0 2 * * *\",\"jitter\":\"0s\"},\"limits\":{\"maxRuntime\":\"2h\"}}"

/* Suspended: nothing starts, nothing is reported missed; resuming runs one catch-up. */
static void test_suspend_then_resume_catches_up_once(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_SUSPENDED);
    assert_true(f.policy.spec.suspend);
    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Succeeded", "2026-03-10T02:00:01Z",
               "ok");
    run(&f, "2026-03-11T02:00:30Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0);
    assert_int_equal(count(&f, CTL_ACT_EVENT), 0);
    assert_int_equal(f.out.missed, 0);
    assert_int_equal(f.out.next_run, INT64_MAX);
    /* It still wakes at the next slot, to see it pass. */
    assert_int_equal(f.out.wake, tzf_at("2026-03-12T02:00:00Z"));
    run(&f, "2026-03-12T02:00:30Z", f.out.reported_slot);
    assert_int_equal(f.acts.n, 0);
    int64_t reported = f.out.reported_slot;
    f_gap_slot = f.out.gap_slot;
    assert_int_equal(reported, tzf_at("2026-03-12T02:00:00Z"));

    /* Resumed at 09:00: one catch-up of the last slot, and no gap reported for the slot of
     * the 11th, which passed while suspended. */
    ctl_policy_free(&f.policy);
    load_policy(&f.policy, DAILY_UTC, tzf_at("2026-03-01T00:00:00Z"));
    run(&f, "2026-03-12T09:00:00Z", reported);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 1);
    assert_string_equal(first(&f, CTL_ACT_CREATE_RUN)->slot, "2026-03-12T02:00");
    assert_string_equal(ctl_trigger_name(first(&f, CTL_ACT_CREATE_RUN)->trigger), "catch-up");
    assert_int_equal(count_events(&f, "CaughtUp"), 1);
    assert_int_equal(count_events(&f, "Missed"), 0);
    f_gap_slot = 0;
    fixture_free(&f);
}

/* The alert limit the schedule gives holds while suspended; resumed after the catch-up
 * window, nothing runs and nothing is reported until the next slot. */
static void test_suspend_keeps_alert_limit_and_window(void **state)
{
    struct fixture f;
    fixture_init(
        &f, "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"suspend\":true,"
            "\"schedule\":{\"cron\":\"0 2 * * *\",\"jitter\":\"0s\",\"catchUpWindow\":\"1h\"}}");
    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Succeeded", "2026-03-10T02:00:01Z",
               "ok");
    /* More than 48h after the last success (daily, jitter 0s: the limit is 48h): overdue. */
    run(&f, "2026-03-12T03:00:00Z", 0);
    assert_true(f.out.overdue);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0);
    assert_int_equal(count(&f, CTL_ACT_EVENT), 1);
    assert_string_equal(first(&f, CTL_ACT_EVENT)->reason, "Overdue");
    int64_t reported = f.out.reported_slot;
    f_gap_slot = f.out.gap_slot;
    ctl_policy_free(&f.policy);
    load_policy(&f.policy,
                "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"schedule\":{\"cron\":\"0 2 * * "
                "*\",\"jitter\":\"0s\",\"catchUpWindow\":\"1h\"}}",
                tzf_at("2026-03-01T00:00:00Z"));
    f_was_overdue = true;
    run(&f, "2026-03-12T05:00:00Z", reported);
    assert_int_equal(f.out.decision.reason, SCHED_TOO_LATE);
    assert_int_equal(f.acts.n, 0);
    assert_int_equal(f.out.next_run, tzf_at("2026-03-13T02:00:00Z"));
    f_was_overdue = false;
    f_gap_slot = 0;
    fixture_free(&f);
}

static void test_no_catch_up_outside_the_window(void **state)
{
    struct fixture f;
    fixture_init(&f,
                 "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"schedule\":{\"cron\":\"0 2 * * "
                 "*\",\"jitter\":\"0s\",\"catchUpWindow\":\"1h\"}}");
    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Succeeded", "2026-03-10T02:00:01Z",
               "ok");
    run(&f, "2026-03-11T03:00:01Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0);
    assert_int_equal(f.out.decision.reason, SCHED_TOO_LATE);
    assert_non_null(strstr(first(&f, CTL_ACT_EVENT)->message, "catch-up window of 1h"));
    run(&f, "2026-03-11T03:00:00Z", 0); /* exactly the window: still in time */
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 1);
    fixture_free(&f);
}

static void test_skip_behind_running_then_catch_up(void **state)
{
    struct fixture f;
    fixture_init(&f,
                 "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"schedule\":{\"cron\":\"0 * * * "
                 "*\",\"jitter\":\"0s\"},\"limits\":{\"maxRuntime\":\"7d\"}}");
    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Running", "2026-03-10T02:00:01Z",
               "active");
    run(&f, "2026-03-10T03:00:02Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0);
    assert_string_equal(first(&f, CTL_ACT_EVENT)->reason, "Skipped");
    assert_int_equal(f.out.decision.reason, SCHED_RUNNING);

    /* Ended within the minute: the skipped slot still runs as a catch-up. */
    {
        struct fixture g;
        fixture_init(&g,
                     "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"schedule\":{\"cron\":\"0 * * "
                     "* *\",\"jitter\":\"0s\"}}");
        add_backup(&g, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Succeeded",
                   "2026-03-10T02:00:01Z", NULL);
        run(&g, "2026-03-10T03:00:30Z", tzf_at("2026-03-10T03:00:00Z"));
        assert_string_equal(ctl_trigger_name(first(&g, CTL_ACT_CREATE_RUN)->trigger), "catch-up");
        run(&g, "2026-03-10T03:00:30Z", 0);
        assert_string_equal(ctl_trigger_name(first(&g, CTL_ACT_CREATE_RUN)->trigger), "scheduled");
        fixture_free(&g);
    }

    /* The long backup ends at 03:20: its outcome is recorded and 03:00 is caught up. */
    ctl_job_free(&f.jobs[0]);
    f.jobs[0].ns = util_strdup("ops");
    f.jobs[0].name = util_strdup("bk-0");
    f.jobs[0].finished = f.jobs[0].succeeded = true;
    f.jobs[0].completed = tzf_at("2026-03-10T03:20:00Z");
    run(&f, "2026-03-10T03:20:01Z", f.out.reported_slot);
    const struct ctl_action *st = first(&f, CTL_ACT_BACKUP_STATUS);
    assert_int_equal(st->status.phase, CTL_PHASE_SUCCEEDED);
    assert_int_equal(st->status.completed, tzf_at("2026-03-10T03:20:00Z"));
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 1);
    assert_string_equal(first(&f, CTL_ACT_CREATE_RUN)->slot, "2026-03-10T03:00");
    assert_string_equal(ctl_trigger_name(first(&f, CTL_ACT_CREATE_RUN)->trigger), "catch-up");
    /* Whether its snapshot is good is known once its result is recorded (test_overdue.c). */
    assert_false(f.out.has_success);
    fixture_free(&f);
}

static void test_time_limit(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC); /* maxRuntime 2h */
    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Running", "2026-03-10T02:00:00Z",
               "active");
    f.backups[0].started = tzf_at("2026-03-10T02:00:05Z");
    run(&f, "2026-03-10T05:00:04Z", 0);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 0);
    assert_int_equal(f.out.wake, tzf_at("2026-03-10T05:00:05Z")); /* start + 2h + 1h */
    run(&f, "2026-03-10T05:00:05Z", 0);
    const struct ctl_action *st = first(&f, CTL_ACT_BACKUP_STATUS);
    assert_int_equal(st->status.phase, CTL_PHASE_FAILED);
    assert_string_equal(st->status.reason, "time_limit");
    assert_non_null(strstr(st->status.message, "maxRuntime of 2h"));
    assert_string_equal(first(&f, CTL_ACT_DELETE_JOB)->name, "bk-0");
    assert_string_equal(first(&f, CTL_ACT_EVENT)->reason, "TimeLimit");
    assert_false(f.out.running);

    /* Recorded as failed; a Job that is still there (or came late) is deleted, once. */
    f.backups[0].phase = CTL_PHASE_FAILED;
    f.backups[0].reason = util_strdup("time_limit");
    run(&f, "2026-03-10T05:01:00Z", 0);
    assert_int_equal(count(&f, CTL_ACT_DELETE_JOB), 1);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 0);
    f.jobs[0].deleting = true;
    run(&f, "2026-03-10T05:02:00Z", 0);
    assert_int_equal(count(&f, CTL_ACT_DELETE_JOB), 0);
    fixture_free(&f);
}

static void test_job_outcomes(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    add_backup(&f, "2026-03-08T02:00", "2026-03-08T02:00:00Z", "Running", "2026-03-08T02:00:00Z",
               "deadline");
    add_backup(&f, "2026-03-09T02:00", "2026-03-09T02:00:00Z", "Pending", "2026-03-09T02:00:00Z",
               "failed");
    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Pending", "2026-03-10T02:00:00Z",
               "active");
    run(&f, "2026-03-10T02:00:30Z", 0);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 3);
    assert_string_equal(f.acts.v[0].status.reason, "max_runtime");
    assert_non_null(strstr(f.acts.v[0].status.message, "no snapshot was written"));
    assert_string_equal(f.acts.v[1].status.reason, "job_failed");
    assert_int_equal(f.acts.v[2].status.phase, CTL_PHASE_RUNNING);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0);
    fixture_free(&f);
}

/*
 * A run's first status (slot, run time, Job) is one write: with Running as soon as its Job
 * has started (what a person watching the run reads is not behind it), or Pending late.
 */
static void test_first_status_is_one_write(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    struct ctl_backup *b = add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "",
                                      "2026-03-10T02:00:00Z", "active");
    run(&f, "2026-03-10T02:00:06Z", 0);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 1);
    const struct ctl_action *a = first(&f, CTL_ACT_BACKUP_STATUS);
    assert_int_equal(a->status.phase, CTL_PHASE_RUNNING);
    assert_int_equal(a->status.slot_time, tzf_at("2026-03-10T02:00:00Z"));
    assert_int_equal(a->status.run_time, tzf_at("2026-03-10T02:00:00Z"));
    assert_int_equal(a->status.started, tzf_at("2026-03-10T02:00:05Z"));
    assert_string_equal(a->status.job_name, b->name);

    /* Once written, the Running patch does not repeat the slot. */
    b->has_status = true;
    run(&f, "2026-03-10T02:00:07Z", 0);
    a = first(&f, CTL_ACT_BACKUP_STATUS);
    assert_int_equal(a->status.phase, CTL_PHASE_RUNNING);
    assert_int_equal(a->status.slot_time, 0);
    assert_int_equal(a->status.run_time, 0);

    /* A Job that ended before any status: the final patch carries the first status too. */
    f.jobs[0].active = 0;
    f.jobs[0].finished = true;
    f.jobs[0].succeeded = true;
    f.jobs[0].completed = tzf_at("2026-03-10T02:00:08Z");
    b->has_status = false;
    run(&f, "2026-03-10T02:00:09Z", 0);
    a = first(&f, CTL_ACT_BACKUP_STATUS);
    assert_int_equal(a->status.phase, CTL_PHASE_SUCCEEDED);
    assert_int_equal(a->status.slot_time, tzf_at("2026-03-10T02:00:00Z"));
    assert_string_equal(a->status.job_name, b->name);
    fixture_free(&f);
}

/* A run whose Job has not started CTL_FIRST_STATUS_GRACE after its Backup says Pending. */
static void test_first_status_pending_after_grace(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    f.node.ready = false; /* so no Job starts */
    struct ctl_backup *b = add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "",
                                      "2026-03-10T02:00:00Z", NULL);
    add_backup(&f, "", NULL, "", "2026-03-10T02:00:00Z", NULL); /* by hand: left alone */
    run(&f, "2026-03-10T02:00:29Z", 0);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 0);
    assert_int_equal(f.out.wake, tzf_at("2026-03-10T02:00:30Z"));
    run(&f, "2026-03-10T02:00:30Z", 0);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 1);
    const struct ctl_action *a = first(&f, CTL_ACT_BACKUP_STATUS);
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->status.phase, CTL_PHASE_PENDING);
    assert_int_equal(a->status.slot_time, tzf_at("2026-03-10T02:00:00Z"));
    assert_string_equal(a->status.job_name, b->name);
    /* Written: nothing more until the Job starts. */
    b->has_status = true;
    run(&f, "2026-03-10T02:00:31Z", 0);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 0);
    fixture_free(&f);
}

/*
 * A run made by hand has no slot: Running and its Job's name as soon as its Job has started
 * (a person reads the Job's name to follow the run); and a run whose Job ended before any
 * status was written names its Job in its final status.
 */
static void test_first_status_manual_run(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    struct ctl_backup *b = add_backup(&f, "", NULL, "", "2026-03-10T10:00:00Z", "active");
    run(&f, "2026-03-10T10:00:06Z", 0);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 1);
    const struct ctl_action *a = first(&f, CTL_ACT_BACKUP_STATUS);
    assert_int_equal(a->status.phase, CTL_PHASE_RUNNING);
    assert_int_equal(a->status.slot_time, 0);
    assert_string_equal(a->status.job_name, b->name);

    f.jobs[0].active = 0;
    f.jobs[0].finished = true;
    f.jobs[0].succeeded = true;
    f.jobs[0].completed = tzf_at("2026-03-10T10:00:08Z");
    run(&f, "2026-03-10T10:00:09Z", 0);
    a = first(&f, CTL_ACT_BACKUP_STATUS);
    assert_int_equal(a->status.phase, CTL_PHASE_SUCCEEDED);
    assert_int_equal(a->status.slot_time, 0);
    assert_string_equal(a->status.job_name, b->name);
    /* Once a status was written, the final patch does not repeat the Job's name. */
    b->has_status = true;
    b->phase = CTL_PHASE_RUNNING;
    run(&f, "2026-03-10T10:00:10Z", 0);
    a = first(&f, CTL_ACT_BACKUP_STATUS);
    assert_int_equal(a->status.phase, CTL_PHASE_SUCCEEDED);
    assert_null(a->status.job_name);
    fixture_free(&f);
}

static void test_manual_backup_waits_its_turn(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    add_backup(&f, "", NULL, "Pending", "2026-03-10T10:00:00Z", NULL);
    run(&f, "2026-03-10T10:00:01Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_JOB), 1);
    assert_string_equal(first(&f, CTL_ACT_CREATE_JOB)->backup_uid, "buid-0");

    /* Not while another backup of the policy runs on the host, nor on a node not Ready. */
    add_backup(&f, "", NULL, "Running", "2026-03-10T09:00:00Z", "active");
    run(&f, "2026-03-10T10:00:01Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_JOB), 0);
    fixture_free(&f);

    fixture_init(&f, DAILY_UTC);
    add_backup(&f, "", NULL, "Pending", "2026-03-10T10:00:00Z", NULL);
    f.node.ready = false;
    run(&f, "2026-03-10T10:00:01Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_JOB), 0);
    fixture_free(&f);
}

static void test_history_keeps_newest_success(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC); /* history 3 */
    add_backup(&f, "2026-03-04T02:00", "2026-03-04T02:00:00Z", "Succeeded", "2026-03-04T02:00:00Z",
               NULL);
    add_backup(&f, "2026-03-05T02:00", "2026-03-05T02:00:00Z", "Succeeded", "2026-03-05T02:00:00Z",
               NULL);
    for (int d = 6; d <= 10; d++) {
        char slot[32], t[32];
        snprintf(slot, sizeof(slot), "2026-03-%02dT02:00", d);
        snprintf(t, sizeof(t), "2026-03-%02dT02:00:00Z", d);
        add_backup(&f, slot, t, "Failed", t, NULL);
    }
    run(&f, "2026-03-10T03:00:00Z", 0);
    /* Seven finished: keep the newest three and the newest success (03-05); delete three. */
    assert_int_equal(count(&f, CTL_ACT_DELETE_BACKUP), 3);
    for (size_t i = 0; i < f.acts.n; i++) {
        if (f.acts.v[i].type == CTL_ACT_DELETE_BACKUP) {
            assert_string_not_equal(f.acts.v[i].name, "bk-1");
            assert_string_not_equal(f.acts.v[i].name, "bk-6");
        }
    }
    fixture_free(&f);
}

static void test_overdue(void **state)
{
    struct fixture f;
    fixture_init(&f,
                 "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"schedule\":{\"cron\":\"0 2 * * "
                 "*\"}}"); /* daily UTC, jitter 15m: limit 48h15m */
    /* No backup yet: the age counts from the policy's creation (later than the node's). */
    run(&f, "2026-03-03T00:15:00Z", 0);
    assert_false(f.out.overdue);
    run(&f, "2026-03-03T00:15:01Z", 0);
    assert_true(f.out.overdue);
    assert_int_equal(f.out.overdue_start, tzf_at("2026-03-01T00:00:00Z"));
    /* Becoming overdue is an Event, once: not again while it stays overdue. */
    assert_non_null(strstr(event(&f, "Overdue")->message, "within 48h15m"));
    f_was_overdue = true;
    run(&f, "2026-03-03T00:20:00Z", 0);
    assert_int_equal(count_events(&f, "Overdue"), 0);
    f_was_overdue = false;

    add_backup(&f, "2026-03-10T02:00", "2026-03-10T02:00:00Z", "Succeeded", "2026-03-10T02:00:00Z",
               NULL); /* completed at 02:10 */
    run(&f, "2026-03-11T12:00:00Z", 0);
    assert_false(f.out.overdue);
    assert_int_equal(f.out.last_success, tzf_at("2026-03-10T02:10:00Z"));
    /* It will become overdue 48h15m after the success: the pair wakes then at the latest. */
    assert_true(f.out.wake <= tzf_at("2026-03-12T02:25:01Z"));

    /* maxAge overrides; a policy without schedule or maxAge is never overdue. */
    fixture_free(&f);
    fixture_init(&f, "{\"repository\":\"main\",\"paths\":[\"/etc\"]}");
    run(&f, "2030-01-01T00:00:00Z", 0);
    assert_false(f.out.overdue);
    assert_int_equal(f.acts.n, 0);
    fixture_free(&f);
}

static void test_slots_before_creation_are_not_missed(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);                     /* created 2026-03-01T00:00Z */
    f.node.created = tzf_at("2026-03-05T12:00:00Z"); /* joined later */
    run(&f, "2026-03-05T12:30:00Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0);
    assert_int_equal(count(&f, CTL_ACT_EVENT), 0);
    assert_int_equal(f.out.decision.reason, SCHED_NOTHING_DUE);
    fixture_free(&f);
}

static void test_invalid_policy_does_nothing(void **state)
{
    struct ctl_policy p;
    load_policy(
        &p, "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"schedule\":{\"cron\":\"0 0 30 2 *\"}}",
        tzf_at("2026-03-01T00:00:00Z"));
    assert_false(p.valid);
    assert_non_null(strstr(p.invalid_message, "spec.schedule.cron"));
    ctl_policy_free(&p);
}

/* Issue 10, defect 5: an invalid policy still counts the nodes its nodeSelector selects. */
static void test_invalid_policy_still_selects(void **state)
{
    struct ctl_policy p;
    struct ctl_node *db_node, *web_node;
    struct util_err err = {0};
    json_t *o = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", "n1", "labels", "role", "db");
    assert_int_equal(ctl_node_from_json(&db_node, o, &err), 0);
    json_decref(o);
    o = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", "n2", "labels", "role", "web");
    assert_int_equal(ctl_node_from_json(&web_node, o, &err), 0);
    json_decref(o);

    load_policy(&p,
                "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"nodeSelector\":{\"role\":\"db\"},"
                "\"schedule\":{\"cron\":\"0 0 30 2 *\"}}",
                tzf_at("2026-03-01T00:00:00Z"));
    assert_false(p.valid);
    assert_true(ctl_node_selected(db_node, &p));
    assert_false(ctl_node_selected(web_node, &p));
    ctl_policy_free(&p);
    /* No selector: every node, as for a valid policy. */
    load_policy(&p, "{\"repository\":\"main\",\"paths\":[\"relative\"]}",
                tzf_at("2026-03-01T00:00:00Z"));
    assert_false(p.valid);
    assert_true(ctl_node_selected(web_node, &p));
    ctl_policy_free(&p);
    /* A selector that is itself broken selects nothing. */
    load_policy(&p, "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"nodeSelector\":{\"role\":1}}",
                tzf_at("2026-03-01T00:00:00Z"));
    assert_false(p.valid);
    assert_false(ctl_node_selected(db_node, &p));
    ctl_policy_free(&p);
    ctl_node_free(db_node);
    ctl_node_free(web_node);
}

static void test_schedule_change_time(void **state)
{
    struct ctl_policy p;
    /* No status yet: the schedule began with the policy. */
    load_policy(&p, DAILY_UTC, tzf_at("2026-03-09T00:00:00Z"));
    assert_int_equal(p.schedule_changed, tzf_at("2026-03-01T00:00:00Z"));
    char hash[17];
    memcpy(hash, p.schedule_hash, 17);
    ctl_policy_free(&p);

    /* A recorded hash that matches keeps its time; one that differs means "changed now". */
    json_t *obj = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s, s:i, s:s}, s:{s:s, s:[s], s:{s:s, s:s}}, s:{s:s, s:s}}",
        "apiVersion", "lodestore.io/v1alpha1", "kind", "BackupPolicy", "metadata", "name", "etc",
        "namespace", "ops", "uid", "u", "generation", 2, "creationTimestamp",
        "2026-03-01T00:00:00Z", "spec", "repository", "main", "paths", "/etc", "schedule", "cron",
        "0 2 * * *", "jitter", "0s", "status", "scheduleHash", hash, "scheduleChangedAt",
        "2026-03-05T00:00:00Z");
    struct util_err err = {0};
    assert_int_equal(ctl_policy_from_json(&p, obj, tzf_db, tzf_at("2026-03-09T00:00:00Z"), &err),
                     0);
    assert_int_equal(p.schedule_changed, tzf_at("2026-03-05T00:00:00Z"));
    ctl_policy_free(&p);
    json_object_set_new(json_object_get(json_object_get(obj, "spec"), "schedule"), "cron",
                        json_string("0 3 * * *"));
    assert_int_equal(ctl_policy_from_json(&p, obj, tzf_db, tzf_at("2026-03-09T00:00:00Z"), &err),
                     0);
    assert_int_equal(p.schedule_changed, tzf_at("2026-03-09T00:00:00Z"));
    ctl_policy_free(&p);
    json_decref(obj);
}

#define MINUTELY                                                                                   \
    "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"schedule\":{\"cron\":\"* * * * "              \
    "*\",\"jitter\":"                                                                              \
    "\"0s\"}}"

/* Issue 10, defect 6: slots missed just before one that runs on time are counted too. */
static void test_missed_slots_before_an_on_time_run_are_counted(void **state)
{
    struct fixture f;
    fixture_init(&f, MINUTELY);
    add_backup(&f, "2026-03-10T10:00", "2026-03-10T10:00:00Z", "Succeeded", "2026-03-10T10:00:01Z",
               "ok");
    /* The controller was down from 10:00:30 to 10:03:05: 10:01 and 10:02 had no run. */
    run(&f, "2026-03-10T10:03:05Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 1);
    assert_string_equal(first(&f, CTL_ACT_CREATE_RUN)->slot, "2026-03-10T10:03");
    assert_string_equal(ctl_trigger_name(first(&f, CTL_ACT_CREATE_RUN)->trigger), "scheduled");
    assert_int_equal(f.out.missed, 2);
    assert_int_equal(count_events(&f, "Missed"), 1);
    const char *m = event(&f, "Missed")->message;
    assert_non_null(strstr(m, "2 slots on node-1 missed, 2026-03-10T10:01 to 2026-03-10T10:02"));
    assert_non_null(strstr(m, "slot 2026-03-10T10:03 runs now"));
    /* Looked at again (the run's Backup not yet seen): counted once. */
    f_gap_slot = f.out.gap_slot;
    run(&f, "2026-03-10T10:03:06Z", 0);
    assert_int_equal(f.out.missed, 0);
    assert_int_equal(count_events(&f, "Missed"), 0);
    f_gap_slot = 0;

    /* One slot missed: named alone. */
    run(&f, "2026-03-10T10:02:01Z", 0);
    assert_int_equal(f.out.missed, 1);
    assert_non_null(strstr(event(&f, "Missed")->message, "slot 2026-03-10T10:01 on node-1 missed"));
    /* Nothing missed when the last slot ran. */
    run(&f, "2026-03-10T10:01:00Z", 0);
    assert_int_equal(f.out.missed, 0);
    assert_int_equal(count_events(&f, "Missed"), 0);
    fixture_free(&f);
}

/* A node put back into the selector runs the slot that passed while it was out as a catch-up. */
static void test_a_reselected_node_catches_up(void **state)
{
    struct fixture f;
    fixture_init(&f, MINUTELY);
    add_backup(&f, "2026-03-10T10:00", "2026-03-10T10:00:00Z", "Succeeded", "2026-03-10T10:00:01Z",
               "ok");
    f_selected_since = tzf_at("2026-03-10T10:01:20Z"); /* selected again 20 s after 10:01 */
    run(&f, "2026-03-10T10:01:21Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 1);
    assert_string_equal(first(&f, CTL_ACT_CREATE_RUN)->slot, "2026-03-10T10:01");
    assert_string_equal(ctl_trigger_name(first(&f, CTL_ACT_CREATE_RUN)->trigger), "catch-up");
    assert_int_equal(count_events(&f, "CaughtUp"), 1);
    /* Selected before the run time: on time. */
    f_selected_since = tzf_at("2026-03-10T10:00:59Z");
    run(&f, "2026-03-10T10:01:21Z", 0);
    assert_string_equal(ctl_trigger_name(first(&f, CTL_ACT_CREATE_RUN)->trigger), "scheduled");
    f_selected_since = 0;
    fixture_free(&f);
}

/* Issue 10, defect 2: no run while the repository is missing; the slot is caught up after. */
static void test_a_blocked_repository_runs_nothing(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    add_backup(&f, "2026-03-09T02:00", "2026-03-09T02:00:00Z", "Succeeded", "2026-03-09T02:00:01Z",
               "ok");
    add_backup(&f, "", NULL, "Pending", "2026-03-10T01:00:00Z", NULL); /* by hand, no Job yet */
    f_blocked = "its BackupRepository ops/main does not exist";
    run(&f, "2026-03-10T02:00:30Z", 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0);
    assert_int_equal(count(&f, CTL_ACT_CREATE_JOB), 0);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 0); /* the hand-made one waits */
    assert_int_equal(f.out.missed, 1);
    assert_non_null(strstr(event(&f, "Missed")->message,
                           "missed: its BackupRepository ops/main does not exist; one catch-up"));
    int64_t reported = f.out.reported_slot;
    f_blocked = NULL;
    run(&f, "2026-03-10T03:00:00Z", reported);
    assert_int_equal(count(&f, CTL_ACT_CREATE_JOB), 1); /* the hand-made run first */
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 0); /* then the catch-up, once it ends */
    f.bp[1]->phase = CTL_PHASE_FAILED;
    run(&f, "2026-03-10T03:00:00Z", reported);
    assert_int_equal(count(&f, CTL_ACT_CREATE_RUN), 1);
    assert_string_equal(ctl_trigger_name(first(&f, CTL_ACT_CREATE_RUN)->trigger), "catch-up");
    fixture_free(&f);
}

/* Issue 10, defect 4: a Backup that nothing will ever run ends Failed, with an Event. */
static void test_backups_nothing_will_run_fail(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY_UTC);
    add_backup(&f, "", NULL, "Pending", "2026-03-10T01:00:00Z", NULL);
    add_backup(&f, "", NULL, "Running", "2026-03-10T01:00:00Z", "active"); /* its Job runs on */
    f.node.name = NULL;
    f_node_gone = true;
    run(&f, "2026-03-10T01:00:10Z", 0);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 1);
    const struct ctl_action *a = first(&f, CTL_ACT_BACKUP_STATUS);
    assert_string_equal(a->name, "bk-0");
    assert_int_equal(a->status.phase, CTL_PHASE_FAILED);
    assert_string_equal(a->status.reason, "unknown_host");
    assert_string_equal(event(&f, "UnknownHost")->name, "bk-0");
    assert_int_equal(count(&f, CTL_ACT_CREATE_JOB), 0);

    f_node_gone = false; /* the node exists, the policy does not select it */
    run(&f, "2026-03-10T01:00:10Z", 0);
    assert_string_equal(first(&f, CTL_ACT_BACKUP_STATUS)->status.reason, "host_not_selected");
    assert_non_null(strstr(event(&f, "HostNotSelected")->message, "nodeSelector"));

    /* No such policy. */
    struct ctl_pair_input in = {.host = "node-1",
                                .backups = f.bp,
                                .jobs = f.jp,
                                .nbackups = f.n,
                                .now = tzf_at("2026-03-10T01:00:10Z")};
    ctl_actions_free(&f.acts);
    ctl_reconcile_pair(&in, &f.cfg, &f.acts, &f.out);
    assert_int_equal(count(&f, CTL_ACT_BACKUP_STATUS), 1);
    assert_string_equal(first(&f, CTL_ACT_BACKUP_STATUS)->status.reason, "unknown_policy");
    assert_int_equal(count_events(&f, "UnknownPolicy"), 1);
    assert_int_equal(f.out.wake, INT64_MAX);

    /* Already final: nothing more. */
    f.bp[0]->phase = CTL_PHASE_FAILED;
    ctl_actions_free(&f.acts);
    ctl_reconcile_pair(&in, &f.cfg, &f.acts, &f.out);
    assert_int_equal(f.acts.n, 0);
    fixture_free(&f);
}

/* Refusals a person must fix get an Event; throttling and failures below HTTP do not. */
static void test_write_refused(void **state)
{
    assert_true(ctl_write_refused(403, 0));
    assert_true(ctl_write_refused(422, 0));
    assert_true(ctl_write_refused(0, UTIL_EINVAL));
    assert_false(ctl_write_refused(429, 0));
    assert_false(ctl_write_refused(408, 0));
    assert_false(ctl_write_refused(500, 0));
    assert_false(ctl_write_refused(503, 0));
    assert_false(ctl_write_refused(0, KUBE_ECONN));
    assert_false(ctl_write_refused(201, 0));
}

/* A status write coming back is the same policy; a new generation, uid or deletion is not. */
static void test_policy_same_spec(void **state)
{
    struct ctl_policy a, b;
    load_policy(&a, DAILY_UTC, tzf_at("2026-03-01T00:00:00Z"));
    load_policy(&b, DAILY_UTC, tzf_at("2026-03-02T00:00:00Z"));
    assert_true(ctl_policy_same_spec(&a, &b));
    b.generation = 2;
    assert_false(ctl_policy_same_spec(&a, &b));
    b.generation = a.generation;
    b.deleting = true;
    assert_false(ctl_policy_same_spec(&a, &b));
    b.deleting = false;
    free(b.uid);
    b.uid = util_strdup("another");
    assert_false(ctl_policy_same_spec(&a, &b));
    free(b.uid);
    b.uid = NULL;
    assert_false(ctl_policy_same_spec(&a, &b));
    ctl_policy_free(&a);
    ctl_policy_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_on_time_run),
        cmocka_unit_test(test_slot_already_started_is_not_run_again),
        cmocka_unit_test(test_deleted_backup_slot_is_not_run_again),
        cmocka_unit_test(test_the_running_slot_is_not_reported_missed),
        cmocka_unit_test(test_one_catch_up_after_three_days_offline),
        cmocka_unit_test(test_suspend_then_resume_catches_up_once),
        cmocka_unit_test(test_suspend_keeps_alert_limit_and_window),
        cmocka_unit_test(test_no_catch_up_outside_the_window),
        cmocka_unit_test(test_skip_behind_running_then_catch_up),
        cmocka_unit_test(test_time_limit),
        cmocka_unit_test(test_job_outcomes),
        cmocka_unit_test(test_first_status_is_one_write),
        cmocka_unit_test(test_write_refused),
        cmocka_unit_test(test_policy_same_spec),
        cmocka_unit_test(test_first_status_pending_after_grace),
        cmocka_unit_test(test_first_status_manual_run),
        cmocka_unit_test(test_manual_backup_waits_its_turn),
        cmocka_unit_test(test_history_keeps_newest_success),
        cmocka_unit_test(test_overdue),
        cmocka_unit_test(test_slots_before_creation_are_not_missed),
        cmocka_unit_test(test_missed_slots_before_an_on_time_run_are_counted),
        cmocka_unit_test(test_invalid_policy_still_selects),
        cmocka_unit_test(test_a_blocked_repository_runs_nothing),
        cmocka_unit_test(test_a_reselected_node_catches_up),
        cmocka_unit_test(test_backups_nothing_will_run_fail),
        cmocka_unit_test(test_invalid_policy_does_nothing),
        cmocka_unit_test(test_schedule_change_time),
    };
    return cmocka_run_group_tests(tests, tzf_setup, tzf_teardown);
}
