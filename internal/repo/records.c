/*
 * Run records, manifests and marks (the upload token bucket is in bucket.c).
 *
 * The run record and the manifest are small binary records: their public fields
 * (parent, maxRuntime, counters, agent) are read without the repository key by
 * garbage collection and the catalog; the rest (the roots of the trees, the paths,
 * the errors) is sealed with the place and every public byte as associated data, so
 * the public fields are readable without the key and cannot change without it. Marks
 * and pins stay small JSON objects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/sha.h>

#include "repo/repo.h"
#include "util/varint.h"

#define MANIFEST_AAD "lodestore manifest 2\n"
#define MARK_AAD     "lodestore mark 2\n"
#define RUN_AAD      "lodestore run 2\n"

/*
 * The binary records (docs/repository.md, "Run records and manifests"): a leading
 * byte no JSON text starts with, the kind, a 4-byte check of the place, the public
 * fields, and the sealed part to the end of the object, whose plain bytes start with
 * their own version byte. The place (source and id) is named by the key, so the body
 * does not repeat it: the check (the first bytes of its SHA-256) lets a reader without
 * the key tell a record copied or moved by mistake, as the names in the JSON of
 * earlier builds did, for 4 bytes. The associated data of the seal is a label, the
 * place and every public byte, so a record changed, moved or copied does not open with
 * the key.
 */
#define REC_MAGIC       0xC2 /* "format 2, binary" */
#define REC_KIND_RUN    'R'
#define REC_KIND_MAN    'M'
#define REC_SEALED_V    2
#define REC_HAS_PARENT  0x01u
#define REC_HAS_ROOTS   0x02u /* run records: the parent's trees are sealed */
#define REC_INCOMPLETE  0x02u /* manifests */
#define REC_SUSPICIOUS  0x04u
#define REC_MAX_RUNTIME (366 * 86400)
#define REC_MAX_STRINGS (1u << 20) /* paths or errors a manifest may name */
#define REC_PLACE_LEN   4
#define REC_HEAD_LEN    (2 + REC_PLACE_LEN)

static void rec_place(const struct repo_source *src, const char *id, uint8_t out[REC_PLACE_LEN])
{
    uint8_t h[SHA256_DIGEST_LENGTH];
    char *s = util_asprintf("%s\n%s\n%s\n%s", src->ns, src->policy, src->host, id);
    SHA256((const uint8_t *)s, strlen(s), h);
    memcpy(out, h, REC_PLACE_LEN);
    free(s);
}

/* The magic, the kind and the place check. */
static void rec_put_head(struct util_buf *b, uint8_t kind, const struct repo_source *src,
                         const char *id)
{
    uint8_t head[REC_HEAD_LEN] = {REC_MAGIC, kind};
    rec_place(src, id, head + 2);
    util_buf_append(b, head, sizeof(head));
}

static void rec_put_id(struct util_buf *b, const char *id)
{
    int64_t t = 0;
    uint8_t rnd[8];
    repo_id_parse(id, &t, NULL);
    repo_unhex(id + REPO_ID_LEN - 16, rnd, sizeof(rnd));
    util_varint_put(b, (uint64_t)t);
    util_buf_append(b, rnd, sizeof(rnd));
}

static void rec_get_id(struct util_rd *r, char out[REPO_ID_LEN + 1])
{
    uint64_t t = util_varint_get(r);
    const uint8_t *rnd = util_rd_raw(r, 8);
    /* An id's time has four digits of year: anything later would not parse back. */
    if (r->bad || t > 253402300799u) {
        r->bad = true;
        out[0] = '\0';
        return;
    }
    repo_id_make((int64_t)t, rnd, out);
}

static void rec_put_str(struct util_buf *b, const char *s)
{
    size_t n = strlen(s);
    util_varint_put(b, n);
    util_buf_append(b, s, n);
}

