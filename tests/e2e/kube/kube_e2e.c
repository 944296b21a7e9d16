/*
 * End-to-end test of internal/kube against a real kube-apiserver (tests/env/), run by
 * tests/e2e/test_kube.sh, which creates the namespace and the test CRD first.
 *
 * Environment: KUBECONFIG (the environment's, CA by file path, token user),
 * CERT_KUBECONFIG (the same server with a client certificate and everything inline),
 * E2E_NS (an empty namespace this test may fill), ETCD_URL (the environment's etcd, to
 * compact its history so that old resourceVersions really expire).
 *
 * The program is sequential: each step starts requests and runs the loop until their
 * callbacks ran, with a deadline per step. It prints "ok - ..." / "not ok - ..." per
 * check and closes with "N passed, M failed".
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "kube/kube.h"

static int passed, failed;
static uv_loop_t loop;
static const char *ns;

static void check(const char *name, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static uint64_t t0;

static void check(const char *name, int ok, const char *fmt, ...)
{
    double secs = (double)(uv_hrtime() - t0) / 1e9;
    if (ok) {
        passed++;
        printf("ok - %s (%.1f s)\n", name, secs);
        return;
    }
    failed++;
    printf("not ok - %s\n    ", name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

/* ---- running the loop until something happened ---- */

static int timed_out;

/*
 * Every callback of the test stops the loop, so that run_until looks at its counter
 * again (uv_run(UV_RUN_ONCE) would go on to block in poll after a timer's callback).
 */
static void kick(void)
{
    uv_stop(&loop);
}

static void on_deadline(uv_timer_t *t)
{
    timed_out = 1;
    kick();
}

/* One deadline timer for every wait (a handle must not be reused before it is closed). */
static uv_timer_t deadline;

/* Runs the loop until *count reaches want or seconds pass; true if it got there. */
static int run_until(const int *count, int want, unsigned seconds)
{
    timed_out = 0;
    uv_timer_start(&deadline, on_deadline, seconds * 1000ull, 0);
    while (*count < want && !timed_out)
        uv_run(&loop, UV_RUN_DEFAULT);
    uv_timer_stop(&deadline);
    return *count >= want;
}

/* ---- one request's outcome ---- */

struct call {
    int done;
    int error;
    long status;
    char reason[64];
    char message[512];
    json_t *body;
};

static void call_cb(const struct kube_result *res, void *arg)
{
    kick();
    struct call *c = arg;
    c->done++;
    c->error = res->error;
    c->status = res->status;
    snprintf(c->reason, sizeof(c->reason), "%s", res->reason);
    snprintf(c->message, sizeof(c->message), "%s", res->message);
    c->body = json_incref(res->body);
}

static void call_reset(struct call *c)
{
    json_decref(c->body);
    memset(c, 0, sizeof(*c));
}

/* Waits for one call; false (and a failed check) if it never finished. */
static int wait_call(struct call *c, const char *what)
{
    if (run_until(&c->done, 1, 30))
        return 1;
    check(what, 0, "no answer within 30 s");
    return 0;
}

static const char *str_at(json_t *obj, const char *k1, const char *k2)
{
    json_t *v = json_object_get(obj, k1);
    if (k2 != NULL)
        v = json_object_get(v, k2);
    return json_string_value(v) ? json_string_value(v) : "";
}

static json_t *configmap(const char *name, const char *label, const char *value)
{
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                     "ConfigMap", "metadata", "name", name, "labels", "e2e", label, "data", "v",
                     value);
}

static struct kube_resource cms(void)
{
    return (struct kube_resource){"", "v1", "configmaps", ns};
}

/* ---- the steps ---- */

