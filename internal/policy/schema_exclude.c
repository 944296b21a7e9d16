/*
 * spec.exclude.patterns: a list of glob patterns (glob.h), each checked for its syntax
 * and, once the whole document is read, for whether it can match anything under the
 * policy's paths: a pattern that cannot is a mistake (a typo in its leading
 * directories, or a path the policy does not back up), never a harmless no-op.
 */
#include <stdlib.h>
#include <string.h>

#include "glob/glob.h"
#include "schema_int.h"

void schema_walk_globs(struct schema_walk *w, const struct schema_field *f,
                       const struct policy_node *list)
{
    struct policy_exclude *x = &w->p->exclude;
    struct schema_text *texts;
    size_t *first;

    if (f->max_items > 0 && list->nitems > f->max_items)
        schema_error(w, list,
                     "%zu patterns, more than %zu: exclude a common parent directory, or use "
                     "\"**\"",
                     list->nitems, f->max_items);
    texts = util_calloc(list->nitems > 0 ? list->nitems : 1, sizeof(*texts));
    for (size_t i = 0; i < list->nitems; i++) {
        const struct policy_node *n = list->items[i];
        struct util_err err = {0};
        size_t mark = schema_path_push_index(w, i);

        texts[i].index = i;
        if (n->kind != POLICY_NODE_BAD && schema_string(w, n, "a pattern such as *.tmp") &&
            schema_length_ok(w, f, n, "the pattern", "exclude a shorter parent directory")) {
            if (glob_check(n->text, n->len, &err) != 0) {
                schema_error(w, n, "%s", err.msg);
            } else {
                texts[i].s = n->text;
                texts[i].len = n->len;
            }
        }
        schema_path_pop(w, mark);
    }
    first = schema_first_equal(texts, list->nitems);
    for (size_t i = 0; i < list->nitems; i++) {
        if (first[i] == SIZE_MAX)
            continue;
        if (first[i] != i) {
            schema_duplicate_item(w, list, i, first[i], "pattern");
            continue;
        }
        x->patterns = util_realloc(x->patterns, (x->npatterns + 1) * sizeof(*x->patterns));
        x->patterns[x->npatterns++] = util_strdup(list->items[i]->text);
        w->globs = util_realloc(w->globs, (w->nglobs + 1) * sizeof(*w->globs));
        w->glob_at = util_realloc(w->glob_at, (w->nglobs + 1) * sizeof(*w->glob_at));
        w->glob_at[w->nglobs] = i;
        w->globs[w->nglobs++] = list->items[i];
    }
    free(first);
    free(texts);
}

void schema_excludes_end(struct schema_walk *w)
{
    const struct policy *p = w->p;
    for (size_t i = 0; i < w->nglobs && p->npaths > 0; i++) {
        const char *pat = p->exclude.patterns[i];
        bool can = false;
        for (size_t k = 0; k < p->npaths && !can; k++)
            can = glob_can_match_under(pat, p->paths[k]);
        if (can)
            continue;
        struct util_buf path;
        util_buf_init(&path);
        util_buf_printf(&path, "spec.exclude.patterns[%zu]", w->glob_at[i]);
        policy_diags_add(w->diags, w->globs[i]->line, w->globs[i]->column, path.data,
                         "the pattern can never match: an anchored pattern (one that starts "
                         "with \"/\") must lead into one of spec.paths; write it from one of "
                         "them, or leave out the leading \"/\" to match at any depth");
        util_buf_free(&path);
    }
    free(w->globs);
    free(w->glob_at);
    w->globs = NULL;
    w->glob_at = NULL;
    w->nglobs = 0;
}
