#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gcplan.h"
#include "objects.h"

static bool is_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

static void test_names_are_deterministic_and_valid(void **state)
{
    char a[CTL_NAME_MAX], b[CTL_NAME_MAX];
    ctl_backup_name("ops", "etc-and-home", "node-1", "2026-03-29T03:30", a);
    ctl_backup_name("ops", "etc-and-home", "node-1", "2026-03-29T03:30", b);
    assert_string_equal(a, b);
    assert_true(strncmp(a, "etc-and-home-202603290330-", 26) == 0);
    assert_true(is_dns_label(a));
    /* Any part that differs gives another name. */
    const char *variants[][4] = {
        {"ops2", "etc-and-home", "node-1", "2026-03-29T03:30"},
        {"ops", "etc-and-home2", "node-1", "2026-03-29T03:30"},
        {"ops", "etc-and-home", "node-2", "2026-03-29T03:30"},
        {"ops", "etc-and-home", "node-1", "2026-03-29T03:31"},
        {"op", "setc-and-home", "node-1", "2026-03-29T03:30"},
    };
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        ctl_backup_name(variants[i][0], variants[i][1], variants[i][2], variants[i][3], b);
        assert_string_not_equal(a, b);
    }
    /* The longest policy name and a long host still fit a Job name. */
    char policy[64];
    memset(policy, 'p', 63);
    policy[63] = '\0';
    char host[254];
    memset(host, 'h', 253);
    host[253] = '\0';
    ctl_backup_name("default", policy, host, "2026-12-31T23:59", a);
    assert_true(strlen(a) <= 63);
    assert_true(is_dns_label(a));
}

static void test_labels(void **state)
{
    char out[CTL_NAME_MAX];
    ctl_slot_label("2026-03-29T03:30", out);
    assert_string_equal(out, "20260329T0330");
    ctl_host_label("node-1.example.com", out);
    assert_string_equal(out, "node-1.example.com");
    char host[254];
    memset(host, 'h', 253);
    host[253] = '\0';
    ctl_host_label(host, out);
    assert_int_equal(strlen(out), 22);
    assert_true(strncmp(out, "h-", 2) == 0);
}

static void make_policy(struct policy *p, char **paths)
{
    memset(p, 0, sizeof(*p));
    p->name = "etc-and-home";
    p->namespace = "ops";
    p->repository = "main";
    p->paths = paths;
    p->npaths = 2;
    p->limits.max_runtime = 12 * 3600;
    p->limits.nice = 10;
    p->limits.ionice_class = POLICY_IONICE_BEST_EFFORT;
    p->limits.ionice_level = 4;
    p->limits.upload_rate = 50u << 20;
}

static json_t *job_container(json_t *job)
{
    json_t *pod =
        json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec");
    return json_array_get(json_object_get(pod, "containers"), 0);
}

static json_t *job_pod(json_t *job)
{
    return json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec");
}

static json_t *by_name(json_t *array, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(array, i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
            return v;
    }
    return NULL;
}

/* The node cache (docs/operator.md, "The node cache"): a hostPath made when missing,
 * mounted writable for the agent alone, and named to lode backup; none without a dir. */
static void test_job_node_cache(void **state)
{
    (void)state;
    char *paths[] = {"/etc", "/home"};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {.host = "node-1",
                          .slot = "2026-03-29T03:30",
                          .trigger = CTL_TRIGGER_SCHEDULED,
                          .backup_name = "etc-and-home-202603290330-abc"};
    struct ctl_job_opts opts = {
        .agent_image = "lodestore:test", .ttl_seconds = 3600, .cache_dir = "/var/lib/lode-cache"};
    json_t *job = ctl_job_json(&p, &run, &opts);
    json_t *pod = job_pod(job);
    json_t *c = job_container(job);
    char *args = json_dumps(json_object_get(c, "args"), JSON_COMPACT);
    assert_non_null(strstr(args, "\"--cache-dir\",\"" CTL_CACHE_DIR "\""));
    assert_null(strstr(args, "--no-cache"));
    free(args);
    json_t *m = by_name(json_object_get(c, "volumeMounts"), "node-cache");
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "mountPath")), CTL_CACHE_DIR);
    assert_null(json_object_get(m, "readOnly"));
    assert_null(json_object_get(m, "recursiveReadOnly"));
    json_t *hp =
        json_object_get(by_name(json_object_get(pod, "volumes"), "node-cache"), "hostPath");
    assert_string_equal(json_string_value(json_object_get(hp, "path")), "/var/lib/lode-cache");
    assert_string_equal(json_string_value(json_object_get(hp, "type")), "DirectoryOrCreate");
    /* The node's root stays read-only beside it. */
    assert_true(json_is_true(
        json_object_get(by_name(json_object_get(c, "volumeMounts"), "host-root"), "readOnly")));
    json_decref(job);

    opts.cache_dir = "";
    job = ctl_job_json(&p, &run, &opts);
    c = job_container(job);
    assert_null(by_name(json_object_get(c, "volumeMounts"), "node-cache"));
    assert_null(by_name(json_object_get(job_pod(job), "volumes"), "node-cache"));
    args = json_dumps(json_object_get(c, "args"), JSON_COMPACT);
    assert_non_null(strstr(args, "\"--no-cache\"]"));
    free(args);
    json_decref(job);
}

