/*
 * crd_cases: BackupPolicy documents made from the CRD's own schema, each with the
 * verdict the API server must give it.
 *
 * crd_cases_load reads crd/backuppolicies.yaml and walks the openAPIV3Schema of
 * metadata and spec. For every limit it meets (required, minItems, maxItems,
 * x-kubernetes-list-type: set, maxProperties, minLength, maxLength, pattern, enum,
 * minimum, maximum and each x-kubernetes-validations rule) it makes documents at
 * the bound and one past it, or values that do and do not match, with the number
 * read from the schema. Everything else in the document is valid, so a document's
 * verdict is the verdict on that one limit.
 *
 * The generator knows a few things a schema cannot say, per field: one valid
 * value, values that break the field's pattern (checked against the pattern with
 * POSIX regular expressions, so they cannot drift from it), and how to make a
 * valid value of a given length; and, per CEL rule (found by its message), which
 * documents test it, with the bounds read from the message ("jitter must be
 * between 0s and 24h"). A limit without such knowledge goes to `unknown`, and a
 * pattern example that does not behave goes to `problems`: the tests fail on
 * either, so a limit added to the CRD cannot go untested.
 *
 * Costs: the CRD is a few KiB; a few hundred small documents (jansson objects).
 */
#ifndef LODE_TEST_CRD_CASES_H
#define LODE_TEST_CRD_CASES_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util/util.h"

struct crd_case {
    char *what;  /* "spec.paths: maxItems 64: 65 items" */
    char *field; /* "spec.paths", "spec.paths[]" for an item, "spec.nodeSelector{}" for a value */
    bool valid;  /* the schema's verdict */
    json_t *doc; /* the whole BackupPolicy */
};

/* One limit met in the schema: "spec.paths" "maxItems" "64". */
struct crd_limit {
    char *field;
    char *keyword;
    char *value; /* the value as JSON text (a rule's message for x-kubernetes-validations) */
};

struct crd_cases {
    struct crd_case *v;
    size_t n, cap;
    struct crd_limit *limits;
    size_t nlimits, limits_cap;
    char **unknown; /* "spec.x: minProperties": limits with no cases */
    size_t nunknown, unknown_cap;
    char **problems; /* examples that contradict the schema */
    size_t nproblems, problems_cap;
    json_t *root; /* the CRD, for the walk */
};

/* Loads the CRD and makes the cases. UTIL_EIO or UTIL_EINVAL with a message. */
int crd_cases_load(struct crd_cases *c, const char *crd_path, struct util_err *err);
void crd_cases_free(struct crd_cases *c);

/* The limit of a field by keyword ("spec.paths", "maxItems"), or NULL. */
const struct crd_limit *crd_cases_limit(const struct crd_cases *c, const char *field,
                                        const char *keyword);

/* The CRD at $LODE_ROOT/crd/backuppolicies.yaml, or crd/backuppolicies.yaml. */
char *crd_cases_default_path(void);

#endif
