/*
 * The retention engine and the snapshot-list reader. See retention.h for the
 * rules; this file adds only how they are computed.
 *
 * One sort puts the snapshots newest first; then a single walk applies every rule
 * at once, because each rule only needs what it has seen so far: keepLast a
 * count, keepWithin the first (newest) visible time, the period rules a count and
 * the set of periods already counted, newest-good a count. The period sets are
 * small open-addressing hash sets of 64-bit labels, so a period that reappears
 * after a clock change is recognised, not counted twice.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "retention/retention.h"

static const char *const ret_reason_names[RET_REASON_COUNT] = {
    "last",        "within",     "daily",    "weekly", "monthly",
    "newest-good", "suspicious", "no-rules", "pinned",
};

const char *ret_reason_name(unsigned i)
{
    return i < RET_REASON_COUNT ? ret_reason_names[i] : NULL;
}

bool ret_rules_empty(const struct policy_retention *rules)
{
    return rules == NULL ||
           (rules->keep_last == 0 && rules->keep_within == 0 && rules->keep_daily == 0 &&
            rules->keep_weekly == 0 && rules->keep_monthly == 0);
}

/* ---- a set of snapshot ids, to find duplicates ---- */

/*
 * Slots hold index + 1 into a snapshot array (0 is empty), so a duplicate can be
 * reported together with the item it repeats. Capacity is a power of two at
 * least twice the number of ids: 16 bytes per snapshot at most.
 */
struct ret_idset {
    size_t *slots;
    size_t mask;
};

static uint64_t ret_hash_i64(int64_t v)
{
    uint64_t x = (uint64_t)v; /* splitmix64's finaliser: every bit reaches every bit */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t ret_hash_str(const char *s)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    /*
     * FNV's low bits depend only on the low bits of the input, and the slot is
     * taken from the low bits: ids that differ in their last characters would
     * cluster. The finaliser spreads the high bits down.
     */
    return ret_hash_i64((int64_t)h);
}

static void ret_idset_init(struct ret_idset *set, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    set->slots = util_calloc(cap, sizeof(size_t));
    set->mask = cap - 1;
}

/* Adds snaps[i].id; returns the index of an earlier snapshot with the same id, or (size_t)-1. */
static size_t ret_idset_add(struct ret_idset *set, const struct ret_snapshot *snaps, size_t i)
{
    size_t pos = (size_t)ret_hash_str(snaps[i].id) & set->mask;
    while (set->slots[pos] != 0) {
        size_t j = set->slots[pos] - 1;
        if (strcmp(snaps[j].id, snaps[i].id) == 0)
            return j;
        pos = (pos + 1) & set->mask;
    }
    set->slots[pos] = i + 1;
    return (size_t)-1;
}

/* ---- a growable set of period labels ---- */

#define RET_LABEL_EMPTY INT64_MIN /* no label is this small: labels are day counts or months */

struct ret_labelset {
    int64_t *slots;
    size_t cap; /* a power of two, or 0 before the first add */
    size_t n;
};

static void ret_labelset_place(int64_t *slots, size_t cap, int64_t label)
{
    size_t pos = (size_t)ret_hash_i64(label) & (cap - 1);
    while (slots[pos] != RET_LABEL_EMPTY)
        pos = (pos + 1) & (cap - 1);
    slots[pos] = label;
}

/* Adds label; returns true when it was not there before. */
static bool ret_labelset_add(struct ret_labelset *set, int64_t label)
{
    if (set->cap != 0) {
        size_t pos = (size_t)ret_hash_i64(label) & (set->cap - 1);
        while (set->slots[pos] != RET_LABEL_EMPTY) {
            if (set->slots[pos] == label)
                return false;
            pos = (pos + 1) & (set->cap - 1);
        }
    }
    if (2 * (set->n + 1) > set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 64;
        int64_t *slots = util_malloc(cap * sizeof(int64_t));
        for (size_t i = 0; i < cap; i++)
            slots[i] = RET_LABEL_EMPTY;
        for (size_t i = 0; i < set->cap; i++)
            if (set->slots[i] != RET_LABEL_EMPTY)
                ret_labelset_place(slots, cap, set->slots[i]);
        free(set->slots);
        set->slots = slots;
        set->cap = cap;
    }
    ret_labelset_place(set->slots, set->cap, label);
    set->n++;
    return true;
}

