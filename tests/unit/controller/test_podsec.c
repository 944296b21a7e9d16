/*
 * The hardening of the backup and GC pods, field by field (controller/podsec.h;
 * docs/security.md, "Backup and GC pods").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gcplan.h"
#include "objects.h"
#include "podsec.h"

static json_t *pod_of(json_t *job)
{
    return json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec");
}

static json_t *mount_named(json_t *c, const char *name)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(c, "volumeMounts"), i, m)
    {
        if (strcmp(json_string_value(json_object_get(m, "name")), name) == 0)
            return m;
    }
    return NULL;
}

static const char *at(const json_t *v, const char *a, const char *b, const char *c)
{
    const json_t *x = json_object_get(v, a);
    if (b != NULL)
        x = json_object_get(x, b);
    if (c != NULL)
        x = json_object_get(x, c);
    return json_string_value(x);
}

static json_t *backup_job(bool rro)
{
    static char *paths[] = {"/etc"};
    struct policy p;
    memset(&p, 0, sizeof(p));
    p.name = "etc";
    p.namespace = "ops";
    p.repository = "main";
    p.paths = paths;
    p.npaths = 1;
    p.limits.max_runtime = 3600;
    struct ctl_run run = {.host = "node-1",
                          .slot = "",
                          .trigger = CTL_TRIGGER_MANUAL,
                          .backup_name = "by-hand",
                          .host_rro = rro};
    struct ctl_job_opts opts = {.agent_image = "img", .ttl_seconds = 60};
    return ctl_job_json(&p, &run, &opts);
}

/* What every pod gets, backup or GC. */
static void check_common(json_t *pod, const char *cpu, const char *mem_req, const char *mem_lim)
{
    assert_string_equal(at(pod, "securityContext", "seccompProfile", "type"), "RuntimeDefault");
    assert_true(json_is_false(json_object_get(pod, "automountServiceAccountToken")));
    assert_true(json_is_false(json_object_get(pod, "enableServiceLinks")));
    assert_int_equal(json_array_size(json_object_get(pod, "containers")), 1);
    json_t *c = json_array_get(json_object_get(pod, "containers"), 0);
    json_t *sc = json_object_get(c, "securityContext");
    assert_true(json_is_false(json_object_get(sc, "allowPrivilegeEscalation")));
    assert_true(json_is_false(json_object_get(sc, "privileged")));
    assert_true(json_is_true(json_object_get(sc, "readOnlyRootFilesystem")));
    json_t *drop = json_object_get(json_object_get(sc, "capabilities"), "drop");
    assert_int_equal(json_array_size(drop), 1);
    assert_string_equal(json_string_value(json_array_get(drop, 0)), "ALL");
    assert_string_equal(at(c, "resources", "requests", "cpu"), cpu);
    assert_string_equal(at(c, "resources", "requests", "memory"), mem_req);
    assert_string_equal(at(c, "resources", "limits", "memory"), mem_lim);
    /* No CPU limit: throttling a backup only makes it later. */
    assert_null(json_object_get(json_object_get(json_object_get(c, "resources"), "limits"), "cpu"));
}

static void test_backup_pod_hardened(void **state)
{
    (void)state;
    for (int rro = 0; rro < 2; rro++) {
        json_t *job = backup_job(rro);
        json_t *pod = pod_of(job);
        check_common(pod, CTL_BACKUP_CPU_REQUEST, CTL_BACKUP_MEMORY_REQUEST,
                     CTL_BACKUP_MEMORY_LIMIT);
        json_t *c = json_array_get(json_object_get(pod, "containers"), 0);
        json_t *add = json_object_get(
            json_object_get(json_object_get(c, "securityContext"), "capabilities"), "add");
        assert_int_equal(json_array_size(add), 1);
        assert_string_equal(json_string_value(json_array_get(add, 0)), "DAC_READ_SEARCH");
        /* The node's "/": recursively read-only where the node can, else at least at its top. */
        json_t *m = mount_named(c, "host-root");
        assert_true(json_is_true(json_object_get(m, "readOnly")));
        assert_string_equal(json_string_value(json_object_get(m, "recursiveReadOnly")),
                            rro ? "Enabled" : "IfPossible");
        assert_null(json_object_get(m, "mountPropagation"));
        /* Only the host mount: /tmp stays writable. */
        assert_null(json_object_get(mount_named(c, "tmp"), "recursiveReadOnly"));
        json_decref(job);
    }
}

