/*
 * check: whether a repository is whole (docs/repository.md, "Checking"): its
 * structure always, and with read_data every pack read and every chunk
 * authenticated. check.c's top says what is read and what it costs.
 *
 * Every damaged object is named on stderr as "damaged: KEY: why", once, and an
 * object the repository should not hold as "note: unexpected object KEY"; what
 * cannot be read is a "lode check: cannot read KEY: ..." line. Scripts rely on the
 * damaged lines (docs/repository.md).
 */
#ifndef LODE_AGENT_CHECK_H
#define LODE_AGENT_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage.h"

struct ck_result {
    size_t snapshots; /* in the catalog */
    unsigned whole;   /* of them, without damage */
    size_t packs;     /* listed under data/ */
    unsigned runs;    /* run records */
    unsigned damaged; /* damaged objects and references, each named on stderr */
    uint64_t read_bytes;
};

/*
 * Checks the repository st holds, opened with its key (storage_open_keyed).
 * Returns 0 when no damage was found, AGENT_EDAMAGED when some was (out says how
 * much), UTIL_EIO when the repository could not be read whole (said on stderr;
 * out is zero: the answer would be incomplete).
 */
int ck_run(struct storage *st, bool read_data, struct ck_result *out);

#endif
