#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube/kube.h"

/* "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" in base64. */
#define PEM_TEXT "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define PEM_B64  "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="

static const char token_config[] = "apiVersion: v1\n"
                                   "kind: Config\n"
                                   "current-context: dev\n"
                                   "clusters:\n"
                                   "- name: local\n"
                                   "  cluster:\n"
                                   "    server: https://127.0.0.1:6443/\n"
                                   "    certificate-authority-data: " PEM_B64 "\n"
                                   "- name: other\n"
                                   "  cluster:\n"
                                   "    server: https://other.example:443\n"
                                   "    certificate-authority: certs/ca.pem\n"
                                   "contexts:\n"
                                   "- name: dev\n"
                                   "  context: {cluster: local, user: admin, namespace: ops}\n"
                                   "- name: prod\n"
                                   "  context:\n"
                                   "    cluster: other\n"
                                   "    user: certuser\n"
                                   "users:\n"
                                   "- name: admin\n"
                                   "  user:\n"
                                   "    token: abc.def\n"
                                   "- name: certuser\n"
                                   "  user:\n"
                                   "    client-certificate: /etc/k/client.crt\n"
                                   "    client-key: client.key\n"
                                   "preferences: {}\n";

static void test_token_context(void **state)
{
    struct kube_config cfg;
    struct util_err err = {0};
    assert_int_equal(
        kube_config_parse(&cfg, token_config, strlen(token_config), "/home/u/.kube", NULL, &err),
        0);
    assert_string_equal(cfg.server, "https://127.0.0.1:6443");
    assert_string_equal(cfg.namespace, "ops");
    assert_string_equal(cfg.context, "dev");
    assert_string_equal(cfg.token, "abc.def");
    assert_null(cfg.token_file);
    assert_int_equal(cfg.ca_len, strlen(PEM_TEXT));
    assert_string_equal(cfg.ca_pem, PEM_TEXT);
    assert_null(cfg.ca_path);
    assert_null(cfg.cert_pem);
    assert_false(cfg.insecure);
    kube_config_free(&cfg);
}

static void test_named_context_and_paths(void **state)
{
    struct kube_config cfg;
    struct util_err err = {0};
    struct kube_config_opts opts = {.context = "prod"};
    assert_int_equal(
        kube_config_parse(&cfg, token_config, strlen(token_config), "/home/u/.kube", &opts, &err),
        0);
    assert_string_equal(cfg.server, "https://other.example:443");
    assert_string_equal(cfg.namespace, "default");
    /* Relative paths are taken from the kubeconfig's directory, as kubectl does. */
    assert_string_equal(cfg.ca_path, "/home/u/.kube/certs/ca.pem");
    assert_string_equal(cfg.cert_path, "/etc/k/client.crt");
    assert_string_equal(cfg.key_path, "/home/u/.kube/client.key");
    assert_null(cfg.token);
    kube_config_free(&cfg);
}

/* Parses text and expects an error whose message contains want. */
static void expect_error(const char *text, const struct kube_config_opts *opts, const char *want)
{
    struct kube_config cfg;
    struct util_err err = {0};
    int rc = kube_config_parse(&cfg, text, strlen(text), NULL, opts, &err);
    if (rc == 0) {
        kube_config_free(&cfg);
        fail_msg("accepted, want error \"%s\":\n%s", want, text);
    }
    assert_int_equal(rc, UTIL_EINVAL);
    if (strstr(err.msg, want) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, want);
    assert_null(cfg.server);
}

#define CTX           "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
#define CLUSTER(body) "clusters:\n- name: k\n  cluster:\n" body
#define USER(body)    "users:\n- name: u\n  user:\n" body
#define GOOD_CLUSTER  CLUSTER("    server: https://h:6443\n")

