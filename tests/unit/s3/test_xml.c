/*
 * The XML replies through expat: good pages (whole and fractional seconds, fed in
 * every chunking), truncated and inconsistent pages, hostile documents (entities,
 * DOCTYPE, depth, size), DeleteObjects results verbose and quiet, Error replies, and
 * the request XML.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "s3/s3_xml.h"

static const char page_aws[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Name>b</Name><Prefix>snapshots/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys>"
    "<IsTruncated>true</IsTruncated><NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/"
    "wm36Hy4vbOwM="
    "</NextContinuationToken>"
    "<Contents><Key>snapshots/a&amp;b.json</Key><LastModified>2026-12-02T17:01:27.123Z</"
    "LastModified>"
    "<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>434</Size>"
    "<StorageClass>STANDARD</StorageClass></Contents>"
    "<Contents><Key>snapshots/b.json</Key><LastModified>2026-12-02T17:01:27.000Z</LastModified>"
    "<ETag>\"x\"</ETag><Size>0</Size></Contents>"
    "</ListBucketResult>";

/* versitygw: whole seconds, no KeyCount when... (it sends one), not truncated. */
static const char page_vgw[] = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                               "<Contents><Key>k1</Key><LastModified>2026-12-02T17:01:27Z</"
                               "LastModified><Size>5</Size></Contents>"
                               "<Contents><Key>k2</Key><LastModified>2026-12-02T17:01:27Z</"
                               "LastModified><Size>6</Size></Contents>"
                               "<CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes>"
                               "</ListBucketResult>";

static int parse_page(const char *doc, size_t len, size_t chunk, const struct s3_list_page **pg,
                      struct s3_list_parser **pp, struct util_err *err)
{
    struct s3_list_parser *p = s3_list_parser_new();
    int rc = 0;
    *pp = p;
    for (size_t off = 0; off < len && rc == 0; off += chunk)
        rc = s3_list_parser_feed(p, doc + off, len - off < chunk ? len - off : chunk, err);
    if (rc == 0)
        rc = s3_list_parser_finish(p, pg, err);
    return rc;
}

