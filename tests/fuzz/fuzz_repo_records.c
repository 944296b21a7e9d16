/*
 * Fuzz target for the binary run records and manifests (docs/repository.md, "Run
 * records and manifests"). The first byte picks the record; the rest is its body at a
 * fixed place. Decoded without the key (the catalog's and gc's read of the public
 * fields), an accepted record must encode and decode again to the same values; decoded
 * with a fixed key (the seeds are sealed with it, so the fuzzer reaches the sealed
 * parts' parsers), an accepted one must do the same. Every refusal must carry a
 * message and leave the output empty.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "repo/repo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ID "20261202T170127Z-9f3c2a1b7d4e6058"

static void check(bool ok)
{
    if (!ok)
        abort();
}

static void fuzz_run(const struct repo_source *src, const struct repo_keys *k, const uint8_t *p,
                     size_t n)
{
    struct repo_run r, d;
    struct util_err err = {0};
    if (repo_run_decode(&r, src, ID, p, n, k, &err) != 0) {
        check(err.msg[0] != '\0' && r.id[0] == '\0');
        return;
    }
    size_t len;
    uint8_t *again = repo_run_encode(&r, k, &len);
    check(repo_run_decode(&d, src, ID, again, len, k, &err) == 0);
    check(memcmp(&r, &d, sizeof(r)) == 0);
    free(again);
}

/* k: the key to decode with, both times (NULL: the public fields only); enc: the key
 * to encode with again (a manifest is always sealed). */
static void fuzz_manifest(const struct repo_source *src, const struct repo_keys *k,
                          const struct repo_keys *enc, const uint8_t *p, size_t n)
{
    struct repo_manifest m, d;
    struct util_err err = {0};
    if (repo_manifest_decode(&m, src, ID, p, n, k, &err) != 0) {
        check(err.msg[0] != '\0' && m.paths == NULL && m.id[0] == '\0');
        return;
    }
    size_t len;
    uint8_t *again = repo_manifest_encode(&m, enc, &len);
    check(repo_manifest_decode(&d, src, ID, again, len, k, &err) == 0);
    check(d.files == m.files && d.bytes == m.bytes && d.errors == m.errors &&
          d.uploaded_bytes == m.uploaded_bytes && d.max_runtime == m.max_runtime &&
          d.incomplete == m.incomplete && d.suspicious == m.suspicious &&
          strcmp(d.parent, m.parent) == 0 && strcmp(d.agent, m.agent) == 0);
    if (k != NULL) {
        check(d.npaths == m.npaths && d.nerrs == m.nerrs);
        check(memcmp(&d.files_root, &m.files_root, sizeof(m.files_root)) == 0);
        check(memcmp(d.excluded, m.excluded, sizeof(m.excluded)) == 0);
        for (size_t i = 0; i < m.npaths; i++)
            check(strcmp(d.paths[i], m.paths[i]) == 0);
    }
    repo_manifest_free(&d);
    repo_manifest_free(&m);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct repo_source src;
    struct repo_keys k;
    struct util_err err = {0};
    uint8_t master[32] = {0};
    if (size < 1)
        return 0;
    repo_keys_derive(&k, master);
    check(repo_source_set(&src, "default", "etc", "node-1", &err) == 0);
    if (data[0] % 2 == 0) {
        fuzz_run(&src, NULL, data + 1, size - 1);
        fuzz_run(&src, &k, data + 1, size - 1);
    } else {
        fuzz_manifest(&src, NULL, &k, data + 1, size - 1);
        fuzz_manifest(&src, &k, &k, data + 1, size - 1);
    }
    return 0;
}