static void test_errors(void **state)
{
    expect_error("", NULL, "kubeconfig: the file is empty");
    expect_error("- a\n- b\n", NULL, "kubeconfig:1:1: (top): a kubeconfig must be a map");
    expect_error("a: [\n", NULL, "kubeconfig:2:1:");
    expect_error("clusters: []\n", NULL, "no current-context is set");
    expect_error("current-context: x\ncontexts:\n- name: a\n  context: {}\n- name: b\n  context: "
                 "{}\n",
                 NULL, "context \"x\" not found (contexts: \"a\", \"b\")");
    expect_error("current-context: x\n", NULL, "context \"x\" not found (contexts: none)");
    expect_error("current-context: c\ncontexts:\n- name: c\n", NULL,
                 "kubeconfig:3:3: contexts[0]: context \"c\" has no context");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {user: u}\n", NULL,
                 "context \"c\" names no cluster");
    expect_error("current-context: c\ncontexts: {c: 1}\n", NULL, "contexts: must be a list");
    expect_error(CTX "clusters:\n- name: other\n  cluster: {server: https://h}\n", NULL,
                 "cluster \"k\" not found (clusters: \"other\")");
    expect_error(CTX CLUSTER("    certificate-authority: /ca\n"), NULL, "cluster has no server");
    expect_error(CTX CLUSTER("    server: {url: x}\n"), NULL,
                 "kubeconfig:8:13: clusters[0].cluster: server must be a string");
    expect_error(CTX CLUSTER("    server: http://h:8080\n"), NULL, "is plain http");
    expect_error(CTX CLUSTER("    server: h:6443\n"), NULL, "must start with https://");
    expect_error(CTX CLUSTER("    server: https://\n"), NULL, "has no host");
    expect_error(CTX CLUSTER("    server: https://h\n    insecure-skip-tls-verify: true\n"), NULL,
                 "kubeconfig:9:31: clusters[0].cluster: insecure-skip-tls-verify is set; "
                 "Lodestore always verifies");
    expect_error(CTX CLUSTER("    server: https://h\n    insecure-skip-tls-verify: maybe\n"), NULL,
                 "insecure-skip-tls-verify must be true or false");
    expect_error(CTX CLUSTER("    server: https://h\n    certificate-authority-data: QUJ\n"), NULL,
                 "kubeconfig:9:33: clusters[0].cluster: certificate-authority-data: invalid "
                 "base64: the length is not a multiple of 4");
    expect_error(CTX GOOD_CLUSTER "users:\n- name: x\n  user: {}\n", NULL,
                 "user \"u\" not found (users: \"x\")");
    expect_error(CTX GOOD_CLUSTER USER("    client-certificate-data: " PEM_B64 "\n"), NULL,
                 "a client certificate needs a client key");
    expect_error(CTX GOOD_CLUSTER USER("    client-key: /k\n"), NULL,
                 "a client key needs a client certificate");
    expect_error(CTX GOOD_CLUSTER USER("    client-key-data: QU*D\n    client-certificate: /c\n"),
                 NULL, "users[0].user: client-key-data: invalid base64 at byte 2");
    expect_error(CTX GOOD_CLUSTER USER("    exec:\n      command: aws\n"), NULL,
                 "exec credential plugins are not supported");
    expect_error(CTX GOOD_CLUSTER USER("    auth-provider: {name: gcp}\n"), NULL,
                 "auth providers are not supported");
    expect_error(CTX GOOD_CLUSTER USER("    username: admin\n"), NULL,
                 "basic authentication is not supported");
    expect_error(CTX GOOD_CLUSTER USER("    token: [a]\n"), NULL, "token must be a string");
}

static void test_insecure_allowed(void **state)
{
    static const char text[] =
        CTX CLUSTER("    server: https://h\n    insecure-skip-tls-verify: True\n")
            USER("    token: t\n");
    static const char http[] = CTX CLUSTER("    server: http://127.0.0.1:8080\n") USER("    {}\n");
    struct kube_config_opts opts = {.allow_insecure = true};
    struct kube_config cfg;
    struct util_err err = {0};
    assert_int_equal(kube_config_parse(&cfg, text, strlen(text), NULL, &opts, &err), 0);
    assert_true(cfg.insecure);
    kube_config_free(&cfg);
    assert_int_equal(kube_config_parse(&cfg, http, strlen(http), NULL, &opts, &err), 0);
    assert_true(cfg.insecure);
    assert_string_equal(cfg.server, "http://127.0.0.1:8080");
    assert_null(cfg.token);
    kube_config_free(&cfg);
    /* Even when allowed, a CA and "don't verify" contradict each other. */
    expect_error(CTX CLUSTER("    server: https://h\n    insecure-skip-tls-verify: true\n    "
                             "certificate-authority: /ca\n"),
                 &opts, "exclude each other");
}