static void test_list_good_every_chunking(void **state)
{
    for (size_t chunk = 1; chunk <= sizeof(page_aws); chunk += (chunk < 20 ? 1 : 37)) {
        const struct s3_list_page *pg;
        struct s3_list_parser *p;
        struct util_err err;
        assert_int_equal(parse_page(page_aws, strlen(page_aws), chunk, &pg, &p, &err), 0);
        assert_int_equal(pg->n, 2);
        assert_true(pg->truncated);
        assert_string_equal(pg->next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
        assert_string_equal(pg->objects[0].key, "snapshots/a&b.json");
        assert_string_equal(pg->objects[0].etag, "9b2cf535f27731c974343645a3985328");
        assert_int_equal(pg->objects[0].size, 434);
        assert_int_equal(pg->objects[0].mtime, 1796230887);
        assert_int_equal(pg->objects[0].mtime_ns, 123000000);
        assert_int_equal(pg->objects[1].mtime, 1796230887);
        assert_int_equal(pg->objects[1].mtime_ns, 0);
        assert_false(pg->objects[1].is_prefix);
        s3_list_parser_free(p);
    }
}

static void test_list_whole_seconds_and_prefixes(void **state)
{
    const struct s3_list_page *pg;
    struct s3_list_parser *p;
    struct util_err err;
    assert_int_equal(parse_page(page_vgw, strlen(page_vgw), 7, &pg, &p, &err), 0);
    assert_int_equal(pg->n, 3);
    assert_false(pg->truncated);
    /* Ties: two keys with the same second. */
    assert_int_equal(pg->objects[0].mtime, pg->objects[1].mtime);
    assert_int_equal(pg->objects[0].mtime_ns, 0);
    assert_true(pg->objects[2].is_prefix);
    assert_string_equal(pg->objects[2].key, "dir/");
    s3_list_parser_free(p);
}

static void expect_list_error(const char *doc, const char *want)
{
    const struct s3_list_page *pg;
    struct s3_list_parser *p;
    struct util_err err = {0};
    int rc = parse_page(doc, strlen(doc), 64, &pg, &p, &err);
    if (rc != S3_EPROTO)
        fail_msg("accepted: %.120s", doc);
    if (strstr(err.msg, want) == NULL)
        fail_msg("\"%s\" lacks \"%s\"", err.msg, want);
    s3_list_parser_free(p);
}

static void test_list_truncated_and_inconsistent(void **state)
{
    /* Cut short anywhere: never a page. */
    for (size_t n = 0; n < strlen(page_aws); n += 13) {
        char *cut = strndup(page_aws, n);
        const struct s3_list_page *pg;
        struct s3_list_parser *p;
        struct util_err err;
        assert_int_not_equal(parse_page(cut, n, 64, &pg, &p, &err), 0);
        s3_list_parser_free(p);
        free(cut);
    }
    expect_list_error("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
                      "no continuation token");
    expect_list_error("<ListBucketResult><KeyCount>3</KeyCount><Contents><Key>a</Key>"
                      "<LastModified>2026-12-02T17:01:27Z</LastModified></Contents>"
                      "</ListBucketResult>",
                      "KeyCount 3 but holds 1");
    expect_list_error("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
                      "has no key");
    expect_list_error("<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>",
                      "no LastModified");
    expect_list_error("<ListBucketResult><Contents><Key>a</Key><LastModified>yesterday"
                      "</LastModified></Contents></ListBucketResult>",
                      "not an RFC 3339 time");
    expect_list_error("<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents>"
                      "</ListBucketResult>",
                      "not a number");
    expect_list_error("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
                      "not true or false");
    expect_list_error("<Error><Code>NoSuchBucket</Code></Error>", "not a ListBucketResult");
    expect_list_error("", "no element found");
    expect_list_error("<ListBucketResult><Contents><Key>a&#0;b</Key></Contents></ListBucketResult>",
                      "not well-formed");
}

static void test_list_hostile(void **state)
{
    struct util_buf b;
    /* Entity tricks: a DOCTYPE is refused before any entity is declared or expanded. */
    expect_list_error("<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
                      "<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">]>"
                      "<ListBucketResult><Contents><Key>&lol2;</Key></Contents></ListBucketResult>",
                      "DOCTYPE");
    expect_list_error("<!DOCTYPE x SYSTEM \"file:///etc/passwd\"><ListBucketResult/>", "DOCTYPE");
    expect_list_error("<ListBucketResult><Contents><Key>&xxe;</Key></Contents></ListBucketResult>",
                      "not well-formed");
    /* Deep. */
    util_buf_init(&b);
    util_buf_puts(&b, "<ListBucketResult>");
    for (int i = 0; i < 100; i++)
        util_buf_puts(&b, "<a>");
    expect_list_error(b.data, "deeper than 8");
    /* A huge field. */
    b.len = 0;
    util_buf_puts(&b, "<ListBucketResult><Contents><Key>");
    for (int i = 0; i < 5000; i++)
        util_buf_puts(&b, "k");
    util_buf_puts(&b, "</Key></Contents></ListBucketResult>");
    expect_list_error(b.data, "longer than 4096");
    /* A key over S3's 1,024 bytes. */
    b.len = 0;
    util_buf_puts(&b, "<ListBucketResult><Contents><Key>");
    for (int i = 0; i < 1025; i++)
        util_buf_puts(&b, "k");
    util_buf_puts(&b, "</Key></Contents></ListBucketResult>");
    expect_list_error(b.data, "too long");
    /* More entries than a page may hold. */
    b.len = 0;
    util_buf_puts(&b, "<ListBucketResult>");
    for (int i = 0; i < 1002; i++)
        util_buf_printf(&b,
                        "<Contents><Key>k%04d</Key><LastModified>2026-12-02T17:01:27Z"
                        "</LastModified></Contents>",
                        i);
    util_buf_puts(&b, "</ListBucketResult>");
    expect_list_error(b.data, "more keys than");
    util_buf_free(&b);
}

struct del_seen {
    int deleted, errors;
    char last_code[64];
    char keys[8][64];
};

static int on_entry(const struct s3_delete_entry *e, void *arg)
{
    struct del_seen *s = arg;
    int i = s->deleted + s->errors;
    if (i < 8)
        snprintf(s->keys[i], sizeof(s->keys[i]), "%s", e->key);
    if (e->deleted) {
        s->deleted++;
    } else {
        s->errors++;
        snprintf(s->last_code, sizeof(s->last_code), "%s", e->code);
    }
    return 0;
}

