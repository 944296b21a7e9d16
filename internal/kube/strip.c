/*
 * Members left out of a JSON text before it is decoded (kube_text.h, kube_json_strip), or all
 * members but those named (kube_json_keep): a watch event of a Job is mostly its pod
 * template and managedFields, which the controller never reads, and decoding costs about
 * 70 MB/s where skipping costs a pass of the bytes.
 */
#include "kube/kube.h"

#include <string.h>

/* The end of the string that starts at p (on its '"'), or NULL when it does not end. */
static const char *strip_string_end(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

static const char *strip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* The end of the value that starts at p, or NULL when it is cut short. */
static const char *strip_value_end(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return strip_string_end(p, end);
    if (*p == '{' || *p == '[') {
        size_t depth = 0;
        while (p < end) {
            if (*p == '"') {
                p = strip_string_end(p, end);
                if (p == NULL)
                    return NULL;
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        return NULL;
    }
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
           *p != '\n' && *p != '\r')
        p++;
    return p;
}

/* Does the path (dotted names) go on past the member named key, which is its segment at seg? */
static int strip_match(const char *path, size_t seg, const char *key, size_t klen)
{
    const char *s = path;
    for (size_t i = 0; i < seg; i++) {
        s = strchr(s, '.');
        if (s == NULL)
            return -1;
        s++;
    }
    const char *dot = strchr(s, '.');
    size_t n = dot != NULL ? (size_t)(dot - s) : strlen(s);
    if (n != klen || memcmp(s, key, n) != 0)
        return -1;
    return dot == NULL ? 1 : 0; /* 1: the member to leave out; 0: go into it */
}

/*
 * Copies the object at p to out without the members the paths name at depth seg, or
 * (keep) with only those members and what leads to them. Returns the end of the object,
 * or NULL when the text is not as expected there.
 */
static const char *strip_object(const char *p, const char *end, const char *const *paths,
                                size_t seg, bool keep, struct util_buf *out)
{
    bool first = true;
    util_buf_append(out, "{", 1);
    p = strip_ws(p + 1, end);
    if (p < end && *p == '}') {
        util_buf_append(out, "}", 1);
        return p + 1;
    }
    while (p < end) {
        if (*p != '"')
            return NULL;
        const char *kend = strip_string_end(p, end);
        if (kend == NULL)
            return NULL;
        const char *key = p + 1;
        size_t klen = (size_t)(kend - 1 - key);
        const char *v = strip_ws(kend, end);
        if (v >= end || *v != ':')
            return NULL;
        v = strip_ws(v + 1, end);
        /* Escaped names never match: the paths are plain names. */
        int what = -1;
        for (size_t i = 0; paths[i] != NULL && what != 1; i++) {
            int m = memchr(key, '\\', klen) == NULL ? strip_match(paths[i], seg, key, klen) : -1;
            if (m > what)
                what = m;
        }
        const char *vend;
        /* Left out: a member named (strip), or one no path goes through (keep); a member a
         * path goes into that is not an object is kept whole (strip) or left out (keep). */
        if (keep ? what == -1 || (what == 0 && *v != '{') : what == 1) {
            vend = strip_value_end(v, end);
            if (vend == NULL)
                return NULL;
        } else {
            if (!first)
                util_buf_append(out, ",", 1);
            first = false;
            util_buf_append(out, p, (size_t)(v - p));
            if (what == 0 && *v == '{') {
                vend = strip_object(v, end, paths, seg + 1, keep, out);
            } else {
                vend = strip_value_end(v, end);
                if (vend != NULL)
                    util_buf_append(out, v, (size_t)(vend - v));
            }
            if (vend == NULL)
                return NULL;
        }
        p = strip_ws(vend, end);
        if (p < end && *p == ',') {
            p = strip_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == '}') {
            util_buf_append(out, "}", 1);
            return p + 1;
        }
        return NULL;
    }
    return NULL;
}

static void strip_text(const char *in, size_t len, const char *const *paths, bool keep,
                       struct util_buf *out)
{
    const char *end = in + len;
    const char *p = strip_ws(in, end);
    size_t mark = out->len;
    if (paths != NULL && paths[0] != NULL && p < end && *p == '{') {
        const char *q = strip_object(p, end, paths, 0, keep, out);
        if (q != NULL && strip_ws(q, end) == end)
            return;
    }
    /* Not as expected: the whole text, for the decoder to judge. */
    out->len = mark;
    util_buf_append(out, in, len);
}

void kube_json_strip(const char *in, size_t len, const char *const *paths, struct util_buf *out)
{
    strip_text(in, len, paths, false, out);
}

void kube_json_keep(const char *in, size_t len, const char *const *paths, struct util_buf *out)
{
    strip_text(in, len, paths, true, out);
}

/* ---- peeking at a watch event ---- */

/* One member of an object, for the peek: key, the start of its value, and the event so
 * far. Returns the end of the value, or NULL when the peek cannot go on. */
typedef const char *(*peek_member_fn)(const char *key, size_t klen, const char *v, const char *end,
                                      struct kube_watch_peek *out);

/* Calls fn for each member of the object at p until out->done; returns the end of the
 * object (or of the member that completed the peek), or NULL. */
static const char *peek_object(const char *p, const char *end, peek_member_fn fn,
                               struct kube_watch_peek *out)
{
    if (p >= end || *p != '{')
        return NULL;
    p = strip_ws(p + 1, end);
    if (p < end && *p == '}')
        return p + 1;
    while (p < end) {
        if (*p != '"')
            return NULL;
        const char *kend = strip_string_end(p, end);
        if (kend == NULL)
            return NULL;
        const char *v = strip_ws(kend, end);
        if (v >= end || *v != ':')
            return NULL;
        v = strip_ws(v + 1, end);
        const char *vend = fn(p + 1, (size_t)(kend - 1 - (p + 1)), v, end, out);
        if (vend == NULL || out->done)
            return vend;
        p = strip_ws(vend, end);
        if (p < end && *p == ',') {
            p = strip_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == '}')
            return p + 1;
        return NULL;
    }
    return NULL;
}

static bool peek_key_is(const char *key, size_t klen, const char *name)
{
    return strlen(name) == klen && memcmp(key, name, klen) == 0;
}

/* A string without escapes: its bytes in *s and *n. Anything else ends the peek (NULL). */
static const char *peek_string(const char *v, const char *end, const char **s, size_t *n)
{
    const char *vend = strip_value_end(v, end);
    if (vend == NULL || *v != '"' || memchr(v + 1, '\\', (size_t)(vend - v - 2)) != NULL)
        return NULL;
    *s = v + 1;
    *n = (size_t)(vend - v - 2);
    return vend;
}

static const char *peek_meta_member(const char *key, size_t klen, const char *v, const char *end,
                                    struct kube_watch_peek *out)
{
    const char *vend;
    if (peek_key_is(key, klen, "name"))
        vend = peek_string(v, end, &out->name, &out->name_len);
    else if (peek_key_is(key, klen, "namespace"))
        vend = peek_string(v, end, &out->namespace, &out->namespace_len);
    else if (peek_key_is(key, klen, "resourceVersion"))
        vend = peek_string(v, end, &out->resource_version, &out->rv_len);
    else
        return strip_value_end(v, end);
    /* All three found: labels, annotations and managedFields after them are not read. A
     * cluster-scoped object has no namespace, so its metadata is read to its end. */
    if (out->name != NULL && out->namespace != NULL && out->resource_version != NULL)
        out->done = true;
    return vend;
}

static const char *peek_object_member(const char *key, size_t klen, const char *v, const char *end,
                                      struct kube_watch_peek *out)
{
    if (!peek_key_is(key, klen, "metadata"))
        return strip_value_end(v, end);
    const char *vend = peek_object(v, end, peek_meta_member, out);
    /* The object's metadata is all the peek needs: the rest of the line is not read. */
    if (vend != NULL)
        out->done = true;
    return vend;
}

static const char *peek_event_member(const char *key, size_t klen, const char *v, const char *end,
                                     struct kube_watch_peek *out)
{
    if (peek_key_is(key, klen, "type"))
        return peek_string(v, end, &out->type, &out->type_len);
    if (peek_key_is(key, klen, "object"))
        return peek_object(v, end, peek_object_member, out);
    return strip_value_end(v, end);
}

int kube_watch_peek(const char *line, size_t len, struct kube_watch_peek *out)
{
    const char *end = line + len;
    memset(out, 0, sizeof(*out));
    if (peek_object(strip_ws(line, end), end, peek_event_member, out) == NULL || !out->done ||
        out->type == NULL || out->name == NULL || out->resource_version == NULL) {
        memset(out, 0, sizeof(*out));
        return -1;
    }
    out->line = line;
    out->len = len;
    return 0;
}
