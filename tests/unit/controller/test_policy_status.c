/*
 * A policy's status from the caches' view and a fake clock (policy_status.h): the
 * counts and the next run over the selected hosts, the overdue hosts listed longest
 * first, the started slots and the last run, and every Valid, Ready and Overdue
 * condition of docs/operator.md with its transition time. Policies go through the real
 * validator and the system's tz database.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy_status.h"
#include "tz/tz_fixture.h"

#define DAILY                                                                                      \
    "{\"repository\":\"main\",\"paths\":[\"/etc\"],"                                               \
    "\"schedule\":{\"cron\":\"0 2 * * *\",\"jitter\":\"0s\"}}"
#define BY_HAND "{\"repository\":\"main\",\"paths\":[\"/etc\"]}"
#define NEVER_FIRES                                                                                \
    "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"schedule\":{\"cron\":\"0 0 30 2 *\"}}"
#define LIMIT_48H     (48 * 3600)
#define FX_MAX_HOSTS  32
#define FX_MAX_BACKUP 8

struct fixture {
    struct ctl_policy policy;
    char names[FX_MAX_HOSTS][16];
    struct ctl_policy_status_host hosts[FX_MAX_HOSTS];
    size_t nhosts;
    struct ctl_backup backups[FX_MAX_BACKUP];
    struct ctl_backup *bp[FX_MAX_BACKUP];
    size_t nbackups;
    struct ctl_policy_status_input in;
    struct ctl_policy_status out;
    json_t *prev; /* conditions kept from an earlier build */
};

/* status_json: the object's status, or NULL for none. */
static void fixture_init(struct fixture *f, const char *spec, const char *status_json)
{
    memset(f, 0, sizeof(*f));
    char *text = util_asprintf(
        "{\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\","
        "\"metadata\":{\"name\":\"etc\",\"namespace\":\"ops\",\"uid\":\"puid\",\"generation\":3,"
        "\"creationTimestamp\":\"2026-03-01T00:00:00Z\"},\"spec\":%s%s%s}",
        spec, status_json ? ",\"status\":" : "", status_json ? status_json : "");
    json_error_t jerr;
    json_t *obj = json_loads(text, 0, &jerr);
    assert_non_null(obj);
    struct util_err err = {0};
    assert_int_equal(
        ctl_policy_from_json(&f->policy, obj, tzf_db, tzf_at("2026-03-01T00:00:00Z"), &err), 0);
    json_decref(obj);
    free(text);
    f->in.policy = &f->policy;
    f->in.limit = LIMIT_48H;
    f->in.tzdata_version = "2026a";
    f->in.hosts = f->hosts;
    f->in.now = tzf_at("2026-03-10T12:00:00Z");
}

static void fixture_free(struct fixture *f)
{
    ctl_policy_status_free(&f->out);
    json_decref(f->prev);
    for (size_t i = 0; i < f->nbackups; i++)
        ctl_backup_free(&f->backups[i]);
    ctl_policy_free(&f->policy);
}

/* A selected host whose last success was at 02:00 today and whose next run is tomorrow's. */
static struct ctl_policy_status_host *add_host(struct fixture *f, const char *name)
{
    assert_true(f->nhosts < FX_MAX_HOSTS);
    struct ctl_policy_status_host *h = &f->hosts[f->nhosts];
    snprintf(f->names[f->nhosts], sizeof(f->names[0]), "%s", name);
    memset(h, 0, sizeof(*h));
    h->host = f->names[f->nhosts++];
    h->selected = true;
    h->has_success = true;
    h->last_success = tzf_at("2026-03-10T02:00:00Z");
    h->overdue_start = h->last_success;
    h->next_run = tzf_at("2026-03-11T02:00:00Z");
    f->in.nhosts = f->nhosts;
    return h;
}

/* Overdue since `since`: from the last success when it has one, else from when it joined. */
static void set_overdue(struct ctl_policy_status_host *h, const char *since, bool has_success)
{
    h->overdue = true;
    h->has_success = has_success;
    h->overdue_start = tzf_at(since);
    h->last_success = has_success ? h->overdue_start : 0;
}

static void add_backup(struct fixture *f, struct ctl_policy_status_host *h, const char *name,
                       const char *created, enum ctl_phase phase)
{
    assert_true(f->nbackups < FX_MAX_BACKUP);
    struct ctl_backup *b = &f->backups[f->nbackups];
    memset(b, 0, sizeof(*b));
    b->ns = util_strdup("ops");
    b->name = util_strdup(name);
    b->policy = util_strdup("etc");
    b->host = util_strdup(h->host);
    b->slot = util_strdup("");
    b->created = tzf_at(created);
    b->phase = phase;
    f->bp[f->nbackups++] = b;
    if (h->backups == NULL)
        h->backups = &f->bp[f->nbackups - 1];
    assert_ptr_equal(h->backups + h->nbackups, &f->bp[f->nbackups - 1]); /* added together */
    h->nbackups++;
}

