/*
 * The checks of one value of a policy against its field (schema_int.h): what kind
 * of node it is, strings and their lengths, integers (with the spellings YAML 1.1
 * and other languages read as numbers named), durations, rates and duplicate keys
 * or paths. Each reports at the walk's path and stores nothing.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema_int.h"

/* ---- errors ---- */

void schema_error_at(struct schema_walk *w, int line, int column, const char *fmt, ...)
{
    struct util_buf msg;
    va_list ap;

    util_buf_init(&msg);
    va_start(ap, fmt);
    util_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    policy_diags_add(w->diags, line, column, w->path.data ? w->path.data : "", "%s", msg.data);
    util_buf_free(&msg);
}

size_t schema_path_push_key(struct schema_walk *w, const char *key, size_t len)
{
    size_t mark = w->path.len;
    policy_path_key(&w->path, key, len);
    return mark;
}

size_t schema_path_push_index(struct schema_walk *w, size_t i)
{
    size_t mark = w->path.len;
    util_buf_printf(&w->path, "[%zu]", i);
    return mark;
}

void schema_path_pop(struct schema_walk *w, size_t mark)
{
    w->path.len = mark;
    w->path.data[mark] = '\0';
}

/* A plain scalar that YAML would read as null: no value, ~ or null. */
bool schema_is_null(const struct policy_node *n)
{
    if (n->kind != POLICY_NODE_SCALAR)
        return false;
    if (n->style == POLICY_SCALAR_NULL)
        return true;
    if (n->style != POLICY_SCALAR_PLAIN)
        return false;
    return n->len == 0 || strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 ||
           strcmp(n->text, "Null") == 0 || strcmp(n->text, "NULL") == 0;
}

/* What a node is, for "expected X, got Y". */
static void schema_describe(struct util_buf *b, const struct policy_node *n)
{
    if (n->kind == POLICY_NODE_MAP) {
        util_buf_puts(b, "a map");
        return;
    }
    if (n->kind == POLICY_NODE_LIST) {
        util_buf_puts(b, "a list");
        return;
    }
    if (schema_is_null(n)) {
        util_buf_puts(b, n->style == POLICY_SCALAR_PLAIN && n->len == 0 ? "no value" : "null");
        return;
    }
    switch (n->style) {
    case POLICY_SCALAR_QUOTED:
        util_buf_puts(b, "the string ");
        policy_quote(b, n->text, n->len);
        return;
    case POLICY_SCALAR_INT:
    case POLICY_SCALAR_REAL:
        util_buf_puts(b, "the number ");
        policy_escape(b, n->text, n->len, 40);
        return;
    case POLICY_SCALAR_BOOL:
        util_buf_puts(b, n->text);
        return;
    default:
        policy_quote(b, n->text, n->len);
        return;
    }
}

void schema_kind_error(struct schema_walk *w, const struct policy_node *n, const char *expected,
                       const char *advice)
{
    struct util_buf got;
    util_buf_init(&got);
    schema_describe(&got, n);
    schema_error(w, n, "expected %s, got %s%s", expected, got.data, advice ? advice : "");
    util_buf_free(&got);
}

/*
 * The string in a scalar node, or an error that names what was expected. A plain
 * scalar is a string here, except for the nulls, which YAML would not read as text.
 */
bool schema_string(struct schema_walk *w, const struct policy_node *n, const char *expected)
{
    if (n->kind != POLICY_NODE_SCALAR || schema_is_null(n) ||
        (n->style != POLICY_SCALAR_PLAIN && n->style != POLICY_SCALAR_QUOTED)) {
        schema_kind_error(w, n, expected, NULL);
        return false;
    }
    if (memchr(n->text, '\0', n->len) != NULL) {
        schema_error(w, n, "the value contains a NUL character");
        return false;
    }
    return true;
}

/* ---- lengths ---- */

/* OpenAPI's maxLength counts characters (code points), so this does too. */
static size_t schema_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

/* False, with an error, when the string is longer than the field's max_chars. */
bool schema_length_ok(struct schema_walk *w, const struct schema_field *f,
                      const struct policy_node *n, const char *what, const char *advice)
{
    size_t chars;

    if (f->max_chars == 0)
        return true;
    chars = schema_chars(n->text, n->len);
    if (chars <= f->max_chars)
        return true;
    schema_error(w, n, "%s is %zu characters long, more than %zu: %s", what, chars, f->max_chars,
                 advice);
    return false;
}

/* ---- integers ---- */

static bool schema_all(const char *s, size_t len, const char *set)
{
    for (size_t i = 0; i < len; i++) {
        if (strchr(set, s[i]) == NULL || s[i] == '\0')
            return false;
    }
    return len > 0;
}

