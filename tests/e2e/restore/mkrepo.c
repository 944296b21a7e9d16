/*
 * mkrepo ROOT NS POLICY HOST PATH...: writes one snapshot of ROOT/PATH... into the
 * repository of $LODE_REPOSITORY (key $LODE_KEY_FILE, CA $LODE_CACERT, AWS_*), through
 * internal/repo and internal/s3 alone, and prints its id. It creates the repository
 * first when there is none.
 *
 * A second, independent writer of the format for tests/e2e/test_restore.sh: the
 * restore and check tests run on it when `lode backup` is not in the binary under
 * test. It chunks at fixed 1 MiB boundaries (restore does not care where chunks
 * end), packs about 16 MiB, puts both metadata trees in one metadata pack, and writes
 * the objects in the order docs/repository.md gives ("Backing up": run record, data,
 * meta, manifest last with If-None-Match).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <openssl/sha.h>

#include "repo/repo.h"
#include "s3/s3.h"

#define CHUNK (1u << 20)

static struct s3_sync *s3;
static struct repo_config cfg;
static struct repo_source src;
static struct repo_pack_writer pw;
static struct repo_chunkset set;
static struct repo_files_writer fw;
static struct repo_pack_writer mw; /* the metadata pack, ID.0.meta */
static char run_id[REPO_ID_LEN + 1];
static uint8_t (*seen)[REPO_HASH_LEN];
static size_t nseen, capseen;
static uint64_t nfiles, nbytes;

static void die(const char *what, const struct util_err *e)
{
    fprintf(stderr, "mkrepo: %s: %s\n", what, e ? e->msg : strerror(errno));
    exit(2);
}

static void put(const char *key, const void *data, size_t len, bool if_none_match)
{
    struct s3_body b = {.data = data, .len = len};
    struct s3_opts o = {.if_none_match = if_none_match};
    struct util_err e = {0};
    if (s3_sync_put(s3, key, &b, &o, NULL, &e) != 0)
        die(key, &e);
}

static char *key_of(enum repo_kind kind, const char *id, const uint8_t *pack)
{
    struct repo_key k = {.kind = kind, .src = src};
    if (id)
        snprintf(k.id, sizeof(k.id), "%s", id);
    if (pack)
        memcpy(k.pack, pack, REPO_HASH_LEN);
    return repo_key_build(&k);
}

/* Every metadata chunk into the one metadata pack (no parent: nothing to reuse). */
static int meta_store(void *arg, const uint8_t hash[REPO_HASH_LEN], const uint8_t *plain,
                      size_t len, struct repo_mref *ref, struct util_err *err)
{
    uint8_t *sealed, flags;
    size_t slen;
    repo_blob_seal(&cfg.keys, 3, hash, plain, len, &sealed, &slen, &flags);
    const struct repo_chunk *c =
        repo_pack_writer_add(&mw, hash, sealed, slen, flags, (uint32_t)len);
    memset(ref, 0, sizeof(*ref));
    memcpy(ref->hash, hash, REPO_HASH_LEN);
    memcpy(ref->run, run_id, sizeof(ref->run));
    ref->offset = c->offset;
    ref->stored = c->stored;
    ref->plain = (uint32_t)len;
    ref->flags = flags;
    free(sealed);
    return 0;
}

static void flush_pack(void)
{
    uint8_t *data, id[REPO_HASH_LEN];
    size_t len;
    if (pw.n == 0)
        return;
    size_t n = pw.n;
    repo_pack_writer_finish(&pw, &cfg.keys, &data, &len, id);
    char *key = key_of(REPO_KEY_PACK, NULL, id);
    put(key, data, len, false);
    uint32_t p = repo_chunkset_pack(&set, id);
    for (size_t i = 0; i < n; i++) {
        struct repo_chunk c = pw.v[i];
        c.pack = p;
        repo_chunkset_add(&set, &c);
    }
    repo_pack_writer_reset(&pw);
    free(key);
    free(data);
}

