/*
 * The restore's target (agent/restore.h, rs_*) on a real directory: a non-empty
 * target is refused without overwrite; directories, files and symlinks land under
 * the target with their modes; a symlink already in the target is never followed
 * (a write through it would leave the target); a file is under its real name only
 * once committed.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/agent.h"

struct fx {
    char dir[64];     /* the test's temporary directory */
    char target[128]; /* dir/target */
    char outside[128];
};

static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof(*x));
    snprintf(x->dir, sizeof(x->dir), "/tmp/lode-rsfs-XXXXXX");
    assert_non_null(mkdtemp(x->dir));
    snprintf(x->target, sizeof(x->target), "%s/target", x->dir);
    snprintf(x->outside, sizeof(x->outside), "%s/outside", x->dir);
    assert_int_equal(mkdir(x->outside, 0755), 0);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct fx *x = *state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", x->dir);
    assert_int_equal(system(cmd), 0);
    free(x);
    return 0;
}

static struct repo_file rec(const char *path, enum repo_ftype type, uint32_t mode)
{
    struct repo_file f;
    memset(&f, 0, sizeof(f));
    f.path = (char *)path;
    f.type = type;
    f.mode = mode;
    f.uid = (uint32_t)getuid();
    f.gid = (uint32_t)getgid();
    f.mtime_sec = 1700000000;
    return f;
}

static void count_fail_cb(const char *msg, void *arg)
{
    (*(int *)arg)++;
}

static void test_a_non_empty_target_needs_overwrite(void **state)
{
    struct fx *x = *state;
    struct rs_target t;
    struct util_err err = {0};
    char p[192];

    assert_int_equal(mkdir(x->target, 0755), 0);
    snprintf(p, sizeof(p), "%s/already", x->target);
    close(open(p, O_CREAT | O_WRONLY, 0600));
    assert_int_equal(rs_target_open(&t, x->target, false, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "--overwrite"));
    assert_int_equal(rs_target_open(&t, x->target, true, &err), 0);
    rs_target_close(&t);
}

static void test_entries_land_under_the_target(void **state)
{
    struct fx *x = *state;
    struct rs_target t;
    struct rs_tmpfile tf;
    struct util_err err = {0};
    struct stat sb;
    bool skipped = false;
    char p[192], buf[64];
    int failed = 0;

    assert_int_equal(rs_target_open(&t, x->target, false, &err), 0);
    struct repo_file d = rec("/etc", REPO_FT_DIR, 0750);
    assert_int_equal(rs_make_dir(&t, &d, &err), 0);
    struct repo_file l = rec("/etc/link", REPO_FT_SYMLINK, 0777);
    l.target = "hosts";
    assert_int_equal(rs_make_special(&t, &l, &skipped, &err), 0);
    assert_false(skipped);
    struct repo_file f = rec("/etc/hosts", REPO_FT_FILE, 0640);
    f.size = 5;
    assert_int_equal(rs_file_open(&t, &f, &tf, &err), 0);
    assert_int_equal(write(tf.fd, "hello", 5), 5);
    /* Not under its real name until committed. */
    snprintf(p, sizeof(p), "%s/etc/hosts", x->target);
    assert_int_not_equal(lstat(p, &sb), 0);
    assert_int_equal(rs_file_commit(&t, &f, &tf, &err), 0);
    assert_int_equal(rs_target_finish(&t, count_fail_cb, &failed), 0);
    assert_int_equal(failed, 0);
    rs_target_close(&t);

    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(sb.st_mode & 07777, 0640);
    assert_int_equal(sb.st_mtim.tv_sec, 1700000000);
    FILE *h = fopen(p, "r");
    assert_non_null(h);
    assert_int_equal(fread(buf, 1, sizeof(buf), h), 5);
    fclose(h);
    assert_memory_equal(buf, "hello", 5);
    snprintf(p, sizeof(p), "%s/etc/link", x->target);
    ssize_t n = readlink(p, buf, sizeof(buf));
    assert_int_equal(n, 5);
    assert_memory_equal(buf, "hosts", 5);
    /* Directories get their own mode at the end, once nothing more is written in. */
    snprintf(p, sizeof(p), "%s/etc", x->target);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0750);
}

static void test_a_symlink_in_the_target_is_not_followed(void **state)
{
    struct fx *x = *state;
    struct rs_target t;
    struct rs_tmpfile tf;
    struct util_err err = {0};
    char p[192];
    struct stat sb;

    /* The target holds etc -> outside (made by someone else, or an earlier restore). */
    assert_int_equal(mkdir(x->target, 0755), 0);
    snprintf(p, sizeof(p), "%s/etc", x->target);
    assert_int_equal(symlink(x->outside, p), 0);
    assert_int_equal(rs_target_open(&t, x->target, true, &err), 0);
    struct repo_file f = rec("/etc/passwd", REPO_FT_FILE, 0644);
    int rc = rs_file_open(&t, &f, &tf, &err);
    if (rc == 0)
        rc = rs_file_commit(&t, &f, &tf, &err);
    rs_target_close(&t);
    /* Whatever became of the entry, nothing was written outside the target. */
    snprintf(p, sizeof(p), "%s/passwd", x->outside);
    assert_int_not_equal(lstat(p, &sb), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_non_empty_target_needs_overwrite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entries_land_under_the_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_symlink_in_the_target_is_not_followed, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
