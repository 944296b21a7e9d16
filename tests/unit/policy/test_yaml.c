/*
 * The YAML form: every construct the strict reader rejects, with its position and
 * path, several errors in one document in document order, syntax errors, and the
 * quoting hint for crons that start with '*' or '@'.
 */
#include "policy_test.h"

static void test_retension_typo(void **state)
{
    /* The page's example with retention misspelled: the acceptance line. */
    static const char *doc = "apiVersion: lodestore.io/v1alpha1\n"
                             "kind: BackupPolicy\n"
                             "metadata:\n"
                             "  name: etc-and-home\n"
                             "spec:\n"
                             "  repository: main\n"
                             "  paths:\n"
                             "  - /etc\n"
                             "  - /home\n"
                             "  schedule:\n"
                             "    cron: 30 2 * * *\n"
                             "    timezone: Europe/Kyiv\n"
                             "    jitter: 15m\n"
                             "    catchUpWindow: 24h\n"
                             "  retension:\n"
                             "    keepLast: 3\n"
                             "    keepDaily: 7\n";
    struct pt_result r;
    pt_parse(&r, doc);
    assert_int_equal(r.d.n, 1);
    assert_int_equal(r.d.v[0].line, 15);
    assert_int_equal(r.d.v[0].column, 3);
    assert_string_equal(r.d.v[0].path, "spec.retension");
    assert_string_equal(r.d.v[0].message, "unknown field (did you mean \"retention\"?)");
    pt_free(&r);
}

static void test_unknown_fields(void **state)
{
    pt_expect_one(PT_HEAD PT_SPEC "  schedul:\n    cron: \"@daily\"\n", NULL, 8, 3, "spec.schedul",
                  "unknown field (did you mean \"schedule\"?)");
    /* A case-insensitive match is near whatever the distance. */
    pt_expect_one(PT_HEAD PT_SPEC "  NODESELECTOR: {}\n", NULL, 8, 3, "spec.NODESELECTOR",
                  "unknown field (did you mean \"nodeSelector\"?)");
    pt_expect_one(PT_HEAD PT_SPEC "  retention:\n    keep_last: 3\n", NULL, 9, 5,
                  "spec.retention.keep_last", "unknown field (did you mean \"keepLast\"?)");
    /* Nothing near: the bare message, exactly. */
    {
        struct pt_result r;
        pt_parse(&r, PT_HEAD PT_SPEC "  webhook: []\n");
        assert_int_equal(r.d.n, 1);
        assert_string_equal(r.d.v[0].message, "unknown field");
        assert_string_equal(r.d.v[0].path, "spec.webhook");
        pt_free(&r);
    }
    pt_expect_one(PT_HEAD "  uid: abc\n" PT_SPEC, NULL, 5, 3, "metadata.uid", "unknown field");
    pt_expect_one(PT_HEAD PT_SPEC "status:\n  phase: Ready\n", NULL, 8, 1, "status",
                  "status is written by the controller");
    {
        struct pt_result r;
        pt_parse(&r, "apiversion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata:\n"
                     "  name: t\n" PT_SPEC);
        assert_int_equal(r.d.n, 2);
        pt_expect_diag(&r, 0, 1, 1, "apiversion", "did you mean \"apiVersion\"?");
        pt_expect_diag(&r, 1, 1, 1, "apiVersion", "required field is missing");
        pt_free(&r);
    }
    /* The misspelt field is unknown; the real one is then missing, at its parent. */
    {
        struct pt_result r;
        pt_parse(&r, PT_HEAD "spec:\n  repo: main\n  paths: [/etc]\n");
        assert_int_equal(r.d.n, 2);
        pt_expect_diag(&r, 0, 5, 1, "spec.repository", "required field is missing");
        pt_expect_diag(&r, 1, 6, 3, "spec.repo", "unknown field");
        pt_free(&r);
    }
    /* Keys that are not words are shown in brackets. */
    pt_expect_one(PT_HEAD PT_SPEC "  \"odd key\": 1\n", NULL, 8, 3, "spec[odd key]",
                  "unknown field");
}

