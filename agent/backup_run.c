/*
 * The steps of one `lode backup` run after the limits are set and the storage is
 * open (docs/repository.md, "Backing up"), in the order that keeps garbage
 * collection safe without locks:
 *
 *   2. the catalog of the source, the parent = its newest good snapshot, and the
 *      parent's manifest (authenticated: the roots of its trees);
 *   3. the run record runs/<source>/<id>.json (binary), naming the parent and (sealed) its
 *      trees, whose server modification time is the time in the id (rewritten once
 *      under the right id when the local clock disagrees with the server's);
 *   4. the parent check (its manifest still exists), then its chunk set and, as
 *      the walk goes, its file list;
 *   5. the walk, new chunks into packs (backup_walk.c, backup_store.c), new
 *      metadata chunks into metadata packs (backup_list.c);
 *   6. the rest of the file list and the chunk set, and the last metadata pack;
 *   7. the anomaly check against the parent and recent good snapshots:
 *      <id>.suspicious on a hit; <id>.incomplete when files failed;
 *   8. the manifest, with If-None-Match: *, never once maxRuntime has passed.
 *
 * Step 1 (nice and the I/O priority) is cmd_backup.c's, before any thread.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "anomaly/anomaly.h"
#include "backup.h"
#include "mcache.h"
#include "meta.h"
#include "storage.h"

#define BACKUP_RECENT 7

/* A key of this snapshot; the caller frees it. */
static char *backup_run_key(const struct backup *b, enum repo_kind kind)
{
    struct repo_key k = {.kind = kind, .src = b->src};
    snprintf(k.id, sizeof(k.id), "%s", b->id);
    return repo_key_build(&k);
}

/* PUTs a mark of this snapshot: its tag (repo_mark_encode). */
static int backup_run_mark(struct backup *b, enum repo_kind kind, struct util_err *err)
{
    char *key = backup_run_key(b, kind), *body = repo_mark_encode(b->keys, &b->src, b->id, kind);
    int rc = backup_put(b, key, body, strlen(body), false, err);
    free(body);
    free(key);
    return rc;
}

/*
 * Writes the run record; its server modification time is the id's time. The
 * first PUT uses the local clock; when the server's second differs, the record
 * is written again under the right id and the first one deleted.
 */
static int backup_run_record(struct backup *b, const char *parent, const struct repo_manifest *pm,
                             int64_t max_runtime, struct util_err *err)
{
    struct repo_run r = {0};
    struct s3_info info = {0};
    uint8_t rnd[8];
    char *key = NULL;
    uint8_t *body = NULL;
    size_t len = 0;
    int64_t t;
    int rc;

    struct timespec now;

    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return util_err_set(err, UTIL_EIO, "no random bytes from OpenSSL");
    /* The id's first 5 hex digits after the time are the start's microsecond, so
     * two backups of one host in the same second order as they ran (retention
     * breaks a tie of times by id, docs/repository.md); 40 random bits remain. */
    clock_gettime(CLOCK_REALTIME, &now);
    uint32_t us = (uint32_t)(now.tv_nsec / 1000);
    rnd[0] = (uint8_t)(us >> 12);
    rnd[1] = (uint8_t)(us >> 4);
    rnd[2] = (uint8_t)((us << 4) | (rnd[2] & 0x0f));
    repo_id_make((int64_t)now.tv_sec, rnd, b->id);
    for (int attempt = 0;; attempt++) {
        snprintf(r.id, sizeof(r.id), "%s", b->id);
        r.src = b->src;
        snprintf(r.parent, sizeof(r.parent), "%s", parent);
        r.max_runtime = max_runtime;
        snprintf(r.agent, sizeof(r.agent), "%s", b->agent);
        if (pm != NULL) {
            /* gc protects what the parent's trees name through this record, even
             * once the parent is forgotten (docs/gc.md). */
            r.has_roots = true;
            r.parent_files = pm->files_root;
            r.parent_chunks = pm->chunks_root;
        }
        body = repo_run_encode(&r, b->keys, &len);
        key = backup_run_key(b, REPO_KEY_RUN);
        if ((rc = backup_put(b, key, body, len, true, err)) != 0 ||
            (rc = s3_sync_head(b->st->s3, key, &info, err)) != 0)
            goto out;
        repo_id_parse(b->id, &t, err);
        if (info.mtime == t || attempt == 1)
            goto out;
        /* The local clock is off: the id takes the server's time. */
        s3_sync_delete(b->st->s3, key, err);
        repo_id_make(info.mtime, rnd, b->id);
        free(key);
        free(body);
    }
out:
    free(key);
    free(body);
    return rc;
}

