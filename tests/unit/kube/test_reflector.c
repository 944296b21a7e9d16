/*
 * The reflector against a scripted fake API server: paged lists, watch events,
 * bookmarks, the normal end of a watch, 410 as an ERROR event and as an HTTP status,
 * deletes found by a relist, errors with backoff, and closing from a callback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/fake_api.h"
#include "kube/kube.h"

#define MAX_OBJ 16

/* The fake's store: objects in ns1, by name, each with its resourceVersion. */
struct obj {
    char name[16];
    int rv;
    bool live;
};

struct t {
    uv_loop_t loop;
    uv_timer_t watchdog;
    struct fake_server srv;
    struct kube_client *c;
    struct kube_reflector *r;
    struct obj objs[MAX_OBJ];
    int nobj, rv;
    int lists, watches; /* requests the server saw */
    int step;           /* what the scenario does with the next watch */
    char log[4096];     /* the reflector's callbacks, in order */
    char accept_list[256], accept_watch[256];
    char watch_rvs[256]; /* resourceVersion of each watch request, ';'-separated */
    int list_fail;       /* answer this many lists with 500 first */
    int list_bad;        /* then this many (at most 2) with unusable lists */
    bool close_in_add;
    bool closed;
    uint64_t skipped; /* kube_reflector_skipped when the scenario ended */
    uint64_t events;  /* kube_reflector_events then */
    bool owner_skip;  /* the reflector gets owner_skip_cb */
};

static void logf_(struct t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct t *t, const char *fmt, ...)
{
    size_t n = strlen(t->log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->log + n, sizeof(t->log) - n, fmt, ap);
    va_end(ap);
}

static void put(struct t *t, const char *name)
{
    int i;
    for (i = 0; i < t->nobj; i++)
        if (strcmp(t->objs[i].name, name) == 0)
            break;
    if (i == t->nobj) {
        assert_true(t->nobj < MAX_OBJ);
        snprintf(t->objs[t->nobj++].name, sizeof(t->objs[0].name), "%s", name);
    }
    t->objs[i].rv = ++t->rv;
    t->objs[i].live = true;
}

static void del(struct t *t, const char *name)
{
    for (int i = 0; i < t->nobj; i++)
        if (strcmp(t->objs[i].name, name) == 0)
            t->objs[i].live = false;
    t->rv++;
}

/* LIST with limit and continue (the index of the next object). */
static void answer_list(struct t *t, struct fake_conn *c, struct fake_req *r)
{
    char q[64];
    int limit = atoi(fake_query(r, "limit", q, sizeof(q)));
    int start = atoi(fake_query(r, "continue", q, sizeof(q)));
    int sent = 0, i;
    struct util_buf b;
    util_buf_init(&b);
    util_buf_puts(&b, "{\"kind\":\"ConfigMapList\",\"items\":[");
    for (i = start; i < t->nobj && (limit == 0 || sent < limit); i++) {
        if (!t->objs[i].live)
            continue;
        util_buf_printf(&b,
                        "%s{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns1\","
                        "\"resourceVersion\":\"%d\"}}",
                        sent ? "," : "", t->objs[i].name, t->objs[i].rv);
        sent++;
    }
    while (i < t->nobj && !t->objs[i].live)
        i++;
    util_buf_printf(&b, "],\"metadata\":{\"resourceVersion\":\"%d\"", t->rv);
    if (i < t->nobj)
        util_buf_printf(&b, ",\"continue\":\"%d\"", i);
    util_buf_puts(&b, "}}");
    fake_respond(c, 200, b.data);
    util_buf_free(&b);
}

static void ev(struct fake_conn *c, const char *type, const char *name, int rv)
{
    char *s = util_asprintf("{\"type\":\"%s\",\"object\":{\"metadata\":{\"name\":\"%s\","
                            "\"namespace\":\"ns1\",\"resourceVersion\":\"%d\"}}}\n",
                            type, name, rv);
    fake_stream_puts(c, s);
    free(s);
}

