/*
 * The kinds on one key: PUT (with its HEAD check), GET, HEAD, DELETE and CreateBucket;
 * what each sends and what it makes of the reply, as its table of hooks (s3_int.h).
 * The machinery (signing, sending, retrying) is the engine's (client.c, request.c);
 * the listing and DeleteObjects kinds are in batch.c, the multipart ones in
 * multipart.c.
 */
#include "s3/s3_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#define GET_DEFAULT_MAX ((uint64_t)64 << 20)
/*
 * curl's receive buffer for a GET: a GiB in 16 KiB reads (curl's default) was 65,536
 * recv and poll calls. Kept easy handles keep the buffer.
 */
#define GET_BUFFER (256L << 10)

/* The kinds' tables, defined after their hooks. */
static const struct s3_op_kind put_kind, get_kind, head_kind, delete_kind, create_bucket_kind;

static void md5_hex_of(struct s3_op *op);

static void op_start(struct s3_op *op, struct s3_op **out)
{
    if (out != NULL)
        *out = op;
    s3__op_send(op);
}

/* ---- PUT ---- */

int s3__body_check(const struct s3_body *body, struct util_err *err)
{
    if (body == NULL || (body->data == NULL && body->read == NULL && body->len > 0))
        return util_err_set(err, UTIL_EINVAL, "a PUT needs a body (a buffer or a reader)");
    if (body->sha256_hex != NULL && strlen(body->sha256_hex) != 64)
        return util_err_set(err, UTIL_EINVAL, "a body's SHA-256 must be 64 hex digits");
    return 0;
}

void s3__body_take(struct s3_op *op, const struct s3_body *body)
{
    struct s3_client *c = op->c;
    op->body = *body;
    op->body.sha256_hex = NULL;
    if (body->sha256_hex != NULL) {
        for (int i = 0; i < 64; i++)
            op->sha256[i] = (char)((body->sha256_hex[i] >= 'A' && body->sha256_hex[i] <= 'F')
                                       ? body->sha256_hex[i] - 'A' + 'a'
                                       : body->sha256_hex[i]);
        op->sha256[64] = '\0';
        op->body.sha256_hex = op->sha256;
    } else if (body->data != NULL || body->len == 0) {
        static const char empty[1];
        if (op->body.data == NULL)
            op->body.data = empty;
        s3_signer_sha256_hex(c->signer, op->body.data, (size_t)op->body.len, op->sha256);
    }
    op->body.content_type = NULL;
    op->req.content_type = body->content_type; /* borrowed for the op's life, like data */
}

int s3_put(struct s3_client *c, const char *key, const struct s3_body *body,
           const struct s3_opts *o, s3_done_cb cb, void *arg, struct s3_op **out,
           struct util_err *err)
{
    struct s3_op *op;
    int rc;
    if (out != NULL)
        *out = NULL;
    if ((rc = s3__closing_error(c, err)) != 0 || (rc = s3__check_key(c, key, err)) != 0)
        return rc;
    if ((rc = s3__body_check(body, err)) != 0)
        return rc;
    op = s3__op_new(c, &put_kind, o, cb, arg);
    s3__body_take(op, body);
    op->req.method = "PUT";
    op->req.metric = "PUT";
    op->req.key = s3__full_key(c, key);
    op->req.upload = true;
    op->req.lock = true;
    op->req.if_none_match = op->o.if_none_match;
    op_start(op, out);
    return 0;
}

