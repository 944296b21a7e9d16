/*
 * kube_json_strip: members left out by path, everything else kept byte for byte, and a
 * text that is not what it looks like passed on whole for the decoder to judge.
 * kube_json_keep: only the members named and what leads to them, by the same scan.
 * kube_watch_peek: a watch event's type, name, namespace and version read without
 * decoding it, and every shape it must refuse (so the event is decoded instead).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/kube.h"

static const char *const job_paths[] = {"object.metadata.managedFields", "object.spec.template",
                                        NULL};

/* What scan (kube_json_strip or kube_json_keep) appends after what the buffer held,
 * in a static buffer. */
static const char *scanned(void (*scan)(const char *, size_t, const char *const *,
                                        struct util_buf *),
                           const char *in, const char *const *paths)
{
    static char out[4096];
    struct util_buf b;
    util_buf_init(&b);
    util_buf_puts(&b, "prefix:"); /* appended after what out held */
    scan(in, strlen(in), paths, &b);
    assert_true(b.len < sizeof(out));
    assert_memory_equal(b.data, "prefix:", 7);
    memcpy(out, b.data + 7, b.len - 7);
    out[b.len - 7] = '\0';
    util_buf_free(&b);
    return out;
}

/* The stripped text of in. */
static const char *strip(const char *in, const char *const *paths)
{
    return scanned(kube_json_strip, in, paths);
}

static void test_leaves_out_members(void **state)
{
    const char *ev =
        "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","
        "\"managedFields\":[{\"manager\":\"x\",\"fieldsV1\":{\"f:spec\":{\"}\":\"[\"}}}],"
        "\"resourceVersion\":\"7\"},\"spec\":{\"backoffLimit\":0,\"template\":{\"spec\":"
        "{\"containers\":[{\"env\":[{\"name\":\"D\",\"value\":\"{\\\"a\\\":\\\"}\\\"}\"}]}]}},"
        "\"completions\":1},\"status\":{\"active\":1,\"template\":true}}}";
    assert_string_equal(
        strip(ev, job_paths),
        "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Job\",\"metadata\":{\"name\":"
        "\"j\",\"resourceVersion\":\"7\"},\"spec\":{\"backoffLimit\":0,"
        "\"completions\":1},\"status\":{\"active\":1,\"template\":true}}}");
    /* The result decodes, and says what the controller reads. */
    json_t *root;
    struct kube_watch_event we;
    struct util_err err = {0};
    const char *s = strip(ev, job_paths);
    assert_int_equal(kube_watch_decode(s, strlen(s), &root, &we, &err), 0);
    assert_string_equal(we.resource_version, "7");
    json_decref(root);
}

/* The kept text of in. */
static const char *keep(const char *in, const char *const *paths)
{
    return scanned(kube_json_keep, in, paths);
}

static void test_keeps_only_members(void **state)
{
    static const char *const paths[] = {"type",
                                        "object.metadata.name",
                                        "object.metadata.resourceVersion",
                                        "object.metadata.labels.job-name",
                                        "object.status",
                                        NULL};
    const char *ev =
        "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","
        "\"labels\":{\"a\":\"b\",\"job-name\":\"j\"},\"uid\":\"u\",\"resourceVersion\":\"7\"},"
        "\"spec\":{\"status\":{\"x\":\"}\"}},\"status\":{\"active\":1,\"conditions\":[{\"t\":1}]}}"
        "}";
    const char *want = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"j\","
                       "\"labels\":{\"job-name\":\"j\"},\"resourceVersion\":\"7\"},"
                       "\"status\":{\"active\":1,\"conditions\":[{\"t\":1}]}}}";
    assert_string_equal(keep(ev, paths), want);
    json_t *root;
    struct kube_watch_event we;
    struct util_err err = {0};
    const char *s = keep(ev, paths);
    assert_int_equal(kube_watch_decode(s, strlen(s), &root, &we, &err), 0);
    assert_string_equal(we.name, "j");
    assert_string_equal(we.resource_version, "7");
    json_decref(root);
    /* A member a path goes through that is not an object is left out; nothing named: {}. */
    assert_string_equal(keep("{\"object\":[1],\"type\":\"A\"}", paths), "{\"type\":\"A\"}");
    assert_string_equal(keep("{\"object\":{\"spec\":1}}", paths), "{\"object\":{}}");
    assert_string_equal(keep("{\"a\":1}", paths), "{}");
    /* Not well formed where it is read: whole, as the strip does. */
    assert_string_equal(keep("{\"type\":\"A\",", paths), "{\"type\":\"A\",");
    assert_string_equal(keep("[1]", paths), "[1]");
}