/* A string of at most max bytes and no NUL, allocated; NULL and r->bad if not. */
static char *rec_get_str(struct util_rd *r, size_t max)
{
    uint64_t n = util_varint_get(r);
    const uint8_t *p = r->bad || n > max ? NULL : util_rd_raw(r, (size_t)n);
    if (p == NULL || memchr(p, '\0', (size_t)n) != NULL) {
        r->bad = true;
        return NULL;
    }
    return util_strndup((const char *)p, (size_t)n);
}

/* Into a fixed field of size bytes (NUL included). */
static void rec_get_fixed(struct util_rd *r, char *dst, size_t size)
{
    char *s = rec_get_str(r, size - 1);
    if (s != NULL)
        memcpy(dst, s, strlen(s) + 1);
    free(s);
}

/* The associated data: label, place, then the public bytes. */
static void rec_aad(struct util_buf *aad, const char *label, const struct repo_source *src,
                    const char *id, const void *pub, size_t publen)
{
    util_buf_printf(aad, "%s%s\n%s\n%s\n%s\n", label, src->ns, src->policy, src->host, id);
    util_buf_append(aad, pub, publen);
}

/* Appends the sealed plain bytes to out (out's bytes so far are the public part). */
static void rec_seal(struct util_buf *out, const struct repo_keys *k, const char *label,
                     const struct repo_source *src, const char *id, const struct util_buf *plain)
{
    struct util_buf aad;
    util_buf_init(&aad);
    rec_aad(&aad, label, src, id, out->data, out->len);
    uint8_t *sealed = util_malloc(plain->len + REPO_SEAL_EXTRA);
    repo_seal(k, aad.data, aad.len, plain->data, plain->len, sealed);
    util_buf_append(out, sealed, plain->len + REPO_SEAL_EXTRA);
    free(sealed);
    util_buf_free(&aad);
}

/* Opens the sealed rest of body (from pub bytes on) into *plain (allocated, *n bytes):
 * UTIL_EINVAL when it is too short to hold a version byte, UTIL_EIO when it does not
 * authenticate. */
static int rec_unseal(const uint8_t *body, size_t len, size_t pub, const struct repo_keys *k,
                      const char *label, const struct repo_source *src, const char *id,
                      uint8_t **plain, size_t *n)
{
    struct util_buf aad;
    int rc;
    *plain = NULL;
    if (len - pub < REPO_SEAL_EXTRA + 1)
        return UTIL_EINVAL;
    util_buf_init(&aad);
    rec_aad(&aad, label, src, id, body, pub);
    *n = len - pub - REPO_SEAL_EXTRA;
    *plain = util_malloc(*n);
    rc = repo_unseal(k, aad.data, aad.len, body + pub, len - pub, *plain, NULL);
    util_buf_free(&aad);
    if (rc != 0) {
        free(*plain);
        *plain = NULL;
        return UTIL_EIO;
    }
    return 0;
}

/* The first bytes of a record: JSON (the encoding development builds wrote before this
 * one) is refused by name, anything else not starting with the magic and kind too; a
 * place check that is not this place's is UTIL_EIO. */
static int rec_head(const uint8_t *body, size_t len, uint8_t kind, const char *what,
                    const struct repo_source *src, const char *id, struct util_err *err)
{
    uint8_t place[REC_PLACE_LEN];
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\t' || body[i] == '\r'))
        i++;
    if (i < len && body[i] == '{')
        return util_err_set(err, UTIL_EINVAL,
                            "%s %s is in the JSON encoding of format 2 that development builds "
                            "wrote before this one, which this lode does not read: back up into "
                            "a new repository (lode init)",
                            what, id);
    if (len < REC_HEAD_LEN || body[0] != REC_MAGIC || body[1] != kind)
        return util_err_set(err, UTIL_EINVAL, "%s %s is not one lode wrote (unknown encoding)",
                            what, id);
    rec_place(src, id, place);
    if (memcmp(body + 2, place, REC_PLACE_LEN) != 0)
        return util_err_set(err, UTIL_EIO,
                            "%s %s/%s/%s/%s was written for another source or id (copied or "
                            "moved)",
                            what, src->ns, src->policy, src->host, id);
    return 0;
}

