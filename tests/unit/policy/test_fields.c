/*
 * Every row of the field table of docs/policy.md, with the values on both sides of
 * each bound, the defaults, and the names Kubernetes accepts.
 */
#include "policy_test.h"

#include "tz/tz.h"

/* The value of a field after a successful parse, as a number. */
static int64_t field_value(const struct policy *p, const char *field)
{
    if (strcmp(field, "jitter") == 0)
        return p->schedule.jitter;
    if (strcmp(field, "catchUpWindow") == 0)
        return p->schedule.catch_up_window;
    if (strcmp(field, "keepLast") == 0)
        return p->retention.keep_last;
    if (strcmp(field, "keepWithin") == 0)
        return p->retention.keep_within;
    if (strcmp(field, "keepDaily") == 0)
        return p->retention.keep_daily;
    if (strcmp(field, "keepWeekly") == 0)
        return p->retention.keep_weekly;
    if (strcmp(field, "keepMonthly") == 0)
        return p->retention.keep_monthly;
    if (strcmp(field, "uploadRate") == 0)
        return (int64_t)p->limits.upload_rate;
    if (strcmp(field, "nice") == 0)
        return p->limits.nice;
    if (strcmp(field, "ioniceLevel") == 0)
        return p->limits.ionice_level;
    if (strcmp(field, "maxRuntime") == 0)
        return p->limits.max_runtime;
    if (strcmp(field, "maxAge") == 0)
        return p->alerts_max_age;
    fail_msg("no field %s", field);
    return -1;
}

struct field_case {
    const char *block; /* the field's name, and the block it lives in, comes from it */
    const char *field;
    const char *value;
    int64_t want;      /* the value stored when accepted */
    const char *error; /* NULL: accepted; else a part of the message */
};

/* The lines of a block before `field: value`, from line 8 of the document on. */
static const char *field_block(const char *block)
{
    if (strcmp(block, "schedule") == 0)
        return "  schedule:\n    cron: \"0 3 * * *\"\n";
    if (strcmp(block, "limits-be") == 0)
        return "  limits:\n    ioniceClass: best-effort\n";
    return NULL;
}

static void check_field_case(const struct field_case *c)
{
    struct pt_result r;
    char *doc;
    int line = 9, column;
    const char *tmpl = field_block(c->block);

    if (tmpl != NULL) {
        doc = pt_doc("%s    %s: %s\n", tmpl, c->field, c->value);
        line = 10;
    } else {
        doc = pt_doc("  %s:\n    %s: %s\n", c->block, c->field, c->value);
    }
    column = 4 + (int)strlen(c->field) + 3;
    pt_parse(&r, doc);
    if (c->error == NULL) {
        if (r.rc != 0) {
            print_message("%s: %s should be accepted\n", c->field, c->value);
            pt_print(&r);
        }
        assert_int_equal(r.rc, 0);
        if (field_value(&r.p, c->field) != c->want)
            print_message("%s: %s: got %lld\n", c->field, c->value,
                          (long long)field_value(&r.p, c->field));
        assert_true(field_value(&r.p, c->field) == c->want);
    } else {
        char path[128];
        snprintf(path, sizeof(path), "spec.%s.%s",
                 strcmp(c->block, "limits-be") == 0 ? "limits" : c->block, c->field);
        if (r.d.n != 1)
            print_message("%s: %s\n", c->field, c->value);
        assert_int_equal(r.d.n, 1);
        pt_expect_diag(&r, 0, line, column, path, c->error);
    }
    pt_free(&r);
    free(doc);
}

static void run_cases(const struct field_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check_field_case(&cases[i]);
}

#define RUN(cases) run_cases(cases, sizeof(cases) / sizeof(cases[0]))

static void test_schedule_jitter(void **state)
{
    static const struct field_case cases[] = {
        {"schedule", "jitter", "0s", 0, NULL},
        {"schedule", "jitter", "1s", 1, NULL},
        {"schedule", "jitter", "15m", 900, NULL},
        {"schedule", "jitter", "24h", 86400, NULL},
        {"schedule", "jitter", "1d", 86400, NULL},
        {"schedule", "jitter", "86400s", 86400, NULL},
        {"schedule", "jitter", "1440m", 86400, NULL},
        {"schedule", "jitter", "86401s", 0, "must be from 0s to 24h, not 86401s"},
        {"schedule", "jitter", "1441m", 0, "must be from 0s to 24h, not 1441m"},
        {"schedule", "jitter", "25h", 0, "must be from 0s to 24h"},
        {"schedule", "jitter", "1w", 0, "must be from 0s to 24h"},
        {"schedule", "jitter", "99999999999999999999y", 0, "must be from 0s to 24h"},
        /* In range, but longer than the CRD's 12 characters. */
        {"schedule", "jitter", "00000000015m", 900, NULL},
        {"schedule", "jitter", "000000000015m", 0, "13 characters long, more than 12"},
        {"schedule", "jitter", "-1s", 0, "no sign"},
        {"schedule", "jitter", "15", 0, "needs a unit"},
        {"schedule", "jitter", "\"15m\"", 900, NULL}, /* a duration is a string: quotes are fine */
    };
    RUN(cases);
}

