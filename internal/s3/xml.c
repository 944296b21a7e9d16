/*
 * The XML replies, through expat. S3 replies never carry a DOCTYPE, so any is refused
 * (no entity can be declared, expanded or fetched); depth, field length and entries
 * a page are bounded, so a hostile reply costs at most one page's worth of memory.
 */
#include "s3/xml_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>

#define XML_MAX_ITEMS (S3_LIST_PAGE + 1) /* a page asks for 1,000; one spare is tolerated */

void s3__xml_fail(struct xml_base *b, const char *fmt, ...)
{
    va_list ap;
    if (b->error == 0) {
        b->error = S3_EPROTO;
        va_start(ap, fmt);
        vsnprintf(b->msg, sizeof(b->msg), fmt, ap);
        va_end(ap);
    }
    XML_StopParser(b->parser, XML_FALSE);
}

static void on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
                       int has_internal)
{
    s3__xml_fail(ud, "the reply declares a DOCTYPE (%s), which S3 never sends", name);
}

static void on_entity_decl(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
                           int value_len, const XML_Char *base, const XML_Char *sysid,
                           const XML_Char *pubid, const XML_Char *notation)
{
    s3__xml_fail(ud, "the reply declares an entity (%s)", name);
}

static void on_text(void *ud, const XML_Char *s, int len)
{
    struct xml_base *b = ud;
    if (!b->capture)
        return;
    if (b->text.len + (size_t)len > XML_MAX_TEXT) {
        s3__xml_fail(b, "an element of the reply is longer than %s bytes", "4096");
        return;
    }
    util_buf_append(&b->text, s, (size_t)len);
}

/* Enters an element; returns false when the depth bound is hit. */
bool s3__xml_enter(struct xml_base *b, const char *name)
{
    if (b->depth >= XML_MAX_DEPTH) {
        s3__xml_fail(b, "the reply nests deeper than %s levels", "8");
        return false;
    }
    snprintf(b->names[b->depth], sizeof(b->names[0]), "%s", name);
    b->depth++;
    b->text.len = 0;
    if (b->text.data != NULL)
        b->text.data[0] = '\0';
    b->capture = true;
    return true;
}

const char *s3__xml_text(struct xml_base *b)
{
    if (b->text.data == NULL)
        util_buf_append(&b->text, "", 0);
    return b->text.data != NULL ? b->text.data : "";
}

void s3__xml_init(struct xml_base *b, void *ud, XML_StartElementHandler start,
                  XML_EndElementHandler end)
{
    memset(b, 0, sizeof(*b));
    b->parser = XML_ParserCreate("UTF-8");
    if (b->parser == NULL) {
        fprintf(stderr, "lodestore: out of memory creating an XML parser\n");
        abort();
    }
    util_buf_init(&b->text);
    XML_SetUserData(b->parser, ud);
    XML_SetElementHandler(b->parser, start, end);
    XML_SetCharacterDataHandler(b->parser, on_text);
    XML_SetStartDoctypeDeclHandler(b->parser, on_doctype);
    XML_SetEntityDeclHandler(b->parser, on_entity_decl);
}

void s3__xml_free(struct xml_base *b)
{
    if (b->parser != NULL)
        XML_ParserFree(b->parser);
    b->parser = NULL;
    util_buf_free(&b->text);
}

/* Feeds bytes; final marks the end of the document. */
int s3__xml_feed(struct xml_base *b, const char *data, size_t len, bool final, struct util_err *err)
{
    if (b->error == 0) {
        while (len > 0 || final) {
            int chunk = len > (1u << 30) ? (1 << 30) : (int)len;
            bool last = final && (size_t)chunk == len;
            if (XML_Parse(b->parser, data, chunk, last) != XML_STATUS_OK) {
                if (b->error == 0) {
                    b->error = S3_EPROTO;
                    snprintf(b->msg, sizeof(b->msg),
                             "the reply is not well-formed XML: %s at line %lu",
                             XML_ErrorString(XML_GetErrorCode(b->parser)),
                             (unsigned long)XML_GetCurrentLineNumber(b->parser));
                }
                break;
            }
            data += chunk;
            len -= (size_t)chunk;
            if (last)
                break;
        }
    }
    if (b->error != 0)
        return util_err_set(err, b->error, "%s", b->msg);
    return 0;
}

/* Strips the quotes of an ETag into a bounded buffer. */
void s3__etag_copy(char *out, size_t size, const char *s)
{
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        s++;
        n -= 2;
    }
    if (n >= size)
        n = size - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

