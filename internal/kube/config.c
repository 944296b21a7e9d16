/*
 * Configuration: kubeconfig files and in-cluster service accounts.
 *
 * kube_config_parse() is pure: it walks libyaml's document tree (aliases are shared
 * nodes there, never expanded, and every lookup here is by a fixed path, so no input
 * makes it loop or blow up) and copies what the chosen context needs. File contents
 * are read afterwards by kube_config_resolve(), at the edge (config_load.c, with the
 * in-cluster configuration and the search for a kubeconfig).
 */
#include "kube/kube_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

/* The parse state: the document and where the error goes. */
struct cfg_parse {
    yaml_document_t doc;
    struct util_err *err;
};

static int cfg_fail(struct cfg_parse *ps, const yaml_node_t *at, const char *path, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));

/* "kubeconfig:LINE:COL: PATH: message"; the line is that of the node at fault. */
static int cfg_fail(struct cfg_parse *ps, const yaml_node_t *at, const char *path, const char *fmt,
                    ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (at != NULL)
        return util_err_set(ps->err, UTIL_EINVAL, "kubeconfig:%zu:%zu: %s: %s",
                            at->start_mark.line + 1, at->start_mark.column + 1, path, msg);
    return util_err_set(ps->err, UTIL_EINVAL, "kubeconfig: %s: %s", path, msg);
}

static yaml_node_t *cfg_node(struct cfg_parse *ps, int index)
{
    return yaml_document_get_node(&ps->doc, index);
}

/* True when a scalar is YAML's null: "", "~", "null". Such a value counts as absent. */
static bool cfg_is_null(const yaml_node_t *n)
{
    if (n == NULL)
        return true;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return v[0] == '\0' || strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0;
}

/* The value of key in a mapping, or NULL (also when n is not a mapping). */
static yaml_node_t *cfg_get(struct cfg_parse *ps, const yaml_node_t *n, const char *key)
{
    if (n == NULL || n->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = cfg_node(ps, p->key);
        if (k != NULL && k->type == YAML_SCALAR_NODE && strlen(key) == k->data.scalar.length &&
            memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0) {
            yaml_node_t *v = cfg_node(ps, p->value);
            return cfg_is_null(v) ? NULL : v;
        }
    }
    return NULL;
}

/* A string field: absent is fine (*out stays NULL); a map or a list is an error. */
static int cfg_string(struct cfg_parse *ps, const yaml_node_t *parent, const char *key,
                      const char *path, char **out)
{
    yaml_node_t *n = cfg_get(ps, parent, key);
    *out = NULL;
    if (n == NULL)
        return 0;
    if (n->type != YAML_SCALAR_NODE)
        return cfg_fail(ps, n, path, "%s must be a string", key);
    if (memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL)
        return cfg_fail(ps, n, path, "%s contains a NUL byte", key);
    *out = util_strndup((const char *)n->data.scalar.value, n->data.scalar.length);
    return 0;
}

/* A boolean field as Go's YAML reads it; absent is false. */
static int cfg_bool(struct cfg_parse *ps, const yaml_node_t *parent, const char *key,
                    const char *path, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "y"};
    static const char *const no[] = {"false", "no", "off", "n"};
    yaml_node_t *n = cfg_get(ps, parent, key);
    *out = false;
    if (n == NULL)
        return 0;
    if (n->type == YAML_SCALAR_NODE) {
        const char *v = (const char *)n->data.scalar.value;
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
            if (strcasecmp(v, yes[i]) == 0) {
                *out = true;
                return 0;
            }
            if (strcasecmp(v, no[i]) == 0)
                return 0;
        }
    }
    return cfg_fail(ps, n, path, "%s must be true or false", key);
}

/*
 * Finds the entry named `name` in the list root[list] (entries {name: N, field: {...}})
 * and returns its `field` mapping. A missing entry lists the names there are.
 */
