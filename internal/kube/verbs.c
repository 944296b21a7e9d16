/*
 * The verbs of the client (kube.h): the path, query, Accept and body each one asks
 * for; the requests themselves go through kube__submit (request.c).
 */
#include "kube/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLIENT_WATCH_DEFAULT_S 300
#define CLIENT_WATCH_GRACE_MS  30000
#define CLIENT_ACCEPT_JSON     "application/json"
#define CLIENT_ACCEPT_META_LIST                                                                    \
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
#define CLIENT_ACCEPT_META                                                                         \
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

/* The JSON text of a body, or NULL with err set. */
static char *client_dump(const json_t *obj, size_t *len, struct util_err *err)
{
    char *s;
    if (obj == NULL) {
        util_err_set(err, UTIL_EINVAL, "a request body is missing");
        return NULL;
    }
    s = json_dumps(obj, JSON_COMPACT);
    if (s == NULL) {
        util_err_set(err, UTIL_EINVAL, "a request body cannot be encoded as JSON");
        return NULL;
    }
    *len = strlen(s);
    return s;
}

/* Builds the path into buf; on error buf is freed. */
static int client_path(struct util_buf *buf, const struct kube_resource *res, const char *name,
                       const char *subresource, struct util_err *err)
{
    int rc;
    util_buf_init(buf);
    if ((rc = kube_path(buf, res, name, subresource, err)) != 0)
        util_buf_free(buf);
    return rc;
}

/* What client_send adds to the query. */
enum client_query {
    CLIENT_QUERY_APPLY = 1 << 0,   /* fieldManager and force=true */
    CLIENT_QUERY_DRY_RUN = 1 << 1, /* dryRun=All: answered as if stored, nothing stored */
};

static int client_send(struct kube_client *c, const char *verb, const char *method,
                       const struct kube_resource *res, const char *name, const char *subresource,
                       const json_t *body_obj, const char *content_type, unsigned query,
                       kube_result_cb cb, void *arg, struct kube_request **out,
                       struct util_err *err)
{
    struct util_buf path;
    struct req_spec s = {.verb = verb,
                         .method = method,
                         .accept = CLIENT_ACCEPT_JSON,
                         .content_type = content_type,
                         .res = res,
                         .subresource = subresource,
                         .path = &path};
    int rc;

    if ((rc = client_path(&path, res, name, subresource, err)) != 0)
        return rc;
    if (query & CLIENT_QUERY_APPLY) {
        kube_query_add(&path, "fieldManager", c->field_manager);
        kube_query_add(&path, "force", "true");
    }
    if (query & CLIENT_QUERY_DRY_RUN)
        kube_query_add(&path, "dryRun", "All");
    if (content_type != NULL && (s.body = client_dump(body_obj, &s.body_len, err)) == NULL) {
        util_buf_free(&path);
        return err != NULL ? err->code : UTIL_EINVAL;
    }
    rc = kube__submit(c, &s, cb, NULL, arg, out, err);
    util_buf_free(&path);
    return rc;
}

int kube_get(struct kube_client *c, const struct kube_resource *res, const char *name,
             const char *subresource, kube_result_cb cb, void *arg, struct kube_request **out,
             struct util_err *err)
{
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "GET needs an object name");
    return client_send(c, "GET", "GET", res, name, subresource, NULL, NULL, 0, cb, arg, out, err);
}

int kube_create(struct kube_client *c, const struct kube_resource *res, const json_t *obj,
                kube_result_cb cb, void *arg, struct kube_request **out, struct util_err *err)
{
    return client_send(c, "CREATE", "POST", res, NULL, NULL, obj, "application/json", 0, cb, arg,
                       out, err);
}

int kube_update(struct kube_client *c, const struct kube_resource *res, const char *name,
                const char *subresource, const json_t *obj, kube_result_cb cb, void *arg,
                struct kube_request **out, struct util_err *err)
{
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "an update needs an object name");
    return client_send(c, "UPDATE", "PUT", res, name, subresource, obj, "application/json", 0, cb,
                       arg, out, err);
}

int kube_merge_patch(struct kube_client *c, const struct kube_resource *res, const char *name,
                     const char *subresource, const json_t *patch, kube_result_cb cb, void *arg,
                     struct kube_request **out, struct util_err *err)
{
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "a patch needs an object name");
    return client_send(c, "PATCH", "PATCH", res, name, subresource, patch,
                       "application/merge-patch+json", 0, cb, arg, out, err);
}

int kube_apply(struct kube_client *c, const struct kube_resource *res, const char *name,
               const char *subresource, const json_t *obj, kube_result_cb cb, void *arg,
               struct kube_request **out, struct util_err *err)
{
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "an apply needs an object name");
    return client_send(c, "APPLY", "PATCH", res, name, subresource, obj,
                       "application/apply-patch+yaml", CLIENT_QUERY_APPLY, cb, arg, out, err);
}

