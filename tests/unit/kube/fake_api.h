/*
 * A fake API server for the client's tests: plain HTTP/1.1 on 127.0.0.1 on the test's
 * own libuv loop, keep-alive, Content-Length request bodies. A test's handler sees
 * each request and answers it whole (fake_respond), as a chunked stream
 * (fake_stream_*) that it can feed later, or not at all (to test timeouts).
 * Everything is static: each test file that includes this gets its own copy.
 */
#ifndef LODE_TEST_FAKE_API_H
#define LODE_TEST_FAKE_API_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <uv.h>

#include "util/util.h"

struct fake_server;
struct fake_conn;

struct fake_req {
    char method[16];
    char target[4096]; /* path and query, as sent */
    char accept[256];
    char content_type[128];
    char auth[512];
    char host[256];
    char *body; /* NUL-terminated, owned by the connection until the next request */
    size_t body_len;
};

typedef void (*fake_handler)(struct fake_server *s, struct fake_conn *c, struct fake_req *r);

struct fake_conn {
    uv_tcp_t tcp;
    struct fake_server *srv;
    struct util_buf in;
    struct fake_req req;
    bool closing;
    struct fake_conn *next;
};

struct fake_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    int port;
    fake_handler handler;
    void *data;
    struct fake_conn *conns;
    int requests;
    int open_handles;
};

static inline void fake_on_closed(uv_handle_t *h)
{
    struct fake_server *s = h->data;
    if (h != (uv_handle_t *)&s->listener) {
        struct fake_conn *c = (struct fake_conn *)h;
        util_buf_free(&c->in);
        free(c->req.body);
        free(c);
    }
    s->open_handles--;
}

static inline void fake_conn_close(struct fake_conn *c)
{
    struct fake_server *s = c->srv;
    if (c->closing)
        return;
    c->closing = true;
    for (struct fake_conn **p = &s->conns; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    c->tcp.data = s;
    uv_close((uv_handle_t *)&c->tcp, fake_on_closed);
}

static inline void fake_on_written(uv_write_t *w, int status)
{
    free(w->data);
    free(w);
}

static inline void fake_write(struct fake_conn *c, const char *data, size_t len)
{
    if (c->closing || len == 0)
        return;
    uv_write_t *w = util_malloc(sizeof(*w));
    char *copy = util_malloc(len);
    memcpy(copy, data, len);
    w->data = copy;
    uv_buf_t b = uv_buf_init(copy, (unsigned)len);
    if (uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, fake_on_written) != 0) {
        free(copy);
        free(w);
    }
}

static inline const char *fake_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    default:
        return "Status";
    }
}

static inline void fake_respond(struct fake_conn *c, int status, const char *body)
{
    char head[256];
    size_t len = strlen(body);
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: "
                     "%zu\r\n\r\n",
                     status, fake_reason(status), len);
    fake_write(c, head, (size_t)n);
    fake_write(c, body, len);
}

/* A Status body, as the API server sends with errors. */
static inline void fake_status(struct fake_conn *c, int status, const char *reason,
                               const char *message)
{
    char *body = util_asprintf("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                               "\"status\":\"Failure\",\"message\":\"%s\",\"reason\":\"%s\","
                               "\"code\":%d}",
                               message, reason, status);
    fake_respond(c, status, body);
    free(body);
}

static inline void fake_stream_begin(struct fake_conn *c, int status)
{
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nTransfer-Encoding: "
                     "chunked\r\n\r\n",
                     status, fake_reason(status));
    fake_write(c, head, (size_t)n);
}

static inline void fake_stream_write(struct fake_conn *c, const char *data, size_t len)
{
    char head[32];
    int n = snprintf(head, sizeof(head), "%zx\r\n", len);
    if (len == 0)
        return;
    fake_write(c, head, (size_t)n);
    fake_write(c, data, len);
    fake_write(c, "\r\n", 2);
}

static inline void fake_stream_puts(struct fake_conn *c, const char *s)
{
    fake_stream_write(c, s, strlen(s));
}

static inline void fake_stream_end(struct fake_conn *c)
{
    fake_write(c, "0\r\n\r\n", 5);
}

/* Copies a header's value if the line is that header. */
static inline void fake_header(const char *line, size_t len, const char *name, char *out,
                               size_t size)
{
    size_t n = strlen(name);
    if (len > n + 1 && strncasecmp(line, name, n) == 0 && line[n] == ':') {
        const char *v = line + n + 1;
        size_t vl = len - n - 1;
        while (vl > 0 && *v == ' ') {
            v++;
            vl--;
        }
        if (vl >= size)
            vl = size - 1;
        memcpy(out, v, vl);
        out[vl] = '\0';
    }
}

