/*
 * varint: LEB128 integers and a fault-remembering reader (varint.h).
 */
#include "util/varint.h"

void util_varint_put(struct util_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    util_buf_append(b, tmp, n);
}

uint64_t util_varint_get(struct util_rd *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->bad || r->i >= r->n) {
            r->bad = true;
            return 0;
        }
        uint8_t byte = r->p[r->i++];
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

uint32_t util_varint_get_u32(struct util_rd *r)
{
    uint64_t v = util_varint_get(r);
    if (v > UINT32_MAX)
        r->bad = true;
    return (uint32_t)v;
}

const uint8_t *util_rd_raw(struct util_rd *r, size_t n)
{
    if (r->bad || n > r->n - r->i) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *p = r->p + r->i;
    r->i += n;
    return p;
}

uint64_t util_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

int64_t util_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}