static void handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    char q[64];
    size_t n;
    if (strcmp(fake_query(r, "watch", q, sizeof(q)), "1") != 0) {
        t->lists++;
        snprintf(t->accept_list, sizeof(t->accept_list), "%s", r->accept);
        if (t->list_fail > 0) {
            t->list_fail--;
            fake_status(c, 500, "InternalError", "boom");
            return;
        }
        if (t->list_bad > 0) {
            /* Answers that are JSON but not a usable list. */
            fake_respond(c, 200, t->list_bad-- == 2 ? "{\"items\":3}" : "{\"items\":[]}");
            return;
        }
        answer_list(t, c, r);
        return;
    }
    t->watches++;
    snprintf(t->accept_watch, sizeof(t->accept_watch), "%s", r->accept);
    n = strlen(t->watch_rvs);
    snprintf(t->watch_rvs + n, sizeof(t->watch_rvs) - n, "%s;",
             fake_query(r, "resourceVersion", q, sizeof(q)));
    switch (t->step++) {
    case 0:
        /* Events, a bookmark, then the server's timeout ends the watch. */
        fake_stream_begin(c, 200);
        put(t, "x");
        ev(c, "ADDED", "x", t->rv);
        put(t, "a");
        ev(c, "MODIFIED", "a", t->rv);
        del(t, "b");
        ev(c, "DELETED", "b", t->rv);
        t->rv++;
        fake_stream_puts(c, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\","
                            "\"metadata\":{\"resourceVersion\":\"9\"}}}\n");
        fake_stream_end(c);
        break;
    case 1:
        /* While "disconnected": d goes, c changes, y comes; history is compacted. */
        del(t, "d");
        put(t, "c");
        put(t, "y");
        fake_stream_begin(c, 200);
        fake_stream_puts(c, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":"
                            "\"Failure\",\"message\":\"too old resource version: 9 (12)\","
                            "\"reason\":\"Expired\",\"code\":410}}\n");
        /* The stream stays open: the reflector must drop it by itself. */
        break;
    case 2:
        fake_status(c, 410, "Expired", "too old resource version");
        break;
    case 3:
        /* A version the server has not reached (an etcd restore): relist, as for 410. */
        fake_status(c, 504, "Timeout", "Too large resource version: 13, current: 12");
        break;
    case 4:
        fake_status(c, 500, "InternalError", "etcd is sad");
        break;
    case 5:
        /* A watch that ends at once with nothing in it. */
        fake_stream_begin(c, 200);
        fake_stream_end(c);
        break;
    default:
        /* Held open; the scenario ends here. */
        fake_stream_begin(c, 200);
        logf_(t, "END;");
        t->skipped = kube_reflector_skipped(t->r);
        t->events = kube_reflector_events(t->r);
        kube_reflector_close(t->r);
        t->r = NULL;
        kube_client_close(t->c, NULL, NULL);
        t->c = NULL;
        fake_stop(&t->srv);
        uv_close((uv_handle_t *)&t->watchdog, NULL);
        t->closed = true;
        break;
    }
}

/* The resume scenario: the first watch stops the reflector, which resumes from "1". */
static void resume_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    struct util_err err = {0};
    char q[64];
    size_t n;
    if (strcmp(fake_query(r, "watch", q, sizeof(q)), "1") != 0) {
        t->lists++;
        answer_list(t, c, r);
        return;
    }
    n = strlen(t->watch_rvs);
    snprintf(t->watch_rvs + n, sizeof(t->watch_rvs) - n, "%s;",
             fake_query(r, "resourceVersion", q, sizeof(q)));
    switch (t->watches++) {
    case 0:
        fake_stream_begin(c, 200);
        assert_int_equal(kube_reflector_set_resource_version(t->r, "1", &err), UTIL_EINVAL);
        kube_reflector_stop(t->r);
        del(t, "a");
        put(t, "c");
        assert_int_equal(kube_reflector_set_resource_version(t->r, "", &err), UTIL_EINVAL);
        assert_int_equal(kube_reflector_set_resource_version(t->r, "1", &err), 0);
        logf_(t, "resume;");
        kube_reflector_start(t->r);
        break;
    case 1:
        fake_status(c, 410, "Expired", "too old resource version: 1 (4)");
        break;
    default:
        /* From here the ordinary handler (which records the version itself) ends it. */
        t->watch_rvs[n] = '\0';
        s->handler = handler;
        t->step = 6;
        handler(s, c, r);
        break;
    }
}