static void build(struct fixture *f)
{
    ctl_policy_status_free(&f->out);
    ctl_policy_status_build(&f->in, &f->out);
    assert_non_null(f->out.status);
}

/* Builds again at `now`, the conditions last built standing for the ones last written. */
static void build_later(struct fixture *f, const char *now)
{
    json_decref(f->prev);
    f->prev = json_incref((json_t *)f->out.conditions);
    f->in.conditions = f->prev;
    f->in.now = tzf_at(now);
    build(f);
}

static const json_t *field(const struct fixture *f, const char *name)
{
    return json_object_get(f->out.status, name);
}

static int64_t count(const struct fixture *f, const char *name)
{
    const json_t *v = field(f, name);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static const char *text(const struct fixture *f, const char *name)
{
    const char *s = json_string_value(field(f, name));
    assert_non_null(s);
    return s;
}

static const json_t *condition(const struct fixture *f, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(f->out.conditions, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0)
            return c;
    }
    fail_msg("no %s condition", type);
    return NULL;
}

/* Asserts the condition's status and reason, and returns its message. */
static const char *cond_is(const struct fixture *f, const char *type, const char *status,
                           const char *reason)
{
    const json_t *c = condition(f, type);
    assert_string_equal(json_string_value(json_object_get(c, "status")), status);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), reason);
    assert_int_equal(json_integer_value(json_object_get(c, "observedGeneration")), 3);
    return json_string_value(json_object_get(c, "message"));
}

static const char *since(const struct fixture *f, const char *type)
{
    return json_string_value(json_object_get(condition(f, type), "lastTransitionTime"));
}

static void test_scheduled_counts_selected_hosts(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY, NULL);
    add_host(&f, "db-0")->running = true;
    add_host(&f, "db-1")->next_run = tzf_at("2026-03-11T01:30:00Z");
    add_host(&f, "db-2");
    /* No longer selected: counted as running, but neither a host nor a next run. */
    struct ctl_policy_status_host *gone = add_host(&f, "old-0");
    gone->selected = false;
    gone->running = true;
    gone->next_run = tzf_at("2026-03-10T13:00:00Z");
    gone->has_success = false;
    build(&f);

    assert_int_equal(count(&f, "observedGeneration"), 3);
    assert_int_equal(count(&f, "hosts"), 3);
    assert_int_equal(count(&f, "running"), 2);
    assert_int_equal(count(&f, "overdue"), 0);
    assert_int_equal(json_array_size(field(&f, "overdueHosts")), 0);
    assert_string_equal(text(&f, "nextRun"), "2026-03-11T01:30:00Z");
    assert_int_equal(count(&f, "alertLimitSeconds"), LIMIT_48H);
    assert_string_equal(text(&f, "tzdataVersion"), "2026a");
    assert_string_equal(text(&f, "scheduleHash"), f.policy.schedule_hash);
    assert_string_equal(text(&f, "scheduleChangedAt"), "2026-03-01T00:00:00Z");
    assert_null(field(&f, "lastRun"));

    assert_int_equal(json_array_size(f.out.conditions), 4);
    assert_string_equal(cond_is(&f, "Valid", "True", "Valid"), "the policy passed validation");
    assert_string_equal(cond_is(&f, "Ready", "True", "Scheduled"),
                        "3 hosts scheduled; next run 2026-03-11T01:30:00Z");
    assert_string_equal(cond_is(&f, "Overdue", "False", "Recent"),
                        "every host has a successful backup within 48h");
    assert_string_equal(since(&f, "Ready"), "2026-03-10T12:00:00Z");
    assert_string_equal(f.out.ready_reason, "Scheduled");
    assert_null(f.out.alarm);
    fixture_free(&f);
}

