/*
 * What the files of internal/s3 share and nobody else needs. Not part of the API.
 *
 * An operation (struct s3_op) is a small state machine: it sends one HTTP request at a
 * time (an attempt), and when the attempt ends its kind's complete function decides:
 * done, next step (another page, another batch, the HEAD check), or retry after a
 * backoff on the op's timer. client.c holds the life of ops and of the client
 * (creating, finishing, retrying, closing); request.c one attempt (building, signing
 * and sending it, reading and classifying its reply); ops.c, batch.c and multipart.c
 * the kinds.
 */
#ifndef LODE_S3_INT_H
#define LODE_S3_INT_H

#include "s3/s3.h"

#include <curl/curl.h>

#include "http/http.h"

enum s3_kind {
    OP_PUT,
    OP_GET,
    OP_HEAD,
    OP_DELETE,
    OP_LIST,
    OP_DELETE_OBJECTS,
    OP_CREATE_BUCKET,
    OP_MPU_CREATE,
    OP_MPU_PART,
    OP_MPU_COMPLETE,
    OP_MPU_ABORT,
    OP_LIST_UPLOADS
};

#define OP_MAX_PARAMS       6
#define OP_MAX_ERRBODY      (64u << 10)
#define OP_MAX_DELETE_REPLY (8u << 20)

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
    struct s3_op *prev, *next;
    enum s3_kind kind;
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
    struct s3_op *ops; /* every op not yet freed */
    size_t n_ops, running;
    uint64_t rng;
    s3_close_cb close_cb;
    void *close_arg;
};

/* client.c: the life of ops */
struct s3_op *s3__op_new(struct s3_client *c, enum s3_kind kind, const struct s3_opts *o,
                         s3_done_cb done, void *arg);
void s3__op_param(struct s3_op *op, const char *name, const char *value);
void s3__op_clear_params(struct s3_op *op);
/* Retries after a backoff if the budget allows, else finishes with op's error. */
void s3__op_retry_or_fail(struct s3_op *op);
/* Reports the op (error 0: success) to its done callback and releases it. */
void s3__op_finish(struct s3_op *op, int error);
/* A listing's page was delivered up to the key prev: remembers prev (the next page must
 * go on after it) and, when the page was the last, finishes the op. Returns true when
 * another page is to be fetched, with a fresh retry budget; the caller sets its markers
 * and sends. Shared by LIST and LIST_UPLOADS. */
bool s3__op_page_delivered(struct s3_op *op, const char *prev, bool truncated);
/* Frees what the op holds and closes its timer; the op itself goes once the timer closed. */
void s3__op_release(struct s3_op *op);
/* Sets op's error and message (printf). */
int s3__op_error(struct s3_op *op, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The object's full key: prefix + rel. */
char *s3__full_key(const struct s3_client *c, const char *rel);

/* request.c: one attempt */
/* Sends the attempt op->req describes; on failure finishes the op with the error. */
void s3__op_send(struct s3_op *op);
/* Lets go of the last attempt's easy handle, headers and URL. */
void s3__attempt_cleanup(struct s3_op *op);
/* Keeps an easy handle for a later attempt (reset), or frees it once enough are kept. */
void s3__easy_give_back(struct s3_client *c, CURL *e);
/* Frees the kept easy handles. */
void s3__easy_idle_free(struct s3_client *c);

/* ops.c: the kinds' hooks, called by request.c and client.c */
/* Before each attempt: adjusts op->req (a GET's resume range, a new batch); 0 or an error. */
int s3__op_prepare(struct s3_op *op);
/* The attempt ended with a 2xx status, or a non-2xx the kind handles (412, 404). */
void s3__op_complete(struct s3_op *op);
/* curl's write callback body for 2xx replies of the kind; returns bytes taken. */
size_t s3__op_write(struct s3_op *op, const char *data, size_t len);
/* Frees the kind's state. */
void s3__op_free_kind(struct s3_op *op);
/* Reports what the op could not do before it ends with an error (DeleteObjects keys). */
void s3__op_fail_kind(struct s3_op *op);
/* Checks for every operation on a key: the client is open, the key non-empty and short
 * enough. */
int s3__check_key(const struct s3_client *c, const char *key, struct util_err *err);
int s3__closing_error(const struct s3_client *c, struct util_err *err);
/* A PUT body: checked (before the op exists), then copied into the op (SHA-256 taken). */
int s3__body_check(const struct s3_body *body, struct util_err *err);
void s3__body_take(struct s3_op *op, const struct s3_body *body);

/* multipart.c: the multipart kinds' hooks */
int s3__mpu_prepare(struct s3_op *op);
size_t s3__mpu_write(struct s3_op *op, const char *data, size_t len);
void s3__mpu_complete(struct s3_op *op);
void s3__mpu_free(struct s3_op *op);
bool s3__is_mpu_kind(enum s3_kind kind);

#endif
