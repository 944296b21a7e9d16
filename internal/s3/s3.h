/*
 * s3: an S3 client on libcurl and libuv, for the controller (on its loop, sharing the
 * Kubernetes client's curl multi handle through internal/http) and for the lode
 * commands (a private loop behind the s3_sync_* wrappers). docs/storage-s3.md says how
 * to point it at AWS S3, MinIO or Ceph RGW.
 *
 * Pieces, from the bottom up (the pure ones do no I/O and take time as an input):
 *   s3_url_parse, s3_config_*  the repository address "s3:http(s)://HOST[:PORT]/BUCKET
 *                     [/PREFIX]" and credentials from the environment, in one place.
 *   s3_sigv4_*        Signature Version 4 (header auth). The payload hash is signed
 *                     whenever the body is known first; only a streamed body whose
 *                     hash the caller does not supply is sent as UNSIGNED-PAYLOAD.
 *   s3_backoff_delay, s3_retryable  the retry policy, pure.
 *   s3_xml.h          the XML replies (s3_list_parser_*, s3_delete_result_parse,
 *                     s3_mpu_parser_*, s3_uploads_parser_*, s3_error_parse) through
 *                     expat, streamed: a page is parsed as its bytes arrive.
 *   s3_client_*, s3_put/get/head/delete/list/delete_objects/create_bucket,
 *   s3_multipart_*, s3_list_uploads  the operations, asynchronous, one callback per
 *                     operation.
 *   s3_sync_*         the same operations run to completion on a private loop.
 *
 * Addressing: path style ("https://host:port/bucket/key"), which AWS, MinIO, Ceph RGW
 * and versitygw all serve; the region is signed in. Keys given to and returned by the
 * operations are relative to the repository prefix: with "s3:https://h/b/team/a",
 * s3_put(c, "config.json") writes "team/a/config.json" and s3_list returns it as
 * "config.json".
 *
 * TLS is always verified. An extra CA (--cacert, LODE_CACERT, the BackupRepository's
 * CA) is added to the system's bundle, not put in its place. Plain http:// is accepted
 * only for a loopback endpoint (127.0.0.0/8, ::1, localhost) unless the configuration
 * says allow_plain_http.
 *
 * Retries: a request that failed with 500, 502, 503, 504, an S3 error code SlowDown,
 * RequestTimeout, InternalError or ServiceUnavailable, a connection reset, refused or
 * stalled connection, or a timeout is sent again after a capped exponential backoff
 * with full jitter (delay drawn from [0, min(cap, base * 2^n)]), at most max_attempts
 * times and never past the operation's deadline. Any other 4xx is final at once: 403
 * is S3_EDENIED, 404 S3_ENOTFOUND, and a conditional PUT's 412 or 409
 * ConditionalRequestConflict is S3_EEXISTS, never retried. A conditional PUT whose
 * earlier attempt may have landed (the connection broke after the body went out) and
 * whose retry then meets 412 is checked with a HEAD: if the object there has our
 * body's MD5 as its ETag, the PUT succeeded; otherwise it is S3_EEXISTS.
 * A GET that breaks mid-body resumes from the byte it reached, with If-Match on the
 * ETag it started with, so a sink never sees a byte twice or a mix of two objects.
 *
 * Listing: ListObjectsV2, 1,000 keys a page, pages fetched one after the other with
 * the continuation token. A page is delivered to the per-key callback only once it has
 * been read whole and checked (keys ascending and after the previous page's, a
 * truncated page must carry a token), so a page retried after a broken reply is never
 * delivered twice; memory is one page (about 200 bytes a key), not the listing. A
 * listing that fails ends with an error after the pages already delivered: callers
 * that act on a listing as a whole (forget, gc) must act only when done reports 0.
 *
 * DeleteObjects: keys are sent in batches of at most 1,000, each with Content-MD5,
 * one batch at a time. The reply is read key by key (verbose or quiet form): a key
 * reported Deleted is done; a key with an <Error> whose code is retryable
 * (InternalError, SlowDown, ServiceUnavailable) is sent again in a later request within
 * the attempt budget; any other error, or a key missing from a verbose reply after its
 * retries, is reported through the per-key callback with its code and message, never
 * dropped. A reply naming a key that was not asked for is a protocol error.
 *
 * Multipart uploads: s3_multipart_create, _put (UploadPart), _complete and _abort are
 * one request each (retried as above); the caller sequences them and keeps the parts'
 * ETags. Create, UploadPart and Abort are safe to repeat. Abort takes 404 NoSuchUpload
 * as success. Complete's parts are checked first (1..10,000 parts, numbers ascending
 * within 1..10,000, non-empty ETags), UTIL_EINVAL before any request. A Complete
 * answered 200 with an <Error> document is that error (retried when its code is one of
 * the retryable ones). A Complete whose earlier attempt may have landed (its reply was
 * lost, or was a 5xx) and whose retry then meets 404 NoSuchUpload is checked with a
 * HEAD of the key: when the object there has the ETag these parts make (the MD5 of
 * their MD5s and "-N", s3_multipart_etag; when a part's ETag is not an MD5, any
 * multipart ETag "...-N" with N the number of parts), the Complete succeeded;
 * otherwise the 404 stands (S3_ENOTFOUND). Some servers (versitygw) answer a repeated
 * Complete of a completed upload with 200 and its ETag themselves.
 * ListMultipartUploads reads 1,000 uploads a page, following NextKeyMarker and
 * NextUploadIdMarker; like a listing, a page is delivered only once read whole and
 * checked (keys inside the prefix, never descending, a truncated page names its
 * markers and they move on). A server that answers the upload-id marker with 400
 * InvalidArgument (versitygw 1.8 looks for it past the key marker) is asked with the
 * key marker alone from then on; uploads of that key beyond the page are then missed
 * by the listing (a key normally has one upload). A stale upload that was never completed costs
 * storage until aborted: `lode gc` aborts those (docs/storage-s3.md).
 *
 * Costs: an operation holds its key, headers and signature (a few hundred bytes), a
 * GET into memory the object (bounded by max_bytes), a listing one page, a
 * DeleteObjects batch its keys and the request XML (about 60 bytes a key), a Complete
 * its request XML (about 80 bytes a part, 800 KB for 10,000 parts), a listing of
 * uploads one page (about 300 bytes an upload). A signed PUT or UploadPart
 * of a buffer hashes it once with SHA-256 (about 1.4 GB/s here) and once with MD5 when
 * it is conditional. One operation runs one HTTP request at a time; run several
 * operations for parallelism. A GET's transfer reads into a 256 KiB buffer and a PUT of
 * 512 KiB or more writes from one of that size (fewer system calls a GiB); a client
 * keeps up to 16 finished easy handles, buffers included, for later requests.
 *
 * Upload pacing: every upload's bytes pass through the client's pace callback before
 * curl sends them. It returns how many of the wanted bytes may go now; 0 pauses that
 * transfer until s3_client_resume() (e.g. from the token bucket's refill timer). One
 * callback for all transfers of the client gives one process-wide rate. A buffer
 * under 64 KiB is asked for whole before its attempt starts and, when granted, goes
 * out with the request's headers in one send; a partial grant is spent first by the
 * read callback, so each byte is asked for once per attempt either way.
 *
 * Ownership and callbacks: every function that takes a done callback calls it exactly
 * once when it returned 0, and never when it returned an error. Callbacks run on the
 * loop thread; they may start operations, cancel others and close the client.
 * Pointers in results are borrowed for the callback's duration.
 */