static void test_schedule_catch_up_window(void **state)
{
    static const struct field_case cases[] = {
        {"schedule", "catchUpWindow", "59s", 0, "must be from 1m to 30d, not 59s"},
        {"schedule", "catchUpWindow", "60s", 60, NULL},
        {"schedule", "catchUpWindow", "1m", 60, NULL},
        {"schedule", "catchUpWindow", "30d", 30 * 86400, NULL},
        {"schedule", "catchUpWindow", "720h", 30 * 86400, NULL},
        {"schedule", "catchUpWindow", "2592001s", 0, "must be from 1m to 30d"},
        {"schedule", "catchUpWindow", "31d", 0, "must be from 1m to 30d, not 31d"},
        {"schedule", "catchUpWindow", "0s", 0, "must be from 1m to 30d"},
    };
    RUN(cases);
}

static void test_retention_counts(void **state)
{
    static const char *const fields[] = {"keepLast", "keepDaily", "keepWeekly", "keepMonthly"};
    for (size_t i = 0; i < 4; i++) {
        const struct field_case cases[] = {
            {"retention", fields[i], "0", 0, "must be from 1 to 2147483647, not 0"},
            {"retention", fields[i], "1", 1, NULL},
            {"retention", fields[i], "2", 2, NULL},
            {"retention", fields[i], "2147483647", 2147483647, NULL},
            {"retention", fields[i], "2147483648", 0,
             "must be from 1 to 2147483647, not 2147483648"},
            {"retention", fields[i], "99999999999999999999999", 0, "must be from 1 to 2147483647"},
            {"retention", fields[i], "-1", 0, "must be from 1 to 2147483647, not -1"},
            {"retention", fields[i], "\"7\"", 0, "write 7, not \"7\""},
            {"retention", fields[i], "'7'", 0, "an integer is written without quotes"},
        };
        RUN(cases);
    }
}

static void test_retention_keep_within(void **state)
{
    static const struct field_case cases[] = {
        {"retention", "keepWithin", "59s", 0, "must be at least 1m, not 59s"},
        {"retention", "keepWithin", "1m", 60, NULL},
        {"retention", "keepWithin", "30d", 30 * 86400, NULL},
        {"retention", "keepWithin", "10y", 10 * 365 * 86400LL, NULL},
        /* 12 characters at most, as the CRD says: the largest is 99999999999y. */
        {"retention", "keepWithin", "99999999999y", 99999999999LL * 31536000, NULL},
        {"retention", "keepWithin", "00000000001m", 60, NULL},
        {"retention", "keepWithin", "000000000001m", 0, "13 characters long, more than 12"},
        {"retention", "keepWithin", "999999999999y", 0, "13 characters long, more than 12"},
        {"retention", "keepWithin", "9223372036854775807s", 0, "20 characters long, more than 12"},
        {"retention", "keepWithin", "99999999999999999999y", 0, "more than 12"},
        /* Past the length limit, overflow cannot happen (units.c still refuses it). */
        {"retention", "keepWithin", "292471208678y", 0, "13 characters long, more than 12"},
        {"retention", "keepWithin", "1h30m", 0, "write 90m instead of 1h30m"},
        {"retention", "keepWithin", "1.5h", 0, "fractions are not accepted"},
    };
    RUN(cases);
}

