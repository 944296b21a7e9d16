/*
 * Fuzz target for the repository's JSON objects: config.json, run records and
 * manifests (counters only, and with a key, whose private part then fails to
 * open). The first byte picks the decoder. Every refusal must carry a message and
 * leave the output empty; every accepted object must encode and decode again to
 * the same values.
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
    switch (data[0] % 3) {
    case 0: {
        struct repo_config c, d;
        if (repo_config_decode(&c, json, len, &err) != 0) {
            check(err.msg[0] != '\0' && c.format == 0);
            return 0;
        }
        char *again = repo_config_encode(&c);
        check(repo_config_decode(&d, again, strlen(again), &err) == 0);
        check(memcmp(&c, &d, sizeof(c)) == 0);
        free(again);
        break;
    }
    case 1: {
        struct repo_run r, d;
        if (repo_run_decode(&r, json, len, NULL, &err) != 0) {
            check(err.msg[0] != '\0' && r.id[0] == '\0');
            return 0;
        }
        char *again = repo_run_encode(&r, NULL);
        check(repo_run_decode(&d, again, strlen(again), NULL, &err) == 0);
        check(memcmp(&r, &d, sizeof(r)) == 0);
        free(again);
        break;
    }
    default: {
        struct repo_manifest m;
        struct repo_keys k;
        uint8_t master[32] = {0};
        repo_keys_derive(&k, master);
        if (repo_manifest_decode(&m, json, len, NULL, &err) != 0) {
            check(err.msg[0] != '\0' && m.paths == NULL);
            return 0;
        }
        repo_manifest_free(&m);
        if (repo_manifest_decode(&m, json, len, &k, &err) != 0)
            check(err.msg[0] != '\0' && m.paths == NULL);
        repo_manifest_free(&m);
        break;
    }
    }
    return 0;
}
