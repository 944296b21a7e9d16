/*
 * kube_text: pure scans over the text of watch streams, part of kube's public API
 * (kube.h includes it): the stream cut into lines (one event each; lines.c), what an
 * event is, read without decoding it, and an event's text with the members nobody reads
 * left out before it is decoded. Each is one pass over the bytes and allocates nothing
 * but its output (internal/kube/strip.c) or a line that spans two chunks.
 */
#ifndef LODE_KUBE_TEXT_H
#define LODE_KUBE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

/* The default bound on one watch line (one event). etcd limits an object to 1.5 MiB. */
#define KUBE_MAX_LINE_DEFAULT (8u << 20)

/* An incremental line splitter. Only a line that spans chunks is copied. */
struct kube_lines {
    struct util_buf partial; /* the start of a line whose end has not arrived */
    size_t max;              /* the longest line allowed, without its newline */
};

/* Called with each complete line, without "\n" or a trailing "\r". Nonzero stops. */
typedef int (*kube_line_cb)(const char *line, size_t len, void *arg);

void kube_lines_init(struct kube_lines *l, size_t max);
/*
 * Feeds a chunk. Returns 0, what a line callback returned (nonzero stops the feed at
 * that line; the rest of the chunk is dropped), or KUBE_ETOOBIG when a line grows past
 * max (the splitter is then unusable until reset).
 */
int kube_lines_feed(struct kube_lines *l, const char *data, size_t len, kube_line_cb cb, void *arg,
                    struct util_err *err);
/* Bytes of an unfinished line held (at the end of a stream: a truncated event). */
size_t kube_lines_pending(const struct kube_lines *l);
void kube_lines_reset(struct kube_lines *l);
void kube_lines_free(struct kube_lines *l);

/*
 * What a watch event is, read from its text without decoding it: type and the object's
 * metadata.name, .namespace and .resourceVersion, as spans of the line (not
 * NUL-terminated; namespace NULL when absent). One pass over the bytes up to the end of
 * the object's metadata; the rest of the line is not looked at, so a line whose tail is
 * not JSON still peeks. -1 (and out zeroed) when one of type, name and resourceVersion is
 * missing, is not a string without escapes, or "type" comes after "object": such an event
 * is decoded as usual.
 */
struct kube_watch_peek {
    const char *type, *name, *namespace, *resource_version;
    size_t type_len, name_len, namespace_len, rv_len;
    bool done;        /* the object's metadata was read */
    const char *line; /* the whole event, as given */
    size_t len;
};
int kube_watch_peek(const char *line, size_t len, struct kube_watch_peek *out);

/*
 * Appends the JSON text in[0..len) to out without the members the paths name (dotted
 * member names from the root: "object.spec.template"), as text, building nothing: a watch
 * event is then decoded without what nobody reads. One pass over the bytes. A text that
 * is not a well-formed object where it is looked at is appended whole, for the decoder to
 * judge; a member name with an escape never matches.
 */
void kube_json_strip(const char *in, size_t len, const char *const *paths, struct util_buf *out);
/*
 * The converse: appends in[0..len) with only the members the paths name (whole) and the
 * objects that lead to them, each holding only what leads on; a member a path goes
 * through that is not an object is left out. The same single pass, and the same
 * fallback: a text not well formed where it is looked at is appended whole.
 */
void kube_json_keep(const char *in, size_t len, const char *const *paths, struct util_buf *out);

#endif
