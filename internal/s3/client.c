/*
 * The life of operations and of the client: creating an op, reporting it done,
 * retrying it after a backoff, cancelling, and closing the client once curl has let go
 * of every transfer. Sending one attempt and reading its reply is request.c's; what
 * each kind of operation does with a reply is its kind's hooks' (s3_int.h).
 */
#include "s3/s3_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ATTEMPTS    6
#define DEFAULT_BASE_MS     100
#define DEFAULT_CAP_MS      10000
#define DEFAULT_DEADLINE_MS (10 * 60 * 1000)
#define DEFAULT_CONNECT_MS  10000
#define DEFAULT_STALL_MS    30000

static uint32_t client_rand(struct s3_client *c)
{
    /* xorshift64*: jitter only, nothing here needs to be unpredictable. */
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (uint32_t)((c->rng * 2685821657736338717ULL) >> 32);
}

char *s3__full_key(const struct s3_client *c, const char *rel)
{
    return util_asprintf("%s%s", c->cfg.prefix, rel);
}

int s3__check_key(const struct s3_client *c, const char *key, struct util_err *err)
{
    size_t n;
    if (key == NULL || key[0] == '\0')
        return util_err_set(err, UTIL_EINVAL, "an object key is empty");
    n = strlen(c->cfg.prefix) + strlen(key);
    if (n > S3_MAX_KEY)
        return util_err_set(err, UTIL_EINVAL, "the key \"%.100s...\" is longer than %d bytes", key,
                            S3_MAX_KEY);
    return 0;
}

int s3__closing_error(const struct s3_client *c, struct util_err *err)
{
    return c->closing ? util_err_set(err, UTIL_EINVAL, "the S3 client is closing") : 0;
}

int s3__op_error(struct s3_op *op, int error, const char *fmt, ...)
{
    va_list ap;
    op->error = error;
    va_start(ap, fmt);
    vsnprintf(op->msg, sizeof(op->msg), fmt, ap);
    va_end(ap);
    return error;
}

/* ---- life of an op ---- */

static void client_maybe_finish(struct s3_client *c);

static void on_op_timer_closed(uv_handle_t *h)
{
    struct s3_op *op = h->data;
    struct s3_client *c = op->c;
    util_list_remove(&op->link);
    free(op);
    c->n_ops--;
    client_maybe_finish(c);
}

/* Frees what the op holds and closes its timer (the op itself goes in the close callback). */
void s3__op_release(struct s3_op *op)
{
    if (op->timer_closing)
        return;
    op->timer_closing = true;
    op->c->running--;
    s3__attempt_cleanup(op);
    if (op->kind->free != NULL)
        op->kind->free(op);
    free(op->post);
    op->post = NULL;
    util_buf_free(&op->resp);
    util_buf_free(&op->mem);
    s3__op_clear_params(op);
    free(op->req.key);
    free(op->start_after);
    free(op->delimiter);
    uv_close((uv_handle_t *)&op->timer, on_op_timer_closed);
}

void s3__op_finish(struct s3_op *op, int error)
{
    struct s3_result res = {.error = error,
                            .status = op->status,
                            .code = op->code,
                            .message = error != 0 ? op->msg : "",
                            .requests = op->requests,
                            .etag = "",
                            .mtime = -1};
    if (op->finished)
        return;
    op->finished = true;
    uv_timer_stop(&op->timer);
    if (error == 0)
        op->code[0] = '\0';
    res.upload_id = "";
    if (op->kind->result != NULL)
        op->kind->result(op, &res);
    if (error != 0 && op->kind->fail != NULL)
        op->kind->fail(op);
    struct s3_client *c = op->c;
    if (!op->cancelled && op->done != NULL)
        op->done(&res, op->arg);
    s3__op_release(op);
    if (c->opts.step_loop)
        uv_stop(c->loop);
}

struct s3_op *s3__op_new(struct s3_client *c, const struct s3_op_kind *kind,
                         const struct s3_opts *o, s3_done_cb done, void *arg)
{
    static const struct s3_opts none;
    struct s3_op *op = util_calloc(1, sizeof(*op));
    op->c = c;
    op->kind = kind;
    op->o = o != NULL ? *o : none;
    op->start_after = op->o.start_after != NULL ? util_strdup(op->o.start_after) : NULL;
    op->delimiter = op->o.delimiter != NULL ? util_strdup(op->o.delimiter) : NULL;
    op->o.start_after = op->start_after;
    op->o.delimiter = op->delimiter;
    op->done = done;
    op->arg = arg;
    op->obj_mtime = -1;
    /* The loop may not have run for a long time (a backup's walk between two requests,
     * all from the node's cache): its cached time would start the deadline in the past. */
    uv_update_time(c->loop);
    op->deadline =
        uv_now(c->loop) + (op->o.deadline_ms != 0 ? op->o.deadline_ms : c->opts.deadline_ms);
    util_buf_init(&op->resp);
    util_buf_init(&op->mem);
    uv_timer_init(c->loop, &op->timer);
    op->timer.data = op;
    util_list_push_front(&c->ops, &op->link);
    c->n_ops++;
    c->running++;
    return op;
}

