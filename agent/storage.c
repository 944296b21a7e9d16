/*
 * storage: opening a repository for the storage commands (storage.h has the rules).
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent.h"

int storage_open(struct storage *st, const struct storage_opts *o, struct util_err *err)
{
    const char *url = o->repo != NULL ? o->repo : getenv("LODE_REPOSITORY");
    int rc;

    memset(st, 0, sizeof(*st));
    if (url == NULL || url[0] == '\0')
        return util_err_set(err, UTIL_EINVAL,
                            "no repository: give --repo s3:https://HOST/BUCKET[/PREFIX] or set "
                            "LODE_REPOSITORY");
    /* A BackupRepository with allowPlainHTTP: the controller says so to its Jobs. */
    const char *plain = getenv("LODE_ALLOW_PLAIN_HTTP");
    bool allow_plain = plain != NULL && strcmp(plain, "true") == 0;
    if ((rc = s3_config_from_environment(&st->cfg, o->repo, o->cacert, allow_plain, err)) != 0) {
        if (!allow_plain && strstr(err->msg, "plain") != NULL) {
            struct util_err e = *err;
            util_err_set(err, rc, "%.400s (LODE_ALLOW_PLAIN_HTTP=true)", e.msg);
        }
        return rc;
    }
    /* A BackupRepository's objectLock: what this process uploads is retained (storage.h). */
    const char *lock = getenv("LODE_OBJECT_LOCK");
    if (lock != NULL && lock[0] != '\0' && (rc = s3_lock_parse(&st->cfg, lock, err)) != 0) {
        struct util_err e = *err;
        util_err_set(err, rc, "LODE_OBJECT_LOCK: %.400s", e.msg);
        s3_config_free(&st->cfg);
        return rc;
    }
    if ((rc = s3_sync_open(&st->s3, &st->cfg, o->client, err)) != 0) {
        s3_config_free(&st->cfg);
        return rc;
    }
    st->url = util_strdup(url);
    return 0;
}

void storage_close(struct storage *st)
{
    if (st->s3 != NULL)
        s3_sync_close(st->s3);
    s3_config_free(&st->cfg);
    free(st->url);
    /* The working keys are secrets: do not leave them in freed memory. */
    memset(&st->config, 0, sizeof(st->config));
    memset(st, 0, sizeof(*st));
}

bool storage_has_key(const struct storage_opts *o)
{
    const char *path = o->key_file != NULL ? o->key_file : getenv("LODE_KEY_FILE");
    return path != NULL && path[0] != '\0';
}

int storage_read_key(const struct storage_opts *o, char **pass, size_t *len, struct util_err *err)
{
    const char *path = o->key_file != NULL ? o->key_file : getenv("LODE_KEY_FILE");
    if (path == NULL || path[0] == '\0')
        return util_err_set(err, UTIL_EINVAL,
                            "no repository key: give --key-file FILE or set LODE_KEY_FILE");
    return repo_key_file_read(path, pass, len, err);
}

int storage_load_config(struct storage *st, const struct storage_opts *o, bool need_key,
                        struct util_err *err)
{
    struct util_err e = {0};
    char *data = NULL, *pass = NULL;
    size_t len = 0, passlen = 0;
    int rc;

    if (need_key && (rc = storage_read_key(o, &pass, &passlen, err)) != 0)
        return rc;
    rc = s3_sync_get(st->s3, "config.json", NULL, &data, &len, NULL, &e);
    if (rc == S3_ENOTFOUND) {
        rc = util_err_set(err, UTIL_ENOENT,
                          "no repository at %s (no config.json there): run lode init first",
                          st->url);
        goto out;
    }
    if (rc != 0) {
        rc = util_err_set(err, rc, "cannot read config.json of %s: %s", st->url, e.msg);
        goto out;
    }
    if ((rc = repo_config_decode(&st->config, data, len, &e)) != 0) {
        rc = util_err_set(err, rc, "config.json of %s: %s", st->url, e.msg);
        goto out;
    }
    st->have_config = true;
    if (need_key) {
        /*
         * glibc's mmap threshold follows the largest mapping freed so far: once the
         * key derivation's buffer (scrypt, 32 MiB by default) is freed, every later
         * pack, fetched range or blob of 256 KiB or more would come from the heaps
         * (one per thread), which keep freed memory resident. Fixing the threshold
         * before the derivation keeps each such buffer its own mapping, given back
         * when freed: lode backup's peak went from 88 to 71 MiB and lode restore's
         * from 77 to 65 MiB on the benchmark tree (docs/benchmarks.md).
         */
        mallopt(M_MMAP_THRESHOLD, 256 * 1024);
        if ((rc = repo_config_unlock(&st->config, pass, passlen, &e)) != 0) {
            rc = util_err_set(err, rc, "%s: %s", st->url, e.msg);
            goto out;
        }
        st->unlocked = true;
    }
out:
    if (pass != NULL) {
        memset(pass, 0, passlen);
        free(pass);
    }
    free(data);
    return rc;
}

