/*
 * The GC Jobs' state per repository, shared by gcjobs.c (which keeps it) and
 * gcmetrics.c (which reports it on /metrics). Private to those two files; the
 * controller sees only the ctl_gc_* functions of ctl_int.h.
 */
#ifndef LODE_CTL_GCJOBS_H
#define LODE_CTL_GCJOBS_H

#include "ctl_int.h"
#include "gcplan.h"

struct gc_repo {
    char *ns, *name;
    bool busy;   /* a request about it is in flight */
    bool seeded; /* job and last_slot were read from status.gc */
    char *job;   /* the active GC Job, or NULL */
    bool has_last;
    int64_t last_slot;
    char *sched_key; /* "schedule\ntimezone" the sched was built from */
    struct tz_zone *zone;
    struct sched sched;
    bool sched_ok;
    int64_t since;             /* slots before this do not count (created, or gc spec changed) */
    char status_hash[17];      /* status.gc.scheduleHash as read at the first look */
    int64_t status_changed_at; /* status.gc.scheduleChangedAt as read then */
    char *written;             /* the last status.gc nextRun/message written, to skip repeats */
    char *result_msg;          /* the last run's message, put back when a note is cleared */
    /* For /metrics: the last outcome and success as status.gc keeps them, so a restart
     * loses neither; counts since this process started. */
    bool has_success, last_failed, suspended;
    int64_t last_success, created;
    int64_t limit; /* sched_alert_limit of the bound schedule, or SCHED_NO_LIMIT */
    uint64_t succeeded, failed, packs_deleted, bytes_freed;
};

struct ctl_gc {
    struct ctl *c;
    uv_timer_t timer;
    struct util_map repos; /* ns/name -> gc_repo */
    bool stopped;
};

#endif
