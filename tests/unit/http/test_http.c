/*
 * The transport against real listeners on 127.0.0.1: one that accepts and never
 * answers, one whose queue is full so that connecting never ends. Transfers are
 * cancelled while connecting and while writing their request, 300 times in a row,
 * each started from the previous one's done callback, so that the descriptor numbers
 * curl closes (some of them without CURLOPT_CLOSESOCKETFUNCTION) come back at once for
 * its next socket. What the transport keeps for a descriptor must not outlive it: a
 * registration or a record left for a number that comes back leaves the next socket
 * with that number unwatched, and the transfer hangs until the watchdog fails the test
 * (or, with libuv's per-socket handles this transport once used, libuv aborted on an
 * epoll_ctl for a descriptor epoll no longer knew).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "http/http.h"

enum {
    ROUNDS = 300,
    MAX_HELD = 64, /* accepted connections kept open (never answered) at once */
    BODY = 1 << 20,
};

/* Where in a transfer's life the test cancels it. */
enum when {
    AT_START,     /* right after http_xfer_start, before the loop ran */
    AT_TIMER,     /* from a 0 ms timer: curl has just asked for its socket */
    AT_CHECK,     /* after a few loop turns: connected, the request being written */
    AT_READ,      /* from the read callback, inside curl: the first body bytes */
    AT_PROGRESS,  /* from the progress callback, inside curl */
    AT_AFTER_ACC, /* from the loop turn in which the server accepted it */
    WHENS,
};

struct t {
    uv_loop_t loop;
    uv_timer_t watchdog, soon;
    uv_timer_t tick; /* keeps the loop turning while no socket speaks */
    uv_check_t check;
    uv_poll_t server;
    int lfd;
    unsigned short port;
    int full_fd;   /* a listener whose queue is full: connects stay in progress */
    int filler[4]; /* the connections that fill it */
    unsigned short full_port;
    int held[MAX_HELD];
    int nheld;
    unsigned accepted;
    unsigned long connections; /* the multi's count, read before it closes */
    struct http_multi *m;
    struct http_xfer x;
    CURL *easy;
    int round;
    enum when when;
    int turns; /* loop turns since the transfer started */
    bool cancelled_once;
    int done_calls, cancelled_calls;
    bool closed;
    char body[4096];
    struct curl_slist *headers;
};

static void on_watchdog(uv_timer_t *h)
{
    struct t *t = h->data;
    print_message("round %d when %d turns %d cancelled %d accepted %u\n", t->round, (int)t->when,
                  t->turns, (int)t->cancelled_once, t->accepted);
    fail_msg("the test did not finish within its time");
}

static void server_drop_held(struct t *t)
{
    for (int i = 0; i < t->nheld; i++)
        close(t->held[i]);
    t->nheld = 0;
}

/* Accepts every connection and keeps it, unanswered, until the round ends. */
static void on_server(uv_poll_t *h, int status, int events)
{
    struct t *t = h->data;
    int fd;
    while ((fd = accept(t->lfd, NULL, NULL)) >= 0) {
        t->accepted++;
        if (t->nheld == MAX_HELD)
            server_drop_held(t);
        t->held[t->nheld++] = fd;
        if (t->when == AT_AFTER_ACC && !t->cancelled_once && t->easy != NULL) {
            t->cancelled_once = true;
            http_xfer_cancel(&t->x);
        }
    }
}

static void cancel_now(struct t *t)
{
    if (t->cancelled_once || t->easy == NULL)
        return;
    t->cancelled_once = true;
    http_xfer_cancel(&t->x);
}

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
    struct t *t = arg;
    size_t len = size * n < sizeof(t->body) ? size * n : sizeof(t->body);
    if (t->when == AT_READ)
        cancel_now(t);
    memcpy(buf, t->body, len);
    return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct t *t = arg;
    if (t->when == AT_PROGRESS && t->turns >= 1)
        cancel_now(t);
    return 0;
}

static void on_soon(uv_timer_t *h)
{
    struct t *t = h->data;
    if (t->when == AT_TIMER)
        cancel_now(t);
}

static void on_tick(uv_timer_t *h)
{
}

static void on_check(uv_check_t *h)
{
    struct t *t = h->data;
    if (t->easy == NULL)
        return;
    t->turns++;
    /* Cancels on the first or second turn: connecting, or (to the listener that
     * accepts) connected and writing. */
    if (t->when == AT_CHECK && t->turns >= 1 + t->round % 2)
        cancel_now(t);
    /* Nothing else may leave a transfer hanging: the watchdog would fail the test. */
    if (t->turns > 1000)
        cancel_now(t);
}

static void start_round(struct t *t);

static void on_multi_closed(void *arg)
{
    struct t *t = arg;
    t->closed = true;
}

static void finish(struct t *t)
{
    t->connections = http_multi_connections(t->m);
    http_multi_close(t->m, on_multi_closed, t);
    uv_poll_stop(&t->server);
    uv_close((uv_handle_t *)&t->server, NULL);
    uv_close((uv_handle_t *)&t->watchdog, NULL);
    uv_close((uv_handle_t *)&t->soon, NULL);
    uv_close((uv_handle_t *)&t->tick, NULL);
    uv_close((uv_handle_t *)&t->check, NULL);
    server_drop_held(t);
}