static void test_limits_upload_rate(void **state)
{
    static const struct field_case cases[] = {
        {"limits", "uploadRate", "1023B/s", 0, "must be at least 1KiB/s, not 1023B/s"},
        {"limits", "uploadRate", "1024B/s", 1024, NULL},
        {"limits", "uploadRate", "1KiB/s", 1024, NULL},
        {"limits", "uploadRate", "0KiB/s", 0, "must be at least 1KiB/s"},
        {"limits", "uploadRate", "800KiB/s", 800 * 1024, NULL},
        {"limits", "uploadRate", "50MiB/s", 50 * 1024 * 1024, NULL},
        {"limits", "uploadRate", "2GiB/s", 2LL * 1024 * 1024 * 1024, NULL},
        /* 14 characters at most, as the CRD says. */
        {"limits", "uploadRate", "999999999GiB/s", 999999999LL * 1073741824, NULL},
        {"limits", "uploadRate", "99999999999B/s", 99999999999LL, NULL},
        {"limits", "uploadRate", "00000001KiB/s", 1024, NULL},
        {"limits", "uploadRate", "8589934591GiB/s", 0, "15 characters long, more than 14"},
        {"limits", "uploadRate", "17179869184GiB/s", 0, "more than 14"},
        {"limits", "uploadRate", "0000000001KiB/s", 0, "15 characters long, more than 14"},
        {"limits", "uploadRate", "50MB/s", 0, "units are binary: write 50MiB/s"},
        {"limits", "uploadRate", "50MiB", 0, "ends in /s"},
        {"limits", "uploadRate", "50 MiB/s", 0, "no spaces"},
        {"limits", "uploadRate", "0.5MiB/s", 0, "fractions are not accepted"},
        {"limits", "uploadRate", "50mib/s", 0, "unknown unit \"mib\""},
    };
    RUN(cases);
}

static void test_limits_nice(void **state)
{
    static const struct field_case cases[] = {
        {"limits", "nice", "-1", 0, "must be from 0 to 19, not -1"},
        {"limits", "nice", "0", 0, NULL},
        {"limits", "nice", "19", 19, NULL},
        {"limits", "nice", "20", 0, "must be from 0 to 19, not 20"},
        {"limits", "nice", "+5", 0, "no '+' sign: write 5"},
        {"limits", "nice", "\"5\"", 0, "write 5, not \"5\""},
    };
    RUN(cases);
}

static void test_limits_ionice_level(void **state)
{
    static const struct field_case cases[] = {
        {"limits-be", "ioniceLevel", "-1", 0, "must be from 0 to 7, not -1"},
        {"limits-be", "ioniceLevel", "0", 0, NULL},
        {"limits-be", "ioniceLevel", "7", 7, NULL},
        {"limits-be", "ioniceLevel", "8", 0, "must be from 0 to 7, not 8"},
    };
    RUN(cases);
}

static void test_limits_max_runtime(void **state)
{
    static const struct field_case cases[] = {
        {"limits", "maxRuntime", "59m", 0, "must be from 1h to 7d, not 59m"},
        {"limits", "maxRuntime", "3599s", 0, "must be from 1h to 7d"},
        {"limits", "maxRuntime", "1h", 3600, NULL},
        {"limits", "maxRuntime", "7d", 7 * 86400, NULL},
        {"limits", "maxRuntime", "1w", 7 * 86400, NULL},
        {"limits", "maxRuntime", "168h", 7 * 86400, NULL},
        {"limits", "maxRuntime", "169h", 0, "must be from 1h to 7d, not 169h"},
    };
    RUN(cases);
}

static void test_alerts_max_age(void **state)
{
    static const struct field_case cases[] = {
        {"alerts", "maxAge", "59m", 0, "must be from 1h to 365d, not 59m"},
        {"alerts", "maxAge", "1h", 3600, NULL},
        {"alerts", "maxAge", "36h", 36 * 3600, NULL},
        {"alerts", "maxAge", "365d", 365 * 86400, NULL},
        {"alerts", "maxAge", "1y", 365 * 86400, NULL},
        {"alerts", "maxAge", "366d", 0, "must be from 1h to 365d, not 366d"},
        {"alerts", "maxAge", "53w", 0, "must be from 1h to 365d"},
    };
    RUN(cases);
}

static void test_defaults(void **state)
{
    struct pt_result r;
    char *doc = pt_doc("  schedule:\n    cron: \"@daily\"\n");

    pt_expect_ok(&r, PT_HEAD PT_SPEC, NULL);
    assert_string_equal(r.p.name, "t");
    assert_string_equal(r.p.namespace, "default");
    assert_string_equal(r.p.repository, "main");
    assert_int_equal(r.p.npaths, 1);
    assert_string_equal(r.p.paths[0], "/etc");
    assert_false(r.p.has_schedule);
    assert_false(r.p.has_retention);
    assert_int_equal(r.p.limits.upload_rate, 0);
    assert_int_equal(r.p.limits.nice, -1);
    assert_int_equal(r.p.limits.ionice_class, POLICY_IONICE_DEFAULT);
    assert_int_equal(r.p.limits.ionice_level, -1);
    assert_int_equal(r.p.limits.max_runtime, 12 * 3600);
    assert_int_equal(r.p.alerts_max_age, 0);
    pt_free(&r);

    pt_expect_ok(&r, doc, NULL);
    assert_true(r.p.has_schedule);
    assert_string_equal(r.p.schedule.cron_text, "@daily");
    assert_string_equal(r.p.schedule.timezone, "UTC");
    assert_int_equal(r.p.schedule.jitter, 15 * 60);
    assert_int_equal(r.p.schedule.catch_up_window, 24 * 3600);
    assert_true(cron_is_fixed_time(&r.p.schedule.cron));
    pt_free(&r);
    free(doc);

    /* Empty blocks: no rules, no limits, no alert limit, but present. */
    doc = pt_doc("  retention: {}\n  limits: {}\n  alerts: {}\n");
    pt_expect_ok(&r, doc, NULL);
    assert_true(r.p.has_retention);
    assert_int_equal(r.p.retention.keep_last, 0);
    assert_int_equal(r.p.limits.max_runtime, 12 * 3600);
    pt_free(&r);
    free(doc);
}

