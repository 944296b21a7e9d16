#include "heap.h"

#include <stdlib.h>

#include "util/util.h"

void ctl_heap_init(struct ctl_heap *h)
{
    h->v = NULL;
    h->n = h->cap = 0;
    h->pos = NULL;
    h->npos = 0;
    h->seq = 0;
}

void ctl_heap_close(struct ctl_heap *h)
{
    free(h->v);
    free(h->pos);
    ctl_heap_init(h);
}

static bool ctl_heap_less(const struct ctl_heap_entry *a, const struct ctl_heap_entry *b)
{
    if (a->when != b->when)
        return a->when < b->when;
    /* seq wraps after 2^32 insertions; the difference keeps the order right within that. */
    return (int32_t)(a->seq - b->seq) < 0;
}

/* Every move goes through here so the id -> position index never goes stale. */
static void ctl_heap_place(struct ctl_heap *h, size_t i, struct ctl_heap_entry e)
{
    h->v[i] = e;
    h->pos[e.id] = (uint32_t)i;
}

static void ctl_heap_up(struct ctl_heap *h, size_t i)
{
    struct ctl_heap_entry e = h->v[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!ctl_heap_less(&e, &h->v[parent]))
            break;
        ctl_heap_place(h, i, h->v[parent]);
        i = parent;
    }
    ctl_heap_place(h, i, e);
}

static void ctl_heap_down(struct ctl_heap *h, size_t i)
{
    struct ctl_heap_entry e = h->v[i];
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        const struct ctl_heap_entry *bv = &e;
        if (l < h->n && ctl_heap_less(&h->v[l], bv)) {
            best = l;
            bv = &h->v[l];
        }
        if (l + 1 < h->n && ctl_heap_less(&h->v[l + 1], bv))
            best = l + 1;
        if (best == i)
            break;
        ctl_heap_place(h, i, h->v[best]);
        i = best;
    }
    ctl_heap_place(h, i, e);
}

bool ctl_heap_contains(const struct ctl_heap *h, uint32_t id)
{
    return id < h->npos && h->pos[id] != CTL_HEAP_NONE;
}

/* Set, not push: a pair has one wake time, so a later reconcile moves it instead of adding one. */
void ctl_heap_set(struct ctl_heap *h, uint32_t id, int64_t when)
{
    if (id >= h->npos) {
        size_t old = h->npos;
        h->pos = util_grow(h->pos, &h->npos, (size_t)id + 1, sizeof(*h->pos));
        for (size_t i = old; i < h->npos; i++)
            h->pos[i] = CTL_HEAP_NONE;
    }
    struct ctl_heap_entry e = {when, id, h->seq++};
    if (h->pos[id] != CTL_HEAP_NONE) {
        size_t i = h->pos[id];
        h->v[i] = e;
        ctl_heap_up(h, i);
        ctl_heap_down(h, h->pos[id]);
        return;
    }
    h->v = util_grow(h->v, &h->cap, h->n + 1, sizeof(*h->v));
    h->v[h->n] = e;
    h->pos[id] = (uint32_t)h->n;
    h->n++;
    ctl_heap_up(h, h->n - 1);
}

void ctl_heap_remove(struct ctl_heap *h, uint32_t id)
{
    if (!ctl_heap_contains(h, id))
        return;
    size_t i = h->pos[id];
    h->pos[id] = CTL_HEAP_NONE;
    h->n--;
    if (i == h->n)
        return;
    uint32_t moved = h->v[h->n].id;
    ctl_heap_place(h, i, h->v[h->n]);
    ctl_heap_up(h, i);
    ctl_heap_down(h, h->pos[moved]);
}

bool ctl_heap_peek(const struct ctl_heap *h, uint32_t *id, int64_t *when)
{
    if (h->n == 0)
        return false;
    *id = h->v[0].id;
    *when = h->v[0].when;
    return true;
}

bool ctl_heap_pop(struct ctl_heap *h, uint32_t *id, int64_t *when)
{
    if (!ctl_heap_peek(h, id, when))
        return false;
    ctl_heap_remove(h, *id);
    return true;
}
