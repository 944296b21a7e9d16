/*
 * One attempt of an operation: its state reset, the request built and signed
 * (request_sign.c), an easy handle set up and started on the shared transport, the
 * reply's headers and body read as they come, a stall watchdog, and how the attempt
 * ended classified (status, S3 error code, transport error) before the op's kind
 * decides what follows.
 */
#include "s3/s3_int.h"
#include "s3/s3_xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_IDLE_CONN_S 20L
#define PUT_BUFFER      (512L << 10) /* curl's send buffer for a large PUT */
#define ONE_SEND_MAX    (64u << 10)  /* a PUT body below this goes with its headers */

/*
 * An easy handle for the next attempt: one kept from an earlier attempt (reset to
 * defaults, its buffers kept), else a new one. Creating and freeing a handle per
 * request cost more than the request's own HTTP work on a reused connection.
 */
static CURL *easy_take(struct s3_client *c)
{
    if (c->n_easy_idle > 0)
        return c->easy_idle[--c->n_easy_idle];
    return curl_easy_init();
}

/* Keeps an easy handle for a later attempt (reset), or frees it once enough are kept. */
static void easy_give_back(struct s3_client *c, CURL *e)
{
    if (e == NULL)
        return;
    if (c->closing || c->n_easy_idle == S3_EASY_IDLE_MAX) {
        curl_easy_cleanup(e);
        return;
    }
    curl_easy_reset(e);
    c->easy_idle[c->n_easy_idle++] = e;
}

void s3__easy_idle_free(struct s3_client *c)
{
    while (c->n_easy_idle > 0)
        curl_easy_cleanup(c->easy_idle[--c->n_easy_idle]);
}

void s3__attempt_cleanup(struct s3_op *op)
{
    easy_give_back(op->c, op->easy);
    op->easy = NULL;
    curl_slist_free_all(op->headers);
    op->headers = NULL;
    free(op->url);
    op->url = NULL;
}

/* ---- curl callbacks ---- */

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
    struct s3_op *op = ud;
    size_t len = size * n;
    char line[512];
    op->last_activity = uv_now(op->c->loop);
    size_t l = len < sizeof(line) - 1 ? len : sizeof(line) - 1;
    memcpy(line, buf, l);
    while (l > 0 && (line[l - 1] == '\r' || line[l - 1] == '\n' || line[l - 1] == ' '))
        l--;
    line[l] = '\0';
    if (strncmp(line, "HTTP/", 5) == 0) {
        /* A new response (after a 100 Continue): forget the last one's headers. */
        op->hdr_etag[0] = '\0';
        op->hdr_mtime = -1;
        op->hdr_has_length = op->hdr_has_range = false;
        return len;
    }
    char *colon = strchr(line, ':');
    if (colon == NULL)
        return len;
    *colon = '\0';
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    if (strcasecmp(line, "etag") == 0) {
        size_t vn = strlen(v);
        if (vn >= 2 && v[0] == '"' && v[vn - 1] == '"') {
            v[vn - 1] = '\0';
            v++;
        }
        snprintf(op->hdr_etag, sizeof(op->hdr_etag), "%s", v);
    } else if (op->kind->last_modified && strcasecmp(line, "last-modified") == 0) {
        time_t t = curl_getdate(v, NULL);
        op->hdr_mtime = t >= 0 ? (int64_t)t : -1;
    } else if (strcasecmp(line, "content-length") == 0) {
        op->hdr_has_length = util_parse_u64(v, strlen(v), UINT64_MAX, &op->hdr_length) == 0;
    } else if (strcasecmp(line, "content-range") == 0) {
        /* "bytes 100-199/1000" */
        unsigned long long a, b, t;
        if (sscanf(v, "bytes %llu-%llu/%llu", &a, &b, &t) == 3) {
            op->hdr_range_start = a;
            op->hdr_total = t;
            op->hdr_has_range = true;
        }
    }
    return len;
}

