/*
 * POST /api/retention of `lode ui` (docs/ui.md): which snapshots a policy's retention
 * keeps, and why, through the very functions behind `lode forget --snapshots`
 * (cli_forget_json), with each snapshot's local time added. The history is the one
 * the request gives, a simulated one (a snapshot per run of the schedule), or the
 * repository's catalog of one host (one LIST, no object read, no key needed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binding/binding.h"
#include "cli.h"
#include "ui.h"

/* Snapshots one retention request may hold or simulate. */
#define UI_MAX_SNAPSHOTS 20000
#define UI_SIM_SNAPSHOTS 3000

/*
 * A simulated history: one snapshot per run of the schedule over the last `days`
 * days before `now` (the request's "until", else the clock; received a minute after the host's run
 * time), newest UI_SIM_SNAPSHOTS at most; one a day at midnight UTC without a schedule.
 */
static json_t *ui_simulate(const struct policy *pol, const struct tz_db *db, const char *host,
                           int64_t now, int64_t days, struct util_err *err)
{
    json_t *arr;
    struct binding b;
    int64_t off, t = now, stop = now - days * 86400;

    if (binding_init(&b, pol, db, err) != 0)
        return NULL;
    arr = json_array();
    off = binding_offset(&b, host);
    for (size_t n = 0; n < UI_SIM_SNAPSHOTS; n++) {
        struct sched_slot slot;
        int64_t at;
        char when[UTIL_TIME_BUF], id[48];
        struct util_civil c;

        if (b.has_sched) {
            if (sched_prev(&b.sched, t - off - 61, &slot) != 0)
                break;
            at = slot.at + off + 60;
            t = at;
        } else {
            at = util_floor_div(t - 1, 86400) * 86400;
            t = at;
        }
        if (at < stop)
            break;
        util_format_utc(at, when, sizeof(when));
        util_civil_from_seconds(at - 60, &c);
        snprintf(id, sizeof(id), "%04lld%02u%02uT%02u%02u%02uZ-%016zx", (long long)c.year, c.month,
                 c.day, c.hour, c.minute, c.second, n);
        json_array_append_new(arr, json_pack("{s:s, s:s}", "id", id, "time", when));
    }
    binding_close(&b);
    return arr;
}

/*
 * The repository's snapshots of the policy on one host, as `lode forget --snapshots`
 * reads them: one LIST of the catalog (no object is read, no key needed). A listing
 * that fails or is cut short is an error, never part of a history.
 */
static json_t *ui_catalog(struct ui_ctx *ctx, const struct policy *pol, const char *host,
                          struct ui_reply *out)
{
    struct storage st;
    struct repo_catalog cat;
    struct util_err err = {0};
    json_t *arr = NULL;

    if (ctx->repo_url == NULL) {
        ui_reply_error(out, 409,
                       "no repository: start lode ui with --repo s3:https://HOST/BUCKET[/PREFIX] "
                       "or LODE_REPOSITORY, and the S3 credentials in the environment");
        return NULL;
    }
    if (storage_open(&st, &ctx->repo, &err) != 0) {
        ui_reply_error(out, 502, "%s", err.msg);
        return NULL;
    }
    repo_catalog_init(&cat);
    if (storage_catalog(&st, pol->namespace, pol->name, host, &cat, &err) != 0) {
        ui_reply_error(out, 502, "the repository's catalog: %s", err.msg);
        goto close_storage;
    }
    arr = json_array();
    for (size_t i = 0; i < cat.n && i < UI_MAX_SNAPSHOTS; i++)
        json_array_append_new(arr,
                              json_pack("{s:s, s:o, s:b, s:b}", "id", cat.v[i].id, "time",
                                        cli_json_time(cat.v[i].time), "incomplete",
                                        cat.v[i].incomplete, "suspicious", cat.v[i].suspicious));
    repo_catalog_free(&cat);
close_storage:
    storage_close(&st);
    return arr;
}

