#include "httpd.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

struct ctl_httpd_conn {
    uv_tcp_t tcp;
    uv_timer_t idle;
    uv_write_t write;
    struct ctl_httpd *server;
    struct util_list link; /* on ctl_httpd.conns */
    char req[CTL_HTTPD_MAX_REQUEST];
    size_t len;
    char *resp;
    int handles; /* open handles: the connection is freed when both have closed */
    int answered;
};

static void ctl_httpd_maybe_done(struct ctl_httpd *s)
{
    if (s->closing == 1 && util_list_empty(&s->conns)) {
        s->closing = 2;
        if (s->close_cb != NULL)
            s->close_cb(s);
    }
}

static void ctl_httpd_handle_closed_cb(uv_handle_t *h)
{
    struct ctl_httpd_conn *c = h->data;
    if (--c->handles > 0)
        return;
    struct ctl_httpd *s = c->server;
    util_list_remove(&c->link);
    s->nconn--;
    free(c->resp);
    free(c);
    ctl_httpd_maybe_done(s);
}

static void ctl_httpd_conn_close(struct ctl_httpd_conn *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, ctl_httpd_handle_closed_cb);
    if (!uv_is_closing((uv_handle_t *)&c->idle))
        uv_close((uv_handle_t *)&c->idle, ctl_httpd_handle_closed_cb);
}

static void ctl_httpd_written_cb(uv_write_t *w, int status)
{
    ctl_httpd_conn_close(w->data);
}

static const char *ctl_httpd_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    case 503:
        return "Service Unavailable";
    default:
        return "Internal Server Error";
    }
}

static void ctl_httpd_respond(struct ctl_httpd_conn *c, int status, const char *type,
                              const char *body, size_t body_len)
{
    struct util_buf b;
    uv_buf_t buf;

    c->answered = 1;
    uv_read_stop((uv_stream_t *)&c->tcp);
    util_buf_init(&b);
    util_buf_printf(&b,
                    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                    "Connection: close\r\n\r\n",
                    status, ctl_httpd_reason(status), type, body_len);
    util_buf_append(&b, body, body_len);
    size_t len = b.len;
    c->resp = util_buf_steal(&b);
    buf = uv_buf_init(c->resp, (unsigned)len);
    c->write.data = c;
    if (uv_write(&c->write, (uv_stream_t *)&c->tcp, &buf, 1, ctl_httpd_written_cb) != 0)
        ctl_httpd_conn_close(c);
}

/* One request per connection: scrapers and probes reconnect, and nothing is pipelined. */
static void ctl_httpd_dispatch(struct ctl_httpd_conn *c)
{
    /* Request line: METHOD SP TARGET SP HTTP/1.x CRLF */
    char *eol = memchr(c->req, '\r', c->len);
    char *sp1 = memchr(c->req, ' ', c->len);
    if (eol == NULL || sp1 == NULL || sp1 > eol)
        goto bad;
    char *sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
    if (sp2 == NULL || strncmp(sp2 + 1, "HTTP/1.", 7) != 0)
        goto bad;
    *sp1 = '\0';
    *sp2 = '\0';
    char *path = sp1 + 1;
    char *query = strchr(path, '?');
    if (query != NULL)
        *query = '\0';
    if (strcmp(c->req, "GET") != 0 && strcmp(c->req, "HEAD") != 0) {
        const char msg[] = "only GET is served here\n";
        ctl_httpd_respond(c, 405, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
        return;
    }
    {
        struct util_buf body;
        const char *type = "text/plain; charset=utf-8";
        util_buf_init(&body);
        int status = c->server->handler(c->server->arg, c->req, path, &body, &type);
        if (strcmp(c->req, "HEAD") == 0)
            body.len = 0;
        ctl_httpd_respond(c, status, type, body.data ? body.data : "", body.len);
        util_buf_free(&body);
    }
    return;
bad:
    ctl_httpd_respond(c, 400, "text/plain; charset=utf-8", "bad request\n", 12);
}

static void ctl_httpd_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct ctl_httpd_conn *c = h->data;
    buf->base = c->req + c->len;
    buf->len = sizeof(c->req) - 1 - c->len;
}

