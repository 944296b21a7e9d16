/*
 * libFuzzer target for the multipart replies: the first byte picks the parser (its low
 * two bits: InitiateMultipartUploadResult, CompleteMultipartUploadResult,
 * ListMultipartUploadsResult) and the chunk size (the rest); the remaining input is the
 * reply, fed in chunks. A reply a parser accepts must keep the promises the client
 * relies on: an Initiate names a non-empty UploadId of at most 1,024 bytes unless it is
 * an <Error> with a Code; a page of uploads holds at most 1,001, each with a non-empty
 * key and upload id without NUL, and names its next key marker whenever it says
 * truncated. Every refusal is a protocol error with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reply(enum s3_mpu_reply_kind kind, const char *data, size_t size, size_t chunk)
{
    struct s3_mpu_parser *p = s3_mpu_parser_new(kind);
    const struct s3_mpu_reply *r;
    struct util_err err;
    int rc = 0;
    for (size_t off = 0; off < size && rc == 0; off += chunk)
        rc = s3_mpu_parser_feed(p, data + off, size - off < chunk ? size - off : chunk, &err);
    if (rc == 0)
        rc = s3_mpu_parser_finish(p, &r, &err);
    if (rc == 0) {
        if (r->key == NULL || r->upload_id == NULL || r->etag == NULL || r->code == NULL ||
            r->message == NULL)
            abort();
        if (r->error && r->code[0] == '\0')
            abort();
        if (!r->error && kind == S3_MPU_INITIATE &&
            (r->upload_id[0] == '\0' || strlen(r->upload_id) > S3_MAX_KEY))
            abort();
        if (strlen(r->etag) >= S3_ETAG_MAX)
            abort();
        for (const char *c = r->code; *c; c++)
            if (*c < ' ' || *c > '~')
                abort();
    } else if (err.code != S3_EPROTO) {
        abort();
    }
    s3_mpu_parser_free(p);
}

static void check_page(const char *data, size_t size, size_t chunk)
{
    struct s3_uploads_parser *p = s3_uploads_parser_new();
    const struct s3_uploads_page *pg;
    struct util_err err;
    int rc = 0;
    for (size_t off = 0; off < size && rc == 0; off += chunk)
        rc = s3_uploads_parser_feed(p, data + off, size - off < chunk ? size - off : chunk, &err);
    if (rc == 0)
        rc = s3_uploads_parser_finish(p, &pg, &err);
    if (rc == 0) {
        if (pg->n > S3_UPLOADS_PAGE + 1)
            abort();
        if (pg->truncated && (pg->next_key_marker == NULL || pg->next_key_marker[0] == '\0'))
            abort();
        for (size_t i = 0; i < pg->n; i++) {
            size_t k = strlen(pg->uploads[i].key), u = strlen(pg->uploads[i].upload_id);
            if (k == 0 || k > S3_MAX_KEY || u == 0 || u > S3_MAX_KEY)
                abort();
        }
    } else if (err.code != S3_EPROTO) {
        abort();
    }
    s3_uploads_parser_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned which;
    size_t chunk;
    if (size < 1)
        return 0;
    which = data[0] & 3;
    chunk = (size_t)(data[0] >> 2) * 4 + 1;
    data++;
    size--;
    if (which == 0)
        check_reply(S3_MPU_INITIATE, (const char *)data, size, chunk);
    else if (which == 1)
        check_reply(S3_MPU_COMPLETE, (const char *)data, size, chunk);
    else
        check_page((const char *)data, size, chunk);
    return 0;
}
