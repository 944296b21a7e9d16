/*
 * The shared transport: one CURLM, a uv_poll_t per socket, one uv_timer_t. See http.h.
 *
 * Transfers live on one of three lists: queued (started while inside curl, to be
 * added), active (added to curl), or cancel-pending (cancelled while inside curl, to
 * be removed). multi_after_curl() drains the last two once curl has returned.
 */
#include "http/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

enum { XFER_IDLE, XFER_QUEUED, XFER_ACTIVE, XFER_CANCELLING };

struct xfer_list {
    struct util_list head;
    unsigned n;
};

/*
 * One socket curl asked us to watch. Freed in its close callback.
 *
 * The handle lives exactly as long as curl watches the socket: it is stopped and closed
 * at CURL_POLL_REMOVE, before curl closes the descriptor, so libuv never holds an
 * epoll registration for a descriptor that is gone. That costs an ioctl and a few
 * epoll_ctl calls per request on a pooled connection. Keeping the handle while the
 * connection idled (as an earlier version did) is not safe with curl 7.88: a socket of
 * a connection attempt that has not won yet (cancelled or failed while connecting) is
 * closed with close() after CURL_POLL_REMOVE and without CURLOPT_CLOSESOCKETFUNCTION,
 * and the kept handle then sat on a closed descriptor, or on the next socket the kernel
 * gave the same number: libuv's next epoll_ctl on it failed and libuv aborted.
 */
struct multi_poll {
    uv_poll_t handle;
    curl_socket_t fd;
    struct http_multi *m;
    struct util_list link; /* on the multi's polls */
    int events;            /* what the handle watches now, 0 when stopped */
};

struct http_multi {
    uv_loop_t *loop;
    CURLM *multi;
    CURLSH *share; /* TLS sessions and DNS, for every transfer (one thread: no locks) */
    uv_timer_t timer;
    struct xfer_list queued, active, cancelling;
    struct util_list polls;
    int in_curl;
    unsigned handles;          /* libuv handles not yet closed */
    unsigned long connections; /* sockets opened for connections, ever */
    bool closing, close_requested;
    http_close_cb close_cb;
    void *close_arg;
};

static void list_push(struct xfer_list *l, struct http_xfer *x)
{
    util_list_push_back(&l->head, &x->link);
    l->n++;
}

static void list_unlink(struct xfer_list *l, struct http_xfer *x)
{
    util_list_remove(&x->link);
    l->n--;
}

/* The oldest transfer on l, or NULL. */
static struct http_xfer *list_first(const struct xfer_list *l)
{
    struct util_list *link = util_list_first(&l->head);
    return link == NULL ? NULL : util_list_entry(link, struct http_xfer, link);
}

static struct xfer_list *xfer_list_of(struct http_multi *m, struct http_xfer *x)
{
    switch (x->state) {
    case XFER_QUEUED:
        return &m->queued;
    case XFER_ACTIVE:
        return &m->active;
    case XFER_CANCELLING:
        return &m->cancelling;
    default:
        return NULL;
    }
}

/* Takes x off its list (and out of curl) and reports it done. */
static void xfer_finish(struct http_multi *m, struct http_xfer *x, CURLcode code, bool cancelled)
{
    struct xfer_list *l = xfer_list_of(m, x);
    bool in_curl_handle = x->state == XFER_ACTIVE || x->state == XFER_CANCELLING;
    if (l != NULL)
        list_unlink(l, x);
    if (in_curl_handle)
        curl_multi_remove_handle(m->multi, x->easy);
    x->state = XFER_IDLE;
    x->m = NULL;
    x->done(x, code, cancelled, x->arg);
}

uv_loop_t *http_multi_loop(const struct http_multi *m)
{
    return m->loop;
}

CURLSH *http_multi_share(const struct http_multi *m)
{
    return m->share;
}

