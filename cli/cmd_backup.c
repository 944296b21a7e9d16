/*
 * lode backup: one backup of a policy's paths on one host (docs/repository.md,
 * "Backing up"): the flags, the policy, and step 1, the limits: nice and the I/O
 * priority on every thread there is, before the storage client and the thread
 * pool start any (they inherit them). The steps after it, in the order that
 * keeps garbage collection safe, are backup_run.c's.
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

#include "anomaly/anomaly.h"
#include "agent/backup.h"
#include "agent/mcache.h"
#include "agent/pin.h"
#include "agent/iosched.h"
#include "cli.h"
#include "agent/storage.h"

#ifndef LODE_VERSION
#define LODE_VERSION "0.0.0-dev"
#endif

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
        "                   [--cache-dir DIR | --no-cache]\n"
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
        "  --cache-dir DIR        the node's cache of the repository's encrypted metadata\n"
        "                         (default $XDG_CACHE_HOME/lodestore, else\n"
        "                         ~/.cache/lodestore); see docs/repository.md\n"
        "  --no-cache             read the parent's metadata from the bucket only\n"
        "  --pin REASON           pin the snapshot once written: retention keeps it until\n"
        "                         it is unpinned (lode mark ID --unpin)\n"
        "  --kubeconfig PATH      for --policy NS/NAME read from the API\n"
        "%s\n"
        "Exit codes: 0 snapshot written, 3 snapshot written but incomplete (files that\n"
        "could not be read are listed), 1 no snapshot (stopped at maxRuntime, by\n"
        "SIGTERM, or a storage failure), 2 usage error.\n",
        cli_storage_usage);
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
    const char *pin;       /* --pin REASON: pin the snapshot written (docs/retention.md) */
    const char *cache_dir; /* --cache-dir DIR (docs/repository.md, "The node's cache") */
    bool no_cache;         /* --no-cache */
    enum cli_output output;
    struct storage_opts so;
};

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

/*
 * A run that ends before the backup starts (policy, limits, storage, key): the
 * same output as any run without a snapshot, so a script or the controller
 * reading the termination log learns why.
 */
