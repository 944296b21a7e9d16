/*
 * POST /api/apply: `lode apply` for the page, with a server-side dry run first.
 *
 * The object is the one `lode apply` would send (cli_apply_object: the YAML as
 * written, validated in both forms). The API server then applies it with
 * dryRun=All: admission, the CRD's schema and CEL rules and the defaulting all
 * run, nothing is stored. The answer lists what would change, field by field,
 * between the object now in the cluster and the one the dry run returned, over
 * the parts a person writes (labels, annotations, spec). With "dryRun": false the
 * same dry run runs first, and only when it passes is the object applied for
 * real; the answer then shows what changed.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "cli.h"
#include "ui.h"

/* More changes than this is a new object in all but name: the list is cut. */
#define UI_MAX_CHANGES 500

/* Appends ".key", or "[key]" when the key is not a plain word (as the validator names paths). */
static void ui_path_key(struct util_buf *p, const char *key)
{
    bool plain = key[0] != '\0';
    for (const char *c = key; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_')
            plain = false;
    if (plain)
        util_buf_printf(p, "%s%s", p->len ? "." : "", key);
    else
        util_buf_printf(p, "[%s]", key);
}

static void ui_diff(json_t *changes, struct util_buf *path, const json_t *a, const json_t *b)
{
    size_t keep = path->len;

    if (json_array_size(changes) >= UI_MAX_CHANGES || (a == NULL && b == NULL) ||
        (a != NULL && b != NULL && json_equal(a, b)))
        return;
    /* A map or list on one side only: its leaves are listed, each one added or removed. */
    if ((a == NULL && json_is_object(b)) || (b == NULL && json_is_object(a))) {
        json_t *empty = json_object();
        ui_diff(changes, path, a != NULL ? a : empty, b != NULL ? b : empty);
        json_decref(empty);
        return;
    }
    if ((a == NULL && json_is_array(b)) || (b == NULL && json_is_array(a))) {
        json_t *empty = json_array();
        ui_diff(changes, path, a != NULL ? a : empty, b != NULL ? b : empty);
        json_decref(empty);
        return;
    }
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            ui_path_key(path, k);
            ui_diff(changes, path, v, json_object_get(b, k));
            path->len = keep;
            path->data[keep] = '\0';
        }
        json_object_foreach((json_t *)b, k, v)
        {
            if (json_object_get(a, k) != NULL)
                continue;
            ui_path_key(path, k);
            ui_diff(changes, path, NULL, v);
            path->len = keep;
            path->data[keep] = '\0';
        }
        return;
    }
    if (json_is_array(a) && json_is_array(b)) {
        size_t n =
            json_array_size(a) > json_array_size(b) ? json_array_size(a) : json_array_size(b);
        for (size_t i = 0; i < n; i++) {
            util_buf_printf(path, "[%zu]", i);
            ui_diff(changes, path, json_array_get(a, i), json_array_get(b, i));
            path->len = keep;
            path->data[keep] = '\0';
        }
        return;
    }
    json_array_append_new(changes,
                          json_pack("{s:s, s:O?, s:O?}", "path", path->data, "old", a, "new", b));
}

/* The changes between the object in the cluster (NULL: none) and the proposed one. */
static json_t *ui_changes(const json_t *current, const json_t *proposed)
{
    static const char *const parts[][2] = {
        {"metadata", "labels"}, {"metadata", "annotations"}, {"spec", NULL}};
    json_t *changes = json_array();
    struct util_buf path;

    util_buf_init(&path);
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        const json_t *a = json_object_get(current, parts[i][0]);
        const json_t *b = json_object_get(proposed, parts[i][0]);
        util_buf_puts(&path, parts[i][0]);
        if (parts[i][1] != NULL) {
            a = json_object_get(a, parts[i][1]);
            b = json_object_get(b, parts[i][1]);
            util_buf_printf(&path, ".%s", parts[i][1]);
        }
        ui_diff(changes, &path, a, b);
        path.len = 0;
        path.data[0] = '\0';
    }
    util_buf_free(&path);
    return changes;
}

/* A refusal of the API server: 422 with each refused field, else 502. noun: "policy",
 * "Restore"; crd: what to say when the API server does not know the kind (404). */
static void ui_apply_refused(const struct cli_kube_reply *r, const char *what, const char *noun,
                             const char *crd, struct ui_reply *out)
{
    struct util_err err = {0};
    if (r->status == 422) {
        json_t *causes = json_array();
        const json_t *c;
        size_t i;
        json_array_foreach(json_object_get(json_object_get(r->body, "details"), "causes"), i, c)
        {
            const char *field = json_string_value(json_object_get(c, "field"));
            const char *msg = json_string_value(json_object_get(c, "message"));
            if (msg != NULL)
                json_array_append_new(
                    causes, json_pack("{s:s, s:s}", "field", field ? field : "", "message", msg));
        }
        ui_reply_error(out, 422, "the API server refused the %s (%s): %s", noun, what,
                       r->message[0] ? r->message : "422 Unprocessable Entity");
        json_object_set_new(out->body, "causes", causes);
        return;
    }
    cli_kube_reply_error(r, UTIL_EIO, &err);
    ui_reply_error(out, 502, "%s: %s%s", what, err.msg, r->status == 404 ? crd : "");
}

static json_t *ui_apply_clean(const json_t *obj)
{
    json_t *copy = json_is_object(obj) ? json_deep_copy(obj) : json_object();
    json_object_del(json_object_get(copy, "metadata"), "managedFields");
    return copy;
}

/*
 * Applies obj (a whole object of kind, named in its metadata) with a server-side dry
 * run first; dry NULL or true: the dry run alone. The namespace is the object's, else
 * the one lode ui works in. Fills out with the changes, or the refusal.
 */
