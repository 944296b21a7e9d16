/*
 * Signature Version 4, header form, and the pure retry policy.
 *
 * The canonical request is METHOD \n URI \n QUERY \n HEADERS \n SIGNED \n HASH; the
 * string to sign chains the date, scope and the canonical request's hash; the key is
 * derived by HMAC from "AWS4"+secret through date, region, service and "aws4_request".
 * Each signature costs four HMACs for the key (cacheable per day, not cached: a few
 * microseconds) and one SHA-256 of the canonical request.
 */
#include "s3/s3.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

static void to_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

void s3_sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    to_hex(md, 32, hex);
}

static void hmac(const void *key, size_t klen, const void *msg, size_t mlen, unsigned char out[32])
{
    unsigned int n = 32;
    HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &n);
}

void s3_amz_date(int64_t t, char buf[17])
{
    struct util_civil c;
    util_civil_from_seconds(t, &c);
    snprintf(buf, 17, "%04lld%02u%02uT%02u%02u%02uZ", (long long)c.year, c.month, c.day, c.hour,
             c.minute, c.second);
}

void s3_uri_encode(struct util_buf *out, const char *s, size_t len, bool keep_slash)
{
    static const char digits[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~' || (keep_slash && ch == '/')) {
            util_buf_append(out, &ch, 1);
        } else {
            char esc[3] = {'%', digits[ch >> 4], digits[ch & 15]};
            util_buf_append(out, esc, 3);
        }
    }
}

void s3_sigv4_authorization(const struct s3_sign_input *in, struct util_buf *out)
{
    struct util_buf creq, sts, signed_names;
    char date[17], day[9], hash[65], sig[65];
    unsigned char k1[32], k2[32], k3[32], k4[32], mac[32];
    char *secret;

    util_buf_init(&creq);
    util_buf_init(&sts);
    util_buf_init(&signed_names);
    s3_amz_date(in->time, date);
    memcpy(day, date, 8);
    day[8] = '\0';

    for (size_t i = 0; i < in->n_headers; i++) {
        if (i > 0)
            util_buf_puts(&signed_names, ";");
        util_buf_puts(&signed_names, in->headers[i].name);
    }
    util_buf_printf(&creq, "%s\n%s\n%s\n", in->method, in->canonical_uri,
                    in->canonical_query != NULL ? in->canonical_query : "");
    for (size_t i = 0; i < in->n_headers; i++)
        util_buf_printf(&creq, "%s:%s\n", in->headers[i].name, in->headers[i].value);
    util_buf_printf(&creq, "\n%s\n%s", signed_names.data, in->payload_hash);
    s3_sha256_hex(creq.data, creq.len, hash);

    util_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", date, day, in->region,
                    in->service, hash);
    secret = util_asprintf("AWS4%s", in->secret_key);
    hmac(secret, strlen(secret), day, 8, k1);
    memset(secret, 0, strlen(secret));
    free(secret);
    hmac(k1, 32, in->region, strlen(in->region), k2);
    hmac(k2, 32, in->service, strlen(in->service), k3);
    hmac(k3, 32, "aws4_request", 12, k4);
    hmac(k4, 32, sts.data, sts.len, mac);
    to_hex(mac, 32, sig);
    util_buf_printf(out,
                    "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
                    "Signature=%s",
                    in->access_key, day, in->region, in->service, signed_names.data, sig);
    memset(k4, 0, sizeof(k4));
    util_buf_free(&creq);
    util_buf_free(&sts);
    util_buf_free(&signed_names);
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