/* A plain decimal integer: -?(0|[1-9][0-9]*). */
static bool schema_plain_integer(const char *s, size_t len)
{
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == len || !schema_all(s + i, len - i, "0123456789"))
        return false;
    return s[i] != '0' || len - i == 1;
}

/* Converts -?[0-9]+ with saturation (the range check then reports it as too large). */
static int64_t schema_saturating_int(const char *s, size_t len)
{
    bool neg = s[0] == '-';
    uint64_t v;
    size_t i = neg ? 1 : 0;
    if (util_parse_u64(s + i, len - i, (uint64_t)INT64_MAX, &v) != 0)
        v = (uint64_t)INT64_MAX;
    return neg ? -(int64_t)v : (int64_t)v;
}

/*
 * Why a plain YAML scalar is not a plain decimal integer, when it is one of the
 * forms YAML 1.1 or other languages read as a number, with the spelling to use.
 */
static bool schema_integer_trap(struct schema_walk *w, const struct policy_node *n)
{
    const char *s = n->text;
    size_t len = n->len;
    size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
    const char *digits = s + i;
    size_t dlen = len - i;

    if (s[0] == '+' && schema_plain_integer(digits, dlen)) {
        schema_error(w, n, "an integer has no '+' sign: write %s", digits);
        return true;
    }
    if (dlen > 2 && digits[0] == '0' && strchr("xXoObB", digits[1]) != NULL) {
        /* Say which decimal number was meant, when the digits make one. */
        int base = strchr("xX", digits[1]) ? 16 : strchr("oO", digits[1]) ? 8 : 2;
        const char *set = base == 16 ? "0123456789abcdefABCDEF" : base == 8 ? "01234567" : "01";
        if (schema_all(digits + 2, dlen - 2, set) && dlen - 2 <= 15) {
            unsigned long long v = strtoull(digits + 2, NULL, base);
            schema_error(w, n,
                         "hexadecimal, octal and binary numbers are not accepted: write %s%llu",
                         s[0] == '-' ? "-" : "", v);
        } else {
            schema_error(w, n,
                         "hexadecimal, octal and binary numbers are not accepted: write the "
                         "number in decimal");
        }
        return true;
    }
    if (schema_all(digits, dlen, "0123456789_") && memchr(digits, '_', dlen) != NULL) {
        struct util_buf plain;
        util_buf_init(&plain);
        util_buf_append(&plain, s, i);
        for (size_t k = 0; k < dlen; k++) {
            if (digits[k] != '_')
                util_buf_append(&plain, &digits[k], 1);
        }
        schema_error(w, n, "digit separators are not accepted: write %s", plain.data);
        util_buf_free(&plain);
        return true;
    }
    if (schema_all(digits, dlen, "0123456789") && digits[0] == '0') {
        size_t z = 0;
        while (z + 1 < dlen && digits[z] == '0')
            z++;
        schema_error(w, n,
                     "leading zeros are not accepted (YAML 1.1 reads 010 as the octal number "
                     "8): write %s%.*s",
                     s[0] == '-' ? "-" : "", (int)(dlen - z), digits + z);
        return true;
    }
    if (schema_all(digits, dlen, "0123456789.eE+-_") && digits[0] >= '0' && digits[0] <= '9') {
        schema_error(w, n,
                     "fractions and exponents are not accepted: write a whole number in plain "
                     "decimal, such as 7");
        return true;
    }
    return false;
}

bool schema_int(struct schema_walk *w, const struct schema_field *f, const struct policy_node *n,
                int64_t *out)
{
    char expected[96];
    int64_t v;

    snprintf(expected, sizeof(expected), "an integer from %" PRId64 " to %" PRId64, f->min, f->max);
    if (n->kind != POLICY_NODE_SCALAR || schema_is_null(n) || n->style == POLICY_SCALAR_BOOL) {
        schema_kind_error(w, n, expected, NULL);
        return false;
    }
    if (n->style == POLICY_SCALAR_QUOTED) {
        if (n->len > 0 && schema_plain_integer(n->text, n->len))
            schema_error(w, n, "an integer is written without quotes: write %s, not \"%s\"",
                         n->text, n->text);
        else
            schema_kind_error(w, n, expected, NULL);
        return false;
    }
    if (n->style == POLICY_SCALAR_REAL) {
        schema_error(w, n, "expected %s, got the number %s (a whole number has no fraction)",
                     expected, n->text);
        return false;
    }
    if (!schema_plain_integer(n->text, n->len)) {
        if (!schema_integer_trap(w, n))
            schema_kind_error(w, n, expected, NULL);
        return false;
    }
    v = schema_saturating_int(n->text, n->len);
    if (v < f->min || v > f->max) {
        schema_error(w, n, "must be from %" PRId64 " to %" PRId64 ", not %s", f->min, f->max,
                     n->text);
        return false;
    }
    *out = v;
    return true;
}

