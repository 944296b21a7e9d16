/*
 * The kinds over many keys: ListObjectsV2 (page after page) and DeleteObjects (batch
 * after batch), as their tables of hooks (s3_int.h). The rules they keep are in s3.h's
 * note.
 */
#include "s3/s3_int.h"
#include "s3/s3_xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* The kinds' tables, defined after their hooks. */
static const struct s3_op_kind list_kind, delete_objects_kind;

/* ---- ListObjectsV2 ---- */

static int list_start(struct s3_client *c, const char *prefix, const struct s3_opts *o,
                      s3_list_cb each, s3_done_cb done, void *arg, bool probe, struct s3_op **out,
                      struct util_err *err)
{
    struct s3_op *op;
    if (out != NULL)
        *out = NULL;
    if (c->closing)
        return util_err_set(err, UTIL_EINVAL, "the S3 client is closing");
    if (prefix == NULL)
        prefix = "";
    if (strlen(c->cfg.prefix) + strlen(prefix) > S3_MAX_KEY)
        return util_err_set(err, UTIL_EINVAL, "a listing prefix is longer than a key may be");
    op = s3__op_new(c, &list_kind, o, done, arg);
    op->each = each;
    op->stopped = probe; /* a probe reads one page and delivers nothing */
    op->prefix = s3__full_key(c, prefix);
    op->req.method = "GET";
    op->req.metric = "LIST";
    if (out != NULL)
        *out = op;
    s3__op_send(op);
    return 0;
}

int s3_list(struct s3_client *c, const char *prefix, const struct s3_opts *o, s3_list_cb each,
            s3_done_cb done, void *arg, struct s3_op **out, struct util_err *err)
{
    return list_start(c, prefix, o, each, done, arg, false, out, err);
}

int s3_probe(struct s3_client *c, const struct s3_opts *o, s3_done_cb cb, void *arg,
             struct s3_op **out, struct util_err *err)
{
    return list_start(c, "", o, NULL, cb, arg, true, out, err);
}

static int list_prepare(struct s3_op *op)
{
    s3_list_parser_free(op->lp);
    op->lp = s3_list_parser_new();
    s3__op_clear_params(op);
    s3__op_param(op, "list-type", "2");
    s3__op_param(op, "max-keys", op->stopped ? "1" : "1000");
    s3__op_param(op, "prefix", op->prefix);
    if (op->token != NULL) {
        s3__op_param(op, "continuation-token", op->token);
    } else if (op->o.start_after != NULL && op->o.start_after[0] != '\0') {
        char *sa = s3__full_key(op->c, op->o.start_after);
        s3__op_param(op, "start-after", sa);
        free(sa);
    }
    if (op->o.delimiter != NULL && op->o.delimiter[0] != '\0')
        s3__op_param(op, "delimiter", op->o.delimiter);
    op->error = 0;
    return 0;
}

static size_t list_write(struct s3_op *op, const char *data, size_t len)
{
    struct util_err err;
    if (op->error != 0)
        return len; /* already broken: read the rest, then retry */
    if (s3_list_parser_feed(op->lp, data, len, &err) != 0)
        s3__op_error(op, S3_EPROTO, "LIST s3://%s/%s: %s", op->c->cfg.bucket, op->prefix, err.msg);
    return len;
}

/* A page that is read whole but wrong: retried like a broken reply, within the budget. */
static void list_bad_page(struct s3_op *op)
{
    op->transport_error = true;
    op->status = 0;
    s3__op_retry_or_fail(op);
}

