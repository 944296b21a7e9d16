/*
 * lode mark: sets or clears a snapshot's .suspicious mark by hand (docs/anomaly.md), or
 * pins and unpins it (docs/retention.md, "Pinned snapshots"; the mark is agent/pin.c's).
 *
 * The mark is the object snapshots/<ns>/<policy>/<host>/<id>.suspicious beside the
 * manifest, holding the tag the anomaly detector's mark holds; a pin is <id>.pinned,
 * holding its reason and a tag (agent/pin.h). Both tags need the repository key. A marked
 * snapshot is always kept by retention and takes no slot; clearing the mark
 * lets the next forget decide about it like any other.
 *
 * The id alone names the snapshot: the catalog (one LIST request per 1,000
 * snapshots, narrowed by --policy and --host) finds its source. Both directions
 * are idempotent: marking a marked snapshot and clearing an unmarked one change
 * nothing and exit 0, saying so. An id that is not in the repository exits 1.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "agent/pin.h"
#include "agent/storage.h"

static void cmd_mark_usage(FILE *f)
{
    fprintf(
        f,
        "usage: lode mark ID (--suspicious | --clear | --pin REASON | --unpin)\n"
        "                 [--policy FILE|NS/NAME] [--host H]\n"
        "                 [--output text|json] [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
        "Marks snapshot ID suspicious (retention keeps it, whatever the rules say, until\n"
        "the mark is cleared) or clears the mark. Marking a marked snapshot or clearing an\n"
        "unmarked one changes nothing and succeeds.\n\n"
        "  --suspicious      write <id>.suspicious beside the manifest, with a tag only the\n"
        "                    repository key makes (the key is needed)\n"
        "  --clear           delete it\n"
        "  --pin REASON      pin it: retention never forgets it, and it takes no slot,\n"
        "                    until unpinned; the reason is shown with it (a second\n"
        "                    --pin changes the reason); the pin carries a tag only the\n"
        "                    repository key makes (the key is needed)\n"
        "  --unpin           delete the pin\n"
        "  --policy P        look for ID only among this policy's snapshots\n"
        "  --host H          look for ID only among this host's snapshots\n"
        "  --output json     {\"id\",\"policy\":\"NS/NAME\",\"host\",\"suspicious\","
        "\"changed\"}, or\n"
        "                    with --pin/--unpin {\"id\",\"policy\",\"host\",\"pinned\","
        "\"reason\",\"changed\"}\n"
        "%s\n"
        "Exit codes: 0 ok, 1 no such snapshot, 2 usage or I/O error.\n",
        cli_storage_usage);
}

/* Finds the one snapshot with this id; prints why not and returns the exit code. */
static int cmd_mark_find(struct storage *st, const char *id, const char *ns, const char *policy,
                         const char *host, struct repo_snapshot *out)
{
    struct repo_catalog cat;
    struct util_err err = {0};
    size_t found = 0;

    if (storage_catalog(st, ns, policy, host, &cat, &err) != 0) {
        fprintf(stderr, "lode mark: %s\n", err.msg);
        return CLI_USAGE;
    }
    for (size_t i = 0; i < cat.n; i++) {
        if (strcmp(cat.v[i].id, id) != 0)
            continue;
        if (found++ == 0)
            *out = cat.v[i];
        else
            fprintf(stderr,
                    "lode mark: %s is a snapshot of %s/%s/%s and of %s/%s/%s: give "
                    "--policy and --host\n",
                    id, out->src.ns, out->src.policy, out->src.host, cat.v[i].src.ns,
                    cat.v[i].src.policy, cat.v[i].src.host);
    }
    repo_catalog_free(&cat);
    if (found == 0) {
        fprintf(stderr, "lode mark: no snapshot %s in %s%s%s%s%s%s\n", id, st->url,
                policy ? " of policy " : "", policy ? ns : "", policy ? "/" : "",
                policy ? policy : "", host ? " on that host" : "");
        return CLI_INVALID;
    }
    return found == 1 ? CLI_OK : CLI_USAGE;
}

/* --pin REASON (reason set) or --unpin: writes or deletes the mark and says what it did. */
static int cmd_mark_pin(struct storage *st, const struct repo_snapshot *snap, const char *reason,
                        enum cli_output output)
{
    struct util_err err = {0};
    bool changed = false;
    int rc = reason != NULL ? pin_set(st, &st->config.keys, snap, reason, &changed, &err)
                            : pin_clear(st, snap, &changed, &err);
    if (rc != 0) {
        fprintf(stderr, "lode mark: %s\n", err.msg);
        return CLI_USAGE;
    }
    if (output == CLI_OUTPUT_JSON) {
        char *pol = util_asprintf("%s/%s", snap->src.ns, snap->src.policy);
        json_t *o = json_pack(
            "{s:s, s:o, s:o, s:b, s:o, s:b}", "id", snap->id, "policy", cli_json_string_lossy(pol),
            "host", cli_json_string_lossy(snap->src.host), "pinned", reason != NULL, "reason",
            reason != NULL ? json_string(reason) : json_null(), "changed", changed);
        cli_print_json(o);
        json_decref(o);
        free(pol);
    } else {
        printf("%s/%s/%s %s: %s%s%s\n", snap->src.ns, snap->src.policy, snap->src.host, snap->id,
               reason != NULL ? (changed ? "pinned: " : "was already pinned: ")
                              : (changed ? "unpinned" : "was not pinned: nothing to unpin"),
               reason != NULL ? reason : "", "");
    }
    return CLI_OK;
}