/*
 * The opening of a scripted scenario's request: a LIST is answered from the store (-1); a
 * WATCH has its resourceVersion recorded and gets its number, 0 for the first.
 */
static int scenario_request(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    char q[64];
    size_t n;
    if (strcmp(fake_query(r, "watch", q, sizeof(q)), "1") != 0) {
        t->lists++;
        answer_list(t, c, r);
        return -1;
    }
    n = strlen(t->watch_rvs);
    snprintf(t->watch_rvs + n, sizeof(t->watch_rvs) - n, "%s;",
             fake_query(r, "resourceVersion", q, sizeof(q)));
    return t->watches++;
}

/* The scenario is over: its last watch is handed to the main handler at step 6, which
 * records its version itself. */
static void scenario_done(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    size_t n = strlen(t->watch_rvs);
    n = n > 0 ? n - 1 : 0;
    while (n > 0 && t->watch_rvs[n - 1] != ';')
        n--;
    t->watch_rvs[n] = '\0';
    s->handler = handler;
    t->step = 6;
    handler(s, c, r);
}

/*
 * The noted scenario: the owner's own writes (a's change, n's creation) are noted before
 * their watch events come, which are then not delivered; other versions are, and a stale
 * note costs one delivery at the next relist, never a miss.
 */
static void note_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    switch (scenario_request(s, c, r)) {
    case -1:
        break;
    case 0:
        fake_stream_begin(c, 200);
        put(t, "a"); /* 3: the owner's write, answered before its event */
        kube_reflector_note(t->r, "ns1", "a", "3");
        ev(c, "MODIFIED", "a", 3);
        put(t, "b"); /* 4: someone else's */
        ev(c, "MODIFIED", "b", 4);
        put(t, "a"); /* 5: a change after the owner's */
        ev(c, "MODIFIED", "a", 5);
        put(t, "n"); /* 6: created by the owner */
        kube_reflector_note(t->r, "ns1", "n", "6");
        ev(c, "ADDED", "n", 6);
        /* Ignored: no name, no version. */
        kube_reflector_note(t->r, "ns1", NULL, "3");
        kube_reflector_note(t->r, "ns1", "a", "");
        fake_stream_end(c);
        break;
    case 1:
        /* The watch's events were delivered (it asks again from 6): a late answer of the
         * owner's first write, older than what was delivered, then a relist. */
        kube_reflector_note(t->r, "ns1", "a", "3");
        fake_status(c, 410, "Expired", "too old resource version");
        break;
    default:
        scenario_done(s, c, r);
        break;
    }
}

/* The owner's filter: events of q without the member "keep" are of no use to it. */
static bool owner_skip_cb(const struct kube_watch_peek *p, void *arg)
{
    static const char keep[] = "\"keep\"";
    if (p->name_len != 1 || p->name[0] != 'q')
        return false;
    for (size_t i = 0; i + sizeof(keep) - 1 <= p->len; i++)
        if (memcmp(p->line + i, keep, sizeof(keep) - 1) == 0)
            return false;
    return true;
}

/* Two writes of the owner's answered before either's event: neither event is delivered
 * over the object the second write made; a later change by someone else is. */