static void test_duplicate_keys(void **state)
{
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths: [/etc]\n  paths: [/home]\n", NULL, 8,
                  3, "spec.paths", "duplicate key \"paths\" (first at line 7)");
    /* Quoted and plain spellings of one key are the same key. */
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths: [/etc]\n  \"paths\": [/home]\n",
                  NULL, 8, 3, "spec.paths", "duplicate key \"paths\" (first at line 7)");
    /* Three times: two errors, both pointing at the first. */
    {
        struct pt_result r;
        pt_parse(&r, PT_HEAD PT_SPEC "  alerts: {maxAge: 1h, maxAge: 2h, maxAge: 3h}\n");
        assert_int_equal(r.d.n, 2);
        pt_expect_diag(&r, 0, 8, 24, "spec.alerts.maxAge", "(first at line 8)");
        pt_expect_diag(&r, 1, 8, 36, "spec.alerts.maxAge", "(first at line 8)");
        pt_free(&r);
    }
    /* Duplicate unknown keys: the duplicate, and one unknown field. */
    {
        struct pt_result r;
        pt_parse(&r, PT_HEAD PT_SPEC "  x: 1\n  x: 2\n");
        assert_int_equal(r.d.n, 2);
        pt_expect_diag(&r, 0, 8, 3, "spec.x", "unknown field");
        pt_expect_diag(&r, 1, 9, 3, "spec.x", "duplicate key \"x\" (first at line 8)");
        pt_free(&r);
    }
}

static void test_documents(void **state)
{
    pt_expect_one(PT_HEAD PT_SPEC "---\n" PT_HEAD PT_SPEC, NULL, 8, 1, "",
                  "a file holds one BackupPolicy");
    /* An explicit start and end of the one document are fine. */
    {
        struct pt_result r;
        pt_expect_ok(&r, "%YAML 1.1\n---\n" PT_HEAD PT_SPEC "...\n", NULL);
        pt_free(&r);
    }
    pt_expect_one("%TAG !e! tag:example.com,2000:\n---\n" PT_HEAD PT_SPEC, NULL, 1, 1, "",
                  "%TAG directives are not allowed");
    pt_expect_one("", NULL, 1, 1, "", "the file is empty");
    pt_expect_one("# nothing but a comment\n\n", NULL, 1, 1, "", "the file is empty");
    pt_expect_one("---\n", NULL, 2, 1, "", "the document is empty");
    pt_expect_one("- a\n- b\n", NULL, 1, 1, "",
                  "expected a map with apiVersion, kind, metadata and spec, got a list");
    pt_expect_one("just words\n", NULL, 1, 1, "",
                  "expected a map with apiVersion, kind, metadata and spec, got \"just words\"");
}

static void test_anchors_aliases_tags(void **state)
{
    pt_expect_one(PT_HEAD "spec:\n  repository: &repo main\n  paths: [/etc]\n", NULL, 6, 15,
                  "spec.repository", "anchors are not allowed (&repo)");
    {
        struct pt_result r;
        pt_parse(&r, PT_HEAD "spec:\n  repository: &r main\n  paths: [/etc]\n  nodeSelector: "
                             "{role: *r}\n");
        assert_int_equal(r.d.n, 2);
        pt_expect_diag(&r, 0, 6, 15, "spec.repository", "anchors are not allowed (&r)");
        pt_expect_diag(&r, 1, 8, 24, "spec.nodeSelector.role", "aliases are not allowed (*r)");
        pt_free(&r);
    }
    /* An anchor on a map, aliased as a merge key. */
    {
        struct pt_result r;
        pt_parse(&r, PT_HEAD PT_SPEC "  limits: &l {nice: 1}\n  alerts:\n    <<: *l\n");
        assert_int_equal(r.d.n, 3);
        pt_expect_diag(&r, 0, 8, 11, "spec.limits", "anchors are not allowed (&l)");
        pt_expect_diag(&r, 1, 10, 5, "spec.alerts[<<]", "unknown field");
        pt_expect_diag(&r, 2, 10, 9, "spec.alerts[<<]", "aliases are not allowed (*l)");
        pt_free(&r);
    }
    pt_expect_one(PT_HEAD "spec:\n  repository: !!str main\n  paths: [/etc]\n", NULL, 6, 15,
                  "spec.repository", "tags are not allowed (!!str)");
    pt_expect_one(PT_HEAD PT_SPEC "  retention:\n    keepLast: !!int 3\n", NULL, 9, 15,
                  "spec.retention.keepLast", "tags are not allowed (!!int)");
    pt_expect_one(PT_HEAD PT_SPEC "  retention: !!map {keepLast: 3}\n", NULL, 8, 14,
                  "spec.retention", "tags are not allowed (!!map)");
    pt_expect_one(PT_HEAD PT_SPEC "  limits: !custom {}\n", NULL, 8, 11, "spec.limits",
                  "tags are not allowed (!custom)");
}