/* Parses complete requests out of the input and hands each to the handler. */
static inline void fake_parse(struct fake_conn *c)
{
    for (;;) {
        char *end = c->in.data ? strstr(c->in.data, "\r\n\r\n") : NULL;
        char cl[32] = "0";
        size_t head_len, body_len;
        if (end == NULL)
            return;
        head_len = (size_t)(end - c->in.data) + 4;
        free(c->req.body);
        memset(&c->req, 0, sizeof(c->req));
        char *line = c->in.data, *eol = strstr(line, "\r\n");
        if (sscanf(line, "%15s %4095s", c->req.method, c->req.target) != 2) {
            fake_conn_close(c);
            return;
        }
        for (line = eol + 2; line < end; line = eol + 2) {
            eol = strstr(line, "\r\n");
            size_t ll = (size_t)(eol - line);
            fake_header(line, ll, "Accept", c->req.accept, sizeof(c->req.accept));
            fake_header(line, ll, "Content-Type", c->req.content_type, sizeof(c->req.content_type));
            fake_header(line, ll, "Authorization", c->req.auth, sizeof(c->req.auth));
            fake_header(line, ll, "Host", c->req.host, sizeof(c->req.host));
            fake_header(line, ll, "Content-Length", cl, sizeof(cl));
        }
        body_len = strtoul(cl, NULL, 10);
        if (c->in.len < head_len + body_len)
            return;
        c->req.body = util_strndup(c->in.data + head_len, body_len);
        c->req.body_len = body_len;
        memmove(c->in.data, c->in.data + head_len + body_len, c->in.len - head_len - body_len);
        c->in.len -= head_len + body_len;
        c->in.data[c->in.len] = '\0';
        c->srv->requests++;
        c->srv->handler(c->srv, c, &c->req);
        if (c->closing)
            return;
    }
}

static inline void fake_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    buf->base = util_malloc(65536);
    buf->len = 65536;
}

static inline void fake_on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct fake_conn *c = st->data;
    if (n > 0) {
        util_buf_append(&c->in, buf->base, (size_t)n);
        fake_parse(c);
    } else if (n < 0) {
        fake_conn_close(c);
    }
    free(buf->base);
}

static inline void fake_on_connection(uv_stream_t *l, int status)
{
    struct fake_server *s = l->data;
    struct fake_conn *c;
    if (status < 0)
        return;
    c = util_calloc(1, sizeof(*c));
    c->srv = s;
    util_buf_init(&c->in);
    uv_tcp_init(s->loop, &c->tcp);
    s->open_handles++;
    c->tcp.data = c;
    if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0) {
        fake_conn_close(c);
        return;
    }
    c->next = s->conns;
    s->conns = c;
    uv_read_start((uv_stream_t *)&c->tcp, fake_alloc, fake_on_read);
}

static inline int fake_start(struct fake_server *s, uv_loop_t *loop, fake_handler h, void *data)
{
    struct sockaddr_in addr;
    struct sockaddr_storage name;
    int namelen = sizeof(name);
    memset(s, 0, sizeof(*s));
    s->loop = loop;
    s->handler = h;
    s->data = data;
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    s->open_handles = 1;
    uv_ip4_addr("127.0.0.1", 0, &addr);
    if (uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0) != 0 ||
        uv_listen((uv_stream_t *)&s->listener, 16, fake_on_connection) != 0)
        return -1;
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&name, &namelen);
    s->port = ntohs(((struct sockaddr_in *)&name)->sin_port);
    return 0;
}

static inline void fake_stop(struct fake_server *s)
{
    while (s->conns != NULL)
        fake_conn_close(s->conns);
    if (!uv_is_closing((uv_handle_t *)&s->listener))
        uv_close((uv_handle_t *)&s->listener, fake_on_closed);
}

/* The value of a query parameter in a target, or "" (raw, not decoded). */
static inline const char *fake_query(const struct fake_req *r, const char *key, char *out,
                                     size_t size)
{
    const char *q = strchr(r->target, '?');
    size_t kl = strlen(key);
    out[0] = '\0';
    while (q != NULL) {
        q++;
        if (strncmp(q, key, kl) == 0 && q[kl] == '=') {
            const char *v = q + kl + 1, *e = strchr(v, '&');
            size_t n = e ? (size_t)(e - v) : strlen(v);
            if (n >= size)
                n = size - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return out;
        }
        q = strchr(q, '&');
    }
    return out;
}

/* True if the target's path (before '?') is path. */
static inline bool fake_path_is(const struct fake_req *r, const char *path)
{
    size_t n = strlen(path);
    return strncmp(r->target, path, n) == 0 && (r->target[n] == '\0' || r->target[n] == '?');
}

#endif
