/*
 * libFuzzer target for the TZif reader: tz_zone_parse on arbitrary bytes, then the
 * primitives on whatever zone it accepted, at instants around its transitions and
 * at the ends of the range. Any crash, sanitizer report or broken invariant
 * (a resolution that does not map back to its local time) is a finding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tz/tz.h"

static void check(const struct tz_zone *z, int64_t local)
{
    struct tz_local r;
    tz_resolve_local(z, local, &r);
    if (local <= -((int64_t)1 << 59) || local >= ((int64_t)1 << 59))
        return; /* clamped: the answer is for the clamped time */
    switch (r.kind) {
    case TZ_LOCAL_UNIQUE:
        if (r.at[0] + tz_offset_at(z, r.at[0]) != local)
            abort();
        break;
    case TZ_LOCAL_REPEATED:
        if (r.at[0] >= r.at[1] || r.at[0] + tz_offset_at(z, r.at[0]) != local ||
            r.at[1] + tz_offset_at(z, r.at[1]) != local)
            abort();
        break;
    case TZ_LOCAL_GAP:
        if (!(r.at[0] + tz_offset_at(z, r.at[0] - 1) <= local &&
              local < r.at[0] + tz_offset_at(z, r.at[0])))
            abort();
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tz_zone *z = NULL;
    struct util_err err;
    if (tz_zone_parse(&z, "fuzz", data, size, &err) != 0)
        return 0;
    static const int64_t probes[] = {
        INT64_MIN,  -((int64_t)1 << 60), -2208988800,        0,        1774746000, 4102444800,
        7258118400, 13569465600,         ((int64_t)1 << 60), INT64_MAX};
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        (void)tz_offset_at(z, probes[i]);
        (void)strlen(tz_abbrev_at(z, probes[i]));
        (void)tz_next_transition(z, probes[i]);
        check(z, probes[i]);
    }
    /* Walk a few transitions from 1970 and 2190 and look around each. */
    static const int64_t starts[] = {0, 7227000000};
    for (size_t s = 0; s < 2; s++) {
        int64_t t = starts[s];
        for (int k = 0; k < 6; k++) {
            int64_t next = tz_next_transition(z, t);
            if (next == INT64_MAX)
                break;
            if (next <= t)
                abort();
            t = next;
            int32_t off = tz_offset_at(z, t);
            for (int64_t d = -7200; d <= 7200; d += 1800)
                check(z, t + off + d);
        }
    }
    tz_zone_free(z);
    return 0;
}