void ui_retention_handle(struct ui_ctx *ctx, const json_t *body, struct ui_reply *out)
{
    struct policy pol;
    struct tz_zone *zone = NULL;
    struct ret_snapshot_list list = {0};
    struct ret_decision *d = NULL;
    struct util_err err = {0};
    json_t *snaps = json_object_get(body, "snapshots"), *owned = NULL, *items, *doc;
    const json_t *sim = json_object_get(body, "simulate");
    const json_t *catalog = json_object_get(body, "catalog");
    char *text = NULL;
    int rc;

    if (!ui_policy(ctx, body, &pol, out))
        return;
    if ((rc = binding_zone(&pol, ctx->db, &zone, &err)) != 0) {
        ui_reply_error(out, rc == UTIL_ENOENT ? 422 : 500, "%s", err.msg);
        goto free_policy;
    }
    if (json_is_object(sim)) {
        int64_t days, until;
        const char *host = json_string_value(json_object_get(sim, "host"));
        if (!ui_int_arg(sim, "days", 1, 3660, 400, &days, out) ||
            !ui_time_arg(sim, "until", ctx->now(), &until, out))
            goto free_zone;
        owned = ui_simulate(&pol, ctx->db, host != NULL ? host : "node-1", until, days, &err);
        if (owned == NULL) {
            ui_reply_error(out, 500, "%s", err.msg);
            goto free_zone;
        }
        snaps = owned;
    } else if (json_is_object(catalog)) {
        const char *host = json_string_value(json_object_get(catalog, "host"));
        if (host == NULL || host[0] == '\0') {
            ui_reply_error(out, 400, "\"catalog\" needs the \"host\" whose snapshots to read");
            goto free_zone;
        }
        owned = ui_catalog(ctx, &pol, host, out);
        if (owned == NULL)
            goto free_zone;
        snaps = owned;
    } else if (!json_is_array(snaps) || json_array_size(snaps) > UI_MAX_SNAPSHOTS) {
        ui_reply_error(out, 400,
                       "give \"snapshots\" (a list of at most %d, as for lode forget "
                       "--snapshots), \"simulate\": {\"days\": N, \"host\": H} or "
                       "\"catalog\": {\"host\": H}",
                       UI_MAX_SNAPSHOTS);
        goto free_zone;
    }
    /* Through the same strict reader as `lode forget --snapshots`. */
    text = json_dumps(snaps, JSON_COMPACT);
    if (ret_snapshots_from_json(&list, text, strlen(text), &err) != 0) {
        ui_reply_error(out, 400, "snapshots%s", err.msg);
        goto free_text;
    }
    d = util_calloc(list.n ? list.n : 1, sizeof(*d));
    if (ret_evaluate(list.v, list.n, &pol.retention, zone, d, &err) != 0) {
        ui_reply_error(out, 400, "%s", err.msg);
        goto free_list;
    }
    doc = cli_forget_json(list.v, list.n, d);
    items = json_array();
    for (size_t i = 0; i < list.n; i++) {
        const struct ret_snapshot *s = &list.v[d[i].index];
        json_t *reasons = json_array();
        for (unsigned r = 0; r < RET_REASON_COUNT; r++)
            if (d[i].reasons & (1u << r))
                json_array_append_new(reasons, json_string(ret_reason_name(r)));
        json_array_append_new(items, json_pack("{s:s, s:o, s:o, s:b, s:b, s:b, s:o}", "id", s->id,
                                               "time", cli_json_time(s->time), "local",
                                               ui_json_local(zone, s->time), "incomplete",
                                               s->incomplete, "suspicious", s->suspicious, "keep",
                                               d[i].keep, "reasons", reasons));
    }
    json_object_set_new(doc, "snapshots", items);
    json_object_set_new(doc, "timezone", json_string(tz_zone_name(zone)));
    json_object_set_new(doc, "simulated", json_boolean(owned != NULL && json_is_object(sim)));
    json_object_set_new(doc, "source",
                        json_string(json_is_object(sim)       ? "simulated"
                                    : json_is_object(catalog) ? "catalog"
                                                              : "list"));
    out->status = 200;
    out->body = doc;

free_list:
    free(d);
    ret_snapshot_list_free(&list);
free_text:
    free(text);
free_zone:
    json_decref(owned);
    tz_zone_free(zone);
free_policy:
    policy_free(&pol);
}
