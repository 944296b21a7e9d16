/*
 * retention: which snapshots of one host and one policy to keep, and why
 * (docs/retention.md).
 *
 * ret_evaluate() is a pure function of three inputs: the snapshots (id, received
 * time in whole seconds, incomplete, suspicious), the rules (struct
 * policy_retention) and the zone the periods are counted in (the schedule's zone,
 * UTC without a schedule). It returns one decision per snapshot, newest first,
 * with every reason that keeps it. No clock, no I/O, no global state: the same
 * inputs in any order give the same answer.
 *
 * The rules, in the order they are applied:
 *   1. Suspicious and pinned snapshots are kept (reasons "suspicious", "pinned"),
 *      take no slot in any rule and are invisible to every step below.
 *   2. The rest is ordered newest first: time descending, then id descending
 *      (bytewise; the larger id is the newer).
 *   3. No rules at all: every one of them is kept ("no-rules").
 *   4. keepLast N keeps the first N ("last"). keepWithin D keeps every snapshot
 *      whose time is >= the newest one's time minus D, inclusive ("within").
 *      keepDaily / keepWeekly / keepMonthly N walk newest first and keep the
 *      first snapshot of each local day / ISO week (Monday first) / month not
 *      seen before, until N distinct periods have been counted ("daily",
 *      "weekly", "monthly"). Distinct, not "a change from the previous
 *      snapshot": a period that comes back after a clock change is not counted
 *      twice. Incomplete snapshots take part like any other.
 *   5. The two newest good snapshots (neither incomplete nor suspicious) are
 *      always kept ("newest-good"). There is no "oldest snapshot" rule.
 *   6. A snapshot is kept when any reason applies, forgotten otherwise.
 *
 * ret_snapshots_from_json() reads the snapshot list of `lode forget --snapshots`:
 * `[{"id":S,"time":T,"incomplete":bool,"suspicious":bool}]`, strictly (unknown
 * keys, wrong types, bad times and duplicate ids are errors that name the item).
 *
 * Costs: ret_evaluate() is O(n log n) time (one sort; an input already in either
 * order is detected in O(n) and not sorted again) and O(n) memory: 32 bytes per
 * snapshot for the sort records (twice that while the C library's merge sort
 * runs), plus a set of the periods seen, which only grows with the number of
 * distinct days, weeks and months. One zone lookup (tz_offset_at) per snapshot
 * while a period rule still counts.
 */
#ifndef LODE_RETENTION_H
#define LODE_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"
#include "tz/tz.h"
#include "util/util.h"

/*
 * Reasons, one bit each. The bit order is the order reasons are reported in
 * (JSON and human output): last, within, daily, weekly, monthly, newest-good,
 * suspicious, no-rules, pinned.
 */
enum ret_reason {
    RET_LAST = 1u << 0,
    RET_WITHIN = 1u << 1,
    RET_DAILY = 1u << 2,
    RET_WEEKLY = 1u << 3,
    RET_MONTHLY = 1u << 4,
    RET_NEWEST_GOOD = 1u << 5,
    RET_SUSPICIOUS = 1u << 6,
    RET_NO_RULES = 1u << 7,
    RET_PINNED = 1u << 8
};
#define RET_REASON_COUNT 9

/* The name of the reason at bit position i (0 .. RET_REASON_COUNT-1): "last", ...; NULL past the
 * end. */
const char *ret_reason_name(unsigned i);

/*
 * One snapshot. The id is borrowed: it must outlive the call that reads it. Ids
 * are unique in a list: ret_snapshots_from_json() rejects any repeated id, and
 * storage keys cannot repeat. ret_evaluate() itself rejects only the same id at
 * the same time, the one repetition that would make its answer depend on the
 * input order; a full check would cost a hash set of every id, about half of
 * its time at a million snapshots.
 */
struct ret_snapshot {
    const char *id;  /* non-empty */
    int64_t time;    /* received time, seconds since the epoch (UTC) */
    bool incomplete; /* takes part in the rules, but is not "good" */
    bool suspicious; /* always kept, invisible to every rule */
    bool pinned;     /* likewise, until unpinned (docs/retention.md, "Pinned snapshots") */
};

/* The decision about one snapshot. */
struct ret_decision {
    size_t index;     /* position of the snapshot in the input array */
    bool keep;        /* reasons != 0 */
    unsigned reasons; /* a set of enum ret_reason bits */
};

/* True when no rule is set (every field of the retention block is 0). */
bool ret_rules_empty(const struct policy_retention *rules);

/*
 * Applies the rules to n snapshots. out must have room for n decisions; it is
 * filled newest first (time descending, then id descending). rules NULL means no
 * rules; zone NULL means UTC. Returns 0, or UTIL_EINVAL with a message when an id
 * is missing or empty, two snapshots have the same id and time, or a rule is
 * negative (out is then undefined).
 */
int ret_evaluate(const struct ret_snapshot *snaps, size_t n, const struct policy_retention *rules,
                 const struct tz_zone *zone, struct ret_decision *out, struct util_err *err);

/* A snapshot list read from JSON; owns its ids. */
struct ret_snapshot_list {
    struct ret_snapshot *v;
    size_t n;
    char *ids; /* one block holding every id, NUL-separated */
};

/*
 * Reads `[{"id":S,"time":T,"incomplete":bool,"suspicious":bool,"pinned":bool}]` (the
 * last three optional, false by default; time is RFC 3339, any offset, fractions of a
 * second dropped). Anything else is an error with a message naming the item, as
 * jq would address it ("[3].time: ..."): not an array, an item that is not an
 * object, a missing or empty id, a missing time, a value of the wrong type, an
 * unknown key (with a "did you mean" for a near miss), a duplicate key or a
 * duplicate id. Returns 0 (out filled, owned by the caller) or UTIL_EINVAL (out
 * left empty).
 */
int ret_snapshots_from_json(struct ret_snapshot_list *out, const char *data, size_t len,
                            struct util_err *err);

/*
 * The same reader in one pass, without a tree: for the shape every tool writes
 * (flat objects, printable ASCII strings without escapes) it fills the list
 * itself, at about a tenth of the memory and time of the jansson reader; for
 * any other input it hands the whole input to ret_snapshots_from_json(), so the
 * answer, and every error message, is always the one that function gives.
 * progress_cb (may be NULL) is called every RET_SCAN_WINDOW bytes with how far
 * the scan has read, so a caller holding a mapped file can release the pages
 * behind it; they must stay readable (the fallback reads them again).
 * Defined in snapshots_scan.c.
 */
#define RET_SCAN_WINDOW (4u << 20)
int ret_snapshots_scan(struct ret_snapshot_list *out, const char *data, size_t len,
                       void (*progress_cb)(size_t consumed, void *arg), void *arg,
                       struct util_err *err);

void ret_snapshot_list_free(struct ret_snapshot_list *list);

#endif
