/*
 * Run records, manifests, marks and the upload token bucket.
 *
 * The run record and the manifest's counters are plain JSON: garbage collection
 * and the catalog read them without the repository key. The manifest's paths,
 * error list (file names) and the roots of its trees are sealed in "private",
 * with the canonical encoding of every public field as the associated data: the
 * public fields are readable without the key and cannot change without it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "repo/repo.h"

#define MANIFEST_AAD "lodestore manifest 2\n"
#define MARK_AAD     "lodestore mark 2\n"

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

#define RUN_AAD "lodestore run 2\n"

static char *repo_b64(const uint8_t *v, size_t n)
{
    char *b64 = util_malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)b64, v, (int)n);
    return b64;
}

/* base64 to bytes; *n gets their number. NULL when it is not base64. */
static uint8_t *repo_unb64(const char *b64, size_t *n)
{
    size_t len = strlen(b64), pad = 0;
    if (len == 0 || len % 4 != 0)
        return NULL;
    if (b64[len - 1] == '=')
        pad++;
    if (len > 1 && b64[len - 2] == '=')
        pad++;
    uint8_t *v = util_malloc(len / 4 * 3 + 1);
    int got = EVP_DecodeBlock(v, (const unsigned char *)b64, (int)len);
    if (got < 0 || (size_t)got < pad) {
        free(v);
        return NULL;
    }
    *n = (size_t)got - pad;
    return v;
}

static char *repo_run_aad(const struct repo_run *r)
{
    return util_asprintf("%s%s\n%s", RUN_AAD, r->id, r->parent);
}

char *repo_run_encode(const struct repo_run *r, const struct repo_keys *k)
{
    json_t *o = json_pack("{s:i, s:s, s:o, s:I, s:s}", "format", REPO_FORMAT, "id", r->id, "parent",
                          repo_id_or_null(r->parent), "maxRuntimeSeconds",
                          (json_int_t)r->max_runtime, "agent", r->agent);
    if (k != NULL && r->has_roots) {
        char *f = repo_root_format(&r->parent_files), *c = repo_root_format(&r->parent_chunks);
        char *plain = util_asprintf("%s\n%s", f, c), *aad = repo_run_aad(r);
        size_t n = strlen(plain);
        uint8_t *sealed = util_malloc(n + REPO_SEAL_EXTRA);
        repo_seal(k, aad, strlen(aad), plain, n, sealed);
        char *b64 = repo_b64(sealed, n + REPO_SEAL_EXTRA);
        json_object_set_new(o, "parentTrees", json_string(b64));
        free(b64);
        free(sealed);
        free(aad);
        free(plain);
        free(f);
        free(c);
    }
    return repo_dump(o);
}

/* The sealed parent's trees of a run record. */
static int repo_run_roots(struct repo_run *r, const char *b64, const struct repo_keys *k,
                          struct util_err *err)
{
    size_t n = 0;
    uint8_t *sealed = repo_unb64(b64, &n);
    char *plain = NULL, *aad, *nl;
    int rc = UTIL_EINVAL;
    if (sealed == NULL || n < REPO_SEAL_EXTRA || n > 4096)
        goto bad;
    plain = util_malloc(n - REPO_SEAL_EXTRA + 1);
    aad = repo_run_aad(r);
    rc = repo_unseal(k, aad, strlen(aad), sealed, n, (uint8_t *)plain, NULL);
    free(aad);
    if (rc != 0) {
        rc = util_err_set(err, UTIL_EIO,
                          "run record %s: its parent's trees do not authenticate (changed, "
                          "moved, or the key is wrong)",
                          r->id);
        goto out;
    }
    plain[n - REPO_SEAL_EXTRA] = '\0';
    if ((nl = strchr(plain, '\n')) == NULL)
        goto bad;
    *nl = '\0';
    if (repo_root_parse(plain, &r->parent_files, NULL) != 0 ||
        repo_root_parse(nl + 1, &r->parent_chunks, NULL) != 0)
        goto bad;
    r->has_roots = true;
    rc = 0;
    goto out;
bad:
    rc = util_err_set(err, UTIL_EINVAL, "run record %s: \"parentTrees\" is malformed", r->id);
out:
    free(sealed);
    free(plain);
    return rc;
}

