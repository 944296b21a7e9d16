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
 * the outcome (prune_report.c) in each Backup's status.retention (which makes it once per
 * Backup: a restart sees it and does nothing), with Events (a Forgot about the policy, the
 * warnings on the Backup) and two counters.
 *
 * Bounded: one forget in flight per (policy, host). Backups of the pair that succeed
 * while one runs wait, and are all answered by the next run, which starts after them.
 * A repository that is not Ready, a policy that is gone or not valid, or a listing that
 * fails plan nothing and delete nothing: the status says why. Nothing is retried: the
 * next backup forgets again, and forgetting is idempotent.
 *
 * Costs: per pair with work, its key, the Backups it answers and, while it runs, one S3
 * client, the catalog (about 100 bytes a snapshot) and the plan. The credentials Secret is
 * read once for the forgets of the next PRUNE_SECRET_TTL seconds, not once per forget: a
 * slot's hundreds of forgets on one repository read it a few times, and its bytes are
 * kept that long (a listing that fails drops them, so the next forget reads it again).
 */
#include "prune_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

static void prune_job_free(struct prune_job *j)
{
    for (size_t i = 0; i < j->nbackups; i++)
        free(j->backups[i]);
    for (size_t i = 0; i < j->nnext; i++)
        free(j->next[i]);
    for (size_t i = 0; i < j->nids; i++)
        free(j->ids[i]);
    for (size_t i = 0; i < j->nnext_ids; i++)
        free(j->next_ids[i]);
    free(j->backups);
    free(j->next);
    free(j->ids);
    free(j->next_ids);
    repo_catalog_free(&j->cat);
    prune_plan_free(&j->plan);
    free(j->gone);
    free(j->live);
    free(j->repo);
    free(j->where);
    free(j->key);
    free(j->ns);
    free(j->policy);
    free(j->host);
    free(j);
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
    for (size_t i = 0; i < j->nids; i++)
        free(j->ids[i]);
    t = j->ids;
    cap = j->capi;
    j->ids = j->next_ids;
    j->nids = j->nnext_ids;
    j->capi = j->capni;
    j->next_ids = t;
    j->capni = cap;
    j->nnext_ids = 0;
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
    if (j->step == PRUNE_MANIFESTS && s3_refusal_is_lock(code, message)) {
        j->locked++;
        return;
    }
    if (j->refused++ == 0)
        snprintf(j->first_refusal, sizeof(j->first_refusal), "cannot delete %s: %s%s%s", key, code,
                 code[0] ? ": " : "", message);
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
    if (!obj->is_prefix) {
        repo_catalog_add(&j->cat, obj->key, obj->mtime);
        prune_trust_listed(j->trust, obj->key, obj->etag, obj->size);
    }
    return 0;
}

/* ---- the credentials Secrets read lately ---- */

static void prune_secret_forget(struct ctl_prune *pr, const char *key)
{
    struct prune_secret *s = util_map_del(&pr->secrets, key);
    if (s == NULL)
        return;
    json_decref(s->body);
    free(s);
}

/* Drops the Secrets read PRUNE_SECRET_TTL seconds ago or more (all of them: all). */
static void prune_secrets_sweep(struct ctl_prune *pr, bool all)
{
    int64_t now = ctl_now(pr->c);
    size_t n = 0, it = 0;
    const char *k;
    void *v;
    char **old = util_calloc(pr->secrets.len + 1, sizeof(*old));
    while (util_map_next(&pr->secrets, &it, &k, &v))
        if (all || now - ((struct prune_secret *)v)->at >= PRUNE_SECRET_TTL)
            old[n++] = util_strdup(k);
    for (size_t i = 0; i < n; i++) {
        prune_secret_forget(pr, old[i]);
        free(old[i]);
    }
    free(old);
}

