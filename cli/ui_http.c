/*
 * The HTTP side of `lode ui`: libmicrohttpd's callback, the checks every request
 * passes before anything else happens, the embedded page and the JSON endpoints'
 * framing. What the endpoints answer is ui_api.c's business (and ui_retention.c's).
 *
 * Order of the checks, cheapest and least revealing first: the Host header
 * (DNS rebinding: a hostile page whose name resolves to 127.0.0.1 sends its own
 * name), then the token, then for a POST the content type and the origin. A
 * refused request gets a short text/plain answer and nothing else is read.
 *
 * The token travels only in an Authorization header, never in a cookie: a browser
 * sends a host's cookies to every port of it, so a cookie would hand the token to
 * whatever else listens on 127.0.0.1 (docs/ui.md). The page keeps the token in its
 * tab's sessionStorage, which is its origin's alone (scheme, host and port), and sends
 * it on each API request. The page itself (index.html and its assets) holds no data
 * and is served to anyone who passes the Host check, so that it can start and read the
 * token from its address.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "ui.h"

/*
 * The page's policy: only its own scripts, styles and API; no inline script, no
 * frame, no form target, no third-party anything. The one exception is the
 * <style> element CodeMirror writes its styles into: index.html is served with a
 * fresh nonce in place of UI_NONCE_MARK, and style-src allows that nonce only.
 */
#define UI_CSP_HEAD "default-src 'none'; script-src 'self'; style-src 'self'"
#define UI_CSP_TAIL                                                                                \
    "; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; "           \
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
#define UI_CSP        UI_CSP_HEAD UI_CSP_TAIL
#define UI_NONCE_MARK "__CSP_NONCE__"

/* Served when the binary was built without the page (no npm on the build machine). */
static const char ui_no_page_html[] =
    "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Lodestore</title>"
    "</head><body><main><h1>Lodestore</h1><p>This <code>lode</code> was built without the web "
    "page (npm was not found when it was built). The JSON endpoints under <code>/api/</code> "
    "work; build on a machine with Node.js and npm (see README.md) to get the page.</p>"
    "</main></body></html>\n";

struct ui_server {
    struct MHD_Daemon *daemon;
    struct ui_ctx *ctx;
    unsigned port;
    char token[UI_TOKEN_BYTES * 2 + 1];
    char hosts[3][300];   /* the Host values accepted */
    char origins[3][320]; /* "http://" + each of them */
    size_t nhosts;
};

/* A request's state between libmicrohttpd's calls: the body read so far. */
struct ui_request {
    struct util_buf body;
    bool checked; /* the door checks passed */
    bool too_big;
};

/* ---- responses ---- */

static void ui_http_common_headers(struct MHD_Response *r)
{
    /* index.html sets its own policy, with its nonce, before this runs. */
    if (MHD_get_response_header(r, "Content-Security-Policy") == NULL)
        MHD_add_response_header(r, "Content-Security-Policy", UI_CSP);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
    MHD_add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
}

static enum MHD_Result ui_http_send_csp(struct MHD_Connection *c, unsigned status, const char *type,
                                        const void *data, size_t len,
                                        enum MHD_ResponseMemoryMode mode, const char *encoding,
                                        const char *cache, const char *csp)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)data, mode);
    enum MHD_Result ret;
    if (r == NULL)
        return MHD_NO;
    if (csp != NULL)
        MHD_add_response_header(r, "Content-Security-Policy", csp);
    ui_http_common_headers(r);
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", cache);
    if (encoding != NULL)
        MHD_add_response_header(r, "Content-Encoding", encoding);
    MHD_add_response_header(r, "Vary", "Accept-Encoding");
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result ui_http_send(struct MHD_Connection *c, unsigned status, const char *type,
                                    const void *data, size_t len, enum MHD_ResponseMemoryMode mode,
                                    const char *encoding, const char *cache)
{
    return ui_http_send_csp(c, status, type, data, len, mode, encoding, cache, NULL);
}

static enum MHD_Result ui_http_text(struct MHD_Connection *c, unsigned status, const char *msg);

