/*
 * The controller's GC Jobs, the pure parts (gcplan.h): spec.gc and its defaults, the
 * slot decision (weekly by default, once a slot, never two at once, DST as policies),
 * --max-runtime, the Job, and the reading of its result.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gcplan.h"
#include "policy/policy.h"
#include "state.h"
#include "tz/tz_fixture.h"

static json_t *repo(const char *gc_json)
{
    json_error_t e;
    json_t *r = json_loads("{\"metadata\":{\"name\":\"main\",\"namespace\":\"ns\"},\"spec\":{"
                           "\"endpoint\":\"https://s3.example\",\"bucket\":\"b\","
                           "\"credentialsSecret\":{\"name\":\"creds\"}}}",
                           0, &e);
    assert_non_null(r);
    if (gc_json != NULL) {
        json_t *gc = json_loads(gc_json, JSON_DECODE_ANY, &e);
        assert_non_null(gc);
        json_object_set_new(json_object_get(r, "spec"), "gc", gc);
    }
    return r;
}

struct bound {
    struct ctl_gc_spec spec;
    struct tz_zone *zone;
    struct sched s;
};

static void bound_init(struct bound *b, const char *gc_json)
{
    struct util_err err = {0};
    json_t *r = repo(gc_json);
    assert_int_equal(ctl_gc_spec_read(r, &b->spec, &err), 0);
    json_decref(r);
    assert_int_equal(tz_zone_load(&b->zone, tzf_db, b->spec.zone, &err), 0);
    sched_init(&b->s, &b->spec.cron, b->zone);
}

static void test_spec_defaults_and_errors(void **state)
{
    struct ctl_gc_spec s;
    struct util_err err = {0};
    json_t *r = repo(NULL);
    assert_int_equal(ctl_gc_spec_read(r, &s, &err), 0);
    assert_string_equal(s.schedule, "0 3 * * 0");
    assert_string_equal(s.zone, "UTC");
    assert_false(s.suspend);
    json_decref(r);

    r = repo("{\"schedule\":\"*/5 * * * *\",\"timezone\":\"Europe/Paris\",\"suspend\":true}");
    assert_int_equal(ctl_gc_spec_read(r, &s, &err), 0);
    assert_string_equal(s.schedule, "*/5 * * * *");
    assert_string_equal(s.zone, "Europe/Paris");
    assert_true(s.suspend);
    json_decref(r);

    const char *bad[][2] = {
        {"{\"schedule\":\"61 * * * *\"}", "spec.gc.schedule \"61 * * * *\""},
        {"{\"schedule\":\"\"}", "spec.gc.schedule must be"},
        {"{\"schedule\":5}", "spec.gc.schedule must be"},
        {"{\"timezone\":true}", "spec.gc.timezone must be"},
        {"{\"suspend\":\"yes\"}", "spec.gc.suspend must be"},
        {"[]", "spec.gc must be an object"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = repo(bad[i][0]);
        memset(&err, 0, sizeof(err));
        assert_int_equal(ctl_gc_spec_read(r, &s, &err), UTIL_EINVAL);
        assert_non_null(strstr(err.msg, bad[i][1]));
        json_decref(r);
    }
}

/* The default slot is Sunday 03:00 UTC: the next one after a Wednesday. */
static void test_default_weekly_slot(void **state)
{
    struct bound b;
    struct sched_decision d;
    bound_init(&b, NULL);
    struct ctl_gc_state st = {.ready = true, .since = tzf_at("2026-11-01T00:00:00Z")};
    ctl_gc_decide(&b.s, &st, tzf_at("2026-12-02T12:00:00Z"), &d); /* a Wednesday */
    /* Sunday 29 Nov 03:00 passed more than a day ago, never started: too late. */
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_TOO_LATE);
    assert_int_equal(d.next_run, tzf_at("2026-12-06T03:00:00Z"));

    ctl_gc_decide(&b.s, &st, tzf_at("2026-12-06T03:00:30Z"), &d);
    assert_true(d.run);
    assert_int_equal(d.slot.at, tzf_at("2026-12-06T03:00:00Z"));
    assert_int_equal(d.next_run, tzf_at("2026-12-13T03:00:00Z"));
    tz_zone_free(b.zone);
}

