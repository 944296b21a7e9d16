/*
 * lode init: creates a repository (docs/repository.md): a random master key,
 * wrapped by the repository key, in config.json, written with If-None-Match: * so
 * that a second init of the same place changes nothing and exits 1.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "storage.h"

static void cmd_init_usage(FILE *f)
{
    fprintf(f,
            "usage: lode init [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
            "Creates a repository: config.json with a random master key, wrapped by the\n"
            "repository key (keep that key: without it nothing can be restored). The bucket\n"
            "must exist. A second init of the same place changes nothing and exits 1.\n\n"
            "%s\n"
            "Exit codes: 0 created, 1 a repository already exists there, 2 usage, key or\n"
            "storage error.\n",
            storage_usage);
}

int cmd_init(int argc, char **argv)
{
    static const struct option opts[] = {
        STORAGE_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct storage_opts so = {0};
    struct storage st;
    struct repo_config cfg;
    struct util_err err = {0};
    struct s3_opts po = {.if_none_match = true};
    struct s3_body body = {0};
    char *pass = NULL, *json = NULL;
    size_t passlen = 0;
    int c, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (storage_opt(&so, c, optarg))
            continue;
        if (c == 'h') {
            cmd_init_usage(stdout);
            return CLI_OK;
        }
        return cli_usage_error("init", "unknown flag");
    }
    if (optind != argc)
        return cli_usage_error("init", "unexpected argument \"%s\"", argv[optind]);

    if (storage_read_key(&so, &pass, &passlen, &err) != 0) {
        fprintf(stderr, "lode init: %s\n", err.msg);
        return CLI_USAGE;
    }
    if (storage_open(&st, &so, &err) != 0) {
        fprintf(stderr, "lode init: %s\n", err.msg);
        free(pass);
        return CLI_USAGE;
    }
    rc = repo_config_create(&cfg, pass, passlen, REPO_SCRYPT_N, &err);
    memset(pass, 0, passlen);
    free(pass);
    if (rc != 0) {
        fprintf(stderr, "lode init: %s\n", err.msg);
        rc = CLI_USAGE;
        goto out;
    }
    json = repo_config_encode(&cfg);
    memset(&cfg, 0, sizeof(cfg));
    body.data = json;
    body.len = strlen(json);
    body.content_type = "application/json";
    rc = s3_sync_put(st.s3, "config.json", &body, &po, NULL, &err);
    if (rc == S3_EEXISTS) {
        fprintf(stderr, "lode init: a repository already exists at %s; nothing was changed\n",
                st.url);
        rc = CLI_INVALID;
    } else if (rc != 0) {
        fprintf(stderr, "lode init: cannot write config.json to %s: %s\n", st.url, err.msg);
        rc = CLI_USAGE;
    } else {
        printf("created a repository at %s\n", st.url);
        rc = CLI_OK;
    }
out:
    free(json);
    storage_close(&st);
    return rc;
}