static void test_job_is_pinned_bounded_and_read_only(void **state)
{
    char *paths[] = {"/etc", "/home"};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {.host = "node-1",
                          .slot = "2026-03-29T03:30",
                          .trigger = CTL_TRIGGER_SCHEDULED,
                          .policy_uid = "puid",
                          .backup_name = "etc-and-home-202603290330-abc",
                          .backup_uid = "buid"};
    struct ctl_job_opts opts = {.agent_image = "lodestore:test", .ttl_seconds = 3600};
    json_t *job = ctl_job_json(&p, &run, &opts);
    json_t *spec = json_object_get(job, "spec");
    json_t *pod = job_pod(job);
    json_t *c = job_container(job);

    assert_string_equal(json_string_value(json_object_get(job, "kind")), "Job");
    assert_int_equal(json_integer_value(json_object_get(spec, "activeDeadlineSeconds")), 43200);
    assert_int_equal(json_integer_value(json_object_get(spec, "backoffLimit")), 0);
    assert_int_equal(json_integer_value(json_object_get(spec, "ttlSecondsAfterFinished")), 3600);
    assert_string_equal(json_string_value(json_object_get(pod, "nodeName")), "node-1");
    assert_string_equal(json_string_value(json_object_get(pod, "restartPolicy")), "Never");
    /* The pod's own network unless asked otherwise. */
    assert_null(json_object_get(pod, "hostNetwork"));
    assert_null(json_object_get(pod, "dnsPolicy"));

    /* The agent backs up the policy's paths under the node's "/", mounted read-only. */
    char *args = json_dumps(json_object_get(c, "args"), JSON_COMPACT);
    assert_string_equal(args, "[\"--policy\",\"ops/etc-and-home\",\"--host\",\"node-1\","
                              "\"--root\",\"/host\",\"--output\",\"json\","
                              "\"--termination-log\",\"/dev/termination-log\",\"--no-cache\"]");
    free(args);
    json_t *root = by_name(json_object_get(c, "volumeMounts"), "host-root");
    assert_string_equal(json_string_value(json_object_get(root, "mountPath")), CTL_HOST_ROOT);
    assert_true(json_is_true(json_object_get(root, "readOnly")));
    json_t *vol = by_name(json_object_get(pod, "volumes"), "host-root");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(vol, "hostPath"), "path")), "/");
    /* The whole root and a scratch /tmp: no mount per path (a path the node lacks is
     * the agent's to report, not a pod that cannot start). */
    assert_int_equal(json_array_size(json_object_get(c, "volumeMounts")), 2);
    assert_non_null(by_name(json_object_get(c, "volumeMounts"), "tmp"));

    /* Root with DAC_READ_SEARCH alone, nothing else, on a read-only root. */
    char *sc = json_dumps(json_object_get(c, "securityContext"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(sc,
                        "{\"allowPrivilegeEscalation\":false,\"capabilities\":{\"add\":["
                        "\"DAC_READ_SEARCH\"],\"drop\":[\"ALL\"]},\"privileged\":false,"
                        "\"readOnlyRootFilesystem\":true,\"runAsNonRoot\":false,\"runAsUser\":0}");
    free(sc);
    assert_string_equal(json_string_value(json_object_get(c, "terminationMessagePolicy")),
                        "FallbackToLogsOnError");

    /* Labels select it; the Backup owns it. */
    json_t *meta = json_object_get(job, "metadata");
    json_t *labels = json_object_get(meta, "labels");
    assert_string_equal(json_string_value(json_object_get(labels, CTL_LABEL_POLICY)),
                        "etc-and-home");
    assert_string_equal(json_string_value(json_object_get(labels, CTL_LABEL_HOST)), "node-1");
    assert_string_equal(json_string_value(json_object_get(labels, CTL_LABEL_SLOT)),
                        "20260329T0330");
    json_t *owner = json_array_get(json_object_get(meta, "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "kind")), "Backup");
    assert_string_equal(json_string_value(json_object_get(owner, "uid")), "buid");
    /* No repository yet: no credentials of any kind. */
    char *s = json_dumps(job, JSON_COMPACT);
    assert_null(strstr(s, "secretKeyRef"));
    assert_null(strstr(s, "LODE_REPOSITORY"));
    free(s);
    json_decref(job);
}

/* --agent-host-network: the backup Job's and the GC Job's pods on the node's network,
 * resolving names through the cluster's DNS all the same. */
static void test_job_host_network(void **state)
{
    (void)state;
    char *paths[] = {"/etc", "/home"};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {
        .host = "node-1", .slot = "", .trigger = CTL_TRIGGER_MANUAL, .backup_name = "by-hand"};
    struct ctl_job_opts opts = {.agent_image = "img", .ttl_seconds = 60, .host_network = true};
    json_t *jobs[] = {ctl_job_json(&p, &run, &opts),
                      ctl_gc_job_json("ns", "main", NULL, "gc-main-x", 3600, &opts)};
    for (size_t i = 0; i < 2; i++) {
        json_t *pod = job_pod(jobs[i]);
        assert_true(json_is_true(json_object_get(pod, "hostNetwork")));
        assert_string_equal(json_string_value(json_object_get(pod, "dnsPolicy")),
                            "ClusterFirstWithHostNet");
        json_decref(jobs[i]);
    }
}

/* spec.hooks: only in a namespace the operator allows do they get SYS_CHROOT and a
 * writable node root; elsewhere the agent is told LODE_HOOKS_ALLOWED=0. */
static void test_job_hooks(void **state)
{
    char *paths[] = {"/etc", "/home"};
    char *argv[] = {"/bin/true", NULL};
    struct policy_hook h = {.name = "dump", .argv = argv, .argc = 1, .timeout = 60};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {
        .host = "node-1", .slot = "", .trigger = CTL_TRIGGER_MANUAL, .backup_name = "by-hand"};
    const char *lists[] = {NULL, "", "db,other", "db,ops", "*", "ops"};
    const bool want[] = {false, false, false, true, true, true};
    assert_false(ctl_hooks_allowed(&(struct ctl_job_opts){.hook_namespaces = "op"}, "ops"));
    assert_false(ctl_hooks_allowed(&(struct ctl_job_opts){.hook_namespaces = "opsx"}, "ops"));
    for (size_t k = 0; k < 2; k++) {
        p.hooks.before = k == 0 ? NULL : &h;
        p.hooks.nbefore = k;
        for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
            struct ctl_job_opts opts = {
                .agent_image = "img", .ttl_seconds = 60, .hook_namespaces = lists[i]};
            assert_int_equal(ctl_hooks_allowed(&opts, "ops"), want[i]);
            json_t *job = ctl_job_json(&p, &run, &opts);
            json_t *c = job_container(job);
            json_t *add = json_object_get(
                json_object_get(json_object_get(c, "securityContext"), "capabilities"), "add");
            json_t *root = by_name(json_object_get(c, "volumeMounts"), "host-root");
            json_t *env = by_name(json_object_get(c, "env"), "LODE_HOOKS_ALLOWED");
            bool granted = k == 1 && want[i];
            assert_int_equal(json_array_size(add), granted ? 2 : 1);
            assert_int_equal(json_is_true(json_object_get(root, "readOnly")), !granted);
            /* The API server takes recursiveReadOnly only on a read-only mount. */
            assert_int_equal(json_object_get(root, "recursiveReadOnly") == NULL, granted);
            if (k == 1 && !want[i])
                assert_string_equal(json_string_value(json_object_get(env, "value")), "0");
            else
                assert_null(env);
            json_decref(job);
        }
    }
}

/* A Backup made by hand that asks for a pin: lode backup --pin REASON. */
static void test_job_pin(void **state)
{
    char *paths[] = {"/etc", "/home"};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {.host = "node-1",
                          .slot = "",
                          .trigger = CTL_TRIGGER_MANUAL,
                          .backup_name = "by-hand",
                          .pin_reason = "before the 3.2 upgrade"};
    struct ctl_job_opts opts = {.agent_image = "img", .ttl_seconds = 60};
    json_t *job = ctl_job_json(&p, &run, &opts);
    json_t *args = json_object_get(job_container(job), "args");
    size_t n = json_array_size(args);
    assert_string_equal(json_string_value(json_array_get(args, n - 2)), "--pin");
    assert_string_equal(json_string_value(json_array_get(args, n - 1)), "before the 3.2 upgrade");
    json_decref(job);
    run.pin_reason = NULL;
    job = ctl_job_json(&p, &run, &opts);
    args = json_object_get(job_container(job), "args");
    for (size_t i = 0; i < json_array_size(args); i++)
        assert_string_not_equal(json_string_value(json_array_get(args, i)), "--pin");
    json_decref(job);
}

/* spec.pod on the Job's pod; a resource set before (a default) is overridden, not lost. */
static void test_job_pod_settings(void **state)
{
    char *paths[] = {"/etc", "/home"};
    char *secrets[] = {"regcred"};
    struct policy_toleration tol[] = {
        {.key = "node-role.kubernetes.io/control-plane", .op = "Exists", .effect = "NoSchedule"},
        {.key = "dedicated",
         .op = "Equal",
         .value = "db",
         .effect = "NoExecute",
         .has_seconds = true,
         .seconds = 60},
    };
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {
        .host = "node-1", .slot = "", .trigger = CTL_TRIGGER_MANUAL, .backup_name = "by-hand"};
    struct ctl_job_opts opts = {.agent_image = "img", .ttl_seconds = 60};
    json_t *job = ctl_job_json(&p, &run, &opts);
    /* Without spec.pod: the default tolerates every taint, no priority, no pull secrets. */
    json_t *tols = json_object_get(job_pod(job), "tolerations");
    assert_int_equal(json_array_size(tols), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tols, 0), "operator")),
                        "Exists");
    assert_null(json_object_get(job_pod(job), "priorityClassName"));
    json_decref(job);

    p.pod.priority_class = "backup-low";
    p.pod.pull_secrets = secrets;
    p.pod.npull_secrets = 1;
    p.pod.has_tolerations = true;
    p.pod.tolerations = tol;
    p.pod.ntolerations = 2;
    p.pod.requests_memory = "128Mi";
    p.pod.limits_memory = "1Gi";
    job = ctl_job_json(&p, &run, &opts);
    json_t *pod = job_pod(job), *c = job_container(job);
    assert_string_equal(json_string_value(json_object_get(pod, "priorityClassName")), "backup-low");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(pod, "imagePullSecrets"), 0), "name")),
                        "regcred");
    tols = json_object_get(pod, "tolerations");
    assert_int_equal(json_array_size(tols), 2);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(tols, 1), "tolerationSeconds")), 60);
    assert_null(json_object_get(json_array_get(tols, 0), "value"));
    json_t *res = json_object_get(c, "resources");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res, "limits"), "memory")), "1Gi");
    assert_null(json_object_get(json_object_get(res, "limits"), "cpu"));
    /* A default set before (as the pod's hardening may) is overridden by the policy's. */
    json_object_set_new(json_object_get(res, "requests"), "memory", json_string("64Mi"));
    json_object_set_new(json_object_get(res, "requests"), "cpu", json_string("50m"));
    ctl_job_set_pod(job, &p);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res, "requests"), "memory")), "128Mi");
    assert_string_equal(json_string_value(json_object_get(json_object_get(res, "requests"), "cpu")),
                        "50m");
    json_decref(job);
}