static void test_page_example(void **state)
{
    /* The user's page, verbatim. */
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
                             "  retention:\n"
                             "    keepLast: 3\n"
                             "    keepDaily: 7\n"
                             "    keepWeekly: 4\n"
                             "    keepMonthly: 6\n"
                             "  limits:\n"
                             "    uploadRate: 50MiB/s\n"
                             "    nice: 10\n"
                             "    ioniceClass: best-effort\n"
                             "    ioniceLevel: 4\n"
                             "    maxRuntime: 12h\n"
                             "  alerts:\n"
                             "    maxAge: 36h\n";
    struct pt_result r;
    struct tz_db *db = NULL;
    struct util_err err = {0};

    assert_int_equal(tz_db_open(&db, TZ_DEFAULT_DIR, &err), 0);
    pt_expect_ok(&r, doc, db);
    assert_string_equal(r.p.name, "etc-and-home");
    assert_string_equal(r.p.namespace, "default");
    assert_string_equal(r.p.repository, "main");
    assert_int_equal(r.p.npaths, 2);
    assert_string_equal(r.p.paths[1], "/home");
    assert_string_equal(r.p.schedule.cron_text, "30 2 * * *");
    assert_true(r.p.schedule.cron.hours == (1u << 2));
    assert_true(r.p.schedule.cron.minutes == (1ull << 30));
    assert_string_equal(r.p.schedule.timezone, "Europe/Kyiv");
    assert_int_equal(r.p.schedule.jitter, 900);
    assert_int_equal(r.p.schedule.catch_up_window, 86400);
    assert_int_equal(r.p.retention.keep_last, 3);
    assert_int_equal(r.p.retention.keep_daily, 7);
    assert_int_equal(r.p.retention.keep_weekly, 4);
    assert_int_equal(r.p.retention.keep_monthly, 6);
    assert_int_equal(r.p.retention.keep_within, 0);
    assert_int_equal(r.p.limits.upload_rate, 50 * 1024 * 1024);
    assert_int_equal(r.p.limits.nice, 10);
    assert_int_equal(r.p.limits.ionice_class, POLICY_IONICE_BEST_EFFORT);
    assert_int_equal(r.p.limits.ionice_level, 4);
    assert_int_equal(r.p.limits.max_runtime, 12 * 3600);
    assert_int_equal(r.p.alerts_max_age, 36 * 3600);
    pt_free(&r);
    tz_db_close(db);
}

static void test_cron(void **state)
{
    struct pt_result r;
    char *doc;

    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    timezone: UTC\n", NULL, 8, 3,
                  "spec.schedule.cron", "required field is missing: five fields");
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron: 0 0 30 2 *\n", NULL, 9, 11,
                  "spec.schedule.cron", "never");
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron: \"@yearly\"\n", NULL, 9, 11,
                  "spec.schedule.cron", "@yearly");
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron: 0 0 * * * 2026\n", NULL, 9, 11,
                  "spec.schedule.cron", "");
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron: 61 2 * * *\n", NULL, 9, 11,
                  "spec.schedule.cron", "61");
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron: 5\n", NULL, 9, 11, "spec.schedule.cron",
                  "");
    pt_expect_one(PT_HEAD PT_SPEC "  schedule:\n    cron:\n", NULL, 9, 10, "spec.schedule.cron",
                  "expected a string, got no value");
    doc = pt_doc("  schedule:\n    cron: '*/15 * * * *'\n");
    pt_expect_ok(&r, doc, NULL);
    assert_true(r.p.schedule.cron.minutes ==
                ((1ull << 0) | (1ull << 15) | (1ull << 30) | (1ull << 45)));
    pt_free(&r);
    free(doc);
    doc = pt_doc("  schedule: {cron: \"@hourly\"}\n");
    pt_expect_ok(&r, doc, NULL);
    pt_free(&r);
    free(doc);
}