#ifndef LODE_S3_H
#define LODE_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "util/util.h"

struct http_multi; /* internal/http */

/* Errors beyond util.h's (UTIL_EINVAL for bad arguments, UTIL_EIO for local I/O). */
#define S3_EEXISTS   (-EEXIST)       /* a conditional PUT found the key taken */
#define S3_ENOTFOUND (-ENOENT)       /* no such key (or bucket: code says which) */
#define S3_EDENIED   (-EACCES)       /* 401/403: credentials or permissions */
#define S3_ETIMEDOUT (-ETIMEDOUT)    /* the deadline passed, or the last attempt timed out */
#define S3_ECONN     (-ECONNREFUSED) /* connecting or the transfer failed */
#define S3_ETLS      (-EKEYREJECTED) /* the server's certificate was not trusted */
#define S3_EPROTO    (-EBADMSG)      /* the reply is not what S3 sends */
#define S3_EHTTP     (-EREMOTEIO)    /* any other HTTP error status (code/message say which) */
#define S3_ETOOBIG   (-EMSGSIZE)     /* an object larger than the caller's bound */
#define S3_EPARTIAL  (-ENOTEMPTY)    /* DeleteObjects: some keys were not deleted */
#define S3_ECANCELED (-ECANCELED)    /* a callback asked to stop */