static void test_complex_keys(void **state)
{
    pt_expect_one(PT_HEAD PT_SPEC "  ? [a, b]\n  : c\n", NULL, 8, 5, "spec",
                  "a key must be a plain or quoted string, not a list");
    pt_expect_one(PT_HEAD PT_SPEC "  {a: b}: c\n", NULL, 8, 3, "spec",
                  "a key must be a plain or quoted string, not a map");
    /* An explicit key that is a plain scalar is an ordinary key. */
    {
        struct pt_result r;
        pt_expect_ok(&r, PT_HEAD PT_SPEC "  ? alerts\n  : {maxAge: 1h}\n", NULL);
        assert_int_equal(r.p.alerts_max_age, 3600);
        pt_free(&r);
    }
    /* A plain key that looks like a number is a string key, and so unknown. */
    pt_expect_one(PT_HEAD PT_SPEC "  1: x\n", NULL, 8, 3, "spec.1", "unknown field");
}

static void test_wrong_kinds(void **state)
{
    pt_expect_one(PT_HEAD PT_SPEC "  retention: 7\n", NULL, 8, 14, "spec.retention",
                  "expected a map, got \"7\"");
    pt_expect_one(PT_HEAD PT_SPEC "  retention: [keepLast]\n", NULL, 8, 14, "spec.retention",
                  "expected a map, got a list");
    pt_expect_one(PT_HEAD PT_SPEC "  retention:\n", NULL, 8, 13, "spec.retention",
                  "expected a map, got no value");
    pt_expect_one(PT_HEAD PT_SPEC "  retention: ~\n", NULL, 8, 14, "spec.retention",
                  "expected a map, got null");
    pt_expect_one(PT_HEAD PT_SPEC "  schedule: null\n", NULL, 8, 13, "spec.schedule",
                  "expected a map, got null");
    pt_expect_one(PT_HEAD "spec:\n  repository: {name: main}\n  paths: [/etc]\n", NULL, 6, 15,
                  "spec.repository", "expected a string, got a map");
    pt_expect_one(PT_HEAD "spec:\n  repository: [main]\n  paths: [/etc]\n", NULL, 6, 15,
                  "spec.repository", "expected a string, got a list");
    pt_expect_one(PT_HEAD "spec:\n  repository: null\n  paths: [/etc]\n", NULL, 6, 15,
                  "spec.repository", "expected a string, got null");
    pt_expect_one(PT_HEAD PT_SPEC "  retention:\n    keepLast: [3]\n", NULL, 9, 15,
                  "spec.retention.keepLast",
                  "expected an integer from 1 to 2147483647, got a list");
    pt_expect_one(PT_HEAD PT_SPEC "  retention:\n    keepLast:\n", NULL, 9, 14,
                  "spec.retention.keepLast", "got no value");
    pt_expect_one(PT_HEAD PT_SPEC "  alerts:\n    maxAge: {h: 1}\n", NULL, 9, 13,
                  "spec.alerts.maxAge", "expected a duration from 1h to 365d, got a map");
    pt_expect_one(PT_HEAD PT_SPEC "  limits:\n    uploadRate: [1]\n", NULL, 9, 17,
                  "spec.limits.uploadRate", "expected a rate such as 50MiB/s, got a list");
    pt_expect_one(PT_HEAD PT_SPEC "  metadata: x\n", NULL, 8, 3, "spec.metadata", "unknown field");
    pt_expect_one("apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata: [t]\n" PT_SPEC,
                  NULL, 3, 11, "metadata", "expected a map, got a list");
}

