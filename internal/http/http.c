/*
 * The shared transport: one CURLM, one epoll set of curl's sockets, one uv_timer_t. See
 * http.h.
 *
 * Transfers live on one of three lists: queued (started while inside curl, to be
 * added), active (added to curl), or cancel-pending (cancelled while inside curl, to
 * be removed). multi_after_curl() drains the last two once curl has returned.
 */
#include "http/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { XFER_IDLE, XFER_QUEUED, XFER_ACTIVE, XFER_CANCELLING };

struct xfer_list {
    struct util_list head;
    unsigned n;
};

/*
 * One socket curl asked us to watch, in the multi's own epoll set; libuv watches that
 * set's descriptor alone (one uv_poll_t for all of curl's sockets).
 *
 * Why not a uv_poll_t per socket: libuv registers and unregisters a handle's descriptor
 * for every change (uv_poll_init checks the descriptor with an epoll_ctl pair and an
 * ioctl, uv_poll_start unregisters before it registers, uv_close unregisters), so a
 * request on a pooled connection cost five epoll_ctl calls, an ioctl and a handle's
 * allocation; and a handle must not outlive its descriptor, which curl 7.88 may close
 * without CURLOPT_CLOSESOCKETFUNCTION (a connection attempt that lost, closed after
 * CURL_POLL_REMOVE): libuv then aborted on its next epoll_ctl. In an epoll set of our
 * own a descriptor's registration goes with the descriptor when it is closed, whoever
 * closes it, and the number is only a key here: a socket that comes back with a
 * number we still hold is forgotten first (on_open_socket).
 *
 * So a socket stays registered after CURL_POLL_REMOVE while its connection idles in
 * curl's pool (curl = false): the next request on it changes nothing (no system call).
 * If the idle socket becomes readable (the server closed it), it is unregistered then,
 * and curl finds the connection dead when it next looks at it.
 */
struct multi_sock {
    curl_socket_t fd;
    struct util_list link; /* on the multi's socks */
    uint32_t events;       /* what the epoll set holds for it: 0 = not registered */
    bool curl;             /* curl watches it (between its first what and CURL_POLL_REMOVE) */
};

struct http_multi {
    uv_loop_t *loop;
    CURLM *multi;
    CURLSH *share; /* TLS sessions and DNS, for every transfer (one thread: no locks) */
    uv_timer_t timer;
    int epfd;            /* the epoll set of curl's sockets */
    uv_poll_t ep;        /* watches epfd */
    unsigned curl_socks; /* sockets curl watches now: ep keeps the loop alive while > 0 */
    struct xfer_list queued, active, cancelling;
    struct util_list socks;
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

static void on_ep_closed(uv_handle_t *h)
{
    struct http_multi *m = h->data;
    close(m->epfd);
    m->epfd = -1;
    multi_handle_closed(m);
}

static void on_timer_closed(uv_handle_t *h)
{
    multi_handle_closed(h->data);
}

/*
 * Whether curl watches k. The loop is kept alive by the sockets curl watches, as it was by
 * a handle per socket: not by connections idling in the pool, nor by the set itself.
 */
static void sock_set_curl(struct http_multi *m, struct multi_sock *k, bool on)
{
    if (k->curl == on)
        return;
    k->curl = on;
    if (on && m->curl_socks++ == 0)
        uv_ref((uv_handle_t *)&m->ep);
    else if (!on && --m->curl_socks == 0)
        uv_unref((uv_handle_t *)&m->ep);
}

static void sock_free(struct http_multi *m, struct multi_sock *k)
{
    sock_set_curl(m, k, false);
    util_list_remove(&k->link);
    free(k);
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
    /* curl closes its pooled connections' sockets; their registrations go with them. */
    curl_multi_cleanup(m->multi);
    m->multi = NULL;
    while ((link = util_list_first(&m->socks)) != NULL)
        sock_free(m, util_list_entry(link, struct multi_sock, link));
    uv_close((uv_handle_t *)&m->ep, on_ep_closed);
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

static struct multi_sock *sock_of_fd(struct http_multi *m, curl_socket_t fd)
{
    struct util_list *link;
    util_list_for_each (link, &m->socks) {
        struct multi_sock *k = util_list_entry(link, struct multi_sock, link);
        if (k->fd == fd)
            return k;
    }
    return NULL;
}

/*
 * Makes the epoll set hold events for k (0: not at all). A descriptor closed behind our
 * back is no longer in the set (ENOENT, EBADF): it is then simply not registered.
 */
static int sock_watch(struct http_multi *m, struct multi_sock *k, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.fd = k->fd};
    int rc = 0;
    if (events == k->events)
        return 0;
    if (events == 0)
        rc = epoll_ctl(m->epfd, EPOLL_CTL_DEL, k->fd, NULL);
    else if (k->events == 0)
        rc = epoll_ctl(m->epfd, EPOLL_CTL_ADD, k->fd, &ev);
    else
        rc = epoll_ctl(m->epfd, EPOLL_CTL_MOD, k->fd, &ev);
    if (rc != 0 && events != 0 && errno == EEXIST)
        rc = epoll_ctl(m->epfd, EPOLL_CTL_MOD, k->fd, &ev);
    else if (rc != 0 && events != 0 && errno == ENOENT)
        rc = epoll_ctl(m->epfd, EPOLL_CTL_ADD, k->fd, &ev);
    k->events = rc == 0 ? events : 0;
    return events == 0 ? 0 : rc;
}

/*
 * Forgets what is kept for descriptor fd, if anything (its registration included), and
 * makes curl forget it too: a socket curl closed without a word may still be in curl's
 * own table with our pointer, which must not reach the callback for the next socket
 * with that number.
 */
static void sock_forget_fd(struct http_multi *m, curl_socket_t fd)
{
    struct multi_sock *k = sock_of_fd(m, fd);
    if (k == NULL)
        return;
    sock_watch(m, k, 0);
    sock_free(m, k);
    if (m->multi != NULL)
        curl_multi_assign(m->multi, fd, NULL);
}

/* The epoll set has events: hands each socket's to curl. */
static void on_ep(uv_poll_t *h, int status, int events)
{
    struct http_multi *m = h->data;
    struct epoll_event evs[32];
    int n = epoll_wait(m->epfd, evs, 32, 0);
    for (int i = 0; i < n && !m->closing && !m->close_requested; i++) {
        /* Looked up again for each: curl may have closed (and its number come back for)
         * a socket while it handled an earlier one. */
        struct multi_sock *k = sock_of_fd(m, evs[i].data.fd);
        int flags;
        if (k == NULL)
            continue;
        if (!k->curl) {
            /* An idle pooled connection spoke (the server closed it): stop listening;
             * curl sees it dead when it looks at it. */
            sock_watch(m, k, 0);
            continue;
        }
        /* As libuv reported them: an error alone (curl then fails the transfer as a
         * socket error, which its owner may retry), a hang-up as whatever was watched. */
        uint32_t e = evs[i].events;
        if (e & EPOLLHUP)
            e |= k->events & (EPOLLIN | EPOLLOUT);
        if (e & EPOLLERR)
            flags = CURL_CSELECT_ERR;
        else
            flags = ((e & EPOLLIN) ? CURL_CSELECT_IN : 0) | ((e & EPOLLOUT) ? CURL_CSELECT_OUT : 0);
        multi_socket_action(m, k->fd, flags);
    }
}

static void on_timer(uv_timer_t *t)
{
    multi_socket_action(t->data, CURL_SOCKET_TIMEOUT, 0);
}

/* CURLMOPT_SOCKETFUNCTION: start, change or stop watching a socket. */
static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct http_multi *m = userp;
    struct multi_sock *k = socketp != NULL ? socketp : sock_of_fd(m, fd);
    uint32_t events = 0;