#define S3_MAX_KEY      1024 /* bytes in a key, as S3 allows */
#define S3_LIST_PAGE    1000 /* keys a ListObjectsV2 page asks for */
#define S3_DELETE_BATCH 1000 /* keys a DeleteObjects request carries at most */
#define S3_ETAG_MAX     130

/* ---- configuration ---- */

struct s3_config {
    char *endpoint;      /* "https://host[:port]", no trailing slash */
    char *host;          /* "host[:port]" as signed in the Host header */
    char *bucket;        /* 3-63 of [a-z0-9.-] */
    char *prefix;        /* "" or "team/a/" (always ends in '/') */
    char *region;        /* "us-east-1" */
    char *access_key;    /* AWS_ACCESS_KEY_ID */
    char *secret_key;    /* AWS_SECRET_ACCESS_KEY */
    char *session_token; /* AWS_SESSION_TOKEN, or NULL */
    char *ca_pem;        /* an extra CA bundle (PEM), or NULL */
    size_t ca_len;
    bool allow_plain_http; /* http:// to a host that is not loopback */
    /*
     * S3 Object Lock on every object this client writes (PUT, CreateMultipartUpload):
     * "GOVERNANCE" or "COMPLIANCE", retained lock_days from the request's time
     * (x-amz-object-lock-mode, x-amz-object-lock-retain-until-date, and Content-MD5, which
     * AWS requires with them, when the body is in memory). "" or 0 days: none.
     */
    char lock_mode[12];
    int64_t lock_days;
};

/* Most days of Object Lock retention lode sets (100 years). */
#define S3_LOCK_DAYS_MAX 36500

/*
 * Parses "MODE:DAYS" (LODE_OBJECT_LOCK: GOVERNANCE or COMPLIANCE, 1 to S3_LOCK_DAYS_MAX
 * days) into cfg's lock_mode and lock_days. UTIL_EINVAL with a message otherwise.
 */
int s3_lock_parse(struct s3_config *cfg, const char *text, struct util_err *err);

/*
 * Whether a refused write or delete (its S3 error code and message) was refused because
 * Object Lock retains the object: AWS and versitygw say "object protected by object
 * lock", MinIO "WORM protected". forget and gc count such an object as kept.
 */
bool s3_refusal_is_lock(const char *code, const char *message);

/*
 * Parses "s3:http(s)://HOST[:PORT]/BUCKET[/PREFIX]" into endpoint, host, bucket and
 * prefix (pure). Errors name what is wrong: "s3:https://h/": "the repository has no
 * bucket". A trailing '/' on the prefix is optional; "//" and "." or ".." segments are
 * refused.
 */
int s3_url_parse(struct s3_config *cfg, const char *url, struct util_err *err);

/* Where the settings come from; any field may be NULL (not set). */
struct s3_env {
    const char *repository;    /* --repo, else LODE_REPOSITORY */
    const char *access_key;    /* AWS_ACCESS_KEY_ID */
    const char *secret_key;    /* AWS_SECRET_ACCESS_KEY */
    const char *session_token; /* AWS_SESSION_TOKEN */
    const char *region;        /* AWS_REGION, else AWS_DEFAULT_REGION; default us-east-1 */
    const char *cacert_file;   /* --cacert, else LODE_CACERT */
    bool allow_plain_http;
};

/*
 * Builds a configuration from settings: parses the repository, requires both keys,
 * defaults the region, reads the CA file, and refuses plain http to a host that is
 * not loopback without allow_plain_http. On error cfg is left empty.
 */
int s3_config_from(struct s3_config *cfg, const struct s3_env *env, struct util_err *err);

/*
 * The lode commands' entry point: s3_config_from() with repo_flag/cacert_flag (NULL
 * when not given) and the environment (LODE_REPOSITORY, AWS_*, LODE_CACERT).
 */
int s3_config_from_environment(struct s3_config *cfg, const char *repo_flag,
                               const char *cacert_flag, bool allow_plain_http,
                               struct util_err *err);