static void test_create_list_paging(struct kube_client *c, char *list_rv, size_t rv_size)
{
    struct kube_resource res = cms();
    struct call calls[25] = {{0}};
    int done = 0, created = 0;
    for (int i = 0; i < 25; i++) {
        char name[32];
        snprintf(name, sizeof(name), "page-%02d", i);
        json_t *cm = configmap(name, "paging", "x");
        if (kube_create(c, &res, cm, call_cb, &calls[i], NULL, NULL) != 0)
            check("create 25 ConfigMaps", 0, "submit failed");
        json_decref(cm);
    }
    for (int i = 0; i < 25; i++) {
        run_until(&calls[i].done, 1, 30);
        done += calls[i].done;
        created += calls[i].status == 201;
        call_reset(&calls[i]);
    }
    check("create 25 ConfigMaps: 25 answers, all 201", done == 25 && created == 25,
          "%d answers, %d created", done, created);

    /* LIST with limit 10: pages of 10, 10 and 5, chained by continue tokens. */
    char cont[1024] = "";
    int pages[8] = {0}, npages = 0, total = 0;
    char seen[25] = {0};
    do {
        struct call l = {0};
        struct kube_list_opts o = {
            .label_selector = "e2e=paging", .limit = 10, .continue_token = cont};
        kube_list(c, &res, &o, call_cb, &l, NULL, NULL);
        if (!wait_call(&l, "list with paging") || l.status != 200) {
            check("list with paging", 0, "status %ld: %s", l.status, l.message);
            call_reset(&l);
            break;
        }
        json_t *items = json_object_get(l.body, "items"), *it;
        size_t i;
        pages[npages++] = (int)json_array_size(items);
        json_array_foreach(items, i, it)
        {
            int k = atoi(str_at(it, "metadata", "name") + 5);
            if (k >= 0 && k < 25 && !seen[k]) {
                seen[k] = 1;
                total++;
            }
        }
        snprintf(cont, sizeof(cont), "%s", str_at(l.body, "metadata", "continue"));
        snprintf(list_rv, rv_size, "%s", str_at(l.body, "metadata", "resourceVersion"));
        call_reset(&l);
    } while (cont[0] != '\0' && npages < 8);
    check("list limit 10 over 25: pages 10, 10, 5 and every object once",
          npages == 3 && pages[0] == 10 && pages[1] == 10 && pages[2] == 5 && total == 25,
          "%d pages (%d, %d, %d), %d distinct", npages, pages[0], pages[1], pages[2], total);

    /* The same list as metadata only. */
    struct call m = {0};
    struct kube_list_opts mo = {.label_selector = "e2e=paging", .limit = 2, .metadata_only = true};
    kube_list(c, &res, &mo, call_cb, &m, NULL, NULL);
    if (wait_call(&m, "metadata-only list")) {
        json_t *first = json_array_get(json_object_get(m.body, "items"), 0);
        check("metadata-only list: PartialObjectMetadataList without data",
              m.status == 200 &&
                  strcmp(str_at(m.body, "kind", NULL), "PartialObjectMetadataList") == 0 &&
                  first != NULL && json_object_get(first, "data") == NULL &&
                  str_at(first, "metadata", "name")[0] != '\0',
              "status %ld kind %s", m.status, str_at(m.body, "kind", NULL));
    }
    call_reset(&m);
}

