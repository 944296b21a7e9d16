/*
 * Signature Version 4, header form, and the pure retry policy.
 *
 * The canonical request is METHOD \n URI \n QUERY \n HEADERS \n SIGNED \n HASH; the
 * string to sign chains the date, scope and the canonical request's hash; the key is
 * derived by HMAC from "AWS4"+secret through date, region, service and "aws4_request".
 *
 * What a signature costs: the derived key depends only on the day, region, service and
 * secret, so a signer keeps it and derives it again (four HMACs) once a day; each
 * request then costs one SHA-256 of the canonical request (a few hundred bytes) and
 * one HMAC of the string to sign. The digest is fetched from OpenSSL's provider once
 * per signer: EVP_sha256() looks it up again on every use, which cost more than the
 * hashing of a small request. HMAC is computed here over that digest (RFC 2104) for
 * the same reason; OpenSSL's HMAC() fetches and allocates per call.
 */
#include "s3/s3.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define SHA256_LEN   32
#define SHA256_BLOCK 64

struct s3_signer {
    EVP_MD *md;
    EVP_MD_CTX *ctx;
    /* the cached derived key and what it was derived from */
    bool have_key;
    char day[9];
    char *secret, *region, *service;
    unsigned char key[SHA256_LEN];
};

static void to_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static void crypto_fail(const char *what)
{
    fprintf(stderr, "lodestore: OpenSSL failed to %s\n", what);
    abort();
}

struct s3_signer *s3_signer_new(void)
{
    struct s3_signer *s = util_calloc(1, sizeof(*s));
    s->md = EVP_MD_fetch(NULL, "SHA256", NULL);
    s->ctx = EVP_MD_CTX_new();
    if (s->md == NULL || s->ctx == NULL)
        crypto_fail("provide SHA-256");
    return s;
}

void s3_signer_free(struct s3_signer *s)
{
    if (s == NULL)
        return;
    EVP_MD_CTX_free(s->ctx);
    EVP_MD_free(s->md);
    if (s->secret != NULL)
        OPENSSL_cleanse(s->secret, strlen(s->secret));
    free(s->secret);
    free(s->region);
    free(s->service);
    OPENSSL_cleanse(s->key, sizeof(s->key));
    free(s);
}

/* The digest of the concatenation of up to two pieces. */
static void digest2(struct s3_signer *s, const void *a, size_t alen, const void *b, size_t blen,
                    unsigned char out[SHA256_LEN])
{
    unsigned int n = 0;
    if (EVP_DigestInit_ex2(s->ctx, s->md, NULL) != 1 || EVP_DigestUpdate(s->ctx, a, alen) != 1 ||
        (blen > 0 && EVP_DigestUpdate(s->ctx, b, blen) != 1) ||
        EVP_DigestFinal_ex(s->ctx, out, &n) != 1)
        crypto_fail("compute SHA-256");
}

void s3_signer_sha256_hex(struct s3_signer *s, const void *data, size_t len, char hex[65])
{
    unsigned char md[SHA256_LEN];
    digest2(s, data, len, NULL, 0, md);
    to_hex(md, SHA256_LEN, hex);
}

/* HMAC-SHA256 (RFC 2104). */
static void hmac(struct s3_signer *s, const void *key, size_t klen, const void *msg, size_t mlen,
                 unsigned char out[SHA256_LEN])
{
    unsigned char k[SHA256_BLOCK] = {0}, pad[SHA256_BLOCK], inner[SHA256_LEN];
    if (klen > SHA256_BLOCK)
        digest2(s, key, klen, NULL, 0, k);
    else
        memcpy(k, key, klen);
    for (size_t i = 0; i < SHA256_BLOCK; i++)
        pad[i] = k[i] ^ 0x36;
    digest2(s, pad, SHA256_BLOCK, msg, mlen, inner);
    for (size_t i = 0; i < SHA256_BLOCK; i++)
        pad[i] = k[i] ^ 0x5c;
    digest2(s, pad, SHA256_BLOCK, inner, SHA256_LEN, out);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(pad, sizeof(pad));
}

static bool same(const char *a, const char *b)
{
    return a != NULL && strcmp(a, b) == 0;
}

/* The day's signing key, derived again only when the day or the scope changed. */
static const unsigned char *signing_key(struct s3_signer *s, const char day[9],
                                        const struct s3_sign_input *in)
{
    unsigned char k1[SHA256_LEN], k2[SHA256_LEN], k3[SHA256_LEN];
    if (s->have_key && memcmp(s->day, day, 9) == 0 && same(s->secret, in->secret_key) &&
        same(s->region, in->region) && same(s->service, in->service))
        return s->key;
    if (!same(s->secret, in->secret_key)) {
        if (s->secret != NULL)
            OPENSSL_cleanse(s->secret, strlen(s->secret));
        free(s->secret);
        s->secret = util_strdup(in->secret_key);
    }
    if (!same(s->region, in->region)) {
        free(s->region);
        s->region = util_strdup(in->region);
    }
    if (!same(s->service, in->service)) {
        free(s->service);
        s->service = util_strdup(in->service);
    }
    struct util_buf secret;
    util_buf_init(&secret);
    util_buf_puts(&secret, "AWS4");
    util_buf_puts(&secret, in->secret_key);
    hmac(s, secret.data, secret.len, day, 8, k1);
    OPENSSL_cleanse(secret.data, secret.len);
    util_buf_free(&secret);
    hmac(s, k1, SHA256_LEN, in->region, strlen(in->region), k2);
    hmac(s, k2, SHA256_LEN, in->service, strlen(in->service), k3);
    hmac(s, k3, SHA256_LEN, "aws4_request", 12, s->key);
    OPENSSL_cleanse(k1, sizeof(k1));
    OPENSSL_cleanse(k2, sizeof(k2));
    OPENSSL_cleanse(k3, sizeof(k3));
    memcpy(s->day, day, 9);
    s->have_key = true;
    return s->key;
}

