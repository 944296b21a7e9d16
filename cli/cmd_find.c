/*
 * lode find PATTERN [--policy P] [--host H]: which snapshots hold a path, newest
 * first (docs/browsing.md). An absolute path is looked up in each snapshot with a few
 * ranged reads of its file list; a glob pattern reads each list, except the leaves an
 * earlier snapshot already searched without a match (agent/browse.h's skip list).
 *
 * Exit codes: 0 found in at least one snapshot; 1 found in none, a wrong key, or
 * damaged metadata; 2 usage or the repository cannot be read.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "cli.h"
#include "glob/glob.h"

static void cmd_find_usage(FILE *f)
{
    fprintf(
        f,
        "usage: lode find PATTERN [--policy FILE|NS/NAME] [--host H] [--output text|json]\n"
        "                 [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
        "Lists the snapshots that hold PATTERN, newest first, with the matching entries.\n"
        "PATTERN is an absolute path (/etc/hosts) or a pattern as in a policy's\n"
        "exclude (docs/policy.md): '/etc/*.conf' from the root, '*.conf' at any depth,\n"
        "'**' any number of directories.\n\n"
        "  --policy P        only this policy's snapshots (a file or NAMESPACE/NAME)\n"
        "  --host H          only this host's\n"
        "  --output json     {\"pattern\",\"snapshots\":[{\"id\",\"policy\",\"host\",\"time\",\n"
        "                    \"entries\":[...as lode ls]}]}\n"
        "%s\n"
        "Exit codes: 0 found; 1 in no snapshot, a wrong key, or damaged metadata;\n"
        "2 usage, or the repository cannot be read.\n",
        cli_storage_usage);
}

struct cmd_find_out {
    const struct repo_snapshot *snap;
    json_t *entries; /* this snapshot's, --output json */
    uint64_t matches;
};

static int cmd_find_entry_cb(void *arg, const struct repo_file *f)
{
    struct cmd_find_out *o = arg;
    o->matches++;
    if (o->entries != NULL) {
        json_array_append_new(o->entries, cli_browse_entry_json(f));
        return 0;
    }
    printf("%s %s/%s/%s  ", o->snap->id, o->snap->src.ns, o->snap->src.policy, o->snap->src.host);
    cli_browse_entry_text(stdout, f);
    return 0;
}

int cmd_find(int argc, char **argv)
{
    static const struct option opts[] = {{"policy", required_argument, NULL, 'p'},
                                         {"host", required_argument, NULL, 'H'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         STORAGE_OPTIONS,
                                         {0, 0, 0, 0}};
    struct cli_storage_cmd sc = {.name = "find", .usage = cmd_find_usage};
    struct storage st;
    struct repo_catalog cat;
    struct browse_skip skip = {0};
    struct util_err e = {0};
    struct policy_diags diags;
    const char *policy = NULL, *host = NULL, *pattern;
    char *ns = NULL, *name = NULL;
    json_t *snaps = NULL;
    uint64_t found = 0;
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
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
    if (argc - optind != 1)
        return cli_usage_error("find", "give one PATTERN");
    pattern = argv[optind];
    if (glob_check(pattern, strlen(pattern), &e) != 0)
        return cli_usage_error("find", "%s: %s", pattern, e.msg);
    if (host != NULL && repo_name_check(host, "--host", &e) != 0)
        return cli_usage_error("find", "%s", e.msg);
    policy_diags_init(&diags);
    if (policy != NULL && cli_policy_name(policy, &ns, &name, &diags, &e) != 0) {
        cli_print_diags(stderr, policy, &diags);
        fprintf(stderr, "lode find: %s\n", e.msg);
        rc = diags.n > 0 ? CLI_INVALID : CLI_USAGE;
        policy_diags_free(&diags);
        return rc;
    }
    policy_diags_free(&diags);
    if ((rc = storage_open_keyed(&st, &sc.so, &e)) != 0) {
        fprintf(stderr, "lode find: %s\n", e.msg);
        rc = cli_exit_code(rc);
        goto out;
    }
    if ((rc = storage_catalog(&st, ns, name, host, &cat, &e)) != 0) {
        fprintf(stderr, "lode find: %s\n", e.msg);
        rc = cli_exit_code(rc);
        goto out_st;
    }
    if (sc.output == CLI_OUTPUT_JSON)
        snaps = json_array();
    for (size_t i = 0; i < cat.n && rc == 0; i++) {
        struct cmd_find_out o = {.snap = &cat.v[i]};
        struct browse b;
        if ((rc = browse_open_source(&b, &st, &cat.v[i].src, cat.v[i].id, &e)) != 0)
            break;
        if (snaps != NULL)
            o.entries = json_array();
        rc = browse_find(&b, pattern, &skip, cmd_find_entry_cb, &o, &e);
        browse_close(&b);
        found += o.matches;
        if (o.entries != NULL && o.matches > 0) {
            char *pol = util_asprintf("%s/%s", cat.v[i].src.ns, cat.v[i].src.policy);
            json_t *s = json_object();
            json_object_set_new(s, "id", json_string(cat.v[i].id));
            json_object_set_new(s, "policy", cli_json_string_lossy(pol));
            json_object_set_new(s, "host", cli_json_string_lossy(cat.v[i].src.host));
            json_object_set_new(s, "time", cli_json_time(cat.v[i].time));
            json_object_set_new(s, "entries", o.entries);
            json_array_append_new(snaps, s);
            free(pol);
        } else {
            json_decref(o.entries);
        }
    }
    if (rc != 0) {
        fprintf(stderr, "lode find: %s\n", e.msg);
        rc = cli_exit_code(rc);
    } else {
        if (snaps != NULL) {
            json_t *j = json_object();
            json_object_set_new(j, "pattern", cli_json_string_lossy(pattern));
            json_object_set_new(j, "snapshots", snaps);
            snaps = NULL;
            cli_print_json(j);
            json_decref(j);
        }
        if (found == 0) {
            fprintf(stderr, "lode find: no snapshot holds %s (%zu searched)\n", pattern, cat.n);
            rc = CLI_INVALID;
        }
    }
    json_decref(snaps);
    browse_skip_free(&skip);
    repo_catalog_free(&cat);
out_st:
    storage_close(&st);
out:
    free(ns);
    free(name);
    return rc;
}