/* ---- the catalog ---- */

static int storage_catalog_each(const struct s3_object *obj, void *arg)
{
    repo_catalog_add(arg, obj->key, obj->mtime);
    return 0;
}

int storage_catalog(struct storage *st, const char *ns, const char *policy, const char *host,
                    struct repo_catalog *out, struct util_err *err)
{
    struct util_err e = {0};
    char *prefix = repo_key_prefix(REPO_KEY_MANIFEST, ns, ns != NULL ? policy : NULL,
                                   ns != NULL && policy != NULL ? host : NULL);
    int rc;

    repo_catalog_init(out);
    rc = s3_sync_list(st->s3, prefix, NULL, storage_catalog_each, out, NULL, &e);
    free(prefix);
    if (rc != 0) {
        repo_catalog_free(out);
        repo_catalog_init(out);
        return util_err_set(err, rc, "cannot list the snapshots of %s: %s", st->url, e.msg);
    }
    repo_catalog_finish(out);
    if (host != NULL && (ns == NULL || policy == NULL)) {
        /* The host is the last part of a key: the listing could not narrow it. */
        size_t k = 0;
        for (size_t i = 0; i < out->n; i++) {
            if (strcmp(out->v[i].src.host, host) == 0)
                out->v[k++] = out->v[i];
        }
        out->n = k;
    }
    return 0;
}

int storage_get_manifest(struct storage *st, const struct repo_source *src, const char *id,
                         const struct repo_keys *keys, struct repo_manifest *m, int64_t *mtime,
                         struct util_err *err)
{
    struct repo_key k = {.kind = REPO_KEY_MANIFEST, .src = *src};
    struct util_err e = {0};
    struct s3_info info = {0};
    char *key, *data = NULL;
    size_t len = 0;
    int rc;

    snprintf(k.id, sizeof(k.id), "%s", id);
    key = repo_key_build(&k);
    rc = s3_sync_get(st->s3, key, NULL, &data, &len, &info, &e);
    if (rc != 0) {
        rc = util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
        goto out;
    }
    /* A manifest copied or moved to another source or id does not authenticate here. */
    if ((rc = repo_manifest_decode(m, src, id, data, len, keys, &e)) != 0) {
        rc = util_err_set(err, rc, "%s: %s", key, e.msg);
        goto out;
    }
    if (mtime != NULL)
        *mtime = info.mtime;
out:
    free(data);
    free(key);
    return rc;
}

#define STORAGE_GETS 16

struct storage_gets {
    struct storage *st;
    const struct repo_catalog *cat;
    const char *cmd;
    struct repo_manifest *m;
    bool *drop; /* per entry: not a snapshot (named on stderr) or gone */
    size_t skipped;
    size_t next, running;
    int rc;
    struct util_err *err;
};

struct storage_get {
    struct storage_gets *g;
    size_t i;
};

static void storage_gets_start(struct storage_gets *g);

static void storage_get_done(const struct s3_result *res, void *arg)
{
    struct storage_get *one = arg;
    struct storage_gets *g = one->g;
    const struct repo_snapshot *s = &g->cat->v[one->i];
    struct util_err e = {0};
    g->running--;
    if (g->rc == 0) {
        if (res->error == S3_ENOTFOUND) {
            g->drop[one->i] = true; /* forgotten since the listing */
        } else if (res->error != 0) {
            g->rc = util_err_set(g->err, res->error, "cannot read the manifest of %s: %s", s->id,
                                 res->message);
        } else if (repo_manifest_decode(&g->m[one->i], &s->src, s->id, res->body, res->body_len,
                                        NULL, &e) != 0) {
            /* One bad object is damage for lode check to name, not a reason to list
             * nothing (docs/repository.md, "Authenticated manifests and marks"). */
            struct repo_key k = {.kind = REPO_KEY_MANIFEST, .src = s->src};
            memcpy(k.id, s->id, sizeof(k.id));
            char *key = repo_key_build(&k);
            fprintf(stderr, "lode %s: skipping %s: %s\n", g->cmd, key, e.msg);
            free(key);
            repo_manifest_free(&g->m[one->i]);
            g->drop[one->i] = true;
            g->skipped++;
        }
    }
    free(one);
    storage_gets_start(g);
}

