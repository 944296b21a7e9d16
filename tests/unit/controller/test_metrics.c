#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"

static void test_samples_and_escaping(void **state)
{
    struct util_buf b;
    util_buf_init(&b);
    ctl_metrics_family(&b, "lodestore_host_overdue", "gauge",
                       "1 when the host is overdue.\nSee docs");
    const char *labels[] = {"policy", "ops/etc", "host", "we\"ird\\name\n", NULL};
    ctl_metrics_sample(&b, "lodestore_host_overdue", labels, 1);
    ctl_metrics_sample(&b, "lodestore_up", NULL, 1);
    ctl_metrics_sample(&b, "lodestore_x", NULL, 1.5);
    ctl_metrics_sample(&b, "lodestore_y", NULL, NAN);
    ctl_metrics_sample(&b, "lodestore_z", NULL, -INFINITY);
    ctl_metrics_sample(&b, "lodestore_t", NULL, 1796000000);
    assert_string_equal(
        b.data, "# HELP lodestore_host_overdue 1 when the host is overdue.\\nSee docs\n"
                "# TYPE lodestore_host_overdue gauge\n"
                "lodestore_host_overdue{policy=\"ops/etc\",host=\"we\\\"ird\\\\name\\n\"} 1\n"
                "lodestore_up 1\n"
                "lodestore_x 1.5\n"
                "lodestore_y NaN\n"
                "lodestore_z -Inf\n"
                "lodestore_t 1796000000\n");
    util_buf_free(&b);
}

static void test_histogram(void **state)
{
    struct util_buf b;
    struct ctl_metrics_histogram h = {0};
    util_buf_init(&b);
    ctl_metrics_observe(&h, 0.0005);
    ctl_metrics_observe(&h, 0.003);
    ctl_metrics_observe(&h, 0.003);
    ctl_metrics_observe(&h, 120); /* above the last bound: only +Inf counts it */
    const char *labels[] = {"verb", "LIST", NULL};
    ctl_metrics_histogram_write(&b, "lodestore_api_seconds", labels, &h);
    assert_non_null(strstr(b.data, "lodestore_api_seconds_bucket{verb=\"LIST\",le=\"0.001\"} 1\n"));
    assert_non_null(
        strstr(b.data, "lodestore_api_seconds_bucket{verb=\"LIST\",le=\"0.0025\"} 1\n"));
    assert_non_null(strstr(b.data, "lodestore_api_seconds_bucket{verb=\"LIST\",le=\"0.005\"} 3\n"));
    assert_non_null(strstr(b.data, "lodestore_api_seconds_bucket{verb=\"LIST\",le=\"60\"} 3\n"));
    assert_non_null(strstr(b.data, "lodestore_api_seconds_bucket{verb=\"LIST\",le=\"+Inf\"} 4\n"));
    assert_non_null(strstr(b.data, "lodestore_api_seconds_count{verb=\"LIST\"} 4\n"));
    assert_non_null(strstr(b.data, "lodestore_api_seconds_sum{verb=\"LIST\"} 120.0065"));
    util_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_and_escaping),
        cmocka_unit_test(test_histogram),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
