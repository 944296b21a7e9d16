/*
 * check: is the repository whole? (docs/repository.md, "Checking"); the command is
 * cli/cmd_check.c.
 *
 * Structure, always: config.json decodes and the key opens it; every run record
 * parses; every snapshot's manifest decodes, authenticates and is in its place, its
 * marks carry their tags, its file list and chunk set trees exist and open, every chunk a file
 * names is in the chunk set with the file's size adding up, and every chunk of the set is in the
 * table of a listed pack at the place the set says. A pack's table is read from its tail (one
 * ranged GET of 64 KiB, a second when the table is longer), so this reads about 45 bytes a chunk,
 * not the data. With --read-data every pack is read whole: its SHA-256 must be its
 * name and every blob must authenticate, decompress and hash to its chunk.
 *
 * Pack reads run four at a time. Memory: the pack tables (about 60 bytes a chunk),
 * one snapshot's chunk set and one chunk a level of its file list at a time, and with
 * --read-data four packs.
 *
 * Every damaged object is named on stderr ("damaged: KEY: why"), once.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "agent.h"
#include "meta.h"
#include "pin.h"

#define CK_INFLIGHT 4
#define CK_TAIL     (64u * 1024)
#define CK_PACK_MAX (64ull << 20) /* a pack larger than this is damage, not read */

/* One listed pack and what was learnt of it. */
struct ck_pack {
    struct repo_source src;
    uint8_t hash[REPO_HASH_LEN];
    uint64_t size;
    struct repo_chunk *table; /* sorted by hash; NULL when unreadable */
    size_t n;
    bool damaged, tried;
    size_t need; /* the tail was too short: this many bytes are needed */
};

struct ck {
    struct storage *st;
    const struct repo_keys *keys;
    bool read_data;
    struct ck_pack *packs;
    size_t npacks, cappacks;
    size_t next, running;
    unsigned damaged, unexpected;
    bool failed; /* the repository could not be read: the answer is incomplete */
    uint64_t read_bytes, chunks_read;
};

