/*
 * The pod watch's cache of how backup containers ended (pairs.c): kept from the pod's
 * end until the run's result is taken, the newest pod of a Job wins, a deleted pod goes,
 * a pod whose Backup is final is not kept, and what is taken reads as the pod list the
 * result reader takes (objects.h, ctl_backup_result). The pod watch leaves undecoded only
 * events the cache would do nothing with (ctl_cache_pod_skip).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_int.h"

static struct ctl *ctl_new(void)
{
    struct ctl *c = util_calloc(1, sizeof(*c));
    util_map_init(&c->backups);
    util_map_init(&c->pod_results);
    return c;
}

static void ctl_free(struct ctl *c)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&c->backups, &it, &k, &v)) {
        ctl_backup_free(v);
        free(v);
    }
    util_map_close(&c->backups);
    ctl_cache_pod_results_close(c);
    free(c);
}

/* A pod of Job job, made at created; with state "terminated" its backup container ended. */
static json_t *pod(const char *job, const char *created, const char *state, const char *message)
{
    json_t *st = json_object();
    if (strcmp(state, "terminated") == 0)
        json_object_set_new(
            st, "terminated",
            json_pack("{s:i, s:s, s:s}", "exitCode", 0, "reason", "Completed", "message", message));
    else
        json_object_set_new(st, state, json_object());
    return json_pack("{s:{s:{s:s}, s:s}, s:{s:[{s:s, s:o}, {s:s, s:{s:{}}}]}}", "metadata",
                     "labels", "job-name", job, "creationTimestamp", created, "status",
                     "containerStatuses", "name", "backup", "state", st, "name", "sidecar", "state",
                     "terminated");
}

static void upsert(struct ctl *c, const char *name, json_t *obj)
{
    ctl_cache_pod_upsert(NULL, "ops", name, obj, c);
    json_decref(obj);
}

static const char *message_of(const json_t *pods)
{
    const json_t *p = json_array_get(json_object_get(pods, "items"), 0);
    const json_t *cs =
        json_array_get(json_object_get(json_object_get(p, "status"), "containerStatuses"), 0);
    return json_string_value(
        json_object_get(json_object_get(json_object_get(cs, "state"), "terminated"), "message"));
}

static void test_kept_until_taken(void **state)
{
    struct ctl *c = ctl_new();
    /* Running: nothing to keep yet. */
    upsert(c, "b1-abc", pod("b1", "2026-03-10T02:00:00Z", "running", NULL));
    assert_null(ctl_cache_take_pod_result(c, "ops", "b1"));
    upsert(c, "b1-abc",
           pod("b1", "2026-03-10T02:00:00Z", "terminated",
               "{\"snapshot\":{\"id\":\"ab12\",\"policy\":\"ops/etc\","
               "\"host\":\"node-1\",\"time\":\"2026-03-10T02:00:09Z\"}}"));
    /* A pod without the Job's label is no run's. */
    json_t *stray = pod("b9", "2026-03-10T02:00:00Z", "terminated", "x");
    json_object_del(json_object_get(json_object_get(stray, "metadata"), "labels"), "job-name");
    upsert(c, "stray", stray);
    assert_null(ctl_cache_take_pod_result(c, "ops", "b9"));

    json_t *pods = ctl_cache_take_pod_result(c, "ops", "b1");
    assert_non_null(pods);
    /* It reads as the pod list the result reader takes. */
    struct ctl_backup_status s = {.phase = CTL_PHASE_SUCCEEDED, .completed = 1773108009};
    json_t *patch = ctl_backup_status_json(&s);
    struct ctl_result r;
    ctl_backup_result(patch, pods, 1773108009, &r);
    assert_true(r.reported);
    assert_string_equal(r.id, "ab12");
    json_decref(patch);
    json_decref(pods);
    /* Taken once: the next reader lists the pods. */
    assert_null(ctl_cache_take_pod_result(c, "ops", "b1"));
    assert_null(ctl_cache_take_pod_result(c, "other", "b1"));
    ctl_free(c);
}