static void ctl_httpd_read_cb(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf)
{
    struct ctl_httpd_conn *c = stream->data;
    if (n < 0) {
        ctl_httpd_conn_close(c);
        return;
    }
    c->len += (size_t)n;
    c->req[c->len] = '\0';
    if (strstr(c->req, "\r\n\r\n") != NULL) {
        ctl_httpd_dispatch(c);
    } else if (c->len >= sizeof(c->req) - 1) {
        const char msg[] = "request too large\n";
        ctl_httpd_respond(c, 431, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
    }
}

/* A client that sends nothing is dropped, so a stalled scraper cannot hold a slot for ever. */
static void ctl_httpd_idle_cb(uv_timer_t *t)
{
    ctl_httpd_conn_close(t->data);
}

/* Past CTL_HTTPD_MAX_CONN a connection is accepted and closed, so the backlog never fills. */
static void ctl_httpd_accept_cb(uv_stream_t *server, int status)
{
    struct ctl_httpd *s = server->data;
    if (status != 0 || s->closing)
        return;
    struct ctl_httpd_conn *c = util_calloc(1, sizeof(*c));
    c->server = s;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->idle);
    c->tcp.data = c;
    c->idle.data = c;
    c->handles = 2;
    util_list_push_front(&s->conns, &c->link);
    s->nconn++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 || s->nconn > CTL_HTTPD_MAX_CONN) {
        ctl_httpd_conn_close(c);
        return;
    }
    uv_timer_start(&c->idle, ctl_httpd_idle_cb, CTL_HTTPD_IDLE_MS, 0);
    uv_read_start((uv_stream_t *)&c->tcp, ctl_httpd_alloc_cb, ctl_httpd_read_cb);
}

int ctl_httpd_init(uv_loop_t *loop, struct ctl_httpd *s, const char *host, int port,
                   ctl_httpd_handler_cb handler, void *arg, struct util_err *err)
{
    struct sockaddr_storage addr;
    struct sockaddr_storage bound;
    int len = sizeof(bound);
    int rc;

    memset(s, 0, sizeof(*s));
    s->loop = loop;
    s->handler = handler;
    s->arg = arg;
    util_list_init(&s->conns);
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)&addr) != 0 &&
        uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr) != 0)
        return util_err_set(err, UTIL_EINVAL, "\"%s\" is not an IP address to listen on", host);
    uv_tcp_init(loop, &s->server);
    s->server.data = s;
    rc = uv_tcp_bind(&s->server, (struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->server, 128, ctl_httpd_accept_cb);
    if (rc != 0) {
        uv_close((uv_handle_t *)&s->server, NULL);
        return util_err_set(err, UTIL_EIO, "cannot listen on %s:%d: %s", host, port,
                            uv_strerror(rc));
    }
    uv_tcp_getsockname(&s->server, (struct sockaddr *)&bound, &len);
    s->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    return 0;
}

static void ctl_httpd_server_closed_cb(uv_handle_t *h)
{
    struct ctl_httpd *s = h->data;
    s->closing = 1;
    ctl_httpd_maybe_done(s);
}

void ctl_httpd_close(struct ctl_httpd *s, void (*close_cb)(struct ctl_httpd *s))
{
    s->close_cb = close_cb;
    s->closing = 3; /* listener closing: maybe_done waits for it */
    struct util_list *l, *tmp;
    util_list_for_each_safe (l, tmp, &s->conns) {
        ctl_httpd_conn_close(util_list_entry(l, struct ctl_httpd_conn, link));
    }
    uv_close((uv_handle_t *)&s->server, ctl_httpd_server_closed_cb);
}