static void put_complete(struct s3_op *op)
{
    if (op->req.head) {
        /* The HEAD check of a conditional PUT whose earlier attempt may have landed. */
        if (op->status == 200) {
            md5_hex_of(op);
            if (op->md5_hex[0] != '\0' && strcasecmp(op->hdr_etag, op->md5_hex) == 0) {
                snprintf(op->put_etag, sizeof(op->put_etag), "%s", op->hdr_etag);
                s3__op_finish(op, 0);
                return;
            }
            s3__op_error(op, S3_EEXISTS,
                         "PUT s3://%s/%s: the key already exists with other content",
                         op->c->cfg.bucket, op->req.key);
            s3__op_finish(op, S3_EEXISTS);
            return;
        }
        if (op->status == 404) {
            s3__op_error(op, S3_EEXISTS,
                         "PUT s3://%s/%s: the key existed when written and is gone now",
                         op->c->cfg.bucket, op->req.key);
            s3__op_finish(op, S3_EEXISTS);
            return;
        }
        s3__op_retry_or_fail(op);
        return;
    }
    if (op->status >= 200 && op->status < 300) {
        snprintf(op->put_etag, sizeof(op->put_etag), "%s", op->hdr_etag);
        s3__op_finish(op, 0);
        return;
    }
    if (op->o.if_none_match &&
        (op->status == 412 ||
         (op->status == 409 && strcmp(op->code, "ConditionalRequestConflict") == 0))) {
        if (!op->may_have_landed) {
            s3__op_error(op, S3_EEXISTS, "PUT s3://%s/%s: the key already exists",
                         op->c->cfg.bucket, op->req.key);
            s3__op_finish(op, S3_EEXISTS);
            return;
        }
        /* Ours, landed by an attempt that seemed to fail, or someone else's? Ask. */
        op->req.head = true;
        op->req.upload = false;
        op->req.if_none_match = false;
        op->req.method = "HEAD";
        op->req.metric = "HEAD";
        op->attempt = 0;
        s3__op_send(op);
        return;
    }
    /* Anything that may have reached the server may have been committed there. */
    if (op->o.if_none_match && (op->status == 0 || op->status >= 500))
        op->may_have_landed = true;
    s3__op_retry_or_fail(op);
}

static void put_result(struct s3_op *op, struct s3_result *res)
{
    res->etag = op->put_etag;
}

static const struct s3_op_kind put_kind = {
    .complete = put_complete,
    .result = put_result,
};

/* The MD5 of the body (the ETag S3 gives a single PUT), read again for a streamed body. */
static void md5_hex_of(struct s3_op *op)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[16];
    unsigned int n = 0;
    EVP_MD_CTX *ctx;
    if (op->md5_hex[0] != '\0')
        return;
    ctx = EVP_MD_CTX_new();
    if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return;
    }
    if (op->body.data != NULL) {
        EVP_DigestUpdate(ctx, op->body.data, (size_t)op->body.len);
    } else {
        char buf[65536];
        uint64_t off = 0;
        while (off < op->body.len) {
            size_t want =
                op->body.len - off < sizeof(buf) ? (size_t)(op->body.len - off) : sizeof(buf);
            ssize_t got = op->body.read(off, buf, want, op->body.read_arg);
            if (got <= 0) {
                EVP_MD_CTX_free(ctx);
                return; /* unknown: the check then says "exists" */
            }
            EVP_DigestUpdate(ctx, buf, (size_t)got);
            off += (uint64_t)got;
        }
    }
    EVP_DigestFinal_ex(ctx, md, &n);
    EVP_MD_CTX_free(ctx);
    for (int i = 0; i < 16; i++) {
        op->md5_hex[2 * i] = digits[md[i] >> 4];
        op->md5_hex[2 * i + 1] = digits[md[i] & 15];
    }
    op->md5_hex[32] = '\0';
}

void s3__body_md5_base64(const struct s3_op *op, char out[32])
{
    unsigned char md[16];
    unsigned int n = 0;
    EVP_Digest(op->body.data, (size_t)op->body.len, md, &n, EVP_md5(), NULL);
    EVP_EncodeBlock((unsigned char *)out, md, 16);
}

/* ---- GET and HEAD ---- */

int s3_get(struct s3_client *c, const char *key, const struct s3_opts *o, s3_write_cb sink,
           s3_done_cb cb, void *arg, struct s3_op **out, struct util_err *err)
{
    struct s3_op *op;
    int rc;
    if (out != NULL)
        *out = NULL;
    if ((rc = s3__closing_error(c, err)) != 0 || (rc = s3__check_key(c, key, err)) != 0)
        return rc;
    op = s3__op_new(c, &get_kind, o, cb, arg);
    if (op->o.max_bytes == 0)
        op->o.max_bytes = GET_DEFAULT_MAX;
    op->sink = sink;
    op->req.method = "GET";
    op->req.metric = "GET";
    op->req.key = s3__full_key(c, key);
    op_start(op, out);
    return 0;
}

int s3_head(struct s3_client *c, const char *key, const struct s3_opts *o, s3_done_cb cb, void *arg,
            struct s3_op **out, struct util_err *err)
{
    struct s3_op *op;
    int rc;
    if (out != NULL)
        *out = NULL;
    if ((rc = s3__closing_error(c, err)) != 0 || (rc = s3__check_key(c, key, err)) != 0)
        return rc;
    op = s3__op_new(c, &head_kind, o, cb, arg);
    op->req.method = "HEAD";
    op->req.metric = "HEAD";
    op->req.head = true;
    op->req.key = s3__full_key(c, key);
    op_start(op, out);
    return 0;
}

