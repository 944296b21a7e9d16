/*
 * The target side of `lode restore` (docs/repository.md, "Restoring"): putting one
 * snapshot's records under a directory, safely.
 *
 * Every path of the snapshot lands under the target as it was on the node
 * ("/etc/hosts" -> TARGET/etc/hosts). Parents are opened one component at a time
 * with O_NOFOLLOW from the target's descriptor, so neither a symlink in the
 * snapshot nor one already in the target (--overwrite) can lead a write outside it.
 * Files, symlinks and special files are made under a temporary name
 * (".lode-restore-PID-N") in their directory and renamed into place only once whole
 * and with their metadata, so an interrupted restore never leaves a half file under
 * a real name; a later restore with --overwrite removes the temporary files of
 * restores that are no longer running from the directories it restores into. Directories are made
 * 0700 and get their own mode, owner, xattrs and times at the end, deepest first, so that writing
 * into them neither fails nor moves their times.
 *
 * Owners are restored only when running as root; as another user the files belong
 * to that user, and xattrs outside the "user." namespace are skipped and counted.
 *
 * Costs: one descriptor per level of the directory being filled (the last parent
 * is kept open between calls, which is the common case in path order), two
 * descriptors per file in flight, and one copy of each directory's record.
 */
#ifndef LODE_CLI_RESTORE_H
#define LODE_CLI_RESTORE_H

#include <stdbool.h>
#include <stdint.h>

#include "repo/repo.h"

struct rs_target {
    int root;       /* the target directory */
    bool as_root;   /* owners are restored */
    bool overwrite; /* existing entries may be replaced */
    char *dir_path; /* the parent kept open ("" is the target itself) */
    int dir_fd;
    unsigned long seq; /* temporary names: ".lode-restore-PID-SEQ" */
    long pid;
    /* Directories in path order, for the metadata pass. */
    struct repo_file *dirs;
    size_t ndirs, capdirs;
    uint64_t xattrs_skipped;
};

/* A regular file being written under its temporary name. */
struct rs_tmpfile {
    int fd;
    int dir_fd; /* its directory (a duplicate: the kept parent changes) */
    char tmp[48];
};

/*
 * Creates the target (with missing parents) or opens it; one that holds anything is
 * refused unless overwrite (UTIL_EINVAL with a message naming it).
 */
int rs_target_open(struct rs_target *t, const char *dir, bool overwrite, struct util_err *err);
void rs_target_close(struct rs_target *t);

/* A directory: made (0700 until the end) or kept, and remembered for rs_target_finish. */
int rs_make_dir(struct rs_target *t, const struct repo_file *f, struct util_err *err);
/* A symlink, FIFO or device, whole with its metadata (a device only as root; a socket is
 * not made). *skipped is set when nothing was made for a reason that is not an error. */
int rs_make_special(struct rs_target *t, const struct repo_file *f, bool *skipped,
                    struct util_err *err);
/* A regular file's temporary file, empty and 0600. */
int rs_file_open(struct rs_target *t, const struct repo_file *f, struct rs_tmpfile *tf,
                 struct util_err *err);
/* Sets the metadata of f (the record the file was opened for, or a copy) and renames the
 * temporary file into place; closes tf. */
int rs_file_commit(struct rs_target *t, const struct repo_file *f, struct rs_tmpfile *tf,
                   struct util_err *err);
/* Removes the temporary file and closes tf. */
void rs_file_discard(struct rs_tmpfile *tf);
/* The directories' metadata, deepest first. */
int rs_target_finish(struct rs_target *t, struct util_err *err);

/*
 * Opens the repository for a command that reads sealed objects (restore, check):
 * connects, reads the key and unlocks config.json. Prints the error as "lode CMD:
 * ..." and returns the exit code: CLI_INVALID for a wrong key or a config.json that
 * does not decode, CLI_USAGE for anything else (no repository, no key, I/O).
 */
struct storage;
struct storage_opts;
int rx_open_repo(struct storage *st, const struct storage_opts *so, const char *cmd);

#endif
