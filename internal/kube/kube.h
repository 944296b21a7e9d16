/*
 * kube: a small Kubernetes API client on libcurl's multi interface, driven by one
 * libuv loop (no threads, nothing blocks except reading small local files).
 *
 * Pieces, from the bottom up:
 *   kube_config_*     kubeconfig (YAML, via libyaml) and in-cluster configuration. The
 *                     parser is pure over bytes; reading certificate and token files
 *                     happens in kube_config_resolve() and kube_config_load*().
 *   kube_lines_*      an incremental line splitter for watch streams: bytes arrive in
 *                     arbitrary chunks, complete lines come out, each byte is scanned
 *                     once, and a line longer than a bound is an error.
 *   kube_watch_decode one watch line -> type, object, resourceVersion (or the Status
 *                     of an ERROR event, e.g. 410 Gone).
 *   kube_bucket_*, kube_backoff_*  a token bucket and jittered exponential backoff,
 *                     pure: time and randomness are inputs.
 *   kube_client_*     requests on the shared transport (internal/http: one CURLM driven
 *                     by the loop, which the S3 client may share), queued behind the
 *                     token bucket. TLS is always verified; certificates go to curl as
 *                     in-memory blobs.
 *   kube_get/list/create/update/merge_patch/apply(_dry_run)/delete, kube_watch: the verbs.
 *   kube_reflector_*  list (paged) + watch one resource, with resourceVersion,
 *                     bookmarks, a relist on 410 Gone, and backoff on errors; it
 *                     delivers add/update/delete/synced and keeps only names and
 *                     resourceVersions, so after a relist it can report the objects that
 *                     vanished while it was disconnected.
 *   kube_event_create a core/v1 Event about an object.
 *
 * What it costs:
 *   - HTTP/1.1 with keep-alive, no HTTP/2: every watch holds one TCP+TLS connection for
 *     its lifetime (lode-controller's four informers hold four, plus a few pooled ones
 *     for ordinary requests). That keeps one slow stream from stalling the others.
 *   - A request costs its URL, headers and body (owned copies) plus, for ordinary
 *     requests, the whole response while it arrives (bounded by max_response_bytes).
 *     The parsed json_t is handed to the callback and freed when it returns, unless the
 *     callback takes a reference.
 *   - A watch holds at most one partial line (bounded by max_line_bytes); each event is
 *     parsed, delivered and freed: no JSON tree outlives its callback.
 *   - A reflector keeps one "namespace/name resourceVersion" string per object and a
 *     16-byte slot of an open-addressing table (3/8 to 3/4 full): about 50-100 bytes
 *     per object, nothing else.
 *   - CPU: splitting costs about 0.4 us per 6.4 KiB event; decoding it with jansson about
 *     90 us (70 MB/s, measured on the 2-core development machine under load), which is
 *     why metadata-only watches matter for Nodes. A reflector peeks at each event
 *     first (kube_watch_peek in kube_text.h, a pass over the bytes up to the metadata) and
 *     leaves undecoded one whose version it already holds: the owner's own writes,
 *     which it notes from their answers (kube_reflector_note).
 *
 * Choices, and why:
 *   - The rate limit (default 20 QPS, burst 30, as kube-controller-manager used) applies
 *     to every request but watches, GETs included, in FIFO order; < 0 turns it off and
 *     leaves the server's priority and fairness in charge.
 *   - Backoff after a failed list or watch: 1 s doubling to a 30 s cap, each delay drawn
 *     from [d/2, d], reset by a complete list or a watch that ran normally.
 *   - Each watch asks the server to end it after a random 300-600 s, so that many
 *     reflectors do not reconnect in step; the normal end reconnects at once from the
 *     last resourceVersion (bookmarks keep it fresh), and a 410 (HTTP or ERROR event)
 *     relists. A watch that ends at once with nothing in it counts as a failure, so a
 *     misbehaving server cannot make it spin.
 *   - Lists are consistent reads (no resourceVersion=0), paged (default 500 per page).
 *   - A pooled connection idle for more than 20 s is not reused: a request written into
 *     a connection the server is closing would fail instead of being retried.
 *   - max_in_flight bounds the ordinary requests in flight: a burst then reuses the
 *     connections already open instead of opening (and handshaking) one per request.
 *   - One client has one FIFO: a burst of creates delays a request queued behind it. A
 *     Lease renewal that must not wait belongs on a client of its own (as client-go's
 *     leader election has its own limiter).
 *
 * Ownership: every function that takes a callback calls it at most once per request
 * (a watch calls its event callback once per event and its done callback once), and
 * never when it returned an error. Callbacks run on the loop thread; they may start
 * requests, cancel others, close the client, and a watch's event callback may cancel
 * its own watch. Borrowed pointers in callback arguments are valid only during the
 * callback.
 */