/*
 * index.html with a fresh nonce in place of each UI_NONCE_MARK, and the policy
 * that allows style elements carrying it. A few KiB copied per page load.
 */
static enum MHD_Result ui_http_index(struct MHD_Connection *c, const struct ui_asset *a)
{
    unsigned char raw[16];
    char nonce[33], csp[512];
    const char *p = (const char *)a->data, *end = p + a->len, *m;
    struct util_buf b;
    size_t mark = strlen(UI_NONCE_MARK);

    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return ui_http_text(c, 500, "500 cannot make a random nonce\n");
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(nonce + 2 * i, 3, "%02x", raw[i]);
    util_buf_init(&b);
    for (m = p; (size_t)(end - m) >= mark; m++) {
        if (memcmp(m, UI_NONCE_MARK, mark) != 0)
            continue;
        util_buf_append(&b, p, (size_t)(m - p));
        util_buf_puts(&b, nonce);
        p = m + mark;
        m = p - 1;
    }
    util_buf_append(&b, p, (size_t)(end - p));
    snprintf(csp, sizeof(csp), "%s 'nonce-%s'%s", UI_CSP_HEAD, nonce, UI_CSP_TAIL);
    size_t n = b.len;
    return ui_http_send_csp(c, 200, a->type, util_buf_steal(&b), n, MHD_RESPMEM_MUST_FREE, NULL,
                            "no-store", csp);
}

static enum MHD_Result ui_http_text(struct MHD_Connection *c, unsigned status, const char *msg)
{
    return ui_http_send(c, status, "text/plain; charset=utf-8", msg, strlen(msg),
                        MHD_RESPMEM_MUST_COPY, NULL, "no-store");
}

static enum MHD_Result ui_http_json(struct MHD_Connection *c, unsigned status, json_t *body)
{
    char *s = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
    enum MHD_Result ret;
    if (s == NULL)
        return ui_http_text(c, 500, "cannot encode the answer as JSON\n");
    ret = ui_http_send(c, status, "application/json", s, strlen(s), MHD_RESPMEM_MUST_FREE, NULL,
                       "no-store");
    return ret;
}

/* ---- the door ---- */

static bool ui_http_host_ok(const struct ui_server *s, const char *host)
{
    for (size_t i = 0; host != NULL && i < s->nhosts; i++)
        if (strcmp(host, s->hosts[i]) == 0)
            return true;
    return false;
}

/* Constant time, so the token cannot be guessed byte by byte from timings. */
static bool ui_http_token_eq(const struct ui_server *s, const char *t)
{
    size_t n = strlen(s->token);
    return t != NULL && strlen(t) == n && CRYPTO_memcmp(t, s->token, n) == 0;
}

static bool ui_http_authorised(const struct ui_server *s, struct MHD_Connection *c)
{
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return auth != NULL && strncmp(auth, "Bearer ", 7) == 0 && ui_http_token_eq(s, auth + 7);
}

/*
 * A write must come from the page itself. Browsers send Origin on every POST and
 * Sec-Fetch-Site on every request; a client that sends neither (curl, a script
 * holding the token) is not a browser tricked into writing. A JSON content type
 * cannot be sent cross-origin without a CORS preflight, which this server never
 * answers, so it is required too.
 */
static const char *ui_http_write_refusal(const struct ui_server *s, struct MHD_Connection *c)
{
    const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    const char *site = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site");
    bool same = false;

    if (type == NULL || strncmp(type, "application/json", 16) != 0 ||
        (type[16] != '\0' && type[16] != ';'))
        return "415 a POST must be application/json\n";
    if (origin != NULL) {
        for (size_t i = 0; i < s->nhosts; i++)
            if (strcmp(origin, s->origins[i]) == 0)
                same = true;
        if (!same)
            return "403 cross-origin writes are refused\n";
    }
    if (site != NULL && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0)
        return "403 cross-origin writes are refused\n";
    return NULL;
}

/* ---- the page ---- */

