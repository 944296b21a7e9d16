/*
 * Fuzz target for object keys and snapshot ids: whatever repo_key_parse accepts
 * must build back to the same key, and every refusal must say why.
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
    char *s = malloc(size + 1);
    struct repo_key k;
    struct util_err err = {0};
    int64_t t;
    memcpy(s, data, size);
    s[size] = '\0';
    if (repo_key_parse(s, &k, &err) == 0) {
        char *back = repo_key_build(&k);
        check(strcmp(back, s) == 0);
        free(back);
    } else {
        check(err.msg[0] != '\0');
    }
    if (repo_id_parse(s, &t, &err) == 0) {
        char id[REPO_ID_LEN + 1];
        uint8_t rnd[8];
        check(repo_unhex(s + 17, rnd, 8) == 0);
        repo_id_make(t, rnd, id);
        check(strcmp(id, s) == 0);
    }
    struct repo_catalog c;
    repo_catalog_init(&c);
    repo_catalog_add(&c, s, 1);
    repo_catalog_finish(&c);
    repo_catalog_free(&c);
    free(s);
    return 0;
}