static void test_timezone(void **state)
{
    struct tz_db *db = NULL;
    struct util_err err = {0};
    struct pt_result r;
    static const char *good[] = {
        "UTC",      "Europe/Kyiv", "Europe/Kiev", "America/New_York", "Australia/Lord_Howe",
        "Etc/GMT+5"};
    static const char *bad_syntax[] = {"../etc/passwd",     "/etc/localtime", "right/UTC",
                                       "posix/Europe/Kyiv", "Europe//Kyiv",   "Europe/Kyiv/"};

    assert_int_equal(tz_db_open(&db, TZ_DEFAULT_DIR, &err), 0);
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char *doc = pt_doc("  schedule:\n    cron: \"@daily\"\n    timezone: %s\n", good[i]);
        pt_expect_ok(&r, doc, db);
        assert_string_equal(r.p.schedule.timezone, good[i]);
        pt_free(&r);
        free(doc);
    }
    for (size_t i = 0; i < sizeof(bad_syntax) / sizeof(bad_syntax[0]); i++) {
        char *doc = pt_doc("  schedule:\n    cron: \"@daily\"\n    timezone: %s\n", bad_syntax[i]);
        /* Refused with or without a database: the name alone is wrong. */
        pt_expect_one(doc, NULL, 10, 15, "spec.schedule.timezone", "");
        pt_expect_one(doc, db, 10, 15, "spec.schedule.timezone", "");
        free(doc);
    }
    {
        char *doc = pt_doc("  schedule:\n    cron: \"@daily\"\n    timezone: Europe/Atlantis\n");
        /* Without a database only the syntax is checked. */
        pt_expect_ok(&r, doc, NULL);
        pt_free(&r);
        pt_expect_one(doc, db, 10, 15, "spec.schedule.timezone", "Europe/Atlantis");
        free(doc);
    }
    tz_db_close(db);
}

static void test_ionice(void **state)
{
    struct pt_result r;
    char *doc;

    doc = pt_doc("  limits:\n    ioniceClass: idle\n");
    pt_expect_ok(&r, doc, NULL);
    assert_int_equal(r.p.limits.ionice_class, POLICY_IONICE_IDLE);
    assert_int_equal(r.p.limits.ionice_level, -1);
    pt_free(&r);
    free(doc);

    /* The level comes first in the file: the rule holds in either order. */
    doc = pt_doc("  limits:\n    ioniceLevel: 2\n    ioniceClass: best-effort\n");
    pt_expect_ok(&r, doc, NULL);
    assert_int_equal(r.p.limits.ionice_class, POLICY_IONICE_BEST_EFFORT);
    assert_int_equal(r.p.limits.ionice_level, 2);
    pt_free(&r);
    free(doc);

    pt_expect_one(PT_HEAD PT_SPEC "  limits:\n    ioniceClass: idle\n    ioniceLevel: 4\n", NULL,
                  10, 18, "spec.limits.ioniceLevel", "only valid with ioniceClass: best-effort");
    pt_expect_one(PT_HEAD PT_SPEC "  limits:\n    ioniceLevel: 4\n", NULL, 9, 18,
                  "spec.limits.ioniceLevel", "needs ioniceClass: best-effort");
    pt_expect_one(PT_HEAD PT_SPEC "  limits:\n    ioniceClass: realtime\n", NULL, 9, 18,
                  "spec.limits.ioniceClass",
                  "must be \"best-effort\" or \"idle\", not \"realtime\"");
    pt_expect_one(PT_HEAD PT_SPEC "  limits:\n    ioniceClass: Best-Effort\n", NULL, 9, 18,
                  "spec.limits.ioniceClass", "(did you mean \"best-effort\"?)");
    /* An invalid class is one error, not two. */
    pt_expect_one(PT_HEAD PT_SPEC "  limits:\n    ioniceClass: besteffort\n    ioniceLevel: 4\n",
                  NULL, 9, 18, "spec.limits.ioniceClass", "did you mean \"best-effort\"?");
}

