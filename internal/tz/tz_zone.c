/*
 * A zone from the bytes of a TZif file, and the two primitives on it.
 *
 * The file is never trusted: every count is checked against the bytes that are
 * there before anything is read, every index against its table, and the arithmetic
 * is done on clamped instants so that no input can overflow it.
 */
#include "tz/tz_internal.h"

#include <stdlib.h>
#include <string.h>

#define DAY          86400
#define HEADER_BYTES 44

struct header {
    char version;
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    uint64_t v = (uint64_t)be32(p) << 32 | be32(p + 4);
    return (int64_t)v; /* two's complement, as RFC 9636 says */
}

static void read_header(const unsigned char *p, struct header *h)
{
    h->version = (char)p[4];
    h->isutcnt = be32(p + 20);
    h->isstdcnt = be32(p + 24);
    h->leapcnt = be32(p + 28);
    h->timecnt = be32(p + 32);
    h->typecnt = be32(p + 36);
    h->charcnt = be32(p + 40);
}

/* Bytes of the data block after a header; 64-bit counts fit whatever the file says. */
static uint64_t block_bytes(const struct header *h, unsigned timesize)
{
    return (uint64_t)h->timecnt * (timesize + 1) + (uint64_t)h->typecnt * 6 + h->charcnt +
           (uint64_t)h->leapcnt * (timesize + 4) + h->isstdcnt + h->isutcnt;
}

static int64_t clamp_t(int64_t t)
{
    return t < -TZ_T_LIMIT ? -TZ_T_LIMIT : t > TZ_T_LIMIT ? TZ_T_LIMIT : t;
}

/* ---- building ---- */

/* The index of a type equal to (off, isdst, abbreviation), appended if missing. */
static uint16_t find_or_add_type(struct tz_zone *z, size_t *types_cap, size_t *abbrs_cap,
                                 int32_t off, bool isdst, const char *abbr)
{
    size_t len = strlen(abbr);
    size_t pos = z->nabbrs;
    for (size_t i = 0; i + len < z->nabbrs; i++) {
        if (memcmp(z->abbrs + i, abbr, len + 1) == 0) {
            pos = i;
            break;
        }
    }
    for (size_t i = 0; i < z->ntypes; i++) {
        const struct tz_type *ty = &z->types[i];
        if (ty->off == off && ty->isdst == isdst && ty->abbr == pos)
            return (uint16_t)i;
    }
    if (pos == z->nabbrs) {
        z->abbrs = util_grow(z->abbrs, abbrs_cap, z->nabbrs + len + 1, 1);
        memcpy(z->abbrs + z->nabbrs, abbr, len + 1);
        z->nabbrs += len + 1;
    }
    z->types = util_grow(z->types, types_cap, z->ntypes + 1, sizeof(*z->types));
    z->types[z->ntypes] = (struct tz_type){off, (uint16_t)pos, isdst};
    return (uint16_t)z->ntypes++;
}

static void push_transition(struct tz_zone *z, size_t *cap, int64_t at, uint16_t type)
{
    if (z->n + 1 > *cap) {
        size_t c1 = *cap, c2 = *cap;
        z->at = util_grow(z->at, &c1, z->n + 1, sizeof(*z->at));
        z->off = util_grow(z->off, &c2, z->n + 1, sizeof(*z->off));
        z->tt = util_grow(z->tt, cap, z->n + 1, sizeof(*z->tt));
    }
    z->at[z->n] = at;
    z->tt[z->n] = type;
    z->off[z->n] = z->types[type].off;
    z->n++;
}

static uint16_t footer_type(const struct tz_footer *f, bool dst)
{
    return dst ? f->dst_type : f->std_type;
}

struct gen {
    struct tz_zone *z;
    size_t *cap;
};

static void gen_cb(void *arg, int64_t at, bool dst)
{
    struct gen *g = arg;
    push_transition(g->z, g->cap, at, footer_type(&g->z->f, dst));
}

/*
 * Applies the footer: the type at footer_from, and the footer's transitions from
 * gen_lo to gen_hi precomputed into the array so that lookups there are one binary
 * search.
 */
