/*
 * lode forget against a repository (docs/retention.md, "Retention through storage").
 *
 * One LIST of snapshots/<ns>/<policy>/ (or .../<host>/ with --host) gives every
 * snapshot of the policy, its time (the manifest's LastModified) and its marks,
 * without reading an object. The retention engine decides per host, in the
 * schedule's zone. The forgotten snapshots' manifests are deleted (agent/forget.h) with
 * DeleteObjects, at most 1,000 keys a request, each key's result checked; then,
 * only for manifests that are gone, their .incomplete marks (a mark deleted first
 * would make a snapshot whose manifest survived look complete). .suspicious marks
 * are never deleted, and suspicious snapshots are never forgotten.
 *
 * Scope: the prefix is built from the parsed namespace, policy and host by
 * repo_key_prefix, with the trailing '/', so "web" never reaches "web-1"; and
 * internal/prune checks every snapshot against the policy (and host) before a key
 * is planned. The decision and the keys are internal/prune's, the same the
 * controller deletes. A listing that fails or is cut short deletes nothing
 * (storage_catalog).
 *
 * Costs: about 100 bytes a snapshot for the catalog and 32 for the engine; one
 * LIST request per 1,000 keys and one DeleteObjects request per 1,000 forgotten
 * snapshots (one more per 1,000 forgotten incomplete ones).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "binding/binding.h"
#include "cli.h"
#include "prune/prune.h"
#include "agent/forget.h"
#include "agent/pin.h"

/* One host of `lode forget --output json`'s storage form: the offline answer and its host. */
static json_t *forget_host_json(const char *host, const struct ret_snapshot *snaps, size_t n,
                                const struct ret_decision *d)
{
    json_t *o = json_pack("{s:o}", "host", cli_json_string_lossy(host));
    json_t *plan = cli_forget_json(snaps, n, d);
    json_object_update(o, plan); /* host first, as before */
    json_decref(plan);
    return o;
}

/* Loads the policy; prints what is wrong and returns the exit code on failure. */
static int forget_load_policy(const char *arg, const struct tz_db *db, struct policy *pol)
{
    struct policy_diags diags;
    struct util_err err = {0};
    struct stat sb;
    int rc;

    policy_diags_init(&diags);
    rc = cli_policy_load(arg, db, NULL, pol, &diags, &err);
    if (rc != 0) {
        if (diags.n > 0)
            cli_print_diags(stderr, strcmp(arg, "-") == 0 ? "<stdin>" : arg, &diags);
        fprintf(stderr, "lode forget: %s\n", err.msg);
        /* NS/NAME that the cluster does not know: most often a deleted policy, whose
         * snapshots stay (docs/retention.md, "Snapshots of a deleted policy"). */
        if (rc == UTIL_ENOENT && stat(arg, &sb) != 0)
            fprintf(stderr,
                    "lode forget: if %s was deleted, its snapshots are still in the repository; "
                    "to prune them, give --policy FILE: a BackupPolicy whose metadata names %s "
                    "and whose retention is the rules to apply (its last YAML will do), with "
                    "--dry-run first (docs/retention.md, \"Snapshots of a deleted policy\")\n",
                    arg, arg);
        rc = rc == UTIL_EINVAL || rc == UTIL_ENOENT ? CLI_INVALID : CLI_USAGE;
    }
    policy_diags_free(&diags);
    return rc;
}