static void test_conflict_missing_apply_patch(struct kube_client *c)
{
    struct kube_resource res = cms();
    struct call a = {0};
    json_t *cm = configmap("page-00", "paging", "again");
    kube_create(c, &res, cm, call_cb, &a, NULL, NULL);
    json_decref(cm);
    if (wait_call(&a, "second create"))
        check("a second create is 409 AlreadyExists, not an error",
              a.error == 0 && a.status == 409 && strcmp(a.reason, "AlreadyExists") == 0 &&
                  strstr(a.message, "already exists") != NULL,
              "error %d status %ld reason %s message %s", a.error, a.status, a.reason, a.message);
    call_reset(&a);

    kube_get(c, &res, "no-such-object", NULL, call_cb, &a, NULL, NULL);
    if (wait_call(&a, "get missing"))
        check("a missing object is 404 NotFound",
              a.error == 0 && a.status == 404 && strcmp(a.reason, "NotFound") == 0,
              "error %d status %ld reason %s", a.error, a.status, a.reason);
    call_reset(&a);

    /* Server-side apply creates, then changes, and records lodestore as the manager. */
    cm = configmap("applied", "apply", "one");
    kube_apply(c, &res, "applied", NULL, cm, call_cb, &a, NULL, NULL);
    json_decref(cm);
    wait_call(&a, "apply (create)");
    check("server-side apply creates", a.status == 201, "status %ld: %s", a.status, a.message);
    call_reset(&a);
    cm = configmap("applied", "apply", "two");
    kube_apply(c, &res, "applied", NULL, cm, call_cb, &a, NULL, NULL);
    json_decref(cm);
    if (wait_call(&a, "apply (update)")) {
        json_t *mf = json_object_get(json_object_get(a.body, "metadata"), "managedFields");
        int by_us = 0;
        size_t i;
        json_t *f;
        json_array_foreach(mf, i, f)
        {
            if (strcmp(str_at(f, "manager", NULL), "lodestore") == 0 &&
                strcmp(str_at(f, "operation", NULL), "Apply") == 0)
                by_us = 1;
        }
        check("server-side apply updates, field manager lodestore",
              a.status == 200 && strcmp(str_at(a.body, "data", "v"), "two") == 0 && by_us,
              "status %ld data %s manager %d", a.status, str_at(a.body, "data", "v"), by_us);
    }
    call_reset(&a);

    json_t *patch = json_pack("{s:{s:s}}", "data", "v", "patched");
    kube_merge_patch(c, &res, "page-01", NULL, patch, call_cb, &a, NULL, NULL);
    json_decref(patch);
    if (wait_call(&a, "merge patch"))
        check("merge patch", a.status == 200 && strcmp(str_at(a.body, "data", "v"), "patched") == 0,
              "status %ld: %s", a.status, a.message);
    call_reset(&a);
}

