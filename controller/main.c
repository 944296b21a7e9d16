/*
 * lode-controller: flags, signals, and the loop. Everything else is in the controller module
 * (controller.h).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "controller.h"
#include "policy/policy.h"

#ifndef LODE_VERSION
#define LODE_VERSION "0.0.0-dev"
#endif

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: lode-controller [flags]\n\n"
        "Runs Lodestore's controller: BackupPolicies to per-node backup Jobs, Backup\n"
        "history, status, overdue hosts and time_limit.\n\n"
        "  --kubeconfig PATH          kubeconfig (default: in-cluster, $KUBECONFIG, "
        "~/.kube/config)\n"
        "  --context NAME             kubeconfig context (default: current)\n"
        "  --namespace NS             watch one namespace (default: all)\n"
        "  --metrics-addr HOST:PORT   /metrics, /healthz, /readyz (default 127.0.0.1:8080;\n"
        "                             the chart gives the pod's IP: docs/operator.md)\n"
        "  --agent-image IMAGE        image of the backup Jobs (runs lode backup)\n"
        "  --agent-host-network       the Jobs' pods use the node's network (hostNetwork)\n"
        "  --allow-node-backups NS[:/PREFIX,...]  a namespace (\"*\": any) whose policies may\n"
        "                             back up nodes, under these paths; repeatable (default:\n"
        "                             the watched namespace, else the controller's own)\n"
        "  --agent-cache-dir DIR      the node directory (hostPath) that keeps the backup\n"
        "                             Jobs' metadata cache (default /var/cache/lodestore;\n"
        "                             \"\": none; docs/operator.md, \"The node cache\")\n"
        "  --hook-namespaces NS,...   namespaces whose policies may run spec.hooks on nodes\n"
        "                             (\"*\": all; default none)\n"
        "  --job-ttl DURATION         keep finished Jobs this long (default 1h)\n"
        "  --backup-history N         finished Backups kept per policy and host (default 5)\n"
        "  --qps N --burst N          client-side rate limit (default 20, 30)\n"
        "  --zoneinfo DIR             tz database (default $LODE_ZONEINFO or /usr/share/zoneinfo)\n"
        "  --leader-elect             act only while holding a Lease\n"
        "  --leader-election-namespace NS  --lease-name NAME  --identity ID\n"
        "  --lease-duration D --renew-deadline D --retry-period D  (default 15s, 10s, 2s)\n"
        "  --log-level error|info|debug\n"
        "  --clock-offset DURATION    FOR TESTS ONLY: run the schedule this far in the future\n"
        "  --version, --help\n");
}

static int parse_duration_flag(const char *flag, const char *value, int64_t *out)
{
    struct util_err err = {0};
    if (policy_parse_duration(value, out, &err) != 0) {
        fprintf(stderr, "lode-controller: %s: %s\n", flag, err.msg);
        return -1;
    }
    return 0;
}

static int parse_number(const char *flag, const char *value, uint64_t max, uint64_t *out)
{
    if (util_parse_u64(value, strlen(value), max, out) != 0) {
        fprintf(stderr, "lode-controller: %s takes a whole number up to %llu, not \"%s\"\n", flag,
                (unsigned long long)max, value);
        return -1;
    }
    return 0;
}

static struct ctl *controller;
static uv_signal_t sigterm, sigint;

static void on_signal(uv_signal_t *h, int signum)
{
    fprintf(stderr, "lode-controller: %s received, stopping\n",
            signum == SIGTERM ? "SIGTERM" : "SIGINT");
    uv_signal_stop(&sigterm);
    uv_signal_stop(&sigint);
    uv_close((uv_handle_t *)&sigterm, NULL);
    uv_close((uv_handle_t *)&sigint, NULL);
    ctl_stop(controller);
}

/*
 * The controller stopped acting when the Lease was lost. Exit at once rather than
 * stop gracefully: a graceful stop would still send the writes in flight, racing the
 * new leader; the Deployment restarts the pod, which starts again as a candidate.
 */
static void on_lease_lost(void *arg)
{
    fprintf(stderr, "lode-controller: lost the leader Lease; exiting so a new process starts as "
                    "a candidate\n");
    exit(1);
}