static int cmd_backup_fail_early(const struct cmd_backup_opts *o, const char *msg)
{
    struct backup none = {0};
    struct backup_result r = {.error = msg};
    cli_backup_print(&none, &r, o->output == CLI_OUTPUT_JSON, o->termlog);
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
        {"pin", required_argument, NULL, 'P'},
        {"cache-dir", required_argument, NULL, 'C'},
        {"no-cache", no_argument, NULL, 'N'},
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
        if (cli_storage_opt(&o.so, c, optarg))
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
        case 'P':
            if (pin_reason_check(optarg, &err) != 0)
                return cli_usage_error("backup", "--pin: %s", err.msg);
            o.pin = optarg;
            break;
        case 'C':
            if (optarg[0] == '\0')
                return cli_usage_error("backup", "--cache-dir: an empty path");
            o.cache_dir = optarg;
            break;
        case 'N':
            o.no_cache = true;
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
    if (o.no_cache && o.cache_dir != NULL)
        return cli_usage_error("backup", "--cache-dir and --no-cache exclude each other");
    if (repo_name_check(o.host, "--host", &err) != 0)
        return cli_usage_error("backup", "%s", err.msg);

    policy_diags_init(&diags);
    if ((rc = cli_policy_load(o.policy, NULL, o.kubeconfig, &pol, &diags, &err)) != 0) {
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
    b.agent = "lode " LODE_VERSION;
    b.root = o.root;
    b.deadline_ns = start + (uint64_t)max_runtime * 1000000000ull;
    b.paths = util_calloc(pol.npaths + 1, sizeof(char *));
    for (size_t i = 0; i < pol.npaths; i++)
        b.paths[i] = cmd_backup_path_clean(pol.paths[i]);
    b.npaths = pol.npaths;
    b.exclude = &pol.exclude;
    qsort(b.paths, b.npaths, sizeof(char *), cmd_backup_paths_cmp);
    /* An I/O priority that the devices' scheduler ignores is said, not refused: the
     * backup runs as it would without it (docs/operator.md, "The I/O scheduler"). */
    if (pol.limits.ionice_class != POLICY_IONICE_DEFAULT &&
        iosched_check("/sys", o.root, b.paths, b.npaths, r.ioprio, sizeof(r.ioprio)) > 0)
        fprintf(stderr, "lode backup: warning: %s\n", r.ioprio);
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
    /* The node's cache of metadata packs: a cache that cannot be opened is said, and the
     * backup runs without it (it only saves requests). */
    struct mcache cache = {0};
    char *cache_dir = mcache_default_dir(o.cache_dir, o.no_cache);
    if (cache_dir != NULL) {
        if (mcache_open(&cache, cache_dir, st.url, &b.src, b.keys, &err) == 0)
            b.cache = &cache;
        else
            fprintf(stderr, "lode backup: the metadata cache: %s; going on without it\n", err.msg);
        free(cache_dir);
    }
    backup_store_init(&b, pol.limits.upload_rate);
    struct hook_outcome hooks[2 * POLICY_MAX_HOOKS];
    char before_why[640] = "", after_why[640] = "";
    char *ref = util_asprintf("%s/%s", pol.namespace, pol.name);
    struct hook_env henv = {.root = o.root, .phase = "before", .policy = ref, .host = o.host};
    r.hooks = hooks;
    /* Before-hooks: one that fails with onError: fail means no backup (docs/policy.md). The
     * controller says LODE_HOOKS_ALLOWED=0 in a namespace its operator did not allow. */
    const char *allowed = getenv("LODE_HOOKS_ALLOWED");
    size_t nafter = pol.hooks.nafter;
    if (pol.hooks.nbefore + pol.hooks.nafter > 0 && allowed != NULL && strcmp(allowed, "0") == 0) {
        snprintf(before_why, sizeof(before_why),
                 "spec.hooks are not allowed in namespace %s: the operator lists the namespaces "
                 "whose policies may run hooks (--hook-namespaces, the chart's "
                 "hooks.namespaces); nothing ran",
                 pol.namespace);
        r.error = before_why;
        nafter = 0;
    } else if (hooks_phase(pol.hooks.before, pol.hooks.nbefore, &henv, b.deadline_ns, b.stop, hooks,
                           &r.nhooks, before_why, sizeof(before_why)) == 0)
        backup_run(&b, &pol, max_runtime, &r);
    else
        r.error = before_why;
    if (!r.written && b.timed_out)
        r.error = "stopped at maxRuntime before the snapshot was written";
    /* After-hooks run whatever happened, and are told what. */
    henv.phase = "after";
    henv.result = r.written ? "succeeded" : "failed";
    henv.snapshot = r.written ? b.id : NULL;
    henv.error = r.written ? NULL : r.error;
    if (hooks_phase(pol.hooks.after, nafter, &henv, 0, b.stop, hooks, &r.nhooks, after_why,
                    sizeof(after_why)) != 0 &&
        r.written)
        r.error = after_why;
    free(ref);
    char pin_why[600];
    if (r.written && o.pin != NULL) {
        struct repo_snapshot snap = {.src = b.src};
        bool changed;
        memcpy(snap.id, b.id, sizeof(snap.id));
        if (pin_set(&st, &st.config.keys, &snap, o.pin, &changed, &err) != 0) {
            snprintf(pin_why, sizeof(pin_why),
                     "the snapshot was written but not pinned (pin it with lode mark %s --pin): "
                     "%.400s",
                     b.id, err.msg);
            r.error = pin_why;
        } else {
            r.pinned = o.pin;
        }
    }
    cli_backup_print(&b, &r, o.output == CLI_OUTPUT_JSON, o.termlog);
    rc = !r.written || r.error != NULL ? CLI_INVALID : b.nerrs > 0 ? 3 : CLI_OK;

    backup_store_close(&b);
    storage_close(&st);
    backup_store_release(&b);
    backup_list_release(&b);
    if (cache.dir != NULL)
        mcache_close(&cache);
    for (size_t i = 0; i < b.nerrs; i++) {
        free(b.errs[i].path);
        free(b.errs[i].message);
    }
    free(b.errs);
    cmd_backup_paths_free(b.paths, b.npaths);
    policy_free(&pol);
    return rc;
}
