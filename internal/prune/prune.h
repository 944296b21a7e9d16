/*
 * prune: what retention through storage deletes for one policy, decided once for
 * `lode forget --policy` and the controller (docs/retention.md, "Retention through
 * storage").
 *
 * Input: a catalog (struct repo_catalog, from one LIST of the policy's or one
 * host's snapshot prefix that ended without an error), the namespace and policy
 * the listing was for (and its host, when one was named), the policy's rules and
 * the schedule's zone. Output: a plan. Every snapshot of the catalog must belong
 * to that scope, or nothing is planned: the prefix already scopes the listing,
 * and this proves it before a key is deleted. The retention engine decides per
 * host (internal/retention); the plan holds each host's decisions, the kept and
 * forgotten counts, how many kept snapshots each reason keeps, and the keys to
 * delete in the order that is safe:
 *   1. the forgotten snapshots' manifests (sorted bytewise, for bsearch);
 *   2. then, and only for the manifests that are gone, their .incomplete marks
 *      (prune_marks_after): a mark deleted first would make a snapshot whose
 *      manifest survived look complete.
 * A .suspicious mark is never a key of the plan, and a suspicious snapshot is
 * never forgotten (the engine keeps it; the plan aborts if it ever did not).
 *
 * Pure: no I/O, no clock (the engine needs none: its periods count from the
 * snapshots' own times). The caller lists, deletes and reports.
 *
 * Costs: one sort of the catalog (host, then newest first), 32 bytes a snapshot
 * for the engine's input and 24 for its decisions, and one key (about 100 bytes)
 * per forgotten manifest and incomplete mark.
 */
#ifndef LODE_PRUNE_H
#define LODE_PRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy/policy.h"
#include "repo/repo.h"
#include "retention/retention.h"
#include "tz/tz.h"
#include "util/util.h"

/* One host's part of the plan: snaps[from .. from + n) and dec[from .. from + n). */
struct prune_host {
    const char *host; /* borrowed from the catalog */
    size_t from, n;
};

struct prune_plan {
    /* Per catalog entry, in the catalog's order after the build (host, then newest
     * first); ids are borrowed from the catalog, which must outlive the plan. */
    struct ret_snapshot *snaps;
    /* Per entry, each host's decisions newest first; dec[from + i].index is relative
     * to the host's from, as ret_evaluate() gives it. */
    struct ret_decision *dec;
    size_t n;
    struct prune_host *hosts;
    size_t nhosts;
    size_t kept, forgotten;
    size_t reasons[RET_REASON_COUNT]; /* kept snapshots that reason i keeps */
    char **manifests;                 /* forgotten manifests' keys, sorted bytewise */
    size_t nmanifests;
    char **marks;    /* their .incomplete marks, in their manifests' order (also sorted) */
    size_t *mark_of; /* marks[i]'s manifest: an index into manifests */
    size_t nmarks;
};

/*
 * Sorts cat (host bytewise, then newest first) and plans. host NULL: every host of
 * the policy. rules NULL: no rules; zone NULL: UTC. Returns 0, or
 *   UTIL_EIO    a snapshot of another namespace, policy or host is in the catalog
 *               ("the listing of NS/P returned a snapshot of NS2/P2/H2");
 *   UTIL_EINVAL the engine refused a host's snapshots ("host H: ...").
 * On error the plan is empty (prune_plan_free is still safe).
 */
int prune_plan_build(struct prune_plan *p, struct repo_catalog *cat, const char *ns,
                     const char *policy, const char *host, const struct policy_retention *rules,
                     const struct tz_zone *zone, struct util_err *err);

/* The position of key in p->manifests, or -1. */
ssize_t prune_manifest_find(const struct prune_plan *p, const char *key);

/*
 * The marks to delete once the manifests have been: those whose manifest is gone
 * (gone[i] for p->manifests[i]: deleted, or already absent). out needs room for
 * p->nmarks keys (borrowed from the plan); returns how many, sorted.
 */
size_t prune_marks_after(const struct prune_plan *p, const bool *gone, const char **out);

/* The snapshot that host h's decision i (newest first, 0 .. h->n - 1) is about. */
static inline const struct ret_snapshot *prune_snapshot(const struct prune_plan *p,
                                                        const struct prune_host *h, size_t i)
{
    return &p->snaps[h->from + p->dec[h->from + i].index];
}

void prune_plan_free(struct prune_plan *p);

#endif