static void apply_footer(struct tz_zone *z, size_t *cap)
{
    struct tz_footer *f = &z->f;
    int64_t lo_year = util_days_from_civil(TZ_GEN_LO_YEAR, 1, 1) * DAY;
    int64_t end_year = util_days_from_civil(TZ_GEN_END_YEAR, 1, 1) * DAY;

    z->gen_lo = z->footer_from;
    z->gen_hi = INT64_MAX;
    if (z->footer_from > TZ_T_LIMIT)
        f->kind = TZ_FOOTER_NONE; /* the footer starts after every instant we answer for */
    if (f->kind == TZ_FOOTER_NONE)
        return;
    if (f->kind == TZ_FOOTER_FIXED) {
        if (z->n > 0 && z->at[z->n - 1] == z->footer_from) {
            z->tt[z->n - 1] = f->std_type;
            z->off[z->n - 1] = z->types[f->std_type].off;
        } else {
            z->pre_type = f->std_type;
        }
        return;
    }
    /* Rules. Before TZ_GEN_LO_YEAR (a file with no transitions) evaluate directly. */
    z->gen_lo = z->footer_from > lo_year ? z->footer_from : lo_year;
    z->gen_hi = z->gen_lo + 1 > end_year ? z->gen_lo + 1 : end_year;
    uint16_t type = footer_type(f, tz_footer_dst_at(f, z->gen_lo));
    if (z->n > 0 && z->at[z->n - 1] == z->gen_lo) {
        z->tt[z->n - 1] = type;
        z->off[z->n - 1] = z->types[type].off;
    } else if (z->n > 0) {
        push_transition(z, cap, z->gen_lo, type);
    } else {
        z->pre_type = type;
    }
    struct gen g = {z, cap};
    tz_footer_changes(f, z->gen_lo, z->gen_hi, gen_cb, &g);
}

static void offset_range(struct tz_zone *z)
{
    z->omin = z->omax = z->types[z->pre_type].off;
    for (size_t i = 0; i < z->n; i++) {
        if (z->off[i] < z->omin)
            z->omin = z->off[i];
        if (z->off[i] > z->omax)
            z->omax = z->off[i];
    }
    if (z->f.kind == TZ_FOOTER_RULES) {
        int32_t a = z->types[z->f.std_type].off, b = z->types[z->f.dst_type].off;
        z->omin = a < z->omin ? a : z->omin;
        z->omin = b < z->omin ? b : z->omin;
        z->omax = a > z->omax ? a : z->omax;
        z->omax = b > z->omax ? b : z->omax;
    }
}

void tz_zone_free(struct tz_zone *z)
{
    if (z == NULL)
        return;
    free(z->name);
    free(z->at);
    free(z->off);
    free(z->tt);
    free(z->types);
    free(z->abbrs);
    free(z);
}

static struct tz_zone *zone_new(const char *name)
{
    struct tz_zone *z = util_calloc(1, sizeof(*z));
    z->name = util_strdup(name);
    z->footer_from = INT64_MIN;
    z->gen_lo = INT64_MIN;
    z->gen_hi = INT64_MAX;
    return z;
}

struct tz_zone *tz_zone_utc(void)
{
    struct tz_zone *z = zone_new("UTC");
    z->types = util_calloc(1, sizeof(*z->types));
    z->ntypes = 1;
    z->abbrs = util_strdup("UTC");
    z->nabbrs = 4;
    return z;
}

const char *tz_zone_name(const struct tz_zone *z)
{
    return z->name;
}

int tz_zone_parse(struct tz_zone **out, const char *name, const unsigned char *data, size_t len,
                  struct util_err *err)
{
    struct header h1, h;
    struct tz_zone *z = NULL;
    size_t types_cap, abbrs_cap, trans_cap = 0;
    int rc;