static void test_job_manual(void **state)
{
    char *paths[] = {"/etc", "/home"};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {
        .host = "node-1", .slot = "", .trigger = CTL_TRIGGER_MANUAL, .backup_name = "by-hand"};
    struct ctl_job_opts opts = {.agent_image = "img", .ttl_seconds = 60};
    json_t *job = ctl_job_json(&p, &run, &opts);
    char *s = json_dumps(job, JSON_COMPACT);
    assert_null(strstr(s, "ownerReferences"));
    assert_null(strstr(s, CTL_LABEL_SLOT));
    assert_null(strstr(s, "LODE_POLICY_DOCUMENT"));
    free(s);
    json_decref(job);
}

static const char *status_str(const json_t *patch, const char *member);

/* The agent's contract: the policy as compact JSON of four members, in the Job's env. */
static void test_policy_document(void **state)
{
    json_t *obj = json_loads(
        "{\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\",\"metadata\":{"
        "\"name\":\"etc\",\"namespace\":\"ops\",\"uid\":\"u\",\"generation\":3,\"labels\":{"
        "\"a\":\"b\"}},\"spec\":{\"repository\":\"main\",\"paths\":[\"/etc\"]},\"status\":{"
        "\"hosts\":3}}",
        0, NULL);
    char *doc = ctl_policy_document(obj);
    assert_string_equal(doc, "{\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\","
                             "\"metadata\":{\"name\":\"etc\",\"namespace\":\"ops\"},\"spec\":{"
                             "\"paths\":[\"/etc\"],\"repository\":\"main\"}}");
    char *paths[] = {"/etc", "/home"};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {.host = "node-1",
                          .slot = "",
                          .trigger = CTL_TRIGGER_MANUAL,
                          .backup_name = "by-hand",
                          .policy_document = doc};
    struct ctl_job_opts opts = {.agent_image = "img", .ttl_seconds = 60};
    json_t *job = ctl_job_json(&p, &run, &opts);
    json_t *c = job_container(job);
    json_t *env = by_name(json_object_get(c, "env"), "LODE_POLICY_DOCUMENT");
    assert_string_equal(json_string_value(json_object_get(env, "value")), doc);
    json_decref(job);
    free(doc);
    json_decref(obj);

    /* A document without a spec still has one (empty), so the agent's error is about it. */
    obj = json_loads("{\"metadata\":{\"name\":\"x\"}}", 0, NULL);
    doc = ctl_policy_document(obj);
    assert_string_equal(doc,
                        "{\"apiVersion\":\"lodestore.io/v1alpha1\",\"kind\":\"BackupPolicy\","
                        "\"metadata\":{\"name\":\"x\",\"namespace\":\"default\"},\"spec\":{}}");
    free(doc);
    json_decref(obj);
}

