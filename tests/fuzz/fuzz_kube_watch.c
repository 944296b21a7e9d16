/*
 * libFuzzer target for watch streams: the input after two bytes is a stream fed to
 * the line splitter in chunks whose sizes the first byte picks; the lines it emits
 * must be exactly the input's "\n"-separated lines (a trailing "\r" dropped), and
 * a line over the bound must be refused. Each line goes to the event decoder,
 * whose successes must carry what a reflector relies on; and stripped of the members a
 * reflector may leave out (kube_json_strip), a line that decoded must decode to the same
 * type, name and resourceVersion.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINE 512

struct state {
    const char *ref; /* where the next expected line starts in the input */
    const char *end;
    size_t lines;
};

static bool same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The line without what a Job's reflector leaves out decodes to the same event. */
static void check_stripped(const char *line, size_t len, const struct kube_watch_event *ev)
{
    static const char *const paths[] = {"object.metadata.managedFields", "object.spec.template",
                                        "object.status", NULL};
    struct util_buf b;
    json_t *root = NULL;
    struct kube_watch_event sev;
    util_buf_init(&b);
    kube_json_strip(line, len, paths, &b);
    if (b.len > len || kube_watch_decode(b.data, b.len, &root, &sev, NULL) != 0)
        abort();
    if (sev.type != ev->type || !same_str(sev.name, ev->name) ||
        !same_str(sev.resource_version, ev->resource_version) ||
        !same_str(sev.namespace, ev->namespace))
        abort();
    json_decref(root);
    util_buf_free(&b);
}

static int on_line(const char *line, size_t len, void *arg)
{
    struct state *s = arg;
    const char *nl = memchr(s->ref, '\n', (size_t)(s->end - s->ref));
    size_t want;
    json_t *root = NULL;
    struct kube_watch_event ev;

    if (nl == NULL)
        abort(); /* a line was emitted before its newline arrived */
    want = (size_t)(nl - s->ref);
    if (want > 0 && s->ref[want - 1] == '\r')
        want--;
    if (want != len || memcmp(line, s->ref, len) != 0)
        abort();
    s->ref = nl + 1;
    s->lines++;
    if (kube_watch_decode(line, len, &root, &ev, NULL) == 0) {
        if (ev.object == NULL || !json_is_object(ev.object))
            abort();
        if (ev.type != KUBE_EVENT_ERROR && (ev.resource_version == NULL || !ev.resource_version[0]))
            abort();
        if ((ev.type == KUBE_EVENT_ADDED || ev.type == KUBE_EVENT_DELETED) && ev.name == NULL)
            abort();
        if (ev.code < 0 || ev.code >= 1000)
            abort();
        check_stripped(line, len, &ev);
    }
    json_decref(root);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_lines l;
    struct state s;
    size_t chunk, off = 0;
    int rc = 0;

    if (size < 2)
        return 0;
    chunk = (size_t)data[0] % 64 + 1;
    data += 2;
    size -= 2;
    s.ref = (const char *)data;
    s.end = (const char *)data + size;
    s.lines = 0;
    kube_lines_init(&l, MAX_LINE);
    while (off < size && rc == 0) {
        size_t n = size - off < chunk ? size - off : chunk;
        rc = kube_lines_feed(&l, (const char *)data + off, n, on_line, &s, NULL);
        off += n;
    }
    if (rc == 0) {
        /* Everything after the last newline is held, nothing more. */
        if (kube_lines_pending(&l) != (size_t)(s.end - s.ref))
            abort();
    } else {
        /* Refused: the next line really is longer than the bound. */
        const char *nl = memchr(s.ref, '\n', (size_t)(s.end - s.ref));
        size_t len = nl ? (size_t)(nl - s.ref) : (size_t)(s.end - s.ref);
        if (rc != KUBE_ETOOBIG || len <= MAX_LINE)
            abort();
    }
    kube_lines_free(&l);
    return 0;
}
