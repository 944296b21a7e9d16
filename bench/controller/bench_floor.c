/*
 * The transport's floor: the CPU this process spends on one API request, and on one watch
 * event, through the same client the controller uses (internal/kube over internal/http:
 * curl's multi interface on libuv, TLS, HTTP/1.1 on pooled connections), against the
 * local API server. Requests go one at a time, so each costs at least one wakeup, as a
 * run's requests mostly do in a slot. Three kinds of request, after a warm-up:
 *   - GET of a small ConfigMap ("floor-plain");
 *   - PATCH (merge) of its data, which the API server answers with the whole object;
 *   - the same PATCH of a second ConfigMap ("floor") that a watch follows, each waiting for
 *     its answer and for its MODIFIED event: the difference from the plain PATCH is one
 *     watch event.
 * The kinds take turns in rounds of 100, so a change in the API server's pace (it is
 * still settling after it starts) weighs on each alike. Prints microseconds of CPU
 * (user + system) per request, the system's share, and voluntary context switches per
 * request, one line per kind ("floor NAME CPU_US SYS_US CSW"), for bench/controller/run.sh
 * to weigh against a run's requests and events.
 * Usage: bench_floor KUBECONFIG CONTEXT NAMESPACE N
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <jansson.h>
#include <uv.h>

#include "kube/kube.h"
#include "util/util.h"

enum phase { PHASE_GET, PHASE_PATCH, PHASE_WATCHED };

struct floor {
    uv_loop_t *loop;
    struct kube_client *kube;
    struct kube_request *watch;
    struct kube_resource res;
    enum phase phase;
    int left;        /* requests still to send in this round */
    int answers;     /* answers of this round's current request: 0 or 1 */
    int events_owed; /* MODIFIED events not yet seen (the watched phase) */
    bool watching;   /* the watch's first event has come */
    int failed;
};

static void floor_next(struct floor *f);

static void floor_fail(struct floor *f, const char *what)
{
    fprintf(stderr, "bench_floor: %s\n", what);
    f->failed = 1;
    uv_stop(f->loop);
}

/* A request is done when its answer came and, in the watched phase, its event too. */
static void floor_maybe_next(struct floor *f)
{
    if (f->answers == 0 || f->events_owed > 0)
        return;
    if (--f->left == 0) {
        uv_stop(f->loop);
        return;
    }
    floor_next(f);
}

static void floor_result_cb(const struct kube_result *res, void *arg)
{
    struct floor *f = arg;
    if (res->error != 0 || res->status >= 300) {
        floor_fail(f, res->message != NULL && res->message[0] != '\0' ? res->message
                                                                      : "a request failed");
        return;
    }
    f->answers = 1;
    floor_maybe_next(f);
}

static void floor_event_cb(const struct kube_watch_event *ev, void *arg)
{
    struct floor *f = arg;
    (void)ev;
    if (!f->watching) {
        /* The ADDED event of the existing object opens the watch. */
        f->watching = true;
        uv_stop(f->loop);
        return;
    }
    if (f->events_owed > 0)
        f->events_owed--;
    floor_maybe_next(f);
}

static void floor_watch_done_cb(const struct kube_result *res, void *arg)
{
    struct floor *f = arg;
    f->watch = NULL;
    if (f->left > 0)
        floor_fail(f, res->message != NULL && res->message[0] != '\0' ? res->message
                                                                      : "the watch ended");
}

static void floor_next(struct floor *f)
{
    struct util_err err = {0};
    char value[32];
    json_t *patch;
    int rc;

    f->answers = 0;
    if (f->phase == PHASE_GET) {
        rc = kube_get(f->kube, &f->res, "floor-plain", NULL, floor_result_cb, f, NULL, &err);
    } else {
        snprintf(value, sizeof(value), "%d-%d", (int)f->phase, f->left);
        patch = json_pack("{s:{s:s}}", "data", "n", value);
        if (patch == NULL) {
            fprintf(stderr, "bench_floor: out of memory\n");
            abort();
        }
        if (f->phase == PHASE_WATCHED)
            f->events_owed = 1;
        rc = kube_merge_patch(f->kube, &f->res, f->phase == PHASE_WATCHED ? "floor" : "floor-plain",
                              NULL, patch, floor_result_cb, f, NULL, &err);
        json_decref(patch);
    }
    if (rc != 0)
        floor_fail(f, err.msg);
}

