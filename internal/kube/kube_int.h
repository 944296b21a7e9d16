/*
 * What the files of internal/kube share and nobody else needs. Not part of the API.
 */
#ifndef LODE_KUBE_INT_H
#define LODE_KUBE_INT_H

#include "kube/kube.h"

/* Reads a bearer token file and trims the whitespace around the token. */
int kube__read_token(const char *path, char **token, struct util_err *err);
/* The client's loop. */
uv_loop_t *kube__loop(const struct kube_client *c);
/* A 32-bit pseudo-random number from the client's generator (jitter, not secrets). */
uint32_t kube__rand(struct kube_client *c);

#endif
