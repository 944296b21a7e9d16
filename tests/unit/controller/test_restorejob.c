#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "restorejob.h"
#include "state.h"

static const struct ctl_job_opts OPTS = {.agent_image = "img:1", .ttl_seconds = 600};

static json_t *restore_obj(const char *spec)
{
    json_error_t e;
    json_t *sp = json_loads(spec, 0, &e);
    assert_non_null(sp);
    return json_pack("{s:{s:s, s:s, s:s}, s:o}", "metadata", "namespace", "ops", "name", "r1",
                     "uid", "uid-1", "spec", sp);
}

static int read_spec(const char *spec, struct ctl_restore_spec *s, json_t **obj,
                     struct util_err *err)
{
    *obj = restore_obj(spec);
    return ctl_restore_spec_read(*obj, s, err);
}

/* The args of the Job's container, joined by spaces. */
static char *job_args(const json_t *job)
{
    const json_t *c = json_array_get(ctl_json_path(job, "spec.template.spec.containers"), 0);
    struct util_buf b;
    util_buf_init(&b);
    size_t i;
    const json_t *a;
    json_array_foreach(json_object_get(c, "args"), i, a)
    {
        if (i > 0)
            util_buf_puts(&b, " ");
        util_buf_puts(&b, json_string_value(a));
    }
    return util_buf_steal(&b);
}

static const json_t *volume(const json_t *job, const char *name)
{
    size_t i;
    const json_t *v;
    json_array_foreach(ctl_json_path(job, "spec.template.spec.volumes"), i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
            return v;
    }
    return NULL;
}

static const json_t *mount(const json_t *job, const char *name)
{
    const json_t *c = json_array_get(ctl_json_path(job, "spec.template.spec.containers"), 0);
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(c, "volumeMounts"), i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
            return v;
    }
    return NULL;
}

