/*
 * answers: the answers several commands give, built once here so that every caller
 * (the command, `lode ui`, the backup's output) gives the same answer to the same
 * question (cli.h, "The answers"). The commands' own printing stays in their files.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "schedule/schedule.h"

/*
 * Bytes that are not UTF-8 (a file name can hold any) become U+FFFD, since
 * jansson refuses them and the output must still be produced.
 */
json_t *cli_json_string_lossy(const char *s)
{
    json_t *j = json_string(s);
    struct util_buf b;
    const unsigned char *u = (const unsigned char *)s;

    if (j != NULL)
        return j;
    util_buf_init(&b);
    for (size_t i = 0; u[i] != '\0'; i++) {
        if (u[i] < 0x80)
            util_buf_append(&b, &u[i], 1);
        else
            util_buf_puts(&b, "\xef\xbf\xbd");
    }
    j = json_string(b.data != NULL ? b.data : "");
    util_buf_free(&b);
    return j;
}

json_t *cli_validate_json_file(const char *file, bool valid, const struct policy_diags *d)
{
    json_t *errors = json_array();
    for (size_t i = 0; i < d->n; i++) {
        const struct policy_diag *g = &d->v[i];
        json_array_append_new(errors, json_pack("{s:i, s:i, s:o, s:o}", "line", g->line, "column",
                                                g->column, "path", cli_json_string_lossy(g->path),
                                                "message", cli_json_string_lossy(g->message)));
    }
    return json_pack("{s:o, s:b, s:o}", "file", cli_json_string_lossy(file), "valid", valid,
                     "errors", errors);
}

json_t *cli_forget_json(const struct ret_snapshot *snaps, size_t n, const struct ret_decision *d)
{
    json_t *root = json_object();
    json_t *keep = json_array();
    json_t *forget = json_array();

    for (size_t i = 0; i < n; i++) {
        const char *id = snaps[d[i].index].id;
        if (d[i].keep) {
            json_t *reasons = json_array();
            for (unsigned r = 0; r < RET_REASON_COUNT; r++)
                if (d[i].reasons & (1u << r))
                    json_array_append_new(reasons, json_string(ret_reason_name(r)));
            json_array_append_new(keep, json_pack("{s:s, s:o}", "id", id, "reasons", reasons));
        } else {
            json_array_append_new(forget, json_pack("{s:s}", "id", id));
        }
    }
    json_object_set_new(root, "keep", keep);
    json_object_set_new(root, "forget", forget);
    return root;
}

static void answers_schedule_skip_cb(int64_t local, int64_t transition, void *arg)
{
    struct cli_schedule *l = arg;
    l->skips = util_grow(l->skips, &l->skips_cap, l->nskips + 1, sizeof(*l->skips));
    l->skips[l->nskips++] = (struct cli_schedule_skip){local, transition};
}

/* "2026-03-29T03:30": the slot's wall clock, as the JSON contract writes it. */
static json_t *answers_json_wall(int64_t local)
{
    struct util_civil c;
    char buf[40];
    util_civil_from_seconds(local, &c);
    snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02u:%02u", (long long)c.year, c.month, c.day,
             c.hour, c.minute);
    return json_string(buf);
}

json_t *cli_schedule_json(const struct policy *pol, const char *host, const struct cli_schedule *l)
{
    json_t *root = json_object(), *runs = json_array(), *notes = json_array();
    static const char *const note_names[] = {NULL, "shifted", "repeated"};

    json_object_set_new(root, "policy", json_sprintf("%s/%s", pol->namespace, pol->name));
    json_object_set_new(root, "host", json_string(host));
    json_object_set_new(root, "timezone",
                        json_string(pol->has_schedule ? pol->schedule.timezone : "UTC"));
    json_object_set_new(root, "offsetSeconds", json_integer(l->offset));
    json_object_set_new(root, "alertLimitSeconds",
                        l->limit == SCHED_NO_LIMIT ? json_null() : json_integer(l->limit));
    json_object_set_new(root, "suspended", json_boolean(pol->suspend));
    for (size_t i = 0; i < l->nruns; i++) {
        const struct cli_schedule_run *r = &l->runs[i];
        json_t *o = json_object();
        const char *note = note_names[r->slot.note];
        json_object_set_new(o, "slot", answers_json_wall(r->slot.local));
        json_object_set_new(o, "slotTime", cli_json_time(r->slot.at));
        json_object_set_new(o, "runTime", cli_json_time(r->run_time));
        json_object_set_new(o, "note", note ? json_string(note) : json_null());
        json_array_append_new(runs, o);
    }
    for (size_t i = 0; i < l->nskips; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "slot", answers_json_wall(l->skips[i].local));
        json_object_set_new(o, "note", json_string("skipped"));
        json_array_append_new(notes, o);
    }
    json_object_set_new(root, "runs", runs);
    json_object_set_new(root, "notes", notes);
    return root;
}

int cli_schedule_compute(struct cli_schedule *out, const struct policy *pol, const struct tz_db *db,
                         const struct cli_schedule_query *q, struct util_err *err)
{
    struct sched_slot slot;
    int64_t t = q->from;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = binding_init(&out->bind, pol, db, err)) != 0)
        return rc;
    out->limit = binding_alert_limit(&out->bind, q->from);
    if (!out->bind.has_sched)
        return 0;
    out->offset = binding_offset(&out->bind, q->host);
    for (;;) {
        if (!q->has_until ? out->nruns >= q->count : q->count > 0 && out->nruns >= q->count) {
            out->truncated = q->has_until;
            break;
        }
        if (sched_next(&out->bind.sched, t, &slot) != 0 || (q->has_until && slot.at > q->until))
            break;
        if (out->nruns == CLI_SCHEDULE_MAX_RUNS) {
            cli_schedule_free(out);
            return util_err_set(err, UTIL_ERANGE,
                                "more than %d runs until the end of the range: ask for fewer",
                                CLI_SCHEDULE_MAX_RUNS);
        }
        out->runs = util_grow(out->runs, &out->runs_cap, out->nruns + 1, sizeof(*out->runs));
        out->runs[out->nruns++] = (struct cli_schedule_run){slot, slot.at + out->offset};
        t = slot.at;
    }
    /* Skipped local times of the clock changes in the range shown. */
    sched_skipped(&out->bind.sched, q->from, q->has_until && !out->truncated ? q->until : t,
                  answers_schedule_skip_cb, out);
    return 0;
}

void cli_schedule_free(struct cli_schedule *s)
{
    free(s->runs);
    free(s->skips);
    binding_close(&s->bind);
    memset(s, 0, sizeof(*s));
}