static void test_crd_status(struct kube_client *c)
{
    struct kube_resource res = {"e2e.lodestore.io", "v1", "lodetests", ns};
    struct call a = {0};
    json_t *obj = json_pack("{s:s, s:s, s:{s:s}, s:{s:i}}", "apiVersion", "e2e.lodestore.io/v1",
                            "kind", "LodeTest", "metadata", "name", "t1", "spec", "size", 3);
    kube_create(c, &res, obj, call_cb, &a, NULL, NULL);
    json_decref(obj);
    wait_call(&a, "create CRD object");
    check("create a custom object", a.status == 201, "status %ld: %s", a.status, a.message);
    call_reset(&a);

    json_t *st = json_pack("{s:{s:s, s:i}}", "status", "phase", "Running", "hosts", 3);
    kube_merge_patch(c, &res, "t1", "status", st, call_cb, &a, NULL, NULL);
    json_decref(st);
    if (wait_call(&a, "patch status"))
        check("merge patch of the status subresource",
              a.status == 200 && strcmp(str_at(a.body, "status", "phase"), "Running") == 0,
              "status %ld: %s", a.status, a.message);
    call_reset(&a);

    /* The main resource ignores status; the status subresource ignores spec. */
    json_t *both = json_pack("{s:{s:i}, s:{s:s}}", "spec", "size", 5, "status", "phase", "Gone");
    kube_merge_patch(c, &res, "t1", NULL, both, call_cb, &a, NULL, NULL);
    json_decref(both);
    if (wait_call(&a, "patch main resource"))
        check("the main resource keeps status as it was",
              a.status == 200 && strcmp(str_at(a.body, "status", "phase"), "Running") == 0,
              "status %ld phase %s", a.status, str_at(a.body, "status", "phase"));
    call_reset(&a);

    /* Server-side apply on the status subresource. */
    json_t *ap =
        json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:i}}", "apiVersion", "e2e.lodestore.io/v1", "kind",
                  "LodeTest", "metadata", "name", "t1", "status", "phase", "Done", "hosts", 4);
    kube_apply(c, &res, "t1", "status", ap, call_cb, &a, NULL, NULL);
    json_decref(ap);
    if (wait_call(&a, "apply status"))
        check("server-side apply of the status subresource",
              a.status == 200 && strcmp(str_at(a.body, "status", "phase"), "Done") == 0 &&
                  json_integer_value(json_object_get(json_object_get(a.body, "spec"), "size")) == 5,
              "status %ld: %s", a.status, a.message);
    call_reset(&a);

    /* An Event about it. */
    struct kube_object_ref ref = {"e2e.lodestore.io/v1", "LodeTest", ns, "t1", NULL};
    kube_event_create(c, &ref, "Warning", "Overdue", "host n1 has no backup for 50h", "lode-e2e",
                      (int64_t)time(NULL), call_cb, &a, NULL, NULL);
    wait_call(&a, "create event");
    check("create an Event", a.status == 201, "status %ld: %s", a.status, a.message);
    call_reset(&a);
    struct kube_resource evs = {"", "v1", "events", ns};
    struct kube_list_opts o = {.field_selector = "involvedObject.name=t1,reason=Overdue"};
    kube_list(c, &evs, &o, call_cb, &a, NULL, NULL);
    if (wait_call(&a, "list events")) {
        json_t *e = json_array_get(json_object_get(a.body, "items"), 0);
        check("the Event is there, about the object",
              json_array_size(json_object_get(a.body, "items")) == 1 &&
                  strcmp(str_at(e, "involvedObject", "kind"), "LodeTest") == 0 &&
                  strcmp(str_at(e, "type", NULL), "Warning") == 0,
              "status %ld, %zu items", a.status, json_array_size(json_object_get(a.body, "items")));
    }
    call_reset(&a);

    kube_delete(c, &res, "t1", "Background", call_cb, &a, NULL, NULL);
    wait_call(&a, "delete");
    check("delete with propagationPolicy", a.status == 200, "status %ld: %s", a.status, a.message);
    call_reset(&a);
    kube_get(c, &res, "t1", NULL, call_cb, &a, NULL, NULL);
    wait_call(&a, "get deleted");
    check("the deleted object is gone", a.status == 404, "status %ld", a.status);
    call_reset(&a);
}

/* ---- watch ---- */

struct watch_log {
    char text[2048];
    int events; /* events and the end, counted together */
    int code;   /* an ERROR event's code */
    int done;   /* the watch ended */
    long status;
    char message[256];
};

static void watch_done_cb(const struct kube_result *res, void *arg)
{
    kick();
    struct watch_log *w = arg;
    w->done = 1;
    w->status = res->status;
    snprintf(w->message, sizeof(w->message), "%s", res->message);
    w->events++;
}

static void watch_event_cb(const struct kube_watch_event *ev, void *arg)
{
    kick();
    struct watch_log *w = arg;
    size_t n = strlen(w->text);
    if (ev->type == KUBE_EVENT_BOOKMARK)
        return;
    if (ev->type == KUBE_EVENT_ERROR)
        w->code = ev->code;
    snprintf(w->text + n, sizeof(w->text) - n, "%s %s;", kube_event_type_name(ev->type),
             ev->name ? ev->name : "-");
    w->events++;
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    return size * n;
}

/*
 * Compacts etcd's history up to revision rev (a resourceVersion is an etcd revision),
 * through etcd's JSON gateway, so that watches from older versions get 410 as they do
 * on a cluster that has run for a while. A blocking call: this is a test.
 */
static int compact_etcd(const char *rev)
{
    const char *url = getenv("ETCD_URL");
    char full[256], body[128];
    long code = 0;
    CURL *e;
    if (url == NULL)
        return -1;
    snprintf(full, sizeof(full), "%s/v3/kv/compaction", url);
    snprintf(body, sizeof(body), "{\"revision\":\"%s\",\"physical\":true}", rev);
    e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, full);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
    if (curl_easy_perform(e) == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(e);
    return code == 200 ? 0 : -1;
}

