/*
 * libFuzzer target for the JSON policy reader: the bytes are parsed by jansson
 * (any JSON value, NUL escapes allowed) and the value handed to
 * policy_parse_json. No crash, no leak, and errors and result agree.
 */
#include <stdint.h>
#include <stdlib.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct policy p;
    struct policy_diags d;
    json_error_t e;
    json_t *v;
    int rc;

    v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (v == NULL)
        return 0;
    policy_diags_init(&d);
    rc = policy_parse_json(&p, v, NULL, &d);
    if ((rc == 0) != (d.n == 0))
        abort();
    for (size_t i = 0; i < d.n; i++) {
        json_t *m = json_string(d.v[i].message), *path = json_string(d.v[i].path);
        if (d.v[i].line != 0 || d.v[i].column != 0 || m == NULL || path == NULL)
            abort();
        json_decref(m);
        json_decref(path);
    }
    if (rc == 0) {
        if (p.name == NULL || p.repository == NULL || p.npaths == 0)
            abort();
        policy_free(&p);
    }
    policy_diags_free(&d);
    json_decref(v);
    return 0;
}
