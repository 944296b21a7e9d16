/*
 * mstore.h: metadata chunks stored in memory for the repo tests (helper_mstore.c): a
 * repo_mstore_cb that dedups by name like a backup does, and a repo_mfetch_cb that
 * gives a chunk's sealed bytes back. A chunk's place is its index in the store. And
 * the tests' keys.
 */
#ifndef LODE_TEST_MSTORE_H
#define LODE_TEST_MSTORE_H

#include "repo/repo.h"

struct mstore {
    const struct repo_keys *k;
    char run[REPO_ID_LEN + 1];
    struct repo_mref *refs;
    uint8_t **sealed;
    size_t n, cap;
    uint64_t new_chunks, new_bytes; /* stored since the caller last cleared them */
};

int mstore_cb(void *arg, const uint8_t hash[REPO_HASH_LEN], const uint8_t *plain, size_t len,
              struct repo_mref *ref, struct util_err *err);
int mstore_fetch(void *arg, const struct repo_mref *ref, uint8_t *sealed, struct util_err *err);
void mstore_free(struct mstore *s);
/* Working keys derived from a master key of 32 bytes of fill. */
struct repo_keys mstore_keys(uint8_t fill);

#endif
