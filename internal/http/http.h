/*
 * http: one libcurl multi handle driven by one libuv loop, shared by every HTTP user in
 * the process (internal/kube for the API server, internal/s3 for object storage). There
 * is no second HTTP stack: the controller's loop runs one http_multi, and its transfers
 * to Kubernetes and to S3 share its sockets, timer and connection pool.
 *
 * How it works: curl says which sockets to watch and when to call it back (one
 * uv_timer_t). Its sockets go into an epoll set of the multi's own, whose one descriptor
 * libuv watches (one uv_poll_t); when it is readable, the ready sockets are handed to
 * curl_multi_socket_action(). A connection idle in curl's pool stays in the set, so a
 * request on it makes no system call to be watched.
 * Finished transfers are collected with curl_multi_info_read() after each call into
 * curl and handed to their owner's done callback.
 *
 * curl forbids adding or removing easy handles from inside its callbacks (a write,
 * read or header callback), and owners do want to start or cancel transfers from
 * there. So while the multi is inside curl, http_xfer_start() only queues and
 * http_xfer_cancel() only marks; both are carried out as soon as curl has returned.
 *
 * What it costs: an epoll descriptor, 40 bytes per open socket, one timer, and a
 * struct http_xfer embedded in each of the owner's requests; an epoll_wait for each
 * wakeup besides libuv's own. Nothing is copied: the
 * owner configures its CURL easy handle (URL, headers, body, callbacks) itself.
 *
 * Ownership: the owner creates and frees its easy handle and the struct http_xfer
 * around it. Once started, a transfer's done callback runs exactly once: when curl
 * finishes it (cancelled = false, code = curl's result) or after http_xfer_cancel()
 * (cancelled = true). Only after done may the owner free the easy handle. done may run
 * inside http_xfer_cancel() itself when the multi is not inside curl.
 *
 * A loop run one step at a time (uv_run with UV_RUN_ONCE until the owner's own flag is
 * set, as the lode commands wait for an answer) must be stopped by whatever sets the
 * flag: libuv runs timers before it polls, and curl may finish a transfer from its own
 * timer (HTTP/2 does), after which a poll with nothing else due blocks for ever while
 * an idle pooled connection keeps the loop alive. The clients built on this transport
 * (internal/kube, internal/s3) do that for their owners with their step_loop option:
 * it stops the loop after every result they deliver, also those that end without a
 * transfer (an S3 retry given up from its timer).
 */
#ifndef LODE_HTTP_H
#define LODE_HTTP_H

#include <stdbool.h>

#include <curl/curl.h>
#include <uv.h>

#include "util/list.h"
#include "util/util.h"

struct http_multi; /* opaque */
struct http_xfer;

typedef void (*http_done_cb)(struct http_xfer *x, CURLcode code, bool cancelled, void *arg);
typedef void (*http_close_cb)(void *arg);

/* Embedded in the owner's request; fields after easy/done/arg are the multi's. */
struct http_xfer {
    CURL *easy;        /* set by the owner before http_xfer_start */
    http_done_cb done; /* set by the owner */
    void *arg;
    /* private */
    struct http_multi *m;
    struct util_list link; /* on the queued, active or cancel-pending list */
    unsigned state;        /* idle, queued, active, cancel-pending */
};

/* Creates the multi on loop (curl_global_init is reference counted by curl). */
int http_multi_init(uv_loop_t *loop, struct http_multi **out, struct util_err *err);

/*
 * Closes the multi: transfers still running are cancelled (their done callbacks run
 * with cancelled = true), then the sockets and timer close and cb runs (may be NULL);
 * the multi is freed before cb runs. May be called from inside a done callback.
 */
void http_multi_close(struct http_multi *m, http_close_cb cb, void *arg);

uv_loop_t *http_multi_loop(const struct http_multi *m);

/*
 * A share handle for the multi's transfers: TLS sessions and DNS answers. Set it as
 * CURLOPT_SHARE on each easy handle so that a server that closes every connection
 * (versitygw without --keep-alive) costs a resumed TLS handshake, not a full one, per request.
 */
CURLSH *http_multi_share(const struct http_multi *m);

/* Transfers started and not yet done (running or queued to be added). */
unsigned http_multi_running(const struct http_multi *m);

/*
 * Connections opened so far (sockets curl asked for), every user of the multi together.
 * Against a server that keeps connections alive, sequential requests of any number of
 * clients on the multi open one; a count near the request count means a connection per
 * request, each a new TCP and TLS handshake.
 */
unsigned long http_multi_connections(const struct http_multi *m);

/*
 * Starts x (x->easy, x->done set). Returns 0, or an error when the multi is closing or
 * curl refuses the handle (done is then not called).
 */
int http_xfer_start(struct http_multi *m, struct http_xfer *x, struct util_err *err);

/* Cancels a started transfer; done(cancelled = true) follows, now or once curl returns. */
void http_xfer_cancel(struct http_xfer *x);

/* Resumes a transfer paused by CURL_READFUNC_PAUSE or CURL_WRITEFUNC_PAUSE. */
void http_xfer_resume(struct http_xfer *x);

#endif
