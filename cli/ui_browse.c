/*
 * The snapshot browser of `lode ui` (docs/ui.md, "Snapshots"): the repository's
 * snapshots, one directory of a snapshot, and a snapshot's difference from its
 * parent, through agent/browse.h, the functions behind `lode ls` and `lode diff`,
 * so the page shows what the commands print.
 *
 * Each request opens the repository anew (a GET of config.json and, with the key,
 * one scrypt derivation: about 0.1 s) and the snapshot (a LIST of the catalog and a
 * GET of its manifest); a directory or a diff then reads only the metadata chunks
 * it needs (browse.h says how few). Nothing is kept between requests, so a key file
 * or a repository that changes is seen at the next click. Answers are cut at
 * UI_BROWSE_MAX entries (with "truncated": true and the full counts), so a
 * directory of a million files costs the page no more than the first ones.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/browse.h"
#include "cli.h"
#include "ui.h"

/* Entries one answer lists; the counts go on past it. */
#define UI_BROWSE_MAX 5000
/* Snapshots the list gives, newest first. */
#define UI_BROWSE_SNAPSHOTS 3000

/* The catalog needs no key; everything else needs one. 409: how lode ui was started. */
static bool ui_browse_storage(struct ui_ctx *ctx, struct storage *st, bool keyed,
                              struct ui_reply *out)
{
    struct util_err err = {0};
    int rc;

    if (ctx->repo_url == NULL) {
        ui_reply_error(out, 409,
                       "no repository: start lode ui with --repo s3:https://HOST/BUCKET[/PREFIX] "
                       "or LODE_REPOSITORY, and the S3 credentials in the environment");
        return false;
    }
    if (!keyed) {
        if ((rc = storage_open(st, &ctx->repo, &err)) != 0) {
            ui_reply_error(out, 502, "%s", err.msg);
            return false;
        }
        return true;
    }
    if (ctx->repo.key_file == NULL && getenv("LODE_KEY_FILE") == NULL) {
        ui_reply_error(out, 409,
                       "no repository key: looking inside a snapshot needs it; start lode ui "
                       "with --key-file FILE or LODE_KEY_FILE");
        return false;
    }
    if ((rc = storage_open_keyed(st, &ctx->repo, &err)) != 0) {
        if (rc == AGENT_EKEY)
            ui_reply_error(out, 409, "wrong key: %s", err.msg);
        else
            ui_reply_error(out, 502, "%s", err.msg);
        return false;
    }
    return true;
}

/* Opens snapshot id: 404 for none, 400 for a malformed id, 502 for the rest. */
static bool ui_browse_open(struct storage *st, struct browse *b, const char *id,
                           struct ui_reply *out)
{
    struct util_err err = {0};
    int rc = browse_open(b, st, id, &err);

    if (rc == 0)
        return true;
    if (rc == AGENT_EABSENT)
        ui_reply_error(out, 404,
                       "no snapshot %s in the repository (the Snapshots list has its ids)", id);
    else if (rc == UTIL_EINVAL)
        ui_reply_error(out, 400, "\"%s\" is not a snapshot id: %s", id, err.msg);
    else if (rc == AGENT_EDAMAGED)
        ui_reply_error(out, 502, "snapshot %s is damaged: %s", id, err.msg);
    else
        ui_reply_error(out, 502, "%s", err.msg);
    return false;
}

static const char *ui_browse_id(const json_t *body, const char *key, struct ui_reply *out)
{
    const char *id = json_string_value(json_object_get(body, key));
    if (id == NULL || id[0] == '\0') {
        ui_reply_error(out, 400, "the request needs \"%s\": a snapshot id", key);
        return NULL;
    }
    return id;
}

/* POST /api/browse/snapshots {}: every snapshot of the repository, newest first. */
static void ui_browse_snapshots(struct ui_ctx *ctx, struct ui_reply *out)
{
    struct storage st;
    struct repo_catalog cat;
    struct util_err err = {0};
    json_t *arr;

    if (!ui_browse_storage(ctx, &st, false, out))
        return;
    repo_catalog_init(&cat);
    if (storage_catalog(&st, NULL, NULL, NULL, &cat, &err) != 0) {
        ui_reply_error(out, 502, "the repository's catalog: %s", err.msg);
        goto close_storage;
    }
    arr = json_array();
    for (size_t i = 0; i < cat.n && i < UI_BROWSE_SNAPSHOTS; i++) {
        const struct repo_snapshot *s = &cat.v[i];
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:o, s:b, s:b, s:b}", "id",
                                             s->id, "namespace", s->src.ns, "policy", s->src.policy,
                                             "host", s->src.host, "time", cli_json_time(s->time),
                                             "incomplete", s->incomplete, "suspicious",
                                             s->suspicious, "pinned", s->pinned));
    }
    out->status = 200;
    out->body = json_pack("{s:s, s:o, s:b}", "repository", ctx->repo_url, "snapshots", arr,
                          "truncated", cat.n > UI_BROWSE_SNAPSHOTS);
    repo_catalog_free(&cat);
