/*
 * The multipart kinds: CreateMultipartUpload, UploadPart, CompleteMultipartUpload
 * (with its HEAD check), AbortMultipartUpload and ListMultipartUploads page by page,
 * as their tables of hooks (s3_int.h). The rules they keep are in s3.h's note;
 * sending and retrying are the engine's (client.c, request.c).
 */
#include "s3/s3_int.h"
#include "s3/s3_xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

/* The kinds' tables, defined after their hooks. */
static const struct s3_op_kind create_kind, part_kind, complete_kind, abort_kind, uploads_kind;

static int check_upload_id(const char *upload_id, struct util_err *err)
{
    if (upload_id == NULL || upload_id[0] == '\0')
        return util_err_set(err, UTIL_EINVAL, "a multipart upload id is empty");
    if (strlen(upload_id) > S3_MAX_KEY)
        return util_err_set(err, UTIL_EINVAL, "a multipart upload id is longer than %d bytes",
                            S3_MAX_KEY);
    return 0;
}

/*
 * The start every kind on a key shares: checks, a new op for key with its upload id
 * (Create, which has none yet, passes NULL; the others' is checked).
 */
static int mpu_begin(struct s3_client *c, const struct s3_op_kind *kind, const char *key,
                     const char *upload_id, const struct s3_opts *o, s3_done_cb cb, void *arg,
                     struct s3_op **out, struct s3_op **op, struct util_err *err)
{
    int rc;
    if (out != NULL)
        *out = NULL;
    if ((rc = s3__closing_error(c, err)) != 0 || (rc = s3__check_key(c, key, err)) != 0)
        return rc;
    if (kind != &create_kind && (rc = check_upload_id(upload_id, err)) != 0)
        return rc;
    *op = s3__op_new(c, kind, o, cb, arg);
    (*op)->req.key = s3__full_key(c, key);
    if (upload_id != NULL)
        (*op)->upload_id = util_strdup(upload_id);
    return 0;
}

static void mpu_start(struct s3_op *op, struct s3_op **out)
{
    if (out != NULL)
        *out = op;
    s3__op_send(op);
}

int s3_multipart_create(struct s3_client *c, const char *key, const struct s3_opts *o,
                        s3_done_cb cb, void *arg, struct s3_op **out, struct util_err *err)
{
    struct s3_op *op;
    int rc = mpu_begin(c, &create_kind, key, NULL, o, cb, arg, out, &op, err);
    if (rc != 0)
        return rc;
    op->req.method = "POST";
    op->req.metric = "CREATE_MULTIPART";
    op->req.lock = true;
    op->req.post_data = "";
    op->req.post_len = 0;
    mpu_start(op, out);
    return 0;
}

int s3_multipart_put(struct s3_client *c, const char *key, const char *upload_id, unsigned number,
                     const struct s3_body *body, const struct s3_opts *o, s3_done_cb cb, void *arg,
                     struct s3_op **out, struct util_err *err)
{
    struct s3_op *op;
    char num[16];
    int rc;
    if (out != NULL)
        *out = NULL;
    if (number < 1 || number > S3_PARTS_MAX)
        return util_err_set(err, UTIL_EINVAL, "part number %u is outside 1..%d", number,
                            S3_PARTS_MAX);
    if ((rc = s3__body_check(body, err)) != 0)
        return rc;
    if ((rc = mpu_begin(c, &part_kind, key, upload_id, o, cb, arg, out, &op, err)) != 0)
        return rc;
    s3__body_take(op, body);
    snprintf(num, sizeof(num), "%u", number);
    s3__op_param(op, "partNumber", num);
    s3__op_param(op, "uploadId", upload_id);
    op->req.method = "PUT";
    op->req.metric = "UPLOAD_PART";
    op->req.upload = true;
    mpu_start(op, out);
    return 0;
}

