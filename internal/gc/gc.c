/*
 * The garbage collection rule. See gc.h for the rule and its costs; this file
 * adds how the two sets are kept: sorted arrays, so that a lookup is a binary
 * search and memory is the ids themselves, with no hash table beside them.
 */
#include <stdlib.h>
#include <string.h>

#include "gc/gc.h"

bool gc_run_live(const struct gc_run *run, int64_t now)
{
    if (!run->read)
        return false;
    /* Saturating: a hostile maxRuntime must not wrap into the past. */
    int64_t end;
    int64_t runtime = run->max_runtime > 0 ? run->max_runtime : 0;
    if (__builtin_add_overflow(run->time, runtime, &end) ||
        __builtin_add_overflow(end, GC_MARGIN_SECONDS, &end))
        return true;
    return end > now;
}

int64_t gc_window(int64_t policy_max_runtime, const struct gc_run *runs, size_t n, int64_t now)
{
    int64_t longest = policy_max_runtime > 0 ? policy_max_runtime : 0;
    for (size_t i = 0; i < n; i++)
        if (gc_run_live(&runs[i], now) && runs[i].max_runtime > longest)
            longest = runs[i].max_runtime;
    if (longest > INT64_MAX / 2)
        longest = INT64_MAX / 2;
    return longest + GC_MARGIN_SECONDS;
}

int64_t gc_cutoff(int64_t now, int64_t window)
{
    /* A window wider than the epoch protects everything: the cutoff saturates low. */
    int64_t cutoff;
    if (__builtin_sub_overflow(now, window, &cutoff))
        return INT64_MIN;
    return cutoff;
}

enum gc_verdict gc_may_delete(int64_t time, int64_t cutoff, bool referenced)
{
    if (time >= cutoff)
        return GC_KEEP_YOUNG;
    return referenced ? GC_KEEP_REFERENCED : GC_DELETE;
}

enum gc_verdict gc_may_abort_upload(int64_t initiated, int64_t cutoff)
{
    if (initiated < 0)
        return GC_KEEP_YOUNG; /* when it began is unknown: never aborted */
    return gc_may_delete(initiated, cutoff, false);
}

/* ---- snapshot ids ---- */

static int gc_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void gc_idset_add(struct gc_idset *set, const char *id)
{
    set->v = util_grow(set->v, &set->cap, set->n + 1, sizeof(*set->v));
    set->v[set->n++] = id;
}

bool gc_idset_has(const struct gc_idset *set, const char *id)
{
    return set->n && bsearch(&id, set->v, set->n, sizeof(*set->v), gc_cmp_str) != NULL;
}

void gc_idset_free(struct gc_idset *set)
{
    free(set->v);
    memset(set, 0, sizeof(*set));
}

int gc_protected_ids(const char *const *manifests, size_t nmanifests, const struct gc_run *runs,
                     size_t nruns, int64_t cutoff, struct gc_idset *out, struct util_err *err)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < nmanifests; i++)
        gc_idset_add(out, manifests[i]);
    for (size_t i = 0; i < nruns; i++) {
        if (runs[i].time <= cutoff)
            continue;
        if (!runs[i].read) {
            gc_idset_free(out);
            return util_err_set(err, UTIL_EINVAL,
                                "run record %s is newer than the cutoff but was not read: its "
                                "parent is unknown, so nothing can be deleted",
                                runs[i].id);
        }
        if (runs[i].parent != NULL && runs[i].parent[0] != '\0')
            gc_idset_add(out, runs[i].parent);
    }
    if (out->n > 1) {
        size_t w = 1;
        qsort(out->v, out->n, sizeof(*out->v), gc_cmp_str);
        for (size_t r = 1; r < out->n; r++)
            if (strcmp(out->v[r], out->v[w - 1]) != 0)
                out->v[w++] = out->v[r];
        out->n = w;
    }
    return 0;
}

/* ---- pack ids ---- */

static int gc_cmp_pack(const void *a, const void *b)
{
    return memcmp(a, b, GC_PACK_ID_LEN);
}

/* Sorts the unsorted tail, merges it into the sorted head, and drops repeats. */
static void gc_packset_compact(struct gc_packset *set)
{
    if (set->sorted == set->n)
        return;
    qsort(set->v, set->n, GC_PACK_ID_LEN, gc_cmp_pack);
    size_t w = 0;
    for (size_t r = 0; r < set->n; r++)
        if (w == 0 || memcmp(set->v[r], set->v[w - 1], GC_PACK_ID_LEN) != 0)
            memmove(set->v[w++], set->v[r], GC_PACK_ID_LEN);
    set->n = w;
    set->sorted = w;
}

void gc_packset_add(struct gc_packset *set, const uint8_t id[GC_PACK_ID_LEN])
{
    /*
     * Snapshots of one source share most of their packs, so the raw stream of
     * ids repeats itself many times over. Compacting whenever the unsorted tail
     * is as long as the sorted head keeps the array within twice the distinct
     * ids, at an amortised O(log n) per add.
     */
    if (set->n == set->cap && set->n - set->sorted >= set->sorted && set->n >= 64)
        gc_packset_compact(set);
    set->v = util_grow(set->v, &set->cap, set->n + 1, GC_PACK_ID_LEN);
    memcpy(set->v[set->n++], id, GC_PACK_ID_LEN);
}

void gc_packset_seal(struct gc_packset *set)
{
    gc_packset_compact(set);
}

bool gc_packset_has(const struct gc_packset *set, const uint8_t id[GC_PACK_ID_LEN])
{
    /* Only the sealed part is searched: an id added after the seal is a caller's bug. */
    return set->sorted && bsearch(id, set->v, set->sorted, GC_PACK_ID_LEN, gc_cmp_pack) != NULL;
}

void gc_packset_free(struct gc_packset *set)
{
    free(set->v);
    memset(set, 0, sizeof(*set));
}

static int gc_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int gc_pack_id_parse(const char *hex, size_t len, uint8_t id[GC_PACK_ID_LEN])
{
    if (len != 2 * GC_PACK_ID_LEN)
        return UTIL_EINVAL;
    for (size_t i = 0; i < GC_PACK_ID_LEN; i++) {
        int hi = gc_hex_digit(hex[2 * i]), lo = gc_hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return UTIL_EINVAL;
        id[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

void gc_pack_id_format(const uint8_t id[GC_PACK_ID_LEN], char out[2 * GC_PACK_ID_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < GC_PACK_ID_LEN; i++) {
        out[2 * i] = digits[id[i] >> 4];
        out[2 * i + 1] = digits[id[i] & 15];
    }
    out[2 * GC_PACK_ID_LEN] = '\0';
}

void gc_meta_pack_id(const char *run, uint32_t seq, uint8_t id[GC_PACK_ID_LEN])
{
    /* "YYYYMMDDTHHMMSSZ-<16 hex>": 'T' (8), 'Z' (15) and '-' (16) carry nothing. */
    size_t n = 0;
    for (size_t i = 0; run[i] != '\0' && n < GC_PACK_ID_LEN - 2; i++)
        if (i != 8 && i != 15 && i != 16)
            id[n++] = (uint8_t)run[i];
    while (n < GC_PACK_ID_LEN - 2)
        id[n++] = 0;
    id[GC_PACK_ID_LEN - 2] = (uint8_t)(seq >> 8);
    id[GC_PACK_ID_LEN - 1] = (uint8_t)seq;
}
