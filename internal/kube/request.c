/*
 * The client's requests: the rate-limited and free queues, dispatching on the shared
 * transport (internal/http), the write callback (bodies, and watch streams line by
 * line) and completion into a struct kube_result. client.c says why a request is
 * freed only in its transfer's done callback.
 */
#include "kube/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#define CLIENT_MAX_IDLE_S 20L

/* Why a connection keeps its TLS buffers: kube_int.h. */
CURLcode kube__on_ssl_ctx(CURL *easy, void *ssl_ctx, void *arg)
{
    SSL_CTX_clear_mode((SSL_CTX *)ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
    return CURLE_OK;
}

static void list_push(struct req_list *l, struct kube_request *r)
{
    r->list = l;
    util_list_push_back(&l->head, &r->link);
    l->n++;
}

static void list_unlink(struct kube_request *r)
{
    struct req_list *l = r->list;
    if (l == NULL)
        return;
    util_list_remove(&r->link);
    l->n--;
    r->list = NULL;
}

/* A buffer for a new request: a finished one's, or an empty one. */
static void buf_take(struct kube_client *c, struct util_buf *b)
{
    if (c->n_buf_idle > 0)
        *b = c->buf_idle[--c->n_buf_idle];
    else
        util_buf_init(b);
}

/* Keeps a finished request's buffer for the next one, unless it grew large. */
static void buf_give(struct kube_client *c, struct util_buf *b)
{
    if (!c->closing && c->n_buf_idle < KUBE_BUF_IDLE_MAX && b->cap > 0 &&
        b->cap <= KUBE_BUF_IDLE_BYTES) {
        b->len = 0;
        c->buf_idle[c->n_buf_idle++] = *b;
        util_buf_init(b);
        return;
    }
    util_buf_free(b);
}

/* Frees a request that curl no longer holds (queued, or its transfer is done). */
void kube__request_free(struct kube_request *r)
{
    struct kube_client *c = r->c;
    list_unlink(r);
    if (r->in_flight)
        c->limited_active--;
    if (!c->closing && c->n_easy_idle < KUBE_EASY_IDLE_MAX) {
        curl_easy_reset(r->easy);
        c->easy_idle[c->n_easy_idle++] = r->easy;
    } else {
        curl_easy_cleanup(r->easy);
    }
    curl_slist_free_all(r->headers);
    free(r->url);
    free(r->body);
    buf_give(c, &r->resp);
    buf_give(c, &r->stripped);
    kube_lines_free(&r->lines);
    free(r);
    c->live--;
    kube__client_maybe_finish(c);
}

/* ---- completing requests ---- */
/* Copies at most 200 printable bytes of a body that is not a Status, for a message. */
static void body_excerpt(struct util_buf *out, const char *body, size_t len)
{
    size_t n = len < 200 ? len : 200;
    for (size_t i = 0; i < n; i++) {
        char ch = body[i];
        util_buf_append(out, (ch >= ' ' && ch < 0x7f) ? &ch : " ", 1);
    }
    if (len > n)
        util_buf_puts(out, "...");
}

/* Is r a write whose answer the owner does not read (kube_client_opts.unread_answers)? */
static bool request_answer_unread(const struct kube_request *r)
{
    const char *const *u = r->c->opts.unread_answers;
    if (u == NULL || r->status < 200 || r->status >= 300 || strcmp(r->method, "GET") == 0)
        return false;
    for (size_t i = 0; u[i] != NULL; i++)
        if (strcmp(u[i], r->resource) == 0)
            return true;
    return false;
}

static void request_complete(struct kube_request *r, CURLcode code)
{
    struct kube_client *c = r->c;
    struct kube_result res = {.reason = "", .message = ""};
    struct util_buf msg;
    json_t *body = NULL;
    uint64_t ms = uv_now(c->loop) - r->start_ms;

    util_buf_init(&msg);
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->werror != 0) {
        res.error = r->werror;
        util_buf_puts(&msg, r->werr.msg);
    } else if (code == CURLE_OPERATION_TIMEDOUT) {
        res.error = KUBE_ETIMEDOUT;
        util_buf_printf(&msg, "%s %s: timed out after %llu ms", r->method, r->url,
                        (unsigned long long)ms);
    } else if (code != CURLE_OK) {
        res.error = KUBE_ECONN;
        util_buf_printf(&msg, "%s %s: %s", r->method, r->url,
                        r->errbuf[0] ? r->errbuf : curl_easy_strerror(code));
    } else if (r->watch && r->status == 200) {
        res.status = 200;
        if (kube_lines_pending(&r->lines) > 0) {
            res.error = KUBE_EPROTO;
            res.status = 0;
            util_buf_printf(&msg, "the watch stream ended inside an event (%zu bytes)",
                            kube_lines_pending(&r->lines));
        }
    } else {
        json_error_t jerr;
        res.status = r->status;
        const char *text = r->resp.data;
        size_t len = r->resp.len;
        /* An answer nobody reads is not decoded: its result has no body. */
        bool unread = request_answer_unread(r);
        if (unread)
            len = 0;
        /* An answer to a write is mostly what the owner does not read (kube.h). */
        if (len > 0 && c->opts.strip_answers != NULL && r->status >= 200 && r->status < 300 &&
            strcmp(r->method, "GET") != 0) {
            r->stripped.len = 0;
            kube_json_strip(text, len, c->opts.strip_answers, &r->stripped);
            text = r->stripped.data;
            len = r->stripped.len;
        }
        if (len > 0)
            body = json_loadb(text, len, 0, &jerr);
        if (r->status >= 200 && r->status < 300) {
            if (body == NULL && r->resp.len > 0 && !unread) {
                res.error = KUBE_EPROTO;
                res.status = 0;
                util_buf_printf(&msg, "%s %s: the response is not JSON: %s", r->method, r->url,
                                jerr.text);
            }
        } else {
            const char *s = json_string_value(json_object_get(body, "message"));
            const char *reason = json_string_value(json_object_get(body, "reason"));
            if (reason != NULL)
                res.reason = reason;
            if (s != NULL) {
                util_buf_puts(&msg, s);
            } else {
                util_buf_printf(&msg, "HTTP %ld", r->status);
                if (r->resp.len > 0) {
                    util_buf_puts(&msg, ": ");
                    body_excerpt(&msg, r->resp.data, r->resp.len);
                }
            }
        }
    }
    res.body = res.error == 0 ? body : NULL;
    if (msg.data != NULL)
        res.message = msg.data;
    /* A 401 may mean the token rotated: read it again now rather than in a minute. */
    if (res.status == 401 && c->cfg.token_file != NULL)
        uv_timer_start(&c->token_timer, kube__on_token_timer, 0, c->opts.token_reload_ms);
    if (c->opts.observe_cb != NULL) {
        struct kube_result seen = res;
        seen.body = NULL;
        c->opts.observe_cb(r->verb, r->resource, &seen, ms, c->opts.cb_arg);
    }
    if (r->cb != NULL)
        r->cb(&res, r->arg);
    if (c->opts.step_loop)
        uv_stop(c->loop);
    json_decref(body);
    util_buf_free(&msg);
}

