/*
 * lode init: creates a repository (docs/repository.md): a random master key,
 * wrapped by the repository key, in config.json, written with If-None-Match: * so
 * that a second init of the same place changes nothing and exits 1.
 * --generate-key: lode makes the repository key itself (256 random bits, written to a
 * new key file, 0600) and config.json says so, so no command stretches it with scrypt.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cli.h"
#include "agent/storage.h"

static void cmd_init_usage(FILE *f)
{
    fprintf(f,
            "usage: lode init [--generate-key] [--repo URL] [--cacert FILE] [--key-file FILE]\n\n"
            "Creates a repository: config.json with a random master key, wrapped by the\n"
            "repository key (keep that key: without it nothing can be restored). The bucket\n"
            "must exist. A second init of the same place changes nothing and exits 1.\n\n"
            "  --generate-key   lode makes the key (256 random bits) and writes it to the key\n"
            "                   file, which must not exist yet; such a key is not stretched\n"
            "                   with scrypt (docs/repository.md, \"The repository key\")\n\n"
            "%s\n"
            "Exit codes: 0 created, 1 a repository already exists there, 2 usage, key or\n"
            "storage error.\n",
            cli_storage_usage);
}

int cmd_init(int argc, char **argv)
{
    static const struct option opts[] = {
        STORAGE_OPTIONS,
        {"generate-key", no_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cli_storage_cmd sc = {.name = "init", .usage = cmd_init_usage};
    struct storage st;
    struct repo_config cfg;
    struct util_err err = {0};
    char *pass = NULL;
    size_t passlen = 0;
    int c, rc;
    bool generate = false;
    const char *made = NULL; /* the key file this run created, removed if init fails */

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if ((rc = cli_storage_cmd_opt(&sc, c, optarg, argv)) != CLI_OPT_OWN) {
            if (rc == CLI_OPT_NEXT)
                continue;
            return rc;
        }
        if (c == 'g') {
            generate = true;
            continue;
        }
        return cli_usage_error("init", "unknown flag");
    }
    if (optind != argc)
        return cli_usage_error("init", "unexpected argument \"%s\"", argv[optind]);

    if (generate) {
        const char *path = sc.so.key_file != NULL ? sc.so.key_file : getenv("LODE_KEY_FILE");
        if (path == NULL || path[0] == '\0')
            return cli_usage_error("init", "--generate-key needs --key-file FILE or LODE_KEY_FILE: "
                                           "where to write the key");
        /* A new file only: an existing key file may be another repository's key. */
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
            fprintf(stderr, "lode init: cannot create the key file %s: %s%s\n", path,
                    strerror(errno),
                    errno == EEXIST ? " (--generate-key writes a new file only; nothing "
                                      "was changed)"
                                    : "");
            return CLI_USAGE;
        }
        char key[REPO_GENERATED_KEY_TEXT + 1];
        repo_key_generate(key);
        key[REPO_GENERATED_KEY_TEXT - 1] = '\n';
        bool ok =
            write(fd, key, REPO_GENERATED_KEY_TEXT) == REPO_GENERATED_KEY_TEXT && fsync(fd) == 0;
        ok = close(fd) == 0 && ok;
        OPENSSL_cleanse(key, sizeof(key));
        if (!ok) {
            fprintf(stderr, "lode init: cannot write the key file %s: %s\n", path, strerror(errno));
            unlink(path);
            return CLI_USAGE;
        }
        made = path;
    }
    if (storage_read_key(&sc.so, &pass, &passlen, &err) != 0) {
        fprintf(stderr, "lode init: %s\n", err.msg);
        if (made != NULL)
            unlink(made);
        return CLI_USAGE;
    }
    if (storage_open(&st, &sc.so, &err) != 0) {
        fprintf(stderr, "lode init: %s\n", err.msg);
        free(pass);
        if (made != NULL)
            unlink(made);
        return CLI_USAGE;
    }
    rc = generate ? repo_config_create_generated(&cfg, pass, passlen, &err)
                  : repo_config_create(&cfg, pass, passlen, REPO_SCRYPT_DEFAULT, &err);
    memset(pass, 0, passlen);
    free(pass);
    if (rc != 0) {
        fprintf(stderr, "lode init: %s\n", err.msg);
        rc = CLI_USAGE;
        goto out;
    }
    rc = storage_create(&st, &cfg, &err);
    memset(&cfg, 0, sizeof(cfg));
    if (rc == S3_EEXISTS) {
        fprintf(stderr, "lode init: a repository already exists at %s; nothing was changed\n",
                st.url);
        rc = CLI_INVALID;
    } else if (rc != 0) {
        fprintf(stderr, "lode init: cannot write config.json to %s: %s\n", st.url, err.msg);
        rc = CLI_USAGE;
    } else {
        printf("created a repository at %s\n", st.url);
        if (made != NULL)
            printf("its key, generated, is in %s: keep a copy of it; without it nothing can "
                   "be restored\n",
                   made);
        made = NULL;
        rc = CLI_OK;
    }
out:
    storage_close(&st);
    if (made != NULL)
        unlink(made); /* no repository uses it */
    return rc;
}