static void ui_apply_object(struct ui_ctx *ctx, json_t *obj, const struct kube_resource *kind,
                            const char *noun, const char *crd, const json_t *dry,
                            struct ui_reply *out)
{
    struct util_err err = {0};
    struct cli_kube_reply cur = {0}, trial = {0}, real = {0};
    json_t *changes;
    const json_t *current = NULL;
    char *ns = NULL;

    if (!ui_kube(ctx)) {
        ui_reply_error(out, 503, "no cluster: %s", ctx->kube_error);
        return;
    }
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *file_ns = json_string_value(json_object_get(meta, "namespace"));
    ns = util_strdup(file_ns != NULL ? file_ns : ui_namespace(ctx));
    json_object_set_new(meta, "namespace", json_string(ns));
    struct kube_resource res = api_in(kind, ns);

    if (cli_kube_get(&ctx->kube, &res, name, &cur, &err) != 0) {
        ui_reply_error(out, 502, "%s", err.msg);
        goto free_ns;
    }
    if (cur.status == 200)
        current = cur.body;
    else if (cur.status != 404) {
        ui_apply_refused(&cur, "reading it in the cluster", noun, crd, out);
        goto free_ns;
    }
    if (cli_kube_apply(&ctx->kube, &res, name, obj, true, &trial, &err) != 0) {
        ui_reply_error(out, 502, "%s", err.msg);
        goto free_ns;
    }
    if (trial.status != 200 && trial.status != 201) {
        ui_apply_refused(&trial, "server-side dry run", noun, crd, out);
        goto free_ns;
    }
    changes = ui_changes(current, trial.body);
    const char *action = current == NULL                ? "created"
                         : json_array_size(changes) > 0 ? "configured"
                                                        : "unchanged";
    if (dry == NULL || json_is_true(dry)) {
        out->status = 200;
        out->body =
            json_pack("{s:b, s:s, s:s, s:o, s:o}", "dryRun", true, "namespace", ns, "action",
                      action, "changes", changes, "object", ui_apply_clean(trial.body));
        goto free_ns;
    }
    if (cli_kube_apply(&ctx->kube, &res, name, obj, false, &real, &err) != 0) {
        json_decref(changes);
        ui_reply_error(out, 502, "%s", err.msg);
        goto free_ns;
    }
    if (real.status != 200 && real.status != 201) {
        json_decref(changes);
        ui_apply_refused(&real, "apply", noun, crd, out);
        goto free_ns;
    }
    json_decref(changes);
    changes = ui_changes(current, real.body);
    out->status = 200;
    out->body = json_pack("{s:b, s:s, s:s, s:o, s:o}", "dryRun", false, "namespace", ns, "action",
                          action, "changes", changes, "object", ui_apply_clean(real.body));

free_ns:
    free(ns);
    cli_kube_reply_free(&cur);
    cli_kube_reply_free(&trial);
    cli_kube_reply_free(&real);
}

void ui_apply_handle(struct ui_ctx *ctx, const json_t *body, struct ui_reply *out)
{
    const json_t *y = json_object_get(body, "yaml");
    const json_t *dry = json_object_get(body, "dryRun");
    struct policy_diags diags;
    struct util_err err = {0};
    json_t *obj = NULL;
    int rc;

    if (!json_is_string(y) || (dry != NULL && !json_is_boolean(dry))) {
        ui_reply_error(out, 400,
                       "the request needs \"yaml\" (text) and may have \"dryRun\" "
                       "(true or false)");
        return;
    }
    policy_diags_init(&diags);
    rc = cli_apply_object(json_string_value(y), json_string_length(y), ctx->db, &obj, &diags, &err);
    if (rc == UTIL_EINVAL) {
        out->status = 422;
        out->body = cli_validate_json_file("policy.yaml", false, &diags);
        goto free_diags;
    }
    if (rc != 0) {
        ui_reply_error(out, 500, "%s", err.msg);
        goto free_diags;
    }
    ui_apply_object(ctx, obj, &api_backuppolicies, "policy",
                    " (is the BackupPolicy CRD installed? kubectl apply --server-side -f crd/)",
                    dry, out);
    json_decref(obj);
free_diags:
    policy_diags_free(&diags);
}

void ui_apply_restore_handle(struct ui_ctx *ctx, const json_t *body, struct ui_reply *out)
{
    const json_t *obj = json_object_get(body, "object");
    const json_t *dry = json_object_get(body, "dryRun");
    const json_t *meta = json_object_get(obj, "metadata");
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    json_t *copy;

    if (!json_is_object(obj) || (dry != NULL && !json_is_boolean(dry))) {
        ui_reply_error(out, 400,
                       "the request needs \"object\" (the Restore, as JSON) and may have "
                       "\"dryRun\" (true or false)");
        return;
    }
    /* Only a Restore: this endpoint never writes another kind. Its fields are the API
     * server's to check (the CRD's schema and rules, docs/restoring.md). */
    if (api == NULL || strcmp(api, "lodestore.io/v1alpha1") != 0 || kind == NULL ||
        strcmp(kind, "Restore") != 0) {
        ui_reply_error(out, 400,
                       "the object must be apiVersion: lodestore.io/v1alpha1, kind: "
                       "Restore");
        return;
    }
    if (!json_is_string(json_object_get(meta, "name")) ||
        json_string_length(json_object_get(meta, "name")) == 0) {
        ui_reply_error(out, 400, "the Restore needs metadata.name");
        return;
    }
    copy = json_deep_copy(obj);
    ui_apply_object(ctx, copy, &api_restores, "Restore",
                    " (is the Restore CRD installed? kubectl apply --server-side -f crd/)", dry,
                    out);
    json_decref(copy);
}
