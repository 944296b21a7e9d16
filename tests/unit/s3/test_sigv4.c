/*
 * SigV4 against the examples AWS publishes for S3 (header auth, one chunk), the
 * retry policy, and the repository address and settings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "s3/s3.h"

#define AK     "AKIAIOSFODNN7EXAMPLE"
#define SK     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define HOST   "examplebucket.s3.amazonaws.com"
#define EMPTY  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define T_2013 1369353600 /* 2013-05-24T00:00:00Z */

static void check_sig(const char *method, const char *uri, const char *query,
                      const struct s3_header *h, size_t n, const char *hash, const char *want)
{
    struct s3_sign_input in = {.method = method,
                               .canonical_uri = uri,
                               .canonical_query = query,
                               .headers = h,
                               .n_headers = n,
                               .payload_hash = hash,
                               .access_key = AK,
                               .secret_key = SK,
                               .region = "us-east-1",
                               .service = "s3",
                               .time = T_2013};
    struct util_buf out;
    util_buf_init(&out);
    s3_sigv4_authorization(&in, &out);
    if (strstr(out.data, want) == NULL)
        fail_msg("got %s\nwant signature %s", out.data, want);
    assert_non_null(strstr(out.data, "Credential=" AK "/20130524/us-east-1/s3/aws4_request"));
    util_buf_free(&out);
}