void s3_sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    to_hex(md, 32, hex);
}

void s3_amz_date(int64_t t, char buf[17])
{
    util_format_time(t, 0, UTIL_TIME_BASIC, buf, 17);
}

void s3_uri_encode(struct util_buf *out, const char *s, size_t len, bool keep_slash)
{
    static const char digits[] = "0123456789ABCDEF";
    size_t run = 0; /* bytes kept as they are, appended at once */
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~' || (keep_slash && ch == '/')) {
            run++;
            continue;
        }
        util_buf_append(out, s + i - run, run);
        run = 0;
        char esc[3] = {'%', digits[ch >> 4], digits[ch & 15]};
        util_buf_append(out, esc, 3);
    }
    util_buf_append(out, s + len - run, run);
}

/* Appends the pieces, a NULL ends them. */
static void cat(struct util_buf *b, const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    for (const char *p = first; p != NULL; p = va_arg(ap, const char *))
        util_buf_puts(b, p);
    va_end(ap);
}

void s3_signer_sign(struct s3_signer *s, const struct s3_sign_input *in, struct util_buf *out)
{
    struct util_buf text;
    char date[17], day[9], hash[65], sig[65];
    unsigned char mac[SHA256_LEN];
    size_t names_at, names_len;

    s3_amz_date(in->time, date);
    memcpy(day, date, 8);
    day[8] = '\0';

    /* The canonical request, then the string to sign in the same buffer. */
    util_buf_init(&text);
    cat(&text, in->method, "\n", in->canonical_uri, "\n",
        in->canonical_query != NULL ? in->canonical_query : "", "\n", (const char *)NULL);
    for (size_t i = 0; i < in->n_headers; i++)
        cat(&text, in->headers[i].name, ":", in->headers[i].value, "\n", (const char *)NULL);
    util_buf_puts(&text, "\n");
    names_at = text.len;
    for (size_t i = 0; i < in->n_headers; i++) {
        if (i > 0)
            util_buf_puts(&text, ";");
        util_buf_puts(&text, in->headers[i].name);
    }
    names_len = text.len - names_at;
    cat(&text, "\n", in->payload_hash, (const char *)NULL);
    s3_signer_sha256_hex(s, text.data, text.len, hash);

    /* The signed header names go into the result; keep them before reusing text. */
    cat(out, "AWS4-HMAC-SHA256 Credential=", in->access_key, "/", day, "/", in->region, "/",
        in->service, "/aws4_request, SignedHeaders=", (const char *)NULL);
    util_buf_append(out, text.data + names_at, names_len);

    text.len = 0;
    cat(&text, "AWS4-HMAC-SHA256\n", date, "\n", day, "/", in->region, "/", in->service,
        "/aws4_request\n", hash, (const char *)NULL);
    hmac(s, signing_key(s, day, in), SHA256_LEN, text.data, text.len, mac);
    to_hex(mac, SHA256_LEN, sig);
    cat(out, ", Signature=", sig, (const char *)NULL);
    util_buf_free(&text);
}

void s3_sigv4_authorization(const struct s3_sign_input *in, struct util_buf *out)
{
    struct s3_signer *s = s3_signer_new();
    s3_signer_sign(s, in, out);
    s3_signer_free(s);
}

/* ---- the retry policy ---- */

uint64_t s3_backoff_delay(unsigned retry, uint64_t base_ms, uint64_t cap_ms, uint32_t rnd)
{
    uint64_t ceiling = base_ms;
    for (unsigned i = 0; i < retry && ceiling < cap_ms; i++)
        ceiling *= 2;
    if (ceiling > cap_ms)
        ceiling = cap_ms;
    /* Uniform over [0, ceiling]: rnd / 2^32 scaled, without overflow for any ceiling. */
    return (uint64_t)(((unsigned __int128)rnd * (ceiling + 1)) >> 32);
}

bool s3_retryable(long status, const char *code, bool transport_error)
{
    if (transport_error)
        return true;
    if (code != NULL &&
        (strcmp(code, "SlowDown") == 0 || strcmp(code, "RequestTimeout") == 0 ||
         strcmp(code, "InternalError") == 0 || strcmp(code, "ServiceUnavailable") == 0))
        return status == 0 || status >= 400;
    return status == 500 || status == 502 || status == 503 || status == 504;
}
