/*
 * FastCDC (Xia et al., USENIX ATC 2016) with normalization level 2: the mask
 * before the average size has two more bits than log2(avg), the one after it two
 * fewer. The hash is h = (h << 1) + gear[byte], so bit k of h depends on the last
 * k+1 bytes; the masks test the top bits, which makes the window 64 bytes.
 */
#include <string.h>

#include <openssl/sha.h>

#include "chunker/chunker.h"

static uint64_t chunker_top_mask(unsigned bits)
{
    return bits == 0 ? 0 : ~UINT64_C(0) << (64 - bits);
}

int chunker_init(struct chunker *c, uint32_t min, uint32_t avg, uint32_t max,
                 const uint8_t seed[32], struct util_err *err)
{
    unsigned bits = 0;
    uint8_t block[36], digest[SHA256_DIGEST_LENGTH];

    if (avg == 0 || (avg & (avg - 1)) != 0 || min < 64 || min > avg || avg > max)
        return util_err_set(err, UTIL_EINVAL,
                            "chunk sizes %u/%u/%u are invalid: need 64 <= min <= avg <= max and "
                            "avg a power of two",
                            min, avg, max);
    while ((UINT32_C(1) << bits) < avg)
        bits++;
    if (bits < 3 || bits > 60)
        return util_err_set(err, UTIL_EINVAL, "average chunk size %u is out of range", avg);
    memset(c, 0, sizeof(*c));
    c->min = min;
    c->avg = avg;
    c->max = max;
    c->mask_small = chunker_top_mask(bits + 2);
    c->mask_large = chunker_top_mask(bits - 2);
    /* Table: SHA-256(seed || counter), eight words per counter value. */
    memcpy(block, seed, 32);
    for (unsigned i = 0; i < 256 / 4; i++) {
        block[32] = (uint8_t)i;
        block[33] = block[34] = block[35] = 0;
        SHA256(block, sizeof(block), digest);
        for (unsigned j = 0; j < 4; j++) {
            uint64_t w = 0;
            for (unsigned k = 0; k < 8; k++)
                w = (w << 8) | digest[j * 8 + k];
            c->gear[i * 4 + j] = w;
        }
    }
    return 0;
}

size_t chunker_cut(const struct chunker *c, const uint8_t *buf, size_t len)
{
    size_t n = len < c->max ? len : c->max;
    size_t normal = c->avg < n ? c->avg : n;
    size_t i;
    uint64_t h = 0;

    if (len <= c->min)
        return len;
    /* The 64 bytes before min seed the hash so a cut at min is possible. */
    for (i = c->min - 64; i < c->min; i++)
        h = (h << 1) + c->gear[buf[i]];
    for (; i < normal; i++) {
        h = (h << 1) + c->gear[buf[i]];
        if ((h & c->mask_small) == 0)
            return i + 1;
    }
    for (; i < n; i++) {
        h = (h << 1) + c->gear[buf[i]];
        if ((h & c->mask_large) == 0)
            return i + 1;
    }
    return n;
}