#ifndef LODE_KUBE_H
#define LODE_KUBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "kube/kube_text.h"
#include "util/util.h"

/* Error codes beyond util.h's: transport failures and timeouts of requests. */
#define KUBE_ETIMEDOUT (-ETIMEDOUT)    /* the request did not finish within its timeout */
#define KUBE_ECONN     (-ECONNREFUSED) /* connecting, TLS or the transfer failed */
#define KUBE_ETOOBIG   (-EMSGSIZE)     /* a response or a watch line exceeded its bound */
#define KUBE_EPROTO    (-EPROTO)       /* the server sent something that is not the API's JSON */

/* ---- configuration ---- */

/* Where in-cluster configuration lives (the service account's projected volume). */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/*
 * A resolved connection configuration. Strings are owned (freed by kube_config_free).
 * The *_path fields come from the kubeconfig; kube_config_resolve() reads them into the
 * matching *_pem buffers. token_file, when set, is read again by the client every
 * token_reload_ms (bound service-account tokens rotate), and its content wins over token.
 */
struct kube_config {
    char *server;          /* "https://host:port[/prefix]", without a trailing slash */
    char *tls_server_name; /* overrides the name checked in the server certificate, or NULL */
    char *namespace;       /* the context's namespace, the pod's, or "default" */
    char *context;         /* the context used (for messages), or NULL in-cluster */
    char *ca_path, *cert_path, *key_path;
    char *ca_pem, *cert_pem, *key_pem; /* PEM bytes, NUL-terminated; NULL = none */
    size_t ca_len, cert_len, key_len;
    char *token;      /* a bearer token, or NULL */
    char *token_file; /* a file holding the bearer token, or NULL */
    bool insecure;    /* TLS not verified (or plain http): only if explicitly allowed */
};

struct kube_config_opts {
    const char *context; /* a context name; NULL = the kubeconfig's current-context */
    /*
     * Allows insecure-skip-tls-verify and http:// servers. Off by default: Lodestore
     * verifies TLS. Tests against a local fake server turn it on.
     */
    bool allow_insecure;
};

/*
 * Parses a kubeconfig from bytes (YAML or JSON) and selects one context. Relative file
 * paths are made absolute against base_dir (the kubeconfig's directory; NULL leaves them
 * as they are). Reads no file. Errors name the field and the line: "kubeconfig:12:
 * users[0].user.client-key-data: invalid base64 at byte 17". Unsupported credentials
 * (exec plugins, auth providers, basic auth) are errors that say so, not silently
 * anonymous. On error cfg is left empty (nothing to free).
 */
int kube_config_parse(struct kube_config *cfg, const char *data, size_t len, const char *base_dir,
                      const struct kube_config_opts *opts, struct util_err *err);

/*
 * Builds an in-cluster configuration from its parts (pure): the service host and port
 * (an IPv6 host gets brackets), the CA bundle, and the namespace file's content (NULL or
 * empty means "default"). token_file is the path the client will read the token from.
 */
int kube_config_incluster(struct kube_config *cfg, const char *host, const char *port,
                          const char *ca_pem, size_t ca_len, const char *namespace_text,
                          const char *token_file, struct util_err *err);

/*
 * Reads the files a parsed configuration names (CA, client certificate and key, token
 * file) into memory, and checks that PEM data looks like PEM. Done once at startup.
 */
int kube_config_resolve(struct kube_config *cfg, struct util_err *err);

/* Reads, parses and resolves one kubeconfig file. */
int kube_config_load_file(struct kube_config *cfg, const char *path,
                          const struct kube_config_opts *opts, struct util_err *err);

/*
 * In-cluster configuration from KUBERNETES_SERVICE_HOST/PORT and sa_dir (NULL =
 * KUBE_SA_DIR): reads ca.crt, namespace and the token once (to fail early).
 */
int kube_config_load_incluster(struct kube_config *cfg, const char *sa_dir, struct util_err *err);