static void storage_gets_start(struct storage_gets *g)
{
    while (g->rc == 0 && g->running < STORAGE_GETS && g->next < g->cat->n) {
        struct storage_get *one = util_calloc(1, sizeof(*one));
        struct repo_key k = {.kind = REPO_KEY_MANIFEST, .src = g->cat->v[g->next].src};
        char *key;
        int rc;
        snprintf(k.id, sizeof(k.id), "%s", g->cat->v[g->next].id);
        key = repo_key_build(&k);
        one->g = g;
        one->i = g->next++;
        rc =
            s3_get(s3_sync_client(g->st->s3), key, NULL, NULL, storage_get_done, one, NULL, g->err);
        free(key);
        if (rc != 0) {
            free(one);
            g->rc = rc;
            return;
        }
        g->running++;
    }
}

int storage_get_manifests(struct storage *st, struct repo_catalog *cat, const char *cmd,
                          struct repo_manifest **out, size_t *skipped, struct util_err *err)
{
    struct storage_gets g = {.st = st, .cat = cat, .cmd = cmd, .err = err};
    g.m = util_calloc(cat->n + 1, sizeof(*g.m));
    g.drop = util_calloc(cat->n + 1, sizeof(*g.drop));
    *skipped = 0;
    storage_gets_start(&g);
    while (g.running > 0)
        uv_run(s3_sync_loop(st->s3), UV_RUN_ONCE);
    if (g.rc != 0) {
        for (size_t i = 0; i < cat->n; i++)
            repo_manifest_free(&g.m[i]);
        free(g.m);
        free(g.drop);
        return g.rc;
    }
    size_t k = 0;
    for (size_t i = 0; i < cat->n; i++) {
        if (g.drop[i])
            continue;
        cat->v[k] = cat->v[i];
        g.m[k++] = g.m[i];
    }
    cat->n = k;
    free(g.drop);
    *skipped = g.skipped;
    *out = g.m;
    return 0;
}

int storage_open_keyed(struct storage *st, const struct storage_opts *so, struct util_err *err)
{
    char *pass = NULL;
    size_t len = 0;
    int rc;

    if ((rc = storage_open(st, so, err)) != 0)
        return rc;
    /* The key is looked for first, so that UTIL_EINVAL below means a wrong one. */
    if ((rc = storage_read_key(so, &pass, &len, err)) != 0)
        goto fail;
    memset(pass, 0, len);
    free(pass);
    if ((rc = storage_load_config(st, so, true, err)) != 0) {
        if (rc == UTIL_EINVAL && err != NULL)
            rc = err->code = AGENT_EKEY;
        goto fail;
    }
    return 0;
fail:
    storage_close(st);
    return rc;
}

int storage_create(struct storage *st, const struct repo_config *c, struct util_err *err)
{
    char *json = repo_config_encode(c);
    struct s3_body body = {.data = json, .len = strlen(json), .content_type = "application/json"};
    struct s3_opts o = {.if_none_match = true};
    int rc = s3_sync_put(st->s3, "config.json", &body, &o, NULL, err);
    /* The document holds the wrapped master key: not left in freed memory. */
    memset(json, 0, body.len);
    free(json);
    return rc;
}

int storage_mark_suspicious(struct storage *st, const struct repo_keys *keys,
                            const struct repo_snapshot *snap, bool suspicious, bool *changed,
                            struct util_err *err)
{
    struct repo_key k = {.kind = REPO_KEY_SUSPICIOUS, .src = snap->src};
    struct util_err e = {0};
    char *key;
    int rc = 0;

    *changed = false;
    if (suspicious == snap->suspicious)
        return 0;
    memcpy(k.id, snap->id, sizeof(k.id));
    key = repo_key_build(&k);
    if (suspicious) {
        /* The mark carries its tag: restore and check tell it from one made without
         * the key (docs/repository.md, "Authenticated manifests and marks"). */
        char *tag = repo_mark_encode(keys, &snap->src, snap->id, REPO_KEY_SUSPICIOUS);
        struct s3_body body = {.data = tag, .len = strlen(tag)};
        struct s3_opts o = {.if_none_match = true};
        rc = s3_sync_put(st->s3, key, &body, &o, NULL, &e);
        free(tag);
        if (rc == S3_EEXISTS) { /* marked since the listing */
            rc = 0;
        } else if (rc != 0) {
            util_err_set(err, rc, "cannot write %s: %s", key, e.msg);
        } else {
            *changed = true;
        }
    } else {
        rc = s3_sync_delete(st->s3, key, &e);
        if (rc != 0)
            util_err_set(err, rc, "cannot delete %s: %s", key, e.msg);
        else
            *changed = true;
    }
    free(key);
    return rc;
}