    *out = NULL;
    if (len < HEADER_BYTES || memcmp(data, "TZif", 4) != 0)
        return util_err_set(err, UTIL_EINVAL, "time zone \"%s\": not a TZif file", name);
    read_header(data, &h1);
    if (h1.version == 0)
        return util_err_set(err, UTIL_EINVAL,
                            "time zone \"%s\": a version 1 TZif file, which has no 64-bit data; "
                            "Lodestore needs version 2 or later (any zic since 2005 writes it)",
                            name);
    if (h1.version < '2')
        return util_err_set(err, UTIL_EINVAL, "time zone \"%s\": unknown TZif version byte 0x%02x",
                            name, (unsigned char)h1.version);
    /* Skip the 32-bit block, checked only enough to skip it (RFC 9636 section 4). */
    uint64_t skip = HEADER_BYTES + block_bytes(&h1, 4);
    if (skip + HEADER_BYTES > len)
        return util_err_set(err, UTIL_EINVAL, "time zone \"%s\": truncated TZif file (%zu bytes)",
                            name, len);
    const unsigned char *p = data + skip;
    if (memcmp(p, "TZif", 4) != 0)
        return util_err_set(err, UTIL_EINVAL, "time zone \"%s\": the second TZif header is missing",
                            name);
    read_header(p, &h);
    if (h.leapcnt > 0)
        return util_err_set(err, UTIL_EINVAL,
                            "time zone \"%s\" has leap seconds (a \"right/\" zone): Lodestore "
                            "counts POSIX seconds and does not support right/ zones",
                            name);
    if (h.typecnt == 0 || h.typecnt > 256 || h.charcnt == 0 ||
        (h.isstdcnt != 0 && h.isstdcnt != h.typecnt) || (h.isutcnt != 0 && h.isutcnt != h.typecnt))
        return util_err_set(err, UTIL_EINVAL,
                            "time zone \"%s\": invalid TZif counts (types %u, abbreviation bytes "
                            "%u, standard/wall indicators %u, UT/local indicators %u)",
                            name, h.typecnt, h.charcnt, h.isstdcnt, h.isutcnt);
    p += HEADER_BYTES;
    uint64_t need = block_bytes(&h, 8);
    if (need > len - (size_t)(p - data))
        return util_err_set(err, UTIL_EINVAL, "time zone \"%s\": truncated TZif file (%zu bytes)",
                            name, len);
    const unsigned char *times = p;
    const unsigned char *idxs = times + (size_t)h.timecnt * 8;
    const unsigned char *ttinfo = idxs + h.timecnt;
    const unsigned char *chars = ttinfo + (size_t)h.typecnt * 6;
    const unsigned char *isstd = chars + h.charcnt;
    const unsigned char *isut = isstd + h.isstdcnt;
    const unsigned char *footer = isut + h.isutcnt;
    const unsigned char *end = data + len;

    z = zone_new(name);
    /* Abbreviations: the bytes, kept whole (indexes may point into the middle). */
    abbrs_cap = h.charcnt + 1;
    z->abbrs = util_malloc(abbrs_cap);
    memcpy(z->abbrs, chars, h.charcnt);
    z->nabbrs = h.charcnt;
    types_cap = h.typecnt + 2;
    z->types = util_calloc(types_cap, sizeof(*z->types));
    for (uint32_t i = 0; i < h.typecnt; i++) {
        const unsigned char *q = ttinfo + (size_t)i * 6;
        int32_t off = (int32_t)be32(q);
        if (off < -TZ_MAX_OFFSET || off > TZ_MAX_OFFSET) {
            rc = util_err_set(err, UTIL_EINVAL,
                              "time zone \"%s\": time type %u has the UTC offset %ld s, beyond "
                              "one week",
                              name, i, (long)off);
            goto free_zone;
        }
        if (q[4] > 1 || q[5] >= h.charcnt || memchr(chars + q[5], '\0', h.charcnt - q[5]) == NULL) {
            rc = util_err_set(err, UTIL_EINVAL,
                              "time zone \"%s\": time type %u has an invalid DST flag or "
                              "abbreviation index",
                              name, i);
            goto free_zone;
        }
        z->types[i] = (struct tz_type){off, q[5], q[4]};
    }
    z->ntypes = h.typecnt;
    for (uint32_t i = 0; i < h.isstdcnt + h.isutcnt; i++) {
        if (isstd[i] > 1) {
            rc = util_err_set(err, UTIL_EINVAL,
                              "time zone \"%s\": a standard/wall or UT/local indicator is not 0 "
                              "or 1",
                              name);
            goto free_zone;
        }
    }
    for (uint32_t i = 0; i < h.timecnt; i++) {
        int64_t at = be64(times + (size_t)i * 8);
        if (idxs[i] >= h.typecnt || (i > 0 && at <= be64(times + (size_t)(i - 1) * 8))) {
            rc = util_err_set(err, UTIL_EINVAL,
                              "time zone \"%s\": transition %u has an invalid type index or is "
                              "not after the one before",
                              name, i);
            goto free_zone;
        }
    }
    /* Footer: '\n', a TZ string, '\n', and nothing after it. */
    if (footer >= end || *footer != '\n' || end[-1] != '\n' || end - footer < 2 ||
        memchr(footer + 1, '\n', (size_t)(end - footer - 2)) != NULL) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "time zone \"%s\": the TZif footer is missing or malformed", name);
        goto free_zone;
    }
    size_t flen = (size_t)(end - footer - 2);
    if (flen > 0) {
        struct tz_posix px;
        struct util_err perr;
        if (tz_posix_parse(&px, (const char *)footer + 1, flen, &perr) != 0) {
            rc = util_err_set(err, UTIL_EINVAL, "time zone \"%s\": footer: %s", name, perr.msg);
            goto free_zone;
        }
        z->f.std_off = px.std_off;
        z->f.std_type = find_or_add_type(z, &types_cap, &abbrs_cap, px.std_off, false, px.std_name);
        z->f.kind = TZ_FOOTER_FIXED;
        if (px.has_dst) {
            z->f.kind = TZ_FOOTER_RULES;
            z->f.dst_off = px.dst_off;
            z->f.dst_type =
                find_or_add_type(z, &types_cap, &abbrs_cap, px.dst_off, true, px.dst_name);
            z->f.start = px.start;
            z->f.end = px.end;
            z->f.never_changes = tz_footer_next(&z->f, 0) == INT64_MAX;
        }
    }

    /*
     * Transitions. Those at or before -TZ_T_LIMIT only set the type before the
     * first kept one; those after TZ_T_LIMIT are never reached (instants clamp).
     */
    z->pre_type = 0;
    for (uint32_t i = 0; i < h.timecnt; i++) {
        int64_t at = be64(times + (size_t)i * 8);
        if (at <= -TZ_T_LIMIT)
            z->pre_type = idxs[i];
        else if (at <= TZ_T_LIMIT)
            push_transition(z, &trans_cap, at, idxs[i]);
    }
    if (h.timecnt > 0)
        z->footer_from = be64(times + (size_t)(h.timecnt - 1) * 8);
    if (z->footer_from <= -TZ_T_LIMIT)
        z->footer_from = INT64_MIN; /* every instant is at or after the last transition */
    apply_footer(z, &trans_cap);
    offset_range(z);
    *out = z;
    return 0;
