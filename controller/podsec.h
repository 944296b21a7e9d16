/*
 * podsec: the hardening every pod the controller creates gets (docs/security.md,
 * "Backup and GC pods"), in one place, apart from what the pods do.
 *
 * A backup pod reads a whole node as uid 0 with CAP_DAC_READ_SEARCH, so what it cannot
 * do matters as much as what it does: it gets the runtime's default seccomp filter, no
 * service-account token (the agent never calls the API), no Service environment
 * variables, every capability dropped but the ones its kind needs, memory and CPU
 * requests and a memory limit (no CPU limit: throttling a backup only makes it later),
 * and, for a backup pod, the node's "/" mounted recursively read-only where the node's
 * runtime says it can (Kubernetes' recursiveReadOnly: Enabled). Where it cannot, the
 * mount is IfPossible, which is read-only at its top only: file systems mounted below
 * "/" (/var, /boot, the kubelet's) stay writable by the container's uid 0 for files
 * root owns. The caller reports that loudly (a Warning Event on the Backup).
 *
 * The defaults below are the one home of the pods' resources; a value a policy sets
 * (container "resources" already present) is kept, so they only fill what is missing.
 *
 * Pure: no I/O.
 */
#ifndef LODE_CTL_PODSEC_H
#define LODE_CTL_PODSEC_H

#include <stdbool.h>

#include <jansson.h>

/*
 * The backup agent's defaults: 128 MiB of scrypt and catalogs at most in the usual case
 * (docs/gc.md, "Scope and memory"), a limit that stops a runaway agent before it
 * starves the node's own workloads.
 */
#define CTL_BACKUP_CPU_REQUEST    "100m"
#define CTL_BACKUP_MEMORY_REQUEST "256Mi"
#define CTL_BACKUP_MEMORY_LIMIT   "2Gi"
/* lode gc peaks at about 45 MiB for 10,000 packs (docs/gc.md, "Measured"). */
#define CTL_GC_CPU_REQUEST    "100m"
#define CTL_GC_MEMORY_REQUEST "128Mi"
#define CTL_GC_MEMORY_LIMIT   "1Gi"

/* The only capability a backup container keeps: read and list any file, write none. */
#define CTL_BACKUP_CAPABILITY "DAC_READ_SEARCH"

/* A restore's Job (docs/restoring.md) writes files with their owners, modes and times:
 * its container lists the capabilities that takes, which are kept (drop ALL besides). */
#define CTL_RESTORE_CPU_REQUEST    "100m"
#define CTL_RESTORE_MEMORY_REQUEST "256Mi"
#define CTL_RESTORE_MEMORY_LIMIT   "2Gi"

enum ctl_pod_kind { CTL_POD_BACKUP, CTL_POD_GC, CTL_POD_RESTORE };

/*
 * Hardens pod (a PodSpec with its containers): seccompProfile RuntimeDefault in the pod's
 * securityContext, automountServiceAccountToken and enableServiceLinks false, and on
 * each container the default resources (when it has none), allowPrivilegeEscalation
 * false, a read-only root and capabilities drop ALL (add CTL_BACKUP_CAPABILITY for a
 * backup pod). For a backup pod, the mount named host_mount gets recursiveReadOnly:
 * Enabled when rro_supported, else IfPossible.
 */
void ctl_pod_harden(json_t *pod, enum ctl_pod_kind kind, const char *host_mount,
                    bool rro_supported);

/*
 * Whether the Node object node says its default runtime handler mounts recursively
 * read-only (status.runtimeHandlers, the entry named "", features.recursiveReadOnlyMounts).
 * A node that says nothing (a runtime too old to tell: containerd before 2.0) cannot.
 */
bool ctl_node_rro_supported(const json_t *node);

#endif