static void test_yaml_11_traps(void **state)
{
    static const struct {
        const char *value;
        const char *needle;
    } cases[] = {
        {"NO", "expected an integer from 0 to 19, got \"NO\""},
        {"yes", "got \"yes\""},
        {"on", "got \"on\""},
        {"true", "got \"true\""},
        {"0o17", "hexadecimal, octal and binary numbers are not accepted: write 15"},
        {"0x1F", "hexadecimal, octal and binary numbers are not accepted: write 31"},
        {"0b101", "hexadecimal, octal and binary numbers are not accepted: write 5"},
        {"-0x1", "write -1"},
        {"0xZZ", "hexadecimal, octal and binary numbers are not accepted: write the number in "
                 "decimal"},
        {"1_0", "digit separators are not accepted: write 10"},
        {"+5", "an integer has no '+' sign: write 5"},
        {"1e1", "fractions and exponents are not accepted"},
        {"5.0", "fractions and exponents are not accepted"},
        {"010", "leading zeros are not accepted (YAML 1.1 reads 010 as the octal number 8): "
                "write 10"},
        {"007", "write 7"},
        {"-0", NULL},
        {"00", "write 0"},
        {".inf", "got \".inf\""},
        {"\"7\"", "an integer is written without quotes: write 7, not \"7\""},
        {"'7'", "write 7, not \"7\""},
        {"\"07\"", "expected an integer from 0 to 19, got the string \"07\""},
        {"5 # a comment", NULL},
        {"0", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *doc = pt_doc("  limits:\n    nice: %s\n", cases[i].value);
        if (cases[i].needle == NULL) {
            struct pt_result r;
            pt_expect_ok(&r, doc, NULL);
            pt_free(&r);
        } else {
            pt_expect_one(doc, NULL, 9, 11, "spec.limits.nice", cases[i].needle);
        }
        free(doc);
    }
    /* Where a string belongs, those same scalars are strings. */
    {
        struct pt_result r;
        pt_expect_ok(
            &r, PT_HEAD "  labels:\n    a: NO\n    b: 0x1F\n    c: '010'\n    d: 1e3\n" PT_SPEC,
            NULL);
        assert_string_equal(r.p.labels[0].value, "NO");
        assert_string_equal(r.p.labels[1].value, "0x1F");
        assert_string_equal(r.p.labels[2].value, "010");
        assert_string_equal(r.p.labels[3].value, "1e3");
        pt_free(&r);
    }
    /* A number is a fine repository name: plain scalars are strings there. */
    {
        struct pt_result r;
        pt_expect_ok(&r, PT_HEAD "spec:\n  repository: 7\n  paths: [/etc]\n", NULL);
        assert_string_equal(r.p.repository, "7");
        pt_free(&r);
    }
}

/*
 * Positions come from an index of line starts and a cursor along the last line read:
 * CRLF and lone CR breaks, several values on one line after multi-byte characters,
 * and lines visited out of order give the same line:column as a fresh count.
 */
static void test_positions_on_long_and_crlf_lines(void **state)
{
    struct pt_result r;
    pt_parse(&r, "apiVersion: lodestore.io/v1alpha1\r\nkind: BackupPolicy\r\nmetadata:\r\n"
                 "  name: x\rspec:\r\n  repository: r\r\n  paths: [/etc]\r\n"
                 "  nodeSelector: {\"\xd0\xba\xd0\xbb\": *a, b: *c, d: *e}\r\n"
                 "  schedule:\n    cron: */5 * * * *\r\n");
    assert_int_equal(r.d.n, 5);
    pt_expect_diag(&r, 1, 8, 24, "spec.nodeSelector[\xd0\xba\xd0\xbb]", "must be quoted");
    pt_expect_diag(&r, 2, 8, 31, "spec.nodeSelector.b", "must be quoted: b: \"*c\"");
    pt_expect_diag(&r, 3, 8, 38, "spec.nodeSelector.d", "must be quoted: d: \"*e\"");
    pt_expect_diag(&r, 4, 10, 11, "spec.schedule.cron", "cron: \"*/5 * * * *\"");
    pt_free(&r);

    /* Ten thousand unknown aliases on one line: each reported where it is. */
    struct util_buf doc;
    util_buf_init(&doc);
    util_buf_puts(&doc, PT_HEAD PT_SPEC "  nodeSelector: {");
    for (int i = 0; i < 10000; i++)
        util_buf_printf(&doc, "%sk%d: *v", i > 0 ? ", " : "", i);
    util_buf_puts(&doc, "}\n");
    pt_parse(&r, doc.data);
    /* The first error is the map's own: more labels than a selector may have. */
    assert_int_equal(r.d.n, 10001);
    pt_expect_diag(&r, 0, 8, 17, "spec.nodeSelector", "10000 labels, more than 32");
    /* "  nodeSelector: {" is 17 columns; entry i starts after the ones before it. */
    int col = 18;
    for (int i = 0; i < 10000; i++) {
        char key[16];
        int klen = snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(r.d.v[i + 1].line, 8);
        assert_int_equal(r.d.v[i + 1].column, col + klen + 2);
        col += klen + 2 + 2 + 2; /* "kN: *v, " */
    }
    pt_free(&r);
    util_buf_free(&doc);
}

static void test_cron_quoting_hint(void **state)
{
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron: */15 * * * *\n", NULL, 9, 11,
                  "spec.schedule.cron",
                  "a cron that starts with \"*\" must be quoted: cron: \"*/15 * * * *\"");
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron: * * * * *   # every minute\n", NULL, 9,
                  11, "spec.schedule.cron",
                  "a cron that starts with \"*\" must be quoted: cron: \"* * * * *\"");
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron: @daily\n", NULL, 9, 11,
                  "spec.schedule.cron",
                  "a cron that starts with \"@\" must be quoted: cron: \"@daily\"");
    /* A '*' followed by a word is an alias to libyaml; still a cron to quote. */
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron: *daily\n", NULL, 9, 11,
                  "spec.schedule.cron",
                  "a cron that starts with \"*\" must be quoted: cron: \"*daily\"");
    /* In a flow map, the value ends at the next key. */
    pt_expect_one(PT_HEAD PT_SPEC "  schedule: {timezone: UTC, cron: */5 * * * *}\n", NULL, 8, 35,
                  "spec.schedule.cron",
                  "a cron that starts with \"*\" must be quoted: cron: \"*/5 * * * *\"");
    pt_expect_one(PT_HEAD PT_SPEC "  schedule: {cron: */5 * * * *, timezone: UTC}\n", NULL, 8, 20,
                  "spec.schedule.cron", "cron: \"*/5 * * * *\"");
    /* Another field gets the same advice in general words. */
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron: \"@daily\"\n    timezone: @home\n", NULL,
                  10, 15, "spec.schedule.timezone",
                  "a value that starts with \"@\" must be quoted: timezone: \"@home\"");
    /* Errors before the syntax error are reported too, in order. */
    {
        struct pt_result r;
        pt_parse(&r, PT_HEAD "  name2: x\n" PT_SPEC "  retension: {}\n  schedule:\n"
                             "    cron: */15 * * * *\n    timezone: UTC\n");
        assert_int_equal(r.d.n, 3);
        pt_expect_diag(&r, 0, 5, 3, "metadata.name2", "unknown field");
        pt_expect_diag(&r, 1, 9, 3, "spec.retension", "did you mean \"retention\"?");
        pt_expect_diag(&r, 2, 11, 11, "spec.schedule.cron", "must be quoted");
        pt_free(&r);
    }
}

