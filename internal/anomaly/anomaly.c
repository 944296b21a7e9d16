/*
 * The anomaly rules. See anomaly.h for the rules; this file adds how they are
 * computed: every percentage is compared in 128-bit integers (a * 100 >= p * b),
 * so no count can overflow and no rounding moves a threshold.
 */
#include <stdio.h>
#include <string.h>

#include "anomaly/anomaly.h"

#define ANOMALY_RECENT_MAX 7

static const char *const anomaly_names[ANOMALY_RULE_COUNT] = {
    "mass-change", "deletion-spike", "shrink", "encryption-like", "sudden-growth",
};

const char *anomaly_rule_name(unsigned i)
{
    return i < ANOMALY_RULE_COUNT ? anomaly_names[i] : NULL;
}

void anomaly_thresholds_default(struct anomaly_thresholds *t)
{
    t->mass_change_percent = 25;
    t->mass_change_min_files = 50;
    t->mass_change_factor = 5;
    t->deletion_percent = 20;
    t->deletion_min_files = 50;
    t->shrink_percent = 30;
    t->shrink_min_files = 50;
    t->shrink_min_bytes = 1ull << 20;
    t->encryption_min_bytes = 1ull << 20;
    t->encryption_percent = 80;
    t->encryption_baseline_percent = 40;
    t->growth_factor = 10;
    t->growth_min_bytes = 1ull << 30;
}

