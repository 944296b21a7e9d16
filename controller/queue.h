/*
 * queue: the controller's work queue of keys, de-duplicated, level-triggered.
 *
 * A key is a dense id (a policy's index). Adding a key that is already waiting does
 * nothing; adding one that is being processed marks it dirty, and ctl_queue_done()
 * puts it back, so a change that arrives during a reconcile is never lost and a key
 * is never reconciled twice at once. This is client-go's workqueue contract, on
 * one thread, without locks.
 *
 * Costs: a ring of ids and one byte of state per id; add, pop and done are O(1)
 * amortised.
 */
#ifndef LODE_CTL_QUEUE_H
#define LODE_CTL_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctl_queue {
    uint32_t *ring;
    size_t head, len, cap;
    uint8_t *state; /* per id: CTL_QUEUE_* flags */
    size_t nstate;
};

void ctl_queue_init(struct ctl_queue *q);
void ctl_queue_close(struct ctl_queue *q);
void ctl_queue_add(struct ctl_queue *q, uint32_t id);
/* Takes the oldest waiting key and marks it in process; false when none waits. */
bool ctl_queue_pop(struct ctl_queue *q, uint32_t *id);
/* Ends processing of id; re-queues it when it was added meanwhile. */
void ctl_queue_done(struct ctl_queue *q, uint32_t id);
size_t ctl_queue_len(const struct ctl_queue *q);

#endif
