/*
 * The reflector: list (paged) then watch one resource, for ever.
 *
 * State it keeps: the resourceVersion to watch from, and a set of "namespace/name"
 * keys with each object's resourceVersion (refl_keys.c). A list stamps each key it sees
 * with the list's generation; keys left with an older stamp at the end of a complete
 * list are objects deleted while no watch was running, and are reported as deletes.
 *
 * Every next step (list, watch, retry) goes through one uv_timer_t, so no request is
 * started from inside another request's callback chain, and a stop or close only has
 * to cancel one request and stop one timer.
 */
#include "kube/kube_int.h"

#include <stdlib.h>
#include <string.h>

#define REFL_PAGE_DEFAULT 500
#define REFL_WATCH_MIN_S  300
#define REFL_WATCH_MAX_S  600
#define REFL_WATCH_SHORT_MS                                                                        \
    1000 /* a watch that ends sooner, with no event, counts as a failure                           \
          */

enum refl_next { REFL_LIST, REFL_WATCH };

struct kube_reflector {
    struct kube_client *c;
    uv_timer_t timer;
    char *group, *version, *resource, *namespace, *label_selector, *field_selector;
    struct kube_resource res;
    bool metadata_only;
    const char *const *strip; /* borrowed: kube_reflector_opts.strip */
    const char *const *keep;  /* borrowed: kube_reflector_opts.keep */
    bool (*skip_cb)(const struct kube_watch_peek *peek, void *arg); /* the owner's */
    unsigned page_size, watch_min_s, watch_max_s;
    struct kube_backoff backoff;
    struct kube_reflector_cbs cbs;
    void *arg;
    struct kube_request *req; /* the LIST page or WATCH in flight, or NULL */
    enum refl_next next;      /* what the timer starts */
    char *rv;                 /* where the next watch starts */
    char *cont;               /* the continue token of the list in progress */
    struct refl_keys keys;    /* every object's version (refl_keys.c) */
    bool running, synced, closing;
    unsigned epoch; /* bumped by stop: a callback that stopped us is noticed */
    unsigned lists, watches;
    uint64_t skipped; /* watch events left undecoded (refl_skip) */
    uint64_t watch_start_ms;
    unsigned watch_events;
    uint64_t events; /* watch events ever, skipped ones included (metrics) */
};

/* ---- the key set (refl_keys.c) and what the watch skips ---- */

static void refl_set_rv(struct kube_reflector *r, const char *rv)
{
    char *s = util_strdup(rv);
    free(r->rv);
    r->rv = s;
}

void kube_reflector_note(struct kube_reflector *r, const char *ns, const char *name, const char *rv)
{
    if (r == NULL || name == NULL || rv == NULL || rv[0] == '\0')
        return;
    refl_keys_note(&r->keys, ns, name, rv);
}

/*
 * The watch's skip_cb: an ADDED or MODIFIED event whose version is the one the key set
 * holds (the owner applied it already, from its own write's answer: kube_reflector_note),
 * or one the owner's skip_cb has no use for, is not decoded; the watch goes on from its
 * version. Costs a key lookup per event.
 */
static bool refl_skip(const struct kube_watch_peek *p, void *arg)
{
    struct kube_reflector *r = arg;
    char rv[128];
    if (!((p->type_len == 5 && memcmp(p->type, "ADDED", 5) == 0) ||
          (p->type_len == 8 && memcmp(p->type, "MODIFIED", 8) == 0)))
        return false;
    if (p->rv_len >= sizeof(rv))
        return false;
    bool held = refl_keys_held(&r->keys, p->namespace, p->namespace_len, p->name, p->name_len,
                               p->resource_version, p->rv_len);
    /* Not recorded when the owner has no use for it: its next delivered event is an add. */
    if (!held && (r->skip_cb == NULL || !r->skip_cb(p, r->arg)))
        return false;
    memcpy(rv, p->resource_version, p->rv_len);
    rv[p->rv_len] = '\0';
    r->watch_events++;
    r->events++;
    refl_set_rv(r, rv);
    r->skipped++;
    return true;
}

/* ---- scheduling ---- */

static void refl_list_page(struct kube_reflector *r);
static void refl_watch(struct kube_reflector *r);

static void on_timer(uv_timer_t *t)
{
    struct kube_reflector *r = t->data;
    if (!r->running)
        return;
    if (r->next == REFL_LIST) {
        free(r->cont);
        r->cont = NULL;
        r->keys.gen++;
        refl_list_page(r);
    } else {
        refl_watch(r);
    }
}

static void refl_schedule(struct kube_reflector *r, enum refl_next next, uint64_t delay_ms)
{
    r->next = next;
    uv_timer_start(&r->timer, on_timer, delay_ms, 0);
}

