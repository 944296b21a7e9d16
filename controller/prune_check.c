/*
 * The checks of the forget after a backup (prune_int.h; docs/operator.md, "After a
 * backup"; docs/security.md, "A bucket writer"), as `lode forget --key-file` makes them:
 * a listed name is not a snapshot until its bytes open with the repository key.
 *
 *   1. Every pin of the listing is read and its tag checked; one that fails pins nothing.
 *   2. The plan is made; when it deletes nothing, nothing more is read (a forged object
 *      can only cost a real snapshot its place when something is deleted).
 *   3. Otherwise the manifests the plan keeps are read and checked (authenticated, bound
 *      to this namespace, policy, host and id); one that fails is dropped from the catalog
 *      and the plan made again, until every kept manifest has passed.
 *
 * An object that fails is never deleted (`lode check` names it): it is named in a Warning
 * Event on the policy (ObjectIgnored, paced with the policy's other Events) and in the log,
 * and counted in the Backup's message. A read that fails otherwise (not a 404: the object
 * went since the listing, and keeps nothing) ends the run with nothing deleted.
 *
 * Costs: one GET per pin and per kept manifest not read before; what was read is
 * remembered per (policy, host) by ETag and size (internal/prune/trust.h), so a forget in
 * a steady state reads only the manifest of the new backup's snapshot, and only when it
 * deletes something. At most PRUNE_GETS reads at once, each buffered up to
 * PRUNE_OBJECT_MAX bytes.
 */
#include "prune_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *prune_object_key(const struct repo_snapshot *s, bool pin)
{
    struct repo_key k = {.kind = pin ? REPO_KEY_PINNED : REPO_KEY_MANIFEST, .src = s->src};
    memcpy(k.id, s->id, sizeof(k.id));
    return repo_key_build(&k);
}

/* The object keeps no slot (a pin pins nothing): a Warning Event on the policy. */
static void prune_ignored(struct prune_job *j, const char *key, const char *why)
{
    struct ctl *c = j->pr->c;
    char pkey[CTL_KEY_MAX];
    struct util_buf m;
    j->ignored++;
    util_buf_init(&m);
    util_buf_printf(&m,
                    "the forget after a backup ignored %s: %s; it keeps no place in the "
                    "retention and is not deleted (lode check names it)",
                    key, why);
    struct ctl_policy_entry *e = util_map_get(&c->policies, ctl_key(pkey, j->ns, j->policy));
    if (e != NULL)
        ctl_events_policy(c, e, "Warning", "ObjectIgnored", m.data);
    else
        ctl_log(c, 0, "BackupPolicy %s/%s: %s", j->ns, j->policy, m.data);
    util_buf_free(&m);
}

/* Adds a read; j->fetch has room for every entry of the catalog (prune_fetch_room). */
static void prune_fetch_add(struct prune_job *j, size_t at, bool pin, char *key)
{
    struct prune_fetch *f = &j->fetch[j->nfetch++];
    memset(f, 0, sizeof(*f));
    f->j = j;
    f->at = at;
    f->pin = pin;
    f->key = key;
    util_buf_init(&f->body);
}

static void prune_fetch_room(struct prune_job *j)
{
    prune_fetch_clear(j);
    j->fetch = util_calloc(j->cat.n + 1, sizeof(*j->fetch));
}

/* What was read is not what it claims: a pin pins nothing, a manifest keeps no slot. */
static void prune_fetch_refuse(struct prune_job *j, const struct prune_fetch *f)
{
    if (f->pin)
        j->cat.v[f->at].pinned = false;
    else
        j->drop[f->at] = true;
}

static int prune_fetch_sink(const char *data, size_t len, void *arg)
{
    struct prune_fetch *f = arg;
    if (f->body.len + len > PRUNE_OBJECT_MAX) {
        f->too_big = true;
        return 1;
    }
    util_buf_append(&f->body, data, len);
    return 0;
}

static void prune_fetch_more(struct prune_job *j);

static void prune_fetch_done(const struct s3_result *res, void *arg)
{
    struct prune_fetch *f = arg;
    struct prune_job *j = f->j;
    struct repo_snapshot *s = &j->cat.v[f->at];
    struct util_err err = {0};
    f->op = NULL;
    j->fetch_running--;
    j->requests += res->requests;
    if (f->too_big) {
        prune_ignored(j, f->key, "it is larger than any manifest or pin lode writes");
        prune_fetch_refuse(j, f);
    } else if (res->error == S3_ENOTFOUND) {
        prune_fetch_refuse(j, f); /* gone since the listing: nothing to keep, nothing to say */
    } else if (res->error != 0) {
        if (j->fetch_error[0] == '\0')
            snprintf(j->fetch_error, sizeof(j->fetch_error), "cannot read %s: %.200s", f->key,
                     res->message);
    } else {
        int rc = f->pin ? prune_check_pin(&j->keys, s, f->body.data, f->body.len, &err)
                        : prune_check_manifest(&j->keys, s, f->body.data, f->body.len, &err);
        prune_trust_set(j->trust, f->key, res->etag, res->size, rc == 0, err.msg);
        if (rc != 0) {
            prune_ignored(j, f->key, err.msg);
            prune_fetch_refuse(j, f);
        }
    }
    util_buf_free(&f->body);
    prune_fetch_more(j);
}