static int cfg_find_named(struct cfg_parse *ps, const yaml_node_t *root, const char *list,
                          const char *field, const char *name, const char *what, char *path,
                          size_t path_size, yaml_node_t **out)
{
    yaml_node_t *seq = cfg_get(ps, root, list);
    struct util_buf names;
    int rc;

    *out = NULL;
    if (seq != NULL && seq->type != YAML_SEQUENCE_NODE)
        return cfg_fail(ps, seq, list, "must be a list");
    util_buf_init(&names);
    for (yaml_node_item_t *it = seq ? seq->data.sequence.items.start : NULL;
         seq && it < seq->data.sequence.items.top; it++) {
        size_t i = (size_t)(it - seq->data.sequence.items.start);
        yaml_node_t *entry = cfg_node(ps, *it);
        char *ename = NULL;
        snprintf(path, path_size, "%s[%zu]", list, i);
        if (entry == NULL || entry->type != YAML_MAPPING_NODE) {
            rc = cfg_fail(ps, entry, path, "must be a map with a name");
            goto free_names;
        }
        if ((rc = cfg_string(ps, entry, "name", path, &ename)) != 0)
            goto free_names;
        if (ename != NULL && strcmp(ename, name) == 0) {
            free(ename);
            yaml_node_t *body = cfg_get(ps, entry, field);
            if (body == NULL) {
                rc = cfg_fail(ps, entry, path, "%s \"%s\" has no %s", what, name, field);
                goto free_names;
            }
            if (body->type != YAML_MAPPING_NODE) {
                rc = cfg_fail(ps, body, path, "%s must be a map", field);
                goto free_names;
            }
            snprintf(path, path_size, "%s[%zu].%s", list, i, field);
            *out = body;
            rc = 0;
            goto free_names;
        }
        if (ename != NULL)
            util_buf_printf(&names, "%s\"%s\"", names.len ? ", " : "", ename);
        free(ename);
    }
    rc = util_err_set(ps->err, UTIL_EINVAL, "kubeconfig: %s \"%s\" not found (%s: %s)", what, name,
                      list, names.len ? names.data : "none");
free_names:
    util_buf_free(&names);
    return rc;
}

/* Joins a relative path to base_dir, as kubectl resolves paths in a kubeconfig. */
static char *cfg_abs_path(const char *base_dir, char *p)
{
    if (p == NULL || p[0] == '/' || base_dir == NULL || base_dir[0] == '\0')
        return p;
    char *joined = util_asprintf("%s/%s", base_dir, p);
    free(p);
    return joined;
}

/* Decodes a *-data field into pem/len; the field name goes into the message. */
static int cfg_data(struct cfg_parse *ps, const yaml_node_t *parent, const char *key,
                    const char *path, char **pem, size_t *len)
{
    char *b64 = NULL;
    struct util_err berr;
    int rc = cfg_string(ps, parent, key, path, &b64);
    if (rc != 0 || b64 == NULL)
        return rc;
    rc = kube_base64_decode(b64, strlen(b64), pem, len, &berr);
    if (rc != 0)
        rc = cfg_fail(ps, cfg_get(ps, parent, key), path, "%s: %s", key, berr.msg);
    free(b64);
    return rc;
}

void kube_config_free(struct kube_config *cfg)
{
    free(cfg->server);
    free(cfg->tls_server_name);
    free(cfg->namespace);
    free(cfg->context);
    free(cfg->ca_path);
    free(cfg->cert_path);
    free(cfg->key_path);
    free(cfg->ca_pem);
    free(cfg->cert_pem);
    free(cfg->key_pem);
    if (cfg->token != NULL)
        memset(cfg->token, 0, strlen(cfg->token));
    free(cfg->token);
    free(cfg->token_file);
    memset(cfg, 0, sizeof(*cfg));
}

