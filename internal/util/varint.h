/*
 * varint: the unsigned LEB128 integers of the repository's binary records (file lists,
 * metadata places and chunk sets, gc's cache: docs/repository.md), written to a
 * util_buf and read back from bytes through a reader that remembers a fault instead of
 * returning one at every call, so a decoder reads a whole record and checks once.
 *
 * Costs: one to ten bytes a value (seven bits a byte, smallest first); no allocation
 * when reading.
 */
#ifndef LODE_UTIL_VARINT_H
#define LODE_UTIL_VARINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* Bytes p[i .. n) still to read; bad once a read ran past n or a value was malformed. */
struct util_rd {
    const uint8_t *p;
    size_t n, i;
    bool bad;
};

void util_varint_put(struct util_buf *b, uint64_t v);
/* 0 and r->bad when the bytes end inside the value or it is longer than ten bytes. */
uint64_t util_varint_get(struct util_rd *r);
/* A value that must fit 32 bits: r->bad otherwise. */
uint32_t util_varint_get_u32(struct util_rd *r);
/* The next n bytes (borrowed), or NULL and r->bad when fewer are left. */
const uint8_t *util_rd_raw(struct util_rd *r, size_t n);

/* Signed values as small unsigned ones: 0, -1, 1, -2 ... become 0, 1, 2, 3 ... */
uint64_t util_zigzag(int64_t v);
int64_t util_unzigzag(uint64_t v);

#endif