int repo_run_decode(struct repo_run *r, const char *json, size_t len, const struct repo_keys *k,
                    struct util_err *err)
{
    json_error_t jerr;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr), *id, *parent;
    json_int_t fmt, maxrt;
    const char *agent, *trees = NULL;
    int rc;

    memset(r, 0, sizeof(*r));
    if (!o)
        return util_err_set(err, UTIL_EINVAL, "run record: not JSON: %s", jerr.text);
    if (json_unpack_ex(o, &jerr, JSON_STRICT, "{s:I, s:o, s:o, s:I, s:s, s?s}", "format", &fmt,
                       "id", &id, "parent", &parent, "maxRuntimeSeconds", &maxrt, "agent", &agent,
                       "parentTrees", &trees) != 0) {
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
    if (trees != NULL && k != NULL)
        rc = repo_run_roots(r, trees, k, err);
out:
    json_decref(o);
    if (rc != 0)
        memset(r, 0, sizeof(*r));
    return rc;
}

/* ---- manifests ---- */

/* Every public field, in one order: what the private part's seal binds. */
static json_t *repo_manifest_public(const struct repo_manifest *m)
{
    return json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:o, s:I, s:b, s:b, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I}, s:s}",
        "format", REPO_FORMAT, "id", m->id, "namespace", m->src.ns, "policy", m->src.policy, "host",
        m->src.host, "parent", repo_id_or_null(m->parent), "maxRuntimeSeconds",
        (json_int_t)m->max_runtime, "incomplete", m->incomplete, "suspicious", m->suspicious,
        "stats", "files", (json_int_t)m->files, "bytes", (json_int_t)m->bytes, "newFiles",
        (json_int_t)m->new_files, "changedFiles", (json_int_t)m->changed_files, "deletedFiles",
        (json_int_t)m->deleted_files, "newBytes", (json_int_t)m->new_bytes, "uploadedBytes",
        (json_int_t)m->uploaded_bytes, "rawNewBytes", (json_int_t)m->raw_new_bytes, "errors",
        (json_int_t)m->errors, "agent", m->agent);
}

/* The associated data: a label and the public fields, compact. The caller frees it. */
static char *repo_manifest_aad(const struct repo_manifest *m)
{
    json_t *o = repo_manifest_public(m);
    char *pub = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    char *aad = util_asprintf("%s%s", MANIFEST_AAD, pub);
    free(pub);
    return aad;
}