/*
 * The usual search, as controller-runtime does it: path if not NULL, else $KUBECONFIG
 * (one file; a list is refused), else in-cluster when KUBERNETES_SERVICE_HOST is set,
 * else $HOME/.kube/config.
 */
int kube_config_load_default(struct kube_config *cfg, const char *path,
                             const struct kube_config_opts *opts, struct util_err *err);

void kube_config_free(struct kube_config *cfg);

/*
 * Strict base64 (RFC 4648, standard alphabet, '=' padding required; CR and LF are
 * skipped as Go's decoder does). out receives a NUL-terminated allocation. The error
 * gives the byte offset of the first bad character.
 */
int kube_base64_decode(const char *in, size_t len, char **out, size_t *out_len,
                       struct util_err *err);

/* ---- watch streams: event decoding (pure) ---- */

/* The line splitter (struct kube_lines) is in kube_text.h. */

enum kube_event_type {
    KUBE_EVENT_ADDED,
    KUBE_EVENT_MODIFIED,
    KUBE_EVENT_DELETED,
    KUBE_EVENT_BOOKMARK,
    KUBE_EVENT_ERROR,
};

/* One decoded watch event. All pointers are borrowed from the root json_t. */
struct kube_watch_event {
    enum kube_event_type type;
    json_t *object;               /* the "object" member (a Status for ERROR) */
    const char *resource_version; /* object.metadata.resourceVersion, or NULL */
    const char *namespace;        /* object.metadata.namespace, or NULL */
    const char *name;             /* object.metadata.name, or NULL (ERROR) */
    int code;                     /* ERROR: the Status code (410 = Gone: relist) */
    const char *reason;           /* ERROR: the Status reason ("Expired", "Gone"), or "" */
    const char *message;          /* ERROR: the Status message, or "" */
};

/*
 * Decodes one line of a watch stream. *root receives the parsed JSON (the caller
 * json_decref()s it, also when the call fails after parsing; NULL if parsing failed).
 * A line that is not a JSON object with a known "type" and an object "object" is
 * KUBE_EPROTO; ADDED/MODIFIED/DELETED/BOOKMARK need metadata.resourceVersion.
 */
int kube_watch_decode(const char *line, size_t len, json_t **root, struct kube_watch_event *ev,
                      struct util_err *err);

const char *kube_event_type_name(enum kube_event_type t);

/* ---- token bucket and backoff (pure) ---- */

/*
 * A token bucket: qps tokens per second up to burst. now_ms is the caller's clock
 * (the loop's uv_now in the client, a fake clock in tests). qps <= 0 disables it.
 * Counted in integer millionths of a token, so that 5 QPS gives exactly one token per
 * 200 ms (a rate below 0.001 QPS counts as 0.001).
 */
struct kube_bucket {
    int64_t rate;   /* millionths of a token per ms; 0 = unlimited */
    int64_t burst;  /* millionths */
    int64_t tokens; /* millionths */
    uint64_t last_ms;
};

void kube_bucket_init(struct kube_bucket *b, double qps, unsigned burst, uint64_t now_ms);
/*
 * Takes a token if one is there and returns 0; otherwise returns how many ms to wait
 * until one will be (at least 1) and takes nothing.
 */
uint64_t kube_bucket_take(struct kube_bucket *b, uint64_t now_ms);

/*
 * Exponential backoff with "equal jitter": the n-th consecutive failure waits a delay
 * d = min(cap, base * 2^n) drawn uniformly from [d/2, d], so retries from many clients
 * spread out but never come sooner than half the nominal delay, never later than cap.
 */
struct kube_backoff {
    uint64_t base_ms; /* KUBE_BACKOFF_BASE_MS unless set */
    uint64_t cap_ms;  /* KUBE_BACKOFF_CAP_MS unless set */
    unsigned failures;
};

#define KUBE_BACKOFF_BASE_MS 1000
#define KUBE_BACKOFF_CAP_MS  30000

void kube_backoff_init(struct kube_backoff *b, uint64_t base_ms, uint64_t cap_ms);
/* The delay before the next attempt after one more failure; rnd is any 32-bit random. */
uint64_t kube_backoff_next(struct kube_backoff *b, uint32_t rnd);
void kube_backoff_reset(struct kube_backoff *b);

/* ---- addressing ---- */

