/*
 * Names, snapshot ids, object keys, the path order and the catalog. Every key is
 * made by repo_key_build and read by repo_key_parse, so the layout lives here
 * and nowhere else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repo/repo.h"

int repo_name_check(const char *name, const char *what, struct util_err *err)
{
    size_t n = strlen(name);
    if (n == 0)
        return util_err_set(err, UTIL_EINVAL, "the %s is empty", what);
    if (n > REPO_NAME_MAX)
        return util_err_set(err, UTIL_EINVAL, "the %s is longer than %d bytes", what,
                            REPO_NAME_MAX);
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return util_err_set(err, UTIL_EINVAL, "the %s \"%s\" is not a name", what, name);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (ch == '/' || ch < 0x20 || ch == 0x7f)
            return util_err_set(err, UTIL_EINVAL,
                                "the %s \"%s\" holds a '/' or a control character", what, name);
    }
    return 0;
}

int repo_source_set(struct repo_source *s, const char *ns, const char *policy, const char *host,
                    struct util_err *err)
{
    int rc;
    if ((rc = repo_name_check(ns, "namespace", err)) != 0 ||
        (rc = repo_name_check(policy, "policy name", err)) != 0 ||
        (rc = repo_name_check(host, "host", err)) != 0)
        return rc;
    memset(s, 0, sizeof(*s));
    memcpy(s->ns, ns, strlen(ns));
    memcpy(s->policy, policy, strlen(policy));
    memcpy(s->host, host, strlen(host));
    return 0;
}

void repo_hex(const uint8_t *v, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[v[i] >> 4];
        out[2 * i + 1] = digits[v[i] & 15];
    }
    out[2 * n] = '\0';
}

static int repo_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* upper case is not ours: keys are written in lower case */
}

int repo_unhex(const char *s, uint8_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = repo_hexval(s[2 * i]), lo = hi < 0 ? -1 : repo_hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return UTIL_EINVAL;
        v[i] = (uint8_t)(hi << 4 | lo);
    }
    return s[2 * n] == '\0' ? 0 : UTIL_EINVAL;
}

void repo_id_make(int64_t t, const uint8_t random[8], char out[REPO_ID_LEN + 1])
{
    char hex[17];
    size_t n = util_format_time(t, 0, UTIL_TIME_BASIC, out, REPO_ID_LEN + 1);
    repo_hex(random, 8, hex);
    snprintf(out + n, REPO_ID_LEN + 1 - n, "-%s", hex);
}

int repo_id_parse(const char *id, int64_t *t, struct util_err *err)
{
    struct util_civil c = {0};
    uint8_t rnd[8];
    uint64_t v[6];
    static const size_t at[6] = {0, 4, 6, 9, 11, 13}, len[6] = {4, 2, 2, 2, 2, 2};

    if (strlen(id) != REPO_ID_LEN || id[8] != 'T' || id[15] != 'Z' || id[16] != '-' ||
        repo_unhex(id + 17, rnd, 8) != 0)
        goto bad;
    for (int i = 0; i < 6; i++)
        if (util_parse_u64(id + at[i], len[i], 9999, &v[i]) != 0)
            goto bad;
    c.year = (int64_t)v[0];
    c.month = (unsigned)v[1];
    c.day = (unsigned)v[2];
    c.hour = (unsigned)v[3];
    c.minute = (unsigned)v[4];
    c.second = (unsigned)v[5];
    if (c.year < 1970 || c.month < 1 || c.month > 12 || c.day < 1 ||
        c.day > util_days_in_month(c.year, c.month) || c.hour > 23 || c.minute > 59 ||
        c.second > 59)
        goto bad;
    if (t)
        *t = util_seconds_from_civil(&c);
    return 0;
bad:
    return util_err_set(err, UTIL_EINVAL,
                        "\"%.80s\" is not a snapshot id (YYYYMMDDTHHMMSSZ-<16 hex digits>)", id);
}

static const char *const repo_top[] = {
    [REPO_KEY_PACK] = "data",
    [REPO_KEY_META] = "meta",
    [REPO_KEY_RUN] = "runs",
    [REPO_KEY_MANIFEST] = "snapshots",
    [REPO_KEY_INCOMPLETE] = "snapshots",
    [REPO_KEY_SUSPICIOUS] = "snapshots",
    [REPO_KEY_PINNED] = "snapshots",
    [REPO_KEY_GCCACHE] = "gc",
};
static const char *const repo_suffix[] = {
    [REPO_KEY_PACK] = ".pack",
    [REPO_KEY_META] = ".meta",
    [REPO_KEY_RUN] = ".json",
    [REPO_KEY_MANIFEST] = ".json",
    [REPO_KEY_INCOMPLETE] = ".incomplete",
    [REPO_KEY_SUSPICIOUS] = ".suspicious",
    [REPO_KEY_PINNED] = ".pinned",
    [REPO_KEY_GCCACHE] = ".cache",
};