static void two_notes_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    switch (scenario_request(s, c, r)) {
    case -1:
        break;
    case 0:
        fake_stream_begin(c, 200);
        put(t, "a"); /* 3: the owner's first write */
        kube_reflector_note(t->r, "ns1", "a", "3");
        put(t, "a"); /* 4: its second, answered before the first's event came */
        kube_reflector_note(t->r, "ns1", "a", "4");
        ev(c, "MODIFIED", "a", 3);
        ev(c, "MODIFIED", "a", 4);
        put(t, "a"); /* 5: someone else's */
        ev(c, "MODIFIED", "a", 5);
        put(t, "b"); /* 6: the owner's write of another object, one note */
        kube_reflector_note(t->r, "ns1", "b", "6");
        ev(c, "MODIFIED", "b", 6);
        fake_stream_end(c);
        break;
    default:
        scenario_done(s, c, r);
        break;
    }
}

/* The owner-skip scenario: q's events the owner has no use for are not delivered nor
 * recorded, so its first one delivered is an add and a relist delivers a change. */
static void owner_skip_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    switch (scenario_request(s, c, r)) {
    case -1:
        break;
    case 0:
        fake_stream_begin(c, 200);
        put(t, "q"); /* 3: skipped */
        ev(c, "ADDED", "q", 3);
        put(t, "q"); /* 4: kept, delivered as an add */
        fake_stream_puts(c, "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"q\","
                            "\"namespace\":\"ns1\",\"resourceVersion\":\"4\"},\"keep\":1}}\n");
        put(t, "q"); /* 5: skipped, not recorded */
        ev(c, "MODIFIED", "q", 5);
        put(t, "b"); /* 6: another object: delivered */
        ev(c, "MODIFIED", "b", 6);
        put(t, "q"); /* 7: skipped, the last event of the watch */
        ev(c, "MODIFIED", "q", 7);
        del(t, "q"); /* 8: deletes are always delivered */
        ev(c, "DELETED", "q", 8);
        put(t, "q"); /* 9: skipped again */
        ev(c, "ADDED", "q", 9);
        fake_stream_end(c);
        break;
    case 1:
        fake_status(c, 410, "Expired", "too old resource version");
        break;
    default:
        scenario_done(s, c, r);
        break;
    }
}

static void add_cb(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                   void *arg)
{
    struct t *t = arg;
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    logf_(t, "add %s/%s %s;", ns, name, rv);
    if (t->close_in_add) {
        /* Closing from inside a callback: nothing more may be delivered. */
        kube_reflector_close(r);
        t->r = NULL;
        kube_client_close(t->c, NULL, NULL);
        t->c = NULL;
        fake_stop(&t->srv);
        uv_close((uv_handle_t *)&t->watchdog, NULL);
        t->closed = true;
    }
}

static void update_cb(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                      void *arg)
{
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    logf_(arg, "update %s %s;", name, rv);
}

static void delete_cb(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                      void *arg)
{
    logf_(arg, "delete %s/%s %s;", ns, name, obj ? "obj" : "gone");
}

static void synced_cb(struct kube_reflector *r, void *arg)
{
    struct t *t = arg;
    logf_(t, "synced %s n=%zu;", kube_reflector_resource_version(r), kube_reflector_size(r));
}

static void error_cb(struct kube_reflector *r, const char *what, uint64_t delay_ms, void *arg)
{
    struct t *t = arg;
    /* The test's backoff is 10 ms base, 40 ms cap. */
    assert_true(delay_ms >= 5 && delay_ms <= 40);
    logf_(t, "error %s;", what);
}

static const struct kube_reflector_cbs cbs = {add_cb, update_cb, delete_cb, synced_cb, error_cb};

static void on_watchdog(uv_timer_t *h)
{
    struct t *t = h->data;
    fail_msg("the scenario did not finish; log: %s", t->log);
}

