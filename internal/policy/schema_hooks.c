/*
 * spec.hooks: two lists of commands, before and after the backup (docs/policy.md,
 * "spec.hooks"). Each item is a map walked against the hook's fields like any other
 * map of the schema; the walk stores into the hook being walked (w->hook).
 */
#include <stdlib.h>
#include <string.h>

#include "schema_int.h"

void schema_hook_string(struct schema_walk *w, enum schema_slot slot, const struct policy_node *n)
{
    if (w->hook == NULL || slot != SLOT_HOOK_NAME)
        return;
    free(w->hook->name);
    w->hook->name = util_strdup(n->text);
}

void schema_walk_hooks(struct schema_walk *w, const struct schema_field *f,
                       const struct policy_node *list)
{
    struct policy_hooks *hs = &w->p->hooks;
    bool after = f->slot == SLOT_HOOKS_AFTER;
    struct policy_hook **v = after ? &hs->after : &hs->before;
    size_t *n = after ? &hs->nafter : &hs->nbefore;
    const struct schema_field item = {.name = "", .kind = SK_MAP, .fields = f->fields};

    if (f->max_items > 0 && list->nitems > f->max_items)
        schema_error(w, list,
                     "%zu hooks, more than %zu: put the commands into one script and run that",
                     list->nitems, f->max_items);
    *v = util_calloc(list->nitems + 1, sizeof(**v));
    for (size_t i = 0; i < list->nitems; i++) {
        const struct policy_node *it = list->items[i];
        size_t mark = schema_path_push_index(w, i);
        if (it->kind == POLICY_NODE_BAD) {
            schema_path_pop(w, mark);
            continue;
        }
        if (it->kind != POLICY_NODE_MAP) {
            schema_kind_error(w, it, "a map with command (and name, timeout, onError)", NULL);
            schema_path_pop(w, mark);
            continue;
        }
        struct policy_hook *h = &(*v)[(*n)++];
        h->timeout = POLICY_DEFAULT_HOOK_TIMEOUT;
        w->hook = h;
        schema_walk_map(w, &item, it, it);
        w->hook = NULL;
        if (h->name == NULL)
            h->name = util_asprintf("%s[%zu]", after ? "after" : "before", i);
        schema_path_pop(w, mark);
    }
}

void schema_walk_argv(struct schema_walk *w, const struct schema_field *f,
                      const struct policy_node *list)
{
    struct policy_hook *h = w->hook;
    if (list->nitems == 0 && list->closed) {
        schema_error(w, list, "at least one item is required: the command to run");
        return;
    }
    if (f->max_items > 0 && list->nitems > f->max_items)
        schema_error(w, list, "%zu items, more than %zu: run a script instead", list->nitems,
                     f->max_items);
    if (h != NULL && h->argv == NULL)
        h->argv = util_calloc(list->nitems + 1, sizeof(*h->argv));
    for (size_t i = 0; i < list->nitems; i++) {
        const struct policy_node *n = list->items[i];
        size_t mark = schema_path_push_index(w, i);
        if (n->kind != POLICY_NODE_BAD && schema_string(w, n, "a string") &&
            schema_length_ok(w, f, n, "the argument", "pass long text through a file")) {
            if (i == 0 && n->len == 0)
                schema_error(w, n, "the command is empty: name a program, such as /bin/sh");
            else if (h != NULL && h->argc < list->nitems)
                h->argv[h->argc++] = util_strdup(n->text);
        }
        schema_path_pop(w, mark);
    }
}
