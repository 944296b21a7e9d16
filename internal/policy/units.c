/*
 * Durations ("15m") and rates ("50MiB/s"), docs/policy.md.
 *
 * The grammar is deliberately small: a whole number and one unit. When the text
 * does not fit, the message names the first thing that is wrong (a sign, a
 * fraction, a space, two units, an unknown unit) and, where it can, gives the
 * spelling that would have been accepted, because "1h30m" and "1.5h" are what
 * people write first.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "policy_int.h"

struct policy_unit {
    const char *name;
    uint64_t factor;
};

static const struct policy_unit policy_duration_units[] = {
    {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 7 * 86400}, {"y", 365 * 86400},
};

static const struct policy_unit policy_rate_units[] = {
    {"B", 1},
    {"KiB", 1024},
    {"MiB", 1024 * 1024},
    {"GiB", 1024 * 1024 * 1024},
};

#define POLICY_NUNITS(a) (sizeof(a) / sizeof((a)[0]))

static bool policy_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static const struct policy_unit *policy_find_unit(const struct policy_unit *u, size_t n,
                                                  const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        if (strlen(u[i].name) == len && memcmp(u[i].name, s, len) == 0)
            return &u[i];
    }
    return NULL;
}

/*
 * "1h30m": when the text is a run of number-unit pairs, the total in the smallest
 * unit used, for the message. False when it is not such a run or it overflows.
 */
static bool policy_compound_duration(const char *s, char *out, size_t size)
{
    uint64_t total = 0, smallest = UINT64_MAX;
    const char *smallest_name = NULL;
    size_t i = 0, n = strlen(s), pairs = 0;

    while (i < n) {
        size_t d = i, u;
        uint64_t v;
        while (i < n && policy_is_digit(s[i]))
            i++;
        u = i;
        while (i < n && !policy_is_digit(s[i]))
            i++;
        const struct policy_unit *unit = policy_find_unit(
            policy_duration_units, POLICY_NUNITS(policy_duration_units), s + u, i - u);
        if (u == d || unit == NULL || util_parse_u64(s + d, u - d, UINT32_MAX, &v) != 0)
            return false;
        if (v > (UINT64_MAX / 2 - total) / unit->factor)
            return false;
        total += v * unit->factor;
        if (unit->factor < smallest) {
            smallest = unit->factor;
            smallest_name = unit->name;
        }
        pairs++;
    }
    if (pairs < 2)
        return false;
    snprintf(out, size, "%" PRIu64 "%s", total / smallest, smallest_name);
    return true;
}

int policy_parse_duration(const char *s, int64_t *seconds, struct util_err *err)
{
    const char *form = "a whole number and one unit (s, m, h, d, w or y), such as 15m";
    size_t n = strlen(s), digits = 0;
    const struct policy_unit *unit;
    uint64_t v;
    char better[64];

    while (digits < n && policy_is_digit(s[digits]))
        digits++;
    if (n == 0)
        return util_err_set(err, UTIL_EINVAL, "expected a duration: %s", form);
    if (s[0] == '-' || s[0] == '+')
        return util_err_set(err, UTIL_EINVAL, "a duration has no sign: write %s", form);
    if (strchr(s, ' ') != NULL || strchr(s, '\t') != NULL)
        return util_err_set(err, UTIL_EINVAL, "a duration has no spaces: write %s", form);
    if (digits == 0)
        return util_err_set(err, UTIL_EINVAL, "a duration starts with a number: write %s", form);
    if (s[digits] == '.' || s[digits] == ',')
        return util_err_set(err, UTIL_EINVAL,
                            "fractions are not accepted: use a smaller unit (90m, not 1.5h)");
    if (digits == n)
        return util_err_set(err, UTIL_EINVAL,
                            "a duration needs a unit (s, m, h, d, w or y): write %ss for seconds "
                            "or %sm for minutes",
                            s, s);
    if (policy_compound_duration(s, better, sizeof(better)))
        return util_err_set(err, UTIL_EINVAL, "a duration has one unit: write %s instead of %s",
                            better, s);
    unit = policy_find_unit(policy_duration_units, POLICY_NUNITS(policy_duration_units), s + digits,
                            n - digits);
    if (unit == NULL)
        return util_err_set(err, UTIL_EINVAL,
                            "unknown unit \"%s\": use s, m, h, d (24h), w (7d) or y (365d)",
                            s + digits);
    switch (util_parse_u64(s, digits, (uint64_t)INT64_MAX / unit->factor, &v)) {
    case 0:
        break;
    case UTIL_ERANGE:
        return util_err_set(err, UTIL_ERANGE, "the duration %s is too large", s);
    default:
        return util_err_set(err, UTIL_EINVAL, "expected a duration: %s", form);
    }
    *seconds = (int64_t)(v * unit->factor);
    return 0;
}