static void ret_labelset_free(struct ret_labelset *set)
{
    free(set->slots);
    set->slots = NULL;
    set->cap = set->n = 0;
}

/* ---- the engine ---- */

/* What the walk needs of a snapshot, packed for the sort. */
struct ret_item {
    int64_t time;
    const char *id;
    size_t index;
    bool incomplete;
    bool suspicious;
    bool pinned;
};

/* Negative when a is newer than b: time descending, then id descending bytewise. */
static int ret_item_cmp(const void *pa, const void *pb)
{
    const struct ret_item *a = pa, *b = pb;
    if (a->time != b->time)
        return a->time > b->time ? -1 : 1;
    return -strcmp(a->id, b->id); /* strcmp compares as unsigned char: bytewise */
}

/*
 * Sorts newest first. Storage listings usually arrive in id order, which is time
 * order, so an input already sorted either way costs one pass, not a sort.
 */
static void ret_sort(struct ret_item *items, size_t n)
{
    bool desc = true, asc = true;
    for (size_t i = 1; i < n && (desc || asc); i++) {
        int c = ret_item_cmp(&items[i - 1], &items[i]);
        desc = desc && c < 0;
        asc = asc && c > 0;
    }
    if (desc)
        return;
    if (asc) {
        for (size_t i = 0, j = n - 1; i < j; i++, j--) {
            struct ret_item t = items[i];
            items[i] = items[j];
            items[j] = t;
        }
        return;
    }
    qsort(items, n, sizeof(*items), ret_item_cmp);
}

/* t + the zone's offset at t, clamped instead of overflowing at the ends of time. */
static int64_t ret_local_time(const struct tz_zone *zone, int64_t t)
{
    int64_t off = zone != NULL ? tz_offset_at(zone, t) : 0;
    int64_t local;
    if (__builtin_add_overflow(t, off, &local))
        local = off > 0 ? INT64_MAX : INT64_MIN + 1;
    return local;
}

enum { RET_DAY, RET_WEEK, RET_MONTH, RET_NPERIODS };

static const unsigned ret_period_reason[RET_NPERIODS] = {RET_DAILY, RET_WEEKLY, RET_MONTHLY};

/*
 * The label of the period holding a local time: the day number; the day number
 * of the ISO week's Monday (which names the ISO year and week as well); the month
 * counted from year 0.
 */
static int64_t ret_period_label(int period, int64_t local)
{
    int64_t days = util_floor_div(local, 86400);
    int64_t y;
    unsigned m, d;

    switch (period) {
    case RET_DAY:
        return days;
    case RET_WEEK:
        return days - (int64_t)((util_weekday_from_days(days) + 6) % 7);
    default:
        util_civil_from_days(days, &y, &m, &d);
        return y * 12 + (int64_t)(m - 1);
    }
}

static int ret_check_rules(const struct policy_retention *r, struct util_err *err)
{
    const struct {
        const char *name;
        int64_t v;
    } f[] = {{"keepLast", r->keep_last},
             {"keepWithin", r->keep_within},
             {"keepDaily", r->keep_daily},
             {"keepWeekly", r->keep_weekly},
             {"keepMonthly", r->keep_monthly}};
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (f[i].v < 0)
            return util_err_set(err, UTIL_EINVAL,
                                "retention.%s is negative (%lld); use a positive value or leave "
                                "it out",
                                f[i].name, (long long)f[i].v);
    return 0;
}

