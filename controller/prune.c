/*
 * The forget after a backup (docs/operator.md, "After a backup"; docs/retention.md,
 * "Retention through storage").
 *
 * When the cache sees a Backup Succeeded whose status has no `retention` yet, this file
 * forgets, on the controller's loop, what the policy's retention no longer keeps on that
 * host: it reads the repository's credentials Secret, lists snapshots/<ns>/<policy>/<host>/
 * with internal/s3 on the API client's curl multi handle, asks internal/prune for the plan
 * (the same as `lode forget --policy P --host H`), deletes the forgotten manifests with
 * DeleteObjects, then the .incomplete marks of the manifests that are gone, and records
 * the outcome in each Backup's status.retention (which is what makes it once per Backup:
 * a restart sees it and does nothing), with Events on the Backup and two counters.
 *
 * Bounded: one forget in flight per (policy, host). Backups of the pair that succeed
 * while one runs wait, and are all answered by the next run, which starts after them.
 * A repository that is not Ready, a policy that is gone or not valid, or a listing that
 * fails plan nothing and delete nothing: the status says why. Nothing is retried: the
 * next backup forgets again, and forgetting is idempotent.
 *
 * Costs: per pair with work, its key, the Backups it answers and, while it runs, one S3
 * client, the catalog (about 100 bytes a snapshot) and the plan.
 */
#include "ctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "prune/prune.h"

#define PRUNE_WAIT_MS     2000u             /* the policy or repository not known yet: look again */
#define PRUNE_WAIT_MAX    300               /* seconds before giving up on them */
#define PRUNE_EVENTS_EACH 10                /* up to this many forgotten: one Event each */
#define PRUNE_DEADLINE_MS (10u * 60 * 1000) /* one S3 operation, retries included */
#define PRUNE_MSG         512

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
    enum prune_step step;
    int64_t since; /* when it began waiting */
    struct kube_request *secret_req;
    struct s3_client *s3;
    struct s3_op *op;
    struct repo_catalog cat;
    struct prune_plan plan;
    bool planned;
    bool *gone;
    const char **live; /* the marks of manifests that are gone */
    size_t nlive;
    size_t deleted, marks_deleted, refused;
    unsigned requests;
    char first_refusal[PRUNE_MSG];
};

/* Per policy, for /metrics. */
struct prune_counts {
    uint64_t forgotten, errors;
};

struct ctl_prune {
    struct ctl *c;
    struct util_map jobs;   /* pair key -> prune_job */
    struct util_map done;   /* "ns/name" of Backups answered, until the cache shows it */
    struct util_map counts; /* "ns/policy" -> prune_counts */
    uv_timer_t wait_timer;
    bool stopped;
};

/* A status patch or an Event in flight. */
struct prune_write {
    struct ctl_write w; /* first */
    struct ctl *c;
    char *ns, *name;
};

static void prune_write_free_cb(struct ctl_write *w)
{
    struct prune_write *pw = (struct prune_write *)w;
    free(pw->ns);
    free(pw->name);
    free(pw);
}

static void prune_counted(struct ctl_prune *pr, const char *ns, const char *policy,
                          uint64_t forgotten, bool error)
{
    char key[CTL_KEY_MAX];
    struct prune_counts *n = util_map_get(&pr->counts, ctl_key(key, ns, policy));
    if (n == NULL) {
        n = util_calloc(1, sizeof(*n));
        util_map_set(&pr->counts, key, n);
    }
    n->forgotten += forgotten;
    n->errors += error;
}

static void prune_job_free(struct prune_job *j)
{
    for (size_t i = 0; i < j->nbackups; i++)
        free(j->backups[i]);
    for (size_t i = 0; i < j->nnext; i++)
        free(j->next[i]);
    free(j->backups);
    free(j->next);
    repo_catalog_free(&j->cat);
    prune_plan_free(&j->plan);
    free(j->gone);
    free(j->live);
    free(j->key);
    free(j->ns);
    free(j->policy);
    free(j->host);
    free(j);
}

static void prune_s3_closed_cb(void *arg)
{
    (void)arg;
}