/* The current resourceVersion of the configmaps collection. */
static void current_rv(struct kube_client *c, char *rv, size_t size)
{
    struct kube_resource res = cms();
    struct kube_list_opts o = {.limit = 1};
    struct call a = {0};
    kube_list(c, &res, &o, call_cb, &a, NULL, NULL);
    if (wait_call(&a, "list for the current version"))
        snprintf(rv, size, "%s", str_at(a.body, "metadata", "resourceVersion"));
    call_reset(&a);
}

static void test_watch(struct kube_client *c, const char *rv)
{
    struct kube_resource res = cms();
    struct watch_log w = {0};
    struct call a = {0};
    struct kube_request *req;
    struct kube_list_opts o = {
        .label_selector = "e2e=watch", .resource_version = rv, .timeout_seconds = 60};
    kube_watch(c, &res, &o, watch_event_cb, watch_done_cb, &w, &req, NULL);
    json_t *cm = configmap("w1", "watch", "1");
    kube_create(c, &res, cm, call_cb, &a, NULL, NULL);
    json_decref(cm);
    wait_call(&a, "create w1");
    call_reset(&a);
    json_t *patch = json_pack("{s:{s:s}}", "data", "v", "2");
    kube_merge_patch(c, &res, "w1", NULL, patch, call_cb, &a, NULL, NULL);
    json_decref(patch);
    wait_call(&a, "patch w1");
    call_reset(&a);
    kube_delete(c, &res, "w1", NULL, call_cb, &a, NULL, NULL);
    wait_call(&a, "delete w1");
    call_reset(&a);
    run_until(&w.events, 3, 20);
    check("watch sees ADDED, MODIFIED, DELETED",
          strcmp(w.text, "ADDED w1;MODIFIED w1;DELETED w1;") == 0, "events: %s", w.text);
    check("the watch is still open", w.done == 0, "ended: %ld %s", w.status, w.message);
    if (w.done == 0)
        kube_request_cancel(req);
}

/*
 * Makes old resourceVersions expire as they do on a cluster that has run for a while.
 * A young kube-apiserver's watch cache still holds every event since it started, and
 * it answers old versions from there, whatever etcd compacted. The cache drops events
 * older than 75 s once it is full (100 events at first), so: wait until the events of
 * the earlier steps are that old, write 250 more, and compact etcd too.
 */
static void expire_history(struct kube_client *c)
{
    struct kube_resource res = cms();
    struct call calls[250];
    int idle = 0, done = 0, ok = 0;
    char now[64] = "";
    while ((uv_hrtime() - t0) / 1000000000u < 80)
        run_until(&idle, 1, 1);
    json_t *cm = configmap("churn", "churn", "0");
    struct call a = {0};
    kube_create(c, &res, cm, call_cb, &a, NULL, NULL);
    json_decref(cm);
    wait_call(&a, "create churn");
    call_reset(&a);
    memset(calls, 0, sizeof(calls));
    for (int i = 0; i < 250; i++) {
        char v[16];
        snprintf(v, sizeof(v), "%d", i);
        json_t *patch = json_pack("{s:{s:s}}", "data", "v", v);
        kube_merge_patch(c, &res, "churn", NULL, patch, call_cb, &calls[i], NULL, NULL);
        json_decref(patch);
    }
    for (int i = 0; i < 250; i++) {
        run_until(&calls[i].done, 1, 30);
        done += calls[i].done;
        ok += calls[i].status == 200;
        call_reset(&calls[i]);
    }
    check("250 patches to push old events out of the watch cache", done == 250 && ok == 250,
          "%d answers, %d ok", done, ok);
    current_rv(c, now, sizeof(now));
    check("etcd's history compacted", now[0] && compact_etcd(now) == 0,
          "compaction to %s failed (ETCD_URL %s)", now, getenv("ETCD_URL") ? "set" : "unset");
}