/* Checks the server URL: https (http only when insecure is allowed), a host. */
static int cfg_check_server(struct cfg_parse *ps, const yaml_node_t *at, const char *path,
                            char *server, bool allow_insecure, bool *insecure)
{
    size_t n = strlen(server);
    const char *host;
    size_t scheme = strncmp(server, "https://", 8) == 0  ? 8
                    : strncmp(server, "http://", 7) == 0 ? 7
                                                         : 0;
    while (n > scheme && server[n - 1] == '/')
        server[--n] = '\0';
    if (strncmp(server, "https://", 8) == 0) {
        host = server + 8;
    } else if (strncmp(server, "http://", 7) == 0) {
        if (!allow_insecure)
            return cfg_fail(ps, at, path,
                            "server \"%s\" is plain http; Lodestore talks to the API server over "
                            "https only (allow insecure connections to use it)",
                            server);
        *insecure = true;
        host = server + 7;
    } else {
        return cfg_fail(ps, at, path, "server \"%s\" must start with https://", server);
    }
    if (host[0] == '\0' || host[0] == '/')
        return cfg_fail(ps, at, path, "server \"%s\" has no host", server);
    for (const char *p = server; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return cfg_fail(ps, at, path, "server \"%s\" contains a space or control character",
                            server);
    return 0;
}

static int cfg_parse_cluster(struct cfg_parse *ps, struct kube_config *cfg, const yaml_node_t *cl,
                             const char *path, const char *base_dir,
                             const struct kube_config_opts *opts)
{
    bool skip = false;
    int rc;

    if ((rc = cfg_string(ps, cl, "server", path, &cfg->server)) != 0)
        return rc;
    if (cfg->server == NULL || cfg->server[0] == '\0')
        return cfg_fail(ps, cl, path, "cluster has no server");
    if ((rc = cfg_check_server(ps, cfg_get(ps, cl, "server"), path, cfg->server,
                               opts->allow_insecure, &cfg->insecure)) != 0)
        return rc;
    if ((rc = cfg_string(ps, cl, "tls-server-name", path, &cfg->tls_server_name)) != 0)
        return rc;
    if ((rc = cfg_data(ps, cl, "certificate-authority-data", path, &cfg->ca_pem, &cfg->ca_len)) !=
        0)
        return rc;
    /* As in client-go, inline data wins over a file path. */
    if (cfg->ca_pem == NULL) {
        if ((rc = cfg_string(ps, cl, "certificate-authority", path, &cfg->ca_path)) != 0)
            return rc;
        cfg->ca_path = cfg_abs_path(base_dir, cfg->ca_path);
    }
    if ((rc = cfg_bool(ps, cl, "insecure-skip-tls-verify", path, &skip)) != 0)
        return rc;
    if (skip) {
        if (!opts->allow_insecure)
            return cfg_fail(ps, cfg_get(ps, cl, "insecure-skip-tls-verify"), path,
                            "insecure-skip-tls-verify is set; Lodestore always verifies the API "
                            "server's certificate (give the cluster's CA instead)");
        if (cfg->ca_pem != NULL || cfg->ca_path != NULL)
            return cfg_fail(ps, cl, path,
                            "a certificate authority and insecure-skip-tls-verify exclude each "
                            "other");
        cfg->insecure = true;
    }
    return 0;
}

static int cfg_parse_user(struct cfg_parse *ps, struct kube_config *cfg, const yaml_node_t *u,
                          const char *path, const char *base_dir)
{
    static const char *const unsupported[][2] = {
        {"exec", "exec credential plugins are not supported; use a token or a client certificate"},
        {"auth-provider", "auth providers are not supported; use a token or a client certificate"},
        {"username", "basic authentication is not supported; use a token or a client certificate"},
        {"password", "basic authentication is not supported; use a token or a client certificate"},
    };
    int rc;

    for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
        yaml_node_t *n = cfg_get(ps, u, unsupported[i][0]);
        if (n != NULL)
            return cfg_fail(ps, n, path, "%s", unsupported[i][1]);
    }
    if ((rc = cfg_string(ps, u, "token", path, &cfg->token)) != 0)
        return rc;
    if ((rc = cfg_string(ps, u, "tokenFile", path, &cfg->token_file)) != 0)
        return rc;
    cfg->token_file = cfg_abs_path(base_dir, cfg->token_file);
    if ((rc = cfg_data(ps, u, "client-certificate-data", path, &cfg->cert_pem, &cfg->cert_len)) !=
        0)
        return rc;
    if (cfg->cert_pem == NULL) {
        if ((rc = cfg_string(ps, u, "client-certificate", path, &cfg->cert_path)) != 0)
            return rc;
        cfg->cert_path = cfg_abs_path(base_dir, cfg->cert_path);
    }
    if ((rc = cfg_data(ps, u, "client-key-data", path, &cfg->key_pem, &cfg->key_len)) != 0)
        return rc;
    if (cfg->key_pem == NULL) {
        if ((rc = cfg_string(ps, u, "client-key", path, &cfg->key_path)) != 0)
            return rc;
        cfg->key_path = cfg_abs_path(base_dir, cfg->key_path);
    }
    bool has_cert = cfg->cert_pem != NULL || cfg->cert_path != NULL;
    bool has_key = cfg->key_pem != NULL || cfg->key_path != NULL;
    if (has_cert && !has_key)
        return cfg_fail(ps, u, path, "a client certificate needs a client key");
    if (has_key && !has_cert)
        return cfg_fail(ps, u, path, "a client key needs a client certificate");
    return 0;
}

