/*
 * Diagnostics: the error list every stage of the validator adds to, its document
 * order, and the quoting of paths and values in messages. Called by yaml.c, the
 * schema's files (schema.c, schema_values.c) and policy.c; it calls none of them.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

void policy_diags_init(struct policy_diags *d)
{
    d->v = NULL;
    d->n = 0;
    d->cap = 0;
}

void policy_diags_free(struct policy_diags *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].path);
        free(d->v[i].message);
    }
    free(d->v);
    policy_diags_init(d);
}

void policy_diags_add(struct policy_diags *d, int line, int column, const char *path,
                      const char *fmt, ...)
{
    struct util_buf msg;
    va_list ap;

    util_buf_init(&msg);
    va_start(ap, fmt);
    util_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    d->v = util_grow(d->v, &d->cap, d->n + 1, sizeof(*d->v));
    d->v[d->n].line = line;
    d->v[d->n].column = column;
    d->v[d->n].path = util_strdup(path != NULL ? path : "");
    d->v[d->n].message = util_buf_steal(&msg);
    d->n++;
}

struct policy_diag_order {
    int line, column;
    size_t seq;
};

static int policy_diag_cmp(const void *a, const void *b)
{
    const struct policy_diag_order *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->column != y->column)
        return x->column < y->column ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void policy_diags_sort(struct policy_diags *d)
{
    /* qsort is not stable; the sequence number makes it so, which keeps the order of
     * several errors reported at one position (and of every error in the JSON form). */
    struct policy_diag_order *o;
    struct policy_diag *sorted;

    if (d->n < 2)
        return;
    o = util_calloc(d->n, sizeof(*o));
    for (size_t i = 0; i < d->n; i++) {
        o[i].line = d->v[i].line;
        o[i].column = d->v[i].column;
        o[i].seq = i;
    }
    qsort(o, d->n, sizeof(*o), policy_diag_cmp);
    sorted = util_calloc(d->n, sizeof(*sorted));
    for (size_t i = 0; i < d->n; i++)
        sorted[i] = d->v[o[i].seq];
    free(d->v);
    d->v = sorted;
    d->cap = d->n;
    free(o);
}

void policy_path_key(struct util_buf *path, const char *key, size_t len)
{
    bool word = len > 0;
    for (size_t i = 0; i < len && word; i++) {
        char c = key[i];
        word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    }
    if (word) {
        if (path->len > 0)
            util_buf_append(path, ".", 1);
        util_buf_append(path, key, len);
        return;
    }
    /* Label keys such as app.kubernetes.io/name: brackets, as Kubernetes writes them. */
    util_buf_append(path, "[", 1);
    policy_escape(path, key, len, 300);
    util_buf_append(path, "]", 1);
}

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0 when invalid. */
static size_t policy_utf8_len(const unsigned char *s, size_t n)
{
    size_t need;
    uint32_t cp;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        need = 2;
        cp = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        need = 3;
        cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        need = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (n < need)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return need;
}

void policy_escape(struct util_buf *b, const char *text, size_t len, size_t max_chars)
{
    /* Text is echoed back to the person who wrote it, and into JSON output, so it stays
     * short, printable and valid UTF-8: a 1 MiB value or a terminal escape has no place
     * in a message. */
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, chars = 0;

    while (i < len && chars < max_chars) {
        size_t n = policy_utf8_len(s + i, len - i);
        if (n == 0 || s[i] < 0x20 || s[i] == 0x7f) {
            util_buf_printf(b, "\\x%02x", s[i]);
            i++;
        } else {
            if (s[i] == '"' || s[i] == '\\')
                util_buf_append(b, "\\", 1);
            util_buf_append(b, text + i, n);
            i += n;
        }
        chars++;
    }
    if (i < len)
        util_buf_puts(b, "...");
}

void policy_quote(struct util_buf *b, const char *text, size_t len)
{
    util_buf_append(b, "\"", 1);
    policy_escape(b, text, len, 60);
    util_buf_append(b, "\"", 1);
}
