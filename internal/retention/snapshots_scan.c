/*
 * The snapshot list of `lode forget --snapshots`, read in one pass without a
 * tree (docs/retention.md). See ret_snapshots_scan() in retention.h.
 *
 * The scanner knows exactly one shape: an array of flat objects whose keys
 * are id, time, incomplete and suspicious, with printable ASCII strings and no
 * escapes. That is what Lodestore, jq and every script write. Anything else
 * (an escape, a non-ASCII byte, a number, an unknown or repeated key, a bad
 * time, a repeated id, a syntax error) is not judged here: the whole input
 * goes to ret_snapshots_from_json(), the jansson reader, which gives the same
 * answer or the same error it always gave. So the scanner can only be faster,
 * never different; the fuzz target fuzz_snapshots_scan checks exactly that.
 *
 * Costs: one pass over the input, no allocation per item. Memory is the list
 * itself, 24 bytes a snapshot plus its id and a NUL, and a set of 8-byte slots
 * to find repeated ids (16 to 32 bytes a snapshot, 48 while it doubles). The input
 * is read front to back once, and every RET_SCAN_WINDOW bytes the caller is told
 * how far the scan got, so it can drop pages it will not need again.
 */
#include <stdlib.h>
#include <string.h>

#include "retention/retention.h"

struct ret_scan {
    const char *p, *end;
    struct ret_snapshot *v;
    size_t n, cap;
    char *ids; /* ids with their NULs; v[i].id holds an offset into it until the end */
    size_t ids_len, ids_cap;
    uint64_t *slots; /* hash << 32 | index + 1 of a snapshot; 0 empty */
    size_t mask;
};

static uint32_t ret_scan_hash(const char *s, size_t len)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a, then a finaliser for the low bits */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    return (uint32_t)(h >> 32);
}

static const char *ret_scan_id(const struct ret_scan *s, size_t i)
{
    return s->ids + (uintptr_t)s->v[i].id;
}

/*
 * Adds snapshot i's id (of len bytes); false when the id is already there. A
 * slot holds the id's 32-bit hash above its index + 1, so a probe compares
 * strings only when the hashes agree, and growing the table rehashes nothing.
 */
static bool ret_scan_add_id(struct ret_scan *s, size_t i, size_t len)
{
    if (s->slots == NULL || 2 * (i + 1) > s->mask + 1) {
        size_t cap = s->slots ? 2 * (s->mask + 1) : 1024;
        uint64_t *slots = util_calloc(cap, sizeof(*slots));
        for (size_t k = 0; s->slots && k <= s->mask; k++) {
            if (s->slots[k] == 0)
                continue;
            size_t j = (s->slots[k] >> 32) & (cap - 1);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = s->slots[k];
        }
        free(s->slots);
        s->slots = slots;
        s->mask = cap - 1;
    }
    const char *id = ret_scan_id(s, i);
    uint64_t h = ret_scan_hash(id, len);
    size_t j = h & s->mask;
    for (; s->slots[j]; j = (j + 1) & s->mask)
        if (s->slots[j] >> 32 == h && strcmp(ret_scan_id(s, (uint32_t)s->slots[j] - 1), id) == 0)
            return false;
    s->slots[j] = h << 32 | (uint64_t)(i + 1);
    return true;
}

