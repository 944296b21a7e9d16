/*
 * backup_bufs: what the seal jobs reuse instead of allocating per batch (backup.h says
 * why): batch buffers kept as spares, and sealers (an AES-GCM key schedule and a zstd
 * context each) kept between jobs. Both are touched on the loop thread only: a job takes
 * them at its dispatch and gives them back when its result is read.
 */
#include <stdlib.h>

#include "backup.h"

uint8_t *backup_buf_take(struct backup *b, size_t need, size_t *cap)
{
    unsigned fit = b->nspares, big = b->nspares;
    uint8_t *p;
    if (need <= BACKUP_JOB_BYTES) {
        for (unsigned i = 0; i < b->nspares; i++) {
            size_t c = b->spares[i].cap;
            if (c >= need && (fit == b->nspares || c < b->spares[fit].cap))
                fit = i;
            if (big == b->nspares || c > b->spares[big].cap)
                big = i;
        }
    }
    if (fit == b->nspares)
        fit = big;
    if (fit == b->nspares) {
        *cap = need;
        return util_malloc(need);
    }
    p = b->spares[fit].data;
    *cap = b->spares[fit].cap;
    b->spares[fit] = b->spares[--b->nspares];
    if (*cap < need) {
        /* A mapped buffer grows in place or by mremap: its pages stay. */
        p = util_realloc(p, need);
        *cap = need;
    }
    return p;
}

void backup_buf_give(struct backup *b, uint8_t *buf, size_t cap)
{
    if (buf == NULL)
        return;
    if (cap <= BACKUP_JOB_BYTES && b->nspares < BACKUP_JOBS) {
        b->spares[b->nspares].data = buf;
        b->spares[b->nspares].cap = cap;
        b->nspares++;
        return;
    }
    free(buf);
}

struct repo_sealer *backup_sealer_take(struct backup *b)
{
    return b->nsealers > 0 ? b->sealers[--b->nsealers] : repo_sealer_new(b->keys);
}

void backup_sealer_give(struct backup *b, struct repo_sealer *s)
{
    if (s == NULL)
        return;
    if (b->nsealers < BACKUP_JOBS)
        b->sealers[b->nsealers++] = s;
    else
        repo_sealer_free(s);
}

void backup_bufs_free(struct backup *b)
{
    while (b->nspares > 0)
        free(b->spares[--b->nspares].data);
    while (b->nsealers > 0)
        repo_sealer_free(b->sealers[--b->nsealers]);
}
