/*
 * What the controller's caches cost per node and per (policy, host) schedule entry,
 * measured with the allocator's own count (mallinfo2) around building them from
 * realistic objects: a Node as a kubelet reports it (about 4 KiB of JSON with a dozen
 * labels, conditions, addresses, images) reduced by ctl_node_from_json into the
 * name-keyed map, and a timer heap entry per pair. Prints bytes per item; the JSON
 * itself is freed, as in the controller.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "util/map.h"
#include "state.h"

static size_t allocated(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static json_t *node_json(int i)
{
    char name[64];
    snprintf(name, sizeof(name), "ip-10-0-%d-%d.eu-central-1.compute.internal", i / 250, i % 250);
    json_t *labels = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "kubernetes.io/hostname",
        name, "kubernetes.io/os", "linux", "kubernetes.io/arch", "amd64",
        "node.kubernetes.io/instance-type", "m6i.xlarge", "topology.kubernetes.io/region",
        "eu-central-1", "topology.kubernetes.io/zone", i % 3 ? "eu-central-1a" : "eu-central-1b",
        "beta.kubernetes.io/os", "linux", "beta.kubernetes.io/arch", "amd64",
        "eks.amazonaws.com/nodegroup", "general", "eks.amazonaws.com/capacityType", "ON_DEMAND",
        "role", i % 2 ? "db" : "web", "team", "platform");
    json_t *images = json_array();
    for (int k = 0; k < 12; k++)
        json_array_append_new(
            images, json_pack("{s:[s], s:i}", "names",
                              "registry.example.com/team/service-image@sha256:0123456789abcdef"
                              "0123456789abcdef0123456789abcdef0123456789abcdef",
                              "sizeBytes", 123456789));
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:[{s:s, s:s}, {s:s, s:s}], s:o}}",
                     "apiVersion", "v1", "kind", "Node", "metadata", "name", name,
                     "creationTimestamp", "2026-01-01T00:00:00Z", "labels", labels, "status",
                     "conditions", "type", "Ready", "status", "True", "type", "MemoryPressure",
                     "status", "False", "images", images);
}

int main(int argc, char **argv)
{
    uint64_t parsed = 5000;
    if (argc > 1 && util_parse_u64(argv[1], strlen(argv[1]), 1000000, &parsed) != 0) {
        fprintf(stderr, "usage: bench_memory [NODES up to 1000000]\n");
        return 2;
    }
    int n = (int)parsed;
    struct util_map nodes;
    struct ctl_heap heap;
    struct util_err err = {0};
    size_t json_bytes = 0;

    util_map_init(&nodes);
    ctl_heap_init(&heap);
    size_t before = allocated();
    for (int i = 0; i < n; i++) {
        json_t *obj = node_json(i);
        char *text = json_dumps(obj, JSON_COMPACT);
        json_bytes += strlen(text);
        free(text);
        struct ctl_node *node;
        if (ctl_node_from_json(&node, obj, &err) != 0)
            return 1;
        util_map_set(&nodes, node->name, node);
        json_decref(obj);
    }
    size_t after_nodes = allocated();
    for (int i = 0; i < n * 20; i++)
        ctl_heap_set(&heap, (uint32_t)i, 1796000000 + i % 3600);
    size_t after_heap = allocated();

    /* Backups as the controller creates them, with a final status. */
    struct ctl_backup **bks = util_calloc((size_t)n, sizeof(*bks));
    size_t before_bk = allocated();
    for (int i = 0; i < n; i++) {
        char name[64], host[64];
        snprintf(name, sizeof(name), "etc-and-home-202603290330-%010d", i);
        snprintf(host, sizeof(host), "ip-10-0-%d-%d.eu-central-1.compute.internal", i / 250,
                 i % 250);
        json_t *obj = json_pack(
            "{s:{s:s, s:s, s:s, s:s, s:{s:s, s:s}}, s:{s:s, s:s, s:s, s:s}, "
            "s:{s:s, s:s, s:s, s:s}}",
            "metadata", "name", name, "namespace", "ops", "uid",
            "3f1c2b7a-8e0d-4d5e-9a41-6b2f0c9d1e77", "creationTimestamp", "2026-03-29T01:00:00Z",
            "annotations", "lodestore.io/host", host, "lodestore.io/slot-time",
            "2026-03-29T01:00:00Z", "spec", "policy", "etc-and-home", "host", host, "slot",
            "2026-03-29T03:30", "trigger", "scheduled", "status", "phase", "Succeeded", "startTime",
            "2026-03-29T01:00:05Z", "completionTime", "2026-03-29T01:12:40Z", "jobName", name);
        bks[i] = util_malloc(sizeof(*bks[i]));
        if (ctl_backup_from_json(bks[i], obj, &err) != 0)
            return 1;
        json_decref(obj);
    }
    size_t after_bk = allocated();

    printf("nodes %d: %.0f bytes of Node JSON each, %.0f bytes cached each\n", n,
           (double)json_bytes / n, (double)(after_nodes - before) / n);
    printf("schedule entries %d: %.1f bytes each (heap entry and position)\n", n * 20,
           (double)(after_heap - after_nodes) / (n * 20));
    printf("backups %d: %.0f bytes cached each\n", n, (double)(after_bk - before_bk) / n);
    printf("struct sizes: ctl_node %zu, ctl_heap_entry %zu, ctl_backup %zu, ctl_job %zu\n",
           sizeof(struct ctl_node), sizeof(struct ctl_heap_entry), sizeof(struct ctl_backup),
           sizeof(struct ctl_job));
    return 0;
}
