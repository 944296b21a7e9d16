/*
 * The multipart XML: replies of CreateMultipartUpload and CompleteMultipartUpload (fed
 * in every chunking, with the whitespace S3 sends ahead of a slow Complete, and as an
 * <Error> in a 200), ListMultipartUploads pages (good, truncated, broken, hostile), the
 * parts check, the Complete request XML and the ETag a Complete makes.
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

static const char initiate_aws[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Bucket>b</Bucket><Key>team/a/files/x&amp;y</Key>"
    "<UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>"
    "</InitiateMultipartUploadResult>";

/* S3 sends spaces while it assembles a large object, then the document. */
static const char complete_aws[] =
    "  \n \r\n\t<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Location>https://h/b/k</Location><Bucket>b</Bucket><Key>k</Key>"
    "<ETag>&quot;3858f62230ac3c915f300c664312c11f-9&quot;</ETag>"
    "</CompleteMultipartUploadResult>";

static const char complete_error[] =
    "      <?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<Error><Code>InternalError</Code><Message>We encountered an internal error.\n"
    "Please try again.</Message><RequestId>656c76696e6727732072657175657374</RequestId>"
    "</Error>";

static int parse_mpu(enum s3_mpu_reply_kind kind, const char *doc, size_t len, size_t chunk,
                     const struct s3_mpu_reply **r, struct s3_mpu_parser **pp, struct util_err *err)
{
    struct s3_mpu_parser *p = s3_mpu_parser_new(kind);
    int rc = 0;
    *pp = p;
    for (size_t off = 0; off < len && rc == 0; off += chunk)
        rc = s3_mpu_parser_feed(p, doc + off, len - off < chunk ? len - off : chunk, err);
    if (rc == 0)
        rc = s3_mpu_parser_finish(p, r, err);
    return rc;
}

