/*
 * schedule: the slots of a policy in its time zone (docs/schedule.md), the per-host
 * jitter offset, the catch-up decision (docs/schedule.md, "Missed slots and catch-up")
 * and the alert limit (docs/schedule.md, "The alert limit: when a host is overdue").
 *
 * A slot is a local wall-clock minute that the cron expression matches. It runs
 * once, at one instant: a local time that happens once runs then; one that
 * happens twice (clocks go back) runs at the first occurrence only, and a search
 * that starts inside the second occurrence never returns it; one that does not
 * happen (clocks jump forward) runs at the transition instant when the schedule
 * is a single fixed time of day (its minute and hour fields each have one value),
 * and is skipped otherwise. Slots are ordered by instant; should two local times
 * ever run at the same instant (a shifted slot meeting the next day's slot when a
 * zone skipped a whole day, as Pacific/Apia did in 2011), the earlier local time
 * is the slot and the later one is not.
 *
 * Everything here is a pure function of its inputs: time is an argument, the zone
 * is read-only, nothing allocates and nothing does I/O except the jitter hash,
 * which calls OpenSSL's SHA-256.
 *
 * Costs: in a zone whose folds are all shorter than the time between its clock
 * changes (every zone of the tz database), sched_next() is one cron search and a
 * binary search over the zone's changes of offset from 2000 to 2060, which
 * sched_init() copies into the struct (about 1.5 KiB): 15 to 55 ns on the benchmark
 * machine. Outside those years it asks the zone (two lookups, about twice that).
 * In other zones, and in sched_prev() when a clock change lies between the start
 * and the answer, the cron matches within the zone's offset range of the answer
 * are resolved too: a few more lookups for the usual one-hour change.
 * sched_init() walks the zone's transitions once (tens of microseconds).
 * sched_alert_limit() walks a year of slots but jumps over the inside of each day
 * that no clock change touches, so it costs about 400 searches whatever the
 * expression.
 */
#ifndef LODE_SCHEDULE_H
#define LODE_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cron/cron.h"
#include "tz/tz.h"
#include "util/util.h"

#define SCHED_TABLE 120

/* A cron expression bound to a zone. Built by sched_init, read-only afterwards. */
struct sched {
    struct cron_expr cron;
    const struct tz_zone *zone; /* borrowed: must outlive the sched */
    bool fixed;                 /* cron_is_fixed_time(): gap slots shift instead of skipping */
    int32_t off_min, off_max;   /* the smallest and largest UTC offset the zone ever uses */
    bool simple;   /* every fold is shorter than every stretch between changes (see sched_init) */
    bool constant; /* the offset never changes (UTC, Etc/GMT+5): local time is the instant */
    /* The matching minutes of a day, for the alert limit: first, last, count, largest gap. */
    int32_t day_first, day_last, day_count, day_max_gap; /* seconds after midnight; seconds */
    /*
     * The zone's changes of offset from 2000 to 2060 (or its first SCHED_TABLE ones
     * from 2000), copied here so that sched_next needs no zone lookup in those
     * years: a binary search over at most SCHED_TABLE entries, and the segment
     * arithmetic. About 1.5 KiB per schedule.
     */
    int64_t table_lo, table_hi; /* exact for instants in [table_lo, table_hi) */
    uint32_t ntable;
    int64_t table_at[SCHED_TABLE];      /* the changes, increasing, inside (lo, hi) */
    int32_t table_off[SCHED_TABLE + 1]; /* the offset before table_at[0], then after each */
};

enum sched_note {
    SCHED_NOTE_NONE,     /* the local time happens once */
    SCHED_NOTE_SHIFTED,  /* it falls in a gap: the slot runs at the transition instant */
    SCHED_NOTE_REPEATED, /* it happens twice: the slot runs at the first occurrence */
};

struct sched_slot {
    int64_t local; /* the slot's wall-clock time (local seconds as in tz.h, whole minutes) */
    int64_t at;    /* the instant the slot runs, before the host's jitter offset */
    enum sched_note note;
};

/* Binds an expression (from cron_parse) to a zone. Walks the zone's transitions once. */
void sched_init(struct sched *s, const struct cron_expr *cron, const struct tz_zone *zone);

/*
 * The slot with the smallest instant strictly after `after`. Returns 0, or
 * UTIL_ENOENT when none exists within 29 years (not for an expression cron_parse
 * accepted, short of instants near the end of time).
 */
int sched_next(const struct sched *s, int64_t after, struct sched_slot *out);

/* The slot with the largest instant at or before `at`; UTIL_ENOENT as above. */
int sched_prev(const struct sched *s, int64_t at, struct sched_slot *out);

/*
 * The local times the schedule skips (they fall in a gap and the schedule is not
 * a single fixed time of day), for every gap whose transition instant lies in
 * (from, to]. cb receives each skipped local time and its gap's transition
 * instant, in order; returns how many there were.
 */
typedef void (*sched_skipped_cb)(int64_t local, int64_t transition, void *arg);
size_t sched_skipped(const struct sched *s, int64_t from, int64_t to, sched_skipped_cb cb,
                     void *arg);