static void test_overdue_hosts_longest_first(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY, NULL);
    const char *names[] = {"h-a", "h-b", "h-c", "h-d", "h-e", "h-f", "h-g"};
    const char *starts[] = {"2026-03-07T02:00:00Z", "2026-03-05T02:00:00Z", "2026-03-06T02:00:00Z",
                            "2026-03-05T02:00:00Z", "2026-03-04T02:00:00Z", "2026-03-07T03:00:00Z",
                            "2026-03-06T04:00:00Z"};
    add_host(&f, "fine-0");
    for (size_t i = 0; i < 7; i++)
        set_overdue(add_host(&f, names[i]), starts[i], i != 4);
    add_host(&f, "fine-1");
    build(&f);

    assert_int_equal(count(&f, "hosts"), 9);
    assert_int_equal(count(&f, "overdue"), 7);
    const json_t *list = field(&f, "overdueHosts");
    /* By since, then by name: h-e (no success yet), h-b and h-d tied, h-c, h-g, h-a, h-f. */
    const char *order[] = {"h-e", "h-b", "h-d", "h-c", "h-g", "h-a", "h-f"};
    assert_int_equal(json_array_size(list), 7);
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(list, i), "host")),
                            order[i]);
    const json_t *first = json_array_get(list, 0), *second = json_array_get(list, 1);
    assert_string_equal(json_string_value(json_object_get(first, "since")), "2026-03-04T02:00:00Z");
    assert_null(json_object_get(first, "lastSuccess"));
    assert_string_equal(json_string_value(json_object_get(second, "lastSuccess")),
                        "2026-03-05T02:00:00Z");
    assert_string_equal(cond_is(&f, "Overdue", "True", "NoRecentBackup"),
                        "7 of 9 hosts have no successful backup in the last 48h: h-e, h-b, h-d, "
                        "h-c, h-g and 2 more");
    /* Ready does not change with overdue. */
    cond_is(&f, "Ready", "True", "Scheduled");
    assert_null(f.out.alarm);
    fixture_free(&f);
}

static void test_overdue_hosts_listed_are_bounded(void **state)
{
    struct fixture f;
    char name[16], at[32];
    fixture_init(&f, DAILY, NULL);
    for (int i = 0; i < CTL_OVERDUE_LISTED + 3; i++) {
        snprintf(name, sizeof(name), "n-%02d", i);
        snprintf(at, sizeof(at), "2026-03-0%dT%02d:00:00Z", 1 + i / 12, i % 12);
        set_overdue(add_host(&f, name), at, true);
    }
    build(&f);
    assert_int_equal(count(&f, "overdue"), CTL_OVERDUE_LISTED + 3);
    assert_int_equal(json_array_size(field(&f, "overdueHosts")), CTL_OVERDUE_LISTED);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(field(&f, "overdueHosts"), 0), "host")),
        "n-00");
    assert_non_null(strstr(cond_is(&f, "Overdue", "True", "NoRecentBackup"), " and 18 more"));
    fixture_free(&f);
}

static void test_no_backup_yet_then_no_hosts(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY, NULL);
    add_host(&f, "new-0")->has_success = false;
    add_host(&f, "new-1")->has_success = false;
    build(&f);
    assert_string_equal(cond_is(&f, "Overdue", "False", "NoBackupYet"),
                        "no host has a successful backup yet; a host is overdue when it has none "
                        "48h after it enrolled (was selected by the policy) or the policy was "
                        "created, whichever is later");

    /* The nodeSelector matches nothing any more. */
    f.hosts[0].selected = f.hosts[1].selected = false;
    build(&f);
    assert_int_equal(count(&f, "hosts"), 0);
    assert_true(json_is_null(field(&f, "nextRun")));
    assert_string_equal(cond_is(&f, "Ready", "False", "NoMatchingNodes"),
                        "no node matches the policy's nodeSelector");
    assert_null(f.out.alarm); /* nothing a person must be told of by an Event */
    /* No host, so none is overdue: the limit holds for every host there is. */
    cond_is(&f, "Overdue", "False", "Recent");
    fixture_free(&f);
}

static void test_by_hand_without_a_limit(void **state)
{
    struct fixture f;
    fixture_init(&f, BY_HAND, NULL);
    assert_true(f.policy.valid);
    f.in.limit = SCHED_NO_LIMIT;
    add_host(&f, "db-0")->next_run = INT64_MAX;
    add_host(&f, "db-1")->next_run = INT64_MAX;
    build(&f);
    assert_true(json_is_null(field(&f, "alertLimitSeconds")));
    assert_true(json_is_null(field(&f, "nextRun")));
    assert_string_equal(cond_is(&f, "Ready", "True", "ManualOnly"),
                        "2 hosts; no schedule: backups run only when started by hand");
    assert_string_equal(cond_is(&f, "Overdue", "False", "NoLimit"),
                        "no schedule and no alerts.maxAge: a policy run by hand is never overdue");
    fixture_free(&f);
}

