/*
 * The target side of `lode restore` (docs/repository.md, "Restoring"): putting one
 * snapshot's records under a directory, safely.
 *
 * Every path of the snapshot lands under the target as it was on the node
 * ("/etc/hosts" -> TARGET/etc/hosts). Parents are opened one component at a time
 * with O_NOFOLLOW from the target's descriptor, so neither a symlink in the
 * snapshot nor one already in the target (--overwrite) can lead a write outside it.
 * Regular files are made without a name (O_TMPFILE) and linked under their real name
 * only once whole and with their metadata, so an interrupted restore never leaves a
 * half file under a real name, nor anything else: the kernel frees an unnamed file with
 * its last descriptor. Where O_TMPFILE is refused, and for symlinks and special files,
 * the entry is made under a temporary name (".lode-restore-PID-N") in its directory and
 * renamed into place; a later restore with --overwrite removes the temporary files of
 * restores that are no longer running from the directories it restores into. A file
 * made with O_TMPFILE costs one directory operation (the link) where a temporary name
 * costs three (create, and rename's removal and insertion), and its making does not
 * lock the directory, so several threads can make files in one directory at once. Directories are
 * made 0700 and get their own mode, owner, xattrs and times at the end, deepest first, so that
 * writing into them neither fails nor moves their times.
 *
 * Owners are restored only when running as root; as another user the files belong
 * to that user, and xattrs outside the "user." namespace are skipped and counted.
 *
 * What a snapshot could use to gain privilege where it is restored is withheld unless
 * asked for (struct rs_opts; docs/repository.md, "What a restore withholds"): set-user-ID
 * and set-group-ID bits are cleared, device nodes are not made, and security.* and
 * trusted.* xattrs (file capabilities, SELinux labels) are not set; each is counted.
 * Modes are set through descriptors, or by name without following a final symlink, so
 * an entry swapped for a symlink under --overwrite never moves a mode outside the target.
 *
 * Costs: one descriptor per level of the directory being filled (the last parent
 * is kept open between calls, which is the common case in path order), two
 * descriptors per file in flight, and one copy of each directory's record.
 *
 * Threads: rs_file_create may run on worker threads (each on its own file); it reads the
 * target's settings, which do not change after rs_target_open. Everything else is for
 * one thread.
 */
#ifndef LODE_AGENT_RESTORE_H
#define LODE_AGENT_RESTORE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "repo/repo.h"
#include "restore_chunks.h"

struct storage;

/* What the caller allows (lode restore's flags). */
struct rs_opts {
    bool overwrite;     /* existing entries may be replaced (--overwrite) */
    bool setid;         /* set-id bits are restored (--setid) */
    bool devices;       /* device nodes are made, as root (--devices) */
    bool system_xattrs; /* security.* and trusted.* xattrs are set, as root (--system-xattrs) */
};

struct rs_target {
    int root;                           /* the target directory */
    bool as_root;                       /* owners are restored */
    bool overwrite;                     /* existing entries may be replaced */
    bool setid, devices, system_xattrs; /* as in struct rs_opts */
    bool tmpfile;                       /* regular files are made with O_TMPFILE */
    bool link_fd;   /* ... and linked with AT_EMPTY_PATH (else through /proc/self/fd) */
    char *dir_path; /* the parent kept open ("" is the target itself) */
    int dir_fd;
    unsigned long seq; /* temporary names: ".lode-restore-PID-SEQ" */
    long pid;
    /* Directories in path order, for the metadata pass. */
    struct repo_file *dirs;
    size_t ndirs, capdirs;
    uint64_t xattrs_skipped;
    /* Withheld by the options: entries whose set-id bits were cleared, security.* and
     * trusted.* xattrs not set, device nodes not made. */
    uint64_t setid_withheld, xattrs_withheld, devices_withheld;
};