static void prune_listed(const struct s3_result *res, void *arg)
{
    struct prune_job *j = arg;
    char msg[PRUNE_MSG + 64];
    j->op = NULL;
    j->requests += res->requests;
    if (res->error != 0) {
        snprintf(msg, sizeof(msg), "listing the snapshots failed, nothing was deleted: %s",
                 res->message);
        prune_secret_forget(j->pr, j->secret_key);
        prune_finish(j, "Failed", msg);
        prune_next(j);
        return;
    }
    repo_catalog_finish(&j->cat);
    /*
     * A listing that has not reached a snapshot these Backups reported (missing, and newer
     * than every listed one: a store that lists late, a repository changed since) is not
     * the whole truth and decides nothing. An older one missing was forgotten already.
     */
    const char *newest = "";
    for (size_t k = 0; k < j->cat.n; k++)
        if (strcmp(j->cat.v[k].id, newest) > 0)
            newest = j->cat.v[k].id;
    for (size_t i = 0; i < j->nids; i++) {
        bool seen = false;
        for (size_t k = 0; k < j->cat.n && !seen; k++)
            seen = strcmp(j->cat.v[k].id, j->ids[i]) == 0;
        if (!seen && strcmp(j->ids[i], newest) > 0) {
            snprintf(msg, sizeof(msg),
                     "the listing does not show snapshot %.40s, which the backup reported; "
                     "nothing was deleted",
                     j->ids[i]);
            prune_finish(j, "Failed", msg);
            prune_next(j);
            return;
        }
    }
    j->listed_all = true;
    prune_check_start(j); /* then prune_delete_start */
}

/* Deletes what the checked plan forgets (or reports that nothing is to go). */
static void prune_delete_start(struct prune_job *j)
{
    struct util_err err = {0};
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
    if (res->error == 0 && res->status == 200 && json_is_object(res->body) &&
        util_map_get(&j->pr->secrets, j->secret_key) == NULL) {
        struct prune_secret *sec = util_malloc(sizeof(*sec));
        sec->body = json_incref(res->body);
        sec->at = ctl_now(c);
        util_map_set(&j->pr->secrets, j->secret_key, sec);
    }
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
    int rc = s3_client_init(c->loop, &j->s3, &cfg, &o, &err);
    s3_config_free(&cfg);
    if (rc != 0) {
        snprintf(msg, sizeof(msg), "listing the snapshots failed, nothing was deleted: %s",
                 err.msg);
        prune_finish(j, "Failed", msg);
        prune_next(j);
        return;
    }
    /* The repository key: the snapshots the plan keeps are checked with it (prune_check.c). */
    const char *kname = ctl_json_str(view.obj, "spec.credentialsSecret.repositoryKeyKey");
    if (kname == NULL)
        kname = "repository-key";
    const char *b64 = json_string_value(json_object_get(json_object_get(res->body, "data"), kname));
    if (b64 == NULL || kube_base64_decode(b64, strlen(b64), &j->pass, &j->passlen, &err) != 0 ||
        (j->passlen = repo_key_text_len(j->pass, j->passlen)) == 0) {
        snprintf(msg, sizeof(msg),
                 "the credentials Secret %s holds no repository key (%s), which the forget "
                 "needs to check the snapshots it keeps; nothing was forgotten",
                 ctl_json_str(view.obj, "spec.credentialsSecret.name"), kname);
        prune_finish(j, "Skipped", msg);
        prune_next(j);
        return;
    }
    const char *prefix = ctl_json_str(view.obj, "spec.prefix");
    j->repo = util_strdup(ctl_key(key, j->ns, rname));
    j->where = util_asprintf("%s\n%s\n%s", ctl_json_str(view.obj, "spec.endpoint"),
                             ctl_json_str(view.obj, "spec.bucket"), prefix != NULL ? prefix : "");
    prune_key_use(j); /* then prune_list_start */
}

