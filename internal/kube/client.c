/*
 * The client: requests on the shared transport (internal/http, one CURLM driven by
 * libuv), which defers starting and cancelling transfers while curl is inside its own
 * callbacks (watch events are delivered from inside the write callback). A request is
 * freed in its transfer's done callback, which runs exactly once, so a request
 * cancelled from inside curl stays valid until curl has let go of it. Ordinary
 * requests wait in a FIFO behind the token bucket; watches skip it.
 */
#include "kube/kube_int.h"

#include "http/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#define CLIENT_DEFAULT_QPS        20.0
#define CLIENT_DEFAULT_BURST      30
#define CLIENT_DEFAULT_TIMEOUT_MS 30000
#define CLIENT_DEFAULT_CONNECT_MS 10000
#define CLIENT_DEFAULT_TOKEN_MS   60000
#define CLIENT_DEFAULT_MAX_RESP   ((size_t)64 << 20)
#define CLIENT_WATCH_DEFAULT_S    300
#define CLIENT_WATCH_GRACE_MS     30000
#define CLIENT_MAX_IDLE_S         20L
#define CLIENT_ACCEPT_JSON        "application/json"
#define CLIENT_ACCEPT_META_LIST                                                                    \
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
#define CLIENT_ACCEPT_META                                                                         \
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

/* A doubly linked list of requests: the rate-limited queue, the free queue, the active set. */
struct req_list {
    struct kube_request *head, *tail;
    size_t n;
};

struct kube_request {
    struct http_xfer xfer;
    struct kube_client *c;
    struct kube_request *prev, *next;
    struct req_list *list; /* the list it is on, or NULL */
    CURL *easy;
    struct curl_slist *headers;
    char *url;
    char *body;
    size_t body_len;
    const char *verb;   /* static: "GET", "LIST", ... */
    const char *method; /* static: the HTTP method */
    const char *accept;
    const char *content_type;
    bool watch, limited, active, cancelled;
    kube_result_cb cb;
    kube_watch_cb event_cb;
    void *arg;
    uint64_t timeout_ms;
    uint64_t start_ms;
    long status;
    struct util_buf resp;
    struct kube_lines lines;
    int werror; /* an error raised inside the write callback */
    struct util_err werr;
    char errbuf[CURL_ERROR_SIZE];
};

struct kube_client {
    uv_loop_t *loop;
    struct http_multi *http;
    bool own_http; /* created here (closed with the client), or borrowed */
    uv_timer_t rate_timer, token_timer;
    struct kube_config cfg;
    struct kube_client_opts opts; /* strings below are owned copies */
    char *field_manager;
    char *user_agent;
    char *base_url;                /* where requests go: the server, or tls-server-name */
    struct curl_slist *connect_to; /* tls-server-name: "NAME:PORT:HOST:PORT", or NULL */
    struct kube_bucket bucket;
    struct req_list limited_q, free_q, active;
    unsigned handles; /* libuv handles not yet closed */
    size_t live;      /* requests allocated and not yet freed */
    bool closing;
    kube_close_cb close_cb;
    void *close_arg;
    uint64_t rng;
};

uv_loop_t *kube__loop(const struct kube_client *c)
{
    return c->loop;
}

uint32_t kube__rand(struct kube_client *c)
{
    /* xorshift64*: fine for jitter; nothing here needs to be unpredictable. */
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (uint32_t)((c->rng * 2685821657736338717ULL) >> 32);
}

const char *kube_client_namespace(const struct kube_client *c)
{
    return c->cfg.namespace;
}

size_t kube_client_queued(const struct kube_client *c)
{
    return c->limited_q.n + c->free_q.n;
}

size_t kube_client_active(const struct kube_client *c)
{
    return c->active.n;
}

struct http_multi *kube_client_http(const struct kube_client *c)
{
    return c->http;
}

static void list_push(struct req_list *l, struct kube_request *r)
{
    r->list = l;
    r->next = NULL;
    r->prev = l->tail;
    if (l->tail != NULL)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
    l->n++;
}

static void list_unlink(struct kube_request *r)
{
    struct req_list *l = r->list;
    if (l == NULL)
        return;
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        l->head = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    else
        l->tail = r->prev;
    l->n--;
    r->list = NULL;
    r->prev = r->next = NULL;
}

static void client_maybe_finish(struct kube_client *c);