int ret_evaluate(const struct ret_snapshot *snaps, size_t n, const struct policy_retention *rules,
                 const struct tz_zone *zone, struct ret_decision *out, struct util_err *err)
{
    static const struct policy_retention none = {0};
    struct ret_item *items = NULL;
    struct ret_labelset seen[RET_NPERIODS] = {{0}};
    int64_t want[RET_NPERIODS];
    int64_t counted[RET_NPERIODS] = {0};
    bool no_rules, have_anchor = false;
    int64_t threshold = INT64_MIN;
    int64_t visible = 0, good = 0;
    int rc;

    if (rules == NULL)
        rules = &none;
    rc = ret_check_rules(rules, err);
    if (rc != 0)
        return rc;
    no_rules = ret_rules_empty(rules);
    want[RET_DAY] = rules->keep_daily;
    want[RET_WEEK] = rules->keep_weekly;
    want[RET_MONTH] = rules->keep_monthly;

    /* Ids must be present: the order of equal times depends on them. */
    for (size_t i = 0; i < n; i++)
        if (snaps[i].id == NULL || snaps[i].id[0] == '\0')
            return util_err_set(err, UTIL_EINVAL, "snapshot %zu has no id", i);

    items = util_malloc((n ? n : 1) * sizeof(*items));
    for (size_t i = 0; i < n; i++)
        items[i] = (struct ret_item){snaps[i].time,       snaps[i].id,         i,
                                     snaps[i].incomplete, snaps[i].suspicious, snaps[i].pinned};
    ret_sort(items, n);
    /*
     * The same id at the same time twice would make the order, and so the answer,
     * depend on the input order. After the sort such a pair is adjacent, so this
     * costs one comparison of times per snapshot, not a hash set of every id.
     */
    for (size_t i = 1; i < n; i++) {
        if (items[i].time == items[i - 1].time && strcmp(items[i].id, items[i - 1].id) == 0) {
            size_t a = items[i - 1].index, b = items[i].index;
            rc = util_err_set(err, UTIL_EINVAL,
                              "snapshots %zu and %zu have the same id \"%s\" and the same time",
                              a < b ? a : b, a < b ? b : a, items[i].id);
            goto free_items;
        }
    }

    for (size_t i = 0; i < n; i++) {
        const struct ret_item *it = &items[i];
        unsigned reasons = 0;

        if (it->suspicious || it->pinned) {
            /* step 1: kept, and seen by no rule */
            reasons = (it->suspicious ? RET_SUSPICIOUS : 0) | (it->pinned ? RET_PINNED : 0);
            goto decide;
        }
        if (no_rules)
            reasons |= RET_NO_RULES;
        if (visible < rules->keep_last)
            reasons |= RET_LAST;
        if (rules->keep_within > 0) {
            if (!have_anchor) {
                /* The newest visible snapshot anchors the window, not the clock. */
                have_anchor = true;
                if (__builtin_sub_overflow(it->time, rules->keep_within, &threshold))
                    threshold = INT64_MIN;
            }
            if (it->time >= threshold)
                reasons |= RET_WITHIN;
        }
        if (counted[RET_DAY] < want[RET_DAY] || counted[RET_WEEK] < want[RET_WEEK] ||
            counted[RET_MONTH] < want[RET_MONTH]) {
            int64_t local = ret_local_time(zone, it->time);
            for (int p = 0; p < RET_NPERIODS; p++) {
                if (counted[p] < want[p] &&
                    ret_labelset_add(&seen[p], ret_period_label(p, local))) {
                    counted[p]++;
                    reasons |= ret_period_reason[p];
                }
            }
        }
        if (!it->incomplete && good < 2) {
            good++;
            reasons |= RET_NEWEST_GOOD;
        }
        visible++;
    decide:
        out[i] = (struct ret_decision){it->index, reasons != 0, reasons};
    }
    rc = 0;

    for (int p = 0; p < RET_NPERIODS; p++)
        ret_labelset_free(&seen[p]);
free_items:
    free(items);
    return rc;
}

/* ---- the snapshot-list reader ---- */

static const char *ret_json_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    default:
        return "null";
    }
}

static const char *const ret_json_keys[] = {"id", "time", "incomplete", "suspicious", "pinned"};
#define RET_NKEYS (sizeof(ret_json_keys) / sizeof(ret_json_keys[0]))

static int ret_unknown_key(size_t i, const char *key, struct util_err *err)
{
    const char *best = NULL;
    size_t best_d = 3; /* a near miss is at most two edits away */
    for (size_t k = 0; k < RET_NKEYS; k++) {
        size_t d = util_edit_distance(key, ret_json_keys[k]);
        if (d < best_d) {
            best_d = d;
            best = ret_json_keys[k];
        }
    }
    if (best != NULL)
        return util_err_set(err, UTIL_EINVAL, "[%zu]: unknown key \"%s\" (did you mean \"%s\"?)", i,
                            key, best);
    return util_err_set(err, UTIL_EINVAL,
                        "[%zu]: unknown key \"%s\" (a snapshot has only id, time, incomplete, "
                        "suspicious and pinned)",
                        i, key);
}