static void test_watch_expired(struct kube_client *c)
{
    struct kube_resource res = cms();
    struct watch_log old = {0};
    struct kube_request *req;
    struct kube_list_opts oo = {.resource_version = "1", .timeout_seconds = 30};
    kube_watch(c, &res, &oo, watch_event_cb, watch_done_cb, &old, &req, NULL);
    run_until(&old.events, 1, 30);
    check("a watch from resourceVersion 1 gets 410", old.code == 410 || old.status == 410,
          "events %.300s, done %d status %ld: %s", old.text, old.done, old.status, old.message);
    if (old.code == 410 || old.status == 410)
        printf("#   (410 arrived as %s)\n", old.code == 410 ? "an ERROR event" : "an HTTP status");
    if (old.done == 0)
        kube_request_cancel(req);
}

/* ---- reflectors ---- */

struct refl_log {
    char text[4096];
    int adds, updates, deletes, deletes_gone, synced, errors;
};

static void r_add(struct kube_reflector *r, const char *n, const char *name, json_t *obj, void *a)
{
    kick();
    struct refl_log *l = a;
    size_t k = strlen(l->text);
    snprintf(l->text + k, sizeof(l->text) - k, "+%s;", name);
    l->adds++;
}

static void r_update(struct kube_reflector *r, const char *n, const char *name, json_t *obj,
                     void *a)
{
    kick();
    ((struct refl_log *)a)->updates++;
}

static void r_delete(struct kube_reflector *r, const char *n, const char *name, json_t *obj,
                     void *a)
{
    kick();
    struct refl_log *l = a;
    size_t k = strlen(l->text);
    snprintf(l->text + k, sizeof(l->text) - k, "-%s%s;", name, obj ? "" : "(gone)");
    l->deletes++;
    l->deletes_gone += obj == NULL;
}

static void r_synced(struct kube_reflector *r, void *a)
{
    kick();
    ((struct refl_log *)a)->synced++;
}

static void r_error(struct kube_reflector *r, const char *what, uint64_t ms, void *a)
{
    kick();
    struct refl_log *l = a;
    size_t k = strlen(l->text);
    snprintf(l->text + k, sizeof(l->text) - k, "!%s;", what);
    l->errors++;
}

static const struct kube_reflector_cbs rcbs = {r_add, r_update, r_delete, r_synced, r_error};

static struct refl_log relist_log;

/* Syncs a reflector, stops it, and changes its objects behind its back. */
static struct kube_reflector *reflector_sync_and_stop(struct kube_client *c)
{
    struct kube_reflector_opts o = {.res = cms(), .label_selector = "e2e=paging", .page_size = 10};
    struct kube_reflector *r;
    struct refl_log *l = &relist_log;
    struct call a = {0};
    struct kube_resource res = cms();
    kube_reflector_init(c, &r, &o, &rcbs, l, NULL);
    kube_reflector_start(r);
    run_until(&l->synced, 1, 30);
    check("reflector lists 25 objects in pages of 10", l->synced == 1 && l->adds == 25,
          "synced %d adds %d: %s", l->synced, l->adds, l->text);
    kube_reflector_stop(r);
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof(name), "page-%02d", i);
        kube_delete(c, &res, name, NULL, call_cb, &a, NULL, NULL);
        wait_call(&a, "delete page");
        call_reset(&a);
    }
    json_t *cm = configmap("page-extra", "paging", "x");
    kube_create(c, &res, cm, call_cb, &a, NULL, NULL);
    json_decref(cm);
    wait_call(&a, "create extra");
    call_reset(&a);
    l->text[0] = '\0';
    l->adds = 0;
    return r;
}

