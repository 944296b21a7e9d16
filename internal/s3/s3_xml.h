/*
 * s3_xml: the XML of S3's replies and requests, for internal/s3's operations (s3.h) and
 * the fuzz targets, whose entry points these are. Pure: no I/O.
 *
 * The replies (ListBucketResult, DeleteResult, <Error>, the multipart uploads'
 * Initiate/Complete results and ListMultipartUploadsResult) are read through expat,
 * streamed, so a page is parsed as its bytes arrive; a DOCTYPE is refused, and the
 * element depth (8) and one element's text (4 KiB) are bounded (xml_int.h). Costs: a
 * parser holds one page (about 200 bytes a key) and the current element's text. A page
 * is checked whole (a truncated page names where it goes on) before any of it is
 * delivered. The request bodies (DeleteObjects, CompleteMultipartUpload) are built with
 * every key and ETag escaped, and a key XML 1.0 cannot carry is refused rather than sent
 * mangled.
 */
#ifndef LODE_S3_XML_H
#define LODE_S3_XML_H

#include "s3/s3.h"

/* ---- listings, DeleteObjects and errors ---- */

struct s3_list_page {
    struct s3_object *objects; /* owned, n of them, keys ascending as received */
    size_t n, cap;
    bool truncated;
    char *next_token;   /* NextContinuationToken, or NULL */
    unsigned key_count; /* KeyCount, when sent */
    bool has_key_count;
};

struct s3_list_parser; /* opaque: an expat parser and one page */

struct s3_list_parser *s3_list_parser_new(void);
/* Feeds bytes of a ListBucketResult; returns 0 or S3_EPROTO with err set. */
int s3_list_parser_feed(struct s3_list_parser *p, const char *data, size_t len,
                        struct util_err *err);
/* Ends the document and checks it; page is then valid until the parser is freed. */
int s3_list_parser_finish(struct s3_list_parser *p, const struct s3_list_page **page,
                          struct util_err *err);
void s3_list_parser_free(struct s3_list_parser *p);

/* One key's result in a DeleteResult. */
struct s3_delete_entry {
    const char *key;
    bool deleted;
    const char *code, *message; /* for an error, else "" */
};
typedef int (*s3_delete_entry_cb)(const struct s3_delete_entry *e, void *arg);

/*
 * Parses a whole DeleteResult, calling cb once per <Deleted> or <Error> (a non-zero
 * return stops with that code). Returns 0 or S3_EPROTO.
 */
int s3_delete_result_parse(const char *data, size_t len, s3_delete_entry_cb cb, void *arg,
                           struct util_err *err);

/* Parses an <Error> reply's Code and Message into bounded buffers ("" when absent). */
int s3_error_parse(const char *data, size_t len, char *code, size_t code_size, char *message,
                   size_t message_size);

/* Builds a DeleteObjects request body for keys (XML-escaped); UTIL_EINVAL for a key XML cannot
 * carry. */
int s3_delete_request_xml(struct util_buf *out, const char *const *keys, size_t n, bool quiet,
                          struct util_err *err);

/* ---- multipart uploads ---- */

/*
 * The multipart XML (pure, incremental; the fuzz targets' entry points). One parser
 * reads the reply of CreateMultipartUpload (InitiateMultipartUploadResult) or of
 * CompleteMultipartUpload (CompleteMultipartUploadResult); either may instead be an
 * <Error> document sent with status 200, which sets error, code and message. Whitespace
 * before the document (S3 sends some to keep a long Complete's connection open) is
 * skipped.
 */
enum s3_mpu_reply_kind { S3_MPU_INITIATE, S3_MPU_COMPLETE };
struct s3_mpu_reply {
    const char *key;            /* Key as the server sent it, or "" */
    const char *upload_id;      /* Initiate: UploadId, never "" unless error */
    const char *etag;           /* Complete: the object's ETag without quotes, or "" */
    bool error;                 /* the document is an <Error> */
    const char *code, *message; /* of the <Error>, else "" */
};
struct s3_mpu_parser; /* opaque */
struct s3_mpu_parser *s3_mpu_parser_new(enum s3_mpu_reply_kind kind);
int s3_mpu_parser_feed(struct s3_mpu_parser *p, const char *data, size_t len, struct util_err *err);
/* Ends the document and checks it; reply is valid until the parser is freed. */
int s3_mpu_parser_finish(struct s3_mpu_parser *p, const struct s3_mpu_reply **reply,
                         struct util_err *err);
void s3_mpu_parser_free(struct s3_mpu_parser *p);

/* One page of ListMultipartUploadsResult: uploads in the order received. */
struct s3_uploads_page {
    struct s3_upload *uploads; /* owned, n of them (strings owned by the parser) */
    size_t n, cap;
    bool truncated;
    char *next_key_marker;       /* NextKeyMarker, or NULL */
    char *next_upload_id_marker; /* NextUploadIdMarker, or NULL */
};
struct s3_uploads_parser; /* opaque */
struct s3_uploads_parser *s3_uploads_parser_new(void);
int s3_uploads_parser_feed(struct s3_uploads_parser *p, const char *data, size_t len,
                           struct util_err *err);
/* Checks the page (a truncated page must name its next key marker). */
int s3_uploads_parser_finish(struct s3_uploads_parser *p, const struct s3_uploads_page **page,
                             struct util_err *err);
void s3_uploads_parser_free(struct s3_uploads_parser *p);
/*
 * Checks a page against the listing it continues before any of it is delivered (pure):
 * every key under prefix (full, as the server sends it), keys never descending from
 * after_key (the last key delivered, or NULL) on, and a truncated page's markers not
 * the ones it was asked with (key_marker and id_marker; NULL on the first page).
 * 0, or S3_EPROTO with *again saying whether fetching the page again may help (a page
 * that repeats its markers would repeat forever).
 */
int s3_uploads_page_check(const struct s3_uploads_page *page, const char *prefix,
                          const char *after_key, const char *key_marker, const char *id_marker,
                          bool *again, struct util_err *err);
/* Builds a CompleteMultipartUpload request body (ETags quoted and XML-escaped) after
 * s3_parts_check(). */
int s3_complete_request_xml(struct util_buf *out, const struct s3_part *parts, size_t n,
                            struct util_err *err);
#endif
