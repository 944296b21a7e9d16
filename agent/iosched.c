/*
 * iosched: the scheduler of the devices a backup reads (iosched.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "iosched.h"
#include "util/util.h"

/* The active scheduler in a queue/scheduler file: "[bfq]" of "mq-deadline [bfq] none". */
static int iosched_read(const char *file, char *name, size_t name_len)
{
    char buf[256];
    FILE *f = fopen(file, "r");
    size_t n;
    const char *start, *end;

    if (f == NULL)
        return UTIL_ENOENT;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    start = strchr(buf, '[');
    if (start != NULL) {
        start++;
        end = strchr(start, ']');
    } else {
        /* Old kernels write a lone "none" without brackets; several names and
         * none chosen is not a file this knows. */
        start = buf + strspn(buf, " \t\n");
        end = start + strcspn(start, " \t\n");
        if (end[strspn(end, " \t\n")] != '\0')
            end = NULL;
    }
    if (end == NULL || end == start || (size_t)(end - start) >= name_len)
        return UTIL_ENOENT;
    memcpy(name, start, (size_t)(end - start));
    name[end - start] = '\0';
    return 0;
}

int iosched_of_dev(const char *sysfs, unsigned maj, unsigned min, char *name, size_t name_len,
                   char *dev, size_t dev_len)
{
    char *base = util_asprintf("%s/dev/block/%u:%u", sysfs, maj, min);
    char *own = util_asprintf("%s/queue/scheduler", base);
    char *parent = util_asprintf("%s/../queue/scheduler", base);
    char real[PATH_MAX];
    int rc;

    if (realpath(base, real) != NULL)
        snprintf(dev, dev_len, "%s", strrchr(real, '/') + 1);
    else
        snprintf(dev, dev_len, "%u:%u", maj, min);
    rc = iosched_read(own, name, name_len);
    if (rc != 0)
        rc = iosched_read(parent, name, name_len);
    if (rc != 0)
        snprintf(name, name_len, "unknown");
    free(parent);
    free(own);
    free(base);
    return rc;
}

bool iosched_ignores_priority(const char *name)
{
    static const char *const ignoring[] = {"none", "mq-deadline", "kyber", "deadline", "noop"};
    for (size_t i = 0; i < sizeof(ignoring) / sizeof(ignoring[0]); i++)
        if (strcmp(name, ignoring[i]) == 0)
            return true;
    return false;
}

size_t iosched_check(const char *sysfs, const char *root, char *const *paths, size_t npaths,
                     char *note, size_t note_len)
{
    size_t hits = 0;
    note[0] = '\0';
    for (size_t i = 0; i < npaths; i++) {
        char *full = util_asprintf("%s%s", strcmp(root, "/") == 0 ? "" : root, paths[i]);
        char name[IOSCHED_NAME_MAX], dev[64];
        struct stat sb;
        int rc = stat(full, &sb);
        free(full);
        if (rc != 0 || iosched_of_dev(sysfs, major(sb.st_dev), minor(sb.st_dev), name, sizeof(name),
                                      dev, sizeof(dev)) != 0)
            continue;
        if (!iosched_ignores_priority(name))
            continue;
        if (hits++ == 0)
            snprintf(note, note_len,
                     "the I/O priority has no effect on %s: its device %s uses the %s "
                     "scheduler, which ignores I/O priorities (only bfq, or cfq on old "
                     "kernels, honours them; docs/operator.md, \"The I/O scheduler\")",
                     paths[i], dev, name);
    }
    return hits;
}
