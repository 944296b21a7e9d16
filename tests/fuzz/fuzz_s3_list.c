/*
 * libFuzzer target for ListObjectsV2 replies: the input after one byte is a reply fed
 * to the streaming parser in chunks whose size the first byte picks. A page the parser
 * accepts must keep the promises the client relies on: at most 1,001 entries, each
 * with a non-empty key of at most 1,024 bytes and no NUL, a LastModified for every
 * key, a continuation token whenever it says truncated, and KeyCount (when sent) equal
 * to the entries held.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct s3_list_parser *p;
    const struct s3_list_page *pg;
    struct util_err err;
    size_t chunk;
    int rc = 0;
    if (size < 1)
        return 0;
    chunk = (size_t)data[0] + 1;
    data++;
    size--;
    p = s3_list_parser_new();
    for (size_t off = 0; off < size && rc == 0; off += chunk)
        rc = s3_list_parser_feed(p, (const char *)data + off,
                                 size - off < chunk ? size - off : chunk, &err);
    if (rc == 0 && s3_list_parser_finish(p, &pg, &err) == 0) {
        if (pg->n > S3_LIST_PAGE + 1)
            abort();
        if (pg->truncated && (pg->next_token == NULL || pg->next_token[0] == '\0'))
            abort();
        if (pg->has_key_count && pg->key_count != pg->n)
            abort();
        for (size_t i = 0; i < pg->n; i++) {
            size_t n = strlen(pg->objects[i].key);
            if (n == 0 || n > S3_MAX_KEY)
                abort();
            if (!pg->objects[i].is_prefix && pg->objects[i].mtime < 0)
                abort();
            if (pg->objects[i].mtime_ns >= 1000000000u)
                abort();
        }
    } else if (err.code != S3_EPROTO) {
        abort(); /* every refusal is a protocol error with a message */
    }
    s3_list_parser_free(p);
    return 0;
}
