/*
 * tz_fixture: the system's tz database as a cmocka group fixture, and instants written
 * as RFC 3339, for the tests whose assertions depend on local time and daylight saving
 * (binding, the controller's reconcile and GC slots). helper_tz_fixture.c; linked into
 * every unit test, used by those that name it.
 */
#ifndef LODE_TEST_TZ_FIXTURE_H
#define LODE_TEST_TZ_FIXTURE_H

#include <stdint.h>

#include "tz/tz.h"

/* The database tzf_setup opened (NULL before). */
extern struct tz_db *tzf_db;

/* cmocka group setup and teardown: open and close the system's tz database. */
int tzf_setup(void **state);
int tzf_teardown(void **state);

/* The instant of an RFC 3339 time ("2026-03-29T01:00:05Z"); a malformed one fails the test. */
int64_t tzf_at(const char *rfc3339);

#endif
