/*
 * Events about policies, paced and combined per (policy, type, reason) by eventagg.h: the
 * Events of runs (BackupStarted, CaughtUp, Missed, Skipped, Overdue, RateLimited, and the
 * forgets' Forgot). A slot of a thousand runs sends a few Events per policy instead of one
 * per run, and every Event is still in the log, one line each, when it is decided.
 */
#include "ctl_int.h"

#include <stdlib.h>
#include <string.h>

/*
 * After a burst of three, one Event per (policy, type, reason) a minute: a slot of a
 * thousand runs over 20 policies then sends about 5 BackupStarted Events a policy in a
 * two-minute jitter window (0.1 a run), where every ten seconds sent 15 (0.3 a run, 0.8
 * over the three kinds KWOK's runs earn). The Kubernetes recorder is slower still (one
 * update of a series per 30 minutes); a minute keeps the log's news on the policy fresh.
 */
#define CTL_EVENT_INTERVAL_MS 60000
#define CTL_EVENT_BURST       3
#define CTL_EVENT_SEP         '\x1f' /* between the parts of a key: in no name or reason */

struct ctl_event_write {
    struct ctl_write w; /* first: the record of the write in flight */
    struct ctl *c;
};

static void ctl_event_write_free_cb(struct ctl_write *w)
{
    free(w);
}

static void ctl_event_sent_cb(const struct kube_result *res, void *arg)
{
    struct ctl_event_write *op = arg;
    if ((res->error != 0 || res->status >= 300) && !ctl_ns_deleting(op->c, res, "an Event"))
        ctl_log(op->c, 0, "an Event could not be written: %s",
                res->message ? res->message : "no answer");
    ctl_write_untrack(op->c, &op->w);
    free(op);
}

static void ctl_event_send(struct ctl *c, const char *ns, const char *name, const char *uid,
                           const char *type, const char *reason, const char *message)
{
    struct util_err err = {0};
    struct kube_object_ref ref = {API_GROUP_VERSION, "BackupPolicy", ns, name,
                                  uid[0] != '\0' ? uid : NULL};
    if (c->kube == NULL)
        return;
    struct ctl_event_write *op = util_calloc(1, sizeof(*op));
    op->c = c;
    ctl_write_track(c, &op->w, ctl_event_write_free_cb);
    if (kube_event_create(c->kube, &ref, type, reason, message, CTL_COMPONENT, ctl_now(c),
                          ctl_event_sent_cb, op, NULL, &err) != 0) {
        ctl_log(c, 0, "Event on BackupPolicy %s/%s: %s", ns, name, err.msg);
        ctl_write_untrack(c, &op->w);
        free(op);
    }
}

/* A key back into its parts: ns, name, uid, type, reason. */
static void ctl_event_take_cb(const char *key, size_t n, const char *message, void *arg)
{
    struct ctl *c = arg;
    char *copy = util_strdup(key);
    char *part[5] = {copy, NULL, NULL, NULL, NULL};
    size_t np = 1;
    for (char *s = copy; *s != '\0' && np < 5; s++) {
        if (*s == CTL_EVENT_SEP) {
            *s = '\0';
            part[np++] = s + 1;
        }
    }
    if (np == 5)
        ctl_event_send(c, part[0], part[1], part[2], part[3], part[4], message);
    free(copy);
}

static void ctl_events_timer_cb(uv_timer_t *t);

static void ctl_events_arm(struct ctl *c)
{
    uint64_t due = ctl_eventagg_due(&c->events);
    if (due == UINT64_MAX || c->stopping) {
        uv_timer_stop(&c->events_timer);
        return;
    }
    uint64_t now = uv_now(c->loop);
    uv_timer_start(&c->events_timer, ctl_events_timer_cb, due > now ? due - now : 0, 0);
}

static void ctl_events_timer_cb(uv_timer_t *t)
{
    struct ctl *c = t->data;
    ctl_eventagg_take(&c->events, uv_now(c->loop), false, ctl_event_take_cb, c);
    ctl_events_arm(c);
}

void ctl_events_policy(struct ctl *c, const struct ctl_policy_entry *e, const char *type,
                       const char *reason, const char *message)
{
    ctl_log(c, type[0] == 'W' ? 0 : 1, "event %s %s on BackupPolicy %s/%s: %s", type, reason,
            e->p.ns, e->p.name, message);
    struct util_buf key;
    util_buf_init(&key);
    util_buf_printf(&key, "%s%c%s%c%s%c%s%c%s", e->p.ns, CTL_EVENT_SEP, e->p.name, CTL_EVENT_SEP,
                    e->p.uid ? e->p.uid : "", CTL_EVENT_SEP, type, CTL_EVENT_SEP, reason);
    if (ctl_eventagg_offer(&c->events, key.data, message, uv_now(c->loop)))
        ctl_event_send(c, e->p.ns, e->p.name, e->p.uid ? e->p.uid : "", type, reason, message);
    else
        ctl_events_arm(c);
    util_buf_free(&key);
}

void ctl_events_flush(struct ctl *c)
{
    ctl_eventagg_take(&c->events, uv_now(c->loop), true, ctl_event_take_cb, c);
}

static void ctl_handle_closed_cb(uv_handle_t *h)
{
}

void ctl_events_init(struct ctl *c)
{
    ctl_eventagg_init(&c->events, CTL_EVENT_INTERVAL_MS, CTL_EVENT_BURST);
    uv_timer_init(c->loop, &c->events_timer);
    c->events_timer.data = c;
}

void ctl_events_stop(struct ctl *c)
{
    uv_close((uv_handle_t *)&c->events_timer, ctl_handle_closed_cb);
}

void ctl_events_close(struct ctl *c)
{
    ctl_eventagg_close(&c->events);
}