/* Fills s from one item; s->id points into the JSON document for now. */
static int ret_read_item(size_t i, json_t *item, struct ret_snapshot *s, struct util_err *err)
{
    const char *key;
    json_t *v;
    bool have_id = false, have_time = false;
    struct util_err terr = {0};

    if (!json_is_object(item))
        return util_err_set(err, UTIL_EINVAL,
                            "[%zu]: expected an object {\"id\": ..., \"time\": ...}, found %s", i,
                            ret_json_type(item));
    json_object_foreach(item, key, v)
    {
        if (strcmp(key, "id") == 0) {
            if (!json_is_string(v))
                return util_err_set(err, UTIL_EINVAL, "[%zu].id: expected a string, found %s", i,
                                    ret_json_type(v));
            s->id = json_string_value(v);
            if (s->id[0] == '\0')
                return util_err_set(err, UTIL_EINVAL, "[%zu].id: must not be empty", i);
            have_id = true;
        } else if (strcmp(key, "time") == 0) {
            if (!json_is_string(v))
                return util_err_set(err, UTIL_EINVAL,
                                    "[%zu].time: expected an RFC 3339 string such as "
                                    "\"2026-03-29T01:00:00Z\", found %s",
                                    i, ret_json_type(v));
            if (util_parse_rfc3339(json_string_value(v), &s->time, &terr) != 0)
                return util_err_set(err, UTIL_EINVAL, "[%zu].time: %s", i, terr.msg);
            have_time = true;
        } else if (strcmp(key, "incomplete") == 0 || strcmp(key, "suspicious") == 0 ||
                   strcmp(key, "pinned") == 0) {
            if (!json_is_boolean(v))
                return util_err_set(err, UTIL_EINVAL, "[%zu].%s: expected true or false, found %s",
                                    i, key, ret_json_type(v));
            if (key[0] == 'i')
                s->incomplete = json_is_true(v);
            else if (key[0] == 's')
                s->suspicious = json_is_true(v);
            else
                s->pinned = json_is_true(v);
        } else {
            return ret_unknown_key(i, key, err);
        }
    }
    if (!have_id)
        return util_err_set(err, UTIL_EINVAL, "[%zu]: \"id\" is missing", i);
    if (!have_time)
        return util_err_set(err, UTIL_EINVAL, "[%zu]: \"time\" is missing", i);
    return 0;
}

int ret_snapshots_from_json(struct ret_snapshot_list *out, const char *data, size_t len,
                            struct util_err *err)
{
    json_error_t jerr;
    json_t *root;
    struct ret_snapshot *v = NULL;
    struct ret_idset ids = {0};
    size_t n, total = 0;
    char *block, *p;
    int rc;

    memset(out, 0, sizeof(*out));
    root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return util_err_set(err, UTIL_EINVAL, "line %d, column %d: %s", jerr.line, jerr.column,
                            jerr.text);
    if (!json_is_array(root)) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "expected an array of snapshots [{\"id\": ..., \"time\": ...}], found %s",
                          ret_json_type(root));
        goto free_root;
    }
    n = json_array_size(root);
    v = util_calloc(n ? n : 1, sizeof(*v));
    ret_idset_init(&ids, n);
    for (size_t i = 0; i < n; i++) {
        size_t j;
        rc = ret_read_item(i, json_array_get(root, i), &v[i], err);
        if (rc != 0)
            goto free_v;
        j = ret_idset_add(&ids, v, i);
        if (j != (size_t)-1) {
            rc = util_err_set(err, UTIL_EINVAL, "[%zu].id: \"%s\" is also the id of [%zu]", i,
                              v[i].id, j);
            goto free_v;
        }
        total += strlen(v[i].id) + 1;
    }

    /* Copy the ids out of the document into one block the list owns. */
    block = util_malloc(total ? total : 1);
    p = block;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(v[i].id) + 1;
        memcpy(p, v[i].id, l);
        v[i].id = p;
        p += l;
    }
    out->v = v;
    out->n = n;
    out->ids = block;
    v = NULL;
    rc = 0;

free_v:
    free(v);
    free(ids.slots);
free_root:
    json_decref(root);
    return rc;
}

void ret_snapshot_list_free(struct ret_snapshot_list *list)
{
    free(list->v);
    free(list->ids);
    memset(list, 0, sizeof(*list));
}