static void test_json_kubeconfig(void **state)
{
    /* JSON is YAML: a kubeconfig written by a tool as JSON loads the same way. */
    static const char text[] =
        "{\"current-context\":\"c\",\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"k\","
        "\"user\":\"u\"}}],\"clusters\":[{\"name\":\"k\",\"cluster\":{\"server\":\"https://"
        "h:1\"}}],"
        "\"users\":[{\"name\":\"u\",\"user\":{\"tokenFile\":\"tok\"}}]}";
    struct kube_config cfg;
    assert_int_equal(kube_config_parse(&cfg, text, strlen(text), "/d", NULL, NULL), 0);
    assert_string_equal(cfg.token_file, "/d/tok");
    kube_config_free(&cfg);
}

/* A scratch directory with files; removed at the end. */
static char scratch[64];

static void write_file(const char *name, const char *data)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", scratch, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(data, f);
    fclose(f);
}

static int scratch_setup(void **state)
{
    snprintf(scratch, sizeof(scratch), "/tmp/lode-kube-test-XXXXXX");
    return mkdtemp(scratch) == NULL ? -1 : 0;
}

static int scratch_teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_load_file_with_paths(void **state)
{
    char path[128];
    struct kube_config cfg;
    struct util_err err = {0};
    write_file("ca.pem", PEM_TEXT);
    write_file("client.crt", PEM_TEXT);
    write_file("client.key", "-----BEGIN PRIVATE KEY-----\nMII\n-----END PRIVATE KEY-----\n");
    write_file("token", "  tok-from-file\n");
    write_file("config",
               CTX CLUSTER("    server: https://h:6443\n    certificate-authority: ca.pem\n")
                   USER("    client-certificate: client.crt\n    client-key: "
                        "client.key\n    token: inline\n    tokenFile: token\n"));
    snprintf(path, sizeof(path), "%s/config", scratch);
    assert_int_equal(kube_config_load_file(&cfg, path, NULL, &err), 0);
    assert_string_equal(cfg.ca_pem, PEM_TEXT);
    assert_string_equal(cfg.cert_pem, PEM_TEXT);
    assert_non_null(strstr(cfg.key_pem, "PRIVATE KEY"));
    /* The token file wins over the inline token, trimmed. */
    assert_string_equal(cfg.token, "tok-from-file");
    kube_config_free(&cfg);

    /* A CA file that is not PEM, a missing key file, an empty token file. */
    write_file("ca.pem", "not a certificate\n");
    assert_int_equal(kube_config_load_file(&cfg, path, NULL, &err), UTIL_EINVAL);
    assert_string_equal(err.msg,
                        "the certificate authority is not PEM data (no \"-----BEGIN\" line)");
    write_file("ca.pem", PEM_TEXT);
    write_file("token", " \n");
    assert_int_equal(kube_config_load_file(&cfg, path, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "token file"));
    assert_non_null(strstr(err.msg, "is empty"));
    write_file("config", CTX CLUSTER("    server: https://h:6443\n") USER(
                             "    client-certificate: client.crt\n    client-key: nope.key\n"));
    assert_int_equal(kube_config_load_file(&cfg, path, NULL, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "client-key: "));
    assert_non_null(strstr(err.msg, "nope.key: cannot open"));
    /* Parse errors name the file instead of "kubeconfig". */
    write_file("config", CTX CLUSTER("    server: ftp://h\n"));
    assert_int_equal(kube_config_load_file(&cfg, path, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "/config:8:13: clusters[0].cluster: server"));
    assert_int_equal(strncmp(err.msg, scratch, strlen(scratch)), 0);
    snprintf(path, sizeof(path), "%s/missing", scratch);
    assert_int_equal(kube_config_load_file(&cfg, path, NULL, &err), UTIL_EIO);
}

