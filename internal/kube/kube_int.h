/*
 * What the files of internal/kube share and nobody else needs. Not part of the API.
 */
#ifndef LODE_KUBE_INT_H
#define LODE_KUBE_INT_H

#include "kube/kube.h"

#include "http/http.h"
#include "util/list.h"
#include "util/map.h"

#include <curl/curl.h>

/* Reads a bearer token file and trims the whitespace around the token. */
int kube__read_token(const char *path, char **token, struct util_err *err);
/* The client's loop. */
uv_loop_t *kube__loop(const struct kube_client *c);
/* A 32-bit pseudo-random number from the client's generator (jitter, not secrets). */
uint32_t kube__rand(struct kube_client *c);

/* ---- the client and its requests (client.c: life cycle; request.c: queues and transfers;
 * verbs.c: what each verb asks for) ---- */

/* A list of requests (through kube_request.link): the rate-limited queue, the free queue,
 * the active set. n is kept for kube_client_queued and kube_client_active. */
struct req_list {
    struct util_list head;
    size_t n;
};

struct kube_request {
    struct http_xfer xfer;
    struct kube_client *c;
    struct util_list link; /* on *list */
    struct req_list *list; /* the list it is on, or NULL */
    CURL *easy;
    struct curl_slist *headers;
    char *url;
    char *body;
    size_t body_len;
    const char *verb;   /* static: "GET", "LIST", ... */
    const char *method; /* static: the HTTP method */
    char resource[64];  /* "backups" or "backups/status", for the observer (cut if longer) */
    const char *accept;
    const char *content_type;
    bool watch, limited, active, cancelled;
    bool in_flight;           /* counted in the client's limited_active until freed */
    const char *const *strip; /* a watch: members left out of each event (kube_json_strip) */
    const char *const *keep;  /* a watch: the only members of an object's event kept */
    bool (*skip_cb)(const struct kube_watch_peek *peek, void *arg); /* a watch: kube_list_opts */
    struct util_buf stripped; /* the event without them, reused from line to line */
    kube_result_cb cb;
    kube_watch_cb event_cb;
    void *arg;
    uint64_t timeout_ms;
    uint64_t start_ms;
    long status;
    struct util_buf resp;
    struct kube_lines lines;
    int werror; /* an error raised inside the write callback */
    struct util_err werr;
    char errbuf[CURL_ERROR_SIZE];
};

#define KUBE_EASY_IDLE_MAX  16
#define KUBE_BUF_IDLE_MAX   16
#define KUBE_BUF_IDLE_BYTES (256 * 1024)

struct kube_client {
    uv_loop_t *loop;
    struct http_multi *http;
    bool own_http; /* created here (closed with the client), or borrowed */
    uv_timer_t rate_timer, token_timer;
    struct kube_config cfg;
    struct kube_client_opts opts; /* strings below are owned copies */
    char *field_manager;
    char *user_agent;
    char *base_url;                /* where requests go: the server, or tls-server-name */
    struct curl_slist *connect_to; /* tls-server-name: "NAME:PORT:HOST:PORT", or NULL */
    struct kube_bucket bucket;
    struct req_list limited_q, free_q, active;
    unsigned limited_active; /* ordinary requests dispatched and not yet freed */
    unsigned handles;        /* libuv handles not yet closed */
    size_t live;             /* requests allocated and not yet freed */
    /* curl handles of finished requests, reset for the next ones: a request then costs no
     * handle of its own (they hold the transport's share: freed before it closes). */
    CURL *easy_idle[KUBE_EASY_IDLE_MAX];
    size_t n_easy_idle;
    /* Answer and strip buffers of finished requests, kept for the next ones: an answer
     * then grows no buffer (a realloc per doubling, each large one consolidating
     * malloc's free lists). At most KUBE_BUF_IDLE_MAX of at most KUBE_BUF_IDLE_BYTES. */
    struct util_buf buf_idle[KUBE_BUF_IDLE_MAX];
    size_t n_buf_idle;
    bool closing;
    kube_close_cb close_cb;
    void *close_arg;
    uint64_t rng;
};