static void test_a_blocked_repository_is_an_alarm(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY, NULL);
    add_host(&f, "db-0");
    f.in.blocked = "its BackupRepository ops/main does not exist";
    f.in.blocked_reason = "RepositoryNotFound";
    build(&f);
    const char *msg = cond_is(&f, "Ready", "False", "RepositoryNotFound");
    assert_string_equal(msg, "no backup runs: its BackupRepository ops/main does not exist; runs "
                             "start by themselves when it is Ready (a slot missed meanwhile is "
                             "caught up within the catch-up window)");
    assert_non_null(f.out.alarm);
    assert_string_equal(f.out.alarm, msg);
    assert_string_equal(f.out.ready_reason, "RepositoryNotFound");
    cond_is(&f, "Valid", "True", "Valid");
    cond_is(&f, "Overdue", "False", "Recent"); /* overdue is still evaluated */
    fixture_free(&f);
}

/* Suspended: Ready False with reason Suspended and no alarm, Suspended True, Overdue still
 * evaluated against the schedule's limit; resumed, Suspended False. */
static void test_a_suspended_policy(void **state)
{
    struct fixture f;
    fixture_init(&f,
                 "{\"repository\":\"main\",\"paths\":[\"/etc\"],\"suspend\":true,"
                 "\"schedule\":{\"cron\":\"0 2 * * *\",\"jitter\":\"0s\"}}",
                 NULL);
    struct ctl_policy_status_host *h = add_host(&f, "db-0");
    h->next_run = INT64_MAX;
    set_overdue(h, "2026-03-08T02:00:00Z", true);
    build(&f);
    assert_int_equal(json_array_size(f.out.conditions), 4);
    assert_non_null(strstr(cond_is(&f, "Ready", "False", "Suspended"), "spec.suspend is true"));
    assert_non_null(strstr(cond_is(&f, "Suspended", "True", "Suspended"), "catch-up window"));
    cond_is(&f, "Overdue", "True", "NoRecentBackup");
    assert_null(f.out.alarm);
    assert_true(json_is_null(field(&f, "nextRun")));
    fixture_free(&f);

    fixture_init(&f, DAILY, NULL);
    add_host(&f, "db-0");
    build(&f);
    cond_is(&f, "Suspended", "False", "Active");
    fixture_free(&f);
}

static void test_an_invalid_policy(void **state)
{
    struct fixture f;
    fixture_init(&f, NEVER_FIRES, NULL);
    assert_false(f.policy.valid);
    add_host(&f, "db-0");
    add_host(&f, "db-1")->selected = false;
    f.in.blocked = "ignored: an invalid policy is Invalid first";
    f.in.blocked_reason = "RepositoryNotFound";
    build(&f);
    assert_int_equal(count(&f, "hosts"), 1); /* still counted (docs/operator.md) */
    assert_string_equal(cond_is(&f, "Valid", "False", "Invalid"), f.policy.invalid_message);
    const char *msg = cond_is(&f, "Ready", "False", "Invalid");
    assert_non_null(strstr(msg, "the policy is not valid, so no backup runs: "));
    assert_non_null(strstr(msg, "spec.schedule.cron"));
    assert_string_equal(f.out.alarm, msg);
    assert_string_equal(f.out.ready_reason, "Invalid");
    assert_string_equal(cond_is(&f, "Overdue", "Unknown", "Invalid"),
                        "the policy is not valid: overdue is not evaluated until it is");
    fixture_free(&f);
}

static void test_transition_times_stay_while_the_status_does(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY, NULL);
    add_host(&f, "db-0");
    build(&f);
    build_later(&f, "2026-03-10T13:00:00Z");
    assert_string_equal(since(&f, "Valid"), "2026-03-10T12:00:00Z");
    assert_string_equal(since(&f, "Ready"), "2026-03-10T12:00:00Z");
    /* A new message under the same status keeps the time too. */
    f.hosts[0].next_run = tzf_at("2026-03-12T02:00:00Z");
    build_later(&f, "2026-03-10T14:00:00Z");
    assert_string_equal(since(&f, "Ready"), "2026-03-10T12:00:00Z");
    /* Ready turns False: its time moves, the others' do not. */
    f.hosts[0].selected = false;
    build_later(&f, "2026-03-10T15:00:00Z");
    cond_is(&f, "Ready", "False", "NoMatchingNodes");
    assert_string_equal(since(&f, "Ready"), "2026-03-10T15:00:00Z");
    assert_string_equal(since(&f, "Valid"), "2026-03-10T12:00:00Z");
    assert_string_equal(since(&f, "Overdue"), "2026-03-10T12:00:00Z");
    fixture_free(&f);
}