/* Lets go of the run's requests, client and data (the job itself stays). */
static void prune_job_release(struct prune_job *j)
{
    if (j->secret_req != NULL)
        kube_request_cancel(j->secret_req);
    j->secret_req = NULL;
    if (j->op != NULL)
        s3_op_cancel(j->op);
    j->op = NULL;
    if (j->s3 != NULL)
        s3_client_close(j->s3, prune_s3_closed_cb, NULL);
    j->s3 = NULL;
    repo_catalog_free(&j->cat);
    prune_plan_free(&j->plan);
    j->planned = false;
    free(j->gone);
    free(j->live);
    j->gone = NULL;
    j->live = NULL;
    j->nlive = j->deleted = j->marks_deleted = j->refused = 0;
    j->requests = 0;
    j->first_refusal[0] = '\0';
}

/* ---- what the Backups get ---- */

static void prune_write_cb(const struct kube_result *res, void *arg)
{
    struct prune_write *pw = arg;
    struct ctl *c = pw->c;
    ctl_write_untrack(c, &pw->w);
    if (res->error != 0 || res->status >= 300) {
        if (res->status != 404)
            ctl_log(c, 0, "Backup %s/%s: forget outcome not recorded: %s", pw->ns, pw->name,
                    res->message);
    } else if (ctl_json_str(res->body, "kind") != NULL &&
               strcmp(ctl_json_str(res->body, "kind"), "Backup") == 0) {
        ctl_cache_put_backup(c, pw->ns, pw->name, res->body);
    }
    prune_write_free_cb(&pw->w);
}

static struct prune_write *prune_write_new(struct ctl *c, const char *ns, const char *name)
{
    struct prune_write *pw = util_calloc(1, sizeof(*pw));
    pw->c = c;
    pw->ns = util_strdup(ns);
    pw->name = util_strdup(name);
    ctl_write_track(c, &pw->w, prune_write_free_cb);
    return pw;
}

static void prune_event(struct prune_job *j, const char *type, const char *reason,
                        const char *message)
{
    struct ctl *c = j->pr->c;
    const char *name = j->backups[j->nbackups - 1]; /* the newest Backup of the run */
    char keybuf[CTL_KEY_MAX];
    struct ctl_backup *b = util_map_get(&c->backups, ctl_key(keybuf, j->ns, name));
    struct kube_object_ref ref = {API_GROUP_VERSION, "Backup", j->ns, name, b ? b->uid : NULL};
    struct prune_write *pw = prune_write_new(c, j->ns, name);
    struct util_err err = {0};
    ctl_log(c, 1, "event %s %s: %s", type, reason, message);
    if (kube_event_create(c->kube, &ref, type, reason, message, CTL_COMPONENT, ctl_now(c),
                          prune_write_cb, pw, NULL, &err) != 0) {
        ctl_log(c, 0, "Backup %s/%s: event not sent: %s", j->ns, name, err.msg);
        ctl_write_untrack(c, &pw->w);
        prune_write_free_cb(&pw->w);
    }
}

/* "last 2, newest-good 2" */
static void prune_reasons_text(const struct prune_plan *p, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (unsigned r = 0; r < RET_REASON_COUNT && len < size; r++)
        if (p->reasons[r] > 0)
            len += (size_t)snprintf(out + len, size - len, "%s%s %zu", len ? ", " : "",
                                    ret_reason_name(r), p->reasons[r]);
}

/*
 * Records the outcome in every Backup of the run: result Done, Partial (some keys were
 * refused), Failed (nothing deleted) or Skipped (nothing listed), and forgets the run.
 */