static void test_first_last_and_only(void **state)
{
    static const char *const p[] = {"a", NULL};
    assert_string_equal(strip("{\"a\":1,\"b\":2}", p), "{\"b\":2}");
    assert_string_equal(strip("{\"b\":2,\"a\":[1,{\"x\":\"]\"}]}", p), "{\"b\":2}");
    assert_string_equal(strip("{ \"a\" : null }", p), "{}");
    assert_string_equal(strip("{}", p), "{}");
    /* Whitespace around kept members is kept inside values, dropped between members. */
    assert_string_equal(strip("{\"c\": [1, 2] , \"a\":\"\\\"\", \"d\":true}\n", p),
                        "{\"c\": [1, 2],\"d\":true}");
    /* A path into something that is not an object leaves it alone. */
    static const char *const deep[] = {"b.c", NULL};
    assert_string_equal(strip("{\"b\":[{\"c\":1}],\"c\":2}", deep), "{\"b\":[{\"c\":1}],\"c\":2}");
    assert_string_equal(strip("{\"b\":{\"c\":1,\"d\":2},\"c\":2}", deep),
                        "{\"b\":{\"d\":2},\"c\":2}");
    /* An escaped name is never taken for a path's name. */
    assert_string_equal(strip("{\"\\u0061\":1}", p), "{\"\\u0061\":1}");
    /* No paths: the text as it is. */
    assert_string_equal(strip("{\"a\":1}", NULL), "{\"a\":1}");
}

/* Anything unexpected is passed on whole: the decoder says what is wrong with it. */
static void test_malformed_whole(void **state)
{
    static const char *const p[] = {"a", NULL};
    const char *bad[] = {
        "{\"a\":1",          "{\"a\" 1}",    "{\"a\":\"x}",      "[1,2]",    "{\"a\":1}}",
        "{\"a\":{\"b\":[}}", "{a:1}",        "{\"b\":1,}x",      "",         "{\"b\":1 \"a\":2}",
        "{\"b\":\"\\",       "{\"a\":[1,2}", "{\"b\":{\"c\":1}", "  {\"a\"",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_string_equal(strip(bad[i], p), bad[i]);
}

/* The peek of a line as "TYPE ns/name@rv" (ns "-" when absent), or "refused". */
static const char *peek(const char *line)
{
    static char out[256];
    struct kube_watch_peek p;
    if (kube_watch_peek(line, strlen(line), &p) != 0) {
        assert_null(p.type);
        assert_null(p.name);
        return "refused";
    }
    snprintf(out, sizeof(out), "%.*s %.*s/%.*s@%.*s", (int)p.type_len, p.type,
             p.namespace != NULL ? (int)p.namespace_len : 1,
             p.namespace != NULL ? p.namespace : "-", (int)p.name_len, p.name, (int)p.rv_len,
             p.resource_version);
    return out;
}

static void test_peek_reads_metadata(void **state)
{
    /* As the API server sends them: type first, metadata early, the rest not read. */
    assert_string_equal(
        peek("{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Backup\",\"apiVersion\":\"x/v1\","
             "\"metadata\":{\"name\":\"b-1\",\"namespace\":\"team\",\"uid\":\"u\","
             "\"resourceVersion\":\"812\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"x\":[1,{}]}}}"),
        "MODIFIED team/b-1@812");
    /* Spaces, and a namespace after the version. */
    assert_string_equal(
        peek(" { \"type\" : \"ADDED\" , \"object\" : { \"metadata\" : { \"resourceVersion\" : "
             "\"7\" , \"name\" : \"n\" , \"namespace\" : \"ns\" } } } "),
        "ADDED ns/n@7");
    /* Cluster-scoped: the metadata is read to its end; no namespace. */
    assert_string_equal(peek("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":"
                             "\"node-1\",\"resourceVersion\":\"9\",\"labels\":{\"x\":\"}{\"}},"
                             "\"status\":{}}}"),
                        "MODIFIED -/node-1@9");
    /* Once the metadata is read, the rest of the line is not: a cut tail still peeks. */
    assert_string_equal(peek("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":"
                             "\"a\",\"namespace\":\"b\",\"resourceVersion\":\"1\"},\"spec\":{"),
                        "MODIFIED b/a@1");
}

static void test_peek_refuses(void **state)
{
    /* Each of these is decoded as before: the peek cannot vouch for it. */
    const char *const refused[] = {
        "",
        "[]",
        "{\"type\":\"MODIFIED\"}",
        /* type after object */
        "{\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\","
        "\"resourceVersion\":\"1\"}},\"type\":\"ADDED\"}",
        /* a bookmark and an error: no name */
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}",
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}",
        /* escapes, and names that are not strings */
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\\\"b\","
        "\"namespace\":\"b\",\"resourceVersion\":\"1\"}}}",
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\","
        "\"resourceVersion\":1}}}",
        "{\"type\":7,\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\","
        "\"resourceVersion\":\"1\"}}}",
        "{\"type\":\"MODIFIED\",\"object\":[{\"metadata\":{}}]}",
        /* cut inside the metadata, and a cluster-scoped one cut before its end */
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"",
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"",
        /* not JSON where it is read */
        "{\"type\":\"MODIFIED\" \"object\":{}}",
        "{type:\"MODIFIED\"}",
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const char *got = peek(refused[i]);
        if (strcmp(got, "refused") != 0)
            fail_msg("case %zu peeked as %s", i, got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaves_out_members),  cmocka_unit_test(test_keeps_only_members),
        cmocka_unit_test(test_first_last_and_only), cmocka_unit_test(test_malformed_whole),
        cmocka_unit_test(test_peek_reads_metadata), cmocka_unit_test(test_peek_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