/* Frees a request that curl no longer holds (queued, or its transfer is done). */
static void request_free(struct kube_request *r)
{
    struct kube_client *c = r->c;
    list_unlink(r);
    curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->headers);
    free(r->url);
    free(r->body);
    util_buf_free(&r->resp);
    kube_lines_free(&r->lines);
    free(r);
    c->live--;
    client_maybe_finish(c);
}

/* ---- the handles' close callbacks ---- */

static void client_free(struct kube_client *c)
{
    kube_config_free(&c->cfg);
    free(c->field_manager);
    free(c->user_agent);
    free(c->base_url);
    curl_slist_free_all(c->connect_to);
    free(c);
}

static void client_finish_close(void *arg)
{
    struct kube_client *c = arg;
    kube_close_cb cb = c->close_cb;
    void *cb_arg = c->close_arg;
    client_free(c);
    if (cb != NULL)
        cb(cb_arg);
}

/* The client is gone once its timers closed and curl let go of its last transfer. */
static void client_maybe_finish(struct kube_client *c)
{
    if (!c->closing || c->handles > 0 || c->live > 0)
        return;
    c->handles = 1; /* finish once */
    if (c->own_http)
        http_multi_close(c->http, client_finish_close, c);
    else
        client_finish_close(c);
}

static void on_timer_closed(uv_handle_t *h)
{
    struct kube_client *c = h->data;
    c->handles--;
    client_maybe_finish(c);
}

/* ---- completing requests ---- */

static void on_token_timer(uv_timer_t *t);

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
        if (r->resp.len > 0)
            body = json_loadb(r->resp.data, r->resp.len, 0, &jerr);
        if (r->status >= 200 && r->status < 300) {
            if (body == NULL && r->resp.len > 0) {
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
        uv_timer_start(&c->token_timer, on_token_timer, 0, c->opts.token_reload_ms);
    if (c->opts.observe_cb != NULL)
        c->opts.observe_cb(r->verb, res.status, res.error, ms, c->opts.cb_arg);
    if (r->cb != NULL)
        r->cb(&res, r->arg);
    json_decref(body);
    util_buf_free(&msg);
}

static void client_pump(struct kube_client *c);

/* The transfer ended (or was cancelled): deliver it unless nobody wants it, then free. */
static void on_xfer_done(struct http_xfer *x, CURLcode code, bool cancelled, void *arg)
{
    struct kube_request *r = arg;
    r->active = false;
    if (!cancelled && !r->cancelled && !r->c->closing) {
        /* Off the active set first, so the callback may start or cancel anything. */
        list_unlink(r);
        request_complete(r, code);
    }
    request_free(r);
}

/* ---- the write callback and watch lines ---- */

static int on_watch_line(const char *line, size_t len, void *arg)
{
    struct kube_request *r = arg;
    struct kube_watch_event ev;
    json_t *root = NULL;
    if (len == 0)
        return 0;
    if (kube_watch_decode(line, len, &root, &ev, &r->werr) != 0) {
        r->werror = r->werr.code;
        json_decref(root);
        return 1;
    }
    if (r->event_cb != NULL)
        r->event_cb(&ev, r->arg);
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
        request_free(r);
    }
}

static void on_rate_timer(uv_timer_t *t)
{
    client_pump(t->data);
}