close_storage:
    storage_close(&st);
}

struct ui_ls {
    json_t *entries;
    uint64_t n;
};

static int ui_ls_cb(void *arg, const struct repo_file *f)
{
    struct ui_ls *l = arg;
    if (l->n++ < UI_BROWSE_MAX)
        json_array_append_new(l->entries, cli_browse_entry_json(f));
    return 0;
}

/* The snapshot's facts the page heads its views with. */
static json_t *ui_snapshot_json(const struct browse *b)
{
    json_t *paths = json_array();
    for (size_t i = 0; i < b->m.npaths; i++)
        json_array_append_new(paths, cli_json_string_lossy(b->m.paths[i]));
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:I, s:I}", "id", b->id, "namespace",
                     b->src.ns, "policy", b->src.policy, "host", b->src.host, "time",
                     cli_json_time(b->time), "parent",
                     b->m.parent[0] ? json_string(b->m.parent) : json_null(), "paths", paths,
                     "files", (json_int_t)b->m.files, "bytes", (json_int_t)b->m.bytes);
}

/* POST /api/browse/ls {"snapshot", "path"?}: the entries directly in a directory; without a
 * path, the snapshot's paths (the tree's roots) and no entries. */
static void ui_browse_ls(struct ui_ctx *ctx, const json_t *body, struct ui_reply *out)
{
    const char *id = ui_browse_id(body, "snapshot", out);
    const json_t *p = json_object_get(body, "path");
    struct storage st;
    struct browse b;
    struct util_err err = {0};
    struct ui_ls l = {0};
    char *path = NULL;
    int rc;

    if (id == NULL)
        return;
    if (p != NULL && !json_is_null(p)) {
        if (!json_is_string(p) || (path = browse_path_norm(json_string_value(p))) == NULL) {
            ui_reply_error(out, 400,
                           "\"path\" must be an absolute path without . or .. parts, as the "
                           "node had it (/etc/ssh)");
            return;
        }
    }
    if (!ui_browse_storage(ctx, &st, true, out))
        goto free_path;
    if (!ui_browse_open(&st, &b, id, out))
        goto close_storage;
    l.entries = json_array();
    if (path != NULL && (rc = browse_ls(&b, path, false, ui_ls_cb, &l, &err)) != 0) {
        if (rc == AGENT_EABSENT)
            ui_reply_error(out, 404, "snapshot %s has no %s", id, path);
        else
            ui_reply_error(out, 502, "%s", err.msg);
        json_decref(l.entries);
        goto close_browse;
    }
    out->status = 200;
    out->body = json_pack("{s:o, s:o, s:o, s:I, s:b, s:I}", "snapshot", ui_snapshot_json(&b),
                          "path", path != NULL ? json_string(path) : json_null(), "entries",
                          l.entries, "count", (json_int_t)l.n, "truncated", l.n > UI_BROWSE_MAX,
                          "requests", (json_int_t)b.gets);
close_browse:
    browse_close(&b);
close_storage:
    storage_close(&st);
free_path:
    free(path);
}

struct ui_diff {
    json_t *changes;
    uint64_t added, removed, changed, counted, n;
};

/*
 * Whether the anomaly rules count this difference (docs/anomaly.md): a regular file
 * the parent had that was deleted or has other content. mass-change, deletion-spike,
 * shrink and encryption-like are made of these; sudden-growth of new data (the added
 * files). A change of owner, mode or time alone counts for none.
 */
static bool ui_diff_counted(const struct repo_file *a, const struct repo_file *b, unsigned what)
{
    if (a == NULL || a->type != REPO_FT_FILE)
        return false;
    return b == NULL || (b->type == REPO_FT_FILE && (what & BROWSE_CONTENT)) ||
           b->type != REPO_FT_FILE;
}