/* Lists the pair's snapshots once the key is unlocked (prune_key.c). */
static void prune_list_start(struct prune_job *j)
{
    struct ctl_prune *pr = j->pr;
    struct util_err err = {0};
    char msg[PRUNE_MSG + 64], scope[CTL_KEY_MAX + 32];
    j->trust = util_map_get(&pr->trusts, j->key);
    if (j->trust == NULL) {
        j->trust = util_malloc(sizeof(*j->trust));
        prune_trust_init(j->trust);
        util_map_set(&pr->trusts, j->key, j->trust);
    }
    snprintf(scope, sizeof(scope), "%s#%llu", j->repo, (unsigned long long)j->key_gen);
    prune_trust_begin(j->trust, scope);
    char *prefix = repo_key_prefix(REPO_KEY_MANIFEST, j->ns, j->policy, j->host);
    struct s3_opts lo = {.deadline_ms = PRUNE_DEADLINE_MS};
    j->step = PRUNE_LISTING;
    repo_catalog_init(&j->cat);
    int rc = s3_list(j->s3, prefix, &lo, prune_list_each, prune_listed, j, &j->op, &err);
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
    prune_secrets_sweep(pr, false);
    if (secret != NULL) {
        ctl_key(j->secret_key, j->ns, secret);
        const struct prune_secret *sec = util_map_get(&pr->secrets, j->secret_key);
        if (sec != NULL) {
            /* Read lately: answered at once, as the GET would be (the caller lets go of j). */
            struct kube_result same = {
                .status = 200, .body = json_incref(sec->body), .message = ""};
            prune_secret_cb(&same, j);
            json_decref(same.body);
            return PRUNE_TRY_STARTED;
        }
    }
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
    const char *policy = ctl_json_str(obj, "spec.policy");
    const char *host = ctl_json_str(obj, "spec.host");

    if (pr == NULL)
        return;
    ctl_key(key, ns, name);
    if (ctl_json_path(obj, "status.retention") != NULL) {
        util_map_del(&pr->done, key); /* recorded: the cache shows it from now on */
        return;
    }
    if (pr->stopped || !c->acting || c->stopping || !ctl_backup_wants_retention(obj) ||
        util_map_get(&pr->done, key) != NULL)
        return;
    /* The prefix is built from these names: only names a key can carry (the CRD's patterns
     * are stricter still). */
    if (repo_name_check(policy, "policy", NULL) != 0 || repo_name_check(host, "host", NULL) != 0)
        return;
    const char *sid = ctl_json_str(obj, "status.snapshot.id");
    ctl_log(c, 1, "forget %s/%s on %s after Backup %s/%s", ns, policy, host, ns, name);
    char *pkey = util_asprintf("%s/%s\n%s", ns, policy, host);
    struct prune_job *j = util_map_get(&pr->jobs, pkey);
    if (j != NULL) {
        free(pkey);
        for (size_t i = 0; i < j->nbackups; i++)
            if (strcmp(j->backups[i], name) == 0)
                return; /* this run answers it already */
        prune_add(&j->next, &j->nnext, &j->capn, name);
        if (sid != NULL)
            prune_add(&j->next_ids, &j->nnext_ids, &j->capni, sid);
        return;
    }
    j = util_calloc(1, sizeof(*j));
    j->pr = pr;
    j->key = pkey;
    j->ns = util_strdup(ns);
    j->policy = util_strdup(policy);
    j->host = util_strdup(host);
    repo_catalog_init(&j->cat);
    util_list_init(&j->key_link);
    prune_add(&j->backups, &j->nbackups, &j->capb, name);
    if (sid != NULL)
        prune_add(&j->ids, &j->nids, &j->capi, sid);
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
    util_map_init(&pr->secrets);
    util_map_init(&pr->keys);
    util_map_init(&pr->trusts);
    util_list_init(&pr->derive_queue);
    pr->run_next = prune_next;
    pr->run_list = prune_list_start;
    pr->run_delete = prune_delete_start;
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
    prune_secrets_sweep(pr, true);
    util_map_close(&pr->secrets);
    prune_keys_close(pr);
    it = 0;
    while (util_map_next(&pr->trusts, &it, &k, &v)) {
        prune_trust_free(v);
        free(v);
    }
    util_map_close(&pr->trusts);
    util_map_close(&pr->done);
    util_map_close(&pr->jobs);
    free(pr);
    c->prune = NULL;
}
