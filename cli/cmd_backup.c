/*
 * lode backup: one backup of a policy's paths on one host (docs/repository.md,
 * "Backing up"). The order of the writes is what keeps garbage collection safe
 * without locks:
 *
 *   1. the limits: nice and the I/O priority on every thread there is, before the
 *      storage client and the thread pool start any (they inherit them);
 *   2. the catalog of the source, the parent = its newest good snapshot;
 *   3. the run record runs/<source>/<id>.json, whose server modification time is
 *      the time in the id (rewritten once under the right id when the local
 *      clock disagrees with the server's);
 *   4. the parent check (its manifest still exists), then its file list and
 *      chunk set;
 *   5. the walk, new chunks into packs (backup_walk.c, backup_store.c);
 *   6. meta/<source>/<id>.files and .chunks;
 *   7. the anomaly check against the parent and recent good snapshots:
 *      <id>.suspicious on a hit; <id>.incomplete when files failed;
 *   8. the manifest, with If-None-Match: *, never once maxRuntime has passed.
 *
 * maxRuntime counts from this command's start; SIGTERM and SIGINT stop it the
 * same way: no manifest, exit 1. uploadRate is one bucket for every upload.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <stdint.h>

#include <openssl/rand.h>

#include "anomaly/anomaly.h"
#include "backup.h"
#include "cli.h"
#include "storage.h"

#ifndef LODE_VERSION
#define LODE_VERSION "0.0.0-dev"
#endif

#define BACKUP_RECENT 7

static volatile sig_atomic_t cmd_backup_stop;

static void cmd_backup_on_signal(int sig)
{
    (void)sig;
    cmd_backup_stop = 1;
}

static void cmd_backup_usage(FILE *f)
{
    fprintf(
        f,
        "usage: lode backup --policy FILE|NS/NAME --host H [--root DIR] [--max-runtime D]\n"
        "                   [--output text|json] [--termination-log FILE]\n"
        "                   [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
        "Backs up the policy's paths as seen under --root into the repository, with the\n"
        "policy's limits (nice, I/O priority, uploadRate, maxRuntime).\n\n"
        "  --policy P             a BackupPolicy file, or NAMESPACE/NAME (read from\n"
        "                         $LODE_POLICY_DOCUMENT when it holds that policy, else\n"
        "                         from the Kubernetes API)\n"
        "  --host H               the host the snapshot belongs to\n"
        "  --root DIR             where the host's / is (default /)\n"
        "  --max-runtime D        overrides limits.maxRuntime (a duration, at least 1s)\n"
        "  --output json          {\"snapshot\":{\"id\",\"policy\",\"host\",\"time\",\n"
        "                         \"incomplete\",\"suspicious\",\"files\",\"bytes\",\"newBytes\",\n"
        "                         \"uploadedBytes\"},\"errors\":[{\"path\",\"message\"}]}\n"
        "  --termination-log FILE also write that JSON, at most 4096 bytes, to FILE\n"
        "  --kubeconfig PATH      for --policy NS/NAME read from the API\n"
        "%s\n"
        "Exit codes: 0 snapshot written, 3 snapshot written but incomplete (files that\n"
        "could not be read are listed), 1 no snapshot (stopped at maxRuntime, by\n"
        "SIGTERM, or a storage failure), 2 usage error.\n",
        storage_usage);
}

/* ---- limits ---- */

#define CMD_IOPRIO_WHO_PROCESS 1
#define CMD_IOPRIO_CLASS_SHIFT 13

/*
 * nice and the I/O priority of every thread of the process (normally one, the
 * caller): on Linux both are per thread and inherited by the threads started
 * later, which is why this runs before the storage client and the thread pool.
 */
