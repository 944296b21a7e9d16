/*
 * tz: the database, names, loading, links, UTC and extreme inputs. The zones of the
 * page are tested on pinned fixtures (test_tz_fixtures.c), because the machine's
 * tzdata changes between releases (2026f moved Cuba's autumn 2026 transition).
 */
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tz/tz_test.h"

static void test_db_open_default_and_version(void **state)
{
    struct tz_db *db = NULL;
    struct util_err err = {0};
    unsetenv("LODE_ZONEINFO");
    assert_int_equal(tz_db_open(&db, NULL, &err), 0);
    assert_string_equal(tz_db_dir(db), TZ_DEFAULT_DIR);
    /* The version is the word after "# version " on tzdata.zi's first line. */
    size_t len;
    unsigned char *zi = slurp(TZ_DEFAULT_DIR "/tzdata.zi", &len);
    char expect[32] = {0};
    assert_int_equal(sscanf((char *)zi, "# version %31s", expect), 1);
    assert_string_equal(tz_db_version(db), expect);
    free(zi);
    tz_db_close(db);
}

static char *make_dir(void)
{
    char tmpl[] = "/tmp/lode-tz-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return util_strdup(d);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char *path = util_asprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(path);
}

static void remove_file(const char *dir, const char *name)
{
    char *path = util_asprintf("%s/%s", dir, name);
    unlink(path);
    free(path);
}

static void test_db_env_and_version_sources(void **state)
{
    struct tz_db *db = NULL;
    struct util_err err = {0};
    char *dir = make_dir();

    /* LODE_ZONEINFO is used when dir is NULL; no version file gives "unknown". */
    setenv("LODE_ZONEINFO", dir, 1);
    assert_int_equal(tz_db_open(&db, NULL, &err), 0);
    assert_string_equal(tz_db_dir(db), dir);
    assert_string_equal(tz_db_version(db), "unknown");
    tz_db_close(db);

    /* +VERSION when there is no tzdata.zi. */
    write_file(dir, "+VERSION", "2024a\n");
    assert_int_equal(tz_db_open(&db, dir, &err), 0);
    assert_string_equal(tz_db_version(db), "2024a");
    tz_db_close(db);

    /* tzdata.zi wins over +VERSION. */
    write_file(dir, "tzdata.zi", "# version 2025b\n# redistributable\nL Europe/Kyiv X\n");
    assert_int_equal(tz_db_open(&db, dir, &err), 0);
    assert_string_equal(tz_db_version(db), "2025b");
    tz_db_close(db);

    /* A tzdata.zi without the version line falls back to +VERSION; garbage gives unknown. */
    write_file(dir, "tzdata.zi", "Z Foo 0 - UTC\n");
    write_file(dir, "+VERSION", "\"2024a\"\n");
    assert_int_equal(tz_db_open(&db, dir, &err), 0);
    assert_string_equal(tz_db_version(db), "unknown");
    tz_db_close(db);
    write_file(dir, "+VERSION", "2023c");
    assert_int_equal(tz_db_open(&db, dir, &err), 0);
    assert_string_equal(tz_db_version(db), "2023c");
    tz_db_close(db);

    unsetenv("LODE_ZONEINFO");
    remove_file(dir, "tzdata.zi");
    remove_file(dir, "+VERSION");
    rmdir(dir);
    free(dir);
}

static void test_db_missing_directory(void **state)
{
    struct tz_db *db = (struct tz_db *)1;
    struct util_err err = {0};
    assert_int_equal(tz_db_open(&db, "/nonexistent/zoneinfo", &err), UTIL_ENOENT);
    assert_null(db);
    assert_non_null(strstr(err.msg, "/nonexistent/zoneinfo"));
    assert_non_null(strstr(err.msg, "LODE_ZONEINFO"));
    /* A file is not a directory. */
    assert_int_equal(tz_db_open(&db, TZ_DEFAULT_DIR "/UTC", &err), UTIL_ENOENT);
    assert_non_null(strstr(err.msg, "not a directory"));
    assert_int_equal(tz_db_open(&db, "", &err), UTIL_EINVAL);
}