static void test_initiate_every_chunking(void **state)
{
    for (size_t chunk = 1; chunk <= sizeof(initiate_aws); chunk += (chunk < 20 ? 1 : 29)) {
        const struct s3_mpu_reply *r;
        struct s3_mpu_parser *p;
        struct util_err err;
        assert_int_equal(
            parse_mpu(S3_MPU_INITIATE, initiate_aws, strlen(initiate_aws), chunk, &r, &p, &err), 0);
        assert_false(r->error);
        assert_string_equal(r->key, "team/a/files/x&y");
        assert_string_equal(r->upload_id,
                            "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
        assert_string_equal(r->etag, "");
        assert_string_equal(r->code, "");
        s3_mpu_parser_free(p);
    }
}

static void test_initiate_refused(void **state)
{
    static const struct {
        const char *doc, *msg;
    } bad[] = {
        {"", "reply is empty"},
        {"  \n  ", "reply is empty"},
        {"<InitiateMultipartUploadResult><Key>k</Key></InitiateMultipartUploadResult>",
         "no UploadId"},
        {"<InitiateMultipartUploadResult><UploadId></UploadId></InitiateMultipartUploadResult>",
         "no UploadId"},
        {"<CompleteMultipartUploadResult><UploadId>u</UploadId></CompleteMultipartUploadResult>",
         "not the InitiateMultipartUploadResult expected"},
        {"<InitiateMultipartUploadResult><UploadId>u</UploadId>", "not well-formed"},
        {"<!DOCTYPE x [<!ENTITY e \"u\">]><InitiateMultipartUploadResult><UploadId>&e;</"
         "UploadId></InitiateMultipartUploadResult>",
         "DOCTYPE"},
        {"<InitiateMultipartUploadResult><a><b><c><d><e><f><g><h>x</h></g></f></e></d></c></b></"
         "a></InitiateMultipartUploadResult>",
         "deeper than"},
        {"<Error><Message>no code</Message></Error>", "without a Code"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const struct s3_mpu_reply *r;
        struct s3_mpu_parser *p;
        struct util_err err;
        int rc = parse_mpu(S3_MPU_INITIATE, bad[i].doc, strlen(bad[i].doc), 7, &r, &p, &err);
        if (rc != S3_EPROTO || strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("case %zu: rc %d, \"%s\" lacks \"%s\"", i, rc, err.msg, bad[i].msg);
        s3_mpu_parser_free(p);
    }
    /* An UploadId longer than the bound of a key. */
    struct util_buf big;
    util_buf_init(&big);
    util_buf_puts(&big, "<InitiateMultipartUploadResult><UploadId>");
    for (int i = 0; i < S3_MAX_KEY + 1; i++)
        util_buf_puts(&big, "u");
    util_buf_puts(&big, "</UploadId></InitiateMultipartUploadResult>");
    const struct s3_mpu_reply *r;
    struct s3_mpu_parser *p;
    struct util_err err;
    assert_int_equal(parse_mpu(S3_MPU_INITIATE, big.data, big.len, 100, &r, &p, &err), S3_EPROTO);
    assert_non_null(strstr(err.msg, "longer than"));
    s3_mpu_parser_free(p);
    util_buf_free(&big);
}

static void test_complete_result_and_error(void **state)
{
    for (size_t chunk = 1; chunk <= sizeof(complete_aws); chunk += (chunk < 20 ? 1 : 31)) {
        const struct s3_mpu_reply *r;
        struct s3_mpu_parser *p;
        struct util_err err;
        assert_int_equal(
            parse_mpu(S3_MPU_COMPLETE, complete_aws, strlen(complete_aws), chunk, &r, &p, &err), 0);
        assert_false(r->error);
        assert_string_equal(r->key, "k");
        assert_string_equal(r->etag, "3858f62230ac3c915f300c664312c11f-9");
        s3_mpu_parser_free(p);
    }
    for (size_t chunk = 1; chunk <= sizeof(complete_error); chunk += 13) {
        const struct s3_mpu_reply *r;
        struct s3_mpu_parser *p;
        struct util_err err;
        assert_int_equal(
            parse_mpu(S3_MPU_COMPLETE, complete_error, strlen(complete_error), chunk, &r, &p, &err),
            0);
        assert_true(r->error);
        assert_string_equal(r->code, "InternalError");
        /* a message's line breaks become spaces: it goes onto one line of a report */
        assert_string_equal(r->message, "We encountered an internal error. Please try again.");
        assert_string_equal(r->etag, "");
        s3_mpu_parser_free(p);
    }
    /* A Complete's reply without an ETag is read (the caller decides); a wrong root is not. */
    const struct s3_mpu_reply *r;
    struct s3_mpu_parser *p;
    struct util_err err;
    const char *no_etag = "<CompleteMultipartUploadResult><Key>k</Key>"
                          "</CompleteMultipartUploadResult>";
    assert_int_equal(parse_mpu(S3_MPU_COMPLETE, no_etag, strlen(no_etag), 5, &r, &p, &err), 0);
    assert_string_equal(r->etag, "");
    s3_mpu_parser_free(p);
    assert_int_equal(
        parse_mpu(S3_MPU_COMPLETE, initiate_aws, strlen(initiate_aws), 64, &r, &p, &err),
        S3_EPROTO);
    assert_non_null(strstr(err.msg, "not the CompleteMultipartUploadResult expected"));
    s3_mpu_parser_free(p);
}

static const char uploads_aws[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListMultipartUploadsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>"
    "<NextKeyMarker>team/a/files/b</NextKeyMarker>"
    "<NextUploadIdMarker>YW5vdGhlciB1cGxvYWQ</NextUploadIdMarker>"
    "<Prefix>team/a/</Prefix><MaxUploads>2</MaxUploads><IsTruncated>true</IsTruncated>"
    "<Upload><Key>team/a/files/a</Key><UploadId>dXBsb2Fk</UploadId>"
    "<Initiator><ID>arn:aws:iam::1:user/u</ID><DisplayName>u</DisplayName></Initiator>"
    "<Owner><ID>o</ID></Owner><StorageClass>STANDARD</StorageClass>"
    "<Initiated>2026-12-02T17:01:27.500Z</Initiated></Upload>"
    "<Upload><Key>team/a/files/b</Key><UploadId>YW5vdGhlciB1cGxvYWQ</UploadId>"
    "<Initiated>2026-12-02T17:01:28Z</Initiated></Upload>"
    "</ListMultipartUploadsResult>";

static int parse_uploads(const char *doc, size_t len, size_t chunk,
                         const struct s3_uploads_page **pg, struct s3_uploads_parser **pp,
                         struct util_err *err)
{
    struct s3_uploads_parser *p = s3_uploads_parser_new();
    int rc = 0;
    *pp = p;
    for (size_t off = 0; off < len && rc == 0; off += chunk)
        rc = s3_uploads_parser_feed(p, doc + off, len - off < chunk ? len - off : chunk, err);
    if (rc == 0)
        rc = s3_uploads_parser_finish(p, pg, err);
    return rc;
}

static void test_uploads_page_every_chunking(void **state)
{
    for (size_t chunk = 1; chunk <= sizeof(uploads_aws); chunk += (chunk < 20 ? 1 : 41)) {
        const struct s3_uploads_page *pg;
        struct s3_uploads_parser *p;
        struct util_err err;
        assert_int_equal(parse_uploads(uploads_aws, strlen(uploads_aws), chunk, &pg, &p, &err), 0);
        assert_int_equal(pg->n, 2);
        assert_true(pg->truncated);
        assert_string_equal(pg->next_key_marker, "team/a/files/b");
        assert_string_equal(pg->next_upload_id_marker, "YW5vdGhlciB1cGxvYWQ");
        assert_string_equal(pg->uploads[0].key, "team/a/files/a");
        assert_string_equal(pg->uploads[0].upload_id, "dXBsb2Fk");
        assert_int_equal(pg->uploads[0].initiated, 1796230887);
        assert_string_equal(pg->uploads[1].key, "team/a/files/b");
        assert_int_equal(pg->uploads[1].initiated, 1796230888);
        s3_uploads_parser_free(p);
    }
    /* The last page, empty; and an upload without Initiated (time unknown: -1). */
    const struct s3_uploads_page *pg;
    struct s3_uploads_parser *p;
    struct util_err err;
    const char *empty = "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated>"
                        "</ListMultipartUploadsResult>";
    assert_int_equal(parse_uploads(empty, strlen(empty), 9, &pg, &p, &err), 0);
    assert_int_equal(pg->n, 0);
    assert_false(pg->truncated);
    assert_null(pg->next_key_marker);
    s3_uploads_parser_free(p);
    const char *untimed = "<ListMultipartUploadsResult><Upload><Key>k</Key><UploadId>u</UploadId>"
                          "</Upload></ListMultipartUploadsResult>";
    assert_int_equal(parse_uploads(untimed, strlen(untimed), 9, &pg, &p, &err), 0);
    assert_int_equal(pg->n, 1);
    assert_int_equal(pg->uploads[0].initiated, -1);
    s3_uploads_parser_free(p);
}

static void test_uploads_page_refused(void **state)
{
    static const struct {
        const char *doc, *msg;
    } bad[] = {
        {"", "reply is empty"},
        {"<ListBucketResult></ListBucketResult>", "not a ListMultipartUploadsResult"},
        {"<ListMultipartUploadsResult><IsTruncated>true</IsTruncated>"
         "</ListMultipartUploadsResult>",
         "no NextKeyMarker"},
        {"<ListMultipartUploadsResult><IsTruncated>true</IsTruncated><NextKeyMarker></"
         "NextKeyMarker></ListMultipartUploadsResult>",
         "no NextKeyMarker"},
        {"<ListMultipartUploadsResult><IsTruncated>maybe</IsTruncated>"
         "</ListMultipartUploadsResult>",
         "not true or false"},
        {"<ListMultipartUploadsResult><Upload><Key>k</Key></Upload>"
         "</ListMultipartUploadsResult>",
         "has no UploadId"},
        {"<ListMultipartUploadsResult><Upload><UploadId>u</UploadId></Upload>"
         "</ListMultipartUploadsResult>",
         "has no Key"},
        {"<ListMultipartUploadsResult><Upload><Key></Key><UploadId>u</UploadId></Upload>"
         "</ListMultipartUploadsResult>",
         "empty, too long"},
        {"<ListMultipartUploadsResult><Upload><Key>k</Key><UploadId>u</UploadId>"
         "<Initiated>yesterday</Initiated></Upload></ListMultipartUploadsResult>",
         "not an RFC 3339 time"},
        {"<ListMultipartUploadsResult><Upload><Key>k&#0;</Key><UploadId>u</UploadId></Upload>"
         "</ListMultipartUploadsResult>",
         "not well-formed"},
        {"<ListMultipartUploadsResult><Upload><Key>k</Key><UploadId>u</UploadId></Upload>",
         "not well-formed"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const struct s3_uploads_page *pg;
        struct s3_uploads_parser *p;
        struct util_err err;
        int rc = parse_uploads(bad[i].doc, strlen(bad[i].doc), 11, &pg, &p, &err);
        if (rc != S3_EPROTO || strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("case %zu: rc %d, \"%s\" lacks \"%s\"", i, rc, err.msg, bad[i].msg);
        s3_uploads_parser_free(p);
    }
    /* More uploads than a page asked for (1,000 and one spare). */
    struct util_buf big;
    util_buf_init(&big);
    util_buf_puts(&big, "<ListMultipartUploadsResult>");
    for (int i = 0; i < S3_UPLOADS_PAGE + 2; i++)
        util_buf_puts(&big, "<Upload><Key>k</Key><UploadId>u</UploadId></Upload>");
    util_buf_puts(&big, "</ListMultipartUploadsResult>");
    const struct s3_uploads_page *pg;
    struct s3_uploads_parser *p;
    struct util_err err;
    assert_int_equal(parse_uploads(big.data, big.len, 4096, &pg, &p, &err), S3_EPROTO);
    assert_non_null(strstr(err.msg, "more uploads than"));
    s3_uploads_parser_free(p);
    util_buf_free(&big);
}

static void test_uploads_page_check(void **state)
{
    struct s3_upload ups[3] = {{"t/a/k1", "u1", 1}, {"t/a/k1", "u2", 2}, {"t/a/k2", "u3", 3}};
    struct s3_uploads_page pg = {.uploads = ups,
                                 .n = 3,
                                 .truncated = true,
                                 .next_key_marker = "t/a/k2",
                                 .next_upload_id_marker = "u3"};
    struct util_err err;
    bool again;
    /* The first page, and a later one after a key it may share (one key, many uploads). */
    assert_int_equal(s3_uploads_page_check(&pg, "t/a/", NULL, NULL, NULL, &again, &err), 0);
    assert_int_equal(s3_uploads_page_check(&pg, "t/a/", "t/a/k1", "t/a/k1", "u0", &again, &err), 0);
    /* Before the last key delivered: a page from an older listing, or a broken server. */
    assert_int_equal(s3_uploads_page_check(&pg, "t/a/", "t/a/k15", "t/a/k15", "x", &again, &err),
                     S3_EPROTO);
    assert_true(again);
    assert_non_null(strstr(err.msg, "out of order at \"t/a/k1\""));
    /* Out of order within the page. */
    struct s3_upload swapped[2] = {ups[2], ups[0]};
    struct s3_uploads_page pg2 = {.uploads = swapped, .n = 2};
    assert_int_equal(s3_uploads_page_check(&pg2, "t/a/", NULL, NULL, NULL, &again, &err),
                     S3_EPROTO);
    assert_true(again);
    /* Outside the prefix. */
    assert_int_equal(s3_uploads_page_check(&pg, "t/b/", NULL, NULL, NULL, &again, &err), S3_EPROTO);
    assert_true(again);
    assert_non_null(strstr(err.msg, "outside the prefix"));
    /* The markers it was asked with: final, it would never end. */
    assert_int_equal(s3_uploads_page_check(&pg, "t/a/", "t/a/k1", "t/a/k2", "u3", &again, &err),
                     S3_EPROTO);
    assert_false(again);
    assert_non_null(strstr(err.msg, "would not end"));
    /* The same key marker with another id marker moves on; an untruncated page is done. */
    assert_int_equal(s3_uploads_page_check(&pg, "t/a/", "t/a/k1", "t/a/k2", "u2", &again, &err), 0);
    pg.truncated = false;
    assert_int_equal(s3_uploads_page_check(&pg, "t/a/", "t/a/k1", "t/a/k2", "u3", &again, &err), 0);
    /* An empty page. */
    struct s3_uploads_page empty = {0};
    assert_int_equal(s3_uploads_page_check(&empty, "t/a/", "t/a/z", NULL, NULL, &again, &err), 0);
}

static struct s3_part part(unsigned number, const char *etag)
{
    struct s3_part p = {.number = number};
    snprintf(p.etag, sizeof(p.etag), "%s", etag);
    return p;
}

static void test_parts_check(void **state)
{
    struct util_err err;
    struct s3_part ok[3] = {part(1, "a"), part(2, "b"), part(10000, "c")};
    assert_int_equal(s3_parts_check(ok, 3, &err), 0);
    static const struct {
        unsigned n1, n2;
        const char *e1, *e2, *msg;
    } bad[] = {
        {0, 2, "a", "b", "part numbers run from 1 to 10000"},
        {1, 10001, "a", "b", "part numbers run from 1 to 10000"},
        {2, 1, "a", "b", "must ascend: part 1 comes after part 2"},
        {1, 1, "a", "b", "must ascend: part 1 comes after part 1"},
        {1, 2, "a", "", "part 2 has an empty ETag"},
        {1, 2, "a\x01", "b", "part 1's ETag holds a control character"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct s3_part two[2] = {part(bad[i].n1, bad[i].e1), part(bad[i].n2, bad[i].e2)};
        int rc = s3_parts_check(two, 2, &err);
        if (rc != UTIL_EINVAL || strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("case %zu: rc %d, \"%s\" lacks \"%s\"", i, rc, err.msg, bad[i].msg);
    }
    assert_int_equal(s3_parts_check(ok, 0, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "no parts"));
    assert_int_equal(s3_parts_check(NULL, 2, &err), UTIL_EINVAL);
    struct s3_part *many = calloc(S3_PARTS_MAX + 1, sizeof(*many));
    for (unsigned i = 0; i < S3_PARTS_MAX + 1; i++)
        many[i] = part(i + 1, "e");
    assert_int_equal(s3_parts_check(many, S3_PARTS_MAX, &err), 0);
    assert_int_equal(s3_parts_check(many, S3_PARTS_MAX + 1, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "at most 10000"));
    free(many);
    /* An ETag that fills its buffer without a NUL. */
    struct s3_part full = {.number = 1};
    memset(full.etag, 'f', sizeof(full.etag));
    assert_int_equal(s3_parts_check(&full, 1, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "unterminated"));
}

static void test_complete_request_xml(void **state)
{
    struct util_buf b;
    struct util_err err;
    struct s3_part parts[2] = {part(1, "9b2cf535f27731c974343645a3985328"), part(3, "a&b<c>\"d")};
    util_buf_init(&b);
    assert_int_equal(s3_complete_request_xml(&b, parts, 2, &err), 0);
    assert_string_equal(
        b.data, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                "<Part><PartNumber>1</PartNumber>"
                "<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag></Part>"
                "<Part><PartNumber>3</PartNumber>"
                "<ETag>&quot;a&amp;b&lt;c&gt;&quot;d&quot;</ETag></Part>"
                "</CompleteMultipartUpload>");
    util_buf_free(&b);
    /* Bad parts: nothing is written. */
    struct s3_part swapped[2] = {parts[1], parts[0]};
    util_buf_init(&b);
    assert_int_equal(s3_complete_request_xml(&b, swapped, 2, &err), UTIL_EINVAL);
    assert_int_equal(b.len, 0);
    util_buf_free(&b);
}

static void test_multipart_etag(void **state)
{
    char out[S3_ETAG_MAX];
    /* What versitygw answered for one part "the only part", and for one part "z". */
    struct s3_part one = part(1, "504273b20820fd7601eb2ed12719ff6d");
    assert_true(s3_multipart_etag(&one, 1, out, sizeof(out)));
    assert_string_equal(out, "62c1f17ff2099872f8d33cf468526804-1");
    struct s3_part z = part(1, "FBADE9E36A3F36D3D676C1B808451DD7");
    assert_true(s3_multipart_etag(&z, 1, out, sizeof(out)));
    assert_string_equal(out, "1cfb7ca955615fcbf28857c42803f14e-1");
    /* Two parts: the MD5 of both MD5s, in order. */
    struct s3_part two[2] = {part(1, "8d3fc740113aa9260955a607bce9adf6"),
                             part(2, "fd6fc5df3b9f897ae1a102f303ada7a1")};
    assert_true(s3_multipart_etag(two, 2, out, sizeof(out)));
    assert_string_equal(out, "e5201344413ce9db6e0b8903c77d8089-2");
    /* A part ETag that is not an MD5 (KMS): not known in advance. */
    struct s3_part kms[2] = {two[0], part(2, "fd6fc5df3b9f897ae1a102f303ada7a1-x")};
    assert_false(s3_multipart_etag(kms, 2, out, sizeof(out)));
    struct s3_part nonhex = part(1, "zz6fc5df3b9f897ae1a102f303ada7a1");
    assert_false(s3_multipart_etag(&nonhex, 1, out, sizeof(out)));
    assert_false(s3_multipart_etag(two, 0, out, sizeof(out)));
    assert_false(s3_multipart_etag(two, 2, out, 20));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initiate_every_chunking),
        cmocka_unit_test(test_initiate_refused),
        cmocka_unit_test(test_complete_result_and_error),
        cmocka_unit_test(test_uploads_page_every_chunking),
        cmocka_unit_test(test_uploads_page_refused),
        cmocka_unit_test(test_uploads_page_check),
        cmocka_unit_test(test_parts_check),
        cmocka_unit_test(test_complete_request_xml),
        cmocka_unit_test(test_multipart_etag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