static void prune_finish(struct prune_job *j, const char *result, const char *message)
{
    struct ctl_prune *pr = j->pr;
    struct ctl *c = pr->c;
    char now[UTIL_TIME_BUF], reasons[256];
    bool error = strcmp(result, "Done") != 0;

    util_format_utc(ctl_now(c), now, sizeof(now));
    json_t *ret = json_pack("{s:s, s:s, s:s}", "result", result, "time", now, "message", message);
    if (j->planned) {
        prune_reasons_text(&j->plan, reasons, sizeof(reasons));
        json_object_set_new(ret, "kept", json_integer((json_int_t)j->plan.kept));
        json_object_set_new(ret, "forgotten", json_integer((json_int_t)j->deleted));
        json_object_set_new(ret, "reasons", json_string(reasons));
    }
    json_t *patch = json_pack("{s:{s:O}}", "status", "retention", ret);
    for (size_t i = 0; i < j->nbackups; i++) {
        char key[CTL_KEY_MAX];
        struct prune_write *pw = prune_write_new(c, j->ns, j->backups[i]);
        struct kube_resource rb = api_in(&api_backups, j->ns);
        struct util_err err = {0};
        util_map_set(&pr->done, ctl_key(key, j->ns, j->backups[i]), (void *)1);
        if (kube_merge_patch(c->kube, &rb, j->backups[i], "status", patch, prune_write_cb, pw, NULL,
                             &err) != 0) {
            ctl_log(c, 0, "Backup %s/%s: %s", j->ns, j->backups[i], err.msg);
            ctl_write_untrack(c, &pw->w);
            prune_write_free_cb(&pw->w);
        }
    }
    json_decref(patch);
    json_decref(ret);
    prune_counted(pr, j->ns, j->policy, j->deleted, error);
    ctl_log(c, error ? 0 : 1, "forget %s/%s on %s: %s: %s", j->ns, j->policy, j->host, result,
            message);
    if (error)
        prune_event(j, "Warning", strcmp(result, "Skipped") == 0 ? "ForgetSkipped" : "ForgetFailed",
                    message);

    for (size_t i = 0; i < j->nbackups; i++)
        free(j->backups[i]);
    j->nbackups = 0;
    prune_job_release(j);
}

static void prune_start(struct prune_job *j);

/* The run is over: the next one if Backups wait, else the job goes. */
static void prune_next(struct prune_job *j)
{
    struct ctl_prune *pr = j->pr;
    if (j->nnext == 0 || pr->stopped) {
        util_map_del(&pr->jobs, j->key);
        prune_job_free(j);
        return;
    }
    char **t = j->backups;
    size_t cap = j->capb;
    j->backups = j->next;
    j->nbackups = j->nnext;
    j->capb = j->capn;
    j->next = t;
    j->capn = cap;
    j->nnext = 0;
    prune_start(j);
}

/* ---- deleting ---- */

static void prune_deleted_each(const char *key, int error, const char *code, const char *message,
                               void *arg)
{
    struct prune_job *j = arg;
    if (error == 0) {
        if (j->step == PRUNE_MANIFESTS) {
            ssize_t i = prune_manifest_find(&j->plan, key);
            if (i >= 0)
                j->gone[i] = true;
            j->deleted++;
        } else {
            j->marks_deleted++;
        }
        return;
    }
    if (j->refused++ == 0)
        snprintf(j->first_refusal, sizeof(j->first_refusal), "cannot delete %s: %s%s%s", key, code,
                 code[0] ? ": " : "", message);
}

