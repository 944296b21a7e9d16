/*
 * lode snapshots: the snapshots of a repository, newest first (time, then id,
 * descending). The list, times and marks come from one LIST of snapshots/ (the
 * catalog, docs/repository.md); files and bytes from each manifest's counters,
 * which are not encrypted, so no repository key is needed (with one, pins are checked).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "agent/pin.h"
#include "agent/storage.h"

static void cmd_snapshots_usage(FILE *f)
{
    fprintf(f,
            "usage: lode snapshots [--policy FILE|NS/NAME] [--host H] [--output text|json]\n"
            "                      [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
            "Lists the snapshots of the repository, newest first. The time of a snapshot is\n"
            "the time the storage received its manifest.\n\n"
            "  --policy P        only this policy's (a BackupPolicy file or NAMESPACE/NAME)\n"
            "  --host H          only this host's\n"
            "  --output json     {\"snapshots\":[{\"id\",\"policy\",\"host\",\"time\",\n"
            "                    \"incomplete\",\"suspicious\",\"files\",\"bytes\"}]}\n\n"
            "A pinned snapshot shows its reason among the marks (text). With the key, a pin\n"
            "that does not authenticate is ignored, with a warning. A manifest that is not\n"
            "one (moved, copied or damaged) is skipped with a warning naming it; lode check\n"
            "reports it.\n"
            "%s\n"
            "Exit codes: 0 ok, 1 invalid policy file, 2 usage or storage error.\n",
            cli_storage_usage);
}

static void cmd_snapshots_text(const struct repo_catalog *cat, const struct repo_manifest *m,
                               const struct pin_list *pins)
{
    printf("%-33s  %-20s  %-30s  %-20s  %9s  %14s  %s\n", "ID", "TIME", "POLICY", "HOST", "FILES",
           "BYTES", "MARKS");
    for (size_t i = 0; i < cat->n; i++) {
        const struct repo_snapshot *s = &cat->v[i];
        char t[UTIL_TIME_BUF], pol[2 * REPO_NAME_MAX + 2];
        util_format_utc(s->time, t, sizeof(t));
        snprintf(pol, sizeof(pol), "%s/%s", s->src.ns, s->src.policy);
        printf("%-33s  %-20s  %-30s  %-20s  %9llu  %14llu  %s%s%s%s%s%s\n", s->id, t, pol,
               s->src.host, (unsigned long long)m[i].files, (unsigned long long)m[i].bytes,
               s->incomplete ? "incomplete" : "", s->incomplete && s->suspicious ? "," : "",
               s->suspicious ? "suspicious" : "",
               s->pinned && (s->incomplete || s->suspicious) ? "," : "",
               s->pinned ? "pinned: " : "", s->pinned ? pin_list_reason(pins, s) : "");
    }
    if (cat->n == 0)
        printf("(no snapshots)\n");
}

static void cmd_snapshots_json(const struct repo_catalog *cat, const struct repo_manifest *m)
{
    json_t *root = json_object(), *arr = json_array();
    for (size_t i = 0; i < cat->n; i++) {
        const struct repo_snapshot *s = &cat->v[i];
        json_t *o = json_object();
        char *pol = util_asprintf("%s/%s", s->src.ns, s->src.policy);
        json_object_set_new(o, "id", json_string(s->id));
        json_object_set_new(o, "policy", cli_json_string_lossy(pol));
        json_object_set_new(o, "host", cli_json_string_lossy(s->src.host));
        json_object_set_new(o, "time", cli_json_time(s->time));
        json_object_set_new(o, "incomplete", json_boolean(s->incomplete));
        json_object_set_new(o, "suspicious", json_boolean(s->suspicious));
        json_object_set_new(o, "files", json_integer((json_int_t)m[i].files));
        json_object_set_new(o, "bytes", json_integer((json_int_t)m[i].bytes));
        /* No "pinned" key: the JSON has the contract's keys only (docs/commands.md); the
         * text shows a pin and its reason. */
        json_array_append_new(arr, o);
        free(pol);
    }
    json_object_set_new(root, "snapshots", arr);
    cli_print_json(root);
    json_decref(root);
}

