/*
 * diffrestic: the helper of the differential test of `lode forget` against
 * `restic forget` 0.14 (tests/diff/restic/run.sh drives it; see there for the
 * recipe). Three subcommands:
 *
 *   gen DIR SEED HISTORIES GROUPS REAL
 *       Generates HISTORIES random histories where the two programs' semantics
 *       coincide (distinct times, all in the past, none within two minutes of a
 *       keepWithin boundary, keepWithin in h or d only), in GROUPS rule sets (one
 *       restic forget run each). Writes DIR/NNN/{policy.yaml,snapshots.json,
 *       meta.json}, DIR/groups.tsv (group, restic flags, hosts), DIR/real.tsv and
 *       DIR/forge-G.tsv (the snapshots to give restic: through `restic backup
 *       --time` for the first REAL histories, a few each across a clock change;
 *       written straight into a copy of the repository per rule set for the
 *       others) and DIR/fixed.zi (the fixed-offset zones for zic).
 *
 *   forge MASTERKEY TEMPLATE REPO < DIR/forge-G.tsv
 *       Writes one snapshot file per line (host, recorded time) into a restic
 *       repository, encrypted as restic does (AES-256-CTR, Poly1305-AES, named
 *       by the SHA-256 of the file), from a template snapshot made by `restic
 *       backup`. A restic backup costs about half a second, almost all of it key
 *       derivation; 3,000 of them would take half an hour. The run checks that
 *       restic lists every forged snapshot with exactly the time that a real
 *       backup under the fixed-offset zone records.
 *
 *   compare DIR RESTICDIR [--tamper]
 *       For each history: restic's keep set and reasons, plus the suspicious
 *       snapshots and the two newest good ones (docs/retention.md, "How they are applied"),
 *       must equal lode's JSON (DIR/NNN/lode.json) exactly, reasons included.
 *       Prints TAP-like lines and "N passed, M failed". With --tamper, one
 *       decision of lode's output is flipped per history and every history must
 *       then differ: the comparison is shown to fail when outputs differ.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "tz/tz.h"
#include "util/util.h"

/* ---- small helpers ---- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "diffrestic: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

/* snprintf that refuses to truncate a path. */
static void pathf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pathf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size)
        die("path too long: %s", fmt);
}

static FILE *open_out(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        die("cannot write %s: %s", path, strerror(errno));
    return f;
}

static void close_out(FILE *f, const char *path)
{
    if (fclose(f) != 0)
        die("cannot write %s: %s", path, strerror(errno));
}

static json_t *load_json(const char *path)
{
    json_error_t e;
    json_t *v = json_load_file(path, 0, &e);
    if (v == NULL)
        die("%s:%d: %s", path, e.line, e.text);
    return v;
}

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t rng_range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng() % (uint64_t)(hi - lo + 1));
}

static bool chance(int percent)
{
    return (int)(rng() % 100) < percent;
}

/* ---- gen ---- */

/* Zones with gaps, folds, half-hour and 45-minute offsets, both hemispheres. */
static const char *const gen_zones[] = {
    "UTC",
    "Europe/Kyiv",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "America/St_Johns",
    "America/Santiago",
    "Europe/London",
    "Asia/Tokyo",
};
#define GEN_NZONES (sizeof(gen_zones) / sizeof(gen_zones[0]))

struct gen_rules {
    int64_t last, daily, weekly, monthly;
    int64_t within_n;
    char within_unit; /* 'h', 'd', or 0 for none */
};

struct gen_snap {
    char id[40];
    int64_t t;
    int32_t off;
    bool incomplete, suspicious;
};

#define GEN_MAXN 60

static int64_t gen_within_seconds(const struct gen_rules *r)
{
    return r->within_unit == 'h' ? r->within_n * 3600 : r->within_n * 86400;
}

static bool gen_rules_empty(const struct gen_rules *r)
{
    return !r->last && !r->daily && !r->weekly && !r->monthly && !r->within_unit;
}

static void gen_rules_random(struct gen_rules *r, int group)
{
    memset(r, 0, sizeof(*r));
    if (group == 0)
        return; /* one rule set with no rules at all (the last one: see cmd_gen) */
    do {
        if (chance(45))
            r->last = rng_range(1, 6);
        if (chance(55))
            r->daily = rng_range(1, 12);
        if (chance(45))
            r->weekly = rng_range(1, 8);
        if (chance(40))
            r->monthly = rng_range(1, 8);
        if (chance(30)) {
            r->within_unit = chance(50) ? 'h' : 'd';
            r->within_n = r->within_unit == 'h' ? rng_range(1, 240) : rng_range(1, 60);
        }
    } while (gen_rules_empty(r));
}