static void test_incluster(void **state)
{
    struct kube_config cfg;
    struct util_err err = {0};
    assert_int_equal(kube_config_incluster(&cfg, "10.96.0.1", "443", PEM_TEXT, strlen(PEM_TEXT),
                                           "ops\n", "/sa/token", &err),
                     0);
    assert_string_equal(cfg.server, "https://10.96.0.1:443");
    assert_string_equal(cfg.namespace, "ops");
    assert_string_equal(cfg.token_file, "/sa/token");
    kube_config_free(&cfg);
    assert_int_equal(kube_config_incluster(&cfg, "fd00::1", "6443", PEM_TEXT, strlen(PEM_TEXT),
                                           NULL, NULL, &err),
                     0);
    assert_string_equal(cfg.server, "https://[fd00::1]:6443");
    assert_string_equal(cfg.namespace, "default");
    kube_config_free(&cfg);
    assert_int_equal(
        kube_config_incluster(&cfg, NULL, "443", PEM_TEXT, strlen(PEM_TEXT), NULL, NULL, &err),
        UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
    assert_int_equal(
        kube_config_incluster(&cfg, "h", "44x", PEM_TEXT, strlen(PEM_TEXT), NULL, NULL, &err),
        UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "not a port number"));
    assert_int_equal(
        kube_config_incluster(&cfg, "h/x", "1", PEM_TEXT, strlen(PEM_TEXT), NULL, NULL, &err),
        UTIL_EINVAL);
    assert_int_equal(kube_config_incluster(&cfg, "h", "1", "", 0, NULL, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "CA is empty"));

    /* From a service account directory and the environment. */
    write_file("ca.crt", PEM_TEXT);
    write_file("token", "sa-token\n");
    write_file("namespace", "lodestore");
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(kube_config_load_incluster(&cfg, scratch, &err), 0);
    assert_string_equal(cfg.token, "sa-token");
    assert_string_equal(cfg.namespace, "lodestore");
    assert_string_equal(cfg.server, "https://10.0.0.1:443");
    kube_config_free(&cfg);
    char path[128];
    snprintf(path, sizeof(path), "%s/token", scratch);
    unlink(path);
    assert_int_equal(kube_config_load_incluster(&cfg, scratch, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "token file"));
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_load_default(void **state)
{
    struct kube_config cfg;
    struct util_err err = {0};
    setenv("KUBECONFIG", "/a:/b", 1);
    assert_int_equal(kube_config_load_default(&cfg, NULL, NULL, &err), UTIL_EINVAL);
    assert_non_null(strstr(err.msg, "KUBECONFIG names several files"));
    /* An explicit path wins over KUBECONFIG. */
    char path[128];
    snprintf(path, sizeof(path), "%s/config", scratch);
    write_file("config", CTX GOOD_CLUSTER USER("    token: t\n"));
    assert_int_equal(kube_config_load_default(&cfg, path, NULL, &err), 0);
    assert_string_equal(cfg.token, "t");
    kube_config_free(&cfg);
    setenv("KUBECONFIG", path, 1);
    assert_int_equal(kube_config_load_default(&cfg, NULL, NULL, &err), 0);
    assert_string_equal(cfg.server, "https://h:6443");
    kube_config_free(&cfg);
    unsetenv("KUBECONFIG");
    setenv("HOME", scratch, 1);
    assert_int_equal(kube_config_load_default(&cfg, NULL, NULL, &err), UTIL_EIO);
    assert_non_null(strstr(err.msg, "/.kube/config"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_context),   cmocka_unit_test(test_named_context_and_paths),
        cmocka_unit_test(test_errors),          cmocka_unit_test(test_insecure_allowed),
        cmocka_unit_test(test_json_kubeconfig), cmocka_unit_test(test_load_file_with_paths),
        cmocka_unit_test(test_incluster),       cmocka_unit_test(test_load_default),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