    if (what == CURL_POLL_REMOVE) {
        /* Kept in the set, for reading only, while its connection idles in the pool. */
        if (k != NULL) {
            sock_set_curl(m, k, false);
            sock_watch(m, k, k->events != 0 ? EPOLLIN : 0);
        }
        return 0;
    }
    if (k == NULL) {
        k = util_calloc(1, sizeof(*k));
        k->fd = fd;
        util_list_push_front(&m->socks, &k->link);
    }
    if (!k->curl) {
        sock_set_curl(m, k, true);
        curl_multi_assign(m->multi, fd, k);
    }
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        events |= EPOLLIN;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        events |= EPOLLOUT;
    return sock_watch(m, k, events) == 0 ? 0 : -1;
}

/*
 * CURLOPT_OPENSOCKETFUNCTION: a new socket's number may be one curl closed without
 * telling us; what is still kept for it is dropped before curl asks to watch it.
 */
static curl_socket_t on_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
    struct http_multi *m = clientp;
    curl_socket_t fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
    if (fd != CURL_SOCKET_BAD) {
        sock_forget_fd(m, fd);
        m->connections++;
    }
    return fd;
}

/* CURLOPT_CLOSESOCKETFUNCTION: what is kept for it goes before the descriptor does. */
static int on_close_socket(void *clientp, curl_socket_t fd)
{
    sock_forget_fd(clientp, fd);
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
    util_list_init(&m->socks);
    m->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (m->epfd < 0) {
        int e = errno;
        free(m);
        curl_global_cleanup();
        return util_err_set(err, UTIL_EIO, "cannot create an epoll set: %s", strerror(e));
    }
    m->multi = curl_multi_init();
    if (m->multi == NULL) {
        close(m->epfd);
        free(m);
        curl_global_cleanup();
        return util_err_set(err, UTIL_EIO, "cannot create a curl multi handle");
    }
    if (uv_poll_init(loop, &m->ep, m->epfd) != 0) {
        curl_multi_cleanup(m->multi);
        close(m->epfd);
        free(m);
        curl_global_cleanup();
        return util_err_set(err, UTIL_EIO, "cannot watch the epoll set with libuv");
    }
    m->ep.data = m;
    /* Cannot fail: libuv refuses only an event bit it does not know. */
    uv_poll_start(&m->ep, UV_READABLE, on_ep);
    uv_unref((uv_handle_t *)&m->ep);
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
    m->handles = 2; /* the timer and ep */
    *out = m;
    return 0;
}