int cmd_forget_storage(const struct cmd_forget_storage_args *a)
{
    struct tz_db *db = NULL;
    struct tz_zone *zone = NULL;
    struct policy pol;
    struct storage st;
    struct repo_catalog cat;
    struct prune_plan plan = {0};
    struct util_err err = {0};
    json_t *hosts = NULL;
    struct forget_checked checked = {0};
    struct pin_list pins = {0};
    bool opened = false, keyed = false;
    int rc;

    memset(&pol, 0, sizeof(pol));
    repo_catalog_init(&cat);
    if (a->host != NULL && repo_name_check(a->host, "host", &err) != 0)
        return cli_usage_error("forget", "--host: %s", err.msg);
    if ((rc = cli_open_tzdb(&db, a->zoneinfo)) != CLI_OK)
        return rc;
    if ((rc = forget_load_policy(a->policy, db, &pol)) != CLI_OK)
        goto out;
    if ((rc = binding_zone(&pol, db, &zone, &err)) != 0) {
        fprintf(stderr, "lode forget: %s\n", err.msg);
        rc = rc == UTIL_ENOENT ? CLI_INVALID : CLI_USAGE;
        goto out;
    }
    if (storage_open(&st, a->storage, &err) != 0) {
        fprintf(stderr, "lode forget: %s\n", err.msg);
        rc = CLI_USAGE;
        goto out;
    }
    opened = true;
    /* With the key, pins and the kept snapshots' manifests are checked (below). */
    keyed = storage_has_key(a->storage);
    if (storage_load_config(&st, a->storage, keyed, &err) != 0 ||
        storage_catalog(&st, pol.namespace, pol.name, a->host, &cat, &err) != 0) {
        fprintf(stderr, "lode forget: %s; nothing was deleted\n", err.msg);
        rc = CLI_USAGE;
        goto out;
    }
    /* Pins, read once: a pin without a valid tag keeps nothing (docs/retention.md). */
    if (pin_check_catalog(&st, keyed ? &st.config.keys : NULL, &cat, "forget", &pins, &err) != 0) {
        fprintf(stderr, "lode forget: %s; nothing was deleted\n", err.msg);
        rc = CLI_USAGE;
        goto out;
    }
    for (size_t i = 0; !keyed && i < cat.n; i++)
        if (cat.v[i].pinned) {
            fprintf(stderr, "lode forget: pins are taken as listed: give the repository key "
                            "(--key-file) to check them (docs/retention.md)\n");
            break;
        }
    /* The decision and the keys, as the controller makes them (internal/prune); with the
     * key, again without each kept snapshot whose manifest does not authenticate. */
    for (;;) {
        size_t dropped = 0;
        rc = prune_plan_build(&plan, &cat, pol.namespace, pol.name, a->host, &pol.retention, zone,
                              &err);
        if (rc != 0) {
            fprintf(stderr, "lode forget: %s; nothing was deleted\n", err.msg);
            rc = rc == UTIL_EINVAL ? CLI_INVALID : CLI_USAGE;
            goto out;
        }
        if (!keyed || plan.nmanifests == 0)
            break;
        if (forget_check_kept(&st, &st.config.keys, &cat, &plan, &checked, &dropped, &err) != 0) {
            fprintf(stderr, "lode forget: %s; nothing was deleted\n", err.msg);
            rc = CLI_USAGE;
            goto out;
        }
        if (dropped == 0)
            break;
        prune_plan_free(&plan);
    }

    hosts = json_array();
    if (a->output == CLI_OUTPUT_TEXT)
        cli_forget_print_rules(&pol, zone);
    for (size_t h = 0; h < plan.nhosts; h++) {
        const struct prune_host *ph = &plan.hosts[h];
        if (a->output == CLI_OUTPUT_JSON) {
            json_array_append_new(hosts, forget_host_json(ph->host, plan.snaps + ph->from, ph->n,
                                                          plan.dec + ph->from));
        } else {
            struct ret_snapshot_list list = {.v = plan.snaps + ph->from, .n = ph->n};
            printf("host %s:\n", ph->host);
            cli_forget_print_table(zone, &list, plan.dec + ph->from);
            printf("\n");
        }
    }

    /* Pinned snapshots with their reasons (docs/retention.md, "Pinned snapshots"), in the
     * text; the JSON keeps the contract's keys only (docs/commands.md): a pinned snapshot
     * is in "keep" with the reason "pinned". */
    for (size_t i = 0; i < cat.n && a->output == CLI_OUTPUT_TEXT; i++) {
        if (!cat.v[i].pinned)
            continue;
        printf("pinned on host %s: %s: %s\n", cat.v[i].src.host, cat.v[i].id,
               pin_list_reason(&pins, &cat.v[i]));
    }

    rc = CLI_OK;
    if (!a->dry_run && plan.nmanifests > 0) {
        struct forget_outcome fo;
        if (forget_apply(&st, &plan, &fo) != 0)
            rc = CLI_USAGE;
        if (a->output == CLI_OUTPUT_TEXT)
            printf("deleted %zu manifest%s and %zu .incomplete mark%s in %u request%s\n",
                   fo.manifests_deleted, fo.manifests_deleted == 1 ? "" : "s", fo.marks_deleted,
                   fo.marks_deleted == 1 ? "" : "s", fo.requests, fo.requests == 1 ? "" : "s");
        if (fo.manifests_locked > 0)
            fprintf(stderr,
                    "lode forget: %zu manifest%s kept: Object Lock retains them until their "
                    "retention ends (docs/security.md)\n",
                    fo.manifests_locked, fo.manifests_locked == 1 ? "" : "s");
        if (rc != CLI_OK)
            fprintf(stderr,
                    "lode forget: %zu of %zu manifests and %zu of %zu marks could not "
                    "be deleted; run forget again\n",
                    fo.manifests_failed, fo.manifests, fo.marks_failed, fo.marks);
    } else if (a->output == CLI_OUTPUT_TEXT) {
        printf("%s\n", a->dry_run ? "dry run: nothing was deleted" : "nothing to delete");
    }
    if (a->output == CLI_OUTPUT_JSON) {
        json_t *root = json_pack("{s:O}", "hosts", hosts);
        cli_print_json(root);
        json_decref(root);
    }

out:
    pin_list_free(&pins);
    forget_checked_free(&checked);
    json_decref(hosts);
    prune_plan_free(&plan);
    repo_catalog_free(&cat);
    if (opened)
        storage_close(&st);
    tz_zone_free(zone);
    policy_free(&pol);
    tz_db_close(db);
    return rc;
}
