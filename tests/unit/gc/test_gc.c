/*
 * The garbage collection rule (docs/gc.md): its boundaries one by one, and a
 * model of the whole system in which it must never lose data.
 *
 * The model is one source in a simulated store on a simulated server clock.
 * Backups, forgets and one garbage collector take steps in a random order, and
 * any backup may die at any step. A backup: picks its parent (the newest
 * manifest), writes its run record, checks that the parent's manifest still
 * exists (and gives up if not), reads the parent's metadata trees, uploads packs
 * (reusing some of the parent's), writes its metadata pack (the chunks of its
 * trees the parent's do not hold; none when nothing changed) and writes its
 * manifest only while less than its maxRuntime has passed since its run record.
 * Its trees name its own metadata pack and some of those its parent's name (the
 * unchanged stretches). Forget deletes any manifest. GC goes through its steps as
 * `lode gc` does: takes G, lists the manifests, lists the run records and reads
 * the bodies it needs, reads the protected snapshots' manifests and trees (a
 * forgotten parent's trees as its child's run record names them; a manifest or
 * metadata pack it cannot read stops the run), lists the objects, and
 * deletes in batches, with other actors' steps in between. After every step,
 * every manifest's metadata packs and every pack its trees name must be present. At the end of each
 * schedule, after the clock passes every window, a GC must have deleted everything that no manifest
 * references, so the rule is not safe merely by deleting nothing.
 *
 * Two weakened collectors (without condition (c), and with W from the policy
 * alone) are run on the same schedules and must lose data in some of them:
 * the model can tell a safe rule from an unsafe one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gc/gc.h"

/* ---- the rule, case by case ---- */

static void test_window_and_live_runs(void **state)
{
    const int64_t g = 1000000;
    struct gc_run runs[] = {
        /* live: started 2 h ago with 3 h */
        {.id = "a", .time = g - 7200, .read = true, .max_runtime = 3 * 3600, .parent = ""},
        /* not live: started 5 h ago with 4 h (+1 h margin ends exactly at G) */
        {.id = "b", .time = g - 5 * 3600, .read = true, .max_runtime = 4 * 3600},
        /* not read: never counted */
        {.id = "c", .time = g - 10, .read = false, .max_runtime = 99 * 3600},
    };
    assert_true(gc_run_live(&runs[0], g));
    assert_false(gc_run_live(&runs[1], g));
    assert_true(gc_run_live(&runs[1], g - 1));
    assert_false(gc_run_live(&runs[2], g));
    /* the policy's 1 h is smaller than the live record's 3 h */
    assert_int_equal(gc_window(3600, runs, 3, g), 3 * 3600 + GC_MARGIN_SECONDS);
    /* the policy's 12 h is larger */
    assert_int_equal(gc_window(12 * 3600, runs, 3, g), 12 * 3600 + GC_MARGIN_SECONDS);
    /* record b is live one second earlier, and then it counts */
    assert_int_equal(gc_window(3600, runs + 1, 1, g - 1), 4 * 3600 + GC_MARGIN_SECONDS);
    assert_int_equal(gc_window(0, NULL, 0, g), GC_MARGIN_SECONDS);
    assert_int_equal(gc_cutoff(g, 7200), g - 7200);
    /* hostile values saturate instead of wrapping */
    struct gc_run huge = {.id = "h", .time = g, .read = true, .max_runtime = INT64_MAX};
    assert_true(gc_run_live(&huge, g));
    assert_true(gc_window(0, &huge, 1, g) > 0);
    assert_int_equal(gc_cutoff(-10, INT64_MAX), INT64_MIN);
    struct gc_run neg = {.id = "n", .time = g - 10, .read = true, .max_runtime = -5};
    assert_true(gc_run_live(&neg, g)); /* a negative runtime counts as 0: +1 h still ahead */
    assert_int_equal(gc_window(0, &neg, 1, g), GC_MARGIN_SECONDS);
}

static void test_verdict_at_the_cutoff(void **state)
{
    const int64_t cutoff = 5000;
    /* (a): strictly older than G - W; the second at the cutoff is young */
    assert_int_equal(gc_may_delete(cutoff, cutoff, false), GC_KEEP_YOUNG);
    assert_int_equal(gc_may_delete(cutoff + 1, cutoff, false), GC_KEEP_YOUNG);
    assert_int_equal(gc_may_delete(cutoff - 1, cutoff, false), GC_DELETE);
    /* (b)/(c): referenced */
    assert_int_equal(gc_may_delete(cutoff - 1, cutoff, true), GC_KEEP_REFERENCED);
    assert_int_equal(gc_may_delete(cutoff, cutoff, true), GC_KEEP_YOUNG);
}

