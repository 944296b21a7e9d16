/*
 * Fuzz target for the snapshot-list reader of `lode forget --snapshots`, and for
 * the engine behind it: every list the reader accepts is evaluated with rules
 * drawn from the input, and the result must be a newest-first permutation of the
 * input in which every suspicious snapshot and the two newest good ones are kept.
 * Any violation aborts, so the fuzzer reports it as a crash.
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
    struct ret_snapshot_list list;
    struct util_err err = {0};
    struct policy_retention r = {0};
    struct ret_decision *d;
    struct tz_zone *utc;
    uint32_t h = 2166136261u;
    bool *seen;
    size_t good = 0;

    if (ret_snapshots_from_json(&list, (const char *)data, size, &err) != 0) {
        check(err.msg[0] != '\0'); /* every rejection says why */
        check(list.v == NULL && list.n == 0);
        return 0;
    }
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    r.keep_last = h % 4;
    r.keep_within = (int64_t)(h >> 2) % 3 * 86400;
    r.keep_daily = (h >> 4) % 5;
    r.keep_weekly = (h >> 7) % 3;
    r.keep_monthly = (h >> 9) % 3;

    utc = tz_zone_utc();
    d = util_calloc(list.n ? list.n : 1, sizeof(*d));
    seen = util_calloc(list.n ? list.n : 1, sizeof(*seen));
    check(ret_evaluate(list.v, list.n, &r, utc, d, &err) == 0);
    for (size_t i = 0; i < list.n; i++) {
        const struct ret_snapshot *s = &list.v[d[i].index];
        check(d[i].index < list.n && !seen[d[i].index]);
        seen[d[i].index] = true;
        check(d[i].keep == (d[i].reasons != 0));
        if (i > 0) {
            const struct ret_snapshot *p = &list.v[d[i - 1].index];
            check(p->time > s->time || (p->time == s->time && strcmp(p->id, s->id) > 0));
        }
        if (s->suspicious)
            check(d[i].reasons == RET_SUSPICIOUS);
        else if (!s->incomplete && good++ < 2)
            check((d[i].reasons & RET_NEWEST_GOOD) != 0);
    }
    free(seen);
    free(d);
    tz_zone_free(utc);
    ret_snapshot_list_free(&list);
    return 0;
}