static int get_prepare(struct s3_op *op)
{
    uint64_t from = op->o.range_start + op->delivered;
    op->pos_in_resp = 0;
    op->resp_first = UINT64_MAX; /* not known until the first byte */
    if (op->o.range_len > 0)
        snprintf(op->req.range, sizeof(op->req.range), "bytes=%llu-%llu", (unsigned long long)from,
                 (unsigned long long)(op->o.range_start + op->o.range_len - 1));
    else if (from > 0)
        snprintf(op->req.range, sizeof(op->req.range), "bytes=%llu-", (unsigned long long)from);
    else
        op->req.range[0] = '\0';
    /* A resumed read must be of the same object. */
    if (op->delivered > 0 && op->get_etag[0] != '\0')
        snprintf(op->req.if_match, sizeof(op->req.if_match), "\"%s\"", op->get_etag);
    return 0;
}

static size_t get_write(struct s3_op *op, const char *data, size_t len)
{
    uint64_t want_abs = op->o.range_start + op->delivered;
    uint64_t end_abs = op->o.range_len > 0 ? op->o.range_start + op->o.range_len : UINT64_MAX;
    if (op->resp_first == UINT64_MAX) {
        /* The first byte of this reply: where in the object it starts. */
        op->resp_first = op->status == 206 && op->hdr_has_range ? op->hdr_range_start : 0;
        op->pos_in_resp = op->resp_first;
        if (op->get_etag[0] == '\0') {
            snprintf(op->get_etag, sizeof(op->get_etag), "%s", op->hdr_etag);
            op->obj_mtime = op->hdr_mtime;
            op->obj_size = op->status == 206 && op->hdr_has_range ? op->hdr_total : op->hdr_length;
        } else if (op->hdr_etag[0] != '\0' && strcmp(op->hdr_etag, op->get_etag) != 0) {
            op->werror = S3_EHTTP;
            snprintf(op->wmsg, sizeof(op->wmsg), "the object changed while it was being read");
            return 0;
        }
    }
    uint64_t a = op->pos_in_resp, b = op->pos_in_resp + len;
    op->pos_in_resp = b;
    if (b <= want_abs || a >= end_abs)
        return len;
    uint64_t from = a < want_abs ? want_abs : a;
    uint64_t to = b > end_abs ? end_abs : b;
    const char *p = data + (from - a);
    size_t n = (size_t)(to - from);
    if (from != want_abs) {
        op->werror = S3_EPROTO;
        snprintf(op->wmsg, sizeof(op->wmsg), "the reply skipped bytes of the object");
        return 0;
    }
    if (op->sink != NULL) {
        if (op->sink(p, n, op->arg) != 0) {
            op->werror = S3_ECANCELED;
            snprintf(op->wmsg, sizeof(op->wmsg), "stopped by its reader");
            return 0;
        }
    } else {
        if (op->mem.len + n > op->o.max_bytes) {
            op->werror = S3_ETOOBIG;
            snprintf(op->wmsg, sizeof(op->wmsg), "the object is larger than %llu bytes",
                     (unsigned long long)op->o.max_bytes);
            return 0;
        }
        util_buf_append(&op->mem, p, n);
    }
    op->delivered += n;
    return len;
}

/* A GET or HEAD answered other than 2xx. */
static void get_failed(struct s3_op *op)
{
    if (op->status == 404) {
        s3__op_finish(op, S3_ENOTFOUND);
        return;
    }
    if (op->status == 412 && op->delivered > 0) {
        s3__op_error(op, S3_EHTTP, "GET s3://%s/%s: the object changed while it was being read",
                     op->c->cfg.bucket, op->req.key);
        s3__op_finish(op, S3_EHTTP);
        return;
    }
    s3__op_retry_or_fail(op);
}

static void get_complete(struct s3_op *op)
{
    if (op->status >= 200 && op->status < 300) {
        if (op->resp_first == UINT64_MAX) {
            /* An empty body: facts from the headers. */
            if (op->get_etag[0] == '\0') {
                snprintf(op->get_etag, sizeof(op->get_etag), "%s", op->hdr_etag);
                op->obj_mtime = op->hdr_mtime;
                op->obj_size = op->hdr_has_range ? op->hdr_total : op->hdr_length;
            }
        }
        uint64_t start = op->o.range_start;
        uint64_t expect = op->obj_size > start ? op->obj_size - start : 0;
        if (op->o.range_len > 0 && op->o.range_len < expect)
            expect = op->o.range_len;
        if (op->delivered < expect) {
            op->transport_error = true;
            op->status = 0;
            s3__op_error(op, S3_ECONN, "GET s3://%s/%s: the reply ended after %llu of %llu bytes",
                         op->c->cfg.bucket, op->req.key, (unsigned long long)op->delivered,
                         (unsigned long long)expect);
            s3__op_retry_or_fail(op);
            return;
        }
        if (op->sink == NULL)
            util_buf_append(&op->mem, "", 0);
        s3__op_finish(op, 0);
        return;
    }
    get_failed(op);
}

