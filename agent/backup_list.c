/*
 * backup_list: the snapshot's file list (meta/<source>/<id>.files) uploaded as it is
 * written (docs/repository.md, "What it costs"), so a backup does not hold the whole
 * list (about 50 bytes a file) until its end.
 *
 * The walk adds records to b->list; before each entry backup_list_ship looks at the
 * sealed frames the writer holds and, once they reach a part (S3_PART_MIN, S3's
 * smallest part but the last), takes them and uploads them as the next part of a
 * multipart upload, created when the first part is ready. One part uploads while
 * the next fills: a full part waits for the previous one. Parts go through the same
 * client as the packs, so the same token bucket paces them (backup_pace_cb). At the
 * end the rest is the last part and the upload is completed; a list that never
 * reached a part is one plain PUT, as before (one request, not three).
 *
 * The object is the bytes the writer would have handed over whole: readers (restore,
 * check, gc, the next backup's parent window) cannot tell. On any failure, at
 * maxRuntime or on a signal the upload is aborted (best effort: an error is printed,
 * and `lode gc` aborts uploads left older than its window, docs/gc.md) and no
 * manifest is written.
 *
 * Memory: the frames not yet taken (up to a part plus one frame) and the part
 * uploading, about 12 MiB at most whatever the number of files; the parts' ETags
 * (about 140 bytes each, one per 5 MiB of list).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup.h"

/* Seconds an abort may take: it is best effort, and a stopping backup should end. */
#define BACKUP_ABORT_MS 15000

struct backup_part {
    struct backup *b;
    uint8_t *data;
    size_t len;
    unsigned number;
    struct s3_op *op;
};

static char *backup_list_key(const struct backup *b)
{
    struct repo_key k = {.kind = REPO_KEY_FILES, .src = b->src};
    snprintf(k.id, sizeof(k.id), "%s", b->id);
    return repo_key_build(&k);
}

static void backup_part_done(const struct s3_result *res, void *arg)
{
    struct backup_part *p = arg;
    struct backup *b = p->b;
    b->part = NULL;
    if (res->error != 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "cannot upload part %u of the file list: %s", p->number,
                 res->message);
        backup_fail(b, res->error, msg);
    } else {
        struct s3_part *s = &b->parts[p->number - 1];
        s->number = p->number;
        snprintf(s->etag, sizeof(s->etag), "%s", res->etag);
        b->uploaded_bytes += p->len;
    }
    free(p->data);
    free(p);
}

static void backup_create_done(const struct s3_result *res, void *arg)
{
    struct backup *b = arg;
    b->creating = false;
    if (res->error != 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "cannot start the file list's upload: %s", res->message);
        backup_fail(b, res->error, msg);
        return;
    }
    b->upload_id = util_strdup(res->upload_id);
}

/* Runs the loop until the part uploading (or the create) is over; false: stop. */
static bool backup_list_wait(struct backup *b)
{
    uv_loop_t *loop = s3_sync_loop(b->st->s3);
    while (b->part != NULL || b->creating) {
        if (backup_should_stop(b))
            return false;
        uv_run(loop, UV_RUN_ONCE);
    }
    return !backup_should_stop(b);
}

/* Starts uploading data as the next part (owned from here on). */
static bool backup_part_start(struct backup *b, uint8_t *data, size_t len)
{
    struct backup_part *p;
    struct s3_body body = {.data = data, .len = len};
    struct util_err err = {0};
    int rc;

    if (b->upload_id == NULL) {
        b->list_key = backup_list_key(b);
        b->creating = true;
        rc = s3_multipart_create(s3_sync_client(b->st->s3), b->list_key, NULL, backup_create_done,
                                 b, &b->create_op, &err);
        if (rc != 0) {
            b->creating = false;
            free(data);
            backup_fail(b, rc, err.msg);
            return false;
        }
        if (!backup_list_wait(b)) {
            free(data);
            return false;
        }
    }
    if (b->nparts == S3_PARTS_MAX) {
        free(data);
        backup_fail(b, UTIL_EINVAL, "the file list needs more than 10,000 parts of 5 MiB");
        return false;
    }
    b->parts = util_grow(b->parts, &b->capparts, b->nparts + 1, sizeof(*b->parts));
    memset(&b->parts[b->nparts], 0, sizeof(*b->parts));
    p = util_calloc(1, sizeof(*p));
    p->b = b;
    p->data = data;
    p->len = len;
    p->number = (unsigned)++b->nparts;
    rc = s3_multipart_put(s3_sync_client(b->st->s3), b->list_key, b->upload_id, p->number, &body,
                          NULL, backup_part_done, p, &p->op, &err);
    if (rc != 0) {
        free(p->data);
        free(p);
        backup_fail(b, rc, err.msg);
        return false;
    }
    b->part = p;
    return true;
}

