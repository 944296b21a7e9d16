/*
 * The request an attempt sends, built from op->req: its canonical target (path and
 * sorted query), the payload hash, the signed headers with their SigV4 Authorization,
 * and the URL. Part of the engine (s3_int.h); request.c hands the result to curl.
 */
#include "s3/s3_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
/* SHA-256 of no bytes: the payload hash of every request without a body. */
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static int param_cmp(const void *a, const void *b)
{
    const struct s3_header *x = a, *y = b;
    return strcmp(x->name, y->name);
}

/* Appends "name: value" to l; line is scratch space. */
static void add_header(struct curl_slist **l, struct util_buf *line, const char *name,
                       const char *value)
{
    line->len = 0;
    util_buf_puts(line, name);
    util_buf_append(line, ": ", 2);
    util_buf_puts(line, value);
    struct curl_slist *n = curl_slist_append(*l, line->data);
    if (n == NULL) {
        fprintf(stderr, "lodestore: out of memory building HTTP headers\n");
        abort();
    }
    *l = n;
}

/* The canonical URI ("/bucket/key", encoded) and query (names sorted, encoded). */
static void request_target(const struct s3_client *c, const struct s3_req *q, struct util_buf *uri,
                           struct util_buf *query)
{
    struct s3_header sorted[OP_MAX_PARAMS];
    util_buf_puts(uri, "/");
    util_buf_puts(uri, c->cfg.bucket);
    if (q->key != NULL) {
        util_buf_puts(uri, "/");
        s3_uri_encode(uri, q->key, strlen(q->key), true);
    }
    memcpy(sorted, q->params, q->n_params * sizeof(sorted[0]));
    qsort(sorted, q->n_params, sizeof(sorted[0]), param_cmp);
    for (size_t i = 0; i < q->n_params; i++) {
        if (i > 0)
            util_buf_puts(query, "&");
        s3_uri_encode(query, sorted[i].name, strlen(sorted[i].name), false);
        util_buf_puts(query, "=");
        s3_uri_encode(query, sorted[i].value, strlen(sorted[i].value), false);
    }
}

/*
 * The payload hash the request signs: the body's SHA-256 when it is known before the
 * request (a buffer, a hash the caller gave, a small XML body), else UNSIGNED-PAYLOAD
 * for a streamed body; body_hash is the space for a hash taken here.
 */
static const char *payload_hash_of(const struct s3_op *op, char body_hash[65])
{
    const struct s3_req *q = &op->req;
    if (q->upload)
        return op->body.data != NULL || op->body.sha256_hex != NULL ? op->sha256 : UNSIGNED_PAYLOAD;
    if (q->post_len > 0) {
        s3_signer_sha256_hex(op->c->signer, q->post_data, q->post_len, body_hash);
        return body_hash;
    }
    return EMPTY_SHA256;
}

/* The request's headers onto op->headers: the signed ones, Authorization, the rest. */
static void sign_headers(struct s3_op *op, const char *uri, const char *query,
                         struct util_buf *line)
{
    struct s3_client *c = op->c;
    const struct s3_req *q = &op->req;
    struct s3_header hs[10];
    size_t nh = 0;
    char date[17], body_hash[65], until[UTIL_TIME_BUF];
    const char *payload_hash = payload_hash_of(op, body_hash);
    struct util_buf auth;
    int64_t signed_at = (int64_t)time(NULL);
    bool locking = c->cfg.lock_days > 0 && c->cfg.lock_mode[0] != '\0';
    bool lock = q->lock && locking;

    s3_amz_date(signed_at, date);
    /* Retained from now: a retry extends it by the seconds it took. */
    if (lock)
        util_format_utc(signed_at + c->cfg.lock_days * 86400, until, sizeof(until));
    /* AWS wants Content-MD5 on every upload into a locked bucket, parts included. */
    if (locking && q->upload && q->content_md5[0] == '\0' && op->body.data != NULL)
        s3__body_md5_base64(op, op->req.content_md5);
    /* Signed headers, in name order. */
    if (q->content_md5[0] != '\0')
        hs[nh++] = (struct s3_header){"content-md5", q->content_md5};
    hs[nh++] = (struct s3_header){"host", c->cfg.host};
    if (q->if_match[0] != '\0')
        hs[nh++] = (struct s3_header){"if-match", q->if_match};
    if (q->if_none_match)
        hs[nh++] = (struct s3_header){"if-none-match", "*"};
    if (q->range[0] != '\0')
        hs[nh++] = (struct s3_header){"range", q->range};
    hs[nh++] = (struct s3_header){"x-amz-content-sha256", payload_hash};
    hs[nh++] = (struct s3_header){"x-amz-date", date};
    if (lock) {
        hs[nh++] = (struct s3_header){"x-amz-object-lock-mode", c->cfg.lock_mode};
        hs[nh++] = (struct s3_header){"x-amz-object-lock-retain-until-date", until};
    }
    if (c->cfg.session_token != NULL)
        hs[nh++] = (struct s3_header){"x-amz-security-token", c->cfg.session_token};
    struct s3_sign_input in = {.method = q->method,
                               .canonical_uri = uri,
                               .canonical_query = query,
                               .headers = hs,
                               .n_headers = nh,
                               .payload_hash = payload_hash,
                               .access_key = c->cfg.access_key,
                               .secret_key = c->cfg.secret_key,
                               .region = c->cfg.region,
                               .service = "s3",
                               .time = signed_at};
    util_buf_init(&auth);
    s3_signer_sign(c->signer, &in, &auth);
    for (size_t i = 0; i < nh; i++)
        add_header(&op->headers, line, hs[i].name, hs[i].value);
    add_header(&op->headers, line, "Authorization", auth.data);
    util_buf_free(&auth);
    if (q->content_type != NULL)
        add_header(&op->headers, line, "Content-Type", q->content_type);
    else if (q->post_data != NULL || q->upload)
        add_header(&op->headers, line, "Content-Type", "application/octet-stream");
    op->headers = curl_slist_append(op->headers, "Expect:");
    op->headers = curl_slist_append(op->headers, "Accept:");
    if (op->headers == NULL) {
        fprintf(stderr, "lodestore: out of memory building HTTP headers\n");
        abort();
    }
}

void s3__request_build(struct s3_op *op)
{
    struct s3_client *c = op->c;
    struct util_buf uri, query, line;
    util_buf_init(&uri);
    util_buf_init(&query);
    util_buf_init(&line);
    request_target(c, &op->req, &uri, &query);
    sign_headers(op, uri.data, query.data != NULL ? query.data : "", &line);
    /* The URL: endpoint, path and query, in line (no longer needed for headers). */
    line.len = 0;
    util_buf_puts(&line, c->cfg.endpoint);
    util_buf_append(&line, uri.data, uri.len);
    if (query.len > 0) {
        util_buf_append(&line, "?", 1);
        util_buf_append(&line, query.data, query.len);
    }
    op->url = util_buf_steal(&line);
    util_buf_free(&line);
    util_buf_free(&uri);
    util_buf_free(&query);
}
