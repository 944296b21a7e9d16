/*
 * S3 Object Lock settings (s3.h: s3_lock_parse, s3_refusal_is_lock; docs/security.md,
 * "Object Lock"). The headers themselves are checked against versitygw by
 * tests/e2e/test_roles.sh, which reads each object's retention back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "s3/s3.h"

static void test_parse(void **state)
{
    (void)state;
    struct s3_config cfg;
    struct util_err err = {0};
    memset(&cfg, 0, sizeof(cfg));
    assert_int_equal(s3_lock_parse(&cfg, "GOVERNANCE:30", &err), 0);
    assert_string_equal(cfg.lock_mode, "GOVERNANCE");
    assert_int_equal(cfg.lock_days, 30);
    assert_int_equal(s3_lock_parse(&cfg, "COMPLIANCE:36500", &err), 0);
    assert_string_equal(cfg.lock_mode, "COMPLIANCE");
    assert_int_equal(cfg.lock_days, 36500);
    static const char *const bad[] = {
        "GOVERNANCE",       "GOVERNANCE:", "GOVERNANCE:0",  "governance:3",  "LEGAL:3",
        "COMPLIANCE:36501", ":3",          "GOVERNANCE:3d", "GOVERNANCE:-1", "",
        "COMPLIANCEX:3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct s3_config c2;
        memset(&c2, 0, sizeof(c2));
        err.msg[0] = '\0';
        assert_int_equal(s3_lock_parse(&c2, bad[i], &err), UTIL_EINVAL);
        assert_non_null(strstr(err.msg, "GOVERNANCE:DAYS or COMPLIANCE:DAYS"));
        /* Nothing is set from a refused value. */
        assert_int_equal(c2.lock_days, 0);
        assert_string_equal(c2.lock_mode, "");
    }
}

static void test_refusal(void **state)
{
    (void)state;
    /* AWS S3 and versitygw; MinIO. */
    assert_true(s3_refusal_is_lock("AccessDenied",
                                   "Access Denied because object protected by object lock."));
    assert_true(
        s3_refusal_is_lock("AccessDenied", "Object is WORM protected and cannot be overwritten"));
    /* A permission refusal is not a lock: forget and gc report it as a failure. */
    assert_false(s3_refusal_is_lock("AccessDenied", "Access Denied."));
    assert_false(s3_refusal_is_lock("InternalError", "We encountered an internal error."));
    assert_false(s3_refusal_is_lock("", ""));
    assert_false(s3_refusal_is_lock("AccessDenied", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_refusal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
