/*
 * End-to-end tests of internal/s3 against versitygw on 127.0.0.1 (tests/env), directly
 * and through tests/e2e/s3/faultproxy.c. Settings come from the environment that
 * test_s3.sh exports from s3.env: S3_ENDPOINT, S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY,
 * S3_CA_FILE, PROXY_PORT. Prints one line per check and "N passed, M failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "e2e.h"
#include "http/http.h"
#include "s3/s3.h"

int passed, failed;

char run_id[16];
static const char *proxy_port;

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr, "s3_e2e: %s is not set\n", name);
        exit(2);
    }
    return v;
}

/* A configuration for the repository s3:ENDPOINT/BUCKET/PREFIX (endpoint with scheme). */
static int make_cfg(struct s3_config *cfg, const char *endpoint, const char *bucket,
                    const char *prefix, const char *secret, bool with_ca, struct util_err *err)
{
    char *repo = util_asprintf("s3:%s/%s/%s", endpoint, bucket, prefix);
    struct s3_env e = {.repository = repo,
                       .access_key = env("S3_ACCESS_KEY"),
                       .secret_key = secret != NULL ? secret : env("S3_SECRET_KEY"),
                       .region = "us-east-1",
                       .cacert_file = with_ca ? env("S3_CA_FILE") : NULL};
    int rc = s3_config_from(cfg, &e, err);
    free(repo);
    return rc;
}

void direct_config(struct s3_config *cfg, const char *prefix)
{
    struct util_err err;
    if (make_cfg(cfg, env("S3_ENDPOINT"), env("S3_BUCKET"), prefix, NULL, true, &err) != 0) {
        fprintf(stderr, "s3_e2e: %s\n", err.msg);
        exit(2);
    }
}

struct s3_sync *open_direct(const char *prefix, const struct s3_client_opts *o)
{
    struct s3_config cfg;
    struct util_err err;
    struct s3_sync *s;
    if (make_cfg(&cfg, env("S3_ENDPOINT"), env("S3_BUCKET"), prefix, NULL, true, &err) != 0 ||
        s3_sync_open(&s, &cfg, o, &err) != 0) {
        fprintf(stderr, "s3_e2e: %s\n", err.msg);
        exit(2);
    }
    s3_config_free(&cfg);
    return s;
}

struct s3_sync *open_proxy(const char *prefix, const struct s3_client_opts *o)
{
    struct s3_config cfg;
    struct util_err err;
    struct s3_sync *s;
    char *ep = util_asprintf("http://127.0.0.1:%s", proxy_port);
    if (make_cfg(&cfg, ep, env("S3_BUCKET"), prefix, NULL, false, &err) != 0 ||
        s3_sync_open(&s, &cfg, o, &err) != 0) {
        fprintf(stderr, "s3_e2e: %s\n", err.msg);
        exit(2);
    }
    free(ep);
    s3_config_free(&cfg);
    return s;
}

/* ---- the fault proxy's control ---- */

static size_t to_buf(char *p, size_t s, size_t n, void *ud)
{
    util_buf_append(ud, p, s * n);
    return s * n;
}

long proxy(const char *cmd)
{
    struct util_buf b;
    char *url = util_asprintf("http://127.0.0.1:%s/__fault/%s", proxy_port, cmd);
    CURL *e = curl_easy_init();
    long v;
    util_buf_init(&b);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, to_buf);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
    curl_easy_perform(e);
    curl_easy_cleanup(e);
    v = b.data != NULL ? strtol(b.data, NULL, 10) : -1;
    util_buf_free(&b);
    free(url);
    return v;
}

/* ---- helpers ---- */

static int put_str(struct s3_sync *s, const char *key, const char *data, bool cond,
                   struct s3_info *info, struct util_err *err)
{
    struct s3_body b = {.data = data, .len = strlen(data)};
    struct s3_opts o = {.if_none_match = cond};
    return s3_sync_put(s, key, &b, &o, info, err);
}

unsigned char pattern_byte(const struct pattern *p, uint64_t i)
{
    return (unsigned char)((i * 2654435761u + p->seed) >> 7);
}

ssize_t read_pattern(uint64_t off, char *buf, size_t len, void *arg)
{
    const struct pattern *p = arg;
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)pattern_byte(p, off + i);
    return (ssize_t)len;
}

int sink_pattern(const char *data, size_t len, void *arg)
{
    struct sink_check *c = arg;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)data[i] != pattern_byte(c->p, c->pos + i))
            c->bad = true;
    c->pos += len;
    return 0;
}

struct listing {
    size_t n;
    bool order_bad;
    char last[S3_MAX_KEY + 1];
    int64_t last_mtime;
    size_t ties;
    size_t frac;
};

