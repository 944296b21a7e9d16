/*
 * prune_int: what the two files of the forget after a backup share (prune.c runs it,
 * prune_report.c records its outcome and releases the run; calls go from the first to
 * the second only, ctl_int.h). Nothing outside them includes this.
 */
#ifndef LODE_CTL_PRUNE_INT_H
#define LODE_CTL_PRUNE_INT_H

#include "ctl_int.h"
#include "prune/prune.h"

#define PRUNE_WAIT_MS     2000u             /* the policy or repository not known yet: look again */
#define PRUNE_WAIT_MAX    300               /* seconds before giving up on them */
#define PRUNE_EVENTS_EACH 10                /* up to this many forgotten: one Event each */
#define PRUNE_DEADLINE_MS (10u * 60 * 1000) /* one S3 operation, retries included */
#define PRUNE_MSG         512
/* A credentials Secret read for one forget serves the others of the next this many seconds. */
#define PRUNE_SECRET_TTL 60

enum prune_step { PRUNE_WAITING, PRUNE_SECRET, PRUNE_LISTING, PRUNE_MANIFESTS, PRUNE_MARKS };

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
    uv_timer_t wait_timer;
    bool stopped;
};

/* prune_report.c: lets go of the run's requests, client and data (the job itself stays). */
void prune_job_release(struct prune_job *j);

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