static void prune_report(struct prune_job *j, const char *failure)
{
    char msg[1024];
    const struct prune_plan *p = &j->plan;
    size_t want = p->nmanifests;
    if (failure != NULL || j->refused > 0) {
        snprintf(msg, sizeof(msg),
                 "%zu of %zu forgotten manifests and %zu of %zu .incomplete marks deleted; %s",
                 j->deleted, want, j->marks_deleted, j->nlive,
                 failure != NULL ? failure : j->first_refusal);
        prune_finish(j, j->deleted > 0 || j->marks_deleted > 0 ? "Partial" : "Failed", msg);
        return;
    }
    /* Events name what was forgotten: one each, or one listing them when there are many. */
    const struct prune_host *h = p->nhosts ? &p->hosts[0] : NULL;
    struct util_buf ids;
    util_buf_init(&ids);
    for (size_t i = 0; h != NULL && i < h->n; i++) {
        if (p->dec[h->from + i].keep)
            continue;
        const char *id = prune_snapshot(p, h, i)->id;
        if (j->deleted <= PRUNE_EVENTS_EACH) {
            snprintf(msg, sizeof(msg), "forgot snapshot %s of host %s (retention of %s)", id,
                     j->host, j->policy);
            prune_event(j, "Normal", "Forgot", msg);
        } else {
            util_buf_printf(&ids, "%s%s", ids.len ? " " : "", id);
        }
    }
    if (j->deleted > PRUNE_EVENTS_EACH) {
        struct util_buf m;
        util_buf_init(&m);
        util_buf_printf(&m, "forgot %zu snapshots of host %s (retention of %s): %s", j->deleted,
                        j->host, j->policy, ids.data);
        prune_event(j, "Normal", "Forgot", m.data);
        util_buf_free(&m);
    }
    util_buf_free(&ids);
    char reasons[256];
    prune_reasons_text(p, reasons, sizeof(reasons));
    snprintf(msg, sizeof(msg),
             "kept %zu (%s), forgot %zu: deleted %zu manifest%s and %zu .incomplete mark%s in %u "
             "request%s",
             p->kept, reasons[0] ? reasons : "none", p->forgotten, j->deleted,
             j->deleted == 1 ? "" : "s", j->marks_deleted, j->marks_deleted == 1 ? "" : "s",
             j->requests, j->requests == 1 ? "" : "s");
    prune_finish(j, "Done", msg);
}

static void prune_marks_done(const struct s3_result *res, void *arg)
{
    struct prune_job *j = arg;
    j->op = NULL;
    j->requests += res->requests;
    prune_report(j, res->error != 0 && res->error != S3_EPARTIAL ? res->message : NULL);
    prune_next(j);
}

static void prune_manifests_done(const struct s3_result *res, void *arg)
{
    struct prune_job *j = arg;
    struct util_err err = {0};
    j->op = NULL;
    j->requests += res->requests;
    /* Marks go only after their manifests, even when some manifests were refused. */
    j->live = util_calloc(j->plan.nmarks ? j->plan.nmarks : 1, sizeof(*j->live));
    j->nlive = prune_marks_after(&j->plan, j->gone, j->live);
    const char *failure = res->error != 0 && res->error != S3_EPARTIAL ? res->message : NULL;
    if (j->nlive == 0 || failure != NULL) {
        prune_report(j, failure);
        prune_next(j);
        return;
    }
    j->step = PRUNE_MARKS;
    struct s3_opts o = {.deadline_ms = PRUNE_DEADLINE_MS};
    if (s3_delete_objects(j->s3, j->live, j->nlive, &o, prune_deleted_each, prune_marks_done, j,
                          &j->op, &err) != 0) {
        prune_report(j, err.msg);
        prune_next(j);
    }
}

/* ---- listing and planning ---- */

static int prune_list_each(const struct s3_object *obj, void *arg)
{
    struct prune_job *j = arg;
    if (!obj->is_prefix)
        repo_catalog_add(&j->cat, obj->key, obj->mtime);
    return 0;
}

static void prune_listed(const struct s3_result *res, void *arg)
{
    struct prune_job *j = arg;
    struct ctl *c = j->pr->c;
    struct util_err err = {0};
    char key[CTL_KEY_MAX], msg[PRUNE_MSG + 64];
    j->op = NULL;
    j->requests += res->requests;
    if (res->error != 0) {
        snprintf(msg, sizeof(msg), "listing the snapshots failed, nothing was deleted: %s",
                 res->message);
        prune_finish(j, "Failed", msg);
        prune_next(j);
        return;
    }
    repo_catalog_finish(&j->cat);
    /* The policy as it is now: its entry may have been replaced while the listing ran. */
    struct ctl_policy_entry *e = util_map_get(&c->policies, ctl_key(key, j->ns, j->policy));
    if (e == NULL || !e->p.valid) {
        prune_finish(j, "Skipped", e == NULL ? "the policy is gone" : "the policy is not valid");
        prune_next(j);
        return;
    }
    if (prune_plan_build(&j->plan, &j->cat, j->ns, j->policy, j->host, &e->p.spec.retention,
                         e->p.bind.zone, &err) != 0) {
        snprintf(msg, sizeof(msg), "%s; nothing was deleted", err.msg);
        prune_finish(j, "Failed", msg);
        prune_next(j);
        return;
    }
    j->planned = true;
    j->gone = util_calloc(j->plan.nmanifests ? j->plan.nmanifests : 1, sizeof(*j->gone));
    if (j->plan.nmanifests == 0) {
        prune_report(j, NULL);
        prune_next(j);
        return;
    }
    j->step = PRUNE_MANIFESTS;
    struct s3_opts o = {.deadline_ms = PRUNE_DEADLINE_MS};
    if (s3_delete_objects(j->s3, (const char *const *)j->plan.manifests, j->plan.nmanifests, &o,
                          prune_deleted_each, prune_manifests_done, j, &j->op, &err) != 0) {
        prune_report(j, err.msg);
        prune_next(j);
    }
}