unsigned http_multi_running(const struct http_multi *m)
{
    return m->queued.n + m->active.n + m->cancelling.n;
}

unsigned long http_multi_connections(const struct http_multi *m)
{
    return m->connections;
}

/* ---- closing ---- */

static void multi_handle_closed(struct http_multi *m)
{
    if (--m->handles > 0 || !m->closing)
        return;
    http_close_cb cb = m->close_cb;
    void *arg = m->close_arg;
    curl_share_cleanup(m->share);
    free(m);
    curl_global_cleanup();
    if (cb != NULL)
        cb(arg);
}

static void on_poll_closed(uv_handle_t *h)
{
    struct multi_poll *p = h->data;
    struct http_multi *m = p->m;
    free(p);
    multi_handle_closed(m);
}

static void on_timer_closed(uv_handle_t *h)
{
    multi_handle_closed(h->data);
}

/* uv_close stops the handle at once (its epoll registration goes before curl may close the
 * descriptor); a uv_poll_stop before it would only repeat the epoll_ctl, once a request. */
static void poll_close(struct http_multi *m, struct multi_poll *p)
{
    util_list_remove(&p->link);
    uv_close((uv_handle_t *)&p->handle, on_poll_closed);
}

static void multi_do_close(struct http_multi *m)
{
    struct http_xfer *x;
    struct util_list *link;
    /* Owners hear about their transfers first; they may not start new ones. */
    m->closing = true;
    while ((x = list_first(&m->queued)) != NULL)
        xfer_finish(m, x, CURLE_ABORTED_BY_CALLBACK, true);
    while ((x = list_first(&m->cancelling)) != NULL)
        xfer_finish(m, x, CURLE_ABORTED_BY_CALLBACK, true);
    while ((x = list_first(&m->active)) != NULL)
        xfer_finish(m, x, CURLE_ABORTED_BY_CALLBACK, true);
    /* Stop watching before curl closes its pooled connections' sockets. */
    util_list_for_each (link, &m->polls)
        uv_poll_stop(&util_list_entry(link, struct multi_poll, link)->handle);
    curl_multi_cleanup(m->multi);
    m->multi = NULL;
    while ((link = util_list_first(&m->polls)) != NULL)
        poll_close(m, util_list_entry(link, struct multi_poll, link));
    uv_close((uv_handle_t *)&m->timer, on_timer_closed);
}

void http_multi_close(struct http_multi *m, http_close_cb cb, void *arg)
{
    if (m->closing || m->close_requested)
        return;
    m->close_cb = cb;
    m->close_arg = arg;
    if (m->in_curl > 0) {
        m->close_requested = true;
        return;
    }
    multi_do_close(m);
}

/* ---- driving curl ---- */

static void multi_check_done(struct http_multi *m)
{
    CURLMsg *msg;
    int left;
    while (!m->closing && (msg = curl_multi_info_read(m->multi, &left)) != NULL) {
        char *priv = NULL;
        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
        struct http_xfer *x = (struct http_xfer *)priv;
        CURLcode code = msg->data.result;
        xfer_finish(m, x, code, x->state == XFER_CANCELLING);
    }
}

/* What waited for curl to return: cancellations, additions, a close. */
static void multi_after_curl(struct http_multi *m)
{
    struct http_xfer *x;
    if (m->in_curl > 0 || m->closing)
        return;
    if (m->close_requested) {
        multi_do_close(m);
        return;
    }
    while ((x = list_first(&m->cancelling)) != NULL && !m->closing && !m->close_requested)
        xfer_finish(m, x, CURLE_ABORTED_BY_CALLBACK, true);
    while ((x = list_first(&m->queued)) != NULL && !m->closing && !m->close_requested) {
        list_unlink(&m->queued, x);
        x->state = XFER_ACTIVE;
        list_push(&m->active, x);
        m->in_curl++;
        CURLMcode mc = curl_multi_add_handle(m->multi, x->easy);
        m->in_curl--;
        if (mc != CURLM_OK) {
            list_unlink(&m->active, x);
            x->state = XFER_IDLE;
            x->m = NULL;
            x->done(x, CURLE_FAILED_INIT, false, x->arg);
        }
    }
    if (m->close_requested)
        multi_do_close(m);
}