static void test_names(void **state)
{
    struct pt_result r;
    char name63[64], name64[65], sub253[254], sub254[255];
    char *doc;

    memset(name63, 'a', 63);
    name63[63] = '\0';
    memset(name64, 'a', 64);
    name64[64] = '\0';
    /* 253 characters in parts of 50 joined by dots. */
    for (size_t i = 0; i < 253; i++)
        sub253[i] = i % 51 == 50 ? '.' : 'r';
    sub253[253] = '\0';
    memcpy(sub254, sub253, 253);
    sub254[253] = 'r';
    sub254[254] = '\0';

    doc = util_asprintf("apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata:\n"
                        "  name: %s\n  namespace: %s\n" PT_SPEC,
                        name63, name63);
    pt_expect_ok(&r, doc, NULL);
    assert_string_equal(r.p.name, name63);
    assert_string_equal(r.p.namespace, name63);
    pt_free(&r);
    free(doc);

    static const struct {
        const char *name;
        const char *needle;
    } bad[] = {
        {"Etc", "uppercase letter 'E'"}, {"-etc", "starts with '-'"}, {"etc-", "ends with '-'"},
        {"etc.home", "has '.'"},         {"etc_home", "has '_'"},     {"\"\"", "is empty"},
        {"\"a b\"", "has a space"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        doc = util_asprintf("apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata:\n"
                            "  name: %s\n" PT_SPEC,
                            bad[i].name);
        pt_expect_one(doc, NULL, 4, 9, "metadata.name", bad[i].needle);
        free(doc);
        doc = util_asprintf("apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata:\n"
                            "  name: t\n  namespace: %s\n" PT_SPEC,
                            bad[i].name);
        pt_expect_one(doc, NULL, 5, 14, "metadata.namespace", bad[i].needle);
        free(doc);
    }
    doc = util_asprintf("apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata:\n"
                        "  name: %s\n" PT_SPEC,
                        name64);
    pt_expect_one(doc, NULL, 4, 9, "metadata.name", "64 characters long, more than 63");
    free(doc);

    /* repository: an RFC 1123 subdomain. */
    doc = util_asprintf(PT_HEAD "spec:\n  repository: %s\n  paths: [/etc]\n", sub253);
    pt_expect_ok(&r, doc, NULL);
    pt_free(&r);
    free(doc);
    doc = util_asprintf(PT_HEAD "spec:\n  repository: %s\n  paths: [/etc]\n", sub254);
    pt_expect_one(doc, NULL, 6, 15, "spec.repository", "254 characters long, more than 253");
    free(doc);
    pt_expect_one(PT_HEAD "spec:\n  repository: a..b\n  paths: [/etc]\n", NULL, 6, 15,
                  "spec.repository", "empty part between dots");
    pt_expect_one(PT_HEAD "spec:\n  repository: Main\n  paths: [/etc]\n", NULL, 6, 15,
                  "spec.repository", "uppercase letter 'M'");
    pt_expect_one(PT_HEAD "spec:\n  repository: main.-x\n  paths: [/etc]\n", NULL, 6, 15,
                  "spec.repository", "starts with '-'");
    pt_expect_ok(&r, PT_HEAD "spec:\n  repository: backups.example-1\n  paths: [/etc]\n", NULL);
    pt_free(&r);
}

static void test_labels_and_annotations(void **state)
{
    struct pt_result r;
    char v63[64], v64[65];
    char *doc;

    memset(v63, 'v', 63);
    v63[63] = '\0';
    memset(v64, 'v', 64);
    v64[64] = '\0';
    doc = util_asprintf("apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata:\n"
                        "  name: t\n"
                        "  labels:\n"
                        "    app: %s\n"
                        "    app.kubernetes.io/name: lodestore\n"
                        "    empty: \"\"\n"
                        "    \"yes\": NO\n"
                        "  annotations:\n"
                        "    note: any text at all, with spaces, commas and a # sign\n"
                        "    example.com/count: 7\n" PT_SPEC "  nodeSelector:\n"
                        "    kubernetes.io/os: linux\n"
                        "    role: db\n",
                        v63);
    pt_expect_ok(&r, doc, NULL);
    assert_int_equal(r.p.nlabels, 4);
    assert_string_equal(r.p.labels[1].key, "app.kubernetes.io/name");
    assert_string_equal(r.p.labels[2].value, "");
    /* A plain scalar is a string where a string belongs: NO is "NO", 7 is "7". */
    assert_string_equal(r.p.labels[3].key, "yes");
    assert_string_equal(r.p.labels[3].value, "NO");
    assert_int_equal(r.p.nannotations, 2);
    assert_string_equal(r.p.annotations[1].value, "7");
    assert_int_equal(r.p.nnode_selector, 2);
    assert_string_equal(r.p.node_selector[0].key, "kubernetes.io/os");
    assert_string_equal(r.p.node_selector[1].value, "db");
    pt_free(&r);
    free(doc);

    doc = util_asprintf(PT_HEAD "  labels:\n    app: %s\n" PT_SPEC, v64);
    pt_expect_one(doc, NULL, 6, 10, "metadata.labels.app", "64 characters long, more than 63");
    free(doc);
    pt_expect_one(PT_HEAD "  labels:\n    app: -x\n" PT_SPEC, NULL, 6, 10, "metadata.labels.app",
                  "the value starts with '-'");
    pt_expect_one(PT_HEAD "  labels:\n    -app: x\n" PT_SPEC, NULL, 6, 5, "metadata.labels.-app",
                  "the key starts with '-'");
    pt_expect_one(PT_HEAD "  labels:\n    Example.com/app: x\n" PT_SPEC, NULL, 6, 5,
                  "metadata.labels[Example.com/app]", "the key's prefix has the uppercase");
    pt_expect_one(PT_HEAD "  labels:\n    /app: x\n" PT_SPEC, NULL, 6, 5, "metadata.labels[/app]",
                  "empty prefix");
    pt_expect_one(PT_HEAD "  labels:\n    example.com/: x\n" PT_SPEC, NULL, 6, 5,
                  "metadata.labels[example.com/]", "no name");
    pt_expect_one(PT_HEAD "  labels:\n    app: {a: b}\n" PT_SPEC, NULL, 6, 10,
                  "metadata.labels.app", "expected a label value, got a map");
    pt_expect_one(PT_HEAD "  labels:\n    app: x\n    app: y\n" PT_SPEC, NULL, 7, 5,
                  "metadata.labels.app", "duplicate key \"app\" (first at line 6)");
    pt_expect_one(PT_HEAD "  annotations:\n    a b: x\n" PT_SPEC, NULL, 6, 5,
                  "metadata.annotations[a b]", "has a space");
    pt_expect_one(PT_HEAD "  annotations: [a]\n" PT_SPEC, NULL, 5, 16, "metadata.annotations",
                  "expected a map of strings, got a list");
    pt_expect_one(PT_HEAD PT_SPEC "  nodeSelector:\n    role: d b\n", NULL, 9, 11,
                  "spec.nodeSelector.role", "the value has a space");
    pt_expect_one(PT_HEAD PT_SPEC "  nodeSelector: role=db\n", NULL, 8, 17, "spec.nodeSelector",
                  "expected a map of labels, got \"role=db\"");
}

static void test_paths(void **state)
{
    struct pt_result r;

    pt_expect_ok(
        &r, PT_HEAD "spec:\n  repository: main\n  paths:\n  - /\n  - /etc\n  - /home/x y\n", NULL);
    assert_int_equal(r.p.npaths, 3);
    assert_string_equal(r.p.paths[2], "/home/x y");
    pt_free(&r);

    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths: []\n", NULL, 7, 10, "spec.paths",
                  "at least one path is required");
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths: [etc]\n", NULL, 7, 11,
                  "spec.paths[0]", "must be absolute");
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths: [/etc, \"\"]\n", NULL, 7, 17,
                  "spec.paths[1]", "the path is empty");
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths: [/var/../etc]\n", NULL, 7, 11,
                  "spec.paths[0]", "must not contain \"..\"");
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths: [/..]\n", NULL, 7, 11,
                  "spec.paths[0]", "must not contain \"..\"");
    pt_expect_ok(&r, PT_HEAD "spec:\n  repository: main\n  paths: [/a..b/..c]\n", NULL);
    pt_free(&r);
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths: [\"/etc\\0/x\"]\n", NULL, 7, 11,
                  "spec.paths[0]", "NUL character");
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths:\n  - /etc\n  - /home\n  - /etc/\n",
                  NULL, 10, 5, "spec.paths[2]", "duplicate path \"/etc/\" (first at line 8)");
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths: [[/etc]]\n", NULL, 7, 11,
                  "spec.paths[0]", "expected an absolute path, got a list");
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n  paths: /etc\n", NULL, 7, 10, "spec.paths",
                  "write each path as a list item");
    {
        char *doc, *long_path = util_malloc(4097);
        memset(long_path, 'a', 4096);
        long_path[0] = '/';
        long_path[4096] = '\0';
        doc = util_asprintf(PT_HEAD "spec:\n  repository: main\n  paths: [%s]\n", long_path);
        pt_expect_one(doc, NULL, 7, 11, "spec.paths[0]", "4096 bytes long, more than 4095");
        free(doc);
        long_path[4095] = '\0';
        doc = util_asprintf(PT_HEAD "spec:\n  repository: main\n  paths: [%s]\n", long_path);
        pt_expect_ok(&r, doc, NULL);
        pt_free(&r);
        free(doc);
        free(long_path);
    }
}

