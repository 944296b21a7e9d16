/*
 * The scheduler lookup (agent/iosched.c) against a fake sysfs tree in a temporary
 * directory, laid out as the kernel's: dev/block/MAJ:MIN are symlinks into
 * devices/, a disk has queue/scheduler, a partition is a directory inside its
 * disk without one, and a device-mapper-like device has neither.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/agent.h"

struct fx {
    char dir[64];
};

static void fx_mkdir(const struct fx *f, const char *rel)
{
    char *p = util_asprintf("%s/%s", f->dir, rel);
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
}

static void fx_write(const struct fx *f, const char *rel, const char *text)
{
    char *p = util_asprintf("%s/%s", f->dir, rel);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    free(p);
}

static void fx_link(const struct fx *f, const char *target, const char *rel)
{
    char *p = util_asprintf("%s/%s", f->dir, rel);
    assert_int_equal(symlink(target, p), 0);
    free(p);
}

static int setup(void **state)
{
    struct fx *f = util_calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/lode-iosched-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    fx_mkdir(f, "dev");
    fx_mkdir(f, "dev/block");
    fx_mkdir(f, "devices");
    /* sda (8:0) with mq-deadline, its partition sda1 (8:1) */
    fx_mkdir(f, "devices/sda");
    fx_mkdir(f, "devices/sda/queue");
    fx_write(f, "devices/sda/queue/scheduler", "[mq-deadline] kyber bfq none\n");
    fx_mkdir(f, "devices/sda/sda1");
    fx_link(f, "../../devices/sda", "dev/block/8:0");
    fx_link(f, "../../devices/sda/sda1", "dev/block/8:1");
    /* sdb (8:16) with bfq */
    fx_mkdir(f, "devices/sdb");
    fx_mkdir(f, "devices/sdb/queue");
    fx_write(f, "devices/sdb/queue/scheduler", "mq-deadline kyber [bfq] none\n");
    fx_link(f, "../../devices/sdb", "dev/block/8:16");
    /* nvme0n1 (259:0): none, written without brackets as old kernels do */
    fx_mkdir(f, "devices/nvme0n1");
    fx_mkdir(f, "devices/nvme0n1/queue");
    fx_write(f, "devices/nvme0n1/queue/scheduler", "none\n");
    fx_link(f, "../../devices/nvme0n1", "dev/block/259:0");
    /* dm-0 (253:0): no queue/scheduler, nor its parent */
    fx_mkdir(f, "devices/dm-0");
    fx_link(f, "../../devices/dm-0", "dev/block/253:0");
    /* a file that names several schedulers and chooses none */
    fx_mkdir(f, "devices/odd");
    fx_mkdir(f, "devices/odd/queue");
    fx_write(f, "devices/odd/queue/scheduler", "mq-deadline none\n");
    fx_link(f, "../../devices/odd", "dev/block/7:0");
    /* a chosen name longer than any scheduler's */
    fx_mkdir(f, "devices/long");
    fx_mkdir(f, "devices/long/queue");
    fx_write(f, "devices/long/queue/scheduler", "none [a-scheduler-name-of-forty-characters]\n");
    fx_link(f, "../../devices/long", "dev/block/7:1");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char *cmd = util_asprintf("rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(f);
    return 0;
}

static void lookup(const struct fx *f, unsigned maj, unsigned min, int want_rc,
                   const char *want_name, const char *want_dev)
{
    char name[IOSCHED_NAME_MAX], dev[64];
    assert_int_equal(iosched_of_dev(f->dir, maj, min, name, sizeof(name), dev, sizeof(dev)),
                     want_rc);
    assert_string_equal(name, want_name);
    assert_string_equal(dev, want_dev);
}

static void test_disk_and_partition(void **state)
{
    const struct fx *f = *state;
    lookup(f, 8, 0, 0, "mq-deadline", "sda");
    lookup(f, 8, 1, 0, "mq-deadline", "sda1"); /* the parent disk's */
    lookup(f, 8, 16, 0, "bfq", "sdb");
    lookup(f, 259, 0, 0, "none", "nvme0n1");
}

static void test_unknown(void **state)
{
    const struct fx *f = *state;
    lookup(f, 253, 0, UTIL_ENOENT, "unknown", "dm-0"); /* no scheduler anywhere */
    lookup(f, 0, 42, UTIL_ENOENT, "unknown", "0:42");  /* overlay, tmpfs: no device */
    lookup(f, 7, 0, UTIL_ENOENT, "unknown", "odd");    /* no chosen scheduler */
    lookup(f, 7, 1, UTIL_ENOENT, "unknown", "long");   /* a name that does not fit */
}

static void test_ignores_priority(void **state)
{
    (void)state;
    assert_true(iosched_ignores_priority("none"));
    assert_true(iosched_ignores_priority("mq-deadline"));
    assert_true(iosched_ignores_priority("kyber"));
    assert_false(iosched_ignores_priority("bfq"));
    assert_false(iosched_ignores_priority("cfq"));
    assert_false(iosched_ignores_priority("unknown"));
}

/* iosched_check on real paths: the temporary directory's device is whatever this
 * machine has, so the fake tree is given that device's numbers. */
static void test_check(void **state)
{
    struct fx *f = *state;
    struct stat sb;
    char note[512], *rel, *paths[2];
    assert_int_equal(stat(f->dir, &sb), 0);

    rel = util_asprintf("dev/block/%u:%u", major(sb.st_dev), minor(sb.st_dev));
    fx_link(f, "../../devices/nvme0n1", rel);
    paths[0] = f->dir;
    paths[1] = "/nonexistent-path-of-the-test";
    assert_int_equal(iosched_check(f->dir, "/", paths, 2, note, sizeof(note)), 1);
    assert_non_null(strstr(note, "has no effect on "));
    assert_non_null(strstr(note, "its device nvme0n1 uses the none scheduler"));

    /* the same device with bfq: nothing said */
    char *p = util_asprintf("%s/%s", f->dir, rel);
    assert_int_equal(unlink(p), 0);
    fx_link(f, "../../devices/sdb", rel);
    assert_int_equal(iosched_check(f->dir, "/", paths, 2, note, sizeof(note)), 0);
    assert_string_equal(note, "");

    /* an unknown scheduler: nothing said either */
    assert_int_equal(unlink(p), 0);
    fx_link(f, "../../devices/dm-0", rel);
    assert_int_equal(iosched_check(f->dir, "/", paths, 2, note, sizeof(note)), 0);
    free(p);
    free(rel);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_disk_and_partition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown, setup, teardown),
        cmocka_unit_test(test_ignores_priority),
        cmocka_unit_test_setup_teardown(test_check, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