static void test_spec_read_and_refusals(void **state)
{
    struct ctl_restore_spec s;
    struct util_err err = {0};
    json_t *obj;
    assert_int_equal(
        read_spec("{\"snapshot\": {\"policy\": \"p\", \"host\": \"a\"}, \"include\": "
                  "[\"/data\", \"/etc/hosts\"], \"target\": {\"node\": \"b\", \"path\": "
                  "\"/var/restore\"}, \"overwrite\": true}",
                  &s, &obj, &err),
        0);
    assert_string_equal(s.policy, "p");
    assert_string_equal(s.host, "a");
    assert_null(s.id);
    assert_int_equal(s.ninclude, 2);
    assert_string_equal(s.include[1], "/etc/hosts");
    assert_true(s.overwrite);
    assert_false(s.dry_run);
    char *t = ctl_restore_target_text(&s);
    assert_string_equal(t, "b:/var/restore");
    free(t);
    ctl_restore_spec_free(&s);
    json_decref(obj);

    /* What the CRD's rules refuse is refused here too, each with its message. */
    static const char *const bad[][2] = {
        {"{\"snapshot\": {\"id\": \"x\", \"policy\": \"p\", \"host\": \"a\"}, \"repository\": "
         "\"m\", "
         "\"target\": {\"node\": \"b\", \"path\": \"/r\"}}",
         "either id, or policy and host"},
        {"{\"snapshot\": {\"policy\": \"p\"}, \"target\": {\"node\": \"b\", \"path\": \"/r\"}}",
         "either id, or policy and host"},
        {"{\"snapshot\": {\"id\": \"x\"}, \"target\": {\"node\": \"b\", \"path\": \"/r\"}}",
         "needs spec.repository"},
        {"{\"snapshot\": {\"id\": \"x\"}, \"repository\": \"m\", \"target\": {\"node\": \"b\"}}",
         "either node and path"},
        {"{\"snapshot\": {\"id\": \"x\"}, \"repository\": \"m\", \"target\": {\"node\": \"b\", "
         "\"path\": \"/r\", \"persistentVolumeClaim\": \"c\"}}",
         "either node and path"},
        {"{\"snapshot\": {\"id\": \"x\"}, \"repository\": \"m\", \"target\": {\"node\": \"b\", "
         "\"path\": \"/r/../etc\"}}",
         "without . or .. parts"},
        {"{\"snapshot\": {\"id\": \"x\"}, \"repository\": \"m\", \"target\": {\"node\": \"b\", "
         "\"path\": \"relative\"}}",
         "without . or .. parts"},
        {"{\"snapshot\": {\"id\": \"x\"}, \"repository\": \"m\", \"include\": [\"etc\"], "
         "\"target\": {\"node\": \"b\", \"path\": \"/r\"}}",
         "spec.include: etc"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        struct util_err e = {0};
        assert_int_equal(read_spec(bad[i][0], &s, &obj, &e), UTIL_EINVAL);
        assert_non_null(strstr(e.msg, bad[i][1]));
        ctl_restore_spec_free(&s);
        json_decref(obj);
    }
}

static void test_node_job(void **state)
{
    struct ctl_restore_spec s;
    struct util_err err = {0};
    json_t *obj;
    assert_int_equal(read_spec("{\"snapshot\": {\"id\": \"abc\"}, \"repository\": \"m\", "
                               "\"include\": [\"/data\"], \"target\": {\"node\": \"b\", \"path\": "
                               "\"/var/restore\"}}",
                               &s, &obj, &err),
                     0);
    json_t *job = ctl_restore_job_json(&s, "abc", &OPTS);
    char name[CTL_NAME_MAX];
    ctl_restore_job_name(&s, name);
    assert_string_equal(ctl_json_str(job, "metadata.name"), name);
    assert_true(strncmp(name, "r1-", 3) == 0 && strlen(name) == 11);
    assert_string_equal(ctl_json_str(job, "metadata.namespace"), "ops");
    assert_string_equal(ctl_json_str(job, "spec.template.spec.nodeName"), "b");
    assert_int_equal(json_integer_value(ctl_json_path(job, "spec.backoffLimit")), 0);
    assert_int_equal(json_integer_value(ctl_json_path(job, "spec.ttlSecondsAfterFinished")), 600);
    /* The Restore owns it: deleting the Restore deletes the Job. */
    const json_t *owner = json_array_get(ctl_json_path(job, "metadata.ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "kind")), "Restore");
    assert_string_equal(json_string_value(json_object_get(owner, "uid")), "uid-1");
    char *args = job_args(job);
    assert_string_equal(args, "abc --target /restore --include /data --staged --output json "
                              "--termination-log /dev/termination-log");
    free(args);
    /* Only the target directory is mounted, writable: the node's "/" is the volume and the
     * target its subPath (a target that is a file is then refused by lode restore, not
     * waited for). */
    const json_t *v = volume(job, "target");
    assert_string_equal(ctl_json_str(v, "hostPath.path"), "/");
    assert_string_equal(ctl_json_str(v, "hostPath.type"), "Directory");
    assert_string_equal(ctl_json_str(mount(job, "target"), "subPath"), "var/restore");
    assert_string_equal(ctl_json_str(mount(job, "target"), "mountPath"), "/restore");
    assert_false(json_is_true(json_object_get(mount(job, "target"), "readOnly")));
    assert_null(volume(job, "host-root"));
    const json_t *c = json_array_get(ctl_json_path(job, "spec.template.spec.containers"), 0);
    assert_true(json_is_true(ctl_json_path(c, "securityContext.readOnlyRootFilesystem")));
    assert_false(json_is_true(ctl_json_path(c, "securityContext.allowPrivilegeEscalation")));
    const json_t *add = ctl_json_path(c, "securityContext.capabilities.add");
    size_t i;
    const json_t *cap;
    json_array_foreach(add, i, cap)
    {
        assert_string_not_equal(json_string_value(cap), "SYS_ADMIN");
    }
    assert_int_equal(json_array_size(add), 7);
    /* The repository comes from the BackupRepository: keys by reference, never by value. */
    json_t *repo = json_pack("{s:{s:s, s:s, s:{s:s}}}", "spec", "endpoint", "https://s3:9000",
                             "bucket", "b", "credentialsSecret", "name", "creds");
    assert_int_equal(ctl_job_set_repository(job, repo, &err), 0);
    char *text = json_dumps(job, JSON_COMPACT);
    assert_non_null(strstr(text, "\"secretKeyRef\":{\"name\":\"creds\""));
    assert_non_null(strstr(text, "LODE_KEY_FILE"));
    free(text);
    json_decref(repo);
    json_decref(job);
    ctl_restore_spec_free(&s);
    json_decref(obj);

    /* The node's "/" itself: no subPath. */
    assert_int_equal(read_spec("{\"snapshot\": {\"id\": \"abc\"}, \"repository\": \"m\", "
                               "\"overwrite\": true, \"target\": {\"node\": \"b\", \"path\": "
                               "\"/\"}}",
                               &s, &obj, &err),
                     0);
    job = ctl_restore_job_json(&s, "abc", &OPTS);
    assert_string_equal(ctl_json_str(volume(job, "target"), "hostPath.path"), "/");
    assert_null(json_object_get(mount(job, "target"), "subPath"));
    json_decref(job);
    ctl_restore_spec_free(&s);
    json_decref(obj);
}

static void test_dry_run_and_pvc_jobs(void **state)
{
    struct ctl_restore_spec s;
    struct util_err err = {0};
    json_t *obj;
    /* A dry run onto a node writes nothing: the node's "/" read-only, no target volume. */
    assert_int_equal(read_spec("{\"snapshot\": {\"id\": \"abc\"}, \"repository\": \"m\", "
                               "\"dryRun\": true, \"target\": {\"node\": \"b\", \"path\": "
                               "\"/var/restore\"}}",
                               &s, &obj, &err),
                     0);
    json_t *job = ctl_restore_job_json(&s, "abc", &OPTS);
    char *args = job_args(job);
    assert_string_equal(args, "abc --target /host/var/restore --dry-run --output json "
                              "--termination-log /dev/termination-log");
    free(args);
    assert_null(volume(job, "target"));
    assert_true(json_is_true(json_object_get(mount(job, "host-root"), "readOnly")));
    const json_t *c = json_array_get(ctl_json_path(job, "spec.template.spec.containers"), 0);
    assert_int_equal(json_array_size(ctl_json_path(c, "securityContext.capabilities.add")), 1);
    /* Hardened like every pod the controller makes (docs/security.md). */
    assert_string_equal(ctl_json_str(job, "spec.template.spec.securityContext.seccompProfile.type"),
                        "RuntimeDefault");
    assert_true(
        json_is_false(ctl_json_path(job, "spec.template.spec.automountServiceAccountToken")));
    assert_string_equal(
        json_string_value(json_array_get(ctl_json_path(c, "securityContext.capabilities.drop"), 0)),
        "ALL");
    assert_non_null(ctl_json_path(c, "resources.limits.memory"));
    json_decref(job);
    ctl_restore_spec_free(&s);
    json_decref(obj);

    /* A claim: mounted, no node named (the scheduler places the pod), a path inside it. */
    assert_int_equal(read_spec("{\"snapshot\": {\"id\": \"abc\"}, \"repository\": \"m\", "
                               "\"overwrite\": true, \"setid\": true, \"devices\": true, "
                               "\"systemXattrs\": true, \"target\": {\"persistentVolumeClaim\": "
                               "\"data\", \"path\": \"/sub\"}}",
                               &s, &obj, &err),
                     0);
    job = ctl_restore_job_json(&s, "abc", &OPTS);
    args = job_args(job);
    assert_string_equal(args, "abc --target /restore/sub --overwrite --setid --devices "
                              "--system-xattrs --staged --output json "
                              "--termination-log /dev/termination-log");
    free(args);
    assert_string_equal(ctl_json_str(volume(job, "target"), "persistentVolumeClaim.claimName"),
                        "data");
    assert_null(ctl_json_path(job, "spec.template.spec.nodeName"));
    char *t = ctl_restore_target_text(&s);
    assert_string_equal(t, "pvc/data:/sub");
    free(t);
    json_decref(job);
    ctl_restore_spec_free(&s);
    json_decref(obj);
}

static void test_targets_overlap(void **state)
{
    struct ctl_restore_spec a = {.ns = "ops", .node = "n1", .path = "/var/r"};
    struct ctl_restore_spec b = {.ns = "ops", .node = "n1", .path = "/var/r/sub"};
    assert_true(ctl_restore_targets_overlap(&a, &b));
    assert_true(ctl_restore_targets_overlap(&b, &a));
    b.path = "/var/rx";
    assert_false(ctl_restore_targets_overlap(&a, &b));
    b.path = "/";
    assert_true(ctl_restore_targets_overlap(&a, &b));
    b.node = "n2";
    assert_false(ctl_restore_targets_overlap(&a, &b));
    struct ctl_restore_spec p = {.ns = "ops", .pvc = "data", .path = "/"};
    struct ctl_restore_spec q = {.ns = "ops", .pvc = "data", .path = "/x"};
    assert_true(ctl_restore_targets_overlap(&p, &q));
    q.ns = "other";
    assert_false(ctl_restore_targets_overlap(&p, &q));
    assert_false(ctl_restore_targets_overlap(&a, &p));
}

static json_t *backup(const char *policy, const char *host, const char *phase, const char *reason,
                      const char *id, const char *time, bool suspicious, bool incomplete)
{
    json_t *b = json_pack("{s:{s:s, s:s}, s:{s:s, s:{s:s, s:s, s:b, s:b}}}", "spec", "policy",
                          policy, "host", host, "status", "phase", phase, "snapshot", "id", id,
                          "time", time, "suspicious", suspicious, "incomplete", incomplete);
    if (reason != NULL)
        json_object_set_new(json_object_get(b, "status"), "reason", json_string(reason));
    return b;
}

static void test_pick_newest_good(void **state)
{
    json_t *list = json_pack(
        "{s:[o, o, o, o, o, o, o]}", "items",
        backup("p", "a", "Succeeded", NULL, "old", "2026-01-01T00:00:00Z", false, false),
        backup("p", "a", "Succeeded", NULL, "good", "2026-01-02T00:00:00Z", false, false),
        backup("p", "a", "Succeeded", NULL, "sus", "2026-01-03T00:00:00Z", true, false),
        backup("p", "a", "Succeeded", "incomplete", "inc", "2026-01-04T00:00:00Z", false, true),
        backup("p", "a", "Failed", "job_failed", "fail", "2026-01-05T00:00:00Z", false, false),
        backup("p", "b", "Succeeded", NULL, "otherhost", "2026-01-06T00:00:00Z", false, false),
        backup("q", "a", "Succeeded", NULL, "otherpol", "2026-01-07T00:00:00Z", false, false));
    assert_string_equal(ctl_restore_pick(list, "p", "a"), "good");
    assert_string_equal(ctl_restore_pick(list, "p", "b"), "otherhost");
    assert_null(ctl_restore_pick(list, "p", "c"));
    json_decref(list);
    json_t *empty = json_pack("{s:[]}", "items");
    assert_null(ctl_restore_pick(empty, "p", "a"));
    json_decref(empty);
}

static json_t *ended_job(bool ok)
{
    return json_pack("{s:{s:s, s:[{s:s, s:s, s:s}]}}", "status", "completionTime",
                     "2026-01-01T00:01:40Z", "conditions", "type", ok ? "Complete" : "Failed",
                     "status", "True", "reason", ok ? "Done" : "BackoffLimitExceeded");
}

static json_t *pods_with(const char *msg)
{
    return json_pack("{s:[{s:{s:s}, s:{s:[{s:s, s:{s:{s:i, s:s}}}]}}]}", "items", "metadata",
                     "creationTimestamp", "2026-01-01T00:00:00Z", "status", "containerStatuses",
                     "name", "restore", "state", "terminated", "exitCode", 0, "message", msg);
}

static void test_result(void **state)
{
    int64_t start = 1767225600; /* 2026-01-01T00:00:00Z */
    const char *reason, *message;
    /* Success: counts copied, duration from start to the Job's completion. */
    json_t *job = ended_job(true);
    json_t *pods =
        pods_with("{\"snapshot\":\"abc\",\"source\":\"ops/p/a\",\"dryRun\":false,"
                  "\"files\":3,\"bytes\":30,\"directories\":2,\"symlinks\":1,"
                  "\"other\":0,\"hardLinks\":2,\"notMade\":0,\"damaged\":0,\"error\":null}");
    json_t *st = ctl_restore_result(job, pods, start, start + 200, &reason, &message);
    assert_string_equal(ctl_json_str(st, "status.phase"), "Succeeded");
    assert_int_equal(json_integer_value(ctl_json_path(st, "status.hardLinks")), 2);
    assert_string_equal(reason, "Restored");
    assert_non_null(strstr(message, "restored 3 files (30 bytes) of snapshot abc"));
    assert_int_equal(json_integer_value(ctl_json_path(st, "status.files")), 3);
    assert_int_equal(json_integer_value(ctl_json_path(st, "status.symlinks")), 1);
    assert_int_equal(json_integer_value(ctl_json_path(st, "status.errors")), 0);
    assert_string_equal(ctl_json_str(st, "status.source"), "ops/p/a");
    assert_string_equal(ctl_json_str(st, "status.duration"), "1m40s");
    const json_t *cond = json_array_get(ctl_json_path(st, "status.conditions"), 0);
    assert_string_equal(ctl_json_str(cond, "type"), "Restored");
    assert_string_equal(ctl_json_str(cond, "status"), "True");
    json_decref(st);
    json_decref(pods);

    /* A dry run's paths reach the status. */
    pods = pods_with("{\"snapshot\":\"abc\",\"dryRun\":true,\"files\":1,\"bytes\":5,"
                     "\"paths\":[\"/data\",\"/data/a\"],\"pathsNotShown\":0,\"error\":null}");
    st = ctl_restore_result(job, pods, start, start + 200, &reason, &message);
    assert_string_equal(reason, "DryRun");
    assert_non_null(strstr(message, "nothing was written"));
    assert_int_equal(json_array_size(ctl_json_path(st, "status.paths")), 2);
    json_decref(st);
    json_decref(pods);
    json_decref(job);

    /* The agent's reason, when it gave one: a wrong key. */
    job = ended_job(false);
    pods = pods_with("{\"snapshot\":\"abc\",\"dryRun\":false,\"files\":0,\"bytes\":0,\"error\":"
                     "{\"reason\":\"WrongKey\",\"message\":\"wrong key: the repository key does "
                     "not open it\"}}");
    st = ctl_restore_result(job, pods, start, start + 200, &reason, &message);
    assert_string_equal(ctl_json_str(st, "status.phase"), "Failed");
    assert_string_equal(reason, "WrongKey");
    assert_non_null(strstr(message, "wrong key"));
    cond = json_array_get(ctl_json_path(st, "status.conditions"), 0);
    assert_string_equal(ctl_json_str(cond, "status"), "False");
    json_decref(st);
    json_decref(pods);

    /* No result: the Job's reason and the tail of the output. */
    pods = pods_with("Segmentation fault");
    st = ctl_restore_result(job, pods, start, start + 200, &reason, &message);
    assert_string_equal(reason, "JobFailed");
    assert_non_null(strstr(message, "BackoffLimitExceeded"));
    assert_non_null(strstr(message, "Segmentation fault"));
    json_decref(st);
    json_decref(pods);

    /* Pods not read. */
    st = ctl_restore_result(job, NULL, 0, start + 200, &reason, &message);
    assert_string_equal(reason, "JobFailed");
    assert_non_null(strstr(message, "could not be read"));
    assert_null(ctl_json_path(st, "status.duration"));
    json_decref(st);
    json_decref(job);
}

static void test_pod_stuck(void **state)
{
    /* Waiting for the image or for the container to be made: not stuck. */
    json_t *pods = json_loads(
        "{\"items\": [{\"metadata\": {\"name\": \"p1\"}, \"status\": {\"containerStatuses\": "
        "[{\"name\": \"restore\", \"state\": {\"waiting\": {\"reason\": "
        "\"ContainerCreating\"}}}]}}, {\"metadata\": {\"name\": \"p0\"}, \"status\": {}}]}",
        0, NULL);
    assert_null(ctl_restore_pod_stuck(pods));
    json_decref(pods);
    assert_null(ctl_restore_pod_stuck(NULL));
    /* The kubelet cannot make the subPath: it would retry forever. */
    pods = json_loads("{\"items\": [{\"metadata\": {\"name\": \"p1\"}, \"status\": "
                      "{\"containerStatuses\": [{\"name\": \"restore\", \"state\": "
                      "{\"waiting\": {\"reason\": \"CreateContainerConfigError\", "
                      "\"message\": \"failed to create subPath directory\"}}}]}}]}",
                      0, NULL);
    char *why = ctl_restore_pod_stuck(pods);
    assert_string_equal(why, "the restore's pod p1 cannot start: CreateContainerConfigError: "
                             "failed to create subPath directory");
    free(why);
    json_decref(pods);
}

static void test_status_patches(void **state)
{
    json_t *p = ctl_restore_status(CTL_PHASE_PENDING, "WaitingForTarget", "waits", 1767225600);
    assert_string_equal(ctl_json_str(p, "status.phase"), "Pending");
    assert_string_equal(ctl_json_str(p, "status.reason"), "WaitingForTarget");
    const json_t *cond = json_array_get(ctl_json_path(p, "status.conditions"), 0);
    assert_string_equal(ctl_json_str(cond, "status"), "Unknown");
    assert_string_equal(ctl_json_str(cond, "lastTransitionTime"), "2026-01-01T00:00:00Z");
    json_decref(p);
    p = ctl_restore_failed("NoGoodSnapshot", "none", 1767225600);
    assert_string_equal(ctl_json_str(p, "status.phase"), "Failed");
    assert_string_equal(ctl_json_str(p, "status.completionTime"), "2026-01-01T00:00:00Z");
    json_decref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_read_and_refusals), cmocka_unit_test(test_node_job),
        cmocka_unit_test(test_dry_run_and_pvc_jobs),   cmocka_unit_test(test_targets_overlap),
        cmocka_unit_test(test_pick_newest_good),       cmocka_unit_test(test_result),
        cmocka_unit_test(test_status_patches),         cmocka_unit_test(test_pod_stuck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