static int on_key(const struct s3_object *o, void *arg)
{
    struct listing *l = arg;
    if (l->n > 0 && strcmp(o->key, l->last) <= 0)
        l->order_bad = true;
    if (l->n > 0 && o->mtime == l->last_mtime)
        l->ties++;
    if (o->mtime_ns != 0)
        l->frac++;
    snprintf(l->last, sizeof(l->last), "%s", o->key);
    l->last_mtime = o->mtime;
    l->n++;
    return 0;
}

/* Puts n small objects name%05d under dir, 8 at a time on the wrapper's loop. */
struct bulk {
    int done, failed, started, n;
    const char *dir;
    struct s3_client *c;
};

/* One PUT of a bulk: its body lives until its callback. */
struct bulk_put {
    struct bulk *b;
    char body[32];
};

static void bulk_next(struct bulk *b);

static void on_bulk_put(const struct s3_result *res, void *arg)
{
    struct bulk_put *p = arg;
    struct bulk *b = p->b;
    free(p);
    b->done++;
    if (res->error != 0) {
        b->failed++;
        fprintf(stderr, "bulk put: %s\n", res->message);
    }
    bulk_next(b);
}

static void bulk_next(struct bulk *b)
{
    while (b->started < b->n && b->started - b->done < 8) {
        char key[128];
        struct util_err err;
        int i = b->started++;
        struct bulk_put *p = util_calloc(1, sizeof(*p));
        p->b = b;
        snprintf(key, sizeof(key), "%s/obj%05d", b->dir, i);
        snprintf(p->body, sizeof(p->body), "body %d", i);
        struct s3_body bd = {.data = p->body, .len = strlen(p->body)};
        if (s3_put(b->c, key, &bd, NULL, on_bulk_put, p, NULL, &err) != 0) {
            free(p);
            b->done++;
            b->failed++;
        }
    }
}

static int bulk_put(struct s3_sync *s, const char *dir, int n)
{
    struct bulk b = {.n = n, .dir = dir, .c = s3_sync_client(s)};
    bulk_next(&b);
    while (b.done < n)
        uv_run(s3_sync_loop(s), UV_RUN_ONCE);
    return b.failed;
}

static char **key_list(const char *dir, int n)
{
    char **k = util_calloc((size_t)n, sizeof(*k));
    for (int i = 0; i < n; i++)
        k[i] = util_asprintf("%s/obj%05d", dir, i);
    return k;
}

static void free_keys(char **k, int n)
{
    for (int i = 0; i < n; i++)
        free(k[i]);
    free(k);
}

struct del_tally {
    int ok, err;
    char code[64];
};

static void on_deleted(const char *key, int error, const char *code, const char *msg, void *arg)
{
    struct del_tally *t = arg;
    if (error == 0) {
        t->ok++;
    } else {
        t->err++;
        snprintf(t->code, sizeof(t->code), "%s", code);
    }
}

static size_t count_keys(struct s3_sync *s, const char *prefix)
{
    struct listing l = {0};
    struct util_err err;
    if (s3_sync_list(s, prefix, NULL, on_key, &l, NULL, &err) != 0)
        return (size_t)-1;
    return l.n;
}

/* ---- direct tests ---- */