char *repo_key_build(const struct repo_key *k)
{
    char name[2 * REPO_HASH_LEN + 1];
    if (k->kind == REPO_KEY_CONFIG)
        return util_strdup("config.json");
    if (k->kind == REPO_KEY_PACK)
        repo_hex(k->pack, REPO_HASH_LEN, name);
    else if (k->kind == REPO_KEY_GCCACHE)
        memcpy(name, "packs", sizeof("packs"));
    else if (k->kind == REPO_KEY_META)
        return util_asprintf("meta/%s/%s/%s/%s.%u.meta", k->src.ns, k->src.policy, k->src.host,
                             k->id, (unsigned)k->seq);
    else
        memcpy(name, k->id, REPO_ID_LEN + 1);
    return util_asprintf("%s/%s/%s/%s/%s%s", repo_top[k->kind], k->src.ns, k->src.policy,
                         k->src.host, name, repo_suffix[k->kind]);
}

char *repo_key_prefix(enum repo_kind kind, const char *ns, const char *policy, const char *host)
{
    struct util_buf b;
    util_buf_init(&b);
    util_buf_printf(&b, "%s/", kind == REPO_KEY_CONFIG ? "" : repo_top[kind]);
    if (ns) {
        util_buf_printf(&b, "%s/", ns);
        if (policy) {
            util_buf_printf(&b, "%s/", policy);
            if (host)
                util_buf_printf(&b, "%s/", host);
        }
    }
    return util_buf_steal(&b);
}

static bool repo_ends_with(const char *s, size_t n, const char *suffix, size_t *stem)
{
    size_t m = strlen(suffix);
    if (n < m || memcmp(s + n - m, suffix, m) != 0)
        return false;
    *stem = n - m;
    return true;
}

int repo_key_parse(const char *key, struct repo_key *out, struct util_err *err)
{
    const char *part[5];
    size_t plen[5], stem;
    int n = 0;
    char buf[REPO_NAME_MAX + 1];
    const char *p = key;

    memset(out, 0, sizeof(*out));
    if (strcmp(key, "config.json") == 0) {
        out->kind = REPO_KEY_CONFIG;
        return 0;
    }
    while (n < 5) {
        const char *slash = strchr(p, '/');
        part[n] = p;
        plen[n] = slash ? (size_t)(slash - p) : strlen(p);
        n++;
        if (!slash)
            break;
        p = slash + 1;
    }
    if (n != 5 || strchr(part[4], '/') != NULL)
        goto bad;
    for (int i = 1; i < 4; i++) {
        if (plen[i] == 0 || plen[i] > REPO_NAME_MAX)
            goto bad;
        memcpy(buf, part[i], plen[i]);
        buf[plen[i]] = '\0';
        if (repo_name_check(buf, "name", NULL) != 0)
            goto bad;
        memcpy(i == 1 ? out->src.ns : i == 2 ? out->src.policy : out->src.host, buf, plen[i] + 1);
    }
#define TOP(s) (plen[0] == strlen(s) && memcmp(part[0], s, plen[0]) == 0)
    if (TOP("data")) {
        out->kind = REPO_KEY_PACK;
        if (!repo_ends_with(part[4], plen[4], ".pack", &stem) || stem != 2 * REPO_HASH_LEN)
            goto bad;
        char hex[2 * REPO_HASH_LEN + 1];
        memcpy(hex, part[4], stem);
        hex[stem] = '\0';
        if (repo_unhex(hex, out->pack, REPO_HASH_LEN) != 0)
            goto bad;
        return 0;
    }
    if (TOP("meta")) {
        /* <id>.<seq>.meta, seq in decimal without leading zeros. */
        size_t d;
        out->kind = REPO_KEY_META;
        if (!repo_ends_with(part[4], plen[4], ".meta", &stem) || stem < REPO_ID_LEN + 2 ||
            part[4][REPO_ID_LEN] != '.')
            goto bad;
        d = stem - REPO_ID_LEN - 1;
        if (d > 9 || (d > 1 && part[4][REPO_ID_LEN + 1] == '0'))
            goto bad;
        for (size_t i = 0; i < d; i++) {
            char c = part[4][REPO_ID_LEN + 1 + i];
            if (c < '0' || c > '9')
                goto bad;
            out->seq = out->seq * 10 + (uint32_t)(c - '0');
        }
        stem = REPO_ID_LEN;
    } else if (TOP("gc")) {
        if (plen[4] != strlen("packs.cache") || memcmp(part[4], "packs.cache", plen[4]) != 0)
            goto bad;
        out->kind = REPO_KEY_GCCACHE;
        return 0;
    } else if (TOP("runs")) {
        out->kind = REPO_KEY_RUN;
        if (!repo_ends_with(part[4], plen[4], ".json", &stem))
            goto bad;
    } else if (TOP("snapshots")) {
        if (repo_ends_with(part[4], plen[4], ".json", &stem))
            out->kind = REPO_KEY_MANIFEST;
        else if (repo_ends_with(part[4], plen[4], ".incomplete", &stem))
            out->kind = REPO_KEY_INCOMPLETE;
        else if (repo_ends_with(part[4], plen[4], ".suspicious", &stem))
            out->kind = REPO_KEY_SUSPICIOUS;
        else if (repo_ends_with(part[4], plen[4], ".pinned", &stem))
            out->kind = REPO_KEY_PINNED;
        else
            goto bad;
    } else {
        goto bad;
    }
#undef TOP
    if (stem != REPO_ID_LEN)
        goto bad;
    memcpy(out->id, part[4], REPO_ID_LEN);
    out->id[REPO_ID_LEN] = '\0';
    if (repo_id_parse(out->id, NULL, NULL) != 0)
        goto bad;
    return 0;
bad:
    memset(out, 0, sizeof(*out));
    return util_err_set(err, UTIL_EINVAL, "\"%.200s\" is not a key of a Lodestore repository", key);
}

