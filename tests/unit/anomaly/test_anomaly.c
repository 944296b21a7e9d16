/*
 * The anomaly rules (docs/anomaly.md), each at its threshold and one step on
 * either side, with the defaults; the three cases of the issue (30% of files
 * encrypted, 40% deleted, 1% edited); the median of the recent snapshots; the
 * range checks of the thresholds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "anomaly/anomaly.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)

static struct anomaly_thresholds th;
static struct anomaly_stats recent[8];
static struct anomaly_report rep;

/* A quiet history: 1,000 files, 100 MiB, a few edits a day, data that compresses. */
static void history(void)
{
    anomaly_thresholds_default(&th);
    for (int i = 0; i < 8; i++) {
        recent[i] = (struct anomaly_stats){
            .files = 1000,
            .bytes = 100 * MIB,
            .new_files = 2,
            .changed_files = 10,
            .deleted_files = 2,
            .read_bytes = 10 * MIB,
            .incompressible_read_bytes = 1 * MIB,
            .changed_bytes = 8 * MIB,
            .incompressible_changed_bytes = MIB / 2,
            .new_bytes = 5 * MIB,
        };
    }
}

/* The next snapshot if nothing unusual happened. */
static struct anomaly_stats quiet(void)
{
    return recent[0];
}

static unsigned check(const struct anomaly_stats *s)
{
    return anomaly_check(&th, s, recent, 7, &rep);
}

static void test_defaults_and_ranges(void **state)
{
    struct util_err err = {0};
    anomaly_thresholds_default(&th);
    assert_int_equal(th.mass_change_percent, 25);
    assert_int_equal(th.mass_change_min_files, 50);
    assert_int_equal(th.mass_change_factor, 5);
    assert_int_equal(th.deletion_percent, 20);
    assert_int_equal(th.deletion_min_files, 50);
    assert_int_equal(th.shrink_percent, 30);
    assert_int_equal(th.shrink_min_files, 50);
    assert_int_equal(th.shrink_min_bytes, MIB);
    assert_int_equal(th.encryption_min_bytes, MIB);
    assert_int_equal(th.encryption_percent, 80);
    assert_int_equal(th.encryption_baseline_percent, 40);
    assert_int_equal(th.growth_factor, 10);
    assert_int_equal(th.growth_min_bytes, GIB);
    assert_int_equal(anomaly_thresholds_check(&th, &err), 0);

    th.shrink_percent = 0;
    assert_int_equal(anomaly_thresholds_check(&th, &err), UTIL_ERANGE);
    assert_string_equal(err.msg, "anomaly.shrinkPercent: 0 is out of range (1 to 100)");
    th.shrink_percent = 100;
    assert_int_equal(anomaly_thresholds_check(&th, &err), 0);
    th.encryption_baseline_percent = 101;
    assert_int_equal(anomaly_thresholds_check(&th, &err), UTIL_ERANGE);
    assert_non_null(strstr(err.msg, "anomaly.encryptionBaselinePercent: 101"));
    th.encryption_baseline_percent = 40;
    th.growth_factor = 1001;
    assert_int_equal(anomaly_thresholds_check(&th, &err), UTIL_ERANGE);
    assert_non_null(strstr(err.msg, "anomaly.growthFactor"));

    for (unsigned i = 0; i < ANOMALY_RULE_COUNT; i++)
        assert_non_null(anomaly_rule_name(i));
    assert_string_equal(anomaly_rule_name(3), "encryption-like");
    assert_null(anomaly_rule_name(ANOMALY_RULE_COUNT));
}

