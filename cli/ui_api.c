/*
 * The JSON endpoints of `lode ui` (docs/ui.md). Each one parses the policy with
 * the validator and answers with the function behind the matching command, so
 * the page shows exactly what `lode validate`, `lode schedule` and `lode status`
 * print with --output json (the retention view, `lode forget`'s, is
 * ui_retention.c); the extra fields a page needs (local times, the calendar of
 * daylight saving notes, the alert limit's derivation) are added around that
 * answer, never instead of it.
 *
 * Every endpoint that takes a policy answers 422 with the validate document
 * ({"file","valid":false,"errors":[...]}) when the policy is invalid, so the page
 * shows the same errors whatever view asked.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "binding/binding.h"
#include "cli.h"
#include "status.h"
#include "ui.h"

/* The file name errors are reported against, as the page shows them. */
#define UI_FILE "policy.yaml"
/* Hosts one schedule request may ask for, and runs shown per host. */
#define UI_MAX_HOSTS     500
#define UI_MAX_HOST_RUNS 500

struct ui_reply *ui_reply_error(struct ui_reply *out, unsigned status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    out->status = status;
    out->body = json_pack("{s:o}", "error", cli_json_string_lossy(msg));
    return out;
}

bool ui_kube(struct ui_ctx *ctx)
{
    struct util_err err = {0};
    if (ctx->kube_open)
        return true;
    if (cli_kube_open(&ctx->kube, ctx->kube_opts.kubeconfig, ctx->kube_opts.context, &err) != 0) {
        cli_kube_close(&ctx->kube);
        snprintf(ctx->kube_error, sizeof(ctx->kube_error), "%s", err.msg);
        return false;
    }
    ctx->kube_open = true;
    ctx->kube_error[0] = '\0';
    return true;
}

const char *ui_namespace(struct ui_ctx *ctx)
{
    if (ctx->kube_opts.namespace != NULL)
        return ctx->kube_opts.namespace;
    return ctx->kube_open ? cli_kube_namespace(&ctx->kube) : "default";
}

/* "2026-03-29T04:07:12+03:00" for an instant in a zone. */
json_t *ui_json_local(const struct tz_zone *zone, int64_t t)
{
    char text[UTIL_TIME_BUF];
    util_format_time(t, tz_offset_at(zone, t), UTIL_TIME_OFFSET, text, sizeof(text));
    return json_string(text);
}

static void ui_fmt_date(int64_t local, char *buf, size_t size)
{
    util_format_time(local, 0, UTIL_TIME_DATE, buf, size);
}

static void ui_fmt_clock(int64_t local, char *buf, size_t size)
{
    struct util_civil c;
    util_civil_from_seconds(local, &c);
    snprintf(buf, size, "%02u:%02u", c.hour, c.minute);
}

/*
 * Validates body.yaml. Returns true with pol filled; otherwise fills out (422 with
 * the validate document, or 400 for a request without yaml) and returns false.
 */
bool ui_policy(struct ui_ctx *ctx, const json_t *body, struct policy *pol, struct ui_reply *out)
{
    const json_t *y = json_object_get(body, "yaml");
    struct policy_diags diags;
    bool ok;

    memset(pol, 0, sizeof(*pol));
    if (!json_is_string(y)) {
        ui_reply_error(out, 400, "the request needs \"yaml\": the policy's text");
        return false;
    }
    policy_diags_init(&diags);
    ok = policy_parse_yaml(pol, json_string_value(y), json_string_length(y), ctx->db, &diags) == 0;
    if (!ok) {
        out->status = 422;
        out->body = cli_validate_json_file(UI_FILE, false, &diags);
    }
    policy_diags_free(&diags);
    return ok;
}

/* An optional RFC 3339 member; false (and out filled with 400) when it is malformed. */
bool ui_time_arg(const json_t *body, const char *key, int64_t dflt, int64_t *t,
                 struct ui_reply *out)
{
    const json_t *v = json_object_get(body, key);
    struct util_err err = {0};
    *t = dflt;
    if (v == NULL || json_is_null(v))
        return true;
    if (!json_is_string(v) || util_parse_rfc3339(json_string_value(v), t, &err) != 0) {
        ui_reply_error(out, 400, "\"%s\" must be an RFC 3339 time: %s", key,
                       err.msg[0] ? err.msg : "not a string");
        return false;
    }
    return true;
}

/* An optional whole number in [lo, hi]. */
bool ui_int_arg(const json_t *body, const char *key, int64_t lo, int64_t hi, int64_t dflt,
                int64_t *v, struct ui_reply *out)
{
    const json_t *j = json_object_get(body, key);
    *v = dflt;
    if (j == NULL || json_is_null(j))
        return true;
    if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi) {
        ui_reply_error(out, 400, "\"%s\" must be a whole number from %lld to %lld", key,
                       (long long)lo, (long long)hi);
        return false;
    }
    *v = json_integer_value(j);
    return true;
}