int kube_apply_dry_run(struct kube_client *c, const struct kube_resource *res, const char *name,
                       const char *subresource, const json_t *obj, kube_result_cb cb, void *arg,
                       struct kube_request **out, struct util_err *err)
{
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "an apply needs an object name");
    return client_send(c, "APPLY", "PATCH", res, name, subresource, obj,
                       "application/apply-patch+yaml", CLIENT_QUERY_APPLY | CLIENT_QUERY_DRY_RUN,
                       cb, arg, out, err);
}

int kube_delete(struct kube_client *c, const struct kube_resource *res, const char *name,
                const char *propagation, kube_result_cb cb, void *arg, struct kube_request **out,
                struct util_err *err)
{
    struct util_buf path;
    struct req_spec s = {.verb = "DELETE",
                         .method = "DELETE",
                         .accept = CLIENT_ACCEPT_JSON,
                         .res = res,
                         .path = &path};
    int rc;
    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "a delete needs an object name");
    if ((rc = client_path(&path, res, name, NULL, err)) != 0)
        return rc;
    if (propagation != NULL)
        kube_query_add(&path, "propagationPolicy", propagation);
    rc = kube__submit(c, &s, cb, NULL, arg, out, err);
    util_buf_free(&path);
    return rc;
}

/* The query of a LIST or WATCH. */
static void client_list_query(struct util_buf *path, const struct kube_list_opts *o)
{
    if (o == NULL)
        return;
    if (o->label_selector != NULL && o->label_selector[0] != '\0')
        kube_query_add(path, "labelSelector", o->label_selector);
    if (o->field_selector != NULL && o->field_selector[0] != '\0')
        kube_query_add(path, "fieldSelector", o->field_selector);
    if (o->resource_version != NULL && o->resource_version[0] != '\0')
        kube_query_add(path, "resourceVersion", o->resource_version);
}

int kube_list(struct kube_client *c, const struct kube_resource *res,
              const struct kube_list_opts *opts, kube_result_cb cb, void *arg,
              struct kube_request **out, struct util_err *err)
{
    struct util_buf path;
    struct req_spec s = {.verb = "LIST", .method = "GET", .res = res, .path = &path};
    char num[24];
    int rc;
    if ((rc = client_path(&path, res, NULL, NULL, err)) != 0)
        return rc;
    s.accept = opts != NULL && opts->metadata_only ? CLIENT_ACCEPT_META_LIST : CLIENT_ACCEPT_JSON;
    client_list_query(&path, opts);
    if (opts != NULL && opts->limit > 0) {
        snprintf(num, sizeof(num), "%u", opts->limit);
        kube_query_add(&path, "limit", num);
    }
    if (opts != NULL && opts->continue_token != NULL && opts->continue_token[0] != '\0')
        kube_query_add(&path, "continue", opts->continue_token);
    rc = kube__submit(c, &s, cb, NULL, arg, out, err);
    util_buf_free(&path);
    return rc;
}

int kube_watch(struct kube_client *c, const struct kube_resource *res,
               const struct kube_list_opts *opts, kube_watch_cb event_cb, kube_result_cb done_cb,
               void *arg, struct kube_request **out, struct util_err *err)
{
    struct util_buf path;
    struct req_spec s = {
        .verb = "WATCH", .method = "GET", .res = res, .path = &path, .watch = true};
    unsigned secs =
        opts != NULL && opts->timeout_seconds ? opts->timeout_seconds : CLIENT_WATCH_DEFAULT_S;
    char num[24];
    int rc;
    if ((rc = client_path(&path, res, NULL, NULL, err)) != 0)
        return rc;
    s.accept = opts != NULL && opts->metadata_only ? CLIENT_ACCEPT_META : CLIENT_ACCEPT_JSON;
    s.strip = opts != NULL ? opts->strip : NULL;
    s.keep = opts != NULL ? opts->keep : NULL;
    s.skip_cb = opts != NULL ? opts->skip_cb : NULL;
    kube_query_add(&path, "watch", "1");
    client_list_query(&path, opts);
    kube_query_add(&path, "allowWatchBookmarks", "true");
    snprintf(num, sizeof(num), "%u", secs);
    kube_query_add(&path, "timeoutSeconds", num);
    /* The server ends the watch; the client's own limit only catches a dead connection. */
    s.timeout_ms = (uint64_t)secs * 1000 + CLIENT_WATCH_GRACE_MS;
    rc = kube__submit(c, &s, done_cb, event_cb, arg, out, err);
    util_buf_free(&path);
    return rc;
}
