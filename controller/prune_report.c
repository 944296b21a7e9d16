/*
 * The outcome of a forget after a backup (prune_int.h; docs/operator.md, "After a
 * backup"): status.retention on each Backup the run answers, a Forgot Event about the
 * policy (paced, events.c), warnings on the newest Backup, and the counters of /metrics.
 */
#include "prune_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "api/api.h"

/* A status patch or an Event in flight. */
struct prune_write {
    struct ctl_write w; /* first */
    struct ctl *c;
    char *ns, *name;
    bool status; /* a status.retention patch (else an Event) */
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

static void prune_s3_closed_cb(void *arg)
{
    (void)arg;
}

void prune_key_release(struct prune_job *j)
{
    util_list_remove(&j->key_link);
    j->keyent = NULL;
    OPENSSL_cleanse(&j->keys, sizeof(j->keys));
    if (j->pass != NULL)
        OPENSSL_cleanse(j->pass, j->passlen);
    free(j->pass);
    j->pass = NULL;
    j->passlen = 0;
}

void prune_fetch_clear(struct prune_job *j)
{
    for (size_t i = 0; i < j->nfetch; i++) {
        if (j->fetch[i].op != NULL)
            s3_op_cancel(j->fetch[i].op);
        util_buf_free(&j->fetch[i].body);
        free(j->fetch[i].key);
    }
    free(j->fetch);
    j->fetch = NULL;
    j->nfetch = j->fetch_next = j->fetch_running = 0;
}

void prune_job_release(struct prune_job *j)
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
    prune_key_release(j);
    prune_fetch_clear(j);
    free(j->drop);
    j->drop = NULL;
    j->ignored = 0;
    j->fetch_error[0] = '\0';
    if (j->trust != NULL && j->listed_all)
        prune_trust_end(j->trust); /* verdicts of objects no longer listed go */
    j->trust = NULL;
    j->listed_all = false;
    free(j->repo);
    free(j->where);
    j->repo = j->where = NULL;
    repo_catalog_free(&j->cat);
    prune_plan_free(&j->plan);
    j->planned = false;
    free(j->gone);
    free(j->live);
    j->gone = NULL;
    j->live = NULL;
    j->nlive = j->deleted = j->marks_deleted = j->refused = j->locked = 0;
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
        char key[CTL_KEY_MAX];
        if (res->status != 404 && !ctl_ns_deleting(c, res, "the forget's outcome"))
            ctl_log(c, 0, "Backup %s/%s: forget outcome not recorded: %s", pw->ns, pw->name,
                    res->message);
        else if (pw->status && c->prune != NULL) /* the Backup is gone: nothing to wait for */
            util_map_del(&c->prune->done, ctl_key(key, pw->ns, pw->name));
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
    ctl_log(c, type[0] == 'W' ? 0 : 1, "event %s %s on Backup %s/%s: %s", type, reason, j->ns, name,
            message);
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
void prune_finish(struct prune_job *j, const char *result, const char *message)
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
        pw->status = true;
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

/* Whether the forgotten snapshot id's manifest is gone (deleted or absent). */
static bool prune_id_gone(const struct prune_job *j, const char *id)
{
    size_t n = strlen(id);
    for (size_t i = 0; i < j->plan.nmanifests; i++) {
        const char *k = j->plan.manifests[i];
        size_t kl = strlen(k);
        if (kl > n + 5 && strcmp(k + kl - 5, ".json") == 0 && k[kl - n - 6] == '/' &&
            strncmp(k + kl - n - 5, id, n) == 0)
            return j->gone == NULL || j->gone[i];
    }
    return true;
}

void prune_report(struct prune_job *j, const char *failure)
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
    if (j->locked > 0) {
        /* Not a failure: the retention the repository asked for (docs/security.md). */
        snprintf(msg, sizeof(msg),
                 "%zu forgotten snapshot%s of host %s kept: the storage's Object Lock retains "
                 "them; a forget after their retention ends deletes them",
                 j->locked, j->locked == 1 ? "" : "s", j->host);
        prune_event(j, "Normal", "KeptByObjectLock", msg);
    }
    /*
     * What was forgotten is one Event about the policy per forget, naming the Backup and
     * every snapshot, paced and combined with its like (docs/operator.md, "Events"): a
     * fleet's steady state forgets a snapshot on every run, and an Event on each Backup was
     * a request per run at the slot, which the API server shares with everything else.
     */
    const struct prune_host *h = p->nhosts ? &p->hosts[0] : NULL;
    struct util_buf ids;
    size_t nids = 0;
    util_buf_init(&ids);
    for (size_t i = 0; h != NULL && i < h->n; i++) {
        if (p->dec[h->from + i].keep)
            continue;
        const char *id = prune_snapshot(p, h, i)->id;
        if (!prune_id_gone(j, id))
            continue; /* kept by Object Lock: KeptByObjectLock says so */
        if (nids < PRUNE_EVENT_IDS)
            util_buf_printf(&ids, "%s%s", ids.len ? " " : "", id);
        nids++;
    }
    if (nids > 0) {
        char key[CTL_KEY_MAX];
        struct ctl *c = j->pr->c;
        const struct ctl_policy_entry *e =
            util_map_get(&c->policies, ctl_key(key, j->ns, j->policy));
        struct util_buf m;
        util_buf_init(&m);
        if (nids == 1)
            util_buf_printf(&m, "forgot snapshot %s of host %s (Backup %s)", ids.data, j->host,
                            j->backups[j->nbackups - 1]);
        else
            util_buf_printf(&m, "forgot %zu snapshots of host %s (Backup %s): %s", nids, j->host,
                            j->backups[j->nbackups - 1], ids.data);
        if (nids > PRUNE_EVENT_IDS)
            util_buf_printf(&m, " and %zu more", nids - PRUNE_EVENT_IDS);
        if (e != NULL)
            ctl_events_policy(c, e, "Normal", "Forgot", m.data);
        else
            ctl_log(c, 1, "forget %s/%s on %s: %s (the policy is gone: no Event)", j->ns, j->policy,
                    j->host, m.data);
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
    if (j->ignored > 0) {
        size_t l = strlen(msg);
        snprintf(msg + l, sizeof(msg) - l,
                 "; ignored %zu object%s that the repository key does not authenticate "
                 "(ObjectIgnored Events on the policy)",
                 j->ignored, j->ignored == 1 ? "" : "s");
    }
    prune_finish(j, "Done", msg);
}

void prune_end(struct prune_job *j, const char *result, const char *message)
{
    struct ctl_prune *pr = j->pr;
    prune_finish(j, result, message);
    pr->run_next(j);
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