free_zone:
    tz_zone_free(z);
    return rc;
}

/* ---- lookups ---- */

/* The number of transitions at or before t (branch-light binary search). */
static size_t count_at_or_before(const struct tz_zone *z, int64_t t)
{
    const int64_t *base = z->at;
    size_t n = z->n;
    if (n == 0)
        return 0;
    while (n > 1) {
        size_t half = n / 2;
        base = base[half] <= t ? base + half : base;
        n -= half;
    }
    return (size_t)(base - z->at) + (*base <= t);
}

/* True when t is ruled by direct footer evaluation rather than the array. */
static bool direct(const struct tz_zone *z, int64_t t)
{
    return t >= z->gen_hi || (t >= z->footer_from && t < z->gen_lo);
}

static uint16_t type_at(const struct tz_zone *z, int64_t t)
{
    t = clamp_t(t);
    if (direct(z, t))
        return footer_type(&z->f, tz_footer_dst_at(&z->f, t));
    size_t i = count_at_or_before(z, t);
    return i == 0 ? z->pre_type : z->tt[i - 1];
}

int32_t tz_offset_at(const struct tz_zone *z, int64_t t)
{
    t = clamp_t(t);
    if (direct(z, t))
        return tz_footer_dst_at(&z->f, t) ? z->f.dst_off : z->f.std_off;
    size_t i = count_at_or_before(z, t);
    return i == 0 ? z->types[z->pre_type].off : z->off[i - 1];
}

const char *tz_abbrev_at(const struct tz_zone *z, int64_t t)
{
    return z->abbrs + z->types[type_at(z, t)].abbr;
}

static bool same_type(const struct tz_zone *z, uint16_t a, uint16_t b)
{
    const struct tz_type *x = &z->types[a], *y = &z->types[b];
    return x->off == y->off && x->isdst == y->isdst &&
           strcmp(z->abbrs + x->abbr, z->abbrs + y->abbr) == 0;
}