static const struct ui_asset *ui_http_asset(const char *url)
{
    if (strcmp(url, "/") == 0)
        url = "/index.html";
    for (size_t i = 0; i < ui_asset_count; i++)
        if (strcmp(ui_assets[i].path, url) == 0)
            return &ui_assets[i];
    return NULL;
}

static bool ui_http_accepts_gzip(struct MHD_Connection *c)
{
    const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
    return ae != NULL && strstr(ae, "gzip") != NULL;
}

static enum MHD_Result ui_http_page(struct MHD_Connection *c, const char *url)
{
    const struct ui_asset *a = ui_http_asset(url);
    /* Hashed file names never change content: cache them; index.html never. */
    const char *cache =
        strncmp(url, "/assets/", 8) == 0 ? "private, max-age=31536000, immutable" : "no-store";
    if (a == NULL) {
        if (ui_asset_count == 0 && (strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0))
            return ui_http_send(c, 200, "text/html; charset=utf-8", ui_no_page_html,
                                sizeof(ui_no_page_html) - 1, MHD_RESPMEM_PERSISTENT, NULL,
                                "no-store");
        return ui_http_text(c, 404, "404 not found\n");
    }
    if (strcmp(a->path, "/index.html") == 0)
        return ui_http_index(c, a);
    if (a->gz != NULL && ui_http_accepts_gzip(c))
        return ui_http_send(c, 200, a->type, a->gz, a->gz_len, MHD_RESPMEM_PERSISTENT, "gzip",
                            cache);
    return ui_http_send(c, 200, a->type, a->data, a->len, MHD_RESPMEM_PERSISTENT, NULL, cache);
}

/* ---- the handler ---- */

static enum MHD_Result ui_http_api(struct ui_server *s, struct MHD_Connection *c,
                                   const char *method, const char *url, struct ui_request *rq)
{
    struct ui_reply reply = {0};
    json_t *body = NULL;
    enum MHD_Result ret;

    if (strcmp(method, "POST") == 0) {
        json_error_t jerr;
        body = json_loadb(rq->body.data != NULL ? rq->body.data : "", rq->body.len, 0, &jerr);
        if (body == NULL) {
            ui_reply_error(&reply, 400, "the request body is not JSON: %s", jerr.text);
            goto send;
        }
    }
    ui_api_handle(s->ctx, method, url, body, &reply);
send:
    ret = ui_http_json(c, reply.status, reply.body);
    json_decref(reply.body);
    json_decref(body);
    return ret;
}