/* What a verb function asks for. path is an owned buffer; body an owned string. */
struct req_spec {
    const char *verb, *method, *accept, *content_type;
    const struct kube_resource *res; /* what the observer is told, with subresource */
    const char *subresource;
    struct util_buf *path;
    char *body;
    size_t body_len;
    bool watch;
    const char *const *strip;
    const char *const *keep;
    bool (*skip_cb)(const struct kube_watch_peek *peek, void *arg);
    uint64_t timeout_ms;
};

/* The oldest request on l, or NULL. */
static inline struct kube_request *kube__req_first(const struct req_list *l)
{
    struct util_list *link = util_list_first(&l->head);
    return link == NULL ? NULL : util_list_entry(link, struct kube_request, link);
}

/* Queues a request (request.c); s->body is taken over, even on failure. */
int kube__submit(struct kube_client *c, struct req_spec *s, kube_result_cb cb,
                 kube_watch_cb event_cb, void *arg, struct kube_request **out,
                 struct util_err *err);
/* Frees a request that curl no longer holds (queued, or its transfer is done) (request.c). */
void kube__request_free(struct kube_request *r);
/* The client is gone once its timers closed and curl let go of its last transfer (client.c). */
void kube__client_maybe_finish(struct kube_client *c);
/*
 * CURLOPT_SSL_CTX_FUNCTION of every request (request.c): a connection keeps its TLS read
 * and write buffers. curl sets SSL_MODE_RELEASE_BUFFERS, which frees them whenever a read
 * empties them and allocates them again (17 KiB) for the next record: on a watch stream
 * that is every event, and a large malloc after small frees makes the allocator
 * consolidate its fast bins (about 4 % of the controller's CPU through a slot). The cost
 * is up to 34 KiB a connection, of about a dozen.
 */
CURLcode kube__on_ssl_ctx(CURL *easy, void *ssl_ctx, void *arg);
/* Reads the token file again (client.c); also started at once after a 401. */
void kube__on_token_timer(uv_timer_t *t);

/* ---- the reflector's key set (refl_keys.c) ---- */

/*
 * "namespace/name" -> the object's version and the generation of the list that last saw
 * it, for every object a reflector holds. The reflector stamps keys with the current
 * list's generation; those left with an older one when a complete list ends were deleted
 * while no watch ran. A key costs its string, the version and 8 bytes, in util/map.h.
 */
struct refl_keys {
    struct util_map map; /* "ns/name" -> struct refl_entry (refl_keys.c) */
    uint32_t gen;        /* the generation of the list in progress, or of the last one */
};

enum refl_change { REFL_ADDED, REFL_UPDATED, REFL_SAME };

void refl_keys_init(struct refl_keys *k);
void refl_keys_close(struct refl_keys *k);
/* Records an object's version, stamped with the current generation; says whether the
 * object is new, changed or the same. */
enum refl_change refl_keys_upsert(struct refl_keys *k, const char *ns, const char *name,
                                  const char *rv);
/* Forgets a key; false if it was not known. */
bool refl_keys_forget(struct refl_keys *k, const char *ns, const char *name);
/* The owner's own write answered with version rv: see kube_reflector_note. */
void refl_keys_note(struct refl_keys *k, const char *ns, const char *name, const char *rv);
/*
 * Whether the key "ns/name" (lengths given: the strings are a watch line's, not
 * terminated) holds version rv, or had it noted as the older of two writes of the owner's
 * (that one is then dropped: its event came). A held key is stamped with the current
 * generation. Keys of 512 bytes or more are never held.
 */
bool refl_keys_held(struct refl_keys *k, const char *ns, size_t ns_len, const char *name,
                    size_t name_len, const char *rv, size_t rv_len);
/* The keys not stamped with the current generation, each "ns/name" allocated; the array
 * too (the caller frees both). */
char **refl_keys_stale(const struct refl_keys *k, size_t *n);

#endif