static void test_objects(void)
{
    struct s3_sync *s = open_direct(run_id, NULL);
    struct s3_info info;
    struct util_err err;
    char *data;
    size_t len;
    int rc;

    rc = put_str(s, "a/one.txt", "hello, bucket", false, &info, &err);
    CHECK(rc == 0 && strlen(info.etag) == 32 && info.requests == 1, "PUT a buffer (etag %s)",
          info.etag);
    rc = s3_sync_get(s, "a/one.txt", NULL, &data, &len, &info, &err);
    CHECK(rc == 0 && len == 13 && memcmp(data, "hello, bucket", 13) == 0 && info.size == 13 &&
              info.mtime > 1700000000,
          "GET it whole (size %llu, mtime %lld)", (unsigned long long)info.size,
          (long long)info.mtime);
    free(data);
    struct s3_opts range = {.range_start = 7, .range_len = 3};
    rc = s3_sync_get(s, "a/one.txt", &range, &data, &len, &info, &err);
    CHECK(rc == 0 && len == 3 && memcmp(data, "buc", 3) == 0 && info.size == 13,
          "GET bytes 7-9 (\"%.*s\", object size %llu)", (int)len, data != NULL ? data : "",
          (unsigned long long)info.size);
    free(data);
    rc = s3_sync_head(s, "a/one.txt", &info, &err);
    CHECK(rc == 0 && info.size == 13 && strlen(info.etag) == 32, "HEAD: size and etag");

    struct pattern pat = {.len = (5u << 20) + 123, .seed = 7};
    struct s3_body streamed = {.read = read_pattern, .read_arg = &pat, .len = pat.len};
    rc = s3_sync_put(s, "a/streamed.bin", &streamed, NULL, &info, &err);
    CHECK(rc == 0, "PUT 5 MiB from a read callback, UNSIGNED-PAYLOAD: %s", rc ? err.msg : "");
    struct sink_check sc = {.p = &pat};
    rc = s3_sync_get_to(s, "a/streamed.bin", NULL, sink_pattern, &sc, &info, &err);
    CHECK(rc == 0 && sc.pos == pat.len && !sc.bad, "GET it into a sink, byte for byte");

    /* A streamed body with its hash known is signed. */
    char *mem = util_malloc(100000);
    struct pattern p2 = {.len = 100000, .seed = 3};
    char hex[65];
    read_pattern(0, mem, 100000, &p2);
    s3_sha256_hex(mem, 100000, hex);
    struct s3_body signed_stream = {
        .read = read_pattern, .read_arg = &p2, .len = 100000, .sha256_hex = hex};
    rc = s3_sync_put(s, "a/signed.bin", &signed_stream, NULL, &info, &err);
    CHECK(rc == 0, "PUT a streamed body with a signed hash");
    hex[0] = hex[0] == '0' ? '1' : '0';
    rc = s3_sync_put(s, "a/signed-wrong.bin", &signed_stream, NULL, &info, &err);
    CHECK(rc != 0 && info.requests == 1, "a wrong signed hash is refused, not retried (%s)",
          err.msg);
    free(mem);

    rc = s3_sync_get(s, "a/missing", NULL, &data, &len, &info, &err);
    CHECK(rc == S3_ENOTFOUND && info.requests == 1, "GET of a missing key: not found, 1 request");
    rc = s3_sync_head(s, "a/missing", &info, &err);
    CHECK(rc == S3_ENOTFOUND, "HEAD of a missing key: not found");
    rc = s3_sync_delete(s, "a/one.txt", &err);
    CHECK(rc == 0 && s3_sync_head(s, "a/one.txt", &info, &err) == S3_ENOTFOUND,
          "DELETE, then HEAD says not found");
    CHECK(s3_sync_delete(s, "a/one.txt", &err) == 0, "DELETE of a missing key is success");
    CHECK(s3_sync_get(s, "a/streamed.bin", &(struct s3_opts){.max_bytes = 1000}, &data, &len, &info,
                      &err) == S3_ETOOBIG,
          "GET into memory over max_bytes: S3_ETOOBIG");

    rc = put_str(s, "a/cond", "first", true, &info, &err);
    CHECK(rc == 0, "conditional PUT of a new key");
    rc = put_str(s, "a/cond", "second", true, &info, &err);
    CHECK(rc == S3_EEXISTS && info.requests == 1 && info.status == 412,
          "conditional PUT of an existing key: exists, 1 request, not retried (%s)", err.msg);
    rc = s3_sync_get(s, "a/cond", NULL, &data, &len, &info, &err);
    CHECK(rc == 0 && len == 5 && memcmp(data, "first", 5) == 0, "the first write stands");
    free(data);
    const char *ks[] = {"a/cond", "a/streamed.bin", "a/signed.bin"};
    s3_sync_delete_objects(s, ks, 3, NULL, NULL, NULL, NULL, &err);
    s3_sync_close(s);
}

/* An upload cap's stand-in: refuses its first calls, then grants at most max_grant. */
struct pace_script {
    size_t max_grant;
    int refuse;
    int refused;
    uint64_t granted;
};

static size_t pace_fn(size_t want, void *arg)
{
    struct pace_script *p = arg;
    if (p->refuse > 0) {
        p->refuse--;
        p->refused++;
        return 0;
    }
    size_t g = want < p->max_grant ? want : p->max_grant;
    p->granted += g;
    return g;
}

static void on_resume_tick(uv_timer_t *t)
{
    s3_client_resume(t->data); /* a no-op when no upload is paused */
}

struct one_put {
    bool done;
    int error;
};

static void on_one_put(const struct s3_result *res, void *arg)
{
    struct one_put *o = arg;
    o->done = true;
    o->error = res->error;
}

/*
 * Paced PUTs: a small body (sent with its headers when the pace callback grants it
 * whole) and a larger one (sent from the read callback), each with everything granted,
 * with grants of 300 bytes, and refused twice then resumed. The pace callback must be
 * asked for exactly the body's bytes, and the object must read back whole.
 */