static enum MHD_Result ui_http_handler_cb(void *cls, struct MHD_Connection *c, const char *url,
                                          const char *method, const char *version,
                                          const char *upload, size_t *upload_size, void **req_cls)
{
    struct ui_server *s = cls;
    struct ui_request *rq = *req_cls;
    bool post = strcmp(method, "POST") == 0;

    if (rq == NULL) {
        /* First call: the headers are in. The door checks, before any body is read. */
        const char *refusal;
        rq = util_calloc(1, sizeof(*rq));
        util_buf_init(&rq->body);
        *req_cls = rq;
        if (!ui_http_host_ok(s, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host")))
            return ui_http_text(c, 403,
                                "403 this Host is not the address lode ui listens on (DNS "
                                "rebinding protection): use the URL lode ui printed\n");
        if (!post && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
            return ui_http_text(c, 405, "405 only GET, HEAD and POST are served\n");
        /* The page, without the token (it holds no data); an address with a token that
         * is not this server's (an old URL) is told so rather than loaded. */
        if (!post && strncmp(url, "/api/", 5) != 0) {
            const char *t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
            if (t != NULL && !ui_http_token_eq(s, t))
                return ui_http_text(c, 401,
                                    "401 this is not the token of this lode ui (a URL of an "
                                    "earlier run?): open the URL that lode ui printed\n");
            return ui_http_page(c, url);
        }
        if (!ui_http_authorised(s, c))
            return ui_http_text(c, 401,
                                "401 no valid token: open the URL that lode ui printed (it "
                                "carries the token)\n");
        if (post && (refusal = ui_http_write_refusal(s, c)) != NULL)
            return ui_http_text(c, (unsigned)strtoul(refusal, NULL, 10), refusal + 4);
        rq->checked = true;
        if (post)
            return MHD_YES; /* the body follows */
    }
    if (!rq->checked)
        return MHD_NO;
    if (post && *upload_size != 0) {
        if (rq->body.len + *upload_size > UI_MAX_BODY)
            rq->too_big = true;
        else
            util_buf_append(&rq->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (rq->too_big)
        return ui_http_text(c, 413, "413 the request body is larger than 8 MiB\n");
    if (strncmp(url, "/api/", 5) == 0)
        return ui_http_api(s, c, method, url, rq);
    if (post)
        return ui_http_text(c, 405, "405 POST is for /api/ only\n");
    return ui_http_page(c, url);
}

static void ui_http_completed_cb(void *cls, struct MHD_Connection *c, void **req_cls,
                                 enum MHD_RequestTerminationCode toe)
{
    struct ui_request *rq = *req_cls;
    if (rq == NULL)
        return;
    util_buf_free(&rq->body);
    free(rq);
    *req_cls = NULL;
}

static void ui_http_log_cb(void *cls, const char *fmt, va_list ap)
{
    fprintf(stderr, "lode ui: ");
    vfprintf(stderr, fmt, ap);
}

/* ---- lifecycle ---- */

int ui_server_start(struct ui_server **out, struct ui_ctx *ctx, const struct ui_server_opts *o,
                    struct util_err *err)
{
    struct ui_server *s = util_calloc(1, sizeof(*s));
    struct sockaddr_storage ss;
    socklen_t sslen;
    bool v6 = strchr(o->host, ':') != NULL;
    const union MHD_DaemonInfo *info;

    memset(&ss, 0, sizeof(ss));
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)o->port);
        if (inet_pton(AF_INET6, o->host, &a->sin6_addr) != 1)
            goto bad_address;
        sslen = sizeof(*a);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)o->port);
        if (inet_pton(AF_INET, o->host, &a->sin_addr) != 1)
            goto bad_address;
        sslen = sizeof(*a);
    }
    (void)sslen;
    s->ctx = ctx;
    snprintf(s->token, sizeof(s->token), "%s", o->token);
    s->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0),
        (uint16_t)o->port, NULL, NULL, ui_http_handler_cb, s, MHD_OPTION_EXTERNAL_LOGGER,
        ui_http_log_cb, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_NOTIFY_COMPLETED, ui_http_completed_cb, s, MHD_OPTION_CONNECTION_LIMIT, 64u,
        MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
    if (s->daemon == NULL) {
        free(s);
        return util_err_set(err, UTIL_EIO,
                            "cannot listen on %s%s%s:%u (is the port taken? --listen picks "
                            "another; port 0 takes any free one)",
                            v6 ? "[" : "", o->host, v6 ? "]" : "", o->port);
    }
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info != NULL && info->port != 0 ? info->port : o->port;
    /* The names a browser may use for the listen address. */
    snprintf(s->hosts[s->nhosts++], sizeof(s->hosts[0]), "%s%s%s:%u", v6 ? "[" : "", o->host,
             v6 ? "]" : "", s->port);
    if (strcmp(o->host, "127.0.0.1") == 0 || strcmp(o->host, "::1") == 0)
        snprintf(s->hosts[s->nhosts++], sizeof(s->hosts[0]), "localhost:%u", s->port);
    for (size_t i = 0; i < s->nhosts; i++)
        snprintf(s->origins[i], sizeof(s->origins[i]), "http://%s", s->hosts[i]);
    *out = s;
    return 0;

bad_address:
    free(s);
    return util_err_set(err, UTIL_EINVAL,
                        "--listen: \"%s\" is not an IP address (give 127.0.0.1:PORT or "
                        "[::1]:PORT; names are not resolved, so a DNS answer cannot move "
                        "the UI onto another interface)",
                        o->host);
}

unsigned ui_server_port(const struct ui_server *s)
{
    return s->port;
}

void ui_server_stop(struct ui_server *s)
{
    if (s == NULL)
        return;
    MHD_stop_daemon(s->daemon);
    free(s);
}
