/*
 * repo_fixture: writes repository objects through internal/s3 with the internal/repo
 * encoders, so tests of forget, mark and gc control exactly which snapshot uses which
 * pack. Test code only; never installed.
 *
 *   repo_fixture KEYFILE < COMMANDS
 *
 * The repository is $LODE_REPOSITORY with the AWS_* credentials and $LODE_CACERT, as
 * lode reads them. One command a line:
 *   init                              create config.json (scrypt-15-8-1) from KEYFILE
 *   open                              read config.json and unlock it with KEYFILE
 *   pack NS P H NAME SIZE             data/NS/P/H/<sha256(NAME)>.pack of SIZE bytes
 *   snap NS P H ID PARENT|- MAXRT [incomplete] [suspicious] [nomanifest] [PACKNAME...]
 *                                     the run record (with the parent's trees when its
 *                                     manifest is there), the metadata pack meta ID.0.meta
 *                                     (an empty file list and a chunk set of one chunk
 *                                     in each named pack), the marks (with their tags),
 *                                     then the manifest (unless nomanifest)
 *   manifest NS P H ID                only an empty manifest object (the catalog reads keys)
 *   sealed NS P H ID                  a manifest of no files, sealed with the keys (after
 *                                     init or open), as forget with the key reads it
 *   hex NAME                          prints sha256(NAME) in hex (the pack's id)
 *   packs NS P H ID                   prints the packs ID's chunk set names, one a line
 *                                     (through its manifest and metadata pack)
 * Prints "ok N" after the last command, N the commands done; exits 1 at the first error.
 */
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repo/repo.h"
#include "s3/s3.h"

static struct s3_sync *s3;
static struct repo_config cfg;
static char *pass;
static size_t passlen;

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "repo_fixture: %s: %s\n", what, msg);
    exit(1);
}

static void put(const char *key, const void *data, size_t len)
{
    struct util_err err = {0};
    struct s3_body body = {.data = data, .len = len};
    if (s3_sync_put(s3, key, &body, NULL, NULL, &err) != 0)
        die(key, err.msg);
}

static void pack_id(const char *name, uint8_t id[REPO_HASH_LEN])
{
    SHA256((const unsigned char *)name, strlen(name), id);
}

/* The metadata pack being written for one snapshot: chunks go in as they are cut. */
struct fx_meta {
    struct repo_pack_writer w;
    char run[REPO_ID_LEN + 1];
};

static int fx_store_cb(void *arg, const uint8_t hash[REPO_HASH_LEN], const uint8_t *plain,
                       size_t len, struct repo_mref *ref, struct util_err *err)
{
    struct fx_meta *m = arg;
    uint8_t *sealed, flags;
    size_t slen;
    repo_blob_seal(&cfg.keys, 3, hash, plain, len, &sealed, &slen, &flags);
    const struct repo_chunk *c =
        repo_pack_writer_add(&m->w, hash, sealed, slen, flags, (uint32_t)len);
    memset(ref, 0, sizeof(*ref));
    memcpy(ref->hash, hash, REPO_HASH_LEN);
    memcpy(ref->run, m->run, sizeof(ref->run));
    ref->offset = c->offset;
    ref->stored = c->stored;
    ref->plain = (uint32_t)len;
    ref->flags = flags;
    free(sealed);
    return 0;
}

/* Reads a metadata chunk of the source in fx_src (a ranged GET of its pack). */
static struct repo_source fx_src;

static int fx_fetch_cb(void *arg, const struct repo_mref *ref, uint8_t *sealed,
                       struct util_err *err)
{
    struct repo_key k = {.kind = REPO_KEY_META, .src = fx_src, .seq = ref->seq};
    struct s3_opts o = {.range_start = ref->offset, .range_len = ref->stored};
    char *data = NULL;
    size_t len = 0;
    snprintf(k.id, sizeof(k.id), "%s", ref->run);
    char *key = repo_key_build(&k);
    int rc = s3_sync_get(s3, key, &o, &data, &len, NULL, err);
    free(key);
    if (rc == 0 && len != ref->stored)
        rc = util_err_set(err, UTIL_EIO, "short metadata chunk");
    if (rc == 0)
        memcpy(sealed, data, len);
    free(data);
    return rc;
}

static void source(struct repo_key *k, enum repo_kind kind, char **f)
{
    struct util_err err = {0};
    memset(k, 0, sizeof(*k));
    k->kind = kind;
    if (repo_source_set(&k->src, f[1], f[2], f[3], &err) != 0)
        die("source", err.msg);
}