/*
 * A manifest of this source, read with the key (authenticated, bound to its place):
 * from the node's cache when it holds it (manifests are written once, with
 * If-None-Match), else from the bucket, and then cached. A manifest that does not
 * authenticate is an error either way; only one that does is cached.
 */
static int backup_run_manifest(struct backup *b, const char *id, struct repo_manifest *m,
                               struct util_err *err)
{
    struct repo_key k = {.kind = REPO_KEY_MANIFEST, .src = b->src};
    struct util_err e = {0};
    struct util_buf got;
    char name[REPO_ID_LEN + 16], *key, *data = NULL;
    size_t len = 0;
    int rc;

    if (b->cache == NULL)
        return storage_get_manifest(b->st, &b->src, id, b->keys, m, NULL, err);
    snprintf(name, sizeof(name), "%s.manifest", id);
    if (mcache_read(b->cache, name, MCACHE_ANY, 0, SIZE_MAX, &got, &e) == 0) {
        rc = repo_manifest_decode(m, &b->src, id, (const uint8_t *)got.data, got.len, b->keys, &e);
        util_buf_free(&got);
        if (rc == 0)
            return 0;
        repo_manifest_free(m);
        memset(m, 0, sizeof(*m));
    }
    snprintf(k.id, sizeof(k.id), "%s", id);
    key = repo_key_build(&k);
    rc = s3_sync_get(b->st->s3, key, NULL, &data, &len, NULL, &e);
    if (rc != 0)
        rc = util_err_set(err, rc, "cannot read %s: %s", key, e.msg);
    else if ((rc = repo_manifest_decode(m, &b->src, id, (const uint8_t *)data, len, b->keys, &e)) !=
             0)
        rc = util_err_set(err, rc, "%s: %s", key, e.msg);
    else if (mcache_put(b->cache, name, data, len, &e) != 0)
        mcache_warn(b->cache, name, &e);
    free(data);
    free(key);
    return rc;
}

struct backup_run_parent {
    char id[REPO_ID_LEN + 1];
    struct meta_src ms;
    struct repo_tree_reader tree;
    struct repo_files_reader reader;
    bool have;   /* the snapshot has this parent */
    bool loaded; /* reader and tree hold memory */
};

/* The parent's manifest (authenticated), read before the run record names its trees; a
 * parent whose manifest cannot be read is dropped (p->id emptied). */
static void backup_run_parent_manifest(struct backup *b, struct backup_run_parent *p,
                                       struct repo_manifest *pm)
{
    struct util_err err = {0};
    if (p->id[0] == '\0')
        return;
    if (backup_run_manifest(b, p->id, pm, &err) != 0) {
        fprintf(stderr, "lode backup: the parent %s: %s: backing up without one\n", p->id, err.msg);
        p->id[0] = '\0';
    }
}

/*
 * After the run record: the parent's manifest must still exist (a HEAD; gone: no
 * parent), then its chunk set (into b->idx, leaf by leaf) and file list (a leaf at a time as the
 * walk goes: memory is one chunk a level, not the list); every metadata chunk that opens is noted
 * (backup_meta_seen_cb) so this run reuses it. A parent whose trees cannot be read is dropped.
 */
static void backup_run_parent_load(struct backup *b, struct backup_run_parent *p,
                                   const struct repo_manifest *pm)
{
    struct util_err err = {0};
    struct s3_info info = {0};
    struct repo_key k = {.kind = REPO_KEY_MANIFEST, .src = b->src};
    struct repo_tree_reader cr;
    const uint8_t *recs;
    size_t len;
    char *key;
    int rc;

    if (p->id[0] == '\0')
        return;
    snprintf(k.id, sizeof(k.id), "%s", p->id);
    key = repo_key_build(&k);
    rc = s3_sync_head(b->st->s3, key, &info, &err);
    free(key);
    if (rc != 0) {
        fprintf(stderr, "lode backup: the parent %s is gone (%s): backing up without one\n", p->id,
                err.msg);
        return;
    }
    meta_src_init(&p->ms, b->st, &b->src);
    if (b->cache != NULL)
        meta_src_cache(&p->ms, b->cache);
    repo_tree_reader_init(&cr, b->keys, REPO_TREE_CHUNKS, &pm->chunks_root, meta_fetch_cb, &p->ms);
    cr.loaded = backup_meta_seen_cb;
    cr.loaded_arg = b;
    while ((rc = repo_tree_reader_next(&cr, &recs, &len, &err)) == 1)
        if ((rc = repo_chunkset_leaf_each(recs, len, chunkidx_parent_cb, &b->idx, &err)) != 0)
            break;
    repo_tree_reader_free(&cr);
    if (rc != 0) {
        meta_src_free(&p->ms);
        /* The index's own file failing is the node's problem, not the parent's. */
        if (b->idx.failed != 0) {
            backup_fail(b, b->idx.failed, b->idx.msg);
            return;
        }
        fprintf(stderr, "lode backup: the parent's chunk set: %s: backing up without a parent\n",
                err.msg);
        chunkidx_parent_drop(&b->idx);
        return;
    }
    repo_tree_reader_init(&p->tree, b->keys, REPO_TREE_FILES, &pm->files_root, meta_fetch_cb,
                          &p->ms);
    p->tree.loaded = backup_meta_seen_cb;
    p->tree.loaded_arg = b;
    repo_files_reader_tree(&p->reader, &p->tree);
    p->have = p->loaded = true;
    b->parent_files = &p->reader;
}

