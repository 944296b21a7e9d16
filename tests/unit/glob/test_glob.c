/*
 * Exclude patterns (docs/policy.md, "spec.exclude"): anchored and unanchored, "*", "?",
 * classes, escapes, "**" at each place, directories only, and every error of glob_check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "glob/glob.h"

static void match(const char *pat, const char *path, bool is_dir, bool want)
{
    struct util_err err = {0};
    if (glob_check(pat, strlen(pat), &err) != 0)
        fail_msg("%s: %s", pat, err.msg);
    if (glob_match(pat, path, is_dir) != want)
        fail_msg("%s against %s%s: want %s", pat, path, is_dir ? " (dir)" : "",
                 want ? "a match" : "none");
}

static void test_anchored(void **state)
{
    match("/var/log", "/var/log", true, true);
    match("/var/log", "/x/var/log", true, false);
    match("/var/log", "/var/log/syslog", false, false); /* the walk skips what is under it */
    match("/var/*/x", "/var/a/x", false, true);
    match("/var/*/x", "/var/a/b/x", false, false);
    match("/var/**/x", "/var/x", false, true);
    match("/var/**/x", "/var/a/b/x", false, true);
    match("/var/**", "/var/a/b", false, true);
    match("/var/**", "/var", true, true);
    match("/**/core", "/a/b/core", false, true);
    match("/a/**/b/**/c", "/a/x/b/y/z/c", false, true);
    match("/a/**/b/**/c", "/a/x/c", false, false);
}

static void test_unanchored(void **state)
{
    match("*.tmp", "/a/b/x.tmp", false, true);
    match("*.tmp", "/x.tmp", false, true);
    match("*.tmp", "/a/x.tmpl", false, false);
    match("cache/*.bin", "/var/cache/a.bin", false, true);
    match("cache/*.bin", "/var/cache/sub/a.bin", false, false);
    match("node_modules", "/home/u/p/node_modules", true, true);
    match("**/x", "/x", false, true);
}

static void test_characters(void **state)
{
    match("/a/?.log", "/a/1.log", false, true);
    match("/a/?.log", "/a/12.log", false, false);
    match("/a/?.log", "/a/\xc3\xa9.log", false, true); /* one character, two bytes */
    match("/a/[0-9].log", "/a/7.log", false, true);
    match("/a/[0-9].log", "/a/x.log", false, false);
    match("/a/[!0-9].log", "/a/x.log", false, true);
    match("/a/[^0-9].log", "/a/7.log", false, false);
    match("/a/[]x]", "/a/]", false, true);
    match("/a/\\*", "/a/*", false, true);
    match("/a/\\*", "/a/b", false, false);
    match("/a/b*c*d", "/a/bxxcyyd", false, true);
    match("/a/b*c*d", "/a/bxxcyy", false, false);
    match("/a/*", "/a/.hidden", false, true); /* a dot is an ordinary character */
    match("/a/x\\y", "/a/xy", false, true);
    match("/a/x", "/a/x\\y", false, false);
}

static void test_directories_only(void **state)
{
    match("tmp/", "/var/tmp", true, true);
    match("tmp/", "/var/tmp", false, false);
    match("/var/tmp/", "/var/tmp", true, true);
}

static void bad(const char *pat, const char *needle)
{
    struct util_err err = {0};
    assert_int_equal(glob_check(pat, strlen(pat), &err), UTIL_EINVAL);
    if (strstr(err.msg, needle) == NULL)
        fail_msg("%s: %s (want %s)", pat, err.msg, needle);
}

static void test_check(void **state)
{
    bad("", "empty");
    bad("/", "exclude everything");
    bad("/a//b", "empty component");
    bad("/a/../b", "\"..\"");
    bad("./a", "\".\"");
    bad("/a/[bc", "not closed");
    bad("/a/b\\", "escapes nothing");
    bad("/a/x**", "whole component");
    bad("/**/**/**/**/**/x", "more than 4");
    assert_int_equal(glob_check("a\0b", 3, &(struct util_err){0}), UTIL_EINVAL);
    struct util_err err = {0};
    assert_int_equal(glob_check("/**/**/**/**/x", 14, &err), 0);
    assert_int_equal(glob_check("a/", 2, &err), 0);
}

static void test_can_match_under(void **state)
{
    assert_true(glob_can_match_under("*.tmp", "/etc"));
    assert_true(glob_can_match_under("/etc/x", "/etc"));
    assert_true(glob_can_match_under("/etc", "/etc"));
    assert_true(glob_can_match_under("/var/*/x", "/var/lib"));
    assert_true(glob_can_match_under("/var/lib/x", "/var"));
    assert_true(glob_can_match_under("/**/x", "/etc"));
    assert_false(glob_can_match_under("/opt/x", "/etc"));
    assert_false(glob_can_match_under("/var", "/var/lib"));
    assert_false(glob_can_match_under("/var/log/**", "/var/lib"));
    assert_true(glob_can_match_under("/anything", "/"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anchored),   cmocka_unit_test(test_unanchored),
        cmocka_unit_test(test_characters), cmocka_unit_test(test_directories_only),
        cmocka_unit_test(test_check),      cmocka_unit_test(test_can_match_under),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
