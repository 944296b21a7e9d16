/* podsec: the pods' hardening (podsec.h; docs/security.md, "Backup and GC pods"). */
#include "podsec.h"

#include <string.h>

static json_t *ctl_obj_child(json_t *parent, const char *key)
{
    json_t *v = json_object_get(parent, key);
    if (!json_is_object(v)) {
        v = json_object();
        json_object_set_new(parent, key, v);
    }
    return v;
}

static void ctl_container_harden(json_t *c, enum ctl_pod_kind kind)
{
    bool backup = kind == CTL_POD_BACKUP, restore = kind == CTL_POD_RESTORE;
    if (json_object_get(c, "resources") == NULL)
        json_object_set_new(c, "resources",
                            json_pack("{s:{s:s, s:s}, s:{s:s}}", "requests", "cpu",
                                      backup    ? CTL_BACKUP_CPU_REQUEST
                                      : restore ? CTL_RESTORE_CPU_REQUEST
                                                : CTL_GC_CPU_REQUEST,
                                      "memory",
                                      backup    ? CTL_BACKUP_MEMORY_REQUEST
                                      : restore ? CTL_RESTORE_MEMORY_REQUEST
                                                : CTL_GC_MEMORY_REQUEST,
                                      "limits", "memory",
                                      backup    ? CTL_BACKUP_MEMORY_LIMIT
                                      : restore ? CTL_RESTORE_MEMORY_LIMIT
                                                : CTL_GC_MEMORY_LIMIT));
    json_t *sc = ctl_obj_child(c, "securityContext");
    json_object_set_new(sc, "allowPrivilegeEscalation", json_false());
    json_object_set_new(sc, "readOnlyRootFilesystem", json_true());
    json_object_set_new(sc, "privileged", json_false());
    /* A restore container's own list of what it adds is kept; everything else dropped. */
    json_t *add = restore ? json_object_get(json_object_get(sc, "capabilities"), "add") : NULL;
    json_t *caps = backup ? json_pack("{s:[s], s:[s]}", "drop", "ALL", "add", CTL_BACKUP_CAPABILITY)
                   : add != NULL ? json_pack("{s:[s], s:O}", "drop", "ALL", "add", add)
                                 : json_pack("{s:[s]}", "drop", "ALL");
    json_object_set_new(sc, "capabilities", caps);
}

void ctl_pod_harden(json_t *pod, enum ctl_pod_kind kind, const char *host_mount, bool rro_supported)
{
    json_t *psc = ctl_obj_child(pod, "securityContext");
    json_object_set_new(psc, "seccompProfile", json_pack("{s:s}", "type", "RuntimeDefault"));
    /* The agent never calls the API: a token would only be something to steal. */
    json_object_set_new(pod, "automountServiceAccountToken", json_false());
    /* Nor does it need the namespace's Services as variables. */
    json_object_set_new(pod, "enableServiceLinks", json_false());
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(pod, "containers"), i, c)
    {
        ctl_container_harden(c, kind);
        if (kind != CTL_POD_BACKUP || host_mount == NULL)
            continue;
        size_t j;
        json_t *m;
        json_array_foreach(json_object_get(c, "volumeMounts"), j, m)
        {
            const char *name = json_string_value(json_object_get(m, "name"));
            if (name == NULL || strcmp(name, host_mount) != 0)
                continue;
            /* recursiveReadOnly needs readOnly and no mount propagation. */
            json_object_set_new(m, "readOnly", json_true());
            json_object_del(m, "mountPropagation");
            json_object_set_new(m, "recursiveReadOnly",
                                json_string(rro_supported ? "Enabled" : "IfPossible"));
        }
    }
}

bool ctl_node_rro_supported(const json_t *node)
{
    const json_t *handlers = json_object_get(json_object_get(node, "status"), "runtimeHandlers");
    size_t i;
    const json_t *h;
    json_array_foreach(handlers, i, h)
    {
        const char *name = json_string_value(json_object_get(h, "name"));
        if (name != NULL && name[0] != '\0')
            continue;
        return json_is_true(
            json_object_get(json_object_get(h, "features"), "recursiveReadOnlyMounts"));
    }
    return false;
}
