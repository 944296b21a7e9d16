/*
 * Fuzz target for the repository's JSON object config.json (run records and manifests
 * are binary: fuzz_repo_records.c). An input whose first byte is 0 modulo 3 is
 * decoded (the byte picked among three decoders when this target read those too, so
 * the seeds keep it). A refusal must carry a message and leave the output empty; an
 * accepted object must encode and decode again to the same values.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "repo/repo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct util_err err = {0};
    if (size < 1)
        return 0;
    const char *json = (const char *)data + 1;
    size_t len = size - 1;
    struct repo_config c, d;
    if (data[0] % 3 != 0)
        return 0;
    if (repo_config_decode(&c, json, len, &err) != 0) {
        check(err.msg[0] != '\0' && c.format == 0);
        return 0;
    }
    char *again = repo_config_encode(&c);
    check(repo_config_decode(&d, again, strlen(again), &err) == 0);
    check(memcmp(&c, &d, sizeof(c)) == 0);
    free(again);
    return 0;
}
