/*
 * The metrics and probe server over real TCP on 127.0.0.1: a client written with
 * libuv on the same loop sends raw requests and reads the whole response.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "httpd.h"

struct client {
    uv_tcp_t tcp;
    uv_connect_t connect;
    uv_write_t write;
    const char *request;
    size_t request_len;
    struct util_buf response;
    char chunk[4096];
    int done;
};

static int handler(void *arg, const char *method, const char *path, struct util_buf *body,
                   const char **content_type)
{
    int *calls = arg;
    (*calls)++;
    if (strcmp(path, "/healthz") == 0) {
        util_buf_puts(body, "ok\n");
        return 200;
    }
    if (strcmp(path, "/metrics") == 0) {
        *content_type = "text/plain; version=0.0.4";
        util_buf_puts(body, "lodestore_up 1\n");
        return 200;
    }
    util_buf_puts(body, "not found\n");
    return 404;
}

static void client_closed_cb(uv_handle_t *h)
{
    struct client *c = h->data;
    c->done = 1;
}

static void client_alloc_cb(uv_handle_t *h, size_t n, uv_buf_t *buf)
{
    struct client *c = h->data;
    buf->base = c->chunk;
    buf->len = sizeof(c->chunk);
}

static void client_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct client *c = s->data;
    if (n > 0) {
        util_buf_append(&c->response, buf->base, (size_t)n);
        return;
    }
    if (n < 0)
        uv_close((uv_handle_t *)&c->tcp, client_closed_cb);
}

static void client_written_cb(uv_write_t *w, int status)
{
}

static void client_connected_cb(uv_connect_t *req, int status)
{
    struct client *c = req->data;
    assert_int_equal(status, 0);
    uv_buf_t buf = uv_buf_init((char *)c->request, (unsigned)c->request_len);
    uv_read_start((uv_stream_t *)&c->tcp, client_alloc_cb, client_read_cb);
    if (c->request_len > 0)
        uv_write(&c->write, (uv_stream_t *)&c->tcp, &buf, 1, client_written_cb);
}

/* Sends request to the server and runs the loop until the server closes the connection. */
static char *exchange(uv_loop_t *loop, int port, const char *request, size_t len)
{
    struct client c;
    struct sockaddr_in addr;
    memset(&c, 0, sizeof(c));
    c.request = request;
    c.request_len = len;
    util_buf_init(&c.response);
    uv_tcp_init(loop, &c.tcp);
    c.tcp.data = &c;
    c.connect.data = &c;
    uv_ip4_addr("127.0.0.1", port, &addr);
    assert_int_equal(
        uv_tcp_connect(&c.connect, &c.tcp, (struct sockaddr *)&addr, client_connected_cb), 0);
    while (!c.done)
        uv_run(loop, UV_RUN_ONCE);
    return util_buf_steal(&c.response);
}

static void server_closed_cb(struct ctl_httpd *s)
{
    *(int *)s->arg = -1000;
}

static void test_httpd_routes_and_rejects(void **state)
{
    uv_loop_t loop;
    struct ctl_httpd s;
    struct util_err err = {0};
    int calls = 0;
    char *r;

    uv_loop_init(&loop);
    assert_int_equal(ctl_httpd_init(&loop, &s, "127.0.0.1", 0, handler, &calls, &err), 0);
    assert_true(s.port > 0);

    const char get_health[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    r = exchange(&loop, s.port, get_health, sizeof(get_health) - 1);
    assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(r, "Content-Length: 3\r\n"));
    assert_non_null(strstr(r, "\r\n\r\nok\n"));
    free(r);

    const char get_metrics[] = "GET /metrics?x=1 HTTP/1.0\r\n\r\n";
    r = exchange(&loop, s.port, get_metrics, sizeof(get_metrics) - 1);
    assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4\r\n"));
    assert_non_null(strstr(r, "lodestore_up 1\n"));
    free(r);

    const char missing[] = "GET /nope HTTP/1.1\r\n\r\n";
    r = exchange(&loop, s.port, missing, sizeof(missing) - 1);
    assert_non_null(strstr(r, "HTTP/1.1 404 Not Found"));
    free(r);

    const char head[] = "HEAD /healthz HTTP/1.1\r\n\r\n";
    r = exchange(&loop, s.port, head, sizeof(head) - 1);
    assert_non_null(strstr(r, "HTTP/1.1 200 OK"));
    assert_non_null(strstr(r, "Content-Length: 0\r\n"));
    free(r);
    assert_int_equal(calls, 4);

    /* What the handler never sees. */
    const char post[] = "POST /metrics HTTP/1.1\r\n\r\n";
    r = exchange(&loop, s.port, post, sizeof(post) - 1);
    assert_non_null(strstr(r, "HTTP/1.1 405"));
    free(r);
    const char garbage[] = "hello\r\n\r\n";
    r = exchange(&loop, s.port, garbage, sizeof(garbage) - 1);
    assert_non_null(strstr(r, "HTTP/1.1 400"));
    free(r);
    char *big = malloc(20000);
    memset(big, 'a', 20000);
    memcpy(big, "GET /", 5);
    r = exchange(&loop, s.port, big, 20000);
    assert_non_null(strstr(r, "HTTP/1.1 431"));
    free(r);
    free(big);
    assert_int_equal(calls, 4);

    ctl_httpd_close(&s, server_closed_cb);
    while (calls != -1000)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_httpd_bad_address(void **state)
{
    uv_loop_t loop;
    struct ctl_httpd s;
    struct util_err err = {0};
    uv_loop_init(&loop);
    assert_int_equal(ctl_httpd_init(&loop, &s, "not-an-ip", 0, handler, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "not an IP address"));
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_httpd_routes_and_rejects),
        cmocka_unit_test(test_httpd_bad_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
