/*
 * BackupRepository resolution, the pure parts: the S3 settings from the object and
 * its Secret, the Ready reasons, and the re-check schedule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "repository.h"

static json_t *repo(const char *spec_json)
{
    json_error_t e;
    json_t *spec = json_loads(spec_json, 0, &e);
    assert_non_null(spec);
    return json_pack("{s:{s:s,s:s,s:I},s:o}", "metadata", "name", "main", "namespace", "ns",
                     "generation", (json_int_t)3, "spec", spec);
}

/* AKIA / secret / tok, base64. */
static json_t *secret(void)
{
    return json_pack("{s:{s:s,s:s,s:s,s:s}}", "data", "AWS_ACCESS_KEY_ID",
                     "QUtJQQ==", "AWS_SECRET_ACCESS_KEY", "c2VjcmV0", "tok", "dG9r", "other-ak",
                     "T1RIRVI=");
}

static void test_settings(void **state)
{
    struct s3_config cfg;
    const char *reason;
    struct util_err err;
    json_t *r = repo("{\"endpoint\":\"https://s3.eu-west-3.amazonaws.com/\",\"bucket\":\"bkt\","
                     "\"prefix\":\"team/a\",\"region\":\"eu-west-3\","
                     "\"credentialsSecret\":{\"name\":\"s\",\"sessionTokenKey\":\"tok\"}}");
    json_t *s = secret();
    assert_int_equal(ctl_repo_settings(r, s, &cfg, &reason, &err), 0);
    assert_string_equal(cfg.endpoint, "https://s3.eu-west-3.amazonaws.com");
    assert_string_equal(cfg.bucket, "bkt");
    assert_string_equal(cfg.prefix, "team/a/");
    assert_string_equal(cfg.region, "eu-west-3");
    assert_string_equal(cfg.access_key, "AKIA");
    assert_string_equal(cfg.secret_key, "secret");
    assert_string_equal(cfg.session_token, "tok");
    s3_config_free(&cfg);
    json_decref(r);

    /* Other key names. */
    r = repo("{\"endpoint\":\"https://h\",\"bucket\":\"bkt\",\"credentialsSecret\":{\"name\":\"s\","
             "\"accessKeyIDKey\":\"other-ak\"}}");
    assert_int_equal(ctl_repo_settings(r, s, &cfg, &reason, &err), 0);
    assert_string_equal(cfg.access_key, "OTHER");
    assert_string_equal(cfg.region, "us-east-1");
    assert_string_equal(cfg.prefix, "");
    s3_config_free(&cfg);
    json_decref(r);

    /* A missing key in the Secret. */
    r = repo("{\"endpoint\":\"https://h\",\"bucket\":\"bkt\",\"credentialsSecret\":{\"name\":\"s\","
             "\"secretAccessKeyKey\":\"nope\"}}");
    assert_int_equal(ctl_repo_settings(r, s, &cfg, &reason, &err), UTIL_EINVAL);
    assert_string_equal(reason, "SecretIncomplete");
    assert_non_null(strstr(err.msg, "nope"));
    json_decref(r);

    /* Plain http to a remote host without allowPlainHTTP; then with it. */
    r = repo("{\"endpoint\":\"http://s3.example.com\",\"bucket\":\"bkt\","
             "\"credentialsSecret\":{\"name\":\"s\"}}");
    assert_int_equal(ctl_repo_settings(r, s, &cfg, &reason, &err), UTIL_EINVAL);
    assert_string_equal(reason, "InvalidSpec");
    json_decref(r);
    r = repo("{\"endpoint\":\"http://s3.example.com\",\"bucket\":\"bkt\",\"allowPlainHTTP\":true,"
             "\"credentialsSecret\":{\"name\":\"s\"}}");
    assert_int_equal(ctl_repo_settings(r, s, &cfg, &reason, &err), 0);
    s3_config_free(&cfg);
    json_decref(r);

    /* A CA bundle that is not PEM. */
    r = repo("{\"endpoint\":\"https://h\",\"bucket\":\"bkt\",\"caBundle\":\"bm90IGEgY2VydA==\","
             "\"credentialsSecret\":{\"name\":\"s\"}}");
    assert_int_equal(ctl_repo_settings(r, s, &cfg, &reason, &err), UTIL_EINVAL);
    assert_string_equal(reason, "InvalidSpec");
    assert_non_null(strstr(err.msg, "caBundle"));
    json_decref(r);
    json_decref(s);
}

static void test_reasons(void **state)
{
    assert_string_equal(ctl_repo_reason(0, ""), "BucketReachable");
    assert_string_equal(ctl_repo_reason(S3_ENOTFOUND, "NoSuchBucket"), "BucketMissing");
    assert_string_equal(ctl_repo_reason(S3_EDENIED, "AccessDenied"), "AccessDenied");
    assert_string_equal(ctl_repo_reason(S3_ETLS, ""), "TLS");
    assert_string_equal(ctl_repo_reason(S3_ECONN, ""), "Unreachable");
    assert_string_equal(ctl_repo_reason(S3_ETIMEDOUT, ""), "Unreachable");
    assert_string_equal(ctl_repo_reason(S3_EHTTP, "InternalError"), "StorageError");
}

static void test_schedule(void **state)
{
    assert_int_equal(ctl_repo_next_check_ms(true, 0, 0), 600000);
    assert_int_equal(ctl_repo_next_check_ms(false, 1, 0), 10000);
    assert_int_equal(ctl_repo_next_check_ms(false, 2, 0), 20000);
    assert_int_equal(ctl_repo_next_check_ms(false, 6, 0), 320000);
    assert_int_equal(ctl_repo_next_check_ms(false, 7, 0), 600000);
    assert_int_equal(ctl_repo_next_check_ms(false, 1000, 0), 600000);
    uint64_t j = ctl_repo_next_check_ms(false, 1, UINT32_MAX);
    assert_true(j >= 7500 && j < 10000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settings),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
