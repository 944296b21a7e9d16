/*
 * spec.pod: the backup Job's pod settings (docs/policy.md, "spec.pod"): a priority
 * class, image pull secrets, tolerations and the container's resources. Names are
 * checked as Kubernetes checks them; a quantity by the spelling Kubernetes accepts for
 * CPU and memory (a decimal number with an optional SI or binary suffix).
 */
#include <stdlib.h>
#include <string.h>

#include "schema_int.h"

int schema_check_quantity(struct schema_walk *w, const char *s, size_t len, struct util_err *err)
{
    static const char *const suffixes[] = {"",   "m",  "k",  "M",  "G", "T",
                                           "Ki", "Mi", "Gi", "Ti", NULL};
    size_t i = 0, digits = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (digits > 0 && i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++, digits++;
    }
    if (digits == 0)
        return util_err_set(err, UTIL_EINVAL,
                            "a quantity is a number and an optional unit, such as 500m (CPU) or "
                            "512Mi (memory)");
    for (size_t k = 0; suffixes[k] != NULL; k++)
        if (strlen(suffixes[k]) == len - i && memcmp(suffixes[k], s + i, len - i) == 0)
            return 0;
    return util_err_set(err, UTIL_EINVAL,
                        "unknown unit \"%.*s\": use m for CPU (500m) and Ki, Mi, Gi or Ti for "
                        "memory (512Mi)",
                        (int)(len - i), s + i);
}

bool schema_pod_string(struct schema_walk *w, enum schema_slot slot, const struct policy_node *n)
{
    struct policy_pod *pod = &w->p->pod;
    struct policy_toleration *t = w->toleration;
    char **dst = NULL;
    switch (slot) {
    case SLOT_POD_PRIORITY:
        dst = &pod->priority_class;
        break;
    case SLOT_REQ_CPU:
        dst = &pod->requests_cpu;
        break;
    case SLOT_REQ_MEMORY:
        dst = &pod->requests_memory;
        break;
    case SLOT_LIM_CPU:
        dst = &pod->limits_cpu;
        break;
    case SLOT_LIM_MEMORY:
        dst = &pod->limits_memory;
        break;
    case SLOT_TOL_KEY:
        dst = t ? &t->key : NULL;
        break;
    case SLOT_TOL_OPERATOR:
        dst = t ? &t->op : NULL;
        break;
    case SLOT_TOL_VALUE:
        dst = t ? &t->value : NULL;
        break;
    case SLOT_TOL_EFFECT:
        dst = t ? &t->effect : NULL;
        break;
    default:
        return false;
    }
    if (dst != NULL) {
        free(*dst);
        *dst = util_strdup(n->text);
    }
    return true;
}

void schema_walk_names(struct schema_walk *w, const struct schema_field *f,
                       const struct policy_node *list)
{
    struct policy_pod *pod = &w->p->pod;
    if (f->max_items > 0 && list->nitems > f->max_items)
        schema_error(w, list, "%zu names, more than %zu", list->nitems, f->max_items);
    pod->pull_secrets = util_calloc(list->nitems + 1, sizeof(*pod->pull_secrets));
    for (size_t i = 0; i < list->nitems; i++) {
        const struct policy_node *n = list->items[i];
        struct util_err err = {0};
        size_t mark = schema_path_push_index(w, i);
        if (n->kind != POLICY_NODE_BAD && schema_string(w, n, "the name of a Secret")) {
            if (policy_check_dns_subdomain(n->text, n->len, &err) != 0)
                schema_error(w, n, "%s", err.msg);
            else
                pod->pull_secrets[pod->npull_secrets++] = util_strdup(n->text);
        }
        schema_path_pop(w, mark);
    }
}

void schema_walk_tolerations(struct schema_walk *w, const struct schema_field *f,
                             const struct policy_node *list)
{
    struct policy_pod *pod = &w->p->pod;
    const struct schema_field item = {.name = "", .kind = SK_MAP, .fields = f->fields};
    if (f->max_items > 0 && list->nitems > f->max_items)
        schema_error(w, list, "%zu tolerations, more than %zu", list->nitems, f->max_items);
    pod->has_tolerations = true;
    pod->tolerations = util_calloc(list->nitems + 1, sizeof(*pod->tolerations));
    for (size_t i = 0; i < list->nitems; i++) {
        const struct policy_node *it = list->items[i];
        size_t mark = schema_path_push_index(w, i);
        if (it->kind == POLICY_NODE_MAP) {
            struct policy_toleration *t = &pod->tolerations[pod->ntolerations++];
            w->toleration = t;
            schema_walk_map(w, &item, it, it);
            w->toleration = NULL;
            /* Kubernetes: Exists takes no value; an empty key needs Exists. */
            if (t->op != NULL && strcmp(t->op, "Exists") == 0 && t->value != NULL)
                schema_error(w, it, "operator Exists takes no value: remove value");
            else if (t->key == NULL && (t->op == NULL || strcmp(t->op, "Exists") != 0))
                schema_error(w, it,
                             "a toleration without key must have operator: Exists (it then "
                             "tolerates every taint)");
            if (t->has_seconds && (t->effect == NULL || strcmp(t->effect, "NoExecute") != 0))
                schema_error(w, it, "tolerationSeconds is only valid with effect: NoExecute");
        } else if (it->kind != POLICY_NODE_BAD) {
            schema_kind_error(w, it, "a map with key, operator, value and effect", NULL);
        }
        schema_path_pop(w, mark);
    }
}

void schema_pod_free(struct policy_pod *pod)
{
    free(pod->priority_class);
    for (size_t i = 0; i < pod->npull_secrets; i++)
        free(pod->pull_secrets[i]);
    free(pod->pull_secrets);
    for (size_t i = 0; i < pod->ntolerations; i++) {
        free(pod->tolerations[i].key);
        free(pod->tolerations[i].op);
        free(pod->tolerations[i].value);
        free(pod->tolerations[i].effect);
    }
    free(pod->tolerations);
    free(pod->requests_cpu);
    free(pod->requests_memory);
    free(pod->limits_cpu);
    free(pod->limits_memory);
}