/* A regular file being written, unnamed or under its temporary name. */
struct rs_tmpfile {
    int fd;
    int dir_fd; /* its directory (a duplicate: the kept parent changes) */
    bool named; /* it has the temporary name tmp (to remove if it is not put in place) */
    char tmp[48];
};

/*
 * Creates the target (with missing parents) or opens it; one that holds anything is
 * refused unless o->overwrite (UTIL_EINVAL with a message naming it).
 */
int rs_target_open(struct rs_target *t, const char *dir, const struct rs_opts *o,
                   struct util_err *err);
void rs_target_close(struct rs_target *t);

/* A directory: made (0700 until the end) or kept, and remembered for rs_target_finish. */
int rs_make_dir(struct rs_target *t, const struct repo_file *f, struct util_err *err);
/* A symlink, FIFO, socket or device, whole with its metadata (a device only as root and
 * with o->devices). *skipped is set when nothing was made for a reason that is not an
 * error (a device withheld). */
int rs_make_special(struct rs_target *t, const struct repo_file *f, bool *skipped,
                    struct util_err *err);
/* A hard link (f->link set): f's name made a link to the entry f->link names, which this
 * restore made and which must be of f's type; through a temporary name, so an entry
 * already there (--overwrite) is replaced in one rename. */
int rs_make_link(struct rs_target *t, const struct repo_file *f, struct util_err *err);
/* A regular file's temporary file, empty and 0600: rs_file_prepare then rs_file_create. */
int rs_file_open(struct rs_target *t, const struct repo_file *f, struct rs_tmpfile *tf,
                 struct util_err *err);
/* Opens (makes missing) the parent directory of f and names tf's temporary file; tf->fd
 * stays -1. On the thread that owns t. */
int rs_file_prepare(struct rs_target *t, const struct repo_file *f, struct rs_tmpfile *tf,
                    struct util_err *err);
/* Makes the prepared file (any thread): 0, or -errno with tf->fd -1. */
int rs_file_create(const struct rs_target *t, struct rs_tmpfile *tf);
/* Sets the metadata of f (the record the file was opened for, or a copy) and puts the
 * file in place under its real name; closes tf. */
int rs_file_commit(struct rs_target *t, const struct repo_file *f, struct rs_tmpfile *tf,
                   struct util_err *err);
/* Removes the temporary file and closes tf. */
void rs_file_discard(struct rs_tmpfile *tf);
/* The directories' metadata, deepest first. Each directory that fails is told to
 * fail_cb (a message naming it) and counted; returns the count. */
int rs_target_finish(struct rs_target *t, void (*fail_cb)(const char *msg, void *arg), void *arg);

/*
 * The restore itself (restore_run.c reads the snapshot and selects; restore_batch.c
 * fetches regular files' contents, with restore_io.c's buffer pool and writeback).
 *
 * The batch: regular files are gathered in path order, up to a thousand files or
 * 256 MiB; a batch's chunks are sorted by pack and offset and read with ranged GETs
 * of up to 4 MiB, one per run of neighbouring blobs (gaps under 1 MiB are read
 * through rather than asked for again), four at a time, so a pack range is read once
 * and never a whole pack per chunk. Each blob is authenticated (AES-GCM) and checked
 * against its SHA-256 before a byte of it is written; a blob used by several files of
 * a batch is fetched once. Blobs are opened and written on the libuv thread pool, one
 * fetched range per task, so the work spreads over the cores while the loop thread
 * fetches and puts files into place (each as soon as its last chunk is written). A
 * file is made by the first worker that writes a piece of it, so files are made on
 * several threads while the loop fetches (making them was most of the restore's time).
 * Costs: the fetched ranges being fetched or opened (16 MiB in all), one decompressed blob per
 * worker, two descriptors per file of the batch, and the buffers kept for reuse between
 * them (RX_POOL of each kind, none over RX_RANGE_MAX: restore_io.c). What grows with the
 * snapshot is its chunk set, 24 bytes a chunk (restore_chunks.h), held for the whole
 * restore; the file list is read leaf by leaf (restore_run.c), and the batch's pieces
 * carry each chunk whole (48 bytes) only while the batch is planned and fetched.
 *
 * Writeback: the kernel would otherwise hold the restored bytes dirty until the final
 * syncfs (its background writeback starts at 10% of memory, or after 30 s), so that
 * syncfs wrote all of it while nothing else ran (1.4 s of a 5.5 s restore of 814 MB).
 * Once a batch is done, a syncfs of the target starts on a worker unless one is running,
 * so the disk writes while the next batches are fetched and made. The final syncfs
 * stays (docs/repository.md, "Restoring") and then waits for the last batches only.
 */