/* A resource: group "" is the core API ("/api/v1"), others are "/apis/GROUP/VERSION". */
struct kube_resource {
    const char *group;     /* "", "batch", "lodestore.io" */
    const char *version;   /* "v1", "v1alpha1" */
    const char *resource;  /* the plural: "configmaps", "backuppolicies" */
    const char *namespace; /* NULL for cluster-scoped resources, or all namespaces */
};

/*
 * Appends the path of a collection (name NULL) or an object, and optionally of its
 * subresource ("status"), to out. Each segment is percent-encoded. UTIL_EINVAL for a
 * missing version/resource or an empty name.
 */
int kube_path(struct util_buf *out, const struct kube_resource *res, const char *name,
              const char *subresource, struct util_err *err);
/* Appends "?key=value" or "&key=value" with value percent-encoded (RFC 3986 unreserved kept). */
void kube_query_add(struct util_buf *out, const char *key, const char *value);

/* ---- the client ---- */

struct kube_client;  /* opaque */
struct http_multi;   /* internal/http */
struct kube_request; /* opaque: one request in flight or queued */

/* The outcome of a request. */
struct kube_result {
    /*
     * 0 when the server answered (whatever the status); otherwise the request failed
     * below HTTP: KUBE_ETIMEDOUT, KUBE_ECONN, KUBE_ETOOBIG, KUBE_EPROTO (a 2xx body that
     * is not JSON), and message says what happened.
     */
    int error;
    long status; /* the HTTP status, 0 when error is set */
    /*
     * The parsed body (an object or list on success, the Status on failure), or NULL.
     * Borrowed: json_incref() it to keep it past the callback.
     */
    json_t *body;
    const char *reason;  /* the Status reason ("NotFound", "AlreadyExists", "Conflict"), or "" */
    const char *message; /* the Status message or the transport error, or "" on success */
};

typedef void (*kube_result_cb)(const struct kube_result *res, void *arg);

/*
 * True for a write the API server refused because its namespace is being deleted (the
 * NamespaceLifecycle admission: 403 Forbidden, "... because it is being terminated"):
 * expected while a namespace goes, and no refusal by RBAC. Pure.
 */
bool kube_result_ns_terminating(const struct kube_result *res);
/* A watch event; the event and its JSON are borrowed. */
typedef void (*kube_watch_cb)(const struct kube_watch_event *ev, void *arg);
typedef void (*kube_close_cb)(void *arg);
/*
 * One finished request, for metrics: verb ("GET", "LIST", "WATCH", "PATCH"...), the
 * resource with its subresource ("backups", "backups/status"), and its result (status,
 * error, reason and message; the body is not set).
 */
typedef void (*kube_observe_cb)(const char *verb, const char *resource,
                                const struct kube_result *res, uint64_t ms, void *arg);
/* A warning the client cannot return to anyone (a failed token re-read). */
typedef void (*kube_warn_cb)(const char *msg, void *arg);

struct kube_client_opts {
    double qps;                  /* client-side rate limit; 0 = default 20, < 0 = none */
    unsigned burst;              /* 0 = default 30 */
    uint64_t timeout_ms;         /* per ordinary request; 0 = 30 s */
    uint64_t connect_timeout_ms; /* 0 = 10 s */
    uint64_t token_reload_ms;    /* token_file re-read period; 0 = 60 s */
    size_t max_response_bytes;   /* 0 = 64 MiB */
    size_t max_line_bytes;       /* one watch event; 0 = KUBE_MAX_LINE_DEFAULT */
    const char *field_manager;   /* server-side apply owner; NULL = "lodestore" */
    const char *user_agent;      /* NULL = "lodestore" (callers add their version) */
    kube_observe_cb observe_cb;  /* optional */
    kube_warn_cb warn_cb;        /* optional */
    void *cb_arg;                /* for observe_cb and warn_cb */
    /*
     * The transport to run on (borrowed; it must outlive the client), so that the
     * controller's Kubernetes and S3 traffic share one curl multi handle. NULL: the
     * client creates its own on the loop and closes it with itself.
     */
    struct http_multi *http;
    /* Every result and watch event ends with uv_stop: for an owner that runs its loop
     * one step at a time (internal/http/http.h says why). Not with UV_RUN_DEFAULT. */
    bool step_loop;
    /*
     * Members left out of the answer to every write (POST, PUT, PATCH) before it is
     * decoded (kube_json_strip; paths from the object: "metadata.managedFields"), for an
     * owner that reads a few fields of what it wrote; NULL-terminated, borrowed for the
     * client's life, or NULL. GETs, LISTs and errors are decoded whole.
     */
    const char *const *strip_answers;
    /*
     * Resources ("events", "backuppolicies/status": resource and subresource) whose answers
     * to writes the owner never reads: a 2xx answer to a POST, PUT, PATCH or DELETE of one
     * is not decoded, and its result has no body (NULL). Errors are decoded as usual, for
     * their message. NULL-terminated, borrowed for the client's life, or NULL.
     */
    const char *const *unread_answers;
    /*
     * At most this many ordinary requests in flight at once (0: no bound); the rest wait
     * in the queue, after the rate limit. Each request in flight holds a connection of its
     * own (HTTP/1.1), and a new one costs a TLS handshake with its context built anew
     * (curl 7.88 parses the CA bundle and the client key for each): a bound keeps a burst
     * on the connections already open instead of opening one per request of the burst.
     */
    unsigned max_in_flight;
};

