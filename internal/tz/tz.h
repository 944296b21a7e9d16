/*
 * tz: time zones from the tz database, without the C library's time zone state.
 *
 * A zone is read from a TZif file (version 2 or later; the 64-bit data only) into
 * an immutable struct tz_zone: the transitions, their UTC offsets, and the POSIX
 * TZ footer that rules every instant at or after the last transition (with the
 * version 3 extensions: hours up to 167 and negative, e.g. "M3.5.0/-1"; southern
 * zones and negative DST such as Europe/Dublin's "IST-1GMT0,M10.5.0,M3.5.0/1";
 * DST all year such as "EST5EDT,0/0,J365/25"; a DST name without rules takes the
 * US rules). Files with leap seconds ("right/" zones) are rejected: Lodestore
 * counts POSIX seconds. The file is never trusted: every count, index, offset
 * (at most a week) and the order of the transitions are checked.
 *
 * Before the first transition the zone is in time type 0 (RFC 9636); a file with
 * no transitions follows its footer everywhere. Fat files (every transition to
 * 2037) and slim files (only up to the last rule change) give the same answers.
 *
 * Two primitives serve everything else:
 *   tz_offset_at()      an instant -> the UTC offset in force there;
 *   tz_resolve_local()  a local wall-clock time -> exactly one instant, two (a
 *                       repeated time, when clocks go back) or none (a gap, when
 *                       clocks jump forward; the transition instant is given).
 * A "local time" is counted in seconds since 1970-01-01T00:00 on the wall clock,
 * as if that clock were UTC, so the civil helpers of util.h convert it.
 *
 * Costs: tz_zone_load() reads one file (a few KiB) and precomputes the footer's
 * transitions up to 2200 into the transition array (about 330 more entries, 14
 * bytes each, for a DST zone; about 35 us). After that nothing allocates, and a
 * loaded zone may be shared read-only between threads. tz_offset_at() is then one
 * binary search (about 600 entries, 20 ns); tz_resolve_local() one binary search
 * and a walk over the one or two spans near the time (about 30 ns). Past 2200 (or
 * before 1800 in a file with no transitions) the footer rules are evaluated
 * directly, year by year, a few times slower. Instants are clamped to +-2^60 s
 * (36 billion years), so no input overflows.
 *
 * The only I/O is in tz_db_open(), tz_db_check_zone() and tz_zone_load();
 * tz_zone_parse() builds a zone from bytes and is what the tests and the fuzzer
 * drive.
 */
#ifndef LODE_TZ_H
#define LODE_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* The default zoneinfo directory; LODE_ZONEINFO or a --zoneinfo flag overrides it. */
#define TZ_DEFAULT_DIR "/usr/share/zoneinfo"

struct tz_zone; /* opaque, immutable once built */
struct tz_db;   /* opaque: a zoneinfo directory and the names it holds */

/*
 * Opens a zoneinfo directory: dir NULL means $LODE_ZONEINFO, else TZ_DEFAULT_DIR.
 * Reads the database version (from tzdata.zi or +VERSION) and nothing else yet.
 */
int tz_db_open(struct tz_db **out, const char *dir, struct util_err *err);
void tz_db_close(struct tz_db *db);
/* The directory in use. */
const char *tz_db_dir(const struct tz_db *db);
/* The tz database version, such as "2025b", or "unknown". */
const char *tz_db_version(const struct tz_db *db);

/*
 * Checks a zone name without touching the disk: an IANA-style name of letters,
 * digits, '/', '_', '-', '+', no "..", no leading '/', no empty component, not
 * "right/..." or "posix/...", at most 255 bytes. The message says what is wrong.
 */
int tz_name_check(const char *name, struct util_err *err);

/*
 * Checks that a zone exists without parsing it: tz_name_check(), then the file is
 * there (or a link of tzdata.zi leads to one) and starts with the TZif magic. For
 * validators that must not pay for a full load. Errors as tz_zone_load().
 */
int tz_db_check_zone(const struct tz_db *db, const char *name, struct util_err *err);

/*
 * Loads a zone by name (a backward link such as Europe/Kiev is fine, whether the
 * directory holds it as a file or only tzdata.zi lists it) from the database.
 * UTIL_EINVAL for a name tz_name_check() refuses; UTIL_ENOENT with "unknown time
 * zone \"X\"" when there is no such zone (no file, or a file that is not TZif, such
 * as "leapseconds"); UTIL_EINVAL when the file is damaged TZif, version 1 or has
 * leap seconds; UTIL_EIO when it cannot be read. tz_zone_name() is the name asked
 * for, not the link's target.
 */
int tz_zone_load(struct tz_zone **out, const struct tz_db *db, const char *name,
                 struct util_err *err);

/* Builds a zone from the bytes of a TZif file. name is kept for messages. */
int tz_zone_parse(struct tz_zone **out, const char *name, const unsigned char *data, size_t len,
                  struct util_err *err);

/* Builds the fixed zone UTC (no I/O), for policies without a schedule. */
struct tz_zone *tz_zone_utc(void);

void tz_zone_free(struct tz_zone *z);
const char *tz_zone_name(const struct tz_zone *z);

/* The UTC offset in seconds (local = utc + offset) at instant t. */
int32_t tz_offset_at(const struct tz_zone *z, int64_t t);

/* The abbreviation in force at t ("EEST"), for human output. */
const char *tz_abbrev_at(const struct tz_zone *z, int64_t t);

enum tz_local_kind {
    TZ_LOCAL_UNIQUE,   /* the local time happens once: at[0] */
    TZ_LOCAL_REPEATED, /* it happens twice: at[0] < at[1] */
    TZ_LOCAL_GAP       /* it does not happen: at[0] is the transition instant that skips it */
};

struct tz_local {
    enum tz_local_kind kind;
    int64_t at[2];
};

/*
 * Resolves a local wall-clock time (seconds, see above) to instants: every instant
 * t with t + tz_offset_at(t) == local. In a gap, at[0] is the first transition
 * that jumps over the time (the first instant after the gap, e.g. 04:00 EEST for
 * Kyiv's 03:30 on 2026-03-29). A time that occurs three times or more (possible
 * only in odd historical data) is REPEATED with the first and the last instant.
 * Never allocates; at[1] equals at[0] unless REPEATED.
 */
void tz_resolve_local(const struct tz_zone *z, int64_t local, struct tz_local *out);

/*
 * The first transition strictly after t, or INT64_MAX when there is none (a zone
 * with no DST). Lets callers walk a range without sampling it. A transition here
 * changes the offset, the DST flag or the abbreviation: entries of the file that
 * change nothing (such as zic's at 2038-01-19) are skipped.
 */
int64_t tz_next_transition(const struct tz_zone *z, int64_t t);

#endif