/* ---- durations and rates ---- */

static void schema_range_error(struct schema_walk *w, const struct schema_field *f,
                               const struct policy_node *n)
{
    struct util_buf got;
    util_buf_init(&got);
    policy_escape(&got, n->text, n->len, 40);
    if (f->max_text != NULL)
        schema_error(w, n, "must be from %s to %s, not %s", f->min_text, f->max_text, got.data);
    else
        schema_error(w, n, "must be at least %s, not %s", f->min_text, got.data);
    util_buf_free(&got);
}

bool schema_duration(struct schema_walk *w, const struct schema_field *f,
                     const struct policy_node *n, int64_t *out)
{
    struct util_err err = {0};
    char expected[96];
    int64_t v;
    int rc;

    if (f->max_text != NULL)
        snprintf(expected, sizeof(expected), "a duration from %s to %s", f->min_text, f->max_text);
    else
        snprintf(expected, sizeof(expected), "a duration of at least %s", f->min_text);
    if (!schema_string(w, n, expected))
        return false;
    rc = policy_parse_duration(n->text, &v, &err);
    /*
     * What is wrong with the spelling says more than the length, and so does a
     * value out of range ("25h", "99999999999999y"); the length is left for a value
     * in range spelt with too many digits ("000000000015m"), which the API server
     * refuses all the same.
     */
    if (rc != 0 && rc != UTIL_ERANGE) {
        schema_error(w, n, "%s", err.msg);
        return false;
    }
    if (f->max_text != NULL && (rc == UTIL_ERANGE || v < f->min || v > f->max)) {
        schema_range_error(w, f, n);
        return false;
    }
    if (!schema_length_ok(w, f, n, "the duration",
                          "write it without leading zeros, or in a larger unit (90m, not "
                          "0000005400s)"))
        return false;
    if (rc != 0) {
        schema_error(w, n, "%s", err.msg);
        return false;
    }
    if (v < f->min) {
        schema_range_error(w, f, n);
        return false;
    }
    *out = v;
    return true;
}

/*
 * A size or a rate: a string the parser reads into bytes (or bytes a second), at
 * most the CRD's length and at least the field's min. The two differ only in their
 * parser and their words, so they share this.
 */
struct schema_amount {
    int (*parse)(const char *s, uint64_t *v, struct util_err *err);
    const char *expected; /* "a size such as 512MiB" */
    const char *what;     /* "the size" */
    const char *shorter;  /* how to write it within the length */
};

static bool schema_amount(struct schema_walk *w, const struct schema_field *f,
                          const struct policy_node *n, const struct schema_amount *a, uint64_t *out)
{
    struct util_err err = {0};
    uint64_t v;
    int rc;

    if (!schema_string(w, n, a->expected))
        return false;
    rc = a->parse(n->text, &v, &err);
    if ((rc == 0 || rc == UTIL_ERANGE) && !schema_length_ok(w, f, n, a->what, a->shorter))
        return false;
    if (rc != 0) {
        schema_error(w, n, "%s", err.msg);
        return false;
    }
    if (v < (uint64_t)f->min) {
        schema_range_error(w, f, n);
        return false;
    }
    *out = v;
    return true;
}

bool schema_size(struct schema_walk *w, const struct schema_field *f, const struct policy_node *n,
                 uint64_t *out)
{
    static const struct schema_amount size = {
        .parse = policy_parse_size,
        .expected = "a size such as 512MiB",
        .what = "the size",
        .shorter = "write it without leading zeros, or in a larger unit (1GiB, not 1073741824B)",
    };
    return schema_amount(w, f, n, &size, out);
}

bool schema_rate(struct schema_walk *w, const struct schema_field *f, const struct policy_node *n,
                 uint64_t *out)
{
    static const struct schema_amount rate = {
        .parse = policy_parse_rate,
        .expected = "a rate such as 50MiB/s",
        .what = "the rate",
        .shorter = "write it without leading zeros, or in a larger unit (50MiB/s, not 52428800B/s)",
    };
    return schema_amount(w, f, n, &rate, out);
}

/* ---- booleans ---- */

bool schema_bool(struct schema_walk *w, const struct policy_node *n, bool *out)
{
    if (n->kind == POLICY_NODE_SCALAR && n->style == POLICY_SCALAR_BOOL) {
        *out = strcmp(n->text, "true") == 0;
        return true;
    }
    if (n->kind == POLICY_NODE_SCALAR && n->style == POLICY_SCALAR_PLAIN &&
        (strcmp(n->text, "true") == 0 || strcmp(n->text, "false") == 0)) {
        *out = n->text[0] == 't';
        return true;
    }
    /* YAML 1.1 read yes, on, True and 1 as booleans; here only the two words are. */
    if (n->kind == POLICY_NODE_SCALAR && n->style == POLICY_SCALAR_QUOTED &&
        (strcmp(n->text, "true") == 0 || strcmp(n->text, "false") == 0)) {
        schema_error(w, n, "a boolean is written without quotes: write %s, not \"%s\"", n->text,
                     n->text);
        return false;
    }
    schema_kind_error(w, n, "true or false", NULL);
    return false;
}

