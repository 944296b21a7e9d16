/*
 * Connection reuse across clients on one transport, as the controller makes them: a new
 * client per forget after a backup (controller/prune.c), each with its own copy of the
 * repository's configuration and CA, on the controller's shared http_multi. Sequential
 * forgets must share one pooled connection; a new TCP and TLS handshake per request was
 * the controller's largest single CPU cost at a slot of 1,000 runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "http/http.h"
#include "s3/s3.h"

struct reuse_step {
    bool done;
    int error;
    unsigned requests;
    size_t listed;
};

static void on_step(const struct s3_result *res, void *arg)
{
    struct reuse_step *st = arg;
    st->done = true;
    st->error = res->error;
    st->requests += res->requests;
}

static int on_listed(const struct s3_object *obj, void *arg)
{
    (void)obj;
    ((struct reuse_step *)arg)->listed++;
    return 0;
}

static void on_deleted(const char *key, int error, const char *code, const char *message, void *arg)
{
    (void)key, (void)code, (void)message;
    if (error != 0)
        ((struct reuse_step *)arg)->error = error;
}

static void on_closed(void *arg)
{
    *(bool *)arg = true;
}

/* Runs the loop until the step is done; the client stops the loop after each result. */
static int wait_step(uv_loop_t *loop, int rc, struct reuse_step *st)
{
    while (rc == 0 && !st->done)
        uv_run(loop, UV_RUN_ONCE);
    return rc != 0 ? rc : st->error;
}

/*
 * One forget's requests with a client of its own: a listing, a DeleteObjects and a HEAD,
 * then the client closed. Adds the requests sent to *requests; returns the first error.
 */
static int one_forget(uv_loop_t *loop, struct http_multi *m, int round, unsigned *requests)
{
    struct s3_config cfg;
    struct s3_client *c;
    struct util_err err;
    struct s3_client_opts co = {.http = m, .step_loop = true, .user_agent = "lodestore-e2e"};
    struct reuse_step list = {0}, del = {0}, head = {0};
    bool closed = false;
    char gone[64];
    const char *keys[1] = {gone};
    direct_config(&cfg, run_id);
    int rc = s3_client_init(loop, &c, &cfg, &co, &err);
    s3_config_free(&cfg);
    if (rc != 0)
        return rc;
    snprintf(gone, sizeof(gone), "reuse/gone-%d", round);
    rc = wait_step(loop, s3_list(c, "reuse/", NULL, on_listed, on_step, &list, NULL, &err), &list);
    if (rc == 0)
        rc = wait_step(
            loop, s3_delete_objects(c, keys, 1, NULL, on_deleted, on_step, &del, NULL, &err), &del);
    if (rc == 0)
        rc = wait_step(loop, s3_head(c, "reuse/kept", NULL, on_step, &head, NULL, &err), &head);
    if (rc == 0 && list.listed == 0)
        rc = -1; /* the kept object must be listed */
    *requests += list.requests + del.requests + head.requests;
    s3_client_close(c, on_closed, &closed);
    while (!closed && uv_run(loop, UV_RUN_ONCE) != 0)
        ;
    return rc;
}

void test_connection_reuse(void)
{
    enum { ROUNDS = 6 };
    uv_loop_t loop;
    struct http_multi *m;
    struct util_err err;
    bool http_closed = false;
    unsigned requests = 0;
    int rc = 0;
    uv_loop_init(&loop);
    if (http_multi_init(&loop, &m, &err) != 0) {
        fprintf(stderr, "s3_e2e: %s\n", err.msg);
        exit(2);
    }
    struct s3_sync *s = open_direct(run_id, NULL);
    struct s3_body b = {.data = "kept", .len = 4};
    if (s3_sync_put(s, "reuse/kept", &b, NULL, NULL, &err) != 0) {
        fprintf(stderr, "s3_e2e: %s\n", err.msg);
        exit(2);
    }
    s3_sync_close(s);

    rc = one_forget(&loop, m, 0, &requests);
    unsigned long first = http_multi_connections(m);
    unsigned first_requests = requests;
    for (int i = 1; i < ROUNDS && rc == 0; i++)
        rc = one_forget(&loop, m, i, &requests);
    unsigned long later = http_multi_connections(m) - first;
    CHECK(rc == 0 && first >= 1 && first <= first_requests && requests >= 3 * ROUNDS,
          "%d forgets, a client each on one transport: every request answered (%u requests, "
          "error %d)",
          ROUNDS, requests, rc);
    CHECK(rc == 0 && later == 0,
          "the forgets after the first reuse its connection: %lu new connections for %u "
          "requests (the first opened %lu for %u)",
          later, requests - first_requests, first, first_requests);

    http_multi_close(m, on_closed, &http_closed);
    while (!http_closed && uv_run(&loop, UV_RUN_ONCE) != 0)
        ;
    uv_run(&loop, UV_RUN_NOWAIT);
    int lc = uv_loop_close(&loop);
    CHECK(http_closed && lc == 0,
          "the transport closed with its pooled connection: loop empty (%s)",
          lc == 0 ? "yes" : uv_strerror(lc));
}
