/*
 * prune_int: what the files of the forget after a backup share (prune.c runs it,
 * prune_key.c unlocks the repository key, prune_check.c checks what the plan keeps with
 * it, prune_report.c records its outcome and releases the run; ctl_int.h). Nothing
 * outside them includes this.
 */
#ifndef LODE_CTL_PRUNE_INT_H
#define LODE_CTL_PRUNE_INT_H

#include "ctl_int.h"
#include "prune/prune.h"
#include "prune/trust.h"

#define PRUNE_WAIT_MS     2000u             /* the policy or repository not known yet: look again */
#define PRUNE_WAIT_MAX    300               /* seconds before giving up on them */
#define PRUNE_EVENT_IDS   20                /* a Forgot Event names at most this many snapshots */
#define PRUNE_DEADLINE_MS (10u * 60 * 1000) /* one S3 operation, retries included */
#define PRUNE_MSG         512
/* A credentials Secret read for one forget serves the others of the next this many seconds. */
#define PRUNE_SECRET_TTL 60

/* A key that did not open the repository is tried again after this many seconds (or at
 * once when the Secret's key changes), so a fixed repository is not refused for ever. */
#define PRUNE_KEY_RETRY 600
/* Manifests and pins read at once by one forget. */
#define PRUNE_GETS 4

enum prune_step {
    PRUNE_WAITING,
    PRUNE_SECRET,
    PRUNE_KEY,
    PRUNE_LISTING,
    PRUNE_CHECKING,
    PRUNE_MANIFESTS,
    PRUNE_MARKS
};

enum prune_key_state { PRUNE_KEY_FETCHING, PRUNE_KEY_DERIVING, PRUNE_KEY_READY, PRUNE_KEY_WRONG };

/*
 * The repository key of one BackupRepository, unlocked once per key (prune_key.c): the
 * derivation (scrypt, tens to hundreds of ms) runs on libuv's thread pool, and forgets
 * that need it meanwhile wait on it.
 */
struct prune_keyent {
    struct ctl_prune *pr;
    char *name;  /* "ns/repository" */
    char *where; /* endpoint, bucket and prefix it was unlocked for */
    char *pass;  /* the key as the Secret holds it (zeroed when freed) */
    size_t passlen;
    enum prune_key_state state;
    uint64_t gen; /* a number of its own: the scope of the verdicts made with it */
    int64_t at;   /* when it was unlocked or refused */
    struct repo_config cfg;
    int rc;
    struct util_err err;
    double derive_ms;
    uv_work_t work;
    struct util_list waiters;     /* prune_job.key_link */
    struct util_list derive_link; /* on ctl_prune.derive_queue while it waits its turn */
};

/* One manifest or pin read by a forget (prune_check.c). */
struct prune_fetch {
    struct prune_job *j;
    size_t at; /* its snapshot's position in the catalog */
    bool pin;
    char *key;
    struct util_buf body;
    bool too_big;
    struct s3_op *op;
};

/* One (policy, host) with work: a forget running, or Backups waiting for one. */
struct prune_job {
    struct ctl_prune *pr;
    char *key; /* "ns/policy\nhost" */
    char *ns, *policy, *host;
    char **backups; /* the Backups this run answers */
    size_t nbackups, capb;
    char **next; /* Backups that succeeded while it ran: the next run's */
    size_t nnext, capn;
    /* The snapshot ids those Backups reported (status.snapshot.id): the listing must show
     * every one, or it is not the whole truth and nothing is deleted. */
    char **ids, **next_ids;
    size_t nids, capi, nnext_ids, capni;
    enum prune_step step;
    int64_t since; /* when it began waiting */
    struct kube_request *secret_req;
    char secret_key[CTL_KEY_MAX]; /* "ns/name" of the Secret it reads */
    struct s3_client *s3;
    struct s3_op *op;
    struct repo_catalog cat;
    struct prune_plan plan;
    bool planned;
    bool *gone;
    const char **live; /* the marks of manifests that are gone */
    size_t nlive;
    size_t deleted, marks_deleted, refused;
    size_t locked; /* manifests the storage's Object Lock kept (docs/security.md) */
    unsigned requests;
    char first_refusal[PRUNE_MSG];
    /* The key (prune_key.c) and the checks (prune_check.c). */
    struct prune_keyent *keyent; /* the key it waits for or uses */
    struct util_list key_link;   /* on keyent->waiters while it waits */
    char *repo, *where;          /* "ns/repository", and its place */
    char *pass;                  /* the Secret's key, until the run has its keys */
    size_t passlen;
    struct repo_keys keys; /* a copy of the unlocked keys, for this run */
    uint64_t key_gen;
    struct prune_trust *trust; /* this pair's verdicts (ctl_prune.trusts) */
    bool listed_all;           /* the listing ended: the verdicts may be swept */
    struct prune_fetch *fetch;
    size_t nfetch, fetch_next, fetch_running;
    void (*fetch_then)(struct prune_job *j);
    bool *drop;
    char fetch_error[PRUNE_MSG];
    size_t ignored; /* objects that did not authenticate: no slot, not deleted */
};

