/*
 * pin: the .pinned mark of a snapshot (docs/retention.md, "Pinned snapshots"): written,
 * read and removed here and nowhere else, so that a change of the marks' format (their
 * authentication) is made in one place.
 *
 * The mark is the object snapshots/<ns>/<policy>/<host>/<id>.pinned beside the manifest;
 * its body is {"format", "reason": TEXT, "tag"}: the reason a person gave and a tag made
 * with the repository's keys over its place and reason (repo_pin_encode), so a bucket
 * writer without the key cannot pin. The catalog sees the mark from the listing
 * (repo_snapshot.pinned); a command that acts on it with the key checks it first
 * (pin_check_catalog: one GET per pinned snapshot, and pins are few).
 */
#ifndef LODE_AGENT_PIN_H
#define LODE_AGENT_PIN_H

#include <stdbool.h>

#include "storage.h"

#define PIN_REASON_MAX 256 /* bytes of the reason, in UTF-8 */

/*
 * Pins snap with reason (1 to PIN_REASON_MAX bytes, no control characters), or
 * changes the reason of a pinned one; the mark carries a tag made with keys
 * (repo_pin_encode). *changed says whether anything changed.
 */
int pin_set(struct storage *st, const struct repo_keys *keys, const struct repo_snapshot *snap,
            const char *reason, bool *changed, struct util_err *err);
/* Unpins snap; nothing to do (and *changed false) when it is not pinned. */
int pin_clear(struct storage *st, const struct repo_snapshot *snap, bool *changed,
              struct util_err *err);
/*
 * The reason of a pinned snapshot (owned by the caller). With keys, the mark's tag is
 * checked: UTIL_EIO, naming the mark, for one that does not authenticate. keys NULL:
 * the reason as the bucket holds it, unchecked (a listing without the key).
 */
int pin_reason(struct storage *st, const struct repo_keys *keys, const struct repo_snapshot *snap,
               char **reason, struct util_err *err);
/* The pins a command checked, with their reasons. */
struct pin_entry {
    struct repo_snapshot snap;
    char *reason;
};

struct pin_list {
    struct pin_entry *v;
    size_t n, cap;
    size_t ignored; /* pins that did not authenticate */
};

/*
 * Reads every pin of cat (one GET each) and checks it with keys (NULL: unchecked): a pin
 * that does not authenticate is dropped from the catalog (pinned false) with a warning
 * on stderr naming it ("lode CMD: ignoring a pin: KEY: ..."), counted in pins->ignored;
 * one removed since the listing is dropped quietly. pins gets each kept pin and its
 * reason (pin_list_free). Another failure (I/O) is the error, and pins is empty.
 */
int pin_check_catalog(struct storage *st, const struct repo_keys *keys, struct repo_catalog *cat,
                      const char *cmd, struct pin_list *pins, struct util_err *err);
/* The reason of snap among pins (borrowed), or "" when it is not there. */
const char *pin_list_reason(const struct pin_list *pins, const struct repo_snapshot *snap);
void pin_list_free(struct pin_list *pins);
/* UTIL_EINVAL with a message when reason is not one pin_set takes. */
int pin_reason_check(const char *reason, struct util_err *err);

#endif
