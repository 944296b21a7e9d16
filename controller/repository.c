/*
 * BackupRepository resolution (repository.h): a reflector, a list of entries, one
 * check at a time per entry (GET Secret, then s3_probe), and a status write when the
 * outcome changes or the spec's generation moved.
 */
#include "repository.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/list.h"

#define OK_RECHECK_MS  (10u * 60 * 1000)
#define FAIL_BASE_MS   10000u
#define FAIL_CAP_MS    (10u * 60 * 1000)
#define CHECK_DEADLINE 30000u

struct repo_entry {
    struct ctl_repos *rs;
    struct util_list link; /* on ctl_repos.entries */
    char *ns, *name;
    json_t *obj; /* the object last seen (owned reference) */
    int64_t generation;
    char *spec_text; /* the spec last checked, to notice changes */
    uv_timer_t timer;
    unsigned failures;
    bool checking, ready, deleted, reported;
    bool checked; /* ready, reason and message are this process's own finding */
    char reason[40];
    char message[512];
    struct kube_request *secret_req;
    struct s3_client *s3;
    struct s3_op *probe;
};

struct ctl_repos {
    uv_loop_t *loop;
    struct kube_client *kube;
    struct kube_reflector *refl;
    struct util_list entries; /* of repo_entry, newest first */
    ctl_repos_log_cb log_cb;
    void *log_arg;
    ctl_repos_change_cb change_cb;
    void *change_arg;
    bool started, closing;
    unsigned open_handles;
    uint64_t rng;
};

static uint32_t repos_rand(struct ctl_repos *rs)
{
    rs->rng ^= rs->rng >> 12;
    rs->rng ^= rs->rng << 25;
    rs->rng ^= rs->rng >> 27;
    return (uint32_t)((rs->rng * 2685821657736338717ULL) >> 32);
}

