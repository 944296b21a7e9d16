/*
 * httpd: the controller's tiny HTTP/1.1 server for /metrics, /healthz and /readyz.
 *
 * It serves one GET per connection and closes it (Prometheus and the kubelet's probes
 * open a connection per scrape anyway), so there is no keep-alive or pipelining
 * state. Requests larger than 8 KiB, malformed request lines and connections idle
 * for 10 s are answered or dropped, and at most 64 connections are open at once,
 * so a slow or hostile client cannot hold the loop's memory.
 *
 * Costs: about 8.5 KiB per open connection; nothing between requests.
 */
#ifndef LODE_CTL_HTTPD_H
#define LODE_CTL_HTTPD_H

#include <uv.h>

#include "util/list.h"
#include "util/util.h"

/*
 * Answers one request: fills body and *content_type (a static string) and returns the
 * HTTP status. Runs on the loop; must not block.
 */
typedef int (*ctl_httpd_handler_cb)(void *arg, const char *method, const char *path,
                                    struct util_buf *body, const char **content_type);

struct ctl_httpd {
    uv_loop_t *loop;
    uv_tcp_t server;
    ctl_httpd_handler_cb handler;
    void *arg;
    unsigned nconn;
    struct util_list conns; /* of ctl_httpd_conn, open, for close */
    void (*close_cb)(struct ctl_httpd *s);
    int closing;
    int port; /* the bound port (useful with port 0) */
};

#define CTL_HTTPD_MAX_REQUEST 8192
#define CTL_HTTPD_MAX_CONN    64
#define CTL_HTTPD_IDLE_MS     10000

/* Binds host:port (port 0 picks a free one, read back in s->port) and starts listening. */
int ctl_httpd_init(uv_loop_t *loop, struct ctl_httpd *s, const char *host, int port,
                   ctl_httpd_handler_cb handler, void *arg, struct util_err *err);
/* Closes the listener and every open connection; close_cb runs when all are closed. */
void ctl_httpd_close(struct ctl_httpd *s, void (*close_cb)(struct ctl_httpd *s));

#endif