static size_t on_write(char *ptr, size_t size, size_t n, void *ud)
{
    struct s3_op *op = ud;
    size_t len = size * n;
    if (op->cancelled || op->werror != 0)
        return 0;
    op->last_activity = uv_now(op->c->loop);
    if (op->status == 0)
        curl_easy_getinfo(op->easy, CURLINFO_RESPONSE_CODE, &op->status);
    if (op->status >= 200 && op->status < 300)
        return op->kind->write != NULL ? op->kind->write(op, ptr, len) : len;
    /* An error body: keep the start, enough for Code and Message. */
    if (op->resp.len < OP_MAX_ERRBODY) {
        size_t take = OP_MAX_ERRBODY - op->resp.len;
        util_buf_append(&op->resp, ptr, len < take ? len : take);
    }
    return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *ud)
{
    struct s3_op *op = ud;
    struct s3_client *c = op->c;
    size_t want = size * n;
    uint64_t left;
    const char *src_name = "the body";

    if (op->cancelled)
        return CURL_READFUNC_ABORT;
    left = op->body.len - op->sent;
    if (left == 0)
        return 0;
    if (want > left)
        want = (size_t)left;
    if (op->pace_credit > 0) {
        /* Granted when the attempt was set up (see one_piece in s3__op_send). */
        if (want > op->pace_credit)
            want = (size_t)op->pace_credit;
        op->pace_credit -= want;
    } else if (c->opts.pace_cb != NULL) {
        size_t allowed = c->opts.pace_cb(want, c->opts.pace_arg);
        if (allowed == 0) {
            op->paused = true;
            return CURL_READFUNC_PAUSE;
        }
        if (allowed < want)
            want = allowed;
    }
    if (op->body.data != NULL) {
        memcpy(buf, (const char *)op->body.data + op->sent, want);
    } else {
        ssize_t got = op->body.read(op->sent, buf, want, op->body.read_arg);
        if (got <= 0 || (size_t)got > want) {
            op->werror = UTIL_EIO;
            snprintf(op->wmsg, sizeof(op->wmsg), "reading %s at byte %llu failed%s%s", src_name,
                     (unsigned long long)op->sent, got < 0 ? ": " : " (it ended early)",
                     got < 0 ? strerror((int)-got) : "");
            return CURL_READFUNC_ABORT;
        }
        want = (size_t)got;
    }
    op->sent += want;
    op->last_activity = uv_now(c->loop);
    return want;
}

/*
 * Before each request curl sends. curl resends a request by itself, once the attempt
 * has begun, when a reused connection dies before any byte of the answer: that is one
 * more request than the attempt, and the first may have reached the server, which
 * matters to a conditional PUT (its 412 may then be our own write).
 */
static int on_prereq(void *ud, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
    struct s3_op *op = ud;
    if (++op->sends > 1) {
        op->requests++;
        if (op->req.if_none_match)
            op->may_have_landed = true;
    }
    return CURL_PREREQFUNC_OK;
}

/* curl rewinds a body when it resends a request on a fresh connection by itself. */
static int on_seek(void *ud, curl_off_t offset, int origin)
{
    struct s3_op *op = ud;
    if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > op->body.len)
        return CURL_SEEKFUNC_CANTSEEK;
    op->sent = (uint64_t)offset;
    return CURL_SEEKFUNC_OK;
}

/* ---- sending ---- */

static void on_xfer_done(struct http_xfer *x, CURLcode code, bool cancelled, void *arg);

static void on_stall_check(uv_timer_t *t)
{
    struct s3_op *op = t->data;
    uint64_t now = uv_now(op->c->loop);
    if (!op->in_flight || op->cancelled) {
        uv_timer_stop(t);
        return;
    }
    if (op->paused) {
        op->last_activity = now; /* a paced upload waits by our choice, not the server's */
        return;
    }
    if (now - op->last_activity >= op->c->opts.stall_timeout_ms) {
        uv_timer_stop(t);
        op->stalled = true;
        http_xfer_cancel(&op->xfer); /* on_xfer_done reports it as a timeout */
    }
}

/* Counts a new attempt and forgets what the last one read. */
static void attempt_reset(struct s3_op *op)
{
    op->attempt++;
    op->requests++;
    op->status = 0;
    op->werror = 0;
    op->wmsg[0] = '\0';
    op->errbuf[0] = '\0';
    op->transport_error = false;
    op->resp.len = 0;
    op->sent = 0;
    op->sends = 0;
    op->pace_credit = 0;
    op->paused = false;
    op->hdr_etag[0] = '\0';
    op->hdr_mtime = -1;
    op->hdr_has_length = op->hdr_has_range = false;
}

/*
 * Whether a new attempt begins at now: false when the op is over instead (finished
 * already, past its deadline, or its kind's prepare failed; the op is then finished),
 * else true with the last attempt let go of and the new one's state reset.
 */
