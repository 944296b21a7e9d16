/*
 * Configuration at the edge: the files a kubeconfig names (certificates, keys, the
 * token file), the kubeconfig found as kubectl finds it, and the in-cluster service
 * account. Parsing is config.c's, and pure; this file reads files and the environment.
 */
#include "kube/kube_int.h"

#include <stdlib.h>
#include <string.h>

int kube_config_incluster(struct kube_config *cfg, const char *host, const char *port,
                          const char *ca_pem, size_t ca_len, const char *namespace_text,
                          const char *token_file, struct util_err *err)
{
    uint64_t portnum;
    memset(cfg, 0, sizeof(*cfg));
    if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
        return util_err_set(err, UTIL_EINVAL,
                            "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must "
                            "be set");
    if (util_parse_u64(port, strlen(port), 65535, &portnum) != 0 || portnum == 0)
        return util_err_set(err, UTIL_EINVAL,
                            "in-cluster: KUBERNETES_SERVICE_PORT \"%s\" is not "
                            "a port number",
                            port);
    for (const char *p = host; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '/' || *p == '@' || *p == '[' || *p == ']')
            return util_err_set(err, UTIL_EINVAL,
                                "in-cluster: KUBERNETES_SERVICE_HOST \"%s\" is not a host", host);
    if (ca_pem == NULL || ca_len == 0)
        return util_err_set(err, UTIL_EINVAL, "in-cluster: the service account CA is empty");
    if (strchr(host, ':') != NULL)
        cfg->server = util_asprintf("https://[%s]:%u", host, (unsigned)portnum);
    else
        cfg->server = util_asprintf("https://%s:%u", host, (unsigned)portnum);
    cfg->ca_pem = util_strndup(ca_pem, ca_len);
    cfg->ca_len = ca_len;
    if (namespace_text != NULL) {
        size_t n = strlen(namespace_text);
        while (n > 0 && (namespace_text[n - 1] == '\n' || namespace_text[n - 1] == ' ' ||
                         namespace_text[n - 1] == '\r'))
            n--;
        if (n > 0)
            cfg->namespace = util_strndup(namespace_text, n);
    }
    if (cfg->namespace == NULL)
        cfg->namespace = util_strdup("default");
    if (token_file != NULL)
        cfg->token_file = util_strdup(token_file);
    return 0;
}

/* Reads a file named by the configuration, for `what` in messages. */
static int cfg_read(const char *path, const char *what, char **data, size_t *len,
                    struct util_err *err)
{
    struct util_err ferr;
    if (util_read_file(path, data, len, &ferr) != 0)
        return util_err_set(err, UTIL_EIO, "%s: %s", what, ferr.msg);
    return 0;
}

/* PEM data must hold at least one "-----BEGIN" block; curl's own error would be vaguer. */
static int cfg_check_pem(const char *pem, size_t len, const char *what, struct util_err *err)
{
    static const char begin[] = "-----BEGIN ";
    if (pem == NULL)
        return 0;
    for (size_t i = 0; i + sizeof(begin) - 1 <= len; i++)
        if (memcmp(pem + i, begin, sizeof(begin) - 1) == 0)
            return 0;
    return util_err_set(err, UTIL_EINVAL, "%s is not PEM data (no \"-----BEGIN\" line)", what);
}

/* Reads a token file and trims the whitespace around it. */
int kube__read_token(const char *path, char **token, struct util_err *err)
{
    char *data;
    size_t len, start = 0;
    int rc = cfg_read(path, "token file", &data, &len, err);
    if (rc != 0)
        return rc;
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' ' ||
                       data[len - 1] == '\t'))
        len--;
    while (start < len && (data[start] == ' ' || data[start] == '\t' || data[start] == '\n'))
        start++;
    if (start == len) {
        free(data);
        return util_err_set(err, UTIL_EINVAL, "token file %s is empty", path);
    }
    *token = util_strndup(data + start, len - start);
    memset(data, 0, len);
    free(data);
    return 0;
}

