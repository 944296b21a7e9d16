/*
 * map: a string-keyed hash map with open addressing, for the controller's caches and the
 * reflectors' key sets.
 *
 * Keys are copied into the map; values are caller-owned pointers. Deleting uses
 * backward-shift deletion, so there are no tombstones and lookups stay short after
 * churn (nodes and Backups come and go all day).
 *
 * Costs: 16 bytes per slot plus the key; the table doubles at 3/4 load, so about 21
 * bytes per entry on average plus the key's length. FNV-1a hashing.
 */
#ifndef LODE_UTIL_MAP_H
#define LODE_UTIL_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct util_map_slot {
    char *key; /* NULL when empty */
    void *value;
};

struct util_map {
    struct util_map_slot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t len;
};

void util_map_init(struct util_map *m);
/* Frees the keys and the table, not the values. */
void util_map_close(struct util_map *m);
void *util_map_get(const struct util_map *m, const char *key);
/* Sets key to value; returns the previous value or NULL. */
void *util_map_set(struct util_map *m, const char *key, void *value);
/* Removes key; returns its value or NULL. */
void *util_map_del(struct util_map *m, const char *key);

/* Iteration: for (size_t i = 0; util_map_next(m, &i, &k, &v);) ... ; no changes meanwhile. */
bool util_map_next(const struct util_map *m, size_t *iter, const char **key, void **value);

uint64_t util_hash(const void *data, size_t len);

#endif
