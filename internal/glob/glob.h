/*
 * glob: the exclude patterns of a policy (docs/policy.md, "spec.exclude"), checked and
 * matched against the paths a backup walks. Pure: no I/O, no allocation when matching.
 *
 * A pattern is matched component by component against an absolute path as the node
 * sees it ("/var/lib/containerd/x"). `*` is any run of characters within a component,
 * `?` one character, `[abc]`, `[a-z]` and `[!a-z]` (or `[^a-z]`) one character of a
 * class, `\` takes the next character literally, and `**` alone as a component is any
 * number of components, none included. A pattern that starts with `/` is anchored: it
 * must match the path from the root. Any other pattern is unanchored: it may match the
 * path's last components at any depth (`*.tmp` matches /a/b/x.tmp; `cache/x.bin`
 * matches /var/cache/x.bin). A pattern that ends with `/` matches directories only.
 *
 * Costs: matching is a backtracking walk over the components; each `**` may try every
 * remaining component, so a pattern holds at most GLOB_MAX_STARSTAR of them (checked
 * by glob_check) and a match costs at most O(components^(GLOB_MAX_STARSTAR+1))
 * character comparisons, microseconds for real paths.
 */
#ifndef LODE_GLOB_H
#define LODE_GLOB_H

#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

#define GLOB_MAX_STARSTAR 4
#define GLOB_MAX_CHARS    1024 /* one pattern, in characters (the CRD's maxLength) */

/*
 * UTIL_EINVAL with a message a person can act on when pat is not a pattern: empty,
 * an empty component ("a//b"), "." or ".." as a component, an unclosed "[", a "\" at
 * the end, "**" mixed with other characters in a component, more than
 * GLOB_MAX_STARSTAR "**", a NUL.
 */
int glob_check(const char *pat, size_t len, struct util_err *err);

/* Whether pat (which passed glob_check) matches the absolute path; is_dir says whether
 * the path is a directory (a pattern ending in "/" matches only those). */
bool glob_match(const char *pat, const char *path, bool is_dir);

/*
 * Whether an anchored pattern can match anything at or under root (an absolute path):
 * false when the pattern's fixed leading components part ways with root's. An
 * unanchored pattern always can. Used to refuse a pattern that can never exclude
 * anything from the policy's paths.
 */
bool glob_can_match_under(const char *pat, const char *root);

#endif