static void add_chunk(const uint8_t *buf, size_t len, uint8_t hash[REPO_HASH_LEN])
{
    SHA256(buf, len, hash);
    /* Chunks seen: an open-addressing set, grown at half full. */
    if (2 * (nseen + 1) > capseen) {
        size_t cap = capseen ? 2 * capseen : 1024;
        uint8_t(*v)[REPO_HASH_LEN] = util_calloc(cap, REPO_HASH_LEN);
        static const uint8_t zero[REPO_HASH_LEN];
        for (size_t i = 0; i < capseen; i++) {
            if (memcmp(seen[i], zero, REPO_HASH_LEN) == 0)
                continue;
            size_t j;
            memcpy(&j, seen[i], sizeof(j));
            for (j %= cap; memcmp(v[j], zero, REPO_HASH_LEN) != 0; j = (j + 1) % cap)
                ;
            memcpy(v[j], seen[i], REPO_HASH_LEN);
        }
        free(seen);
        seen = v;
        capseen = cap;
    }
    size_t j;
    memcpy(&j, hash, sizeof(j));
    for (j %= capseen; seen[j][0] | seen[j][1] | seen[j][2] | seen[j][3]; j = (j + 1) % capseen)
        if (memcmp(seen[j], hash, REPO_HASH_LEN) == 0)
            return;
    memcpy(seen[j], hash, REPO_HASH_LEN);
    nseen++;
    uint8_t *sealed, flags;
    size_t slen;
    repo_blob_seal(&cfg.keys, 1, hash, buf, len, &sealed, &slen, &flags);
    repo_pack_writer_add(&pw, hash, sealed, slen, flags, (uint32_t)len);
    free(sealed);
    if (pw.buf.len >= REPO_PACK_SIZE)
        flush_pack();
}

static int name_cmp(const void *a, const void *b)
{
    return repo_path_cmp(*(char *const *)a, *(char *const *)b);
}

static void record(const char *root, const char *path)
{
    char *full = util_asprintf("%s%s", root, path);
    struct repo_file f = {0};
    struct util_err e = {0};
    struct stat st;
    if (lstat(full, &st) != 0)
        die(full, NULL);
    f.path = (char *)path;
    f.mode = st.st_mode & 07777;
    f.uid = st.st_uid;
    f.gid = st.st_gid;
    f.mtime_sec = st.st_mtim.tv_sec;
    f.mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
    f.ctime_sec = st.st_ctim.tv_sec;
    f.ctime_nsec = (uint32_t)st.st_ctim.tv_nsec;
    f.ino = st.st_ino;
    f.rdev = st.st_rdev;
    char target[REPO_PATH_MAX + 1];
    f.target = "";
    if (S_ISREG(st.st_mode)) {
        f.type = REPO_FT_FILE;
        f.size = (uint64_t)st.st_size;
        int fd = open(full, O_RDONLY);
        uint8_t *buf = util_malloc(CHUNK);
        ssize_t n;
        if (fd < 0)
            die(full, NULL);
        while ((n = read(fd, buf, CHUNK)) > 0) {
            size_t got = (size_t)n;
            while (got < CHUNK && (n = read(fd, buf + got, CHUNK - got)) > 0)
                got += (size_t)n;
            f.chunks = util_realloc(f.chunks, (f.nchunks + 1) * REPO_HASH_LEN);
            add_chunk(buf, got, f.chunks[f.nchunks++]);
            if (got < CHUNK)
                break;
        }
        close(fd);
        free(buf);
        nfiles++;
        nbytes += f.size;
    } else if (S_ISDIR(st.st_mode)) {
        f.type = REPO_FT_DIR;
    } else if (S_ISLNK(st.st_mode)) {
        f.type = REPO_FT_SYMLINK;
        ssize_t n = readlink(full, target, REPO_PATH_MAX);
        if (n < 0)
            die(full, NULL);
        target[n] = '\0';
        f.target = target;
    } else {
        f.type = S_ISFIFO(st.st_mode)   ? REPO_FT_FIFO
                 : S_ISSOCK(st.st_mode) ? REPO_FT_SOCKET
                 : S_ISCHR(st.st_mode)  ? REPO_FT_CHAR
                                        : REPO_FT_BLOCK;
    }
    char names[8192];
    ssize_t nl = llistxattr(full, names, sizeof(names));
    for (ssize_t i = 0; nl > 0 && i < nl; i += (ssize_t)strlen(names + i) + 1) {
        uint8_t value[4096];
        ssize_t vl = lgetxattr(full, names + i, value, sizeof(value));
        if (vl < 0)
            continue;
        f.xattrs = util_realloc(f.xattrs, (f.nxattrs + 1) * sizeof(*f.xattrs));
        f.xattrs[f.nxattrs].name = names + i;
        f.xattrs[f.nxattrs].value = util_malloc(vl ? (size_t)vl : 1);
        memcpy(f.xattrs[f.nxattrs].value, value, (size_t)vl);
        f.xattrs[f.nxattrs].len = (size_t)vl;
        f.nxattrs++;
    }
    if (repo_files_writer_add(&fw, &f, &e) != 0)
        die(path, &e);
    for (size_t i = 0; i < f.nxattrs; i++)
        free(f.xattrs[i].value);
    free(f.xattrs);
    free(f.chunks);
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(full);
        struct dirent *de;
        char **kids = NULL;
        size_t nk = 0, ck = 0;
        if (!d)
            die(full, NULL);
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            kids = util_grow(kids, &ck, nk + 1, sizeof(*kids));
            kids[nk++] = util_asprintf("%s/%s", strcmp(path, "/") == 0 ? "" : path, de->d_name);
        }
        closedir(d);
        if (nk > 1)
            qsort(kids, nk, sizeof(*kids), name_cmp);
        for (size_t i = 0; i < nk; i++) {
            record(root, kids[i]);
            free(kids[i]);
        }
        free(kids);
    }
    free(full);
}