int64_t tz_next_transition(const struct tz_zone *z, int64_t t)
{
    if (t >= TZ_T_LIMIT)
        return INT64_MAX;
    t = clamp_t(t);
    if (direct(z, t))
        return tz_footer_next(&z->f, t);
    size_t i = count_at_or_before(z, t);
    uint16_t cur = i == 0 ? z->pre_type : z->tt[i - 1];
    /*
     * The array is exact below footer_from and in [gen_lo, gen_hi); between them (a
     * footer that rules since before TZ_GEN_LO_YEAR) the footer is evaluated directly.
     * No-op entries (the same type again) are skipped.
     */
    bool hole = z->gen_lo > z->footer_from;
    int64_t exact_end = hole && t < z->footer_from ? z->footer_from : z->gen_hi;
    for (; i < z->n && z->at[i] < exact_end; i++) {
        if (!same_type(z, z->tt[i], cur))
            return z->at[i];
    }
    if (hole && t < z->footer_from) {
        if (!same_type(z, type_at(z, z->footer_from), cur))
            return z->footer_from;
        return tz_next_transition(z, z->footer_from);
    }
    if (z->f.kind != TZ_FOOTER_RULES)
        return INT64_MAX;
    /* Past the array: the footer from its last exact instant. */
    return tz_footer_next(&z->f, z->gen_hi - 1 > t ? z->gen_hi - 1 : t);
}

/*
 * Local time L happens at each instant t with t + offset(t) = L. Every such t lies
 * in [L - omax, L - omin]; walk the spans of constant type across that window and
 * keep, for each, the candidate L - offset when it falls inside the span. A window
 * with no candidate was jumped over by a transition T with T + before <= L < T +
 * after: that T is the gap's instant.
 */
struct walk {
    int64_t local;
    size_t found;
    int64_t first, last;
    int64_t gap;
};

static void consider(struct walk *w, int64_t lo, int64_t hi, int32_t off, int64_t next,
                     int32_t next_off)
{
    int64_t cand = w->local - off;
    if (cand >= lo && cand < hi) {
        if (w->found == 0)
            w->first = cand;
        w->last = cand;
        w->found++;
    }
    if (w->gap == INT64_MIN && next != INT64_MAX && next + off <= w->local &&
        w->local < next + next_off)
        w->gap = next;
}

void tz_resolve_local(const struct tz_zone *z, int64_t local, struct tz_local *out)
{
    /* Keep local - offset inside the clamped range without overflow. */
    int64_t L = local < -TZ_T_LIMIT ? -TZ_T_LIMIT : local > TZ_T_LIMIT ? TZ_T_LIMIT : local;
    int64_t t0 = L - z->omax, t1 = L - z->omin;
    struct walk w = {L, 0, 0, 0, INT64_MIN};

    if (t1 < z->gen_hi && (z->gen_lo == z->footer_from || t1 < z->footer_from || t0 >= z->gen_lo) &&
        t0 > -TZ_T_LIMIT && t1 < TZ_T_LIMIT) {
        /* Fast path: the window lies where the array is exact. */
        size_t i = count_at_or_before(z, t0);
        int64_t lo = t0;
        int32_t off = i == 0 ? z->types[z->pre_type].off : z->off[i - 1];
        for (;;) {
            int64_t next = i < z->n ? z->at[i] : INT64_MAX;
            if (next > t1)
                next = INT64_MAX; /* the span runs past the window */
            int32_t next_off = next == INT64_MAX ? off : z->off[i];
            consider(&w, lo, next == INT64_MAX ? t1 + 1 : next, off, next, next_off);
            if (next == INT64_MAX)
                break;
            lo = next;
            off = next_off;
            i++;
        }
    } else {
        int64_t lo = t0;
        int32_t off = tz_offset_at(z, lo);
        for (;;) {
            int64_t next = tz_next_transition(z, lo);
            if (next > t1)
                next = INT64_MAX;
            int32_t next_off = next == INT64_MAX ? off : tz_offset_at(z, next);
            consider(&w, lo, next == INT64_MAX ? t1 + 1 : next, off, next, next_off);
            if (next == INT64_MAX)
                break;
            lo = next;
            off = next_off;
        }
    }
    if (w.found == 0) {
        out->kind = TZ_LOCAL_GAP;
        out->at[0] = out->at[1] = w.gap;
    } else if (w.found == 1) {
        out->kind = TZ_LOCAL_UNIQUE;
        out->at[0] = out->at[1] = w.first;
    } else {
        out->kind = TZ_LOCAL_REPEATED;
        out->at[0] = w.first;
        out->at[1] = w.last;
    }
}
