/*
 * prune: the plan of a forget through storage (prune.h; docs/retention.md).
 */
#include "prune/prune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hosts first (bytewise), then newest first: the engine's order within a host. */
static int prune_by_host(const void *pa, const void *pb)
{
    const struct repo_snapshot *a = pa, *b = pb;
    int r = strcmp(a->src.host, b->src.host);
    if (r)
        return r;
    if (a->time != b->time)
        return a->time > b->time ? -1 : 1;
    return strcmp(b->id, a->id);
}

static int prune_cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A forgotten manifest and its .incomplete mark (NULL when it has none), while sorting. */
struct prune_pair {
    char *manifest, *mark;
};

static int prune_cmp_pair(const void *a, const void *b)
{
    return strcmp(((const struct prune_pair *)a)->manifest,
                  ((const struct prune_pair *)b)->manifest);
}

void prune_plan_free(struct prune_plan *p)
{
    for (size_t i = 0; i < p->nmanifests; i++)
        free(p->manifests[i]);
    for (size_t i = 0; i < p->nmarks; i++)
        free(p->marks[i]);
    free(p->manifests);
    free(p->marks);
    free(p->mark_of);
    free(p->snaps);
    free(p->dec);
    free(p->hosts);
    memset(p, 0, sizeof(*p));
}

/* The scope check: every snapshot is of ns/policy (and host). */
static int prune_check_scope(const struct repo_catalog *cat, const char *ns, const char *policy,
                             const char *host, struct util_err *err)
{
    for (size_t i = 0; i < cat->n; i++) {
        const struct repo_source *s = &cat->v[i].src;
        if (strcmp(s->ns, ns) != 0 || strcmp(s->policy, policy) != 0 ||
            (host != NULL && strcmp(s->host, host) != 0))
            return util_err_set(err, UTIL_EIO,
                                "the listing of %s/%s returned a snapshot of %s/%s/%s", ns, policy,
                                s->ns, s->policy, s->host);
    }
    return 0;
}

/* Evaluates one host and collects its forgotten snapshots' keys into pairs. */
static int prune_host_plan(struct prune_plan *p, const struct repo_catalog *cat,
                           const struct prune_host *h, const struct policy_retention *rules,
                           const struct tz_zone *zone, struct prune_pair *pairs, size_t *npairs,
                           struct util_err *err)
{
    struct util_err e = {0};

    for (size_t i = 0; i < h->n; i++) {
        const struct repo_snapshot *s = &cat->v[h->from + i];
        p->snaps[h->from + i] = (struct ret_snapshot){.id = s->id,
                                                      .time = s->time,
                                                      .incomplete = s->incomplete,
                                                      .suspicious = s->suspicious,
                                                      .pinned = s->pinned};
    }
    if (ret_evaluate(p->snaps + h->from, h->n, rules, zone, p->dec + h->from, &e) != 0)
        return util_err_set(err, UTIL_EINVAL, "host %s: %s", h->host, e.msg);
    for (size_t i = 0; i < h->n; i++) {
        const struct ret_decision *d = &p->dec[h->from + i];
        const struct repo_snapshot *s = &cat->v[h->from + d->index];
        if (d->keep) {
            p->kept++;
            for (unsigned r = 0; r < RET_REASON_COUNT; r++)
                if (d->reasons & (1u << r))
                    p->reasons[r]++;
            continue;
        }
        if (s->suspicious) { /* the engine never forgets one; a second lock on the door */
            fprintf(stderr, "prune: internal error: suspicious %s forgotten\n", s->id);
            abort();
        }
        p->forgotten++;
        struct repo_key k = {.kind = REPO_KEY_MANIFEST, .src = s->src};
        memcpy(k.id, s->id, sizeof(k.id));
        struct prune_pair *pair = &pairs[(*npairs)++];
        pair->manifest = repo_key_build(&k);
        pair->mark = NULL;
        if (s->incomplete) {
            k.kind = REPO_KEY_INCOMPLETE;
            pair->mark = repo_key_build(&k);
        }
    }
    return 0;
}

int prune_plan_build(struct prune_plan *p, struct repo_catalog *cat, const char *ns,
                     const char *policy, const char *host, const struct policy_retention *rules,
                     const struct tz_zone *zone, struct util_err *err)
{
    struct prune_pair *pairs = NULL;
    size_t npairs = 0, cap = cat->n ? cat->n : 1;
    int rc;

    memset(p, 0, sizeof(*p));
    if ((rc = prune_check_scope(cat, ns, policy, host, err)) != 0)
        return rc;
    if (cat->n > 1)
        qsort(cat->v, cat->n, sizeof(*cat->v), prune_by_host);

    p->n = cat->n;
    p->snaps = util_calloc(cap, sizeof(*p->snaps));
    p->dec = util_calloc(cap, sizeof(*p->dec));
    p->hosts = util_calloc(cap, sizeof(*p->hosts));
    pairs = util_calloc(cap, sizeof(*pairs));
    for (size_t from = 0, to; from < cat->n; from = to) {
        for (to = from; to < cat->n && strcmp(cat->v[to].src.host, cat->v[from].src.host) == 0;)
            to++;
        struct prune_host *h = &p->hosts[p->nhosts++];
        *h = (struct prune_host){.host = cat->v[from].src.host, .from = from, .n = to - from};
        if ((rc = prune_host_plan(p, cat, h, rules, zone, pairs, &npairs, err)) != 0)
            goto fail;
    }

    /* Sorted by manifest key. Keys of one source differ from the first byte of the id
     * on, and ids have one length, so the marks come out sorted too. */
    if (npairs > 1)
        qsort(pairs, npairs, sizeof(*pairs), prune_cmp_pair);
    p->manifests = util_calloc(npairs ? npairs : 1, sizeof(*p->manifests));
    p->marks = util_calloc(npairs ? npairs : 1, sizeof(*p->marks));
    p->mark_of = util_calloc(npairs ? npairs : 1, sizeof(*p->mark_of));
    for (size_t i = 0; i < npairs; i++) {
        p->manifests[p->nmanifests++] = pairs[i].manifest;
        if (pairs[i].mark != NULL) {
            p->mark_of[p->nmarks] = i;
            p->marks[p->nmarks++] = pairs[i].mark;
        }
    }
    free(pairs);
    return 0;

fail:
    for (size_t i = 0; i < npairs; i++) {
        free(pairs[i].manifest);
        free(pairs[i].mark);
    }
    free(pairs);
    prune_plan_free(p);
    return rc;
}

ssize_t prune_manifest_find(const struct prune_plan *p, const char *key)
{
    const char *const *hit = p->nmanifests ? bsearch(&key, p->manifests, p->nmanifests,
                                                     sizeof(*p->manifests), prune_cmp_key)
                                           : NULL;
    return hit ? (ssize_t)(hit - (const char *const *)p->manifests) : -1;
}

size_t prune_marks_after(const struct prune_plan *p, const bool *gone, const char **out)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nmarks; i++)
        if (gone[p->mark_of[i]])
            out[n++] = p->marks[i];
    return n;
}
