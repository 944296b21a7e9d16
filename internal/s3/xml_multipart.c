/*
 * The multipart XML: the replies of CreateMultipartUpload and CompleteMultipartUpload
 * (one small parser, which also takes the <Error> a 200 may carry),
 * ListMultipartUploadsResult (a page of uploads), and the CompleteMultipartUpload
 * request. The same bounds as xml.c: no DOCTYPE, bounded depth, field length and
 * entries a page.
 */
#include "s3/xml_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UPLOADS_MAX (S3_UPLOADS_PAGE + 1) /* a page asks for 1,000; one spare is tolerated */

/* Feeds data after any whitespace that comes before the document's first byte. */
static int feed_skipping_lead(struct xml_base *b, bool *started, const char *data, size_t len,
                              struct util_err *err)
{
    if (!*started) {
        while (len > 0 && (*data == ' ' || *data == '\t' || *data == '\n' || *data == '\r')) {
            data++;
            len--;
        }
        if (len == 0)
            return b->error != 0 ? util_err_set(err, b->error, "%s", b->msg) : 0;
        *started = true;
    }
    return s3__xml_feed(b, data, len, false, err);
}

/* Whether t (the element's text) holds no NUL, so strlen sees all of it. */
static bool text_whole(struct xml_base *b, const char *t)
{
    return strlen(t) == b->text.len;
}

/* ---- InitiateMultipartUploadResult, CompleteMultipartUploadResult, Error ---- */

struct s3_mpu_parser {
    struct xml_base b;
    enum s3_mpu_reply_kind kind;
    bool started, saw_root;
    struct s3_mpu_reply reply; /* strings owned (NULL until set) */
};

static const char *root_name(enum s3_mpu_reply_kind kind)
{
    return kind == S3_MPU_INITIATE ? "InitiateMultipartUploadResult"
                                   : "CompleteMultipartUploadResult";
}

static void mpu_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    struct s3_mpu_parser *p = ud;
    if (!s3__xml_enter(&p->b, name))
        return;
    if (p->b.depth == 1) {
        if (strcmp(name, "Error") == 0)
            p->reply.error = true;
        else if (strcmp(name, root_name(p->kind)) != 0)
            s3__xml_fail(&p->b, "the reply is <%.40s>, not the %s expected", name,
                         root_name(p->kind));
        p->saw_root = true;
    }
}

static void set_field(struct xml_base *b, const char **slot, const char *t, const char *what)
{
    if (!text_whole(b, t)) {
        s3__xml_fail(b, "the reply's %s holds a NUL", what);
        return;
    }
    free((char *)*slot);
    *slot = util_strdup(t);
}

static void mpu_end(void *ud, const XML_Char *name)
{
    struct s3_mpu_parser *p = ud;
    struct xml_base *b = &p->b;
    const char *t = s3__xml_text(b);
    if (b->error != 0)
        return;
    if (b->depth == 2) {
        if (p->reply.error) {
            if (strcmp(name, "Code") == 0)
                set_field(b, &p->reply.code, t, "Code");
            else if (strcmp(name, "Message") == 0)
                set_field(b, &p->reply.message, t, "Message");
        } else if (strcmp(name, "Key") == 0) {
            set_field(b, &p->reply.key, t, "Key");
        } else if (strcmp(name, "UploadId") == 0 && p->kind == S3_MPU_INITIATE) {
            set_field(b, &p->reply.upload_id, t, "UploadId");
        } else if (strcmp(name, "ETag") == 0 && p->kind == S3_MPU_COMPLETE) {
            char tag[S3_ETAG_MAX];
            if (!text_whole(b, t)) {
                s3__xml_fail(b, "the reply's ETag holds a NUL");
                return;
            }
            s3__etag_copy(tag, sizeof(tag), t);
            free((char *)p->reply.etag);
            p->reply.etag = util_strdup(tag);
        }
    }
    b->depth--;
    b->capture = false;
}