/* A PodList of one pod whose backup container ended with message (NULL: none). */
static json_t *pods_with(const char *message, const char *created)
{
    json_t *term = json_pack("{s:i}", "exitCode", 0);
    if (message != NULL)
        json_object_set_new(term, "message", json_string(message));
    return json_pack("{s:[{s:{s:s}, s:{s:[{s:s, s:{s:o}}]}}]}", "items", "metadata",
                     "creationTimestamp", created, "status", "containerStatuses", "name", "backup",
                     "state", "terminated", term);
}

/* The terminated state of the first container of the first pod of pods_with's list. */
static json_t *terminated_of(json_t *pods)
{
    json_t *pod = json_array_get(json_object_get(pods, "items"), 0);
    json_t *cs =
        json_array_get(json_object_get(json_object_get(pod, "status"), "containerStatuses"), 0);
    return json_object_get(json_object_get(cs, "state"), "terminated");
}

static const json_t *cond(const json_t *patch, const char *type)
{
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(json_object_get(patch, "status"), "conditions"), i, x)
    {
        if (strcmp(json_string_value(json_object_get(x, "type")), type) == 0)
            return x;
    }
    return NULL;
}

static void test_backup_result(void **state)
{
    struct ctl_backup_status s = {.phase = CTL_PHASE_SUCCEEDED, .completed = 1774751400};
    struct ctl_result r;

    /* The agent's snapshot, suspicious: copied member by member, unknown members dropped. */
    json_t *patch = ctl_backup_status_json(&s);
    json_t *pods = pods_with(
        "{\"snapshot\":{\"id\":\"ab12\",\"policy\":\"ops/etc\",\"host\":\"node-1\",\"time\":"
        "\"2026-03-29T02:30:00Z\",\"incomplete\":false,\"suspicious\":true,\"files\":10,"
        "\"bytes\":2048,\"newBytes\":1024,\"uploadedBytes\":512,\"secret\":\"x\",\"files2\":1},"
        "\"anomaly\":\"deletion-spike: 60 of 100 files deleted\"}",
        "2026-03-29T02:30:00Z");
    ctl_backup_result(patch, pods, 1774751400, &r);
    assert_true(r.reported);
    assert_true(r.suspicious);
    assert_string_equal(r.id, "ab12");
    char *snap = json_dumps(json_object_get(json_object_get(patch, "status"), "snapshot"),
                            JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(snap, "{\"bytes\":2048,\"files\":10,\"host\":\"node-1\",\"id\":\"ab12\","
                              "\"incomplete\":false,\"newBytes\":1024,\"policy\":\"ops/etc\","
                              "\"suspicious\":true,\"time\":\"2026-03-29T02:30:00Z\","
                              "\"uploadedBytes\":512}");
    free(snap);
    assert_string_equal(json_string_value(json_object_get(cond(patch, "Suspicious"), "status")),
                        "True");
    /* The rules that fired reach the condition and the Event's text. */
    assert_string_equal(r.why, "deletion-spike: 60 of 100 files deleted");
    assert_non_null(
        strstr(json_string_value(json_object_get(cond(patch, "Suspicious"), "message")),
               "suspicious: deletion-spike: 60 of 100 files deleted: check what changed"));
    assert_string_equal(
        json_string_value(json_object_get(cond(patch, "SnapshotReported"), "status")), "True");
    /* No ioPriority from the agent: no IOPriorityIneffective condition. */
    assert_string_equal(r.ioprio, "");
    assert_null(cond(patch, "IOPriorityIneffective"));
    json_decref(patch);
    json_decref(pods);

    /* The agent said the I/O priority has no effect: the condition carries its words. */
    patch = ctl_backup_status_json(&s);
    pods = pods_with("{\"snapshot\":{\"id\":\"ab13\",\"policy\":\"ops/etc\",\"host\":"
                     "\"node-1\",\"time\":\"2026-03-29T02:30:00Z\",\"incomplete\":false,"
                     "\"suspicious\":false,\"files\":1,\"bytes\":1,\"newBytes\":1,"
                     "\"uploadedBytes\":1},\"ioPriority\":\"the I/O priority has no effect on "
                     "/etc: its device nvme0n1p2 uses the none scheduler\"}",
                     "2026-03-29T02:30:00Z");
    ctl_backup_result(patch, pods, 1774751400, &r);
    assert_true(r.reported);
    assert_string_equal(r.ioprio,
                        "the I/O priority has no effect on /etc: its device nvme0n1p2 uses the "
                        "none scheduler");
    const json_t *io = cond(patch, "IOPriorityIneffective");
    assert_non_null(io);
    assert_string_equal(json_string_value(json_object_get(io, "status")), "True");
    assert_string_equal(json_string_value(json_object_get(io, "reason")),
                        "SchedulerIgnoresPriority");
    assert_string_equal(json_string_value(json_object_get(io, "message")), r.ioprio);
    json_decref(patch);
    json_decref(pods);

    /* No message, a message that is not the contract, no pods at all: said, not failed. */
    const char *bad[] = {NULL, "not json", "{\"snapshot\":{\"files\":1}}", "{\"snapshot\":3}"};
    const char *want[] = {"NoResult", "UnparsableResult", "UnparsableResult", "UnparsableResult"};
    for (size_t i = 0; i < 4; i++) {
        patch = ctl_backup_status_json(&s);
        pods = pods_with(bad[i], "2026-03-29T02:30:00Z");
        ctl_backup_result(patch, pods, 1774751400, &r);
        assert_false(r.reported);
        assert_null(json_object_get(json_object_get(patch, "status"), "snapshot"));
        const json_t *c = cond(patch, "SnapshotReported");
        assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
        assert_string_equal(json_string_value(json_object_get(c, "reason")), want[i]);
        assert_null(cond(patch, "Suspicious"));
        json_decref(patch);
        json_decref(pods);
    }
    patch = ctl_backup_status_json(&s);
    ctl_backup_result(patch, NULL, 1774751400, &r);
    assert_non_null(strstr(
        json_string_value(json_object_get(cond(patch, "SnapshotReported"), "message")), "pods"));
    json_decref(patch);

    /* A failed run's log tail (FallbackToLogsOnError) joins its message; only the tail. */
    s = (struct ctl_backup_status){
        .phase = CTL_PHASE_FAILED, .reason = "job_failed", .message = "the backup Job x failed"};
    patch = ctl_backup_status_json(&s);
    char big[1000];
    memset(big, 'a', sizeof(big));
    memcpy(big + sizeof(big) - 20, "cannot open /etc/x\n", 20);
    big[sizeof(big) - 1] = '\0';
    pods = pods_with(big, "2026-03-29T02:30:00Z");
    ctl_backup_result(patch, pods, 1774751400, &r);
    const char *m = status_str(patch, "message");
    assert_non_null(strstr(m, "the backup Job x failed; the agent's last output: aaa"));
    assert_non_null(strstr(m, "cannot open /etc/x"));
    assert_true(strlen(m) < 400);
    json_decref(patch);
    json_decref(pods);

    /* Killed at its memory limit: the runtime's reason leads the message, with the log tail. */
    s = (struct ctl_backup_status){
        .phase = CTL_PHASE_FAILED, .reason = "job_failed", .message = "the backup Job x failed"};
    patch = ctl_backup_status_json(&s);
    pods = pods_with("reading /srv/data", "2026-03-29T02:30:00Z");
    json_t *term = terminated_of(pods);
    json_object_set_new(term, "reason", json_string("OOMKilled"));
    json_object_set_new(term, "exitCode", json_integer(137));
    ctl_backup_result(patch, pods, 1774751400, &r);
    m = status_str(patch, "message");
    assert_non_null(strstr(m, "OOMKilled: the agent went over its container's memory limit "
                              "(exit code 137)"));
    assert_non_null(strstr(m, "the backup Job x failed; the agent's last output: reading"));
    assert_string_equal(status_str(patch, "reason"), "job_failed");
    json_decref(patch);
    json_decref(pods);
    /* The same reason on a run that succeeded changes nothing (it cannot be the agent's). */
    patch = ctl_backup_status_json(&(struct ctl_backup_status){.phase = CTL_PHASE_SUCCEEDED});
    pods = pods_with(NULL, "2026-03-29T02:30:00Z");
    json_object_set_new(terminated_of(pods), "reason", json_string("OOMKilled"));
    ctl_backup_result(patch, pods, 1774751400, &r);
    assert_null(strstr(status_str(patch, "message"), "OOMKilled"));
    json_decref(patch);
    json_decref(pods);

    /* Of two pods, the newest speaks. */
    patch = ctl_backup_status_json(&(struct ctl_backup_status){.phase = CTL_PHASE_SUCCEEDED});
    pods = pods_with("{\"snapshot\":{\"id\":\"old\"}}", "2026-03-29T02:30:00Z");
    json_t *newer = pods_with("{\"snapshot\":{\"id\":\"new\"}}", "2026-03-29T02:31:00Z");
    json_array_append(json_object_get(pods, "items"),
                      json_array_get(json_object_get(newer, "items"), 0));
    ctl_backup_result(patch, pods, 1774751400, &r);
    assert_string_equal(r.id, "new");
    json_decref(newer);
    json_decref(pods);
    json_decref(patch);
}

/* spec.hooks as the agent ran them: the HookFailed condition, out->hook and the message. */
static void test_backup_result_hooks(void **state)
{
    struct ctl_result r;
    const struct ctl_backup_status failed = {
        .phase = CTL_PHASE_FAILED, .reason = "job_failed", .message = "the backup Job x failed"};

    /* A before-hook that failed with onError: fail: no snapshot; it leads the message. */
    json_t *patch = ctl_backup_status_json(&failed);
    json_t *pods = pods_with(
        "{\"snapshot\":null,\"error\":\"before-hook failed (onError: fail): hook dump failed "
        "with exit status 2; its last output: pg_dump: no such database\",\"errors\":[],"
        "\"hooks\":[{\"name\":\"dump\",\"phase\":\"before\",\"result\":\"failed\","
        "\"exitCode\":2,\"continued\":false,\"outputBytes\":33,\"outputTail\":\"pg_dump: no "
        "such database\\n\",\"error\":\"hook dump failed with exit status 2; its last output: "
        "pg_dump: no such database\"},{\"name\":\"notify\",\"phase\":\"after\",\"result\":"
        "\"succeeded\",\"exitCode\":0,\"continued\":false}]}",
        "2026-03-29T02:30:00Z");
    ctl_backup_result(patch, pods, 1774751400, &r);
    const json_t *c = cond(patch, "HookFailed");
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "HookFailed");
    assert_string_equal(r.hook, "before-hook dump failed (exit code 2; onError: fail, so no "
                                "backup ran): hook dump failed with exit status 2; its last "
                                "output: pg_dump: no such database");
    assert_string_equal(json_string_value(json_object_get(c, "message")), r.hook);
    const char *m = status_str(patch, "message");
    assert_true(strncmp(m, r.hook, strlen(r.hook)) == 0);
    assert_non_null(strstr(m, "; the backup Job x failed"));
    assert_string_equal(status_str(patch, "reason"), "job_failed");
    json_decref(patch);
    json_decref(pods);

    /* An after-hook that timed out with onError: continue, then one that failed: the run
     * succeeded, the condition says so, the message is left alone. */
    patch = ctl_backup_status_json(&(struct ctl_backup_status){.phase = CTL_PHASE_SUCCEEDED});
    pods =
        pods_with("{\"snapshot\":{\"id\":\"ab14\"},\"hooks\":[{\"name\":\"thaw\",\"phase\":"
                  "\"after\",\"result\":\"timedOut\",\"exitCode\":null,\"continued\":true,"
                  "\"error\":\"hook thaw timed out after 5s and was killed\"},{\"name\":\"ping\","
                  "\"phase\":\"after\",\"result\":\"failed\",\"exitCode\":1,\"continued\":"
                  "true}]}",
                  "2026-03-29T02:30:00Z");
    ctl_backup_result(patch, pods, 1774751400, &r);
    assert_true(r.reported);
    assert_string_equal(r.hook, "after-hook thaw failed (timed out; onError: continue, so the run "
                                "went on): hook thaw timed out after 5s and was killed; 1 more "
                                "hook failed");
    assert_string_equal(json_string_value(json_object_get(cond(patch, "HookFailed"), "status")),
                        "True");
    const char *sm =
        json_string_value(json_object_get(json_object_get(patch, "status"), "message"));
    assert_true(sm == NULL || strstr(sm, "hook") == NULL);
    json_decref(patch);
    json_decref(pods);

    /* An after-hook that failed with onError: fail after the snapshot: the run failed. */
    patch = ctl_backup_status_json(&failed);
    pods = pods_with("{\"snapshot\":{\"id\":\"ab15\"},\"hooks\":[{\"name\":\"n\",\"phase\":"
                     "\"after\",\"result\":\"failed\",\"exitCode\":127}]}",
                     "2026-03-29T02:30:00Z");
    ctl_backup_result(patch, pods, 1774751400, &r);
    assert_string_equal(r.hook, "after-hook n failed (exit code 127; onError: fail, so the run "
                                "failed)");
    assert_string_equal(status_str(patch, "message"), "after-hook n failed (exit code 127; "
                                                      "onError: fail, so the run failed); the "
                                                      "backup Job x failed");
    json_decref(patch);
    json_decref(pods);

    /* Every hook succeeded: HookFailed=False; no hooks at all: no condition. */
    const char *docs[] = {"{\"snapshot\":{\"id\":\"ab16\"},\"hooks\":[{\"name\":\"d\",\"phase\":"
                          "\"before\",\"result\":\"succeeded\",\"exitCode\":0}]}",
                          "{\"snapshot\":{\"id\":\"ab17\"}}",
                          "{\"snapshot\":{\"id\":\"ab18\"},\"hooks\":[]}",
                          "{\"snapshot\":{\"id\":\"ab19\"},\"hooks\":{\"name\":\"d\"}}"};
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        patch = ctl_backup_status_json(&(struct ctl_backup_status){.phase = CTL_PHASE_SUCCEEDED});
        pods = pods_with(docs[i], "2026-03-29T02:30:00Z");
        ctl_backup_result(patch, pods, 1774751400, &r);
        assert_string_equal(r.hook, "");
        c = cond(patch, "HookFailed");
        if (i == 0) {
            assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
            assert_string_equal(json_string_value(json_object_get(c, "reason")), "HooksSucceeded");
        } else {
            assert_null(c);
        }
        json_decref(patch);
        json_decref(pods);
    }
}

