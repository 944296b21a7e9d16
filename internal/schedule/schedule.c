/*
 * schedule: slots, jitter, catch-up and the alert limit. See schedule.h.
 *
 * The one subtle function is the slot search. A slot's instant is not monotonic
 * in its local time in general (a gap followed closely by a fold can make an
 * earlier local time happen later), so the search must prove its answer. In a
 * "simple" zone, where every fold is shorter than every stretch between changes,
 * a local time can have been on the clock before only in the segment just before
 * a fold, and the first cron match whose instant is after the start is the
 * answer; sched_next walks the segments of the table copied into the sched, or
 * asks the zone outside it. In other zones, when a change lies between the start
 * and the candidate, every cron match whose local time can map into that interval
 * (the zone's offset range bounds them) is resolved and the smallest instant wins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "schedule/schedule.h"

/* Instants beyond about a million years are refused: local = t + offset must not overflow. */
#define SCHED_T_LIMIT ((int64_t)1 << 45)
/* A search gives up after this many seconds of local time without a slot. */
#define SCHED_SEARCH_SPAN ((int64_t)30 * 366 * 86400)
#define SCHED_DAY         86400

void sched_init(struct sched *s, const struct cron_expr *cron, const struct tz_zone *zone)
{
    int64_t t = -SCHED_T_LIMIT, end = util_days_from_civil(2100, 1, 1) * SCHED_DAY;
    int64_t last_change = INT64_MIN, min_span = INT64_MAX;
    int32_t off, max_fold = 0;
    int32_t prev = -1;

    memset(s, 0, sizeof(*s));
    s->cron = *cron;
    s->zone = zone;
    s->fixed = cron_is_fixed_time(cron);

    /*
     * The zone's offset range, its largest backward change and the shortest time
     * between two changes of offset, from its whole history. Past the last explicit
     * transition the footer repeats the same two changes every year, so the walk can
     * stop in 2100; it is a few hundred lookups, once per schedule.
     */
    off = tz_offset_at(zone, t);
    s->off_min = s->off_max = off;
    s->table_lo = util_days_from_civil(2000, 1, 1) * SCHED_DAY;
    s->table_hi = util_days_from_civil(2060, 1, 1) * SCHED_DAY;
    s->table_off[0] = tz_offset_at(zone, s->table_lo);
    for (;;) {
        int32_t next_off;
        t = tz_next_transition(zone, t);
        if (t == INT64_MAX || t > end)
            break;
        next_off = tz_offset_at(zone, t);
        if (next_off == off)
            continue; /* a change of name or DST flag only */
        if (t > s->table_lo && t < s->table_hi) {
            if (s->ntable < SCHED_TABLE) {
                s->table_at[s->ntable++] = t;
                s->table_off[s->ntable] = next_off;
            } else {
                s->table_hi = t; /* full: the table ends before this change */
            }
        }
        if (off - next_off > max_fold)
            max_fold = off - next_off;
        if (last_change != INT64_MIN && t - last_change < min_span)
            min_span = t - last_change;
        last_change = t;
        off = next_off;
        s->off_min = off < s->off_min ? off : s->off_min;
        s->off_max = off > s->off_max ? off : s->off_max;
    }
    /*
     * When every fold is shorter than every stretch between changes, the wall clock
     * can never come back below a time it jumped over, so the first match's instant
     * is the answer and sched_next needs no proof. The walk sees at least 60 years
     * of the footer's rules, every calendar they can meet, so the stretches they
     * make later are among those seen. Every zone of the tz database qualifies.
     */
    s->simple = min_span == INT64_MAX || max_fold < min_span;
    s->constant = last_change == INT64_MIN;

    /* The day's pattern: every matching day has the same minutes. */
    s->day_first = s->day_last = -1;
    for (int h = 0; h < 24; h++) {
        if (!((cron->hours >> h) & 1))
            continue;
        for (int m = 0; m < 60; m++) {
            int32_t x;
            if (!((cron->minutes >> m) & 1))
                continue;
            x = h * 3600 + m * 60;
            if (s->day_first < 0)
                s->day_first = x;
            if (prev >= 0 && x - prev > s->day_max_gap)
                s->day_max_gap = x - prev;
            prev = x;
            s->day_last = x;
            s->day_count++;
        }
    }
}