static void on_done(struct http_xfer *x, CURLcode code, bool cancelled, void *arg)
{
    struct t *t = arg;
    t->done_calls++;
    if (cancelled)
        t->cancelled_calls++;
    curl_easy_cleanup(t->easy);
    t->easy = NULL;
    /* The next transfer starts from the done callback, as a retry does. */
    if (++t->round < ROUNDS)
        start_round(t);
    else
        finish(t);
}

static void start_round(struct t *t)
{
    char url[64];
    struct util_err err = {0};
    /* Every other run of the phases connects to the full listener. */
    bool full = (t->round / WHENS) % 2 == 1;
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/bucket/key", full ? t->full_port : t->port);
    /* A transfer to the full listener never connects: only the first phases apply. */
    t->when = (enum when)(t->round % (full ? AT_READ : WHENS));
    t->turns = 0;
    t->cancelled_once = false;
    t->easy = curl_easy_init();
    assert_non_null(t->easy);
    curl_easy_setopt(t->easy, CURLOPT_URL, url);
    curl_easy_setopt(t->easy, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(t->easy, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(t->easy, CURLOPT_INFILESIZE_LARGE, (curl_off_t)BODY);
    curl_easy_setopt(t->easy, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(t->easy, CURLOPT_READDATA, t);
    curl_easy_setopt(t->easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(t->easy, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(t->easy, CURLOPT_XFERINFODATA, t);
    curl_easy_setopt(t->easy, CURLOPT_SHARE, http_multi_share(t->m));
    /* The body follows the headers at once: no wait for a 100 Continue. */
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
    t->x = (struct http_xfer){.easy = t->easy, .done = on_done, .arg = t};
    assert_int_equal(http_xfer_start(t->m, &t->x, &err), 0);
    if (t->when == AT_START)
        cancel_now(t);
    else if (t->when == AT_TIMER)
        uv_timer_start(&t->soon, on_soon, 0, 0);
}

static void listen_local(struct t *t)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    t->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(t->lfd >= 0);
    assert_int_equal(bind(t->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(t->lfd, 128), 0);
    assert_int_equal(getsockname(t->lfd, (struct sockaddr *)&sa, &len), 0);
    t->port = ntohs(sa.sin_port);
    assert_int_equal(uv_poll_init_socket(&t->loop, &t->server, t->lfd), 0);
    t->server.data = t;
    assert_int_equal(uv_poll_start(&t->server, UV_READABLE, on_server), 0);
}

/*
 * A listener with a backlog of one, filled by connections nobody accepts: the kernel
 * drops further handshakes, so a transfer to it stays in its connect phase.
 */
static void listen_full(struct t *t)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    t->full_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(t->full_fd >= 0);
    assert_int_equal(bind(t->full_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(t->full_fd, 0), 0);
    assert_int_equal(getsockname(t->full_fd, (struct sockaddr *)&sa, &len), 0);
    t->full_port = ntohs(sa.sin_port);
    for (int i = 0; i < 4; i++) {
        t->filler[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(t->filler[i] >= 0);
        connect(t->filler[i], (struct sockaddr *)&sa, sizeof(sa)); /* EINPROGRESS or done */
    }
}

/* Every phase of a transfer's start, cancelled ROUNDS times in a row, never aborts. */
static void test_cancel_while_connecting(void **state)
{
    struct t *t = calloc(1, sizeof(*t));
    struct util_err err = {0};
    assert_non_null(t);
    memset(t->body, 'b', sizeof(t->body));
    t->headers = curl_slist_append(NULL, "Expect:");
    assert_int_equal(uv_loop_init(&t->loop), 0);
    listen_local(t);
    listen_full(t);
    assert_int_equal(http_multi_init(&t->loop, &t->m, &err), 0);
    uv_timer_init(&t->loop, &t->watchdog);
    t->watchdog.data = t;
    uv_timer_start(&t->watchdog, on_watchdog, 30000, 0);
    uv_timer_init(&t->loop, &t->soon);
    t->soon.data = t;
    /* A phase counted in loop turns must not wait for curl's own timers (200 ms, then the
     * 5 s connect timeout) while a connection to the full listener says nothing: the
     * transport's sockets are all behind one descriptor, and nothing else wakes the loop. */
    uv_timer_init(&t->loop, &t->tick);
    t->tick.data = t;
    uv_timer_start(&t->tick, on_tick, 1, 1);
    uv_check_init(&t->loop, &t->check);
    t->check.data = t;
    uv_check_start(&t->check, on_check);

    start_round(t);
    uv_run(&t->loop, UV_RUN_DEFAULT);

    assert_true(t->closed);
    assert_int_equal(t->round, ROUNDS);
    assert_int_equal(t->done_calls, ROUNDS);
    assert_int_equal(t->cancelled_calls, ROUNDS);
    /* The rounds that cancel after connecting did connect, each on a socket the multi
     * counted (a cancelled transfer's connection is not kept, so none was reused). */
    assert_true(t->accepted > 0);
    assert_true(t->connections >= (unsigned long)t->accepted);
    assert_true(t->connections <= ROUNDS);
    close(t->lfd);
    close(t->full_fd);
    for (int i = 0; i < 4; i++)
        close(t->filler[i]);
    curl_slist_free_all(t->headers);
    assert_int_equal(uv_loop_close(&t->loop), 0);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cancel_while_connecting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