/* Frees what the parent's load holds (again: nothing); p->have stays. */
static void backup_run_parent_free(struct backup *b, struct backup_run_parent *p)
{
    if (p->loaded) {
        repo_files_reader_free(&p->reader);
        repo_tree_reader_free(&p->tree);
        meta_src_free(&p->ms);
        p->loaded = false;
    }
    b->parent_files = NULL;
}
/* The anomaly detector's numbers of a manifest (the same for this run's). */
static void backup_run_stats(const struct repo_manifest *m, struct anomaly_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->files = m->files;
    s->bytes = m->bytes;
    s->new_files = m->new_files;
    s->changed_files = m->changed_files;
    s->deleted_files = m->deleted_files;
    s->read_bytes = m->new_bytes;
    s->incompressible_read_bytes = m->raw_new_bytes;
    s->new_bytes = m->new_bytes;
}

/*
 * Runs the detector; true when the snapshot is suspicious (the reasons on stderr and
 * in why, which the termination log carries to the Backup's Suspicious condition).
 */
static bool backup_run_anomaly(struct backup *b, const struct repo_catalog *cat,
                               const struct repo_manifest *m, bool has_parent, char *why,
                               size_t whysize)
{
    struct anomaly_stats now, recent[BACKUP_RECENT];
    struct anomaly_thresholds t;
    struct anomaly_report rep;
    struct util_err err = {0};
    size_t n = 0;
    char line[1024];

    for (size_t i = 0; i < cat->n && n < BACKUP_RECENT; i++) {
        struct repo_manifest pm = {0};
        if (cat->v[i].incomplete || cat->v[i].suspicious)
            continue;
        if (backup_run_manifest(b, cat->v[i].id, &pm, &err) != 0) {
            fprintf(stderr, "lode backup: anomaly check: %s\n", err.msg);
            continue;
        }
        backup_run_stats(&pm, &recent[n++]);
        repo_manifest_free(&pm);
    }
    if (!has_parent)
        n = 0; /* no parent: nothing to compare with */
    backup_run_stats(m, &now);
    now.changed_bytes = b->changed_bytes;
    now.incompressible_changed_bytes = b->raw_changed_bytes;
    t = b->thresholds;
    if (anomaly_check(&t, &now, recent, n, &rep) == 0)
        return false;
    anomaly_report_format(&rep, line, sizeof(line));
    fprintf(stderr, "lode backup: the snapshot looks suspicious: %s\n", line);
    snprintf(why, whysize, "%s", line);
    return true;
}

/* Steps 2 to 8 (the top of this file); fills r, an error in b->fatal. */
void backup_run(struct backup *b, const struct policy *pol, int64_t max_runtime,
                struct backup_result *r)
{
    struct repo_catalog cat;
    struct backup_run_parent parent = {0};
    struct repo_manifest m = {0}, pm = {0};
    struct util_err err = {0};
    struct s3_info info = {0};
    char *key = NULL;
    uint8_t *body = NULL;
    size_t len = 0;
    int rc;

    repo_catalog_init(&cat);
    if (b->fatal != 0) /* the stores could not be set up (backup_store_init) */
        goto stopped;
    if ((rc = storage_catalog(b->st, b->src.ns, b->src.policy, b->src.host, &cat, &err)) != 0)
        goto fail;
    for (size_t i = 0; i < cat.n; i++) {
        if (!cat.v[i].incomplete && !cat.v[i].suspicious) {
            snprintf(parent.id, sizeof(parent.id), "%s", cat.v[i].id);
            break;
        }
    }
    backup_run_parent_manifest(b, &parent, &pm);
    if ((rc = backup_run_record(b, parent.id, parent.id[0] ? &pm : NULL, max_runtime, &err)) != 0) {
        struct util_err e = err;
        util_err_set(&err, rc, "cannot write the run record: %.400s", e.msg);
        goto fail;
    }
    backup_list_init(b);
    backup_run_parent_load(b, &parent, &pm);
    repo_merge_init(&b->merge, b->parent_files);