/* Every initiation time around the cutoff, unknown ones included: aborted exactly
 * when known and strictly before it. */
static void test_upload_verdict(void **state)
{
    const int64_t cutoffs[] = {0, 1, 5000, INT64_MIN + 1, INT64_MAX - 1};
    for (size_t c = 0; c < sizeof(cutoffs) / sizeof(cutoffs[0]); c++) {
        int64_t cutoff = cutoffs[c];
        const int64_t times[] = {-1,     -5000,      0,         1,         cutoff - 1,
                                 cutoff, cutoff + 1, INT64_MIN, INT64_MAX, cutoff / 2};
        for (size_t t = 0; t < sizeof(times) / sizeof(times[0]); t++) {
            int64_t i = times[t];
            enum gc_verdict want = i >= 0 && i < cutoff ? GC_DELETE : GC_KEEP_YOUNG;
            assert_int_equal(gc_may_abort_upload(i, cutoff), want);
        }
    }
    (void)state;
}

static void test_protected_ids(void **state)
{
    const int64_t cutoff = 1000;
    const char *manifests[] = {"s3", "s1", "s5"};
    struct gc_run runs[] = {
        {.id = "s6", .time = cutoff + 1, .read = true, .max_runtime = 60, .parent = "s2"},
        {.id = "s7",
         .time = cutoff,
         .read = true,
         .max_runtime = 60,
         .parent = "s0"}, /* not newer */
        {.id = "s8", .time = cutoff + 5, .read = true, .max_runtime = 60, .parent = "s3"},
        {.id = "s9", .time = cutoff + 9, .read = true, .max_runtime = 60, .parent = NULL},
        {.id = "sa", .time = cutoff - 9, .read = false}, /* old, unread: fine */
    };
    struct gc_idset set;
    struct util_err err = {0};

    assert_int_equal(gc_protected_ids(manifests, 3, runs, 5, cutoff, &set, &err), 0);
    assert_int_equal(set.n, 4); /* s1 s2 s3 s5, s3 once */
    assert_string_equal(set.v[0], "s1");
    assert_string_equal(set.v[1], "s2");
    assert_string_equal(set.v[2], "s3");
    assert_string_equal(set.v[3], "s5");
    assert_true(gc_idset_has(&set, "s2"));
    assert_false(gc_idset_has(&set, "s0"));
    assert_false(gc_idset_has(&set, "s6"));
    gc_idset_free(&set);

    /* a record newer than the cutoff whose parent is unknown stops everything */
    runs[4].time = cutoff + 1;
    assert_int_equal(gc_protected_ids(manifests, 3, runs, 5, cutoff, &set, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "sa"));
    assert_int_equal(set.n, 0);
    assert_null(set.v);

    assert_int_equal(gc_protected_ids(NULL, 0, NULL, 0, cutoff, &set, &err), 0);
    assert_int_equal(set.n, 0);
    assert_false(gc_idset_has(&set, "x"));
    gc_idset_free(&set);
}

static void pack_of(uint32_t n, uint8_t id[GC_PACK_ID_LEN])
{
    memset(id, 0, GC_PACK_ID_LEN);
    for (int i = 0; i < 4; i++)
        id[i] = (uint8_t)(n >> (24 - 8 * i));
    id[31] = (uint8_t)(n * 37u); /* something at the far end too */
}

static void test_packset(void **state)
{
    struct gc_packset set = {0};
    uint8_t id[GC_PACK_ID_LEN];

    gc_packset_seal(&set);
    pack_of(1, id);
    assert_false(gc_packset_has(&set, id));
    /* 10,000 adds of 1,000 distinct ids in a scrambled order stay small */
    for (uint32_t i = 0; i < 10000; i++) {
        pack_of((i * 7919u) % 1000u * 2u, id);
        gc_packset_add(&set, id);
    }
    gc_packset_seal(&set);
    assert_int_equal(set.n, 1000);
    assert_true(set.cap <= 4096);
    for (uint32_t i = 0; i < 2000; i++) {
        pack_of(i, id);
        assert_int_equal(gc_packset_has(&set, id), i % 2 == 0);
    }
    gc_packset_free(&set);
    assert_int_equal(set.n, 0);
}

