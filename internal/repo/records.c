/*
 * Run records, manifests and the upload token bucket.
 *
 * The run record and the manifest's counters are plain JSON: garbage collection
 * and the catalog read them without the repository key. The manifest's paths and
 * error list (file names) are sealed in "private", bound to the snapshot id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "repo/repo.h"

#define MANIFEST_AAD "lodestore manifest "

static json_t *repo_id_or_null(const char *id)
{
    return id[0] ? json_string(id) : json_null();
}

static char *repo_dump(json_t *o)
{
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    char *r = util_asprintf("%s\n", s);
    free(s);
    return r;
}

static int repo_copy_id(char *dst, json_t *v, bool nullable, const char *what, struct util_err *err)
{
    if (nullable && json_is_null(v)) {
        dst[0] = '\0';
        return 0;
    }
    if (!json_is_string(v) || repo_id_parse(json_string_value(v), NULL, NULL) != 0)
        return util_err_set(err, UTIL_EINVAL, "%s is not a snapshot id", what);
    memcpy(dst, json_string_value(v), REPO_ID_LEN + 1);
    return 0;
}

char *repo_run_encode(const struct repo_run *r)
{
    return repo_dump(json_pack("{s:i, s:s, s:o, s:I, s:s}", "format", REPO_FORMAT, "id", r->id,
                               "parent", repo_id_or_null(r->parent), "maxRuntimeSeconds",
                               (json_int_t)r->max_runtime, "agent", r->agent));
}

int repo_run_decode(struct repo_run *r, const char *json, size_t len, struct util_err *err)
{
    json_error_t jerr;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr), *id, *parent;
    json_int_t fmt, maxrt;
    const char *agent;
    int rc;

    memset(r, 0, sizeof(*r));
    if (!o)
        return util_err_set(err, UTIL_EINVAL, "run record: not JSON: %s", jerr.text);
    if (json_unpack_ex(o, &jerr, JSON_STRICT, "{s:I, s:o, s:o, s:I, s:s}", "format", &fmt, "id",
                       &id, "parent", &parent, "maxRuntimeSeconds", &maxrt, "agent", &agent) != 0) {
        rc = util_err_set(err, UTIL_EINVAL, "run record: %s", jerr.text);
        goto out;
    }
    if (fmt != REPO_FORMAT || maxrt < 1 || maxrt > 366 * 86400 || strlen(agent) >= 64) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "run record: format, maxRuntimeSeconds or agent is "
                          "out of range");
        goto out;
    }
    if ((rc = repo_copy_id(r->id, id, false, "run record: id", err)) != 0 ||
        (rc = repo_copy_id(r->parent, parent, true, "run record: parent", err)) != 0)
        goto out;
    r->max_runtime = maxrt;
    memcpy(r->agent, agent, strlen(agent) + 1);
out:
    json_decref(o);
    if (rc != 0)
        memset(r, 0, sizeof(*r));
    return rc;
}

/* ---- manifests ---- */

static void repo_manifest_aad(char *aad, size_t size, const char *id)
{
    snprintf(aad, size, "%s%s", MANIFEST_AAD, id);
}

char *repo_manifest_encode(const struct repo_manifest *m, const struct repo_keys *k)
{
    json_t *priv = json_object(), *paths = json_array(), *errs = json_array();
    char aad[64];
    for (size_t i = 0; i < m->npaths; i++)
        json_array_append_new(paths, json_string(m->paths[i]));
    for (size_t i = 0; i < m->nerrs; i++)
        json_array_append_new(
            errs, json_pack("{s:s, s:s}", "path", m->errs[i].path, "message", m->errs[i].message));
    json_object_set_new(priv, "paths", paths);
    json_object_set_new(priv, "errors", errs);
    json_object_set_new(priv, "excluded", repo_excluded_json(m->excluded));
    char *plain = json_dumps(priv, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(priv);
    size_t plen = strlen(plain);
    uint8_t *sealed = util_malloc(plen + REPO_SEAL_EXTRA);
    repo_manifest_aad(aad, sizeof(aad), m->id);
    repo_seal(k, aad, strlen(aad), plain, plen, sealed);
    char *b64 = util_malloc(4 * ((plen + REPO_SEAL_EXTRA + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)b64, sealed, (int)(plen + REPO_SEAL_EXTRA));
    json_t *o = json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:o, s:I, s:b, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I}, s:s, s:s}",
        "format", REPO_FORMAT, "id", m->id, "namespace", m->src.ns, "policy", m->src.policy, "host",
        m->src.host, "parent", repo_id_or_null(m->parent), "maxRuntimeSeconds",
        (json_int_t)m->max_runtime, "incomplete", m->incomplete, "stats", "files",
        (json_int_t)m->files, "bytes", (json_int_t)m->bytes, "newFiles", (json_int_t)m->new_files,
        "changedFiles", (json_int_t)m->changed_files, "deletedFiles", (json_int_t)m->deleted_files,
        "newBytes", (json_int_t)m->new_bytes, "uploadedBytes", (json_int_t)m->uploaded_bytes,
        "rawNewBytes", (json_int_t)m->raw_new_bytes, "errors", (json_int_t)m->errors, "agent",
        m->agent, "private", b64);
    free(b64);
    free(sealed);
    free(plain);
    return repo_dump(o);
}

