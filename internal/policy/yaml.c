/*
 * YAML to the node tree, from libyaml's events.
 *
 * The event API is used rather than libyaml's document loader because the loader
 * turns an alias into a second reference to the anchored node, so the alias can
 * no longer be reported where it was written, and because its tree would only be
 * copied again into ours. Each node keeps the start mark of its event. What YAML
 * allows and a policy does not (anchors, aliases, tags, a second document, %TAG
 * directives) is reported here, with its position; what depends on the schema
 * is left to the walk.
 *
 * libyaml stops at the first syntax error. The tree built until then is kept, so
 * the errors before that point are reported too. A value that starts with '*'
 * or '@' is a syntax error (an alias, a reserved character) that people meet
 * with crons whose first field is a star, or with @daily; the raw line at the
 * error tells us so, and the message shows the quoted form.
 */
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "policy_int.h"
#include "util/map.h"

struct yaml_builder {
    const char *data;
    size_t len;
    struct policy_diags *diags;
    struct policy_node *root;
    struct policy_node *stack[POLICY_MAX_DEPTH + 1]; /* the maps and lists still open */
    int depth;
    int hint_line; /* the line of a quoting hint already given, 0 when none */
    /* Anchors defined so far: an alias of one of them is a real alias, any other
     * '*' value is a typo for a quoted string (a cron, most likely). A map, so a file
     * of many anchors and aliases costs one lookup per alias. */
    struct util_map anchors;
    /*
     * Where each line starts, built on the first look at a line, and the last column
     * looked up: every alias looks at its own line, so without these a file of many
     * aliases on one long line was read again from its start for each one (40,000
     * aliases in 360 KB took 8.8 s); with them a whole file is read about twice.
     */
    size_t *line_starts;
    size_t nlines;
    size_t col_line, col_column, col_off; /* the last yaml_column_offset answer */
    bool has_col;
};

static int yaml_line(const yaml_mark_t *m)
{
    return m->line >= (size_t)INT32_MAX ? INT32_MAX : (int)m->line + 1;
}

static int yaml_column(const yaml_mark_t *m)
{
    return m->column >= (size_t)INT32_MAX ? INT32_MAX : (int)m->column + 1;
}

/*
 * The path of the value being read: the keys of the open maps and the indexes of
 * the open lists, ending with the key whose value comes next. "" outside any value.
 */
static char *yaml_builder_path(const struct yaml_builder *b)
{
    struct util_buf path;

    util_buf_init(&path);
    util_buf_puts(&path, "");
    for (int i = 0; i < b->depth; i++) {
        const struct policy_node *n = b->stack[i];
        if (n->kind == POLICY_NODE_LIST) {
            /* The child frame, if any, is the last item. */
            if (i + 1 < b->depth)
                util_buf_printf(&path, "[%zu]", n->nitems - 1);
            continue;
        }
        if (n->npairs == 0)
            break;
        const struct policy_pair *p = &n->pairs[n->npairs - 1];
        bool awaiting = p->value == NULL;
        bool child = i + 1 < b->depth && p->value == b->stack[i + 1];
        if (!awaiting && !child)
            break;
        if (p->key->kind != POLICY_NODE_SCALAR)
            break;
        policy_path_key(&path, p->key->text, p->key->len);
    }
    return util_buf_steal(&path);
}

/* Attaches a new node where the document is: the root, a list item, a key or a value. */
static void yaml_attach(struct yaml_builder *b, struct policy_node *n)
{
    struct policy_node *top;

    if (b->depth == 0) {
        if (b->root == NULL)
            b->root = n;
        else
            policy_node_free(n); /* cannot happen in one document; never leak */
        return;
    }
    top = b->stack[b->depth - 1];
    if (top->kind == POLICY_NODE_LIST) {
        policy_node_add_item(top, n);
        return;
    }
    if (top->npairs > 0 && top->pairs[top->npairs - 1].value == NULL)
        top->pairs[top->npairs - 1].value = n;
    else
        policy_node_add_pair(top, n);
}

/* Fills line_starts: the offset after each line break (a lone \r, \n or \r\n), once. */
static void yaml_index_lines(struct yaml_builder *b)
{
    size_t cap = 0;

    b->line_starts = util_grow(NULL, &cap, 16, sizeof(*b->line_starts));
    b->line_starts[b->nlines++] = 0;
    for (size_t i = 0; i < b->len; i++) {
        if (b->data[i] == '\r' && i + 1 < b->len && b->data[i + 1] == '\n')
            i++;
        else if (b->data[i] != '\n' && b->data[i] != '\r')
            continue;
        b->line_starts = util_grow(b->line_starts, &cap, b->nlines + 1, sizeof(*b->line_starts));
        b->line_starts[b->nlines++] = i + 1;
    }
}

