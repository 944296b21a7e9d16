/*
 * Fuzz target for the one-pass snapshot-list reader of `lode forget`
 * (ret_snapshots_scan): on every input its answer must be the jansson
 * reader's, the same list or the same error message. Any difference aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "retention/retention.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ret_snapshot_list a, b;
    struct util_err ea = {0}, eb = {0};
    int ra = ret_snapshots_scan(&a, (const char *)data, size, NULL, NULL, &ea);
    int rb = ret_snapshots_from_json(&b, (const char *)data, size, &eb);

    check(ra == rb);
    check(strcmp(ea.msg, eb.msg) == 0);
    check(a.n == b.n);
    for (size_t i = 0; i < a.n; i++) {
        check(strcmp(a.v[i].id, b.v[i].id) == 0);
        check(a.v[i].time == b.v[i].time);
        check(a.v[i].incomplete == b.v[i].incomplete);
        check(a.v[i].suspicious == b.v[i].suspicious);
    }
    ret_snapshot_list_free(&a);
    ret_snapshot_list_free(&b);
    return 0;
}