static void prune_secret_cb(const struct kube_result *res, void *arg)
{
    struct prune_job *j = arg;
    struct ctl *c = j->pr->c;
    const char *reason, *rname;
    struct s3_config cfg;
    struct util_err err = {0};
    char key[CTL_KEY_MAX], msg[PRUNE_MSG + 64];
    struct s3_client_opts o = {.http = kube_client_http(c->kube),
                               .deadline_ms = PRUNE_DEADLINE_MS,
                               .user_agent = "lodestore-controller"};

    j->secret_req = NULL;
    struct ctl_policy_entry *e = util_map_get(&c->policies, ctl_key(key, j->ns, j->policy));
    rname = e != NULL && e->p.valid ? e->p.spec.repository : NULL;
    if (res->error != 0 || res->status >= 300) {
        snprintf(msg, sizeof(msg), "the repository's credentials Secret cannot be read: %s",
                 res->message[0] ? res->message : "not found");
        prune_finish(j, "Skipped", msg);
        prune_next(j);
        return;
    }
    struct ctl_repo_view view;
    if (rname == NULL || !ctl_repos_get(c->repos, j->ns, rname, &view) || !view.ready) {
        prune_finish(j, "Skipped", "the policy or its repository changed; nothing was listed");
        prune_next(j);
        return;
    }
    if (ctl_repo_settings(view.obj, res->body, &cfg, &reason, &err) != 0) {
        snprintf(msg, sizeof(msg), "repository %s: %s: %s", rname, reason, err.msg);
        prune_finish(j, "Skipped", msg);
        prune_next(j);
        return;
    }
    char *prefix = repo_key_prefix(REPO_KEY_MANIFEST, j->ns, j->policy, j->host);
    struct s3_opts lo = {.deadline_ms = PRUNE_DEADLINE_MS};
    int rc = s3_client_init(c->loop, &j->s3, &cfg, &o, &err);
    s3_config_free(&cfg);
    if (rc == 0) {
        j->step = PRUNE_LISTING;
        repo_catalog_init(&j->cat);
        rc = s3_list(j->s3, prefix, &lo, prune_list_each, prune_listed, j, &j->op, &err);
    }
    free(prefix);
    if (rc != 0) {
        snprintf(msg, sizeof(msg), "listing the snapshots failed, nothing was deleted: %s",
                 err.msg);
        prune_finish(j, "Failed", msg);
        prune_next(j);
    }
}

enum prune_try { PRUNE_TRY_WAIT, PRUNE_TRY_STARTED, PRUNE_TRY_ENDED };

/* Starts the run when the policy and its repository are known. */
static enum prune_try prune_try(struct prune_job *j)
{
    struct ctl_prune *pr = j->pr;
    struct ctl *c = pr->c;
    char key[CTL_KEY_MAX], msg[PRUNE_MSG + 600];
    struct util_err err = {0};
    bool late = ctl_now(c) - j->since > PRUNE_WAIT_MAX;

