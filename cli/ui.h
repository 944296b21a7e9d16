/*
 * ui: `lode ui`, the web interface served by the lode binary itself
 * (docs/ui.md).
 *
 * Five parts, one file each: ui_http.c speaks HTTP and guards the door (the
 * token, the Host header, cross-origin writes, the response headers); ui_api.c
 * answers the JSON endpoints with the very functions behind `lode validate`,
 * `lode schedule` and `lode status` (cli.h, status.h), so the page and the
 * command line cannot disagree; ui_retention.c answers the retention view with
 * those behind `lode forget`; ui_apply.c is `lode apply` with a server-side dry
 * run first and the difference it would make (for a policy, and for a Restore the
 * snapshot browser writes); ui_browse.c lists snapshots and looks inside one with
 * the functions behind `lode ls` and `lode diff` (agent/browse.h). The page itself
 * (web/, built by Vite) is compiled into the binary as byte arrays
 * (ui_assets.h), so one file is all a user needs; a lode built on a machine
 * without npm serves a short page that says so, and every endpoint still works.
 *
 * HTTP is parsed by GNU libmicrohttpd (Debian's libmicrohttpd12, 0.9.75), not by
 * hand. The alternative was libh2o (Debian's 2.2.5, built on libuv like the
 * controller). Measured on this machine: libmicrohttpd is a 225 KiB library
 * that depends only on libc and GnuTLS (already loaded by libcurl); h2o is 456 KiB
 * plus libwslay and zlib, and Debian ships its 2018 release, whose upstream never
 * cut 2.3 and whose library API is undocumented and changes between snapshots.
 * libmicrohttpd is maintained, documented, fuzzed upstream, and its request
 * handler is one callback, which suits a server that answers a few requests a
 * second from one person. A request costs well under a millisecond on loopback
 * (docs/benchmarks.md).
 *
 * Threads: libmicrohttpd runs one internal thread that calls the handler, one
 * request at a time; the handler owns the Kubernetes client (cli_kube, which runs
 * its own libuv loop per request) and the tz database, so nothing is shared
 * between threads except the read-only configuration. The main thread only waits
 * for SIGINT or SIGTERM.
 *
 * Security (docs/ui.md): listens on 127.0.0.1 by default; every API request must
 * carry the random token printed at start in an `Authorization: Bearer` header (the
 * page keeps it in its tab's sessionStorage; never a cookie, which a browser would send
 * to every port of the host); the page itself holds no data and is served without
 * it; a Host header that is not the listen
 * address is refused (DNS rebinding); a POST must be JSON and, when a browser
 * sends an Origin or Sec-Fetch-Site, same-origin; every response carries a strict
 * Content-Security-Policy and the page makes no third-party request.
 */
#ifndef LODE_CLI_UI_H
#define LODE_CLI_UI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kubeutil.h"
#include "agent/storage.h"
#include "tz/tz.h"
#include "util/util.h"

/* Bytes of random token (printed as hex). */
#define UI_TOKEN_BYTES 24
/* The largest request body: a policy is at most 1 MiB, a snapshot list more. */
#define UI_MAX_BODY (8u * 1024 * 1024)

/* What the endpoints need; owned by cmd_ui.c, used by the server's one thread. */
struct ui_ctx {
    const struct tz_db *db;
    struct cli_kube_opts kube_opts; /* --namespace, --kubeconfig, --context */
    bool kube_open;                 /* the client below is usable */
    struct cli_kube kube;
    char kube_error[512]; /* why the cluster cannot be reached, when not kube_open */
    int64_t (*now)(void); /* the clock; a test may replace it */
    /* The repository whose catalog the retention view may read, and the snapshot
     * browser looks inside with its key (--repo, --cacert, --key-file, else the
     * environment, as every storage command); repo_url NULL: none configured. */
    struct storage_opts repo;
    const char *repo_url;
};

/* One answer of an endpoint: an HTTP status and a JSON body (owned). */
struct ui_reply {
    unsigned status;
    json_t *body;
};