static void client_pump(struct kube_client *c);

/* The transfer ended (or was cancelled): deliver it unless nobody wants it, then free. */
static void on_xfer_done(struct http_xfer *x, CURLcode code, bool cancelled, void *arg)
{
    struct kube_request *r = arg;
    struct kube_client *c = r->c;
    r->active = false;
    if (!cancelled && !r->cancelled && !c->closing) {
        /* Off the active set first, so the callback may start or cancel anything. */
        list_unlink(r);
        request_complete(r, code);
    }
    /* A request that held a place in flight frees it for the next in the queue; a client
     * closing (perhaps by the callback above) may be gone once its last request is. */
    bool next = r->in_flight && c->opts.max_in_flight > 0 && !c->closing;
    kube__request_free(r);
    if (next)
        client_pump(c);
}

/* ---- the write callback and watch lines ---- */

static int on_watch_line(const char *line, size_t len, void *arg)
{
    struct kube_request *r = arg;
    struct kube_watch_event ev;
    json_t *root = NULL;
    if (len == 0)
        return 0;
    /* An event the owner already has is neither stripped nor decoded. */
    struct kube_watch_peek peek;
    bool peeked = (r->skip_cb != NULL || r->keep != NULL) && kube_watch_peek(line, len, &peek) == 0;
    if (peeked && r->skip_cb != NULL && r->skip_cb(&peek, r->arg))
        return r->cancelled || r->c->closing ? 1 : 0;
    /* An object's event is decoded with only what the owner reads; a bookmark or an error
     * (whose object is a Status) as it came, stripped. */
    if (peeked && r->keep != NULL &&
        ((peek.type_len == 5 && memcmp(peek.type, "ADDED", 5) == 0) ||
         (peek.type_len == 8 && memcmp(peek.type, "MODIFIED", 8) == 0) ||
         (peek.type_len == 7 && memcmp(peek.type, "DELETED", 7) == 0))) {
        r->stripped.len = 0;
        kube_json_keep(line, len, r->keep, &r->stripped);
        line = r->stripped.data;
        len = r->stripped.len;
    } else if (r->strip != NULL) {
        r->stripped.len = 0;
        kube_json_strip(line, len, r->strip, &r->stripped);
        line = r->stripped.data;
        len = r->stripped.len;
    }
    if (kube_watch_decode(line, len, &root, &ev, &r->werr) != 0) {
        r->werror = r->werr.code;
        json_decref(root);
        return 1;
    }
    if (r->event_cb != NULL)
        r->event_cb(&ev, r->arg);
    if (r->c->opts.step_loop)
        uv_stop(r->c->loop);
    json_decref(root);
    return r->cancelled || r->c->closing ? 1 : 0;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct kube_request *r = userdata;
    size_t n = size * nmemb;
    if (r->cancelled || r->c->closing)
        return 0;
    if (r->status == 0)
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->watch && r->status == 200) {
        int rc = kube_lines_feed(&r->lines, ptr, n, on_watch_line, r, &r->werr);
        if (rc == KUBE_ETOOBIG)
            r->werror = rc;
        return rc != 0 || r->cancelled ? 0 : n;
    }
    if (r->resp.len + n > r->c->opts.max_response_bytes) {
        r->werror = util_err_set(&r->werr, KUBE_ETOOBIG, "%s %s: the response exceeds %zu bytes",
                                 r->method, r->url, r->c->opts.max_response_bytes);
        return 0;
    }
    util_buf_append(&r->resp, ptr, n);
    return n;
}

