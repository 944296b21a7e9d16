#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "heap.h"
#include "queue.h"

/* A tiny deterministic generator, so failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_heap_orders_and_updates(void **state)
{
    enum { N = 2000 };
    struct ctl_heap h;
    int64_t model[N];
    ctl_heap_init(&h);
    for (uint32_t id = 0; id < N; id++)
        model[id] = INT64_MIN;
    /* Random sets, moves and removes, checked against a plain array. */
    for (int step = 0; step < 20000; step++) {
        uint32_t id = (uint32_t)(rng() % N);
        if (rng() % 4 == 0) {
            ctl_heap_remove(&h, id);
            model[id] = INT64_MIN;
        } else {
            int64_t when = (int64_t)(rng() % 100000) - 50000;
            ctl_heap_set(&h, id, when);
            model[id] = when;
        }
        if (step % 97 == 0) {
            int64_t best = INT64_MAX;
            for (uint32_t i = 0; i < N; i++)
                if (model[i] != INT64_MIN && model[i] < best)
                    best = model[i];
            uint32_t top;
            int64_t when;
            if (best == INT64_MAX) {
                assert_false(ctl_heap_peek(&h, &top, &when));
            } else {
                assert_true(ctl_heap_peek(&h, &top, &when));
                assert_int_equal(when, best);
                assert_int_equal(model[top], best);
            }
        }
    }
    /* Draining gives every remaining entry once, in order. */
    size_t remaining = 0;
    for (uint32_t i = 0; i < N; i++)
        remaining += model[i] != INT64_MIN;
    assert_int_equal(h.n, remaining);
    int64_t prev = INT64_MIN;
    uint32_t id;
    int64_t when;
    while (ctl_heap_pop(&h, &id, &when)) {
        assert_true(when >= prev);
        assert_int_equal(model[id], when);
        model[id] = INT64_MIN;
        prev = when;
        remaining--;
    }
    assert_int_equal(remaining, 0);
    assert_false(ctl_heap_contains(&h, 5));
    ctl_heap_close(&h);
}

static void test_heap_equal_times_fifo(void **state)
{
    struct ctl_heap h;
    uint32_t id;
    int64_t when;
    ctl_heap_init(&h);
    for (uint32_t i = 0; i < 10; i++)
        ctl_heap_set(&h, 9 - i, 100);
    for (uint32_t i = 0; i < 10; i++) {
        assert_true(ctl_heap_pop(&h, &id, &when));
        assert_int_equal(id, 9 - i);
    }
    ctl_heap_remove(&h, 3); /* absent: a no-op */
    ctl_heap_remove(&h, 100000);
    ctl_heap_close(&h);
}

static void test_queue_dedup_and_dirty(void **state)
{
    struct ctl_queue q;
    uint32_t id;
    ctl_queue_init(&q);
    ctl_queue_add(&q, 3);
    ctl_queue_add(&q, 7);
    ctl_queue_add(&q, 3); /* already waiting */
    assert_int_equal(ctl_queue_len(&q), 2);
    assert_true(ctl_queue_pop(&q, &id));
    assert_int_equal(id, 3);
    ctl_queue_add(&q, 3); /* arrives while 3 is processed: not handed out twice at once */
    assert_true(ctl_queue_pop(&q, &id));
    assert_int_equal(id, 7);
    assert_false(ctl_queue_pop(&q, &id));
    ctl_queue_done(&q, 3); /* the change that came meanwhile is not lost */
    assert_true(ctl_queue_pop(&q, &id));
    assert_int_equal(id, 3);
    ctl_queue_done(&q, 3);
    ctl_queue_done(&q, 7);
    assert_false(ctl_queue_pop(&q, &id));
    ctl_queue_done(&q, 1000); /* unknown id: a no-op */
    ctl_queue_close(&q);
}

static void test_queue_grows_in_order(void **state)
{
    struct ctl_queue q;
    uint32_t id;
    ctl_queue_init(&q);
    /* Interleave pops so the ring wraps before it grows. */
    uint32_t next_in = 0, next_out = 0;
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 7; i++)
            ctl_queue_add(&q, next_in++);
        for (int i = 0; i < 3; i++) {
            assert_true(ctl_queue_pop(&q, &id));
            assert_int_equal(id, next_out++);
            ctl_queue_done(&q, id);
        }
    }
    while (ctl_queue_pop(&q, &id)) {
        assert_int_equal(id, next_out++);
        ctl_queue_done(&q, id);
    }
    assert_int_equal(next_out, next_in);
    ctl_queue_close(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_orders_and_updates),
        cmocka_unit_test(test_heap_equal_times_fifo),
        cmocka_unit_test(test_queue_dedup_and_dirty),
        cmocka_unit_test(test_queue_grows_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
