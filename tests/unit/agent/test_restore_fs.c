/*
 * The restore's target (agent/restore.h, rs_*) on a real directory: a non-empty
 * target is refused without overwrite; directories, files and symlinks land under
 * the target with their modes; a symlink already in the target is never followed
 * (a write through it would leave the target); a file is under its real name only
 * once committed; set-id bits, device nodes and security.* and trusted.* xattrs are
 * withheld unless asked for, and counted; sockets and FIFOs are made.
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
#include <sys/sysmacros.h>
#include <sys/xattr.h>
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
    assert_int_equal(rs_target_open(&t, x->target, &(struct rs_opts){0}, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "--overwrite"));
    assert_int_equal(rs_target_open(&t, x->target, &(struct rs_opts){.overwrite = true}, &err), 0);
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

    assert_int_equal(rs_target_open(&t, x->target, &(struct rs_opts){0}, &err), 0);
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
    assert_int_equal(rs_target_open(&t, x->target, &(struct rs_opts){.overwrite = true}, &err), 0);
    struct repo_file f = rec("/etc/passwd", REPO_FT_FILE, 0644);
    int rc = rs_file_open(&t, &f, &tf, &err);
    if (rc == 0)
        rc = rs_file_commit(&t, &f, &tf, &err);
    rs_target_close(&t);
    /* Whatever became of the entry, nothing was written outside the target. */
    snprintf(p, sizeof(p), "%s/passwd", x->outside);
    assert_int_not_equal(lstat(p, &sb), 0);
}

/* A directory kept under --overwrite whose name is a symlink: replaced by a directory,
 * and the mode of what the symlink points to is never touched. */
static void test_a_kept_directory_symlink_is_not_chmodded(void **state)
{
    struct fx *x = *state;
    struct rs_target t;
    struct util_err err = {0};
    char p[192];
    struct stat sb;
    int failed = 0;

    assert_int_equal(chmod(x->outside, 0500), 0);
    assert_int_equal(mkdir(x->target, 0755), 0);
    snprintf(p, sizeof(p), "%s/etc", x->target);
    assert_int_equal(symlink(x->outside, p), 0);
    assert_int_equal(rs_target_open(&t, x->target, &(struct rs_opts){.overwrite = true}, &err), 0);
    struct repo_file d = rec("/etc", REPO_FT_DIR, 0751);
    assert_int_equal(rs_make_dir(&t, &d, &err), 0);
    assert_int_equal(rs_target_finish(&t, count_fail_cb, &failed), 0);
    rs_target_close(&t);
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(sb.st_mode & 07777, 0751);
    assert_int_equal(stat(x->outside, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0500);
    /* A real directory kept there, without our bits, is made writable through its
     * descriptor and gets its own mode at the end. */
    assert_int_equal(chmod(p, 0500), 0);
    assert_int_equal(rs_target_open(&t, x->target, &(struct rs_opts){.overwrite = true}, &err), 0);
    assert_int_equal(rs_make_dir(&t, &d, &err), 0);
    struct repo_file f = rec("/etc/fifo", REPO_FT_FIFO, 0640);
    bool skipped;
    assert_int_equal(rs_make_special(&t, &f, &skipped, &err), 0);
    assert_int_equal(rs_target_finish(&t, count_fail_cb, &failed), 0);
    rs_target_close(&t);
    assert_int_equal(failed, 0);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0751);
}

/* Restores one file with set-id bits and xattrs, a FIFO, a socket and a device under
 * opts; returns the target's paths through p. */
static void restore_privileged(struct fx *x, const struct rs_opts *o, struct rs_target *t)
{
    struct rs_tmpfile tf;
    struct util_err err = {0};
    bool skipped = false;
    int failed = 0;
    static uint8_t cap[] = "v", trusted[] = "t", user[] = "u";
    struct repo_xattr xs[] = {
        {"security.lode", cap, 1}, {"trusted.lode", trusted, 1}, {"user.lode", user, 1}};

    assert_int_equal(rs_target_open(t, x->target, o, &err), 0);
    struct repo_file d = rec("/bin", REPO_FT_DIR, 02755);
    assert_int_equal(rs_make_dir(t, &d, &err), 0);
    struct repo_file f = rec("/bin/su", REPO_FT_FILE, 04755);
    f.xattrs = xs;
    f.nxattrs = 3;
    assert_int_equal(rs_file_open(t, &f, &tf, &err), 0);
    assert_int_equal(rs_file_commit(t, &f, &tf, &err), 0);
    struct repo_file p = rec("/bin/fifo", REPO_FT_FIFO, 0620);
    assert_int_equal(rs_make_special(t, &p, &skipped, &err), 0);
    assert_false(skipped);
    struct repo_file so = rec("/bin/sock", REPO_FT_SOCKET, 0660);
    assert_int_equal(rs_make_special(t, &so, &skipped, &err), 0);
    assert_false(skipped);
    struct repo_file dev = rec("/bin/null", REPO_FT_CHAR, 0666);
    dev.rdev = makedev(1, 3);
    assert_int_equal(rs_make_special(t, &dev, &skipped, &err), 0);
    assert_int_equal(skipped, !(o->devices && getuid() == 0));
    assert_int_equal(rs_target_finish(t, count_fail_cb, &failed), 0);
    assert_int_equal(failed, 0);
}