static void multi_socket_action(struct http_multi *m, curl_socket_t fd, int flags)
{
    int running;
    m->in_curl++;
    curl_multi_socket_action(m->multi, fd, flags, &running);
    m->in_curl--;
    if (m->in_curl == 0) {
        /* Done callbacks run outside curl, so they may start and cancel transfers. */
        multi_check_done(m);
        multi_after_curl(m);
    }
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct multi_poll *p = h->data;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    multi_socket_action(p->m, p->fd, flags);
}

static void on_timer(uv_timer_t *t)
{
    multi_socket_action(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static struct multi_poll *poll_of_fd(struct http_multi *m, curl_socket_t fd)
{
    struct util_list *link;
    util_list_for_each (link, &m->polls) {
        struct multi_poll *p = util_list_entry(link, struct multi_poll, link);
        if (p->fd == fd)
            return p;
    }
    return NULL;
}

/*
 * Stops and closes the handle kept for descriptor fd, if any, and tells curl to forget
 * it. A handle can only be found here for a descriptor curl closed without telling us
 * (the number came back for a new socket) or is about to close: either way it must go
 * before libuv touches the descriptor again.
 */
static void poll_forget_fd(struct http_multi *m, curl_socket_t fd)
{
    struct multi_poll *p = poll_of_fd(m, fd);
    if (p == NULL)
        return;
    poll_close(m, p);
    if (m->multi != NULL)
        curl_multi_assign(m->multi, fd, NULL);
}

/* CURLMOPT_SOCKETFUNCTION: start, change or stop watching a socket. */
static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct http_multi *m = userp;
    struct multi_poll *p = socketp;
    int events = 0;

    if (what == CURL_POLL_REMOVE) {
        /* At once: curl may close the descriptor next, without a callback. */
        if (p != NULL) {
            curl_multi_assign(m->multi, fd, NULL);
            poll_close(m, p);
        }
        return 0;
    }
    if (p == NULL) {
        /* A handle left for a descriptor number curl has reused is stale. */
        poll_forget_fd(m, fd);
        p = util_calloc(1, sizeof(*p));
        p->m = m;
        p->fd = fd;
        if (uv_poll_init_socket(m->loop, &p->handle, fd) != 0) {
            free(p);
            return -1;
        }
        p->handle.data = p;
        m->handles++;
        util_list_push_front(&m->polls, &p->link);
        curl_multi_assign(m->multi, fd, p);
    }
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        events |= UV_READABLE;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        events |= UV_WRITABLE;
    /* uv_poll_start unregisters and registers again even for the same events. */
    if (events != p->events) {
        uv_poll_start(&p->handle, events, on_poll);
        p->events = events;
    }
    return 0;
}

/*
 * CURLOPT_OPENSOCKETFUNCTION: a new socket's number may be one curl closed without
 * telling us; a handle still kept for it is dropped before curl asks to watch it.
 */
static curl_socket_t on_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
    struct http_multi *m = clientp;
    curl_socket_t fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
    if (fd != CURL_SOCKET_BAD) {
        poll_forget_fd(m, fd);
        m->connections++;
    }
    return fd;
}

/* CURLOPT_CLOSESOCKETFUNCTION: the handle goes before the descriptor does. */
static int on_close_socket(void *clientp, curl_socket_t fd)
{
    poll_forget_fd(clientp, fd);
    return close(fd);
}