/* Once a slot; never while the previous GC Job is active; only the last missed slot. */
static void test_once_a_slot_never_two_at_once(void **state)
{
    struct bound b;
    struct sched_decision d;
    bound_init(&b, "{\"schedule\":\"* * * * *\"}");
    struct ctl_gc_state st = {.ready = true, .since = tzf_at("2026-12-03T09:00:00Z")};
    int64_t now = tzf_at("2026-12-03T09:10:20Z");
    ctl_gc_decide(&b.s, &st, now, &d);
    assert_true(d.run);
    assert_int_equal(d.slot.at, tzf_at("2026-12-03T09:10:00Z"));

    st.has_last_started = true;
    st.last_started_slot = d.slot.at;
    ctl_gc_decide(&b.s, &st, now + 10, &d);
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_ALREADY_STARTED);

    /* The next minute, the Job still running: no second one. */
    st.job_active = true;
    ctl_gc_decide(&b.s, &st, now + 60, &d);
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_RUNNING);

    /* It ended five minutes later: the last missed slot runs, once, not the four others. */
    st.job_active = false;
    ctl_gc_decide(&b.s, &st, now + 300, &d);
    assert_true(d.run);
    assert_int_equal(d.slot.at, tzf_at("2026-12-03T09:15:00Z"));

    /* Suspended or not Ready: nothing starts. */
    st.ready = false;
    ctl_gc_decide(&b.s, &st, now + 300, &d);
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_NOT_READY);

    /* Slots before the repository existed (or its gc spec changed) do not count. */
    st.ready = true;
    st.has_last_started = false;
    st.since = now + 410; /* 09:17:10, after the 09:17 slot */
    ctl_gc_decide(&b.s, &st, now + 411, &d);
    assert_false(d.run);
    assert_int_equal(d.reason, SCHED_NOTHING_DUE);
    tz_zone_free(b.zone);
}

/* DST as policies: 02:30 Europe/Berlin on 29 Mar 2026 does not exist: it runs at 03:00 CEST. */
static void test_dst_gap_shifts_fixed_slot(void **state)
{
    struct bound b;
    struct sched_decision d;
    bound_init(&b, "{\"schedule\":\"30 2 * * 0\",\"timezone\":\"Europe/Berlin\"}");
    struct ctl_gc_state st = {.ready = true, .since = tzf_at("2026-03-01T00:00:00Z")};
    ctl_gc_decide(&b.s, &st, tzf_at("2026-03-28T12:00:00Z"), &d);
    assert_int_equal(d.next_run, tzf_at("2026-03-29T01:00:00Z")); /* the transition instant */
    ctl_gc_decide(&b.s, &st, tzf_at("2026-03-29T01:00:05Z"), &d);
    assert_true(d.run);
    assert_int_equal(d.slot.note, SCHED_NOTE_SHIFTED);
    tz_zone_free(b.zone);
}

static void test_max_runtime(void **state)
{
    int64_t mr[] = {3600, 6 * 3600, 1800};
    assert_int_equal(ctl_gc_max_runtime(mr, 3), 6 * 3600);
    assert_int_equal(ctl_gc_max_runtime(NULL, 0), POLICY_DEFAULT_MAX_RUNTIME);
}

static void test_job(void **state)
{
    char a[CTL_NAME_MAX], b[CTL_NAME_MAX], c[CTL_NAME_MAX];
    ctl_gc_job_name("ns", "main", "2026-12-06T03:00", a);
    ctl_gc_job_name("ns", "main", "2026-12-13T03:00", b);
    ctl_gc_job_name("ns2", "main", "2026-12-06T03:00", c);
    assert_memory_equal(a, "gc-main-202612060300-", 21);
    assert_int_equal(strlen(a), 31);
    assert_string_not_equal(a, b);
    assert_string_not_equal(a, c);
    char longname[254];
    memset(longname, 'x', 253);
    longname[253] = '\0';
    ctl_gc_job_name("ns", longname, "2026-12-06T03:00", a);
    assert_true(strlen(a) <= 63);

    struct ctl_job_opts o = {.agent_image = "img:1", .ttl_seconds = 600};
    struct util_err err = {0};
    json_t *job = ctl_gc_job_json("ns", "main", "uid-1", "gc-main-x", 6 * 3600, &o);
    json_t *r = repo(NULL);
    assert_int_equal(ctl_job_set_repository(job, r, &err), 0);
    json_decref(r);
    /* The image's user reads the key through fsGroup, not as root. */
    assert_int_equal(json_integer_value(json_object_get(
                         ctl_json_path(job, "spec.template.spec.securityContext"), "fsGroup")),
                     CTL_GC_USER);
    assert_true(json_is_true(
        json_object_get(ctl_json_path(job, "spec.template.spec.securityContext"), "runAsNonRoot")));
    const json_t *vols = ctl_json_path(job, "spec.template.spec.volumes");
    const json_t *key = NULL;
    for (size_t i = 0; i < json_array_size(vols); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(vols, i), "name")),
                   "repository-key") == 0)
            key = json_object_get(json_array_get(vols, i), "secret");
    assert_non_null(key);
    assert_int_equal(json_integer_value(json_object_get(key, "defaultMode")), 0400);
    ctl_gc_job_key_readable(job);
    assert_int_equal(json_integer_value(json_object_get(key, "defaultMode")), 0440);
    char *args = json_dumps(
        json_object_get(json_array_get(ctl_json_path(job, "spec.template.spec.containers"), 0),
                        "args"),
        JSON_COMPACT);
    assert_string_equal(args, "[\"--output\",\"json\",\"--max-runtime\",\"21600s\","
                              "\"--termination-log\",\"/dev/termination-log\"]");
    free(args);
    const json_t *pod = ctl_json_path(job, "spec.template.spec");
    assert_null(json_object_get(pod, "nodeName"));
    char *text = json_dumps(job, JSON_COMPACT);
    assert_null(strstr(text, "hostPath"));
    assert_non_null(strstr(text, "\"LODE_REPOSITORY\""));
    assert_non_null(strstr(text, "\"secretKeyRef\""));
    assert_non_null(strstr(text, "\"LODE_KEY_FILE\""));
    assert_non_null(
        strstr(text, "\"kind\":\"BackupRepository\",\"name\":\"main\",\"uid\":\"uid-1\""));
    assert_string_equal(json_string_value(json_object_get(ctl_json_path(job, "metadata.labels"),
                                                          "lodestore.io/repository")),
                        "main");
    free(text);
    json_decref(job);
}