/*
 * Creates a client on loop. The configuration is copied. Fails if the token file
 * cannot be read or curl cannot be set up.
 */
int kube_client_init(uv_loop_t *loop, struct kube_client **out, const struct kube_config *cfg,
                     const struct kube_client_opts *opts, struct util_err *err);
/*
 * Cancels every request still queued or in flight (their callbacks are not called),
 * closes the client's handles and calls cb (may be NULL) once they are closed; the
 * client is freed before cb runs. Stop users such as reflectors first.
 */
void kube_client_close(struct kube_client *c, kube_close_cb cb, void *arg);
/* The configuration's default namespace. */
const char *kube_client_namespace(const struct kube_client *c);
/* Requests queued behind the rate limit, and in flight. */
size_t kube_client_queued(const struct kube_client *c);
size_t kube_client_active(const struct kube_client *c);
/* The transport the client runs on, to share with other clients (internal/s3). */
struct http_multi *kube_client_http(const struct kube_client *c);

/*
 * Cancels a request: its callbacks will not be called, and the client frees it. Safe
 * from any callback, including the request's own watch callback. Passing a request
 * whose result callback already ran is a bug.
 */
void kube_request_cancel(struct kube_request *r);

/* Options of a LIST or WATCH. Strings are copied. */
struct kube_list_opts {
    const char *label_selector; /* "app=x,tier in (a,b)", or NULL */
    const char *field_selector; /* "metadata.name=x", or NULL */
    unsigned limit;             /* LIST page size; 0 = no paging */
    const char *continue_token; /* LIST: the previous page's metadata.continue */
    const char *resource_version;
    bool metadata_only;       /* PartialObjectMetadata(List) instead of whole objects */
    unsigned timeout_seconds; /* WATCH: the server ends the watch after this; 0 = 300 */
    /* WATCH: members of each event left out before it is decoded (kube_json_strip), paths
     * from the event ("object.metadata.managedFields"); NULL-terminated, borrowed for the
     * watch's life, or NULL. */
    const char *const *strip;
    /* WATCH: for an event of an object (ADDED, MODIFIED, DELETED) that kube_watch_peek can
     * read, only these members are kept (kube_json_keep), in place of strip; the paths are
     * from the event and name "type" and "object.metadata.resourceVersion" too. Other
     * events (BOOKMARK, ERROR) are stripped as above. Borrowed, or NULL. */
    const char *const *keep;
    /* WATCH: asked, for each event kube_watch_peek can read, whether to leave it undecoded
     * (true: the event callback does not hear of it); NULL decodes every event. */
    bool (*skip_cb)(const struct kube_watch_peek *peek, void *arg);
};

/* In the request functions, `out` (may be NULL) receives the handle for cancelling. */
int kube_get(struct kube_client *c, const struct kube_resource *res, const char *name,
             const char *subresource, kube_result_cb cb, void *arg, struct kube_request **out,
             struct util_err *err);
/* One page; the body is the List (items, metadata.continue, metadata.resourceVersion). */
int kube_list(struct kube_client *c, const struct kube_resource *res,
              const struct kube_list_opts *opts, kube_result_cb cb, void *arg,
              struct kube_request **out, struct util_err *err);