static void test_gc_pod_hardened(void **state)
{
    (void)state;
    struct ctl_job_opts opts = {.agent_image = "img", .ttl_seconds = 60};
    json_t *job = ctl_gc_job_json("ns", "main", NULL, "gc-main-x", 3600, &opts);
    json_t *pod = pod_of(job);
    check_common(pod, CTL_GC_CPU_REQUEST, CTL_GC_MEMORY_REQUEST, CTL_GC_MEMORY_LIMIT);
    json_t *c = json_array_get(json_object_get(pod, "containers"), 0);
    assert_null(json_object_get(
        json_object_get(json_object_get(c, "securityContext"), "capabilities"), "add"));
    /* Not root, and no host mount at all. */
    assert_true(
        json_is_true(json_object_get(json_object_get(pod, "securityContext"), "runAsNonRoot")));
    char *s = json_dumps(job, JSON_COMPACT);
    assert_null(strstr(s, "hostPath"));
    free(s);
    json_decref(job);
}

/* Resources a policy set first are kept; the defaults fill only what is missing. */
static void test_resources_kept(void **state)
{
    (void)state;
    json_t *pod = json_loads("{\"containers\":[{\"name\":\"backup\",\"resources\":{\"limits\":{"
                             "\"memory\":\"8Gi\"}},\"securityContext\":{\"runAsUser\":0,"
                             "\"capabilities\":{\"add\":[\"SYS_ADMIN\"]}},\"volumeMounts\":[{"
                             "\"name\":\"host-root\",\"mountPath\":\"/host\",\"mountPropagation\":"
                             "\"HostToContainer\"}]}]}",
                             0, NULL);
    ctl_pod_harden(pod, CTL_POD_BACKUP, "host-root", true);
    json_t *c = json_array_get(json_object_get(pod, "containers"), 0);
    assert_string_equal(at(c, "resources", "limits", "memory"), "8Gi");
    assert_null(json_object_get(json_object_get(c, "resources"), "requests"));
    /* What was there is replaced, not merged: no capability but the one. */
    char *caps = json_dumps(json_object_get(json_object_get(c, "securityContext"), "capabilities"),
                            JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(caps, "{\"add\":[\"DAC_READ_SEARCH\"],\"drop\":[\"ALL\"]}");
    free(caps);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(c, "securityContext"), "runAsUser")), 0);
    json_t *m = mount_named(c, "host-root");
    assert_true(json_is_true(json_object_get(m, "readOnly")));
    assert_null(json_object_get(m, "mountPropagation"));
    assert_string_equal(json_string_value(json_object_get(m, "recursiveReadOnly")), "Enabled");
    json_decref(pod);
}

/* Only the default handler ("") saying true counts. */
static void test_node_rro(void **state)
{
    (void)state;
    static const struct {
        const char *node;
        bool want;
    } cases[] = {
        {"{\"status\":{\"runtimeHandlers\":[{\"name\":\"\",\"features\":{"
         "\"recursiveReadOnlyMounts\":true,\"userNamespaces\":false}}]}}",
         true},
        {"{\"status\":{\"runtimeHandlers\":[{\"name\":\"\",\"features\":{"
         "\"recursiveReadOnlyMounts\":false}}]}}",
         false},
        {"{\"status\":{\"runtimeHandlers\":[{\"name\":\"kata\",\"features\":{"
         "\"recursiveReadOnlyMounts\":true}}]}}",
         false},
        {"{\"status\":{\"runtimeHandlers\":[{\"name\":\"kata\",\"features\":{"
         "\"recursiveReadOnlyMounts\":true}},{\"features\":{\"recursiveReadOnlyMounts\":true}}]}}",
         true},
        {"{\"status\":{\"runtimeHandlers\":[{\"name\":\"\"}]}}", false},
        {"{\"status\":{\"runtimeHandlers\":[{\"name\":\"\",\"features\":{"
         "\"recursiveReadOnlyMounts\":\"true\"}}]}}",
         false},
        {"{\"status\":{}}", false},
        {"{}", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *n = json_loads(cases[i].node, 0, NULL);
        assert_non_null(n);
        assert_int_equal(ctl_node_rro_supported(n), cases[i].want);
        json_decref(n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backup_pod_hardened),
        cmocka_unit_test(test_gc_pod_hardened),
        cmocka_unit_test(test_resources_kept),
        cmocka_unit_test(test_node_rro),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