struct s3_mpu_parser *s3_mpu_parser_new(enum s3_mpu_reply_kind kind)
{
    struct s3_mpu_parser *p = util_calloc(1, sizeof(*p));
    p->kind = kind;
    s3__xml_init(&p->b, p, mpu_start, mpu_end);
    return p;
}

int s3_mpu_parser_feed(struct s3_mpu_parser *p, const char *data, size_t len, struct util_err *err)
{
    return feed_skipping_lead(&p->b, &p->started, data, len, err);
}

/* Printable only: a code goes into messages and metrics, a message onto a terminal. */
static void sanitize(const char *s, bool code)
{
    for (char *q = (char *)s; q != NULL && *q; q++) {
        if (code && (*q < ' ' || *q > '~'))
            *q = '?';
        else if (!code && (unsigned char)*q < ' ')
            *q = ' ';
    }
}

int s3_mpu_parser_finish(struct s3_mpu_parser *p, const struct s3_mpu_reply **reply,
                         struct util_err *err)
{
    const char *what =
        p->kind == S3_MPU_INITIATE ? "CreateMultipartUpload" : "CompleteMultipartUpload";
    int rc;
    if (!p->started)
        return util_err_set(err, S3_EPROTO, "the %s reply is empty", what);
    if ((rc = s3__xml_feed(&p->b, "", 0, true, err)) != 0)
        return rc;
    if (!p->saw_root)
        return util_err_set(err, S3_EPROTO, "the %s reply is empty", what);
    if (p->reply.error) {
        if (p->reply.code == NULL || p->reply.code[0] == '\0')
            return util_err_set(err, S3_EPROTO, "the %s reply is an <Error> without a Code", what);
    } else if (p->kind == S3_MPU_INITIATE &&
               (p->reply.upload_id == NULL || p->reply.upload_id[0] == '\0')) {
        return util_err_set(err, S3_EPROTO, "the %s reply has no UploadId", what);
    } else if (p->reply.upload_id != NULL && strlen(p->reply.upload_id) > S3_MAX_KEY) {
        return util_err_set(err, S3_EPROTO, "the %s reply's UploadId is longer than %d bytes", what,
                            S3_MAX_KEY);
    }
    sanitize(p->reply.code, true);
    sanitize(p->reply.message, false);
    if (p->reply.key == NULL)
        p->reply.key = util_strdup("");
    if (p->reply.upload_id == NULL)
        p->reply.upload_id = util_strdup("");
    if (p->reply.etag == NULL)
        p->reply.etag = util_strdup("");
    if (p->reply.code == NULL)
        p->reply.code = util_strdup("");
    if (p->reply.message == NULL)
        p->reply.message = util_strdup("");
    *reply = &p->reply;
    return 0;
}

void s3_mpu_parser_free(struct s3_mpu_parser *p)
{
    if (p == NULL)
        return;
    free((char *)p->reply.key);
    free((char *)p->reply.upload_id);
    free((char *)p->reply.etag);
    free((char *)p->reply.code);
    free((char *)p->reply.message);
    s3__xml_free(&p->b);
    free(p);
}

/* ---- ListMultipartUploadsResult ---- */

struct s3_uploads_parser {
    struct xml_base b;
    struct s3_uploads_page page;
    struct s3_upload cur; /* the <Upload> being read; strings owned until pushed */
    bool in_upload, started, saw_root;
};

static void upload_reset(struct s3_upload *u)
{
    free((char *)u->key);
    free((char *)u->upload_id);
    u->key = u->upload_id = NULL;
    u->initiated = -1;
}

static void uploads_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    struct s3_uploads_parser *p = ud;
    if (!s3__xml_enter(&p->b, name))
        return;
    if (p->b.depth == 1) {
        if (strcmp(name, "ListMultipartUploadsResult") != 0)
            s3__xml_fail(&p->b, "the reply is <%.40s>, not a ListMultipartUploadsResult", name);
        p->saw_root = true;
    } else if (p->b.depth == 2 && strcmp(name, "Upload") == 0) {
        if (p->page.n >= UPLOADS_MAX) {
            s3__xml_fail(&p->b, "the page holds more uploads than the %s asked for", "1,000");
            return;
        }
        upload_reset(&p->cur);
        p->in_upload = true;
    }
}