static int repo_u64(json_t *o, const char *key, uint64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return UTIL_EINVAL;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int repo_manifest_private(struct repo_manifest *m, const char *b64,
                                 const struct repo_keys *k, struct util_err *err)
{
    size_t n = strlen(b64), pad = 0;
    uint8_t *sealed, *plain;
    char aad[64];
    json_error_t jerr;
    json_t *o = NULL, *paths, *errs, *excl = NULL;
    int rc = UTIL_EINVAL;

    if (n == 0 || n % 4 != 0)
        return util_err_set(err, UTIL_EINVAL, "manifest %s: \"private\" is not base64", m->id);
    if (b64[n - 1] == '=')
        pad++;
    if (n > 1 && b64[n - 2] == '=')
        pad++;
    sealed = util_malloc(n / 4 * 3 + 1);
    int got = EVP_DecodeBlock(sealed, (const unsigned char *)b64, (int)n);
    if (got < 0 || (size_t)got < pad + REPO_SEAL_EXTRA) {
        free(sealed);
        return util_err_set(err, UTIL_EINVAL, "manifest %s: \"private\" is not base64", m->id);
    }
    size_t slen = (size_t)got - pad;
    plain = util_malloc(slen - REPO_SEAL_EXTRA + 1);
    repo_manifest_aad(aad, sizeof(aad), m->id);
    if ((rc = repo_unseal(k, aad, strlen(aad), sealed, slen, plain, err)) != 0) {
        util_err_set(err, rc, "manifest %s: authentication failed (changed or wrong key)", m->id);
        goto out;
    }
    rc = UTIL_EINVAL;
    o = json_loadb((const char *)plain, slen - REPO_SEAL_EXTRA, JSON_REJECT_DUPLICATES, &jerr);
    if (!o ||
        json_unpack_ex(o, &jerr, JSON_STRICT, "{s:o, s:o, s?o}", "paths", &paths, "errors", &errs,
                       "excluded", &excl) != 0 ||
        !json_is_array(paths) || !json_is_array(errs) ||
        (excl != NULL && repo_excluded_parse(excl, m->excluded) != 0)) {
        util_err_set(err, UTIL_EINVAL, "manifest %s: the private part is malformed", m->id);
        goto out;
    }
    m->paths = util_calloc(json_array_size(paths) + 1, sizeof(char *));
    for (size_t i = 0; i < json_array_size(paths); i++) {
        json_t *p = json_array_get(paths, i);
        if (!json_is_string(p)) {
            util_err_set(err, UTIL_EINVAL, "manifest %s: a path is not a string", m->id);
            goto out;
        }
        m->paths[m->npaths++] = util_strdup(json_string_value(p));
    }
    m->errs = util_calloc(json_array_size(errs) + 1, sizeof(*m->errs));
    for (size_t i = 0; i < json_array_size(errs); i++) {
        const char *path, *msg;
        if (json_unpack(json_array_get(errs, i), "{s:s, s:s}", "path", &path, "message", &msg) !=
            0) {
            util_err_set(err, UTIL_EINVAL, "manifest %s: an error entry is malformed", m->id);
            goto out;
        }
        m->errs[m->nerrs].path = util_strdup(path);
        m->errs[m->nerrs].message = util_strdup(msg);
        m->nerrs++;
    }
    rc = 0;
out:
    json_decref(o);
    free(sealed);
    free(plain);
    return rc;
}

int repo_manifest_decode(struct repo_manifest *m, const char *json, size_t len,
                         const struct repo_keys *k, struct util_err *err)
{
    json_error_t jerr;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr), *id, *parent, *stats;
    json_int_t fmt, maxrt;
    const char *ns, *pol, *host, *agent, *priv;
    int inc, rc;

    memset(m, 0, sizeof(*m));
    if (!o)
        return util_err_set(err, UTIL_EINVAL, "manifest: not JSON: %s", jerr.text);
    if (json_unpack_ex(o, &jerr, JSON_STRICT,
                       "{s:I, s:o, s:s, s:s, s:s, s:o, s:I, s:b, s:o, "
                       "s:s, s:s}",
                       "format", &fmt, "id", &id, "namespace", &ns, "policy", &pol, "host", &host,
                       "parent", &parent, "maxRuntimeSeconds", &maxrt, "incomplete", &inc, "stats",
                       &stats, "agent", &agent, "private", &priv) != 0) {
        rc = util_err_set(err, UTIL_EINVAL, "manifest: %s", jerr.text);
        goto out;
    }
    if (fmt != REPO_FORMAT || maxrt < 1 || strlen(agent) >= sizeof(m->agent) ||
        !json_is_object(stats) || json_object_size(stats) != 9) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "manifest: format, maxRuntimeSeconds, agent or "
                          "stats is out of range");
        goto out;
    }
    if ((rc = repo_copy_id(m->id, id, false, "manifest: id", err)) != 0 ||
        (rc = repo_copy_id(m->parent, parent, true, "manifest: parent", err)) != 0 ||
        (rc = repo_source_set(&m->src, ns, pol, host, err)) != 0)
        goto out;
    if (repo_u64(stats, "files", &m->files) || repo_u64(stats, "bytes", &m->bytes) ||
        repo_u64(stats, "newFiles", &m->new_files) ||
        repo_u64(stats, "changedFiles", &m->changed_files) ||
        repo_u64(stats, "deletedFiles", &m->deleted_files) ||
        repo_u64(stats, "newBytes", &m->new_bytes) ||
        repo_u64(stats, "uploadedBytes", &m->uploaded_bytes) ||
        repo_u64(stats, "rawNewBytes", &m->raw_new_bytes) ||
        repo_u64(stats, "errors", &m->errors)) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "manifest %s: a counter in stats is missing or "
                          "negative",
                          m->id);
        goto out;
    }
    m->max_runtime = maxrt;
    m->incomplete = inc;
    memcpy(m->agent, agent, strlen(agent) + 1);
    rc = k ? repo_manifest_private(m, priv, k, err) : 0;