/* "2026-03-29T04:30:00+03:00", as Go marshals a time recorded at that offset. */
static void gen_recorded(int64_t t, int32_t off, char *buf, size_t size)
{
    struct util_civil c;
    util_civil_from_seconds(t + off, &c);
    if (off == 0) {
        snprintf(buf, size, "%04lld-%02u-%02uT%02u:%02u:%02uZ", (long long)c.year, c.month, c.day,
                 c.hour, c.minute, c.second);
    } else {
        int32_t a = off < 0 ? -off : off;
        snprintf(buf, size, "%04lld-%02u-%02uT%02u:%02u:%02u%c%02d:%02d", (long long)c.year,
                 c.month, c.day, c.hour, c.minute, c.second, off < 0 ? '-' : '+', a / 3600,
                 a % 3600 / 60);
    }
}

/* "2026-03-29 04:30:00", the --time argument of restic backup under that offset. */
static void gen_local(int64_t t, int32_t off, char *buf, size_t size)
{
    struct util_civil c;
    util_civil_from_seconds(t + off, &c);
    snprintf(buf, size, "%04lld-%02u-%02u %02u:%02u:%02u", (long long)c.year, c.month, c.day,
             c.hour, c.minute, c.second);
}

/* The zic name of a fixed offset: Fixed/P0545, Fixed/M0330. */
static void gen_fixed_name(int32_t off, char *buf, size_t size)
{
    int32_t a = off < 0 ? -off : off;
    snprintf(buf, size, "Fixed/%c%02d%02d", off < 0 ? 'M' : 'P', a / 3600, a % 3600 / 60);
}

static int gen_cmp_time(const void *pa, const void *pb)
{
    const struct gen_snap *a = pa, *b = pb;
    return a->t < b->t ? -1 : a->t > b->t;
}

static bool gen_time_taken(const struct gen_snap *s, size_t n, size_t except, int64_t t)
{
    for (size_t i = 0; i < n; i++)
        if (i != except && s[i].t == t)
            return true;
    return false;
}

/*
 * One history: n snapshots, oldest first, spaced by a typical interval with
 * noise, sometimes a long outage, sometimes straddling a DST change or the ISO
 * week 53 of 2020, always ending before `last_allowed`.
 */
static size_t gen_history(struct gen_snap *s, const struct tz_zone *zone, int64_t last_allowed,
                          bool real)
{
    static const int64_t intervals[] = {3600,      3 * 3600,  6 * 3600,  86400,
                                        2 * 86400, 7 * 86400, 30 * 86400};
    size_t n = (size_t)rng_range(1, GEN_MAXN);
    int64_t step = intervals[rng() % (sizeof(intervals) / sizeof(intervals[0]))];
    int64_t span_guess = step * (int64_t)n;
    int64_t lo = 1577836800; /* 2020-01-01 */
    int64_t t = rng_range(lo, last_allowed - span_guess - 40 * 86400);
    int pattern = (int)(rng() % 4);

    if (real) {
        /* Real backups cost half a second each: a few, across a clock change. */
        n = (size_t)rng_range(5, 8);
        step = intervals[rng() % 3];
        span_guess = step * (int64_t)n;
        t = rng_range(lo, last_allowed - span_guess - 40 * 86400);
        pattern = 1;
    }

    if (pattern == 1) {
        /* Straddle a clock change of the zone, when it has one. */
        int64_t tr = tz_next_transition(zone, rng_range(lo, 1735689600)); /* before 2025 */
        if (tr != INT64_MAX && tr - span_guess / 2 > lo && tr + span_guess < last_allowed)
            t = tr - span_guess / 2;
    } else if (pattern == 2) {
        t = 1608422400 - span_guess / 2; /* 2020-12-20: 2020-W53 runs to 2021-01-03 */
        if (t < lo)
            t = lo;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t gap = step / 3 + (int64_t)(rng() % (uint64_t)(step + 1)) + rng_range(60, 3599);
        if (!real && chance(5))
            gap += rng_range(14, 40) * 86400; /* the host was off for weeks */
        t += gap;
        s[i].t = t;
        s[i].incomplete = chance(15);
        s[i].suspicious = chance(10);
    }
    if (s[n - 1].t > last_allowed) {
        int64_t shift = s[n - 1].t - last_allowed + rng_range(0, 86400);
        for (size_t i = 0; i < n; i++)
            s[i].t -= shift;
    }
    return n;
}

/*
 * Moves snapshots away from the keepWithin boundary (restic is strict there,
 * Lodestore inclusive: a real difference, tested in the unit tests instead).
 */