static int cmd_backup_limits(const struct policy_limits *l, struct util_err *err)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int ioprio = -1;
    if (l->ionice_class == POLICY_IONICE_BEST_EFFORT)
        ioprio = (2 << CMD_IOPRIO_CLASS_SHIFT) | (l->ionice_level >= 0 ? l->ionice_level : 4);
    else if (l->ionice_class == POLICY_IONICE_IDLE)
        ioprio = 3 << CMD_IOPRIO_CLASS_SHIFT;
    if (d == NULL)
        return util_err_set(err, UTIL_EIO, "cannot read /proc/self/task: %s", strerror(errno));
    while ((e = readdir(d)) != NULL) {
        uint64_t v;
        int tid;
        if (util_parse_u64(e->d_name, strlen(e->d_name), INT32_MAX, &v) != 0 || v == 0)
            continue;
        tid = (int)v;
        if (l->nice >= 0 && setpriority(PRIO_PROCESS, (id_t)tid, l->nice) != 0) {
            closedir(d);
            return util_err_set(err, UTIL_EIO, "cannot set nice %d: %s", l->nice, strerror(errno));
        }
        if (ioprio >= 0 && syscall(SYS_ioprio_set, CMD_IOPRIO_WHO_PROCESS, tid, ioprio) != 0) {
            closedir(d);
            return util_err_set(err, UTIL_EIO, "cannot set the I/O priority: %s", strerror(errno));
        }
    }
    closedir(d);
    return 0;
}

/* ---- the steps ---- */

struct cmd_backup_opts {
    const char *policy, *host, *root, *max_runtime, *termlog, *kubeconfig;
    enum cli_output output;
    struct storage_opts so;
};

/* A key of this snapshot; the caller frees it. */
static char *cmd_backup_key(const struct backup *b, enum repo_kind kind)
{
    struct repo_key k = {.kind = kind, .src = b->src};
    snprintf(k.id, sizeof(k.id), "%s", b->id);
    return repo_key_build(&k);
}

/*
 * Writes the run record; its server modification time is the id's time. The
 * first PUT uses the local clock; when the server's second differs, the record
 * is written again under the right id and the first one deleted.
 */
static int cmd_backup_run_record(struct backup *b, const char *parent, int64_t max_runtime,
                                 struct util_err *err)
{
    struct repo_run r = {0};
    struct s3_info info = {0};
    uint8_t rnd[8];
    char *key = NULL, *json = NULL;
    int64_t t;
    int rc;

    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return util_err_set(err, UTIL_EIO, "no random bytes from OpenSSL");
    repo_id_make((int64_t)time(NULL), rnd, b->id);
    for (int attempt = 0;; attempt++) {
        snprintf(r.id, sizeof(r.id), "%s", b->id);
        snprintf(r.parent, sizeof(r.parent), "%s", parent);
        r.max_runtime = max_runtime;
        snprintf(r.agent, sizeof(r.agent), "lode %s", LODE_VERSION);
        json = repo_run_encode(&r);
        key = cmd_backup_key(b, REPO_KEY_RUN);
        if ((rc = backup_put(b, key, json, strlen(json), true, err)) != 0 ||
            (rc = s3_sync_head(b->st->s3, key, &info, err)) != 0)
            goto out;
        repo_id_parse(b->id, &t, err);
        if (info.mtime == t || attempt == 1)
            goto out;
        /* The local clock is off: the id takes the server's time. */
        s3_sync_delete(b->st->s3, key, err);
        repo_id_make(info.mtime, rnd, b->id);
        free(key);
        free(json);
    }
out:
    free(key);
    free(json);
    return rc;
}

/* GETs a whole object of the snapshot's source into memory. */
static int cmd_backup_get(struct backup *b, enum repo_kind kind, const char *id, char **data,
                          size_t *len, struct util_err *err)
{
    struct repo_key k = {.kind = kind, .src = b->src};
    struct s3_opts o = {.max_bytes = (uint64_t)4 << 30};
    char *key;
    int rc;
    snprintf(k.id, sizeof(k.id), "%s", id);
    key = repo_key_build(&k);
    rc = s3_sync_get(b->st->s3, key, &o, data, len, NULL, err);
    free(key);
    return rc;
}