out:
    json_decref(o);
    if (rc != 0)
        repo_manifest_free(m);
    return rc;
}

void repo_manifest_free(struct repo_manifest *m)
{
    for (size_t i = 0; i < m->npaths; i++)
        free(m->paths[i]);
    free(m->paths);
    for (size_t i = 0; i < m->nerrs; i++) {
        free(m->errs[i].path);
        free(m->errs[i].message);
    }
    free(m->errs);
    memset(m, 0, sizeof(*m));
}

/* ---- token bucket ---- */

void repo_bucket_init(struct repo_bucket *b, uint64_t rate, uint64_t now_ns)
{
    b->rate = (double)rate;
    b->cap = b->rate / 20 > 512 ? b->rate / 20 : 512;
    b->tokens = b->cap;
    b->last = now_ns;
}

static void repo_bucket_fill(struct repo_bucket *b, uint64_t now_ns)
{
    if (now_ns > b->last) {
        b->tokens += b->rate * (double)(now_ns - b->last) / 1e9;
        if (b->tokens > b->cap)
            b->tokens = b->cap;
        b->last = now_ns;
    }
}

size_t repo_bucket_take(struct repo_bucket *b, uint64_t now_ns, size_t want)
{
    repo_bucket_fill(b, now_ns);
    double have = b->tokens < 0 ? 0 : b->tokens;
    size_t got = (double)want <= have ? want : (size_t)have;
    b->tokens -= (double)got;
    return got;
}

uint64_t repo_bucket_wait(struct repo_bucket *b, uint64_t now_ns, size_t want)
{
    repo_bucket_fill(b, now_ns);
    double need = (double)want < b->cap ? (double)want : b->cap;
    if (need < 1)
        need = 1;
    if (b->tokens >= need)
        return 0;
    return (uint64_t)((need - b->tokens) * 1e9 / b->rate) + 1;
}
