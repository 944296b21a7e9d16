/*
 * libFuzzer target for DeleteObjects and Error replies: every entry the DeleteResult
 * parser reports names a key, and an error entry always has a code; anything else is
 * refused as a protocol error. The same bytes go through the Error parser, whose
 * outputs must stay NUL-terminated within their buffers and printable.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_entry(const struct s3_delete_entry *e, void *arg)
{
    size_t *n = arg;
    if (e->key == NULL || e->key[0] == '\0')
        abort();
    if (!e->deleted && (e->code == NULL || e->code[0] == '\0'))
        abort();
    (*n)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct util_err err;
    size_t n = 0;
    char code[32], msg[64];
    int rc = s3_delete_result_parse((const char *)data, size, on_entry, &n, &err);
    if (rc != 0 && rc != S3_EPROTO)
        abort();
    s3_error_parse((const char *)data, size, code, sizeof(code), msg, sizeof(msg));
    if (strlen(code) >= sizeof(code) || strlen(msg) >= sizeof(msg))
        abort();
    for (const char *c = code; *c; c++)
        if (*c < ' ' || *c > '~')
            abort();
    return 0;
}