static void test_paced(void)
{
    static const struct {
        size_t max_grant;
        int refuse;
        const char *what;
    } cases[] = {{SIZE_MAX, 0, "granted whole"},
                 {300, 0, "granted 300 bytes at a time"},
                 {SIZE_MAX, 2, "refused twice, then resumed"}};
    static const size_t sizes[] = {1000, 200000};
    for (size_t z = 0; z < 2; z++) {
        for (size_t k = 0; k < 3; k++) {
            struct pace_script ps = {.max_grant = cases[k].max_grant, .refuse = cases[k].refuse};
            struct s3_client_opts co = {.pace_cb = pace_fn, .pace_arg = &ps};
            struct s3_sync *s = open_direct(run_id, &co);
            struct pattern pat = {.len = sizes[z], .seed = (unsigned)(z * 3 + k)};
            char *mem = util_malloc(sizes[z]);
            char key[64];
            struct util_err err;
            struct one_put o = {0};
            uv_timer_t tick;
            read_pattern(0, mem, sizes[z], &pat);
            snprintf(key, sizeof(key), "paced/%zu-%zu", z, k);
            uv_timer_init(s3_sync_loop(s), &tick);
            tick.data = s3_sync_client(s);
            uv_timer_start(&tick, on_resume_tick, 5, 5);
            struct s3_body b = {.data = mem, .len = sizes[z]};
            int rc = s3_put(s3_sync_client(s), key, &b, NULL, on_one_put, &o, NULL, &err);
            while (rc == 0 && !o.done)
                uv_run(s3_sync_loop(s), UV_RUN_ONCE);
            uv_close((uv_handle_t *)&tick, NULL);
            struct sink_check sc = {.p = &pat};
            int got = s3_sync_get_to(s, key, NULL, sink_pattern, &sc, NULL, &err);
            CHECK(rc == 0 && o.error == 0 && ps.granted == sizes[z] &&
                      ps.refused == cases[k].refuse && got == 0 && sc.pos == sizes[z] && !sc.bad,
                  "paced PUT of %zu bytes, %s: %llu bytes granted, %d refusals, read back %s",
                  sizes[z], cases[k].what, (unsigned long long)ps.granted, ps.refused,
                  got == 0 && !sc.bad && sc.pos == sizes[z] ? "whole" : "wrong");
            s3_sync_delete(s, key, &err);
            free(mem);
            s3_sync_close(s);
        }
    }
}

static void on_flag(void *arg)
{
    *(bool *)arg = true;
}

/*
 * A client on a borrowed transport (the controller's case): after a request its easy
 * handle is kept; the client closed and the transport closed right after must both
 * finish and leave the loop empty (under ASan a handle or share left behind is a leak).
 */
static void test_borrowed_transport(void)
{
    uv_loop_t loop;
    struct http_multi *m;
    struct s3_client *c;
    struct s3_config cfg;
    struct util_err err;
    struct one_put o = {0};
    bool client_closed = false, http_closed = false;
    uv_loop_init(&loop);
    if (http_multi_init(&loop, &m, &err) != 0 ||
        make_cfg(&cfg, env("S3_ENDPOINT"), env("S3_BUCKET"), run_id, NULL, true, &err) != 0 ||
        s3_client_init(&loop, &c, &cfg, &(struct s3_client_opts){.http = m}, &err) != 0) {
        fprintf(stderr, "s3_e2e: %s\n", err.msg);
        exit(2);
    }
    s3_config_free(&cfg);
    int rc = s3_head(c, "borrowed/missing", NULL, on_one_put, &o, NULL, &err);
    while (rc == 0 && !o.done)
        uv_run(&loop, UV_RUN_ONCE);
    s3_client_close(c, on_flag, &client_closed);
    http_multi_close(m, on_flag, &http_closed);
    while ((!client_closed || !http_closed) && uv_run(&loop, UV_RUN_ONCE) != 0)
        ;
    uv_run(&loop, UV_RUN_NOWAIT);
    int lc = uv_loop_close(&loop);
    CHECK(rc == 0 && o.error == S3_ENOTFOUND && client_closed && http_closed && lc == 0,
          "a client on a borrowed transport, both closed after a request: closed, loop empty "
          "(%s)",
          lc == 0 ? "yes" : uv_strerror(lc));
}

struct race {
    int done, ok, exists, other;
};

static void on_race(const struct s3_result *res, void *arg)
{
    struct race *r = arg;
    r->done++;
    if (res->error == 0)
        r->ok++;
    else if (res->error == S3_EEXISTS)
        r->exists++;
    else
        r->other++;
}

