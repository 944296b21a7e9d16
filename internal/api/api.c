#include "api/api.h"

const struct kube_resource api_backuppolicies = {API_GROUP, API_VERSION, "backuppolicies", NULL};
const struct kube_resource api_backups = {API_GROUP, API_VERSION, "backups", NULL};
const struct kube_resource api_jobs = {"batch", "v1", "jobs", NULL};
const struct kube_resource api_nodes = {"", "v1", "nodes", NULL};
const struct kube_resource api_leases = {"coordination.k8s.io", "v1", "leases", NULL};
const struct kube_resource api_restores = {API_GROUP, API_VERSION, "restores", NULL};

struct kube_resource api_in(const struct kube_resource *r, const char *ns)
{
    struct kube_resource x = *r;
    x.namespace = ns;
    return x;
}
