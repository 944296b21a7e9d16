/*
 * forget: deleting what retention forgets through storage (docs/retention.md,
 * "Retention through storage"). The decision and the keys are internal/prune's, the
 * same the controller deletes; this deletes them: the manifests with DeleteObjects
 * (at most 1,000 keys a request, each key's result checked), then, only for the
 * manifests that are gone, their .incomplete marks (a mark deleted first would make a
 * snapshot whose manifest survived look complete).
 *
 * Costs: one DeleteObjects request per 1,000 manifests, one more per 1,000 marks.
 */
#ifndef LODE_AGENT_FORGET_H
#define LODE_AGENT_FORGET_H

#include <stddef.h>

#include "prune/prune.h"
#include "storage.h"

struct forget_outcome {
    size_t manifests, manifests_deleted, manifests_failed;
    size_t manifests_locked; /* refused by Object Lock: kept (docs/security.md) */
    size_t marks, marks_deleted, marks_failed;
    unsigned requests;
};

/*
 * Deletes the plan's manifests, then the marks of those gone. Returns 0 when every
 * key is gone, UTIL_EIO when some could not be deleted (each named on stderr as
 * "lode forget: cannot delete KEY: ..."; out says how many).
 */
int forget_apply(struct storage *st, const struct prune_plan *plan, struct forget_outcome *out);

/* The snapshots forget_check_kept authenticated, so a second pass reads them no more. */
struct forget_checked {
    struct repo_snapshot *v;
    size_t n, cap;
};

/*
 * Retention with the key (docs/retention.md, "Retention through storage"): a manifest
 * that does not authenticate, or is not in its place (moved or copied), must not take a
 * rule's slot and so cost a real snapshot its place. Reads the manifest of every
 * snapshot plan keeps that checked does not hold yet (one GET each); those that fail are
 * named on stderr ("lode forget: ignoring KEY: ...") and dropped from cat, *dropped
 * saying how many: the caller plans again until none is. A read that fails otherwise
 * (I/O) is the error, and nothing should be deleted.
 */
int forget_check_kept(struct storage *st, const struct repo_keys *keys, struct repo_catalog *cat,
                      const struct prune_plan *plan, struct forget_checked *checked,
                      size_t *dropped, struct util_err *err);
void forget_checked_free(struct forget_checked *c);

#endif