static void test_privileges_are_withheld_unless_asked(void **state)
{
    struct fx *x = *state;
    struct rs_target t;
    struct stat sb;
    char p[192], v[8];

    restore_privileged(x, &(struct rs_opts){0}, &t);
    assert_int_equal(t.setid_withheld, 2);
    if (getuid() == 0) {
        assert_int_equal(t.devices_withheld, 1);
        assert_int_equal(t.xattrs_withheld, 2);
    }
    rs_target_close(&t);
    snprintf(p, sizeof(p), "%s/bin/su", x->target);
    assert_int_equal(lstat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0755);
    assert_int_equal(lgetxattr(p, "trusted.lode", v, sizeof(v)), -1);
    assert_int_equal(lgetxattr(p, "security.lode", v, sizeof(v)), -1);
    snprintf(p, sizeof(p), "%s/bin", x->target);
    assert_int_equal(lstat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0755);
    snprintf(p, sizeof(p), "%s/bin/null", x->target);
    assert_int_not_equal(lstat(p, &sb), 0);
    snprintf(p, sizeof(p), "%s/bin/fifo", x->target);
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    assert_int_equal(sb.st_mode & 07777, 0620);
    snprintf(p, sizeof(p), "%s/bin/sock", x->target);
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISSOCK(sb.st_mode));
    assert_int_equal(sb.st_mode & 07777, 0660);
}

static void test_privileges_restored_when_asked(void **state)
{
    struct fx *x = *state;
    struct rs_target t;
    struct stat sb;
    char p[192], v[8];

    restore_privileged(x, &(struct rs_opts){.setid = true, .devices = true, .system_xattrs = true},
                       &t);
    assert_int_equal(t.setid_withheld + t.devices_withheld + t.xattrs_withheld, 0);
    rs_target_close(&t);
    snprintf(p, sizeof(p), "%s/bin/su", x->target);
    assert_int_equal(lstat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 04755);
    snprintf(p, sizeof(p), "%s/bin", x->target);
    assert_int_equal(lstat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 02755);
    if (getuid() != 0)
        return; /* devices and system xattrs need root */
    snprintf(p, sizeof(p), "%s/bin/su", x->target);
    assert_int_equal(lgetxattr(p, "trusted.lode", v, sizeof(v)), 1);
    snprintf(p, sizeof(p), "%s/bin/null", x->target);
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
    assert_int_equal(sb.st_rdev, makedev(1, 3));
    assert_int_equal(sb.st_mode & 07777, 0666);
}

/* A hard link shares the inode of the entry it names, across directories and over an
 * entry already there; one whose entry was not made, or is of another type, is refused. */
static void test_hard_links_share_the_inode(void **state)
{
    struct fx *x = *state;
    struct rs_target t;
    struct rs_tmpfile tf;
    struct util_err err = {0};
    struct stat s1, s2;
    char p1[192], p2[192];
    bool skipped;
    int failed = 0;

    assert_int_equal(mkdir(x->target, 0755), 0);
    snprintf(p2, sizeof(p2), "%s/d", x->target);
    assert_int_equal(mkdir(p2, 0755), 0);
    snprintf(p2, sizeof(p2), "%s/d/b", x->target);
    close(open(p2, O_CREAT | O_WRONLY, 0600)); /* in the way: replaced */
    assert_int_equal(rs_target_open(&t, x->target, &(struct rs_opts){.overwrite = true}, &err), 0);
    struct repo_file a = rec("/a", REPO_FT_FILE, 0640);
    assert_int_equal(rs_file_open(&t, &a, &tf, &err), 0);
    assert_int_equal(write(tf.fd, "ab", 2), 2);
    assert_int_equal(rs_file_commit(&t, &a, &tf, &err), 0);
    struct repo_file d = rec("/d", REPO_FT_DIR, 0755);
    assert_int_equal(rs_make_dir(&t, &d, &err), 0);
    struct repo_file b = rec("/d/b", REPO_FT_FILE, 0640);
    b.link = "/a";
    assert_int_equal(rs_make_link(&t, &b, &err), 0);
    struct repo_file p = rec("/d/p", REPO_FT_FIFO, 0600);
    assert_int_equal(rs_make_special(&t, &p, &skipped, &err), 0);
    struct repo_file q = rec("/d/q", REPO_FT_FIFO, 0600);
    q.link = "/d/p";
    assert_int_equal(rs_make_link(&t, &q, &err), 0);
    struct repo_file missing = rec("/d/r", REPO_FT_FILE, 0600);
    missing.link = "/a-never-made";
    assert_int_equal(rs_make_link(&t, &missing, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "was not restored"));
    struct repo_file other = rec("/d/s", REPO_FT_FIFO, 0600);
    other.link = "/a";
    assert_int_equal(rs_make_link(&t, &other, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "not what the snapshot says"));
    assert_int_equal(rs_target_finish(&t, count_fail_cb, &failed), 0);
    rs_target_close(&t);
    snprintf(p1, sizeof(p1), "%s/a", x->target);
    assert_int_equal(lstat(p1, &s1), 0);
    assert_int_equal(lstat(p2, &s2), 0);
    assert_int_equal(s1.st_ino, s2.st_ino);
    assert_int_equal(s1.st_nlink, 2);
    assert_int_equal(s2.st_size, 2);
    snprintf(p1, sizeof(p1), "%s/d/p", x->target);
    snprintf(p2, sizeof(p2), "%s/d/q", x->target);
    assert_int_equal(lstat(p1, &s1), 0);
    assert_int_equal(lstat(p2, &s2), 0);
    assert_int_equal(s1.st_ino, s2.st_ino);
    snprintf(p2, sizeof(p2), "%s/d/r", x->target);
    assert_int_not_equal(lstat(p2, &s2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_non_empty_target_needs_overwrite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entries_land_under_the_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_symlink_in_the_target_is_not_followed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_kept_directory_symlink_is_not_chmodded, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_privileges_are_withheld_unless_asked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_privileges_restored_when_asked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hard_links_share_the_inode, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