/* A failure: tell the owner, then retry `next` after the backoff. */
static void refl_fail(struct kube_reflector *r, enum refl_next next, const char *what)
{
    uint64_t delay = kube_backoff_next(&r->backoff, kube__rand(r->c));
    unsigned epoch = r->epoch;
    if (r->cbs.error_cb != NULL) {
        r->cbs.error_cb(r, what, delay, r->arg);
        if (r->epoch != epoch)
            return;
    }
    refl_schedule(r, next, delay);
}

static void refl_fail_result(struct kube_reflector *r, enum refl_next next, const char *verb,
                             const struct kube_result *res)
{
    char *what;
    if (res->error != 0)
        what = util_asprintf("%s %s: %s", verb, r->resource, res->message);
    else
        what = util_asprintf("%s %s: HTTP %ld: %s", verb, r->resource, res->status, res->message);
    refl_fail(r, next, what);
    free(what);
}

/* A list that answered 200 with something unusable. */
static void refl_fail_msg(struct kube_reflector *r, enum refl_next next, const char *msg)
{
    char *what = util_asprintf("list %s: %s", r->resource, msg);
    refl_fail(r, next, what);
    free(what);
}

/* ---- listing ---- */

/* Delivers the deletes that a complete list revealed. False if a callback stopped us. */
static bool refl_sweep(struct kube_reflector *r)
{
    size_t ngone, i;
    char **gone = refl_keys_stale(&r->keys, &ngone);
    unsigned epoch = r->epoch;
    bool ok = true;

    for (i = 0; i < ngone; i++) {
        char *slash = strchr(gone[i], '/');
        if (ok && slash != NULL) {
            *slash = '\0';
            refl_keys_forget(&r->keys, gone[i], slash + 1);
            if (r->cbs.delete_cb != NULL)
                r->cbs.delete_cb(r, gone[i], slash + 1, NULL, r->arg);
            ok = r->epoch == epoch;
        }
        free(gone[i]);
    }
    free(gone);
    return ok;
}

/* Applies one object (list item or watch event); false if a callback stopped us. */
static bool refl_apply(struct kube_reflector *r, json_t *obj, const char *ns, const char *name,
                       const char *rv)
{
    unsigned epoch = r->epoch;
    if (ns == NULL)
        ns = "";
    switch (refl_keys_upsert(&r->keys, ns, name, rv)) {
    case REFL_ADDED:
        if (r->cbs.add_cb != NULL)
            r->cbs.add_cb(r, ns, name, obj, r->arg);
        break;
    case REFL_UPDATED:
        if (r->cbs.update_cb != NULL)
            r->cbs.update_cb(r, ns, name, obj, r->arg);
        break;
    case REFL_SAME:
        break;
    }
    return r->epoch == epoch;
}

static void on_list(const struct kube_result *res, void *arg)
{
    struct kube_reflector *r = arg;
    json_t *items, *meta, *item;
    const char *cont, *rv;
    unsigned epoch = r->epoch;
    size_t i;

    r->req = NULL;
    if (res->error != 0 || res->status != 200) {
        refl_fail_result(r, REFL_LIST, "list", res);
        return;
    }
    items = json_object_get(res->body, "items");
    meta = json_object_get(res->body, "metadata");
    rv = json_string_value(json_object_get(meta, "resourceVersion"));
    if (!json_is_array(items) && !json_is_null(items) && items != NULL) {
        refl_fail_msg(r, REFL_LIST, "the response has no items list");
        return;
    }
    json_array_foreach(items, i, item)
    {
        json_t *m = json_object_get(item, "metadata");
        const char *name = json_string_value(json_object_get(m, "name"));
        const char *irv = json_string_value(json_object_get(m, "resourceVersion"));
        if (name == NULL || irv == NULL)
            continue;
        if (!refl_apply(r, item, json_string_value(json_object_get(m, "namespace")), name, irv))
            return;
    }
    cont = json_string_value(json_object_get(meta, "continue"));
    if (cont != NULL && cont[0] != '\0') {
        char *s = util_strdup(cont);
        free(r->cont);
        r->cont = s;
        refl_list_page(r);
        return;
    }
    if (rv == NULL || rv[0] == '\0') {
        refl_fail_msg(r, REFL_LIST, "the response has no resourceVersion");
        return;
    }
    refl_set_rv(r, rv);
    free(r->cont);
    r->cont = NULL;
    if (!refl_sweep(r))
        return;
    r->synced = true;
    r->lists++;
    kube_backoff_reset(&r->backoff);
    if (r->cbs.synced_cb != NULL) {
        r->cbs.synced_cb(r, r->arg);
        if (r->epoch != epoch)
            return;
    }
    refl_schedule(r, REFL_WATCH, 0);
}

