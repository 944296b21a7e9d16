/*
 * chunker: content-defined chunk boundaries (FastCDC with normalized chunking).
 *
 * A file is cut where a rolling "gear" hash of the last 64 bytes has its top bits
 * zero. Because a boundary depends only on the bytes just before it, inserting or
 * deleting bytes in a file moves the boundaries near the edit and leaves the
 * others where they were (relative to the content), so an edit in the middle of a
 * large file changes about one chunk. Normalized chunking uses a stricter mask
 * before the average size and a looser one after it, which keeps sizes close to
 * the average (docs/repository.md gives the sizes: 512 KiB min, 1 MiB average,
 * 8 MiB max).
 *
 * The gear table (256 random 64-bit words) is derived from a per-repository
 * secret seed, so chunk sizes do not reveal which known file is stored.
 *
 * chunker_cut() is a pure function over a buffer that starts at a chunk start:
 * the caller keeps up to `max` bytes buffered and calls it again after each cut.
 * Costs: one table lookup, a shift and an add per byte after the first `min`
 * bytes of each chunk (about 2 GB/s per core); no allocation.
 */
#ifndef LODE_CHUNKER_H
#define LODE_CHUNKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

#define CHUNKER_MIN (512u * 1024)
#define CHUNKER_AVG (1024u * 1024)
#define CHUNKER_MAX (8u * 1024 * 1024)

struct chunker {
    uint32_t min, avg, max;
    uint64_t mask_small; /* before avg: more bits, so cuts are rarer */
    uint64_t mask_large; /* after avg: fewer bits */
    uint64_t gear[256];
};

/*
 * Sets up a chunker for sizes min <= avg <= max (avg a power of two, min >= 64)
 * and the table derived from the 32-byte seed. Returns 0 or UTIL_EINVAL with a
 * message for sizes that do not fit those rules.
 */
int chunker_init(struct chunker *c, uint32_t min, uint32_t avg, uint32_t max,
                 const uint8_t seed[32], struct util_err *err);

/*
 * The length of the chunk at the start of buf. buf must hold at least max bytes,
 * or all the data that is left (then the rest may be the last chunk). Never
 * returns more than max or len, nor 0 unless len is 0.
 */
size_t chunker_cut(const struct chunker *c, const uint8_t *buf, size_t len);

#endif
