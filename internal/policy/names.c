/*
 * Names Kubernetes accepts (RFC 1123 labels and subdomains, label keys and
 * values), node paths, and the "did you mean" search.
 *
 * The messages say what is wrong first ("uppercase letter 'E'") and then the rule,
 * since the rule alone leaves a person to find the offending character.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy_int.h"

static bool names_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool names_alnum(char c)
{
    return names_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* Describes the character at s[i] for a message: 'E', 'é', a space, or byte 0xff. */
static void names_char(const char *s, size_t len, size_t i, char *buf, size_t size)
{
    unsigned char u = (unsigned char)s[i];
    size_t n = 0;

    if (u > 0x20 && u < 0x7f && u != '\'') {
        snprintf(buf, size, "'%c'", s[i]);
        return;
    }
    if (u == ' ') {
        snprintf(buf, size, "a space");
        return;
    }
    /* A whole UTF-8 character reads better than its first byte. */
    if (u >= 0xc2 && u <= 0xf4) {
        n = u >= 0xf0 ? 4 : u >= 0xe0 ? 3 : 2;
        for (size_t k = 1; k < n; k++) {
            if (i + k >= len || ((unsigned char)s[i + k] & 0xc0) != 0x80)
                n = 0;
        }
    }
    if (n > 0)
        snprintf(buf, size, "'%.*s'", (int)n, s + i);
    else
        snprintf(buf, size, "byte 0x%02x", u);
}

/* An RFC 1123 label of lowercase letters, digits and '-' (at most max characters). */
static int names_check_label(const char *s, size_t len, size_t max, const char *what,
                             const char *rule, struct util_err *err)
{
    char c[32];

    if (len == 0)
        return util_err_set(err, UTIL_EINVAL, "%s is empty: %s", what, rule);
    if (len > max)
        return util_err_set(err, UTIL_EINVAL, "%s is %zu characters long, more than %zu: %s", what,
                            len, max, rule);
    for (size_t i = 0; i < len; i++) {
        if (names_lower_alnum(s[i]) || s[i] == '-')
            continue;
        names_char(s, len, i, c, sizeof(c));
        if (s[i] >= 'A' && s[i] <= 'Z')
            return util_err_set(err, UTIL_EINVAL, "%s has the uppercase letter %s: %s", what, c,
                                rule);
        return util_err_set(err, UTIL_EINVAL, "%s has %s: %s", what, c, rule);
    }
    if (s[0] == '-' || s[len - 1] == '-')
        return util_err_set(err, UTIL_EINVAL, "%s %s with '-': %s", what,
                            s[0] == '-' ? "starts" : "ends", rule);
    return 0;
}

int policy_check_dns_label(const char *s, size_t len, struct util_err *err)
{
    return names_check_label(s, len, 63, "the name",
                             "use at most 63 lowercase letters, digits and '-', starting and "
                             "ending with a letter or digit (RFC 1123 label)",
                             err);
}

static int names_check_subdomain(const char *s, size_t len, const char *what, struct util_err *err)
{
    const char *rule = "use at most 253 lowercase letters, digits, '-' and '.', each "
                       "dot-separated part starting and ending with a letter or digit (RFC "
                       "1123 subdomain)";
    size_t start = 0;

    if (len == 0)
        return util_err_set(err, UTIL_EINVAL, "%s is empty: %s", what, rule);
    if (len > 253)
        return util_err_set(err, UTIL_EINVAL, "%s is %zu characters long, more than 253: %s", what,
                            len, rule);
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.')
            continue;
        if (i == start)
            return util_err_set(err, UTIL_EINVAL, "%s has an empty part between dots: %s", what,
                                rule);
        int rc = names_check_label(s + start, i - start, 253, what, rule, err);
        if (rc != 0)
            return rc;
        start = i + 1;
    }
    return 0;
}

int policy_check_dns_subdomain(const char *s, size_t len, struct util_err *err)
{
    return names_check_subdomain(s, len, "the name", err);
}

/* The name part of a label key, and a label value: [A-Za-z0-9] with '-', '_', '.' inside. */
static int names_check_label_name(const char *s, size_t len, const char *what, struct util_err *err)
{
    const char *rule = "use at most 63 letters, digits, '-', '_' and '.', starting and "
                       "ending with a letter or digit";
    char c[32];

    if (len > 63)
        return util_err_set(err, UTIL_EINVAL, "%s is %zu characters long, more than 63: %s", what,
                            len, rule);
    for (size_t i = 0; i < len; i++) {
        if (names_alnum(s[i]) || s[i] == '-' || s[i] == '_' || s[i] == '.')
            continue;
        names_char(s, len, i, c, sizeof(c));
        return util_err_set(err, UTIL_EINVAL, "%s has %s: %s", what, c, rule);
    }
    if (len > 0 && (!names_alnum(s[0]) || !names_alnum(s[len - 1])))
        return util_err_set(err, UTIL_EINVAL, "%s %s with '%c': %s", what,
                            !names_alnum(s[0]) ? "starts" : "ends",
                            !names_alnum(s[0]) ? s[0] : s[len - 1], rule);
    return 0;
}

int policy_check_qualified_name(const char *s, size_t len, struct util_err *err)
{
    const char *slash = memchr(s, '/', len);
    const char *name = s;
    size_t nlen = len;

    if (slash != NULL) {
        size_t plen = (size_t)(slash - s);
        int rc;
        if (plen == 0)
            return util_err_set(err, UTIL_EINVAL,
                                "the key has an empty prefix before '/': write prefix/name, "
                                "such as example.com/team");
        rc = names_check_subdomain(s, plen, "the key's prefix", err);
        if (rc != 0)
            return rc;
        name = slash + 1;
        nlen = len - plen - 1;
    }
    if (nlen == 0)
        return util_err_set(err, UTIL_EINVAL,
                            "the key has no name: write name or prefix/name, such as app or "
                            "example.com/team");
    return names_check_label_name(name, nlen, "the key", err);
}

int policy_check_label_value(const char *s, size_t len, struct util_err *err)
{
    return names_check_label_name(s, len, "the value", err);
}

int policy_check_path(const char *s, size_t len, struct util_err *err)
{
    if (len == 0)
        return util_err_set(err, UTIL_EINVAL,
                            "the path is empty: write an absolute path such "
                            "as /etc");
    if (memchr(s, '\0', len) != NULL)
        return util_err_set(err, UTIL_EINVAL, "the path contains a NUL character");
    if (s[0] != '/')
        return util_err_set(err, UTIL_EINVAL,
                            "the path must be absolute (start with '/'), such as /etc");
    if (len > POLICY_MAX_PATH_BYTES)
        return util_err_set(err, UTIL_EINVAL, "the path is %zu bytes long, more than %d", len,
                            POLICY_MAX_PATH_BYTES);
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && s[j] != '/')
            j++;
        if (j - i == 2 && s[i] == '.' && s[i + 1] == '.')
            return util_err_set(err, UTIL_EINVAL,
                                "the path must not contain \"..\": write the path it leads to");
        i = j + 1;
    }
    return 0;
}

const char *policy_suggest(const char *s, const char *const *candidates)
{
    const char *best = NULL;
    size_t best_d = 3;

    for (size_t i = 0; candidates[i] != NULL; i++) {
        size_t d;
        if (strcasecmp(s, candidates[i]) == 0)
            return candidates[i];
        d = util_edit_distance(s, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best;
}