static void test_conditional_race(void)
{
    struct s3_sync *s = open_direct(run_id, NULL);
    int won_once = 0, rounds = 20;
    for (int i = 0; i < rounds; i++) {
        struct race r = {0};
        char key[64];
        struct util_err err;
        snprintf(key, sizeof(key), "race/%d", i);
        struct s3_body b1 = {.data = "writer one", .len = 10};
        struct s3_body b2 = {.data = "writer two", .len = 10};
        struct s3_opts o = {.if_none_match = true};
        s3_put(s3_sync_client(s), key, &b1, &o, on_race, &r, NULL, &err);
        s3_put(s3_sync_client(s), key, &b2, &o, on_race, &r, NULL, &err);
        while (r.done < 2)
            uv_run(s3_sync_loop(s), UV_RUN_ONCE);
        if (r.ok == 1 && r.exists == 1 && r.other == 0)
            won_once++;
    }
    CHECK(won_once == rounds, "two conditional writers at once: exactly one wins, %d of %d rounds",
          won_once, rounds);
    s3_sync_close(s);
}

/*
 * The lode commands run s3_sync's loop one step at a time until their counters
 * change; every finished operation must stop the loop, or a step that finishes one
 * from a timer goes on to poll and blocks while an idle connection or another
 * handle keeps the loop alive. UV_RUN_DEFAULT returns only when the loop is stopped:
 * here a 20 s timer keeps it alive.
 */
struct step {
    int done, watchdog;
};

static void on_step_put(const struct s3_result *res, void *arg)
{
    ((struct step *)arg)->done += res->error == 0;
}

static void on_step_watchdog(uv_timer_t *t)
{
    struct step *st = t->data;
    st->watchdog = 1;
    uv_stop(t->loop);
}

static void test_step_loop(void)
{
    struct s3_sync *s = open_direct(run_id, NULL);
    struct step st = {0};
    struct util_err err;
    uv_timer_t watchdog;
    uv_timer_init(s3_sync_loop(s), &watchdog);
    watchdog.data = &st;
    uv_timer_start(&watchdog, on_step_watchdog, 20000, 0);
    for (int i = 0; i < 3 && !st.watchdog; i++) {
        char key[64];
        struct s3_body b = {.data = "step", .len = 4};
        snprintf(key, sizeof(key), "step/%d", i);
        if (s3_put(s3_sync_client(s), key, &b, NULL, on_step_put, &st, NULL, &err) != 0)
            break;
        uv_run(s3_sync_loop(s), UV_RUN_DEFAULT);
    }
    CHECK(st.done == 3 && !st.watchdog,
          "each finished operation stops a stepped loop: uv_run returned after each of 3 PUTs "
          "(%d), not at the 20 s watchdog",
          st.done);
    uv_close((uv_handle_t *)&watchdog, NULL);
    s3_sync_close(s);
}

static void test_many_keys(void)
{
    struct s3_sync *s = open_direct(run_id, NULL);
    struct s3_info info;
    struct util_err err;
    struct listing l = {0};
    int rc;

    CHECK(bulk_put(s, "many", 2500) == 0, "PUT 2,500 keys (8 at a time)");
    CHECK(put_str(s, "keep/me", "x", false, NULL, &err) == 0, "PUT a key outside the set");
    rc = s3_sync_list(s, "many/", NULL, on_key, &l, &info, &err);
    CHECK(rc == 0 && l.n == 2500 && info.requests == 3 && !l.order_bad,
          "LIST 2,500 keys: %zu keys in %u requests, ascending", l.n, info.requests);
    CHECK(l.ties > 0 && l.frac == 0,
          "LastModified in whole seconds with ties (%zu keys share their neighbour's second)",
          l.ties);
    struct listing l2 = {0};
    rc = s3_sync_list(s, "many/", &(struct s3_opts){.start_after = "many/obj02000"}, on_key, &l2,
                      &info, &err);
    CHECK(rc == 0 && l2.n == 499, "LIST after a key: %zu keys", l2.n);
    struct listing l3 = {0};
    rc = s3_sync_list(s, "", &(struct s3_opts){.delimiter = "/"}, on_key, &l3, &info, &err);
    CHECK(rc == 0 && l3.n >= 2 && info.requests == 1, "LIST with a delimiter: %zu prefixes", l3.n);

    char **keys = key_list("many", 2500);
    struct del_tally t = {0};
    rc = s3_sync_delete_objects(s, (const char *const *)keys, 2500, NULL, on_deleted, &t, &info,
                                &err);
    CHECK(rc == 0 && t.ok == 2500 && t.err == 0 && info.requests == 3,
          "DeleteObjects of 2,500 keys: %d deleted in %u requests", t.ok, info.requests);
    CHECK(count_keys(s, "many/") == 0 && count_keys(s, "keep/") == 1,
          "nothing left of the set, the key outside it stays");
    free_keys(keys, 2500);
    s3_sync_delete(s, "keep/me", &err);
    s3_sync_close(s);
}