/* Resumes it once its version has expired: the 410 brings a relist that finds the changes. */
static void reflector_resume_expired(struct kube_reflector *r)
{
    struct refl_log *l = &relist_log;
    /* Its own version may still be in the watch cache; "1" certainly is not any more. */
    check("a stopped reflector's version can be moved",
          kube_reflector_set_resource_version(r, "1", NULL) == 0, "refused");
    kube_reflector_start(r);
    run_until(&l->synced, 2, 30);
    check("resume from an expired version: 410, relist, 5 deletes found, 1 add",
          l->synced == 2 && l->deletes == 5 && l->deletes_gone == 5 && l->adds == 1 &&
              kube_reflector_lists(r) == 2 && kube_reflector_size(r) == 21,
          "synced %d deletes %d (gone %d) adds %d lists %u size %zu: %s", l->synced, l->deletes,
          l->deletes_gone, l->adds, kube_reflector_lists(r), kube_reflector_size(r), l->text);
    kube_reflector_close(r);
}

static void test_reflector_reconnect(struct kube_client *c)
{
    struct kube_reflector_opts o = {.res = cms(),
                                    .label_selector = "e2e=reconnect",
                                    .watch_timeout_min_s = 2,
                                    .watch_timeout_max_s = 3};
    struct kube_reflector *r;
    struct refl_log l = {0};
    struct call a = {0};
    struct kube_resource res = cms();
    int watches = 0;
    kube_reflector_init(c, &r, &o, &rcbs, &l, NULL);
    kube_reflector_start(r);
    run_until(&l.synced, 1, 30);
    /* Wait until the server has ended the first watch and the reflector watches again. */
    for (int i = 0; i < 20 && (watches = (int)kube_reflector_watches(r)) < 2; i++)
        run_until(&l.adds, 1, 1);
    check("the server's watch timeout ends the watch and the reflector reconnects",
          watches >= 2 && l.errors == 0, "watches %d errors %d: %s", watches, l.errors, l.text);
    json_t *cm = configmap("r1", "reconnect", "x");
    kube_create(c, &res, cm, call_cb, &a, NULL, NULL);
    json_decref(cm);
    wait_call(&a, "create r1");
    call_reset(&a);
    run_until(&l.adds, 1, 20);
    check("an object created after the reconnect arrives", l.adds == 1 && l.errors == 0,
          "adds %d errors %d: %s", l.adds, l.errors, l.text);
    kube_reflector_close(r);
}

static void test_client_certificate(void)
{
    const char *path = getenv("CERT_KUBECONFIG");
    struct kube_config cfg;
    struct kube_client *c;
    struct util_err err = {0};
    struct call a = {0};
    if (path == NULL) {
        check("client certificate kubeconfig", 0, "CERT_KUBECONFIG is not set");
        return;
    }
    if (kube_config_load_file(&cfg, path, NULL, &err) != 0) {
        check("client certificate kubeconfig loads", 0, "%s", err.msg);
        return;
    }
    if (kube_client_init(&loop, &c, &cfg, NULL, &err) != 0) {
        check("client certificate client", 0, "%s", err.msg);
        kube_config_free(&cfg);
        return;
    }
    kube_config_free(&cfg);
    struct kube_resource nsres = {"", "v1", "namespaces", NULL};
    kube_get(c, &nsres, ns, NULL, call_cb, &a, NULL, NULL);
    if (wait_call(&a, "get with client certificate"))
        check("a client certificate (inline, with an inline CA) authenticates",
              a.status == 200 && strcmp(str_at(a.body, "metadata", "name"), ns) == 0,
              "status %ld: %s", a.status, a.message);
    call_reset(&a);
    kube_client_close(c, NULL, NULL);
}

