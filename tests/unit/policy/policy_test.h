/*
 * Helpers for the policy tests: a valid document to start from, and checks of the
 * errors a document produces. static inline so that each test file uses what it
 * needs without unused-function warnings.
 */
#ifndef LODE_POLICY_TEST_H
#define LODE_POLICY_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"

/* The head of every test document; the spec's first lines follow it (line 5 on). */
#define PT_HEAD                                                                                    \
    "apiVersion: lodestore.io/v1alpha1\n"                                                          \
    "kind: BackupPolicy\n"                                                                         \
    "metadata:\n"                                                                                  \
    "  name: t\n"
#define PT_SPEC                                                                                    \
    "spec:\n"                                                                                      \
    "  repository: main\n"                                                                         \
    "  paths: [/etc]\n"

struct pt_result {
    int rc;
    struct policy p;
    struct policy_diags d;
};

static inline void pt_parse_db(struct pt_result *r, const char *doc, const struct tz_db *db)
{
    policy_diags_init(&r->d);
    r->rc = policy_parse_yaml(&r->p, doc, strlen(doc), db, &r->d);
    /* Whatever the outcome, the rc and the error list agree. */
    if (r->rc == 0)
        assert_int_equal(r->d.n, 0);
    else
        assert_true(r->d.n > 0);
    for (size_t i = 1; i < r->d.n; i++) {
        assert_true(
            r->d.v[i - 1].line < r->d.v[i].line ||
            (r->d.v[i - 1].line == r->d.v[i].line && r->d.v[i - 1].column <= r->d.v[i].column));
    }
}

static inline void pt_parse(struct pt_result *r, const char *doc)
{
    pt_parse_db(r, doc, NULL);
}

static inline void pt_free(struct pt_result *r)
{
    policy_free(&r->p);
    policy_diags_free(&r->d);
}

static inline void pt_print(const struct pt_result *r)
{
    for (size_t i = 0; i < r->d.n; i++)
        print_message("  %d:%d: %s: %s\n", r->d.v[i].line, r->d.v[i].column, r->d.v[i].path,
                      r->d.v[i].message);
}

/* A document of PT_HEAD PT_SPEC and the lines given (printf-style). */
static inline char *pt_doc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline char *pt_doc(const char *fmt, ...)
{
    struct util_buf b;
    va_list ap;
    util_buf_init(&b);
    util_buf_puts(&b, PT_HEAD PT_SPEC);
    va_start(ap, fmt);
    util_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    return util_buf_steal(&b);
}

/* Asserts that doc is valid; the caller frees r. */
static inline void pt_expect_ok(struct pt_result *r, const char *doc, const struct tz_db *db)
{
    pt_parse_db(r, doc, db);
    if (r->rc != 0) {
        print_message("unexpected errors in:\n%s", doc);
        pt_print(r);
    }
    assert_int_equal(r->rc, 0);
}

/* Asserts that error i is at line:column, on path, with a message containing needle. */
static inline void pt_expect_diag(const struct pt_result *r, size_t i, int line, int column,
                                  const char *path, const char *needle)
{
    if (i >= r->d.n) {
        print_message("want error %zu (%d:%d %s: %s), got:\n", i, line, column, path, needle);
        pt_print(r);
    }
    assert_true(i < r->d.n);
    const struct policy_diag *g = &r->d.v[i];
    if (g->line != line || g->column != column || strcmp(g->path, path) != 0 ||
        strstr(g->message, needle) == NULL) {
        print_message("want %d:%d %s: ...%s...\n got:\n", line, column, path, needle);
        pt_print(r);
    }
    assert_int_equal(g->line, line);
    assert_int_equal(g->column, column);
    assert_string_equal(g->path, path);
    assert_non_null(strstr(g->message, needle));
}

/* Asserts exactly one error, as pt_expect_diag. */
static inline void pt_expect_one(const char *doc, const struct tz_db *db, int line, int column,
                                 const char *path, const char *needle)
{
    struct pt_result r;
    pt_parse_db(&r, doc, db);
    if (r.d.n != 1) {
        print_message("want exactly one error in:\n%s", doc);
        pt_print(&r);
    }
    assert_int_equal(r.d.n, 1);
    assert_int_equal(r.rc, UTIL_EINVAL);
    pt_expect_diag(&r, 0, line, column, path, needle);
    pt_free(&r);
}

#endif
