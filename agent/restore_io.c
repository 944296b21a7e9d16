/*
 * The buffer pool and the writeback of `lode restore`'s batch (restore_io.h): buffers kept
 * for the next GET or blob, and a syncfs of the target behind the restore.
 */
#define _GNU_SOURCE /* syncfs */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "restore_io.h"
#include "storage.h"

/*
 * Buffers kept for the next GET or blob, on the loop thread. lode fixes glibc's mmap
 * threshold at 256 KiB (agent/storage.c), so each range of up to 4 MiB and each blob's
 * plain bytes of 256 KiB or more was a mapping of its own, made, faulted in page by page
 * and unmapped again: about 280,000 page faults for the 814 MB tree, the largest cost of
 * the restore after the copies themselves (perf). A pool of RX_POOL buffers of each kind,
 * none kept past RX_RANGE_MAX, holds what was in use at once anyway (the ranges are
 * bounded by RX_HELD_MAX, restore_batch.c; a blob a worker), at most 16 MiB of plain buffers more.
 */
uint8_t *rx_buf_take(struct rx_buf *pool, size_t *n, size_t want, size_t *cap)
{
    uint8_t *p;
    if (*n > 0) {
        struct rx_buf b = pool[--*n];
        if (b.cap >= want) {
            *cap = b.cap;
            return b.p;
        }
        free(b.p);
    }
    if (want == 0) { /* made by the worker, at its first blob (rx_work_cb) */
        *cap = 0;
        return NULL;
    }
    /* A range's buffer at the largest range: its pages are touched only as far as used. */
    *cap = want < RX_RANGE_MAX ? RX_RANGE_MAX : want;
    p = util_malloc(*cap);
    return p;
}

void rx_buf_give(struct rx_buf *pool, size_t *n, uint8_t *p, size_t cap)
{
    if (p == NULL)
        return;
    if (*n < RX_POOL && cap <= RX_RANGE_MAX)
        pool[(*n)++] = (struct rx_buf){.p = p, .cap = cap};
    else
        free(p);
}

void rx_buf_free_all(struct rx *x)
{
    for (size_t i = 0; i < x->nbodies; i++)
        free(x->bodies[i].p);
    for (size_t i = 0; i < x->nplains; i++)
        free(x->plains[i].p);
    x->nbodies = x->nplains = 0;
}

static void rx_wb_work(uv_work_t *req)
{
    const struct rx *x = req->data;
    /* Its error is not this call's to report: the final syncfs, on the target's own
     * descriptor, still sees any write that failed (errors are kept per descriptor). */
    (void)syncfs(x->wb_fd);
}

static void rx_wb_done(uv_work_t *req, int status)
{
    struct rx *x = req->data;
    x->wb_busy = false;
}

/* A syncfs of the target behind the restore (restore.h, "Writeback"), unless one runs. */
void rx_writeback(struct rx *x)
{
    if (x->wb_busy || x->fatal)
        return;
    if (!x->wb_tried) {
        x->wb_tried = true;
        x->wb_fd = openat(x->t.root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (x->wb_fd < 0)
        return; /* the final syncfs does it all */
    x->wb.data = x;
    if (uv_queue_work(s3_sync_loop(x->st->s3), &x->wb, rx_wb_work, rx_wb_done) == 0)
        x->wb_busy = true;
}

void rx_writeback_finish(struct rx *x)
{
    while (x->wb_busy)
        uv_run(s3_sync_loop(x->st->s3), UV_RUN_ONCE);
    if (x->wb_tried && x->wb_fd >= 0)
        close(x->wb_fd);
    x->wb_tried = false;
}
