/*
 * policy_int: what the files of the policy module share, and nothing else sees.
 *
 * Both input forms are first turned into one small tree of nodes (maps, lists and
 * scalars, each with its line and column), so that a single walk against the
 * schema table (schema_table.c; the walk is schema.c) checks a YAML file and a
 * Kubernetes JSON object alike. A YAML scalar remembers whether it was plain or
 * quoted, because a field's kind decides what a plain scalar means: `7` is an
 * integer where an integer belongs and the string "7" where a string belongs,
 * while `"7"` is always a string. A JSON scalar remembers its JSON type instead.
 *
 * The tree costs one allocation per node plus the text of each scalar; a policy
 * is a few dozen nodes. Nesting is capped (POLICY_MAX_DEPTH) so that the
 * recursive walk and free stay shallow whatever the input.
 */
#ifndef LODE_POLICY_INT_H
#define LODE_POLICY_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/policy.h"
#include "util/util.h"

/* A real policy nests four levels; anything past this is rejected (YAML) or ignored. */
#define POLICY_MAX_DEPTH 64
/* A policy is a few hundred bytes; Kubernetes stores objects up to about 1.5 MiB. */
#define POLICY_MAX_YAML_BYTES (1024 * 1024)

enum policy_node_kind {
    POLICY_NODE_MAP,
    POLICY_NODE_LIST,
    POLICY_NODE_SCALAR,
    POLICY_NODE_BAD /* an alias or a node already reported: present, but never checked */
};

enum policy_scalar_style {
    POLICY_SCALAR_PLAIN,  /* YAML plain scalar: typed by the field it fills */
    POLICY_SCALAR_QUOTED, /* YAML quoted or block scalar, or a JSON string: always a string */
    POLICY_SCALAR_INT,    /* JSON integer */
    POLICY_SCALAR_REAL,   /* JSON real */
    POLICY_SCALAR_BOOL,   /* JSON true or false */
    POLICY_SCALAR_NULL    /* JSON null */
};

struct policy_node;

struct policy_pair {
    struct policy_node *key;   /* a scalar; a map or list here is a complex key (rejected) */
    struct policy_node *value; /* NULL when a syntax error cut the document before it */
};

struct policy_node {
    enum policy_node_kind kind;
    enum policy_scalar_style style;
    int line;    /* 1-based; 0 in the JSON form */
    int column;  /* 1-based, in characters */
    bool closed; /* maps and lists: the end was read (a syntax error did not cut it) */
    char *text;  /* scalars: the value, NUL-terminated, may hold NULs before len */
    size_t len;
    struct policy_pair *pairs; /* maps */
    size_t npairs, pairs_cap;
    struct policy_node **items; /* lists */
    size_t nitems, items_cap;
};

struct policy_node *policy_node_new(enum policy_node_kind kind, int line, int column);
void policy_node_set_text(struct policy_node *n, const char *text, size_t len);
/* Appends a pair with the key and no value yet; returns it. */
struct policy_pair *policy_node_add_pair(struct policy_node *map, struct policy_node *key);
void policy_node_add_item(struct policy_node *list, struct policy_node *item);
void policy_node_free(struct policy_node *n);

/* Sorts the errors by line and column, keeping the order of those at one position. */
void policy_diags_sort(struct policy_diags *d);

/*
 * YAML to a tree. Returns the root (NULL when the file has no document or an
 * error stopped it before the root). Structural errors (syntax, anchors,
 * aliases, tags, a second document, depth) go to diags. After a syntax error the
 * tree holds what came before it, and the maps and lists the error cut short are
 * not marked closed, so that the walk does not call missing what the file never
 * got to say.
 */
struct policy_node *policy_yaml_tree(const char *data, size_t len, struct policy_diags *diags);

/* A jansson value to a tree (line and column 0). */
struct policy_node *policy_json_tree(const json_t *v);

/* Walks the tree against the schema, filling out (zeroed by the caller) and diags. */
void policy_walk(struct policy *out, const struct policy_node *root, bool json,
                 const struct tz_db *db, struct policy_diags *diags);

/* ---- paths and quoting for messages ---- */

/* Appends ".key" (or "key" at the start), or "[key]" when the key is not a simple word. */
void policy_path_key(struct util_buf *path, const char *key, size_t len);
/*
 * Appends text with '"', '\\', control characters and invalid UTF-8 escaped, cut
 * after max_chars characters ("..." then follows), so it is safe in JSON output.
 */
void policy_escape(struct util_buf *b, const char *text, size_t len, size_t max_chars);
/* The same between double quotes, cut after 60 characters. */
void policy_quote(struct util_buf *b, const char *text, size_t len);

/* ---- names and values (names.c) ---- */

int policy_check_dns_label(const char *s, size_t len, struct util_err *err);
int policy_check_dns_subdomain(const char *s, size_t len, struct util_err *err);
int policy_check_qualified_name(const char *s, size_t len, struct util_err *err);
int policy_check_label_value(const char *s, size_t len, struct util_err *err);
int policy_check_path(const char *s, size_t len, struct util_err *err);

/*
 * The name among candidates (a NULL-terminated list) nearest to s: edit distance
 * at most 2, or equal ignoring case. NULL when none is near.
 */
const char *policy_suggest(const char *s, const char *const *candidates);

#endif