static json_t *ended_job(const char *cond)
{
    json_error_t e;
    char *s = util_asprintf("{\"status\":{\"startTime\":\"2026-12-06T03:00:01Z\","
                            "\"completionTime\":\"2026-12-06T03:00:43Z\",\"conditions\":"
                            "[{\"type\":\"%s\",\"status\":\"True\"}]}}",
                            cond);
    json_t *j = json_loads(s, 0, &e);
    free(s);
    assert_non_null(j);
    return j;
}

static json_t *pods(const char *message)
{
    json_t *term = json_object();
    if (message != NULL)
        json_object_set_new(term, "message", json_string(message));
    return json_pack("{s:[{s:{s:s}, s:{s:[{s:s, s:{s:o}}]}}]}", "items", "metadata",
                     "creationTimestamp", "2026-12-06T03:00:00Z", "status", "containerStatuses",
                     "name", "gc", "state", "terminated", term);
}

static void test_result(void **state)
{
    struct ctl_gc_result r;
    bool failed;
    json_t *job = ended_job("Complete"), *p;
    assert_true(ctl_gc_job_ended(job, &failed));
    assert_false(failed);

    p = pods("{\"packs\":{\"total\":7,\"deleted\":2,\"kept\":5},\"bytesFreed\":4096,"
             "\"error\":null}");
    ctl_gc_result_read(job, p, 0, &r);
    assert_true(r.succeeded);
    assert_int_equal(r.packs_deleted, 2);
    assert_int_equal(r.bytes_freed, 4096);
    assert_int_equal(r.duration, 42);
    assert_string_equal(r.message, "deleted 2 of 7 packs, 4096 bytes freed, in 42s");
    json_decref(p);

    /* The JSON of lode gc without "error" (an older agent) reads the same. */
    p = pods("{\"packs\":{\"total\":1,\"deleted\":0,\"kept\":1},\"bytesFreed\":0}");
    ctl_gc_result_read(job, p, 0, &r);
    assert_true(r.succeeded);
    json_decref(p);

    /* No message, an unparsable one, no pods. */
    p = pods(NULL);
    ctl_gc_result_read(job, p, 0, &r);
    assert_false(r.succeeded);
    assert_non_null(strstr(r.message, "without a result"));
    json_decref(p);
    p = pods("panic: out of memory");
    ctl_gc_result_read(job, p, 0, &r);
    assert_false(r.succeeded);
    assert_non_null(strstr(r.message, "panic: out of memory"));
    json_decref(p);
    ctl_gc_result_read(job, NULL, 0, &r);
    assert_false(r.succeeded);
    assert_non_null(strstr(r.message, "could not be read"));
    json_decref(job);

    /* Failed with lode gc's error. */
    job = ended_job("Failed");
    assert_true(ctl_gc_job_ended(job, &failed));
    assert_true(failed);
    p = pods("{\"packs\":{\"total\":0,\"deleted\":0,\"kept\":0},\"bytesFreed\":0,"
             "\"error\":\"storage answered 503; nothing was deleted\"}");
    ctl_gc_result_read(job, p, 0, &r);
    assert_false(r.succeeded);
    assert_string_equal(r.message, "lode gc failed: storage answered 503; nothing was deleted");
    json_decref(p);
    json_decref(job);

    /* Not ended. */
    json_error_t e;
    job = json_loads("{\"status\":{\"active\":1}}", 0, &e);
    assert_false(ctl_gc_job_ended(job, &failed));
    json_decref(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_defaults_and_errors),
        cmocka_unit_test(test_default_weekly_slot),
        cmocka_unit_test(test_once_a_slot_never_two_at_once),
        cmocka_unit_test(test_dst_gap_shifts_fixed_slot),
        cmocka_unit_test(test_max_runtime),
        cmocka_unit_test(test_job),
        cmocka_unit_test(test_result),
    };
    return cmocka_run_group_tests(tests, tzf_setup, tzf_teardown);
}