static void test_delete_results(void **state)
{
    const char verbose[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
        "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Deleted><Key>a/1</Key></Deleted>"
        "<Deleted><Key>a/&lt;2&gt;</Key><DeleteMarker>true</DeleteMarker></Deleted>"
        "<Error><Key>a/3</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
        "<Error><Key>a/4</Key><Code>InternalError</Code><Message>try again</Message></Error>"
        "</DeleteResult>";
    const char quiet[] = "<DeleteResult/>";
    struct del_seen s = {0};
    struct util_err err;
    assert_int_equal(s3_delete_result_parse(verbose, strlen(verbose), on_entry, &s, &err), 0);
    assert_int_equal(s.deleted, 2);
    assert_int_equal(s.errors, 2);
    assert_string_equal(s.keys[1], "a/<2>");
    assert_string_equal(s.last_code, "InternalError");
    memset(&s, 0, sizeof(s));
    assert_int_equal(s3_delete_result_parse(quiet, strlen(quiet), on_entry, &s, &err), 0);
    assert_int_equal(s.deleted + s.errors, 0);

    const char *bad[] = {
        "<DeleteResult><Deleted></Deleted></DeleteResult>",
        "<DeleteResult><Error><Key>a</Key></Error></DeleteResult>",
        "<DeleteResult><Deleted><Key>a</Key></Deleted>",
        "<Error><Code>MalformedXML</Code></Error>",
        "<!DOCTYPE d [<!ENTITY e \"x\">]><DeleteResult/>",
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&s, 0, sizeof(s));
        if (s3_delete_result_parse(bad[i], strlen(bad[i]), on_entry, &s, &err) != S3_EPROTO)
            fail_msg("accepted: %s", bad[i]);
    }
}

static void test_error_reply(void **state)
{
    char code[64], msg[128];
    const char e1[] = "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code>"
                      "<Message>Please reduce your request rate.</Message>"
                      "<RequestId>x</RequestId></Error>";
    assert_int_equal(s3_error_parse(e1, strlen(e1), code, sizeof(code), msg, sizeof(msg)), 0);
    assert_string_equal(code, "SlowDown");
    assert_string_equal(msg, "Please reduce your request rate.");
    /* Not XML: nothing, and no crash. */
    assert_int_not_equal(s3_error_parse("<html>502", 9, code, sizeof(code), msg, sizeof(msg)), 0);
    assert_string_equal(code, "");
    /* A long code is cut to its buffer. */
    struct util_buf b;
    util_buf_init(&b);
    util_buf_puts(&b, "<Error><Code>");
    for (int i = 0; i < 200; i++)
        util_buf_puts(&b, "X");
    util_buf_puts(&b, "\x01</Code></Error>");
    s3_error_parse(b.data, b.len, code, 16, msg, sizeof(msg));
    assert_true(strlen(code) <= 15);
    util_buf_free(&b);
}

static void test_delete_request_xml(void **state)
{
    const char *keys[] = {"a&b", "c<d>\"'", "tab\there"};
    struct util_buf b;
    struct util_err err;
    struct del_seen s = {0};
    util_buf_init(&b);
    assert_int_equal(s3_delete_request_xml(&b, keys, 3, false, &err), 0);
    assert_non_null(strstr(b.data, "<Quiet>false</Quiet>"));
    assert_non_null(strstr(b.data, "<Key>a&amp;b</Key>"));
    /* The request's keys read back through expat as the same keys. */
    struct util_buf reply;
    util_buf_init(&reply);
    util_buf_puts(&reply, "<DeleteResult>");
    for (const char *p = strstr(b.data, "<Object>"); p != NULL; p = strstr(p + 1, "<Object>")) {
        const char *end = strstr(p, "</Object>");
        util_buf_puts(&reply, "<Deleted>");
        util_buf_append(&reply, p + 8, (size_t)(end - p - 8));
        util_buf_puts(&reply, "</Deleted>");
    }
    util_buf_puts(&reply, "</DeleteResult>");
    assert_int_equal(s3_delete_result_parse(reply.data, reply.len, on_entry, &s, &err), 0);
    assert_int_equal(s.deleted, 3);
    for (int i = 0; i < 3; i++)
        assert_string_equal(s.keys[i], keys[i]);
    util_buf_free(&reply);
    util_buf_free(&b);
    const char *ctl[] = {"ok", "bell\x07"};
    util_buf_init(&b);
    assert_int_equal(s3_delete_request_xml(&b, ctl, 2, true, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "control character"));
    util_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_good_every_chunking),
        cmocka_unit_test(test_list_whole_seconds_and_prefixes),
        cmocka_unit_test(test_list_truncated_and_inconsistent),
        cmocka_unit_test(test_list_hostile),
        cmocka_unit_test(test_delete_results),
        cmocka_unit_test(test_error_reply),
        cmocka_unit_test(test_delete_request_xml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