#define RX_GAP         (1u << 20)     /* unneeded bytes read through rather than skipped */
#define RX_RANGE_MAX   (4u << 20)     /* at most this much in one GET */
#define RX_BATCH_BYTES (256ull << 20) /* plain bytes a batch of files gathers */

/* One chunk to put somewhere (pieces of one blob have the same pack and offset). */
struct rx_piece {
    struct repo_chunk c; /* as the chunk set has it, with the file's hash of it */
    uint32_t file;       /* in the batch */
    uint64_t at;         /* offset in the file */
};

/* One ranged GET: pieces [first, first + n) of one pack. */
struct rx_range {
    uint32_t pack;
    uint64_t start, end;
    size_t first, n;
};

/*
 * The ranged GETs of a batch (pure): sorts pieces by pack and offset, then joins
 * neighbours of one pack into one range while the gap between them is at most
 * RX_GAP and the range at most RX_RANGE_MAX. Returns how many ranges *ranges
 * (grown as needed, capacity *cap) holds.
 */
size_t rx_plan_ranges(struct rx_piece *pieces, size_t n, struct rx_range **ranges, size_t *cap);
/* Whether a batch of nfiles files and bytes plain bytes is full before a file of add
 * bytes: max_files files, or RX_BATCH_BYTES bytes (a batch always takes one file). */
bool rx_batch_full(size_t nfiles, uint64_t bytes, uint64_t add, size_t max_files);

struct rx_batch; /* restore_batch.c */

/* A buffer kept for reuse (restore_io.c). */
#define RX_POOL 4
struct rx_buf {
    uint8_t *p;
    size_t cap;
};

struct rx {
    struct storage *st;
    const struct repo_keys *keys;
    struct repo_source src;
    char id[REPO_ID_LEN + 1];
    struct rx_chunks chunks;                   /* the snapshot's chunk set (restore_chunks.h) */
    char *files_key, *chunks_key;              /* "the file list of snapshot ID", for messages */
    bool listed_incomplete, listed_suspicious; /* the marks the catalog listed */
    struct rs_target t;
    /* The batches (restore_batch.c alone touches them): one being planned, the one
     * before it still being fetched. */
    struct rx_batch *plan, *flight;
    struct repo_chunk *found; /* the chunks of the file being planned (rx_add_file) */
    size_t capfound;
    size_t max_files;  /* files a batch may hold */
    size_t running;    /* GETs in flight */
    uv_mutex_t *locks; /* making the batches' files on the workers */
    uint64_t held;     /* bytes of the ranges being fetched or opened (at most 16 MiB) */
    /* Writeback started behind the restore (restore_io.c): a syncfs on a worker once a
     * batch is done, through a descriptor of the target's own (wb_fd, opened once tried). */
    uv_work_t wb;
    int wb_fd;
    bool wb_tried, wb_busy;
    /* Buffers kept for the next ranges and blobs (restore_io.c, on the loop thread). */
    struct rx_buf bodies[RX_POOL], plains[RX_POOL];
    size_t nbodies, nplains;
    /* The outcome. */
    bool fatal;        /* writing failed or the repository cannot be read: stop */
    unsigned damaged;  /* damaged objects and files not restored because of them */
    unsigned ioerrors; /* entries that could not be written */
    uint64_t nfiles_done, ndirs, nlinks, nspecial, nskipped, bytes, fetched, gets;
    /* Hard links whose first entry is restored too: made once every file is in place
     * (a file is put in place when its last chunk is written, after its record). */
    struct repo_file *hardlinks; /* path, type and link of each */
    size_t nhardlinks, caphardlinks;
    uint64_t nhardlinks_done;
    uint64_t want_files, want_bytes; /* what the restore will bring back */
    double next_progress;            /* when the next progress line is due */
    double sync_s;                   /* the final syncfs's time */
    bool ran;                        /* the target was opened and the restore ran */
    double seconds;                  /* the whole restore's time */
    bool as_root;                    /* owners were restored */
    uint64_t xattrs_skipped;         /* xattrs that could not be set */
    uint64_t setid_withheld, xattrs_withheld, devices_withheld; /* struct rs_target's */
    /* Where the restore's lines go (damaged objects, files not restored, entries that
     * could not be written, progress), one line each without a newline; NULL: nowhere.
     * Set by the caller. */
    void (*say_cb)(const char *line, void *arg);
    void *say_arg;
    /* A dry run (set by the caller): nothing is written, the target is not opened, and
     * each entry the restore would make is told to list_cb in path order instead. */
    bool dry_run;
    void (*list_cb)(const struct repo_file *f, void *arg);
};