/* The counts and lengths the API server limits (crd/backuppolicies.yaml), at and past each. */
static void test_crd_counts_and_lengths(void **state)
{
    struct pt_result r;
    struct util_buf b;
    char *doc;

    /* 64 paths are fine, 65 one error at the list, whatever is wrong with the items. */
    for (int n = 64; n <= 65; n++) {
        util_buf_init(&b);
        util_buf_puts(&b, PT_HEAD "spec:\n  repository: main\n  paths:\n");
        for (int i = 0; i < n; i++)
            util_buf_printf(&b, "  - /p%d\n", i);
        if (n == 64) {
            pt_expect_ok(&r, b.data, NULL);
            assert_int_equal(r.p.npaths, 64);
            pt_free(&r);
        } else {
            pt_expect_one(b.data, NULL, 8, 3, "spec.paths",
                          "65 paths, more than 64: back up a common parent directory");
        }
        util_buf_free(&b);
    }
    /* 32 labels in a node selector are fine, 33 are not. */
    for (int n = 32; n <= 33; n++) {
        util_buf_init(&b);
        util_buf_puts(&b, PT_HEAD PT_SPEC "  nodeSelector:\n");
        for (int i = 0; i < n; i++)
            util_buf_printf(&b, "    k%d: v\n", i);
        if (n == 32) {
            pt_expect_ok(&r, b.data, NULL);
            assert_int_equal(r.p.nnode_selector, 32);
            pt_free(&r);
        } else {
            pt_expect_one(b.data, NULL, 9, 5, "spec.nodeSelector", "33 labels, more than 32");
        }
        util_buf_free(&b);
    }
    /* A cron of 256 characters (spaces count) is fine, 257 are not. */
    doc = pt_doc("  schedule:\n    cron: \"0%*s0 * * *\"\n", 248, "");
    pt_expect_ok(&r, doc, NULL);
    assert_int_equal(strlen(r.p.schedule.cron_text), 256);
    pt_free(&r);
    free(doc);
    doc = pt_doc("  schedule:\n    cron: \"0%*s0 * * *\"\n", 249, "");
    pt_expect_one(doc, NULL, 9, 11, "spec.schedule.cron",
                  "the cron expression is 257 characters long, more than 256");
    free(doc);
    /* Characters, not bytes: a 200-character cron of 400 bytes is not too long, just wrong. */
    util_buf_init(&b);
    for (int i = 0; i < 200; i++)
        util_buf_puts(&b, "\xc3\xa9");
    doc = pt_doc("  schedule:\n    cron: \"%s\"\n", b.data);
    pt_expect_one(doc, NULL, 9, 11, "spec.schedule.cron", "not printable ASCII");
    free(doc);
    util_buf_free(&b);
}