/* ---- POST /api/validate ---- */

static void ui_api_validate(struct ui_ctx *ctx, const json_t *body, struct ui_reply *out)
{
    struct policy pol;
    if (!ui_policy(ctx, body, &pol, out)) {
        if (out->status == 422)
            out->status = 200; /* an invalid policy is this endpoint's answer, not a failure */
        return;
    }
    policy_free(&pol);
    struct policy_diags none = {0};
    out->status = 200;
    out->body = cli_validate_json_file(UI_FILE, true, &none);
}

/* ---- POST /api/schedule ---- */

/* How the alert limit came about, for the page to explain it. */
static json_t *ui_limit_json(const struct policy *pol, int64_t limit)
{
    int64_t jitter = pol->has_schedule ? pol->schedule.jitter : 0;
    if (limit == SCHED_NO_LIMIT)
        return json_pack("{s:n, s:s}", "seconds", "source", "none");
    if (pol->alerts_max_age > 0)
        return json_pack("{s:I, s:s}", "seconds", (json_int_t)limit, "source", "alerts.maxAge");
    return json_pack("{s:I, s:s, s:I, s:I}", "seconds", (json_int_t)limit, "source", "schedule",
                     "longestGapSeconds", (json_int_t)((limit - jitter) / 2), "jitterSeconds",
                     (json_int_t)jitter);
}

/* Up to this many clock times are named in one note; more are counted. */
#define UI_NOTE_TIMES 6

/* The local times of one clock change with the same note, gathered into one sentence. */
struct ui_note {
    int64_t local[UI_NOTE_TIMES];
    size_t n;
};

static void ui_note_add(struct ui_note *n, int64_t local)
{
    if (n->n < UI_NOTE_TIMES)
        n->local[n->n] = local;
    n->n++;
}

/* "02:00", "02:00 and 02:30", "02:00, 02:15 and 02:30", "the 60 times from 02:00". */
static void ui_note_times(const struct ui_note *n, struct util_buf *b)
{
    char clock[16];
    if (n->n > UI_NOTE_TIMES) {
        ui_fmt_clock(n->local[0], clock, sizeof(clock));
        util_buf_printf(b, "the %zu slots from %s", n->n, clock);
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        ui_fmt_clock(n->local[i], clock, sizeof(clock));
        util_buf_printf(b, "%s%s", i == 0 ? "" : i + 1 == n->n ? " and " : ", ", clock);
    }
}

static void ui_calendar_add(json_t *days, int64_t local, const char *kind, struct util_buf *text)
{
    char date[16];
    ui_fmt_date(local, date, sizeof(date));
    json_array_append_new(
        days, json_pack("{s:s, s:s, s:s}", "date", date, "kind", kind, "text", text->data));
    text->len = 0;
    text->data[0] = '\0';
}

static void ui_skip_cb(int64_t local, int64_t transition, void *arg)
{
    ui_note_add(arg, local);
}

/*
 * The days of [from, to] on which a slot is shifted, repeated or skipped, with
 * one sentence each in the words of docs/schedule.md. Notes happen only at clock
 * changes, so only the day before each change is searched: the cost follows the
 * number of changes, not the number of slots.
 */
