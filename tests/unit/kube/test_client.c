/*
 * The transport against a fake API server on the same loop: verbs, headers, status
 * handling, timeouts, the rate limit, watches, cancelling and closing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/ssl.h>

#include "kube/fake_api.h"
#include "kube/kube.h"
#include "kube/kube_int.h"

/* One result as a callback saw it. */
struct got {
    int calls;
    int error;
    long status;
    char reason[64];
    char message[512];
    char body[512]; /* the body as compact JSON, or "" */
    uint64_t at_ms;
};

/* What a test shares with its callbacks. */
struct t {
    uv_loop_t loop;
    uv_timer_t watchdog, later;
    struct fake_server srv;
    struct kube_client *c;
    struct got got[16];
    int ngot, want;
    struct fake_req seen[16]; /* the requests the server saw (bodies dropped) */
    char bodies[16][512];
    int nseen;
    struct fake_conn *held; /* a connection whose answer the test gives later */
    struct kube_request *req;
    char events[2048]; /* "TYPE name rv;" per watch event */
    int nevents;
    int cancel_after;    /* cancel the watch after this many events */
    bool close_on_both;  /* close once 4 events and 1 result arrived */
    bool close_at_first; /* close the client at the first watch event */
    bool closed;
    uint64_t t0;
};

static void on_watchdog(uv_timer_t *h)
{
    fail_msg("the test did not finish within its time");
}

static void on_client_closed(void *arg)
{
    struct t *t = arg;
    t->closed = true;
}

/* Closes everything; uv_run returns once it is closed. */
static void finish(struct t *t)
{
    if (t->c != NULL) {
        kube_client_close(t->c, on_client_closed, t);
        t->c = NULL;
    }
    fake_stop(&t->srv);
    uv_timer_stop(&t->watchdog);
    if (!uv_is_closing((uv_handle_t *)&t->watchdog))
        uv_close((uv_handle_t *)&t->watchdog, NULL);
    if (!uv_is_closing((uv_handle_t *)&t->later))
        uv_close((uv_handle_t *)&t->later, NULL);
}

static void record(struct t *t, struct fake_req *r)
{
    if (t->nseen < 16) {
        t->seen[t->nseen] = *r;
        t->seen[t->nseen].body = NULL;
        snprintf(t->bodies[t->nseen], sizeof(t->bodies[0]), "%s", r->body ? r->body : "");
        t->nseen++;
    }
}

static struct kube_client *client_for(struct t *t, const struct kube_client_opts *o,
                                      const char *token, const char *token_file)
{
    struct kube_config cfg = {0};
    struct kube_client *c;
    struct util_err err = {0};
    cfg.server = util_asprintf("http://127.0.0.1:%d", t->srv.port);
    cfg.namespace = util_strdup("ns1");
    cfg.insecure = true;
    cfg.token = token ? util_strdup(token) : NULL;
    cfg.token_file = token_file ? util_strdup(token_file) : NULL;
    if (kube_client_init(&t->loop, &c, &cfg, o, &err) != 0)
        fail_msg("kube_client_init: %s", err.msg);
    kube_config_free(&cfg);
    return c;
}

static void setup_t(struct t *t, fake_handler h, const struct kube_client_opts *o)
{
    memset(t, 0, sizeof(*t));
    assert_int_equal(uv_loop_init(&t->loop), 0);
    assert_int_equal(fake_start(&t->srv, &t->loop, h, t), 0);
    uv_timer_init(&t->loop, &t->watchdog);
    uv_timer_init(&t->loop, &t->later);
    t->watchdog.data = t->later.data = t;
    uv_timer_start(&t->watchdog, on_watchdog, 10000, 0);
    t->c = client_for(t, o, "tok-1", NULL);
    t->t0 = uv_now(&t->loop);
}

/* Runs the loop until everything is closed and checks that nothing leaked a handle. */
static void run_t(struct t *t)
{
    uv_run(&t->loop, UV_RUN_DEFAULT);
    assert_true(t->closed);
    assert_int_equal(t->srv.open_handles, 0);
    assert_int_equal(uv_loop_close(&t->loop), 0);
}

static void got_cb(const struct kube_result *res, void *arg)
{
    struct t *t = arg;
    struct got *g = &t->got[t->ngot++];
    g->calls++;
    g->error = res->error;
    g->status = res->status;
    snprintf(g->reason, sizeof(g->reason), "%s", res->reason);
    snprintf(g->message, sizeof(g->message), "%s", res->message);
    if (res->body != NULL) {
        char *b = json_dumps(res->body, JSON_COMPACT | JSON_SORT_KEYS);
        snprintf(g->body, sizeof(g->body), "%s", b);
        free(b);
    }
    g->at_ms = uv_now(&t->loop) - t->t0;
    if (t->ngot == t->want || (t->close_on_both && t->ngot == 1 && t->nevents == 4))
        finish(t);
}

static const struct kube_resource cms = {"", "v1", "configmaps", "ns1"};
static const struct kube_resource bps = {"lodestore.io", "v1alpha1", "backuppolicies", "ns1"};

/* ---- verbs ---- */

static void verbs_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    record(t, r);
    if (strcmp(r->method, "GET") == 0 && fake_path_is(r, "/api/v1/namespaces/ns1/configmaps/a"))
        fake_respond(c, 200, "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}");
    else if (strcmp(r->method, "GET") == 0)
        fake_status(c, 404, "NotFound", "configmaps \\\"zz\\\" not found");
    else if (strcmp(r->method, "POST") == 0)
        fake_status(c, 409, "AlreadyExists", "configmaps \\\"a\\\" already exists");
    else
        fake_respond(c, 200, "{\"ok\":true}");
}

