/*
 * pin: the .pinned mark of a snapshot (docs/retention.md, "Pinned snapshots"): written,
 * read and removed here and nowhere else, so that a change of the marks' format (their
 * authentication) is made in one place.
 *
 * The mark is the object snapshots/<ns>/<policy>/<host>/<id>.pinned beside the manifest;
 * its body is {"reason": TEXT}, the reason a person gave. The catalog sees the mark from
 * the listing alone (repo_snapshot.pinned), so retention needs no extra request; the
 * reason costs one GET per pinned snapshot, asked only where it is shown.
 */
#ifndef LODE_AGENT_PIN_H
#define LODE_AGENT_PIN_H

#include <stdbool.h>

#include "storage.h"

#define PIN_REASON_MAX 256 /* bytes of the reason, in UTF-8 */

/*
 * Pins snap with reason (1 to PIN_REASON_MAX bytes, no control characters), or
 * changes the reason of a pinned one. *changed says whether anything changed.
 */
int pin_set(struct storage *st, const struct repo_snapshot *snap, const char *reason, bool *changed,
            struct util_err *err);
/* Unpins snap; nothing to do (and *changed false) when it is not pinned. */
int pin_clear(struct storage *st, const struct repo_snapshot *snap, bool *changed,
              struct util_err *err);
/* The reason of a pinned snapshot (owned by the caller); "" when the mark has none. */
int pin_reason(struct storage *st, const struct repo_snapshot *snap, char **reason,
               struct util_err *err);
/* UTIL_EINVAL with a message when reason is not one pin_set takes. */
int pin_reason_check(const char *reason, struct util_err *err);

#endif