char *repo_manifest_encode(const struct repo_manifest *m, const struct repo_keys *k)
{
    json_t *priv = json_object(), *paths = json_array(), *errs = json_array();
    char *files = repo_root_format(&m->files_root), *chunks = repo_root_format(&m->chunks_root);
    for (size_t i = 0; i < m->npaths; i++)
        json_array_append_new(paths, json_string(m->paths[i]));
    for (size_t i = 0; i < m->nerrs; i++)
        json_array_append_new(
            errs, json_pack("{s:s, s:s}", "path", m->errs[i].path, "message", m->errs[i].message));
    json_object_set_new(priv, "paths", paths);
    json_object_set_new(priv, "errors", errs);
    json_object_set_new(priv, "files", json_string(files));
    json_object_set_new(priv, "chunks", json_string(chunks));
    free(files);
    free(chunks);
    json_object_set_new(priv, "excluded", repo_excluded_json(m->excluded));
    char *plain = json_dumps(priv, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(priv);
    size_t plen = strlen(plain);
    uint8_t *sealed = util_malloc(plen + REPO_SEAL_EXTRA);
    char *aad = repo_manifest_aad(m);
    repo_seal(k, aad, strlen(aad), plain, plen, sealed);
    free(aad);
    char *b64 = util_malloc(4 * ((plen + REPO_SEAL_EXTRA + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)b64, sealed, (int)(plen + REPO_SEAL_EXTRA));
    json_t *o = repo_manifest_public(m);
    json_object_set_new(o, "private", json_string(b64));
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
    char *aad;
    const char *files, *chunks;
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
    aad = repo_manifest_aad(m);
    rc = repo_unseal(k, aad, strlen(aad), sealed, slen, plain, err);
    free(aad);
    if (rc != 0) {
        util_err_set(err, UTIL_EIO,
                     "manifest %s: authentication failed (a field was changed, the manifest was "
                     "moved, or the key is wrong)",
                     m->id);
        goto out;
    }
    rc = UTIL_EINVAL;
    o = json_loadb((const char *)plain, slen - REPO_SEAL_EXTRA, JSON_REJECT_DUPLICATES, &jerr);
    if (!o ||
        json_unpack_ex(o, &jerr, JSON_STRICT, "{s:o, s:o, s:s, s:s, s?o}", "paths", &paths,
                       "errors", &errs, "files", &files, "chunks", &chunks, "excluded",
                       &excl) != 0 ||
        !json_is_array(paths) || !json_is_array(errs) ||
        (excl != NULL && repo_excluded_parse(excl, m->excluded) != 0)) {
        util_err_set(err, UTIL_EINVAL, "manifest %s: the private part is malformed", m->id);
        goto out;
    }
    if (repo_root_parse(files, &m->files_root, err) != 0 ||
        repo_root_parse(chunks, &m->chunks_root, err) != 0) {
        util_err_set(err, UTIL_EINVAL, "manifest %s: a tree's root is malformed", m->id);
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
    int inc, sus, rc;

    memset(m, 0, sizeof(*m));
    if (!o)
        return util_err_set(err, UTIL_EINVAL, "manifest: not JSON: %s", jerr.text);
    if (json_is_object(o) && json_is_integer(json_object_get(o, "format")) &&
        json_integer_value(json_object_get(o, "format")) != REPO_FORMAT) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "manifest: format %lld, but this lode reads format %d only",
                          (long long)json_integer_value(json_object_get(o, "format")), REPO_FORMAT);
        goto out;
    }
    if (json_unpack_ex(o, &jerr, JSON_STRICT,
                       "{s:I, s:o, s:s, s:s, s:s, s:o, s:I, s:b, s:b, s:o, "
                       "s:s, s:s}",
                       "format", &fmt, "id", &id, "namespace", &ns, "policy", &pol, "host", &host,
                       "parent", &parent, "maxRuntimeSeconds", &maxrt, "incomplete", &inc,
                       "suspicious", &sus, "stats", &stats, "agent", &agent, "private",
                       &priv) != 0) {
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
    m->suspicious = sus;
    memcpy(m->agent, agent, strlen(agent) + 1);
    rc = k ? repo_manifest_private(m, priv, k, err) : 0;
out:
    json_decref(o);
    if (rc != 0)
        repo_manifest_free(m);
    return rc;
}

int repo_manifest_placed(const struct repo_manifest *m, const struct repo_source *src,
                         const char *id, struct util_err *err)
{
    if (strcmp(m->id, id) != 0 || strcmp(m->src.ns, src->ns) != 0 ||
        strcmp(m->src.policy, src->policy) != 0 || strcmp(m->src.host, src->host) != 0)
        return util_err_set(
            err, UTIL_EIO, "manifest %s/%s/%s/%s says it is %s/%s/%s/%s (copied or moved)", src->ns,
            src->policy, src->host, id, m->src.ns, m->src.policy, m->src.host, m->id);
    return 0;
}

/* ---- marks ---- */

static const char *repo_mark_kind(enum repo_kind kind)
{
    return kind == REPO_KEY_INCOMPLETE ? "incomplete"
           : kind == REPO_KEY_PINNED   ? "pinned"
                                       : "suspicious";
}

/* The associated data of a mark's tag: its place, its kind and, for a pin, its reason
 * (NULL for the other kinds), so neither can be moved nor the reason changed. */
static char *repo_mark_aad(const struct repo_source *src, const char *id, enum repo_kind kind,
                           const char *reason)
{
    return util_asprintf("%s%s\n%s\n%s\n%s\n%s%s%s", MARK_AAD, src->ns, src->policy, src->host, id,
                         repo_mark_kind(kind), reason ? "\n" : "", reason ? reason : "");
}

static void repo_mark_tag(const struct repo_keys *k, const char *aad,
                          char hex[2 * REPO_SEAL_EXTRA + 1])
{
    uint8_t tag[REPO_SEAL_EXTRA];
    repo_seal(k, aad, strlen(aad), "", 0, tag);
    repo_hex(tag, sizeof(tag), hex);
}

/* 0 when hex is the tag of aad under k, else UTIL_EIO with a message naming the mark. */
static int repo_mark_verify(const struct repo_keys *k, const char *aad, const char *hex,
                            const char *what, const char *id, struct util_err *err)
{
    uint8_t tag[REPO_SEAL_EXTRA], none[1];
    if (strlen(hex) != 2 * REPO_SEAL_EXTRA || repo_unhex(hex, tag, sizeof(tag)) != 0)
        return util_err_set(err, UTIL_EIO, "the .%s mark of %s is not one lode wrote", what, id);
    if (repo_unseal(k, aad, strlen(aad), tag, sizeof(tag), none, NULL) != 0)
        return util_err_set(err, UTIL_EIO,
                            "the .%s mark of %s does not authenticate (made without the key, "
                            "or moved)",
                            what, id);
    return 0;
}

char *repo_mark_encode(const struct repo_keys *k, const struct repo_source *src, const char *id,
                       enum repo_kind kind)
{
    char *aad = repo_mark_aad(src, id, kind, NULL), hex[2 * REPO_SEAL_EXTRA + 1];
    repo_mark_tag(k, aad, hex);
    free(aad);
    return util_asprintf("{\"format\": %d, \"tag\": \"%s\"}\n", REPO_FORMAT, hex);
}

int repo_mark_check(const struct repo_keys *k, const struct repo_source *src, const char *id,
                    enum repo_kind kind, const char *body, size_t len, struct util_err *err)
{
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    json_int_t fmt;
    const char *hex;
    int rc;

    if (!o ||
        json_unpack_ex(o, &jerr, JSON_STRICT, "{s:I, s:s}", "format", &fmt, "tag", &hex) != 0 ||
        fmt != REPO_FORMAT) {
        rc = util_err_set(err, UTIL_EIO, "the .%s mark of %s is not one lode wrote",
                          repo_mark_kind(kind), id);
    } else {
        char *aad = repo_mark_aad(src, id, kind, NULL);
        rc = repo_mark_verify(k, aad, hex, repo_mark_kind(kind), id, err);
        free(aad);
    }
    json_decref(o);
    return rc;
}

char *repo_pin_encode(const struct repo_keys *k, const struct repo_source *src, const char *id,
                      const char *reason)
{
    char *aad = repo_mark_aad(src, id, REPO_KEY_PINNED, reason), hex[2 * REPO_SEAL_EXTRA + 1];
    repo_mark_tag(k, aad, hex);
    free(aad);
    json_t *o = json_pack("{s:i, s:s, s:s}", "format", REPO_FORMAT, "reason", reason, "tag", hex);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

int repo_pin_decode(const struct repo_keys *k, const struct repo_source *src, const char *id,
                    const char *body, size_t len, char **reason, struct util_err *err)
{
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    json_int_t fmt = 0;
    const char *why = NULL, *hex = NULL;
    int rc = 0;

    *reason = NULL;
    if (!o ||
        json_unpack_ex(o, &jerr, JSON_STRICT, "{s?I, s:s, s?s}", "format", &fmt, "reason", &why,
                       "tag", &hex) != 0 ||
        (k != NULL && (hex == NULL || fmt != REPO_FORMAT))) {
        rc = util_err_set(err, UTIL_EIO, "the .pinned mark of %s is not one lode wrote", id);
    } else if (k != NULL) {
        char *aad = repo_mark_aad(src, id, REPO_KEY_PINNED, why);
        rc = repo_mark_verify(k, aad, hex, "pinned", id, err);
        free(aad);
    }
    if (rc == 0)
        *reason = util_strdup(why);
    json_decref(o);
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
