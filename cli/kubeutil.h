/*
 * kubeutil: the Kubernetes API for the one-shot commands (lode apply, lode status).
 *
 * internal/kube is asynchronous: a request is started on a libuv loop and answers
 * through a callback. A command line tool asks one question at a time, so each
 * call here starts one request on a private loop and runs that loop until the
 * answer is in, then returns it. The loop, the configuration and the client live
 * in struct cli_kube from cli_kube_open() to cli_kube_close(); one keep-alive
 * connection serves every request in between.
 *
 * The configuration is found as kubectl and controller-runtime find it:
 * --kubeconfig, else $KUBECONFIG (one file), else the in-cluster service account,
 * else ~/.kube/config; --context picks a context. TLS is always verified.
 *
 * Costs: one TCP+TLS handshake for the first request; a reply holds the parsed
 * JSON of the response (a LIST holds every page's items, as the caller asks for
 * the whole list); nothing else is kept.
 */
#ifndef LODE_CLI_KUBEUTIL_H
#define LODE_CLI_KUBEUTIL_H

#include <stdbool.h>

#include <jansson.h>
#include <uv.h>

#include "kube/kube.h"
#include "util/util.h"

/*
 * The cluster flags every cluster command takes, parsed in one place: commands list
 * KUBE_OPTIONS among their getopt_long options (with "n:" in the short ones; the
 * codes 0x111..0x112 are reserved for the long-only ones) and pass each option to
 * cli_kube_opt (cli/options.c) before calling it unknown.
 */
struct cli_kube_opts {
    const char *namespace;  /* -n, --namespace; never ""; NULL: the context's */
    const char *kubeconfig; /* --kubeconfig; NULL: the usual search */
    const char *context;    /* --context; NULL: the current one */
};
#define KUBE_OPT_KUBECONFIG 0x111
#define KUBE_OPT_CONTEXT    0x112
#define KUBE_OPTIONS                                                                               \
    {"namespace", required_argument, NULL, 'n'},                                                   \
        {"kubeconfig", required_argument, NULL, KUBE_OPT_KUBECONFIG},                              \
    {                                                                                              \
        "context", required_argument, NULL, KUBE_OPT_CONTEXT                                       \
    }
/*
 * 1 when c is one of the cluster flags (o filled), 0 when it is not, -1 when its
 * value is invalid (an empty --namespace; printed as "lode CMD: ...", a usage error).
 */
int cli_kube_opt(struct cli_kube_opts *o, const char *cmd, int c, const char *arg);

/* The field manager of server-side apply: the fields lode apply sets are owned by it. */
#define CLI_KUBE_FIELD_MANAGER "lodestore-cli"

struct cli_kube {
    uv_loop_t loop;
    struct kube_config cfg;
    struct kube_client *client;
    bool loop_ready; /* loop initialised (for cli_kube_close after a failed open) */
};

/*
 * Loads the configuration (kubeconfig NULL: the usual search; context NULL: the
 * current context) and creates the client. Reads local files only; the network is
 * first touched by a request. On failure err says what to fix and k needs only
 * cli_kube_close.
 */
int cli_kube_open(struct cli_kube *k, const char *kubeconfig, const char *context,
                  struct util_err *err);

/* Closes the client, runs the loop until its handles are closed, frees everything. */
void cli_kube_close(struct cli_kube *k);

/* The context's namespace ("default" when it names none). */
const char *cli_kube_namespace(const struct cli_kube *k);

/* The server's URL, for messages. */
const char *cli_kube_server(const struct cli_kube *k);

/* One answer of the API server. Strings are owned and never NULL. */
struct cli_kube_reply {
    long status;   /* the HTTP status */
    json_t *body;  /* owned: the object, the List, or the Status of a failure; may be NULL */
    char *reason;  /* the Status reason ("NotFound", "Invalid", "Forbidden"), or "" */
    char *message; /* the Status message, or "" */
};

void cli_kube_reply_free(struct cli_kube_reply *r);

/*
 * The request functions return 0 when the server answered, whatever the status
 * (the caller decides what a 404 or a 422 means), and fill out; they return a
 * negative code with err set when no answer came (the server is unreachable, TLS
 * failed, the request timed out, the answer was not the API's JSON), and then out
 * is empty.
 */
int cli_kube_get(struct cli_kube *k, const struct kube_resource *res, const char *name,
                 struct cli_kube_reply *out, struct util_err *err);

/*
 * Server-side apply of obj (field manager CLI_KUBE_FIELD_MANAGER, force); with
 * dry_run the server answers as if it applied and stores nothing (dryRun=All).
 */
int cli_kube_apply(struct cli_kube *k, const struct kube_resource *res, const char *name,
                   const json_t *obj, bool dry_run, struct cli_kube_reply *out,
                   struct util_err *err);

/*
 * A whole LIST, page by page (500 items a page): on a 2xx answer out->body is the
 * first page's List with the items of every page in "items". A page that fails
 * ends the list with that page's reply. metadata_only asks for
 * PartialObjectMetadata (name, labels, creation time), much smaller for nodes.
 */
int cli_kube_list(struct cli_kube *k, const struct kube_resource *res, const char *label_selector,
                  bool metadata_only, struct cli_kube_reply *out, struct util_err *err);

/*
 * Describes a reply that is not a success for a person: "HTTP 403 (Forbidden): the
 * server's message". Written into err with the given code.
 */
int cli_kube_reply_error(const struct cli_kube_reply *r, int code, struct util_err *err);

#endif
