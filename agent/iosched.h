/*
 * iosched: whether the policy's I/O priority (spec.limits.ioniceClass and
 * ioniceLevel) can have an effect on the devices a backup reads
 * (docs/operator.md, "The I/O scheduler"). Only the bfq scheduler, and cfq on
 * kernels before 5.0, honour I/O priorities; none, mq-deadline and kyber ignore
 * them. The scheduler of a device is the bracketed word of
 * <sysfs>/dev/block/MAJ:MIN/queue/scheduler, or of its parent disk's for a
 * partition (MAJ:MIN/../queue/scheduler). Device-mapper, loop, overlay and tmpfs
 * may have none: their scheduler is "unknown", and nothing is said about them.
 *
 * The sysfs root is a parameter so that a test can give a fake tree.
 *
 * Costs: one stat per path and at most two small reads per path; once a run.
 */
#ifndef LODE_AGENT_IOSCHED_H
#define LODE_AGENT_IOSCHED_H

#include <stdbool.h>
#include <stddef.h>

/* Long enough for every scheduler name the kernel has ("mq-deadline"). */
#define IOSCHED_NAME_MAX 32

/*
 * The active scheduler of device MAJ:MIN under sysfs (normally "/sys") into name
 * ("unknown" when the device has no queue/scheduler, nor its parent), and the
 * device's name (such as "sda1"; "MAJ:MIN" when sysfs does not say) into dev.
 * Returns 0 when the scheduler is known, UTIL_ENOENT when it is "unknown".
 */
int iosched_of_dev(const char *sysfs, unsigned maj, unsigned min, char *name, size_t name_len,
                   char *dev, size_t dev_len);

/* Whether the scheduler named ignores I/O priorities (none, mq-deadline, kyber, ...). */
bool iosched_ignores_priority(const char *name);

/*
 * For each path (absolute, as seen under root; its device by stat's st_dev), looks
 * up the scheduler under sysfs. When one ignores I/O priorities, note gets a
 * sentence naming the path, the device and the scheduler (the first such path; the
 * others are counted), and the function returns how many paths are on such
 * devices; 0 (note empty) when every path's scheduler honours priorities or is
 * unknown. A path that cannot be stat'ed is skipped: the walk reports it.
 */
size_t iosched_check(const char *sysfs, const char *root, char *const *paths, size_t npaths,
                     char *note, size_t note_len);

#endif
