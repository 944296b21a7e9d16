/*
 * What the files of internal/s3 share and nobody else needs. Not part of the API.
 *
 * An operation (struct s3_op) is a small state machine: it sends one HTTP request at a
 * time (an attempt), and when the attempt ends its kind's complete hook decides:
 * done, next step (another page, another batch, the HEAD check), or retry after a
 * backoff on the op's timer.
 *
 * Layers, each file calling only into its own layer and those below it; the include
 * graph is a tree (s3.h, then this header or xml_int.h, then the .c files):
 *   1. the pure parts of s3.h: config.c, sigv4.c, and the XML replies (xml.c,
 *      xml_multipart.c, sharing xml_int.h). They know nothing of operations.
 *   2. the engine, declared here: client.c holds the life of ops and of the client
 *      (creating, finishing, retrying, closing), request.c one attempt (sending it,
 *      reading and classifying its reply) and request_sign.c that attempt's request
 *      (target, signed headers, URL). client.c and request.c call each other (a
 *      finished attempt may retry; a failed send finishes the op). The engine knows an
 *      op's kind only through the kind's table of hooks (struct s3_op_kind, the shape of
 *      curl's Curl_handler) and never names a kind.
 *   3. the kinds: ops.c (PUT, GET, HEAD, DELETE, CreateBucket), batch.c
 *      (ListObjectsV2, DeleteObjects) and multipart.c (the multipart kinds and
 *      ListMultipartUploads). Each file defines its kinds' tables beside their hooks,
 *      starts ops through the engine and is called back only through its tables.
 *   4. sync.c: the synchronous wrappers, over s3.h alone.
 * Adding a kind is a table and its hooks in one file; the engine does not change.
 *
 * Costs: a hook is one indirect call; every op carries the fields of every kind (an op
 * is about 2.8 KiB, most of it fixed buffers for messages and ETags), which keeps an op
 * one allocation whatever its kind.
 */
#ifndef LODE_S3_INT_H
#define LODE_S3_INT_H

#include "s3/s3.h"

#include <curl/curl.h>

#include "http/http.h"
#include "util/list.h"

#define OP_MAX_PARAMS       6
#define OP_MAX_ERRBODY      (64u << 10)
#define OP_MAX_DELETE_REPLY (8u << 20)

struct s3_op;

/*
 * What one kind of operation does, as hooks the engine calls; a NULL hook does
 * nothing. Every op points at its kind's table, a static constant of the kind's file.
 */
struct s3_op_kind {
    /* Before each attempt: adjusts op->req (a GET's resume range, a new batch, the next
     * page's markers); 0, or an error set with s3__op_error (the op then ends). */
    int (*prepare)(struct s3_op *op);
    /* Body bytes of a 2xx reply as they arrive; returns the bytes taken (fewer ends the
     * attempt, with op->werror set). NULL: the body is not needed and is dropped. */
    size_t (*write)(struct s3_op *op, const char *data, size_t len);
    /* The attempt ended (any status, or a transport error): finish, retry or go on.
     * Never NULL. */
    void (*complete)(struct s3_op *op);
    /* Fills what the kind reports (ETag, size, body, upload id) into the result the
     * done callback gets, on success and on failure alike. */
    void (*result)(struct s3_op *op, struct s3_result *res);
    /* The op ends with an error: reports what it could not do (DeleteObjects' keys). */
    void (*fail)(struct s3_op *op);
    /* Frees the kind's state, once, when the op is released. */
    void (*free)(struct s3_op *op);
    /* The reply's Last-Modified is parsed (only GET and HEAD report it; a date is
     * dearer to parse than the rest of the headers). */
    bool last_modified;
    /* curl's receive buffer for the attempt, or 0 for curl's default. */
    long recv_buffer;
};

/* What the next attempt sends. */
struct s3_req {
    const char *method;                     /* "GET", "PUT", "HEAD", "DELETE", "POST" */
    const char *metric;                     /* for observe_cb: "PUT", "LIST", "DELETE_OBJECTS"... */
    char *key;                              /* full key, or NULL for the bucket itself */
    struct s3_header params[OP_MAX_PARAMS]; /* query, unsorted; values unencoded, owned */
    size_t n_params;
    char range[64]; /* "bytes=A-B" or "" */
    char if_match[S3_ETAG_MAX + 2];
    bool if_none_match;
    char content_md5[32];     /* base64, or "" */
    const char *content_type; /* or NULL */
    const char *post_data;    /* a small body (XML), borrowed from the op */
    size_t post_len;
    bool upload; /* the PUT body of the op */
    bool head;
    bool lock; /* an object's creation: carries the client's Object Lock (s3_config) */
};

/* Per-key state of a DeleteObjects. */
struct del_key {
    char *key; /* full */
    unsigned tries;
    int state; /* 0 pending, 1 in the current batch, 2 final */
    bool reported;
    char *code, *message; /* the last error, owned */
};

struct s3_op {
    struct s3_client *c;
    struct util_list link; /* on c->ops */
    const struct s3_op_kind *kind;
    struct s3_opts o;
    char *start_after, *delimiter; /* owned copies of o's strings */
    s3_done_cb done;
    s3_list_cb each;
    s3_deleted_cb deleted;
    s3_write_cb sink;
    void *arg;
    bool cancelled, finished, in_flight, paused, resume_me, timer_closing;
    uv_timer_t timer;
    uint64_t deadline; /* uv_now() ms */
    unsigned attempt;  /* attempts of the current step */
    unsigned requests;
    struct s3_req req;

