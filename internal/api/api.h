/*
 * api: the Kubernetes resources Lodestore reads and writes, named once.
 *
 * The controller's informers and writes, `lode status` and `lode apply` all address
 * the same resources; each (group, version, resource) is spelled here and nowhere
 * else, so moving Lodestore's API to a new version is a change of one line. The CRDs
 * that define Lodestore's own kinds are in crd/ (docs/operator.md describes them).
 *
 * Costs: constants only.
 */
#ifndef LODE_API_H
#define LODE_API_H

#include "kube/kube.h"

#define API_GROUP         "lodestore.io"
#define API_VERSION       "v1alpha1"
#define API_GROUP_VERSION API_GROUP "/" API_VERSION /* an object's apiVersion */

/* The resources, with no namespace: use api_in() to address one. */
extern const struct kube_resource api_backuppolicies;
extern const struct kube_resource api_backups;
extern const struct kube_resource api_jobs;
extern const struct kube_resource api_nodes;
extern const struct kube_resource api_leases;
extern const struct kube_resource api_restores;

/* r in namespace ns (NULL: every namespace, or a cluster-scoped resource). */
struct kube_resource api_in(const struct kube_resource *r, const char *ns);

#endif