static void start(struct t *t, bool metadata_only)
{
    struct kube_config cfg = {0};
    struct util_err err = {0};
    struct kube_reflector_opts o = {
        .res = {"", "v1", "configmaps", "ns1"},
        .label_selector = "app=lode",
        .metadata_only = metadata_only,
        .page_size = 2,
        .watch_timeout_min_s = 60,
        .watch_timeout_max_s = 61,
        .backoff_base_ms = 10,
        .backoff_cap_ms = 40,
        .skip_cb = t->owner_skip ? owner_skip_cb : NULL,
    };
    assert_int_equal(uv_loop_init(&t->loop), 0);
    assert_int_equal(fake_start(&t->srv, &t->loop, handler, t), 0);
    uv_timer_init(&t->loop, &t->watchdog);
    t->watchdog.data = t;
    uv_timer_start(&t->watchdog, on_watchdog, 10000, 0);
    cfg.server = util_asprintf("http://127.0.0.1:%d", t->srv.port);
    cfg.insecure = true;
    assert_int_equal(kube_client_init(&t->loop, &t->c, &cfg, NULL, &err), 0);
    kube_config_free(&cfg);
    assert_int_equal(kube_reflector_init(t->c, &t->r, &o, &cbs, t, &err), 0);
    kube_reflector_start(t->r);
}

static void finish_run(struct t *t)
{
    uv_run(&t->loop, UV_RUN_DEFAULT);
    assert_true(t->closed);
    assert_int_equal(t->srv.open_handles, 0);
    assert_int_equal(uv_loop_close(&t->loop), 0);
}

static void test_list_watch_relist(void **state)
{
    struct t t = {0};
    const char *names[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++)
        put(&t, names[i]);
    start(&t, true);
    assert_string_equal(kube_reflector_resource(t.r), "configmaps"); /* metrics' label */
    finish_run(&t);
    assert_string_equal(
        t.log,
        /* The first list, in three pages of two. */
        "add ns1/a 1;add ns1/b 2;add ns1/c 3;add ns1/d 4;add ns1/e 5;synced 5 n=5;"
        /* Watch 1: events, a bookmark at 9, then the normal end. */
        "add ns1/x 6;update a 7;delete ns1/b obj;"
        /* Watch 2 from 9: ERROR 410, so a relist finds c and y changed and d gone. */
        "update c 11;add ns1/y 12;delete ns1/d gone;synced 12 n=5;"
        /* Watch 3: HTTP 410, relist, nothing changed; watch 4: too large, the same. */
        "synced 12 n=5;synced 12 n=5;"
        /* Watch 5: a 500, retried after a backoff from the same version. */
        "error watch configmaps: HTTP 500: etcd is sad;"
        /* Watch 6 ends at once with nothing: counted as a failure too. */
        "error watch configmaps: ended at once with no event;"
        "END;");
    assert_string_equal(t.watch_rvs, "5;9;12;12;12;12;12;");
    assert_int_equal(t.lists, 4 * 3);
    assert_non_null(strstr(t.accept_list, "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"));
    assert_non_null(strstr(t.accept_watch, "as=PartialObjectMetadata;g=meta.k8s.io;v=v1"));
    assert_null(strstr(t.accept_watch, "List"));
}

static void test_list_errors_back_off(void **state)
{
    struct t t = {0};
    put(&t, "a");
    t.list_fail = 2;
    t.list_bad = 2;
    t.step = 6; /* the first watch ends the scenario */
    start(&t, false);
    finish_run(&t);
    assert_string_equal(t.log, "error list configmaps: HTTP 500: boom;"
                               "error list configmaps: HTTP 500: boom;"
                               "error list configmaps: the response has no items list;"
                               "error list configmaps: the response has no resourceVersion;"
                               "add ns1/a 1;synced 1 n=1;END;");
    assert_string_equal(t.accept_list, "application/json");
}

static void test_stop_and_resume(void **state)
{
    struct t t = {0};
    put(&t, "a");
    put(&t, "b");
    start(&t, false);
    t.srv.handler = resume_handler;
    finish_run(&t);
    /* No list on resume; the expired version brings one: c is new, a gone (found at the end). */
    assert_string_equal(t.log, "add ns1/a 1;add ns1/b 2;synced 2 n=2;resume;"
                               "add ns1/c 4;delete ns1/a gone;synced 4 n=2;END;");
    assert_string_equal(t.watch_rvs, "2;1;4;");
    assert_int_equal(t.lists, 2);
}

