/*
 * The repository key of the forget after a backup (prune_int.h; docs/operator.md, "After
 * a backup"): the forget checks the snapshots it keeps with it, so a bucket writer cannot
 * make it delete a real one (docs/security.md, "A bucket writer").
 *
 * The key is the credentials Secret's repositoryKeyKey; it opens the master key that
 * config.json wraps. Unlocking reads config.json (one GET) and, for a passphrase, runs
 * scrypt: 32 MiB and, measured on a loaded 2-core machine, 0.6 s for scrypt-15-8-1 and
 * about 1 s for the default scrypt-15-8-3 (10 us for a generated key; docs/operator.md),
 * far too long for the loop that serves every other request. So
 * it runs on libuv's thread pool, once per repository and key: the keys stay in memory
 * for the controller's life, and a forget whose Secret holds the same key (and whose
 * repository is in the same place) uses them at once, with no request. A key that does
 * not open the repository is remembered too, and tried again after PRUNE_KEY_RETRY
 * seconds or when the Secret's key changes, so that forgets do not each pay scrypt.
 *
 * Costs: per repository its key, the derived keys and config.json's fields (about 400
 * bytes); while a derivation runs, one thread-pool thread and scrypt's 32 MiB.
 */
#include "prune_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <time.h>

#include <openssl/crypto.h>

static void prune_keyent_free(struct prune_keyent *e)
{
    OPENSSL_cleanse(&e->cfg, sizeof(e->cfg));
    if (e->pass != NULL)
        OPENSSL_cleanse(e->pass, e->passlen);
    free(e->pass);
    free(e->name);
    free(e->where);
    free(e);
}

static double prune_ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* On a thread-pool thread: only e->cfg, e->rc, e->err and e->derive_ms are written. */
static void prune_key_work_cb(uv_work_t *w)
{
    struct prune_keyent *e = w->data;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    e->rc = repo_config_unlock(&e->cfg, e->pass, e->passlen, &e->err);
    e->derive_ms = prune_ms_since(&t0);
}

/* The waiters look again: each uses the key, or waits for another, or fails. */
static void prune_key_wake(struct prune_keyent *e)
{
    struct util_list waiting, *l;
    util_list_init(&waiting);
    /* Moved first: a waiter that starts a derivation of its own joins another list. */
    while ((l = util_list_first(&e->waiters)) != NULL) {
        util_list_remove(l);
        util_list_push_back(&waiting, l);
    }
    while ((l = util_list_first(&waiting)) != NULL) {
        struct prune_job *j = util_list_entry(l, struct prune_job, key_link);
        util_list_remove(l);
        j->keyent = NULL;
        prune_key_use(j);
    }
}

static void prune_key_after_cb(uv_work_t *w, int status);

/*
 * Starts e's derivation, or queues it behind the one running: one at a time, so the
 * controller's memory grows by scrypt's 32 MiB at most once, whatever the number of
 * repositories (the chart's limit is 128 MiB). The mmap threshold is fixed first, as
 * lode's (agent/storage.c): glibc would otherwise raise it to the size of the freed
 * 32 MiB buffer, and the next one would stay resident in a thread's heap.
 */
static void prune_key_derive(struct ctl_prune *pr, struct prune_keyent *e)
{
    if (pr->deriving != NULL) {
        util_list_push_back(&pr->derive_queue, &e->derive_link);
        return;
    }
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    pr->deriving = e;
    e->work.data = e;
    int rc = uv_queue_work(pr->c->loop, &e->work, prune_key_work_cb, prune_key_after_cb);
    if (rc != 0)
        prune_key_after_cb(&e->work, rc);
}

static void prune_key_after_cb(uv_work_t *w, int status)
{
    struct prune_keyent *e = w->data;
    struct ctl_prune *pr = e->pr;
    struct ctl *c = pr->c;
    struct util_list *next = util_list_first(&pr->derive_queue);
    pr->deriving = NULL;
    if (next != NULL && !pr->stopped) { /* stopped: the rest are freed with the entries */
        util_list_remove(next);
        prune_key_derive(pr, util_list_entry(next, struct prune_keyent, derive_link));
    }
    e->at = ctl_now(c);
    if (status != 0 || e->rc != 0) {
        e->state = PRUNE_KEY_WRONG;
        if (status != 0)
            util_err_set(&e->err, UTIL_EIO, "the key derivation did not run: %s",
                         uv_strerror(status));
        ctl_log(c, 0, "repository %s: the credentials Secret's repository key does not open it: %s",
                e->name, e->err.msg);
    } else {
        e->state = PRUNE_KEY_READY;
        e->gen = ++e->pr->key_gen;
        ctl_log(c, 1, "repository %s: repository key unlocked in %.1f ms (%s, off the loop)",
                e->name, e->derive_ms, e->cfg.kdf == REPO_KDF_SCRYPT ? "scrypt" : "generated key");
    }
    if (!e->pr->stopped)
        prune_key_wake(e);
}