/* Adds a CA bundle (PEM bytes) to the system's for this configuration (a BackupRepository's
 * caBundle). */
int s3_config_add_ca(struct s3_config *cfg, const char *pem, size_t len, struct util_err *err);

void s3_config_free(struct s3_config *cfg);

/* True for 127.0.0.0/8, ::1 and localhost (pure). */
bool s3_host_is_loopback(const char *host);

/* ---- SigV4 (pure) ---- */

struct s3_header {
    const char *name;  /* lower case */
    const char *value; /* trimmed */
};

struct s3_sign_input {
    const char *method;              /* "GET" */
    const char *canonical_uri;       /* "/bucket/key", already URI-encoded */
    const char *canonical_query;     /* "list-type=2&prefix=a" sorted and encoded, or "" */
    const struct s3_header *headers; /* to sign, sorted by name, host included */
    size_t n_headers;
    const char *payload_hash; /* hex SHA-256 of the body, or "UNSIGNED-PAYLOAD" */
    const char *access_key, *secret_key, *region, *service;
    int64_t time; /* seconds since the epoch, UTC */
};

/*
 * A signer: SHA-256 fetched from OpenSSL once, and the derived signing key of the last
 * day, region, service and secret it signed for (derived again when any changes). A
 * client holds one; it is not shared between threads.
 */
struct s3_signer; /* opaque */
struct s3_signer *s3_signer_new(void);
void s3_signer_free(struct s3_signer *s);
/* Appends the Authorization header's value ("AWS4-HMAC-SHA256 Credential=..."). */
void s3_signer_sign(struct s3_signer *s, const struct s3_sign_input *in, struct util_buf *out);
/* Lower-case hex SHA-256 of data, through the signer's digest. */
void s3_signer_sha256_hex(struct s3_signer *s, const void *data, size_t len, char hex[65]);
/* s3_signer_sign() with a signer of its own (derives the key every time). */
void s3_sigv4_authorization(const struct s3_sign_input *in, struct util_buf *out);
/* "20130524T000000Z" into buf (17 bytes). */
void s3_amz_date(int64_t t, char buf[17]);
/* URI-encodes s as SigV4 wants (unreserved kept; '/' kept when keep_slash). */
void s3_uri_encode(struct util_buf *out, const char *s, size_t len, bool keep_slash);
/* Lower-case hex SHA-256 of data into hex (65 bytes). */
void s3_sha256_hex(const void *data, size_t len, char hex[65]);

/* ---- retry policy (pure) ---- */

/*
 * The delay before retry number `retry` (0 for the first retry): full jitter over
 * [0, min(cap_ms, base_ms * 2^retry)], rnd a uniform 32-bit random number.
 */
uint64_t s3_backoff_delay(unsigned retry, uint64_t base_ms, uint64_t cap_ms, uint32_t rnd);

/*
 * Whether an attempt's outcome is worth another try: status is the HTTP status (0 when
 * the transfer failed below HTTP), code the S3 error code or "", transport_error
 * whether the connection failed, reset, stalled or timed out.
 */
bool s3_retryable(long status, const char *code, bool transport_error);

/* ---- the client ---- */

/* One key of a listing, or one CommonPrefix (is_prefix) when a delimiter was given. */
struct s3_object {
    const char *key; /* full key as the server sent it (the client strips its prefix) */
    uint64_t size;
    int64_t mtime;     /* LastModified, seconds (whole-second servers make ties) */
    uint32_t mtime_ns; /* its fraction, 0 when the server sends none */
    const char *etag;  /* without quotes, or "" */
    bool is_prefix;
};

struct s3_client; /* opaque */
struct s3_op;     /* opaque: one operation in flight */

/* How an operation ended. */
struct s3_result {
    int error;           /* 0 or an S3_E* / UTIL_E* code */
    long status;         /* the last HTTP status, 0 when none */
    const char *code;    /* the S3 error code ("NoSuchKey", "SlowDown"), or "" */
    const char *message; /* what happened, for a user; "" on success */
    unsigned requests;   /* HTTP requests sent, retries and HEAD checks included */
    /* Object facts: PUT, UploadPart and Complete set etag; HEAD and GET set all three. */
    const char *etag; /* without quotes, or "" */
    uint64_t size;    /* the object's size (the whole object's, for a range) */
    int64_t mtime;    /* Last-Modified, seconds, or -1 */
    /* GET without a sink: the bytes (borrowed). */
    const char *body;
    size_t body_len;
    /* CreateMultipartUpload: the new upload's id (borrowed); "" for every other kind. */
    const char *upload_id;
};

