/*
 * heap: the controller's one timer, as a binary min-heap of (when, id).
 *
 * Every (policy, host) pair has an id (a dense index into the controller's table) and
 * at most one pending time: its next run, its time_limit deadline or its overdue
 * check, whichever is earliest. One uv_timer_t is armed for the heap's top, so the
 * loop holds one timer whatever the number of hosts (a uv_timer_t is 152 bytes; an
 * entry here is 16, plus 4 for the id's position).
 *
 * Costs: set and remove are O(log n), peek O(1); the position table grows with the
 * largest id, which the controller keeps dense by reusing freed ids.
 */
#ifndef LODE_CTL_HEAP_H
#define LODE_CTL_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctl_heap_entry {
    int64_t when;
    uint32_t id;
    uint32_t seq; /* insertion order, so equal times pop first-in first-out */
};

struct ctl_heap {
    struct ctl_heap_entry *v;
    size_t n, cap;
    uint32_t *pos; /* pos[id]: index in v, or CTL_HEAP_NONE */
    size_t npos;
    uint32_t seq;
};

#define CTL_HEAP_NONE UINT32_MAX

void ctl_heap_init(struct ctl_heap *h);
void ctl_heap_close(struct ctl_heap *h);
/* Inserts id at time when, or moves it there when it is already in the heap. */
void ctl_heap_set(struct ctl_heap *h, uint32_t id, int64_t when);
/* Removes id; a no-op when it is not in the heap. */
void ctl_heap_remove(struct ctl_heap *h, uint32_t id);
bool ctl_heap_contains(const struct ctl_heap *h, uint32_t id);
/* The earliest entry, without removing it; false when empty. */
bool ctl_heap_peek(const struct ctl_heap *h, uint32_t *id, int64_t *when);
/* Removes and returns the earliest entry; false when empty. */
bool ctl_heap_pop(struct ctl_heap *h, uint32_t *id, int64_t *when);

#endif