static json_t *ui_calendar(const struct sched *s, const struct tz_zone *zone, int64_t from,
                           int64_t to)
{
    json_t *days = json_array();
    struct util_buf text;

    util_buf_init(&text);
    util_buf_puts(&text, "");
    for (int64_t tr = tz_next_transition(zone, from); tr != INT64_MAX && tr <= to;
         tr = tz_next_transition(zone, tr)) {
        struct sched_slot slot;
        struct ui_note rep = {0}, skip = {0};
        int64_t t = tr - 86400 > from ? tr - 86400 : from;
        int32_t before = tz_offset_at(zone, tr - 1), after = tz_offset_at(zone, tr);
        char was[16], now[16];

        if (before == after)
            continue; /* only the abbreviation or the DST flag changed */
        ui_fmt_clock(tr + before, was, sizeof(was));
        ui_fmt_clock(tr + after, now, sizeof(now));
        while (sched_next(s, t, &slot) == 0 && slot.at <= tr) {
            if (slot.note == SCHED_NOTE_SHIFTED) {
                char clock[16];
                ui_fmt_clock(slot.local, clock, sizeof(clock));
                util_buf_printf(&text,
                                "clocks jump from %s to %s: %s does not exist, so the slot "
                                "runs at %s",
                                was, now, clock, now);
                ui_calendar_add(days, slot.local, "shifted", &text);
            } else if (slot.note == SCHED_NOTE_REPEATED) {
                ui_note_add(&rep, slot.local);
            }
            t = slot.at;
        }
        if (rep.n > 0) {
            util_buf_printf(&text, "clocks go back from %s to %s: ", was, now);
            ui_note_times(&rep, &text);
            util_buf_printf(&text, " %s twice and run%s the first time only (%s)",
                            rep.n == 1 ? "happens" : "happen", rep.n == 1 ? "s" : "",
                            tz_abbrev_at(zone, tr - 1));
            ui_calendar_add(days, rep.local[0], "repeated", &text);
        }
        sched_skipped(s, tr - 1, tr, ui_skip_cb, &skip);
        if (skip.n > 0) {
            util_buf_printf(&text, "clocks jump from %s to %s: ", was, now);
            ui_note_times(&skip, &text);
            util_buf_printf(&text, " %s not exist and %s skipped", skip.n == 1 ? "does" : "do",
                            skip.n == 1 ? "is" : "are");
            ui_calendar_add(days, skip.local[0], "skipped", &text);
        }
    }
    util_buf_free(&text);
    return days;
}

static void ui_api_schedule(struct ui_ctx *ctx, const json_t *body, struct ui_reply *out)
{
    struct timespec t0, t1, c0, c1;
    struct policy pol;
    const json_t *hosts = json_object_get(body, "hosts");
    int64_t from, days, count;
    struct util_err err = {0};
    json_t *hosts_out = json_array(), *limit = NULL, *calendar = NULL;
    size_t i;
    const json_t *h;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    if (!ui_policy(ctx, body, &pol, out))
        goto free_out;
    if (!ui_time_arg(body, "from", ctx->now(), &from, out) ||
        !ui_int_arg(body, "days", 1, 366, 14, &days, out) ||
        !ui_int_arg(body, "count", 0, UI_MAX_HOST_RUNS, 0, &count, out))
        goto free_policy;
    if (!json_is_array(hosts) || json_array_size(hosts) == 0 ||
        json_array_size(hosts) > UI_MAX_HOSTS) {
        ui_reply_error(out, 400, "\"hosts\" must be a list of 1 to %d node names", UI_MAX_HOSTS);
        goto free_policy;
    }
    json_array_foreach(hosts, i, h)
    {
        struct cli_schedule_query q = {json_string_value(h), from,
                                       count > 0 ? (size_t)count : UI_MAX_HOST_RUNS, count == 0,
                                       from + days * 86400};
        struct cli_schedule sch;
        json_t *doc, *runs;
        size_t k;
        json_t *r;

        if (q.host == NULL || q.host[0] == '\0') {
            ui_reply_error(out, 400, "hosts[%zu] must be a non-empty string", i);
            goto free_policy;
        }
        int rc = cli_schedule_compute(&sch, &pol, ctx->db, &q, &err);
        if (rc != 0) {
            ui_reply_error(out,
                           rc == UTIL_ENOENT   ? 422
                           : rc == UTIL_ERANGE ? 400
                                               : 500,
                           "%s", err.msg);
            goto free_policy;
        }
        doc = cli_schedule_json(&pol, q.host, &sch);
        runs = json_object_get(doc, "runs");
        json_array_foreach(runs, k, r)
        {
            int64_t rt = sch.runs[k].run_time;
            json_object_set_new(r, "runLocal", ui_json_local(sch.bind.zone, rt));
            json_object_set_new(r, "abbrev", json_string(tz_abbrev_at(sch.bind.zone, rt)));
        }
        if (sch.truncated)
            json_object_set_new(doc, "truncated", json_true());
        if (limit == NULL) {
            limit = ui_limit_json(&pol, sch.limit);
            calendar = sch.bind.has_sched
                           ? ui_calendar(&sch.bind.sched, sch.bind.zone, from, from + 366 * 86400)
                           : json_array();
        }
        json_array_append_new(hosts_out, doc);
        cli_schedule_free(&sch);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    out->status = 200;
    out->body = json_pack(
        "{s:o, s:s, s:s, s:o, s:o, s:{s:o, s:o, s:o}, s:I}", "policy",
        json_sprintf("%s/%s", pol.namespace, pol.name), "timezone",
        pol.has_schedule ? pol.schedule.timezone : "UTC", "tzdataVersion", tz_db_version(ctx->db),
        "limit", limit, "hosts", hosts_out, "calendar", "from", cli_json_time(from), "to",
        cli_json_time(from + 366 * 86400), "days", calendar, "serverMicros",
        (json_int_t)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000));
    json_object_set_new(out->body, "suspended", json_boolean(pol.suspend));
    /* The wall time above counts waiting for a busy CPU; this is the work itself. */
    json_object_set_new(
        out->body, "serverCpuMicros",
        json_integer((c1.tv_sec - c0.tv_sec) * 1000000 + (c1.tv_nsec - c0.tv_nsec) / 1000));
    policy_free(&pol);
    return;

free_policy:
    policy_free(&pol);
free_out:
    json_decref(hosts_out);
    json_decref(limit);
    json_decref(calendar);
}

