/*
 * The synchronous wrappers: a private libuv loop and client; each call starts one
 * operation and runs the loop until its callback has run. For the lode commands,
 * which do one thing after another; several operations at once go through
 * s3_sync_client() and s3_sync_loop().
 */
#include "s3/s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct s3_sync {
    uv_loop_t loop;
    struct s3_client *c;
};

/* What one synchronous call waits for. */
struct sync_wait {
    bool done;
    int error;
    struct s3_info *info;
    struct util_err *err;
    char **data;
    size_t *len;
    s3_list_cb each;
    s3_deleted_cb deleted;
    s3_write_cb sink;
    s3_upload_cb each_upload;
    char **upload_id;
    struct s3_part *part;
    void *arg;
};

int s3_sync_open(struct s3_sync **out, const struct s3_config *cfg,
                 const struct s3_client_opts *opts, struct util_err *err)
{
    struct s3_sync *s = util_calloc(1, sizeof(*s));
    struct s3_client_opts o = opts != NULL ? *opts : (struct s3_client_opts){0};
    int rc;
    *out = NULL;
    o.http = NULL;      /* a private loop needs its own transport */
    o.step_loop = true; /* the loop is run one step at a time, until a callback ran */
    if (uv_loop_init(&s->loop) != 0) {
        free(s);
        return util_err_set(err, UTIL_EIO, "cannot create an event loop");
    }
    if ((rc = s3_client_init(&s->loop, &s->c, cfg, &o, err)) != 0) {
        uv_loop_close(&s->loop);
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

static void on_closed(void *arg)
{
    *(bool *)arg = true;
}

void s3_sync_close(struct s3_sync *s)
{
    bool closed = false;
    if (s == NULL)
        return;
    s3_client_close(s->c, on_closed, &closed);
    while (!closed && uv_run(&s->loop, UV_RUN_ONCE) != 0)
        ;
    uv_run(&s->loop, UV_RUN_NOWAIT);
    if (uv_loop_close(&s->loop) != 0)
        fprintf(stderr, "lodestore: s3: the event loop still had handles at close\n");
    free(s);
}

struct s3_client *s3_sync_client(struct s3_sync *s)
{
    return s->c;
}

uv_loop_t *s3_sync_loop(struct s3_sync *s)
{
    return &s->loop;
}

static void on_done(const struct s3_result *res, void *arg)
{
    struct sync_wait *w = arg;
    w->done = true;
    w->error = res->error;
    if (w->info != NULL) {
        w->info->status = res->status;
        w->info->requests = res->requests;
        snprintf(w->info->etag, sizeof(w->info->etag), "%s", res->etag != NULL ? res->etag : "");
        w->info->size = res->size;
        w->info->mtime = res->mtime;
        snprintf(w->info->code, sizeof(w->info->code), "%s", res->code != NULL ? res->code : "");
    }
    if (res->error != 0)
        util_err_set(w->err, res->error, "%s", res->message);
    if (res->error == 0 && w->upload_id != NULL)
        *w->upload_id = util_strdup(res->upload_id);
    if (res->error == 0 && w->part != NULL)
        snprintf(w->part->etag, sizeof(w->part->etag), "%s", res->etag);
    if (res->error == 0 && w->data != NULL) {
        *w->data = util_malloc(res->body_len + 1);
        memcpy(*w->data, res->body, res->body_len);
        (*w->data)[res->body_len] = '\0';
        *w->len = res->body_len;
    }
}

static int sync_run(struct s3_sync *s, struct sync_wait *w, int rc)
{
    if (rc != 0)
        return rc;
    while (!w->done)
        uv_run(&s->loop, UV_RUN_ONCE);
    return w->error;
}

static void info_init(struct s3_info *info)
{
    if (info != NULL) {
        memset(info, 0, sizeof(*info));
        info->mtime = -1;
    }
}

int s3_sync_put(struct s3_sync *s, const char *key, const struct s3_body *body,
                const struct s3_opts *o, struct s3_info *info, struct util_err *err)
{
    struct sync_wait w = {.info = info, .err = err};
    info_init(info);
    return sync_run(s, &w, s3_put(s->c, key, body, o, on_done, &w, NULL, err));
}

int s3_sync_get(struct s3_sync *s, const char *key, const struct s3_opts *o, char **data,
                size_t *len, struct s3_info *info, struct util_err *err)
{
    struct sync_wait w = {.info = info, .err = err, .data = data, .len = len};
    info_init(info);
    *data = NULL;
    *len = 0;
    return sync_run(s, &w, s3_get(s->c, key, o, NULL, on_done, &w, NULL, err));
}

static int on_sink(const char *data, size_t len, void *arg)
{
    struct sync_wait *w = arg;
    return w->sink(data, len, w->arg);
}

int s3_sync_get_to(struct s3_sync *s, const char *key, const struct s3_opts *o, s3_write_cb sink,
                   void *sink_arg, struct s3_info *info, struct util_err *err)
{
    struct sync_wait w = {.info = info, .err = err, .sink = sink, .arg = sink_arg};
    info_init(info);
    /* The sink gets the op's arg; route it through w to the caller's. */
    return sync_run(s, &w, s3_get(s->c, key, o, on_sink, on_done, &w, NULL, err));
}

int s3_sync_head(struct s3_sync *s, const char *key, struct s3_info *info, struct util_err *err)
{
    struct sync_wait w = {.info = info, .err = err};
    info_init(info);
    return sync_run(s, &w, s3_head(s->c, key, NULL, on_done, &w, NULL, err));
}

int s3_sync_delete(struct s3_sync *s, const char *key, struct util_err *err)
{
    struct sync_wait w = {.err = err};
    return sync_run(s, &w, s3_delete(s->c, key, NULL, on_done, &w, NULL, err));
}

static int on_each(const struct s3_object *obj, void *arg)
{
    struct sync_wait *w = arg;
    return w->each != NULL ? w->each(obj, w->arg) : 0;
}

int s3_sync_list(struct s3_sync *s, const char *prefix, const struct s3_opts *o, s3_list_cb each,
                 void *arg, struct s3_info *info, struct util_err *err)
{
    struct sync_wait w = {.info = info, .err = err, .each = each, .arg = arg};
    info_init(info);
    return sync_run(s, &w, s3_list(s->c, prefix, o, on_each, on_done, &w, NULL, err));
}

static void on_deleted(const char *key, int error, const char *code, const char *message, void *arg)
{
    struct sync_wait *w = arg;
    if (w->deleted != NULL)
        w->deleted(key, error, code, message, w->arg);
}

int s3_sync_delete_objects(struct s3_sync *s, const char *const *keys, size_t n,
                           const struct s3_opts *o, s3_deleted_cb each, void *arg,
                           struct s3_info *info, struct util_err *err)
{
    struct sync_wait w = {.info = info, .err = err, .deleted = each, .arg = arg};
    info_init(info);
    return sync_run(s, &w, s3_delete_objects(s->c, keys, n, o, on_deleted, on_done, &w, NULL, err));
}

int s3_sync_create_bucket(struct s3_sync *s, struct util_err *err)
{
    struct sync_wait w = {.err = err};
    return sync_run(s, &w, s3_create_bucket(s->c, NULL, on_done, &w, NULL, err));
}

/* ---- multipart ---- */

int s3_sync_multipart_create(struct s3_sync *s, const char *key, char **upload_id,
                             struct s3_info *info, struct util_err *err)
{
    struct sync_wait w = {.info = info, .err = err, .upload_id = upload_id};
    info_init(info);
    *upload_id = NULL;
    return sync_run(s, &w, s3_multipart_create(s->c, key, NULL, on_done, &w, NULL, err));
}

int s3_sync_multipart_put(struct s3_sync *s, const char *key, const char *upload_id,
                          unsigned number, const struct s3_body *body, struct s3_part *part,
                          struct s3_info *info, struct util_err *err)
{
    struct sync_wait w = {.info = info, .err = err, .part = part};
    info_init(info);
    memset(part, 0, sizeof(*part));
    part->number = number;
    return sync_run(
        s, &w, s3_multipart_put(s->c, key, upload_id, number, body, NULL, on_done, &w, NULL, err));
}

int s3_sync_multipart_complete(struct s3_sync *s, const char *key, const char *upload_id,
                               const struct s3_part *parts, size_t n, struct s3_info *info,
                               struct util_err *err)
{
    struct sync_wait w = {.info = info, .err = err};
    info_init(info);
    return sync_run(
        s, &w, s3_multipart_complete(s->c, key, upload_id, parts, n, NULL, on_done, &w, NULL, err));
}

int s3_sync_multipart_abort(struct s3_sync *s, const char *key, const char *upload_id,
                            struct util_err *err)
{
    struct sync_wait w = {.err = err};
    return sync_run(s, &w, s3_multipart_abort(s->c, key, upload_id, NULL, on_done, &w, NULL, err));
}

static int on_upload(const struct s3_upload *u, void *arg)
{
    struct sync_wait *w = arg;
    return w->each_upload != NULL ? w->each_upload(u, w->arg) : 0;
}

int s3_sync_list_uploads(struct s3_sync *s, const char *prefix, s3_upload_cb each, void *arg,
                         struct util_err *err)
{
    struct sync_wait w = {.err = err, .each_upload = each, .arg = arg};
    return sync_run(s, &w, s3_list_uploads(s->c, prefix, NULL, on_upload, on_done, &w, NULL, err));
}