static void test_verbs(void **state)
{
    struct t t;
    struct util_err err = {0};
    json_t *obj = json_pack("{s:s, s:{s:s}}", "kind", "ConfigMap", "metadata", "name", "a");
    json_t *status = json_pack("{s:{s:i}}", "status", "hosts", 3);
    setup_t(&t, verbs_handler, NULL);
    t.want = 9;
    assert_int_equal(kube_get(t.c, &cms, "a", NULL, got_cb, &t, NULL, &err), 0);
    assert_int_equal(kube_get(t.c, &cms, "zz", NULL, got_cb, &t, NULL, &err), 0);
    assert_int_equal(kube_create(t.c, &cms, obj, got_cb, &t, NULL, &err), 0);
    assert_int_equal(kube_merge_patch(t.c, &bps, "p1", "status", status, got_cb, &t, NULL, &err),
                     0);
    assert_int_equal(kube_apply(t.c, &bps, "p1", NULL, obj, got_cb, &t, NULL, &err), 0);
    assert_int_equal(kube_apply_dry_run(t.c, &bps, "p2", NULL, obj, got_cb, &t, NULL, &err), 0);
    assert_int_equal(kube_update(t.c, &cms, "a", NULL, obj, got_cb, &t, NULL, &err), 0);
    assert_int_equal(kube_delete(t.c, &cms, "a", "Background", got_cb, &t, NULL, &err), 0);
    struct kube_list_opts lo = {.label_selector = "app=x,tier in (a,b)",
                                .limit = 10,
                                .continue_token = "c/1=",
                                .metadata_only = true};
    assert_int_equal(kube_list(t.c, &cms, &lo, got_cb, &t, NULL, &err), 0);
    /* Requests that cannot be built fail at once and call nothing. */
    assert_int_equal(kube_get(t.c, &cms, NULL, NULL, got_cb, &t, NULL, &err), UTIL_EINVAL);
    assert_int_equal(kube_get(t.c, &cms, "", NULL, got_cb, &t, NULL, &err), UTIL_EINVAL);
    assert_int_equal(kube_create(t.c, &cms, NULL, got_cb, &t, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "body is missing"));
    assert_int_equal(kube_update(t.c, &cms, NULL, NULL, obj, got_cb, &t, NULL, &err), UTIL_EINVAL);
    assert_int_equal(kube_merge_patch(t.c, &cms, NULL, NULL, obj, got_cb, &t, NULL, &err),
                     UTIL_EINVAL);
    assert_int_equal(kube_apply(t.c, &cms, NULL, NULL, obj, got_cb, &t, NULL, &err), UTIL_EINVAL);
    assert_int_equal(kube_apply_dry_run(t.c, &cms, NULL, NULL, obj, got_cb, &t, NULL, &err),
                     UTIL_EINVAL);
    assert_int_equal(kube_delete(t.c, &cms, NULL, NULL, got_cb, &t, NULL, &err), UTIL_EINVAL);
    struct kube_resource noversion = {"", "", "configmaps", NULL};
    assert_int_equal(kube_list(t.c, &noversion, NULL, got_cb, &t, NULL, &err), UTIL_EINVAL);
    assert_int_equal(kube_watch(t.c, &noversion, NULL, NULL, got_cb, &t, NULL, &err), UTIL_EINVAL);
    assert_int_equal(kube_get(t.c, &cms, "a", "", got_cb, &t, NULL, &err), UTIL_EINVAL);
    json_decref(obj);
    json_decref(status);
    run_t(&t);

    assert_int_equal(t.ngot, 9);
    assert_int_equal(t.nseen, 9);
    /* Results arrive per request; order the checks by what the server saw. */
    for (int i = 0; i < 9; i++) {
        assert_string_equal(t.seen[i].auth, "Bearer tok-1");
        assert_int_equal(t.got[i].calls, 1);
    }
    int get_a = -1, get_zz = -1, post = -1;
    for (int i = 0; i < 9; i++) {
        if (t.got[i].status == 200 && strstr(t.got[i].body, "ConfigMap"))
            get_a = i;
        if (t.got[i].status == 404)
            get_zz = i;
        if (t.got[i].status == 409)
            post = i;
    }
    assert_true(get_a >= 0 && get_zz >= 0 && post >= 0);
    assert_int_equal(t.got[get_a].error, 0);
    assert_string_equal(t.got[get_a].message, "");
    /* 404 and 409 are results with the Status's reason and message, not transport errors. */
    assert_int_equal(t.got[get_zz].error, 0);
    assert_string_equal(t.got[get_zz].reason, "NotFound");
    assert_string_equal(t.got[get_zz].message, "configmaps \"zz\" not found");
    assert_non_null(strstr(t.got[get_zz].body, "\"code\":404"));
    assert_string_equal(t.got[post].reason, "AlreadyExists");

    for (int i = 0; i < 9; i++) {
        struct fake_req *r = &t.seen[i];
        if (strcmp(r->method, "POST") == 0) {
            assert_string_equal(r->target, "/api/v1/namespaces/ns1/configmaps");
            assert_string_equal(r->content_type, "application/json");
            assert_string_equal(t.bodies[i],
                                "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}");
        } else if (strcmp(r->method, "PATCH") == 0 && strstr(r->target, "/status")) {
            assert_string_equal(
                r->target, "/apis/lodestore.io/v1alpha1/namespaces/ns1/backuppolicies/p1/status");
            assert_string_equal(r->content_type, "application/merge-patch+json");
            assert_string_equal(t.bodies[i], "{\"status\":{\"hosts\":3}}");
        } else if (strcmp(r->method, "PATCH") == 0 && strstr(r->target, "/p2")) {
            /* The dry run: the same apply, and the server is told to store nothing. */
            assert_string_equal(r->target,
                                "/apis/lodestore.io/v1alpha1/namespaces/ns1/"
                                "backuppolicies/p2?fieldManager=lodestore&force=true&dryRun=All");
            assert_string_equal(r->content_type, "application/apply-patch+yaml");
        } else if (strcmp(r->method, "PATCH") == 0) {
            assert_string_equal(r->target, "/apis/lodestore.io/v1alpha1/namespaces/ns1/"
                                           "backuppolicies/p1?fieldManager=lodestore&force=true");
            assert_string_equal(r->content_type, "application/apply-patch+yaml");
        } else if (strcmp(r->method, "PUT") == 0) {
            assert_string_equal(r->target, "/api/v1/namespaces/ns1/configmaps/a");
        } else if (strcmp(r->method, "DELETE") == 0) {
            assert_string_equal(r->target,
                                "/api/v1/namespaces/ns1/configmaps/a?propagationPolicy=Background");
        } else if (strstr(r->target, "limit=")) {
            assert_string_equal(r->target, "/api/v1/namespaces/ns1/configmaps?labelSelector=app%"
                                           "3Dx%2Ctier%20in%20%28a%2Cb%29&limit=10&continue=c%"
                                           "2F1%3D");
            assert_non_null(strstr(r->accept, "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"));
        } else {
            assert_string_equal(r->accept, "application/json");
        }
    }
}