static void repos_log(struct ctl_repos *rs, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void repos_changed(struct ctl_repos *rs, const char *ns, const char *name)
{
    if (rs->change_cb != NULL && !rs->closing)
        rs->change_cb(ns, name, rs->change_arg);
}

static void repos_log(struct ctl_repos *rs, int level, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    if (rs->log_cb == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rs->log_cb(level, msg, rs->log_arg);
}

/* ---- pure parts ---- */

uint64_t ctl_repo_next_check_ms(bool ok, unsigned failures, uint32_t rnd)
{
    uint64_t d;
    if (ok)
        d = OK_RECHECK_MS;
    else {
        d = FAIL_BASE_MS;
        for (unsigned i = 1; i < failures && d < FAIL_CAP_MS; i++)
            d *= 2;
        if (d > FAIL_CAP_MS)
            d = FAIL_CAP_MS;
    }
    /* Jitter in [d * 3/4, d]: repositories checked together drift apart. */
    return d - ((d / 4) * rnd >> 32);
}

const char *ctl_repo_reason(int error, const char *code)
{
    switch (error) {
    case 0:
        return "BucketReachable";
    case S3_ENOTFOUND:
        return "BucketMissing";
    case S3_EDENIED:
        return "AccessDenied";
    case S3_ETLS:
        return "TLS";
    case S3_ECONN:
    case S3_ETIMEDOUT:
        return "Unreachable";
    default:
        return code != NULL && strcmp(code, "NoSuchBucket") == 0 ? "BucketMissing" : "StorageError";
    }
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b != NULL)
        v = json_object_get(v, b);
    return json_string_value(v);
}

/* A Secret's value for key, decoded (owned), or NULL. */
static char *secret_value(const json_t *secret, const char *key, size_t *len)
{
    const char *b64 = str_at(secret, "data", key);
    char *out = NULL;
    struct util_err err;
    if (b64 == NULL)
        return NULL;
    if (kube_base64_decode(b64, strlen(b64), &out, len, &err) != 0)
        return NULL;
    return out;
}

int ctl_repo_settings(const json_t *repo, const json_t *secret, struct s3_config *cfg,
                      const char **reason, struct util_err *err)
{
    const json_t *spec = json_object_get(repo, "spec");
    const char *endpoint = str_at(spec, "endpoint", NULL);
    const char *bucket = str_at(spec, "bucket", NULL);
    const char *prefix = str_at(spec, "prefix", NULL);
    const char *region = str_at(spec, "region", NULL);
    const char *ca = str_at(spec, "caBundle", NULL);
    const json_t *cs = json_object_get(spec, "credentialsSecret");
    const char *ak_key = str_at(cs, "accessKeyIDKey", NULL);
    const char *sk_key = str_at(cs, "secretAccessKeyKey", NULL);
    const char *st_key = str_at(cs, "sessionTokenKey", NULL);
    char *ak = NULL, *sk = NULL, *st = NULL, *url = NULL, *ca_pem = NULL;
    size_t n, ca_len = 0;
    int rc;

    memset(cfg, 0, sizeof(*cfg));
    *reason = "InvalidSpec";
    if (endpoint == NULL || bucket == NULL)
        return util_err_set(err, UTIL_EINVAL, "spec.endpoint and spec.bucket are required");
    while (prefix != NULL && *prefix == '/')
        prefix++;
    {
        size_t el = strlen(endpoint);
        while (el > 0 && endpoint[el - 1] == '/')
            el--;
        url = util_asprintf("s3:%.*s/%s%s%s", (int)el, endpoint, bucket,
                            prefix != NULL && prefix[0] ? "/" : "", prefix != NULL ? prefix : "");
    }
    *reason = "SecretIncomplete";
    ak = secret_value(secret, ak_key != NULL ? ak_key : "AWS_ACCESS_KEY_ID", &n);
    sk = secret_value(secret, sk_key != NULL ? sk_key : "AWS_SECRET_ACCESS_KEY", &n);
    if (st_key != NULL)
        st = secret_value(secret, st_key, &n);
    if (ak == NULL || sk == NULL) {
        rc = util_err_set(err, UTIL_EINVAL, "the Secret %s lacks %s or %s",
                          str_at(cs, "name", NULL) != NULL ? str_at(cs, "name", NULL) : "?",
                          ak_key != NULL ? ak_key : "AWS_ACCESS_KEY_ID",
                          sk_key != NULL ? sk_key : "AWS_SECRET_ACCESS_KEY");
        goto out;
    }
    struct s3_env env = {.repository = url,
                         .access_key = ak,
                         .secret_key = sk,
                         .session_token = st,
                         .region = region,
                         .allow_plain_http = json_is_true(json_object_get(spec, "allowPlainHTTP"))};
    *reason = "InvalidSpec";
    if ((rc = s3_config_from(cfg, &env, err)) != 0)
        goto out;
    if (ca != NULL && ca[0] != '\0') {
        if (kube_base64_decode(ca, strlen(ca), &ca_pem, &ca_len, err) != 0 ||
            (rc = s3_config_add_ca(cfg, ca_pem, ca_len, err)) != 0) {
            rc = util_err_set(err, UTIL_EINVAL, "spec.caBundle is not base64 of PEM certificates");
            s3_config_free(cfg);
            goto out;
        }
    }
    *reason = "";
    rc = 0;
out:
    if (sk != NULL)
        memset(sk, 0, strlen(sk));
    free(ak);
    free(sk);
    free(st);
    free(url);
    free(ca_pem);
    return rc;
}

/* ---- the status ---- */

static const struct kube_resource res_repos = {"lodestore.io", "v1alpha1", "backuprepositories",
                                               NULL};

static void on_status_written(const struct kube_result *res, void *arg)
{
    struct ctl_repos *rs = arg;
    if (res->error != 0 || res->status >= 300)
        repos_log(rs, 0, "BackupRepository status: %s", res->message);
}

static void entry_write_status(struct repo_entry *e, const char *reason, const char *message,
                               bool ready)
{
    struct ctl_repos *rs = e->rs;
    char now[UTIL_TIME_BUF];
    struct util_err err;
    bool changed = !e->reported || ready != e->ready || strcmp(reason, e->reason) != 0;
    bool news = ready != e->ready || strcmp(reason, e->reason) != 0 ||
                strcmp(message[0] ? message : reason, e->message) != 0;
    const char *transition = NULL;
    json_t *patch;

    util_format_utc((int64_t)time(NULL), now, sizeof(now));
    if (!changed) {
        /* Keep the transition time the condition already has. */
        const json_t *conds = json_object_get(json_object_get(e->obj, "status"), "conditions");
        size_t i;
        const json_t *c;
        json_array_foreach(conds, i, c)
        {
            if (json_is_string(json_object_get(c, "type")) &&
                strcmp(json_string_value(json_object_get(c, "type")), "Ready") == 0)
                transition = json_string_value(json_object_get(c, "lastTransitionTime"));
        }
    }
    e->ready = ready;
    e->reported = true;
    e->checked = true;
    snprintf(e->reason, sizeof(e->reason), "%s", reason);
    snprintf(e->message, sizeof(e->message), "%s", message[0] ? message : reason);
    patch =
        json_pack("{s:{s:I,s:s,s:[{s:s,s:s,s:s,s:s,s:I,s:s}]}}", "status", "observedGeneration",
                  (json_int_t)e->generation, "lastCheckTime", now, "conditions", "type", "Ready",
                  "status", ready ? "True" : "False", "reason", reason, "message",
                  message[0] ? message : reason, "observedGeneration", (json_int_t)e->generation,
                  "lastTransitionTime", transition != NULL ? transition : now);
    struct kube_resource r = res_repos;
    r.namespace = e->ns;
    if (patch == NULL || kube_merge_patch(rs->kube, &r, e->name, "status", patch, on_status_written,
                                          rs, NULL, &err) != 0)
        repos_log(rs, 0, "BackupRepository %s/%s: cannot write its status", e->ns, e->name);
    json_decref(patch);
    if (news)
        repos_changed(rs, e->ns, e->name);
}

/* ---- checks ---- */

static void entry_schedule(struct repo_entry *e, bool ok);
static void entry_check(struct repo_entry *e);

static void on_timer(uv_timer_t *t)
{
    entry_check(t->data);
}

static void entry_schedule(struct repo_entry *e, bool ok)
{
    e->failures = ok ? 0 : e->failures + 1;
    uv_timer_start(&e->timer, on_timer, ctl_repo_next_check_ms(ok, e->failures, repos_rand(e->rs)),
                   0);
}

static void on_s3_closed(void *arg)
{
    (void)arg;
}

static void entry_done(struct repo_entry *e, const char *reason, const char *message, bool ok)
{
    e->checking = false;
    if (e->s3 != NULL) {
        s3_client_close(e->s3, on_s3_closed, NULL);
        e->s3 = NULL;
    }
    entry_write_status(e, reason, message, ok);
    if (!ok)
        repos_log(e->rs, 1, "BackupRepository %s/%s not ready: %s: %s", e->ns, e->name, reason,
                  message);
    entry_schedule(e, ok);
}

static void on_probe(const struct s3_result *res, void *arg)
{
    struct repo_entry *e = arg;
    e->probe = NULL;
    entry_done(e, ctl_repo_reason(res->error, res->code),
               res->error == 0 ? "the bucket answered a signed listing" : res->message,
               res->error == 0);
}

static void on_secret(const struct kube_result *res, void *arg)
{
    struct repo_entry *e = arg;
    struct ctl_repos *rs = e->rs;
    struct s3_config cfg;
    struct s3_client_opts o = {.http = kube_client_http(rs->kube),
                               .max_attempts = 3,
                               .deadline_ms = CHECK_DEADLINE,
                               .stall_timeout_ms = 10000,
                               .user_agent = "lodestore-controller"};
    const char *reason;
    struct util_err err;
    char msg[600];

    e->secret_req = NULL;
    if (res->error != 0 || res->status == 404 || res->status >= 300) {
        snprintf(msg, sizeof(msg), "the credentials Secret cannot be read: %s",
                 res->message[0] ? res->message : "not found");
        entry_done(e, res->status == 404 ? "SecretMissing" : "SecretUnreadable", msg, false);
        return;
    }
    if (ctl_repo_settings(e->obj, res->body, &cfg, &reason, &err) != 0) {
        entry_done(e, reason, err.msg, false);
        return;
    }
    if (s3_client_init(rs->loop, &e->s3, &cfg, &o, &err) != 0 ||
        s3_probe(e->s3, NULL, on_probe, e, &e->probe, &err) != 0) {
        s3_config_free(&cfg);
        entry_done(e, "StorageError", err.msg, false);
        return;
    }
    s3_config_free(&cfg);
}

static void entry_check(struct repo_entry *e)
{
    struct ctl_repos *rs = e->rs;
    const char *secret;
    struct kube_resource r = {"", "v1", "secrets", e->ns};
    struct util_err err;
    if (e->checking || rs->closing || e->deleted)
        return;
    secret = json_string_value(json_object_get(
        json_object_get(json_object_get(e->obj, "spec"), "credentialsSecret"), "name"));
    e->checking = true;
    if (secret == NULL) {
        entry_done(e, "InvalidSpec", "spec.credentialsSecret.name is required", false);
        return;
    }
    if (kube_get(rs->kube, &r, secret, NULL, on_secret, e, &e->secret_req, &err) != 0)
        entry_done(e, "SecretUnreadable", err.msg, false);
}

/* ---- entries ---- */

static struct repo_entry *entry_find(struct ctl_repos *rs, const char *ns, const char *name)
{
    struct util_list *l;
    util_list_for_each (l, &rs->entries) {
        struct repo_entry *e = util_list_entry(l, struct repo_entry, link);
        if (strcmp(e->ns, ns) == 0 && strcmp(e->name, name) == 0)
            return e;
    }
    return NULL;
}

static void on_entry_timer_closed(uv_handle_t *h)
{
    struct repo_entry *e = h->data;
    struct ctl_repos *rs = e->rs;
    free(e->ns);
    free(e->name);
    free(e->spec_text);
    json_decref(e->obj);
    free(e);
    rs->open_handles--;
    if (rs->closing && rs->open_handles == 0)
        free(rs);
}

static void entry_drop(struct repo_entry *e)
{
    e->deleted = true;
    util_list_remove(&e->link);
    if (e->secret_req != NULL)
        kube_request_cancel(e->secret_req);
    if (e->probe != NULL)
        s3_op_cancel(e->probe);
    if (e->s3 != NULL)
        s3_client_close(e->s3, on_s3_closed, NULL);
    uv_close((uv_handle_t *)&e->timer, on_entry_timer_closed);
}

/*
 * Before this process's first check, the Ready condition the object carries (when it
 * is about the current generation) stands in, so a restart does not stop every policy
 * for the length of a probe.
 */
static void entry_seed(struct repo_entry *e)
{
    const json_t *st = json_object_get(e->obj, "status");
    const json_t *conds = json_object_get(st, "conditions");
    int64_t gen =
        json_integer_value(json_object_get(json_object_get(e->obj, "metadata"), "generation"));
    size_t i;
    const json_t *c;
    e->ready = false;
    snprintf(e->reason, sizeof(e->reason), CTL_REPO_CHECKING);
    snprintf(e->message, sizeof(e->message), "the controller has not checked the bucket yet");
    if (json_integer_value(json_object_get(st, "observedGeneration")) != gen)
        return;
    json_array_foreach(conds, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *status = json_string_value(json_object_get(c, "status"));
        const char *reason = json_string_value(json_object_get(c, "reason"));
        const char *message = json_string_value(json_object_get(c, "message"));
        if (type == NULL || strcmp(type, "Ready") != 0 || status == NULL || reason == NULL)
            continue;
        e->ready = strcmp(status, "True") == 0;
        snprintf(e->reason, sizeof(e->reason), "%s", reason);
        snprintf(e->message, sizeof(e->message), "%s", message ? message : reason);
    }
}

static void on_upsert(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                      void *arg)
{
    struct ctl_repos *rs = arg;
    struct repo_entry *e = entry_find(rs, ns, name);
    char *spec = json_dumps(json_object_get(obj, "spec"), JSON_COMPACT | JSON_SORT_KEYS);
    if (e == NULL) {
        e = util_calloc(1, sizeof(*e));
        e->rs = rs;
        e->ns = util_strdup(ns);
        e->name = util_strdup(name);
        uv_timer_init(rs->loop, &e->timer);
        e->timer.data = e;
        rs->open_handles++;
        util_list_push_front(&rs->entries, &e->link);
    }
    bool fresh = e->obj == NULL;
    json_decref(e->obj);
    e->obj = json_incref(obj);
    if (!e->checked)
        entry_seed(e);
    e->generation =
        json_integer_value(json_object_get(json_object_get(obj, "metadata"), "generation"));
    if (spec != NULL && (e->spec_text == NULL || strcmp(spec, e->spec_text) != 0)) {
        /* A new or changed spec: check now (a check in flight finishes, then this one). */
        free(e->spec_text);
        e->spec_text = spec;
        spec = NULL;
        e->failures = 0;
        e->reported = false;
        if (!e->checking)
            uv_timer_start(&e->timer, on_timer, 0, 0);
    }
    free(spec);
    if (fresh)
        repos_changed(rs, ns, name);
}

static void on_delete(struct kube_reflector *r, const char *ns, const char *name, json_t *obj,
                      void *arg)
{
    struct repo_entry *e = entry_find(arg, ns, name);
    if (e != NULL) {
        entry_drop(e);
        repos_changed(arg, ns, name);
    }
}

static void on_synced(struct kube_reflector *r, void *arg)
{
    repos_changed(arg, NULL, NULL);
}

static void on_error(struct kube_reflector *r, const char *what, uint64_t delay_ms, void *arg)
{
    repos_log(arg, 0, "BackupRepositories: %s (again in %llu ms)", what,
              (unsigned long long)delay_ms);
}

int ctl_repos_init(uv_loop_t *loop, struct kube_client *kube, const char *namespace,
                   ctl_repos_log_cb log_cb, void *log_arg, struct ctl_repos **out,
                   struct util_err *err)
{
    static const struct kube_reflector_cbs cbs = {on_upsert, on_upsert, on_delete, on_synced,
                                                  on_error};
    struct kube_reflector_opts o = {.res = res_repos};
    struct ctl_repos *rs = util_calloc(1, sizeof(*rs));
    int rc;
    rs->loop = loop;
    rs->kube = kube;
    rs->log_cb = log_cb;
    rs->log_arg = log_arg;
    rs->rng = uv_hrtime() | 1;
    util_list_init(&rs->entries);
    o.res.namespace = namespace;
    if ((rc = kube_reflector_init(kube, &rs->refl, &o, &cbs, rs, err)) != 0) {
        free(rs);
        return rc;
    }
    *out = rs;
    return 0;
}

void ctl_repos_start(struct ctl_repos *rs)
{
    if (rs->started)
        return;
    rs->started = true;
    kube_reflector_start(rs->refl);
}

void ctl_repos_close(struct ctl_repos *rs)
{
    if (rs == NULL || rs->closing)
        return;
    rs->closing = true;
    kube_reflector_close(rs->refl);
    struct util_list *first;
    while ((first = util_list_first(&rs->entries)) != NULL)
        entry_drop(util_list_entry(first, struct repo_entry, link));
    if (rs->open_handles == 0)
        free(rs);
}

size_t ctl_repos_count(const struct ctl_repos *rs, size_t *ready)
{
    size_t n = 0, r = 0;
    const struct util_list *l;
    util_list_for_each (l, &rs->entries) {
        n++;
        r += util_list_entry(l, const struct repo_entry, link)->ready;
    }
    if (ready != NULL)
        *ready = r;
    return n;
}

bool ctl_repos_synced(const struct ctl_repos *rs)
{
    return rs != NULL && kube_reflector_synced(rs->refl);
}

bool ctl_repos_get(const struct ctl_repos *rs, const char *ns, const char *name,
                   struct ctl_repo_view *view)
{
    memset(view, 0, sizeof(*view));
    if (rs == NULL)
        return false;
    const struct util_list *l;
    util_list_for_each (l, &rs->entries) {
        const struct repo_entry *e = util_list_entry(l, const struct repo_entry, link);
        if (strcmp(e->ns, ns) == 0 && strcmp(e->name, name) == 0) {
            view->obj = e->obj;
            view->ready = e->ready;
            view->reason = e->reason;
            view->message = e->message;
            return true;
        }
    }
    return false;
}

void ctl_repos_each(const struct ctl_repos *rs, ctl_repos_each_cb cb, void *arg)
{
    const struct util_list *l;
    if (rs == NULL)
        return;
    util_list_for_each (l, &rs->entries) {
        const struct repo_entry *e = util_list_entry(l, const struct repo_entry, link);
        struct ctl_repo_view v = {e->obj, e->ready, e->reason, e->message};
        cb(e->ns, e->name, &v, arg);
    }
}

void ctl_repos_set_change_cb(struct ctl_repos *rs, ctl_repos_change_cb cb, void *arg)
{
    rs->change_cb = cb;
    rs->change_arg = arg;
}
