/*
 * util: the small things every module needs.
 *
 * Allocation that aborts with a message instead of returning NULL (a daemon that
 * cannot allocate a few bytes cannot do anything useful, and checking every call
 * site hides the real error paths), an error record that carries a message a
 * user can act on, a growable byte buffer, strict decimal parsing, and the civil
 * calendar arithmetic, RFC 3339 parsing and the one date formatter that the time
 * modules share.
 *
 * Costs: nothing here allocates unless asked to; the calendar functions are a few
 * integer operations (Howard Hinnant's days-from-civil algorithm) and never
 * consult the C library's time zone state.
 */
#ifndef LODE_UTIL_H
#define LODE_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Error codes: functions return 0 or one of these (negative errno values, as libuv does). */
#include <errno.h>
#define UTIL_EINVAL (-EINVAL) /* the input is invalid */
#define UTIL_ENOENT (-ENOENT) /* a named thing does not exist */
#define UTIL_EIO    (-EIO)    /* reading or writing failed */
#define UTIL_ERANGE (-ERANGE) /* a value is out of its allowed range */

/* An error: the code and one sentence for the user. */
struct util_err {
    int code;
    char msg[512];
};

/* Fills err (when not NULL) and returns code, so `return util_err_set(...)` reads well. */
int util_err_set(struct util_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Allocation: never returns NULL; on failure prints what was asked for and aborts. */
void *util_malloc(size_t n);
void *util_calloc(size_t count, size_t size);
void *util_realloc(void *p, size_t n);
/* Grows an array of `*cap` elements of `size` bytes to hold at least `need`. */
void *util_grow(void *p, size_t *cap, size_t need, size_t size);
char *util_strdup(const char *s);
char *util_strndup(const char *s, size_t n);
/* A printf into a fresh allocation. */
char *util_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable buffer of bytes, always NUL-terminated when data is not NULL. */
struct util_buf {
    char *data;
    size_t len;
    size_t cap;
};

void util_buf_init(struct util_buf *b);
void util_buf_append(struct util_buf *b, const void *data, size_t len);
void util_buf_puts(struct util_buf *b, const char *s);
void util_buf_printf(struct util_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void util_buf_vprintf(struct util_buf *b, const char *fmt, va_list ap);
/* Hands the data to the caller (who frees it) and leaves b empty. */
char *util_buf_steal(struct util_buf *b);
void util_buf_free(struct util_buf *b);

/* Reads a whole file ("-" is standard input). */
int util_read_file(const char *path, char **data, size_t *len, struct util_err *err);

/*
 * Strict unsigned decimal: digits only, no sign, no space, no leading "+", at most
 * `max`. Returns 0, UTIL_EINVAL (not a plain decimal) or UTIL_ERANGE (above max).
 */
int util_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out);

/* Edit distance (Levenshtein) between two short strings, for "did you mean". */
size_t util_edit_distance(const char *a, const char *b);

/* ---- civil calendar (proleptic Gregorian) ---- */

/* Days since 1970-01-01 of the given date; month 1..12, day 1..31. */
int64_t util_days_from_civil(int64_t y, unsigned m, unsigned d);
void util_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);
/* 0 = Sunday .. 6 = Saturday. */
unsigned util_weekday_from_days(int64_t days);
bool util_is_leap(int64_t y);
unsigned util_days_in_month(int64_t y, unsigned m);
/* Floor division and modulo, for negative times. */
int64_t util_floor_div(int64_t a, int64_t b);
int64_t util_floor_mod(int64_t a, int64_t b);

/* A broken-down date and time, with no zone attached. */
struct util_civil {
    int64_t year;
    unsigned month, day, hour, minute, second;
};

/* Seconds since the epoch <-> broken-down time, both read as the same clock. */
int64_t util_seconds_from_civil(const struct util_civil *c);
void util_civil_from_seconds(int64_t t, struct util_civil *c);

/*
 * The one date formatter. Every form writes the year with at least four digits and the
 * rest with two; the wall-clock forms show t + offset_s (the zone's offset east of UTC
 * at t, from internal/tz), the UTC forms ignore offset_s.
 */
enum util_time_form {
    UTIL_TIME_UTC,    /* "2026-03-29T01:00:00Z": RFC 3339 in UTC */
    UTIL_TIME_OFFSET, /* "2026-03-29T04:00:00+03:00": RFC 3339 at the offset ("+00:00" for 0) */
    UTIL_TIME_BASIC,  /* "20260329T010000Z": ISO 8601's basic form in UTC (snapshot ids) */
    UTIL_TIME_MINUTE, /* "2026-03-29T04:00": the wall clock to the minute (schedule slots) */
    UTIL_TIME_DATE,   /* "2026-03-29": the wall clock's day */
    UTIL_TIME_TEXT,   /* "2026-03-29 04:00:00": for people; the caller names the zone */
};
/* Enough for every form of a year of up to ten digits; longer ones are cut. */
#define UTIL_TIME_BUF 32
/*
 * Writes t in the form into buf (truncated to size, always terminated) and returns the
 * length written. Digits are written by hand: printf cost more than the rest of an S3
 * request signature's or a snapshot listing's formatting.
 */
size_t util_format_time(int64_t t, int32_t offset_s, enum util_time_form form, char *buf,
                        size_t size);
/* util_format_time(t, 0, UTIL_TIME_UTC, buf, size): the common case. */
void util_format_utc(int64_t t, char *buf, size_t size);
/*
 * Parses RFC 3339 ("2026-03-29T01:00:00Z", "...+02:00", fractional seconds are
 * truncated) into seconds since the epoch.
 */
int util_parse_rfc3339(const char *s, int64_t *out, struct util_err *err);

#endif