/* POST to the collection. 409 AlreadyExists is a result, not an error. */
int kube_create(struct kube_client *c, const struct kube_resource *res, const json_t *obj,
                kube_result_cb cb, void *arg, struct kube_request **out, struct util_err *err);
/* PUT: replaces the object; with metadata.resourceVersion set, 409 Conflict on a race. */
int kube_update(struct kube_client *c, const struct kube_resource *res, const char *name,
                const char *subresource, const json_t *obj, kube_result_cb cb, void *arg,
                struct kube_request **out, struct util_err *err);
/* PATCH application/merge-patch+json (RFC 7386), on the object or a subresource. */
int kube_merge_patch(struct kube_client *c, const struct kube_resource *res, const char *name,
                     const char *subresource, const json_t *patch, kube_result_cb cb, void *arg,
                     struct kube_request **out, struct util_err *err);
/*
 * Server-side apply: PATCH application/apply-patch+yaml (the JSON is valid YAML) with
 * fieldManager and force=true, on the object or a subresource ("status").
 */
int kube_apply(struct kube_client *c, const struct kube_resource *res, const char *name,
               const char *subresource, const json_t *obj, kube_result_cb cb, void *arg,
               struct kube_request **out, struct util_err *err);
/*
 * The same apply with dryRun=All: the server validates, admits, defaults and answers
 * (200 or 201, the object as it would be) and stores nothing. Costs one request.
 */
int kube_apply_dry_run(struct kube_client *c, const struct kube_resource *res, const char *name,
                       const char *subresource, const json_t *obj, kube_result_cb cb, void *arg,
                       struct kube_request **out, struct util_err *err);
/* DELETE with propagationPolicy ("Background", "Foreground", "Orphan", or NULL). */
int kube_delete(struct kube_client *c, const struct kube_resource *res, const char *name,
                const char *propagation, kube_result_cb cb, void *arg, struct kube_request **out,
                struct util_err *err);
/*
 * WATCH from opts->resource_version with bookmarks. event_cb gets each event as it
 * arrives; done_cb gets the end: status 200 when the server closed the stream (its
 * timeout), 410 when the version is too old, or a transport/decoding error. A watch is
 * not rate-limited and has no client timeout beyond timeout_seconds + 30 s.
 */
int kube_watch(struct kube_client *c, const struct kube_resource *res,
               const struct kube_list_opts *opts, kube_watch_cb event_cb, kube_result_cb done_cb,
               void *arg, struct kube_request **out, struct util_err *err);

/* ---- the reflector: list + watch one resource ---- */

struct kube_reflector; /* opaque */

/*
 * Callbacks of a reflector; any may be NULL. obj is borrowed (NULL in a delete found by
 * a relist: the object is gone, only its key is known). namespace is "" for
 * cluster-scoped objects.
 */
struct kube_reflector_cbs {
    void (*add_cb)(struct kube_reflector *r, const char *namespace, const char *name, json_t *obj,
                   void *arg);
    void (*update_cb)(struct kube_reflector *r, const char *namespace, const char *name,
                      json_t *obj, void *arg);
    void (*delete_cb)(struct kube_reflector *r, const char *namespace, const char *name,
                      json_t *obj, void *arg);
    /* After each complete list (the first and every relist): the set is whole. */
    void (*synced_cb)(struct kube_reflector *r, void *arg);
    /* A failure it will retry after delay_ms (for logs and metrics). */
    void (*error_cb)(struct kube_reflector *r, const char *what, uint64_t delay_ms, void *arg);
};

struct kube_reflector_opts {
    struct kube_resource res;   /* strings copied */
    const char *label_selector; /* copied; NULL = all */
    const char *field_selector; /* copied; NULL = all */
    bool metadata_only;         /* objects are PartialObjectMetadata */
    unsigned page_size;         /* LIST limit; 0 = 500 */
    /* Each watch asks the server to end after a random time in [min, max) s; 0 = 300/600. */
    unsigned watch_timeout_min_s, watch_timeout_max_s;
    uint64_t backoff_base_ms, backoff_cap_ms; /* 0 = 1 s and 30 s */
    /* Members of the objects the watch leaves out (kube_list_opts.strip; the paths start at
     * "object."); borrowed for the reflector's life, or NULL. */
    const char *const *strip;
    /* Or the only members of an object's events the watch keeps (kube_list_opts.keep). */
    const char *const *keep;
    /*
     * An ADDED or MODIFIED watch event the owner can tell from its text it has no use for
     * (true): it is neither decoded nor delivered nor recorded, so the object's next event
     * that is delivered comes as an add, a delete of an object none of whose events was
     * delivered is not delivered either, and a relist delivers it as usual. NULL: none.
     */
    bool (*skip_cb)(const struct kube_watch_peek *peek, void *arg);
};

