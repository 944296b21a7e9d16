#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/list.h"

struct item {
    int v;
    struct util_list link;
};

static int value_at(const struct util_list *head, size_t i)
{
    const struct util_list *p = head->next;
    while (i-- > 0)
        p = p->next;
    return util_list_entry(p, const struct item, link)->v;
}

static void test_list_fifo_and_stack(void **state)
{
    struct util_list head;
    struct item it[4];
    util_list_init(&head);
    assert_true(util_list_empty(&head));
    assert_null(util_list_first(&head));
    assert_null(util_list_last(&head));
    for (int i = 0; i < 3; i++) {
        it[i].v = i;
        util_list_init(&it[i].link);
        assert_false(util_list_linked(&it[i].link));
        util_list_push_back(&head, &it[i].link);
        assert_true(util_list_linked(&it[i].link));
    }
    it[3].v = 9;
    util_list_push_front(&head, &it[3].link);
    assert_int_equal(util_list_len(&head), 4);
    assert_int_equal(value_at(&head, 0), 9);
    assert_int_equal(value_at(&head, 1), 0);
    assert_int_equal(value_at(&head, 3), 2);
    assert_ptr_equal(util_list_last(&head), &it[2].link);

    /* Removing from the middle, twice, and from both ends. */
    util_list_remove(&it[1].link);
    util_list_remove(&it[1].link);
    assert_false(util_list_linked(&it[1].link));
    assert_int_equal(util_list_len(&head), 3);
    assert_int_equal(value_at(&head, 2), 2);
    util_list_remove(&it[3].link);
    util_list_remove(&it[2].link);
    assert_ptr_equal(util_list_first(&head), &it[0].link);
    assert_ptr_equal(util_list_last(&head), &it[0].link);
    util_list_remove(&it[0].link);
    assert_true(util_list_empty(&head));
}

static void test_list_remove_while_iterating(void **state)
{
    struct util_list head, *pos, *tmp;
    struct item it[10];
    util_list_init(&head);
    for (int i = 0; i < 10; i++) {
        it[i].v = i;
        util_list_push_back(&head, &it[i].link);
    }
    util_list_for_each_safe (pos, tmp, &head) {
        if (util_list_entry(pos, struct item, link)->v % 2 == 0)
            util_list_remove(pos);
    }
    int sum = 0, n = 0;
    util_list_for_each (pos, &head) {
        sum += util_list_entry(pos, struct item, link)->v;
        n++;
    }
    assert_int_equal(n, 5);
    assert_int_equal(sum, 1 + 3 + 5 + 7 + 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_fifo_and_stack),
        cmocka_unit_test(test_list_remove_while_iterating),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