static void test_api_version_and_kind(void **state)
{
    pt_expect_one("apiVersion: lodestore.io/v1\nkind: BackupPolicy\nmetadata:\n  name: t\n" PT_SPEC,
                  NULL, 1, 13, "apiVersion",
                  "must be \"lodestore.io/v1alpha1\", not \"lodestore.io/v1\"");
    pt_expect_one(
        "apiVersion: lodestore.io/v1alpha1\nkind: Backuppolicy\nmetadata:\n  name: t\n" PT_SPEC,
        NULL, 2, 7, "kind", "must be \"BackupPolicy\", not \"Backuppolicy\"");
    pt_expect_one("kind: BackupPolicy\nmetadata:\n  name: t\n" PT_SPEC, NULL, 1, 1, "apiVersion",
                  "required field is missing: write apiVersion: lodestore.io/v1alpha1");
    pt_expect_one("apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\n" PT_SPEC, NULL, 1, 1,
                  "metadata", "required field is missing");
    pt_expect_one("apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata: {}\n" PT_SPEC,
                  NULL, 3, 1, "metadata.name", "required field is missing");
    pt_expect_one(PT_HEAD "spec:\n  paths: [/etc]\n", NULL, 5, 1, "spec.repository",
                  "required field is missing: the name of a BackupRepository");
    pt_expect_one(PT_HEAD "spec:\n  repository: main\n", NULL, 5, 1, "spec.paths",
                  "required field is missing: a list of 1 or more absolute paths");
    pt_expect_one(PT_HEAD, NULL, 1, 1, "spec", "required field is missing");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule_jitter),
        cmocka_unit_test(test_schedule_catch_up_window),
        cmocka_unit_test(test_retention_counts),
        cmocka_unit_test(test_retention_keep_within),
        cmocka_unit_test(test_limits_upload_rate),
        cmocka_unit_test(test_limits_nice),
        cmocka_unit_test(test_limits_ionice_level),
        cmocka_unit_test(test_limits_max_runtime),
        cmocka_unit_test(test_alerts_max_age),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_page_example),
        cmocka_unit_test(test_cron),
        cmocka_unit_test(test_timezone),
        cmocka_unit_test(test_ionice),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_labels_and_annotations),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_crd_counts_and_lengths),
        cmocka_unit_test(test_api_version_and_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