/* ---- dispatching ---- */

/* Adds the headers (with the current token) and hands the transfer to curl. */
static void request_dispatch(struct kube_request *r)
{
    struct kube_client *c = r->c;
    char *h;

    if (c->cfg.token != NULL) {
        h = util_asprintf("Authorization: Bearer %s", c->cfg.token);
        r->headers = curl_slist_append(r->headers, h);
        memset(h, 0, strlen(h));
        free(h);
    }
    h = util_asprintf("Accept: %s", r->accept);
    r->headers = curl_slist_append(r->headers, h);
    free(h);
    if (r->content_type != NULL) {
        h = util_asprintf("Content-Type: %s", r->content_type);
        r->headers = curl_slist_append(r->headers, h);
        free(h);
    }
    /* No "Expect: 100-continue" round trip before bodies. */
    r->headers = curl_slist_append(r->headers, "Expect:");
    if (r->headers == NULL) {
        fprintf(stderr, "lodestore: out of memory building HTTP headers\n");
        abort();
    }
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
    r->start_ms = uv_now(c->loop);
    if (r->limited) {
        r->in_flight = true;
        c->limited_active++;
    }
    list_push(&c->active, r);
    r->active = true;
    r->xfer.easy = r->easy;
    r->xfer.done = on_xfer_done;
    r->xfer.arg = r;
    if (http_xfer_start(c->http, &r->xfer, &r->werr) != 0) {
        /* Only a closing transport refuses; the request ends as a transport failure. */
        r->active = false;
        list_unlink(r);
        r->werror = KUBE_ECONN;
        request_complete(r, CURLE_FAILED_INIT);
        kube__request_free(r);
    }
}

static void on_rate_timer(uv_timer_t *t)
{
    client_pump(t->data);
}

/* Starts what may start: every watch, and ordinary requests while tokens and places in
 * flight (max_in_flight) last. */
static void client_pump(struct kube_client *c)
{
    struct kube_request *r;
    if (c->closing)
        return;
    while ((r = kube__req_first(&c->free_q)) != NULL) {
        list_unlink(r);
        request_dispatch(r);
    }
    while ((r = kube__req_first(&c->limited_q)) != NULL) {
        if (c->opts.max_in_flight > 0 && c->limited_active >= c->opts.max_in_flight)
            return; /* on_xfer_done pumps again */
        uint64_t wait = kube_bucket_take(&c->bucket, uv_now(c->loop));
        if (wait > 0) {
            uv_timer_start(&c->rate_timer, on_rate_timer, wait, 0);
            return;
        }
        list_unlink(r);
        request_dispatch(r);
    }
}