int repo_path_cmp(const char *a, const char *b)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    while (*x && *x == *y) {
        x++;
        y++;
    }
    if (*x == *y)
        return 0;
    /* '/' ends a component: it sorts before any byte but the end. */
    unsigned cx = *x == '/' ? 1 : *x == 0 ? 0 : (unsigned)*x + 1;
    unsigned cy = *y == '/' ? 1 : *y == 0 ? 0 : (unsigned)*y + 1;
    return cx < cy ? -1 : 1;
}

/* ---- catalog ---- */

struct repo_catalog_mark {
    struct repo_source src;
    char id[REPO_ID_LEN + 1];
    enum repo_kind kind;
};

void repo_catalog_init(struct repo_catalog *c)
{
    memset(c, 0, sizeof(*c));
}

void repo_catalog_add(struct repo_catalog *c, const char *key, int64_t last_modified)
{
    struct repo_key k;
    if (repo_key_parse(key, &k, NULL) != 0)
        return;
    if (k.kind == REPO_KEY_MANIFEST) {
        c->v = util_grow(c->v, &c->cap, c->n + 1, sizeof(*c->v));
        struct repo_snapshot *s = &c->v[c->n++];
        memset(s, 0, sizeof(*s));
        s->src = k.src;
        memcpy(s->id, k.id, sizeof(s->id));
        s->time = last_modified;
    } else if (k.kind == REPO_KEY_INCOMPLETE || k.kind == REPO_KEY_SUSPICIOUS ||
               k.kind == REPO_KEY_PINNED) {
        c->marks = util_grow(c->marks, &c->capmarks, c->nmarks + 1, sizeof(*c->marks));
        struct repo_catalog_mark *m = &c->marks[c->nmarks++];
        m->src = k.src;
        memcpy(m->id, k.id, sizeof(m->id));
        m->kind = k.kind;
    }
}

static int repo_src_cmp(const struct repo_source *a, const struct repo_source *b)
{
    int r = strcmp(a->ns, b->ns);
    if (r == 0)
        r = strcmp(a->policy, b->policy);
    if (r == 0)
        r = strcmp(a->host, b->host);
    return r;
}

static int repo_snap_by_source(const void *pa, const void *pb)
{
    const struct repo_snapshot *a = pa, *b = pb;
    int r = repo_src_cmp(&a->src, &b->src);
    return r ? r : strcmp(a->id, b->id);
}

static int repo_snap_newest_first(const void *pa, const void *pb)
{
    const struct repo_snapshot *a = pa, *b = pb;
    if (a->time != b->time)
        return a->time > b->time ? -1 : 1;
    int r = strcmp(b->id, a->id);
    return r ? r : repo_src_cmp(&a->src, &b->src);
}

void repo_catalog_finish(struct repo_catalog *c)
{
    if (c->n > 1)
        qsort(c->v, c->n, sizeof(*c->v), repo_snap_by_source);
    for (size_t i = 0; i < c->nmarks; i++) {
        struct repo_snapshot key = {.src = c->marks[i].src};
        memcpy(key.id, c->marks[i].id, sizeof(key.id));
        struct repo_snapshot *s =
            c->n ? bsearch(&key, c->v, c->n, sizeof(*c->v), repo_snap_by_source) : NULL;
        if (!s)
            continue;
        if (c->marks[i].kind == REPO_KEY_INCOMPLETE)
            s->incomplete = true;
        else if (c->marks[i].kind == REPO_KEY_PINNED)
            s->pinned = true;
        else
            s->suspicious = true;
    }
    free(c->marks);
    c->marks = NULL;
    c->nmarks = c->capmarks = 0;
    if (c->n > 1)
        qsort(c->v, c->n, sizeof(*c->v), repo_snap_newest_first);
}

void repo_catalog_free(struct repo_catalog *c)
{
    free(c->v);
    free(c->marks);
    memset(c, 0, sizeof(*c));
}
