/*
 * The plan of one source in `lode gc` (agent/gc_run.h, struct gc_plan) against a
 * stored layout held in memory: the keys a listing would give, with their times and
 * sizes, the protected snapshots as internal/gc computes them, and the run records.
 * What the plan deletes is what docs/gc.md says: old and unreferenced, of this
 * source, of this kind; everything else is kept or left unjudged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent.h"

#define CUTOFF 1800000000 /* G - W */
#define OLD    (CUTOFF - 86400)
#define NEW    (CUTOFF + 60)

struct layout {
    struct gc_source s;
    char a[REPO_ID_LEN + 1], b[REPO_ID_LEN + 1], c[REPO_ID_LEN + 1], d[REPO_ID_LEN + 1];
    uint8_t p1[REPO_HASH_LEN], p2[REPO_HASH_LEN], p3[REPO_HASH_LEN];
    struct gc_idset ids;
    struct gc_packset packs;
};

static void make_id(int64_t t, uint8_t r, char out[REPO_ID_LEN + 1])
{
    uint8_t random[8] = {r, r, r, r, r, r, r, r};
    repo_id_make(t, random, out);
}

static char *key_of(const struct repo_source *src, enum repo_kind kind, const char *id,
                    const uint8_t *pack)
{
    struct repo_key k = {.kind = kind, .src = *src, .seq = 0};
    if (id != NULL)
        memcpy(k.id, id, sizeof(k.id));
    if (pack != NULL)
        memcpy(k.pack, pack, REPO_HASH_LEN);
    return repo_key_build(&k);
}

/*
 * Source ops/web/node-1: snapshot A has a manifest (protected) and uses pack P1;
 * B's manifest was forgotten; C is newer than the cutoff; D's run record is gone.
 */
static void layout_init(struct layout *l)
{
    struct util_err err = {0};
    memset(l, 0, sizeof(*l));
    assert_int_equal(repo_source_set(&l->s.src, "ops", "web", "node-1", &err), 0);
    make_id(OLD - 7200, 1, l->a);
    make_id(OLD - 3600, 2, l->b);
    make_id(NEW, 3, l->c);
    make_id(OLD, 4, l->d);
    memset(l->p1, 0x11, sizeof(l->p1));
    memset(l->p2, 0x22, sizeof(l->p2));
    memset(l->p3, 0x33, sizeof(l->p3));

    const char *names[] = {l->a};
    assert_int_equal(gc_protected_ids(names, 1, NULL, 0, CUTOFF, &l->ids, &err), 0);
    gc_packset_add(&l->packs, l->p1);
    /* A's trees name the metadata pack its own run wrote (A.0). */
    uint8_t meta[GC_PACK_ID_LEN];
    gc_meta_pack_id(l->a, 0, meta);
    gc_packset_add(&l->packs, meta);
    gc_packset_seal(&l->packs);

    l->s.runs = calloc(4, sizeof(*l->s.runs));
    const char *ids[] = {l->a, l->b, l->c, l->d};
    int64_t times[] = {OLD - 7200, OLD - 3600, NEW, OLD};
    for (size_t i = 0; i < 4; i++) {
        memcpy(l->s.runs[i].id, ids[i], REPO_ID_LEN + 1);
        l->s.runs[i].time = times[i];
        l->s.runs[i].size = 100 + i;
    }
    l->s.runs[3].gone = true;
    l->s.nruns = 4;
}

static void layout_free(struct layout *l)
{
    gc_idset_free(&l->ids);
    gc_packset_free(&l->packs);
    free(l->s.runs);
}

static struct gc_plan plan_of(struct layout *l, enum repo_kind kind)
{
    return (struct gc_plan){
        .s = &l->s, .ids = &l->ids, .packs = &l->packs, .kind = kind, .cutoff = CUTOFF};
}

static void feed(struct gc_plan *p, char *key, int64_t mtime, uint64_t size)
{
    gcrun_plan_object(p, key, mtime, size);
    free(key);
}