static void prune_config_done(const struct s3_result *res, void *arg)
{
    struct prune_job *j = arg;
    struct prune_keyent *e = j->keyent;
    struct ctl_prune *pr = j->pr;
    struct util_err err = {0};
    char msg[2 * PRUNE_MSG];
    j->op = NULL;
    j->requests += res->requests;
    int rc = res->error;
    if (rc == 0)
        rc = repo_config_decode(&e->cfg, res->body, res->body_len, &err);
    if (rc == 0) {
        e->state = PRUNE_KEY_DERIVING;
        prune_key_derive(pr, e);
        return;
    }
    /* Not remembered: the next forget reads config.json again. */
    snprintf(msg, sizeof(msg),
             "cannot read the repository's config.json, so the snapshots kept cannot be checked; "
             "nothing was deleted: %s",
             res->error != 0 ? res->message : err.msg);
    util_map_del(&pr->keys, e->name);
    struct util_list *l;
    while ((l = util_list_first(&e->waiters)) != NULL) {
        struct prune_job *w = util_list_entry(l, struct prune_job, key_link);
        util_list_remove(l);
        w->keyent = NULL;
        if (w != j)
            prune_end(w, "Failed", msg);
    }
    prune_keyent_free(e);
    j->keyent = NULL;
    prune_end(j, "Failed", msg);
}

/* A new entry for j's key, with j reading config.json for it. */
static void prune_key_start(struct prune_job *j)
{
    struct ctl_prune *pr = j->pr;
    struct util_err err = {0};
    struct prune_keyent *e = util_calloc(1, sizeof(*e));
    e->pr = pr;
    e->name = util_strdup(j->repo);
    e->where = util_strdup(j->where);
    /* A copy: j keeps its own to compare with when the derivation ends (it waits too). */
    e->pass = util_malloc(j->passlen + 1);
    memcpy(e->pass, j->pass, j->passlen);
    e->pass[j->passlen] = '\0';
    e->passlen = j->passlen;
    e->state = PRUNE_KEY_FETCHING;
    util_list_init(&e->waiters);
    util_list_init(&e->derive_link);
    util_map_set(&pr->keys, e->name, e);
    j->keyent = e;
    util_list_push_back(&e->waiters, &j->key_link);
    j->step = PRUNE_KEY;
    struct s3_opts o = {.deadline_ms = PRUNE_DEADLINE_MS};
    if (s3_get(j->s3, "config.json", &o, NULL, prune_config_done, j, &j->op, &err) != 0) {
        struct s3_result res = {.error = err.code ? err.code : UTIL_EIO, .message = err.msg};
        prune_config_done(&res, j);
    }
}

void prune_key_use(struct prune_job *j)
{
    struct ctl_prune *pr = j->pr;
    struct prune_keyent *e = util_map_get(&pr->keys, j->repo);
    char msg[2 * PRUNE_MSG];
    if (e != NULL && (e->state == PRUNE_KEY_FETCHING || e->state == PRUNE_KEY_DERIVING)) {
        /* One derivation at a time per repository; a waiter for another key looks again
         * when it ends. */
        j->keyent = e;
        j->step = PRUNE_KEY;
        util_list_push_back(&e->waiters, &j->key_link);
        return;
    }
    bool same = e != NULL && strcmp(e->where, j->where) == 0 && e->passlen == j->passlen &&
                CRYPTO_memcmp(e->pass, j->pass, j->passlen) == 0;
    if (same && e->state == PRUNE_KEY_WRONG && ctl_now(pr->c) - e->at >= PRUNE_KEY_RETRY)
        same = false;
    if (!same) {
        if (e != NULL) {
            util_map_del(&pr->keys, e->name);
            prune_keyent_free(e);
        }
        prune_key_start(j);
        return;
    }
    prune_key_release(j);
    if (e->state == PRUNE_KEY_WRONG) {
        snprintf(msg, sizeof(msg),
                 "the repository key in the credentials Secret does not open the repository, so "
                 "the snapshots kept cannot be checked; nothing was deleted: %s",
                 e->err.msg);
        prune_end(j, "Failed", msg);
        return;
    }
    /* A copy: the entry may be replaced (another key) while this run still checks. */
    j->keys = e->cfg.keys;
    j->key_gen = e->gen;
    pr->run_list(j);
}

void prune_keys_close(struct ctl_prune *pr)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&pr->keys, &it, &k, &v))
        prune_keyent_free(v);
    util_map_close(&pr->keys);
}