static void test_newest_pod_wins_and_delete(void **state)
{
    struct ctl *c = ctl_new();
    upsert(c, "b1-new", pod("b1", "2026-03-10T02:05:00Z", "terminated", "new"));
    upsert(c, "b1-old", pod("b1", "2026-03-10T02:00:00Z", "terminated", "old"));
    json_t *pods = ctl_cache_take_pod_result(c, "ops", "b1");
    assert_string_equal(message_of(pods), "new");
    json_decref(pods);

    upsert(c, "b1-old", pod("b1", "2026-03-10T02:00:00Z", "terminated", "old"));
    upsert(c, "b1-new", pod("b1", "2026-03-10T02:05:00Z", "terminated", "new"));
    /* Deleting another pod of the Job leaves the kept one; deleting it forgets it. */
    json_t *obj = pod("b1", "2026-03-10T02:00:00Z", "terminated", "old");
    ctl_cache_pod_delete(NULL, "ops", "b1-old", obj, c);
    pods = ctl_cache_take_pod_result(c, "ops", "b1");
    assert_string_equal(message_of(pods), "new");
    json_decref(pods);
    upsert(c, "b1-new", pod("b1", "2026-03-10T02:05:00Z", "terminated", "new"));
    json_t *obj2 = pod("b1", "2026-03-10T02:05:00Z", "terminated", "new");
    ctl_cache_pod_delete(NULL, "ops", "b1-new", obj2, c);
    assert_null(ctl_cache_take_pod_result(c, "ops", "b1"));
    /* A pod without the label is ignored on delete too. */
    json_object_del(json_object_get(json_object_get(obj, "metadata"), "labels"), "job-name");
    ctl_cache_pod_delete(NULL, "ops", "b1-old", obj, c);
    json_decref(obj);
    json_decref(obj2);
    ctl_free(c);
}

/* A restart lists every pod still there: those of final Backups are not kept. */
static void test_final_backup_not_kept(void **state)
{
    struct ctl *c = ctl_new();
    struct ctl_backup *b = util_calloc(1, sizeof(*b));
    b->ns = util_strdup("ops");
    b->name = util_strdup("b1");
    b->phase = CTL_PHASE_SUCCEEDED;
    util_map_set(&c->backups, "ops/b1", b);
    upsert(c, "b1-abc", pod("b1", "2026-03-10T02:00:00Z", "terminated", "done"));
    assert_null(ctl_cache_take_pod_result(c, "ops", "b1"));
    b->phase = CTL_PHASE_RUNNING;
    upsert(c, "b1-abc", pod("b1", "2026-03-10T02:00:00Z", "terminated", "done"));
    json_t *pods = ctl_cache_take_pod_result(c, "ops", "b1");
    assert_string_equal(message_of(pods), "done");
    json_decref(pods);
    ctl_free(c);
}

/* Is the pod's watch event left undecoded? obj is taken. */
static bool skipped(json_t *obj, const char *type)
{
    json_t *meta = json_object_get(obj, "metadata");
    json_object_set_new(meta, "name", json_string("b1-abc"));
    json_object_set_new(meta, "namespace", json_string("ops"));
    json_object_set_new(meta, "resourceVersion", json_string("41"));
    json_t *ev = json_pack("{s:s, s:o}", "type", type, "object", obj);
    char *line = json_dumps(ev, JSON_COMPACT);
    struct kube_watch_peek peek;
    assert_int_equal(kube_watch_peek(line, strlen(line), &peek), 0);
    bool skip = ctl_cache_pod_skip(&peek, NULL);
    free(line);
    json_decref(ev);
    return skip;
}

static void test_skip_only_what_is_not_kept(void **state)
{
    /* Pending and running pods, with no container ended: not decoded. */
    json_t *pending = pod("b1", "2026-03-10T02:00:00Z", "waiting", NULL);
    json_object_del(
        json_array_get(json_object_get(json_object_get(pending, "status"), "containerStatuses"), 1),
        "state");
    assert_true(skipped(pending, "ADDED"));
    json_t *running = pod("b1", "2026-03-10T02:00:00Z", "running", NULL);
    json_object_del(
        json_array_get(json_object_get(json_object_get(running, "status"), "containerStatuses"), 1),
        "state");
    assert_true(skipped(running, "MODIFIED"));
    /* The backup container ended: decoded, and kept (see above). */
    assert_false(skipped(pod("b1", "2026-03-10T02:00:00Z", "terminated", "done"), "MODIFIED"));
    /* Another container ended while the backup runs: decoded (the upsert keeps nothing). */
    assert_false(skipped(pod("b1", "2026-03-10T02:00:00Z", "running", NULL), "MODIFIED"));
    /* The quoted word anywhere is decoded, a value too; up to the text's last byte. */
    json_t *value = json_pack("{s:{}, s:{s:s}}", "metadata", "status", "phase", "terminated");
    assert_false(skipped(value, "MODIFIED"));
    static const char cut[] =
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p\","
        "\"namespace\":\"ops\",\"resourceVersion\":\"1\"},\"x\":\"terminated\"";
    struct kube_watch_peek peek;
    assert_int_equal(kube_watch_peek(cut, strlen(cut), &peek), 0);
    assert_false(ctl_cache_pod_skip(&peek, NULL));
    /* One byte short of it: skipped. */
    assert_int_equal(kube_watch_peek(cut, strlen(cut) - 1, &peek), 0);
    assert_true(ctl_cache_pod_skip(&peek, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_until_taken),
        cmocka_unit_test(test_newest_pod_wins_and_delete),
        cmocka_unit_test(test_final_backup_not_kept),
        cmocka_unit_test(test_skip_only_what_is_not_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