int main(int argc, char **argv)
{
    struct util_err err = {0};
    struct s3_config sc;
    char line[8192];
    int done = 0;

    if (argc != 2)
        die("usage", "repo_fixture KEYFILE < COMMANDS");
    if (repo_key_file_read(argv[1], &pass, &passlen, &err) != 0)
        die(argv[1], err.msg);
    if (s3_config_from_environment(&sc, NULL, getenv("LODE_CACERT"), false, &err) != 0 ||
        s3_sync_open(&s3, &sc, NULL, &err) != 0)
        die("repository", err.msg);
    while (fgets(line, sizeof(line), stdin)) {
        char *f[64], *p = line;
        int n = 0;
        while (n < 64) { /* fields split on blanks, in place */
            p += strspn(p, " \t\n");
            if (*p == '\0')
                break;
            f[n++] = p;
            p += strcspn(p, " \t\n");
            if (*p != '\0')
                *p++ = '\0';
        }
        if (n == 0)
            continue;
        if (strcmp(f[0], "init") == 0) {
            if (repo_config_create(&cfg, pass, passlen, REPO_SCRYPT_15_8_1, &err) != 0)
                die("init", err.msg);
            char *doc = repo_config_encode(&cfg);
            put("config.json", doc, strlen(doc));
            free(doc);
        } else if (strcmp(f[0], "open") == 0) {
            char *data = NULL;
            size_t len = 0;
            if (s3_sync_get(s3, "config.json", NULL, &data, &len, NULL, &err) != 0 ||
                repo_config_decode(&cfg, data, len, &err) != 0 ||
                repo_config_unlock(&cfg, pass, passlen, &err) != 0)
                die("open", err.msg);
            free(data);
        } else if (strcmp(f[0], "hex") == 0 && n == 2) {
            uint8_t id[REPO_HASH_LEN];
            char hex[2 * REPO_HASH_LEN + 1];
            pack_id(f[1], id);
            repo_hex(id, REPO_HASH_LEN, hex);
            printf("%s\n", hex);
        } else if (strcmp(f[0], "packs") == 0 && n == 5) {
            struct repo_key k;
            struct repo_chunkset set;
            struct repo_manifest m;
            struct repo_tree_reader tr;
            char *data = NULL, hex[2 * REPO_HASH_LEN + 1];
            size_t len = 0;
            source(&k, REPO_KEY_MANIFEST, f);
            snprintf(k.id, sizeof(k.id), "%s", f[4]);
            char *key = repo_key_build(&k);
            if (s3_sync_get(s3, key, NULL, &data, &len, NULL, &err) != 0 ||
                repo_manifest_decode(&m, &k.src, k.id, data, len, &cfg.keys, &err) != 0)
                die(key, err.msg);
            fx_src = k.src;
            repo_tree_reader_init(&tr, &cfg.keys, REPO_TREE_CHUNKS, &m.chunks_root, fx_fetch_cb,
                                  NULL);
            if (repo_chunkset_read(&set, &tr, &err) != 0)
                die(key, err.msg);
            repo_tree_reader_free(&tr);
            repo_manifest_free(&m);
            for (size_t i = 0; i < set.npacks; i++) {
                repo_hex(set.packs[i], REPO_HASH_LEN, hex);
                printf("%s\n", hex);
            }
            repo_chunkset_free(&set);
            free(data);
            free(key);
        } else if (strcmp(f[0], "pack") == 0 && n == 6) {
            struct repo_key k;
            size_t size = strtoul(f[5], NULL, 10);
            source(&k, REPO_KEY_PACK, f);
            pack_id(f[4], k.pack);
            char *key = repo_key_build(&k), *body = calloc(1, size ? size : 1);
            memset(body, 'p', size);
            put(key, body, size);
            free(body);
            free(key);
        } else if (strcmp(f[0], "manifest") == 0 && n == 5) {
            struct repo_key k;
            source(&k, REPO_KEY_MANIFEST, f);
            snprintf(k.id, sizeof(k.id), "%s", f[4]);
            char *key = repo_key_build(&k);
            put(key, "", 0);
            free(key);
        } else if (strcmp(f[0], "sealed") == 0 && n == 5) {
            struct repo_key k;
            struct repo_manifest m = {.max_runtime = 3600, .agent = "repo_fixture"};
            source(&k, REPO_KEY_MANIFEST, f);
            snprintf(k.id, sizeof(k.id), "%s", f[4]);
            m.src = k.src;
            memcpy(m.id, k.id, sizeof(m.id));
            for (int t = 0; t < 2; t++) { /* roots that parse; forget reads no tree */
                struct repo_root *r = t ? &m.chunks_root : &m.files_root;
                memset(r->ref.hash, 0x30 + t, REPO_HASH_LEN);
                memcpy(r->ref.run, k.id, sizeof(r->ref.run));
                r->ref.stored = 100;
                r->ref.plain = 200;
                r->depth = 1;
            }
            size_t len;
            char *key = repo_key_build(&k);
            uint8_t *doc = repo_manifest_encode(&m, &cfg.keys, &len);
            put(key, (const char *)doc, len);
            free(doc);
            free(key);
        } else if (strcmp(f[0], "snap") == 0 && n >= 7) {
            struct repo_key k;
            struct repo_run run = {0};
            struct repo_manifest m = {0};
            struct repo_chunkset set;
            bool incomplete = false, suspicious = false, manifest = true;
            uint8_t *data;
            size_t len;
            char *key, *doc;

            source(&k, REPO_KEY_RUN, f);
            snprintf(k.id, sizeof(k.id), "%s", f[4]);
            snprintf(run.id, sizeof(run.id), "%s", f[4]);
            if (strcmp(f[5], "-") != 0)
                snprintf(run.parent, sizeof(run.parent), "%s", f[5]);
            run.max_runtime = strtoll(f[6], NULL, 10);
            snprintf(run.agent, sizeof(run.agent), "repo_fixture");
            if (run.parent[0]) {
                /* The parent's trees, from its manifest when it has one (as a backup
                 * reads them before its run record). */
                struct repo_key pk = k;
                struct repo_manifest pm;
                char *pdata = NULL;
                size_t plen = 0;
                pk.kind = REPO_KEY_MANIFEST;
                snprintf(pk.id, sizeof(pk.id), "%s", run.parent);
                char *pkey = repo_key_build(&pk);
                if (s3_sync_get(s3, pkey, NULL, &pdata, &plen, NULL, &err) == 0 &&
                    repo_manifest_decode(&pm, &pk.src, pk.id, pdata, plen, &cfg.keys, &err) == 0) {
                    run.has_roots = true;
                    run.parent_files = pm.files_root;
                    run.parent_chunks = pm.chunks_root;
                    repo_manifest_free(&pm);
                }
                free(pdata);
                free(pkey);
            }
            run.src = k.src;
            uint8_t *rec = repo_run_encode(&run, &cfg.keys, &len);
            key = repo_key_build(&k);
            put(key, rec, len);
            free(key);
            free(rec);

            repo_chunkset_init(&set);
            for (int i = 7; i < n; i++) {
                if (strcmp(f[i], "incomplete") == 0) {
                    incomplete = true;
                    continue;
                }
                if (strcmp(f[i], "suspicious") == 0) {
                    suspicious = true;
                    continue;
                }
                if (strcmp(f[i], "nomanifest") == 0) {
                    manifest = false;
                    continue;
                }
                uint8_t pid[REPO_HASH_LEN];
                struct repo_chunk c = {0};
                pack_id(f[i], pid);
                SHA256((const unsigned char *)f[i], strlen(f[i]), c.hash);
                c.hash[0] ^= 0x5a; /* a chunk hash, not the pack's */
                c.pack = repo_chunkset_pack(&set, pid);
                c.stored = REPO_SEAL_EXTRA + 1;
                c.plain = 1;
                repo_chunkset_add(&set, &c);
            }
            repo_chunkset_sort(&set);
            /* The two trees into one metadata pack, ID.0.meta. */
            struct fx_meta fm;
            struct repo_tree_writer tw;
            struct repo_files_writer fw;
            uint8_t pid[REPO_HASH_LEN];
            repo_pack_writer_init(&fm.w);
            snprintf(fm.run, sizeof(fm.run), "%s", f[4]);
            repo_tree_writer_init(&tw, REPO_TREE_CHUNKS, &cfg.keys, fx_store_cb, &fm);
            if (repo_chunkset_write(&set, &tw, &err) != 0 ||
                repo_tree_writer_finish(&tw, &m.chunks_root, &err) != 0)
                die("chunk set", err.msg);
            repo_tree_writer_free(&tw);
            repo_chunkset_free(&set);
            repo_files_writer_init(&fw, &cfg.keys, fx_store_cb, &fm);
            if (repo_files_writer_finish(&fw, &m.files_root, &err) != 0)
                die("file list", err.msg);
            repo_files_writer_free(&fw);
            repo_pack_writer_finish(&fm.w, &cfg.keys, &data, &len, pid);
            repo_pack_writer_free(&fm.w);
            k.kind = REPO_KEY_META;
            k.seq = 0;
            key = repo_key_build(&k);
            put(key, data, len);
            free(key);
            free(data);

            for (int mk = 0; mk < 2; mk++) {
                if (!(mk == 0 ? incomplete : suspicious))
                    continue;
                k.kind = mk == 0 ? REPO_KEY_INCOMPLETE : REPO_KEY_SUSPICIOUS;
                key = repo_key_build(&k);
                doc = repo_mark_encode(&cfg.keys, &k.src, f[4], k.kind);
                put(key, doc, strlen(doc));
                free(doc);
                free(key);
            }
            if (manifest) {
                snprintf(m.id, sizeof(m.id), "%s", f[4]);
                m.src = k.src;
                memcpy(m.parent, run.parent, sizeof(m.parent));
                m.max_runtime = run.max_runtime;
                m.incomplete = incomplete;
                m.suspicious = suspicious;
                snprintf(m.agent, sizeof(m.agent), "repo_fixture");
                rec = repo_manifest_encode(&m, &cfg.keys, &len);
                k.kind = REPO_KEY_MANIFEST;
                key = repo_key_build(&k);
                put(key, rec, len);
                free(key);
                free(rec);
            }
        } else {
            die("command", f[0]);
        }
        done++;
    }
    printf("ok %d\n", done);
    s3_sync_close(s3);
    s3_config_free(&sc);
    free(pass);
    return 0;
}