struct cmd_backup_parent {
    char id[REPO_ID_LEN + 1];
    char *files_data;
    size_t files_len;
    struct repo_chunkset set;
    struct repo_files_reader reader;
    bool have;
};

/* The parent's file list and chunk set; a parent that cannot be read is dropped. */
static void cmd_backup_parent_load(struct backup *b, struct cmd_backup_parent *p)
{
    struct util_err err = {0};
    struct s3_info info = {0};
    char *key, *cdata = NULL;
    size_t clen = 0;
    struct repo_key k = {.kind = REPO_KEY_MANIFEST, .src = b->src};

    if (p->id[0] == '\0')
        return;
    snprintf(k.id, sizeof(k.id), "%s", p->id);
    key = repo_key_build(&k);
    if (s3_sync_head(b->st->s3, key, &info, &err) != 0) {
        fprintf(stderr, "lode backup: the parent %s is gone (%s): backing up without one\n", p->id,
                err.msg);
        free(key);
        return;
    }
    free(key);
    if (cmd_backup_get(b, REPO_KEY_CHUNKS, p->id, &cdata, &clen, &err) != 0 ||
        repo_chunkset_decode(&p->set, b->keys, p->id, (uint8_t *)cdata, clen, &err) != 0) {
        fprintf(stderr, "lode backup: the parent's chunk set: %s: backing up without a parent\n",
                err.msg);
        free(cdata);
        return;
    }
    free(cdata);
    if (cmd_backup_get(b, REPO_KEY_FILES, p->id, &p->files_data, &p->files_len, &err) != 0 ||
        repo_files_reader_init(&p->reader, b->keys, p->id, (uint8_t *)p->files_data, p->files_len,
                               &err) != 0) {
        fprintf(stderr, "lode backup: the parent's file list: %s: backing up without a parent\n",
                err.msg);
        repo_chunkset_free(&p->set);
        free(p->files_data);
        p->files_data = NULL;
        return;
    }
    p->have = true;
    b->parent_set = &p->set;
    b->parent_files = &p->reader;
}

static void cmd_backup_parent_free(struct cmd_backup_parent *p)
{
    if (p->have) {
        repo_files_reader_free(&p->reader);
        repo_chunkset_free(&p->set);
    }
    free(p->files_data);
}

/* The anomaly detector's numbers of a manifest (the same for this run's). */
static void cmd_backup_stats(const struct repo_manifest *m, struct anomaly_stats *s)
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
static bool cmd_backup_anomaly(struct backup *b, const struct repo_catalog *cat,
                               const struct repo_manifest *m, char *why, size_t whysize)
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
        if (storage_get_manifest(b->st, &b->src, cat->v[i].id, NULL, &pm, NULL, &err) != 0) {
            fprintf(stderr, "lode backup: anomaly check: %s\n", err.msg);
            continue;
        }
        cmd_backup_stats(&pm, &recent[n++]);
        repo_manifest_free(&pm);
    }
    if (b->parent_set == NULL)
        n = 0; /* no parent: nothing to compare with */
    cmd_backup_stats(m, &now);
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

/*
 * The detector's thresholds: the defaults, changed by $LODE_ANOMALY, a JSON object
 * of the BackupRepository's `anomaly` field that the controller puts into the Job
 * (docs/anomaly.md). Read before anything is written, so a bad value costs nothing.
 */
static int cmd_backup_thresholds(struct anomaly_thresholds *t, struct util_err *err)
{
    const char *env = getenv("LODE_ANOMALY");
    json_error_t jerr;
    json_t *obj, *v;
    const char *k;
    int rc = 0;

    anomaly_thresholds_default(t);
    if (env == NULL || env[0] == '\0')
        return 0;
    obj = json_loads(env, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return util_err_set(err, UTIL_EINVAL, "LODE_ANOMALY is not a JSON object: %s",
                            obj == NULL ? jerr.text : "another JSON value");
    }
    json_object_foreach(obj, k, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            rc = util_err_set(err, UTIL_EINVAL,
                              "LODE_ANOMALY: anomaly.%s must be a whole number of at least 0", k);
            break;
        }
        if ((rc = anomaly_thresholds_set(t, k, (uint64_t)json_integer_value(v), err)) != 0)
            break;
    }
    json_decref(obj);
    return rc;
}

