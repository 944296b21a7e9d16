/*
 * The entry points: YAML or JSON to a tree, the tree through the schema walk, the
 * errors sorted into document order.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"
#include "schema_int.h"

static void policy_labels_free(struct policy_label *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].key);
        free(v[i].value);
    }
    free(v);
}

static void policy_hooks_free(struct policy_hook *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        for (size_t k = 0; k < v[i].argc; k++)
            free(v[i].argv[k]);
        free(v[i].argv);
    }
    free(v);
}

void policy_free(struct policy *p)
{
    if (p == NULL)
        return;
    free(p->name);
    free(p->namespace);
    free(p->repository);
    for (size_t i = 0; i < p->npaths; i++)
        free(p->paths[i]);
    free(p->paths);
    policy_labels_free(p->node_selector, p->nnode_selector);
    policy_labels_free(p->labels, p->nlabels);
    policy_labels_free(p->annotations, p->nannotations);
    free(p->schedule.cron_text);
    free(p->schedule.timezone);
    for (size_t i = 0; i < p->exclude.npatterns; i++)
        free(p->exclude.patterns[i]);
    free(p->exclude.patterns);
    policy_hooks_free(p->hooks.before, p->hooks.nbefore);
    policy_hooks_free(p->hooks.after, p->hooks.nafter);
    schema_pod_free(&p->pod);
    memset(p, 0, sizeof(*p));
}

/* Walks the tree into a scratch policy and hands it over only when no error was found. */
static int policy_finish(struct policy *out, const struct policy_node *root, bool json,
                         const struct tz_db *db, struct policy_diags *diags, size_t before)
{
    struct policy p;

    /* After a syntax error the tree holds what came before it: the walk reports what
     * it sees there, and maps the error cut short (not closed) report nothing missing. */
    memset(&p, 0, sizeof(p));
    if (root != NULL)
        policy_walk(&p, root, json, db, diags);
    policy_diags_sort(diags);
    if (diags->n != before) {
        policy_free(&p);
        return UTIL_EINVAL;
    }
    *out = p;
    return 0;
}

int policy_parse_yaml(struct policy *out, const char *data, size_t len, const struct tz_db *db,
                      struct policy_diags *diags)
{
    struct policy_node *root;
    size_t before = diags->n;
    int rc;

    memset(out, 0, sizeof(*out));
    if (len > POLICY_MAX_YAML_BYTES) {
        policy_diags_add(diags, 1, 1, "",
                         "the file is larger than 1 MiB: a BackupPolicy is a few hundred bytes");
        return UTIL_EINVAL;
    }
    root = policy_yaml_tree(data, len, diags);
    if (root == NULL && diags->n == before)
        policy_diags_add(diags, 1, 1, "",
                         "the file is empty: a BackupPolicy needs apiVersion, kind, metadata "
                         "and spec");
    rc = policy_finish(out, root, false, db, diags, before);
    policy_node_free(root);
    return rc;
}

int policy_parse_json(struct policy *out, const json_t *obj, const struct tz_db *db,
                      struct policy_diags *diags)
{
    struct policy_node *root;
    size_t before = diags->n;
    int rc;

    memset(out, 0, sizeof(*out));
    if (obj == NULL) {
        policy_diags_add(diags, 0, 0, "", "expected a JSON object, got nothing");
        return UTIL_EINVAL;
    }
    root = policy_json_tree(obj);
    rc = policy_finish(out, root, true, db, diags, before);
    policy_node_free(root);
    return rc;
}
