/*
 * The repository address and credentials, in one place for the controller and every
 * lode command (docs/storage-s3.md).
 */
#include "s3/s3.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

void s3_config_free(struct s3_config *cfg)
{
    free(cfg->endpoint);
    free(cfg->host);
    free(cfg->bucket);
    free(cfg->prefix);
    free(cfg->region);
    free(cfg->access_key);
    if (cfg->secret_key != NULL) {
        memset(cfg->secret_key, 0, strlen(cfg->secret_key));
        free(cfg->secret_key);
    }
    free(cfg->session_token);
    free(cfg->ca_pem);
    memset(cfg, 0, sizeof(*cfg));
}

bool s3_host_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    char buf[64];
    size_t n = strlen(host);
    if (strcasecmp(host, "localhost") == 0)
        return true;
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof(buf)) {
        memcpy(buf, host + 1, n - 2);
        buf[n - 2] = '\0';
        return inet_pton(AF_INET6, buf, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
    }
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

static bool bucket_name_ok(const char *b, size_t n)
{
    if (n < 3 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = b[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'))
            return false;
    }
    return b[0] != '-' && b[0] != '.' && b[n - 1] != '-' && b[n - 1] != '.';
}

static bool host_char_ok(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == ':' || ch == '[' || ch == ']';
}

int s3_url_parse(struct s3_config *cfg, const char *url, struct util_err *err)
{
    const char *p, *host, *slash, *bucket, *bend;
    bool tls;
    size_t hostlen;
    char hostname[256];

    memset(cfg, 0, sizeof(*cfg));
    if (url == NULL || url[0] == '\0')
        return util_err_set(err, UTIL_EINVAL,
                            "no repository: give --repo s3:https://HOST/BUCKET[/PREFIX] or set "
                            "LODE_REPOSITORY");
    if (strncmp(url, "s3:", 3) != 0)
        return util_err_set(err, UTIL_EINVAL,
                            "the repository \"%.200s\" is not of the form "
                            "s3:http(s)://HOST[:PORT]/BUCKET[/PREFIX]",
                            url);
    p = url + 3;
    if (strncmp(p, "https://", 8) == 0) {
        tls = true;
        host = p + 8;
    } else if (strncmp(p, "http://", 7) == 0) {
        tls = false;
        host = p + 7;
    } else {
        return util_err_set(err, UTIL_EINVAL,
                            "the repository \"%.200s\" needs http:// or https:// after s3:", url);
    }
    slash = strchr(host, '/');
    hostlen = slash != NULL ? (size_t)(slash - host) : strlen(host);
    if (hostlen == 0)
        return util_err_set(err, UTIL_EINVAL, "the repository \"%.200s\" has no host", url);
    if (hostlen >= sizeof(hostname))
        return util_err_set(err, UTIL_EINVAL, "the repository's host is too long");
    for (size_t i = 0; i < hostlen; i++)
        if (!host_char_ok(host[i]))
            return util_err_set(err, UTIL_EINVAL,
                                "the repository's host \"%.*s\" holds '%c', which a host name "
                                "cannot (credentials do not belong in the URL)",
                                (int)hostlen, host, host[i]);
    if (slash == NULL || slash[1] == '\0' || slash[1] == '/')
        return util_err_set(err, UTIL_EINVAL, "the repository \"%.200s\" has no bucket", url);
    bucket = slash + 1;
    bend = strchr(bucket, '/');
    size_t blen = bend != NULL ? (size_t)(bend - bucket) : strlen(bucket);
    if (!bucket_name_ok(bucket, blen))
        return util_err_set(err, UTIL_EINVAL,
                            "the bucket \"%.*s\" is not a valid name (3-63 of a-z, 0-9, '.', "
                            "'-', starting and ending with a letter or digit)",
                            (int)(blen > 100 ? 100 : blen), bucket);

    /* The prefix: segments joined by '/', each non-empty and not "." or "..". */
    struct util_buf prefix;
    util_buf_init(&prefix);
    if (bend != NULL) {
        const char *s = bend + 1;
        while (*s != '\0') {
            const char *e = strchr(s, '/');
            size_t n = e != NULL ? (size_t)(e - s) : strlen(s);
            if (n == 0 && e != NULL) {
                util_buf_free(&prefix);
                return util_err_set(err, UTIL_EINVAL,
                                    "the repository's prefix in \"%.200s\" has an empty segment "
                                    "(\"//\")",
                                    url);
            }
            if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) {
                util_buf_free(&prefix);
                return util_err_set(err, UTIL_EINVAL,
                                    "the repository's prefix may not hold \".\" or \"..\"");
            }
            for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == '\\') {
                    util_buf_free(&prefix);
                    return util_err_set(err, UTIL_EINVAL,
                                        "the repository's prefix holds a control character or "
                                        "a backslash");
                }
            util_buf_append(&prefix, s, n);
            util_buf_puts(&prefix, "/");
            s += n;
            if (*s == '/')
                s++;
        }
    }
    if (prefix.len > 512) {
        util_buf_free(&prefix);
        return util_err_set(err, UTIL_EINVAL, "the repository's prefix is longer than 512 bytes");
    }
    memcpy(hostname, host, hostlen);
    hostname[hostlen] = '\0';
    cfg->host = util_strdup(hostname);
    cfg->endpoint = util_asprintf("%s://%s", tls ? "https" : "http", hostname);
    cfg->bucket = util_strndup(bucket, blen);
    cfg->prefix = prefix.data != NULL ? util_buf_steal(&prefix) : util_strdup("");
    util_buf_free(&prefix);
    return 0;
}