/* ---- GET /api/status, GET /api/info ---- */

static void ui_api_status(struct ui_ctx *ctx, const char *query, struct ui_reply *out)
{
    struct cli_status st;
    struct util_err err = {0};
    bool all = query != NULL && strcmp(query, "all") == 0;

    if (!ui_kube(ctx)) {
        ui_reply_error(out, 503, "no cluster: %s", ctx->kube_error);
        return;
    }
    struct cli_status_query q = {all ? NULL : ui_namespace(ctx), NULL};
    if (cli_status_load(&st, &ctx->kube, ctx->db, &q, ctx->now(), &err) != 0) {
        ui_reply_error(out, 502, "%s", err.msg);
        cli_status_free(&st);
        return;
    }
    out->status = 200;
    out->body = cli_status_json(&st);
    json_object_set_new(out->body, "namespace", all ? json_null() : json_string(q.namespace));
    json_object_set_new(out->body, "server", json_string(cli_kube_server(&ctx->kube)));
    json_object_set_new(out->body, "warning",
                        st.warning[0] ? json_string(st.warning) : json_null());
    cli_status_free(&st);
}

static void ui_api_info(struct ui_ctx *ctx, struct ui_reply *out)
{
    bool kube = ui_kube(ctx);
    out->status = 200;
    out->body = json_pack(
        "{s:s, s:b, s:s, s:{s:b, s:o, s:o, s:s}, s:{s:I, s:I, s:I}}", "tzdataVersion",
        tz_db_version(ctx->db), "pageBuilt", ui_asset_count > 0, "file", UI_FILE, "cluster",
        "connected", kube, "server", kube ? json_string(cli_kube_server(&ctx->kube)) : json_null(),
        "error", kube ? json_null() : json_string(ctx->kube_error), "namespace", ui_namespace(ctx),
        "defaults", "jitterSeconds", (json_int_t)POLICY_DEFAULT_JITTER, "catchUpWindowSeconds",
        (json_int_t)POLICY_DEFAULT_CATCH_UP, "maxRuntimeSeconds",
        (json_int_t)POLICY_DEFAULT_MAX_RUNTIME);
    json_object_set_new(out->body, "repository",
                        ctx->repo_url != NULL ? json_string(ctx->repo_url) : json_null());
    json_object_set_new(
        out->body, "repositoryKey",
        json_boolean(ctx->repo.key_file != NULL || getenv("LODE_KEY_FILE") != NULL));
}

void ui_api_handle(struct ui_ctx *ctx, const char *method, const char *path, const json_t *body,
                   struct ui_reply *out)
{
    bool post = strcmp(method, "POST") == 0;
    memset(out, 0, sizeof(*out));

    if (post && !json_is_object(body)) {
        ui_reply_error(out, 400, "the request body must be a JSON object");
        return;
    }
    if (post && strcmp(path, "/api/validate") == 0)
        ui_api_validate(ctx, body, out);
    else if (post && strcmp(path, "/api/schedule") == 0)
        ui_api_schedule(ctx, body, out);
    else if (post && strcmp(path, "/api/retention") == 0)
        ui_retention_handle(ctx, body, out);
    else if (post && strcmp(path, "/api/apply") == 0)
        ui_apply_handle(ctx, body, out);
    else if (post && strcmp(path, "/api/restore") == 0)
        ui_apply_restore_handle(ctx, body, out);
    else if (post && strncmp(path, "/api/browse/", 12) == 0)
        ui_browse_handle(ctx, path + 12, body, out);
    else if (!post && strcmp(path, "/api/status") == 0)
        ui_api_status(ctx, NULL, out);
    else if (!post && strcmp(path, "/api/status/all") == 0)
        ui_api_status(ctx, "all", out);
    else if (!post && strcmp(path, "/api/info") == 0)
        ui_api_info(ctx, out);
    else
        ui_reply_error(out, 404, "no endpoint %s %s", method, path);
    if (out->body == NULL)
        ui_reply_error(out, 500, "internal error: %s %s gave no answer", method, path);
}