static void gen_avoid_boundary(struct gen_snap *s, size_t n, const struct gen_rules *r)
{
    int64_t anchor = INT64_MIN, edge;
    if (!r->within_unit)
        return;
    for (size_t i = 0; i < n; i++)
        if (!s[i].suspicious && s[i].t > anchor)
            anchor = s[i].t;
    if (anchor == INT64_MIN)
        return;
    edge = anchor - gen_within_seconds(r);
    /* But often put one just inside or just outside, 2 to 15 minutes away. */
    if (n > 1 && chance(70)) {
        size_t i = (size_t)(rng() % n);
        if (!s[i].suspicious && s[i].t != anchor)
            s[i].t = edge + (chance(50) ? 1 : -1) * rng_range(121, 900);
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i].suspicious || s[i].t == anchor)
            continue;
        while (s[i].t > edge - 120 && s[i].t < edge + 120)
            s[i].t = edge - 120 - rng_range(1, 600);
        while (gen_time_taken(s, n, i, s[i].t) || s[i].t >= anchor)
            s[i].t -= rng_range(121, 600);
    }
}

static void gen_write_policy(const char *path, int h, const char *zone, bool schedule,
                             const struct gen_rules *r)
{
    FILE *f = open_out(path);
    fprintf(f,
            "apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata:\n  name: diff-%03d\n"
            "spec:\n  repository: main\n  paths: [/data]\n",
            h);
    if (schedule)
        fprintf(f, "  schedule:\n    cron: \"30 2 * * *\"\n    timezone: %s\n", zone);
    if (!gen_rules_empty(r)) {
        fprintf(f, "  retention:\n");
        if (r->last)
            fprintf(f, "    keepLast: %lld\n", (long long)r->last);
        if (r->within_unit)
            fprintf(f, "    keepWithin: %lld%c\n", (long long)r->within_n, r->within_unit);
        if (r->daily)
            fprintf(f, "    keepDaily: %lld\n", (long long)r->daily);
        if (r->weekly)
            fprintf(f, "    keepWeekly: %lld\n", (long long)r->weekly);
        if (r->monthly)
            fprintf(f, "    keepMonthly: %lld\n", (long long)r->monthly);
    }
    close_out(f, path);
}

static void gen_restic_flags(const struct gen_rules *r, char *buf, size_t size)
{
    struct util_buf b;
    util_buf_init(&b);
    util_buf_puts(&b, "");
    if (r->last)
        util_buf_printf(&b, " --keep-last %lld", (long long)r->last);
    if (r->within_unit)
        util_buf_printf(&b, " --keep-within %lld%c", (long long)r->within_n, r->within_unit);
    if (r->daily)
        util_buf_printf(&b, " --keep-daily %lld", (long long)r->daily);
    if (r->weekly)
        util_buf_printf(&b, " --keep-weekly %lld", (long long)r->weekly);
    if (r->monthly)
        util_buf_printf(&b, " --keep-monthly %lld", (long long)r->monthly);
    snprintf(buf, size, "%s", b.data[0] == ' ' ? b.data + 1 : b.data);
    util_buf_free(&b);
}