static void test_syntax_errors(void **state)
{
    struct pt_result r;

    /* A bad indent: libyaml's problem and its context, at the problem's position. */
    pt_parse(&r, PT_HEAD PT_SPEC "  schedule:\n    cron: \"@daily\"\n   jitter: 5m\n");
    assert_int_equal(r.d.n, 1);
    pt_expect_diag(&r, 0, 10, 4, "spec", "YAML syntax error: did not find expected key");
    pt_expect_diag(&r, 0, 10, 4, "spec", "(while parsing a block mapping at line 6, column 3)");
    pt_free(&r);

    /* An unclosed flow list: nothing is called missing that the file never reached. */
    pt_parse(&r, PT_HEAD "spec:\n  repository: main\n  paths: [/etc\n");
    assert_int_equal(r.d.n, 1);
    assert_non_null(strstr(r.d.v[0].message, "YAML syntax error"));
    pt_free(&r);

    /* A tab for indentation. */
    pt_parse(&r, PT_HEAD PT_SPEC "  retention:\n\tkeepLast: 3\n");
    assert_int_equal(r.d.n, 1);
    assert_int_equal(r.d.v[0].line, 9);
    assert_non_null(strstr(r.d.v[0].message, "YAML syntax error"));
    pt_free(&r);

    /* Errors of the closed maps before a syntax error, but not of the open ones. */
    pt_parse(&r, "apiVersion: v1\nkind: BackupPolicy\nmetadata:\n  namespace: x\nspec:\n"
                 "  repository: \"main\n");
    assert_int_equal(r.d.n, 3);
    pt_expect_diag(&r, 0, 1, 13, "apiVersion", "must be");
    pt_expect_diag(&r, 1, 3, 1, "metadata.name", "required field is missing");
    pt_expect_diag(&r, 2, 7, 1, "spec.repository", "YAML syntax error");
    pt_free(&r);
}