/* "/etc/", "/etc//x" and "/./etc" (valid in a policy) as "/etc", "/etc/x", "/etc". */
static char *cmd_backup_path_clean(const char *p)
{
    struct util_buf out;
    util_buf_init(&out);
    while (*p != '\0') {
        const char *end;
        while (*p == '/')
            p++;
        end = strchr(p, '/');
        if (end == NULL)
            end = p + strlen(p);
        if (end > p && !(end - p == 1 && p[0] == '.')) {
            util_buf_puts(&out, "/");
            util_buf_append(&out, p, (size_t)(end - p));
        }
        p = end;
    }
    if (out.len == 0)
        util_buf_puts(&out, "/");
    return util_buf_steal(&out);
}

static void cmd_backup_paths_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

static int cmd_backup_paths_cmp(const void *x, const void *y)
{
    return repo_path_cmp(*(char *const *)x, *(char *const *)y);
}

/* Steps 2 to 8 (the top of this file); fills r, returns 0 or an error in b->fatal. */
static void cmd_backup_run(struct backup *b, const struct policy *pol, int64_t max_runtime,
                           struct backup_result *r)
{
    struct repo_catalog cat;
    struct cmd_backup_parent parent = {0};
    struct repo_manifest m = {0};
    struct util_err err = {0};
    struct s3_info info = {0};
    uint8_t *data = NULL;
    size_t len = 0;
    char *key = NULL, *json = NULL;
    int rc;

    repo_catalog_init(&cat);
    if ((rc = storage_catalog(b->st, b->src.ns, b->src.policy, b->src.host, &cat, &err)) != 0)
        goto fail;
    for (size_t i = 0; i < cat.n; i++) {
        if (!cat.v[i].incomplete && !cat.v[i].suspicious) {
            snprintf(parent.id, sizeof(parent.id), "%s", cat.v[i].id);
            break;
        }
    }
    if ((rc = cmd_backup_run_record(b, parent.id, max_runtime, &err)) != 0) {
        struct util_err e = err;
        util_err_set(&err, rc, "cannot write the run record: %.400s", e.msg);
        goto fail;
    }
    cmd_backup_parent_load(b, &parent);
    repo_merge_init(&b->merge, b->parent_files);
    repo_files_writer_init(&b->list, b->keys, b->id);

    if (!backup_walk(b) || !backup_store_flush(b))
        goto stopped;
    if (repo_merge_finish(&b->merge, &err) != 0)
        fprintf(stderr, "lode backup: the parent's file list: %s\n", err.msg);