typedef void (*s3_done_cb)(const struct s3_result *res, void *arg);
typedef void (*s3_close_cb)(void *arg);
/* Per-key listing callback; a non-zero return stops the listing (done gets S3_ECANCELED). */
typedef int (*s3_list_cb)(const struct s3_object *obj, void *arg);
/* Per-key DeleteObjects outcome: error 0 (deleted) or S3_EHTTP with code and message. */
typedef void (*s3_deleted_cb)(const char *key, int error, const char *code, const char *message,
                              void *arg);
/* A GET sink: bytes in order, each exactly once; non-zero stops the GET (S3_ECANCELED). */
typedef int (*s3_write_cb)(const char *data, size_t len, void *arg);
/* A streamed body: fill buf with up to len bytes from offset; return bytes, or < 0 (errno). */
typedef ssize_t (*s3_read_cb)(uint64_t offset, char *buf, size_t len, void *arg);
/* Upload pacing: how many of want bytes may be sent now (0 pauses; see s3_client_resume). */
typedef size_t (*s3_pace_cb)(size_t want, void *arg);
/* One finished HTTP request, for metrics: "PUT", "GET", "LIST", "DELETE"... */
typedef void (*s3_observe_cb)(const char *op, long status, int error, uint64_t ms, void *arg);

struct s3_client_opts {
    struct http_multi *http;     /* borrowed transport (outlives the client); NULL = own */
    unsigned max_attempts;       /* requests per operation step; 0 = 6 */
    uint64_t backoff_base_ms;    /* 0 = 100 */
    uint64_t backoff_cap_ms;     /* 0 = 10,000 */
    uint64_t deadline_ms;        /* default per operation, retries included; 0 = 10 min */
    uint64_t connect_timeout_ms; /* 0 = 10 s */
    uint64_t stall_timeout_ms;   /* no byte either way for this long fails the attempt; 0 = 30 s */
    uint64_t seed;               /* jitter seed; 0 = from the clock */
    s3_pace_cb pace_cb;          /* optional, for every upload */
    void *pace_arg;
    s3_observe_cb observe_cb; /* optional */
    void *observe_arg;
    const char *user_agent; /* NULL = "lodestore" */
    /* Every finished operation ends with uv_stop: for an owner that runs its loop one
     * step at a time, as s3_sync does (internal/http/http.h says why). */
    bool step_loop;
};

/* Creates a client on loop; the configuration is copied. */
int s3_client_init(uv_loop_t *loop, struct s3_client **out, const struct s3_config *cfg,
                   const struct s3_client_opts *opts, struct util_err *err);
/*
 * Cancels every operation (their callbacks are not called), then calls cb (may be
 * NULL) once curl has let go of everything; the client is freed before cb runs.
 */
void s3_client_close(struct s3_client *c, s3_close_cb cb, void *arg);
/* Resumes every upload the pace callback paused. */
void s3_client_resume(struct s3_client *c);
/* Operations running. */
size_t s3_client_running(const struct s3_client *c);
const struct s3_config *s3_client_config(const struct s3_client *c);

/* Per-operation options; NULL means all defaults. */
struct s3_opts {
    uint64_t deadline_ms;    /* this operation's deadline, retries included; 0 = client's */
    bool if_none_match;      /* PUT: only if the key does not exist (If-None-Match: *) */
    uint64_t range_start;    /* GET: first byte */
    uint64_t range_len;      /* GET: bytes from range_start; 0 = to the end */
    uint64_t max_bytes;      /* GET into memory: larger is S3_ETOOBIG; 0 = 64 MiB */
    const char *delimiter;   /* LIST: group keys into CommonPrefixes (e.g. "/"), or NULL */
    const char *start_after; /* LIST: only keys after this one (relative), or NULL */
    bool quiet;              /* DeleteObjects: ask for the quiet reply (errors only) */
};