struct usage {
    double cpu_us, sys_us;
    long csw;
};

static struct usage usage_now(void)
{
    struct rusage ru;
    struct usage u;
    getrusage(RUSAGE_SELF, &ru);
    u.sys_us = (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
    u.cpu_us = u.sys_us + (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec;
    u.csw = ru.ru_nvcsw;
    return u;
}

/* Runs n requests of the phase and adds what they cost to *sum. */
static int floor_round(struct floor *f, enum phase phase, int n, struct usage *sum)
{
    struct usage a, b;
    f->phase = phase;
    f->left = n;
    a = usage_now();
    floor_next(f);
    uv_run(f->loop, UV_RUN_DEFAULT);
    b = usage_now();
    if (f->failed)
        return -1;
    sum->cpu_us += b.cpu_us - a.cpu_us;
    sum->sys_us += b.sys_us - a.sys_us;
    sum->csw += b.csw - a.csw;
    return 0;
}

#define FLOOR_ROUND 100

/* Rounds of each kind in turn until n of each; the first round of each is a warm-up. */
static int floor_measure(struct floor *f, int n)
{
    static const char *const names[] = {"get", "patch", "watched"};
    struct usage sum[3] = {{0}}, warm = {0};
    int done = 0;

    for (int k = 0; k < 3; k++)
        if (floor_round(f, (enum phase)k, 20, &warm) != 0)
            return -1;
    while (done < n) {
        int m = n - done < FLOOR_ROUND ? n - done : FLOOR_ROUND;
        for (int k = 0; k < 3; k++)
            if (floor_round(f, (enum phase)k, m, &sum[k]) != 0)
                return -1;
        done += m;
    }
    for (int k = 0; k < 3; k++)
        printf("floor %s %.1f %.1f %.2f\n", names[k], sum[k].cpu_us / n, sum[k].sys_us / n,
               (double)sum[k].csw / n);
    return 0;
}

int main(int argc, char **argv)
{
    struct floor f = {0};
    struct kube_config cfg = {0};
    struct kube_config_opts copts = {0};
    struct kube_client_opts opts = {0};
    struct kube_list_opts wopts = {0};
    struct util_err err = {0};
    char *end;
    long n;
    int rc = 1;

    if (argc != 5) {
        fprintf(stderr, "usage: bench_floor KUBECONFIG CONTEXT NAMESPACE N\n");
        return 2;
    }
    n = strtol(argv[4], &end, 10);
    if (*end != '\0' || n < 1 || n > 100000) {
        fprintf(stderr, "bench_floor: N must be 1 to 100000\n");
        return 2;
    }
    copts.context = argv[2];
    if (kube_config_load_file(&cfg, argv[1], &copts, &err) != 0) {
        fprintf(stderr, "bench_floor: %s\n", err.msg);
        return 1;
    }
    f.loop = uv_default_loop();
    f.res = (struct kube_resource){"", "v1", "configmaps", argv[3]};
    opts.qps = -1; /* the floor, not the limit */
    if (kube_client_init(f.loop, &f.kube, &cfg, &opts, &err) != 0) {
        fprintf(stderr, "bench_floor: %s\n", err.msg);
        goto out_config;
    }
    wopts.field_selector = "metadata.name=floor";
    if (kube_watch(f.kube, &f.res, &wopts, floor_event_cb, floor_watch_done_cb, &f, &f.watch,
                   &err) != 0) {
        fprintf(stderr, "bench_floor: %s\n", err.msg);
        goto out_client;
    }
    uv_run(f.loop, UV_RUN_DEFAULT); /* until the watch's first event */
    if (!f.watching) {
        fprintf(stderr, "bench_floor: the watch of ConfigMap floor brought no event\n");
        goto out_client;
    }
    if (floor_measure(&f, (int)n) != 0)
        goto out_client;
    rc = 0;
out_client:
    if (f.watch != NULL)
        kube_request_cancel(f.watch);
    kube_client_close(f.kube, NULL, NULL);
    uv_run(f.loop, UV_RUN_DEFAULT);
out_config:
    kube_config_free(&cfg);
    return rc;
}