/* ---- run records ---- */

uint8_t *repo_run_encode(const struct repo_run *r, const struct repo_keys *k, size_t *len)
{
    struct util_buf b;
    bool roots = k != NULL && r->has_roots;
    util_buf_init(&b);
    rec_put_head(&b, REC_KIND_RUN, &r->src, r->id);
    util_varint_put(&b, (r->parent[0] ? REC_HAS_PARENT : 0) | (roots ? REC_HAS_ROOTS : 0));
    if (r->parent[0])
        rec_put_id(&b, r->parent);
    util_varint_put(&b, (uint64_t)r->max_runtime);
    rec_put_str(&b, r->agent);
    if (roots) {
        struct util_buf plain;
        uint8_t v = REC_SEALED_V;
        util_buf_init(&plain);
        util_buf_append(&plain, &v, 1);
        repo_root_put(&plain, &r->parent_files);
        repo_root_put(&plain, &r->parent_chunks);
        rec_seal(&b, k, RUN_AAD, &r->src, r->id, &plain);
        util_buf_free(&plain);
    }
    *len = b.len;
    return (uint8_t *)util_buf_steal(&b);
}

/* The sealed parent's trees of a run record, from body[pub] on. */
static int repo_run_roots(struct repo_run *r, const uint8_t *body, size_t len, size_t pub,
                          const struct repo_keys *k, struct util_err *err)
{
    uint8_t *plain;
    size_t n;
    int rc = rec_unseal(body, len, pub, k, RUN_AAD, &r->src, r->id, &plain, &n);
    if (rc == UTIL_EIO)
        return util_err_set(err, UTIL_EIO,
                            "run record %s: its parent's trees do not authenticate (changed, "
                            "moved, or the key is wrong)",
                            r->id);
    if (rc != 0)
        return util_err_set(err, UTIL_EINVAL, "run record %s: its parent's trees are cut short",
                            r->id);
    struct util_rd rd = {.p = plain, .n = n, .i = 1};
    if (plain[0] != REC_SEALED_V) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "run record %s: its sealed part is of version %u, this lode reads %u",
                          r->id, plain[0], REC_SEALED_V);
    } else if (repo_root_get(&rd, &r->parent_files) != 0 ||
               repo_root_get(&rd, &r->parent_chunks) != 0 || rd.i != rd.n) {
        rc = util_err_set(err, UTIL_EINVAL, "run record %s: its parent's trees are malformed",
                          r->id);
    } else {
        r->has_roots = true;
    }
    free(plain);
    return rc;
}

int repo_run_decode(struct repo_run *r, const struct repo_source *src, const char *id,
                    const void *body, size_t len, const struct repo_keys *k, struct util_err *err)
{
    const uint8_t *p = body;
    struct util_rd rd = {.p = p, .n = len, .i = REC_HEAD_LEN};
    uint64_t flags, maxrt = 0;
    int rc;

    memset(r, 0, sizeof(*r));
    if ((rc = rec_head(p, len, REC_KIND_RUN, "run record", src, id, err)) != 0)
        return rc;
    snprintf(r->id, sizeof(r->id), "%s", id);
    r->src = *src;
    flags = util_varint_get(&rd);
    if (!rd.bad && (flags & REC_HAS_PARENT))
        rec_get_id(&rd, r->parent);
    if (!rd.bad)
        maxrt = util_varint_get(&rd);
    if (!rd.bad)
        rec_get_fixed(&rd, r->agent, sizeof(r->agent));
    if (rd.bad || (flags & ~(uint64_t)(REC_HAS_PARENT | REC_HAS_ROOTS)) != 0 ||
        (!(flags & REC_HAS_ROOTS) && rd.i != rd.n)) {
        rc = util_err_set(err, UTIL_EINVAL, "run record %s: malformed", id);
        goto out;
    }
    if (maxrt < 1 || maxrt > REC_MAX_RUNTIME) {
        rc = util_err_set(err, UTIL_EINVAL, "run record %s: maxRuntime %llu s is out of range", id,
                          (unsigned long long)maxrt);
        goto out;
    }
    r->max_runtime = (int64_t)maxrt;
    if ((flags & REC_HAS_ROOTS) && k != NULL)
        rc = repo_run_roots(r, p, len, rd.i, k, err);
out:
    if (rc != 0)
        memset(r, 0, sizeof(*r));
    return rc;
}