static void test_noted_versions_skipped(void **state)
{
    struct t t = {0};
    put(&t, "a");
    put(&t, "b");
    start(&t, false);
    t.srv.handler = note_handler;
    finish_run(&t);
    /* a at 3 and n at 6 are not delivered; the relist delivers a again (the stale note
     * said 3, the list 5) and neither b nor n (the versions held). */
    assert_string_equal(t.log, "add ns1/a 1;add ns1/b 2;synced 2 n=2;"
                               "update b 4;update a 5;"
                               "update a 5;synced 6 n=3;END;");
    /* The skipped n at 6 moved the version the next watch starts from. */
    assert_string_equal(t.watch_rvs, "2;6;6;");
    assert_int_equal(t.skipped, 2);
    /* Every event the watches brought is counted, skipped or not (the metric's total). */
    assert_int_equal(t.events, 4);
}

static void test_two_notes_skipped(void **state)
{
    struct t t = {0};
    put(&t, "a");
    put(&t, "b");
    start(&t, false);
    t.srv.handler = two_notes_handler;
    finish_run(&t);
    /* a's 3 and 4 and b's 6 are the owner's: only a's 5 is delivered. */
    assert_string_equal(t.log, "add ns1/a 1;add ns1/b 2;synced 2 n=2;"
                               "update a 5;END;");
    assert_string_equal(t.watch_rvs, "2;6;");
    assert_int_equal(t.skipped, 3);
    assert_int_equal(t.events, 4);
}

static void test_owner_skips(void **state)
{
    struct t t = {0};
    put(&t, "a");
    put(&t, "b");
    t.owner_skip = true;
    start(&t, false);
    t.srv.handler = owner_skip_handler;
    finish_run(&t);
    /* q: 4 delivered as an add (3 was not recorded), 5 and 7 not, the delete is, 9 not;
     * the relist then finds q at 9, unknown to the reflector: an add. */
    assert_string_equal(t.log, "add ns1/a 1;add ns1/b 2;synced 2 n=2;"
                               "add ns1/q 4;update b 6;delete ns1/q obj;"
                               "add ns1/q 9;synced 9 n=3;END;");
    assert_string_equal(t.watch_rvs, "2;9;9;");
    assert_int_equal(t.skipped, 4);
    assert_int_equal(t.events, 7);
}

static void test_close_inside_callback(void **state)
{
    struct t t = {0};
    put(&t, "a");
    put(&t, "b");
    t.close_in_add = true;
    start(&t, false);
    finish_run(&t);
    assert_string_equal(t.log, "add ns1/a 1;");
    assert_int_equal(t.watches, 0);
}

static void test_init_errors(void **state)
{
    uv_loop_t loop;
    struct kube_client *c;
    struct kube_reflector *r;
    struct kube_config cfg = {.server = "https://h"};
    struct util_err err = {0};
    struct kube_reflector_opts o = {.res = {"", "v1", NULL, NULL}};
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(kube_client_init(&loop, &c, &cfg, NULL, &err), 0);
    assert_int_equal(kube_reflector_init(c, &r, &o, &cbs, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "plural"));
    o.res.resource = "nodes";
    o.watch_timeout_min_s = 10;
    o.watch_timeout_max_s = 5;
    assert_int_equal(kube_reflector_init(c, &r, &o, &cbs, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "watch timeout"));
    kube_client_close(c, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_watch_relist), cmocka_unit_test(test_list_errors_back_off),
        cmocka_unit_test(test_stop_and_resume),   cmocka_unit_test(test_close_inside_callback),
        cmocka_unit_test(test_init_errors),       cmocka_unit_test(test_noted_versions_skipped),
        cmocka_unit_test(test_owner_skips),       cmocka_unit_test(test_two_notes_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