/* The transition a note is about: the gap a shifted slot ends, or the fold after a repeat. */
struct sched_change {
    int64_t at;           /* the transition instant */
    int64_t local_before; /* the wall clock just before it (local seconds) */
    int64_t local_after;  /* the wall clock it jumps to */
};
/* Fills ch for a slot with a note; returns UTIL_ENOENT for SCHED_NOTE_NONE. */
int sched_change_of(const struct sched *s, const struct sched_slot *slot, struct sched_change *ch);

/*
 * The jitter offset of docs/schedule.md ("Jitter"), in seconds in [0, jitter): the first eight
 * bytes, big-endian, of SHA-256("lodestore-jitter\0" NS "/" NAME "\0" HOST),
 * modulo jitter; 0 when jitter is 0 or less. Stable across machines and versions.
 */
int64_t sched_jitter_offset(const char *ns, const char *policy, const char *host, int64_t jitter);

/* What the controller knows about one (policy, host) when it decides. */
struct sched_host {
    bool ready;               /* the node exists and is Ready, and the controller runs */
    bool backup_running;      /* a backup of this policy is still active on the host */
    int64_t node_joined;      /* when the node was created */
    int64_t policy_created;   /* when the policy was created */
    int64_t schedule_changed; /* when its schedule (cron, zone or jitter) last changed */
    bool has_last_started;
    int64_t last_started_slot; /* the slot instant of the last backup started for a slot */
    int64_t offset;            /* this host's jitter offset (sched_jitter_offset) */
    int64_t catch_up_window;   /* seconds */
};

enum sched_reason {
    SCHED_RUN,             /* run now for `slot` (on time, or one catch-up) */
    SCHED_NOT_READY,       /* the host cannot run now */
    SCHED_RUNNING,         /* the previous backup of this policy is still running */
    SCHED_NOTHING_DUE,     /* no slot's run time has passed since the slots began */
    SCHED_ALREADY_STARTED, /* the last due slot has started already */
    SCHED_TOO_LATE,        /* the last missed run time is older than the catch-up window */
};

struct sched_decision {
    bool run;
    enum sched_reason reason;
    bool has_slot;
    struct sched_slot slot; /* the last slot whose run time passed (R), when has_slot */
    int64_t run_time;       /* its run time: slot.at + offset */
    int64_t late;           /* now - run_time */
    int64_t next_run;       /* the run time of the first slot still to come, or INT64_MAX */
};

/*
 * The decision of docs/schedule.md ("Missed slots and catch-up") at `now`. R is the last slot whose
 * run time has passed; slots before max(node_joined, policy_created, schedule_changed) do not
 * count. R runs now when the host is ready, nothing is running, R has not started
 * and now - run_time(R) <= catch_up_window. Missed slots are never replayed: only
 * the last one can run, once (the slot identity makes a second start impossible).
 */
void sched_decide(const struct sched *s, const struct sched_host *h, int64_t now,
                  struct sched_decision *out);

/* A sentence for each reason ("the previous backup is still running"). */
const char *sched_reason_text(enum sched_reason r);

/* No limit: the host is never overdue. */
#define SCHED_NO_LIMIT (-1)

/*
 * The alert limit of docs/schedule.md evaluated at `at`, in seconds: max_age when it
 * is positive; else, with a schedule (s not NULL), twice the longest gap between
 * consecutive slot instants over the slots from the first one after `at` through
 * the first one more than 366 days after `at` (at least two), plus jitter; else
 * SCHED_NO_LIMIT.
 */
int64_t sched_alert_limit(const struct sched *s, int64_t jitter, int64_t max_age, int64_t at);

/*
 * When a host enrolled in a policy (docs/schedule.md, "The alert limit"), for a host the
 * policy selects now. selected_since is when the caller saw the policy come to select
 * the host (0 when it did not see it happen, as at its own start); recorded is the time
 * kept from before (0 when none is kept for the host); records_kept says that the
 * policy keeps such times at all (a policy that never had one predates the record).
 * The answer: the later of selected_since and recorded when the caller saw the
 * selection happen; else the recorded time; else `now` when times are kept but none for
 * this host (it came to be selected while nobody watched: its age starts when first
 * seen, so a node added to a nodeSelector later is never overdue at once); else the
 * node's creation.
 */
int64_t sched_enrolled(int64_t selected_since, int64_t recorded, bool records_kept,
                       int64_t node_created, int64_t now);

/*
 * Overdue (docs/schedule.md, "The alert limit"): now - start > limit, where start is the last
 * success (the newest good snapshot) when there is one, else the later of the host's
 * enrolment (sched_enrolled) and the policy's creation. Never with SCHED_NO_LIMIT.
 */
bool sched_overdue(int64_t limit, bool has_success, int64_t last_success, int64_t enrolled,
                   int64_t policy_created, int64_t now);
/* Where a host's overdue age starts (as above): what "since" reports. */
int64_t sched_overdue_start(bool has_success, int64_t last_success, int64_t enrolled,
                            int64_t policy_created);

#endif
