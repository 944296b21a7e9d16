/*
 * tz internals shared by the tz sources and the tz unit tests; not an API.
 *
 * A zone is one sorted array of transitions (the file's, then those the footer
 * generates up to TZ_GEN_END_YEAR), the time types they switch to, and the parsed
 * footer for the instants the array does not cover. See tz.h for the contract.
 */
#ifndef LODE_TZ_INTERNAL_H
#define LODE_TZ_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tz/tz.h"

/*
 * Instants are clamped to [-TZ_T_LIMIT, TZ_T_LIMIT] (about 36 billion years either
 * way) so that no sum of an instant, an offset and a rule time can overflow.
 */
#define TZ_T_LIMIT ((int64_t)1 << 60)
/* The largest UTC offset accepted, in the file or the footer: 167:59:59. */
#define TZ_MAX_OFFSET 604799
/* The footer's transitions are precomputed from TZ_GEN_LO_YEAR to TZ_GEN_END_YEAR. */
#define TZ_GEN_LO_YEAR  1800
#define TZ_GEN_END_YEAR 2200

/* A time type: the offset, the DST flag and the abbreviation (an index into abbrs). */
struct tz_type {
    int32_t off;
    uint16_t abbr;
    uint8_t isdst;
};

enum tz_rule_kind {
    TZ_RULE_JULIAN1, /* Jn: day 1..365, February 29 never counted */
    TZ_RULE_JULIAN0, /* n: day 0..365, February 29 counted */
    TZ_RULE_MONTH    /* Mm.w.d: weekday d of week w (5 = last) of month m */
};

struct tz_rule {
    uint8_t kind;
    uint8_t month, week, wday;
    uint16_t day;
    int32_t time; /* seconds after local midnight, -167h..167h */
};

/* A POSIX TZ string as parsed, before its names become types. */
struct tz_posix {
    char std_name[64], dst_name[64];
    int32_t std_off, dst_off; /* local = utc + off (the POSIX sign is inverted) */
    bool has_dst;
    struct tz_rule start, end; /* start in standard time, end in DST time */
};

enum tz_footer_kind {
    TZ_FOOTER_NONE,  /* no footer: the last type goes on for ever */
    TZ_FOOTER_FIXED, /* one type, no DST */
    TZ_FOOTER_RULES  /* standard and DST switched by two yearly rules */
};

struct tz_footer {
    uint8_t kind;
    bool never_changes; /* rules whose switches cancel out, year after year */
    uint16_t std_type, dst_type;
    int32_t std_off, dst_off;
    struct tz_rule start, end;
};

struct tz_zone {
    char *name;
    /* The transitions, strictly increasing, with their types and offsets side by side. */
    size_t n;
    int64_t *at;
    int32_t *off;
    uint16_t *tt;
    /* The type in force before at[0] (or always when n is 0). */
    uint16_t pre_type;
    struct tz_type *types;
    size_t ntypes;
    char *abbrs;
    size_t nabbrs;
    struct tz_footer f;
    /*
     * The footer rules instants >= footer_from. The array is exact for t < footer_from
     * and for gen_lo <= t < gen_hi; the footer is evaluated directly elsewhere
     * (only when f.kind is TZ_FOOTER_RULES; otherwise gen_hi is INT64_MAX).
     */
    int64_t footer_from, gen_lo, gen_hi;
    int32_t omin, omax; /* the smallest and largest offset of any type in use */
};

/* Parses a POSIX TZ string of len bytes. Returns 0 or UTIL_EINVAL with a message. */
int tz_posix_parse(struct tz_posix *out, const char *s, size_t len, struct util_err *err);

/* The day (since the epoch) a rule selects in year y. */
int64_t tz_rule_day(const struct tz_rule *r, int64_t y);

/* Direct footer evaluation (f.kind must be TZ_FOOTER_RULES), for any t. */
bool tz_footer_dst_at(const struct tz_footer *f, int64_t t);
/* The first instant after t where the footer switches, or INT64_MAX. */
int64_t tz_footer_next(const struct tz_footer *f, int64_t t);
/*
 * Calls emit_cb for every switch in (lo, hi) that changes the state, in order, in
 * one pass over the years (what tz_footer_next would find one call at a time).
 * Returns how many.
 */
size_t tz_footer_changes(const struct tz_footer *f, int64_t lo, int64_t hi,
                         void (*emit_cb)(void *arg, int64_t at, bool dst), void *arg);

#endif