/* Starts what may start: every watch, and ordinary requests while tokens last. */
static void client_pump(struct kube_client *c)
{
    struct kube_request *r;
    if (c->closing)
        return;
    while ((r = c->free_q.head) != NULL) {
        list_unlink(r);
        request_dispatch(r);
    }
    while ((r = c->limited_q.head) != NULL) {
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

/* What a verb function asks for. path is an owned buffer; body an owned string. */
struct req_spec {
    const char *verb, *method, *accept, *content_type;
    struct util_buf *path;
    char *body;
    size_t body_len;
    bool watch;
    uint64_t timeout_ms;
};

static int client_submit(struct kube_client *c, struct req_spec *s, kube_result_cb cb,
                         kube_watch_cb event_cb, void *arg, struct kube_request **out,
                         struct util_err *err)
{
    struct kube_request *r;
    CURL *e;

    if (out != NULL)
        *out = NULL;
    if (c->closing) {
        free(s->body);
        return util_err_set(err, UTIL_EINVAL, "the Kubernetes client is closing");
    }
    e = curl_easy_init();
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
    r->accept = s->accept;
    r->content_type = s->content_type;
    r->watch = s->watch;
    r->limited = !s->watch;
    r->cb = cb;
    r->event_cb = event_cb;
    r->arg = arg;
    r->body = s->body;
    r->body_len = s->body_len;
    r->timeout_ms = s->timeout_ms ? s->timeout_ms : c->opts.timeout_ms;
    r->url = util_asprintf("%s%s", c->base_url, s->path->data);
    util_buf_init(&r->resp);
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
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, c->cfg.insecure ? 0L : 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, c->cfg.insecure ? 0L : 2L);
    if (c->cfg.ca_pem != NULL) {
        struct curl_blob b = {c->cfg.ca_pem, c->cfg.ca_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
    }
    if (c->cfg.cert_pem != NULL && c->cfg.key_pem != NULL) {
        struct curl_blob cert = {c->cfg.cert_pem, c->cfg.cert_len, CURL_BLOB_COPY};
        struct curl_blob key = {c->cfg.key_pem, c->cfg.key_len, CURL_BLOB_COPY};
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
    request_free(r);
}

/* The JSON text of a body, or NULL with err set. */
static char *client_dump(const json_t *obj, size_t *len, struct util_err *err)
{
    char *s;
    if (obj == NULL) {
        util_err_set(err, UTIL_EINVAL, "a request body is missing");
        return NULL;
    }
    s = json_dumps(obj, JSON_COMPACT);
    if (s == NULL) {
        util_err_set(err, UTIL_EINVAL, "a request body cannot be encoded as JSON");
        return NULL;
    }
    *len = strlen(s);
    return s;
}

/* Builds the path into buf; on error buf is freed. */
static int client_path(struct util_buf *buf, const struct kube_resource *res, const char *name,
                       const char *subresource, struct util_err *err)
{
    int rc;
    util_buf_init(buf);
    if ((rc = kube_path(buf, res, name, subresource, err)) != 0)
        util_buf_free(buf);
    return rc;
}

/* What client_send adds to the query. */
enum client_query {
    CLIENT_QUERY_APPLY = 1 << 0,   /* fieldManager and force=true */
    CLIENT_QUERY_DRY_RUN = 1 << 1, /* dryRun=All: answered as if stored, nothing stored */
};

static int client_send(struct kube_client *c, const char *verb, const char *method,
                       const struct kube_resource *res, const char *name, const char *subresource,
                       const json_t *body_obj, const char *content_type, unsigned query,
                       kube_result_cb cb, void *arg, struct kube_request **out,
                       struct util_err *err)
{
    struct util_buf path;
    struct req_spec s = {.verb = verb,
                         .method = method,
                         .accept = CLIENT_ACCEPT_JSON,
                         .content_type = content_type,
                         .path = &path};
    int rc;

    if ((rc = client_path(&path, res, name, subresource, err)) != 0)
        return rc;
    if (query & CLIENT_QUERY_APPLY) {
        kube_query_add(&path, "fieldManager", c->field_manager);
        kube_query_add(&path, "force", "true");
    }
    if (query & CLIENT_QUERY_DRY_RUN)
        kube_query_add(&path, "dryRun", "All");
    if (content_type != NULL && (s.body = client_dump(body_obj, &s.body_len, err)) == NULL) {
        util_buf_free(&path);
        return err != NULL ? err->code : UTIL_EINVAL;
    }
    rc = client_submit(c, &s, cb, NULL, arg, out, err);
    util_buf_free(&path);
    return rc;
}

int kube_get(struct kube_client *c, const struct kube_resource *res, const char *name,
             const char *subresource, kube_result_cb cb, void *arg, struct kube_request **out,
             struct util_err *err)
{
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "GET needs an object name");
    return client_send(c, "GET", "GET", res, name, subresource, NULL, NULL, 0, cb, arg, out, err);
}

int kube_create(struct kube_client *c, const struct kube_resource *res, const json_t *obj,
                kube_result_cb cb, void *arg, struct kube_request **out, struct util_err *err)
{
    return client_send(c, "CREATE", "POST", res, NULL, NULL, obj, "application/json", 0, cb, arg,
                       out, err);
}

int kube_update(struct kube_client *c, const struct kube_resource *res, const char *name,
                const char *subresource, const json_t *obj, kube_result_cb cb, void *arg,
                struct kube_request **out, struct util_err *err)
{
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "an update needs an object name");
    return client_send(c, "UPDATE", "PUT", res, name, subresource, obj, "application/json", 0, cb,
                       arg, out, err);
}

int kube_merge_patch(struct kube_client *c, const struct kube_resource *res, const char *name,
                     const char *subresource, const json_t *patch, kube_result_cb cb, void *arg,
                     struct kube_request **out, struct util_err *err)
{
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "a patch needs an object name");
    return client_send(c, "PATCH", "PATCH", res, name, subresource, patch,
                       "application/merge-patch+json", 0, cb, arg, out, err);
}