static void refl_list_page(struct kube_reflector *r)
{
    struct kube_list_opts o = {
        .label_selector = r->label_selector,
        .field_selector = r->field_selector,
        .limit = r->page_size,
        .continue_token = r->cont,
        .metadata_only = r->metadata_only,
    };
    struct util_err err;
    if (kube_list(r->c, &r->res, &o, on_list, r, &r->req, &err) != 0)
        refl_fail(r, REFL_LIST, err.msg);
}

/* ---- watching ---- */

static bool refl_too_large(const char *message);

static void on_event(const struct kube_watch_event *ev, void *arg)
{
    struct kube_reflector *r = arg;
    char *what;
    r->watch_events++;
    r->events++;
    switch (ev->type) {
    case KUBE_EVENT_ADDED:
    case KUBE_EVENT_MODIFIED:
        refl_set_rv(r, ev->resource_version);
        refl_apply(r, ev->object, ev->namespace, ev->name, ev->resource_version);
        break;
    case KUBE_EVENT_DELETED:
        refl_set_rv(r, ev->resource_version);
        if (refl_keys_forget(&r->keys, ev->namespace ? ev->namespace : "", ev->name) &&
            r->cbs.delete_cb != NULL)
            r->cbs.delete_cb(r, ev->namespace ? ev->namespace : "", ev->name, ev->object, r->arg);
        break;
    case KUBE_EVENT_BOOKMARK:
        refl_set_rv(r, ev->resource_version);
        break;
    case KUBE_EVENT_ERROR:
        /* The stream is over for us: drop it and relist (410) or retry. */
        if (r->req != NULL) {
            kube_request_cancel(r->req);
            r->req = NULL;
        }
        if (ev->code == 410 || refl_too_large(ev->message)) {
            refl_schedule(r, REFL_LIST, 0);
            break;
        }
        what = util_asprintf("watch %s: error event %d %s: %s", r->resource, ev->code, ev->reason,
                             ev->message);
        refl_fail(r, REFL_WATCH, what);
        free(what);
        break;
    }
}

/*
 * A version newer than the server has (after an etcd restore, or behind a lagging
 * apiserver) is answered "Too large resource version" (504); waiting will not fix it,
 * relisting does (client-go does the same).
 */
static bool refl_too_large(const char *message)
{
    return strstr(message, "Too large resource version") != NULL;
}

static void on_watch_done(const struct kube_result *res, void *arg)
{
    struct kube_reflector *r = arg;
    uint64_t lasted = uv_now(kube__loop(r->c)) - r->watch_start_ms;
    r->req = NULL;
    if (res->error == 0 &&
        (res->status == 410 || (res->status == 504 && refl_too_large(res->message)))) {
        refl_schedule(r, REFL_LIST, 0);
    } else if (res->error == 0 && res->status == 200) {
        /* The server's timeout: go on from where we are, unless it keeps ending at once. */
        if (lasted < REFL_WATCH_SHORT_MS && r->watch_events == 0) {
            char *what = util_asprintf("watch %s: ended at once with no event", r->resource);
            refl_fail(r, REFL_WATCH, what);
            free(what);
        } else {
            kube_backoff_reset(&r->backoff);
            refl_schedule(r, REFL_WATCH, 0);
        }
    } else {
        refl_fail_result(r, REFL_WATCH, "watch", res);
    }
}

static void refl_watch(struct kube_reflector *r)
{
    unsigned span = r->watch_max_s - r->watch_min_s;
    struct kube_list_opts o = {
        .label_selector = r->label_selector,
        .field_selector = r->field_selector,
        .resource_version = r->rv,
        .metadata_only = r->metadata_only,
        .timeout_seconds = r->watch_min_s + (span ? kube__rand(r->c) % span : 0),
        .strip = r->strip,
        .keep = r->keep,
        .skip_cb = refl_skip,
    };
    struct util_err err;
    r->watch_start_ms = uv_now(kube__loop(r->c));
    r->watch_events = 0;
    r->watches++;
    if (kube_watch(r->c, &r->res, &o, on_event, on_watch_done, r, &r->req, &err) != 0)
        refl_fail(r, REFL_WATCH, err.msg);
}

/* ---- life cycle ---- */

static char *dup_or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? util_strdup(s) : NULL;
}

