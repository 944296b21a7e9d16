/*
 * trust: which listed objects a forget may believe (docs/retention.md, "Retention through
 * storage"; docs/security.md, "A bucket writer").
 *
 * A listing names objects; it does not prove that lode wrote them. A forget that lets a
 * listed name take a rule's slot can be made to delete a real snapshot by anyone who can
 * write to the bucket. So, with the repository key, the manifests a plan keeps and the
 * pins are read and checked (authenticated, and bound to their source and id), and one
 * that fails keeps no slot: it is dropped from the catalog, the plan is made again, and
 * the object is left for `lode check` to name (never deleted).
 *
 * This module is the pure part: the checks of an object's bytes, the kept snapshots of a
 * plan, dropping entries, and a memory of verdicts per (policy, host) so that a forget
 * reads again only what changed: a verdict holds for an object as listed with the same
 * ETag and size (the store computes the ETag from the bytes), under the same repository
 * and key (the scope); objects no longer listed are forgotten at the end of a run.
 *
 * Costs: per remembered object its key (about 100 bytes), its ETag and, for one that
 * failed, the reason; per run the listing's manifests and pins again, until the run ends.
 */
#ifndef LODE_PRUNE_TRUST_H
#define LODE_PRUNE_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prune/prune.h"
#include "repo/repo.h"
#include "util/map.h"
#include "util/util.h"

/* A manifest or a pin larger than this is not one lode wrote (manifests are a few KiB):
 * refused from its listed size, without reading it, and the read stops there. */
#define PRUNE_OBJECT_MAX (4u << 20)

enum prune_verdict { PRUNE_UNKNOWN, PRUNE_GOOD, PRUNE_BAD };

struct prune_trust {
    struct util_map seen;   /* key -> verdict of an earlier read (trust.c) */
    struct util_map listed; /* key -> ETag and size as this run listed them */
    char *scope;            /* the repository and key the verdicts hold for */
};

void prune_trust_init(struct prune_trust *t);
/* A run begins under scope: the last listing is cleared, and every verdict too when the
 * scope changed (another repository, another key). */
void prune_trust_begin(struct prune_trust *t, const char *scope);
/* One listed object; only manifests and .pinned marks are kept. */
void prune_trust_listed(struct prune_trust *t, const char *key, const char *etag, uint64_t size);
/*
 * What is known of key as listed now: PRUNE_GOOD or PRUNE_BAD (why: the reason, borrowed)
 * when the same object (ETag and size) was read before, PRUNE_BAD for one listed larger
 * than PRUNE_OBJECT_MAX, else PRUNE_UNKNOWN (never read, changed, listed without an ETag,
 * or not listed).
 */
enum prune_verdict prune_trust_get(const struct prune_trust *t, const char *key, const char **why);
/* Records a read's verdict, when the object read (etag, size as the GET gave them) is the
 * one listed; else nothing is remembered and the next run reads it again. */
void prune_trust_set(struct prune_trust *t, const char *key, const char *etag, uint64_t size,
                     bool good, const char *why);
/* The run ended: verdicts of objects it did not list go, and so does the listing. */
void prune_trust_end(struct prune_trust *t);
void prune_trust_free(struct prune_trust *t);

/*
 * The checks, on an object's bytes: 0 when the manifest of s opens with keys and names
 * s's source and id (repo_manifest_decode, repo_manifest_placed), or when the pin of s
 * has a tag made with keys over its place (repo_pin_decode); else UTIL_EIO or UTIL_EINVAL
 * with the reason in err.
 */
int prune_check_manifest(const struct repo_keys *keys, const struct repo_snapshot *s,
                         const char *data, size_t len, struct util_err *err);
int prune_check_pin(const struct repo_keys *keys, const struct repo_snapshot *s, const char *data,
                    size_t len, struct util_err *err);

/* The catalog positions of the snapshots plan keeps (out has room for plan->n); how many. */
size_t prune_kept(const struct prune_plan *plan, size_t *out);
/* Removes the entries with drop[i] from cat, keeping the order; returns how many went. */
size_t prune_catalog_drop(struct repo_catalog *cat, const bool *drop);

#endif