int cmd_snapshots(int argc, char **argv)
{
    static const struct option opts[] = {
        STORAGE_OPTIONS,
        {"policy", required_argument, NULL, 'p'},
        {"host", required_argument, NULL, 'H'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cli_storage_cmd sc = {.name = "snapshots", .usage = cmd_snapshots_usage};
    struct storage st;
    struct repo_catalog cat;
    struct repo_manifest *m = NULL;
    struct pin_list pins = {0};
    size_t skipped = 0;
    bool keyed;
    struct util_err err = {0};
    struct policy_diags diags;
    const char *policy = NULL, *host = NULL;
    char *ns = NULL, *name = NULL;
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if ((rc = cli_storage_cmd_opt(&sc, c, optarg, argv)) != CLI_OPT_OWN) {
            if (rc == CLI_OPT_NEXT)
                continue;
            return rc;
        }
        switch (c) {
        case 'p':
            policy = optarg;
            break;
        case 'H':
            host = optarg;
            break;
        }
    }
    if (optind != argc)
        return cli_usage_error("snapshots", "unexpected argument \"%s\"", argv[optind]);
    if (host != NULL && repo_name_check(host, "--host", &err) != 0)
        return cli_usage_error("snapshots", "%s", err.msg);

    policy_diags_init(&diags);
    if (policy != NULL && cli_policy_name(policy, &ns, &name, &diags, &err) != 0) {
        cli_print_diags(stderr, policy, &diags);
        fprintf(stderr, "lode snapshots: %s\n", err.msg);
        rc = diags.n > 0 ? CLI_INVALID : CLI_USAGE;
        policy_diags_free(&diags);
        return rc;
    }
    policy_diags_free(&diags);

    if (storage_open(&st, &sc.so, &err) != 0) {
        fprintf(stderr, "lode snapshots: %s\n", err.msg);
        free(ns);
        free(name);
        return CLI_USAGE;
    }
    rc = CLI_USAGE;
    /* The key is optional: with it, pins are checked (docs/retention.md). */
    keyed = storage_has_key(&sc.so);
    if (storage_load_config(&st, &sc.so, keyed, &err) != 0 ||
        storage_catalog(&st, ns, name, host, &cat, &err) != 0) {
        fprintf(stderr, "lode snapshots: %s\n", err.msg);
        goto out;
    }
    /* A manifest moved, copied or damaged is skipped with a warning, not the listing's
     * end (docs/repository.md): lode check is what exits 1 for it. */
    if (storage_get_manifests(&st, &cat, "snapshots", &m, &skipped, &err) != 0) {
        fprintf(stderr, "lode snapshots: %s\n", err.msg);
        goto out_cat;
    }
    /* A pinned snapshot's reason: one GET each (docs/retention.md, "Pinned snapshots"). */
    if (pin_check_catalog(&st, keyed ? &st.config.keys : NULL, &cat, "snapshots", &pins, &err) !=
        0) {
        fprintf(stderr, "lode snapshots: %s\n", err.msg);
        goto out_cat;
    }
    if (sc.output == CLI_OUTPUT_JSON)
        cmd_snapshots_json(&cat, m);
    else
        cmd_snapshots_text(&cat, m, &pins);
    if (skipped > 0)
        fprintf(stderr, "lode snapshots: %zu manifest%s skipped: run lode check\n", skipped,
                skipped == 1 ? "" : "s");
    rc = CLI_OK;
    pin_list_free(&pins);
out_cat:
    for (size_t i = 0; m != NULL && i < cat.n; i++)
        repo_manifest_free(&m[i]);
    free(m);
    repo_catalog_free(&cat);
out:
    storage_close(&st);
    free(ns);
    free(name);
    return rc;
}
