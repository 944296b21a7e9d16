/*
 * Addressing: API paths and query strings, with every piece percent-encoded. A label
 * selector such as "tier in (a,b),!canary" must reach the server intact, so everything
 * outside RFC 3986's unreserved set is encoded, including '+' (which some servers
 * read as a space in a query) and '/'.
 */
#include "kube/kube.h"

#include <string.h>

static void path_escape(struct util_buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char ch = *p;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            util_buf_append(out, &ch, 1);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            util_buf_append(out, e, 3);
        }
    }
}

int kube_path(struct util_buf *out, const struct kube_resource *res, const char *name,
              const char *subresource, struct util_err *err)
{
    if (res->version == NULL || res->version[0] == '\0' || res->resource == NULL ||
        res->resource[0] == '\0')
        return util_err_set(err, UTIL_EINVAL, "a resource needs a version and a plural name");
    if (name != NULL && name[0] == '\0')
        return util_err_set(err, UTIL_EINVAL, "an object name is empty");
    if (subresource != NULL && (name == NULL || subresource[0] == '\0'))
        return util_err_set(err, UTIL_EINVAL, "a subresource needs an object name");
    if (res->group == NULL || res->group[0] == '\0') {
        util_buf_puts(out, "/api/");
    } else {
        util_buf_puts(out, "/apis/");
        path_escape(out, res->group);
        util_buf_puts(out, "/");
    }
    path_escape(out, res->version);
    if (res->namespace != NULL && res->namespace[0] != '\0') {
        util_buf_puts(out, "/namespaces/");
        path_escape(out, res->namespace);
    }
    util_buf_puts(out, "/");
    path_escape(out, res->resource);
    if (name != NULL) {
        util_buf_puts(out, "/");
        path_escape(out, name);
    }
    if (subresource != NULL) {
        util_buf_puts(out, "/");
        path_escape(out, subresource);
    }
    return 0;
}

void kube_query_add(struct util_buf *out, const char *key, const char *value)
{
    bool first = out->data == NULL || memchr(out->data, '?', out->len) == NULL;
    util_buf_puts(out, first ? "?" : "&");
    path_escape(out, key);
    util_buf_puts(out, "=");
    path_escape(out, value);
}
