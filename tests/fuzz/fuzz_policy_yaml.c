/*
 * libFuzzer target for the YAML policy reader: any bytes must give either a
 * policy and no error, or errors in document order, each with a position and a
 * message that is valid UTF-8 (it ends up in JSON output). No crash, no leak.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check_utf8(const char *s)
{
    json_t *j = json_string(s);
    if (j == NULL) {
        fprintf(stderr, "not UTF-8: %s\n", s);
        abort();
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct policy p;
    struct policy_diags d;
    int rc;

    policy_diags_init(&d);
    rc = policy_parse_yaml(&p, (const char *)data, size, NULL, &d);
    if ((rc == 0) != (d.n == 0))
        abort();
    for (size_t i = 0; i < d.n; i++) {
        if (d.v[i].line < 1 || d.v[i].column < 1 || d.v[i].message[0] == '\0')
            abort();
        if (i > 0 && (d.v[i].line < d.v[i - 1].line ||
                      (d.v[i].line == d.v[i - 1].line && d.v[i].column < d.v[i - 1].column)))
            abort();
        fuzz_check_utf8(d.v[i].message);
        fuzz_check_utf8(d.v[i].path);
    }
    if (rc == 0) {
        /* A valid policy has what docs/policy.md requires, within its ranges. */
        if (p.name == NULL || p.namespace == NULL || p.repository == NULL || p.npaths == 0)
            abort();
        if (p.has_schedule && (p.schedule.timezone == NULL || p.schedule.jitter < 0 ||
                               p.schedule.jitter > 86400 || p.schedule.catch_up_window < 60))
            abort();
        if (p.limits.max_runtime < 3600 || p.limits.max_runtime > 7 * 86400)
            abort();
        policy_free(&p);
    }
    policy_diags_free(&d);
    return 0;
}