static void test_tls_verified(void)
{
    /* The environment's server with no CA given: the system store does not trust it. */
    const char *kc = getenv("KUBECONFIG");
    struct kube_config cfg;
    struct kube_client *c;
    struct call a = {0};
    if (kube_config_load_file(&cfg, kc, NULL, NULL) != 0)
        return;
    free(cfg.ca_pem);
    cfg.ca_pem = NULL;
    cfg.ca_len = 0;
    if (kube_client_init(&loop, &c, &cfg, NULL, NULL) == 0) {
        struct kube_resource nsres = {"", "v1", "namespaces", NULL};
        kube_get(c, &nsres, ns, NULL, call_cb, &a, NULL, NULL);
        if (wait_call(&a, "tls"))
            check("without the cluster's CA the connection is refused (TLS is verified)",
                  a.error == KUBE_ECONN && a.status == 0, "error %d status %ld: %s", a.error,
                  a.status, a.message);
        call_reset(&a);
        kube_client_close(c, NULL, NULL);
    }
    kube_config_free(&cfg);
}

/* tls-server-name: the certificate names localhost and 127.0.0.1, not wrong.example. */
static void test_tls_server_name(void)
{
    static const char *const names[] = {"localhost", "wrong.example"};
    for (int i = 0; i < 2; i++) {
        struct kube_config cfg;
        struct kube_client *c;
        struct call a = {0};
        struct util_err err = {0};
        if (kube_config_load_file(&cfg, getenv("KUBECONFIG"), NULL, &err) != 0) {
            check("tls-server-name", 0, "%s", err.msg);
            return;
        }
        cfg.tls_server_name = util_strdup(names[i]);
        if (kube_client_init(&loop, &c, &cfg, NULL, &err) != 0) {
            check("tls-server-name", 0, "%s", err.msg);
            kube_config_free(&cfg);
            return;
        }
        kube_config_free(&cfg);
        struct kube_resource nsres = {"", "v1", "namespaces", NULL};
        kube_get(c, &nsres, ns, NULL, call_cb, &a, NULL, NULL);
        if (wait_call(&a, "tls-server-name")) {
            if (i == 0)
                check("tls-server-name localhost: verified against the name, connects to the IP",
                      a.status == 200, "error %d status %ld: %s", a.error, a.status, a.message);
            else
                check("tls-server-name wrong.example: refused, the certificate does not name it",
                      a.error == KUBE_ECONN && strstr(a.message, "wrong.example") != NULL,
                      "error %d status %ld: %s", a.error, a.status, a.message);
        }
        call_reset(&a);
        kube_client_close(c, NULL, NULL);
    }
}

int main(void)
{
    struct kube_config cfg;
    struct kube_client *c;
    struct util_err err = {0};
    struct kube_client_opts opts = {.user_agent = "lodestore-e2e", .qps = 100, .burst = 100};
    char rv[64] = "";

    setvbuf(stdout, NULL, _IOLBF, 0);
    t0 = uv_hrtime();
    ns = getenv("E2E_NS");
    if (ns == NULL || getenv("KUBECONFIG") == NULL) {
        printf("not ok - environment: E2E_NS and KUBECONFIG must be set\n0 passed, 1 failed\n");
        return 1;
    }
    uv_loop_init(&loop);
    uv_timer_init(&loop, &deadline);
    if (kube_config_load_default(&cfg, NULL, NULL, &err) != 0 ||
        kube_client_init(&loop, &c, &cfg, &opts, &err) != 0) {
        printf("not ok - client: %s\n0 passed, 1 failed\n", err.msg);
        return 1;
    }
    kube_config_free(&cfg);

    test_create_list_paging(c, rv, sizeof(rv));
    test_conflict_missing_apply_patch(c);
    test_crd_status(c);
    test_watch(c, rv);
    struct kube_reflector *r = reflector_sync_and_stop(c);
    test_reflector_reconnect(c);
    test_client_certificate();
    test_tls_verified();
    test_tls_server_name();
    expire_history(c);
    test_watch_expired(c);
    reflector_resume_expired(r);

    int closed;
    kube_client_close(c, NULL, NULL);
    uv_close((uv_handle_t *)&deadline, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    closed = uv_loop_close(&loop) == 0;
    check("everything closed: the loop has no handle left", closed, "uv_loop_close failed");
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