bool backup_list_ship(struct backup *b)
{
    uint8_t *data;
    size_t len;
    if (b->list.out.len < S3_PART_MIN)
        return true;
    /* At most one part uploading while the next fills. */
    if (!backup_list_wait(b))
        return false;
    repo_files_writer_take(&b->list, &data, &len);
    return backup_part_start(b, data, len);
}

int backup_list_finish(struct backup *b, struct util_err *err)
{
    struct s3_info info = {0};
    uint8_t *data;
    size_t len;
    int rc;

    repo_files_writer_finish(&b->list, &data, &len);
    if (b->upload_id == NULL && !b->creating && b->nparts == 0) {
        char *key = backup_list_key(b);
        rc = backup_put(b, key, data, len, false, err);
        free(key);
        free(data);
        return rc;
    }
    if (!backup_list_wait(b) || !backup_part_start(b, data, len) || !backup_list_wait(b))
        return util_err_set(err, b->fatal ? b->fatal : UTIL_EIO, "%s", b->fatal_msg);
    rc = s3_sync_multipart_complete(b->st->s3, b->list_key, b->upload_id, b->parts, b->nparts,
                                    &info, err);
    if (rc != 0) {
        struct util_err e = *err;
        return util_err_set(err, rc, "cannot complete the file list's upload: %.400s", e.msg);
    }
    free(b->upload_id);
    b->upload_id = NULL; /* done: nothing to abort */
    return 0;
}

static void backup_abort_done(const struct s3_result *res, void *arg)
{
    struct backup *b = arg;
    b->aborting = false;
    if (res->error != 0)
        fprintf(stderr,
                "lode backup: cannot abort the file list's unfinished upload %s (lode gc "
                "aborts it once it is older than its window): %s\n",
                b->upload_id, res->message);
}

void backup_list_abort(struct backup *b)
{
    struct s3_opts o = {.deadline_ms = BACKUP_ABORT_MS};
    struct util_err err = {0};
    uv_loop_t *loop = s3_sync_loop(b->st->s3);

    /* A create in flight is cancelled: if the server made the upload, lode gc aborts it. */
    if (b->creating) {
        s3_op_cancel(b->create_op);
        b->creating = false;
    }
    if (b->part != NULL) {
        /* curl may hold the part's bytes until the client closes: freed by release. */
        s3_op_cancel(b->part->op);
        b->cancelled = b->part;
        b->part = NULL;
    }
    if (b->upload_id == NULL)
        return;
    b->aborting = true;
    if (s3_multipart_abort(s3_sync_client(b->st->s3), b->list_key, b->upload_id, &o,
                           backup_abort_done, b, NULL, &err) != 0) {
        b->aborting = false;
        fprintf(stderr, "lode backup: cannot abort the file list's unfinished upload %s: %s\n",
                b->upload_id, err.msg);
    }
    while (b->aborting)
        uv_run(loop, UV_RUN_ONCE);
    free(b->upload_id);
    b->upload_id = NULL;
}

void backup_list_release(struct backup *b)
{
    if (b->cancelled != NULL) {
        free(b->cancelled->data);
        free(b->cancelled);
        b->cancelled = NULL;
    }
    free(b->upload_id);
    free(b->list_key);
    free(b->parts);
    b->upload_id = b->list_key = NULL;
    b->parts = NULL;
    b->nparts = b->capparts = 0;
}
