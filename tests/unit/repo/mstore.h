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

/* A tree written into a store of its own, as a backup writes one: begin, add records to
 * w, end (root set). The store is the caller's to free (mstore_free(&t->ms)). */
struct mstore_tree {
    struct repo_keys k;
    struct mstore ms;
    struct repo_tree_writer w;
    struct repo_root root;
};
void mstore_tree_begin(struct mstore_tree *t);
/* Finishes the tree into t->root and frees the writer: repo_tree_writer_finish's result. */
int mstore_tree_end(struct mstore_tree *t, struct util_err *err);

#endif