static void list_complete(struct s3_op *op)
{
    struct s3_client *c = op->c;
    const struct s3_list_page *page;
    struct util_err err;
    size_t plen = strlen(op->prefix);
    const char *prev;

    if (op->status < 200 || op->status >= 300) {
        s3__op_retry_or_fail(op);
        return;
    }
    if (op->error != 0) {
        list_bad_page(op);
        return;
    }
    if (s3_list_parser_finish(op->lp, &page, &err) != 0) {
        s3__op_error(op, S3_EPROTO, "LIST s3://%s/%s: %s", c->cfg.bucket, op->prefix, err.msg);
        list_bad_page(op);
        return;
    }
    if (op->stopped) { /* the probe */
        s3__op_finish(op, 0);
        return;
    }
    /* Check the whole page before delivering any of it. */
    prev = op->last_key;
    for (size_t i = 0; i < page->n; i++) {
        const struct s3_object *ob = &page->objects[i];
        if (strncmp(ob->key, op->prefix, plen) != 0) {
            s3__op_error(op, S3_EPROTO,
                         "LIST s3://%s/%s: the server listed \"%.200s\", outside the prefix",
                         c->cfg.bucket, op->prefix, ob->key);
            list_bad_page(op);
            return;
        }
        if (ob->is_prefix)
            continue;
        if (prev != NULL && strcmp(ob->key, prev) <= 0) {
            s3__op_error(op, S3_EPROTO, "LIST s3://%s/%s: the keys are out of order at \"%.200s\"",
                         c->cfg.bucket, op->prefix, ob->key);
            list_bad_page(op);
            return;
        }
        prev = ob->key;
    }
    if (page->truncated && op->token != NULL && strcmp(page->next_token, op->token) == 0) {
        s3__op_error(op, S3_EPROTO,
                     "LIST s3://%s/%s: the server returned the same continuation token twice",
                     c->cfg.bucket, op->prefix);
        s3__op_finish(op, S3_EPROTO);
        return;
    }
    for (size_t i = 0; i < page->n; i++) {
        struct s3_object ob = page->objects[i];
        /* relative to the repository prefix, as s3.h promises: "snapshots/a/b/c/ID.json" */
        ob.key += strlen(c->cfg.prefix);
        if (op->each != NULL && op->each(&ob, op->arg) != 0) {
            s3__op_error(op, S3_ECANCELED, "the listing was stopped by its reader");
            s3__op_finish(op, S3_ECANCELED);
            return;
        }
        if (op->cancelled || op->finished)
            return; /* the callback cancelled the op or closed the client */
    }
    if (!s3__op_page_delivered(op, prev, page->truncated))
        return;
    free(op->token);
    op->token = util_strdup(page->next_token);
    s3__op_send(op);
}

static void list_free(struct s3_op *op)
{
    s3_list_parser_free(op->lp);
    op->lp = NULL;
    free(op->prefix);
    free(op->token);
    free(op->last_key);
    op->prefix = op->token = op->last_key = NULL;
}

static const struct s3_op_kind list_kind = {
    .prepare = list_prepare,
    .write = list_write,
    .complete = list_complete,
    .free = list_free,
};

/* ---- DeleteObjects ---- */