    /* the attempt in flight */
    struct http_xfer xfer;
    CURL *easy;
    struct curl_slist *headers;
    char *url;
    char errbuf[CURL_ERROR_SIZE];
    long status;
    int werror; /* an error raised in a callback: final */
    char wmsg[256];
    struct util_buf resp; /* the attempt's error body or DeleteResult */
    struct util_buf mem;  /* a GET into memory, kept across attempts (a retry resumes) */
    bool transport_error;
    bool stalled;           /* the watchdog ended the attempt */
    uint64_t last_activity; /* uv_now() of the last byte either way */
    /* response headers of the attempt */
    char hdr_etag[S3_ETAG_MAX];
    int64_t hdr_mtime;
    uint64_t hdr_length;                 /* Content-Length */
    uint64_t hdr_range_start, hdr_total; /* from Content-Range */
    bool hdr_has_range, hdr_has_length;

    /* the last attempt's error */
    int error;
    char code[64];
    char msg[512];

    /* PUT */
    struct s3_body body;
    char sha256[65];
    char md5_hex[33];
    uint64_t sent;
    unsigned sends;       /* requests curl sent in this attempt (it may resend one) */
    uint64_t pace_credit; /* bytes the pace callback granted before the attempt began */
    bool may_have_landed, head_check;
    char put_etag[S3_ETAG_MAX];

    /* GET */
    uint64_t delivered, pos_in_resp, resp_first; /* bytes delivered; the attempt's window */
    char get_etag[S3_ETAG_MAX];
    uint64_t obj_size;
    int64_t obj_mtime;

    /* LIST */
    struct s3_list_parser *lp;
    char *prefix;   /* full */
    char *token;    /* continuation, or NULL for the first page */
    char *last_key; /* the last key delivered (full) */
    bool stopped;

    /* DeleteObjects */
    struct del_key *keys;
    size_t n_keys, next_fresh, n_failed;
    struct del_key **batch; /* the batch's keys, sorted by key for lookups */
    size_t n_batch;
    char *post; /* the request XML */
    size_t post_len;
    bool batch_bad; /* the reply named a key not asked for */

    /* multipart (multipart.c); the Complete's XML is post, its may-have-landed flag
     * may_have_landed, its object's ETag put_etag, the ETag its parts make (or "")
     * get_etag; a listing of uploads uses prefix,
     * last_key and stopped as LIST does */
    char *upload_id; /* Create: the reply's; the others: the one given */
    struct s3_mpu_parser *mp;
    struct s3_uploads_parser *up;
    s3_upload_cb each_upload;
    char *key_marker, *id_marker; /* the next page's markers, or NULL */
    bool key_marker_only;         /* the server refused the upload-id marker */
    size_t n_parts;
};

#define S3_EASY_IDLE_MAX 16 /* easy handles kept for later attempts */

struct s3_client {
    uv_loop_t *loop;
    struct s3_signer *signer; /* the day's signing key; SHA-256 */
    CURL *easy_idle[S3_EASY_IDLE_MAX];
    size_t n_easy_idle;
    struct http_multi *http;
    bool own_http, closing;
    struct s3_config cfg; /* owned copy */
    struct s3_client_opts opts;
    char *user_agent;
    struct util_list ops; /* every op not yet freed, the newest first */
    size_t n_ops, running;
    uint64_t rng;
    s3_close_cb close_cb;
    void *close_arg;
};

/* client.c: the life of ops */
/* A new op of the kind, on the client's list; the caller fills op->req and sends. */
struct s3_op *s3__op_new(struct s3_client *c, const struct s3_op_kind *kind,
                         const struct s3_opts *o, s3_done_cb done, void *arg);
void s3__op_param(struct s3_op *op, const char *name, const char *value);
void s3__op_clear_params(struct s3_op *op);
/* Retries after a backoff if the budget allows, else finishes with op's error. */
void s3__op_retry_or_fail(struct s3_op *op);
/* Reports the op (error 0: success) to its done callback and releases it. */
void s3__op_finish(struct s3_op *op, int error);
/* A listing's page was delivered up to the key prev: remembers prev (the next page must
 * go on after it) and, when the page was the last, finishes the op. Returns true when
 * another page is to be fetched, with a fresh retry budget; the caller sets its markers
 * and sends. Shared by ListObjectsV2 and ListMultipartUploads. */
bool s3__op_page_delivered(struct s3_op *op, const char *prev, bool truncated);
/* Frees what the op holds and closes its timer; the op itself goes once the timer closed. */
void s3__op_release(struct s3_op *op);
/* Sets op's error and message (printf). */
int s3__op_error(struct s3_op *op, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The object's full key: prefix + rel. */
char *s3__full_key(const struct s3_client *c, const char *rel);
/* Checks for every operation on a key: the client is open, the key non-empty and short
 * enough. */
int s3__check_key(const struct s3_client *c, const char *key, struct util_err *err);
int s3__closing_error(const struct s3_client *c, struct util_err *err);

/* request.c: one attempt */
/* Sends the attempt op->req describes; on failure finishes the op with the error. */
void s3__op_send(struct s3_op *op);
/* Lets go of the last attempt's easy handle, headers and URL. */
void s3__attempt_cleanup(struct s3_op *op);
/* Frees the kept easy handles. */
void s3__easy_idle_free(struct s3_client *c);
/* request_sign.c: op->headers (signed) and op->url for the attempt op->req describes. */
void s3__request_build(struct s3_op *op);

/* ops.c: a PUT body, shared by PUT and UploadPart: checked (before the op exists),
 * then copied into the op (SHA-256 taken). */
int s3__body_check(const struct s3_body *body, struct util_err *err);
void s3__body_take(struct s3_op *op, const struct s3_body *body);

/* Content-MD5 (base64) of an in-memory body, for a PUT that carries Object Lock. */
void s3__body_md5_base64(const struct s3_op *op, char out[32]);

#endif
