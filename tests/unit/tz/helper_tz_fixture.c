/* tz_fixture.h: the system's tz database for a cmocka group, and RFC 3339 instants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tz_fixture.h"
#include "util/util.h"

struct tz_db *tzf_db;

int tzf_setup(void **state)
{
    struct util_err err = {0};
    return tz_db_open(&tzf_db, NULL, &err);
}

int tzf_teardown(void **state)
{
    tz_db_close(tzf_db);
    tzf_db = NULL;
    return 0;
}

int64_t tzf_at(const char *rfc3339)
{
    int64_t t;
    struct util_err err = {0};
    assert_int_equal(util_parse_rfc3339(rfc3339, &t, &err), 0);
    return t;
}