static const char *env_value(json_t *c, const char *name)
{
    return json_string_value(json_object_get(by_name(json_object_get(c, "env"), name), "value"));
}

static const char *env_secret(json_t *c, const char *name, const char **key)
{
    json_t *ref = json_object_get(
        json_object_get(by_name(json_object_get(c, "env"), name), "valueFrom"), "secretKeyRef");
    *key = json_string_value(json_object_get(ref, "key"));
    return json_string_value(json_object_get(ref, "name"));
}

static void test_job_repository(void **state)
{
    char *paths[] = {"/etc", "/home"};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {
        .host = "node-1", .slot = "", .trigger = CTL_TRIGGER_MANUAL, .backup_name = "by-hand"};
    struct ctl_job_opts opts = {.agent_image = "img", .ttl_seconds = 60};
    json_t *job = ctl_job_json(&p, &run, &opts);
    /* "-----BEGIN CERTIFICATE-----\n" in base64. */
    json_t *repo = json_loads(
        "{\"spec\":{\"endpoint\":\"https://s3.example:9000/\",\"bucket\":\"bkt\","
        "\"prefix\":\"team/a\",\"region\":\"eu-west-1\",\"caBundle\":"
        "\"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\",\"credentialsSecret\":{\"name\":\"s3-creds\","
        "\"accessKeyIDKey\":\"ak\",\"secretAccessKeyKey\":\"sk\",\"sessionTokenKey\":\"st\","
        "\"repositoryKeyKey\":\"rk\"}}}",
        0, NULL);
    struct util_err err = {0};
    assert_int_equal(ctl_job_set_repository(job, repo, &err), 0);
    json_t *c = job_container(job);
    const char *key;

    assert_string_equal(env_value(c, "LODE_REPOSITORY"), "s3:https://s3.example:9000/bkt/team/a");
    assert_string_equal(env_value(c, "AWS_REGION"), "eu-west-1");
    assert_null(by_name(json_object_get(c, "env"), "LODE_ALLOW_PLAIN_HTTP"));
    assert_string_equal(env_secret(c, "AWS_ACCESS_KEY_ID", &key), "s3-creds");
    assert_string_equal(key, "ak");
    assert_string_equal(env_secret(c, "AWS_SECRET_ACCESS_KEY", &key), "s3-creds");
    assert_string_equal(key, "sk");
    assert_string_equal(env_secret(c, "AWS_SESSION_TOKEN", &key), "s3-creds");
    assert_string_equal(key, "st");

    /* The repository key: a file of the same Secret, readable by root alone. */
    assert_string_equal(env_value(c, "LODE_KEY_FILE"), CTL_KEY_FILE);
    json_t *km = by_name(json_object_get(c, "volumeMounts"), "repository-key");
    assert_string_equal(json_string_value(json_object_get(km, "mountPath")), CTL_KEY_DIR);
    assert_true(json_is_true(json_object_get(km, "readOnly")));
    json_t *kv = json_object_get(
        by_name(json_object_get(job_pod(job), "volumes"), "repository-key"), "secret");
    assert_string_equal(json_string_value(json_object_get(kv, "secretName")), "s3-creds");
    assert_int_equal(json_integer_value(json_object_get(kv, "defaultMode")), 0400);
    json_t *item = json_array_get(json_object_get(kv, "items"), 0);
    assert_string_equal(json_string_value(json_object_get(item, "key")), "rk");
    assert_string_equal(json_string_value(json_object_get(item, "path")), "key");

    /* The CA bundle, decoded, through an annotation of the pod and the downward API. */
    assert_string_equal(env_value(c, "LODE_CACERT"), CTL_CA_FILE);
    json_t *tmeta =
        json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "metadata");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(tmeta, "annotations"), CTL_ANNOT_CA)),
        "-----BEGIN CERTIFICATE-----\n");
    assert_non_null(by_name(json_object_get(job_pod(job), "volumes"), "ca-bundle"));
    json_decref(repo);
    json_decref(job);

    /* allowPlainHTTP reaches the agent, which refuses plain http to a remote host without. */
    job = ctl_job_json(&p, &run, &opts);
    repo = json_loads("{\"spec\":{\"endpoint\":\"http://s3.lan:9000\",\"bucket\":\"b\","
                      "\"allowPlainHTTP\":true,\"credentialsSecret\":{\"name\":\"s\"}}}",
                      0, NULL);
    assert_int_equal(ctl_job_set_repository(job, repo, &err), 0);
    assert_string_equal(env_value(job_container(job), "LODE_ALLOW_PLAIN_HTTP"), "true");
    assert_string_equal(env_value(job_container(job), "LODE_REPOSITORY"),
                        "s3:http://s3.lan:9000/b");
    assert_null(by_name(json_object_get(job_container(job), "env"), "LODE_ANOMALY"));
    json_decref(repo);
    json_decref(job);

    /* The anomaly thresholds reach the agent as one JSON value. */
    job = ctl_job_json(&p, &run, &opts);
    repo = json_loads("{\"spec\":{\"endpoint\":\"https://s3.lan\",\"bucket\":\"b\","
                      "\"anomaly\":{\"deletionPercent\":10,\"deletionMinFiles\":5},"
                      "\"credentialsSecret\":{\"name\":\"s\"}}}",
                      0, NULL);
    assert_int_equal(ctl_job_set_repository(job, repo, &err), 0);
    assert_string_equal(env_value(job_container(job), "LODE_ANOMALY"),
                        "{\"deletionMinFiles\":5,\"deletionPercent\":10}");
    json_decref(repo);
    json_decref(job);
}