/* The instant local minute L runs at, or false when L is skipped (a gap, not fixed). */
static bool sched_instant(const struct sched *s, int64_t L, int64_t *at, enum sched_note *note)
{
    struct tz_local r;
    tz_resolve_local(s->zone, L, &r);
    switch (r.kind) {
    case TZ_LOCAL_UNIQUE:
        *note = SCHED_NOTE_NONE;
        break;
    case TZ_LOCAL_REPEATED:
        *note = SCHED_NOTE_REPEATED;
        break;
    case TZ_LOCAL_GAP:
        if (!s->fixed)
            return false;
        *note = SCHED_NOTE_SHIFTED;
        break;
    }
    *at = r.at[0];
    return true;
}

static int sched_next_zone(const struct sched *s, int64_t after, struct sched_slot *out)
{
    struct sched_slot best;
    int64_t L, at = 0;
    enum sched_note note = SCHED_NOTE_NONE;
    int32_t off;

    if (after < -SCHED_T_LIMIT || after > SCHED_T_LIMIT)
        return UTIL_ERANGE;
    off = tz_offset_at(s->zone, after);
    if (s->constant) {
        if (cron_next(&s->cron, after + off, &L) != 0)
            return UTIL_ENOENT;
        *out = (struct sched_slot){L, L - off, SCHED_NOTE_NONE};
        return 0;
    }
    /* The first match after the wall clock at `after` whose instant is after `after`. */
    for (L = after + off;;) {
        if (cron_next(&s->cron, L, &L) != 0 || L - (after + off) > SCHED_SEARCH_SPAN)
            return UTIL_ENOENT;
        if (sched_instant(s, L, &at, &note) && at > after)
            break;
    }
    best = (struct sched_slot){L, at, note};
    if (s->simple || at < tz_next_transition(s->zone, after)) {
        /* A simple zone, or the offset is constant on (after, at]: nothing comes earlier. */
        *out = best;
        return 0;
    }
    /*
     * A clock change lies in between. Any slot in (after, best.at] has its local
     * time within (after + off_min, best.at + off_max]; resolve them all.
     */
    for (L = after + s->off_min;;) {
        if (cron_next(&s->cron, L, &L) != 0 || L > best.at + s->off_max)
            break;
        if (!sched_instant(s, L, &at, &note) || at <= after)
            continue;
        if (at < best.at || (at == best.at && L < best.local))
            best = (struct sched_slot){L, at, note};
    }
    *out = best;
    return 0;
}

/*
 * sched_next from the table of a simple zone: the segment of constant offset that
 * holds `after`, then each cron match in turn, walking segment by segment. In a
 * simple zone a local time can only have been on the clock before in the segment
 * just before (a fold), and the local times a gap jumps over lie between two
 * segments. Returns 1 when the answer needs what the table does not hold.
 */
static int sched_next_table(const struct sched *s, int64_t after, struct sched_slot *out)
{
    const int64_t *at = s->table_at;
    const int32_t *off = s->table_off;
    size_t n = s->ntable, lo = 0, hi = n, k;
    int32_t fold_max = s->off_max - s->off_min;
    int64_t L;

    /* k: the number of changes at or before `after`; its segment is [at[k-1], at[k]). */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (at[mid] <= after)
            lo = mid + 1;
        else
            hi = mid;
    }
    k = lo;
    if (k == 0)
        return 1; /* the segment before the first change is not fully known */
    for (L = after + off[k];;) {
        if (cron_next(&s->cron, L, &L) != 0)
            return UTIL_ENOENT;
        for (;;) {
            int32_t o = off[k];
            int64_t start = at[k - 1], end = k < n ? at[k] : s->table_hi;
            if (off[k - 1] > o && L < start + off[k - 1])
                break; /* on the clock before the fold at start, so before `after`: skip */
            if (L - o < end) {
                enum sched_note note = SCHED_NOTE_NONE;
                if (k < n) {
                    if (off[k + 1] < o && L >= end + off[k + 1])
                        note = SCHED_NOTE_REPEATED; /* the fold at end brings it back */
                } else if (L - o >= s->table_hi - fold_max) {
                    return 1; /* a fold just past the table could repeat it */
                }
                *out = (struct sched_slot){L, L - o, note};
                return 0;
            }
            if (k == n)
                return 1;
            if (off[k + 1] > o && L < end + off[k + 1]) {
                /* In the gap at `end`. */
                if (!s->fixed)
                    break;
                *out = (struct sched_slot){L, end, SCHED_NOTE_SHIFTED};
                return 0;
            }
            k++;
        }
    }
}

int sched_next(const struct sched *s, int64_t after, struct sched_slot *out)
{
    if (s->simple && !s->constant && after >= s->table_lo && after < s->table_hi) {
        int rc = sched_next_table(s, after, out);
        if (rc <= 0)
            return rc;
    }
    return sched_next_zone(s, after, out);
}