    struct ctl_policy_entry *e = util_map_get(&c->policies, ctl_key(key, j->ns, j->policy));
    if (e == NULL && !ctl_cache_synced(c) && !late)
        return PRUNE_TRY_WAIT;
    if (e == NULL || !e->p.valid) {
        prune_finish(j, "Skipped",
                     e == NULL ? "the policy does not exist" : "the policy is not valid");
        return PRUNE_TRY_ENDED;
    }
    struct ctl_repo_view view;
    bool known = ctl_repos_get(c->repos, j->ns, e->p.spec.repository, &view);
    bool pending = known ? !view.ready && strcmp(view.reason, CTL_REPO_CHECKING) == 0
                         : !ctl_repos_synced(c->repos);
    if (pending && !late)
        return PRUNE_TRY_WAIT;
    if (!known || !view.ready) {
        snprintf(msg, sizeof(msg), "the BackupRepository %s is %s%s%s%s; nothing was forgotten",
                 e->p.spec.repository, !known ? "missing" : "not Ready: ", known ? view.reason : "",
                 known && view.message[0] ? ": " : "", known ? view.message : "");
        prune_finish(j, "Skipped", msg);
        return PRUNE_TRY_ENDED;
    }
    const json_t *repo = view.obj;
    const char *secret = ctl_json_str(repo, "spec.credentialsSecret.name");
    struct kube_resource r = {"", "v1", "secrets", j->ns};
    j->step = PRUNE_SECRET;
    if (secret == NULL ||
        kube_get(c->kube, &r, secret, NULL, prune_secret_cb, j, &j->secret_req, &err) != 0) {
        prune_finish(j, "Skipped",
                     secret == NULL ? "the repository names no credentials Secret" : err.msg);
        return PRUNE_TRY_ENDED;
    }
    return PRUNE_TRY_STARTED;
}

static void prune_wait_cb(uv_timer_t *t);

static void prune_start(struct prune_job *j)
{
    j->step = PRUNE_WAITING;
    j->since = ctl_now(j->pr->c);
    switch (prune_try(j)) {
    case PRUNE_TRY_ENDED:
        prune_next(j);
        break;
    case PRUNE_TRY_WAIT:
        if (!uv_is_active((uv_handle_t *)&j->pr->wait_timer))
            uv_timer_start(&j->pr->wait_timer, prune_wait_cb, PRUNE_WAIT_MS, 0);
        break;
    case PRUNE_TRY_STARTED:
        break;
    }
}

static void prune_wait_cb(uv_timer_t *t)
{
    struct ctl_prune *pr = t->data;
    struct prune_job **waiting = util_calloc(pr->jobs.len + 1, sizeof(*waiting));
    size_t n = 0, it = 0;
    const char *k;
    void *v;
    while (util_map_next(&pr->jobs, &it, &k, &v))
        if (((struct prune_job *)v)->step == PRUNE_WAITING && ((struct prune_job *)v)->nbackups)
            waiting[n++] = v;
    bool again = false;
    for (size_t i = 0; i < n; i++) {
        enum prune_try r = prune_try(waiting[i]);
        if (r == PRUNE_TRY_WAIT)
            again = true;
        else if (r == PRUNE_TRY_ENDED)
            prune_next(waiting[i]);
    }
    free(waiting);
    if (again)
        uv_timer_start(t, prune_wait_cb, PRUNE_WAIT_MS, 0);
}

/* ---- the hooks ---- */

static void prune_add(char ***v, size_t *n, size_t *cap, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i], name) == 0)
            return;
    *v = util_grow(*v, cap, *n + 1, sizeof(**v));
    (*v)[(*n)++] = util_strdup(name);
}

