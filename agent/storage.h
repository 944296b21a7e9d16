/*
 * storage: what every storage command (init, backup, snapshots, restore, check,
 * forget, mark, gc) does before its own work: find the repository, connect, read
 * and unlock config.json, list the catalog; and the small writes of init (config.json)
 * and mark (.suspicious). docs/repository.md is the user's side of these rules. The
 * flags that fill struct storage_opts, and --policy, are cli/'s (cli/cli.h).
 *
 *   The repository   --repo s3:http(s)://HOST[:PORT]/BUCKET[/PREFIX], else
 *                    $LODE_REPOSITORY; credentials from AWS_ACCESS_KEY_ID,
 *                    AWS_SECRET_ACCESS_KEY, AWS_REGION (default us-east-1);
 *                    --cacert FILE, else $LODE_CACERT, adds a CA (internal/s3 reads
 *                    them all through s3_config_from_environment). Plain
 *                    http:// to a host that is not loopback only with
 *                    LODE_ALLOW_PLAIN_HTTP=true (a BackupRepository's allowPlainHTTP).
 *   The key          --key-file FILE, else $LODE_KEY_FILE: the file's bytes, one
 *                    trailing newline dropped. Only commands that open sealed
 *                    objects need it; listing the catalog does not.
 *
 * Lifecycle: storage_open() (connect, nothing read yet), storage_load_config()
 * (config.json; with the key, unlocked; storage_open_keyed does both), the job's work through
 * st->s3 (the s3_sync_* wrappers, or s3_sync_client()/s3_sync_loop() for several operations at
 * once), storage_close().
 *
 * Exit codes are the caller's: these functions return 0 or a negative code with a
 * message a user can act on in err (S3_* codes from internal/s3, UTIL_ENOENT for
 * "no repository here", UTIL_EINVAL for a wrong key or a bad name, AGENT_EKEY from
 * storage_open_keyed).
 *
 * Costs: opening costs nothing on the network; config.json is one GET and, with
 * the key, one scrypt derivation (32 MiB, about 0.1 s); a catalog is one LIST
 * request per 1,000 keys under snapshots/ and holds about 100 bytes per snapshot.
 */
#ifndef LODE_AGENT_STORAGE_H
#define LODE_AGENT_STORAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"
#include "repo/repo.h"
#include "s3/s3.h"
#include "tz/tz.h"
#include "util/util.h"

/* Where the settings come from; NULL fields fall back to the environment. */
struct storage_opts {
    const char *repo;                    /* --repo, else $LODE_REPOSITORY */
    const char *cacert;                  /* --cacert, else $LODE_CACERT */
    const char *key_file;                /* --key-file, else $LODE_KEY_FILE */
    const struct s3_client_opts *client; /* pacing, timeouts; NULL = defaults */
};

struct storage {
    struct s3_config cfg;
    struct s3_sync *s3;
    char *url;                 /* the repository as given, for messages */
    struct repo_config config; /* after storage_load_config; keys usable when unlocked */
    bool have_config, unlocked;
};

/* Builds the S3 configuration and client; no request is sent. */
int storage_open(struct storage *st, const struct storage_opts *o, struct util_err *err);
void storage_close(struct storage *st);

/*
 * Reads config.json. need_key: the repository key is read (o->key_file, else
 * $LODE_KEY_FILE; missing is an error) and the master key unwrapped; a wrong key
 * is UTIL_EINVAL ("the repository key does not open ..."). Without need_key a key
 * is not read. No config.json is UTIL_ENOENT ("no repository at URL: run lode
 * init").
 */
int storage_load_config(struct storage *st, const struct storage_opts *o, bool need_key,
                        struct util_err *err);

/*
 * Opens the repository for a job that reads sealed objects (restore, check):
 * storage_open, the key, and config.json unlocked. Returns 0; AGENT_EKEY for a key
 * that does not open config.json or a config.json that does not decode; another
 * code for anything else (no repository, no key, I/O). On failure st is closed.
 */
int storage_open_keyed(struct storage *st, const struct storage_opts *so, struct util_err *err);

/* Writes config.json of a new repository (conditionally): S3_EEXISTS when one exists
 * already, and then nothing was changed. */
int storage_create(struct storage *st, const struct repo_config *c, struct util_err *err);

/*
 * Sets (suspicious) or clears a snapshot's .suspicious mark (docs/anomaly.md):
 * *changed is false when it was so already (or became so since the listing). Setting
 * needs keys (the mark's tag); clearing does not (NULL).
 */
int storage_mark_suspicious(struct storage *st, const struct repo_keys *keys,
                            const struct repo_snapshot *snap, bool suspicious, bool *changed,
                            struct util_err *err);

/* Whether a key is given (o->key_file, or $LODE_KEY_FILE set and not empty): commands
 * that need none check what they can with one (pins, in forget and snapshots). */
bool storage_has_key(const struct storage_opts *o);

/* The repository key from o->key_file or $LODE_KEY_FILE (init needs it alone). */
int storage_read_key(const struct storage_opts *o, char **pass, size_t *len, struct util_err *err);

/*
 * The catalog under snapshots/ for ns, policy, host (each NULL: all), joined and
 * sorted newest first (repo_catalog_finish). A listing that fails or is cut short
 * is an error and out is empty: callers never act on part of it.
 */
int storage_catalog(struct storage *st, const char *ns, const char *policy, const char *host,
                    struct repo_catalog *out, struct util_err *err);

/*
 * A manifest: GET and decode (keys NULL: counters only, no key needed). mtime, when
 * not NULL, gets the object's modification time (the snapshot time).
 */
int storage_get_manifest(struct storage *st, const struct repo_source *src, const char *id,
                         const struct repo_keys *keys, struct repo_manifest *m, int64_t *mtime,
                         struct util_err *err);

/*
 * The manifests of every snapshot of a catalog (counters only: no key needed),
 * fetched 16 at a time. A manifest that does not decode or is not in its place (moved
 * or copied: docs/repository.md) is no snapshot: it is named on stderr ("lode CMD:
 * skipping KEY: ...") and dropped from cat, as is one forgotten since the listing;
 * *skipped counts the first kind. out gets the remaining cat->n manifests, in cat's
 * order (the caller frees each with repo_manifest_free, then the array). A read that
 * fails otherwise (I/O) is the error.
 */
int storage_get_manifests(struct storage *st, struct repo_catalog *cat, const char *cmd,
                          struct repo_manifest **out, size_t *skipped, struct util_err *err);

#endif
