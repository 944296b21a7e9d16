/*
 * End-to-end tests of the multipart uploads of internal/s3 against versitygw, directly
 * and through the fault proxy (part of the s3_e2e program; e2e.h says what is shared).
 */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

/* Counts what the pace callback granted (everything asked). */
static size_t pace_count(size_t want, void *arg)
{
    *(uint64_t *)arg += want;
    return want;
}

struct upload_seen {
    const char *key, *id; /* the upload looked for */
    int matches, total;
};

static int on_upload(const struct s3_upload *u, void *arg)
{
    struct upload_seen *s = arg;
    s->total++;
    if (strcmp(u->key, s->key) == 0 && strcmp(u->upload_id, s->id) == 0 &&
        u->initiated > 1700000000)
        s->matches++;
    return 0;
}

/* How many times the listing of prefix shows the upload (key, id); -1 when it fails. */
static int upload_listed(struct s3_sync *s, const char *prefix, const char *key, const char *id)
{
    struct upload_seen seen = {.key = key, .id = id};
    struct util_err err;
    if (s3_sync_list_uploads(s, prefix, on_upload, &seen, &err) != 0) {
        printf("     list uploads: %s\n", err.msg);
        return -1;
    }
    return seen.matches;
}

/* The bytes [from, from + len) of a pattern, in a new buffer. */
static char *pattern_slice(const struct pattern *p, uint64_t from, size_t len)
{
    char *b = util_malloc(len > 0 ? len : 1);
    for (size_t i = 0; i < len; i++)
        b[i] = (char)pattern_byte(p, from + i);
    return b;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

void test_multipart(void)
{
    uint64_t paced = 0;
    struct s3_client_opts co = {.pace_cb = pace_count, .pace_arg = &paced};
    struct s3_sync *s = open_direct(run_id, &co);
    struct s3_info info;
    struct util_err err;
    struct s3_part parts[2];
    char *id = NULL, *id2 = NULL, *id3 = NULL;
    int rc;

    /* Part 1 streamed (the minimum part size and a little), part 2 a small buffer. */
    struct pattern pat = {.len = S3_PART_MIN + 1000 + 777, .seed = 21};
    uint64_t len1 = S3_PART_MIN + 1000;
    size_t len2 = 777;
    char *tail = pattern_slice(&pat, len1, len2);

    rc = s3_sync_multipart_create(s, "mpu/obj", &id, &info, &err);
    CHECK(rc == 0 && id != NULL && id[0] != '\0' && info.requests == 1,
          "CreateMultipartUpload: an upload id (%s)", rc == 0 ? id : err.msg);
    if (rc != 0)
        goto out;
    CHECK(upload_listed(s, "mpu/", "mpu/obj", id) == 1,
          "ListMultipartUploads shows the open upload, key relative to the repository");

    /* Part 1 of a reader, SHA-256 unknown (UNSIGNED-PAYLOAD); part 2 a signed buffer. */
    struct pattern head = {.len = len1, .seed = pat.seed};
    struct s3_body b1 = {.read = read_pattern, .read_arg = &head, .len = len1};
    struct s3_body b2 = {.data = tail, .len = len2};
    rc = s3_sync_multipart_put(s, "mpu/obj", id, 1, &b1, &parts[0], &info, &err);
    CHECK(rc == 0 && parts[0].number == 1 && strlen(parts[0].etag) == 32 && info.requests == 1,
          "UploadPart 1, %llu bytes from a reader: ETag %s", (unsigned long long)len1,
          rc == 0 ? parts[0].etag : err.msg);
    rc = s3_sync_multipart_put(s, "mpu/obj", id, 2, &b2, &parts[1], &info, &err);
    CHECK(rc == 0 && parts[1].number == 2 && strlen(parts[1].etag) == 32,
          "UploadPart 2, %zu bytes from a buffer: ETag %s", len2,
          rc == 0 ? parts[1].etag : err.msg);
    CHECK(paced == len1 + len2, "the pace callback was asked for every part byte (%llu of %llu)",
          (unsigned long long)paced, (unsigned long long)(len1 + len2));

    rc = s3_sync_multipart_complete(s, "mpu/obj", id, parts, 2, &info, &err);
    CHECK(rc == 0 && ends_with(info.etag, "-2") && info.requests == 1,
          "CompleteMultipartUpload: the object's ETag %s", rc == 0 ? info.etag : err.msg);
    struct sink_check sc = {.p = &pat};
    rc = s3_sync_get_to(s, "mpu/obj", NULL, sink_pattern, &sc, &info, &err);
    CHECK(rc == 0 && sc.pos == pat.len && !sc.bad && info.size == pat.len,
          "GET of the object equals part 1 then part 2 (%llu bytes%s)", (unsigned long long)sc.pos,
          sc.bad ? ", WRONG BYTES" : "");
    CHECK(upload_listed(s, "mpu/", "mpu/obj", id) == 0, "the completed upload is no longer listed");

    /* Abort: gone from the listing; again, and an id never issued, are success. */
    rc = s3_sync_multipart_create(s, "mpu/aborted", &id2, &info, &err);
    CHECK(rc == 0 && upload_listed(s, "mpu/", "mpu/aborted", id2) == 1,
          "a second upload is created and listed");
    if (rc == 0) {
        struct s3_part small;
        struct s3_body b = {.data = "part of an aborted upload", .len = 25};
        s3_sync_multipart_put(s, "mpu/aborted", id2, 1, &b, &small, NULL, &err);
        rc = s3_sync_multipart_abort(s, "mpu/aborted", id2, &err);
        CHECK(rc == 0 && upload_listed(s, "mpu/", "mpu/aborted", id2) == 0,
              "AbortMultipartUpload removes it from the listing (%s)", rc == 0 ? "ok" : err.msg);
        CHECK(s3_sync_head(s, "mpu/aborted", &info, &err) == S3_ENOTFOUND,
              "no object is left at the aborted upload's key");
        rc = s3_sync_multipart_abort(s, "mpu/aborted", id2, &err);
        CHECK(rc == 0, "aborting it again succeeds (already gone: %s)", rc == 0 ? "ok" : err.msg);
    }
    rc = s3_sync_multipart_abort(s, "mpu/never", "bm8tc3VjaC11cGxvYWQ", &err);
    CHECK(rc == 0, "aborting an upload id never issued succeeds (%s)", rc == 0 ? "ok" : err.msg);

    /* A wrong ETag: the server's InvalidPart, said clearly, not retried. */
    rc = s3_sync_multipart_create(s, "mpu/wrong", &id3, &info, &err);
    if (rc == 0) {
        struct s3_part p1, bad;
        struct s3_body b = {.data = "the only part", .len = 13};
        s3_sync_multipart_put(s, "mpu/wrong", id3, 1, &b, &p1, NULL, &err);
        bad = p1;
        memcpy(bad.etag, "00000000000000000000000000000000", 33);
        rc = s3_sync_multipart_complete(s, "mpu/wrong", id3, &bad, 1, &info, &err);
        CHECK(rc == S3_EHTTP && strcmp(info.code, "InvalidPart") == 0 && info.requests == 1 &&
                  strstr(err.msg, "InvalidPart") != NULL,
              "Complete with a wrong ETag fails at once: %s", rc != 0 ? err.msg : "succeeded");
        CHECK(upload_listed(s, "mpu/", "mpu/wrong", id3) == 1,
              "the upload stays open after the failed Complete");
        /* Parts out of order: refused before any request. */
        struct s3_part two[2] = {p1, p1};
        rc = s3_sync_multipart_complete(s, "mpu/wrong", id3, two, 2, &info, &err);
        CHECK(rc == UTIL_EINVAL && info.requests == 0,
              "Complete with part 1 twice: refused before any request (%s)", err.msg);
        rc = s3_sync_multipart_complete(s, "mpu/wrong", id3, &p1, 1, &info, &err);
        CHECK(rc == 0, "the same upload then completes with the right ETag (%s)",
              rc == 0 ? info.etag : err.msg);
    } else {
        CHECK(false, "CreateMultipartUpload for the wrong-ETag case: %s", err.msg);
    }
    s3_sync_delete(s, "mpu/wrong", &err);
    s3_sync_delete(s, "mpu/obj", &err);
out:
    free(id);
    free(id2);
    free(id3);
    free(tail);
    s3_sync_close(s);
}

/* Many uploads at once on the wrapper's loop, 8 in flight: created, or aborted. */
struct bulk_mpu {
    struct s3_client *c;
    char **ids; /* created: owned; abort: the ids to abort */
    int n, started, done, failed;
    bool abort;
};

static void bulk_mpu_next(struct bulk_mpu *b);

struct bulk_one {
    struct bulk_mpu *b;
    int i;
};

static void on_bulk_mpu(const struct s3_result *res, void *arg)
{
    struct bulk_one *o = arg;
    struct bulk_mpu *b = o->b;
    if (res->error != 0)
        b->failed++;
    else if (!b->abort)
        b->ids[o->i] = util_strdup(res->upload_id);
    free(o);
    b->done++;
    bulk_mpu_next(b);
}

static void bulk_mpu_next(struct bulk_mpu *b)
{
    while (b->started < b->n && b->started - b->done < 8) {
        struct bulk_one *o = util_calloc(1, sizeof(*o));
        struct util_err err;
        int rc;
        char key[32];
        o->b = b;
        o->i = b->started++;
        snprintf(key, sizeof(key), "mpul/k%04d", o->i);
        if (b->abort)
            rc = s3_multipart_abort(b->c, key, b->ids[o->i], NULL, on_bulk_mpu, o, NULL, &err);
        else
            rc = s3_multipart_create(b->c, key, NULL, on_bulk_mpu, o, NULL, &err);
        if (rc != 0) {
            free(o);
            b->done++;
            b->failed++;
        }
    }
}

static int bulk_mpu_run(struct s3_sync *s, struct bulk_mpu *b)
{
    b->c = s3_sync_client(s);
    bulk_mpu_next(b);
    while (b->done < b->n)
        uv_run(s3_sync_loop(s), UV_RUN_ONCE);
    return b->failed;
}

struct upload_tally {
    int n;
    bool order_bad;
    char last[S3_MAX_KEY + 1];
    int stop_after; /* 0: never */
};

static int on_tally(const struct s3_upload *u, void *arg)
{
    struct upload_tally *t = arg;
    if (t->n > 0 && strcmp(u->key, t->last) < 0)
        t->order_bad = true;
    snprintf(t->last, sizeof(t->last), "%s", u->key);
    t->n++;
    return t->stop_after > 0 && t->n >= t->stop_after;
}

/*
 * Two pages of uploads (1,001 keys, one upload each), one page cut in half on the way;
 * then stopped. versitygw refuses the upload-id marker it gave for the second page, so
 * the second page is asked again with the key marker alone: one request more.
 */
void test_multipart_listing(void)
{
    struct s3_client_opts o = {.max_attempts = 4, .backoff_base_ms = 20, .backoff_cap_ms = 200};
    struct s3_sync *s = open_proxy(run_id, &o);
    struct util_err err;
    int n = S3_UPLOADS_PAGE + 1;
    struct bulk_mpu cb = {.ids = util_calloc((size_t)n, sizeof(char *)), .n = n};
    proxy("clear");
    CHECK(bulk_mpu_run(s, &cb) == 0, "1,001 uploads of 1,001 keys created, 8 at a time");
    struct upload_tally t = {0};
    proxy("clear");
    int rc = s3_sync_list_uploads(s, "mpul/", on_tally, &t, &err);
    CHECK(rc == 0 && t.n == n && !t.order_bad && proxy("count") == 3,
          "ListMultipartUploads of 1,001: %d uploads in 2 pages, %ld requests, ascending (%s)", t.n,
          proxy("count"), rc != 0 ? err.msg : "ok");
    struct upload_tally t2 = {0};
    proxy("clear");
    proxy("truncate_uploads/1");
    rc = s3_sync_list_uploads(s, "mpul/", on_tally, &t2, &err);
    CHECK(rc == 0 && t2.n == n && proxy("count") == 4,
          "the same with a page cut in half: fetched again, %d uploads, none twice (%ld requests)",
          t2.n, proxy("count"));
    struct upload_tally t3 = {0};
    proxy("clear");
    proxy("truncate_uploads/10");
    rc = s3_sync_list_uploads(s, "mpul/", on_tally, &t3, &err);
    CHECK(rc == S3_EPROTO && t3.n == 0 && proxy("count") == 4,
          "pages always cut: an error after 4 requests, no upload delivered (%s)", err.msg);
    proxy("clear");
    struct upload_tally t4 = {.stop_after = 3};
    rc = s3_sync_list_uploads(s, "mpul/", on_tally, &t4, &err);
    CHECK(rc == S3_ECANCELED && t4.n == 3, "a callback that stops the listing: canceled after 3");
    struct bulk_mpu ab = {.ids = cb.ids, .n = n, .abort = true};
    CHECK(bulk_mpu_run(s, &ab) == 0, "1,001 uploads aborted");
    struct upload_tally t5 = {0};
    rc = s3_sync_list_uploads(s, "mpul/", on_tally, &t5, &err);
    CHECK(rc == 0 && t5.n == 0, "none left (%d)", t5.n);
    for (int i = 0; i < n; i++)
        free(cb.ids[i]);
    free(cb.ids);
    s3_sync_close(s);
}

/* Arguments refused before any request. */
void test_multipart_arguments(void)
{
    struct s3_sync *s = open_direct(run_id, NULL);
    struct s3_info info;
    struct util_err err;
    struct s3_part part;
    char *id = NULL;
    struct s3_body b = {.data = "x", .len = 1};
    CHECK(s3_sync_multipart_create(s, "", &id, &info, &err) == UTIL_EINVAL && id == NULL &&
              info.requests == 0,
          "Create with an empty key: refused (%s)", err.msg);
    CHECK(s3_sync_multipart_put(s, "k", "id", 0, &b, &part, &info, &err) == UTIL_EINVAL &&
              s3_sync_multipart_put(s, "k", "id", S3_PARTS_MAX + 1, &b, &part, &info, &err) ==
                  UTIL_EINVAL,
          "UploadPart numbered 0 or 10,001: refused (%s)", err.msg);
    CHECK(s3_sync_multipart_put(s, "k", "", 1, &b, &part, &info, &err) == UTIL_EINVAL,
          "UploadPart without an upload id: refused (%s)", err.msg);
    struct s3_body none = {.len = 5};
    CHECK(s3_sync_multipart_put(s, "k", "id", 1, &none, &part, &info, &err) == UTIL_EINVAL,
          "UploadPart without a body: refused (%s)", err.msg);
    CHECK(s3_sync_multipart_complete(s, "k", "id", &part, 0, &info, &err) == UTIL_EINVAL,
          "Complete with no parts: refused (%s)", err.msg);
    CHECK(s3_sync_multipart_abort(s, "k", NULL, &err) == UTIL_EINVAL,
          "Abort without an upload id: refused (%s)", err.msg);
    char long_prefix[S3_MAX_KEY + 2];
    memset(long_prefix, 'p', sizeof(long_prefix) - 1);
    long_prefix[sizeof(long_prefix) - 1] = '\0';
    CHECK(s3_sync_list_uploads(s, long_prefix, NULL, NULL, &err) == UTIL_EINVAL,
          "ListMultipartUploads with a prefix longer than a key: refused (%s)", err.msg);
    s3_sync_close(s);
}

struct open_uploads {
    char *keys[16], *ids[16];
    int n;
};

static int on_collect(const struct s3_upload *u, void *arg)
{
    struct open_uploads *o = arg;
    if (o->n < 16) {
        o->keys[o->n] = util_strdup(u->key);
        o->ids[o->n++] = util_strdup(u->upload_id);
    }
    return 0;
}

/* Aborts every upload left under prefix (the orphans the tests make on purpose). */
static int abort_all(struct s3_sync *s, const char *prefix)
{
    struct open_uploads o = {0};
    struct util_err err;
    int failed = s3_sync_list_uploads(s, prefix, on_collect, &o, &err) != 0;
    for (int i = 0; i < o.n; i++) {
        failed += s3_sync_multipart_abort(s, o.keys[i], o.ids[i], &err) != 0;
        free(o.keys[i]);
        free(o.ids[i]);
    }
    return failed;
}

void test_multipart_faults(void)
{
    struct s3_client_opts o = {
        .max_attempts = 4, .backoff_base_ms = 20, .backoff_cap_ms = 200, .stall_timeout_ms = 2000};
    struct s3_sync *s = open_proxy(run_id, &o);
    struct s3_info info;
    struct util_err err;
    struct s3_part parts[2];
    char *id = NULL;
    int rc;
    struct pattern pat = {.len = S3_PART_MIN + 4096, .seed = 5};
    char *tail = pattern_slice(&pat, S3_PART_MIN, 4096);
    struct pattern head = {.len = S3_PART_MIN, .seed = pat.seed};

    proxy("clear");
    proxy("503/1");
    rc = s3_sync_multipart_create(s, "mpuf/obj", &id, &info, &err);
    CHECK(rc == 0 && info.requests == 2,
          "CreateMultipartUpload through a 503: retried (%u requests)", info.requests);
    if (rc != 0)
        goto out;
    proxy("clear");
    proxy("503/2");
    struct s3_body b1 = {.read = read_pattern, .read_arg = &head, .len = S3_PART_MIN};
    rc = s3_sync_multipart_put(s, "mpuf/obj", id, 1, &b1, &parts[0], &info, &err);
    CHECK(rc == 0 && info.requests == 3 && proxy("count") == 3,
          "UploadPart through 2 x 503: succeeds on the 3rd request (%u%s%s)", info.requests,
          rc != 0 ? ", " : "", rc != 0 ? err.msg : "");
    /* An UploadPart answered without an ETag cannot be completed: a clear error at once. */
    proxy("clear");
    proxy("drop_etag/1");
    struct s3_part nameless;
    rc = s3_sync_multipart_put(s, "mpuf/obj", id, 3, &(struct s3_body){.data = "x", .len = 1},
                               &nameless, &info, &err);
    CHECK(rc == S3_EPROTO && info.requests == 1 && strstr(err.msg, "without an ETag") != NULL,
          "UploadPart answered without an ETag: a protocol error, not retried (%s)", err.msg);
    proxy("clear");
    proxy("reset_before/1");
    struct s3_body b2 = {.data = tail, .len = 4096};
    rc = s3_sync_multipart_put(s, "mpuf/obj", id, 2, &b2, &parts[1], &info, &err);
    CHECK(rc == 0 && info.requests == 2, "UploadPart through a connection reset: retried once");

    /*
     * The Complete lands, its reply is lost. versitygw answers the retry 200 with the
     * object's ETag (a server that forgot the upload says NoSuchUpload: the HEAD check,
     * below); either way the result is the object's ETag, the one the parts make.
     */
    char expect[S3_ETAG_MAX];
    bool known = s3_multipart_etag(parts, 2, expect, sizeof(expect));
    proxy("clear");
    proxy("reset_after/1");
    rc = s3_sync_multipart_complete(s, "mpuf/obj", id, parts, 2, &info, &err);
    CHECK(rc == 0 && info.requests >= 2 && known && strcmp(info.etag, expect) == 0,
          "Complete whose reply was lost: retried, the object's ETag %s (expected %s, %u "
          "requests%s%s)",
          info.etag, expect, info.requests, rc != 0 ? ", " : "", rc != 0 ? err.msg : "");
    proxy("clear");
    struct sink_check sc = {.p = &pat};
    rc = s3_sync_get_to(s, "mpuf/obj", NULL, sink_pattern, &sc, &info, &err);
    CHECK(rc == 0 && sc.pos == pat.len && !sc.bad, "the object reads back whole");

    /* A 200 that carries <Error>: the Complete is retried; endlessly, a clear error. */
    free(id);
    id = NULL;
    if (s3_sync_multipart_create(s, "mpuf/e200", &id, &info, &err) == 0) {
        struct s3_part p;
        struct s3_body b = {.data = "e200", .len = 4};
        s3_sync_multipart_put(s, "mpuf/e200", id, 1, &b, &p, NULL, &err);
        proxy("clear");
        proxy("error200/1");
        rc = s3_sync_multipart_complete(s, "mpuf/e200", id, &p, 1, &info, &err);
        CHECK(rc == 0 && info.requests == 2,
              "Complete answered 200 with an InternalError document: retried (%u requests%s%s)",
              info.requests, rc != 0 ? ", " : "", rc != 0 ? err.msg : "");
        free(id);
        id = NULL;
        s3_sync_multipart_create(s, "mpuf/e200b", &id, &info, &err);
        s3_sync_multipart_put(s, "mpuf/e200b", id, 1, &b, &p, NULL, &err);
        proxy("clear");
        proxy("error200/10");
        rc = s3_sync_multipart_complete(s, "mpuf/e200b", id, &p, 1, &info, &err);
        CHECK(rc == S3_EHTTP && strcmp(info.code, "InternalError") == 0 && info.requests == 4 &&
                  strstr(err.msg, "InternalError") != NULL,
              "Complete always answered 200 with <Error>: an error after 4 requests (%s)", err.msg);
        proxy("clear");
        /* A Create whose reply is an <Error>: retried; the first upload is left open. */
        char *id2 = NULL;
        proxy("error200/1");
        rc = s3_sync_multipart_create(s, "mpuf/orphan", &id2, &info, &err);
        proxy("clear");
        struct upload_tally t = {0};
        s3_sync_list_uploads(s, "mpuf/orphan", on_tally, &t, &err);
        CHECK(rc == 0 && info.requests == 2 && t.n == 2,
              "Create answered 200 with <Error>: retried; %d uploads open under the key (the "
              "first one's id was never seen: lode gc aborts it)",
              t.n);
        s3_sync_multipart_abort(s, "mpuf/orphan", id2, &err);
        free(id2);
        id2 = NULL;
        /* A Complete whose 200 reply is cut short (unreadable): it may have landed; retried. */
        free(id);
        id = NULL;
        s3_sync_multipart_create(s, "mpuf/cut", &id, &info, &err);
        s3_sync_multipart_put(s, "mpuf/cut", id, 1, &b, &p, NULL, &err);
        proxy("clear");
        proxy("cut_body/1");
        rc = s3_sync_multipart_complete(s, "mpuf/cut", id, &p, 1, &info, &err);
        CHECK(rc == 0 && info.requests == 2 && info.etag[0] != '\0',
              "Complete whose 200 reply was cut short: retried, completed (%u requests%s%s)",
              info.requests, rc != 0 ? ", " : "", rc != 0 ? err.msg : "");
        proxy("clear");
        s3_sync_delete(s, "mpuf/cut", &err);
        /* A Create whose reply breaks off mid-body: the same. */
        proxy("reset_mid/1");
        rc = s3_sync_multipart_create(s, "mpuf/orphan2", &id2, &info, &err);
        proxy("clear");
        struct upload_tally t2 = {0};
        s3_sync_list_uploads(s, "mpuf/orphan2", on_tally, &t2, &err);
        CHECK(rc == 0 && info.requests == 2 && t2.n == 2,
              "Create whose reply broke off mid-body: retried, %d uploads open under the key",
              t2.n);
        /* An Abort through a 503: retried, and the upload is gone. */
        proxy("clear");
        proxy("503/1");
        rc = s3_sync_multipart_abort(s, "mpuf/orphan2", id2, &err);
        long count = proxy("count");
        proxy("clear");
        struct upload_tally t3 = {0};
        s3_sync_list_uploads(s, "mpuf/orphan2", on_tally, &t3, &err);
        CHECK(rc == 0 && count == 2 && t3.n == 1,
              "Abort through a 503: retried (%ld requests), that upload gone, the orphan left",
              count);
        free(id2);
        s3_sync_delete(s, "mpuf/e200", &err);
        s3_sync_delete(s, "mpuf/e200b", &err);
    }

    /*
     * The HEAD check: a 503 first (so the Complete may have landed), then NoSuchUpload
     * because the upload was aborted meanwhile. Whether the key holds our object decides.
     */
    free(id);
    id = NULL;
    rc = s3_sync_multipart_create(s, "mpuf/gone", &id, &info, &err);
    if (rc == 0) {
        struct s3_part p;
        struct s3_body b = {.data = "x", .len = 1};
        s3_sync_multipart_put(s, "mpuf/gone", id, 1, &b, &p, NULL, &err);
        s3_sync_multipart_abort(s, "mpuf/gone", id, &err);
        proxy("503/1");
        rc = s3_sync_multipart_complete(s, "mpuf/gone", id, &p, 1, &info, &err);
        CHECK(rc == S3_ENOTFOUND && info.requests == 3 && strstr(err.msg, "NoSuchUpload") != NULL,
              "Complete after a 503, its upload aborted, no object: not found (%s)", err.msg);
        /*
         * A server that forgot the upload once completed (versitygw remembers: the
         * proxy's nosuchupload stands in): the Complete lands, its reply is lost, the
         * retry meets NoSuchUpload, and HEAD finds the object these parts make.
         */
        char *id_ours = NULL;
        struct s3_part pm;
        struct s3_body mine = {.data = "ours", .len = 4};
        s3_sync_multipart_create(s, "mpuf/lost", &id_ours, NULL, &err);
        s3_sync_multipart_put(s, "mpuf/lost", id_ours, 1, &mine, &pm, NULL, &err);
        proxy("clear");
        proxy("reset_after/1");
        proxy("nosuchupload/1");
        rc = s3_sync_multipart_complete(s, "mpuf/lost", id_ours, &pm, 1, &info, &err);
        s3_multipart_etag(&pm, 1, expect, sizeof(expect));
        CHECK(rc == 0 && info.requests == 3 && strcmp(info.etag, expect) == 0 &&
                  proxy("count") == 3,
              "Complete landed, reply lost, then NoSuchUpload: HEAD finds the object these parts "
              "make, success (ETag %s, %u requests%s%s)",
              info.etag, info.requests, rc != 0 ? ", " : "", rc != 0 ? err.msg : "");
        /* Another upload's object at the key (other parts): not ours, not found. */
        char *id_late = NULL;
        struct s3_part pl;
        struct s3_body late = {.data = "late", .len = 4};
        s3_sync_multipart_create(s, "mpuf/lost", &id_late, NULL, &err);
        s3_sync_multipart_put(s, "mpuf/lost", id_late, 1, &late, &pl, NULL, &err);
        proxy("clear");
        proxy("503/1");
        proxy("nosuchupload/1");
        rc = s3_sync_multipart_complete(s, "mpuf/lost", id_late, &pl, 1, &info, &err);
        CHECK(rc == S3_ENOTFOUND && info.requests == 3 && strstr(err.msg, "NoSuchUpload") != NULL,
              "the same when the key holds another upload's object: not ours, not found (%s)",
              err.msg);
        proxy("clear");
        s3_sync_multipart_abort(s, "mpuf/lost", id_late, &err);
        free(id_ours);
        free(id_late);
        s3_sync_delete(s, "mpuf/lost", &err);
        s3_sync_delete(s, "mpuf/gone", &err);
    }
    proxy("clear");
    s3_sync_delete(s, "mpuf/obj", &err);
    struct upload_tally left = {0};
    CHECK(abort_all(s, "mpuf/") == 0 &&
              s3_sync_list_uploads(s, "mpuf/", on_tally, &left, &err) == 0 && left.n == 0,
          "the orphans aborted: no upload left under the test's prefix");
out:
    free(id);
    free(tail);
    s3_sync_close(s);
}
