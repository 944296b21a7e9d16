#include "kubeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Items per LIST page: the API server's own default cap for a chunk is 500 too. */
#define CLI_KUBE_PAGE 500

/* One request in flight and where its answer goes. */
struct cli_kube_wait {
    bool done;
    int error;         /* a transport failure (KUBE_E*), 0 when the server answered */
    char message[400]; /* the transport failure's message */
    struct cli_kube_reply *out;
};

int cli_kube_open(struct cli_kube *k, const char *kubeconfig, const char *context,
                  struct util_err *err)
{
    struct kube_config_opts copts = {context, false};
    struct kube_client_opts opts;
    int rc;

    memset(k, 0, sizeof(*k));
    if ((rc = kube_config_load_default(&k->cfg, kubeconfig, &copts, err)) != 0)
        return rc;
    if (uv_loop_init(&k->loop) != 0)
        return util_err_set(err, UTIL_EIO, "cannot create an event loop");
    k->loop_ready = true;
    memset(&opts, 0, sizeof(opts));
    opts.field_manager = CLI_KUBE_FIELD_MANAGER;
    opts.user_agent = "lode";
    opts.step_loop = true; /* cli_kube_run runs the loop one step at a time */
    return kube_client_init(&k->loop, &k->client, &k->cfg, &opts, err);
}

static void cli_kube_closed_cb(void *arg)
{
    struct cli_kube *k = arg;
    k->client = NULL;
}

void cli_kube_close(struct cli_kube *k)
{
    if (k->client != NULL) {
        kube_client_close(k->client, cli_kube_closed_cb, k);
        /* The client's handles close on the loop; nothing else runs on it by now. */
        while (k->client != NULL && uv_run(&k->loop, UV_RUN_ONCE) != 0)
            ;
    }
    if (k->loop_ready) {
        uv_run(&k->loop, UV_RUN_DEFAULT);
        uv_loop_close(&k->loop);
        k->loop_ready = false;
    }
    kube_config_free(&k->cfg);
}

const char *cli_kube_namespace(const struct cli_kube *k)
{
    return k->cfg.namespace != NULL && k->cfg.namespace[0] != '\0' ? k->cfg.namespace : "default";
}

const char *cli_kube_server(const struct cli_kube *k)
{
    return k->cfg.server != NULL ? k->cfg.server : "(none)";
}

void cli_kube_reply_free(struct cli_kube_reply *r)
{
    json_decref(r->body);
    free(r->reason);
    free(r->message);
    memset(r, 0, sizeof(*r));
}

static void cli_kube_result_cb(const struct kube_result *res, void *arg)
{
    struct cli_kube_wait *w = arg;
    w->done = true;
    if (res->error != 0) {
        w->error = res->error;
        snprintf(w->message, sizeof(w->message), "%s",
                 res->message != NULL && res->message[0] ? res->message : "no answer");
        return;
    }
    w->out->status = res->status;
    w->out->body = res->body != NULL ? json_incref(res->body) : NULL;
    w->out->reason = util_strdup(res->reason != NULL ? res->reason : "");
    w->out->message = util_strdup(res->message != NULL ? res->message : "");
}

/*
 * Runs the loop until the request started with w answers. Every request of the
 * client has a timeout, so this ends; a loop with nothing left to do and no answer
 * would be a bug in the client, reported rather than spun on.
 */
static int cli_kube_run(struct cli_kube *k, struct cli_kube_wait *w, struct util_err *err)
{
    while (!w->done) {
        if (uv_run(&k->loop, UV_RUN_ONCE) == 0 && !w->done)
            return util_err_set(err, UTIL_EIO, "the request to %s ended without an answer",
                                cli_kube_server(k));
    }
    if (w->error == KUBE_ETIMEDOUT)
        return util_err_set(err, w->error, "the Kubernetes API server did not answer in time: %s",
                            w->message);
    if (w->error != 0)
        return util_err_set(err, w->error, "cannot talk to the Kubernetes API server: %s",
                            w->message);
    return 0;
}

int cli_kube_get(struct cli_kube *k, const struct kube_resource *res, const char *name,
                 struct cli_kube_reply *out, struct util_err *err)
{
    struct cli_kube_wait w = {.out = out};
    int rc;
    memset(out, 0, sizeof(*out));
    if ((rc = kube_get(k->client, res, name, NULL, cli_kube_result_cb, &w, NULL, err)) != 0)
        return rc;
    return cli_kube_run(k, &w, err);
}

int cli_kube_apply(struct cli_kube *k, const struct kube_resource *res, const char *name,
                   const json_t *obj, bool dry_run, struct cli_kube_reply *out,
                   struct util_err *err)
{
    struct cli_kube_wait w = {.out = out};
    int rc;
    memset(out, 0, sizeof(*out));
    rc = dry_run ? kube_apply_dry_run(k->client, res, name, NULL, obj, cli_kube_result_cb, &w, NULL,
                                      err)
                 : kube_apply(k->client, res, name, NULL, obj, cli_kube_result_cb, &w, NULL, err);
    if (rc != 0)
        return rc;
    return cli_kube_run(k, &w, err);
}

int cli_kube_list(struct cli_kube *k, const struct kube_resource *res, const char *label_selector,
                  bool metadata_only, struct cli_kube_reply *out, struct util_err *err)
{
    struct kube_list_opts opts;
    char *cont = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    memset(&opts, 0, sizeof(opts));
    opts.label_selector = label_selector;
    opts.limit = CLI_KUBE_PAGE;
    opts.metadata_only = metadata_only;
    for (;;) {
        struct cli_kube_reply page;
        struct cli_kube_wait w = {.out = &page};
        memset(&page, 0, sizeof(page));
        opts.continue_token = cont;
        rc = kube_list(k->client, res, &opts, cli_kube_result_cb, &w, NULL, err);
        if (rc == 0)
            rc = cli_kube_run(k, &w, err);
        free(cont);
        cont = NULL;
        if (rc != 0) {
            cli_kube_reply_free(out);
            return rc;
        }
        if (page.status < 200 || page.status >= 300) {
            /* A failed page is the answer. */
            cli_kube_reply_free(out);
            *out = page;
            return 0;
        }
        if (!json_is_object(page.body)) {
            cli_kube_reply_free(&page);
            cli_kube_reply_free(out);
            return util_err_set(err, KUBE_EPROTO,
                                "the API server at %s answered a list that is not an object",
                                cli_kube_server(k));
        }
        /* An empty list may come without "items" (metadata-only lists omit it). */
        if (!json_is_array(json_object_get(page.body, "items")))
            json_object_set_new(page.body, "items", json_array());
        const char *next =
            json_string_value(json_object_get(json_object_get(page.body, "metadata"), "continue"));
        if (next != NULL && next[0] != '\0')
            cont = util_strdup(next);
        if (out->body == NULL) {
            *out = page;
        } else {
            json_array_extend(json_object_get(out->body, "items"),
                              json_object_get(page.body, "items"));
            cli_kube_reply_free(&page);
        }
        if (cont == NULL)
            return 0;
    }
}

int cli_kube_reply_error(const struct cli_kube_reply *r, int code, struct util_err *err)
{
    if (r->message[0] != '\0')
        return util_err_set(err, code, "HTTP %ld%s%s%s: %s", r->status, r->reason[0] ? " (" : "",
                            r->reason, r->reason[0] ? ")" : "", r->message);
    return util_err_set(err, code, "HTTP %ld%s%s%s", r->status, r->reason[0] ? " (" : "", r->reason,
                        r->reason[0] ? ")" : "");
}
