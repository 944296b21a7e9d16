/*
 * lode gc's last step (docs/gc.md, "Unfinished uploads"): the multipart uploads under
 * meta/ that no backup will complete. A backup uploads its file list in parts once it
 * outgrows one; a backup killed (or whose abort failed) leaves its upload open, and
 * the storage keeps its parts, billed, until it is aborted. internal/gc decides
 * (gc_may_abort_upload: initiated strictly before G - W, the window of every other
 * deletion); this file lists, reports and aborts.
 *
 * Costs: one ListMultipartUploads a 1,000 uploads, the uploads to abort (key and id,
 * about 150 bytes each), one AbortMultipartUpload each, one at a time (there are
 * few: one per backup that did not end).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_run.h"

struct gc_upload {
    char *key, *id;
    int64_t initiated;
};

struct gc_uploads {
    struct gc_ctx *g;
    struct gc_upload *v;
    size_t n, cap;
};

static int gc_upload_cb(const struct s3_upload *u, void *arg)
{
    struct gc_uploads *us = arg;
    struct gc_ctx *g = us->g;
    struct repo_key k;
    struct util_err err = {0};

    /* Only a snapshot's file list is uploaded in parts: anything else is not ours. */
    if (repo_key_parse(u->key, &k, &err) != 0 || k.kind != REPO_KEY_META)
        return 0;
    g->t.uploads_total++;
    if (gc_may_abort_upload(u->initiated, g->cutoff) != GC_DELETE) {
        g->t.uploads_kept++;
        return 0;
    }
    us->v = util_grow(us->v, &us->cap, us->n + 1, sizeof(*us->v));
    us->v[us->n].key = util_strdup(u->key);
    us->v[us->n].id = util_strdup(u->upload_id);
    us->v[us->n++].initiated = u->initiated;
    return 0;
}

void gcrun_abort_uploads(struct gc_ctx *g)
{
    struct gc_uploads us = {.g = g};
    struct util_err err = {0};
    char *prefix = repo_key_prefix(REPO_KEY_META, NULL, NULL, NULL);
    int rc = s3_sync_list_uploads(g->st.s3, prefix, gc_upload_cb, &us, &err);

    free(prefix);
    if (rc != 0) {
        /* Listed in part: nothing is aborted, as a source that cannot be listed. */
        fprintf(stderr, "lode gc: cannot list the unfinished uploads: %s; none is aborted\n",
                err.msg);
        g->t.uploads_unlisted = true;
        goto out;
    }
    for (size_t i = 0; i < us.n; i++) {
        char when[UTIL_TIME_BUF];
        util_format_utc(us.v[i].initiated, when, sizeof(when));
        if (g->dry_run) {
            if (g->text)
                printf("would abort the unfinished upload of %s (begun %s)\n", us.v[i].key, when);
            g->t.uploads_aborted++;
            continue;
        }
        if (s3_sync_multipart_abort(g->st.s3, us.v[i].key, us.v[i].id, &err) != 0) {
            fprintf(stderr, "lode gc: cannot abort the unfinished upload of %s (begun %s): %s\n",
                    us.v[i].key, when, err.msg);
            g->t.failed++;
            continue;
        }
        if (g->text)
            printf("aborted the unfinished upload of %s (begun %s)\n", us.v[i].key, when);
        g->t.uploads_aborted++;
    }
out:
    for (size_t i = 0; i < us.n; i++) {
        free(us.v[i].key);
        free(us.v[i].id);
    }
    free(us.v);
}
