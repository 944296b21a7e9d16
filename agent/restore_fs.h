/*
 * restore_fs: what the restore target's two files share (restore_fs.c reaches paths in the
 * target, restore_entry.c makes entries there); internal to them, the public API is
 * restore.h's.
 */
#ifndef LODE_AGENT_RESTORE_FS_H
#define LODE_AGENT_RESTORE_FS_H

#include "restore.h"

/* How a directory of the target is held: a path handle, never followed through a link. */
#define RS_DIR_FLAGS (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* A name for a temporary file of this restore, unique in the process. */
void rs_tmp_name(struct rs_target *t, char out[48]);
/*
 * Opens the parent of path ("/a/b/c": "a/b" under the target) one component at a
 * time without following symlinks, creating components that are missing (those
 * the snapshot does not list, such as "/var" above "/var/lib/x"). The result is
 * kept for the next call; *name points into path.
 */
int rs_parent(struct rs_target *t, const char *path, int *dfd, const char **name,
              struct util_err *err);

#endif