static bool attempt_begin(struct s3_op *op, uint64_t now)
{
    struct s3_client *c = op->c;
    if (op->finished)
        return false;
    if (now >= op->deadline) {
        if (op->error == 0)
            s3__op_error(op, S3_ETIMEDOUT, "%s s3://%s/%s: the deadline passed", op->req.method,
                         c->cfg.bucket, op->req.key != NULL ? op->req.key : "");
        s3__op_finish(op, S3_ETIMEDOUT);
        return false;
    }
    s3__attempt_cleanup(op);
    op->error = 0;
    if (op->kind->prepare != NULL && op->kind->prepare(op) != 0) {
        s3__op_finish(op, op->error);
        return false;
    }
    if (op->finished)
        return false;
    attempt_reset(op);
    return true;
}

/*
 * Whether the body goes out with the headers in one send. A small buffer does, as curl
 * does for POSTFIELDS under 64 KiB, rather than in a second send from the read
 * callback: a send on loopback was most of a small PUT's system time. The pace
 * callback is asked for all of it first; what it grants short of that is credit for
 * the read callback, so the rate holds either way.
 */
static bool body_in_one_send(struct s3_op *op)
{
    struct s3_client *c = op->c;
    size_t len, allowed;
    if (!op->req.upload || op->body.data == NULL || op->body.len >= ONE_SEND_MAX)
        return false;
    len = (size_t)op->body.len;
    allowed = len > 0 && c->opts.pace_cb != NULL ? c->opts.pace_cb(len, c->opts.pace_arg) : len;
    if (allowed >= len)
        return true;
    op->pace_credit = allowed;
    return false;
}

/* What every attempt sets on its easy handle: the request, the callbacks, the limits. */
static void easy_set_common(struct s3_op *op, CURL *e, uint64_t remaining)
{
    struct s3_client *c = op->c;
    curl_easy_setopt(e, CURLOPT_URL, op->url);
    if (http_multi_share(c->http) != NULL)
        curl_easy_setopt(e, CURLOPT_SHARE, http_multi_share(c->http));
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, op->errbuf);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, op->headers);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, op);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, op);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, op);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)remaining);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->opts.connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_MAXAGE_CONN, MAX_IDLE_CONN_S);
    if (op->kind->recv_buffer > 0)
        curl_easy_setopt(e, CURLOPT_BUFFERSIZE, op->kind->recv_buffer);
}

/* TLS: always verified; an extra CA is added to the system's, not put in its place. */
static void easy_set_tls(const struct s3_client *c, CURL *e)
{
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (c->cfg.ca_pem != NULL) {
        /*
         * The extra CA as a blob, the system's by hashed directory: a directory is
         * searched per certificate, whereas a bundle in the blob would be parsed whole
         * (about 140 certificates) for every new connection.
         */
        const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
        struct curl_blob b = {c->cfg.ca_pem, c->cfg.ca_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
        curl_easy_setopt(e, CURLOPT_CAINFO, NULL);
        curl_easy_setopt(e, CURLOPT_CAPATH,
                         v != NULL && v->capath != NULL ? v->capath : "/etc/ssl/certs");
    }
}

/* The method and the body: none (HEAD), a buffer, a streamed upload, or a small POST. */
static void easy_set_body(struct s3_op *op, CURL *e, bool one_piece)
{
    const struct s3_req *q = &op->req;
    if (q->head) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (one_piece) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, (const char *)op->body.data);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)op->body.len);
    } else if (q->upload) {
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        if (op->body.len >= PUT_BUFFER)
            /* Larger writes for large bodies: curl's default of 64 KiB was 16,384 sends a GiB. */
            curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, PUT_BUFFER);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)op->body.len);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, op);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, op);
    } else if (strcmp(q->method, "POST") == 0 || q->post_data != NULL) {
        if (strcmp(q->method, "POST") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, q->method);
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->post_data != NULL ? q->post_data : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->post_len);
    } else if (strcmp(q->method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, q->method);
    }
}

/* Hands the set-up handle to the transport, with the stall watchdog on the op's timer. */
static void attempt_start(struct s3_op *op)
{
    struct s3_client *c = op->c;
    struct util_err err;
    op->xfer.easy = op->easy;
    op->xfer.done = on_xfer_done;
    op->xfer.arg = op;
    op->in_flight = true;
    op->stalled = false;
    /* A stale loop time (the loop idle for longer than the stall timeout, as through a
     * re-run's walk served from the node's cache) would end the attempt at its first
     * check, before a byte moved. */
    uv_update_time(c->loop);
    op->last_activity = uv_now(c->loop);
    /* The watchdog: no byte either way for the stall time ends the attempt. */
    uint64_t every = c->opts.stall_timeout_ms / 4 > 50 ? c->opts.stall_timeout_ms / 4 : 50;
    uv_timer_start(&op->timer, on_stall_check, every, every);
    if (http_xfer_start(c->http, &op->xfer, &err) != 0) {
        uv_timer_stop(&op->timer);
        op->in_flight = false;
        s3__op_error(op, S3_ECONN, "%s", err.msg);
        s3__op_finish(op, S3_ECONN);
    }
}

