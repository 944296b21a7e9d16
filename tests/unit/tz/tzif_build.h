/*
 * Builds TZif bytes for tests: a valid file from a small description, which the
 * error-path tests then damage one field at a time.
 */
#ifndef LODE_TZIF_BUILD_H
#define LODE_TZIF_BUILD_H

#include <stdint.h>
#include <string.h>

#include "util/util.h"

struct tzif_spec {
    char version; /* '2', '3', '4' or 0 for version 1 */
    size_t timecnt;
    const int64_t *times;
    const uint8_t *idx;
    size_t typecnt;
    const int32_t *offs;
    const uint8_t *isdst;
    const uint8_t *desig;
    const char *chars; /* charcnt bytes, NULs included */
    size_t charcnt;
    size_t leapcnt;     /* leap records written as zeros */
    bool indicators;    /* write isstd and isut arrays (all zero) */
    const char *footer; /* the TZ string between the two newlines */
};

static inline void tzif_put32(struct util_buf *b, uint32_t v)
{
    unsigned char p[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    util_buf_append(b, p, 4);
}

static inline void tzif_put64(struct util_buf *b, int64_t v)
{
    tzif_put32(b, (uint32_t)((uint64_t)v >> 32));
    tzif_put32(b, (uint32_t)v);
}

static inline void tzif_header(struct util_buf *b, const struct tzif_spec *s, size_t timecnt)
{
    size_t ind = s->indicators ? s->typecnt : 0;
    util_buf_append(b, "TZif", 4);
    util_buf_append(b, &s->version, 1);
    util_buf_append(b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 15);
    tzif_put32(b, (uint32_t)ind);
    tzif_put32(b, (uint32_t)ind);
    tzif_put32(b, (uint32_t)s->leapcnt);
    tzif_put32(b, (uint32_t)timecnt);
    tzif_put32(b, (uint32_t)s->typecnt);
    tzif_put32(b, (uint32_t)s->charcnt);
}

static inline void tzif_block(struct util_buf *b, const struct tzif_spec *s, unsigned timesize)
{
    for (size_t i = 0; i < s->timecnt; i++) {
        if (timesize == 8)
            tzif_put64(b, s->times[i]);
        else
            tzif_put32(b, (uint32_t)(int32_t)s->times[i]);
    }
    if (s->timecnt > 0)
        util_buf_append(b, s->idx, s->timecnt);
    for (size_t i = 0; i < s->typecnt; i++) {
        tzif_put32(b, (uint32_t)s->offs[i]);
        unsigned char d[2] = {s->isdst[i], s->desig[i]};
        util_buf_append(b, d, 2);
    }
    util_buf_append(b, s->chars, s->charcnt);
    for (size_t i = 0; i < s->leapcnt; i++) {
        if (timesize == 8)
            tzif_put64(b, 78796800 + (int64_t)i * 15768000);
        else
            tzif_put32(b, (uint32_t)(78796800 + i * 15768000));
        tzif_put32(b, (uint32_t)i + 1);
    }
    if (s->indicators) {
        for (size_t i = 0; i < 2 * s->typecnt; i++)
            util_buf_append(b, "\0", 1);
    }
}

/* The bytes of the file; *len is set. The caller frees. */
static inline unsigned char *tzif_build(const struct tzif_spec *s, size_t *len)
{
    struct util_buf b;
    util_buf_init(&b);
    tzif_header(&b, s, s->timecnt);
    tzif_block(&b, s, 4);
    if (s->version != 0) {
        tzif_header(&b, s, s->timecnt);
        tzif_block(&b, s, 8);
        util_buf_puts(&b, "\n");
        util_buf_puts(&b, s->footer ? s->footer : "");
        util_buf_puts(&b, "\n");
    }
    *len = b.len;
    return (unsigned char *)util_buf_steal(&b);
}

/* A zone with one transition (at `at`, to type 0) and the given footer. */
static inline unsigned char *tzif_footer_zone(const char *footer, int64_t at, int32_t off,
                                              const char *abbr, size_t *len)
{
    int64_t times[1] = {at};
    uint8_t idx[1] = {0};
    int32_t offs[1] = {off};
    uint8_t isdst[1] = {0};
    uint8_t desig[1] = {0};
    struct tzif_spec s = {'3', 1,     times, idx, 1, offs, isdst, desig, abbr, strlen(abbr) + 1,
                          0,   false, footer};
    return tzif_build(&s, len);
}

#endif