/*
 * "/a/b/" -> "/a/b" (an owned string); NULL for a relative path or one with "." or
 * ".." components (an --include the restore refuses).
 */
char *rx_include_norm(const char *arg);

/*
 * Finds the snapshot id in the catalog (ids are unique across sources) and sets
 * x->src and x->id. Returns 0; AGENT_EABSENT when no source has it; UTIL_EINVAL
 * when id is not an id or names snapshots of two sources; another code when the
 * catalog cannot be listed. What went wrong has been said through x->say_cb.
 */
int rx_find(struct rx *x, const char *id);

/*
 * Restores the snapshot x->id of x->src under target: only the paths under inc
 * (normalised by rx_include_norm; none: everything) and the directories above them.
 * Returns 0 when everything was restored; AGENT_EDAMAGED when damaged data was found
 * (the rest is restored); AGENT_EABSENT when an include names nothing of the
 * snapshot (nothing is written); UTIL_EINVAL for a target that is not empty without
 * overwrite; UTIL_EIO when an entry could not be written; another code when the
 * repository cannot be read. With x->dry_run the target is neither opened nor checked
 * (the caller's to check) and the entries go to x->list_cb. Every problem has been said through
 * x->say_cb; the counters in x say what was restored. The caller frees x->files_key, x->chunks_key
 * and the batch (rx_batch_free).
 */
int rx_restore(struct rx *x, const char *target, const struct rs_opts *o, char **inc, size_t ninc);

/* Reporting (restore_run.c), through x->say_cb. A line. */
void rx_say(struct rx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A damaged object or a file not restored because of one: "damaged: ...", counted. */
void rx_damage(struct rx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An entry that could not be written: msg, counted. */
void rx_io_error(struct rx *x, const char *msg);
/* A line every 10 s, so that a long restore shows it is moving. */
void rx_progress(struct rx *x);

/* The batch (restore_batch.c). How many files a batch may hold: enough descriptors for
 * two per file of two batches and the directories above them (raises the soft limit
 * when it can). */
size_t rx_max_files(void);
/* Plans one regular file into the batch (or restores an empty one at once); a full
 * batch is fetched and put into place first. */
void rx_add_file(struct rx *x, const struct repo_file *rec);
/* The last batch fetched and put into place, or, after a fatal error, discarded. */
void rx_batch_finish(struct rx *x);
/* Frees the batch's arrays (at the end of the restore). */
void rx_batch_free(struct rx *x);

#endif