static void uploads_end(void *ud, const XML_Char *name)
{
    struct s3_uploads_parser *p = ud;
    struct xml_base *b = &p->b;
    const char *t = s3__xml_text(b);
    if (b->error != 0)
        return;
    if (b->depth == 3 && p->in_upload) {
        if (strcmp(name, "Key") == 0 || strcmp(name, "UploadId") == 0) {
            const char **slot = name[0] == 'K' ? &p->cur.key : &p->cur.upload_id;
            if (!text_whole(b, t) || b->text.len == 0 || b->text.len > S3_MAX_KEY) {
                s3__xml_fail(b, "an upload's %s is empty, too long or holds a NUL", name);
                return;
            }
            free((char *)*slot);
            *slot = util_strdup(t);
        } else if (strcmp(name, "Initiated") == 0) {
            uint32_t ns;
            if (s3__xml_time(t, &p->cur.initiated, &ns) != 0)
                s3__xml_fail(b, "an upload's Initiated is not an RFC 3339 time: \"%.40s\"", t);
        }
    } else if (b->depth == 2 && p->in_upload) {
        p->in_upload = false;
        if (p->cur.key == NULL || p->cur.upload_id == NULL) {
            s3__xml_fail(b, "an <Upload> of the listing has no %s",
                         p->cur.key == NULL ? "Key" : "UploadId");
            return;
        }
        p->page.uploads =
            util_grow(p->page.uploads, &p->page.cap, p->page.n + 1, sizeof(*p->page.uploads));
        p->page.uploads[p->page.n++] = p->cur;
        p->cur.key = p->cur.upload_id = NULL;
        p->cur.initiated = -1;
    } else if (b->depth == 2) {
        if (strcmp(name, "IsTruncated") == 0) {
            if (strcmp(t, "true") == 0)
                p->page.truncated = true;
            else if (strcmp(t, "false") == 0)
                p->page.truncated = false;
            else
                s3__xml_fail(b, "IsTruncated is \"%.20s\", not true or false", t);
        } else if (strcmp(name, "NextKeyMarker") == 0 || strcmp(name, "NextUploadIdMarker") == 0) {
            char **slot =
                name[4] == 'K' ? &p->page.next_key_marker : &p->page.next_upload_id_marker;
            if (!text_whole(b, t) || b->text.len > S3_MAX_KEY) {
                s3__xml_fail(b, "the listing's %s is too long or holds a NUL", name);
                return;
            }
            free(*slot);
            *slot = util_strdup(t);
        }
    }
    b->depth--;
    b->capture = false;
}

struct s3_uploads_parser *s3_uploads_parser_new(void)
{
    struct s3_uploads_parser *p = util_calloc(1, sizeof(*p));
    p->cur.initiated = -1;
    s3__xml_init(&p->b, p, uploads_start, uploads_end);
    return p;
}

int s3_uploads_parser_feed(struct s3_uploads_parser *p, const char *data, size_t len,
                           struct util_err *err)
{
    return feed_skipping_lead(&p->b, &p->started, data, len, err);
}

int s3_uploads_parser_finish(struct s3_uploads_parser *p, const struct s3_uploads_page **page,
                             struct util_err *err)
{
    int rc;
    if (!p->started)
        return util_err_set(err, S3_EPROTO, "the ListMultipartUploads reply is empty");
    if ((rc = s3__xml_feed(&p->b, "", 0, true, err)) != 0)
        return rc;
    if (!p->saw_root)
        return util_err_set(err, S3_EPROTO, "the ListMultipartUploads reply is empty");
    if (p->page.truncated &&
        (p->page.next_key_marker == NULL || p->page.next_key_marker[0] == '\0'))
        return util_err_set(err, S3_EPROTO,
                            "the upload listing says it is truncated but gives no NextKeyMarker");
    *page = &p->page;
    return 0;
}