/* CURLMOPT_TIMERFUNCTION: curl wants to be called after timeout_ms (-1: never). */
static int on_curl_timeout_change(CURLM *multi, long timeout_ms, void *userp)
{
    struct http_multi *m = userp;
    if (m->closing)
        return 0;
    if (timeout_ms < 0)
        uv_timer_stop(&m->timer);
    else
        uv_timer_start(&m->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

/* ---- transfers ---- */

int http_xfer_start(struct http_multi *m, struct http_xfer *x, struct util_err *err)
{
    if (m->closing || m->close_requested)
        return util_err_set(err, UTIL_EINVAL, "the HTTP transport is closing");
    if (x->state != XFER_IDLE)
        return util_err_set(err, UTIL_EINVAL, "an HTTP transfer was started twice");
    curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
    curl_easy_setopt(x->easy, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(x->easy, CURLOPT_OPENSOCKETDATA, m);
    curl_easy_setopt(x->easy, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
    curl_easy_setopt(x->easy, CURLOPT_CLOSESOCKETDATA, m);
    x->m = m;
    if (m->in_curl > 0) {
        x->state = XFER_QUEUED;
        list_push(&m->queued, x);
        return 0;
    }
    x->state = XFER_ACTIVE;
    list_push(&m->active, x);
    m->in_curl++;
    CURLMcode mc = curl_multi_add_handle(m->multi, x->easy);
    m->in_curl--;
    if (mc != CURLM_OK) {
        list_unlink(&m->active, x);
        x->state = XFER_IDLE;
        x->m = NULL;
        return util_err_set(err, UTIL_EIO, "curl refused a transfer: %s", curl_multi_strerror(mc));
    }
    /* Adding may have asked for the timer at once; anything queued meanwhile follows. */
    multi_after_curl(m);
    return 0;
}

void http_xfer_cancel(struct http_xfer *x)
{
    struct http_multi *m = x->m;
    if (m == NULL || x->state == XFER_CANCELLING)
        return;
    if (x->state == XFER_QUEUED) {
        xfer_finish(m, x, CURLE_ABORTED_BY_CALLBACK, true);
        return;
    }
    if (m->in_curl > 0) {
        list_unlink(&m->active, x);
        x->state = XFER_CANCELLING;
        list_push(&m->cancelling, x);
        return;
    }
    xfer_finish(m, x, CURLE_ABORTED_BY_CALLBACK, true);
}

void http_xfer_resume(struct http_xfer *x)
{
    struct http_multi *m = x->m;
    if (m == NULL || x->state != XFER_ACTIVE)
        return;
    m->in_curl++;
    curl_easy_pause(x->easy, CURLPAUSE_CONT);
    m->in_curl--;
    if (m->in_curl == 0) {
        multi_check_done(m);
        multi_after_curl(m);
    }
}

int http_multi_init(uv_loop_t *loop, struct http_multi **out, struct util_err *err)
{
    struct http_multi *m;
    *out = NULL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return util_err_set(err, UTIL_EIO, "cannot initialise libcurl");
    m = util_calloc(1, sizeof(*m));
    m->loop = loop;
    util_list_init(&m->queued.head);
    util_list_init(&m->active.head);
    util_list_init(&m->cancelling.head);
    util_list_init(&m->polls);
    m->multi = curl_multi_init();
    if (m->multi == NULL) {
        free(m);
        curl_global_cleanup();
        return util_err_set(err, UTIL_EIO, "cannot create a curl multi handle");
    }
    m->share = curl_share_init();
    if (m->share != NULL) {
        curl_share_setopt(m->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
        curl_share_setopt(m->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    }
    curl_multi_setopt(m->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(m->multi, CURLMOPT_SOCKETDATA, m);
    curl_multi_setopt(m->multi, CURLMOPT_TIMERFUNCTION, on_curl_timeout_change);
    curl_multi_setopt(m->multi, CURLMOPT_TIMERDATA, m);
    uv_timer_init(loop, &m->timer);
    m->timer.data = m;
    m->handles = 1;
    *out = m;
    return 0;
}