int kube_config_resolve(struct kube_config *cfg, struct util_err *err)
{
    int rc;
    if (cfg->ca_pem == NULL && cfg->ca_path != NULL &&
        (rc = cfg_read(cfg->ca_path, "certificate-authority", &cfg->ca_pem, &cfg->ca_len, err)) !=
            0)
        return rc;
    if (cfg->cert_pem == NULL && cfg->cert_path != NULL &&
        (rc = cfg_read(cfg->cert_path, "client-certificate", &cfg->cert_pem, &cfg->cert_len,
                       err)) != 0)
        return rc;
    if (cfg->key_pem == NULL && cfg->key_path != NULL &&
        (rc = cfg_read(cfg->key_path, "client-key", &cfg->key_pem, &cfg->key_len, err)) != 0)
        return rc;
    if ((rc = cfg_check_pem(cfg->ca_pem, cfg->ca_len, "the certificate authority", err)) != 0 ||
        (rc = cfg_check_pem(cfg->cert_pem, cfg->cert_len, "the client certificate", err)) != 0 ||
        (rc = cfg_check_pem(cfg->key_pem, cfg->key_len, "the client key", err)) != 0)
        return rc;
    if (cfg->token_file != NULL) {
        char *token;
        if ((rc = kube__read_token(cfg->token_file, &token, err)) != 0)
            return rc;
        free(cfg->token);
        cfg->token = token;
    }
    return 0;
}

/* The directory part of a path, for resolving relative paths in a kubeconfig. */
static char *cfg_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return util_strdup(".");
    if (slash == path)
        return util_strdup("/");
    return util_strndup(path, (size_t)(slash - path));
}

int kube_config_load_file(struct kube_config *cfg, const char *path,
                          const struct kube_config_opts *opts, struct util_err *err)
{
    char *data, *dir;
    size_t len;
    struct util_err perr;
    int rc;

    memset(cfg, 0, sizeof(*cfg));
    if ((rc = cfg_read(path, "kubeconfig", &data, &len, err)) != 0)
        return rc;
    dir = cfg_dirname(path);
    rc = kube_config_parse(cfg, data, len, dir, opts, &perr);
    if (rc != 0) {
        /* The parser says "kubeconfig:LINE:COL"; name the file instead. */
        const char *m = perr.msg;
        if (strncmp(m, "kubeconfig", 10) == 0)
            m += 10;
        util_err_set(err, rc, "%s%s", path, m);
        goto free_data;
    }
    if ((rc = kube_config_resolve(cfg, err)) != 0)
        kube_config_free(cfg);
free_data:
    free(dir);
    free(data);
    return rc;
}

int kube_config_load_incluster(struct kube_config *cfg, const char *sa_dir, struct util_err *err)
{
    char *ca_path, *ns_path, *token_path, *ca = NULL, *ns = NULL;
    size_t ca_len = 0, ns_len = 0;
    struct util_err ignored;
    int rc;

    if (sa_dir == NULL)
        sa_dir = KUBE_SA_DIR;
    ca_path = util_asprintf("%s/ca.crt", sa_dir);
    ns_path = util_asprintf("%s/namespace", sa_dir);
    token_path = util_asprintf("%s/token", sa_dir);
    if ((rc = cfg_read(ca_path, "in-cluster CA", &ca, &ca_len, err)) != 0)
        goto free_paths;
    /* The namespace file is optional; without it the namespace is "default". */
    if (util_read_file(ns_path, &ns, &ns_len, &ignored) != 0)
        ns = NULL;
    if ((rc = kube_config_incluster(cfg, getenv("KUBERNETES_SERVICE_HOST"),
                                    getenv("KUBERNETES_SERVICE_PORT"), ca, ca_len, ns, token_path,
                                    err)) != 0)
        goto free_data;
    if ((rc = kube_config_resolve(cfg, err)) != 0)
        kube_config_free(cfg);
free_data:
    free(ca);
    free(ns);
free_paths:
    free(ca_path);
    free(ns_path);
    free(token_path);
    return rc;
}

int kube_config_load_default(struct kube_config *cfg, const char *path,
                             const struct kube_config_opts *opts, struct util_err *err)
{
    const char *env = getenv("KUBECONFIG");
    const char *home = getenv("HOME");
    int rc;

    if (path != NULL && path[0] != '\0')
        return kube_config_load_file(cfg, path, opts, err);
    if (env != NULL && env[0] != '\0') {
        if (strchr(env, ':') != NULL) {
            memset(cfg, 0, sizeof(*cfg));
            return util_err_set(err, UTIL_EINVAL,
                                "KUBECONFIG names several files (%s); Lodestore reads one: pass "
                                "it with --kubeconfig",
                                env);
        }
        return kube_config_load_file(cfg, env, opts, err);
    }
    if (getenv("KUBERNETES_SERVICE_HOST") != NULL)
        return kube_config_load_incluster(cfg, NULL, err);
    if (home == NULL || home[0] == '\0') {
        memset(cfg, 0, sizeof(*cfg));
        return util_err_set(err, UTIL_ENOENT,
                            "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a pod");
    }
    char *p = util_asprintf("%s/.kube/config", home);
    rc = kube_config_load_file(cfg, p, opts, err);
    free(p);
    return rc;
}