static void test_name_check(void **state)
{
    struct util_err err = {0};
    const char *good[] = {"UTC",
                          "Europe/Kyiv",
                          "Europe/Kiev",
                          "America/Argentina/Buenos_Aires",
                          "Etc/GMT+5",
                          "Etc/GMT-14",
                          "America/Port-au-Prince",
                          "EST5EDT"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(tz_name_check(good[i], &err), 0);

    struct {
        const char *name, *says;
    } bad[] = {
        {"", "empty"},
        {"/etc/localtime", "not a path"},
        {"../etc/passwd", "'.'"},
        {"Europe/../../etc", "'.'"},
        {"right/Europe/Kyiv", "right/ and posix/"},
        {"posix/Europe/Kyiv", "right/ and posix/"},
        {"Europe//Kyiv", "empty component"},
        {"Europe/", "empty component"},
        {"Europe/Ky iv", "0x20"},
        {"Europe\\Kyiv", "0x5c"},
        {"zone.tab", "'.'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(tz_name_check(bad[i].name, &err), UTIL_EINVAL);
        if (strstr(err.msg, bad[i].says) == NULL)
            fail_msg("%s: %s", bad[i].name, err.msg);
    }
    char longname[300];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(tz_name_check(longname, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "255"));
    longname[255] = '\0';
    assert_int_equal(tz_name_check(longname, &err), 0);
}

static void test_zone_load_errors(void **state)
{
    struct tz_db *db = NULL;
    struct tz_zone *z = (struct tz_zone *)1;
    struct util_err err = {0};
    assert_int_equal(tz_db_open(&db, TZ_DEFAULT_DIR, &err), 0);

    assert_int_equal(tz_zone_load(&z, db, "Mars/Olympus_Mons", &err), UTIL_ENOENT);
    assert_null(z);
    assert_non_null(strstr(err.msg, "unknown time zone \"Mars/Olympus_Mons\""));
    assert_int_equal(tz_zone_load(&z, db, "America/New_Yrok", &err), UTIL_ENOENT);
    assert_non_null(strstr(err.msg, "did you mean \"America/New_York\"?"));
    /* A directory is not a zone. */
    assert_int_equal(tz_zone_load(&z, db, "Europe", &err), UTIL_ENOENT);
    assert_non_null(strstr(err.msg, "unknown time zone \"Europe\""));
    assert_int_equal(tz_db_check_zone(db, "Europe", &err), UTIL_ENOENT);
    assert_int_equal(tz_zone_load(&z, db, "right/Europe/Kyiv", &err), UTIL_EINVAL);
    assert_int_equal(tz_zone_load(&z, db, "posix/Europe/Kyiv", &err), UTIL_EINVAL);
    assert_int_equal(tz_zone_load(&z, db, "../zoneinfo/UTC", &err), UTIL_EINVAL);
    assert_int_equal(tz_zone_load(&z, db, "/usr/share/zoneinfo/UTC", &err), UTIL_EINVAL);
    assert_int_equal(tz_db_check_zone(db, "/etc/passwd", &err), UTIL_EINVAL);
    assert_int_equal(tz_db_check_zone(db, "Mars/Olympus_Mons", &err), UTIL_ENOENT);
    assert_non_null(strstr(err.msg, "unknown time zone"));
    assert_int_equal(tz_db_check_zone(db, "Europe/Kiev", &err), 0);
    assert_int_equal(tz_db_check_zone(db, "UTC", &err), 0);
    tz_db_close(db);
}

static void test_zone_load_links(void **state)
{
    struct tz_db *db = NULL;
    struct tz_zone *kiev = NULL, *kyiv = NULL;
    struct util_err err = {0};
    assert_int_equal(tz_db_open(&db, TZ_DEFAULT_DIR, &err), 0);
    assert_int_equal(tz_zone_load(&kiev, db, "Europe/Kiev", &err), 0);
    assert_int_equal(tz_zone_load(&kyiv, db, "Europe/Kyiv", &err), 0);
    assert_string_equal(tz_zone_name(kiev), "Europe/Kiev");
    for (int64_t t = civil(1900, 1, 1, 0, 0); t < civil(2100, 1, 1, 0, 0); t += 86400 * 7 + 3601)
        assert_int_equal(tz_offset_at(kiev, t), tz_offset_at(kyiv, t));
    tz_zone_free(kiev);
    tz_zone_free(kyiv);
    tz_db_close(db);
}

/* A directory with a copy of Kyiv and a tzdata.zi that links other names to it. */
static void test_zone_load_links_from_tzdata_zi(void **state)
{
    struct tz_db *db = NULL;
    struct tz_zone *z = NULL;
    struct util_err err = {0};
    char *dir = make_dir();
    size_t len;
    unsigned char *kyiv = slurp(TZ_DEFAULT_DIR "/Europe/Kyiv", &len);
    char *path = util_asprintf("%s/Kyiv", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(kyiv, 1, len, f), len);
    fclose(f);
    free(path);
    free(kyiv);
    write_file(dir, "tzdata.zi",
               "# version 2099z\nZ Kyiv 2 - EET\nL Kyiv Kiev\nL Kiev Old_Kiev\n"
               "L ../etc/passwd Evil\nL Loop1 Loop2\nL Loop2 Loop1\nL Kyiv\n");
    write_file(dir, "leapseconds", "# not a TZif file\n");

    assert_int_equal(tz_db_open(&db, dir, &err), 0);
    assert_string_equal(tz_db_version(db), "2099z");
    assert_int_equal(tz_zone_load(&z, db, "Kiev", &err), 0);
    assert_int_equal(tz_offset_at(z, civil(2026, 7, 1, 0, 0)), 3 * 3600);
    assert_string_equal(tz_zone_name(z), "Kiev");
    tz_zone_free(z);
    /* A link to a link. */
    assert_int_equal(tz_zone_load(&z, db, "Old_Kiev", &err), 0);
    tz_zone_free(z);
    /* A link whose target is not a valid name, a loop, a file that is not TZif. */
    assert_int_equal(tz_zone_load(&z, db, "Evil", &err), UTIL_ENOENT);
    assert_int_equal(tz_zone_load(&z, db, "Loop1", &err), UTIL_ENOENT);
    assert_non_null(strstr(err.msg, "unknown time zone \"Loop1\""));
    assert_int_equal(tz_zone_load(&z, db, "leapseconds", &err), UTIL_ENOENT);
    assert_non_null(strstr(err.msg, "not a TZif file"));
    assert_int_equal(tz_db_check_zone(db, "leapseconds", &err), UTIL_ENOENT);
    assert_int_equal(tz_db_check_zone(db, "Old_Kiev", &err), 0);
    /* A near miss gets a suggestion from tzdata.zi's zone and link names. */
    assert_int_equal(tz_zone_load(&z, db, "Kiew", &err), UTIL_ENOENT);
    assert_non_null(strstr(err.msg, "did you mean \"Kiev\"?"));
    assert_int_equal(tz_db_check_zone(db, "Kyv", &err), UTIL_ENOENT);
    assert_non_null(strstr(err.msg, "did you mean \"Kyiv\"?"));
    assert_int_equal(tz_zone_load(&z, db, "Nowhere_At_All", &err), UTIL_ENOENT);
    assert_null(strstr(err.msg, "did you mean"));
    /* A FIFO is not a zone, and reading it must not block. */
    char *fifo = util_asprintf("%s/Pipe", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(tz_zone_load(&z, db, "Pipe", &err), UTIL_ENOENT);
    unlink(fifo);
    free(fifo);
    tz_db_close(db);

    remove_file(dir, "Kyiv");
    remove_file(dir, "tzdata.zi");
    remove_file(dir, "leapseconds");
    rmdir(dir);
    free(dir);
}

static void test_utc(void **state)
{
    struct tz_zone *z = tz_zone_utc();
    struct tz_local r;
    assert_string_equal(tz_zone_name(z), "UTC");
    assert_int_equal(tz_offset_at(z, 0), 0);
    assert_int_equal(tz_offset_at(z, INT64_MIN), 0);
    assert_int_equal(tz_offset_at(z, INT64_MAX), 0);
    assert_string_equal(tz_abbrev_at(z, 1234567890), "UTC");
    assert_true(tz_next_transition(z, 0) == INT64_MAX);
    tz_resolve_local(z, civil(2026, 3, 29, 3, 30), &r);
    assert_int_equal(r.kind, TZ_LOCAL_UNIQUE);
    assert_true(r.at[0] == civil(2026, 3, 29, 3, 30));
    tz_zone_free(z);
    tz_zone_free(NULL);
}

static void test_no_dst_zone(void **state)
{
    struct tz_zone *z = load_system_zone("Asia/Tokyo");
    int64_t last = tz_next_transition(z, civil(1960, 1, 1, 0, 0));
    assert_true(last == INT64_MAX);
    assert_int_equal(tz_offset_at(z, civil(2300, 1, 1, 0, 0)), 9 * 3600);
    expect_local(z, civil(2026, 3, 29, 3, 30), TZ_LOCAL_UNIQUE, civil(2026, 3, 28, 18, 30), 0);
    tz_zone_free(z);
}

/* Extreme inputs never overflow and keep the answers consistent. */
static void test_extreme_instants(void **state)
{
    struct tz_zone *z = load_system_zone("Europe/Kyiv");
    struct tz_local r;
    int64_t ext[] = {INT64_MIN,          INT64_MIN + 1, -((int64_t)1 << 62),
                     ((int64_t)1 << 62), INT64_MAX - 1, INT64_MAX};
    for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
        int32_t off = tz_offset_at(z, ext[i]);
        assert_true(off >= 0 && off <= 4 * 3600);
        tz_resolve_local(z, ext[i], &r);
        assert_true(r.kind != TZ_LOCAL_GAP || r.at[0] != INT64_MIN);
        (void)tz_next_transition(z, ext[i]);
        (void)tz_abbrev_at(z, ext[i]);
    }
    assert_true(tz_next_transition(z, INT64_MAX) == INT64_MAX);
    /* Before any transition: local mean time, +2:02:04. */
    assert_int_equal(tz_offset_at(z, INT64_MIN), 2 * 3600 + 2 * 60 + 4);
    tz_zone_free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_db_open_default_and_version),
        cmocka_unit_test(test_db_env_and_version_sources),
        cmocka_unit_test(test_db_missing_directory),
        cmocka_unit_test(test_name_check),
        cmocka_unit_test(test_zone_load_errors),
        cmocka_unit_test(test_zone_load_links),
        cmocka_unit_test(test_zone_load_links_from_tzdata_zi),
        cmocka_unit_test(test_utc),
        cmocka_unit_test(test_no_dst_zone),
        cmocka_unit_test(test_extreme_instants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
