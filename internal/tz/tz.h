/*
 * tz: time zones from the tz database, without the C library's time zone state.
 *
 * A zone is read from a TZif file (version 2 or later; the 64-bit data only) into
 * an immutable struct tz_zone: the transitions, their UTC offsets, and the POSIX
 * TZ footer that rules every instant after the last transition (with the version
 * 3 extensions: hours up to 167 and negative, e.g. "M3.5.0/-1"). Files with leap
 * seconds ("right/" zones) are rejected: Lodestore counts POSIX seconds.
 *
 * Two primitives serve everything else:
 *   tz_offset_at()      an instant -> the UTC offset in force there;
 *   tz_resolve_local()  a local wall-clock time -> exactly one instant, two (a
 *                       repeated time, when clocks go back) or none (a gap, when
 *                       clocks jump forward; the transition instant is given).
 * A "local time" is counted in seconds since 1970-01-01T00:00 on the wall clock,
 * as if that clock were UTC, so the civil helpers of util.h convert it.
 *
 * Costs: a zone is a few KiB, read once. tz_offset_at() is a binary search over
 * the transitions (about 250 for a European zone), or for instants past the last
 * transition a footer rule evaluation that is cached per year. Nothing allocates
 * after tz_zone_load(), and a loaded zone may be shared read-only.
 *
 * The only I/O is in tz_db_open() and tz_zone_load(); tz_zone_parse() builds a zone
 * from bytes and is what the tests and the fuzzer drive.
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

/* Resolves a local wall-clock time (seconds, see above) to instants. */
void tz_resolve_local(const struct tz_zone *z, int64_t local, struct tz_local *out);

/*
 * The first transition strictly after t, or INT64_MAX when there is none (a zone
 * with no DST). Lets callers walk a range without sampling it.
 */
int64_t tz_next_transition(const struct tz_zone *z, int64_t t);

#endif