static void test_job_repository_defaults_and_errors(void **state)
{
    char *paths[] = {"/etc", "/home"};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {
        .host = "node-1", .slot = "", .trigger = CTL_TRIGGER_MANUAL, .backup_name = "by-hand"};
    struct ctl_job_opts opts = {.agent_image = "img", .ttl_seconds = 60};
    json_t *job = ctl_job_json(&p, &run, &opts);
    char *before = json_dumps(job, JSON_SORT_KEYS);
    struct util_err err = {0};
    const char *key;

    /* Each missing part is refused and leaves the Job as it was. */
    const char *bad[] = {
        "{\"spec\":{\"bucket\":\"b\",\"credentialsSecret\":{\"name\":\"s\"}}}",
        "{\"spec\":{\"endpoint\":\"https://e\",\"credentialsSecret\":{\"name\":\"s\"}}}",
        "{\"spec\":{\"endpoint\":\"https://e\",\"bucket\":\"b\"}}",
        "{\"spec\":{\"endpoint\":\"https://e\",\"bucket\":\"b\",\"credentialsSecret\":{\"name\":"
        "\"s\"},\"caBundle\":\"not base64!\"}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *repo = json_loads(bad[i], 0, NULL);
        assert_int_equal(ctl_job_set_repository(job, repo, &err), UTIL_EINVAL);
        assert_true(strlen(err.msg) > 0);
        char *after = json_dumps(job, JSON_SORT_KEYS);
        assert_string_equal(before, after);
        free(after);
        json_decref(repo);
    }
    assert_non_null(strstr(err.msg, "caBundle"));

    json_t *repo = json_loads("{\"spec\":{\"endpoint\":\"http://127.0.0.1:9000\",\"bucket\":\"b\","
                              "\"credentialsSecret\":{\"name\":\"s\"}}}",
                              0, NULL);
    assert_int_equal(ctl_job_set_repository(job, repo, &err), 0);
    json_t *c = job_container(job);
    assert_string_equal(env_value(c, "LODE_REPOSITORY"), "s3:http://127.0.0.1:9000/b");
    assert_string_equal(env_value(c, "AWS_REGION"), "us-east-1");
    env_secret(c, "AWS_ACCESS_KEY_ID", &key);
    assert_string_equal(key, "AWS_ACCESS_KEY_ID");
    env_secret(c, "AWS_SECRET_ACCESS_KEY", &key);
    assert_string_equal(key, "AWS_SECRET_ACCESS_KEY");
    assert_null(by_name(json_object_get(c, "env"), "AWS_SESSION_TOKEN"));
    assert_null(by_name(json_object_get(c, "env"), "LODE_CACERT"));
    json_t *kv = json_object_get(
        by_name(json_object_get(job_pod(job), "volumes"), "repository-key"), "secret");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(kv, "items"), 0), "key")),
        "repository-key");
    free(before);
    json_decref(repo);
    json_decref(job);
}

