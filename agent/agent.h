/*
 * agent: the engines that read and write a repository from a node, linked into
 * `lode` as build/libagent.a and into the unit tests. A command in cli/ parses its
 * flags, calls one of these and turns the outcome into its output and exit code;
 * nothing here knows about flags, output formats or exit codes.
 *
 *   storage.h   the storage session every job starts with: connect, read and unlock
 *               config.json, list the catalog, read manifests
 *   backup.h    one backup: the walk merged with the parent's file list, chunking,
 *               sealing on the thread pool, packs, paced uploads, the manifest
 *   chunkidx.h  a backup's chunk index: the dedup table and the chunk set, 12 bytes a
 *               chunk in memory, the records in a file in $TMPDIR
 *   browse.h    looking inside a snapshot without restoring it: ls, find, diff, dump
 *   restore.h   one snapshot back onto disk: the target written safely, regular files
 *               fetched in batches of ranged GETs
 *   check.h     whether the repository is whole, its data read with read_data
 *   forget.h    deleting what retention forgets (internal/prune's keys)
 *   gc_run.h    the collection around internal/gc's rule: sources, run records,
 *               chunk sets, the plan of what to delete, the deletion
 *   iosched.h   whether the policy's I/O priority can have an effect: the scheduler
 *               of the devices a backup reads
 *   hooks.h     the commands of spec.hooks, run as the agent's children and watched
 *   pin.h       the .pinned mark of a snapshot, written and read in one place
 *
 * Errors: functions return 0 or a negative code and fill a struct util_err with a
 * message a user can act on. The codes are internal/util's (UTIL_E*), internal/s3's
 * (S3_E*) and the agent's own below, which name the outcomes a command reports
 * differently from an I/O error (docs/commands.md gives each command's exit codes).
 *
 * Warnings: a job that goes on past a problem (a file that cannot be read, a parent
 * that is gone, a source gc skips) writes one line on stderr, "lode JOB: ...", as the
 * commands always have; scripts rely on some of them (the "damaged: KEY" lines of
 * restore, docs/repository.md). The restore engine says its lines through a
 * callback (struct rx's say_cb) so that a test can read them.
 *
 * Costs: each job's header says what it holds and sends.
 */
#ifndef LODE_AGENT_H
#define LODE_AGENT_H

#include <errno.h>

#include "backup.h"
#include "browse.h"
#include "check.h"
#include "forget.h"
#include "gc_run.h"
#include "iosched.h"
#include "restore.h"
#include "storage.h"

/* The repository key does not open config.json, or config.json does not decode. */
#define AGENT_EKEY (-ENOKEY)
/* Damaged data: an object missing, failing authentication or not decoding. */
#define AGENT_EDAMAGED (-EUCLEAN)
/* No snapshot with this id, or the snapshot has no such path (restore's --include). */
#define AGENT_EABSENT (-ESRCH)

#endif