/* "2026-12-02T17:01:27Z" or "2026-12-02T17:01:27.123Z": seconds and nanoseconds. */
int s3__xml_time(const char *s, int64_t *sec, uint32_t *nsec)
{
    struct util_err e;
    const char *dot = strchr(s, '.');
    *nsec = 0;
    if (util_parse_rfc3339(s, sec, &e) != 0)
        return -1;
    if (dot != NULL) {
        uint32_t scale = 100000000;
        for (const char *p = dot + 1; *p >= '0' && *p <= '9'; p++) {
            *nsec += (uint32_t)(*p - '0') * scale;
            scale /= 10;
        }
    }
    return 0;
}

/* ---- ListBucketResult ---- */

struct s3_list_parser {
    struct xml_base b;
    struct s3_list_page page;
    struct s3_object cur; /* the Contents being read; strings owned until pushed */
    bool in_item, cur_has_key, saw_root;
};

static void list_item_reset(struct s3_list_parser *p)
{
    free((char *)p->cur.key);
    free((char *)p->cur.etag);
    memset(&p->cur, 0, sizeof(p->cur));
    p->cur_has_key = false;
}

static void page_clear(struct s3_list_page *pg)
{
    for (size_t i = 0; i < pg->n; i++) {
        free((char *)pg->objects[i].key);
        free((char *)pg->objects[i].etag);
    }
    free(pg->objects);
    free(pg->next_token);
    memset(pg, 0, sizeof(*pg));
}

static void list_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    struct s3_list_parser *p = ud;
    if (!s3__xml_enter(&p->b, name))
        return;
    if (p->b.depth == 1) {
        if (strcmp(name, "ListBucketResult") != 0)
            s3__xml_fail(&p->b, "the reply is <%s>, not a ListBucketResult", name);
        p->saw_root = true;
    } else if (p->b.depth == 2 &&
               (strcmp(name, "Contents") == 0 || strcmp(name, "CommonPrefixes") == 0)) {
        if (p->page.n >= XML_MAX_ITEMS) {
            s3__xml_fail(&p->b, "the page holds more keys than the %s asked for", "1,000");
            return;
        }
        list_item_reset(p);
        p->in_item = true;
        p->cur.is_prefix = name[0] == 'C' && name[1] == 'o' && name[2] == 'm';
        p->cur.mtime = -1;
    }
}

static int parse_u64_field(const char *s, uint64_t *out)
{
    return util_parse_u64(s, strlen(s), UINT64_MAX, out);
}

static void list_end(void *ud, const XML_Char *name)
{
    struct s3_list_parser *p = ud;
    struct xml_base *b = &p->b;
    const char *t = s3__xml_text(b);
    if (b->error != 0)
        return;
    if (b->depth == 3 && p->in_item) {
        if (strcmp(name, "Key") == 0 || strcmp(name, "Prefix") == 0) {
            if (strlen(t) != b->text.len || b->text.len == 0 || b->text.len > S3_MAX_KEY) {
                s3__xml_fail(b, "a listed key is empty, too long or holds a NUL%s", "");
                return;
            }
            free((char *)p->cur.key);
            p->cur.key = util_strdup(t);
            p->cur_has_key = true;
        } else if (strcmp(name, "Size") == 0) {
            if (parse_u64_field(t, &p->cur.size) != 0)
                s3__xml_fail(b, "a listed size is not a number: \"%.40s\"", t);
        } else if (strcmp(name, "LastModified") == 0) {
            if (s3__xml_time(t, &p->cur.mtime, &p->cur.mtime_ns) != 0)
                s3__xml_fail(b, "a LastModified is not an RFC 3339 time: \"%.40s\"", t);
        } else if (strcmp(name, "ETag") == 0) {
            char tag[S3_ETAG_MAX];
            s3__etag_copy(tag, sizeof(tag), t);
            free((char *)p->cur.etag);
            p->cur.etag = util_strdup(tag);
        }
    } else if (b->depth == 2 && p->in_item) {
        p->in_item = false;
        if (!p->cur_has_key) {
            s3__xml_fail(b, "a <%s> of the listing has no key", name);
            return;
        }
        if (!p->cur.is_prefix && p->cur.mtime < 0) {
            s3__xml_fail(b, "the listed key \"%.200s\" has no LastModified", p->cur.key);
            return;
        }
        if (p->cur.etag == NULL)
            p->cur.etag = util_strdup("");
        p->page.objects =
            util_grow(p->page.objects, &p->page.cap, p->page.n + 1, sizeof(*p->page.objects));
        p->page.objects[p->page.n++] = p->cur;
        memset(&p->cur, 0, sizeof(p->cur));
        p->cur_has_key = false;
    } else if (b->depth == 2) {
        if (strcmp(name, "IsTruncated") == 0) {
            if (strcmp(t, "true") == 0)
                p->page.truncated = true;
            else if (strcmp(t, "false") == 0)
                p->page.truncated = false;
            else
                s3__xml_fail(b, "IsTruncated is \"%.20s\", not true or false", t);
        } else if (strcmp(name, "NextContinuationToken") == 0) {
            free(p->page.next_token);
            p->page.next_token = util_strdup(t);
        } else if (strcmp(name, "KeyCount") == 0) {
            uint64_t v;
            if (parse_u64_field(t, &v) != 0 || v > 100000)
                s3__xml_fail(b, "KeyCount is not a count: \"%.20s\"", t);
            p->page.key_count = (unsigned)v;
            p->page.has_key_count = true;
        }
    }
    b->depth--;
    b->capture = false;
}