/*
 * Answers one API request: method "GET" or "POST", path "/api/...", body the
 * parsed JSON of a POST (NULL for GET). Always fills out; an unknown path is 404,
 * a malformed request 400 with {"error": message}.
 */
void ui_api_handle(struct ui_ctx *ctx, const char *method, const char *path, const json_t *body,
                   struct ui_reply *out);

/* POST /api/apply: {"yaml": text, "dryRun": bool}. */
void ui_apply_handle(struct ui_ctx *ctx, const json_t *body, struct ui_reply *out);
/* POST /api/restore: {"object": a Restore as JSON, "dryRun": bool}, applied as a policy is
 * (ui_apply.c). */
void ui_apply_restore_handle(struct ui_ctx *ctx, const json_t *body, struct ui_reply *out);
/* POST /api/browse/WHAT: "snapshots" {}, "ls" {"snapshot","path"?}, "diff" {"snapshot",
 * "against"?} (ui_browse.c): the repository's snapshots and what is inside one. */
void ui_browse_handle(struct ui_ctx *ctx, const char *what, const json_t *body,
                      struct ui_reply *out);
/* POST /api/retention: {"yaml": text} and "snapshots": [...], "simulate": {"days": N,
 * "host": H} or "catalog": {"host": H} (ui_retention.c). */
void ui_retention_handle(struct ui_ctx *ctx, const json_t *body, struct ui_reply *out);

/* {"error": message} with a status; returns out for chaining. */
struct ui_reply *ui_reply_error(struct ui_reply *out, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Opens the Kubernetes client on first use; false (with ctx->kube_error) when it cannot. */
bool ui_kube(struct ui_ctx *ctx);
/* The namespace the UI works in: --namespace, else the context's, else "default". */
const char *ui_namespace(struct ui_ctx *ctx);

/* What the endpoints share (ui_api.c). */
struct policy;
/*
 * Validates body.yaml. Returns true with pol filled; otherwise fills out (422 with
 * the validate document, or 400 for a request without yaml) and returns false.
 */
bool ui_policy(struct ui_ctx *ctx, const json_t *body, struct policy *pol, struct ui_reply *out);
/* An optional RFC 3339 member (dflt when absent); false with out filled (400) when malformed. */
bool ui_time_arg(const json_t *body, const char *key, int64_t dflt, int64_t *t,
                 struct ui_reply *out);

/* An optional whole number member in [lo, hi], dflt when absent; false (and out filled
 * with 400) when it is not one. */
bool ui_int_arg(const json_t *body, const char *key, int64_t lo, int64_t hi, int64_t dflt,
                int64_t *v, struct ui_reply *out);
/* "2026-03-29T04:07:12+03:00" for an instant in a zone. */
json_t *ui_json_local(const struct tz_zone *zone, int64_t t);

/* ---- the HTTP server ---- */

struct ui_server; /* opaque */

struct ui_server_opts {
    const char *host; /* the address to bind: "127.0.0.1", "::1", or another literal */
    unsigned port;    /* 0: any free port */
    const char *token;
};

/* Binds and starts the server thread. err says why when it cannot (port taken). */
int ui_server_start(struct ui_server **out, struct ui_ctx *ctx, const struct ui_server_opts *o,
                    struct util_err *err);
/* The port bound (the one picked when 0 was asked for). */
unsigned ui_server_port(const struct ui_server *s);
/* Stops the thread, closes the socket, frees the server. */
void ui_server_stop(struct ui_server *s);

/* ---- the embedded page ---- */

struct ui_asset {
    const char *path; /* "/index.html", "/assets/index-1a2b.js" */
    const char *type; /* the Content-Type */
    const unsigned char *data;
    size_t len;
    const unsigned char *gz; /* the gzip form, or NULL when it does not pay */
    size_t gz_len;
};

/* Generated at build time from web/ (see the Makefile); ui_asset_count 0 without npm. */
extern const struct ui_asset ui_assets[];
extern const size_t ui_asset_count;

#endif