void s3__op_send(struct s3_op *op)
{
    struct s3_client *c = op->c;
    uint64_t now = uv_now(c->loop);
    bool one_piece;

    if (!attempt_begin(op, now))
        return;
    one_piece = body_in_one_send(op);
    s3__request_build(op);
    op->easy = easy_take(c);
    if (op->easy == NULL) {
        s3__op_error(op, UTIL_EIO, "cannot create a curl handle");
        s3__op_finish(op, UTIL_EIO);
        return;
    }
    easy_set_common(op, op->easy, op->deadline - now);
    easy_set_tls(c, op->easy);
    easy_set_body(op, op->easy, one_piece);
    attempt_start(op);
}

static bool curl_code_is_tls(CURLcode code)
{
    return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
           code == CURLE_SSL_CERTPROBLEM || code == CURLE_SSL_ISSUER_ERROR ||
           code == CURLE_SSL_PINNEDPUBKEYNOTMATCH;
}

/* The error for an HTTP status and S3 code that a kind did not handle itself. */
static int status_error(long status, const char *code)
{
    if (status == 401 || status == 403)
        return S3_EDENIED;
    if (status == 404)
        return S3_ENOTFOUND;
    if (status == 412 || strcmp(code, "ConditionalRequestConflict") == 0)
        return S3_EEXISTS;
    return S3_EHTTP;
}

static void on_xfer_done(struct http_xfer *x, CURLcode code, bool cancelled, void *arg)
{
    struct s3_op *op = arg;
    struct s3_client *c = op->c;
    const char *target = op->req.key != NULL ? op->req.key : "";
    op->in_flight = false;
    op->paused = false;
    uv_timer_stop(&op->timer);
    if (cancelled && op->stalled && !op->cancelled) {
        /* The watchdog, not the owner, ended it: a timeout like any other. */
        cancelled = false;
        code = CURLE_OPERATION_TIMEDOUT;
        snprintf(op->errbuf, sizeof(op->errbuf), "no byte moved for %llu ms",
                 (unsigned long long)c->opts.stall_timeout_ms);
    }
    if (op->status == 0 && op->easy != NULL)
        curl_easy_getinfo(op->easy, CURLINFO_RESPONSE_CODE, &op->status);
    if (cancelled || op->cancelled) {
        s3__op_release(op);
        return;
    }
    op->code[0] = '\0';
    if (op->werror != 0) {
        s3__op_error(op, op->werror, "%s s3://%s/%s: %s", op->req.method, c->cfg.bucket, target,
                     op->wmsg);
        op->transport_error = false;
    } else if (code != CURLE_OK) {
        bool tls = curl_code_is_tls(code);
        op->status = 0;
        op->transport_error = !tls;
        s3__op_error(op,
                     tls                                ? S3_ETLS
                     : code == CURLE_OPERATION_TIMEDOUT ? S3_ETIMEDOUT
                                                        : S3_ECONN,
                     "%s %s/%s/%s: %s", op->req.method, c->cfg.endpoint, c->cfg.bucket, target,
                     op->errbuf[0] ? op->errbuf : curl_easy_strerror(code));
    }
    if (c->opts.observe_cb != NULL)
        c->opts.observe_cb(op->req.metric, op->status,
                           op->werror != 0 || code != CURLE_OK ? op->error : 0, 0,
                           c->opts.observe_arg);
    if (op->werror != 0) {
        s3__op_finish(op, op->error);
        return;
    }
    if (code != CURLE_OK) {
        op->kind->complete(op); /* the kind may note the failure (a PUT that may have landed) */
        return;
    }
    if (op->status < 200 || op->status >= 300) {
        char message[256];
        if (op->resp.len > 0)
            s3_error_parse(op->resp.data, op->resp.len, op->code, sizeof(op->code), message,
                           sizeof(message));
        else
            message[0] = '\0';
        s3__op_error(op, status_error(op->status, op->code), "%s s3://%s/%s: HTTP %ld%s%s%s%s",
                     op->req.method, c->cfg.bucket, target, op->status, op->code[0] ? " " : "",
                     op->code, message[0] ? ": " : "", message);
    }
    op->kind->complete(op);
}
