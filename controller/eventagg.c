/*
 * Events paced per key and combined, and the pace itself (eventagg.h).
 */
#include "eventagg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

struct ctl_eventagg_key {
    struct ctl_pace pace;
    uint64_t last_ms;     /* the last offer or send */
    uint64_t due_ms;      /* when the held Events may go (valid while held > 0) */
    size_t held, omitted; /* held Events; those of them left out of msg */
    struct util_buf msg;  /* the held messages, "; " between them */
};

uint64_t ctl_pace_wait(struct ctl_pace *p, uint64_t interval_ms, unsigned burst, uint64_t now_ms)
{
    uint64_t full = interval_ms * (burst > 0 ? burst : 1);
    if (!p->used || now_ms >= p->at + full)
        p->credit = full;
    else if (now_ms > p->at)
        p->credit += now_ms - p->at;
    if (p->credit > full)
        p->credit = full;
    if (now_ms > p->at || !p->used)
        p->at = now_ms;
    p->used = true;
    return p->credit >= interval_ms ? 0 : interval_ms - p->credit;
}

void ctl_pace_spend(struct ctl_pace *p, uint64_t interval_ms)
{
    p->credit -= p->credit >= interval_ms ? interval_ms : p->credit;
}

void ctl_eventagg_init(struct ctl_eventagg *a, uint64_t interval_ms, unsigned burst)
{
    util_map_init(&a->keys);
    a->interval_ms = interval_ms > 0 ? interval_ms : 1;
    a->burst = burst > 0 ? burst : 1;
}

static void ctl_eventagg_key_free(struct ctl_eventagg_key *k)
{
    util_buf_free(&k->msg);
    free(k);
}

void ctl_eventagg_close(struct ctl_eventagg *a)
{
    size_t it = 0;
    const char *key;
    void *v;
    while (util_map_next(&a->keys, &it, &key, &v))
        ctl_eventagg_key_free(v);
    util_map_close(&a->keys);
}

bool ctl_eventagg_offer(struct ctl_eventagg *a, const char *key, const char *message,
                        uint64_t now_ms)
{
    struct ctl_eventagg_key *k = util_map_get(&a->keys, key);
    if (k == NULL) {
        k = util_calloc(1, sizeof(*k));
        util_buf_init(&k->msg);
        util_map_set(&a->keys, key, k);
    }
    k->last_ms = now_ms;
    /* Once Events are held, the next ones join them: they go in order, combined. */
    if (k->held == 0) {
        uint64_t wait = ctl_pace_wait(&k->pace, a->interval_ms, a->burst, now_ms);
        if (wait == 0) {
            ctl_pace_spend(&k->pace, a->interval_ms);
            return true;
        }
        k->due_ms = now_ms + wait;
    }
    k->held++;
    size_t len = strlen(message);
    if (k->msg.len + len + 2 <= CTL_EVENTAGG_MESSAGE_MAX) {
        if (k->msg.len > 0)
            util_buf_puts(&k->msg, "; ");
        util_buf_append(&k->msg, message, len);
    } else {
        k->omitted++;
    }
    return false;
}

uint64_t ctl_eventagg_due(const struct ctl_eventagg *a)
{
    uint64_t due = UINT64_MAX;
    size_t it = 0;
    const char *key;
    void *v;
    while (util_map_next(&a->keys, &it, &key, &v)) {
        const struct ctl_eventagg_key *k = v;
        if (k->held > 0 && k->due_ms < due)
            due = k->due_ms;
    }
    return due;
}

void ctl_eventagg_take(struct ctl_eventagg *a, uint64_t now_ms, bool all, ctl_eventagg_cb cb,
                       void *arg)
{
    size_t it = 0;
    const char *key;
    void *v;
    /* The keys to forget are collected first: the map is not changed while walked. */
    char **idle = NULL;
    size_t nidle = 0, cap = 0;
    uint64_t full_ms = a->interval_ms * a->burst;
    while (util_map_next(&a->keys, &it, &key, &v)) {
        struct ctl_eventagg_key *k = v;
        if (k->held > 0 && (all || k->due_ms <= now_ms)) {
            /* The token it waited for; the combined Event is one send. */
            (void)ctl_pace_wait(&k->pace, a->interval_ms, a->burst, now_ms);
            ctl_pace_spend(&k->pace, a->interval_ms);
            struct util_buf m;
            util_buf_init(&m);
            if (k->held > 1)
                util_buf_printf(&m, "%zu similar Events combined: ", k->held);
            if (k->msg.len > 0)
                util_buf_append(&m, k->msg.data, k->msg.len);
            if (k->omitted > 0)
                util_buf_printf(&m, "; and %zu more", k->omitted);
            cb(key, k->held, m.data != NULL ? m.data : "", arg);
            util_buf_free(&m);
            k->held = k->omitted = 0;
            util_buf_free(&k->msg);
            util_buf_init(&k->msg);
            k->last_ms = now_ms;
        } else if (k->held == 0 && now_ms >= k->last_ms + full_ms) {
            idle = util_grow(idle, &cap, nidle + 1, sizeof(*idle));
            idle[nidle++] = util_strdup(key);
        }
    }
    for (size_t i = 0; i < nidle; i++) {
        ctl_eventagg_key_free(util_map_del(&a->keys, idle[i]));
        free(idle[i]);
    }
    free(idle);
}

bool ctl_queue_warning(double late_s, size_t queued, double qps, int64_t slot_time,
                       int64_t *warned_slot, char *msg, size_t size)
{
    char at[UTIL_TIME_BUF];
    if (late_s < CTL_QUEUE_LATE_S || queued == 0 || slot_time == *warned_slot)
        return false;
    *warned_slot = slot_time;
    util_format_utc(slot_time, at, sizeof(at));
    snprintf(msg, size,
             "runs of the slot at %s start late (one %.0f s after its run time): they queue "
             "behind the controller's client-side rate limit (--qps %g, %zu requests waiting); "
             "a slot stays on time while runs x requests per run / jitter window <= --qps "
             "(docs/operator.md, \"Requests a run makes\")",
             at, late_s, qps, queued);
    return true;
}