    /* The file list and the chunk set. */
    repo_files_writer_finish(&b->list, &data, &len);
    key = cmd_backup_key(b, REPO_KEY_FILES);
    rc = backup_put(b, key, data, len, false, &err);
    free(key);
    free(data);
    data = NULL;
    if (rc != 0)
        goto fail;
    repo_chunkset_sort(&b->set);
    repo_chunkset_encode(&b->set, b->keys, b->id, &data, &len);
    key = cmd_backup_key(b, REPO_KEY_CHUNKS);
    rc = backup_put(b, key, data, len, false, &err);
    free(key);
    free(data);
    data = NULL;
    if (rc != 0)
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
    snprintf(m.agent, sizeof(m.agent), "lode %s", LODE_VERSION);
    m.paths = pol->paths;
    m.npaths = pol->npaths;
    m.errs = b->errs;
    m.nerrs = b->nerrs;
    r->suspicious = cmd_backup_anomaly(b, &cat, &m, r->anomaly, sizeof(r->anomaly));
    if (r->suspicious) {
        key = cmd_backup_key(b, REPO_KEY_SUSPICIOUS);
        rc = backup_put(b, key, "", 0, false, &err);
        free(key);
        if (rc != 0)
            goto fail;
    }
    if (m.incomplete) {
        key = cmd_backup_key(b, REPO_KEY_INCOMPLETE);
        rc = backup_put(b, key, "", 0, false, &err);
        free(key);
        if (rc != 0)
            goto fail;
    }
    if (backup_should_stop(b))
        goto stopped;
    /* The manifest counts its own bytes as uploaded: encode, count, encode again. */
    m.uploaded_bytes = b->uploaded_bytes;
    json = repo_manifest_encode(&m, b->keys);
    m.uploaded_bytes = b->uploaded_bytes + strlen(json);
    free(json);
    json = repo_manifest_encode(&m, b->keys);
    key = cmd_backup_key(b, REPO_KEY_MANIFEST);
    if ((rc = backup_put(b, key, json, strlen(json), true, &err)) != 0)
        goto fail;
    if ((rc = s3_sync_head(b->st->s3, key, &info, &err)) != 0) {
        /* Written, but its time is unknown: the server's clock is close enough. */
        info.mtime = (int64_t)time(NULL);
    }
    r->written = true;
    r->time = info.mtime;
    goto out;
fail:
    if (b->fatal == 0) {
        b->fatal = rc;
        snprintf(b->fatal_msg, sizeof(b->fatal_msg), "%s", err.msg);
    }
stopped:
    r->error = b->fatal_msg;
out:
    free(key);
    free(json);
    /* The paths and errors are borrowed from the policy and the backup. */
    m.paths = NULL;
    m.npaths = 0;
    m.errs = NULL;
    m.nerrs = 0;
    repo_manifest_free(&m);
    if (b->list.keys != NULL)
        repo_files_writer_free(&b->list);
    repo_merge_free(&b->merge);
    cmd_backup_parent_free(&parent);
    repo_catalog_free(&cat);
}

/*
 * A run that ends before the backup starts (policy, limits, storage, key): the
 * same output as any run without a snapshot, so a script or the controller
 * reading the termination log learns why.
 */
static int cmd_backup_fail_early(const struct cmd_backup_opts *o, const char *msg)
{
    struct backup none = {0};
    struct backup_result r = {.error = msg};
    backup_print(&none, &r, o->output == CLI_OUTPUT_JSON, o->termlog);
    return CLI_INVALID;
}