/* ---- odd answers ---- */

static void odd_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    record(t, r);
    if (strstr(r->target, "/text"))
        fake_respond(c, 502, "<html>bad\ngateway</html>");
    else if (strstr(r->target, "/notjson"))
        fake_respond(c, 200, "hello");
    else if (strstr(r->target, "/big"))
        fake_respond(c, 200, "{\"data\":\"0123456789012345678901234567890123456789\"}");
    else if (strstr(r->target, "/empty"))
        fake_respond(c, 200, "");
    else
        t->held = c; /* never answered: the request times out */
}

/* ---- answers to writes, stripped ---- */

/* Every answer carries what a caller that set strip_answers does not read. */
static void strip_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    fake_respond(c, strcmp(r->method, "DELETE") == 0 ? 404 : 200,
                 "{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\",\"managedFields\":[{}]},"
                 "\"spec\":{\"template\":{\"a\":1},\"x\":2}}");
}

static void test_strip_answers(void **state)
{
    static const char *const paths[] = {"metadata.managedFields", "spec.template", NULL};
    struct kube_client_opts o = {.strip_answers = paths};
    struct t t;
    json_t *obj = json_pack("{s:s}", "kind", "Job");
    setup_t(&t, strip_handler, &o);
    t.want = 4;
    assert_int_equal(kube_create(t.c, &cms, obj, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_merge_patch(t.c, &cms, "j", "status", obj, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_get(t.c, &cms, "j", NULL, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_delete(t.c, &cms, "j", NULL, got_cb, &t, NULL, NULL), 0);
    json_decref(obj);
    run_t(&t);
    int stripped = 0, whole = 0;
    for (int i = 0; i < 4; i++) {
        if (strcmp(t.got[i].body, "{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},"
                                  "\"spec\":{\"x\":2}}") == 0)
            stripped++;
        else if (strstr(t.got[i].body, "managedFields") != NULL &&
                 strstr(t.got[i].body, "template") != NULL)
            whole++;
    }
    /* The create and the patch are stripped; the GET, and the DELETE's 404 (not an
     * answer of success), are decoded whole. */
    assert_int_equal(stripped, 2);
    assert_int_equal(whole, 2);
}

/* A write to a resource named in unread_answers ends with no body; a GET, and an error,
 * are decoded as usual; other resources are not affected. */
static void unread_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    if (strstr(r->target, "/bad") != NULL)
        fake_respond(c, 409,
                     "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"message\":\"m\"}");
    else
        fake_respond(c, 201, "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"j\"}}");
}

static void test_unread_answers(void **state)
{
    static const char *const unread[] = {"configmaps/status", "configmaps", NULL};
    struct kube_client_opts o = {.unread_answers = unread};
    struct t t;
    json_t *obj = json_pack("{s:s}", "kind", "ConfigMap");
    setup_t(&t, unread_handler, &o);
    t.want = 5;
    assert_int_equal(kube_create(t.c, &cms, obj, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_merge_patch(t.c, &cms, "j", "status", obj, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_merge_patch(t.c, &cms, "bad", NULL, obj, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_get(t.c, &cms, "j", NULL, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_create(t.c, &bps, obj, got_cb, &t, NULL, NULL), 0);
    json_decref(obj);
    run_t(&t);
    int empty = 0, decoded = 0, refused = 0;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(t.got[i].error, 0);
        if (t.got[i].status == 409) {
            refused++;
            assert_string_equal(t.got[i].reason, "AlreadyExists");
            assert_string_equal(t.got[i].message, "m");
        } else if (t.got[i].body[0] == '\0') {
            empty++;
        } else {
            decoded++;
        }
    }
    /* The create and the status patch of configmaps: no body; the GET and the create of
     * backuppolicies: decoded; the 409: its Status read. */
    assert_int_equal(empty, 2);
    assert_int_equal(decoded, 2);
    assert_int_equal(refused, 1);
}

static void test_odd_answers_and_timeout(void **state)
{
    struct t t;
    struct kube_client_opts o = {.timeout_ms = 300, .max_response_bytes = 32};
    setup_t(&t, odd_handler, &o);
    t.want = 5;
    assert_int_equal(kube_get(t.c, &cms, "text", NULL, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_get(t.c, &cms, "notjson", NULL, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_get(t.c, &cms, "big", NULL, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_get(t.c, &cms, "empty", NULL, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_get(t.c, &cms, "hang", NULL, got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    int seen = 0;
    for (int i = 0; i < t.ngot; i++) {
        struct got *g = &t.got[i];
        if (g->status == 502) {
            assert_int_equal(g->error, 0);
            assert_string_equal(g->message, "HTTP 502: <html>bad gateway</html>");
            assert_string_equal(g->body, "");
            seen |= 1;
        } else if (strstr(g->message, "not JSON")) {
            assert_int_equal(g->error, KUBE_EPROTO);
            assert_int_equal(g->status, 0);
            seen |= 2;
        } else if (g->error == KUBE_ETOOBIG) {
            assert_non_null(strstr(g->message, "the response exceeds 32 bytes"));
            seen |= 4;
        } else if (g->error == KUBE_ETIMEDOUT) {
            assert_non_null(strstr(g->message, "/hang: timed out after"));
            assert_true(g->at_ms >= 250);
            seen |= 8;
        } else if (g->status == 200) {
            assert_int_equal(g->error, 0);
            assert_string_equal(g->body, "");
            seen |= 16;
        }
    }
    assert_int_equal(seen, 31);
}

/*
 * step_loop: the lode commands run a private loop with UV_RUN_ONCE until their
 * request answered. Each result must stop the loop, also one delivered from a timer
 * (here curl's own timeout), or uv_run goes on to poll and blocks while the server,
 * the watchdog or an idle connection keeps the loop alive. UV_RUN_DEFAULT shows it:
 * it returns only when stopped.
 */
static void test_step_loop(void **state)
{
    struct t t;
    struct kube_client_opts o = {.timeout_ms = 200, .step_loop = true};
    setup_t(&t, odd_handler, &o);
    t.want = 99; /* got_cb never closes: the loop stays alive */
    assert_int_equal(kube_get(t.c, &cms, "empty", NULL, got_cb, &t, NULL, NULL), 0);
    uv_run(&t.loop, UV_RUN_DEFAULT);
    assert_int_equal(t.ngot, 1);
    assert_int_equal(t.got[0].status, 200);
    assert_int_equal(kube_get(t.c, &cms, "hang", NULL, got_cb, &t, NULL, NULL), 0);
    uv_run(&t.loop, UV_RUN_DEFAULT);
    assert_int_equal(t.ngot, 2);
    assert_int_equal(t.got[1].error, KUBE_ETIMEDOUT);
    assert_true(t.got[1].at_ms >= 150 && t.got[1].at_ms < 5000);
    finish(&t);
    run_t(&t);
}

static void test_connection_refused(void **state)
{
    struct t t;
    setup_t(&t, odd_handler, NULL);
    /* Point a second client at a port nobody listens on. */
    struct fake_server dead;
    assert_int_equal(fake_start(&dead, &t.loop, odd_handler, &t), 0);
    int port = dead.port;
    fake_stop(&dead);
    uv_run(&t.loop, UV_RUN_NOWAIT);
    kube_client_close(t.c, NULL, NULL);
    t.srv.port = port;
    t.c = client_for(&t, NULL, NULL, NULL);
    t.want = 1;
    assert_int_equal(kube_get(t.c, &cms, "a", NULL, got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    assert_int_equal(t.got[0].error, KUBE_ECONN);
    assert_int_equal(t.got[0].status, 0);
    assert_non_null(strstr(t.got[0].message, "GET http://127.0.0.1:"));
}

/* ---- the rate limit ---- */

static void test_rate_limit(void **state)
{
    struct t t;
    struct kube_client_opts o = {.qps = 10, .burst = 2};
    setup_t(&t, verbs_handler, &o);
    t.want = 5;
    for (int i = 0; i < 5; i++)
        assert_int_equal(kube_get(t.c, &cms, "a", NULL, got_cb, &t, NULL, NULL), 0);
    /* The burst went out at once, the rest wait for tokens. */
    assert_int_equal(kube_client_active(t.c), 2);
    assert_int_equal(kube_client_queued(t.c), 3);
    run_t(&t);
    /* 10 QPS: the fifth request cannot start before 300 ms. */
    assert_true(t.got[4].at_ms >= 300);
    assert_true(t.got[1].at_ms < 300);
}

/* Counts the connections open at once (the listener is one handle of the server's). */
static int max_conns;
static void in_flight_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    if (s->open_handles - 1 > max_conns)
        max_conns = s->open_handles - 1;
    verbs_handler(s, c, r);
}

/* max_in_flight: the rest wait in the queue, and start as the first ones end. */
static void test_max_in_flight(void **state)
{
    struct t t;
    struct kube_client_opts o = {.qps = -1, .max_in_flight = 2};
    max_conns = 0;
    setup_t(&t, in_flight_handler, &o);
    t.want = 6;
    for (int i = 0; i < 6; i++)
        assert_int_equal(kube_get(t.c, &cms, "a", NULL, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_client_active(t.c), 2);
    assert_int_equal(kube_client_queued(t.c), 4);
    run_t(&t);
    for (int i = 0; i < 6; i++)
        assert_int_equal(t.got[i].status, 200);
    assert_true(max_conns >= 1 && max_conns <= 2);
}

/*
 * A pooled connection the server closes while it idles: the transport stops listening to
 * it (the loop does not spin on its end of file), and the next request goes out on a new
 * connection. Sequential requests before that share one.
 */
static unsigned idle_turns;
static bool idle_window;
static void idle_check_cb(uv_check_t *h)
{
    if (idle_window)
        idle_turns++;
}

static void idle_got_cb(const struct kube_result *res, void *arg);

static void idle_window_end(uv_timer_t *h)
{
    struct t *t = h->data;
    idle_window = false;
    /* A loop woken by the closed socket's end of file again and again turns thousands of
     * times in 100 ms; a quiet one a few (the client's own timers). */
    assert_true(idle_turns < 50);
    assert_int_equal(kube_get(t->c, &cms, "a", NULL, idle_got_cb, t, NULL, NULL), 0);
}

static void idle_got_cb(const struct kube_result *res, void *arg)
{
    struct t *t = arg;
    /* The third answer closes the client (got_cb): count its connections first. */
    if (t->ngot == 2)
        assert_int_equal(http_multi_connections(kube_client_http(t->c)), 2);
    got_cb(res, arg);
    if (t->ngot == 1) {
        assert_int_equal(kube_get(t->c, &cms, "a", NULL, idle_got_cb, t, NULL, NULL), 0);
    } else if (t->ngot == 2) {
        /* Both on one connection; the server now closes it, idle in the client's pool. */
        assert_int_equal(http_multi_connections(kube_client_http(t->c)), 1);
        while (t->srv.conns != NULL && !t->srv.conns->closing)
            fake_conn_close(t->srv.conns);
        idle_turns = 0;
        idle_window = true;
        uv_timer_start(&t->later, idle_window_end, 100, 0);
    }
}

/* Active, referenced poll handles on the loop: the transport's hold on it (the fake
 * server's handles are TCP ones). */
static void count_held_polls(uv_handle_t *h, void *arg)
{
    if (h->type == UV_POLL && uv_is_active(h) && uv_has_ref(h))
        (*(int *)arg)++;
}

static int held_polls(uv_loop_t *loop)
{
    int n = 0;
    uv_walk(loop, count_held_polls, &n);
    return n;
}

static int polls_while_running = -1;
static void hold_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    /* The request is in flight: the transport holds the loop. */
    polls_while_running = held_polls(&t->loop);
    verbs_handler(s, c, r);
}

static void hold_got_cb(const struct kube_result *res, void *arg)
{
    struct t *t = arg;
    /* Answered: its connection idles in the pool and no longer holds the loop, so a loop
     * run until nothing is left (UV_RUN_DEFAULT) ends once the owner's own handles do. */
    assert_int_equal(held_polls(&t->loop), 0);
    got_cb(res, arg);
}

static void test_idle_connection_does_not_hold_loop(void **state)
{
    struct t t;
    struct kube_client_opts o = {.qps = -1};
    polls_while_running = -1;
    setup_t(&t, hold_handler, &o);
    assert_int_equal(held_polls(&t.loop), 0);
    t.want = 1;
    assert_int_equal(kube_get(t.c, &cms, "a", NULL, hold_got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    assert_int_equal(t.got[0].status, 200);
    assert_int_equal(polls_while_running, 1);
}

static void test_idle_connection_closed_by_server(void **state)
{
    struct t t;
    struct kube_client_opts o = {.qps = -1};
    uv_check_t check;
    setup_t(&t, verbs_handler, &o);
    uv_check_init(&t.loop, &check);
    uv_check_start(&check, idle_check_cb);
    uv_unref((uv_handle_t *)&check);
    t.want = 3;
    assert_int_equal(kube_get(t.c, &cms, "a", NULL, idle_got_cb, &t, NULL, NULL), 0);
    uv_run(&t.loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&check, NULL);
    run_t(&t);
    for (int i = 0; i < 3; i++)
        assert_int_equal(t.got[i].status, 200);
    assert_false(idle_window);
}

/* The observer hears every request with its verb, resource (and subresource) and status. */
static void observe_cb(const char *verb, const char *resource, const struct kube_result *res,
                       uint64_t ms, void *arg)
{
    struct t *t = arg;
    size_t n = strlen(t->events);
    snprintf(t->events + n, sizeof(t->events) - n, "%s %s %ld%s;", verb, resource,
             res->error ? 0L : res->status, kube_result_ns_terminating(res) ? " terminating" : "");
}

/* A namespace being deleted refuses creates with 403 (admission); RBAC refuses with 403. */
static void forbid_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    record(t, r);
    if (strcmp(r->method, "POST") == 0)
        fake_status(c, 403, "Forbidden",
                    "configmaps \\\"a\\\" is forbidden: unable to create new content in "
                    "namespace ns1 because it is being terminated");
    else
        fake_status(c, 403, "Forbidden",
                    "configmaps \\\"a\\\" is forbidden: User \\\"u\\\" cannot get resource "
                    "\\\"configmaps\\\" in API group \\\"\\\" in the namespace \\\"ns1\\\"");
}

/* The observer tells a write refused because its namespace is being deleted from an RBAC
 * refusal, both 403 Forbidden. */
static void test_observer_terminating(void **state)
{
    struct t t;
    struct kube_client_opts o = {0};
    json_t *obj = json_pack("{s:s}", "kind", "ConfigMap");
    o.observe_cb = observe_cb;
    o.cb_arg = &t;
    setup_t(&t, forbid_handler, &o);
    t.want = 2;
    assert_int_equal(kube_create(t.c, &cms, obj, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_get(t.c, &cms, "a", NULL, got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    assert_string_equal(t.events, "CREATE configmaps 403 terminating;GET configmaps 403;");
    json_decref(obj);
}

/* The predicate alone: only a 403 that says so. */
static void test_ns_terminating(void **state)
{
    const char *m = "events is forbidden: unable to create new content in namespace x because "
                    "it is being terminated";
    struct kube_result yes = {.status = 403, .reason = "Forbidden", .message = m};
    struct kube_result other = {.status = 404, .reason = "NotFound", .message = m};
    struct kube_result rbac = {.status = 403, .reason = "Forbidden", .message = "forbidden"};
    struct kube_result none = {.status = 403, .reason = "Forbidden"};
    struct kube_result failed = {.error = KUBE_ECONN, .message = m};
    assert_true(kube_result_ns_terminating(&yes));
    assert_false(kube_result_ns_terminating(&other));
    assert_false(kube_result_ns_terminating(&rbac));
    assert_false(kube_result_ns_terminating(&none));
    assert_false(kube_result_ns_terminating(&failed));
}

static void test_observer(void **state)
{
    struct t t;
    struct kube_client_opts o = {0};
    json_t *patch = json_pack("{s:{s:i}}", "status", "hosts", 3);
    json_t *obj = json_pack("{s:s}", "kind", "ConfigMap");
    o.observe_cb = observe_cb;
    o.cb_arg = &t;
    setup_t(&t, verbs_handler, &o);
    t.want = 4;
    assert_int_equal(kube_get(t.c, &cms, "a", NULL, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_merge_patch(t.c, &bps, "p", "status", patch, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_create(t.c, &cms, obj, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_delete(t.c, &cms, "a", NULL, got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    assert_string_equal(t.events, "GET configmaps 200;PATCH backuppolicies/status 200;"
                                  "CREATE configmaps 409;DELETE configmaps 200;");
    json_decref(patch);
    json_decref(obj);
}

/* ---- watches ---- */

#define EV(type, name, rv)                                                                         \
    "{\"type\":\"" type "\",\"object\":{\"metadata\":{\"name\":\"" name                            \
    "\",\"namespace\":\"ns1\",\"resourceVersion\":\"" rv "\"}}}\n"

static void watch_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    char q[64];
    record(t, r);
    if (strcmp(fake_query(r, "watch", q, sizeof(q)), "1") != 0) {
        fake_respond(c, 200, "{\"ok\":1}");
        return;
    }
    fake_query(r, "resourceVersion", q, sizeof(q));
    if (strcmp(q, "old") == 0) {
        fake_status(c, 410, "Expired", "too old resource version: 1 (50)");
        return;
    }
    fake_stream_begin(c, 200);
    if (strcmp(q, "toolong") == 0) {
        char big[200];
        memset(big, 'x', sizeof(big));
        fake_stream_write(c, big, sizeof(big));
        fake_stream_end(c);
        return;
    }
    if (strcmp(q, "garbage") == 0) {
        fake_stream_puts(c, "{\"type\":\"ADDED\"}\n");
        fake_stream_end(c);
        return;
    }
    /* Three events cut across chunk boundaries, a bookmark, then the normal end. */
    const char all[] = EV("ADDED", "a", "11") EV("MODIFIED", "a", "12") EV("DELETED", "a", "13");
    fake_stream_write(c, all, 10);
    fake_stream_write(c, all + 10, 100);
    fake_stream_write(c, all + 110, sizeof(all) - 1 - 110);
    fake_stream_puts(c, "\n{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":"
                        "\"20\"}}}\r\n");
    if (strcmp(q, "hold") == 0) {
        t->held = c;
        return;
    }
    fake_stream_end(c);
}

static void event_cb(const struct kube_watch_event *ev, void *arg)
{
    struct t *t = arg;
    size_t n = strlen(t->events);
    snprintf(t->events + n, sizeof(t->events) - n, "%s %s %s;", kube_event_type_name(ev->type),
             ev->name ? ev->name : "-", ev->resource_version ? ev->resource_version : "-");
    t->nevents++;
    if (t->cancel_after != 0 && t->nevents == t->cancel_after) {
        kube_request_cancel(t->req);
        /* Another request from inside curl's callback: queued, then sent. */
        assert_int_equal(kube_get(t->c, &cms, "after", NULL, got_cb, t, NULL, NULL), 0);
    }
    if (t->close_at_first)
        finish(t);
    /* Closing from inside curl's write callback is deferred until curl returns. */
    if (t->close_on_both && t->ngot == 1 && t->nevents == 4)
        finish(t);
}

static void test_watch_stream(void **state)
{
    struct t t;
    struct kube_list_opts lo = {
        .resource_version = "10", .timeout_seconds = 7, .field_selector = "metadata.name=a"};
    setup_t(&t, watch_handler, NULL);
    t.want = 1;
    assert_int_equal(kube_watch(t.c, &cms, &lo, event_cb, got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    assert_string_equal(t.events, "ADDED a 11;MODIFIED a 12;DELETED a 13;BOOKMARK - 20;");
    assert_int_equal(t.got[0].error, 0);
    assert_int_equal(t.got[0].status, 200);
    assert_string_equal(t.seen[0].target,
                        "/api/v1/namespaces/ns1/configmaps?watch=1&fieldSelector=metadata.name%"
                        "3Da&resourceVersion=10&allowWatchBookmarks=true&timeoutSeconds=7");
}

static void test_watch_failures(void **state)
{
    struct t t;
    struct kube_client_opts o = {.max_line_bytes = 100};
    struct kube_list_opts old = {.resource_version = "old"};
    struct kube_list_opts toolong = {.resource_version = "toolong"};
    struct kube_list_opts garbage = {.resource_version = "garbage"};
    setup_t(&t, watch_handler, &o);
    t.want = 3;
    assert_int_equal(kube_watch(t.c, &cms, &old, event_cb, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_watch(t.c, &cms, &toolong, event_cb, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_watch(t.c, &cms, &garbage, event_cb, got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    assert_int_equal(t.nevents, 0);
    int seen = 0;
    for (int i = 0; i < 3; i++) {
        struct got *g = &t.got[i];
        if (g->status == 410) {
            assert_int_equal(g->error, 0);
            assert_string_equal(g->reason, "Expired");
            assert_string_equal(g->message, "too old resource version: 1 (50)");
            seen |= 1;
        } else if (g->error == KUBE_ETOOBIG) {
            assert_string_equal(g->message, "a watch event is longer than 100 bytes");
            seen |= 2;
        } else if (g->error == KUBE_EPROTO) {
            assert_string_equal(g->message, "watch event of type ADDED has no \"object\"");
            seen |= 4;
        }
    }
    assert_int_equal(seen, 7);
}

static void test_watch_cancel_inside_callback(void **state)
{
    struct t t;
    struct kube_list_opts lo = {.resource_version = "hold"};
    setup_t(&t, watch_handler, NULL);
    t.cancel_after = 2;
    t.want = 1; /* only the GET started from the event callback reports */
    assert_int_equal(kube_watch(t.c, &cms, &lo, event_cb, got_cb, &t, &t.req, NULL), 0);
    run_t(&t);
    /* Nothing after the cancel reached the callback, and the done callback never ran. */
    assert_string_equal(t.events, "ADDED a 11;MODIFIED a 12;");
    assert_int_equal(t.ngot, 1);
    assert_int_equal(t.got[0].status, 200);
}

static void test_close_with_requests_pending(void **state)
{
    struct t t;
    struct kube_client_opts o = {.qps = 0.001, .burst = 1};
    struct kube_list_opts lo = {.resource_version = "hold"};
    setup_t(&t, watch_handler, &o);
    t.close_on_both = true;
    assert_int_equal(kube_get(t.c, &cms, "a", NULL, got_cb, &t, NULL, NULL), 0);
    assert_int_equal(kube_get(t.c, &cms, "b", NULL, got_cb, &t, &t.req, NULL), 0);
    assert_int_equal(kube_get(t.c, &cms, "c", NULL, got_cb, &t, NULL, NULL), 0);
    /* A queued request can be cancelled; the others are cancelled by the close. */
    kube_request_cancel(t.req);
    assert_int_equal(kube_client_queued(t.c), 1);
    assert_int_equal(kube_watch(t.c, &cms, &lo, event_cb, got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    /* "a" was answered; "b" was cancelled; "c" and the open watch went with the close. */
    assert_int_equal(t.ngot, 1);
    assert_int_equal(t.got[0].status, 200);
    assert_int_equal(t.nevents, 4);
}

static void test_close_inside_event_callback(void **state)
{
    struct t t;
    struct kube_list_opts lo = {.resource_version = "hold"};
    setup_t(&t, watch_handler, NULL);
    t.close_at_first = true;
    assert_int_equal(kube_watch(t.c, &cms, &lo, event_cb, got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    /* The other events of the same chunk are not delivered, nor is the end. */
    assert_string_equal(t.events, "ADDED a 11;");
    assert_int_equal(t.ngot, 0);
}

/* ---- the token file ---- */

static char token_path[64];

static void write_token(const char *tok)
{
    FILE *f = fopen(token_path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", tok);
    fclose(f);
}

static void token_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    struct t *t = s->data;
    record(t, r);
    if (strcmp(r->auth, "Bearer tok-new") == 0)
        fake_respond(c, 200, "{}");
    else
        fake_status(c, 401, "Unauthorized", "Unauthorized");
}

static void on_later_get(uv_timer_t *h)
{
    struct t *t = h->data;
    assert_int_equal(kube_get(t->c, &cms, "a", NULL, got_cb, t, NULL, NULL), 0);
}

static void token_got_cb(const struct kube_result *res, void *arg)
{
    struct t *t = arg;
    got_cb(res, arg);
    if (res->status == 401) {
        /* The token rotated; the 401 makes the client read the file again at once. */
        write_token("tok-new");
        uv_timer_start(&t->later, on_later_get, 5, 0);
        t->want = 2;
    }
}

static void test_token_reread_on_401(void **state)
{
    struct t t;
    struct kube_client_opts o = {.token_reload_ms = 3600 * 1000};
    snprintf(token_path, sizeof(token_path), "/tmp/lode-kube-token-XXXXXX");
    int fd = mkstemp(token_path);
    assert_true(fd >= 0);
    close(fd);
    write_token("tok-old");
    setup_t(&t, token_handler, &o);
    kube_client_close(t.c, NULL, NULL);
    t.c = client_for(&t, &o, "inline-token-loses", token_path);
    t.want = 99;
    assert_int_equal(kube_get(t.c, &cms, "a", NULL, token_got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    unlink(token_path);
    assert_int_equal(t.nseen, 2);
    assert_string_equal(t.seen[0].auth, "Bearer tok-old");
    assert_string_equal(t.seen[1].auth, "Bearer tok-new");
    assert_int_equal(t.got[1].status, 200);
}

static void periodic_got_cb(const struct kube_result *res, void *arg);

/* The periodic re-read: a rotated file is picked up; a vanished one keeps the old token. */
static char warnings[512];

static void warn_cb(const char *msg, void *arg)
{
    snprintf(warnings, sizeof(warnings), "%s", msg);
}

static void periodic_handler(struct fake_server *s, struct fake_conn *c, struct fake_req *r)
{
    record(s->data, r);
    fake_respond(c, 200, "{}");
}

static void on_later_next(uv_timer_t *h)
{
    struct t *t = h->data;
    assert_int_equal(kube_get(t->c, &cms, "a", NULL, periodic_got_cb, t, NULL, NULL), 0);
}

/* After each answer: change the file, let 10 reload periods pass, send the next. */
static void periodic_got_cb(const struct kube_result *res, void *arg)
{
    struct t *t = arg;
    got_cb(res, arg);
    if (t->ngot == 1)
        write_token("tok-rotated");
    else if (t->ngot == 2)
        unlink(token_path);
    if (t->ngot < 3)
        uv_timer_start(&t->later, on_later_next, 200, 0);
}

static void test_token_periodic_reread(void **state)
{
    struct t t;
    struct kube_client_opts o = {.token_reload_ms = 20, .warn_cb = warn_cb};
    snprintf(token_path, sizeof(token_path), "/tmp/lode-kube-token-XXXXXX");
    int fd = mkstemp(token_path);
    assert_true(fd >= 0);
    close(fd);
    write_token("tok-first");
    warnings[0] = '\0';
    setup_t(&t, periodic_handler, &o);
    kube_client_close(t.c, NULL, NULL);
    t.c = client_for(&t, &o, NULL, token_path);
    t.want = 3;
    assert_int_equal(kube_get(t.c, &cms, "a", NULL, periodic_got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    assert_int_equal(t.nseen, 3);
    assert_string_equal(t.seen[0].auth, "Bearer tok-first");
    assert_string_equal(t.seen[1].auth, "Bearer tok-rotated");
    assert_string_equal(t.seen[2].auth, "Bearer tok-rotated");
    assert_non_null(strstr(warnings, "token file"));
    assert_non_null(strstr(warnings, "cannot open"));
}

static void test_tls_server_name(void **state)
{
    struct t t;
    struct kube_config cfg = {0};
    struct util_err err = {0};
    char want[64];
    setup_t(&t, verbs_handler, NULL);
    kube_client_close(t.c, NULL, NULL);
    /* Requests name the other host; the connection still goes to the server's. */
    cfg.server = util_asprintf("http://127.0.0.1:%d/", t.srv.port);
    cfg.tls_server_name = util_strdup("api.example");
    cfg.insecure = true;
    if (kube_client_init(&t.loop, &t.c, &cfg, NULL, &err) != 0)
        fail_msg("kube_client_init: %s", err.msg);
    t.want = 1;
    assert_int_equal(kube_get(t.c, &cms, "a", NULL, got_cb, &t, NULL, NULL), 0);
    run_t(&t);
    assert_int_equal(t.got[0].status, 200);
    snprintf(want, sizeof(want), "api.example:%d", t.srv.port);
    assert_string_equal(t.seen[0].host, want);
    assert_string_equal(t.seen[0].target, "/api/v1/namespaces/ns1/configmaps/a");
    /* A name that is not a DNS name is refused. */
    uv_loop_t loop;
    struct kube_client *c;
    free(cfg.tls_server_name);
    cfg.tls_server_name = util_strdup("api.example:1@evil");
    uv_loop_init(&loop);
    assert_int_equal(kube_client_init(&loop, &c, &cfg, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "is not a DNS name"));
    assert_int_equal(uv_loop_close(&loop), 0);
    kube_config_free(&cfg);
}

static void test_init_errors(void **state)
{
    uv_loop_t loop;
    struct kube_client *c;
    struct kube_config cfg = {0};
    struct util_err err = {0};
    uv_loop_init(&loop);
    assert_int_equal(kube_client_init(&loop, &c, &cfg, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "no server"));
    cfg.server = "https://h";
    cfg.token_file = "/nonexistent/token";
    assert_int_equal(kube_client_init(&loop, &c, &cfg, NULL, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/token"));
    assert_null(c);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* A TLS connection keeps its buffers: the requests' SSL_CTX callback takes curl's
 * SSL_MODE_RELEASE_BUFFERS off, and leaves the other modes as they were. */
static void test_tls_keeps_buffers(void **state)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(ctx);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_AUTO_RETRY);
    assert_int_equal(kube__on_ssl_ctx(NULL, ctx, NULL), CURLE_OK);
    assert_int_equal(SSL_CTX_get_mode(ctx) & SSL_MODE_RELEASE_BUFFERS, 0);
    assert_int_not_equal(SSL_CTX_get_mode(ctx) & SSL_MODE_AUTO_RETRY, 0);
    SSL_CTX_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verbs),
        cmocka_unit_test(test_strip_answers),
        cmocka_unit_test(test_unread_answers),
        cmocka_unit_test(test_odd_answers_and_timeout),
        cmocka_unit_test(test_step_loop),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test(test_rate_limit),
        cmocka_unit_test(test_max_in_flight),
        cmocka_unit_test(test_idle_connection_closed_by_server),
        cmocka_unit_test(test_idle_connection_does_not_hold_loop),
        cmocka_unit_test(test_observer),
        cmocka_unit_test(test_observer_terminating),
        cmocka_unit_test(test_ns_terminating),
        cmocka_unit_test(test_watch_stream),
        cmocka_unit_test(test_watch_failures),
        cmocka_unit_test(test_watch_cancel_inside_callback),
        cmocka_unit_test(test_close_with_requests_pending),
        cmocka_unit_test(test_close_inside_event_callback),
        cmocka_unit_test(test_token_reread_on_401),
        cmocka_unit_test(test_token_periodic_reread),
        cmocka_unit_test(test_tls_server_name),
        cmocka_unit_test(test_tls_keeps_buffers),
        cmocka_unit_test(test_init_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