int kube_apply(struct kube_client *c, const struct kube_resource *res, const char *name,
               const char *subresource, const json_t *obj, kube_result_cb cb, void *arg,
               struct kube_request **out, struct util_err *err)
{
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "an apply needs an object name");
    return client_send(c, "APPLY", "PATCH", res, name, subresource, obj,
                       "application/apply-patch+yaml", CLIENT_QUERY_APPLY, cb, arg, out, err);
}

int kube_apply_dry_run(struct kube_client *c, const struct kube_resource *res, const char *name,
                       const char *subresource, const json_t *obj, kube_result_cb cb, void *arg,
                       struct kube_request **out, struct util_err *err)
{
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "an apply needs an object name");
    return client_send(c, "APPLY", "PATCH", res, name, subresource, obj,
                       "application/apply-patch+yaml", CLIENT_QUERY_APPLY | CLIENT_QUERY_DRY_RUN,
                       cb, arg, out, err);
}

int kube_delete(struct kube_client *c, const struct kube_resource *res, const char *name,
                const char *propagation, kube_result_cb cb, void *arg, struct kube_request **out,
                struct util_err *err)
{
    struct util_buf path;
    struct req_spec s = {
        .verb = "DELETE", .method = "DELETE", .accept = CLIENT_ACCEPT_JSON, .path = &path};
    int rc;
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "a delete needs an object name");
    if ((rc = client_path(&path, res, name, NULL, err)) != 0)
        return rc;
    if (propagation != NULL)
        kube_query_add(&path, "propagationPolicy", propagation);
    rc = client_submit(c, &s, cb, NULL, arg, out, err);
    util_buf_free(&path);
    return rc;
}

/* The query of a LIST or WATCH. */
static void client_list_query(struct util_buf *path, const struct kube_list_opts *o)
{
    if (o == NULL)
        return;
    if (o->label_selector != NULL && o->label_selector[0] != '\0')
        kube_query_add(path, "labelSelector", o->label_selector);
    if (o->field_selector != NULL && o->field_selector[0] != '\0')
        kube_query_add(path, "fieldSelector", o->field_selector);
    if (o->resource_version != NULL && o->resource_version[0] != '\0')
        kube_query_add(path, "resourceVersion", o->resource_version);
}

int kube_list(struct kube_client *c, const struct kube_resource *res,
              const struct kube_list_opts *opts, kube_result_cb cb, void *arg,
              struct kube_request **out, struct util_err *err)
{
    struct util_buf path;
    struct req_spec s = {.verb = "LIST", .method = "GET", .path = &path};
    char num[24];
    int rc;
    if ((rc = client_path(&path, res, NULL, NULL, err)) != 0)
        return rc;
    s.accept = opts != NULL && opts->metadata_only ? CLIENT_ACCEPT_META_LIST : CLIENT_ACCEPT_JSON;
    client_list_query(&path, opts);
    if (opts != NULL && opts->limit > 0) {
        snprintf(num, sizeof(num), "%u", opts->limit);
        kube_query_add(&path, "limit", num);
    }
    if (opts != NULL && opts->continue_token != NULL && opts->continue_token[0] != '\0')
        kube_query_add(&path, "continue", opts->continue_token);
    rc = client_submit(c, &s, cb, NULL, arg, out, err);
    util_buf_free(&path);
    return rc;
}

