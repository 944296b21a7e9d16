/*
 * glob: exclude patterns, component by component (glob.h; docs/policy.md states the
 * syntax for people).
 */
#include "glob/glob.h"

#include <string.h>

/* ---- one component ---- */

/* The end of the class that starts at p ('['), or NULL when it is not closed. */
static const char *glob_class_end(const char *p, const char *pe)
{
    const char *q = p + 1;
    if (q < pe && (*q == '!' || *q == '^'))
        q++;
    if (q < pe && *q == ']')
        q++; /* a ']' first is a member */
    while (q < pe && *q != ']')
        q++;
    return q < pe ? q : NULL;
}

static bool glob_class_has(const char *p, const char *end, unsigned char c)
{
    const char *q = p + 1;
    bool neg = false, in = false;
    if (*q == '!' || *q == '^') {
        neg = true;
        q++;
    }
    for (bool first = true; q < end; first = false) {
        unsigned char lo = (unsigned char)*q;
        if (lo == ']' && !first)
            break;
        if (q + 2 < end && q[1] == '-') {
            if (c >= lo && c <= (unsigned char)q[2])
                in = true;
            q += 3;
        } else {
            if (c == lo)
                in = true;
            q++;
        }
    }
    return in != neg;
}

/* The length of the UTF-8 character at s (1 for a stray byte). */
static size_t glob_char_len(const char *s, const char *se)
{
    size_t n = 1;
    while (s + n < se && ((unsigned char)s[n] & 0xc0) == 0x80)
        n++;
    return n;
}

/*
 * Whether the pattern component [p, pe) matches the name [s, se). '*' backtracks to
 * the last star only (the classic two-pointer walk), so a component costs O(n*m) at
 * worst.
 */
static bool glob_component(const char *p, const char *pe, const char *s, const char *se)
{
    const char *star_p = NULL, *star_s = NULL;
    while (s < se) {
        if (p < pe && *p == '*') {
            star_p = ++p;
            star_s = s;
            continue;
        }
        if (p < pe) {
            if (*p == '?') {
                p++;
                s += glob_char_len(s, se);
                continue;
            }
            if (*p == '[') {
                const char *end = glob_class_end(p, pe);
                if (end != NULL && glob_class_has(p, end, (unsigned char)*s)) {
                    p = end + 1;
                    s++;
                    continue;
                }
            } else {
                const char *lit = p;
                if (*lit == '\\' && lit + 1 < pe)
                    lit++;
                if (*lit == *s) {
                    p = lit + 1;
                    s++;
                    continue;
                }
            }
        }
        if (star_p == NULL)
            return false;
        p = star_p;
        star_s += glob_char_len(star_s, se);
        s = star_s;
    }
    while (p < pe && *p == '*')
        p++;
    return p == pe;
}

/* ---- components ---- */

static const char *glob_comp_end(const char *p, const char *end)
{
    while (p < end && *p != '/') {
        if (*p == '\\' && p + 1 < end)
            p++;
        p++;
    }
    return p;
}

/* A path's components have no escapes: a "\\" in a name is a character. */
static const char *glob_path_end(const char *s, const char *end)
{
    const char *slash = memchr(s, '/', (size_t)(end - s));
    return slash != NULL ? slash : end;
}

static bool glob_is_starstar(const char *p, const char *pe)
{
    return pe - p == 2 && p[0] == '*' && p[1] == '*';
}

/* The pattern's components from p against the path's from s ("" is no component). */
static bool glob_from(const char *p, const char *pend, const char *s, const char *send)
{
    for (;;) {
        if (p >= pend)
            return s >= send;
        const char *pe = glob_comp_end(p, pend);
        const char *pn = pe < pend ? pe + 1 : pend;
        if (glob_is_starstar(p, pe)) {
            if (pn >= pend)
                return true;
            for (const char *t = s; t < send; t = glob_path_end(t, send) + 1)
                if (glob_from(pn, pend, t, send))
                    return true;
            return false;
        }
        if (s >= send)
            return false;
        const char *se = glob_path_end(s, send);
        if (!glob_component(p, pe, s, se))
            return false;
        p = pn;
        s = se < send ? se + 1 : send;
    }
}