static void test_bytes(void **state)
{
    struct pt_result r;
    static const char nul_doc[] = PT_HEAD PT_SPEC "  x\0y: 1\n";
    static const char bad_utf8[] = PT_HEAD "  labels:\n    a: \xff\n" PT_SPEC;

    policy_diags_init(&r.d);
    r.rc = policy_parse_yaml(&r.p, nul_doc, sizeof(nul_doc) - 1, NULL, &r.d);
    assert_int_equal(r.rc, UTIL_EINVAL);
    assert_int_equal(r.d.n, 1);
    pt_expect_diag(&r, 0, 8, 4, "", "control characters are not allowed (character 0x00)");
    pt_free(&r);

    policy_diags_init(&r.d);
    r.rc = policy_parse_yaml(&r.p, bad_utf8, sizeof(bad_utf8) - 1, NULL, &r.d);
    assert_int_equal(r.d.n, 1);
    pt_expect_diag(&r, 0, 6, 8, "", "the file is not valid UTF-8");
    pt_free(&r);

    /* A UTF-8 byte order mark and CRLF line ends are fine. */
    pt_expect_ok(&r,
                 "\xef\xbb\xbf"
                 "apiVersion: lodestore.io/v1alpha1\r\nkind: BackupPolicy\r\nmetadata:\r\n"
                 "  name: t\r\nspec:\r\n  repository: main\r\n  paths: [/etc]\r\n",
                 NULL);
    pt_free(&r);

    /* Columns count characters, not bytes. */
    pt_expect_one(PT_HEAD "  labels:\n    \xc3\xa9t\xc3\xa9: x\n" PT_SPEC, NULL, 6, 5,
                  "metadata.labels[\xc3\xa9t\xc3\xa9]", "the key has '\xc3\xa9'");
    pt_expect_one("apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\n"
                  "metadata: {annotations: {a: \xc3\xa9\xc3\xa9}, name: B}\n" PT_SPEC,
                  NULL, 3, 40, "metadata.name", "uppercase letter 'B'");

    /* Too big to be a policy. */
    {
        size_t n = 1024 * 1024 + 1;
        char *big = util_malloc(n);
        memset(big, '#', n);
        policy_diags_init(&r.d);
        assert_int_equal(policy_parse_yaml(&r.p, big, n, NULL, &r.d), UTIL_EINVAL);
        pt_expect_diag(&r, 0, 1, 1, "", "larger than 1 MiB");
        pt_free(&r);
        free(big);
    }
    /* Deep nesting stops at 64 levels with one error. */
    {
        struct util_buf b;
        util_buf_init(&b);
        util_buf_puts(&b, PT_HEAD PT_SPEC "  x: ");
        for (int i = 0; i < 100; i++)
            util_buf_puts(&b, "[");
        pt_parse(&r, b.data);
        assert_int_equal(r.d.n, 2);
        pt_expect_diag(&r, 0, 8, 3, "spec.x", "unknown field");
        assert_int_equal(r.d.v[1].line, 8);
        assert_int_equal(r.d.v[1].column, 68);
        assert_true(strncmp(r.d.v[1].path, "spec.x[0][0][0]", 15) == 0);
        assert_non_null(strstr(r.d.v[1].message, "nests more than 64 levels deep"));
        pt_free(&r);
        util_buf_free(&b);
    }
}