int kube_config_parse(struct kube_config *cfg, const char *data, size_t len, const char *base_dir,
                      const struct kube_config_opts *opts, struct util_err *err)
{
    static const struct kube_config_opts no_opts;
    struct cfg_parse ps = {.err = err};
    yaml_parser_t parser;
    yaml_node_t *root, *ctx, *cluster, *user = NULL;
    char path[96];
    char *cluster_name = NULL, *user_name = NULL;
    int rc;

    memset(cfg, 0, sizeof(*cfg));
    if (opts == NULL)
        opts = &no_opts;
    if (!yaml_parser_initialize(&parser))
        return util_err_set(err, UTIL_EINVAL, "kubeconfig: cannot initialise the YAML parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    if (!yaml_parser_load(&parser, &ps.doc)) {
        rc = util_err_set(err, UTIL_EINVAL, "kubeconfig:%zu:%zu: %s", parser.problem_mark.line + 1,
                          parser.problem_mark.column + 1,
                          parser.problem ? parser.problem : "invalid YAML");
        yaml_parser_delete(&parser);
        return rc;
    }
    yaml_parser_delete(&parser);
    root = yaml_document_get_root_node(&ps.doc);
    if (root == NULL || cfg_is_null(root)) {
        rc = util_err_set(err, UTIL_EINVAL, "kubeconfig: the file is empty");
        goto free_doc;
    }
    if (root->type != YAML_MAPPING_NODE) {
        rc = cfg_fail(&ps, root, "(top)", "a kubeconfig must be a map");
        goto free_doc;
    }
    if (opts->context != NULL && opts->context[0] != '\0') {
        cfg->context = util_strdup(opts->context);
    } else {
        if ((rc = cfg_string(&ps, root, "current-context", "current-context", &cfg->context)) != 0)
            goto free_cfg;
        if (cfg->context == NULL || cfg->context[0] == '\0') {
            rc = util_err_set(err, UTIL_EINVAL,
                              "kubeconfig: no current-context is set; name a context");
            goto free_cfg;
        }
    }
    if ((rc = cfg_find_named(&ps, root, "contexts", "context", cfg->context, "context", path,
                             sizeof(path), &ctx)) != 0)
        goto free_cfg;
    if ((rc = cfg_string(&ps, ctx, "cluster", path, &cluster_name)) != 0 ||
        (rc = cfg_string(&ps, ctx, "user", path, &user_name)) != 0 ||
        (rc = cfg_string(&ps, ctx, "namespace", path, &cfg->namespace)) != 0)
        goto free_names;
    if (cluster_name == NULL || cluster_name[0] == '\0') {
        rc = cfg_fail(&ps, ctx, path, "context \"%s\" names no cluster", cfg->context);
        goto free_names;
    }
    if ((rc = cfg_find_named(&ps, root, "clusters", "cluster", cluster_name, "cluster", path,
                             sizeof(path), &cluster)) != 0)
        goto free_names;
    if ((rc = cfg_parse_cluster(&ps, cfg, cluster, path, base_dir, opts)) != 0)
        goto free_names;
    /* A context without a user connects anonymously, as kubectl does. */
    if (user_name != NULL && user_name[0] != '\0') {
        if ((rc = cfg_find_named(&ps, root, "users", "user", user_name, "user", path, sizeof(path),
                                 &user)) != 0)
            goto free_names;
        if ((rc = cfg_parse_user(&ps, cfg, user, path, base_dir)) != 0)
            goto free_names;
    }
    if (cfg->namespace == NULL || cfg->namespace[0] == '\0') {
        free(cfg->namespace);
        cfg->namespace = util_strdup("default");
    }
free_names:
    free(cluster_name);
    free(user_name);
free_cfg:
    if (rc != 0)
        kube_config_free(cfg);
free_doc:
    yaml_document_delete(&ps.doc);
    return rc;
}
/* The base64 alphabet's values; 0xff marks a byte outside it. */
static unsigned b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return 0xff;
}