int sched_prev(const struct sched *s, int64_t at_or_before, struct sched_slot *out)
{
    struct sched_slot best;
    int64_t L, at = 0, T = at_or_before;
    enum sched_note note = SCHED_NOTE_NONE;
    int32_t off;

    if (T < -SCHED_T_LIMIT || T > SCHED_T_LIMIT)
        return UTIL_ERANGE;
    off = tz_offset_at(s->zone, T);
    if (s->constant) {
        if (cron_prev(&s->cron, T + off + 1, &L) != 0)
            return UTIL_ENOENT;
        *out = (struct sched_slot){L, L - off, SCHED_NOTE_NONE};
        return 0;
    }
    for (L = T + off + 1;;) {
        if (cron_prev(&s->cron, L, &L) != 0 || (T + off) - L > SCHED_SEARCH_SPAN)
            return UTIL_ENOENT;
        if (sched_instant(s, L, &at, &note) && at <= T)
            break;
    }
    best = (struct sched_slot){L, at, note};
    if (tz_next_transition(s->zone, at - 1) > T) {
        /* The offset is constant on [at, T]: nothing later can qualify. */
        *out = best;
        return 0;
    }
    for (L = T + s->off_max + 1;;) {
        if (cron_prev(&s->cron, L, &L) != 0 || L < best.at + s->off_min)
            break;
        if (!sched_instant(s, L, &at, &note) || at > T)
            continue;
        if (at > best.at || (at == best.at && L < best.local))
            best = (struct sched_slot){L, at, note};
    }
    *out = best;
    return 0;
}

size_t sched_skipped(const struct sched *s, int64_t from, int64_t to, sched_skipped_cb cb,
                     void *arg)
{
    size_t n = 0;
    int64_t t = from;

    if (s->fixed || from >= to)
        return 0;
    for (;;) {
        int64_t tr = tz_next_transition(s->zone, t), L;
        int32_t before, after;
        if (tr == INT64_MAX || tr > to)
            break;
        before = tz_offset_at(s->zone, tr - 1);
        after = tz_offset_at(s->zone, tr);
        for (L = tr + before - 1; after > before;) {
            struct tz_local r;
            if (cron_next(&s->cron, L, &L) != 0 || L >= tr + after)
                break;
            tz_resolve_local(s->zone, L, &r);
            if (r.kind == TZ_LOCAL_GAP && r.at[0] == tr) {
                n++;
                if (cb != NULL)
                    cb(L, tr, arg);
            }
        }
        t = tr;
    }
    return n;
}

int sched_change_of(const struct sched *s, const struct sched_slot *slot, struct sched_change *ch)
{
    int64_t tr;
    struct tz_local r;

    switch (slot->note) {
    case SCHED_NOTE_SHIFTED:
        tr = slot->at;
        break;
    case SCHED_NOTE_REPEATED:
        /* The fold is the first backward transition between the two occurrences. */
        tz_resolve_local(s->zone, slot->local, &r);
        for (tr = tz_next_transition(s->zone, slot->at); tr < r.at[1];
             tr = tz_next_transition(s->zone, tr)) {
            if (tz_offset_at(s->zone, tr) < tz_offset_at(s->zone, tr - 1))
                break;
        }
        if (tr == INT64_MAX)
            return UTIL_ENOENT;
        break;
    default:
        return UTIL_ENOENT;
    }
    ch->at = tr;
    ch->local_before = tr + tz_offset_at(s->zone, tr - 1);
    ch->local_after = tr + tz_offset_at(s->zone, tr);
    return 0;
}