static void ret_scan_ws(struct ret_scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

static bool ret_scan_char(struct ret_scan *s, char c)
{
    ret_scan_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A string of printable ASCII without escapes; false on anything else. */
static bool ret_scan_string(struct ret_scan *s, const char **str, size_t *len)
{
    if (!ret_scan_char(s, '"'))
        return false;
    const char *start = s->p;
    while (s->p < s->end && *s->p != '"') {
        unsigned char c = (unsigned char)*s->p;
        if (c < 0x20 || c > 0x7e || c == '\\')
            return false;
        s->p++;
    }
    if (s->p == s->end)
        return false;
    *str = start;
    *len = (size_t)(s->p - start);
    s->p++;
    return true;
}

static bool ret_scan_word(struct ret_scan *s, const char *w, size_t len)
{
    if ((size_t)(s->end - s->p) < len || memcmp(s->p, w, len) != 0)
        return false;
    s->p += len;
    return true;
}

/* true or false, followed by something that cannot continue a word. */
static bool ret_scan_bool(struct ret_scan *s, bool *out)
{
    ret_scan_ws(s);
    if (ret_scan_word(s, "true", 4))
        *out = true;
    else if (ret_scan_word(s, "false", 5))
        *out = false;
    else
        return false;
    return s->p < s->end && (*s->p == ',' || *s->p == '}' || *s->p == ' ' || *s->p == '\n' ||
                             *s->p == '\r' || *s->p == '\t');
}

/* One item; false sends the whole input to the jansson reader. */
static bool ret_scan_item(struct ret_scan *s)
{
    struct ret_snapshot snap = {0};
    const char *id = NULL, *key;
    size_t id_len = 0, key_len;
    unsigned seen = 0;

    if (!ret_scan_char(s, '{'))
        return false;
    if (ret_scan_char(s, '}'))
        return false; /* no id: the reader says so */
    do {
        unsigned bit;
        if (!ret_scan_string(s, &key, &key_len) || !ret_scan_char(s, ':'))
            return false;
        if (key_len == 2 && memcmp(key, "id", 2) == 0)
            bit = 1;
        else if (key_len == 4 && memcmp(key, "time", 4) == 0)
            bit = 2;
        else if (key_len == 10 && memcmp(key, "incomplete", 10) == 0)
            bit = 4;
        else if (key_len == 10 && memcmp(key, "suspicious", 10) == 0)
            bit = 8;
        else if (key_len == 6 && memcmp(key, "pinned", 6) == 0)
            bit = 16;
        else
            return false;
        if (seen & bit)
            return false;
        seen |= bit;
        if (bit == 1) {
            if (!ret_scan_string(s, &id, &id_len) || id_len == 0)
                return false;
        } else if (bit == 2) {
            const char *t;
            size_t t_len;
            char buf[64];
            if (!ret_scan_string(s, &t, &t_len) || t_len >= sizeof(buf))
                return false;
            memcpy(buf, t, t_len);
            buf[t_len] = '\0';
            if (util_parse_rfc3339(buf, &snap.time, NULL) != 0)
                return false;
        } else if (!ret_scan_bool(s, bit == 4   ? &snap.incomplete
                                     : bit == 8 ? &snap.suspicious
                                                : &snap.pinned)) {
            return false;
        }
    } while (ret_scan_char(s, ','));
    if (!ret_scan_char(s, '}') || (seen & 3) != 3)
        return false;

    s->ids = util_grow(s->ids, &s->ids_cap, s->ids_len + id_len + 1, 1);
    memcpy(s->ids + s->ids_len, id, id_len);
    s->ids[s->ids_len + id_len] = '\0';
    snap.id = (const char *)(uintptr_t)s->ids_len; /* an offset until the block stops moving */
    s->ids_len += id_len + 1;
    s->v = util_grow(s->v, &s->cap, s->n + 1, sizeof(*s->v));
    s->v[s->n] = snap;
    if (s->n >= UINT32_MAX - 1 || !ret_scan_add_id(s, s->n, id_len))
        return false;
    s->n++;
    return true;
}

static bool ret_scan_all(struct ret_scan *s, const char *data, void (*progress_cb)(size_t, void *),
                         void *arg)
{
    size_t next = RET_SCAN_WINDOW;

    if (!ret_scan_char(s, '['))
        return false;
    if (!ret_scan_char(s, ']')) {
        do {
            if (!ret_scan_item(s))
                return false;
            if (progress_cb != NULL && (size_t)(s->p - data) >= next) {
                progress_cb((size_t)(s->p - data), arg);
                next = (size_t)(s->p - data) + RET_SCAN_WINDOW;
            }
        } while (ret_scan_char(s, ','));
        if (!ret_scan_char(s, ']'))
            return false;
    }
    ret_scan_ws(s);
    return s->p == s->end;
}

int ret_snapshots_scan(struct ret_snapshot_list *out, const char *data, size_t len,
                       void (*progress_cb)(size_t consumed, void *arg), void *arg,
                       struct util_err *err)
{
    struct ret_scan s = {.p = data, .end = data + len};
    bool ok = ret_scan_all(&s, data, progress_cb, arg);

    free(s.slots);
    if (!ok) {
        free(s.v);
        free(s.ids);
        return ret_snapshots_from_json(out, data, len, err);
    }
    for (size_t i = 0; i < s.n; i++)
        s.v[i].id = ret_scan_id(&s, i);
    memset(out, 0, sizeof(*out));
    out->v = s.v != NULL ? s.v : util_calloc(1, sizeof(*out->v));
    out->n = s.n;
    out->ids = s.ids != NULL ? s.ids : util_calloc(1, 1);
    return 0;
}