static void head_complete(struct s3_op *op)
{
    if (op->status >= 200 && op->status < 300) {
        snprintf(op->get_etag, sizeof(op->get_etag), "%s", op->hdr_etag);
        op->obj_mtime = op->hdr_mtime;
        op->obj_size = op->hdr_length;
        s3__op_finish(op, 0);
        return;
    }
    get_failed(op);
}

static void head_result(struct s3_op *op, struct s3_result *res)
{
    res->etag = op->get_etag;
    res->size = op->obj_size;
    res->mtime = op->obj_mtime;
}

static void get_result(struct s3_op *op, struct s3_result *res)
{
    head_result(op, res);
    if (op->sink == NULL) {
        res->body = op->mem.data != NULL ? op->mem.data : "";
        res->body_len = op->mem.len;
    }
}

static const struct s3_op_kind get_kind = {
    .prepare = get_prepare,
    .write = get_write,
    .complete = get_complete,
    .result = get_result,
    .last_modified = true,
    .recv_buffer = GET_BUFFER,
};

static const struct s3_op_kind head_kind = {
    .complete = head_complete,
    .result = head_result,
    .last_modified = true,
};

/* ---- DELETE, CreateBucket ---- */

int s3_delete(struct s3_client *c, const char *key, const struct s3_opts *o, s3_done_cb cb,
              void *arg, struct s3_op **out, struct util_err *err)
{
    struct s3_op *op;
    int rc;
    if (out != NULL)
        *out = NULL;
    if ((rc = s3__closing_error(c, err)) != 0 || (rc = s3__check_key(c, key, err)) != 0)
        return rc;
    op = s3__op_new(c, &delete_kind, o, cb, arg);
    op->req.method = "DELETE";
    op->req.metric = "DELETE";
    op->req.key = s3__full_key(c, key);
    op_start(op, out);
    return 0;
}

int s3_create_bucket(struct s3_client *c, const struct s3_opts *o, s3_done_cb cb, void *arg,
                     struct s3_op **out, struct util_err *err)
{
    struct s3_op *op;
    int rc;
    if (out != NULL)
        *out = NULL;
    if ((rc = s3__closing_error(c, err)) != 0)
        return rc;
    op = s3__op_new(c, &create_bucket_kind, o, cb, arg);
    op->req.method = "PUT";
    op->req.metric = "CREATE_BUCKET";
    if (strcmp(c->cfg.region, "us-east-1") != 0) {
        op->post = util_asprintf("<CreateBucketConfiguration "
                                 "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                                 "<LocationConstraint>%s</LocationConstraint>"
                                 "</CreateBucketConfiguration>",
                                 c->cfg.region);
        op->post_len = strlen(op->post);
        op->req.post_data = op->post;
        op->req.post_len = op->post_len;
        op->req.content_type = "application/xml";
    } else {
        op->req.post_data = "";
        op->req.post_len = 0;
    }
    op_start(op, out);
    return 0;
}

static void delete_complete(struct s3_op *op)
{
    if ((op->status >= 200 && op->status < 300) ||
        (op->status == 404 && strcmp(op->code, "NoSuchBucket") != 0)) {
        s3__op_finish(op, 0); /* a 404 of the key: already gone, which is what was asked */
        return;
    }
    s3__op_retry_or_fail(op);
}

static void create_bucket_complete(struct s3_op *op)
{
    if (op->status >= 200 && op->status < 300) {
        s3__op_finish(op, 0);
        return;
    }
    if (op->status == 409) {
        if (strcmp(op->code, "BucketAlreadyOwnedByYou") == 0) {
            s3__op_finish(op, 0);
            return;
        }
        op->error = S3_EEXISTS;
        s3__op_finish(op, S3_EEXISTS);
        return;
    }
    s3__op_retry_or_fail(op);
}

static const struct s3_op_kind delete_kind = {
    .complete = delete_complete,
};

static const struct s3_op_kind create_bucket_kind = {
    .complete = create_bucket_complete,
};
