#include "queue.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define CTL_QUEUE_WAITING    0x1
#define CTL_QUEUE_PROCESSING 0x2
#define CTL_QUEUE_DIRTY      0x4

void ctl_queue_init(struct ctl_queue *q)
{
    memset(q, 0, sizeof(*q));
}

void ctl_queue_close(struct ctl_queue *q)
{
    free(q->ring);
    free(q->state);
    ctl_queue_init(q);
}

static void ctl_queue_push(struct ctl_queue *q, uint32_t id)
{
    if (q->len == q->cap) {
        /* Unroll the ring into a larger one so head starts at 0 again. */
        size_t ncap = q->cap ? q->cap * 2 : 16;
        uint32_t *ring = util_calloc(ncap, sizeof(*ring));
        for (size_t i = 0; i < q->len; i++)
            ring[i] = q->ring[(q->head + i) % q->cap];
        free(q->ring);
        q->ring = ring;
        q->cap = ncap;
        q->head = 0;
    }
    q->ring[(q->head + q->len) % q->cap] = id;
    q->len++;
    q->state[id] |= CTL_QUEUE_WAITING;
}

/* A pair being reconciled is only flagged: it is queued again when done, never twice at once. */
void ctl_queue_add(struct ctl_queue *q, uint32_t id)
{
    if (id >= q->nstate) {
        size_t old = q->nstate;
        q->state = util_grow(q->state, &q->nstate, (size_t)id + 1, 1);
        memset(q->state + old, 0, q->nstate - old);
    }
    if (q->state[id] & CTL_QUEUE_WAITING)
        return;
    if (q->state[id] & CTL_QUEUE_PROCESSING) {
        q->state[id] |= CTL_QUEUE_DIRTY;
        return;
    }
    ctl_queue_push(q, id);
}

bool ctl_queue_pop(struct ctl_queue *q, uint32_t *id)
{
    if (q->len == 0)
        return false;
    *id = q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
    q->state[*id] = CTL_QUEUE_PROCESSING;
    return true;
}

/* Requeues a pair that was marked while it was reconciled (its own writes came back). */
void ctl_queue_done(struct ctl_queue *q, uint32_t id)
{
    if (id >= q->nstate)
        return;
    bool dirty = q->state[id] & CTL_QUEUE_DIRTY;
    q->state[id] = 0;
    if (dirty)
        ctl_queue_push(q, id);
}

size_t ctl_queue_len(const struct ctl_queue *q)
{
    return q->len;
}
