/*
 * What the XML parsers of internal/s3 share (xml.c, xml_multipart.c): an expat parser
 * that refuses any DOCTYPE, tracks the element depth (bounded) and collects the current
 * element's text (bounded). Not part of the API.
 */
#ifndef LODE_S3_XML_INT_H
#define LODE_S3_XML_INT_H

#include "s3/s3_xml.h"

#include <expat.h>

#define XML_MAX_DEPTH 8
#define XML_MAX_TEXT  4096 /* one element's text: a key is at most 1024 bytes */

/* What the handlers share: where we are and the current element's text. */
struct xml_base {
    XML_Parser parser;
    unsigned depth;
    char names[XML_MAX_DEPTH][32]; /* element names by depth (truncated, for matching) */
    struct util_buf text;
    bool capture; /* collecting text for the current element */
    int error;
    char msg[256];
};

/* Stops the parser with S3_EPROTO and the message (the first failure wins). */
void s3__xml_fail(struct xml_base *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Enters an element; returns false when the depth bound is hit. */
bool s3__xml_enter(struct xml_base *b, const char *name);
/* The current element's text, NUL-terminated ("" when none). */
const char *s3__xml_text(struct xml_base *b);
void s3__xml_init(struct xml_base *b, void *ud, XML_StartElementHandler start,
                  XML_EndElementHandler end);
void s3__xml_free(struct xml_base *b);
/* Feeds bytes; final marks the end of the document. 0 or S3_EPROTO with err set. */
int s3__xml_feed(struct xml_base *b, const char *data, size_t len, bool final,
                 struct util_err *err);
/* Strips the quotes of an ETag into a bounded buffer. */
void s3__etag_copy(char *out, size_t size, const char *s);
/* "2026-12-02T17:01:27Z" or with a fraction: seconds and nanoseconds; 0 or -1. */
int s3__xml_time(const char *s, int64_t *sec, uint32_t *nsec);
/* Whether s is text XML 1.0 can carry (no control characters but tab, LF, CR). */
bool s3__xml_can_carry(const char *s);
/* Appends s with &, <, >, quotes, CR, LF and tab escaped. */
void s3__xml_escape(struct util_buf *out, const char *s);

#endif