int s3_multipart_complete(struct s3_client *c, const char *key, const char *upload_id,
                          const struct s3_part *parts, size_t n, const struct s3_opts *o,
                          s3_done_cb cb, void *arg, struct s3_op **out, struct util_err *err)
{
    struct s3_op *op;
    struct util_buf xml;
    int rc;
    if (out != NULL)
        *out = NULL;
    util_buf_init(&xml);
    if ((rc = s3_complete_request_xml(&xml, parts, n, err)) != 0) {
        util_buf_free(&xml);
        return rc;
    }
    if ((rc = mpu_begin(c, &complete_kind, key, upload_id, o, cb, arg, out, &op, err)) != 0) {
        util_buf_free(&xml);
        return rc;
    }
    op->n_parts = n;
    /* What the object's ETag will be, for the HEAD check. */
    if (!s3_multipart_etag(parts, n, op->get_etag, sizeof(op->get_etag)))
        op->get_etag[0] = '\0';
    op->post_len = xml.len;
    op->post = util_buf_steal(&xml);
    util_buf_free(&xml);
    s3__op_param(op, "uploadId", upload_id);
    op->req.method = "POST";
    op->req.metric = "COMPLETE_MULTIPART";
    op->req.post_data = op->post;
    op->req.post_len = op->post_len;
    op->req.content_type = "application/xml";
    mpu_start(op, out);
    return 0;
}

int s3_multipart_abort(struct s3_client *c, const char *key, const char *upload_id,
                       const struct s3_opts *o, s3_done_cb cb, void *arg, struct s3_op **out,
                       struct util_err *err)
{
    struct s3_op *op;
    int rc = mpu_begin(c, &abort_kind, key, upload_id, o, cb, arg, out, &op, err);
    if (rc != 0)
        return rc;
    s3__op_param(op, "uploadId", upload_id);
    op->req.method = "DELETE";
    op->req.metric = "ABORT_MULTIPART";
    mpu_start(op, out);
    return 0;
}

int s3_list_uploads(struct s3_client *c, const char *prefix, const struct s3_opts *o,
                    s3_upload_cb each, s3_done_cb done, void *arg, struct s3_op **out,
                    struct util_err *err)
{
    struct s3_op *op;
    int rc;
    if (out != NULL)
        *out = NULL;
    if ((rc = s3__closing_error(c, err)) != 0)
        return rc;
    if (prefix == NULL)
        prefix = "";
    if (strlen(c->cfg.prefix) + strlen(prefix) > S3_MAX_KEY)
        return util_err_set(err, UTIL_EINVAL, "a listing prefix is longer than a key may be");
    op = s3__op_new(c, &uploads_kind, o, done, arg);
    op->each_upload = each;
    op->prefix = s3__full_key(c, prefix);
    op->req.method = "GET";
    op->req.metric = "LIST_UPLOADS";
    mpu_start(op, out);
    return 0;
}

/* ---- hooks ---- */

static int create_prepare(struct s3_op *op)
{
    s3_mpu_parser_free(op->mp);
    op->mp = s3_mpu_parser_new(S3_MPU_INITIATE);
    s3__op_clear_params(op);
    s3__op_param(op, "uploads", "");
    return 0;
}

static int complete_prepare(struct s3_op *op)
{
    if (op->req.head)
        return 0; /* the HEAD check */
    s3_mpu_parser_free(op->mp);
    op->mp = s3_mpu_parser_new(S3_MPU_COMPLETE);
    return 0;
}

static int uploads_prepare(struct s3_op *op)
{
    s3_uploads_parser_free(op->up);
    op->up = s3_uploads_parser_new();
    s3__op_clear_params(op);
    s3__op_param(op, "uploads", "");
    s3__op_param(op, "max-uploads", "1000");
    s3__op_param(op, "prefix", op->prefix);
    if (op->key_marker != NULL) {
        s3__op_param(op, "key-marker", op->key_marker);
        if (op->id_marker != NULL && op->id_marker[0] != '\0' && !op->key_marker_only)
            s3__op_param(op, "upload-id-marker", op->id_marker);
    }
    return 0;
}

