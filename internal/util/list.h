/*
 * list: one intrusive doubly linked list for every module (libuv's queue and Linux's
 * list_head are the shape).
 *
 * A list is a `struct util_list` head; an element embeds a `struct util_list` link and is
 * found from it with util_list_entry. The head and every link form one ring, so insertion
 * and removal are a few pointer writes, need no branch on "first" or "last", and never
 * allocate. An unlinked link points at itself, so util_list_linked says whether an
 * element is on a list and removing twice is harmless.
 *
 * Costs: two pointers per element and per head; no count is kept (util_list_len walks).
 */
#ifndef LODE_UTIL_LIST_H
#define LODE_UTIL_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct util_list {
    struct util_list *prev, *next;
};

/* The element of type `type` whose member `member` is the link `ptr`. */
#define util_list_entry(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* Iteration over links; `tmp` lets the body remove `pos`. */
#define util_list_for_each_safe(pos, tmp, head)                                                    \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);                               \
         (pos) = (tmp), (tmp) = (pos)->next)
#define util_list_for_each(pos, head)                                                              \
    for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/* Makes a head empty, or a link unlinked. */
static inline void util_list_init(struct util_list *l)
{
    l->prev = l->next = l;
}

static inline bool util_list_empty(const struct util_list *head)
{
    return head->next == head;
}

/* True when the link is on some list (it was initialised, then inserted). */
static inline bool util_list_linked(const struct util_list *link)
{
    return link->next != link;
}

static inline void util_list__insert(struct util_list *link, struct util_list *prev,
                                     struct util_list *next)
{
    link->prev = prev;
    link->next = next;
    prev->next = link;
    next->prev = link;
}

/* Adds at the front (a stack) or at the back (a FIFO). */
static inline void util_list_push_front(struct util_list *head, struct util_list *link)
{
    util_list__insert(link, head, head->next);
}

static inline void util_list_push_back(struct util_list *head, struct util_list *link)
{
    util_list__insert(link, head->prev, head);
}

/* Unlinks and leaves the link unlinked; harmless on an unlinked link. */
static inline void util_list_remove(struct util_list *link)
{
    link->prev->next = link->next;
    link->next->prev = link->prev;
    link->prev = link->next = link;
}

/* The first and last links, or NULL on an empty list. */
static inline struct util_list *util_list_first(const struct util_list *head)
{
    return head->next == head ? NULL : head->next;
}

static inline struct util_list *util_list_last(const struct util_list *head)
{
    return head->prev == head ? NULL : head->prev;
}

/* Walks the list: O(n). */
static inline size_t util_list_len(const struct util_list *head)
{
    size_t n = 0;
    for (const struct util_list *p = head->next; p != head; p = p->next)
        n++;
    return n;
}

#endif
