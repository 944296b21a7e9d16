/*
 * A pair keeps its host's jitter offset (ctl_cache_pair_offset, pairs.c) instead of hashing
 * the policy and host with SHA-256 at every reconcile: the kept value must be the one
 * binding_offset gives for the policy as it is now, also after its jitter changed, its
 * schedule went away or came back, and for every host of the policy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_int.h"

static void test_offset_follows_the_jitter(void **state)
{
    struct ctl c;
    memset(&c, 0, sizeof(c));
    util_map_init(&c.pairs);
    struct policy spec;
    memset(&spec, 0, sizeof(spec));
    spec.namespace = "ops";
    spec.name = "etc-and-home";
    spec.has_schedule = true;
    spec.schedule.jitter = 900;
    struct binding b = {.spec = &spec};

    struct ctl_pair *pr = ctl_cache_pair_get(&c, "ops", "etc-and-home", "node-1", true);
    struct ctl_pair *other = ctl_cache_pair_get(&c, "ops", "etc-and-home", "node-2", true);
    /* The value docs/schedule.md's example gives (tests/unit/schedule pins it too). */
    assert_int_equal(ctl_cache_pair_offset(pr, &b), 622);
    assert_int_equal(ctl_cache_pair_offset(pr, &b), 622);
    assert_int_equal(ctl_cache_pair_offset(other, &b),
                     sched_jitter_offset("ops", "etc-and-home", "node-2", 900));

    /* A new jitter is a new offset, for each pair on its next reconcile. */
    spec.schedule.jitter = 86400;
    assert_int_equal(ctl_cache_pair_offset(pr, &b), 23122);
    assert_int_equal(ctl_cache_pair_offset(other, &b),
                     sched_jitter_offset("ops", "etc-and-home", "node-2", 86400));

    /* No schedule, or a policy that is not valid (no spec): no offset; and back. */
    spec.has_schedule = false;
    assert_int_equal(ctl_cache_pair_offset(pr, &b), 0);
    spec.has_schedule = true;
    assert_int_equal(ctl_cache_pair_offset(pr, &b), 23122);
    struct binding invalid = {.spec = NULL};
    assert_int_equal(ctl_cache_pair_offset(pr, &invalid), 0);
    spec.schedule.jitter = 900;
    assert_int_equal(ctl_cache_pair_offset(pr, &b), 622);

    /* A jitter of 0 on a schedule is no offset, and a later jitter is hashed again. */
    spec.schedule.jitter = 0;
    assert_int_equal(ctl_cache_pair_offset(pr, &b), 0);
    spec.schedule.jitter = 900;
    assert_int_equal(ctl_cache_pair_offset(pr, &b), 622);

    ctl_cache_pair_free(pr);
    ctl_cache_pair_free(other);
    util_map_close(&c.pairs);
    free(c.by_id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offset_follows_the_jitter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
