/*
 * kube_text: pure scans over the JSON text of watch events, part of kube's public API
 * (kube.h includes it): what an event is, read without decoding it, and an event's text
 * with the members nobody reads left out before it is decoded. Each is one pass over the
 * bytes and allocates nothing but its output (internal/kube/strip.c).
 */
#ifndef LODE_KUBE_TEXT_H
#define LODE_KUBE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

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