static void test_started_slots_and_the_last_run(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY,
                 "{\"startedSlots\":{\"db-0\":\"2026-03-09T02:00:00Z\","
                 "\"db-1\":\"2026-03-10T02:00:00Z\"}}");
    struct ctl_policy_status_host *h0 = add_host(&f, "db-0");
    struct ctl_policy_status_host *h1 = add_host(&f, "db-1");
    struct ctl_policy_status_host *h2 = add_host(&f, "db-2");
    struct ctl_policy_status_host *h3 = add_host(&f, "db-3");
    h0->started_slot = tzf_at("2026-03-10T02:00:00Z"); /* newer than the status: it wins */
    h1->started_slot = tzf_at("2026-03-08T02:00:00Z"); /* older: the status's stays */
    h2->started_slot = tzf_at("2026-03-07T02:00:00Z");
    h2->selected = false; /* still watched over, so still listed */
    add_backup(&f, h0, "etc-db-0-a", "2026-03-10T02:00:01Z", CTL_PHASE_SUCCEEDED);
    add_backup(&f, h0, "etc-db-0-b", "2026-03-09T02:00:01Z", CTL_PHASE_SUCCEEDED);
    add_backup(&f, h1, "etc-db-1-a", "2026-03-10T02:00:01Z", CTL_PHASE_RUNNING);
    add_backup(&f, h3, "etc-db-3-a", "2026-03-08T02:00:01Z", CTL_PHASE_FAILED);
    build(&f);

    const json_t *started = field(&f, "startedSlots");
    assert_int_equal(json_object_size(started), 3);
    assert_string_equal(json_string_value(json_object_get(started, "db-0")),
                        "2026-03-10T02:00:00Z");
    assert_string_equal(json_string_value(json_object_get(started, "db-1")),
                        "2026-03-10T02:00:00Z");
    assert_string_equal(json_string_value(json_object_get(started, "db-2")),
                        "2026-03-07T02:00:00Z");
    assert_null(json_object_get(started, "db-3"));
    /* Two Backups created in the same second: the greater name is the newer. */
    const json_t *last = field(&f, "lastRun");
    assert_string_equal(json_string_value(json_object_get(last, "backup")), "etc-db-1-a");
    assert_string_equal(json_string_value(json_object_get(last, "host")), "db-1");
    assert_string_equal(json_string_value(json_object_get(last, "phase")), "Running");
    assert_string_equal(json_string_value(json_object_get(last, "time")), "2026-03-10T02:00:01Z");
    fixture_free(&f);
}

static void test_the_order_of_hosts_does_not_matter(void **state)
{
    struct fixture f;
    fixture_init(&f, DAILY, NULL);
    set_overdue(add_host(&f, "b"), "2026-03-05T02:00:00Z", true);
    set_overdue(add_host(&f, "a"), "2026-03-05T02:00:00Z", true);
    add_host(&f, "c")->next_run = tzf_at("2026-03-10T20:00:00Z");
    add_backup(&f, &f.hosts[2], "etc-c-a", "2026-03-10T02:00:01Z", CTL_PHASE_SUCCEEDED);
    build(&f);
    char *forward = json_dumps(f.out.status, JSON_COMPACT | JSON_SORT_KEYS);

    struct ctl_policy_status_host swap = f.hosts[0];
    f.hosts[0] = f.hosts[2];
    f.hosts[2] = swap;
    build(&f);
    char *reversed = json_dumps(f.out.status, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(forward, reversed);
    assert_non_null(strstr(forward, "\"overdueHosts\":[{\"host\":\"a\""));
    free(forward);
    free(reversed);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scheduled_counts_selected_hosts),
        cmocka_unit_test(test_overdue_hosts_longest_first),
        cmocka_unit_test(test_overdue_hosts_listed_are_bounded),
        cmocka_unit_test(test_no_backup_yet_then_no_hosts),
        cmocka_unit_test(test_by_hand_without_a_limit),
        cmocka_unit_test(test_a_blocked_repository_is_an_alarm),
        cmocka_unit_test(test_a_suspended_policy),
        cmocka_unit_test(test_an_invalid_policy),
        cmocka_unit_test(test_transition_times_stay_while_the_status_does),
        cmocka_unit_test(test_started_slots_and_the_last_run),
        cmocka_unit_test(test_the_order_of_hosts_does_not_matter),
    };
    return cmocka_run_group_tests(tests, tzf_setup, tzf_teardown);
}