int kube_reflector_init(struct kube_client *c, struct kube_reflector **out,
                        const struct kube_reflector_opts *opts,
                        const struct kube_reflector_cbs *cbs, void *arg, struct util_err *err)
{
    struct kube_reflector *r;
    struct util_buf probe;
    int rc;

    *out = NULL;
    /* The same check the requests will make, done now so a typo fails at startup. */
    util_buf_init(&probe);
    rc = kube_path(&probe, &opts->res, NULL, NULL, err);
    util_buf_free(&probe);
    if (rc != 0)
        return rc;
    if (opts->watch_timeout_max_s != 0 && opts->watch_timeout_max_s < opts->watch_timeout_min_s)
        return util_err_set(err, UTIL_EINVAL, "the watch timeout range is empty");
    r = util_calloc(1, sizeof(*r));
    refl_keys_init(&r->keys);
    r->c = c;
    r->group = util_strdup(opts->res.group ? opts->res.group : "");
    r->version = util_strdup(opts->res.version);
    r->resource = util_strdup(opts->res.resource);
    r->namespace = dup_or_null(opts->res.namespace);
    r->label_selector = dup_or_null(opts->label_selector);
    r->field_selector = dup_or_null(opts->field_selector);
    r->res = (struct kube_resource){r->group, r->version, r->resource, r->namespace};
    r->metadata_only = opts->metadata_only;
    r->strip = opts->strip;
    r->keep = opts->keep;
    r->skip_cb = opts->skip_cb;
    r->page_size = opts->page_size ? opts->page_size : REFL_PAGE_DEFAULT;
    r->watch_min_s = opts->watch_timeout_min_s ? opts->watch_timeout_min_s : REFL_WATCH_MIN_S;
    r->watch_max_s = opts->watch_timeout_max_s ? opts->watch_timeout_max_s : REFL_WATCH_MAX_S;
    if (r->watch_max_s < r->watch_min_s)
        r->watch_max_s = r->watch_min_s;
    kube_backoff_init(&r->backoff, opts->backoff_base_ms, opts->backoff_cap_ms);
    if (cbs != NULL)
        r->cbs = *cbs;
    r->arg = arg;
    uv_timer_init(kube__loop(c), &r->timer);
    r->timer.data = r;
    *out = r;
    return 0;
}

void kube_reflector_start(struct kube_reflector *r)
{
    if (r->running || r->closing)
        return;
    r->running = true;
    /* After a stop, resume watching; a version that expired meanwhile brings a relist. */
    refl_schedule(r, r->synced && r->rv != NULL ? REFL_WATCH : REFL_LIST, 0);
}

int kube_reflector_set_resource_version(struct kube_reflector *r, const char *rv,
                                        struct util_err *err)
{
    if (r->running || r->closing)
        return util_err_set(err, UTIL_EINVAL, "the reflector must be stopped to move its version");
    if (!r->synced || rv == NULL || rv[0] == '\0')
        return util_err_set(err, UTIL_EINVAL, "the reflector has not listed yet, or rv is empty");
    refl_set_rv(r, rv);
    return 0;
}

void kube_reflector_stop(struct kube_reflector *r)
{
    r->epoch++;
    r->running = false;
    uv_timer_stop(&r->timer);
    if (r->req != NULL) {
        kube_request_cancel(r->req);
        r->req = NULL;
    }
    free(r->cont);
    r->cont = NULL;
}

static void on_reflector_closed(uv_handle_t *h)
{
    struct kube_reflector *r = h->data;
    refl_keys_close(&r->keys);
    free(r->group);
    free(r->version);
    free(r->resource);
    free(r->namespace);
    free(r->label_selector);
    free(r->field_selector);
    free(r->rv);
    free(r->cont);
    free(r);
}

void kube_reflector_close(struct kube_reflector *r)
{
    if (r->closing)
        return;
    kube_reflector_stop(r);
    r->closing = true;
    uv_close((uv_handle_t *)&r->timer, on_reflector_closed);
}

bool kube_reflector_synced(const struct kube_reflector *r)
{
    return r->synced;
}

const char *kube_reflector_resource_version(const struct kube_reflector *r)
{
    return r->rv != NULL ? r->rv : "";
}

size_t kube_reflector_size(const struct kube_reflector *r)
{
    return r->keys.map.len;
}

unsigned kube_reflector_lists(const struct kube_reflector *r)
{
    return r->lists;
}

unsigned kube_reflector_watches(const struct kube_reflector *r)
{
    return r->watches;
}

uint64_t kube_reflector_skipped(const struct kube_reflector *r)
{
    return r->skipped;
}

uint64_t kube_reflector_events(const struct kube_reflector *r)
{
    return r->events;
}

const char *kube_reflector_resource(const struct kube_reflector *r)
{
    return r->resource;
}