int kube_watch(struct kube_client *c, const struct kube_resource *res,
               const struct kube_list_opts *opts, kube_watch_cb event_cb, kube_result_cb done_cb,
               void *arg, struct kube_request **out, struct util_err *err)
{
    struct util_buf path;
    struct req_spec s = {.verb = "WATCH", .method = "GET", .path = &path, .watch = true};
    unsigned secs =
        opts != NULL && opts->timeout_seconds ? opts->timeout_seconds : CLIENT_WATCH_DEFAULT_S;
    char num[24];
    int rc;
    if ((rc = client_path(&path, res, NULL, NULL, err)) != 0)
        return rc;
    s.accept = opts != NULL && opts->metadata_only ? CLIENT_ACCEPT_META : CLIENT_ACCEPT_JSON;
    kube_query_add(&path, "watch", "1");
    client_list_query(&path, opts);
    kube_query_add(&path, "allowWatchBookmarks", "true");
    snprintf(num, sizeof(num), "%u", secs);
    kube_query_add(&path, "timeoutSeconds", num);
    /* The server ends the watch; the client's own limit only catches a dead connection. */
    s.timeout_ms = (uint64_t)secs * 1000 + CLIENT_WATCH_GRACE_MS;
    rc = client_submit(c, &s, done_cb, event_cb, arg, out, err);
    util_buf_free(&path);
    return rc;
}

/* ---- the token file ---- */

static void on_token_timer(uv_timer_t *t)
{
    struct kube_client *c = t->data;
    struct util_err err;
    char *token;
    if (c->cfg.token_file == NULL)
        return;
    if (kube__read_token(c->cfg.token_file, &token, &err) != 0) {
        /* The old token stays; it may still be valid for a while. */
        if (c->opts.warn_cb != NULL)
            c->opts.warn_cb(err.msg, c->opts.cb_arg);
        return;
    }
    if (c->cfg.token != NULL) {
        memset(c->cfg.token, 0, strlen(c->cfg.token));
        free(c->cfg.token);
    }
    c->cfg.token = token;
}

/* ---- life cycle ---- */

static char *dup_or_null(const char *s)
{
    return s != NULL ? util_strdup(s) : NULL;
}

static char *dup_mem(const char *p, size_t len)
{
    return p != NULL ? util_strndup(p, len) : NULL;
}

/*
 * tls-server-name: the certificate is checked against another name than the server's
 * host. curl checks the URL's host, so requests go to https://NAME:PORT/... and
 * CURLOPT_CONNECT_TO sends the connection to the real host and port. (SNI and the Host
 * header carry NAME too; kube-apiserver does not mind.)
 */
static int client_tls_name(struct kube_client *c, const char *name, struct util_err *err)
{
    CURLU *u;
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *entry;
    int rc = 0;

    if (name == NULL || name[0] == '\0') {
        c->base_url = util_strdup(c->cfg.server);
        return 0;
    }
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '.'))
            return util_err_set(err, UTIL_EINVAL, "tls-server-name \"%s\" is not a DNS name", name);
    u = curl_url();
    if (u == NULL || curl_url_set(u, CURLUPART_URL, c->cfg.server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
        rc = util_err_set(err, UTIL_EINVAL, "server \"%s\" is not a URL curl can read",
                          c->cfg.server);
        goto free_parts;
    }
    /* The path is "/" or a prefix such as "/k8s/clusters/x"; the API paths follow it. */
    c->base_url =
        util_asprintf("%s://%s:%s%s", scheme, name, port, strcmp(path, "/") == 0 ? "" : path);
    entry = util_asprintf("%s:%s:%s:%s", name, port, host, port);
    c->connect_to = curl_slist_append(NULL, entry);
    free(entry);
    if (c->connect_to == NULL) {
        fprintf(stderr, "lodestore: out of memory building CURLOPT_CONNECT_TO\n");
        abort();
    }
free_parts:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return rc;
}

