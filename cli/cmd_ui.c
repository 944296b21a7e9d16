/*
 * lode ui: serves the web interface on 127.0.0.1 and prints the one URL that
 * opens it (with a random token). How it is served and guarded is in ui.h; this
 * file parses the flags, makes the token, starts the server and waits for
 * Ctrl-C or SIGTERM.
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "cli.h"
#include "ui.h"

static void cmd_ui_usage(FILE *f)
{
    fprintf(f,
            "usage: lode ui [--listen ADDR:PORT] [--namespace NS] [--kubeconfig PATH]\n"
            "               [--context NAME] [--zoneinfo DIR] [--repo REPO] [--cacert FILE]\n"
            "               [--key-file FILE]\n"
            "\n"
            "Serves the web interface: the policy form beside its YAML, the schedule with\n"
            "its daylight saving notes, what retention keeps and why, the state of every\n"
            "policy and host, apply with a server-side dry run first, and (with --repo and\n"
            "the key) a browser of the repository's snapshots that writes Restores.\n"
            "Prints one URL\n"
            "with a random token; only requests that carry the token are answered.\n"
            "\n"
            "  --listen ADDR:PORT   default 127.0.0.1:7480; port 0 picks a free port;\n"
            "                       IPv6 as [::1]:PORT. Names are not resolved.\n"
            "  -n, --namespace NS   the namespace of the fleet view and of applied policies\n"
            "                       that name none (default: the context's, else \"default\")\n"
            "  --kubeconfig PATH    default $KUBECONFIG, else in-cluster, else ~/.kube/config\n"
            "  --context NAME       a kubeconfig context (default: the current one)\n"
            "  --zoneinfo DIR       the tz database (default $LODE_ZONEINFO, else %s)\n"
            "  --repo REPO          the repository whose snapshots the retention view may\n"
            "                       show (default $LODE_REPOSITORY; S3 credentials from\n"
            "                       the environment, as for lode snapshots); no key needed\n"
            "  --cacert FILE        a CA for the repository (default $LODE_CACERT)\n"
            "  --key-file FILE      the repository key, for the snapshot browser (default\n"
            "                       $LODE_KEY_FILE); the catalog needs none\n"
            "\n"
            "Without a reachable cluster the editor, schedule and retention views still\n"
            "work; the fleet view and apply say why they cannot.\n"
            "Exit codes: 0 stopped by Ctrl-C or SIGTERM, 2 usage error or the address\n"
            "cannot be bound.\n",
            TZ_DEFAULT_DIR);
}

static int64_t cmd_ui_now(void)
{
    return (int64_t)time(NULL);
}

/* "127.0.0.1:7480" or "[::1]:0" into host and port. */
static int cmd_ui_parse_listen(const char *s, char *host, size_t size, unsigned *port)
{
    const char *colon;
    size_t n;
    uint64_t p;

    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (end == NULL || end[1] != ':')
            return -1;
        n = (size_t)(end - s - 1);
        s++;
        colon = end + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL)
            return -1;
        n = (size_t)(colon - s);
    }
    if (n == 0 || n >= size || util_parse_u64(colon + 1, strlen(colon + 1), 65535, &p) != 0)
        return -1;
    memcpy(host, s, n);
    host[n] = '\0';
    *port = (unsigned)p;
    return 0;
}

int cmd_ui(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"zoneinfo", required_argument, NULL, 'z'},
        {"help", no_argument, NULL, 'h'},
        STORAGE_OPTIONS,
        KUBE_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    const char *listen = "127.0.0.1:7480", *zoneinfo = NULL;
    struct ui_ctx ctx = {.now = cmd_ui_now};
    struct ui_server_opts so = {0};
    struct ui_server *srv = NULL;
    struct util_err err = {0};
    struct tz_db *db = NULL;
    unsigned char raw[UI_TOKEN_BYTES];
    char host[256], token[UI_TOKEN_BYTES * 2 + 1];
    sigset_t set;
    int c, k, sig, rc;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            listen = optarg;
            break;
        case 'z':
            zoneinfo = optarg;
            break;
        case 'h':
            cmd_ui_usage(stdout);
            return CLI_OK;
        case STORAGE_OPT_REPO:
        case STORAGE_OPT_CACERT:
        case STORAGE_OPT_KEY_FILE:
            cli_storage_opt(&ctx.repo, c, optarg);
            break;
        default:
            if ((k = cli_kube_opt(&ctx.kube_opts, "ui", c, optarg)) > 0)
                break;
            if (k < 0)
                return CLI_USAGE;
            return cli_usage_error("ui", "unknown or incomplete option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("ui", "unexpected argument \"%s\"", argv[optind]);
    if (cmd_ui_parse_listen(listen, host, sizeof(host), &so.port) != 0)
        return cli_usage_error("ui",
                               "--listen must be ADDR:PORT (127.0.0.1:7480, [::1]:0), not "
                               "\"%s\"",
                               listen);
    if (RAND_bytes(raw, sizeof(raw)) != 1) {
        fprintf(stderr, "lode ui: cannot make a random token (OpenSSL's RAND_bytes failed)\n");
        return CLI_USAGE;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(token + 2 * i, 3, "%02x", raw[i]);
    if (cli_open_tzdb(&db, zoneinfo) != CLI_OK)
        return CLI_USAGE;
    ctx.db = db;
    ctx.repo_url = ctx.repo.repo != NULL ? ctx.repo.repo : getenv("LODE_REPOSITORY");
    if (ctx.repo_url != NULL && ctx.repo_url[0] == '\0')
        ctx.repo_url = NULL;
    if (!ui_kube(&ctx))
        fprintf(stderr,
                "lode ui: warning: no cluster (%s); the fleet view and apply are unavailable\n",
                ctx.kube_error);

    /* The server's thread inherits this mask, so the signals come to sigwait below. */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    so.host = host;
    so.token = token;
    if (ui_server_start(&srv, &ctx, &so, &err) != 0) {
        fprintf(stderr, "lode ui: %s\n", err.msg);
        rc = CLI_USAGE;
        goto close;
    }
    if (ui_asset_count == 0)
        fprintf(stderr, "lode ui: this lode was built without the web page (npm was missing); "
                        "the JSON endpoints under /api/ work\n");
    printf("http://%s%s%s:%u/?token=%s\n", strchr(host, ':') ? "[" : "", host,
           strchr(host, ':') ? "]" : "", ui_server_port(srv), token);
    fflush(stdout);
    sigwait(&set, &sig);
    fprintf(stderr, "lode ui: stopping (%s)\n", sig == SIGINT ? "interrupt" : "SIGTERM");
    ui_server_stop(srv);
    rc = CLI_OK;
close:
    if (ctx.kube_open)
        cli_kube_close(&ctx.kube);
    tz_db_close(db);
    return rc;
}