int policy_parse_rate(const char *s, uint64_t *bytes_per_second, struct util_err *err)
{
    const char *form = "a whole number, a binary unit (B, KiB, MiB or GiB) and /s, such as "
                       "50MiB/s";
    size_t n = strlen(s), digits = 0, ulen;
    const struct policy_unit *unit;
    uint64_t v;

    while (digits < n && policy_is_digit(s[digits]))
        digits++;
    if (n == 0)
        return util_err_set(err, UTIL_EINVAL, "expected a rate: %s", form);
    if (s[0] == '-' || s[0] == '+')
        return util_err_set(err, UTIL_EINVAL, "a rate has no sign: write %s", form);
    if (strchr(s, ' ') != NULL || strchr(s, '\t') != NULL)
        return util_err_set(err, UTIL_EINVAL, "a rate has no spaces: write %s", form);
    if (digits == 0)
        return util_err_set(err, UTIL_EINVAL, "a rate starts with a number: write %s", form);
    if (s[digits] == '.' || s[digits] == ',')
        return util_err_set(err, UTIL_EINVAL,
                            "fractions are not accepted: use a smaller unit (512KiB/s, not "
                            "0.5MiB/s)");
    if (n < digits + 2 || strcmp(s + n - 2, "/s") != 0)
        return util_err_set(err, UTIL_EINVAL, "a rate ends in /s: write %s", form);
    ulen = n - 2 - digits;
    unit = policy_find_unit(policy_rate_units, POLICY_NUNITS(policy_rate_units), s + digits, ulen);
    if (unit == NULL) {
        if (ulen == 2 && s[digits + 1] == 'B' && strchr("KMG", s[digits]) != NULL)
            return util_err_set(err, UTIL_EINVAL,
                                "units are binary: write %.*s%ciB/s, not %s (1%ciB = %s bytes)",
                                (int)digits, s, s[digits], s, s[digits],
                                s[digits] == 'K'   ? "1024"
                                : s[digits] == 'M' ? "1048576"
                                                   : "1073741824");
        return util_err_set(err, UTIL_EINVAL,
                            "unknown unit \"%.*s\": use B, KiB, MiB or GiB (bytes, binary)",
                            (int)ulen, s + digits);
    }
    switch (util_parse_u64(s, digits, UINT64_MAX / unit->factor, &v)) {
    case 0:
        break;
    case UTIL_ERANGE:
        return util_err_set(err, UTIL_ERANGE, "the rate %s is too large", s);
    default:
        return util_err_set(err, UTIL_EINVAL, "expected a rate: %s", form);
    }
    *bytes_per_second = v * unit->factor;
    return 0;
}

static const struct policy_unit policy_size_units[] = {
    {"B", 1},
    {"KiB", 1024},
    {"MiB", 1024 * 1024},
    {"GiB", 1024 * 1024 * 1024},
    {"TiB", (uint64_t)1024 * 1024 * 1024 * 1024},
};

int policy_parse_size(const char *s, uint64_t *bytes, struct util_err *err)
{
    const char *form = "a whole number and a binary unit (B, KiB, MiB, GiB or TiB), such as "
                       "512MiB";
    size_t n = strlen(s), digits = 0;
    const struct policy_unit *unit;
    uint64_t v;

    while (digits < n && policy_is_digit(s[digits]))
        digits++;
    if (n == 0 || digits == 0)
        return util_err_set(err, UTIL_EINVAL, "expected a size: %s", form);
    if (s[digits] == '.' || s[digits] == ',')
        return util_err_set(err, UTIL_EINVAL,
                            "fractions are not accepted: use a smaller unit (512MiB, not 0.5GiB)");
    unit = policy_find_unit(policy_size_units, POLICY_NUNITS(policy_size_units), s + digits,
                            n - digits);
    if (unit == NULL) {
        if (n - digits == 2 && s[digits + 1] == 'B' && strchr("KMGT", s[digits]) != NULL)
            return util_err_set(err, UTIL_EINVAL, "units are binary: write %.*s%ciB, not %s",
                                (int)digits, s, s[digits], s);
        return util_err_set(err, UTIL_EINVAL,
                            "unknown unit \"%s\": use B, KiB, MiB, GiB or TiB (bytes, binary)",
                            s + digits);
    }
    switch (util_parse_u64(s, digits, (uint64_t)INT64_MAX / unit->factor, &v)) {
    case 0:
        break;
    case UTIL_ERANGE:
        return util_err_set(err, UTIL_ERANGE, "the size %s is too large", s);
    default:
        return util_err_set(err, UTIL_EINVAL, "expected a size: %s", form);
    }
    *bytes = v * unit->factor;
    return 0;
}

void policy_format_duration(int64_t seconds, char *buf, size_t size)
{
    uint64_t s;
    size_t at = 0;
    int n;

    if (size == 0)
        return;
    buf[0] = '\0';
    if (seconds == 0) {
        snprintf(buf, size, "0s");
        return;
    }
    if (seconds < 0) {
        n = snprintf(buf, size, "-");
        at = (size_t)n < size ? (size_t)n : size;
        s = (uint64_t)(-(seconds + 1)) + 1; /* no overflow at INT64_MIN */
    } else {
        s = (uint64_t)seconds;
    }
    /* Hours are the largest unit: "50h25m" reads better for alert limits than "2d2h25m". */
    uint64_t h = s / 3600, m = s / 60 % 60, sec = s % 60;
    if (h > 0 && at < size) {
        n = snprintf(buf + at, size - at, "%" PRIu64 "h", h);
        at += (size_t)n < size - at ? (size_t)n : size - at;
    }
    if (m > 0 && at < size) {
        n = snprintf(buf + at, size - at, "%" PRIu64 "m", m);
        at += (size_t)n < size - at ? (size_t)n : size - at;
    }
    if (sec > 0 && at < size)
        snprintf(buf + at, size - at, "%" PRIu64 "s", sec);
}