/* A PUT body: a buffer, or a streamed reader of exactly len bytes. */
struct s3_body {
    const void *data; /* the bytes (borrowed until done), or NULL for read */
    uint64_t len;
    s3_read_cb read; /* called with increasing offsets; from 0 again on a retry */
    void *read_arg;
    /*
     * Hex SHA-256 of the body when known in advance (a pack named by its hash): it is
     * signed. A streamed body without it is sent as UNSIGNED-PAYLOAD. A buffer's hash
     * is computed here.
     */
    const char *sha256_hex;
    const char *content_type; /* NULL = application/octet-stream */
};

int s3_put(struct s3_client *c, const char *key, const struct s3_body *body,
           const struct s3_opts *o, s3_done_cb cb, void *arg, struct s3_op **out,
           struct util_err *err);
/* GET: into sink when given, else into memory (res.body). */
int s3_get(struct s3_client *c, const char *key, const struct s3_opts *o, s3_write_cb sink,
           s3_done_cb cb, void *arg, struct s3_op **out, struct util_err *err);
int s3_head(struct s3_client *c, const char *key, const struct s3_opts *o, s3_done_cb cb, void *arg,
            struct s3_op **out, struct util_err *err);
/* DELETE of one key; a missing key is success (S3's answer too). */
int s3_delete(struct s3_client *c, const char *key, const struct s3_opts *o, s3_done_cb cb,
              void *arg, struct s3_op **out, struct util_err *err);
/* Lists keys under prefix (relative; "" for all), page by page; see the note above. */
int s3_list(struct s3_client *c, const char *prefix, const struct s3_opts *o, s3_list_cb each,
            s3_done_cb done, void *arg, struct s3_op **out, struct util_err *err);
/* Deletes keys (relative; copied) in batches; each key's outcome goes to each. */
int s3_delete_objects(struct s3_client *c, const char *const *keys, size_t n,
                      const struct s3_opts *o, s3_deleted_cb each, s3_done_cb done, void *arg,
                      struct s3_op **out, struct util_err *err);
/* Creates the bucket (with the region as LocationConstraint outside us-east-1). */
int s3_create_bucket(struct s3_client *c, const struct s3_opts *o, s3_done_cb cb, void *arg,
                     struct s3_op **out, struct util_err *err);
/* A cheap signed request that says whether the bucket is usable (ListObjectsV2, 1 key). */
int s3_probe(struct s3_client *c, const struct s3_opts *o, s3_done_cb cb, void *arg,
             struct s3_op **out, struct util_err *err);
/* Cancels an operation: its callbacks will not be called. Safe from any callback. */
void s3_op_cancel(struct s3_op *op);

/* ---- multipart uploads (see the note above) ---- */

#define S3_PART_MIN     (5u << 20) /* every part but the last: S3's minimum */
#define S3_PARTS_MAX    10000
#define S3_UPLOADS_PAGE 1000 /* uploads a ListMultipartUploads page asks for */

struct s3_part {
    unsigned number;        /* 1..S3_PARTS_MAX, ascending in a complete */
    char etag[S3_ETAG_MAX]; /* as UploadPart returned it, without quotes */
};
/* CreateMultipartUpload: on success res->upload_id (borrowed for the callback). */
int s3_multipart_create(struct s3_client *c, const char *key, const struct s3_opts *o,
                        s3_done_cb cb, void *arg, struct s3_op **out, struct util_err *err);
/* UploadPart: body as for s3_put (paced like every upload; signed when sha256 given); on
 * success res->etag. */
int s3_multipart_put(struct s3_client *c, const char *key, const char *upload_id, unsigned number,
                     const struct s3_body *body, const struct s3_opts *o, s3_done_cb cb, void *arg,
                     struct s3_op **out, struct util_err *err);
/* CompleteMultipartUpload with parts (copied); res->etag is the object's. A 200 reply that
 * carries <Error> is an error. */
int s3_multipart_complete(struct s3_client *c, const char *key, const char *upload_id,
                          const struct s3_part *parts, size_t n, const struct s3_opts *o,
                          s3_done_cb cb, void *arg, struct s3_op **out, struct util_err *err);
/* AbortMultipartUpload; NoSuchUpload (404) counts as success (already gone). */
int s3_multipart_abort(struct s3_client *c, const char *key, const char *upload_id,
                       const struct s3_opts *o, s3_done_cb cb, void *arg, struct s3_op **out,
                       struct util_err *err);
/* ListMultipartUploads under prefix (relative), all pages (key-marker/upload-id-marker);
 * keys given relative like s3_list; non-zero from each stops (S3_ECANCELED). */