struct s3_list_parser *s3_list_parser_new(void)
{
    struct s3_list_parser *p = util_calloc(1, sizeof(*p));
    s3__xml_init(&p->b, p, list_start, list_end);
    return p;
}

int s3_list_parser_feed(struct s3_list_parser *p, const char *data, size_t len,
                        struct util_err *err)
{
    return s3__xml_feed(&p->b, data, len, false, err);
}

int s3_list_parser_finish(struct s3_list_parser *p, const struct s3_list_page **page,
                          struct util_err *err)
{
    int rc = s3__xml_feed(&p->b, "", 0, true, err);
    if (rc != 0)
        return rc;
    if (!p->saw_root)
        return util_err_set(err, S3_EPROTO, "the listing reply is empty");
    if (p->page.truncated && (p->page.next_token == NULL || p->page.next_token[0] == '\0'))
        return util_err_set(err, S3_EPROTO,
                            "the listing says it is truncated but gives no continuation token");
    if (p->page.has_key_count && p->page.key_count != p->page.n)
        return util_err_set(
            err, S3_EPROTO,
            "the listing page says KeyCount %u but holds %zu keys: it was cut short",
            p->page.key_count, p->page.n);
    *page = &p->page;
    return 0;
}

void s3_list_parser_free(struct s3_list_parser *p)
{
    if (p == NULL)
        return;
    list_item_reset(p);
    page_clear(&p->page);
    s3__xml_free(&p->b);
    free(p);
}

/* ---- DeleteResult ---- */

struct delete_parser {
    struct xml_base b;
    s3_delete_entry_cb cb;
    void *arg;
    char *key, *code, *message;
    bool in_entry, deleted, saw_root;
    int stop;
};

static void delete_entry_reset(struct delete_parser *p)
{
    free(p->key);
    free(p->code);
    free(p->message);
    p->key = p->code = p->message = NULL;
}

static void delete_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    struct delete_parser *p = ud;
    if (!s3__xml_enter(&p->b, name))
        return;
    if (p->b.depth == 1) {
        if (strcmp(name, "DeleteResult") != 0)
            s3__xml_fail(&p->b, "the reply is <%s>, not a DeleteResult", name);
        p->saw_root = true;
    } else if (p->b.depth == 2) {
        delete_entry_reset(p);
        p->in_entry = strcmp(name, "Deleted") == 0 || strcmp(name, "Error") == 0;
        p->deleted = strcmp(name, "Deleted") == 0;
    }
}

static void delete_end(void *ud, const XML_Char *name)
{
    struct delete_parser *p = ud;
    struct xml_base *b = &p->b;
    const char *t = s3__xml_text(b);
    if (b->error != 0)
        return;
    if (b->depth == 3 && p->in_entry) {
        char **slot = strcmp(name, "Key") == 0       ? &p->key
                      : strcmp(name, "Code") == 0    ? &p->code
                      : strcmp(name, "Message") == 0 ? &p->message
                                                     : NULL;
        if (slot != NULL) {
            if (strlen(t) != b->text.len) {
                s3__xml_fail(b, "a DeleteResult field holds a NUL%s", "");
                return;
            }
            free(*slot);
            *slot = util_strdup(t);
        }
    } else if (b->depth == 2 && p->in_entry) {
        struct s3_delete_entry e = {.key = p->key,
                                    .deleted = p->deleted,
                                    .code = p->code != NULL ? p->code : "",
                                    .message = p->message != NULL ? p->message : ""};
        p->in_entry = false;
        if (p->key == NULL || p->key[0] == '\0') {
            s3__xml_fail(b, "a <%s> of the DeleteResult names no key", name);
            return;
        }
        if (!p->deleted && e.code[0] == '\0') {
            s3__xml_fail(b, "an <Error> of the DeleteResult has no Code%s", "");
            return;
        }
        int rc = p->cb(&e, p->arg);
        if (rc != 0) {
            p->stop = rc;
            XML_StopParser(b->parser, XML_FALSE);
        }
        delete_entry_reset(p);
    }
    b->depth--;
    b->capture = false;
}