void s3_uploads_parser_free(struct s3_uploads_parser *p)
{
    if (p == NULL)
        return;
    upload_reset(&p->cur);
    for (size_t i = 0; i < p->page.n; i++)
        upload_reset(&p->page.uploads[i]);
    free(p->page.uploads);
    free(p->page.next_key_marker);
    free(p->page.next_upload_id_marker);
    s3__xml_free(&p->b);
    free(p);
}

int s3_uploads_page_check(const struct s3_uploads_page *page, const char *prefix,
                          const char *after_key, const char *key_marker, const char *id_marker,
                          bool *again, struct util_err *err)
{
    size_t plen = strlen(prefix);
    const char *prev = after_key;
    *again = true;
    for (size_t i = 0; i < page->n; i++) {
        const char *k = page->uploads[i].key;
        if (strncmp(k, prefix, plen) != 0)
            return util_err_set(err, S3_EPROTO,
                                "the server listed an upload of \"%.200s\", outside the prefix", k);
        if (prev != NULL && strcmp(k, prev) < 0)
            return util_err_set(err, S3_EPROTO, "the uploads are out of order at \"%.200s\"", k);
        prev = k;
    }
    if (page->truncated && key_marker != NULL && page->next_key_marker != NULL &&
        strcmp(page->next_key_marker, key_marker) == 0 &&
        strcmp(page->next_upload_id_marker != NULL ? page->next_upload_id_marker : "",
               id_marker != NULL ? id_marker : "") == 0) {
        *again = false;
        return util_err_set(err, S3_EPROTO,
                            "the server returned the markers it was asked with: the listing "
                            "would not end");
    }
    return 0;
}

/* ---- the CompleteMultipartUpload request ---- */

int s3_parts_check(const struct s3_part *parts, size_t n, struct util_err *err)
{
    if (n == 0 || parts == NULL)
        return util_err_set(err, UTIL_EINVAL, "a multipart upload is completed with no parts");
    if (n > S3_PARTS_MAX)
        return util_err_set(err, UTIL_EINVAL,
                            "a multipart upload has %zu parts; S3 allows at most %d", n,
                            S3_PARTS_MAX);
    for (size_t i = 0; i < n; i++) {
        const struct s3_part *pt = &parts[i];
        if (pt->number < 1 || pt->number > S3_PARTS_MAX)
            return util_err_set(err, UTIL_EINVAL,
                                "part %zu has number %u; part numbers run from 1 to %d", i,
                                pt->number, S3_PARTS_MAX);
        if (i > 0 && pt->number <= parts[i - 1].number)
            return util_err_set(err, UTIL_EINVAL,
                                "part numbers must ascend: part %u comes after part %u", pt->number,
                                parts[i - 1].number);
        if (memchr(pt->etag, '\0', sizeof(pt->etag)) == NULL || pt->etag[0] == '\0')
            return util_err_set(err, UTIL_EINVAL, "part %u has %s ETag", pt->number,
                                pt->etag[0] == '\0' ? "an empty" : "an unterminated");
        if (!s3__xml_can_carry(pt->etag))
            return util_err_set(err, UTIL_EINVAL, "part %u's ETag holds a control character",
                                pt->number);
    }
    return 0;
}

int s3_complete_request_xml(struct util_buf *out, const struct s3_part *parts, size_t n,
                            struct util_err *err)
{
    int rc;
    if ((rc = s3_parts_check(parts, n, err)) != 0)
        return rc;
    util_buf_puts(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<CompleteMultipartUpload "
                       "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for (size_t i = 0; i < n; i++) {
        char num[16];
        snprintf(num, sizeof(num), "%u", parts[i].number);
        util_buf_puts(out, "<Part><PartNumber>");
        util_buf_puts(out, num);
        util_buf_puts(out, "</PartNumber><ETag>&quot;");
        s3__xml_escape(out, parts[i].etag);
        util_buf_puts(out, "&quot;</ETag></Part>");
    }
    util_buf_puts(out, "</CompleteMultipartUpload>");
    return 0;
}