static int ui_diff_cb(void *arg, const struct repo_file *a, const struct repo_file *b,
                      unsigned what)
{
    struct ui_diff *d = arg;
    const char *kind = a == NULL ? "added" : b == NULL ? "removed" : "changed";
    json_t *e, *whats;
    bool counted = ui_diff_counted(a, b, what);

    d->counted += counted;
    if (a == NULL)
        d->added++;
    else if (b == NULL)
        d->removed++;
    else
        d->changed++;
    if (d->n++ >= UI_BROWSE_MAX)
        return 0;
    e = cli_browse_entry_json(b != NULL ? b : a);
    json_object_set_new(e, "change", json_string(kind));
    json_object_set_new(e, "counted", json_boolean(counted));
    if (a != NULL && b != NULL) {
        whats = json_array();
        for (unsigned i = 0; i < BROWSE_WHAT_N; i++)
            if (what & (1u << i))
                json_array_append_new(whats, json_string(browse_what_name(1u << i)));
        json_object_set_new(e, "what", whats);
        json_object_set_new(e, "oldSize", json_integer((json_int_t)a->size));
    }
    json_array_append_new(d->changes, e);
    return 0;
}

/* The manifest's counters the anomaly rules read (docs/anomaly.md). */
static json_t *ui_counters_json(const struct repo_manifest *m)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I}", "files", (json_int_t)m->files, "bytes",
                     (json_int_t)m->bytes, "newFiles", (json_int_t)m->new_files, "changedFiles",
                     (json_int_t)m->changed_files, "deletedFiles", (json_int_t)m->deleted_files);
}

/* POST /api/browse/diff {"snapshot", "against"?}: what changed from its parent (or from
 * "against") to the snapshot, in path order. */
static void ui_browse_diff(struct ui_ctx *ctx, const json_t *body, struct ui_reply *out)
{
    const char *id = ui_browse_id(body, "snapshot", out);
    const json_t *against = json_object_get(body, "against");
    struct storage st;
    struct browse b, a;
    struct util_err err = {0};
    struct ui_diff d = {0};
    const char *base;
    int rc;

    if (id == NULL)
        return;
    if (against != NULL && !json_is_null(against) &&
        (!json_is_string(against) || json_string_length(against) == 0)) {
        ui_reply_error(out, 400, "\"against\" must be a snapshot id");
        return;
    }
    if (!ui_browse_storage(ctx, &st, true, out))
        return;
    if (!ui_browse_open(&st, &b, id, out))
        goto close_storage;
    base = json_is_string(against) ? json_string_value(against) : b.m.parent;
    if (base[0] == '\0') {
        out->status = 200;
        out->body = json_pack("{s:o, s:n, s:o, s:{s:I, s:I, s:I, s:I}, s:b}", "snapshot",
                              ui_snapshot_json(&b), "against", "changes", json_array(), "counts",
                              "added", (json_int_t)0, "removed", (json_int_t)0, "changed",
                              (json_int_t)0, "counted", (json_int_t)0, "truncated", false);
        json_object_set_new(out->body, "counters", ui_counters_json(&b.m));
        goto close_b;
    }
    if (!ui_browse_open(&st, &a, base, out))
        goto close_b;
    d.changes = json_array();
    if ((rc = browse_diff(&a, &b, ui_diff_cb, &d, &err)) != 0) {
        ui_reply_error(out, 502, "%s", err.msg);
        json_decref(d.changes);
        goto close_a;
    }
    out->status = 200;
    out->body =
        json_pack("{s:o, s:o, s:o, s:{s:I, s:I, s:I, s:I}, s:b, s:o, s:o, s:I}", "snapshot",
                  ui_snapshot_json(&b), "against", ui_snapshot_json(&a), "changes", d.changes,
                  "counts", "added", (json_int_t)d.added, "removed", (json_int_t)d.removed,
                  "changed", (json_int_t)d.changed, "counted", (json_int_t)d.counted, "truncated",
                  d.n > UI_BROWSE_MAX, "counters", ui_counters_json(&b.m), "againstCounters",
                  ui_counters_json(&a.m), "requests", (json_int_t)(a.gets + b.gets));
close_a:
    browse_close(&a);
close_b:
    browse_close(&b);
close_storage:
    storage_close(&st);
}

void ui_browse_handle(struct ui_ctx *ctx, const char *what, const json_t *body,
                      struct ui_reply *out)
{
    if (strcmp(what, "snapshots") == 0)
        ui_browse_snapshots(ctx, out);
    else if (strcmp(what, "ls") == 0)
        ui_browse_ls(ctx, body, out);
    else if (strcmp(what, "diff") == 0)
        ui_browse_diff(ctx, body, out);
    else
        ui_reply_error(out, 404, "no endpoint POST /api/browse/%s", what);
}