/* The reply document of a Create or Complete, parsed as it arrives. */
static size_t mpu_reply_write(struct s3_op *op, const char *data, size_t len)
{
    struct util_err err;
    if (op->error != 0 || op->mp == NULL)
        return len; /* already broken: read the rest, then decide */
    if (s3_mpu_parser_feed(op->mp, data, len, &err) != 0)
        s3__op_error(op, S3_EPROTO, "%s s3://%s/%s: %s", op->req.metric, op->c->cfg.bucket,
                     op->req.key, err.msg);
    return len;
}

static size_t uploads_write(struct s3_op *op, const char *data, size_t len)
{
    struct util_err err;
    if (op->error != 0 || op->up == NULL)
        return len; /* already broken: read the rest, then decide */
    if (s3_uploads_parser_feed(op->up, data, len, &err) != 0)
        s3__op_error(op, S3_EPROTO, "%s s3://%s/%s: %s", op->req.metric, op->c->cfg.bucket,
                     op->prefix, err.msg);
    return len;
}

/* A reply read whole but not understood: retried like a broken reply, within the budget. */
static void bad_reply(struct s3_op *op)
{
    op->transport_error = true;
    op->status = 0;
    s3__op_retry_or_fail(op);
}

/*
 * The 2xx reply of a Create or Complete: the parsed document, or NULL after reporting
 * the op (retried or finished). A 200 carrying <Error> is that error. may_land: a
 * reply we cannot read, or a retryable error in it, may hide a success (a Complete's).
 */
static const struct s3_mpu_reply *mpu_reply(struct s3_op *op, bool may_land)
{
    const struct s3_mpu_reply *r = NULL;
    struct util_err err;
    if (op->error == 0 && s3_mpu_parser_finish(op->mp, &r, &err) != 0)
        s3__op_error(op, S3_EPROTO, "%s s3://%s/%s: %s", op->req.metric, op->c->cfg.bucket,
                     op->req.key, err.msg);
    if (op->error != 0) {
        if (may_land)
            op->may_have_landed = true; /* a 200 we cannot read may well be a success */
        bad_reply(op);
        return NULL;
    }
    if (r->error) {
        snprintf(op->code, sizeof(op->code), "%s", r->code);
        s3__op_error(op, S3_EHTTP, "%s s3://%s/%s: HTTP %ld with an error: %s%s%s", op->req.metric,
                     op->c->cfg.bucket, op->req.key, op->status, r->code, r->message[0] ? ": " : "",
                     r->message);
        if (s3_retryable(0, r->code, false)) {
            if (may_land)
                op->may_have_landed = true;
            op->transport_error = true; /* retried although the status was 200 */
        }
        s3__op_retry_or_fail(op);
        return NULL;
    }
    return r;
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

bool s3_multipart_etag(const struct s3_part *parts, size_t n, char *out, size_t size)
{
    static const char digits[] = "0123456789abcdef";
    EVP_MD_CTX *ctx;
    unsigned char md[16];
    unsigned int mdn = 0;
    bool ok = n > 0 && size >= 40;
    if (!ok)
        return false;
    ctx = EVP_MD_CTX_new();
    if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return false;
    }
    for (size_t i = 0; i < n && ok; i++) {
        unsigned char bin[16];
        if (strlen(parts[i].etag) != 32) {
            ok = false;
            break;
        }
        for (int j = 0; j < 16 && ok; j++) {
            int hi = hex_value(parts[i].etag[2 * j]), lo = hex_value(parts[i].etag[2 * j + 1]);
            ok = hi >= 0 && lo >= 0;
            if (ok)
                bin[j] = (unsigned char)(hi << 4 | lo);
        }
        if (ok)
            EVP_DigestUpdate(ctx, bin, sizeof(bin));
    }
    if (ok)
        ok = EVP_DigestFinal_ex(ctx, md, &mdn) == 1 && mdn == 16;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return false;
    for (int j = 0; j < 16; j++) {
        out[2 * j] = digits[md[j] >> 4];
        out[2 * j + 1] = digits[md[j] & 15];
    }
    snprintf(out + 32, size - 32, "-%zu", n);
    return true;
}

/*
 * Whether the object's etag is what our Complete makes: the MD5 of the parts' MD5s and
 * the part count when every part ETag is an MD5, else (KMS-encrypted parts) any
 * multipart ETag of that many parts.
 */