static void test_errors(void)
{
    struct s3_config cfg;
    struct util_err err;
    struct s3_sync *s;
    struct s3_info info;
    int rc;
    struct s3_client_opts fast = {.max_attempts = 3, .backoff_base_ms = 10, .backoff_cap_ms = 50};

    make_cfg(&cfg, env("S3_ENDPOINT"), env("S3_BUCKET"), run_id, "wrong-secret", true, &err);
    s3_sync_open(&s, &cfg, &fast, &err);
    rc = put_str(s, "x", "y", false, &info, &err);
    CHECK(rc == S3_EDENIED && info.requests == 1, "a wrong secret: access denied, 1 request (%s)",
          err.msg);
    s3_sync_close(s);
    s3_config_free(&cfg);

    make_cfg(&cfg, env("S3_ENDPOINT"), "no-such-bucket-lode", "", NULL, true, &err);
    s3_sync_open(&s, &cfg, &fast, &err);
    rc = count_keys(s, "") == (size_t)-1;
    rc = s3_sync_list(s, "", NULL, NULL, NULL, &info, &err);
    CHECK(rc == S3_ENOTFOUND && strcmp(info.code, "NoSuchBucket") == 0 && info.requests == 1,
          "a missing bucket: not found, NoSuchBucket, 1 request");
    s3_sync_close(s);
    s3_config_free(&cfg);

    make_cfg(&cfg, env("S3_ENDPOINT"), env("S3_BUCKET"), run_id, NULL, false, &err);
    s3_sync_open(&s, &cfg, &fast, &err);
    rc = s3_sync_head(s, "x", &info, &err);
    CHECK(rc == S3_ETLS && info.requests == 1, "a server certificate not trusted: TLS error (%s)",
          err.msg);
    s3_sync_close(s);
    s3_config_free(&cfg);

    make_cfg(&cfg, "http://127.0.0.1:9", env("S3_BUCKET"), run_id, NULL, false, &err);
    s3_sync_open(&s, &cfg, &fast, &err);
    rc = s3_sync_head(s, "x", &info, &err);
    CHECK(rc == S3_ECONN && info.requests == 3 && strstr(err.msg, "gave up after 3") != NULL,
          "nothing listening: connection error after 3 attempts (%s)", err.msg);
    s3_sync_close(s);
    s3_config_free(&cfg);

    /* CreateBucket: new, then again (owned by us). */
    char bucket[64];
    snprintf(bucket, sizeof(bucket), "lode-e2e-%s", run_id);
    for (char *p = bucket; *p; p++)
        if (*p == '/')
            *p = '\0';
    make_cfg(&cfg, env("S3_ENDPOINT"), bucket, "", NULL, true, &err);
    s3_sync_open(&s, &cfg, NULL, &err);
    rc = s3_sync_create_bucket(s, &err);
    CHECK(rc == 0, "CreateBucket %s: %s", bucket, rc ? err.msg : "created");
    rc = s3_sync_create_bucket(s, &err);
    CHECK(rc == 0 || rc == S3_EEXISTS, "CreateBucket again: %s", rc ? err.msg : "already ours");
    CHECK(put_str(s, "in-new-bucket", "x", false, NULL, &err) == 0 &&
              s3_sync_delete(s, "in-new-bucket", &err) == 0,
          "the new bucket takes objects");
    s3_sync_close(s);
    s3_config_free(&cfg);
}

/* ---- through the fault proxy ---- */