/* Every documented name sets its field; ranges and unknown names are refused. */
static void test_thresholds_by_name(void **state)
{
    struct anomaly_thresholds t, before;
    struct util_err err = {0};
    /* Zeroed first and copied bytewise: the struct has padding, which memcmp reads. */
    memset(&t, 0, sizeof(t));
    anomaly_thresholds_default(&t);
    assert_int_equal(anomaly_thresholds_set(&t, "massChangePercent", 40, &err), 0);
    assert_int_equal(t.mass_change_percent, 40);
    assert_int_equal(anomaly_thresholds_set(&t, "deletionMinFiles", 3, &err), 0);
    assert_int_equal(t.deletion_min_files, 3);
    assert_int_equal(anomaly_thresholds_set(&t, "growthMinBytes", 1ull << 40, &err), 0);
    assert_true(t.growth_min_bytes == 1ull << 40);
    assert_int_equal(anomaly_thresholds_set(&t, "growthFactor", 1000, &err), 0);
    assert_int_equal(t.growth_factor, 1000);
    assert_int_equal(anomaly_thresholds_check(&t, &err), 0);

    memcpy(&before, &t, sizeof(t));
    assert_int_equal(anomaly_thresholds_set(&t, "deletionPercent", 0, &err), UTIL_ERANGE);
    assert_string_equal(err.msg, "anomaly.deletionPercent: 0 is out of range (1 to 100)");
    assert_int_equal(anomaly_thresholds_set(&t, "growthFactor", 1001, &err), UTIL_ERANGE);
    assert_int_equal(anomaly_thresholds_set(&t, "encryptionPercent", 1ull << 33, &err),
                     UTIL_ERANGE);
    assert_int_equal(anomaly_thresholds_set(&t, "massChange", 5, &err), UTIL_EINVAL);
    assert_string_equal(err.msg, "anomaly.massChange: no such threshold");
    assert_memory_equal(&t, &before, sizeof(t));

    /* Each of the thirteen names of docs/anomaly.md is known. */
    const char *names[] = {"massChangePercent",
                           "massChangeMinFiles",
                           "massChangeFactor",
                           "deletionPercent",
                           "deletionMinFiles",
                           "shrinkPercent",
                           "shrinkMinFiles",
                           "shrinkMinBytes",
                           "encryptionMinBytes",
                           "encryptionPercent",
                           "encryptionBaselinePercent",
                           "growthFactor",
                           "growthMinBytes"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_int_equal(anomaly_thresholds_set(&t, names[i], 7, &err), 0);
}

static void test_no_parent_nothing_fires(void **state)
{
    history();
    struct anomaly_stats s = {.files = 1, .deleted_files = 5000, .new_bytes = 100 * GIB};
    assert_int_equal(anomaly_check(&th, &s, recent, 0, &rep), 0);
    assert_int_equal(rep.rules, 0);
}

static void test_quiet_snapshot(void **state)
{
    history();
    struct anomaly_stats s = quiet();
    assert_int_equal(check(&s), 0);
}

static void test_mass_change_threshold(void **state)
{
    history();
    struct anomaly_stats s = quiet();
    /* 25% of the parent's 1,000 files, changed or deleted */
    s.changed_files = 240;
    s.deleted_files = 10;
    assert_int_equal(check(&s) & ANOMALY_MASS_CHANGE, ANOMALY_MASS_CHANGE);
    assert_non_null(strstr(rep.why[0], "250 of the parent's 1000 files"));
    s.changed_files = 239;
    assert_int_equal(check(&s) & ANOMALY_MASS_CHANGE, 0);

    /* the minimum count on a small tree: 100 files, 50 changed is the floor */
    for (int i = 0; i < 8; i++) {
        recent[i].files = 100;
        recent[i].changed_files = 1;
        recent[i].deleted_files = 0;
    }
    s = quiet();
    s.changed_files = 50;
    assert_int_equal(check(&s) & ANOMALY_MASS_CHANGE, ANOMALY_MASS_CHANGE);
    s.changed_files = 49;
    assert_int_equal(check(&s) & ANOMALY_MASS_CHANGE, 0);

    /* a host that always changes a lot: 5 x the recent median (60) is 300 */
    history();
    for (int i = 0; i < 8; i++) {
        recent[i].changed_files = 60;
        recent[i].deleted_files = 0;
    }
    s = quiet();
    s.deleted_files = 0;
    s.changed_files = 300;
    assert_int_equal(check(&s) & ANOMALY_MASS_CHANGE, ANOMALY_MASS_CHANGE);
    s.changed_files = 299;
    assert_int_equal(check(&s) & ANOMALY_MASS_CHANGE, 0);
}

static void test_deletion_spike_threshold(void **state)
{
    history();
    struct anomaly_stats s = quiet();
    s.changed_files = 0;
    s.deleted_files = 200; /* 20% */
    s.files = 800;
    assert_int_equal(check(&s) & ANOMALY_DELETION_SPIKE, ANOMALY_DELETION_SPIKE);
    assert_non_null(strstr(rep.why[1], "200 of the parent's 1000 files deleted (20.0%"));
    s.deleted_files = 199;
    assert_int_equal(check(&s) & ANOMALY_DELETION_SPIKE, 0);
    /* the floor: 40 of 100 files is 40% but below 50 files */
    for (int i = 0; i < 8; i++)
        recent[i].files = 100;
    s.deleted_files = 49;
    assert_int_equal(check(&s) & ANOMALY_DELETION_SPIKE, 0);
    s.deleted_files = 50;
    assert_int_equal(check(&s) & ANOMALY_DELETION_SPIKE, ANOMALY_DELETION_SPIKE);
}

static void test_shrink_threshold(void **state)
{
    history();
    struct anomaly_stats s = quiet();
    s.files = 700; /* fell by 30% */
    assert_int_equal(check(&s) & ANOMALY_SHRINK, ANOMALY_SHRINK);
    s.files = 701;
    assert_int_equal(check(&s) & ANOMALY_SHRINK, 0);
    s.bytes = 70 * MIB; /* bytes fell by 30% */
    assert_int_equal(check(&s) & ANOMALY_SHRINK, ANOMALY_SHRINK);
    assert_non_null(strstr(rep.why[2], "fell by 29.9% and 30.0%"));
    s.bytes = 70 * MIB + 1;
    assert_int_equal(check(&s) & ANOMALY_SHRINK, 0);

    /* a parent below the floors cannot shrink */
    for (int i = 0; i < 8; i++) {
        recent[i].files = 49;
        recent[i].bytes = MIB - 1;
    }
    s.files = 0;
    s.bytes = 0;
    assert_int_equal(check(&s) & ANOMALY_SHRINK, 0);
    recent[0].files = 50;
    assert_int_equal(check(&s) & ANOMALY_SHRINK, ANOMALY_SHRINK);
    recent[0].files = 49;
    recent[0].bytes = MIB;
    assert_int_equal(check(&s) & ANOMALY_SHRINK, ANOMALY_SHRINK);
}

static void test_encryption_threshold(void **state)
{
    history();
    struct anomaly_stats s = quiet();
    s.changed_bytes = MIB;
    /* 80% of 1 MiB is 838860.8 bytes: 838861 is at the threshold, 838860 below it */
    s.incompressible_changed_bytes = 838861;
    assert_int_equal(check(&s) & ANOMALY_ENCRYPTION, ANOMALY_ENCRYPTION);
    assert_non_null(strstr(rep.why[3], "the recent median was 10.0%"));
    s.incompressible_changed_bytes = 838860;
    assert_int_equal(check(&s) & ANOMALY_ENCRYPTION, 0);
    /* below the size floor */
    s.changed_bytes = MIB - 1;
    s.incompressible_changed_bytes = MIB - 1;
    assert_int_equal(check(&s) & ANOMALY_ENCRYPTION, 0);

    /* the baseline: data that already did not compress 40% of the time still counts, 40.01% not */
    s.changed_bytes = 10 * MIB;
    s.incompressible_changed_bytes = 10 * MIB;
    for (int i = 0; i < 8; i++) {
        recent[i].read_bytes = 10000;
        recent[i].incompressible_read_bytes = 4000;
    }
    assert_int_equal(check(&s) & ANOMALY_ENCRYPTION, ANOMALY_ENCRYPTION);
    for (int i = 0; i < 8; i++)
        recent[i].incompressible_read_bytes = 4001;
    assert_int_equal(check(&s) & ANOMALY_ENCRYPTION, 0);

    /* no recent snapshot read anything: no baseline, no verdict */
    for (int i = 0; i < 8; i++)
        recent[i].read_bytes = recent[i].incompressible_read_bytes = 0;
    assert_int_equal(check(&s) & ANOMALY_ENCRYPTION, 0);
}

static void test_growth_threshold(void **state)
{
    history();
    struct anomaly_stats s = quiet();
    s.new_bytes = GIB; /* the floor; 10 x 5 MiB is far below */
    assert_int_equal(check(&s) & ANOMALY_GROWTH, ANOMALY_GROWTH);
    s.new_bytes = GIB - 1;
    assert_int_equal(check(&s) & ANOMALY_GROWTH, 0);
    /* a host that usually adds 200 MiB: 10 x is 2,000 MiB */
    for (int i = 0; i < 8; i++)
        recent[i].new_bytes = 200 * MIB;
    s.new_bytes = 2000 * MIB;
    assert_int_equal(check(&s) & ANOMALY_GROWTH, ANOMALY_GROWTH);
    s.new_bytes = 2000 * MIB - 1;
    assert_int_equal(check(&s) & ANOMALY_GROWTH, 0);
}

static void test_median_of_recent(void **state)
{
    history();
    /* seven values, the median is the 4th smallest; an eighth is not read */
    uint64_t nb[8] = {1, 900, 3, 800, 5, 700, 100, 1000000};
    for (int i = 0; i < 8; i++)
        recent[i].new_bytes = nb[i] * MIB;
    struct anomaly_stats s = quiet();
    s.new_bytes = 1000 * MIB; /* 10 x 100 MiB */
    th.growth_min_bytes = 1;
    assert_int_equal(anomaly_check(&th, &s, recent, 8, &rep) & ANOMALY_GROWTH, ANOMALY_GROWTH);
    s.new_bytes = 1000 * MIB - 1;
    assert_int_equal(anomaly_check(&th, &s, recent, 8, &rep) & ANOMALY_GROWTH, 0);
    /* four values: the lower median (3 of 1, 3, 5, 900) */
    s.new_bytes = 30 * MIB;
    assert_int_equal(anomaly_check(&th, &s, recent, 4, &rep) & ANOMALY_GROWTH, ANOMALY_GROWTH);
    s.new_bytes = 30 * MIB - 1;
    assert_int_equal(anomaly_check(&th, &s, recent, 4, &rep) & ANOMALY_GROWTH, 0);
    /* the parent alone is its own median */
    s.new_bytes = 10 * MIB;
    assert_int_equal(anomaly_check(&th, &s, recent, 1, &rep) & ANOMALY_GROWTH, ANOMALY_GROWTH);
}

/* The cases on a 1,000-file, 100 MiB tree of text. */
static void test_ransomware_deletion_and_edits(void **state)
{
    history();
    /* 30% of the files encrypted in place (openssl enc) */
    struct anomaly_stats s = quiet();
    s.new_files = 0;
    s.changed_files = 300;
    s.deleted_files = 0;
    s.changed_bytes = s.read_bytes = 30 * MIB;
    s.incompressible_changed_bytes = s.incompressible_read_bytes = 30 * MIB;
    s.new_bytes = 30 * MIB;
    assert_int_equal(check(&s), ANOMALY_MASS_CHANGE | ANOMALY_ENCRYPTION);

    /* 40% deleted */
    s = quiet();
    s.changed_files = 0;
    s.deleted_files = 400;
    s.files = 600;
    s.bytes = 60 * MIB;
    s.read_bytes = s.changed_bytes = s.new_bytes = 0;
    s.incompressible_read_bytes = s.incompressible_changed_bytes = 0;
    assert_int_equal(check(&s), ANOMALY_MASS_CHANGE | ANOMALY_DELETION_SPIKE | ANOMALY_SHRINK);
    char line[1024];
    anomaly_report_format(&rep, line, sizeof(line));
    assert_non_null(strstr(line, "mass-change: 400 of the parent's 1000 files"));
    assert_non_null(strstr(line, "; deletion-spike: 400 of the parent's 1000 files deleted"));
    assert_non_null(strstr(line, "; shrink: 600 files"));

    /* 1% edited */
    s = quiet();
    s.changed_files = 10;
    s.changed_bytes = s.read_bytes = MIB;
    s.incompressible_changed_bytes = s.incompressible_read_bytes = MIB / 10;
    assert_int_equal(check(&s), 0);
    anomaly_report_format(&rep, line, sizeof(line));
    assert_string_equal(line, "");
}

static void test_report_format_truncates(void **state)
{
    history();
    struct anomaly_stats s = quiet();
    s.changed_files = 0;
    s.deleted_files = 400;
    s.files = 600;
    check(&s);
    char small[20];
    anomaly_report_format(&rep, small, sizeof(small));
    assert_true(strlen(small) < sizeof(small));
    assert_int_equal(strncmp(small, "mass-change: 400", 16), 0);
    anomaly_report_format(&rep, small, 0); /* no room at all: nothing written */
}

static void test_huge_counts_do_not_overflow(void **state)
{
    history();
    for (int i = 0; i < 8; i++) {
        recent[i].files = UINT64_MAX;
        recent[i].bytes = UINT64_MAX;
        recent[i].new_bytes = UINT64_MAX;
    }
    struct anomaly_stats s = quiet();
    s.files = UINT64_MAX;
    s.bytes = UINT64_MAX;
    s.changed_files = UINT64_MAX / 2;
    s.deleted_files = UINT64_MAX / 2;
    s.new_bytes = UINT64_MAX;
    /* 2^64-2 changed or deleted of 2^64-1 files: mass change; nothing else */
    assert_int_equal(check(&s), ANOMALY_MASS_CHANGE | ANOMALY_DELETION_SPIKE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_ranges),
        cmocka_unit_test(test_thresholds_by_name),
        cmocka_unit_test(test_no_parent_nothing_fires),
        cmocka_unit_test(test_quiet_snapshot),
        cmocka_unit_test(test_mass_change_threshold),
        cmocka_unit_test(test_deletion_spike_threshold),
        cmocka_unit_test(test_shrink_threshold),
        cmocka_unit_test(test_encryption_threshold),
        cmocka_unit_test(test_growth_threshold),
        cmocka_unit_test(test_median_of_recent),
        cmocka_unit_test(test_ransomware_deletion_and_edits),
        cmocka_unit_test(test_report_format_truncates),
        cmocka_unit_test(test_huge_counts_do_not_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