static void test_pack_id_hex(void **state)
{
    uint8_t id[GC_PACK_ID_LEN], back[GC_PACK_ID_LEN];
    char hex[2 * GC_PACK_ID_LEN + 1];
    const char *ok = "00ff10aB9c000000000000000000000000000000000000000000000000000001";

    assert_int_equal(gc_pack_id_parse(ok, strlen(ok), id), 0);
    assert_int_equal(id[1], 0xff);
    assert_int_equal(id[4], 0x9c);
    assert_int_equal(id[31], 1);
    gc_pack_id_format(id, hex);
    assert_string_equal(hex, "00ff10ab9c000000000000000000000000000000000000000000000000000001");
    assert_int_equal(gc_pack_id_parse(hex, strlen(hex), back), 0);
    assert_memory_equal(id, back, GC_PACK_ID_LEN);
    assert_int_equal(gc_pack_id_parse(ok, 63, id), UTIL_EINVAL);
    assert_int_equal(gc_pack_id_parse("", 0, id), UTIL_EINVAL);
    char bad[65];
    memcpy(bad, ok, 65);
    bad[10] = 'g';
    assert_int_equal(gc_pack_id_parse(bad, 64, id), UTIL_EINVAL);
    bad[10] = ' ';
    assert_int_equal(gc_pack_id_parse(bad, 64, id), UTIL_EINVAL);
}

/* ---- the model ---- */

#define M_SNAPS   64  /* snapshot ids per schedule */
#define M_PACKS   512 /* packs per schedule */
#define M_REFS    24  /* packs per index */
#define M_BACKUPS 4   /* backups running at once */
#define M_STEPS   240

static uint64_t m_rng_state;
static int m_uploads_aborted; /* by the safe rule, over all schedules */

