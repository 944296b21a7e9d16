/*
 * eventagg: Events about one object with one type and reason, paced and combined, as the
 * Kubernetes event recorder aggregates similar Events (docs/operator.md, "Requests a run
 * makes"). Each key (object, type, reason) has a token bucket: a few Events go at once,
 * then one every interval; those offered in between are held and go as one Event whose
 * message lists them ("3 similar Events combined: ..."), so a slot of thousands of runs
 * sends tens of Events, not thousands, while a quiet cluster sees every Event at once.
 *
 * Pure: the caller supplies the clock and sends what comes out. Costs: per key a small
 * struct and the held messages, bounded to about one Event's message (the rest are only
 * counted); a key is forgotten once nothing is held and its bucket is full again.
 */
#ifndef LODE_CTL_EVENTAGG_H
#define LODE_CTL_EVENTAGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/map.h"

/*
 * A pace: a burst of writes at once, then one per interval (a token bucket counted in ms
 * of credit). The policy status writes of status.c go at one, the Events below at another.
 * Zeroed: never used, the credit is whole.
 */
struct ctl_pace {
    uint64_t credit, at; /* ms of credit as of at */
    bool used;
};
/* How long to wait before the next write may go at now_ms; 0: now. Spends nothing. */
uint64_t ctl_pace_wait(struct ctl_pace *p, uint64_t interval_ms, unsigned burst, uint64_t now_ms);
/* A write went: it costs one interval of credit (what is left, when less). */
void ctl_pace_spend(struct ctl_pace *p, uint64_t interval_ms);

/*
 * A run whose Backup was created more than this late (after its run time) while requests
 * wait for the client-side rate limit tells that its slot's runs queue behind the limit.
 */
#define CTL_QUEUE_LATE_S 5

/*
 * True when a run of the slot at slot_time, late_s late with queued requests waiting for
 * the rate limit, is the first of its slot to show it queuing (warned_slot: the last slot
 * warned about, updated); msg then gets the RateLimited Warning's message, which names the
 * rule that keeps a slot on time (docs/operator.md).
 */
bool ctl_queue_warning(double late_s, size_t queued, double qps, int64_t slot_time,
                       int64_t *warned_slot, char *msg, size_t size);

/* The held messages are kept while the combined message stays under this many bytes. */
#define CTL_EVENTAGG_MESSAGE_MAX 900

struct ctl_eventagg {
    struct util_map keys; /* key -> its state (eventagg.c) */
    uint64_t interval_ms; /* one Event per key per interval, after the burst */
    unsigned burst;
};

void ctl_eventagg_init(struct ctl_eventagg *a, uint64_t interval_ms, unsigned burst);
void ctl_eventagg_close(struct ctl_eventagg *a);

/*
 * Offers one Event under key at now_ms: true when it goes now (the caller sends it as it
 * is), false when it is held for a combined Event (ctl_eventagg_take).
 */
bool ctl_eventagg_offer(struct ctl_eventagg *a, const char *key, const char *message,
                        uint64_t now_ms);

/* When the first held Event may go (ms, the caller's clock), or UINT64_MAX when none is. */
uint64_t ctl_eventagg_due(const struct ctl_eventagg *a);

/*
 * Hands each key whose held Events may go at now_ms (every key that holds any, with all)
 * to cb, with how many Events were combined and their combined message; forgets idle keys.
 */
typedef void (*ctl_eventagg_cb)(const char *key, size_t n, const char *message, void *arg);
void ctl_eventagg_take(struct ctl_eventagg *a, uint64_t now_ms, bool all, ctl_eventagg_cb cb,
                       void *arg);

#endif