int cmd_backup(int argc, char **argv)
{
    static const struct option opts[] = {
        STORAGE_OPTIONS,
        {"policy", required_argument, NULL, 'p'},
        {"host", required_argument, NULL, 'H'},
        {"root", required_argument, NULL, 'r'},
        {"max-runtime", required_argument, NULL, 'm'},
        {"output", required_argument, NULL, 'o'},
        {"termination-log", required_argument, NULL, 't'},
        {"kubeconfig", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t start = uv_hrtime();
    struct cmd_backup_opts o = {.root = "/"};
    struct s3_client_opts copts = {0};
    struct backup b = {0};
    struct backup_result r = {0};
    struct storage st;
    struct policy pol = {0};
    struct policy_diags diags;
    struct util_err err = {0};
    struct sigaction sa;
    int64_t max_runtime;
    int c, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (storage_opt(&o.so, c, optarg))
            continue;
        switch (c) {
        case 'p':
            o.policy = optarg;
            break;
        case 'H':
            o.host = optarg;
            break;
        case 'r':
            o.root = optarg;
            break;
        case 'm':
            o.max_runtime = optarg;
            break;
        case 'o':
            if (cli_parse_output(optarg, &o.output) != 0)
                return CLI_USAGE;
            break;
        case 't':
            o.termlog = optarg;
            break;
        case 'k':
            o.kubeconfig = optarg;
            break;
        case 'h':
            cmd_backup_usage(stdout);
            return CLI_OK;
        default:
            return cli_usage_error("backup", "unknown flag");
        }
    }
    if (optind != argc)
        return cli_usage_error("backup", "unexpected argument \"%s\"", argv[optind]);
    if (o.policy == NULL || o.host == NULL)
        return cli_usage_error("backup", "--policy and --host are required");
    if (repo_name_check(o.host, "--host", &err) != 0)
        return cli_usage_error("backup", "%s", err.msg);

    policy_diags_init(&diags);
    if ((rc = storage_policy_load(o.policy, NULL, o.kubeconfig, &pol, &diags, &err)) != 0) {
        cli_print_diags(stderr, o.policy, &diags);
        rc = rc == UTIL_EINVAL && diags.n == 0 ? CLI_USAGE : CLI_INVALID;
        policy_diags_free(&diags);
        if (rc == CLI_USAGE)
            return cli_usage_error("backup", "%s", err.msg);
        return cmd_backup_fail_early(&o, err.msg);
    }
    policy_diags_free(&diags);
    max_runtime = pol.limits.max_runtime;
    if (o.max_runtime != NULL &&
        (policy_parse_duration(o.max_runtime, &max_runtime, &err) != 0 || max_runtime < 1)) {
        policy_free(&pol);
        return cli_usage_error("backup", "--max-runtime \"%s\": %s", o.max_runtime,
                               err.msg[0] ? err.msg : "must be at least 1s");
    }
    if (cmd_backup_thresholds(&b.thresholds, &err) != 0) {
        policy_free(&pol);
        return cli_usage_error("backup", "%s", err.msg);
    }
    if (cmd_backup_limits(&pol.limits, &err) != 0) {
        policy_free(&pol);
        return cmd_backup_fail_early(&o, err.msg);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = cmd_backup_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    /* A paced pack may take long: an operation may last as long as the run. */
    copts.deadline_ms = ((uint64_t)max_runtime + 60) * 1000;
    copts.pace_cb = backup_pace_cb;
    copts.pace_arg = &b;
    o.so.client = &copts;
    b.stop = &cmd_backup_stop;
    b.root = o.root;
    b.deadline_ns = start + (uint64_t)max_runtime * 1000000000ull;
    b.paths = util_calloc(pol.npaths + 1, sizeof(char *));
    for (size_t i = 0; i < pol.npaths; i++)
        b.paths[i] = cmd_backup_path_clean(pol.paths[i]);
    b.npaths = pol.npaths;
    qsort(b.paths, b.npaths, sizeof(char *), cmd_backup_paths_cmp);
    if (repo_source_set(&b.src, pol.namespace, pol.name, o.host, &err) != 0 ||
        storage_open(&st, &o.so, &err) != 0) {
        cmd_backup_paths_free(b.paths, b.npaths);
        policy_free(&pol);
        return cmd_backup_fail_early(&o, err.msg);
    }
    b.st = &st;
    if (storage_load_config(&st, &o.so, true, &err) != 0) {
        storage_close(&st);
        cmd_backup_paths_free(b.paths, b.npaths);
        policy_free(&pol);
        return cmd_backup_fail_early(&o, err.msg);
    }
    b.keys = &st.config.keys;
    backup_store_init(&b, pol.limits.upload_rate);
    cmd_backup_run(&b, &pol, max_runtime, &r);
    if (!r.written && b.timed_out)
        r.error = "stopped at maxRuntime before the snapshot was written";
    backup_print(&b, &r, o.output == CLI_OUTPUT_JSON, o.termlog);
    rc = !r.written ? CLI_INVALID : b.nerrs > 0 ? 3 : CLI_OK;

    backup_store_close(&b);
    storage_close(&st);
    backup_store_release(&b);
    for (size_t i = 0; i < b.nerrs; i++) {
        free(b.errs[i].path);
        free(b.errs[i].message);
    }
    free(b.errs);
    cmd_backup_paths_free(b.paths, b.npaths);
    policy_free(&pol);
    return rc;
}