static void test_packs_old_and_unreferenced_go(void **state)
{
    struct layout l;
    struct repo_source other;
    struct util_err err = {0};
    layout_init(&l);
    assert_int_equal(repo_source_set(&other, "ops", "web", "node-2", &err), 0);
    struct gc_plan p = plan_of(&l, REPO_KEY_PACK);

    feed(&p, key_of(&l.s.src, REPO_KEY_PACK, NULL, l.p1), OLD, 1000); /* referenced */
    feed(&p, key_of(&l.s.src, REPO_KEY_PACK, NULL, l.p2), OLD, 2000); /* goes */
    feed(&p, key_of(&l.s.src, REPO_KEY_PACK, NULL, l.p3), NEW, 3000); /* too new */
    /* Another source's pack and a name that is no pack are not this plan's to judge. */
    feed(&p, key_of(&other, REPO_KEY_PACK, NULL, l.p2), OLD, 4000);
    gcrun_plan_object(&p, "data/ops/web/node-1/not-a-pack", OLD, 5);

    assert_int_equal(p.total, 3);
    assert_int_equal(p.kept, 2);
    assert_int_equal(p.ndel, 1);
    char *want = key_of(&l.s.src, REPO_KEY_PACK, NULL, l.p2);
    assert_string_equal(p.del[0], want);
    assert_int_equal(p.sizes[0], 2000);
    free(want);
    gcrun_plan_free(&p);
    assert_int_equal(p.ndel, 0);
    layout_free(&l);
}

static void test_unreferenced_metadata_packs_go(void **state)
{
    struct layout l;
    layout_init(&l);
    struct gc_plan p = plan_of(&l, REPO_KEY_META);

    feed(&p, key_of(&l.s.src, REPO_KEY_META, l.a, NULL), OLD, 10); /* referenced */
    feed(&p, key_of(&l.s.src, REPO_KEY_META, l.b, NULL), OLD, 12); /* goes */
    feed(&p, key_of(&l.s.src, REPO_KEY_META, l.c, NULL), NEW, 14); /* too new */
    /* Another number of A's run is another pack: nothing names it. */
    char *a1 = util_asprintf("meta/ops/web/node-1/%s.1.meta", l.a);
    gcrun_plan_object(&p, a1, OLD, 16);
    /* A manifest and a name that is no metadata pack are not judged by this pass. */
    feed(&p, key_of(&l.s.src, REPO_KEY_MANIFEST, l.b, NULL), OLD, 15);
    gcrun_plan_object(&p, "meta/ops/web/node-1/x.files", OLD, 5);

    assert_int_equal(p.total, 4);
    assert_int_equal(p.kept, 2);
    assert_int_equal(p.ndel, 2);
    char *b0 = key_of(&l.s.src, REPO_KEY_META, l.b, NULL);
    assert_string_equal(p.del[0], b0);
    assert_string_equal(p.del[1], a1);
    free(b0);
    free(a1);
    gcrun_plan_free(&p);
    layout_free(&l);
}

static void test_run_records_of_unprotected_old_runs_go(void **state)
{
    struct layout l;
    layout_init(&l);
    struct gc_plan p = plan_of(&l, REPO_KEY_RUN);

    gcrun_plan_runs(&p);
    /* A: protected; B: old and unprotected, goes; C: too new; D: gone already. */
    assert_int_equal(p.ndel, 1);
    char *want = key_of(&l.s.src, REPO_KEY_RUN, l.b, NULL);
    assert_string_equal(p.del[0], want);
    assert_int_equal(p.sizes[0], 101);
    free(want);
    gcrun_plan_free(&p);
    layout_free(&l);
}

static void test_a_run_newer_than_the_cutoff_protects_its_parent(void **state)
{
    struct layout l;
    struct util_err err = {0};
    layout_init(&l);
    /* C's run record (newer than the cutoff) names B as its parent: B is protected
     * (docs/gc.md, condition (c)), so its record does not go (its packs and
     * metadata packs are kept through the trees gc reads, test_unreferenced_...). */
    gc_idset_free(&l.ids);
    const char *names[] = {l.a};
    struct gc_run runs[] = {
        {.id = l.c, .time = NEW, .read = true, .max_runtime = 3600, .parent = l.b}};
    assert_int_equal(gc_protected_ids(names, 1, runs, 1, CUTOFF, &l.ids, &err), 0);
    struct gc_plan pr = plan_of(&l, REPO_KEY_RUN);
    gcrun_plan_runs(&pr);
    assert_int_equal(pr.ndel, 0);
    gcrun_plan_free(&pr);
    layout_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packs_old_and_unreferenced_go),
        cmocka_unit_test(test_unreferenced_metadata_packs_go),
        cmocka_unit_test(test_run_records_of_unprotected_old_runs_go),
        cmocka_unit_test(test_a_run_newer_than_the_cutoff_protects_its_parent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
