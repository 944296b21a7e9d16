/*
 * The manifest's count of what a backup left out, by rule (repo.h, struct
 * repo_excluded; docs/policy.md, "spec.exclude"). A field of its own in the sealed
 * part, apart from the manifest's other records, so that it travels with any
 * encoding of them.
 */
#include "repo/repo.h"

const char *const repo_exclude_rule_names[REPO_EXCL_RULES] = {"pattern", "cache", "largerThan",
                                                              "otherFileSystem"};

json_t *repo_excluded_json(const struct repo_excluded x[REPO_EXCL_RULES])
{
    json_t *o = json_object();
    for (int i = 0; i < REPO_EXCL_RULES; i++)
        json_object_set_new(o, repo_exclude_rule_names[i],
                            json_pack("{s:I, s:I}", "entries", (json_int_t)x[i].entries, "bytes",
                                      (json_int_t)x[i].bytes));
    return o;
}

int repo_excluded_parse(const json_t *o, struct repo_excluded x[REPO_EXCL_RULES])
{
    if (!json_is_object(o))
        return UTIL_EINVAL;
    for (int i = 0; i < REPO_EXCL_RULES; i++) {
        const json_t *r = json_object_get(o, repo_exclude_rule_names[i]);
        json_int_t e, b;
        x[i].entries = x[i].bytes = 0;
        if (r == NULL)
            continue;
        if (json_unpack((json_t *)r, "{s:I, s:I}", "entries", &e, "bytes", &b) != 0 || e < 0 ||
            b < 0)
            return UTIL_EINVAL;
        x[i].entries = (uint64_t)e;
        x[i].bytes = (uint64_t)b;
    }
    return 0;
}
