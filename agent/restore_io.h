/*
 * restore_io: what the restore's batch (restore_batch.c) leans on besides its own logic,
 * kept in restore_io.c; internal to the restore's files, the public API is restore.h's.
 *
 * The buffer pool keeps the buffers of finished GETs and blobs for the next ones, on the
 * loop thread: RX_POOL of each kind, none over RX_RANGE_MAX, so at most 16 MiB of plain
 * buffers more than the restore holds at once anyway. The writeback starts a syncfs of the
 * target on a worker once a batch is done (restore.h, "Writeback"); it costs one
 * descriptor of the target's and one worker while it runs.
 */
#ifndef LODE_AGENT_RESTORE_IO_H
#define LODE_AGENT_RESTORE_IO_H

#include "restore.h"

/*
 * A buffer of at least want bytes from pool (*n of them kept), its size in *cap: a kept one
 * when the last one kept is large enough, else a new one of at least RX_RANGE_MAX bytes.
 * want 0 takes a kept buffer or none (NULL, *cap 0), which the caller makes when needed.
 */
uint8_t *rx_buf_take(struct rx_buf *pool, size_t *n, size_t want, size_t *cap);
/* Keeps p (cap bytes) in pool for the next taker, or frees it when the pool is full or p
 * is over RX_RANGE_MAX. p may be NULL. */
void rx_buf_give(struct rx_buf *pool, size_t *n, uint8_t *p, size_t cap);
/* Frees the buffers kept in x's pools (at the end of the restore). */
void rx_buf_free_all(struct rx *x);

/* Starts a syncfs of the target on a worker, unless one runs or the restore has failed. */
void rx_writeback(struct rx *x);
/* Waits for the syncfs under way, if any, and closes the descriptor it used. */
void rx_writeback_finish(struct rx *x);

#endif
