/*
 * The client: requests on the shared transport (internal/http, one CURLM driven by
 * libuv), which defers starting and cancelling transfers while curl is inside its own
 * callbacks (watch events are delivered from inside the write callback). A request is
 * freed in its transfer's done callback, which runs exactly once, so a request
 * cancelled from inside curl stays valid until curl has let go of it. Ordinary
 * requests wait in a FIFO behind the token bucket; watches skip it. This file is the
 * client's life cycle and its token file; request.c the requests, verbs.c the verbs.
 */
#include "kube/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLIENT_DEFAULT_QPS        20.0
#define CLIENT_DEFAULT_BURST      30
#define CLIENT_DEFAULT_TIMEOUT_MS 30000
#define CLIENT_DEFAULT_CONNECT_MS 10000
#define CLIENT_DEFAULT_TOKEN_MS   60000
#define CLIENT_DEFAULT_MAX_RESP   ((size_t)64 << 20)

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
void kube__client_maybe_finish(struct kube_client *c)
{
    if (!c->closing || c->handles > 0 || c->live > 0)
        return;
    c->handles = 1; /* finish once */
    while (c->n_easy_idle > 0)
        curl_easy_cleanup(c->easy_idle[--c->n_easy_idle]);
    while (c->n_buf_idle > 0)
        util_buf_free(&c->buf_idle[--c->n_buf_idle]);
    if (c->own_http)
        http_multi_close(c->http, client_finish_close, c);
    else
        client_finish_close(c);
}

static void on_timer_closed(uv_handle_t *h)
{
    struct kube_client *c = h->data;
    c->handles--;
    kube__client_maybe_finish(c);
}
/* ---- the token file ---- */

void kube__on_token_timer(uv_timer_t *t)
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
    util_list_init(&c->limited_q.head);
    util_list_init(&c->free_q.head);
    util_list_init(&c->active.head);
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
        uv_timer_start(&c->token_timer, kube__on_token_timer, c->opts.token_reload_ms,
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
    struct util_list *link;
    if (c->closing)
        return;
    c->closing = true;
    c->close_cb = cb;
    c->close_arg = arg;
    c->live++; /* hold the client while requests go */
    while ((r = kube__req_first(&c->limited_q)) != NULL)
        kube__request_free(r);
    while ((r = kube__req_first(&c->free_q)) != NULL)
        kube__request_free(r);
    /* A cancel may free its request at once: look for the next one from the head. */
    for (;;) {
        r = NULL;
        util_list_for_each (link, &c->active.head) {
            r = util_list_entry(link, struct kube_request, link);
            if (!r->cancelled)
                break;
            r = NULL;
        }
        if (r == NULL)
            break;
        r->cancelled = true;
        http_xfer_cancel(&r->xfer);
    }
    uv_close((uv_handle_t *)&c->rate_timer, on_timer_closed);
    uv_close((uv_handle_t *)&c->token_timer, on_timer_closed);
    c->live--;
    kube__client_maybe_finish(c);
}