int main(int argc, char **argv)
{
    struct ctl_options o;
    struct util_err err = {0};
    int64_t d;
    uint64_t n;
    char *metrics_host = NULL;
    enum {
        F_KUBECONFIG = 256,
        F_CONTEXT,
        F_NAMESPACE,
        F_METRICS,
        F_AGENT,
        F_HOSTNET,
        F_HOOKNS,
        F_CACHEDIR,
        F_TTL,
        F_HISTORY,
        F_QPS,
        F_BURST,
        F_ZONEINFO,
        F_LEADER,
        F_LEASE_NS,
        F_LEASE_NAME,
        F_IDENTITY,
        F_LEASE_DUR,
        F_RENEW,
        F_RETRY,
        F_LOG,
        F_OFFSET,
        F_VERSION,
        F_HELP,
        F_ALLOW
    };
    static const struct option opts[] = {
        {"kubeconfig", required_argument, NULL, F_KUBECONFIG},
        {"context", required_argument, NULL, F_CONTEXT},
        {"namespace", required_argument, NULL, F_NAMESPACE},
        {"metrics-addr", required_argument, NULL, F_METRICS},
        {"agent-image", required_argument, NULL, F_AGENT},
        {"agent-host-network", no_argument, NULL, F_HOSTNET},
        {"hook-namespaces", required_argument, NULL, F_HOOKNS},
        {"agent-cache-dir", required_argument, NULL, F_CACHEDIR},
        {"job-ttl", required_argument, NULL, F_TTL},
        {"backup-history", required_argument, NULL, F_HISTORY},
        {"qps", required_argument, NULL, F_QPS},
        {"burst", required_argument, NULL, F_BURST},
        {"zoneinfo", required_argument, NULL, F_ZONEINFO},
        {"leader-elect", no_argument, NULL, F_LEADER},
        {"leader-election-namespace", required_argument, NULL, F_LEASE_NS},
        {"lease-name", required_argument, NULL, F_LEASE_NAME},
        {"identity", required_argument, NULL, F_IDENTITY},
        {"lease-duration", required_argument, NULL, F_LEASE_DUR},
        {"renew-deadline", required_argument, NULL, F_RENEW},
        {"retry-period", required_argument, NULL, F_RETRY},
        {"log-level", required_argument, NULL, F_LOG},
        {"clock-offset", required_argument, NULL, F_OFFSET},
        {"allow-node-backups", required_argument, NULL, F_ALLOW},
        {"version", no_argument, NULL, F_VERSION},
        {"help", no_argument, NULL, F_HELP},
        {NULL, 0, NULL, 0},
    };
    int c, rc;
    /* Argument strings, for the options (argv outlives the controller). */
    static const char *allow[256];
    size_t nallow = 0;

    ctl_options_defaults(&o);
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case F_KUBECONFIG:
            o.kubeconfig = optarg;
            break;
        case F_CONTEXT:
            o.context = optarg;
            break;
        case F_NAMESPACE:
            o.namespace = optarg;
            break;
        case F_METRICS: {
            const char *colon = strrchr(optarg, ':');
            if (colon == NULL || parse_number("--metrics-addr port", colon + 1, 65535, &n) != 0) {
                fprintf(stderr,
                        "lode-controller: --metrics-addr takes HOST:PORT, such as 0.0.0.0:8080\n");
                return 2;
            }
            free(metrics_host);
            /* "[fd00::1]:8080" as well as "fd00::1:8080" (the chart's $(POD_IP) of an
             * IPv6 pod): the port is after the last colon either way. */
            if (optarg[0] == '[' && colon > optarg + 1 && colon[-1] == ']')
                metrics_host = util_strndup(optarg + 1, (size_t)(colon - optarg - 2));
            else
                metrics_host = util_strndup(optarg, (size_t)(colon - optarg));
            o.metrics_host = metrics_host;
            o.metrics_port = (int)n;
            break;
        }
        case F_AGENT:
            o.agent_image = optarg;
            break;
        case F_HOSTNET:
            o.agent_host_network = true;
            break;
        case F_HOOKNS:
            o.hook_namespaces = optarg;
            break;
        case F_CACHEDIR:
            if (optarg[0] != '\0' && optarg[0] != '/') {
                fprintf(stderr,
                        "lode-controller: --agent-cache-dir takes an absolute path of "
                        "the node, or \"\" for none, not \"%s\"\n",
                        optarg);
                return 2;
            }
            o.agent_cache_dir = optarg;
            break;
        case F_TTL:
            if (parse_duration_flag("--job-ttl", optarg, &o.job_ttl) != 0)
                return 2;
            break;
        case F_HISTORY:
            if (parse_number("--backup-history", optarg, 1000, &n) != 0 || n == 0) {
                fprintf(stderr, "lode-controller: --backup-history takes 1 to 1000\n");
                return 2;
            }
            o.history = (int64_t)n;
            break;
        case F_QPS:
            if (parse_number("--qps", optarg, 100000, &n) != 0)
                return 2;
            o.qps = n == 0 ? -1 : (double)n;
            break;
        case F_BURST:
            if (parse_number("--burst", optarg, 100000, &n) != 0)
                return 2;
            o.burst = (unsigned)n;
            break;
        case F_ZONEINFO:
            o.zoneinfo = optarg;
            break;
        case F_LEADER:
            o.leader_elect = true;
            break;
        case F_LEASE_NS:
            o.lease_namespace = optarg;
            break;
        case F_LEASE_NAME:
            o.lease_name = optarg;
            break;
        case F_IDENTITY:
            o.identity = optarg;
            break;
        case F_LEASE_DUR:
        case F_RENEW:
        case F_RETRY:
            if (parse_duration_flag(argv[optind - 1], optarg, &d) != 0 || d <= 0)
                return 2;
            if (c == F_LEASE_DUR)
                o.lease_duration_ms = d * 1000;
            else if (c == F_RENEW)
                o.renew_deadline_ms = d * 1000;
            else
                o.retry_period_ms = d * 1000;
            break;
        case F_LOG:
            if (strcmp(optarg, "error") == 0)
                o.log_level = 0;
            else if (strcmp(optarg, "info") == 0)
                o.log_level = 1;
            else if (strcmp(optarg, "debug") == 0)
                o.log_level = 2;
            else {
                fprintf(stderr, "lode-controller: --log-level is error, info or debug\n");
                return 2;
            }
            break;
        case F_OFFSET:
            if (parse_duration_flag("--clock-offset", optarg, &o.clock_offset) != 0)
                return 2;
            fprintf(stderr,
                    "lode-controller: WARNING: --clock-offset %s is for tests: the "
                    "controller's clock runs ahead of the cluster's\n",
                    optarg);
            break;
        case F_ALLOW:
            if (nallow == sizeof(allow) / sizeof(allow[0])) {
                fprintf(stderr, "lode-controller: at most %zu --allow-node-backups\n",
                        sizeof(allow) / sizeof(allow[0]));
                return 2;
            }
            allow[nallow++] = optarg;
            o.allow_node_backups = allow;
            o.nallow_node_backups = nallow;
            break;
        case F_VERSION:
            printf("lode-controller %s\n", LODE_VERSION);
            return 0;
        case F_HELP:
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "lode-controller: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    if (o.renew_deadline_ms >= o.lease_duration_ms) {
        fprintf(stderr,
                "lode-controller: --renew-deadline must be shorter than --lease-duration\n");
        return 2;
    }

    uv_loop_t *loop = uv_default_loop();
    o.lease_lost_cb = on_lease_lost;
    rc = ctl_init(loop, &controller, &o, &err);
    if (rc != 0) {
        fprintf(stderr, "lode-controller: %s\n", err.msg);
        free(metrics_host);
        return 1;
    }
    uv_signal_init(loop, &sigterm);
    uv_signal_init(loop, &sigint);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_signal_start(&sigint, on_signal, SIGINT);
    ctl_start(controller);
    uv_run(loop, UV_RUN_DEFAULT);
    ctl_close(controller);
    uv_loop_close(loop);
    free(metrics_host);
    return 0;
}