int s3_delete_result_parse(const char *data, size_t len, s3_delete_entry_cb cb, void *arg,
                           struct util_err *err)
{
    struct delete_parser p;
    int rc;
    memset(&p, 0, sizeof(p));
    s3__xml_init(&p.b, &p, delete_start, delete_end);
    p.cb = cb;
    p.arg = arg;
    rc = s3__xml_feed(&p.b, data, len, true, err);
    if (p.stop != 0)
        rc = p.stop;
    else if (rc == 0 && !p.saw_root)
        rc = util_err_set(err, S3_EPROTO, "the DeleteObjects reply is empty");
    delete_entry_reset(&p);
    s3__xml_free(&p.b);
    return rc;
}

/* ---- Error ---- */

struct error_parser {
    struct xml_base b;
    char *code, *message;
    size_t code_size, message_size;
};

static void error_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    struct error_parser *p = ud;
    if (!s3__xml_enter(&p->b, name))
        return;
    if (p->b.depth == 1 && strcmp(name, "Error") != 0)
        s3__xml_fail(&p->b, "the reply is <%s>, not an Error", name);
}

static void error_end(void *ud, const XML_Char *name)
{
    struct error_parser *p = ud;
    struct xml_base *b = &p->b;
    const char *t = s3__xml_text(b);
    if (b->error != 0)
        return;
    if (b->depth == 2) {
        if (strcmp(name, "Code") == 0)
            snprintf(p->code, p->code_size, "%s", t);
        else if (strcmp(name, "Message") == 0)
            snprintf(p->message, p->message_size, "%s", t);
    }
    b->depth--;
    b->capture = false;
}

int s3_error_parse(const char *data, size_t len, char *code, size_t code_size, char *message,
                   size_t message_size)
{
    struct error_parser p;
    int rc;
    memset(&p, 0, sizeof(p));
    code[0] = message[0] = '\0';
    p.code = code;
    p.message = message;
    p.code_size = code_size;
    p.message_size = message_size;
    s3__xml_init(&p.b, &p, error_start, error_end);
    rc = s3__xml_feed(&p.b, data, len, true, NULL);
    s3__xml_free(&p.b);
    /* Printable only: the code goes into messages and metrics. */
    for (char *s = code; *s; s++)
        if (*s < ' ' || *s > '~')
            *s = '?';
    for (char *s = message; *s; s++)
        if ((unsigned char)*s < ' ')
            *s = ' ';
    return rc;
}

/* ---- the DeleteObjects request ---- */

/* Whether s is a key XML 1.0 can carry (no control characters but tab, LF, CR). */
bool s3__xml_can_carry(const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
            return false;
    }
    return true;
}

void s3__xml_escape(struct util_buf *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            util_buf_puts(out, "&amp;");
            break;
        case '<':
            util_buf_puts(out, "&lt;");
            break;
        case '>':
            util_buf_puts(out, "&gt;");
            break;
        case '"':
            util_buf_puts(out, "&quot;");
            break;
        case '\'':
            util_buf_puts(out, "&apos;");
            break;
        case '\r':
            util_buf_puts(out, "&#13;");
            break;
        case '\n':
            util_buf_puts(out, "&#10;");
            break;
        case '\t':
            util_buf_puts(out, "&#9;");
            break;
        default:
            util_buf_append(out, s, 1);
        }
    }
}

int s3_delete_request_xml(struct util_buf *out, const char *const *keys, size_t n, bool quiet,
                          struct util_err *err)
{
    util_buf_puts(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    util_buf_puts(out, quiet ? "<Quiet>true</Quiet>" : "<Quiet>false</Quiet>");
    for (size_t i = 0; i < n; i++) {
        if (!s3__xml_can_carry(keys[i]))
            return util_err_set(err, UTIL_EINVAL,
                                "the key \"%.200s\" holds a control character that "
                                "DeleteObjects cannot carry",
                                keys[i]);
        util_buf_puts(out, "<Object><Key>");
        s3__xml_escape(out, keys[i]);
        util_buf_puts(out, "</Key></Object>");
    }
    util_buf_puts(out, "</Delete>");
    return 0;
}
