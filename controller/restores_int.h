/*
 * restores_int: what the two files of the Restores share (restores.c watches them and
 * decides which to look at each tick; restores_run.c sends the requests that start a
 * Restore's Job, follow it and write the outcome). Nothing outside them includes this.
 */
#ifndef LODE_CTL_RESTORES_INT_H
#define LODE_CTL_RESTORES_INT_H

#include "ctl_int.h"
#include "restorejob.h"

struct ctl_restores {
    struct ctl *c;
    struct kube_reflector *refl;
    uv_timer_t timer;
    struct util_map items; /* ns/name -> rst_item */
    bool stopped;
};

/* A Restore as last seen. */
struct rst_item {
    json_t *obj;
    bool busy; /* a request about it is in flight */
};

struct rst_op {
    struct ctl_write w; /* first */
    struct ctl_restores *r;
    char *key;
    char *ns, *name, *uid;
    char *job;
    char *id;
    char *target;
    json_t *job_obj; /* the ended Job, while its pods are read */
    json_t *obj;     /* the Restore, while it starts */
    int64_t started;
};

/* A request about the Restore of s, in flight; busy: the Restore waits for its answer. */
struct rst_op *rst_op_new(struct ctl_restores *r, const struct ctl_restore_spec *s, bool busy);
void rst_op_free_cb(struct ctl_write *w);
/* An answer only logged when it is a failure (a 404 is no failure). */
void rst_quiet_cb(const struct kube_result *res, void *arg);
/* A status merge patch (taken) of the Restore of s; busy until answered. */
void rst_patch(struct ctl_restores *r, const struct ctl_restore_spec *s, json_t *patch);
void rst_event(struct ctl_restores *r, const char *ns, const char *name, const char *uid,
               const char *type, const char *reason, const char *msg);
/* Failed before a Job ran: status and a Warning Event. */
/* Deletes a Restore's Job (Background propagation): its pod gets SIGTERM. */
void rst_delete_job(struct ctl_restores *r, const struct ctl_restore_spec *s, const char *job);
void rst_fail(struct ctl_restores *r, const struct ctl_restore_spec *s, const char *reason,
              const char *msg);
/* A running Restore's Job (one GET); when it has ended, its pods and the outcome. */
void rst_watch_job(struct ctl_restores *r, const struct ctl_restore_spec *s, const char *job,
                   const json_t *obj);
/* A Restore free to start: its snapshot found (one LIST of Backups for a policy), its Job made. */
void rst_resolve(struct ctl_restores *r, const struct ctl_restore_spec *s, const json_t *obj);

#endif
