/*
 * What the parts of the s3 end-to-end program share (s3_e2e*.c): the
 * check counter, the run's key prefix, clients direct or through the fault proxy, the
 * proxy's control, and a byte pattern to write and check.
 */
#ifndef LODE_TESTS_E2E_S3_H
#define LODE_TESTS_E2E_S3_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "s3/s3.h"

extern int passed, failed;
extern char run_id[16]; /* "e2eXXXXXX/": every key of the run is under it */

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
            printf("ok   ");                                                                       \
        } else {                                                                                   \
            failed++;                                                                              \
            printf("FAIL ");                                                                       \
        }                                                                                          \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
    } while (0)

/* The configuration of s3:.../BUCKET/prefix on versitygw, with the CA (exits on error). */
void direct_config(struct s3_config *cfg, const char *prefix);
/* A client of the repository s3:.../BUCKET/prefix, to versitygw or through the proxy. */
struct s3_sync *open_direct(const char *prefix, const struct s3_client_opts *o);
struct s3_sync *open_proxy(const char *prefix, const struct s3_client_opts *o);
/* Sends a command to the fault proxy ("clear", "503/1", "count"); its number answer. */
long proxy(const char *cmd);

/* Bytes that depend on their offset and a seed. */
struct pattern {
    uint64_t len;
    unsigned seed;
};
unsigned char pattern_byte(const struct pattern *p, uint64_t i);
/* An s3_read_cb of the pattern (arg: struct pattern). */
ssize_t read_pattern(uint64_t off, char *buf, size_t len, void *arg);

/* An s3_write_cb that checks the bytes against a pattern (arg: struct sink_check). */
struct sink_check {
    const struct pattern *p;
    uint64_t pos;
    bool bad;
};
int sink_pattern(const char *data, size_t len, void *arg);

void test_connection_reuse(void);
void test_multipart(void);
void test_multipart_faults(void);
void test_multipart_listing(void);
void test_multipart_arguments(void);

#endif
