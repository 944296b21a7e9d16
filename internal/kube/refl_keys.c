/*
 * The reflector's key set (kube_int.h): a version per "namespace/name", the list that last
 * saw it, and an older version the owner noted. Pure bookkeeping in one util/map.h map; a
 * lookup from a watch line builds its key on the stack.
 */
#include "kube/kube_int.h"

#include <stdlib.h>
#include <string.h>

/*
 * An object's version. older, when not 0, is the offset in rv[] of a second version: one
 * the owner noted (its own write) before it noted rv, whose watch event has not come yet.
 * Two writes in a row (a Backup's final status, then its retention) answer before their
 * events arrive; the first event must not be delivered over the second write's object.
 */
struct refl_entry {
    uint32_t gen;
    uint16_t older;
    char rv[]; /* NUL-terminated; then the older version, NUL-terminated, when older != 0 */
};

static struct refl_entry *refl_entry_new(uint32_t gen, const char *rv, const char *older)
{
    size_t n = strlen(rv) + 1;
    size_t m = older != NULL ? strlen(older) + 1 : 0;
    if (n > UINT16_MAX)
        m = 0;
    struct refl_entry *e = util_malloc(sizeof(*e) + n + m);
    e->gen = gen;
    e->older = m > 0 ? (uint16_t)n : 0;
    memcpy(e->rv, rv, n);
    if (m > 0)
        memcpy(e->rv + n, older, m);
    return e;
}

void refl_keys_init(struct refl_keys *k)
{
    util_map_init(&k->map);
    k->gen = 0;
}

void refl_keys_close(struct refl_keys *k)
{
    size_t it = 0;
    const char *key;
    void *v;
    while (util_map_next(&k->map, &it, &key, &v))
        free(v);
    util_map_close(&k->map);
}

enum refl_change refl_keys_upsert(struct refl_keys *k, const char *ns, const char *name,
                                  const char *rv)
{
    char *key = util_asprintf("%s/%s", ns, name);
    struct refl_entry *e = util_map_get(&k->map, key);
    enum refl_change change = REFL_SAME;

    if (e == NULL) {
        util_map_set(&k->map, key, refl_entry_new(k->gen, rv, NULL));
        change = REFL_ADDED;
    } else if (strcmp(e->rv, rv) != 0) {
        free(util_map_set(&k->map, key, refl_entry_new(k->gen, rv, NULL)));
        change = REFL_UPDATED;
    } else {
        e->gen = k->gen;
    }
    free(key);
    return change;
}

bool refl_keys_forget(struct refl_keys *k, const char *ns, const char *name)
{
    char *key = util_asprintf("%s/%s", ns, name);
    struct refl_entry *e = util_map_del(&k->map, key);
    free(key);
    free(e);
    return e != NULL;
}

void refl_keys_note(struct refl_keys *k, const char *ns, const char *name, const char *rv)
{
    char *key = util_asprintf("%s/%s", ns != NULL ? ns : "", name);
    struct refl_entry *e = util_map_get(&k->map, key);
    /* A known key keeps the list that saw it; a new one counts as seen by the current one
     * (so a complete list without it does not report a delete, as before it was noted). */
    /* The version held before is kept as the older one: if it was a write of the owner's
     * whose event is still coming, that event is not delivered either. */
    if (e == NULL || strcmp(e->rv, rv) != 0)
        free(util_map_set(
            &k->map, key,
            refl_entry_new(e != NULL ? e->gen : k->gen, rv, e != NULL ? e->rv : NULL)));
    free(key);
}

bool refl_keys_held(struct refl_keys *k, const char *ns, size_t ns_len, const char *name,
                    size_t name_len, const char *rv, size_t rv_len)
{
    char key[512];
    if (ns_len + 1 + name_len >= sizeof(key))
        return false;
    memcpy(key, ns != NULL ? ns : "", ns_len);
    key[ns_len] = '/';
    memcpy(key + ns_len + 1, name, name_len);
    key[ns_len + 1 + name_len] = '\0';
    struct refl_entry *e = util_map_get(&k->map, key);
    if (e == NULL)
        return false;
    bool held = strlen(e->rv) == rv_len && memcmp(e->rv, rv, rv_len) == 0;
    /* An older write of the owner's: the object it holds is newer still. Its event came,
     * so the older version is dropped. */
    if (!held && e->older != 0 && strlen(e->rv + e->older) == rv_len &&
        memcmp(e->rv + e->older, rv, rv_len) == 0) {
        held = true;
        e->older = 0;
    }
    if (held)
        e->gen = k->gen;
    return held;
}

char **refl_keys_stale(const struct refl_keys *k, size_t *n)
{
    char **stale = NULL;
    size_t cap = 0, it = 0;
    const char *key;
    void *v;

    *n = 0;
    while (util_map_next(&k->map, &it, &key, &v)) {
        if (((struct refl_entry *)v)->gen != k->gen) {
            stale = util_grow(stale, &cap, *n + 1, sizeof(*stale));
            stale[(*n)++] = util_strdup(key);
        }
    }
    return stale;
}