static void ck_damage(struct ck *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ck_damage(struct ck *k, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "damaged: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    k->damaged++;
}

static char *ck_pack_key(const struct ck_pack *p)
{
    struct repo_key key = {.kind = REPO_KEY_PACK, .src = p->src};
    memcpy(key.pack, p->hash, REPO_HASH_LEN);
    return repo_key_build(&key);
}

static int ck_src_cmp(const struct repo_source *a, const struct repo_source *b)
{
    int c = strcmp(a->ns, b->ns);
    if (c == 0)
        c = strcmp(a->policy, b->policy);
    if (c == 0)
        c = strcmp(a->host, b->host);
    return c;
}

static int ck_pack_cmp(const void *pa, const void *pb)
{
    const struct ck_pack *a = pa, *b = pb;
    int c = ck_src_cmp(&a->src, &b->src);
    return c != 0 ? c : memcmp(a->hash, b->hash, REPO_HASH_LEN);
}

static int ck_chunk_cmp(const void *pa, const void *pb)
{
    return memcmp(((const struct repo_chunk *)pa)->hash, ((const struct repo_chunk *)pb)->hash,
                  REPO_HASH_LEN);
}

/* ---- listing ---- */

static int ck_list_pack(const struct s3_object *o, void *arg)
{
    struct ck *k = arg;
    struct repo_key key;
    struct util_err e = {0};
    if (repo_key_parse(o->key, &key, &e) != 0 || key.kind != REPO_KEY_PACK) {
        fprintf(stderr, "note: unexpected object %s\n", o->key);
        k->unexpected++;
        return 0;
    }
    k->packs = util_grow(k->packs, &k->cappacks, k->npacks + 1, sizeof(*k->packs));
    struct ck_pack *p = &k->packs[k->npacks++];
    memset(p, 0, sizeof(*p));
    p->src = key.src;
    memcpy(p->hash, key.pack, REPO_HASH_LEN);
    p->size = o->size;
    return 0;
}

static struct ck_pack *ck_find_pack(struct ck *k, const struct repo_source *src,
                                    const uint8_t hash[REPO_HASH_LEN])
{
    struct ck_pack key;
    key.src = *src;
    memcpy(key.hash, hash, REPO_HASH_LEN);
    return k->npacks ? bsearch(&key, k->packs, k->npacks, sizeof(key), ck_pack_cmp) : NULL;
}

/* ---- packs ---- */

/* A whole pack (--read-data): its name is its hash, its table opens, every blob opens. */
static void ck_pack_whole(struct ck *k, struct ck_pack *p, const char *key, const uint8_t *data,
                          size_t len)
{
    uint8_t digest[SHA256_DIGEST_LENGTH];
    struct util_err e = {0};
    uint8_t *plain = NULL;
    size_t cap = 0;

    SHA256(data, len, digest);
    if (memcmp(digest, p->hash, REPO_HASH_LEN) != 0) {
        ck_damage(k, "%s: its content does not hash to its name (changed bytes)", key);
        p->damaged = true;
    }
    if (repo_pack_read_table(k->keys, data, len, &p->table, &p->n, &e) != 0) {
        ck_damage(k, "%s: %s", key, e.msg);
        p->damaged = true;
        return;
    }
    for (size_t i = 0; i < p->n; i++) {
        const struct repo_chunk *c = &p->table[i];
        if (c->plain > cap) {
            free(plain);
            cap = c->plain;
            plain = util_malloc(cap);
        }
        if (repo_blob_open(k->keys, c, data + c->offset, plain, &e) != 0) {
            ck_damage(k, "%s: %s", key, e.msg);
            p->damaged = true;
        }
        k->chunks_read++;
    }
    free(plain);
}

struct ck_get {
    struct ck *k;
    struct ck_pack *p;
    char *key;
    uint64_t start, len;
};

static void ck_start(struct ck *k);

static void ck_got(const struct s3_result *res, void *arg)
{
    struct ck_get *g = arg;
    struct ck *k = g->k;
    struct ck_pack *p = g->p;
    struct util_err e = {0};

    k->running--;
    p->tried = true;
    if (res->error == S3_ENOTFOUND) {
        ck_damage(k, "%s: listed but cannot be read (deleted meanwhile?)", g->key);
        p->damaged = true;
    } else if (res->error != 0) {
        fprintf(stderr, "lode check: cannot read %s: %s\n", g->key, res->message);
        k->failed = true;
    } else if (res->body_len != g->len) {
        ck_damage(k, "%s: %zu bytes read where %" PRIu64 " were listed", g->key, res->body_len,
                  g->len);
        p->damaged = true;
    } else {
        k->read_bytes += res->body_len;
        if (k->read_data) {
            ck_pack_whole(k, p, g->key, (const uint8_t *)res->body, res->body_len);
        } else if (repo_pack_read_tail(k->keys, (const uint8_t *)res->body, res->body_len, p->size,
                                       &p->need, &p->table, &p->n, &e) != 0) {
            ck_damage(k, "%s: %s", g->key, e.msg);
            p->damaged = true;
        }
        if (p->table != NULL && p->n > 1)
            qsort(p->table, p->n, sizeof(*p->table), ck_chunk_cmp);
    }
    free(g->key);
    free(g);
    ck_start(k);
}

static void ck_start(struct ck *k)
{
    while (!k->failed && k->running < CK_INFLIGHT && k->next < k->npacks) {
        struct ck_pack *p = &k->packs[k->next++];
        struct ck_get *g = util_calloc(1, sizeof(*g));
        struct util_err e = {0};
        g->k = k;
        g->p = p;
        g->key = ck_pack_key(p);
        if (p->size > CK_PACK_MAX) {
            ck_damage(k, "%s: %" PRIu64 " bytes is more than a pack holds", g->key, p->size);
            p->damaged = p->tried = true;
            free(g->key);
            free(g);
            continue;
        }
        g->len = k->read_data || p->size <= CK_TAIL ? p->size : CK_TAIL;
        g->start = p->size - g->len;
        struct s3_opts o = {.range_start = g->start, .range_len = g->len, .max_bytes = g->len};
        if (g->len == 0) {
            o.range_start = o.range_len = 0;
            o.max_bytes = 1;
        }
        if (s3_get(s3_sync_client(k->st->s3), g->key, &o, NULL, ck_got, g, NULL, &e) != 0) {
            fprintf(stderr, "lode check: cannot read %s: %s\n", g->key, e.msg);
            k->failed = true;
            free(g->key);
            free(g);
            return;
        }
        k->running++;
    }
}

/* Tables longer than the first tail: one more ranged GET each. */
static void ck_long_tables(struct ck *k)
{
    for (size_t i = 0; i < k->npacks && !k->failed; i++) {
        struct ck_pack *p = &k->packs[i];
        if (p->need == 0)
            continue;
        struct s3_opts o = {
            .range_start = p->size - p->need, .range_len = p->need, .max_bytes = p->need};
        struct util_err e = {0};
        char *key = ck_pack_key(p), *data = NULL;
        size_t len = 0, need = p->need;
        int rc = s3_sync_get(k->st->s3, key, &o, &data, &len, NULL, &e);
        if (rc != 0) {
            fprintf(stderr, "lode check: cannot read %s: %s\n", key, e.msg);
            k->failed = true;
        } else if (repo_pack_read_tail(k->keys, (const uint8_t *)data, len, p->size, &p->need,
                                       &p->table, &p->n, &e) != 0 ||
                   p->need != 0 || len != need) {
            ck_damage(k, "%s: %s", key, e.msg[0] ? e.msg : "its table cannot be read");
            p->damaged = true;
            free(p->table);
            p->table = NULL;
        } else {
            k->read_bytes += len;
            if (p->n > 1)
                qsort(p->table, p->n, sizeof(*p->table), ck_chunk_cmp);
        }
        free(data);
        free(key);
    }
}

/* ---- run records and snapshots ---- */

struct ck_keys {
    char **v;
    size_t n, cap;
};

static int ck_list_key(const struct s3_object *o, void *arg)
{
    struct ck_keys *ks = arg;
    ks->v = util_grow(ks->v, &ks->cap, ks->n + 1, sizeof(*ks->v));
    ks->v[ks->n++] = util_strdup(o->key);
    return 0;
}

static void ck_runs(struct ck *k, unsigned *nruns)
{
    struct ck_keys ks = {0};
    struct util_err e = {0};
    *nruns = 0;
    if (s3_sync_list(k->st->s3, "runs/", NULL, ck_list_key, &ks, NULL, &e) != 0) {
        fprintf(stderr, "lode check: cannot list runs/: %s\n", e.msg);
        k->failed = true;
    }
    for (size_t i = 0; i < ks.n && !k->failed; i++) {
        struct repo_key key;
        struct repo_run run;
        char *data = NULL;
        size_t len = 0;
        if (repo_key_parse(ks.v[i], &key, &e) != 0 || key.kind != REPO_KEY_RUN) {
            fprintf(stderr, "note: unexpected object %s\n", ks.v[i]);
            k->unexpected++;
            continue;
        }
        int rc = s3_sync_get(k->st->s3, ks.v[i], NULL, &data, &len, NULL, &e);
        if (rc == S3_ENOTFOUND) {
            /* Deleted by garbage collection between the listing and now. */
        } else if (rc != 0) {
            fprintf(stderr, "lode check: cannot read %s: %s\n", ks.v[i], e.msg);
            k->failed = true;
        } else if (repo_run_decode(&run, &key.src, key.id, data, len, k->keys, &e) != 0) {
            ck_damage(k, "%s: %s", ks.v[i], e.msg);
        } else {
            (*nruns)++;
        }
        free(data);
    }
    for (size_t i = 0; i < ks.n; i++)
        free(ks.v[i]);
    free(ks.v);
}

/* A metadata read's failure: a missing or damaged object is damage, anything else
 * stops the check (it could not read the repository). */
static void ck_meta_fail(struct ck *k, const struct repo_snapshot *s, const char *what, int rc,
                         const char *msg)
{
    if (rc == S3_ENOTFOUND || rc == UTIL_EIO || rc == UTIL_EINVAL) {
        ck_damage(k, "%s (the %s of snapshot %s)", msg, what, s->id);
        return;
    }
    fprintf(stderr, "lode check: the %s of snapshot %s: %s\n", what, s->id, msg);
    k->failed = true;
}

/* One snapshot: returns true when it is whole. */
static bool ck_snapshot(struct ck *k, const struct repo_snapshot *s)
{
    struct repo_manifest m;
    struct repo_chunkset set;
    struct repo_files_reader r;
    struct repo_tree_reader tree;
    struct repo_file f;
    struct meta_src ms;
    struct util_err e = {0};
    unsigned before = k->damaged;
    char note[512];
    int rc;

    repo_chunkset_init(&set);
    rc = storage_get_manifest(k->st, &s->src, s->id, k->keys, &m, NULL, &e);
    if (rc == S3_ENOTFOUND)
        return true; /* forgotten between the listing and now */
    if (rc != 0 && (rc == UTIL_EINVAL || rc == UTIL_EIO)) {
        /* Without an authentic manifest its trees are unknown: nothing more to check. */
        ck_damage(k, "%s", e.msg);
        return false;
    } else if (rc != 0) {
        fprintf(stderr, "lode check: %s\n", e.msg);
        k->failed = true;
        return false;
    }
    if ((rc = meta_check_marks(k->st, k->keys, &m, s->incomplete, s->suspicious, note, sizeof(note),
                               &e)) != 0) {
        if (rc == UTIL_EIO)
            ck_damage(k, "%s", e.msg);
        else {
            fprintf(stderr, "lode check: %s\n", e.msg);
            k->failed = true;
        }
    }
    if (note[0])
        fprintf(stderr, "note: %s\n", note);
    if (s->pinned) {
        /* A pin without its tag keeps nothing, and is damage to name (docs/retention.md). */
        char *why = NULL;
        rc = pin_reason(k->st, k->keys, s, &why, &e);
        free(why);
        if (rc == UTIL_EIO)
            ck_damage(k, "%s", e.msg);
        else if (rc != 0 && rc != S3_ENOTFOUND) {
            fprintf(stderr, "lode check: %s\n", e.msg);
            k->failed = true;
        }
    }
    meta_src_init(&ms, k->st, &s->src);
    rc = meta_load_chunkset(&ms, k->keys, &m.chunks_root, &set, &e);
    if (rc != 0)
        ck_meta_fail(k, s, "chunk set", rc, e.msg);
    bool have_set = rc == 0;
    /* Every chunk of the set is where the set says. */
    for (size_t i = 0; have_set && i < set.n; i++) {
        const struct repo_chunk *c = &set.v[i];
        struct ck_pack *p = ck_find_pack(k, &s->src, set.packs[c->pack]);
        char hex[2 * REPO_HASH_LEN + 1];
        if (p == NULL) {
            struct ck_pack tmp = {.src = s->src};
            memcpy(tmp.hash, set.packs[c->pack], REPO_HASH_LEN);
            char *pk = ck_pack_key(&tmp);
            ck_damage(k, "%s is missing (needed by snapshot %s)", pk, s->id);
            free(pk);
            /* Once per pack: drop the rest of its chunks from this report. */
            for (size_t j = i + 1; j < set.n; j++)
                if (set.v[j].pack == c->pack)
                    set.v[j].stored = 0;
            continue;
        }
        if (c->stored == 0 || p->table == NULL)
            continue; /* reported with its pack */
        const struct repo_chunk *t = bsearch(c, p->table, p->n, sizeof(*c), ck_chunk_cmp);
        if (t == NULL || t->offset != c->offset || t->stored != c->stored || t->plain != c->plain ||
            t->flags != c->flags) {
            char *pk = ck_pack_key(p);
            repo_hex(c->hash, REPO_HASH_LEN, hex);
            ck_damage(k, "%s: chunk %s of snapshot %s is %s", pk, hex, s->id,
                      t == NULL ? "not in its table" : "elsewhere in its table");
            free(pk);
        }
    }
    if (k->failed)
        goto out;
    /* The file list, a leaf at a time. */
    repo_tree_reader_init(&tree, k->keys, REPO_TREE_FILES, &m.files_root, meta_fetch_cb, &ms);
    repo_files_reader_tree(&r, &tree);
    unsigned missing = 0;
    while ((rc = repo_files_reader_next(&r, &f, &e)) == 1) {
        uint64_t sum = 0;
        bool whole = true;
        for (size_t i = 0; have_set && i < f.nchunks; i++) {
            const struct repo_chunk *c = repo_chunkset_find(&set, f.chunks[i]);
            if (c == NULL)
                whole = false;
            else
                sum += c->plain;
        }
        if (have_set && (!whole || (f.type == REPO_FT_FILE && sum != f.size)) && missing++ < 10)
            ck_damage(k, "the chunk set of snapshot %s: %s %s", s->id, f.path,
                      whole ? "does not add up to its size" : "names chunks the set lacks");
        repo_file_free(&f);
    }
    if (missing > 10)
        fprintf(stderr, "damaged: the chunk set of snapshot %s: %u more files\n", s->id,
                missing - 10);
    if (rc < 0)
        ck_meta_fail(k, s, "file list", rc, e.msg);
    repo_files_reader_free(&r);
    repo_tree_reader_free(&tree);
out:
    meta_src_free(&ms);
    repo_manifest_free(&m);
    repo_chunkset_free(&set);
    return k->damaged == before;
}

int ck_run(struct storage *st, bool read_data, struct ck_result *out)
{
    struct repo_catalog cat;
    struct util_err e = {0};
    struct ck k = {.st = st, .keys = &st->config.keys, .read_data = read_data};
    unsigned nruns = 0, good = 0;
    size_t nsnap = 0;
    int rc = UTIL_EIO;

    memset(out, 0, sizeof(*out));
    /* The packs first: the snapshots are checked against their tables. */
    if (s3_sync_list(st->s3, "data/", NULL, ck_list_pack, &k, NULL, &e) != 0) {
        fprintf(stderr, "lode check: cannot list data/: %s\n", e.msg);
        goto out;
    }
    if (k.npacks > 1)
        qsort(k.packs, k.npacks, sizeof(*k.packs), ck_pack_cmp);
    ck_start(&k);
    while (k.running > 0)
        uv_run(s3_sync_loop(st->s3), UV_RUN_ONCE);
    if (!k.read_data)
        ck_long_tables(&k);
    if (k.failed)
        goto out;
    ck_runs(&k, &nruns);
    if (storage_catalog(st, NULL, NULL, NULL, &cat, &e) != 0) {
        fprintf(stderr, "lode check: %s\n", e.msg);
        goto out;
    }
    for (size_t i = 0; i < cat.n && !k.failed; i++)
        good += ck_snapshot(&k, &cat.v[i]);
    nsnap = cat.n;
    repo_catalog_free(&cat);
    if (k.failed)
        goto out;
    *out = (struct ck_result){.snapshots = nsnap,
                              .whole = good,
                              .packs = k.npacks,
                              .runs = nruns,
                              .damaged = k.damaged,
                              .read_bytes = k.read_bytes};
    rc = k.damaged > 0 ? AGENT_EDAMAGED : 0;
out:
    for (size_t i = 0; i < k.npacks; i++)
        free(k.packs[i].table);
    free(k.packs);
    return rc;
}
