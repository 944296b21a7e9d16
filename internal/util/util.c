#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int util_err_set(struct util_err *err, int code, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

static void util_oom(size_t n)
{
    fprintf(stderr, "lodestore: out of memory allocating %zu bytes\n", n);
    abort();
}

void *util_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        util_oom(n);
    return p;
}

void *util_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p == NULL)
        util_oom(count * size);
    return p;
}

void *util_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        util_oom(n);
    return q;
}

void *util_grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / size)
            util_oom(SIZE_MAX);
        ncap *= 2;
    }
    *cap = ncap;
    return util_realloc(p, ncap * size);
}

char *util_strdup(const char *s)
{
    return util_strndup(s, strlen(s));
}

char *util_strndup(const char *s, size_t n)
{
    char *p = util_malloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *util_asprintf(const char *fmt, ...)
{
    struct util_buf b;
    va_list ap;
    util_buf_init(&b);
    va_start(ap, fmt);
    util_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (b.data == NULL)
        return util_strdup("");
    return util_buf_steal(&b);
}

void util_buf_init(struct util_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

static void util_buf_reserve(struct util_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need < b->len)
        util_oom(SIZE_MAX);
    b->data = util_grow(b->data, &b->cap, need, 1);
}

void util_buf_append(struct util_buf *b, const void *data, size_t len)
{
    util_buf_reserve(b, len);
    if (len > 0)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void util_buf_puts(struct util_buf *b, const char *s)
{
    util_buf_append(b, s, strlen(s));
}

void util_buf_vprintf(struct util_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        fprintf(stderr, "lodestore: invalid format string \"%s\"\n", fmt);
        abort();
    }
    util_buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void util_buf_printf(struct util_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    util_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *util_buf_steal(struct util_buf *b)
{
    char *p = b->data;
    if (p == NULL)
        p = util_strdup("");
    util_buf_init(b);
    return p;
}

void util_buf_free(struct util_buf *b)
{
    free(b->data);
    util_buf_init(b);
}

int util_read_file(const char *path, char **data, size_t *len, struct util_err *err)
{
    FILE *f;
    struct util_buf b;
    char chunk[65536];
    size_t n;
    int rc = 0;

    if (strcmp(path, "-") == 0) {
        f = stdin;
    } else {
        f = fopen(path, "rb");
        if (f == NULL)
            return util_err_set(err, UTIL_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    util_buf_init(&b);
    util_buf_reserve(&b, 0);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        util_buf_append(&b, chunk, n);
    if (ferror(f)) {
        rc = util_err_set(err, UTIL_EIO, "%s: cannot read: %s", path, strerror(errno));
        util_buf_free(&b);
        goto close_file;
    }
    *len = b.len;
    *data = util_buf_steal(&b);
close_file:
    if (f != stdin)
        fclose(f);
    return rc;
}

int util_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0)
        return UTIL_EINVAL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return UTIL_EINVAL;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10)
            return UTIL_ERANGE;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

size_t util_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    /* Field names are short; a longer pair is never a near miss worth computing. */
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

int64_t util_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

int64_t util_floor_mod(int64_t a, int64_t b)
{
    return a - util_floor_div(a, b) * b;
}

bool util_is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

unsigned util_days_in_month(int64_t y, unsigned m)
{
    static const unsigned char dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && util_is_leap(y))
        return 29;
    return dim[(m - 1) % 12];
}

/* Days from civil: eras of 400 years, March-based years so the leap day is last. */
int64_t util_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = util_floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (int64_t)(m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void util_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = util_floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

unsigned util_weekday_from_days(int64_t days)
{
    /* 1970-01-01 was a Thursday (4). */
    return (unsigned)util_floor_mod(days + 4, 7);
}

int64_t util_seconds_from_civil(const struct util_civil *c)
{
    return util_days_from_civil(c->year, c->month, c->day) * 86400 + (int64_t)c->hour * 3600 +
           (int64_t)c->minute * 60 + c->second;
}

void util_civil_from_seconds(int64_t t, struct util_civil *c)
{
    int64_t days = util_floor_div(t, 86400);
    int64_t rem = t - days * 86400;
    util_civil_from_days(days, &c->year, &c->month, &c->day);
    c->hour = (unsigned)(rem / 3600);
    c->minute = (unsigned)(rem % 3600 / 60);
    c->second = (unsigned)(rem % 60);
}

static char *util_put2(char *p, unsigned v)
{
    *p++ = (char)('0' + v / 10 % 10);
    *p++ = (char)('0' + v % 10);
    return p;
}

size_t util_format_time(int64_t t, int32_t offset_s, enum util_time_form form, char *buf,
                        size_t size)
{
    bool utc = form == UTIL_TIME_UTC || form == UTIL_TIME_BASIC;
    bool basic = form == UTIL_TIME_BASIC;
    char tmp[64], *p = tmp;
    struct util_civil c;
    size_t n;

    util_civil_from_seconds(utc ? t : t + offset_s, &c);
    if (c.year >= 0 && c.year <= 9999) {
        p = util_put2(p, (unsigned)c.year / 100);
        p = util_put2(p, (unsigned)c.year % 100);
    } else {
        p += snprintf(p, 24, "%04lld", (long long)c.year);
    }
    if (!basic)
        *p++ = '-';
    p = util_put2(p, c.month);
    if (!basic)
        *p++ = '-';
    p = util_put2(p, c.day);
    if (form == UTIL_TIME_DATE)
        goto done;
    *p++ = form == UTIL_TIME_TEXT ? ' ' : 'T';
    p = util_put2(p, c.hour);
    if (!basic)
        *p++ = ':';
    p = util_put2(p, c.minute);
    if (form == UTIL_TIME_MINUTE)
        goto done;
    if (!basic)
        *p++ = ':';
    p = util_put2(p, c.second);
    if (utc) {
        *p++ = 'Z';
    } else if (form == UTIL_TIME_OFFSET) {
        unsigned a = offset_s < 0 ? (unsigned)-(int64_t)offset_s : (unsigned)offset_s;
        *p++ = offset_s < 0 ? '-' : '+';
        p = util_put2(p, a / 3600);
        *p++ = ':';
        p = util_put2(p, a / 60 % 60);
    }
done:
    n = (size_t)(p - tmp);
    if (size == 0)
        return 0;
    if (n >= size)
        n = size - 1;
    memcpy(buf, tmp, n);
    buf[n] = '\0';
    return n;
}

void util_format_utc(int64_t t, char *buf, size_t size)
{
    util_format_time(t, 0, UTIL_TIME_UTC, buf, size);
}

static int util_digits(const char *s, size_t n, unsigned *out)
{
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int util_parse_rfc3339(const char *s, int64_t *out, struct util_err *err)
{
    unsigned y, mo, d, h, mi, sec, oh = 0, om = 0;
    size_t len = strlen(s);
    const char *p;
    int sign = 0;

    if (len < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
        s[16] != ':' || util_digits(s, 4, &y) || util_digits(s + 5, 2, &mo) ||
        util_digits(s + 8, 2, &d) || util_digits(s + 11, 2, &h) || util_digits(s + 14, 2, &mi) ||
        util_digits(s + 17, 2, &sec))
        goto bad;
    p = s + 19;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            goto bad;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p == '-' ? -1 : 1;
        if (strlen(p) != 6 || p[3] != ':' || util_digits(p + 1, 2, &oh) ||
            util_digits(p + 4, 2, &om) || oh > 23 || om > 59)
            goto bad;
        p += 6;
    } else {
        goto bad;
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > util_days_in_month(y, mo) || h > 23 ||
        mi > 59 || sec > 60)
        goto bad;
    if (sec == 60)
        sec = 59;
    {
        struct util_civil c = {y, mo, d, h, mi, sec};
        *out = util_seconds_from_civil(&c) - sign * ((int64_t)oh * 3600 + om * 60);
    }
    return 0;
bad:
    return util_err_set(err, UTIL_EINVAL,
                        "\"%s\" is not an RFC 3339 time (write it as 2026-03-29T01:00:00Z)", s);
}
