/*
 * options: the flags several commands share, parsed in one place (cli.h, "Shared
 * flags"): the repository's (STORAGE_OPTIONS) and the cluster's (KUBE_OPTIONS).
 */
#include <getopt.h>

#include "cli.h"
#include "kubeutil.h"

const char cli_storage_usage[] =
    "  --repo URL        s3:http(s)://HOST[:PORT]/BUCKET[/PREFIX] (default $LODE_REPOSITORY);\n"
    "                    credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and\n"
    "                    AWS_REGION (default us-east-1)\n"
    "  --cacert FILE     a CA to trust besides the system's (default $LODE_CACERT)\n"
    "  --key-file FILE   the repository key (default $LODE_KEY_FILE)\n";

bool cli_storage_opt(struct storage_opts *o, int c, const char *arg)
{
    switch (c) {
    case STORAGE_OPT_REPO:
        o->repo = arg;
        return true;
    case STORAGE_OPT_CACERT:
        o->cacert = arg;
        return true;
    case STORAGE_OPT_KEY_FILE:
        o->key_file = arg;
        return true;
    default:
        return false;
    }
}

int cli_storage_cmd_opt(struct cli_storage_cmd *cmd, int c, const char *arg, char *const argv[])
{
    if (cli_storage_opt(&cmd->so, c, arg))
        return CLI_OPT_NEXT;
    switch (c) {
    case 'o':
        if (cli_output_value(arg, &cmd->output) != 0)
            return cli_usage_error(cmd->name, "--output %s: give text or json", arg);
        return CLI_OPT_NEXT;
    case 'h':
        cmd->usage(stdout);
        return CLI_OK;
    case '?':
    case ':':
        /* getopt_long has moved past the flag it refused. */
        return cli_usage_error(cmd->name, "unknown or incomplete option %s", argv[optind - 1]);
    default:
        return CLI_OPT_OWN;
    }
}

int cli_kube_opt(struct cli_kube_opts *o, const char *cmd, int c, const char *arg)
{
    switch (c) {
    case 'n':
        if (arg[0] == '\0') {
            cli_usage_error(cmd, "--namespace is empty");
            return -1;
        }
        o->namespace = arg;
        return 1;
    case KUBE_OPT_KUBECONFIG:
        o->kubeconfig = arg;
        return 1;
    case KUBE_OPT_CONTEXT:
        o->context = arg;
        return 1;
    default:
        return 0;
    }
}