static void test_faults(void)
{
    struct s3_client_opts o = {
        .max_attempts = 4, .backoff_base_ms = 20, .backoff_cap_ms = 200, .stall_timeout_ms = 1000};
    struct s3_sync *s = open_proxy(run_id, &o);
    struct s3_info info;
    struct util_err err;
    char *data;
    size_t len;
    int rc;
    uint64_t t0;

    proxy("clear");
    proxy("503/3");
    rc = put_str(s, "f/a", "after a 503 burst", false, &info, &err);
    CHECK(rc == 0 && info.requests == 4 && proxy("count") == 4,
          "PUT through 3 x 503: succeeds on the 4th request (%u)", info.requests);
    proxy("clear");
    proxy("slowdown/2");
    rc = s3_sync_get(s, "f/a", NULL, &data, &len, &info, &err);
    CHECK(rc == 0 && len == 17 && info.requests == 3, "GET through 2 x SlowDown: 3 requests");
    free(data);
    proxy("clear");
    proxy("503/10");
    rc = s3_sync_get(s, "f/a", NULL, &data, &len, &info, &err);
    CHECK(rc == S3_EHTTP && strcmp(info.code, "ServiceUnavailable") == 0 && info.requests == 4 &&
              proxy("count") == 4,
          "an endless 503: gives up after 4 requests, clear error (%s)", err.msg);
    proxy("clear");
    proxy("reset_before/1");
    rc = put_str(s, "f/b", "reset before", false, &info, &err);
    CHECK(rc == 0 && info.requests == 2,
          "PUT through a connection reset: retried once (rc %d, %u requests, %s)", rc,
          info.requests, rc ? err.msg : "");

    /* A conditional PUT whose first attempt landed although its answer was lost. */
    proxy("clear");
    proxy("reset_after/1");
    rc = put_str(s, "f/cond", "landed unseen", true, &info, &err);
    CHECK(rc == 0 && info.requests == 3,
          "conditional PUT that landed before a reset: the 412 is checked with HEAD and it is ours "
          "(%u requests)",
          info.requests);
    /*
     * The same after a request on the connection (a reused connection that dies
     * unanswered may be resent by curl itself, counted through its pre-request hook):
     * the 412 the resend meets must be checked, not taken for someone else's write.
     */
    proxy("clear");
    s3_sync_head(s, "f/cond", &info, &err);
    proxy("reset_after/1");
    rc = put_str(s, "f/cond2", "landed unseen", true, &info, &err);
    CHECK(rc == 0 && info.requests == 3,
          "the same after a request on the connection: checked with HEAD, ours (%u "
          "requests%s%s)",
          info.requests, rc != 0 ? ", " : "", rc != 0 ? err.msg : "");
    proxy("clear");
    proxy("reset_after/1");
    rc = put_str(s, "f/cond", "someone else", true, &info, &err);
    CHECK(rc == S3_EEXISTS, "conditional PUT onto another's object after a reset: exists");

    /* A GET cut mid-body resumes where it stopped, byte for byte. */
    struct pattern pat = {.len = 3u << 20, .seed = 11};
    struct s3_body b = {.read = read_pattern, .read_arg = &pat, .len = pat.len};
    s3_sync_put(s, "f/big", &b, NULL, NULL, &err);
    proxy("clear");
    proxy("reset_mid/1");
    struct sink_check sc = {.p = &pat};
    rc = s3_sync_get_to(s, "f/big", NULL, sink_pattern, &sc, &info, &err);
    CHECK(
        rc == 0 && sc.pos == pat.len && !sc.bad && info.requests == 2,
        "GET reset mid-body: resumed with a range, every byte once (%u requests, %llu bytes%s %s)",
        info.requests, (unsigned long long)sc.pos, sc.bad ? ", WRONG BYTES" : "",
        rc != 0 ? err.msg : "");
    proxy("clear");
    proxy("stall/1");
    t0 = uv_hrtime();
    rc = s3_sync_get(s, "f/a", NULL, &data, &len, &info, &err);
    double secs = (double)(uv_hrtime() - t0) / 1e9;
    CHECK(rc == 0 && info.requests == 2 && secs < 4.0,
          "a stalled reply: abandoned after the 1 s stall limit and retried (%.1f s)", secs);
    free(data);

    /* Listings: a truncated or tokenless page is never delivered; the next try is. */
    bulk_put(s, "fl", 1500);
    struct listing l = {0};
    proxy("clear");
    proxy("truncate_list/1");
    rc = s3_sync_list(s, "fl/", NULL, on_key, &l, &info, &err);
    CHECK(rc == 0 && l.n == 1500 && !l.order_bad && info.requests == 3,
          "LIST with a page cut in half: %zu keys, no duplicate, %u requests", l.n, info.requests);
    struct listing l2 = {0};
    proxy("clear");
    proxy("drop_token/1");
    rc = s3_sync_list(s, "fl/", NULL, on_key, &l2, &info, &err);
    CHECK(rc == 0 && l2.n == 1500 && info.requests == 3,
          "LIST with a truncated page lacking its token: %zu keys", l2.n);
    struct listing l3 = {0};
    proxy("clear");
    proxy("truncate_list/20");
    rc = s3_sync_list(s, "fl/", NULL, on_key, &l3, &info, &err);
    CHECK(rc == S3_EPROTO && l3.n == 0 && info.requests == 4 && proxy("count") == 4,
          "LIST whose pages are always cut: an error after 4 requests, no key delivered (%s)",
          err.msg);

    /* DeleteObjects with per-key errors. */
    char **keys = key_list("fl", 1500);
    struct del_tally t = {0};
    proxy("clear");
    proxy("del_retry/5");
    rc = s3_sync_delete_objects(s, (const char *const *)keys, 100, NULL, on_deleted, &t, &info,
                                &err);
    CHECK(rc == 0 && t.ok == 100 && info.requests == 2,
          "DeleteObjects with 5 InternalError keys: retried, all 100 deleted in %u requests",
          info.requests);
    struct del_tally t2 = {0};
    proxy("clear");
    proxy("del_denied/3");
    rc = s3_sync_delete_objects(s, (const char *const *)keys + 100, 100, NULL, on_deleted, &t2,
                                &info, &err);
    CHECK(rc == S3_EPARTIAL && t2.ok == 97 && t2.err == 3 && strcmp(t2.code, "AccessDenied") == 0 &&
              info.requests == 1,
          "DeleteObjects with 3 AccessDenied keys: each reported, not retried (rc %d, %d ok, %d "
          "errors, %s, %u requests)",
          rc, t2.ok, t2.err, t2.code, info.requests);
    struct del_tally t3 = {0};
    proxy("clear");
    proxy("del_missing/4");
    rc = s3_sync_delete_objects(s, (const char *const *)keys + 200, 100, NULL, on_deleted, &t3,
                                &info, &err);
    CHECK(rc == 0 && t3.ok == 100 && info.requests == 2,
          "DeleteObjects whose verbose reply omits 4 keys: those are sent again");
    struct del_tally t4 = {0};
    proxy("clear");
    proxy("del_stranger/1");
    rc = s3_sync_delete_objects(s, (const char *const *)keys + 300, 100, NULL, on_deleted, &t4,
                                &info, &err);
    CHECK(rc == S3_EPROTO && t4.ok + t4.err == 100,
          "a reply naming a key never asked for: protocol error, every key still reported (%s)",
          err.msg);
    struct del_tally t5 = {0};
    proxy("clear");
    proxy("503/50");
    rc = s3_sync_delete_objects(s, (const char *const *)keys + 400, 1100, NULL, on_deleted, &t5,
                                &info, &err);
    CHECK(rc != 0 && t5.err == 1100 && t5.ok == 0 && info.requests == 4,
          "DeleteObjects while the server fails: all 1,100 keys reported, 4 requests");
    proxy("clear");
    struct listing left = {0};
    struct s3_opts before = {.start_after = "fl/obj00399"};
    size_t all = count_keys(s, "fl/");
    s3_sync_list(s, "fl/", &before, on_key, &left, NULL, &err);
    CHECK(all == 1100 && left.n == 1100,
          "only keys asked for are gone: the 400 sent in answered requests, not the 1,100 of the "
          "failed one (%zu remain, %zu after obj00399)",
          all, left.n);
    s3_sync_delete_objects(s, (const char *const *)keys, 1500, NULL, NULL, NULL, NULL, &err);
    free_keys(keys, 1500);
    const char *rest[] = {"f/a", "f/b", "f/cond", "f/cond2", "f/big"};
    s3_sync_delete_objects(s, rest, 5, NULL, NULL, NULL, NULL, &err);
    s3_sync_close(s);
}

int main(int argc, char **argv)
{
    snprintf(run_id, sizeof(run_id), "e2e%06x/",
             (unsigned)(time(NULL) ^ (time_t)getpid()) & 0xffffff);
    proxy_port = env("PROXY_PORT");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const char *only = argc > 1 ? argv[1] : "";
    if (strstr("objects", only) != NULL)
        test_objects();
    if (strstr("paced", only) != NULL)
        test_paced();
    if (strstr("borrowed", only) != NULL)
        test_borrowed_transport();
    if (strstr("race", only) != NULL)
        test_conditional_race();
    if (strstr("step", only) != NULL)
        test_step_loop();
    if (strstr("reuse", only) != NULL)
        test_connection_reuse();
    if (strstr("many", only) != NULL)
        test_many_keys();
    if (strstr("errors", only) != NULL)
        test_errors();
    if (strstr("faults", only) != NULL)
        test_faults();
    if (strstr("multipart", only) != NULL)
        test_multipart();
    if (strstr("multipart-faults", only) != NULL)
        test_multipart_faults();
    if (strstr("multipart-listing", only) != NULL)
        test_multipart_listing();
    if (strstr("multipart-arguments", only) != NULL)
        test_multipart_arguments();
    curl_global_cleanup();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