/* Starts reads up to PRUNE_GETS at once; when all have ended, j->fetch_then. */
static void prune_fetch_more(struct prune_job *j)
{
    while (j->fetch_running < PRUNE_GETS && j->fetch_next < j->nfetch &&
           j->fetch_error[0] == '\0') {
        struct prune_fetch *f = &j->fetch[j->fetch_next++];
        struct util_err err = {0};
        struct s3_opts o = {.deadline_ms = PRUNE_DEADLINE_MS};
        if (s3_get(j->s3, f->key, &o, prune_fetch_sink, prune_fetch_done, f, &f->op, &err) != 0)
            snprintf(j->fetch_error, sizeof(j->fetch_error), "cannot read %s: %.200s", f->key,
                     err.msg);
        else
            j->fetch_running++;
    }
    if (j->fetch_running > 0)
        return;
    if (j->fetch_error[0] != '\0') {
        char msg[2 * PRUNE_MSG];
        snprintf(msg, sizeof(msg), "%s; nothing was deleted", j->fetch_error);
        prune_end(j, "Failed", msg);
        return;
    }
    prune_fetch_clear(j);
    j->fetch_then(j);
}

static void prune_check_plan(struct prune_job *j);

static void prune_kept_read(struct prune_job *j)
{
    if (prune_catalog_drop(&j->cat, j->drop) == 0) {
        j->pr->run_delete(j); /* every kept manifest opened */
        return;
    }
    prune_plan_free(&j->plan);
    prune_check_plan(j);
}

/* Plans, then checks what the plan keeps, planning again without what fails. */
static void prune_check_plan(struct prune_job *j)
{
    struct ctl *c = j->pr->c;
    struct util_err err = {0};
    char key[CTL_KEY_MAX], msg[2 * PRUNE_MSG];
    for (;;) {
        /* The policy as it is now: its entry may have been replaced while reads ran. */
        struct ctl_policy_entry *e = util_map_get(&c->policies, ctl_key(key, j->ns, j->policy));
        if (e == NULL || !e->p.valid) {
            prune_end(j, "Skipped", e == NULL ? "the policy is gone" : "the policy is not valid");
            return;
        }
        if (prune_plan_build(&j->plan, &j->cat, j->ns, j->policy, j->host, &e->p.spec.retention,
                             e->p.bind.zone, &err) != 0) {
            snprintf(msg, sizeof(msg), "%s; nothing was deleted", err.msg);
            prune_end(j, "Failed", msg);
            return;
        }
        if (j->plan.nmanifests == 0) {
            j->pr->run_delete(j);
            return;
        }
        size_t *kept = util_calloc(j->plan.n + 1, sizeof(*kept));
        size_t nkept = prune_kept(&j->plan, kept);
        free(j->drop);
        j->drop = util_calloc(j->cat.n + 1, sizeof(*j->drop));
        prune_fetch_room(j);
        bool dropped = false;
        for (size_t i = 0; i < nkept; i++) {
            const char *why;
            char *okey = prune_object_key(&j->cat.v[kept[i]], false);
            enum prune_verdict v = prune_trust_get(j->trust, okey, &why);
            if (v == PRUNE_BAD) {
                prune_ignored(j, okey, why);
                j->drop[kept[i]] = dropped = true;
            }
            if (v == PRUNE_UNKNOWN && !dropped)
                prune_fetch_add(j, kept[i], false, okey);
            else
                free(okey);
        }
        free(kept);
        if (dropped) {
            /* Known bad from an earlier read: plan again before reading anything. */
            prune_fetch_clear(j);
            prune_catalog_drop(&j->cat, j->drop);
            prune_plan_free(&j->plan);
            continue;
        }
        if (j->nfetch == 0) {
            j->pr->run_delete(j);
            return;
        }
        j->fetch_then = prune_kept_read;
        prune_fetch_more(j);
        return;
    }
}

static void prune_pins_read(struct prune_job *j)
{
    prune_check_plan(j);
}

void prune_check_start(struct prune_job *j)
{
    j->step = PRUNE_CHECKING;
    j->drop = util_calloc(j->cat.n + 1, sizeof(*j->drop));
    prune_fetch_room(j);
    for (size_t i = 0; i < j->cat.n; i++) {
        struct repo_snapshot *s = &j->cat.v[i];
        const char *why;
        if (!s->pinned)
            continue;
        char *pkey = prune_object_key(s, true);
        enum prune_verdict v = prune_trust_get(j->trust, pkey, &why);
        if (v == PRUNE_BAD) {
            prune_ignored(j, pkey, why);
            s->pinned = false;
        }
        if (v == PRUNE_UNKNOWN)
            prune_fetch_add(j, i, true, pkey);
        else
            free(pkey);
    }
    if (j->nfetch == 0) {
        prune_check_plan(j);
        return;
    }
    j->fetch_then = prune_pins_read;
    prune_fetch_more(j);
}