static void test_ten_mistakes(void **state)
{
    /* Ten different mistakes, all reported in one run, in document order. */
    static const char *doc = "apiVersion: lodestore.io/v1\n"  /* 1 */
                             "kind: BackupPolicy\n"           /* 2 */
                             "metadata:\n"                    /* 3 */
                             "  name: Etc-And-Home\n"         /* 4 */
                             "spec:\n"                        /* 5 */
                             "  repository: main\n"           /* 6 */
                             "  paths:\n"                     /* 7 */
                             "  - etc\n"                      /* 8 */
                             "  schedule:\n"                  /* 9 */
                             "    cron: 30 2 * * * *\n"       /* 10 */
                             "    timezone: ../Europe/Kyiv\n" /* 11 */
                             "    jitter: 25h\n"              /* 12 */
                             "  retension:\n"                 /* 13 */
                             "    keepLast: 3\n"              /* 14 */
                             "  limits:\n"                    /* 15 */
                             "    uploadRate: 50MB/s\n"       /* 16 */
                             "    nice: \"10\"\n"             /* 17 */
                             "    ioniceClass: idle\n"        /* 18 */
                             "    ioniceLevel: 4\n";          /* 19 */
    struct pt_result r;

    pt_parse(&r, doc);
    if (r.d.n != 10)
        pt_print(&r);
    assert_int_equal(r.d.n, 10);
    pt_expect_diag(&r, 0, 1, 13, "apiVersion", "must be \"lodestore.io/v1alpha1\"");
    pt_expect_diag(&r, 1, 4, 9, "metadata.name", "uppercase letter 'E'");
    pt_expect_diag(&r, 2, 8, 5, "spec.paths[0]", "must be absolute");
    pt_expect_diag(&r, 3, 10, 11, "spec.schedule.cron", "");
    pt_expect_diag(&r, 4, 11, 15, "spec.schedule.timezone", "");
    pt_expect_diag(&r, 5, 12, 13, "spec.schedule.jitter", "must be from 0s to 24h, not 25h");
    pt_expect_diag(&r, 6, 13, 3, "spec.retension", "unknown field (did you mean \"retention\"?)");
    pt_expect_diag(&r, 7, 16, 17, "spec.limits.uploadRate", "write 50MiB/s");
    pt_expect_diag(&r, 8, 17, 11, "spec.limits.nice", "write 10, not \"10\"");
    pt_expect_diag(&r, 9, 19, 18, "spec.limits.ioniceLevel", "only valid with ioniceClass");
    pt_free(&r);

    /* Two more at the end: twelve. */
    {
        struct util_buf b;
        util_buf_init(&b);
        util_buf_puts(&b, doc);
        util_buf_puts(&b, "  alerts:\n    maxAge: 1.5d\n  webhook: []\n");
        pt_parse(&r, b.data);
        assert_int_equal(r.d.n, 12);
        pt_expect_diag(&r, 10, 21, 13, "spec.alerts.maxAge", "fractions are not accepted");
        pt_expect_diag(&r, 11, 22, 3, "spec.webhook", "unknown field");
        pt_free(&r);
        util_buf_free(&b);
    }
}

static void test_parse_reuses_diags(void **state)
{
    /* A caller may collect the errors of several documents in one list. */
    struct policy p;
    struct policy_diags d;
    const char *bad = PT_HEAD "spec:\n  repository: main\n";
    const char *good = PT_HEAD PT_SPEC;

    policy_diags_init(&d);
    assert_int_equal(policy_parse_yaml(&p, bad, strlen(bad), NULL, &d), UTIL_EINVAL);
    assert_int_equal(d.n, 1);
    assert_int_equal(policy_parse_yaml(&p, good, strlen(good), NULL, &d), 0);
    assert_int_equal(d.n, 1);
    assert_string_equal(p.name, "t");
    policy_free(&p);
    assert_null(p.name);
    policy_free(&p); /* twice is harmless */
    policy_diags_add(&d, 0, 0, "", "cannot read %s", "x");
    assert_int_equal(d.n, 2);
    assert_string_equal(d.v[1].message, "cannot read x");
    policy_diags_free(&d);
    assert_int_equal(d.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retension_typo),
        cmocka_unit_test(test_unknown_fields),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_anchors_aliases_tags),
        cmocka_unit_test(test_positions_on_long_and_crlf_lines),
        cmocka_unit_test(test_complex_keys),
        cmocka_unit_test(test_wrong_kinds),
        cmocka_unit_test(test_yaml_11_traps),
        cmocka_unit_test(test_cron_quoting_hint),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_ten_mistakes),
        cmocka_unit_test(test_parse_reuses_diags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