int anomaly_thresholds_check(const struct anomaly_thresholds *t, struct util_err *err)
{
    const struct {
        const char *name;
        unsigned value, max;
    } v[] = {
        {"massChangePercent", t->mass_change_percent, 100},
        {"massChangeFactor", t->mass_change_factor, 1000},
        {"deletionPercent", t->deletion_percent, 100},
        {"shrinkPercent", t->shrink_percent, 100},
        {"encryptionPercent", t->encryption_percent, 100},
        {"encryptionBaselinePercent", t->encryption_baseline_percent, 100},
        {"growthFactor", t->growth_factor, 1000},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        if (v[i].value < 1 || v[i].value > v[i].max)
            return util_err_set(err, UTIL_ERANGE, "anomaly.%s: %u is out of range (1 to %u)",
                                v[i].name, v[i].value, v[i].max);
    return 0;
}

int anomaly_thresholds_set(struct anomaly_thresholds *t, const char *name, uint64_t value,
                           struct util_err *err)
{
    /* Percentages and factors are small unsigned fields; counts and sizes 64-bit. */
    const struct {
        const char *name;
        unsigned *small;
        uint64_t *big;
        unsigned max;
    } f[] = {
        {"massChangePercent", &t->mass_change_percent, NULL, 100},
        {"massChangeMinFiles", NULL, &t->mass_change_min_files, 0},
        {"massChangeFactor", &t->mass_change_factor, NULL, 1000},
        {"deletionPercent", &t->deletion_percent, NULL, 100},
        {"deletionMinFiles", NULL, &t->deletion_min_files, 0},
        {"shrinkPercent", &t->shrink_percent, NULL, 100},
        {"shrinkMinFiles", NULL, &t->shrink_min_files, 0},
        {"shrinkMinBytes", NULL, &t->shrink_min_bytes, 0},
        {"encryptionMinBytes", NULL, &t->encryption_min_bytes, 0},
        {"encryptionPercent", &t->encryption_percent, NULL, 100},
        {"encryptionBaselinePercent", &t->encryption_baseline_percent, NULL, 100},
        {"growthFactor", &t->growth_factor, NULL, 1000},
        {"growthMinBytes", NULL, &t->growth_min_bytes, 0},
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        if (strcmp(f[i].name, name) != 0)
            continue;
        if (f[i].big != NULL) {
            *f[i].big = value;
            return 0;
        }
        if (value < 1 || value > f[i].max)
            return util_err_set(err, UTIL_ERANGE, "anomaly.%s: %llu is out of range (1 to %u)",
                                name, (unsigned long long)value, f[i].max);
        *f[i].small = (unsigned)value;
        return 0;
    }
    return util_err_set(err, UTIL_EINVAL, "anomaly.%s: no such threshold", name);
}

/* a + b, saturating: counters from a hostile manifest must not wrap. */
static uint64_t anomaly_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* a >= p% of b */
static bool anomaly_at_least_percent(uint64_t a, unsigned p, uint64_t b)
{
    return (unsigned __int128)a * 100 >= (unsigned __int128)p * b;
}

/* The lower median of n <= ANOMALY_RECENT_MAX values (insertion sort: n is tiny). */
static uint64_t anomaly_median(uint64_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint64_t x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return v[(n - 1) / 2];
}

/* Percent with one decimal, for the sentences: 3 of 8 -> 37.5. */
static double anomaly_pct(uint64_t a, uint64_t b)
{
    return b ? 100.0 * (double)a / (double)b : 0.0;
}

unsigned anomaly_check(const struct anomaly_thresholds *t, const struct anomaly_stats *snap,
                       const struct anomaly_stats *recent, size_t nrecent,
                       struct anomaly_report *out)
{
    memset(out, 0, sizeof(*out));
    if (nrecent == 0)
        return 0;
    if (nrecent > ANOMALY_RECENT_MAX)
        nrecent = ANOMALY_RECENT_MAX;
    const struct anomaly_stats *parent = &recent[0];
    uint64_t v[ANOMALY_RECENT_MAX];
    size_t n;

    /* mass change: changed or deleted files against the parent and the usual count */
    uint64_t touched = anomaly_add(snap->changed_files, snap->deleted_files);
    for (n = 0; n < nrecent; n++)
        v[n] = anomaly_add(recent[n].changed_files, recent[n].deleted_files);
    uint64_t usual = anomaly_median(v, n);
    if (touched >= t->mass_change_min_files &&
        anomaly_at_least_percent(touched, t->mass_change_percent, parent->files) &&
        (unsigned __int128)touched >= (unsigned __int128)usual * t->mass_change_factor) {
        out->rules |= ANOMALY_MASS_CHANGE;
        snprintf(out->why[0], sizeof(out->why[0]),
                 "%llu of the parent's %llu files changed or deleted (%.1f%%, limit %u%%); "
                 "the recent median is %llu (limit %ux)",
                 (unsigned long long)touched, (unsigned long long)parent->files,
                 anomaly_pct(touched, parent->files), t->mass_change_percent,
                 (unsigned long long)usual, t->mass_change_factor);
    }

    /* deletion spike */
    if (snap->deleted_files >= t->deletion_min_files &&
        anomaly_at_least_percent(snap->deleted_files, t->deletion_percent, parent->files)) {
        out->rules |= ANOMALY_DELETION_SPIKE;
        snprintf(out->why[1], sizeof(out->why[1]),
                 "%llu of the parent's %llu files deleted (%.1f%%, limit %u%%)",
                 (unsigned long long)snap->deleted_files, (unsigned long long)parent->files,
                 anomaly_pct(snap->deleted_files, parent->files), t->deletion_percent);
    }

    /* shrink: what is left is at most (100 - shrinkPercent)% of the parent */
    unsigned left = 100 - t->shrink_percent;
    bool files_fell =
        parent->files >= t->shrink_min_files && parent->files > 0 &&
        (unsigned __int128)snap->files * 100 <= (unsigned __int128)left * parent->files;
    bool bytes_fell =
        parent->bytes >= t->shrink_min_bytes && parent->bytes > 0 &&
        (unsigned __int128)snap->bytes * 100 <= (unsigned __int128)left * parent->bytes;
    if (files_fell || bytes_fell) {
        out->rules |= ANOMALY_SHRINK;
        snprintf(
            out->why[2], sizeof(out->why[2]),
            "%llu files and %llu bytes, the parent had %llu and %llu (fell by %.1f%% and "
            "%.1f%%, limit %u%%)",
            (unsigned long long)snap->files, (unsigned long long)snap->bytes,
            (unsigned long long)parent->files, (unsigned long long)parent->bytes,
            parent->files > snap->files ? anomaly_pct(parent->files - snap->files, parent->files)
                                        : 0.0,
            parent->bytes > snap->bytes ? anomaly_pct(parent->bytes - snap->bytes, parent->bytes)
                                        : 0.0,
            t->shrink_percent);
    }

    /*
     * encryption-like: changed files whose data no longer compresses, where the
     * data read recently did. The baseline is the median share, in 1/10,000.
     */
    size_t m = 0;
    for (size_t i = 0; i < nrecent; i++)
        if (recent[i].read_bytes > 0)
            v[m++] = (uint64_t)((unsigned __int128)recent[i].incompressible_read_bytes * 10000 /
                                recent[i].read_bytes);
    if (m > 0 && snap->changed_bytes >= t->encryption_min_bytes && snap->changed_bytes > 0 &&
        anomaly_at_least_percent(snap->incompressible_changed_bytes, t->encryption_percent,
                                 snap->changed_bytes)) {
        uint64_t base = anomaly_median(v, m);
        if (base <= (uint64_t)t->encryption_baseline_percent * 100) {
            out->rules |= ANOMALY_ENCRYPTION;
            snprintf(out->why[3], sizeof(out->why[3]),
                     "%.1f%% of %llu changed bytes did not compress (limit %u%%); the recent "
                     "median was %.1f%% (limit %u%%)",
                     anomaly_pct(snap->incompressible_changed_bytes, snap->changed_bytes),
                     (unsigned long long)snap->changed_bytes, t->encryption_percent,
                     (double)base / 100.0, t->encryption_baseline_percent);
        }
    }

    /* sudden growth: new data against its recent median */
    for (n = 0; n < nrecent; n++)
        v[n] = recent[n].new_bytes;
    usual = anomaly_median(v, n);
    if (snap->new_bytes >= t->growth_min_bytes &&
        (unsigned __int128)snap->new_bytes >= (unsigned __int128)usual * t->growth_factor) {
        out->rules |= ANOMALY_GROWTH;
        snprintf(out->why[4], sizeof(out->why[4]),
                 "%llu new bytes, the recent median is %llu (limit %ux, at least %llu)",
                 (unsigned long long)snap->new_bytes, (unsigned long long)usual, t->growth_factor,
                 (unsigned long long)t->growth_min_bytes);
    }
    return out->rules;
}

void anomaly_report_format(const struct anomaly_report *r, char *buf, size_t size)
{
    size_t len = 0;
    if (size == 0)
        return;
    buf[0] = '\0';
    for (unsigned i = 0; i < ANOMALY_RULE_COUNT; i++) {
        if (!(r->rules & (1u << i)))
            continue;
        int k = snprintf(buf + len, size - len, "%s%s: %s", len ? "; " : "", anomaly_names[i],
                         r->why[i]);
        if (k < 0 || (size_t)k >= size - len)
            return; /* truncated, still NUL-terminated */
        len += (size_t)k;
    }
}