/* GET /test.txt with a Range: AWS's "GET Object" example. */
static void test_get_object_vector(void **state)
{
    struct s3_header h[] = {{"host", HOST},
                            {"range", "bytes=0-9"},
                            {"x-amz-content-sha256", EMPTY},
                            {"x-amz-date", "20130524T000000Z"}};
    check_sig("GET", "/test.txt", "", h, 4, EMPTY,
              "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

/* PUT /test$file.text with a signed body hash: AWS's "PUT Object" example. */
static void test_put_object_vector(void **state)
{
    char hash[65];
    struct util_buf uri;
    const char *body = "Welcome to Amazon S3.";
    s3_sha256_hex(body, strlen(body), hash);
    assert_string_equal(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    util_buf_init(&uri);
    util_buf_puts(&uri, "/");
    s3_uri_encode(&uri, "test$file.text", 14, true);
    assert_string_equal(uri.data, "/test%24file.text");
    struct s3_header h[] = {{"date", "Fri, 24 May 2013 00:00:00 GMT"},
                            {"host", HOST},
                            {"x-amz-content-sha256", hash},
                            {"x-amz-date", "20130524T000000Z"},
                            {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
    check_sig("PUT", uri.data, "", h, 5, hash,
              "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
    util_buf_free(&uri);
}

/* GET /?lifecycle and GET /?max-keys=2&prefix=J: the query string examples. */
static void test_query_vectors(void **state)
{
    struct s3_header h[] = {
        {"host", HOST}, {"x-amz-content-sha256", EMPTY}, {"x-amz-date", "20130524T000000Z"}};
    check_sig("GET", "/", "lifecycle=", h, 3, EMPTY,
              "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    check_sig("GET", "/", "max-keys=2&prefix=J", h, 3, EMPTY,
              "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

static void test_uri_encode_and_date(void **state)
{
    struct util_buf b;
    char d[17];
    util_buf_init(&b);
    s3_uri_encode(&b, "a b/c~d+é", strlen("a b/c~d+é"), false);
    assert_string_equal(b.data, "a%20b%2Fc~d%2B%C3%A9");
    b.len = 0;
    s3_uri_encode(&b, "snapshots/ns/p/h/x.json", 23, true);
    assert_string_equal(b.data, "snapshots/ns/p/h/x.json");
    util_buf_free(&b);
    s3_amz_date(T_2013 + 3723, d);
    assert_string_equal(d, "20130524T010203Z");
}

/* One signature by a long-lived signer, compared with one by a fresh signer. */
static void check_same_as_fresh(struct s3_signer *s, int64_t t, const char *secret,
                                const char *region, const char *want)
{
    struct s3_header h[] = {
        {"host", HOST}, {"x-amz-content-sha256", EMPTY}, {"x-amz-date", "20130524T000000Z"}};
    struct s3_sign_input in = {.method = "GET",
                               .canonical_uri = "/",
                               .canonical_query = "lifecycle=",
                               .headers = h,
                               .n_headers = 3,
                               .payload_hash = EMPTY,
                               .access_key = AK,
                               .secret_key = secret,
                               .region = region,
                               .service = "s3",
                               .time = t};
    struct util_buf kept, fresh;
    util_buf_init(&kept);
    util_buf_init(&fresh);
    s3_signer_sign(s, &in, &kept);
    s3_sigv4_authorization(&in, &fresh);
    assert_string_equal(kept.data, fresh.data);
    if (want != NULL && strstr(kept.data, want) == NULL)
        fail_msg("got %s\nwant %s", kept.data, want);
    util_buf_free(&kept);
    util_buf_free(&fresh);
}

/*
 * A signer keeps the derived key: the next day, another region or another secret must
 * each give the signature a fresh derivation gives, and going back to the first day
 * the published one again.
 */
static void test_signer_key_follows_day_and_scope(void **state)
{
    const char *vector =
        "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543";
    struct s3_signer *s = s3_signer_new();
    char hex[65];
    check_same_as_fresh(s, T_2013, SK, "us-east-1", vector);
    check_same_as_fresh(s, T_2013 + 3600, SK, "us-east-1", NULL);
    check_same_as_fresh(s, T_2013 + 86400, SK, "us-east-1", "/20130525/us-east-1/");
    check_same_as_fresh(s, T_2013 + 86400, SK, "eu-west-1", "/20130525/eu-west-1/");
    check_same_as_fresh(s, T_2013 + 86400, "another-secret", "eu-west-1", NULL);
    check_same_as_fresh(s, T_2013, SK, "us-east-1", vector);
    s3_signer_sha256_hex(s, "", 0, hex);
    assert_string_equal(hex, EMPTY);
    s3_signer_sha256_hex(s, "Welcome to Amazon S3.", 21, hex);
    assert_string_equal(hex, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    s3_signer_free(s);
}

/*
 * A secret longer than SHA-256's block is hashed first as HMAC's key (RFC 2104): the
 * signature must be the one OpenSSL's own HMAC gives for the same request.
 */
static void test_signer_long_secret(void **state)
{
    char secret[200], aws4[210], hash[65], want[80];
    unsigned char k[32], mac[32];
    unsigned int n = 32;
    memset(secret, 'k', sizeof(secret) - 1);
    secret[sizeof(secret) - 1] = '\0';
    const char *creq =
        "GET\n/\nlifecycle=\nhost:" HOST "\nx-amz-content-sha256:" EMPTY
        "\nx-amz-date:20130524T000000Z\n\nhost;x-amz-content-sha256;x-amz-date\n" EMPTY;
    s3_sha256_hex(creq, strlen(creq), hash);
    char sts[256];
    snprintf(sts, sizeof(sts),
             "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n%s", hash);
    snprintf(aws4, sizeof(aws4), "AWS4%s", secret);
    HMAC(EVP_sha256(), aws4, (int)strlen(aws4), (const unsigned char *)"20130524", 8, k, &n);
    HMAC(EVP_sha256(), k, 32, (const unsigned char *)"us-east-1", 9, k, &n);
    HMAC(EVP_sha256(), k, 32, (const unsigned char *)"s3", 2, k, &n);
    HMAC(EVP_sha256(), k, 32, (const unsigned char *)"aws4_request", 12, k, &n);
    HMAC(EVP_sha256(), k, 32, (const unsigned char *)sts, strlen(sts), mac, &n);
    memcpy(want, "Signature=", 10);
    for (int i = 0; i < 32; i++)
        snprintf(want + 10 + 2 * i, 3, "%02x", mac[i]);
    struct s3_signer *s = s3_signer_new();
    check_same_as_fresh(s, T_2013, secret, "us-east-1", want);
    s3_signer_free(s);
}

/* The schedule: full jitter under a doubling ceiling, capped; the extremes are exact. */
static void test_backoff_schedule(void **state)
{
    uint64_t want[] = {100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000};
    for (unsigned i = 0; i < 9; i++) {
        assert_int_equal(s3_backoff_delay(i, 100, 10000, 0), 0);
        assert_int_equal(s3_backoff_delay(i, 100, 10000, UINT32_MAX), want[i]);
        uint64_t mid = s3_backoff_delay(i, 100, 10000, UINT32_MAX / 2);
        assert_true(mid >= want[i] / 2 - 1 && mid <= want[i] / 2 + 1);
    }
    /* A huge retry count neither overflows nor passes the cap. */
    assert_int_equal(s3_backoff_delay(1000, 100, 10000, UINT32_MAX), 10000);
    uint64_t big = s3_backoff_delay(70, 1u << 30, 1ull << 40, UINT32_MAX);
    assert_true(big <= 1ull << 40 && big > (1ull << 40) - (1ull << 9));
    /* The mean of a uniform draw is half the ceiling. */
    uint64_t sum = 0, x = 12345;
    for (int i = 0; i < 10000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        sum += s3_backoff_delay(3, 100, 10000, (uint32_t)(x >> 32));
    }
    assert_true(sum / 10000 > 380 && sum / 10000 < 420);
}

static void test_retryable(void **state)
{
    long yes[] = {500, 502, 503, 504};
    long no[] = {400, 401, 403, 404, 405, 409, 412, 416, 501};
    for (size_t i = 0; i < 4; i++)
        assert_true(s3_retryable(yes[i], "", false));
    for (size_t i = 0; i < 9; i++)
        assert_false(s3_retryable(no[i], "", false));
    assert_true(s3_retryable(503, "SlowDown", false));
    assert_true(s3_retryable(400, "RequestTimeout", false));
    assert_false(s3_retryable(403, "AccessDenied", false));
    assert_false(s3_retryable(412, "PreconditionFailed", false));
    assert_false(s3_retryable(409, "ConditionalRequestConflict", false));
    assert_true(s3_retryable(0, "", true));
}

static void test_url_parse(void **state)
{
    struct s3_config c;
    struct util_err err;
    assert_int_equal(s3_url_parse(&c, "s3:https://s3.example.com/bucket-1/team/a", &err), 0);
    assert_string_equal(c.endpoint, "https://s3.example.com");
    assert_string_equal(c.host, "s3.example.com");
    assert_string_equal(c.bucket, "bucket-1");
    assert_string_equal(c.prefix, "team/a/");
    s3_config_free(&c);
    assert_int_equal(s3_url_parse(&c, "s3:http://127.0.0.1:7070/b.x9/", &err), 0);
    assert_string_equal(c.endpoint, "http://127.0.0.1:7070");
    assert_string_equal(c.host, "127.0.0.1:7070");
    assert_string_equal(c.prefix, "");
    s3_config_free(&c);
    assert_int_equal(s3_url_parse(&c, "s3:https://[::1]:9000/bkt/p/", &err), 0);
    assert_string_equal(c.host, "[::1]:9000");
    assert_string_equal(c.prefix, "p/");
    s3_config_free(&c);

    struct {
        const char *url, *msg;
    } bad[] = {
        {"", "no repository"},
        {"https://h/b", "not of the form"},
        {"s3:ftp://h/b", "http:// or https://"},
        {"s3:https:///b", "no host"},
        {"s3:https://h", "no bucket"},
        {"s3:https://h/", "no bucket"},
        {"s3:https://h//p", "no bucket"},
        {"s3:https://h/Bucket", "not a valid name"},
        {"s3:https://h/ab", "not a valid name"},
        {"s3:https://h/-ab", "not a valid name"},
        {"s3:https://user:pw@h/bkt", "credentials do not belong"},
        {"s3:https://h/bkt/a//b", "empty segment"},
        {"s3:https://h/bkt/a/../b", "\"..\""},
        {"s3:https://h/bkt/a\x01", "control character"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err.msg[0] = '\0';
        assert_int_equal(s3_url_parse(&c, bad[i].url, &err), UTIL_EINVAL);
        if (strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].url, err.msg, bad[i].msg);
    }
}

static void test_config_from(void **state)
{
    struct s3_config c;
    struct util_err err;
    struct s3_env env = {
        .repository = "s3:http://127.0.0.1:9000/bkt/x", .access_key = "AK", .secret_key = "SK"};
    assert_int_equal(s3_config_from(&c, &env, &err), 0);
    assert_string_equal(c.region, "us-east-1");
    assert_null(c.ca_pem);
    s3_config_free(&c);

    env.repository = "s3:http://s3.example.com/bkt";
    assert_int_equal(s3_config_from(&c, &env, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "not a loopback address"));
    env.allow_plain_http = true;
    env.region = "eu-west-3";
    assert_int_equal(s3_config_from(&c, &env, &err), 0);
    assert_string_equal(c.region, "eu-west-3");
    s3_config_free(&c);

    env.repository = "s3:https://h/bkt";
    env.secret_key = "";
    assert_int_equal(s3_config_from(&c, &env, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "AWS_SECRET_ACCESS_KEY"));
    env.secret_key = "SK";
    env.region = "EU West";
    assert_int_equal(s3_config_from(&c, &env, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "not a region name"));
    env.region = NULL;
    env.cacert_file = "/nonexistent/ca.pem";
    assert_int_equal(s3_config_from(&c, &env, &err), UTIL_EIO);
    env.cacert_file = "/etc/hostname";
    int rc = s3_config_from(&c, &env, &err);
    assert_true(rc != 0);

    assert_true(s3_host_is_loopback("127.0.0.1"));
    assert_true(s3_host_is_loopback("127.1.2.3"));
    assert_true(s3_host_is_loopback("localhost"));
    assert_true(s3_host_is_loopback("[::1]"));
    assert_false(s3_host_is_loopback("128.0.0.1"));
    assert_false(s3_host_is_loopback("localhost.example.com"));
    assert_false(s3_host_is_loopback("[::2]"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_object_vector),
        cmocka_unit_test(test_put_object_vector),
        cmocka_unit_test(test_query_vectors),
        cmocka_unit_test(test_uri_encode_and_date),
        cmocka_unit_test(test_backoff_schedule),
        cmocka_unit_test(test_retryable),
        cmocka_unit_test(test_url_parse),
        cmocka_unit_test(test_config_from),
        cmocka_unit_test(test_signer_key_follows_day_and_scope),
        cmocka_unit_test(test_signer_long_secret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