int main(int argc, char **argv)
{
    struct s3_config sc;
    struct util_err e = {0};
    char *pass, *data = NULL;
    size_t passlen, len;
    if (argc < 6) {
        fprintf(stderr, "usage: mkrepo ROOT NS POLICY HOST PATH...\n");
        return 2;
    }
    if (s3_config_from_environment(&sc, NULL, NULL, false, &e) != 0 ||
        s3_sync_open(&s3, &sc, NULL, &e) != 0)
        die("repository", &e);
    if (repo_key_file_read(getenv("LODE_KEY_FILE"), &pass, &passlen, &e) != 0)
        die("key", &e);
    int rc = s3_sync_get(s3, "config.json", NULL, &data, &len, NULL, &e);
    if (rc == S3_ENOTFOUND) {
        if (repo_config_create(&cfg, pass, passlen, REPO_SCRYPT_DEFAULT, &e) != 0)
            die("config", &e);
        char *js = repo_config_encode(&cfg);
        put("config.json", js, strlen(js), true);
        free(js);
    } else if (rc != 0 || repo_config_decode(&cfg, data, len, &e) != 0 ||
               repo_config_unlock(&cfg, pass, passlen, &e) != 0) {
        die("config.json", &e);
    }
    free(data);
    if (repo_source_set(&src, argv[2], argv[3], argv[4], &e) != 0)
        die("source", &e);

    uint8_t rnd[8];
    char id[REPO_ID_LEN + 1];
    RAND_bytes(rnd, sizeof(rnd));
    repo_id_make((int64_t)time(NULL), rnd, id);
    struct repo_run run = {.max_runtime = 3600};
    memcpy(run.id, id, sizeof(run.id));
    run.src = src;
    snprintf(run.agent, sizeof(run.agent), "mkrepo");
    size_t rlen;
    uint8_t *rec = repo_run_encode(&run, NULL, &rlen);
    char *key = key_of(REPO_KEY_RUN, id, NULL);
    put(key, rec, rlen, false);
    free(rec);
    free(key);

    repo_pack_writer_init(&pw);
    repo_pack_writer_init(&mw);
    repo_chunkset_init(&set);
    memcpy(run_id, id, sizeof(run_id));
    repo_files_writer_init(&fw, &cfg.keys, meta_store, NULL);
    char **paths = argv + 5;
    size_t npaths = (size_t)(argc - 5);
    qsort(paths, npaths, sizeof(*paths), name_cmp);
    for (size_t i = 0; i < npaths; i++)
        record(argv[1], paths[i]);
    flush_pack();

    struct repo_manifest m = {.max_runtime = 3600, .files = nfiles, .bytes = nbytes};
    struct repo_tree_writer tw;
    uint8_t *bytes, mid[REPO_HASH_LEN];
    size_t blen;
    if (repo_files_writer_finish(&fw, &m.files_root, &e) != 0)
        die("file list", &e);
    repo_files_writer_free(&fw);
    repo_chunkset_sort(&set);
    repo_tree_writer_init(&tw, REPO_TREE_CHUNKS, &cfg.keys, meta_store, NULL);
    if (repo_chunkset_write(&set, &tw, &e) != 0 ||
        repo_tree_writer_finish(&tw, &m.chunks_root, &e) != 0)
        die("chunk set", &e);
    repo_tree_writer_free(&tw);
    repo_pack_writer_finish(&mw, &cfg.keys, &bytes, &blen, mid);
    repo_pack_writer_free(&mw);
    struct repo_key mk = {.kind = REPO_KEY_META, .src = src, .seq = 0};
    memcpy(mk.id, id, sizeof(mk.id));
    key = repo_key_build(&mk);
    put(key, bytes, blen, false);
    free(key);
    free(bytes);

    memcpy(m.id, id, sizeof(m.id));
    m.src = src;
    snprintf(m.agent, sizeof(m.agent), "mkrepo");
    m.paths = paths;
    m.npaths = npaths;
    rec = repo_manifest_encode(&m, &cfg.keys, &rlen);
    key = key_of(REPO_KEY_MANIFEST, id, NULL);
    put(key, rec, rlen, true);
    free(rec);
    free(key);
    printf("%s\n", id);
    repo_chunkset_free(&set);
    repo_pack_writer_free(&pw);
    free(seen);
    free(pass);
    s3_sync_close(s3);
    s3_config_free(&sc);
    return 0;
}
