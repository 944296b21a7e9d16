/*
 * The node tree both input forms are turned into, and the JSON side of that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

struct policy_node *policy_node_new(enum policy_node_kind kind, int line, int column)
{
    struct policy_node *n = util_calloc(1, sizeof(*n));
    n->kind = kind;
    n->line = line;
    n->column = column;
    return n;
}

void policy_node_set_text(struct policy_node *n, const char *text, size_t len)
{
    /* Not util_strndup: a scalar may hold NUL bytes ("\0" in YAML, \u0000 in JSON). */
    free(n->text);
    n->text = util_malloc(len + 1);
    memcpy(n->text, text, len);
    n->text[len] = '\0';
    n->len = len;
}

struct policy_pair *policy_node_add_pair(struct policy_node *map, struct policy_node *key)
{
    map->pairs = util_grow(map->pairs, &map->pairs_cap, map->npairs + 1, sizeof(*map->pairs));
    struct policy_pair *p = &map->pairs[map->npairs++];
    p->key = key;
    p->value = NULL;
    return p;
}

void policy_node_add_item(struct policy_node *list, struct policy_node *item)
{
    list->items = util_grow(list->items, &list->items_cap, list->nitems + 1, sizeof(*list->items));
    list->items[list->nitems++] = item;
}

void policy_node_free(struct policy_node *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->npairs; i++) {
        policy_node_free(n->pairs[i].key);
        policy_node_free(n->pairs[i].value);
    }
    for (size_t i = 0; i < n->nitems; i++)
        policy_node_free(n->items[i]);
    free(n->pairs);
    free(n->items);
    free(n->text);
    free(n);
}

static struct policy_node *policy_json_node(const json_t *v, int depth)
{
    struct policy_node *n;
    char buf[64];
    int len;

    if (depth > POLICY_MAX_DEPTH)
        return policy_node_new(POLICY_NODE_BAD, 0, 0);
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *item;
        n = policy_node_new(POLICY_NODE_MAP, 0, 0);
        n->closed = true;
        /* jansson keeps the insertion order, which is the order of the document. */
        json_object_foreach((json_t *)v, key, item)
        {
            struct policy_node *k = policy_node_new(POLICY_NODE_SCALAR, 0, 0);
            k->style = POLICY_SCALAR_QUOTED;
            policy_node_set_text(k, key, strlen(key));
            policy_node_add_pair(n, k)->value = policy_json_node(item, depth + 1);
        }
        return n;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *item;
        n = policy_node_new(POLICY_NODE_LIST, 0, 0);
        n->closed = true;
        json_array_foreach((json_t *)v, i, item)
            policy_node_add_item(n, policy_json_node(item, depth + 1));
        return n;
    }
    case JSON_STRING:
        n = policy_node_new(POLICY_NODE_SCALAR, 0, 0);
        n->style = POLICY_SCALAR_QUOTED;
        policy_node_set_text(n, json_string_value(v), json_string_length(v));
        return n;
    case JSON_INTEGER:
        n = policy_node_new(POLICY_NODE_SCALAR, 0, 0);
        n->style = POLICY_SCALAR_INT;
        len = snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        policy_node_set_text(n, buf, (size_t)len);
        return n;
    case JSON_REAL:
        n = policy_node_new(POLICY_NODE_SCALAR, 0, 0);
        n->style = POLICY_SCALAR_REAL;
        len = snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
        /* 7.0 prints as "7": keep the fraction visible, or the message would say that
         * the number 7 is not a whole number. */
        if (strpbrk(buf, ".eEn") == NULL && len + 2 < (int)sizeof(buf)) {
            buf[len++] = '.';
            buf[len++] = '0';
            buf[len] = '\0';
        }
        policy_node_set_text(n, buf, (size_t)len);
        return n;
    case JSON_TRUE:
    case JSON_FALSE:
        n = policy_node_new(POLICY_NODE_SCALAR, 0, 0);
        n->style = POLICY_SCALAR_BOOL;
        policy_node_set_text(n, json_is_true(v) ? "true" : "false", json_is_true(v) ? 4 : 5);
        return n;
    case JSON_NULL:
    default:
        n = policy_node_new(POLICY_NODE_SCALAR, 0, 0);
        n->style = POLICY_SCALAR_NULL;
        policy_node_set_text(n, "null", 4);
        return n;
    }
}

struct policy_node *policy_json_tree(const json_t *v)
{
    return policy_json_node(v, 0);
}