bool glob_match(const char *pat, const char *path, bool is_dir)
{
    size_t plen = strlen(pat);
    const char *send = path + strlen(path);
    if (plen > 1 && pat[plen - 1] == '/' && (plen < 2 || pat[plen - 2] != '\\')) {
        if (!is_dir)
            return false;
        plen--;
    }
    const char *pend = pat + plen;
    if (*path == '/')
        path++;
    if (pat[0] == '/')
        return glob_from(pat + 1, pend, path, send);
    /* Unanchored: the pattern may match the path's last components at any depth. */
    for (const char *t = path; t < send; t = glob_path_end(t, send) + 1)
        if (glob_from(pat, pend, t, send))
            return true;
    return false;
}

/* ---- checks ---- */

static bool glob_is_wild(const char *p, const char *pe)
{
    for (const char *q = p; q < pe; q++)
        if (*q == '*' || *q == '?' || *q == '[' || *q == '\\')
            return true;
    return false;
}

int glob_check(const char *pat, size_t len, struct util_err *err)
{
    const char *end = pat + len;
    size_t starstar = 0;
    if (len == 0)
        return util_err_set(err, UTIL_EINVAL, "the pattern is empty");
    if (memchr(pat, '\0', len) != NULL)
        return util_err_set(err, UTIL_EINVAL, "the pattern contains a NUL character");
    if (len == 1 && pat[0] == '/')
        return util_err_set(err, UTIL_EINVAL,
                            "\"/\" would exclude everything: remove the policy's paths instead");
    if (len > 1 && end[-1] == '/')
        end--; /* directories only */
    for (const char *p = pat[0] == '/' ? pat + 1 : pat; p <= end;) {
        const char *pe = glob_comp_end(p, end);
        size_t n = (size_t)(pe - p);
        if (n == 0)
            return util_err_set(err, UTIL_EINVAL,
                                "an empty component (\"//\"): write one \"/\" between names");
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return util_err_set(err, UTIL_EINVAL,
                                "\".\" and \"..\" are not components of the paths a backup "
                                "walks: write the path without them");
        if (glob_is_starstar(p, pe)) {
            if (++starstar > GLOB_MAX_STARSTAR)
                return util_err_set(err, UTIL_EINVAL,
                                    "more than %d \"**\" in one pattern: a match would cost too "
                                    "much",
                                    GLOB_MAX_STARSTAR);
        } else {
            for (const char *q = p; q < pe; q++) {
                if (*q == '\\') {
                    if (q + 1 >= pe)
                        return util_err_set(err, UTIL_EINVAL,
                                            "a \"\\\" at the end of a component escapes nothing: "
                                            "write \\\\ for a backslash");
                    q++;
                } else if (*q == '*' && q + 1 < pe && q[1] == '*') {
                    return util_err_set(err, UTIL_EINVAL,
                                        "\"**\" must be a whole component (such as a/**/b); "
                                        "within a name, one \"*\" already matches any run of "
                                        "characters");
                } else if (*q == '[') {
                    const char *ce = glob_class_end(q, pe);
                    if (ce == NULL)
                        return util_err_set(err, UTIL_EINVAL,
                                            "\"[\" opens a class that is not closed with \"]\": "
                                            "write \\[ for a literal bracket");
                    q = ce;
                }
            }
        }
        if (pe >= end)
            break;
        p = pe + 1;
    }
    return 0;
}

bool glob_can_match_under(const char *pat, const char *root)
{
    if (pat[0] != '/')
        return true;
    size_t plen = strlen(pat);
    const char *pend = pat + plen, *p = pat + 1;
    const char *r = root + 1, *rend = root + strlen(root);
    if (plen > 1 && pend[-1] == '/')
        pend--;
    while (r < rend) {
        if (p >= pend)
            return false; /* the pattern ends above root: it matches only outside it */
        const char *pe = glob_comp_end(p, pend), *re = glob_path_end(r, rend);
        if (glob_is_wild(p, pe))
            return true;
        if (pe - p != re - r || memcmp(p, r, (size_t)(pe - p)) != 0)
            return false;
        p = pe < pend ? pe + 1 : pend;
        r = re < rend ? re + 1 : rend;
    }
    return true;
}