void ctl_prune_seen(struct ctl *c, const char *ns, const char *name, const json_t *obj)
{
    struct ctl_prune *pr = c->prune;
    char key[CTL_KEY_MAX];
    const char *phase = ctl_json_str(obj, "status.phase");
    const char *policy = ctl_json_str(obj, "spec.policy");
    const char *host = ctl_json_str(obj, "spec.host");

    if (pr == NULL)
        return;
    ctl_key(key, ns, name);
    if (ctl_json_path(obj, "status.retention") != NULL) {
        util_map_del(&pr->done, key); /* recorded: the cache shows it from now on */
        return;
    }
    if (pr->stopped || !c->acting || c->stopping || phase == NULL ||
        strcmp(phase, "Succeeded") != 0 || policy == NULL || host == NULL ||
        ctl_json_path(obj, "metadata.deletionTimestamp") != NULL ||
        util_map_get(&pr->done, key) != NULL)
        return;
    /* The prefix is built from these names: only names a key can carry (the CRD's patterns
     * are stricter still). */
    if (repo_name_check(policy, "policy", NULL) != 0 || repo_name_check(host, "host", NULL) != 0)
        return;
    ctl_log(c, 1, "forget %s/%s on %s after Backup %s/%s", ns, policy, host, ns, name);
    char *pkey = util_asprintf("%s/%s\n%s", ns, policy, host);
    struct prune_job *j = util_map_get(&pr->jobs, pkey);
    if (j != NULL) {
        free(pkey);
        for (size_t i = 0; i < j->nbackups; i++)
            if (strcmp(j->backups[i], name) == 0)
                return; /* this run answers it already */
        prune_add(&j->next, &j->nnext, &j->capn, name);
        return;
    }
    j = util_calloc(1, sizeof(*j));
    j->pr = pr;
    j->key = pkey;
    j->ns = util_strdup(ns);
    j->policy = util_strdup(policy);
    j->host = util_strdup(host);
    repo_catalog_init(&j->cat);
    prune_add(&j->backups, &j->nbackups, &j->capb, name);
    util_map_set(&pr->jobs, pkey, j);
    prune_start(j);
}

void ctl_prune_init(struct ctl *c)
{
    struct ctl_prune *pr = util_calloc(1, sizeof(*pr));
    pr->c = c;
    util_map_init(&pr->jobs);
    util_map_init(&pr->done);
    util_map_init(&pr->counts);
    uv_timer_init(c->loop, &pr->wait_timer);
    pr->wait_timer.data = pr;
    c->prune = pr;
}

static void prune_timer_closed_cb(uv_handle_t *h)
{
}

void ctl_prune_stop(struct ctl *c)
{
    struct ctl_prune *pr = c->prune;
    size_t it = 0;
    const char *k;
    void *v;
    if (pr == NULL || pr->stopped)
        return;
    pr->stopped = true;
    while (util_map_next(&pr->jobs, &it, &k, &v)) {
        prune_job_release(v);
        prune_job_free(v);
    }
    util_map_close(&pr->jobs);
    util_map_init(&pr->jobs);
    uv_close((uv_handle_t *)&pr->wait_timer, prune_timer_closed_cb);
}

void ctl_prune_close(struct ctl *c)
{
    struct ctl_prune *pr = c->prune;
    size_t it = 0;
    const char *k;
    void *v;
    if (pr == NULL)
        return;
    while (util_map_next(&pr->counts, &it, &k, &v))
        free(v);
    util_map_close(&pr->counts);
    util_map_close(&pr->done);
    util_map_close(&pr->jobs);
    free(pr);
    c->prune = NULL;
}

void ctl_prune_metrics(struct ctl *c, struct util_buf *b)
{
    struct ctl_prune *pr = c->prune;
    if (pr == NULL)
        return;
    static const char *const fams[2][2] = {
        {"lodestore_snapshots_forgotten_total",
         "Snapshots the controller forgot after backups (manifests deleted)."},
        {"lodestore_forget_errors_total",
         "Forgets after a backup that did not finish: skipped, failed or partial."},
    };
    for (size_t f = 0; f < 2; f++) {
        size_t it = 0;
        const char *k;
        void *v;
        ctl_metrics_family(b, fams[f][0], "counter", fams[f][1]);
        while (util_map_next(&pr->counts, &it, &k, &v)) {
            const struct prune_counts *n = v;
            const char *l[] = {"policy", k, NULL};
            ctl_metrics_sample(b, fams[f][0], l, (double)(f == 0 ? n->forgotten : n->errors));
        }
    }
}