    if (b->fatal != 0 || !backup_walk(b) || !backup_store_flush(b))
        goto stopped;
    if (repo_merge_finish(&b->merge, &err) != 0)
        fprintf(stderr, "lode backup: the parent's file list: %s\n", err.msg);
    /* The parent's list is done with; its chunk set is in the index. */
    repo_merge_free(&b->merge);
    backup_run_parent_free(b, &parent);

    /* The rest of the file list, the chunk set, and the last metadata pack. */
    if ((rc = backup_list_finish(b, &m.files_root, &m.chunks_root, &err)) != 0)
        goto fail;

    /* The manifest's fields, then the marks it implies. */
    snprintf(m.id, sizeof(m.id), "%s", b->id);
    m.src = b->src;
    snprintf(m.parent, sizeof(m.parent), "%s", parent.have ? parent.id : "");
    m.max_runtime = max_runtime;
    m.incomplete = b->nerrs > 0;
    m.files = b->files;
    m.bytes = b->bytes;
    m.new_files = b->new_files;
    m.changed_files = b->changed_files;
    m.deleted_files = b->merge.deleted;
    m.new_bytes = b->new_bytes;
    m.raw_new_bytes = b->raw_new_bytes;
    m.errors = b->nerrs;
    snprintf(m.agent, sizeof(m.agent), "%s", b->agent);
    m.paths = pol->paths;
    m.npaths = pol->npaths;
    m.errs = b->errs;
    m.nerrs = b->nerrs;
    memcpy(m.excluded, b->excluded, sizeof(m.excluded));
    r->suspicious = backup_run_anomaly(b, &cat, &m, parent.have, r->anomaly, sizeof(r->anomaly));
    m.suspicious = r->suspicious;
    /* The marks carry a tag bound to this snapshot, and the manifest records them. */
    if (r->suspicious && (rc = backup_run_mark(b, REPO_KEY_SUSPICIOUS, &err)) != 0)
        goto fail;
    if (m.incomplete && (rc = backup_run_mark(b, REPO_KEY_INCOMPLETE, &err)) != 0)
        goto fail;
    if (backup_should_stop(b))
        goto stopped;
    /* The manifest counts its own bytes as uploaded: encode, count, encode again
     * until the count's own varint no longer changes the length (twice at most). */
    for (size_t was = 0;;) {
        m.uploaded_bytes = b->uploaded_bytes + was;
        free(body);
        body = repo_manifest_encode(&m, b->keys, &len);
        if (len == was)
            break;
        was = len;
    }
    key = backup_run_key(b, REPO_KEY_MANIFEST);
    if ((rc = backup_put(b, key, body, len, true, &err)) != 0)
        goto fail;
    if ((rc = s3_sync_head(b->st->s3, key, &info, &err)) != 0) {
        /* Written, but its time is unknown: the server's clock is close enough. */
        info.mtime = (int64_t)time(NULL);
    }
    r->written = true;
    r->time = info.mtime;
    if (b->cache != NULL) {
        /* The next run's parent, and one of its anomaly check's recent manifests. */
        char name[REPO_ID_LEN + 16];
        snprintf(name, sizeof(name), "%s.manifest", b->id);
        if (mcache_put(b->cache, name, body, len, &err) != 0)
            mcache_warn(b->cache, name, &err);
    }
    /* The cache keeps what this snapshot's trees may name: the packs this run read or
     * wrote (mcache.h); after a failure of the cache it keeps what it has. */
    if (b->cache != NULL && !b->cache->warned &&
        mcache_evict(b->cache, (int64_t)time(NULL), &err) != 0)
        mcache_warn(b->cache, "eviction", &err);
    goto out;
fail:
    if (b->fatal == 0) {
        b->fatal = rc;
        snprintf(b->fatal_msg, sizeof(b->fatal_msg), "%s", err.msg);
    }
stopped:
    r->error = b->fatal_msg;
    backup_list_abort(b);
out:
    free(key);
    free(body);
    /* The paths and errors are borrowed from the policy and the backup. */
    m.paths = NULL;
    m.npaths = 0;
    m.errs = NULL;
    m.nerrs = 0;
    repo_manifest_free(&m);
    repo_manifest_free(&pm);
    repo_merge_free(&b->merge);
    backup_run_parent_free(b, &parent);
    repo_catalog_free(&cat);
}
