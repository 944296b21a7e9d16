/*
 * policy_arg: what a --policy argument names (cli.h, "Policies"): a BackupPolicy
 * file, or NS/NAME loaded from $LODE_POLICY_DOCUMENT or the Kubernetes API.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api.h"
#include "cli.h"
#include "kubeutil.h"
#include "repo/repo.h"

static bool cli_policy_is_file(const char *arg)
{
    struct stat sb;
    return strcmp(arg, "-") == 0 || stat(arg, &sb) == 0;
}

/* Splits NS/NAME; UTIL_EINVAL unless it is exactly two valid names. */
static int cli_policy_split_name(const char *arg, char **ns, char **name, struct util_err *err)
{
    const char *slash = strchr(arg, '/');
    struct util_err e = {0};
    char *a, *b;

    if (slash == NULL || strchr(slash + 1, '/') != NULL)
        return util_err_set(err, UTIL_EINVAL,
                            "--policy \"%s\" is neither a file nor NAMESPACE/NAME", arg);
    a = util_strndup(arg, (size_t)(slash - arg));
    b = util_strdup(slash + 1);
    if (repo_name_check(a, "the policy's namespace", &e) != 0 ||
        repo_name_check(b, "the policy's name", &e) != 0) {
        free(a);
        free(b);
        return util_err_set(err, UTIL_EINVAL, "--policy \"%s\": %s", arg, e.msg);
    }
    *ns = a;
    *name = b;
    return 0;
}

static int cli_policy_file(const char *arg, const struct tz_db *db, struct policy *out,
                           struct policy_diags *diags, struct util_err *err)
{
    char *data = NULL;
    size_t len = 0;
    int rc;

    if ((rc = util_read_file(arg, &data, &len, err)) != 0)
        return rc;
    rc = policy_parse_yaml(out, data, len, db, diags);
    free(data);
    if (rc != 0)
        return util_err_set(err, UTIL_EINVAL, "the policy %s is invalid", arg);
    return 0;
}

int cli_policy_name(const char *arg, char **ns, char **name, struct policy_diags *diags,
                    struct util_err *err)
{
    struct policy pol;
    int rc;

    if (!cli_policy_is_file(arg))
        return cli_policy_split_name(arg, ns, name, err);
    if ((rc = cli_policy_file(arg, NULL, &pol, diags, err)) != 0)
        return rc;
    *ns = util_strdup(pol.namespace);
    *name = util_strdup(pol.name);
    policy_free(&pol);
    return 0;
}

/* The policy from $LODE_POLICY_DOCUMENT: 1 when it holds ns/name (out filled), 0 when not. */
static int cli_policy_env(const char *ns, const char *name, const struct tz_db *db,
                          struct policy *out, struct policy_diags *diags, struct util_err *err)
{
    const char *doc = getenv("LODE_POLICY_DOCUMENT");
    json_error_t je;
    json_t *obj, *meta;
    const char *dns, *dname;
    int rc;

    if (doc == NULL || doc[0] == '\0')
        return 0;
    obj = json_loads(doc, JSON_REJECT_DUPLICATES, &je);
    if (obj == NULL)
        return util_err_set(err, UTIL_EINVAL, "LODE_POLICY_DOCUMENT is not JSON: %s (column %d)",
                            je.text, je.column);
    meta = json_object_get(obj, "metadata");
    dns = json_string_value(json_object_get(meta, "namespace"));
    dname = json_string_value(json_object_get(meta, "name"));
    if (dns == NULL)
        dns = "default";
    if (dname == NULL || strcmp(dns, ns) != 0 || strcmp(dname, name) != 0) {
        json_decref(obj);
        return 0;
    }
    rc = policy_parse_json(out, obj, db, diags);
    json_decref(obj);
    if (rc != 0)
        return util_err_set(err, UTIL_EINVAL, "the policy %s/%s in LODE_POLICY_DOCUMENT is invalid",
                            ns, name);
    return 1;
}

static int cli_policy_api(const char *ns, const char *name, const struct tz_db *db,
                          const char *kubeconfig, struct policy *out, struct policy_diags *diags,
                          struct util_err *err)
{
    struct cli_kube k;
    struct cli_kube_reply r = {0};
    struct kube_resource res = api_in(&api_backuppolicies, ns);
    struct util_err e = {0};
    int rc;

    if ((rc = cli_kube_open(&k, kubeconfig, NULL, &e)) != 0) {
        cli_kube_close(&k);
        return util_err_set(err, UTIL_EIO,
                            "cannot read the policy %s/%s: %s (give --policy FILE, or "
                            "LODE_POLICY_DOCUMENT)",
                            ns, name, e.msg);
    }
    if ((rc = cli_kube_get(&k, &res, name, &r, &e)) != 0) {
        rc = util_err_set(err, UTIL_EIO, "cannot read the policy %s/%s from %s: %s", ns, name,
                          cli_kube_server(&k), e.msg);
        goto out;
    }
    if (r.status == 404) {
        rc = util_err_set(err, UTIL_ENOENT, "backuppolicy \"%s\" not found in namespace \"%s\"",
                          name, ns);
        goto out;
    }
    if (r.status < 200 || r.status >= 300) {
        cli_kube_reply_error(&r, UTIL_EIO, &e);
        rc = util_err_set(err, UTIL_EIO, "cannot read the policy %s/%s from %s: %s", ns, name,
                          cli_kube_server(&k), e.msg);
        goto out;
    }
    if (policy_parse_json(out, r.body, db, diags) != 0)
        rc = util_err_set(err, UTIL_EINVAL, "the policy %s/%s is invalid", ns, name);
out:
    cli_kube_reply_free(&r);
    cli_kube_close(&k);
    return rc;
}

int cli_policy_load(const char *arg, const struct tz_db *db, const char *kubeconfig,
                    struct policy *out, struct policy_diags *diags, struct util_err *err)
{
    char *ns = NULL, *name = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (cli_policy_is_file(arg))
        return cli_policy_file(arg, db, out, diags, err);
    if ((rc = cli_policy_split_name(arg, &ns, &name, err)) != 0)
        return rc;
    rc = cli_policy_env(ns, name, db, out, diags, err);
    if (rc == 1)
        rc = 0;
    else if (rc == 0)
        rc = cli_policy_api(ns, name, db, kubeconfig, out, diags, err);
    free(ns);
    free(name);
    return rc;
}