/* ---- duplicates ---- */

static int schema_text_cmp(const void *a, const void *b)
{
    const struct schema_text *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    int c = memcmp(x->s, y->s, x->len);
    if (c != 0)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * first[i] is the index of the first text equal to text i (i itself for the first
 * one), or SIZE_MAX where texts[i].s is NULL. Sorting keeps this O(n log n), so a
 * map with a hundred thousand keys costs no more than reading it.
 */
size_t *schema_first_equal(struct schema_text *texts, size_t n)
{
    size_t *first = util_calloc(n > 0 ? n : 1, sizeof(*first));
    struct schema_text *sorted = util_calloc(n > 0 ? n : 1, sizeof(*sorted));
    size_t m = 0;

    for (size_t i = 0; i < n; i++) {
        first[i] = SIZE_MAX;
        if (texts[i].s != NULL)
            sorted[m++] = texts[i];
    }
    qsort(sorted, m, sizeof(*sorted), schema_text_cmp);
    for (size_t i = 0; i < m; i++) {
        if (i > 0 && sorted[i].len == sorted[i - 1].len &&
            memcmp(sorted[i].s, sorted[i - 1].s, sorted[i].len) == 0)
            first[sorted[i].index] = first[sorted[i - 1].index];
        else
            first[sorted[i].index] = sorted[i].index;
    }
    free(sorted);
    return first;
}

/* first[] for the keys of a map (complex keys are left out). */
static size_t *schema_first_keys(const struct policy_node *map)
{
    struct schema_text *texts = util_calloc(map->npairs > 0 ? map->npairs : 1, sizeof(*texts));
    size_t *first;
    for (size_t i = 0; i < map->npairs; i++) {
        const struct policy_node *k = map->pairs[i].key;
        texts[i].index = i;
        if (k->kind == POLICY_NODE_SCALAR) {
            texts[i].s = k->text;
            texts[i].len = k->len;
        }
    }
    first = schema_first_equal(texts, map->npairs);
    free(texts);
    return first;
}

void schema_duplicate_error(struct schema_walk *w, const struct policy_node *n, const char *what,
                            const struct policy_node *first, const char *first_path)
{
    struct util_buf q;
    util_buf_init(&q);
    policy_quote(&q, n->text, n->len);
    if (first->line > 0)
        schema_error(w, n, "duplicate %s %s (first at line %d)", what, q.data, first->line);
    else
        schema_error(w, n, "duplicate %s %s (first at %s)", what, q.data, first_path);
    util_buf_free(&q);
}

/*
 * Checks the keys of a map: a key is a plain or quoted string, and appears once.
 * Returns first[] as schema_first_keys does; a pair to skip has first[i] != i.
 */
size_t *schema_check_keys(struct schema_walk *w, const struct policy_node *map)
{
    size_t *first = schema_first_keys(map);
    for (size_t i = 0; i < map->npairs; i++) {
        const struct policy_node *k = map->pairs[i].key;
        if (k->kind == POLICY_NODE_BAD)
            continue; /* an alias as a key: already reported */
        if (k->kind != POLICY_NODE_SCALAR) {
            schema_error(w, k, "a key must be a plain or quoted string, not %s",
                         k->kind == POLICY_NODE_MAP ? "a map" : "a list");
            continue;
        }
        if (first[i] != i) {
            struct util_buf q;
            size_t mark = schema_path_push_key(w, k->text, k->len);
            util_buf_init(&q);
            policy_quote(&q, k->text, k->len);
            schema_error(w, k, "duplicate key %s (first at line %d)", q.data,
                         map->pairs[first[i]].key->line);
            util_buf_free(&q);
            schema_path_pop(w, mark);
        }
    }
    return first;
}

void schema_duplicate_item(struct schema_walk *w, const struct policy_node *list, size_t i,
                           size_t first, const char *what)
{
    /* The first one's path, for the JSON form, which has no lines to point at. */
    struct util_buf fp;
    util_buf_init(&fp);
    util_buf_append(&fp, w->path.data, w->path.len);
    util_buf_printf(&fp, "[%zu]", first);
    size_t mark = schema_path_push_index(w, i);
    schema_duplicate_error(w, list->items[i], what, list->items[first], fp.data);
    schema_path_pop(w, mark);
    util_buf_free(&fp);
}