/* The bytes of line `line` (0-based) of the source, without its line break. */
static bool yaml_source_line(struct yaml_builder *b, size_t line, const char **start, size_t *len)
{
    size_t from, to;

    if (b->line_starts == NULL)
        yaml_index_lines(b);
    if (line >= b->nlines)
        return false;
    from = b->line_starts[line];
    to = line + 1 < b->nlines ? b->line_starts[line + 1] : b->len;
    /* Less the line break: \n, \r or \r\n. */
    if (to > from && b->data[to - 1] == '\n')
        to--;
    if (to > from && b->data[to - 1] == '\r')
        to--;
    *start = b->data + from;
    *len = to - from;
    return true;
}

/*
 * The byte offset of character column `column` (0-based) in line `line`, whose bytes
 * are s and len, in UTF-8. A later column of the same line starts from the last answer.
 */
static bool yaml_column_offset(struct yaml_builder *b, size_t line, const char *s, size_t len,
                               size_t column, size_t *off)
{
    size_t i = 0, c = 0;

    if (b->has_col && b->col_line == line && b->col_column <= column) {
        i = b->col_off;
        c = b->col_column;
    }
    while (i < len && c < column) {
        i++;
        while (i < len && ((unsigned char)s[i] & 0xc0) == 0x80)
            i++;
        c++;
    }
    if (c != column || i >= len)
        return false;
    b->has_col = true;
    b->col_line = line;
    b->col_column = column;
    b->col_off = i;
    *off = i;
    return true;
}

static bool yaml_key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '/';
}

/*
 * When the value at (line, column) starts with '*' or '@' right after `key:`,
 * reports that it must be quoted, showing the quoted form, and returns true.
 */