/* ---- manifests ---- */

static void repo_manifest_public(struct util_buf *b, const struct repo_manifest *m)
{
    const uint64_t counters[] = {m->files,          m->bytes,         m->new_files,
                                 m->changed_files,  m->deleted_files, m->new_bytes,
                                 m->uploaded_bytes, m->raw_new_bytes, m->errors};
    rec_put_head(b, REC_KIND_MAN, &m->src, m->id);
    util_varint_put(b, (m->parent[0] ? REC_HAS_PARENT : 0) | (m->incomplete ? REC_INCOMPLETE : 0) |
                           (m->suspicious ? REC_SUSPICIOUS : 0));
    if (m->parent[0])
        rec_put_id(b, m->parent);
    util_varint_put(b, (uint64_t)m->max_runtime);
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
        util_varint_put(b, counters[i]);
    rec_put_str(b, m->agent);
}

uint8_t *repo_manifest_encode(const struct repo_manifest *m, const struct repo_keys *k, size_t *len)
{
    struct util_buf b, plain;
    uint8_t v = REC_SEALED_V;
    unsigned rules = 0;
    util_buf_init(&b);
    util_buf_init(&plain);
    repo_manifest_public(&b, m);
    util_buf_append(&plain, &v, 1);
    repo_root_put(&plain, &m->files_root);
    repo_root_put(&plain, &m->chunks_root);
    util_varint_put(&plain, m->npaths);
    for (size_t i = 0; i < m->npaths; i++)
        rec_put_str(&plain, m->paths[i]);
    util_varint_put(&plain, m->nerrs);
    for (size_t i = 0; i < m->nerrs; i++) {
        rec_put_str(&plain, m->errs[i].path);
        rec_put_str(&plain, m->errs[i].message);
    }
    /* The rules that left something out, as bits, then their counts. */
    for (int i = 0; i < REPO_EXCL_RULES; i++)
        if (m->excluded[i].entries || m->excluded[i].bytes)
            rules |= 1u << i;
    util_varint_put(&plain, rules);
    for (int i = 0; i < REPO_EXCL_RULES; i++)
        if (rules & (1u << i)) {
            util_varint_put(&plain, m->excluded[i].entries);
            util_varint_put(&plain, m->excluded[i].bytes);
        }
    rec_seal(&b, k, MANIFEST_AAD, &m->src, m->id, &plain);
    util_buf_free(&plain);
    *len = b.len;
    return (uint8_t *)util_buf_steal(&b);
}