/*
 * Creates a reflector (no request yet). The reflector owns a timer on the client's
 * loop; close it with kube_reflector_close before closing the client.
 */
int kube_reflector_init(struct kube_client *c, struct kube_reflector **out,
                        const struct kube_reflector_opts *opts,
                        const struct kube_reflector_cbs *cbs, void *arg, struct util_err *err);
/*
 * Starts: lists first; after a stop that followed a complete list, resumes watching
 * from the last resourceVersion instead (if that expired meanwhile, the 410 brings a
 * relist, which reports what changed, deletes included).
 */
void kube_reflector_start(struct kube_reflector *r);
/* Cancels the request or pending retry; the key set and version are kept. */
void kube_reflector_stop(struct kube_reflector *r);
/*
 * Moves the version a stopped, synced reflector resumes from. For tests that need a
 * version the server has forgotten ("1" is one on any live cluster).
 */
int kube_reflector_set_resource_version(struct kube_reflector *r, const char *rv,
                                        struct util_err *err);
/* Stops and frees it once its timer is closed. Safe from its own callbacks. */
void kube_reflector_close(struct kube_reflector *r);
/* True once a complete list has been delivered. */
bool kube_reflector_synced(const struct kube_reflector *r);
/* The resourceVersion the next watch would start from ("" before the first list). */
const char *kube_reflector_resource_version(const struct kube_reflector *r);
/* Objects known. */
size_t kube_reflector_size(const struct kube_reflector *r);
/* Counters, for tests and metrics: complete lists, watches started. */
unsigned kube_reflector_lists(const struct kube_reflector *r);
unsigned kube_reflector_watches(const struct kube_reflector *r);
/*
 * The owner already holds version rv of ns/name (NULL or "" ns: cluster-scoped), most
 * often from the answer to its own write: a watch event that brings this same version is
 * then not decoded nor delivered (the event callbacks do not hear of it), and a relist
 * that finds it reports no change. An event with another version is delivered as usual,
 * so noting an older version than the reflector saw costs one delivery, never a miss.
 * The version held before a note is kept too (one level): of two writes answered before
 * either's event came (a Backup's final status, then its retention), neither event is
 * delivered, and the first does not put the older object back over the second's.
 * The watch events of one write are then one fewer decode each: the largest cost of a
 * controller's slot, where most events are its own writes coming back.
 */
void kube_reflector_note(struct kube_reflector *r, const char *ns, const char *name,
                         const char *rv);
/* Watch events left undecoded because their version was the one held (for tests and
 * metrics). */
uint64_t kube_reflector_skipped(const struct kube_reflector *r);
/* Watch events received, skipped ones included (for metrics). */
uint64_t kube_reflector_events(const struct kube_reflector *r);
/* The resource it lists and watches: the plural ("backups"), without group or version. */
const char *kube_reflector_resource(const struct kube_reflector *r);

/* ---- Events ---- */

/* The object an Event is about. kind and api_version are required; uid optional. */
struct kube_object_ref {
    const char *api_version; /* "lodestore.io/v1alpha1", "v1" */
    const char *kind;
    const char *namespace; /* NULL for cluster-scoped objects: the Event goes to "default" */
    const char *name;
    const char *uid;
};

/*
 * Creates a core/v1 Event (type "Normal" or "Warning", a CamelCase reason, a message
 * up to 1024 bytes, cut beyond) at time now (seconds since the epoch), reported by
 * component. The name is generated by the server from the object's name.
 */
int kube_event_create(struct kube_client *c, const struct kube_object_ref *obj, const char *type,
                      const char *reason, const char *message, const char *component, int64_t now,
                      kube_result_cb cb, void *arg, struct kube_request **out,
                      struct util_err *err);
/* The Event object that kube_event_create posts (pure; the caller json_decref()s it). */
json_t *kube_event_build(const struct kube_object_ref *obj, const char *type, const char *reason,
                         const char *message, const char *component, int64_t now);

#endif