static bool yaml_quote_hint(struct yaml_builder *b, const yaml_mark_t *mark)
{
    const char *s, *value, *key_end;
    size_t len, off, vlen, klen, kstart;
    struct util_buf msg;
    char *path;
    bool flow;

    if (!yaml_source_line(b, mark->line, &s, &len) ||
        !yaml_column_offset(b, mark->line, s, len, mark->column, &off))
        return false;
    if (s[off] != '*' && s[off] != '@')
        return false;
    /* Before the value: optional blanks, then "key:" (the key may be quoted). */
    klen = off;
    while (klen > 0 && (s[klen - 1] == ' ' || s[klen - 1] == '\t'))
        klen--;
    if (klen == 0 || s[klen - 1] != ':')
        return false;
    key_end = s + klen - 1;
    kstart = klen - 1;
    if (kstart > 0 && (s[kstart - 1] == '"' || s[kstart - 1] == '\'')) {
        char q = s[kstart - 1];
        kstart--;
        while (kstart > 0 && s[kstart - 1] != q)
            kstart--;
        if (kstart == 0)
            return false;
        kstart--;
    } else {
        while (kstart > 0 && yaml_key_char(s[kstart - 1]))
            kstart--;
        if (kstart == klen - 1)
            return false;
    }
    flow = memchr(s, '{', kstart) != NULL;
    /* The value runs to a comment, or in a flow map to the '}' or the next "key:". */
    value = s + off;
    vlen = len - off;
    for (size_t i = 1; i < vlen; i++) {
        if (value[i] == '#' && (value[i - 1] == ' ' || value[i - 1] == '\t')) {
            vlen = i;
            break;
        }
        if (flow && value[i] == '}') {
            vlen = i;
            break;
        }
        if (flow && value[i] == ',') {
            size_t j = i + 1;
            while (j < vlen && value[j] == ' ')
                j++;
            size_t k = j;
            while (k < vlen && yaml_key_char(value[k]))
                k++;
            if (k > j && k < vlen && value[k] == ':') {
                vlen = i;
                break;
            }
        }
    }
    while (vlen > 0 && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
        vlen--;

    util_buf_init(&msg);
    klen = (size_t)(key_end - (s + kstart));
    bool is_cron = klen == 4 && memcmp(s + kstart, "cron", 4) == 0;
    util_buf_printf(
        &msg, "a %s that starts with \"%c\" must be quoted: ", is_cron ? "cron" : "value", s[off]);
    policy_escape(&msg, s + kstart, klen, 60);
    util_buf_puts(&msg, ": ");
    policy_quote(&msg, value, vlen);
    path = yaml_builder_path(b);
    policy_diags_add(b->diags, yaml_line(mark), yaml_column(mark), path, "%s", msg.data);
    free(path);
    util_buf_free(&msg);
    b->hint_line = yaml_line(mark);
    return true;
}

/* libyaml's reader reports a byte offset only; turn it into a line and column. */
static void yaml_offset_position(const struct yaml_builder *b, size_t offset, int *line,
                                 int *column)
{
    int l = 1, c = 1;
    for (size_t i = 0; i < offset && i < b->len; i++) {
        unsigned char ch = (unsigned char)b->data[i];
        if (ch == '\n' || (ch == '\r' && !(i + 1 < b->len && b->data[i + 1] == '\n'))) {
            l++;
            c = 1;
        } else if ((ch & 0xc0) != 0x80 && ch != '\r') {
            c++;
        }
    }
    *line = l;
    *column = c;
}

static void yaml_syntax_error(struct yaml_builder *b, const yaml_parser_t *p)
{
    char *path;

    if (p->error == YAML_READER_ERROR) {
        int line, column;
        yaml_offset_position(b, p->problem_offset, &line, &column);
        if (p->problem_value >= 0 && p->problem_value < 0x20)
            policy_diags_add(b->diags, line, column, "", "%s (character 0x%02x)",
                             p->problem ? p->problem : "cannot read the file", p->problem_value);
        else
            policy_diags_add(b->diags, line, column, "", "the file is not valid UTF-8: %s",
                             p->problem ? p->problem : "cannot decode it");
        return;
    }
    if (p->error == YAML_MEMORY_ERROR) {
        policy_diags_add(b->diags, 1, 1, "", "out of memory while reading the file");
        return;
    }
    /* The problem or its context may sit on a '*' or '@' that needed quotes. */
    if (p->context != NULL && yaml_line(&p->context_mark) != b->hint_line &&
        yaml_quote_hint(b, &p->context_mark))
        return;
    if (yaml_line(&p->problem_mark) == b->hint_line)
        return; /* the same line already has its hint: this is its echo */
    if (yaml_quote_hint(b, &p->problem_mark))
        return;
    path = yaml_builder_path(b);
    if (p->context != NULL)
        policy_diags_add(b->diags, yaml_line(&p->problem_mark), yaml_column(&p->problem_mark), path,
                         "YAML syntax error: %s (%s at line %d, column %d)",
                         p->problem ? p->problem : "invalid YAML", p->context,
                         yaml_line(&p->context_mark), yaml_column(&p->context_mark));
    else
        policy_diags_add(b->diags, yaml_line(&p->problem_mark), yaml_column(&p->problem_mark), path,
                         "YAML syntax error: %s", p->problem ? p->problem : "invalid YAML");
    free(path);
}

/* Reports an anchor or a tag on a node; the node itself is kept. */
static void yaml_check_properties(struct yaml_builder *b, const yaml_event_t *e,
                                  const yaml_char_t *anchor, const yaml_char_t *tag)
{
    char *path;
    struct util_buf msg;

    if (anchor == NULL && tag == NULL)
        return;
    if (anchor != NULL)
        util_map_set(&b->anchors, (const char *)anchor, b); /* any non-NULL value: "known" */
    util_buf_init(&msg);
    path = yaml_builder_path(b);
    if (anchor != NULL) {
        util_buf_puts(&msg, "anchors are not allowed (&");
        policy_escape(&msg, (const char *)anchor, strlen((const char *)anchor), 60);
        util_buf_puts(&msg, "): write the value out in full");
        policy_diags_add(b->diags, yaml_line(&e->start_mark), yaml_column(&e->start_mark), path,
                         "%s", msg.data);
        msg.len = 0;
    }
    if (tag != NULL) {
        const char *t = (const char *)tag;
        util_buf_puts(&msg, "tags are not allowed (");
        if (strncmp(t, "tag:yaml.org,2002:", 18) == 0) {
            util_buf_puts(&msg, "!!");
            policy_escape(&msg, t + 18, strlen(t + 18), 60);
        } else {
            policy_escape(&msg, t, strlen(t), 60);
        }
        util_buf_puts(&msg, "): the field decides the type of its value");
        policy_diags_add(b->diags, yaml_line(&e->start_mark), yaml_column(&e->start_mark), path,
                         "%s", msg.data);
    }
    free(path);
    util_buf_free(&msg);
}

/* Handles one event; returns false when reading must stop. */
static bool yaml_builder_event(struct yaml_builder *b, const yaml_event_t *e, int *documents)
{
    struct policy_node *n;
    int line = yaml_line(&e->start_mark), column = yaml_column(&e->start_mark);

    switch (e->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (*documents > 0) {
            policy_diags_add(b->diags, line, column, "",
                             "a file holds one BackupPolicy: remove the second document "
                             "(from this \"---\" on) or put it in a file of its own");
            return false;
        }
        if (e->data.document_start.tag_directives.start !=
            e->data.document_start.tag_directives.end)
            policy_diags_add(b->diags, line, column, "",
                             "%%TAG directives are not allowed: a policy uses no tags");
        return true;
    case YAML_DOCUMENT_END_EVENT:
        (*documents)++;
        return true;
    case YAML_ALIAS_EVENT: {
        char *path;
        struct util_buf msg;
        bool known = util_map_get(&b->anchors, (const char *)e->data.alias.anchor) != NULL;
        if (!known && yaml_quote_hint(b, &e->start_mark)) {
            yaml_attach(b, policy_node_new(POLICY_NODE_BAD, line, column));
            return true;
        }
        util_buf_init(&msg);
        util_buf_puts(&msg, "aliases are not allowed (*");
        policy_escape(&msg, (const char *)e->data.alias.anchor,
                      strlen((const char *)e->data.alias.anchor), 60);
        util_buf_puts(&msg, "): write the value out in full");
        path = yaml_builder_path(b);
        policy_diags_add(b->diags, line, column, path, "%s", msg.data);
        free(path);
        util_buf_free(&msg);
        yaml_attach(b, policy_node_new(POLICY_NODE_BAD, line, column));
        return true;
    }
    case YAML_SCALAR_EVENT:
        yaml_check_properties(b, e, e->data.scalar.anchor, e->data.scalar.tag);
        n = policy_node_new(POLICY_NODE_SCALAR, line, column);
        n->style = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? POLICY_SCALAR_PLAIN
                                                                   : POLICY_SCALAR_QUOTED;
        policy_node_set_text(n, (const char *)e->data.scalar.value, e->data.scalar.length);
        yaml_attach(b, n);
        return true;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (e->type == YAML_SEQUENCE_START_EVENT)
            yaml_check_properties(b, e, e->data.sequence_start.anchor, e->data.sequence_start.tag);
        else
            yaml_check_properties(b, e, e->data.mapping_start.anchor, e->data.mapping_start.tag);
        if (b->depth == POLICY_MAX_DEPTH) {
            char *path = yaml_builder_path(b);
            policy_diags_add(b->diags, line, column, path,
                             "the document nests more than %d levels deep", POLICY_MAX_DEPTH);
            free(path);
            return false;
        }
        n = policy_node_new(e->type == YAML_SEQUENCE_START_EVENT ? POLICY_NODE_LIST
                                                                 : POLICY_NODE_MAP,
                            line, column);
        yaml_attach(b, n);
        b->stack[b->depth++] = n;
        return true;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (b->depth > 0)
            b->stack[--b->depth]->closed = true;
        return true;
    case YAML_STREAM_START_EVENT:
    case YAML_STREAM_END_EVENT:
    case YAML_NO_EVENT:
    default:
        return true;
    }
}

struct policy_node *policy_yaml_tree(const char *data, size_t len, struct policy_diags *diags)
{
    struct yaml_builder b;
    yaml_parser_t parser;
    int documents = 0;

    memset(&b, 0, sizeof(b));
    b.data = data;
    b.len = len;
    b.diags = diags;
    util_map_init(&b.anchors);
    if (!yaml_parser_initialize(&parser)) {
        policy_diags_add(diags, 1, 1, "", "out of memory while reading the file");
        util_map_close(&b.anchors);
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    for (;;) {
        yaml_event_t e;
        bool go_on, end;
        if (!yaml_parser_parse(&parser, &e)) {
            yaml_syntax_error(&b, &parser);
            break;
        }
        end = e.type == YAML_STREAM_END_EVENT;
        go_on = yaml_builder_event(&b, &e, &documents);
        yaml_event_delete(&e);
        if (end || !go_on)
            break;
    }
    yaml_parser_delete(&parser);
    util_map_close(&b.anchors);
    free(b.line_starts);
    return b.root;
}