/* The node's Job gets the agent's Secret, never the one that can delete; GC gets that one. */
static void test_job_agent_credentials(void **state)
{
    char *paths[] = {"/etc", "/home"};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {
        .host = "node-1", .slot = "", .trigger = CTL_TRIGGER_MANUAL, .backup_name = "by-hand"};
    struct ctl_job_opts opts = {.agent_image = "img", .ttl_seconds = 60};
    json_t *repo = json_loads(
        "{\"spec\":{\"endpoint\":\"https://s3.lan\",\"bucket\":\"b\",\"credentialsSecret\":{"
        "\"name\":\"deleter\",\"accessKeyIDKey\":\"dak\"},\"agentCredentialsSecret\":{\"name\":"
        "\"writer\",\"accessKeyIDKey\":\"wak\",\"sessionTokenKey\":\"wst\",\"repositoryKeyKey\":"
        "\"wrk\"},\"objectLock\":{\"mode\":\"COMPLIANCE\",\"days\":30}}}",
        0, NULL);
    struct util_err err = {0};
    const char *key;

    json_t *job = ctl_job_json(&p, &run, &opts);
    assert_int_equal(ctl_backup_job_set_repository(job, repo, &err), 0);
    json_t *c = job_container(job);
    assert_string_equal(env_secret(c, "AWS_ACCESS_KEY_ID", &key), "writer");
    assert_string_equal(key, "wak");
    assert_string_equal(env_secret(c, "AWS_SECRET_ACCESS_KEY", &key), "writer");
    assert_string_equal(key, "AWS_SECRET_ACCESS_KEY");
    assert_string_equal(env_secret(c, "AWS_SESSION_TOKEN", &key), "writer");
    assert_string_equal(key, "wst");
    json_t *kv = json_object_get(
        by_name(json_object_get(job_pod(job), "volumes"), "repository-key"), "secret");
    assert_string_equal(json_string_value(json_object_get(kv, "secretName")), "writer");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(kv, "items"), 0), "key")),
        "wrk");
    /* Object Lock on what the backup uploads (docs/security.md). */
    assert_string_equal(env_value(c, "LODE_OBJECT_LOCK"), "COMPLIANCE:30");
    char *s = json_dumps(job, JSON_COMPACT);
    assert_null(strstr(s, "deleter"));
    free(s);
    json_decref(job);

    /* GC (and the controller's forget) keep the deleting credentials. */
    job = ctl_gc_job_json("ops", "main", NULL, "gc-main-x", 3600, &opts);
    assert_int_equal(ctl_job_set_repository(job, repo, &err), 0);
    assert_string_equal(env_secret(job_container(job), "AWS_ACCESS_KEY_ID", &key), "deleter");
    assert_string_equal(key, "dak");
    assert_null(by_name(json_object_get(job_container(job), "env"), "LODE_OBJECT_LOCK"));
    s = json_dumps(job, JSON_COMPACT);
    assert_null(strstr(s, "writer"));
    free(s);
    json_decref(job);
    json_decref(repo);

    /* Without an agent Secret the backup Job has the one there is (not recommended). */
    repo = json_loads("{\"spec\":{\"endpoint\":\"https://s3.lan\",\"bucket\":\"b\","
                      "\"credentialsSecret\":{\"name\":\"only\"}}}",
                      0, NULL);
    job = ctl_job_json(&p, &run, &opts);
    assert_int_equal(ctl_backup_job_set_repository(job, repo, &err), 0);
    assert_string_equal(env_secret(job_container(job), "AWS_ACCESS_KEY_ID", &key), "only");
    json_decref(job);
    json_decref(repo);

    /* An agent Secret without a name is refused by name. */
    repo = json_loads("{\"spec\":{\"endpoint\":\"https://s3.lan\",\"bucket\":\"b\","
                      "\"credentialsSecret\":{\"name\":\"d\"},\"agentCredentialsSecret\":{}}}",
                      0, NULL);
    job = ctl_job_json(&p, &run, &opts);
    assert_int_equal(ctl_backup_job_set_repository(job, repo, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "spec.agentCredentialsSecret.name"));
    json_decref(job);
    json_decref(repo);
}

