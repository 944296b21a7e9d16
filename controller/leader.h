/*
 * leader: leader election on a coordination.k8s.io/v1 Lease, as client-go does it.
 *
 * Every retry period the candidate reads the Lease. It takes the Lease when nobody
 * holds it, or when the holder's record has not changed for leaseDuration as seen on
 * this candidate's own clock (so clocks of different machines never need to agree),
 * and the leader renews it. Writes carry the resourceVersion that was read, so two
 * candidates racing for an expired Lease cannot both win: one gets 409. A leader that
 * has not renewed within renewDeadline calls lost_cb: the controller stops acting at
 * once and lode-controller exits rather than act without the Lease.
 *
 * Costs: one GET and at most one PUT per retry period.
 */
#ifndef LODE_CTL_LEADER_H
#define LODE_CTL_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "kube/kube.h"

struct ctl_leader;

struct ctl_leader_opts {
    const char *namespace;
    const char *name;
    const char *identity;
    int64_t lease_duration_ms;
    int64_t renew_deadline_ms;
    int64_t retry_period_ms;
    void (*acquired_cb)(void *arg);
    void (*lost_cb)(void *arg);
    void *arg;
};

int ctl_leader_init(uv_loop_t *loop, struct ctl_leader **out, struct kube_client *kube,
                    const struct ctl_leader_opts *opts, struct util_err *err);
void ctl_leader_start(struct ctl_leader *l);
/*
 * Stops trying; a leader gives the Lease up (clears the holder) so a standby takes over
 * at once. done_cb runs when that write has been answered (or at once when there is
 * nothing to give up); only then may the client be closed.
 */
void ctl_leader_stop(struct ctl_leader *l, void (*done_cb)(void *arg), void *arg);
void ctl_leader_close(struct ctl_leader *l);
bool ctl_leader_is_leader(const struct ctl_leader *l);

#endif
