/*
 * BackupRepository resolution: the controller watches BackupRepositories, reads each
 * one's credentials Secret, checks the bucket with one cheap signed request
 * (ListObjectsV2 of one key under the prefix, internal/s3's s3_probe) on the shared
 * curl multi handle, and writes the Ready condition with a reason: BucketReachable,
 * or BucketMissing, AccessDenied, TLS, Unreachable, StorageError, SecretMissing,
 * SecretIncomplete, InvalidSpec (docs/storage-s3.md). A repository is checked again
 * every 10 minutes when Ready, and after a failure with backoff from 10 s doubling to
 * 10 minutes (jittered), so a fixed bucket turns Ready soon and a broken one costs a
 * request every few minutes. A change of the spec checks at once.
 *
 * Costs: per repository its key, spec (a few hundred bytes), one timer, and during a
 * check one GET of the Secret and one S3 request. The Secret's bytes live only for the
 * check.
 */
#ifndef LODE_CTL_REPOSITORY_H
#define LODE_CTL_REPOSITORY_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "kube/kube.h"
#include "s3/s3.h"

struct ctl_repos; /* opaque */

/* A line for the controller's log. */
typedef void (*ctl_repos_log_cb)(int level, const char *msg, void *arg);

/*
 * Watches BackupRepositories in namespace (NULL: all) through kube, whose transport
 * the S3 checks share. Nothing happens before ctl_repos_start().
 */
int ctl_repos_init(uv_loop_t *loop, struct kube_client *kube, const char *namespace,
                   ctl_repos_log_cb log_cb, void *log_arg, struct ctl_repos **out,
                   struct util_err *err);
void ctl_repos_start(struct ctl_repos *r);
/* Stops watching and checking; frees once its handles are closed. Before kube's close. */
void ctl_repos_close(struct ctl_repos *r);
/* True once the repositories have been listed: before, a missing one is not known to be. */
bool ctl_repos_synced(const struct ctl_repos *r);

/*
 * What a policy needs of its repository. Until the controller's own first check of a
 * repository ends, its Ready condition as last written counts (a restart does not stop
 * every policy for the length of a probe).
 */
/* The Ready reason of a repository this process has not checked yet (no status either). */
#define CTL_REPO_CHECKING "Checking"

struct ctl_repo_view {
    const json_t *obj; /* the BackupRepository as last seen (borrowed until the next change) */
    bool ready;
    const char *reason;  /* the Ready reason ("Checking" before any is known) */
    const char *message; /* its message */
};
/* Fills view and returns true when repository ns/name exists. */
bool ctl_repos_get(const struct ctl_repos *r, const char *ns, const char *name,
                   struct ctl_repo_view *view);

/*
 * Called when a repository appears, goes, or its readiness or reason changes (name
 * NULL: the list has been synced), so that the policies naming it are looked at again.
 */
typedef void (*ctl_repos_change_cb)(const char *ns, const char *name, void *arg);
void ctl_repos_set_change_cb(struct ctl_repos *r, ctl_repos_change_cb cb, void *arg);

/* Calls cb with the namespace, name and view of every repository known (no changes meanwhile). */
typedef void (*ctl_repos_each_cb)(const char *ns, const char *name,
                                  const struct ctl_repo_view *view, void *arg);
void ctl_repos_each(const struct ctl_repos *r, ctl_repos_each_cb cb, void *arg);

/* Repositories known, and of them Ready (for tests and metrics). */
size_t ctl_repos_count(const struct ctl_repos *r, size_t *ready);

/* ---- pure parts ---- */

/*
 * Builds the S3 configuration of a BackupRepository object from it and its Secret
 * (both as the API returns them; the Secret's data base64). On failure returns an
 * error, with reason "InvalidSpec" or "SecretIncomplete" and err's message.
 */
int ctl_repo_settings(const json_t *repo, const json_t *secret, struct s3_config *cfg,
                      const char **reason, struct util_err *err);
/* The Ready reason for an s3 error (0: "BucketReachable"). */
const char *ctl_repo_reason(int error, const char *code);
/* Milliseconds to the next check: 10 min when ok, else 10 s x 2^(failures-1) to 10 min, jittered.
 */
uint64_t ctl_repo_next_check_ms(bool ok, unsigned failures, uint32_t rnd);

#endif