int s3_delete_objects(struct s3_client *c, const char *const *keys, size_t n,
                      const struct s3_opts *o, s3_deleted_cb each, s3_done_cb done, void *arg,
                      struct s3_op **out, struct util_err *err)
{
    struct s3_op *op;
    if (out != NULL)
        *out = NULL;
    if (c->closing)
        return util_err_set(err, UTIL_EINVAL, "the S3 client is closing");
    for (size_t i = 0; i < n; i++) {
        if (keys[i] == NULL || keys[i][0] == '\0')
            return util_err_set(err, UTIL_EINVAL, "key %zu of a DeleteObjects is empty", i);
        if (strlen(c->cfg.prefix) + strlen(keys[i]) > S3_MAX_KEY)
            return util_err_set(err, UTIL_EINVAL, "the key \"%.100s...\" is too long", keys[i]);
        for (const char *p = keys[i]; *p; p++)
            if ((unsigned char)*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
                return util_err_set(err, UTIL_EINVAL,
                                    "the key \"%.100s\" holds a control character that "
                                    "DeleteObjects cannot carry",
                                    keys[i]);
    }
    op = s3__op_new(c, &delete_objects_kind, o, done, arg);
    op->deleted = each;
    op->keys = util_calloc(n > 0 ? n : 1, sizeof(*op->keys));
    op->n_keys = n;
    for (size_t i = 0; i < n; i++)
        op->keys[i].key = s3__full_key(c, keys[i]);
    op->batch = util_calloc(S3_DELETE_BATCH, sizeof(*op->batch));
    op->req.method = "POST";
    op->req.metric = "DELETE_OBJECTS";
    op->req.content_type = "application/xml";
    if (out != NULL)
        *out = op;
    if (n == 0) {
        /* Nothing to do is done, without a request (after the caller has *out). */
        op->requests = 0;
        s3__op_finish(op, 0);
        return 0;
    }
    s3__op_send(op);
    return 0;
}

static int batch_cmp(const void *a, const void *b)
{
    return strcmp((*(struct del_key *const *)a)->key, (*(struct del_key *const *)b)->key);
}

static int lookup_cmp(const void *k, const void *elem)
{
    return strcmp(k, (*(struct del_key *const *)elem)->key);
}

static void base64(const unsigned char *in, size_t n, char *out)
{
    EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

static int del_prepare(struct s3_op *op)
{
    struct util_buf xml;
    struct util_err err;
    unsigned char md[16];
    unsigned int mdn = 0;
    const char **names;
    bool resend = op->n_batch > 0;

    s3__op_clear_params(op);
    s3__op_param(op, "delete", "");
    if (!resend) {
        /* A new batch: the pending keys, in order, at most 1,000. */
        for (size_t i = 0; i < op->n_keys && op->n_batch < S3_DELETE_BATCH; i++)
            if (op->keys[i].state == 0) {
                op->keys[i].state = 1;
                op->keys[i].tries++;
                op->batch[op->n_batch++] = &op->keys[i];
            }
        qsort(op->batch, op->n_batch, sizeof(*op->batch), batch_cmp);
        names = util_calloc(op->n_batch, sizeof(*names));
        for (size_t i = 0; i < op->n_batch; i++)
            names[i] = op->batch[i]->key;
        util_buf_init(&xml);
        if (s3_delete_request_xml(&xml, names, op->n_batch, op->o.quiet, &err) != 0) {
            free(names);
            util_buf_free(&xml);
            return s3__op_error(op, err.code, "%s", err.msg);
        }
        free(names);
        free(op->post);
        op->post_len = xml.len;
        op->post = util_buf_steal(&xml);
        util_buf_free(&xml);
        EVP_Digest(op->post, op->post_len, md, &mdn, EVP_md5(), NULL);
        base64(md, 16, op->req.content_md5);
    }
    op->req.post_data = op->post;
    op->req.post_len = op->post_len;
    op->batch_bad = false;
    return 0;
}

/* The reply, kept whole: it is parsed once complete. */
static size_t del_write(struct s3_op *op, const char *data, size_t len)
{
    if (op->resp.len + len > OP_MAX_DELETE_REPLY) {
        op->werror = S3_EPROTO;
        snprintf(op->wmsg, sizeof(op->wmsg), "the DeleteObjects reply exceeds %u bytes",
                 OP_MAX_DELETE_REPLY);
        return 0;
    }
    util_buf_append(&op->resp, data, len);
    return len;
}

static void key_report(struct s3_op *op, struct del_key *k, int error, const char *code,
                       const char *message)
{
    if (k->reported)
        return;
    k->reported = true;
    k->state = 2;
    if (error != 0)
        op->n_failed++;
    if (op->deleted != NULL && !op->cancelled)
        op->deleted(k->key + strlen(op->c->cfg.prefix), error, code, message, op->arg);
}

static int on_delete_entry(const struct s3_delete_entry *e, void *arg)
{
    struct s3_op *op = arg;
    struct del_key **hit = bsearch(e->key, op->batch, op->n_batch, sizeof(*op->batch), lookup_cmp);
    struct del_key *k;
    if (hit == NULL) {
        op->batch_bad = true;
        s3__op_error(op, S3_EPROTO,
                     "DeleteObjects s3://%s: the reply names \"%.200s\", which was not asked for",
                     op->c->cfg.bucket, e->key);
        return S3_EPROTO;
    }
    k = *hit;
    if (k->state != 1)
        return 0; /* a duplicate entry: the first one counts */
    if (e->deleted) {
        key_report(op, k, 0, "", "");
        return 0;
    }
    free(k->code);
    free(k->message);
    k->code = util_strdup(e->code);
    k->message = util_strdup(e->message);
    if (s3_retryable(0, e->code, false) && k->tries < op->c->opts.max_attempts) {
        k->state = 0; /* again, in a later batch */
        return 0;
    }
    key_report(op, k, S3_EHTTP, e->code, e->message);
    return 0;
}

static void on_del_timer(uv_timer_t *t)
{
    s3__op_send(t->data);
}

static void del_complete(struct s3_op *op)
{
    struct s3_client *c = op->c;
    struct util_err err;
    bool retry_keys = false;
    unsigned max_tries = 0;

    if (op->status < 200 || op->status >= 300) {
        s3__op_retry_or_fail(op); /* the same batch again, or every key reported */
        return;
    }
    int rc = s3_delete_result_parse(op->resp.data != NULL ? op->resp.data : "", op->resp.len,
                                    on_delete_entry, op, &err);
    if (op->cancelled || op->finished)
        return;
    if (rc != 0) {
        if (!op->batch_bad)
            s3__op_error(op, S3_EPROTO, "DeleteObjects s3://%s: %s", c->cfg.bucket, err.msg);
        /* A reply we cannot read is retried whole; one naming a stranger is not. */
        if (op->batch_bad) {
            s3__op_finish(op, S3_EPROTO);
            return;
        }
        /* Keys already reported stay reported; the rest go again. */
        for (size_t i = 0; i < op->n_batch; i++) {
            struct del_key *k = op->batch[i];
            if (k->state == 0)
                k->state = 1;
        }
        op->transport_error = true;
        op->status = 0;
        s3__op_retry_or_fail(op);
        return;
    }
    for (size_t i = 0; i < op->n_batch; i++) {
        struct del_key *k = op->batch[i];
        if (k->state == 1) {
            if (op->o.quiet) {
                key_report(op, k, 0, "", ""); /* quiet: silence means deleted */
            } else if (k->tries < c->opts.max_attempts) {
                k->state = 0;
            } else {
                key_report(op, k, S3_EPROTO, "NoResult", "the server's reply never named this key");
            }
        }
        if (k->state == 0) {
            retry_keys = true;
            if (k->tries > max_tries)
                max_tries = k->tries;
        }
        if (op->finished)
            return;
    }
    op->n_batch = 0;
    op->attempt = 0;
    bool pending = false;
    for (size_t i = 0; i < op->n_keys && !pending; i++)
        pending = op->keys[i].state == 0;
    if (!pending) {
        if (op->n_failed > 0) {
            s3__op_error(op, S3_EPARTIAL, "DeleteObjects s3://%s: %zu of %zu keys were not deleted",
                         c->cfg.bucket, op->n_failed, op->n_keys);
            s3__op_finish(op, S3_EPARTIAL);
        } else {
            s3__op_finish(op, 0);
        }
        return;
    }
    if (retry_keys) {
        uint64_t delay = s3_backoff_delay(max_tries - 1, c->opts.backoff_base_ms,
                                          c->opts.backoff_cap_ms, (uint32_t)uv_hrtime());
        if (uv_now(c->loop) + delay < op->deadline) {
            uv_timer_start(&op->timer, on_del_timer, delay, 0);
            return;
        }
    }
    s3__op_send(op);
}

/* The op ends with an error: every key not yet reported is reported now, never dropped. */
static void del_fail(struct s3_op *op)
{
    for (size_t i = 0; i < op->n_keys; i++) {
        struct del_key *k = &op->keys[i];
        if (k->reported)
            continue;
        if (k->code != NULL)
            key_report(op, k, S3_EHTTP, k->code, k->message != NULL ? k->message : "");
        else
            key_report(op, k, op->error != 0 ? op->error : S3_EHTTP,
                       op->code[0] ? op->code : "NotDeleted", op->msg);
    }
}

static void del_free(struct s3_op *op)
{
    for (size_t i = 0; i < op->n_keys; i++) {
        free(op->keys[i].key);
        free(op->keys[i].code);
        free(op->keys[i].message);
    }
    free(op->keys);
    free(op->batch);
    op->keys = NULL;
    op->batch = NULL;
    op->n_keys = 0;
}

static const struct s3_op_kind delete_objects_kind = {
    .prepare = del_prepare,
    .write = del_write,
    .complete = del_complete,
    .fail = del_fail,
    .free = del_free,
};