/* A credentials Secret as read at `at`, for the forgets of the next PRUNE_SECRET_TTL s. */
struct prune_secret {
    json_t *body;
    int64_t at;
};

/* Per policy, for /metrics. */
struct prune_counts {
    uint64_t forgotten, errors;
};

struct ctl_prune {
    struct ctl *c;
    struct util_map jobs;    /* pair key -> prune_job */
    struct util_map done;    /* "ns/name" of Backups answered, until the cache shows it */
    struct util_map counts;  /* "ns/policy" -> prune_counts */
    struct util_map secrets; /* "ns/name" -> prune_secret: Secrets read lately */
    struct util_map keys;    /* "ns/repository" -> prune_keyent */
    struct util_map trusts;  /* pair key -> prune_trust: what the pair's forgets read */
    uint64_t key_gen;
    struct prune_keyent *deriving; /* the one derivation running (prune_key.c) */
    struct util_list derive_queue; /* prune_keyent.derive_link: those waiting their turn */
    /* prune.c's steps, for the files below it (the layers of ctl_int.h): the run is over
     * (the next one if Backups wait); list once the key is unlocked; delete what the
     * checked plan forgets. */
    void (*run_next)(struct prune_job *j);
    void (*run_list)(struct prune_job *j);
    void (*run_delete)(struct prune_job *j);
    uv_timer_t wait_timer;
    bool stopped;
};

/*
 * prune_key.c: unlocks the repository key of j->repo from the Secret's key (j->pass),
 * or uses the one unlocked for it before, then run_list(j); a key that does not
 * open the repository, or a config.json that cannot be read, ends the run.
 */
void prune_key_use(struct prune_job *j);
void prune_keys_close(struct ctl_prune *pr);

/*
 * prune_check.c: after the listing, checks the pins, plans, and reads the manifests the
 * plan keeps that were not read before, planning again without those that fail until
 * none does; then run_delete(j). Each failing object is named in a Warning Event
 * on the policy (ObjectIgnored) and in the log.
 */
void prune_check_start(struct prune_job *j);

/* prune_report.c: lets go of the run's requests, client and data (the job itself stays). */
void prune_job_release(struct prune_job *j);
/* Lets go of j's key: off the waiters, its copies of the Secret's key and the keys zeroed. */
void prune_key_release(struct prune_job *j);
/* Cancels j's reads of manifests and pins and frees them. */
void prune_fetch_clear(struct prune_job *j);
/* prune_finish, then run_next. */
void prune_end(struct prune_job *j, const char *result, const char *message);

/*
 * Records the outcome in every Backup of the run (status.retention,
 * Events, the counters) and releases the run: result Done, Partial (some keys were
 * refused), Failed (nothing deleted) or Skipped (nothing listed).
 */
void prune_finish(struct prune_job *j, const char *result, const char *message);
/* After the deletions: Done with Forgot Events, or Partial/Failed naming failure or the
 * first refused key. */
void prune_report(struct prune_job *j, const char *failure);

#endif