int64_t sched_jitter_offset(const char *ns, const char *policy, const char *host, int64_t jitter)
{
    static const char prefix[] = "lodestore-jitter"; /* its NUL is part of the message */
    struct util_buf b;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    uint64_t v = 0;

    if (jitter <= 0)
        return 0;
    util_buf_init(&b);
    util_buf_append(&b, prefix, sizeof(prefix));
    util_buf_puts(&b, ns);
    util_buf_append(&b, "/", 1);
    util_buf_puts(&b, policy);
    util_buf_append(&b, "", 1);
    util_buf_puts(&b, host);
    if (EVP_Digest(b.data, b.len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < 8) {
        /* SHA-256 cannot fail short of a broken OpenSSL; a daemon must not guess. */
        fprintf(stderr, "lode: OpenSSL SHA-256 failed\n");
        abort();
    }
    util_buf_free(&b);
    for (int i = 0; i < 8; i++)
        v = v << 8 | md[i];
    return (int64_t)(v % (uint64_t)jitter);
}

const char *sched_reason_text(enum sched_reason r)
{
    switch (r) {
    case SCHED_RUN:
        return "a slot's run time has passed and it has not started: run it now";
    case SCHED_NOT_READY:
        return "the host cannot run now (node absent or not Ready)";
    case SCHED_RUNNING:
        return "the previous backup of this policy is still running on the host";
    case SCHED_NOTHING_DUE:
        return "no slot has come due since the policy, the node or the schedule began";
    case SCHED_ALREADY_STARTED:
        return "the last slot that came due has already started";
    case SCHED_TOO_LATE:
        return "the last missed run time is older than the catch-up window";
    }
    return "unknown";
}

void sched_decide(const struct sched *s, const struct sched_host *h, int64_t now,
                  struct sched_decision *out)
{
    int64_t anchor = h->node_joined;
    struct sched_slot slot;

    memset(out, 0, sizeof(*out));
    out->next_run = INT64_MAX;
    anchor = h->policy_created > anchor ? h->policy_created : anchor;
    anchor = h->schedule_changed > anchor ? h->schedule_changed : anchor;

    /* R: the last slot whose run time (slot + offset) is at or before now. */
    if (sched_prev(s, now - h->offset, &slot) == 0 && slot.at >= anchor) {
        out->has_slot = true;
        out->slot = slot;
        out->run_time = slot.at + h->offset;
        out->late = now - out->run_time;
    }
    {
        int64_t from = now - h->offset > anchor - 1 ? now - h->offset : anchor - 1;
        if (sched_next(s, from, &slot) == 0)
            out->next_run = slot.at + h->offset;
    }
    if (!h->ready)
        out->reason = SCHED_NOT_READY;
    else if (h->backup_running)
        out->reason = SCHED_RUNNING;
    else if (!out->has_slot)
        out->reason = SCHED_NOTHING_DUE;
    else if (h->has_last_started && h->last_started_slot >= out->slot.at)
        out->reason = SCHED_ALREADY_STARTED;
    else if (out->late > h->catch_up_window)
        out->reason = SCHED_TOO_LATE;
    else
        out->reason = SCHED_RUN;
    out->run = out->reason == SCHED_RUN;
}

int64_t sched_alert_limit(const struct sched *s, int64_t jitter, int64_t max_age, int64_t at)
{
    struct sched_slot prev, cur;
    int64_t horizon = at + 366 * (int64_t)SCHED_DAY, gap = 0;

    if (max_age > 0)
        return max_age;
    if (s == NULL)
        return SCHED_NO_LIMIT;
    if (sched_next(s, at, &prev) != 0)
        return SCHED_NO_LIMIT;
    for (;;) {
        if (sched_next(s, prev.at, &cur) != 0)
            return SCHED_NO_LIMIT;
        if (cur.at - prev.at > gap)
            gap = cur.at - prev.at;
        if (cur.at > horizon)
            break;
        prev = cur;
        /*
         * When cur is the day's first match and no clock change touches the rest of
         * its day, the day's slots are its matches at one offset: their largest gap
         * is the pattern's, so jump to the day's last slot.
         */
        if (s->day_count >= 3 && cur.note == SCHED_NOTE_NONE &&
            util_floor_mod(cur.local, SCHED_DAY) == s->day_first) {
            int64_t last_local = cur.local - s->day_first + s->day_last;
            int64_t last_at = last_local - (cur.local - cur.at);
            if (last_at <= horizon && tz_next_transition(s->zone, cur.at) > last_at) {
                if (s->day_max_gap > gap)
                    gap = s->day_max_gap;
                prev = (struct sched_slot){last_local, last_at, SCHED_NOTE_NONE};
            }
        }
    }
    return 2 * gap + (jitter > 0 ? jitter : 0);
}

int64_t sched_enrolled(int64_t selected_since, int64_t recorded, bool records_kept,
                       int64_t node_created, int64_t now)
{
    if (selected_since > 0)
        return selected_since > recorded ? selected_since : recorded;
    if (recorded > 0)
        return recorded;
    return records_kept ? now : node_created;
}

int64_t sched_overdue_start(bool has_success, int64_t last_success, int64_t enrolled,
                            int64_t policy_created)
{
    if (has_success)
        return last_success;
    return enrolled > policy_created ? enrolled : policy_created;
}

bool sched_overdue(int64_t limit, bool has_success, int64_t last_success, int64_t enrolled,
                   int64_t policy_created, int64_t now)
{
    if (limit < 0)
        return false;
    return now - sched_overdue_start(has_success, last_success, enrolled, policy_created) > limit;
}