static bool completed_by_us(const struct s3_op *op, const char *etag)
{
    const char *dash = strrchr(etag, '-');
    uint64_t v;
    if (op->get_etag[0] != '\0')
        return strcasecmp(etag, op->get_etag) == 0;
    if (dash == NULL || dash == etag)
        return false;
    return util_parse_u64(dash + 1, strlen(dash + 1), S3_PARTS_MAX, &v) == 0 && v == op->n_parts;
}

/* The Complete's HEAD check (see s3.h): done, or the 404 stands. */
static void complete_checked(struct s3_op *op)
{
    if (op->status == 200 && completed_by_us(op, op->hdr_etag)) {
        snprintf(op->put_etag, sizeof(op->put_etag), "%s", op->hdr_etag);
        s3__op_finish(op, 0);
        return;
    }
    if (op->status == 200 || op->status == 404) {
        snprintf(op->code, sizeof(op->code), "NoSuchUpload");
        op->status = 404;
        s3__op_error(op, S3_ENOTFOUND,
                     "COMPLETE_MULTIPART s3://%s/%s: the upload is gone (NoSuchUpload) and the "
                     "key holds no object completed from these %zu parts",
                     op->c->cfg.bucket, op->req.key, op->n_parts);
        s3__op_finish(op, S3_ENOTFOUND);
        return;
    }
    s3__op_retry_or_fail(op);
}

static void complete_done(struct s3_op *op)
{
    const struct s3_mpu_reply *r;
    if (op->req.head) {
        complete_checked(op);
        return;
    }
    if (op->status >= 200 && op->status < 300) {
        if ((r = mpu_reply(op, true)) == NULL)
            return;
        snprintf(op->put_etag, sizeof(op->put_etag), "%s", r->etag);
        s3__op_finish(op, 0);
        return;
    }
    if (op->status == 404 && strcmp(op->code, "NoSuchUpload") == 0 && op->may_have_landed) {
        /* Completed by an attempt whose reply was lost, or aborted? Ask for the key. */
        s3__op_clear_params(op);
        op->req.head = true;
        op->req.method = "HEAD";
        op->req.metric = "HEAD";
        op->req.post_data = NULL;
        op->req.post_len = 0;
        op->req.content_type = NULL;
        op->attempt = 0;
        s3__op_send(op);
        return;
    }
    if (op->status == 0 || op->status >= 500)
        op->may_have_landed = true;
    s3__op_retry_or_fail(op);
}

static void create_done(struct s3_op *op)
{
    const struct s3_mpu_reply *r;
    if (op->status < 200 || op->status >= 300) {
        s3__op_retry_or_fail(op);
        return;
    }
    if ((r = mpu_reply(op, false)) == NULL)
        return;
    free(op->upload_id);
    op->upload_id = util_strdup(r->upload_id);
    s3__op_finish(op, 0);
}

static void part_done(struct s3_op *op)
{
    if (op->status < 200 || op->status >= 300) {
        s3__op_retry_or_fail(op);
        return;
    }
    if (op->hdr_etag[0] == '\0') {
        s3__op_error(op, S3_EPROTO,
                     "UPLOAD_PART s3://%s/%s: the server answered %ld without an ETag, which "
                     "completing the upload needs",
                     op->c->cfg.bucket, op->req.key, op->status);
        s3__op_finish(op, S3_EPROTO);
        return;
    }
    snprintf(op->put_etag, sizeof(op->put_etag), "%s", op->hdr_etag);
    s3__op_finish(op, 0);
}

static void abort_done(struct s3_op *op)
{
    if ((op->status >= 200 && op->status < 300) ||
        (op->status == 404 && strcmp(op->code, "NoSuchBucket") != 0)) {
        s3__op_finish(op, 0); /* gone, by us or before */
        return;
    }
    s3__op_retry_or_fail(op);
}