int kube_base64_decode(const char *in, size_t len, char **out, size_t *out_len,
                       struct util_err *err)
{
    unsigned char *buf = util_malloc(len / 4 * 3 + 4);
    size_t n = 0, quad = 0, pad = 0;
    unsigned acc = 0;
    int rc;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '\r' || c == '\n')
            continue;
        if (c == '=') {
            /* Padding: only in the last one or two places of the last quantum. */
            if (quad < 2) {
                rc =
                    util_err_set(err, UTIL_EINVAL, "invalid base64 at byte %zu (misplaced '=')", i);
                goto free_buf;
            }
            pad++;
            quad++;
            if (quad == 4) {
                quad = 0;
                if (pad == 1) {
                    buf[n++] = (unsigned char)(acc >> 10);
                    buf[n++] = (unsigned char)(acc >> 2);
                } else {
                    buf[n++] = (unsigned char)(acc >> 4);
                }
                /* Nothing but line breaks may follow the padding. */
                for (size_t j = i + 1; j < len; j++) {
                    if (in[j] != '\r' && in[j] != '\n') {
                        rc = util_err_set(err, UTIL_EINVAL,
                                          "invalid base64 at byte %zu (data after the padding)", j);
                        goto free_buf;
                    }
                }
                break;
            }
            continue;
        }
        unsigned v = b64_value(c);
        if (v == 0xff || pad > 0) {
            rc = util_err_set(err, UTIL_EINVAL, "invalid base64 at byte %zu (%s)", i,
                              pad > 0 ? "data after '='" : "not a base64 character");
            goto free_buf;
        }
        acc = (acc << 6) | v;
        if (++quad == 4) {
            buf[n++] = (unsigned char)(acc >> 16);
            buf[n++] = (unsigned char)(acc >> 8);
            buf[n++] = (unsigned char)acc;
            quad = 0;
            acc = 0;
        }
    }
    if (quad != 0) {
        rc = util_err_set(err, UTIL_EINVAL,
                          "invalid base64: the length is not a multiple of 4 "
                          "(missing '=' padding?)");
        goto free_buf;
    }
    buf[n] = '\0';
    *out = (char *)buf;
    *out_len = n;
    return 0;
free_buf:
    free(buf);
    return rc;
}