void s3__op_param(struct s3_op *op, const char *name, const char *value)
{
    if (op->req.n_params >= OP_MAX_PARAMS) {
        fprintf(stderr, "lodestore: s3: too many query parameters\n");
        abort();
    }
    op->req.params[op->req.n_params].name = util_strdup(name);
    op->req.params[op->req.n_params].value = util_strdup(value);
    op->req.n_params++;
}

void s3__op_clear_params(struct s3_op *op)
{
    for (size_t i = 0; i < op->req.n_params; i++) {
        free((char *)op->req.params[i].name);
        free((char *)op->req.params[i].value);
    }
    op->req.n_params = 0;
}

void s3_op_cancel(struct s3_op *op)
{
    if (op->cancelled || op->finished)
        return;
    op->cancelled = true;
    op->finished = true;
    if (op->in_flight)
        http_xfer_cancel(&op->xfer); /* released in the done callback */
    else
        s3__op_release(op);
}

/* ---- how an attempt ended ---- */

bool s3__op_page_delivered(struct s3_op *op, const char *prev, bool truncated)
{
    if (prev != op->last_key) {
        char *k = util_strdup(prev); /* prev points into the page, freed after this */
        free(op->last_key);
        op->last_key = k;
    }
    if (!truncated) {
        s3__op_finish(op, 0);
        return false;
    }
    op->attempt = 0; /* the next page has its own retry budget */
    return true;
}

static void on_retry_timer(uv_timer_t *t)
{
    s3__op_send(t->data);
}

void s3__op_retry_or_fail(struct s3_op *op)
{
    struct s3_client *c = op->c;
    uint64_t now = uv_now(c->loop), delay;
    bool retry = op->werror == 0 && s3_retryable(op->status, op->code, op->transport_error);
    if (!retry) {
        s3__op_finish(op, op->error);
        return;
    }
    if (op->attempt >= c->opts.max_attempts) {
        size_t n = strlen(op->msg);
        snprintf(op->msg + n, sizeof(op->msg) - n, " (gave up after %u attempts)", op->attempt);
        s3__op_finish(op, op->error);
        return;
    }
    delay = s3_backoff_delay(op->attempt - 1, c->opts.backoff_base_ms, c->opts.backoff_cap_ms,
                             client_rand(c));
    if (now + delay >= op->deadline) {
        size_t n = strlen(op->msg);
        snprintf(op->msg + n, sizeof(op->msg) - n,
                 " (no retry: the operation's deadline comes first)");
        s3__op_finish(op, op->error);
        return;
    }
    uv_timer_start(&op->timer, on_retry_timer, delay, 0);
}

/* ---- the client ---- */