/* A page of uploads: checked whole, then delivered; the next page asked for. */
static void uploads_done(struct s3_op *op)
{
    struct s3_client *c = op->c;
    const struct s3_uploads_page *page;
    struct util_err err;
    size_t rel = strlen(c->cfg.prefix);
    const char *prev;
    bool again;
    int rc;

    if (op->status == 400 && strcmp(op->code, "InvalidArgument") == 0 && op->id_marker != NULL &&
        op->id_marker[0] != '\0' && !op->key_marker_only) {
        /*
         * A server that refuses the upload-id marker it gave (versitygw 1.8 looks for
         * it past the key marker): the key marker alone, from now on. Uploads of the
         * marker's key beyond the page are then missed by this listing.
         */
        op->key_marker_only = true;
        op->attempt = 0;
        s3__op_send(op);
        return;
    }
    if (op->status < 200 || op->status >= 300) {
        s3__op_retry_or_fail(op);
        return;
    }
    if (op->error != 0) {
        bad_reply(op);
        return;
    }
    if (s3_uploads_parser_finish(op->up, &page, &err) != 0) {
        s3__op_error(op, S3_EPROTO, "LIST_UPLOADS s3://%s/%s: %s", c->cfg.bucket, op->prefix,
                     err.msg);
        bad_reply(op);
        return;
    }
    if ((rc = s3_uploads_page_check(page, op->prefix, op->last_key, op->key_marker,
                                    op->key_marker_only ? NULL : op->id_marker, &again, &err)) !=
        0) {
        s3__op_error(op, rc, "LIST_UPLOADS s3://%s/%s: %s", c->cfg.bucket, op->prefix, err.msg);
        if (again)
            bad_reply(op);
        else
            s3__op_finish(op, rc);
        return;
    }
    prev = page->n > 0 ? page->uploads[page->n - 1].key : op->last_key;
    for (size_t i = 0; i < page->n; i++) {
        struct s3_upload u = page->uploads[i];
        u.key += rel; /* relative to the repository prefix, as s3.h promises */
        if (op->each_upload != NULL && op->each_upload(&u, op->arg) != 0) {
            s3__op_error(op, S3_ECANCELED, "the listing of uploads was stopped by its reader");
            s3__op_finish(op, S3_ECANCELED);
            return;
        }
        if (op->cancelled || op->finished)
            return; /* the callback cancelled the op or closed the client */
    }
    if (!s3__op_page_delivered(op, prev, page->truncated))
        return;
    free(op->key_marker);
    free(op->id_marker);
    op->key_marker = util_strdup(page->next_key_marker);
    op->id_marker =
        page->next_upload_id_marker != NULL ? util_strdup(page->next_upload_id_marker) : NULL;
    s3__op_send(op);
}

static void create_result(struct s3_op *op, struct s3_result *res)
{
    if (op->upload_id != NULL)
        res->upload_id = op->upload_id;
}

/* A part's ETag, or the completed object's. */
static void etag_result(struct s3_op *op, struct s3_result *res)
{
    res->etag = op->put_etag;
}

static void mpu_free(struct s3_op *op)
{
    s3_mpu_parser_free(op->mp);
    s3_uploads_parser_free(op->up);
    op->mp = NULL;
    op->up = NULL;
    free(op->upload_id);
    free(op->key_marker);
    free(op->id_marker);
    free(op->prefix);
    free(op->last_key);
    op->upload_id = op->key_marker = op->id_marker = op->prefix = op->last_key = NULL;
}

static const struct s3_op_kind create_kind = {
    .prepare = create_prepare,
    .write = mpu_reply_write,
    .complete = create_done,
    .result = create_result,
    .free = mpu_free,
};

static const struct s3_op_kind part_kind = {
    .complete = part_done,
    .result = etag_result,
    .free = mpu_free,
};

static const struct s3_op_kind complete_kind = {
    .prepare = complete_prepare,
    .write = mpu_reply_write,
    .complete = complete_done,
    .result = etag_result,
    .free = mpu_free,
};

static const struct s3_op_kind abort_kind = {
    .complete = abort_done,
    .free = mpu_free,
};

static const struct s3_op_kind uploads_kind = {
    .prepare = uploads_prepare,
    .write = uploads_write,
    .complete = uploads_done,
    .free = mpu_free,
};