static void test_backup_object(void **state)
{
    char *paths[] = {"/etc", "/home"};
    struct policy p;
    make_policy(&p, paths);
    struct ctl_run run = {.host = "node-1",
                          .slot = "2026-03-29T03:30",
                          .trigger = CTL_TRIGGER_CATCH_UP,
                          .policy_uid = "puid",
                          .backup_name = "bk"};
    json_t *b = ctl_backup_json(&p, &run);
    json_t *spec = json_object_get(b, "spec");
    assert_string_equal(json_string_value(json_object_get(b, "apiVersion")), API_GROUP_VERSION);
    assert_string_equal(json_string_value(json_object_get(spec, "trigger")), "catch-up");
    assert_string_equal(json_string_value(json_object_get(spec, "slot")), "2026-03-29T03:30");
    json_t *owner =
        json_array_get(json_object_get(json_object_get(b, "metadata"), "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "kind")), "BackupPolicy");
    /* No slot time: no annotation (a run started by hand). */
    assert_null(json_object_get(json_object_get(json_object_get(b, "metadata"), "annotations"),
                                CTL_ANNOT_SLOT_TIME));
    json_decref(b);

    run.slot_time = 1774751400; /* 2026-03-29T02:30:00Z */
    b = ctl_backup_json(&p, &run);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(b, "metadata"), "annotations"), CTL_ANNOT_SLOT_TIME)),
        "2026-03-29T02:30:00Z");
    json_decref(b);
}

static const char *status_str(const json_t *patch, const char *member)
{
    return json_string_value(json_object_get(json_object_get(patch, "status"), member));
}

static void test_backup_status(void **state)
{
    /* The first status of a run: only what is set. */
    struct ctl_backup_status s = {.phase = CTL_PHASE_PENDING,
                                  .slot_time = 1774751400,
                                  .run_time = 1774751460,
                                  .job_name = "bk"};
    json_t *j = ctl_backup_status_json(&s);
    assert_string_equal(status_str(j, "phase"), "Pending");
    assert_string_equal(status_str(j, "slotTime"), "2026-03-29T02:30:00Z");
    assert_string_equal(status_str(j, "runTime"), "2026-03-29T02:31:00Z");
    assert_string_equal(status_str(j, "jobName"), "bk");
    assert_int_equal(json_object_size(json_object_get(j, "status")), 4);
    json_decref(j);

    /* A final phase always says reason (null) and message; a negative duration is 0s. */
    s = (struct ctl_backup_status){.phase = CTL_PHASE_SUCCEEDED,
                                   .started = 1774751460,
                                   .completed = 1774751400,
                                   .has_duration = true,
                                   .duration = -60};
    j = ctl_backup_status_json(&s);
    assert_true(json_is_null(json_object_get(json_object_get(j, "status"), "reason")));
    assert_string_equal(status_str(j, "message"), "");
    assert_string_equal(status_str(j, "duration"), "0s");
    assert_string_equal(status_str(j, "completionTime"), "2026-03-29T02:30:00Z");
    json_decref(j);

    s = (struct ctl_backup_status){.phase = CTL_PHASE_FAILED,
                                   .reason = "time_limit",
                                   .message = "stuck",
                                   .completed = 1774751400,
                                   .has_duration = true,
                                   .duration = 7200};
    j = ctl_backup_status_json(&s);
    assert_string_equal(status_str(j, "reason"), "time_limit");
    assert_string_equal(status_str(j, "message"), "stuck");
    assert_string_equal(status_str(j, "duration"), "2h");
    assert_null(json_object_get(json_object_get(j, "status"), "startTime"));
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_are_deterministic_and_valid),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_job_is_pinned_bounded_and_read_only),
        cmocka_unit_test(test_job_node_cache),
        cmocka_unit_test(test_job_hooks),
        cmocka_unit_test(test_job_pin),
        cmocka_unit_test(test_job_pod_settings),
        cmocka_unit_test(test_job_manual),
        cmocka_unit_test(test_job_host_network),
        cmocka_unit_test(test_policy_document),
        cmocka_unit_test(test_backup_result),
        cmocka_unit_test(test_backup_result_hooks),
        cmocka_unit_test(test_job_repository),
        cmocka_unit_test(test_job_repository_defaults_and_errors),
        cmocka_unit_test(test_job_agent_credentials),
        cmocka_unit_test(test_backup_object),
        cmocka_unit_test(test_backup_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