/* The host without port or brackets' port: "[::1]:9000" -> "[::1]", "h:9000" -> "h". */
static void host_only(const char *hostport, char *out, size_t size)
{
    const char *end;
    if (hostport[0] == '[') {
        end = strchr(hostport, ']');
        end = end != NULL ? end + 1 : hostport + strlen(hostport);
    } else {
        end = strchr(hostport, ':');
        if (end == NULL)
            end = hostport + strlen(hostport);
    }
    size_t n = (size_t)(end - hostport);
    if (n >= size)
        n = size - 1;
    memcpy(out, hostport, n);
    out[n] = '\0';
}

int s3_config_add_ca(struct s3_config *cfg, const char *pem, size_t len, struct util_err *err)
{
    char *copy = util_strndup(pem, len);
    bool ok = strstr(copy, "-----BEGIN CERTIFICATE-----") != NULL;
    if (!ok) {
        free(copy);
        return util_err_set(err, UTIL_EINVAL, "the CA bundle holds no PEM certificate");
    }
    /* Kept apart from the system's CAs, which the client adds by directory (client.c). */
    free(cfg->ca_pem);
    cfg->ca_pem = copy;
    cfg->ca_len = len;
    return 0;
}

static int read_ca(struct s3_config *cfg, const char *path, struct util_err *err)
{
    char *extra = NULL;
    size_t extra_len = 0;
    int rc;
    if ((rc = util_read_file(path, &extra, &extra_len, err)) != 0)
        return rc;
    rc = s3_config_add_ca(cfg, extra, extra_len, err);
    if (rc != 0)
        util_err_set(err, rc, "the CA file %s holds no PEM certificate", path);
    free(extra);
    return rc;
}

static bool set(const char *s)
{
    return s != NULL && s[0] != '\0';
}

int s3_config_from(struct s3_config *cfg, const struct s3_env *env, struct util_err *err)
{
    int rc;
    char host[256];
    if ((rc = s3_url_parse(cfg, env->repository, err)) != 0)
        return rc;
    host_only(cfg->host, host, sizeof(host));
    if (strncmp(cfg->endpoint, "http://", 7) == 0 && !s3_host_is_loopback(host) &&
        !env->allow_plain_http) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "the repository uses plain http:// to %s, which is not a loopback "
                          "address: use https://, or allow plain HTTP explicitly",
                          host);
        goto fail;
    }
    if (!set(env->access_key) || !set(env->secret_key)) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
        goto fail;
    }
    cfg->access_key = util_strdup(env->access_key);
    cfg->secret_key = util_strdup(env->secret_key);
    cfg->session_token = set(env->session_token) ? util_strdup(env->session_token) : NULL;
    cfg->region = util_strdup(set(env->region) ? env->region : "us-east-1");
    for (const char *r = cfg->region; *r; r++)
        if (!((*r >= 'a' && *r <= 'z') || (*r >= '0' && *r <= '9') || *r == '-')) {
            rc = util_err_set(err, UTIL_EINVAL, "the region \"%.60s\" is not a region name",
                              cfg->region);
            goto fail;
        }
    cfg->allow_plain_http = env->allow_plain_http;
    if (set(env->cacert_file) && (rc = read_ca(cfg, env->cacert_file, err)) != 0)
        goto fail;
    return 0;
fail:
    s3_config_free(cfg);
    return rc;
}

int s3_config_from_environment(struct s3_config *cfg, const char *repo_flag,
                               const char *cacert_flag, bool allow_plain_http, struct util_err *err)
{
    struct s3_env env = {
        .repository = set(repo_flag) ? repo_flag : getenv("LODE_REPOSITORY"),
        .access_key = getenv("AWS_ACCESS_KEY_ID"),
        .secret_key = getenv("AWS_SECRET_ACCESS_KEY"),
        .session_token = getenv("AWS_SESSION_TOKEN"),
        .region = set(getenv("AWS_REGION")) ? getenv("AWS_REGION") : getenv("AWS_DEFAULT_REGION"),
        .cacert_file = set(cacert_flag) ? cacert_flag : getenv("LODE_CACERT"),
        .allow_plain_http = allow_plain_http,
    };
    return s3_config_from(cfg, &env, err);
}

int s3_lock_parse(struct s3_config *cfg, const char *text, struct util_err *err)
{
    const char *colon = strchr(text, ':');
    uint64_t days = 0;
    size_t n = colon != NULL ? (size_t)(colon - text) : 0;
    bool mode_ok = (n == 10 && strncmp(text, "GOVERNANCE", n) == 0) ||
                   (n == 10 && strncmp(text, "COMPLIANCE", n) == 0);
    if (!mode_ok || util_parse_u64(colon + 1, strlen(colon + 1), S3_LOCK_DAYS_MAX, &days) != 0 ||
        days == 0)
        return util_err_set(err, UTIL_EINVAL,
                            "Object Lock \"%s\": give GOVERNANCE:DAYS or COMPLIANCE:DAYS, 1 to "
                            "%d days",
                            text, S3_LOCK_DAYS_MAX);
    memcpy(cfg->lock_mode, text, n);
    cfg->lock_mode[n] = '\0';
    cfg->lock_days = (int64_t)days;
    return 0;
}

/* Whether needle (lower case) is in hay, ignoring case. */
static bool s3_has_word(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay != '\0'; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return false;
}

bool s3_refusal_is_lock(const char *code, const char *message)
{
    (void)code;
    return message != NULL &&
           (s3_has_word(message, "object lock") || s3_has_word(message, "worm protected"));
}
