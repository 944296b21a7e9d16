#include "util/map.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

uint64_t util_hash(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void util_map_init(struct util_map *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->len = 0;
}

void util_map_close(struct util_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    free(m->slots);
    util_map_init(m);
}

static size_t util_map_find(const struct util_map *m, const char *key, bool *found)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)util_hash(key, strlen(key)) & mask;
    while (m->slots[i].key != NULL) {
        if (strcmp(m->slots[i].key, key) == 0) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
    *found = false;
    return i;
}

void *util_map_get(const struct util_map *m, const char *key)
{
    bool found;
    if (m->len == 0)
        return NULL;
    size_t i = util_map_find(m, key, &found);
    return found ? m->slots[i].value : NULL;
}

static void util_map_resize(struct util_map *m, size_t cap)
{
    struct util_map_slot *old = m->slots;
    size_t oldcap = m->cap;
    m->slots = util_calloc(cap, sizeof(*m->slots));
    m->cap = cap;
    for (size_t i = 0; i < oldcap; i++) {
        if (old[i].key == NULL)
            continue;
        bool found;
        size_t j = util_map_find(m, old[i].key, &found);
        m->slots[j] = old[i];
    }
    free(old);
}

void *util_map_set(struct util_map *m, const char *key, void *value)
{
    bool found;
    if ((m->len + 1) * 4 > m->cap * 3)
        util_map_resize(m, m->cap ? m->cap * 2 : 16);
    size_t i = util_map_find(m, key, &found);
    if (found) {
        void *prev = m->slots[i].value;
        m->slots[i].value = value;
        return prev;
    }
    m->slots[i].key = util_strdup(key);
    m->slots[i].value = value;
    m->len++;
    return NULL;
}

void *util_map_del(struct util_map *m, const char *key)
{
    bool found;
    if (m->len == 0)
        return NULL;
    size_t i = util_map_find(m, key, &found);
    if (!found)
        return NULL;
    void *value = m->slots[i].value;
    free(m->slots[i].key);
    m->slots[i].key = NULL;
    m->len--;
    /* Backward shift: move later members of the cluster into the hole when their home allows. */
    size_t mask = m->cap - 1;
    size_t hole = i;
    for (size_t j = (i + 1) & mask; m->slots[j].key != NULL; j = (j + 1) & mask) {
        size_t home = (size_t)util_hash(m->slots[j].key, strlen(m->slots[j].key)) & mask;
        /* j may move to hole when home is not in the cyclic range (hole, j]. */
        bool in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!in_range) {
            m->slots[hole] = m->slots[j];
            m->slots[j].key = NULL;
            m->slots[j].value = NULL;
            hole = j;
        }
    }
    return value;
}

bool util_map_next(const struct util_map *m, size_t *iter, const char **key, void **value)
{
    while (*iter < m->cap) {
        size_t i = (*iter)++;
        if (m->slots[i].key != NULL) {
            *key = m->slots[i].key;
            *value = m->slots[i].value;
            return true;
        }
    }
    return false;
}