int s3_client_init(uv_loop_t *loop, struct s3_client **out, const struct s3_config *cfg,
                   const struct s3_client_opts *opts, struct util_err *err)
{
    static const struct s3_client_opts none;
    struct s3_client *c;
    int rc;
    *out = NULL;
    if (opts == NULL)
        opts = &none;
    if (cfg->endpoint == NULL || cfg->bucket == NULL || cfg->access_key == NULL ||
        cfg->secret_key == NULL || cfg->region == NULL || cfg->host == NULL)
        return util_err_set(err, UTIL_EINVAL,
                            "the S3 configuration lacks an endpoint, bucket, region or keys");
    c = util_calloc(1, sizeof(*c));
    c->loop = loop;
    util_list_init(&c->ops);
    c->signer = s3_signer_new();
    c->opts = *opts;
    if (c->opts.max_attempts == 0)
        c->opts.max_attempts = DEFAULT_ATTEMPTS;
    if (c->opts.backoff_base_ms == 0)
        c->opts.backoff_base_ms = DEFAULT_BASE_MS;
    if (c->opts.backoff_cap_ms == 0)
        c->opts.backoff_cap_ms = DEFAULT_CAP_MS;
    if (c->opts.deadline_ms == 0)
        c->opts.deadline_ms = DEFAULT_DEADLINE_MS;
    if (c->opts.connect_timeout_ms == 0)
        c->opts.connect_timeout_ms = DEFAULT_CONNECT_MS;
    if (c->opts.stall_timeout_ms == 0)
        c->opts.stall_timeout_ms = DEFAULT_STALL_MS;
    c->user_agent = util_strdup(opts->user_agent != NULL ? opts->user_agent : "lodestore");
    c->opts.user_agent = c->user_agent;
    c->rng = opts->seed != 0 ? opts->seed : (uv_hrtime() ^ (uint64_t)(uintptr_t)c);
    if (c->rng == 0)
        c->rng = 1;
    c->cfg.endpoint = util_strdup(cfg->endpoint);
    c->cfg.host = util_strdup(cfg->host);
    c->cfg.bucket = util_strdup(cfg->bucket);
    c->cfg.prefix = util_strdup(cfg->prefix != NULL ? cfg->prefix : "");
    c->cfg.region = util_strdup(cfg->region);
    c->cfg.access_key = util_strdup(cfg->access_key);
    c->cfg.secret_key = util_strdup(cfg->secret_key);
    c->cfg.session_token = cfg->session_token != NULL ? util_strdup(cfg->session_token) : NULL;
    if (cfg->ca_pem != NULL) {
        c->cfg.ca_pem = util_strndup(cfg->ca_pem, cfg->ca_len);
        c->cfg.ca_len = cfg->ca_len;
    }
    c->cfg.allow_plain_http = cfg->allow_plain_http;
    memcpy(c->cfg.lock_mode, cfg->lock_mode, sizeof(c->cfg.lock_mode));
    c->cfg.lock_days = cfg->lock_days;
    if (opts->http != NULL) {
        c->http = opts->http;
    } else {
        if ((rc = http_multi_init(loop, &c->http, err)) != 0) {
            s3_config_free(&c->cfg);
            s3_signer_free(c->signer);
            free(c->user_agent);
            free(c);
            return rc;
        }
        c->own_http = true;
    }
    *out = c;
    return 0;
}

static void client_free(void *arg)
{
    struct s3_client *c = arg;
    s3_close_cb cb = c->close_cb;
    void *cb_arg = c->close_arg;
    s3_config_free(&c->cfg);
    s3_signer_free(c->signer);
    free(c->user_agent);
    free(c);
    if (cb != NULL)
        cb(cb_arg);
}

static void client_maybe_finish(struct s3_client *c)
{
    if (!c->closing || c->n_ops > 0)
        return;
    c->n_ops = 1;          /* once */
    s3__easy_idle_free(c); /* before the transport goes: they hold its share handle */
    if (c->own_http)
        http_multi_close(c->http, client_free, c);
    else
        client_free(c);
}

static struct s3_op *op_of(struct util_list *l)
{
    return util_list_entry(l, struct s3_op, link);
}

/* The first op from the head of c's list that want accepts, or NULL. */
static struct s3_op *first_op(struct s3_client *c, bool (*want)(const struct s3_op *op))
{
    struct util_list *l;
    util_list_for_each (l, &c->ops) {
        if (want(op_of(l)))
            return op_of(l);
    }
    return NULL;
}

static bool op_to_let_go(const struct s3_op *op)
{
    return !op->cancelled && !op->timer_closing;
}

static void mark_to_resume(struct s3_op *op)
{
    op->resume_me = op->paused && op->in_flight;
}

static bool op_to_resume(const struct s3_op *op)
{
    return op->resume_me;
}

void s3_client_close(struct s3_client *c, s3_close_cb cb, void *arg)
{
    struct s3_op *op;
    if (c->closing)
        return;
    c->closing = true;
    c->close_cb = cb;
    c->close_arg = arg;
    c->n_ops++; /* hold the client while its ops go */
    while ((op = first_op(c, op_to_let_go)) != NULL) {
        if (op->finished) {
            op->cancelled = true;
            s3__op_release(op);
        } else {
            s3_op_cancel(op);
        }
    }
    /*
     * The kept easy handles go now, not when the last op's timer has closed: they hold
     * the transport's share handle, and a borrowed transport may be closed right after
     * this returns (the controller closes its S3 clients, then the Kubernetes client).
     */
    s3__easy_idle_free(c);
    c->n_ops--;
    client_maybe_finish(c);
}

void s3_client_resume(struct s3_client *c)
{
    struct util_list *l;
    struct s3_op *op;
    /*
     * Only the transfers paused now: a resumed one may pause again at once. A resume
     * may finish ops (and free them), so look for the next from the head.
     */
    util_list_for_each (l, &c->ops) {
        mark_to_resume(op_of(l));
    }
    while ((op = first_op(c, op_to_resume)) != NULL) {
        op->resume_me = false;
        op->paused = false;
        http_xfer_resume(&op->xfer);
    }
}

size_t s3_client_running(const struct s3_client *c)
{
    return c->running;
}

const struct s3_config *s3_client_config(const struct s3_client *c)
{
    return &c->cfg;
}
