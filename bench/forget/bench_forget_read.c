/*
 * bench_forget_read: one reader of the `lode forget --snapshots` list, alone, on
 * a file: the jansson reader (ret_snapshots_from_json, a tree) or the one-pass
 * scanner (ret_snapshots_scan).
 *
 *   bench_forget_read jansson|scan FILE
 *
 * Prints one line: reader, snapshots read, CPU milliseconds of the read, and
 * the process's peak RSS in KiB (run each reader in its own process).
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "retention/retention.h"

int main(int argc, char **argv)
{
    struct ret_snapshot_list list;
    struct util_err err = {0};
    struct timespec a, b;
    struct rusage ru;
    char *data;
    size_t len;
    int rc;

    if (argc != 3 || (strcmp(argv[1], "jansson") != 0 && strcmp(argv[1], "scan") != 0)) {
        fprintf(stderr, "usage: bench_forget_read jansson|scan FILE\n");
        return 2;
    }
    if (util_read_file(argv[2], &data, &len, &err) != 0) {
        fprintf(stderr, "bench_forget_read: %s\n", err.msg);
        return 2;
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    if (strcmp(argv[1], "jansson") == 0)
        rc = ret_snapshots_from_json(&list, data, len, &err);
    else
        rc = ret_snapshots_scan(&list, data, len, NULL, NULL, &err);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    if (rc != 0) {
        fprintf(stderr, "bench_forget_read: %s\n", err.msg);
        return 1;
    }
    getrusage(RUSAGE_SELF, &ru);
    printf("reader=%s n=%zu cpu_ms=%.1f rss_peak_kib=%ld (the input itself: %zu KiB)\n", argv[1],
           list.n, (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6,
           ru.ru_maxrss, len / 1024);
    ret_snapshot_list_free(&list);
    free(data);
    return 0;
}
