#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/map.h"

static void test_map_against_model(void **state)
{
    enum { N = 3000 };
    struct util_map m;
    static intptr_t model[N]; /* 0 = absent, else value */
    char key[32];
    uint64_t r = 12345;
    util_map_init(&m);
    for (int step = 0; step < 60000; step++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((r >> 33) % N);
        snprintf(key, sizeof(key), "ns/policy-%d", k);
        if ((r >> 20) % 3 == 0) {
            void *v = util_map_del(&m, key);
            assert_ptr_equal(v, (void *)model[k]);
            model[k] = 0;
        } else {
            intptr_t val = step + 1;
            void *prev = util_map_set(&m, key, (void *)val);
            assert_ptr_equal(prev, (void *)model[k]);
            model[k] = val;
        }
    }
    size_t live = 0;
    for (int k = 0; k < N; k++) {
        snprintf(key, sizeof(key), "ns/policy-%d", k);
        assert_ptr_equal(util_map_get(&m, key), (void *)model[k]);
        live += model[k] != 0;
    }
    assert_int_equal(m.len, live);
    size_t seen = 0, it = 0;
    const char *k;
    void *v;
    while (util_map_next(&m, &it, &k, &v))
        seen++;
    assert_int_equal(seen, live);
    assert_null(util_map_get(&m, "absent"));
    util_map_close(&m);
    assert_null(util_map_get(&m, "ns/policy-1"));
    assert_null(util_map_del(&m, "ns/policy-1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_map_against_model)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