int cmd_mark(int argc, char **argv)
{
    struct cli_storage_cmd sc = {.name = "mark", .usage = cmd_mark_usage};
    const char *policy_arg = NULL, *host = NULL, *id, *reason = NULL;
    int action = 0; /* 's', 'c', 'P' (pin) or 'U' (unpin) */
    static const struct option opts[] = {
        {"suspicious", no_argument, NULL, 's'},
        {"clear", no_argument, NULL, 'c'},
        {"pin", required_argument, NULL, 'P'},
        {"unpin", no_argument, NULL, 'U'},
        {"policy", required_argument, NULL, 'p'},
        {"host", required_argument, NULL, 'H'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        STORAGE_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct policy_diags diags;
    struct storage st;
    struct repo_snapshot snap;
    struct util_err err = {0};
    char *ns = NULL, *pname = NULL;
    bool changed = false, opened = false;
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
        case 's':
        case 'c':
        case 'P':
        case 'U':
            if (action != 0 && action != c)
                return cli_usage_error("mark",
                                       "give one of --suspicious, --clear, --pin and --unpin");
            action = c;
            if (c == 'P')
                reason = optarg;
            break;
        case 'p':
            policy_arg = optarg;
            break;
        case 'H':
            host = optarg;
            break;
        }
    }
    if (optind == argc)
        return cli_usage_error("mark", "the snapshot ID is required");
    if (argc - optind > 1)
        return cli_usage_error("mark", "unexpected argument \"%s\"", argv[optind + 1]);
    id = argv[optind];
    if (action == 0)
        return cli_usage_error("mark", "give --suspicious, --clear, --pin REASON or --unpin");
    if (reason != NULL && pin_reason_check(reason, &err) != 0)
        return cli_usage_error("mark", "--pin: %s", err.msg);
    if (repo_id_parse(id, NULL, &err) != 0)
        return cli_usage_error("mark", "%s", err.msg);
    if (host != NULL && repo_name_check(host, "host", &err) != 0)
        return cli_usage_error("mark", "--host: %s", err.msg);
    if (policy_arg != NULL) {
        policy_diags_init(&diags);
        rc = cli_policy_name(policy_arg, &ns, &pname, &diags, &err);
        if (rc != 0) {
            cli_print_diags(stderr, policy_arg, &diags);
            policy_diags_free(&diags);
            fprintf(stderr, "lode mark: %s\n", err.msg);
            return CLI_USAGE;
        }
        policy_diags_free(&diags);
    }

    if (storage_open(&st, &sc.so, &err) != 0) {
        fprintf(stderr, "lode mark: %s\n", err.msg);
        rc = CLI_USAGE;
        goto out;
    }
    opened = true;
    /* Setting a mark or a pin needs the key: each carries a tag only it can make. */
    if (storage_load_config(&st, &sc.so, action == 's' || action == 'P', &err) != 0) {
        fprintf(stderr, "lode mark: %s\n", err.msg);
        rc = CLI_USAGE;
        goto out;
    }
    if ((rc = cmd_mark_find(&st, id, ns, pname, host, &snap)) != CLI_OK)
        goto out;

    if (action == 'P' || action == 'U') {
        rc = cmd_mark_pin(&st, &snap, reason, sc.output);
        goto out;
    }
    if (storage_mark_suspicious(&st, action == 's' ? &st.config.keys : NULL, &snap, action == 's',
                                &changed, &err) != 0) {
        fprintf(stderr, "lode mark: %s\n", err.msg);
        rc = CLI_USAGE;
        goto out;
    }
    rc = CLI_OK;
    if (sc.output == CLI_OUTPUT_JSON) {
        char *pol = util_asprintf("%s/%s", snap.src.ns, snap.src.policy);
        json_t *o =
            json_pack("{s:s, s:o, s:o, s:b, s:b}", "id", snap.id, "policy",
                      cli_json_string_lossy(pol), "host", cli_json_string_lossy(snap.src.host),
                      "suspicious", action == 's', "changed", changed);
        cli_print_json(o);
        json_decref(o);
        free(pol);
    } else {
        printf("%s/%s/%s %s: %s\n", snap.src.ns, snap.src.policy, snap.src.host, snap.id,
               action == 's' ? (changed ? "marked suspicious" : "was already marked suspicious")
                             : (changed ? "mark cleared" : "was not marked: nothing to clear"));
    }

out:
    free(ns);
    free(pname);
    if (opened)
        storage_close(&st);
    return rc;
}