int kube_client_init(uv_loop_t *loop, struct kube_client **out, const struct kube_config *cfg,
                     const struct kube_client_opts *opts, struct util_err *err)
{
    static const struct kube_client_opts no_opts;
    struct kube_client *c;
    int rc;

    *out = NULL;
    if (opts == NULL)
        opts = &no_opts;
    if (cfg->server == NULL)
        return util_err_set(err, UTIL_EINVAL, "the Kubernetes configuration has no server");
    c = util_calloc(1, sizeof(*c));
    c->loop = loop;
    c->opts = *opts;
    if (c->opts.qps == 0)
        c->opts.qps = CLIENT_DEFAULT_QPS;
    if (c->opts.burst == 0)
        c->opts.burst = CLIENT_DEFAULT_BURST;
    if (c->opts.timeout_ms == 0)
        c->opts.timeout_ms = CLIENT_DEFAULT_TIMEOUT_MS;
    if (c->opts.connect_timeout_ms == 0)
        c->opts.connect_timeout_ms = CLIENT_DEFAULT_CONNECT_MS;
    if (c->opts.token_reload_ms == 0)
        c->opts.token_reload_ms = CLIENT_DEFAULT_TOKEN_MS;
    if (c->opts.max_response_bytes == 0)
        c->opts.max_response_bytes = CLIENT_DEFAULT_MAX_RESP;
    if (c->opts.max_line_bytes == 0)
        c->opts.max_line_bytes = KUBE_MAX_LINE_DEFAULT;
    c->field_manager = util_strdup(opts->field_manager ? opts->field_manager : "lodestore");
    c->user_agent = util_strdup(opts->user_agent ? opts->user_agent : "lodestore");
    c->opts.field_manager = c->field_manager;
    c->opts.user_agent = c->user_agent;
    c->cfg.server = util_strdup(cfg->server);
    c->cfg.namespace = util_strdup(cfg->namespace ? cfg->namespace : "default");
    c->cfg.context = dup_or_null(cfg->context);
    c->cfg.ca_pem = dup_mem(cfg->ca_pem, cfg->ca_len);
    c->cfg.ca_len = cfg->ca_len;
    c->cfg.cert_pem = dup_mem(cfg->cert_pem, cfg->cert_len);
    c->cfg.cert_len = cfg->cert_len;
    c->cfg.key_pem = dup_mem(cfg->key_pem, cfg->key_len);
    c->cfg.key_len = cfg->key_len;
    c->cfg.token = dup_or_null(cfg->token);
    c->cfg.token_file = dup_or_null(cfg->token_file);
    c->cfg.insecure = cfg->insecure;
    if ((rc = client_tls_name(c, cfg->tls_server_name, err)) != 0)
        goto free_client;
    if (c->cfg.token_file != NULL) {
        char *token;
        if ((rc = kube__read_token(c->cfg.token_file, &token, err)) != 0)
            goto free_client;
        free(c->cfg.token);
        c->cfg.token = token;
    }
    c->rng = uv_hrtime() ^ (uint64_t)(uintptr_t)c ^ 0x9e3779b97f4a7c15ULL;
    if (c->rng == 0)
        c->rng = 1;
    kube_bucket_init(&c->bucket, c->opts.qps, c->opts.burst, uv_now(loop));
    if (opts->http != NULL) {
        c->http = opts->http;
    } else {
        if ((rc = http_multi_init(loop, &c->http, err)) != 0)
            goto free_client;
        c->own_http = true;
    }
    uv_timer_init(loop, &c->rate_timer);
    uv_timer_init(loop, &c->token_timer);
    c->rate_timer.data = c->token_timer.data = c;
    c->handles = 2;
    if (c->cfg.token_file != NULL)
        uv_timer_start(&c->token_timer, on_token_timer, c->opts.token_reload_ms,
                       c->opts.token_reload_ms);
    /* Timers keep the loop alive only while something is pending. */
    uv_unref((uv_handle_t *)&c->token_timer);
    *out = c;
    return 0;
free_client:
    client_free(c);
    return rc;
}

void kube_client_close(struct kube_client *c, kube_close_cb cb, void *arg)
{
    struct kube_request *r;
    if (c->closing)
        return;
    c->closing = true;
    c->close_cb = cb;
    c->close_arg = arg;
    c->live++; /* hold the client while requests go */
    while ((r = c->limited_q.head) != NULL)
        request_free(r);
    while ((r = c->free_q.head) != NULL)
        request_free(r);
    /* A cancel may free its request at once: look for the next one from the head. */
    for (;;) {
        for (r = c->active.head; r != NULL && r->cancelled; r = r->next)
            ;
        if (r == NULL)
            break;
        r->cancelled = true;
        http_xfer_cancel(&r->xfer);
    }
    uv_close((uv_handle_t *)&c->rate_timer, on_timer_closed);
    uv_close((uv_handle_t *)&c->token_timer, on_timer_closed);
    c->live--;
    client_maybe_finish(c);
}