/* ---- building requests ---- */
int kube__submit(struct kube_client *c, struct req_spec *s, kube_result_cb cb,
                 kube_watch_cb event_cb, void *arg, struct kube_request **out, struct util_err *err)
{
    struct kube_request *r;
    CURL *e;

    if (out != NULL)
        *out = NULL;
    if (c->closing) {
        free(s->body);
        return util_err_set(err, UTIL_EINVAL, "the Kubernetes client is closing");
    }
    e = c->n_easy_idle > 0 ? c->easy_idle[--c->n_easy_idle] : curl_easy_init();
    if (e == NULL) {
        free(s->body);
        return util_err_set(err, UTIL_EIO, "cannot create a curl handle");
    }
    r = util_calloc(1, sizeof(*r));
    c->live++;
    r->c = c;
    r->easy = e;
    r->verb = s->verb;
    r->method = s->method;
    if (s->res != NULL && s->res->resource != NULL)
        snprintf(r->resource, sizeof(r->resource), "%s%s%s", s->res->resource,
                 s->subresource != NULL ? "/" : "", s->subresource != NULL ? s->subresource : "");
    r->accept = s->accept;
    r->content_type = s->content_type;
    r->watch = s->watch;
    r->strip = s->strip;
    r->keep = s->keep;
    r->skip_cb = s->skip_cb;
    r->limited = !s->watch;
    r->cb = cb;
    r->event_cb = event_cb;
    r->arg = arg;
    r->body = s->body;
    r->body_len = s->body_len;
    r->timeout_ms = s->timeout_ms ? s->timeout_ms : c->opts.timeout_ms;
    r->url = util_asprintf("%s%s", c->base_url, s->path->data);
    buf_take(c, &r->resp);
    buf_take(c, &r->stripped);
    kube_lines_init(&r->lines, c->opts.max_line_bytes);

    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_URL, r->url);
    if (c->connect_to != NULL)
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, c->connect_to);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, c->cfg.insecure ? "http,https" : "https");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->opts.connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 15L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    /*
     * A pooled connection idle longer than this is not reused: a server may close it
     * meanwhile (kube-apiserver's limit is 90 s), and a request written into a
     * connection closing under it fails ("Send failure: Broken pipe") instead of
     * being retried. The cost is one TLS handshake after a quiet spell.
     */
    curl_easy_setopt(e, CURLOPT_MAXAGE_CONN, CLIENT_MAX_IDLE_S);
    /* TLS sessions are resumed from the transport's share: a new connection in a burst
     * costs an abbreviated handshake, not a full one. */
    if (http_multi_share(c->http) != NULL)
        curl_easy_setopt(e, CURLOPT_SHARE, http_multi_share(c->http));
    curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, kube__on_ssl_ctx);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, c->cfg.insecure ? 0L : 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, c->cfg.insecure ? 0L : 2L);
    /* The PEM blobs are the client's configuration, which outlives every transfer: curl
     * borrows them rather than copying three of them for every request. */
    if (c->cfg.ca_pem != NULL) {
        struct curl_blob b = {c->cfg.ca_pem, c->cfg.ca_len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
    }
    if (c->cfg.cert_pem != NULL && c->cfg.key_pem != NULL) {
        struct curl_blob cert = {c->cfg.cert_pem, c->cfg.cert_len, CURL_BLOB_NOCOPY};
        struct curl_blob key = {c->cfg.key_pem, c->cfg.key_len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
    }
    if (strcmp(r->method, "POST") == 0) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
    } else if (strcmp(r->method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
    }
    if (r->body != NULL) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    }
    list_push(r->limited ? &c->limited_q : &c->free_q, r);
    if (out != NULL)
        *out = r;
    client_pump(c);
    return 0;
}

void kube_request_cancel(struct kube_request *r)
{
    struct kube_client *c = r->c;
    (void)c;
    if (r->cancelled)
        return;
    r->cancelled = true;
    /* A transfer is freed in its done callback, now or once curl has let go of it. */
    if (r->active) {
        http_xfer_cancel(&r->xfer);
        return;
    }
    kube__request_free(r);
}

bool kube_result_ns_terminating(const struct kube_result *res)
{
    return res->error == 0 && res->status == 403 && res->message != NULL &&
           strstr(res->message, "because it is being terminated") != NULL;
}