/* The sealed part: roots, paths, errors, what was left out. */
static int repo_manifest_private(struct repo_manifest *m, const uint8_t *body, size_t len,
                                 size_t pub, const struct repo_keys *k, struct util_err *err)
{
    uint8_t *plain;
    size_t n;
    uint64_t np, ne, rules;
    int rc = rec_unseal(body, len, pub, k, MANIFEST_AAD, &m->src, m->id, &plain, &n);
    if (rc == UTIL_EIO)
        return util_err_set(err, UTIL_EIO,
                            "manifest %s: authentication failed (a field was changed, the "
                            "manifest was moved or copied, or the key is wrong)",
                            m->id);
    if (rc != 0)
        return util_err_set(err, UTIL_EINVAL, "manifest %s: the private part is cut short", m->id);
    struct util_rd rd = {.p = plain, .n = n, .i = 1};
    if (plain[0] != REC_SEALED_V) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "manifest %s: its sealed part is of version %u, this lode reads %u",
                          m->id, plain[0], REC_SEALED_V);
        goto out;
    }
    if (repo_root_get(&rd, &m->files_root) != 0 || repo_root_get(&rd, &m->chunks_root) != 0) {
        rc = util_err_set(err, UTIL_EINVAL, "manifest %s: a tree's root is malformed", m->id);
        goto out;
    }
    rc = util_err_set(err, UTIL_EINVAL, "manifest %s: the private part is malformed", m->id);
    np = util_varint_get(&rd);
    if (rd.bad || np > REC_MAX_STRINGS || np > rd.n - rd.i)
        goto out;
    m->paths = util_calloc((size_t)np + 1, sizeof(char *));
    for (; m->npaths < np; m->npaths++)
        if ((m->paths[m->npaths] = rec_get_str(&rd, rd.n)) == NULL)
            goto out;
    ne = util_varint_get(&rd);
    if (rd.bad || ne > REC_MAX_STRINGS || ne > rd.n - rd.i)
        goto out;
    m->errs = util_calloc((size_t)ne + 1, sizeof(*m->errs));
    for (; m->nerrs < ne; m->nerrs++) {
        m->errs[m->nerrs].path = rec_get_str(&rd, rd.n);
        m->errs[m->nerrs].message = rec_get_str(&rd, rd.n);
        if (rd.bad) {
            m->nerrs++; /* what it holds is freed with the rest */
            goto out;
        }
    }
    rules = util_varint_get(&rd);
    if (rd.bad || rules >= 1u << REPO_EXCL_RULES)
        goto out;
    for (int i = 0; i < REPO_EXCL_RULES; i++)
        if (rules & (1u << i)) {
            m->excluded[i].entries = util_varint_get(&rd);
            m->excluded[i].bytes = util_varint_get(&rd);
        }
    if (rd.bad || rd.i != rd.n)
        goto out;
    rc = 0;
out:
    free(plain);
    return rc;
}

int repo_manifest_decode(struct repo_manifest *m, const struct repo_source *src, const char *id,
                         const void *body, size_t len, const struct repo_keys *k,
                         struct util_err *err)
{
    const uint8_t *p = body;
    struct util_rd rd = {.p = p, .n = len, .i = REC_HEAD_LEN};
    uint64_t *counters[] = {&m->files,          &m->bytes,         &m->new_files,
                            &m->changed_files,  &m->deleted_files, &m->new_bytes,
                            &m->uploaded_bytes, &m->raw_new_bytes, &m->errors};
    uint64_t flags, maxrt = 0;
    int rc;

    memset(m, 0, sizeof(*m));
    if ((rc = rec_head(p, len, REC_KIND_MAN, "manifest", src, id, err)) != 0)
        return rc;
    snprintf(m->id, sizeof(m->id), "%s", id);
    m->src = *src;
    flags = util_varint_get(&rd);
    if (!rd.bad && (flags & REC_HAS_PARENT))
        rec_get_id(&rd, m->parent);
    if (!rd.bad)
        maxrt = util_varint_get(&rd);
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]) && !rd.bad; i++)
        *counters[i] = util_varint_get(&rd);
    if (!rd.bad)
        rec_get_fixed(&rd, m->agent, sizeof(m->agent));
    if (rd.bad || (flags & ~(uint64_t)(REC_HAS_PARENT | REC_INCOMPLETE | REC_SUSPICIOUS)) != 0 ||
        rd.i == rd.n) {
        rc = util_err_set(err, UTIL_EINVAL, "manifest %s: malformed", id);
        goto out;
    }
    if (maxrt < 1 || maxrt > REC_MAX_RUNTIME) {
        rc = util_err_set(err, UTIL_EINVAL, "manifest %s: maxRuntime %llu s is out of range", id,
                          (unsigned long long)maxrt);
        goto out;
    }
    m->max_runtime = (int64_t)maxrt;
    m->incomplete = (flags & REC_INCOMPLETE) != 0;
    m->suspicious = (flags & REC_SUSPICIOUS) != 0;
    rc = k ? repo_manifest_private(m, p, len, rd.i, k, err) : 0;
out:
    if (rc != 0)
        repo_manifest_free(m);
    return rc;
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