static uint64_t m_rng(void)
{
    uint64_t z = (m_rng_state += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static unsigned m_below(unsigned n)
{
    return (unsigned)(m_rng() % n);
}

/* One snapshot id's objects: manifest, run record, the metadata pack its run wrote. */
struct m_snap {
    bool manifest, run, index; /* index: its metadata pack is present */
    bool indexed;              /* its trees are written: metas says what they name */
    int64_t manifest_time, run_time, index_time;
    int metas[M_REFS]; /* the runs whose metadata packs its trees name */
    int nmetas;
    int64_t max_runtime;
    /* the index's multipart upload: open from its initiation until completed or aborted */
    bool upload, upload_aborted;
    int64_t upload_time;
    int parent; /* -1: none */
    int packs[M_REFS];
    int npacks;
    char name[8];
    int version; /* bumped at every write of the manifest: what an ETag tells apart */
};

struct m_pack {
    bool present;
    int64_t time;
};

/* M_META_BY_ID: a metadata pack kept only while its own run's snapshot is protected
 * (format 1's rule for meta objects), blind to later snapshots whose trees name it. */
/* M_CACHE_BY_ID: gc's cache (agent/gc_cache.h) keyed by the snapshot id alone, blind to
 * a manifest written again under its id. */
enum m_flaw { M_SAFE, M_NO_C, M_POLICY_WINDOW, M_UPLOAD_AT_G, M_META_BY_ID, M_CACHE_BY_ID };

struct m_world {
    int64_t now;
    int64_t policy_max_runtime;
    struct m_snap snaps[M_SNAPS];
    int nsnaps;
    struct m_pack packs[M_PACKS];
    int npacks;
    enum m_flaw flaw;
    bool lost; /* a manifest lost its index or a pack */
    /* gc aborted the upload of a backup that was completing it within its maxRuntime */
    bool upload_lost;
};

enum m_phase { B_IDLE, B_PICKED, B_RECORDED, B_CHECKED, B_INDEXED, B_DONE };

struct m_backup {
    enum m_phase phase;
    int snap; /* its snapshot id */
    int parent;
    int64_t start;
    int reuse[M_REFS], nreuse;
    int fresh[M_REFS], nfresh;
};

enum m_gc_phase { G_IDLE, G_LISTED_MANIFESTS, G_LISTED_RUNS, G_PLANNED };

/* What gc's cache holds of one snapshot: the manifest version it read, and its trees'
 * metadata packs and packs. It outlives the runs, as the object in the bucket does. */
struct m_cached {
    bool have;
    int version;
    int metas[M_REFS], nmetas;
    int packs[M_REFS], npacks;
};

struct m_gc {
    enum m_gc_phase phase;
    int64_t g;
    bool manifest_listed[M_SNAPS];
    int listed_version[M_SNAPS];
    struct m_cached cache[M_SNAPS];
    struct gc_run runs[M_SNAPS];
    size_t nruns;
    int64_t cutoff;
    /* the plan: what to delete, in batches */
    bool del_pack[M_PACKS], del_index[M_SNAPS], del_run[M_SNAPS], abort_upload[M_SNAPS];
};

static int m_newest_manifest(const struct m_world *w)
{
    int best = -1;
    for (int i = 0; i < w->nsnaps; i++)
        if (w->snaps[i].manifest &&
            (best < 0 || w->snaps[i].manifest_time > w->snaps[best].manifest_time ||
             (w->snaps[i].manifest_time == w->snaps[best].manifest_time && i > best)))
            best = i;
    return best;
}

/* Whether every metadata pack a snapshot's trees name is present. */
static bool m_metas_present(const struct m_world *w, const struct m_snap *s)
{
    for (int k = 0; k < s->nmetas; k++)
        if (!w->snaps[s->metas[k]].index)
            return false;
    return true;
}

/* The invariant: every manifest's metadata packs and every pack it names are present. */
static void m_check(struct m_world *w)
{
    for (int i = 0; i < w->nsnaps; i++) {
        const struct m_snap *s = &w->snaps[i];
        if (!s->manifest)
            continue;
        if (!m_metas_present(w, s))
            w->lost = true;
        for (int k = 0; k < s->npacks; k++)
            if (!w->packs[s->packs[k]].present)
                w->lost = true;
    }
}

/* One step of a backup; returns false when it has ended (done or dead). */
static bool m_backup_step(struct m_world *w, struct m_backup *b)
{
    /* death at any step: the process is gone, its objects stay */
    if (m_below(16) == 0)
        return false;
    switch (b->phase) {
    case B_IDLE:
        if (w->nsnaps == M_SNAPS)
            return false;
        b->snap = w->nsnaps++;
        memset(&w->snaps[b->snap], 0, sizeof(w->snaps[b->snap]));
        snprintf(w->snaps[b->snap].name, sizeof(w->snaps[b->snap].name), "s%03d", b->snap);
        w->snaps[b->snap].parent = -1;
        b->parent = m_newest_manifest(w); /* from the catalog listing */
        b->nreuse = b->nfresh = 0;
        b->phase = B_PICKED;
        return true;
    case B_PICKED: {
        struct m_snap *s = &w->snaps[b->snap];
        s->run = true;
        s->run_time = w->now;
        /* usually within the policy's limit, sometimes a longer --max-runtime */
        s->max_runtime = m_below(4) == 0 ? w->policy_max_runtime * (2 + m_below(3))
                                         : w->policy_max_runtime / (1 + m_below(3));
        s->parent = b->parent;
        b->start = w->now;
        b->phase = B_RECORDED;
        return true;
    }
    case B_RECORDED:
        if (b->parent >= 0) {
            const struct m_snap *p = &w->snaps[b->parent];
            if (!p->manifest)
                return false; /* the parent was forgotten: this backup gives up */
            if (!m_metas_present(w, p)) {
                w->lost = true; /* a manifest without its trees: m_check sees it too */
                return false;
            }
            /* dedup against the parent: reuse some of its packs */
            int from = p->npacks ? (int)m_below((unsigned)p->npacks) : 0;
            for (int k = 0; k < p->npacks; k++)
                if (m_below(3) != 0 && b->nreuse < M_REFS / 2)
                    b->reuse[b->nreuse++] = p->packs[(from + k) % p->npacks];
        }
        b->phase = B_CHECKED;
        return true;
    case B_CHECKED:
        /* the index goes up in parts: its upload opens once the first part is ready */
        if (!w->snaps[b->snap].upload && !w->snaps[b->snap].upload_aborted && m_below(2) == 0) {
            w->snaps[b->snap].upload = true;
            w->snaps[b->snap].upload_time = w->now;
            return true;
        }
        if (b->nfresh < M_REFS / 2 && w->npacks < M_PACKS && m_below(3) != 0) {
            int p = w->npacks++;
            w->packs[p].present = true;
            w->packs[p].time = w->now; /* the time of its last byte */
            b->fresh[b->nfresh++] = p;
            return true;
        }
        {
            struct m_snap *s = &w->snaps[b->snap];
            if (s->upload_aborted) {
                /* lode stops at maxRuntime; a completion still in flight then (its
                 * request's deadline is maxRuntime + 60 s) may be the one gc ended */
                if (w->now - b->start <= s->max_runtime + 60)
                    w->upload_lost = true;
                return false;
            }
            s->upload = false; /* completed (or never opened: one PUT) */
            s->npacks = 0;
            for (int k = 0; k < b->nreuse; k++)
                s->packs[s->npacks++] = b->reuse[k];
            for (int k = 0; k < b->nfresh; k++)
                s->packs[s->npacks++] = b->fresh[k];
            /* The trees: the parent's unchanged stretches name its metadata packs; what
             * changed goes into this run's own (none when nothing changed). */
            s->nmetas = 0;
            if (b->parent >= 0) {
                const struct m_snap *p = &w->snaps[b->parent];
                for (int k = 0; k < p->nmetas && s->nmetas < M_REFS - 1; k++)
                    if (m_below(4) != 0)
                        s->metas[s->nmetas++] = p->metas[k];
            }
            if (b->parent < 0 || s->nmetas == 0 || m_below(4) != 0) {
                s->index = true;
                s->index_time = w->now;
                s->metas[s->nmetas++] = b->snap;
            }
            s->indexed = true;
        }
        b->phase = B_INDEXED;
        return true;
    case B_INDEXED: {
        struct m_snap *s = &w->snaps[b->snap];
        /* never start the manifest once maxRuntime has passed since the start */
        if (w->now - b->start >= s->max_runtime)
            return false;
        s->manifest = true;
        s->manifest_time = w->now;
        s->version++;
        b->phase = B_DONE;
        return false;
    }
    case B_DONE:
        return false;
    }
    return false;
}

/* Forget any manifest; half the time the newest, the one a starting backup takes as its parent. */
static void m_forget(struct m_world *w)
{
    int live[M_SNAPS], n = 0;
    if (m_below(2) == 0) {
        int newest = m_newest_manifest(w);
        if (newest >= 0)
            w->snaps[newest].manifest = false;
        return;
    }
    for (int i = 0; i < w->nsnaps; i++)
        if (w->snaps[i].manifest)
            live[n++] = i;
    if (n > 0)
        w->snaps[live[m_below((unsigned)n)]].manifest = false;
}

/*
 * A manifest moved onto another's id (docs/repository.md: a bucket writer's copy, or a
 * key holder's rewrite): s's manifest is written again with t's trees, and t's is
 * deleted. Only between snapshots no running backup has taken as its parent: a backup
 * reuses what its parent's trees named when it read them, which gc cannot know once
 * the manifest says otherwise (gc reads a listed parent's manifest, not the record's
 * copy of its roots). Without a cache this loses nothing: gc reads s's new trees.
 */
static void m_move(struct m_world *w, const struct m_backup *backups, const bool *active)
{
    int live[M_SNAPS], n = 0;
    for (int i = 0; i < w->nsnaps; i++) {
        bool parent = false;
        for (int k = 0; k < M_BACKUPS; k++)
            parent |= active[k] && backups[k].phase != B_IDLE && backups[k].parent == i;
        if (w->snaps[i].manifest && w->snaps[i].indexed && !parent)
            live[n++] = i;
    }
    if (n < 2)
        return;
    int a = (int)m_below((unsigned)n), b = (int)m_below((unsigned)(n - 1));
    struct m_snap *s = &w->snaps[live[a]], *t = &w->snaps[live[b >= a ? b + 1 : b]];
    memcpy(s->metas, t->metas, sizeof(s->metas));
    s->nmetas = t->nmetas;
    memcpy(s->packs, t->packs, sizeof(s->packs));
    s->npacks = t->npacks;
    s->manifest_time = w->now;
    s->version++;
    t->manifest = false;
}

static int m_snap_of(const char *name)
{
    return (int)strtol(name + 1, NULL, 10);
}

/* One step of the collector, as `lode gc` does it; returns false when the run ended. */
static bool m_gc_step(struct m_world *w, struct m_gc *gc)
{
    struct util_err err = {0};

    switch (gc->phase) {
    case G_IDLE:
        gc->g = w->now; /* the server's time when the run begins */
        for (int i = 0; i < M_SNAPS; i++) {
            gc->manifest_listed[i] = i < w->nsnaps && w->snaps[i].manifest;
            gc->listed_version[i] = i < w->nsnaps ? w->snaps[i].version : 0;
        }
        gc->phase = G_LISTED_MANIFESTS;
        return true;
    case G_LISTED_MANIFESTS: {
        /* list the run records; read the bodies of those without a listed manifest */
        gc->nruns = 0;
        for (int i = 0; i < w->nsnaps; i++) {
            const struct m_snap *s = &w->snaps[i];
            if (!s->run)
                continue;
            struct gc_run *r = &gc->runs[gc->nruns++];
            memset(r, 0, sizeof(*r));
            r->id = s->name;
            r->time = s->run_time;
            if (!gc->manifest_listed[i]) {
                r->read = true;
                r->max_runtime = s->max_runtime;
                r->parent = s->parent >= 0 ? w->snaps[s->parent].name : NULL;
            }
        }
        int64_t window = w->flaw == M_POLICY_WINDOW
                             ? w->policy_max_runtime + GC_MARGIN_SECONDS
                             : gc_window(w->policy_max_runtime, gc->runs, gc->nruns, gc->g);
        gc->cutoff = gc_cutoff(gc->g, window);
        /* then the bodies of the other records newer than the cutoff */
        for (size_t k = 0; k < gc->nruns; k++) {
            struct gc_run *r = &gc->runs[k];
            const struct m_snap *s = &w->snaps[m_snap_of(r->id)];
            if (!r->read && r->time > gc->cutoff) {
                r->read = true;
                r->max_runtime = s->max_runtime;
                r->parent = s->parent >= 0 ? w->snaps[s->parent].name : NULL;
            }
        }
        gc->phase = G_LISTED_RUNS;
        return true;
    }
    case G_LISTED_RUNS: {
        const char *names[M_SNAPS];
        size_t nnames = 0;
        struct gc_idset ids;
        struct gc_packset refs = {0};

        for (int i = 0; i < M_SNAPS; i++)
            if (gc->manifest_listed[i])
                names[nnames++] = w->snaps[i].name;
        assert_int_equal(gc_protected_ids(names, nnames, gc->runs,
                                          w->flaw == M_NO_C ? 0 : gc->nruns, gc->cutoff, &ids,
                                          &err),
                         0);
        /* read the protected snapshots' manifests and trees; one that is missing stops
         * the run, deleting nothing */
        for (size_t k = 0; k < ids.n; k++) {
            int si = m_snap_of(ids.v[k]);
            const struct m_snap *s = &w->snaps[si];
            struct m_cached *c = &gc->cache[si];
            /* A listed manifest the cache holds as listed: its packs without a read. */
            if (gc->manifest_listed[si] && c->have &&
                (w->flaw == M_CACHE_BY_ID || c->version == gc->listed_version[si])) {
                for (int p = 0; p < c->nmetas; p++) {
                    uint8_t id[GC_PACK_ID_LEN];
                    gc_meta_pack_id(w->snaps[c->metas[p]].name, 0, id);
                    gc_packset_add(&refs, id);
                }
                for (int p = 0; p < c->npacks; p++) {
                    uint8_t id[GC_PACK_ID_LEN];
                    pack_of((uint32_t)c->packs[p], id);
                    gc_packset_add(&refs, id);
                }
                continue;
            }
            /* a forgotten manifest's trees are known from a run record naming it as
             * its parent (which carries the parent's roots) */
            bool named = false;
            for (size_t r = 0; r < gc->nruns && w->flaw != M_NO_C; r++)
                named |= gc->runs[r].read && gc->runs[r].parent != NULL &&
                         strcmp(gc->runs[r].parent, s->name) == 0;
            if ((!s->manifest && !named) || !s->indexed || !m_metas_present(w, s)) {
                gc_idset_free(&ids);
                gc_packset_free(&refs);
                gc->phase = G_IDLE;
                return false;
            }
            /* read from its manifest: kept in the cache under the version read */
            if (s->manifest) {
                *c = (struct m_cached){
                    .have = true, .version = s->version, .nmetas = s->nmetas, .npacks = s->npacks};
                memcpy(c->metas, s->metas, sizeof(c->metas));
                memcpy(c->packs, s->packs, sizeof(c->packs));
            }
            for (int p = 0; p < s->nmetas; p++) {
                uint8_t id[GC_PACK_ID_LEN];
                gc_meta_pack_id(w->snaps[s->metas[p]].name, 0, id);
                gc_packset_add(&refs, id);
            }
            for (int p = 0; p < s->npacks; p++) {
                uint8_t id[GC_PACK_ID_LEN];
                pack_of((uint32_t)s->packs[p], id);
                gc_packset_add(&refs, id);
            }
        }
        gc_packset_seal(&refs);
        /* list the objects and decide */
        for (int p = 0; p < M_PACKS; p++) {
            uint8_t id[GC_PACK_ID_LEN];
            pack_of((uint32_t)p, id);
            gc->del_pack[p] =
                p < w->npacks && w->packs[p].present &&
                gc_may_delete(w->packs[p].time, gc->cutoff, gc_packset_has(&refs, id)) == GC_DELETE;
        }
        for (int i = 0; i < M_SNAPS; i++) {
            const struct m_snap *s = &w->snaps[i];
            bool referenced = i < w->nsnaps && gc_idset_has(&ids, s->name);
            uint8_t meta[GC_PACK_ID_LEN];
            gc_meta_pack_id(s->name, 0, meta);
            gc->del_index[i] =
                i < w->nsnaps && s->index &&
                gc_may_delete(s->index_time, gc->cutoff,
                              w->flaw == M_META_BY_ID ? referenced : gc_packset_has(&refs, meta)) ==
                    GC_DELETE;
            gc->del_run[i] = i < w->nsnaps && s->run &&
                             gc_may_delete(s->run_time, gc->cutoff, referenced) == GC_DELETE;
            /* the uploads under meta/, listed with their initiation times */
            gc->abort_upload[i] =
                i < w->nsnaps && s->upload &&
                gc_may_abort_upload(s->upload_time,
                                    w->flaw == M_UPLOAD_AT_G ? gc->g : gc->cutoff) == GC_DELETE;
        }
        gc_idset_free(&ids);
        gc_packset_free(&refs);
        gc->phase = G_PLANNED;
        return true;
    }
    case G_PLANNED: {
        /* delete in batches, other actors' steps in between */
        bool left = false;
        for (int p = 0; p < M_PACKS; p++) {
            if (gc->del_pack[p] && m_below(2) == 0) {
                w->packs[p].present = false;
                gc->del_pack[p] = false;
            }
            left |= gc->del_pack[p];
        }
        for (int i = 0; i < M_SNAPS; i++) {
            if (gc->del_index[i] && m_below(2) == 0) {
                w->snaps[i].index = false;
                gc->del_index[i] = false;
            }
            if (gc->del_run[i] && m_below(2) == 0) {
                w->snaps[i].run = false;
                gc->del_run[i] = false;
            }
            if (gc->abort_upload[i] && m_below(2) == 0) {
                /* an upload completed since the listing is no longer there to abort */
                if (w->snaps[i].upload) {
                    w->snaps[i].upload = false;
                    w->snaps[i].upload_aborted = true;
                    m_uploads_aborted += w->flaw == M_SAFE;
                }
                gc->abort_upload[i] = false;
            }
            left |= gc->del_index[i] || gc->del_run[i] || gc->abort_upload[i];
        }
        if (left)
            return true;
        gc->phase = G_IDLE;
        return false;
    }
    }
    return false;
}

static void m_gc_run(struct m_world *w, struct m_gc *gc)
{
    gc->phase = G_IDLE;
    while (m_gc_step(w, gc))
        ;
}

/*
 * One seeded schedule; returns true when no manifest ever lost data. With the
 * safe rule, it also checks that garbage is collected in the end.
 */
static bool m_schedule(uint64_t seed, enum m_flaw flaw, int *collected)
{
    static struct m_world w;
    static struct m_gc gc;
    struct m_backup backups[M_BACKUPS];
    bool active[M_BACKUPS] = {false};
    bool gc_active = false;

    m_rng_state = seed;
    memset(&w, 0, sizeof(w));
    memset(&gc, 0, sizeof(gc));
    w.flaw = flaw;
    w.now = 1800000000 + (int64_t)m_below(86400);
    w.policy_max_runtime = 3600 * (1 + (int64_t)m_below(12));

    for (int step = 0; step < M_STEPS && !w.lost && !w.upload_lost; step++) {
        unsigned kind = m_below(100);
        bool idle = true;
        for (int k = 0; k < M_BACKUPS; k++)
            idle &= !active[k];
        if (idle && m_below(3) == 0) /* a quiet spell: the packs of the last snapshot age */
            w.now += 2 * w.policy_max_runtime + m_below((unsigned)(4 * w.policy_max_runtime));
        if (kind < 60)
            w.now += m_below(120);
        else if (kind < 95)
            w.now += m_below(1200);
        else
            w.now += m_below((unsigned)(3 * w.policy_max_runtime));

        unsigned act = m_below(10);
        if (act < 6) {
            int k = (int)m_below(M_BACKUPS);
            if (!active[k]) {
                if (m_below(4) != 0)
                    continue; /* backups start less often than they step */
                memset(&backups[k], 0, sizeof(backups[k]));
                backups[k].phase = B_IDLE;
                active[k] = true;
            }
            active[k] = m_backup_step(&w, &backups[k]);
        } else if (act == 6) {
            if (m_below(4) == 0)
                m_move(&w, backups, active);
            else
                m_forget(&w);
        } else {
            gc_active = m_gc_step(&w, &gc);
            if (!gc_active)
                gc.phase = G_IDLE;
        }
        m_check(&w);
    }
    if (w.lost || w.upload_lost || flaw != M_SAFE)
        return !w.lost && !w.upload_lost;

    /*
     * The end: every backup has stopped; once the clock has passed every
     * window, two runs delete everything that no manifest references.
     */
    if (gc_active)
        while (m_gc_step(&w, &gc))
            m_check(&w);
    w.now += 5 * w.policy_max_runtime + 2 * GC_MARGIN_SECONDS;
    m_gc_run(&w, &gc);
    m_gc_run(&w, &gc);
    m_check(&w);
    bool used[M_PACKS] = {false}, meta_used[M_SNAPS] = {false};
    for (int i = 0; i < w.nsnaps; i++) {
        const struct m_snap *s = &w.snaps[i];
        if (!s->manifest)
            continue;
        assert_true(m_metas_present(&w, s));
        for (int k = 0; k < s->nmetas; k++)
            meta_used[s->metas[k]] = true;
    }
    for (int i = 0; i < w.nsnaps; i++) {
        const struct m_snap *s = &w.snaps[i];
        assert_false(s->upload); /* no upload is left open */
        /* a metadata pack stays exactly while a manifest's trees name it */
        assert_int_equal(s->index, meta_used[i]);
        if (!s->manifest) {
            assert_false(s->run);
            continue;
        }
        for (int k = 0; k < s->npacks; k++)
            used[s->packs[k]] = true;
    }
    for (int p = 0; p < w.npacks; p++) {
        assert_int_equal(w.packs[p].present, used[p]);
        if (!used[p])
            (*collected)++;
    }
    return !w.lost && !w.upload_lost;
}

#ifndef M_SCHEDULES
#define M_SCHEDULES 4000
#endif

static void test_model_safe_rule_never_loses_data(void **state)
{
    int collected = 0;
    for (uint64_t seed = 1; seed <= M_SCHEDULES; seed++)
        if (!m_schedule(seed, M_SAFE, &collected))
            fail_msg("schedule %llu: a manifest lost its index or a pack, or a running "
                     "backup its upload",
                     (unsigned long long)seed);
    /* the schedules did make garbage, and it was collected */
    print_message("packs collected: %d, uploads aborted: %d\n", collected, m_uploads_aborted);
    assert_true(collected > M_SCHEDULES);
    assert_true(m_uploads_aborted > M_SCHEDULES / 4);
}

static void test_model_tells_unsafe_rules(void **state)
{
    int lost_no_c = 0, lost_policy = 0, lost_upload = 0, lost_meta = 0, lost_cache = 0;
    int collected = 0;
    for (uint64_t seed = 1; seed <= M_SCHEDULES; seed++) {
        lost_no_c += !m_schedule(seed, M_NO_C, &collected);
        lost_policy += !m_schedule(seed, M_POLICY_WINDOW, &collected);
        lost_upload += !m_schedule(seed, M_UPLOAD_AT_G, &collected);
        lost_meta += !m_schedule(seed, M_META_BY_ID, &collected);
        lost_cache += !m_schedule(seed, M_CACHE_BY_ID, &collected);
    }
    /* without (c), or with W blind to longer runs, some schedule loses data */
    print_message("lost without (c): %d, with the policy window: %d of %d\n", lost_no_c,
                  lost_policy, M_SCHEDULES);
    print_message("aborting every upload older than G: %d of %d\n", lost_upload, M_SCHEDULES);
    assert_true(lost_no_c > 0);
    assert_true(lost_policy > 0);
    assert_true(lost_upload > 0);
    print_message("metadata packs judged by their own snapshot only: %d of %d\n", lost_meta,
                  M_SCHEDULES);
    assert_true(lost_meta > 0);
    print_message("gc's cache keyed by the id alone: %d of %d\n", lost_cache, M_SCHEDULES);
    assert_true(lost_cache > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_and_live_runs),
        cmocka_unit_test(test_verdict_at_the_cutoff),
        cmocka_unit_test(test_upload_verdict),
        cmocka_unit_test(test_protected_ids),
        cmocka_unit_test(test_packset),
        cmocka_unit_test(test_pack_id_hex),
        cmocka_unit_test(test_model_safe_rule_never_loses_data),
        cmocka_unit_test(test_model_tells_unsafe_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