static int cmd_gen(int argc, char **argv)
{
    const char *dir;
    int histories, groups, real;
    struct gen_rules *rules;
    struct tz_db *db = NULL;
    struct tz_zone *zones[GEN_NZONES];
    struct util_err err = {0};
    int32_t offsets[256];
    size_t noffsets = 0;
    char path[4096];
    FILE *greal, **gforge, *ggroups, *gzi;
    struct util_buf *hosts;
    int64_t last_allowed;

    if (argc != 6)
        die("usage: gen DIR SEED HISTORIES GROUPS REAL");
    dir = argv[1];
    rng_state = strtoull(argv[2], NULL, 10);
    histories = (int)strtol(argv[3], NULL, 10);
    groups = (int)strtol(argv[4], NULL, 10);
    real = (int)strtol(argv[5], NULL, 10);
    if (histories < 1 || groups < 1)
        die("HISTORIES and GROUPS must be positive");
    if (tz_db_open(&db, NULL, &err) != 0)
        die("%s", err.msg);
    for (size_t z = 0; z < GEN_NZONES; z++)
        if (tz_zone_load(&zones[z], db, gen_zones[z], &err) != 0)
            die("%s", err.msg);
    /*
     * All in the past, since restic leaves snapshots from the future out of
     * keepWithin's anchor; and a fixed bound, so a seed gives the same histories
     * on any day (unless the clock is before November 2026).
     */
    last_allowed = 1793491200; /* 2026-11-01 */
    if (last_allowed > (int64_t)time(NULL) - 2 * 86400)
        last_allowed = (int64_t)time(NULL) - 2 * 86400;

    rules = util_calloc((size_t)groups, sizeof(*rules));
    hosts = util_calloc((size_t)groups, sizeof(*hosts));
    for (int g = 0; g < groups; g++) {
        /* The no-rules set is the last, so the real histories (the first) get rules. */
        gen_rules_random(&rules[g], groups > 1 ? (g + 1) % groups : 1);
        util_buf_init(&hosts[g]);
        util_buf_puts(&hosts[g], "");
    }

    pathf(path, sizeof(path), "%s/real.tsv", dir);
    greal = open_out(path);
    gforge = util_calloc((size_t)groups, sizeof(*gforge));
    for (int g = 0; g < groups; g++) {
        pathf(path, sizeof(path), "%s/forge-%d.tsv", dir, g);
        gforge[g] = open_out(path);
    }

    for (int h = 0; h < histories; h++) {
        struct gen_snap s[GEN_MAXN];
        int g = h % groups;
        size_t zi = (size_t)(rng() % GEN_NZONES);
        bool schedule, sample;
        size_t n;
        char host[16], hdir[4096], rec[48], loc[48], fixed[32];
        json_t *list = json_array(), *meta_snaps = json_array(), *meta;

        /*
         * A sample of real backups (REAL < HISTORIES): short histories across a
         * clock change in Kyiv, New York or Lord Howe. With every history real
         * (the literal recipe), they are generated like the forged ones.
         */
        sample = h < real && real < histories;
        if (sample)
            zi = (size_t)(1 + h % 3);
        schedule = zi != 0 || chance(50); /* UTC: by schedule, or by having none */
        snprintf(host, sizeof(host), "h%03d", h);
        pathf(hdir, sizeof(hdir), "%s/%03d", dir, h);
        if (mkdir(hdir, 0755) != 0 && errno != EEXIST)
            die("mkdir %s: %s", hdir, strerror(errno));

        n = gen_history(s, zones[zi], last_allowed, sample);
        gen_avoid_boundary(s, n, &rules[g]);
        qsort(s, n, sizeof(s[0]), gen_cmp_time);
        for (size_t i = 0; i < n; i++) {
            struct util_civil c;
            s[i].off = tz_offset_at(zones[zi], s[i].t);
            util_civil_from_seconds(s[i].t, &c);
            /* Ids start with the time, as Lodestore's do; the suffix is random. */
            snprintf(s[i].id, sizeof(s[i].id), "%04lld%02u%02uT%02u%02u%02u-%04x",
                     (long long)c.year, c.month, c.day, c.hour, c.minute, c.second,
                     (unsigned)(rng() & 0xffff));
        }
        for (size_t i = 0; i < n; i++) {
            char utc[UTIL_TIME_BUF];
            json_t *o;
            util_format_utc(s[i].t, utc, sizeof(utc));
            gen_recorded(s[i].t, s[i].off, rec, sizeof(rec));
            o = json_pack("{s:s, s:s}", "id", s[i].id, "time", utc);
            if (s[i].incomplete)
                json_object_set_new(o, "incomplete", json_true());
            if (s[i].suspicious)
                json_object_set_new(o, "suspicious", json_true());
            json_array_append_new(list, o);
            json_array_append_new(meta_snaps,
                                  json_pack("{s:s, s:s, s:I, s:b, s:b}", "id", s[i].id, "recorded",
                                            rec, "time", (json_int_t)s[i].t, "incomplete",
                                            s[i].incomplete, "suspicious", s[i].suspicious));
            if (s[i].suspicious)
                continue; /* restic never sees them (step 1) */
            if (h < real) {
                size_t k;
                gen_local(s[i].t, s[i].off, loc, sizeof(loc));
                gen_fixed_name(s[i].off, fixed, sizeof(fixed));
                fprintf(greal, "%s\t%s\t%s\n", fixed, host, loc);
                for (k = 0; k < noffsets && offsets[k] != s[i].off; k++)
                    ;
                if (k == noffsets && noffsets < sizeof(offsets) / sizeof(offsets[0]))
                    offsets[noffsets++] = s[i].off;
            } else {
                fprintf(gforge[g], "%s\t%s\n", host, rec);
            }
        }
        pathf(path, sizeof(path), "%s/snapshots.json", hdir);
        if (json_dump_file(list, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0)
            die("cannot write %s", path);
        {
            char flags[256], desc[320];
            gen_restic_flags(&rules[g], flags, sizeof(flags));
            snprintf(desc, sizeof(desc), "%s%s, %s, %zu snapshots%s",
                     schedule ? "" : "no schedule, ", gen_zones[zi], flags[0] ? flags : "no rules",
                     n, h < real ? ", real backups" : "");
            meta = json_pack("{s:s, s:s, s:b, s:o}", "host", host, "desc", desc, "no_rules",
                             gen_rules_empty(&rules[g]), "snapshots", meta_snaps);
        }
        pathf(path, sizeof(path), "%s/meta.json", hdir);
        if (json_dump_file(meta, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0)
            die("cannot write %s", path);
        json_decref(meta);
        json_decref(list);
        pathf(path, sizeof(path), "%s/policy.yaml", hdir);
        gen_write_policy(path, h, gen_zones[zi], schedule, &rules[g]);
        util_buf_printf(&hosts[g], " --host %s", host);
    }
    close_out(greal, "real.tsv");
    for (int g = 0; g < groups; g++)
        close_out(gforge[g], "forge.tsv");
    free(gforge);

    pathf(path, sizeof(path), "%s/groups.tsv", dir);
    ggroups = open_out(path);
    for (int g = 0; g < groups; g++) {
        char flags[256];
        gen_restic_flags(&rules[g], flags, sizeof(flags));
        if (hosts[g].len > 0)
            fprintf(ggroups, "%d\t%s\t%s\n", g, flags, hosts[g].data + 1);
        util_buf_free(&hosts[g]);
    }
    close_out(ggroups, path);

    pathf(path, sizeof(path), "%s/fixed.zi", dir);
    gzi = open_out(path);
    for (size_t k = 0; k < noffsets; k++) {
        char name[32];
        int32_t a = offsets[k] < 0 ? -offsets[k] : offsets[k];
        gen_fixed_name(offsets[k], name, sizeof(name));
        fprintf(gzi, "Zone %s %s%d:%02d - %c%02d%02d\n", name, offsets[k] < 0 ? "-" : "", a / 3600,
                a % 3600 / 60, offsets[k] < 0 ? '-' : '+', a / 3600, a % 3600 / 60);
    }
    close_out(gzi, path);

    for (size_t z = 0; z < GEN_NZONES; z++)
        tz_zone_free(zones[z]);
    tz_db_close(db);
    free(hosts);
    free(rules);
    return 0;
}

/* ---- forge ---- */

static size_t b64_decode(const char *in, unsigned char *out, size_t want)
{
    unsigned char buf[128];
    size_t len = strlen(in);
    int n;
    if (len > 4 * sizeof(buf) / 3 || len % 4 != 0)
        die("bad base64 key");
    n = EVP_DecodeBlock(buf, (const unsigned char *)in, (int)len);
    /* EVP_DecodeBlock counts the padding as zero bytes: drop them. */
    if (n < 0)
        die("bad base64 key");
    while (len > 0 && in[len - 1] == '=') {
        len--;
        n--;
    }
    if ((size_t)n != want)
        die("key of %d bytes, want %zu", n, want);
    memcpy(out, buf, want);
    return want;
}

struct forge_key {
    unsigned char enc[32]; /* AES-256-CTR */
    unsigned char k[16];   /* AES-128 key that turns the nonce into Poly1305's s */
    unsigned char r[16];   /* Poly1305's r */
};

/* restic's sealed form: nonce || AES-256-CTR(plaintext) || Poly1305-AES(ciphertext). */
static unsigned char *forge_seal(const struct forge_key *key, const unsigned char *plain,
                                 size_t len, size_t *out_len)
{
    unsigned char *out = util_malloc(len + 32);
    unsigned char polykey[32];
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "POLY1305", NULL);
    EVP_MAC_CTX *m;
    int n1 = 0, n2 = 0;
    size_t tl = 0;

    if (c == NULL || mac == NULL || RAND_bytes(out, 16) != 1)
        die("OpenSSL: cannot set up AES or Poly1305");
    if (EVP_EncryptInit_ex(c, EVP_aes_256_ctr(), NULL, key->enc, out) != 1 ||
        EVP_EncryptUpdate(c, out + 16, &n1, plain, (int)len) != 1 ||
        EVP_EncryptFinal_ex(c, out + 16 + n1, &n2) != 1 || (size_t)(n1 + n2) != len)
        die("AES-256-CTR failed");
    /* s = AES-128_k(nonce); Poly1305's key is r || s (it clamps r itself, as restic's does). */
    memcpy(polykey, key->r, 16);
    if (EVP_EncryptInit_ex(c, EVP_aes_128_ecb(), NULL, key->k, NULL) != 1 ||
        EVP_CIPHER_CTX_set_padding(c, 0) != 1 ||
        EVP_EncryptUpdate(c, polykey + 16, &n1, out, 16) != 1)
        die("AES-128 failed");
    m = EVP_MAC_CTX_new(mac);
    if (m == NULL || EVP_MAC_init(m, polykey, 32, NULL) != 1 ||
        EVP_MAC_update(m, out + 16, len) != 1 || EVP_MAC_final(m, out + 16 + len, &tl, 16) != 1 ||
        tl != 16)
        die("Poly1305 failed");
    EVP_MAC_CTX_free(m);
    EVP_MAC_free(mac);
    EVP_CIPHER_CTX_free(c);
    *out_len = len + 32;
    return out;
}

static int cmd_forge(int argc, char **argv)
{
    struct forge_key key;
    json_t *mk, *tmpl;
    char line[512], path[4096];
    size_t count = 0;

    if (argc != 4)
        die("usage: forge MASTERKEY TEMPLATE REPO < forge-G.tsv");
    mk = load_json(argv[1]);
    tmpl = load_json(argv[2]);
    b64_decode(json_string_value(json_object_get(mk, "encrypt")), key.enc, 32);
    b64_decode(json_string_value(json_object_get(json_object_get(mk, "mac"), "k")), key.k, 16);
    b64_decode(json_string_value(json_object_get(json_object_get(mk, "mac"), "r")), key.r, 16);
    json_object_del(tmpl, "parent"); /* a forged snapshot has no parent */

    while (fgets(line, sizeof(line), stdin) != NULL) {
        char *tab = strchr(line, '\t'), *nl;
        unsigned char digest[32];
        unsigned int dl = 0;
        char hex[65];
        unsigned char *sealed;
        size_t sl;
        char *plain;
        FILE *f;

        if (tab == NULL)
            die("forge: bad line: %s", line);
        *tab = '\0';
        nl = strchr(tab + 1, '\n');
        if (nl != NULL)
            *nl = '\0';
        json_object_set_new(tmpl, "time", json_string(tab + 1));
        json_object_set_new(tmpl, "hostname", json_string(line));
        plain = json_dumps(tmpl, JSON_COMPACT | JSON_PRESERVE_ORDER);
        sealed = forge_seal(&key, (const unsigned char *)plain, strlen(plain), &sl);
        if (EVP_Digest(sealed, sl, digest, &dl, EVP_sha256(), NULL) != 1 || dl != 32)
            die("SHA-256 failed");
        for (int i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", digest[i]);
        pathf(path, sizeof(path), "%s/snapshots/%s", argv[3], hex);
        f = open_out(path);
        if (fwrite(sealed, 1, sl, f) != sl)
            die("cannot write %s", path);
        close_out(f, path);
        free(sealed);
        free(plain);
        count++;
    }
    json_decref(mk);
    json_decref(tmpl);
    fprintf(stderr, "diffrestic: forged %zu snapshots\n", count);
    return 0;
}

/* ---- compare ---- */

static const char *const reason_names[] = {"last",    "within",      "daily",      "weekly",
                                           "monthly", "newest-good", "suspicious", "no-rules"};
#define NREASONS (sizeof(reason_names) / sizeof(reason_names[0]))

static unsigned reason_bit(const char *name)
{
    for (unsigned i = 0; i < NREASONS; i++)
        if (strcmp(name, reason_names[i]) == 0)
            return 1u << i;
    return 0;
}

static void reasons_text(unsigned r, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    if (r == 0) {
        snprintf(buf, size, "forget");
        return;
    }
    for (unsigned i = 0; i < NREASONS; i++)
        if (r & (1u << i))
            used +=
                (size_t)snprintf(buf + used, size - used, "%s%s", used ? "," : "", reason_names[i]);
}

/* restic 0.14's match strings, mapped to Lodestore's reasons. */
static unsigned restic_reason(const char *m)
{
    if (strcmp(m, "last snapshot") == 0)
        return 1u << 0;
    if (strncmp(m, "within ", 7) == 0)
        return 1u << 1;
    if (strcmp(m, "daily snapshot") == 0)
        return 1u << 2;
    if (strcmp(m, "weekly snapshot") == 0)
        return 1u << 3;
    if (strcmp(m, "monthly snapshot") == 0)
        return 1u << 4;
    return 0;
}

struct cmp_snap {
    const char *id;
    const char *recorded;
    int64_t t;
    bool incomplete, suspicious;
    unsigned want; /* restic + post-processing */
    int seen;      /* times restic listed it */
    unsigned got;  /* lode */
    int got_seen;  /* times lode listed it */
};

static struct cmp_snap *cmp_find(struct cmp_snap *s, size_t n, const char *key, bool by_id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(by_id ? s[i].id : s[i].recorded, key) == 0)
            return &s[i];
    return NULL;
}

/* Returns the number of differences found in one history, printing each. */
static int cmp_history(const char *hdir, json_t *restic_groups, bool tamper, struct util_buf *why)
{
    char path[4096];
    json_t *meta, *lode, *group = NULL, *arr;
    struct cmp_snap *s;
    size_t n, i, good = 0;
    int diffs = 0;
    const char *host;
    bool no_rules;
    json_t *v;

    pathf(path, sizeof(path), "%s/meta.json", hdir);
    meta = load_json(path);
    pathf(path, sizeof(path), "%s/lode.json", hdir);
    lode = load_json(path);
    host = json_string_value(json_object_get(meta, "host"));
    no_rules = json_is_true(json_object_get(meta, "no_rules"));
    arr = json_object_get(meta, "snapshots");
    n = json_array_size(arr);
    s = util_calloc(n ? n : 1, sizeof(*s));
    json_array_foreach(arr, i, v)
    {
        s[i].id = json_string_value(json_object_get(v, "id"));
        s[i].recorded = json_string_value(json_object_get(v, "recorded"));
        s[i].t = json_integer_value(json_object_get(v, "time"));
        s[i].incomplete = json_is_true(json_object_get(v, "incomplete"));
        s[i].suspicious = json_is_true(json_object_get(v, "suspicious"));
    }

    /* restic's answer for this host. */
    json_array_foreach(restic_groups, i,
                       v) if (strcmp(json_string_value(json_object_get(v, "host")), host) == 0)
        group = v;
    if (group != NULL) {
        const char *lists[2] = {"keep", "remove"};
        for (int l = 0; l < 2; l++) {
            json_t *sn;
            json_array_foreach(json_object_get(group, lists[l]), i, sn)
            {
                const char *t = json_string_value(json_object_get(sn, "time"));
                struct cmp_snap *x = cmp_find(s, n, t, false);
                if (x == NULL || x->suspicious) {
                    util_buf_printf(why, "    restic listed a snapshot at %s that was not given\n",
                                    t);
                    diffs++;
                    continue;
                }
                x->seen++;
            }
        }
        json_array_foreach(json_object_get(group, "reasons"), i, v)
        {
            const char *t =
                json_string_value(json_object_get(json_object_get(v, "snapshot"), "time"));
            struct cmp_snap *x = cmp_find(s, n, t, false);
            size_t k;
            json_t *m;
            if (x == NULL)
                continue; /* reported above */
            json_array_foreach(json_object_get(v, "matches"), k, m)
            {
                unsigned b = restic_reason(json_string_value(m));
                if (b == 0) {
                    util_buf_printf(why, "    unknown restic reason \"%s\"\n",
                                    json_string_value(m));
                    diffs++;
                }
                x->want |= b;
            }
        }
    }
    /* Post-processing to docs/retention.md: steps 1, 3 and 5, newest first. */
    for (size_t a = 0; a < n; a++) {
        size_t k = n - 1 - a; /* meta is oldest first */
        if (s[k].suspicious) {
            s[k].want = 1u << 6;
            continue;
        }
        if (group == NULL && !no_rules) {
            util_buf_printf(why, "    restic returned no group for %s\n", host);
            diffs++;
            break;
        }
        if (group != NULL && s[k].seen != 1) {
            util_buf_printf(why, "    restic listed %s (%s) %d times\n", s[k].id, s[k].recorded,
                            s[k].seen);
            diffs++;
        }
        if (no_rules)
            s[k].want |= 1u << 7;
        if (!s[k].incomplete && good < 2) {
            s[k].want |= 1u << 5;
            good++;
        }
    }

    /* lode's answer. */
    if (tamper) {
        /* Flip the first decision: a kept snapshot is forgotten, or the reverse. */
        json_t *keep = json_object_get(lode, "keep"), *forget = json_object_get(lode, "forget");
        if (json_array_size(keep) > 0) {
            json_array_append(forget, json_array_get(keep, 0));
            json_array_remove(keep, 0);
            json_object_del(json_array_get(forget, json_array_size(forget) - 1), "reasons");
        } else if (json_array_size(forget) > 0) {
            json_t *x = json_array_get(forget, 0);
            json_object_set_new(x, "reasons", json_pack("[s]", "last"));
            json_array_append(keep, x);
            json_array_remove(forget, 0);
        }
    }
    {
        const char *lists[2] = {"keep", "forget"};
        int64_t prev_t = INT64_MAX;
        for (int l = 0; l < 2; l++) {
            json_t *e;
            prev_t = INT64_MAX;
            json_array_foreach(json_object_get(lode, lists[l]), i, e)
            {
                const char *id = json_string_value(json_object_get(e, "id"));
                struct cmp_snap *x = id ? cmp_find(s, n, id, true) : NULL;
                size_t k;
                json_t *r;
                if (x == NULL) {
                    util_buf_printf(why, "    lode listed an unknown id %s\n", id ? id : "(none)");
                    diffs++;
                    continue;
                }
                x->got_seen++;
                if (x->t >= prev_t) {
                    util_buf_printf(why, "    lode's %s list is not newest first at %s\n", lists[l],
                                    id);
                    diffs++;
                }
                prev_t = x->t;
                json_array_foreach(json_object_get(e, "reasons"), k, r)
                {
                    unsigned b = reason_bit(json_string_value(r));
                    if (b == 0 || (x->got & b)) {
                        util_buf_printf(why, "    lode gave %s an unknown or repeated reason\n",
                                        id);
                        diffs++;
                    }
                    x->got |= b;
                }
                if (l == 0 && x->got == 0) {
                    util_buf_printf(why, "    lode kept %s without a reason\n", id);
                    diffs++;
                }
            }
        }
    }
    for (i = 0; i < n; i++) {
        char a[128], b[128];
        if (s[i].got_seen != 1) {
            util_buf_printf(why, "    lode listed %s %d times\n", s[i].id, s[i].got_seen);
            diffs++;
        } else if (s[i].got != s[i].want) {
            reasons_text(s[i].got, a, sizeof(a));
            reasons_text(s[i].want, b, sizeof(b));
            util_buf_printf(why, "    %s (%s%s%s): lode %s, restic %s\n", s[i].id, s[i].recorded,
                            s[i].incomplete ? ", incomplete" : "",
                            s[i].suspicious ? ", suspicious" : "", a, b);
            diffs++;
        }
    }
    free(s);
    json_decref(lode);
    json_decref(meta);
    return diffs;
}

static int cmd_compare(int argc, char **argv)
{
    const char *dir, *rdir;
    bool tamper = argc == 4 && strcmp(argv[3], "--tamper") == 0;
    json_t *groups = json_array();
    int passed = 0, failed = 0, h;
    char path[4096];
    FILE *gf;
    char line[8192];

    if (argc != 3 && !tamper)
        die("usage: compare DIR RESTICDIR [--tamper]");
    dir = argv[1];
    rdir = argv[2];

    /* Every restic output: one JSON line per group run, or nothing (no rules in 0.14). */
    pathf(path, sizeof(path), "%s/groups.tsv", dir);
    gf = fopen(path, "r");
    if (gf == NULL)
        die("cannot read %s", path);
    while (fgets(line, sizeof(line), gf) != NULL) {
        char *data = NULL;
        size_t len = 0;
        struct util_err err = {0};
        json_error_t e;
        json_t *v;
        pathf(path, sizeof(path), "%s/group-%d.json", rdir, atoi(line));
        if (util_read_file(path, &data, &len, &err) != 0)
            die("%s", err.msg);
        if (len > 0) {
            v = json_loadb(data, len, 0, &e);
            if (v == NULL || !json_is_array(v))
                die("%s: not restic's JSON: %s", path, e.text);
            json_array_extend(groups, v);
            json_decref(v);
        }
        free(data);
    }
    fclose(gf);

    for (h = 0;; h++) {
        struct stat st;
        struct util_buf why;
        json_t *meta;
        int d;
        pathf(path, sizeof(path), "%s/%03d/meta.json", dir, h);
        if (stat(path, &st) != 0)
            break;
        meta = load_json(path);
        util_buf_init(&why);
        util_buf_puts(&why, "");
        pathf(path, sizeof(path), "%s/%03d", dir, h);
        d = cmp_history(path, groups, tamper, &why);
        if (tamper) {
            /* Every history with a snapshot must now differ. */
            bool empty = json_array_size(json_object_get(meta, "snapshots")) == 0;
            if (d > 0 || empty) {
                passed++;
            } else {
                failed++;
                printf("not ok - history %03d: a flipped decision went unnoticed\n", h);
            }
        } else if (d == 0) {
            passed++;
            printf("ok - history %03d (%s)\n", h, json_string_value(json_object_get(meta, "desc")));
        } else {
            failed++;
            printf("not ok - history %03d (%s)\n%s", h,
                   json_string_value(json_object_get(meta, "desc")), why.data);
        }
        util_buf_free(&why);
        json_decref(meta);
    }
    json_decref(groups);
    if (tamper) {
        printf("tamper: %d of %d histories caught\n", passed, passed + failed);
        return failed == 0 && passed > 0 ? 0 : 1;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "gen") == 0)
        return cmd_gen(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "forge") == 0)
        return cmd_forge(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "compare") == 0)
        return cmd_compare(argc - 1, argv + 1);
    die("usage: diffrestic gen|forge|compare ...");
}