struct s3_upload {
    const char *key;
    const char *upload_id;
    int64_t initiated; /* seconds, or -1 when the server sent none */
};
typedef int (*s3_upload_cb)(const struct s3_upload *u, void *arg);
int s3_list_uploads(struct s3_client *c, const char *prefix, const struct s3_opts *o,
                    s3_upload_cb each, s3_done_cb done, void *arg, struct s3_op **out,
                    struct util_err *err);

/*
 * Checks parts for a complete (1..S3_PARTS_MAX parts, numbers ascending within
 * 1..S3_PARTS_MAX, ETags non-empty, NUL-terminated and free of control characters):
 * 0 or UTIL_EINVAL naming the first bad part (pure).
 */
int s3_parts_check(const struct s3_part *parts, size_t n, struct util_err *err);
/*
 * The ETag S3 gives the object a Complete of parts makes: hex MD5 of the parts' binary
 * MD5s, "-", the number of parts ("9b2cf5...-2"), into out (40 bytes or more). False
 * when a part's ETag is not an MD5 (parts encrypted with KMS): the ETag is then not
 * known in advance (pure).
 */
bool s3_multipart_etag(const struct s3_part *parts, size_t n, char *out, size_t size);
/* ---- synchronous wrappers (a private loop; for the lode commands) ---- */

struct s3_sync; /* opaque */

/* What a synchronous operation learnt about the object. */
struct s3_info {
    long status;
    unsigned requests;
    char etag[S3_ETAG_MAX];
    uint64_t size;
    int64_t mtime;
    char code[64]; /* the S3 error code, or "" */
};

int s3_sync_open(struct s3_sync **out, const struct s3_config *cfg,
                 const struct s3_client_opts *opts, struct util_err *err);
void s3_sync_close(struct s3_sync *s);
/* The client and loop behind the wrapper, to run several operations at once. */
struct s3_client *s3_sync_client(struct s3_sync *s);
uv_loop_t *s3_sync_loop(struct s3_sync *s);

/* Each returns 0 or the operation's error with err's message; info may be NULL. */
int s3_sync_put(struct s3_sync *s, const char *key, const struct s3_body *body,
                const struct s3_opts *o, struct s3_info *info, struct util_err *err);
/* *data (owned by the caller, NUL-terminated beyond len) and *len. */
int s3_sync_get(struct s3_sync *s, const char *key, const struct s3_opts *o, char **data,
                size_t *len, struct s3_info *info, struct util_err *err);
int s3_sync_get_to(struct s3_sync *s, const char *key, const struct s3_opts *o, s3_write_cb sink,
                   void *sink_arg, struct s3_info *info, struct util_err *err);
int s3_sync_head(struct s3_sync *s, const char *key, struct s3_info *info, struct util_err *err);
int s3_sync_delete(struct s3_sync *s, const char *key, struct util_err *err);
int s3_sync_list(struct s3_sync *s, const char *prefix, const struct s3_opts *o, s3_list_cb each,
                 void *arg, struct s3_info *info, struct util_err *err);
int s3_sync_delete_objects(struct s3_sync *s, const char *const *keys, size_t n,
                           const struct s3_opts *o, s3_deleted_cb each, void *arg,
                           struct s3_info *info, struct util_err *err);
int s3_sync_create_bucket(struct s3_sync *s, struct util_err *err);
/* Multipart: *upload_id is owned by the caller; part is filled with number and ETag. */
int s3_sync_multipart_create(struct s3_sync *s, const char *key, char **upload_id,
                             struct s3_info *info, struct util_err *err);
int s3_sync_multipart_put(struct s3_sync *s, const char *key, const char *upload_id,
                          unsigned number, const struct s3_body *body, struct s3_part *part,
                          struct s3_info *info, struct util_err *err);
int s3_sync_multipart_complete(struct s3_sync *s, const char *key, const char *upload_id,
                               const struct s3_part *parts, size_t n, struct s3_info *info,
                               struct util_err *err);
int s3_sync_multipart_abort(struct s3_sync *s, const char *key, const char *upload_id,
                            struct util_err *err);
int s3_sync_list_uploads(struct s3_sync *s, const char *prefix, s3_upload_cb each, void *arg,
                         struct util_err *err);

#endif
