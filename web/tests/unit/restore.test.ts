import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { includeList, restoreName, restoreObject, restoreYaml } from "../../src/restore";

const BASE = {
  name: "restore-node-a-20261203t0315",
  namespace: "backups",
  repository: "main",
  snapshot: "20261203T031502Z-9f3c2a1b7d4e6058",
  include: ["/etc/hosts", "/etc", "/var/lib/x", "/etc/ssh/sshd_config"],
  target: { node: "node-b", path: "/var/restore/node-a" },
  overwrite: false,
  dryRun: false,
};

describe("the Restore's YAML", () => {
  it("is docs/restoring.md's shape, with only what was chosen", () => {
    expect(restoreYaml(BASE)).toBe(`apiVersion: lodestore.io/v1alpha1
kind: Restore
metadata:
  name: restore-node-a-20261203t0315
  namespace: backups
spec:
  snapshot:
    id: 20261203T031502Z-9f3c2a1b7d4e6058
  repository: main
  include:
    - /etc
    - /var/lib/x
  target:
    node: node-b
    path: /var/restore/node-a
`);
  });
  it("parses back to the object the page sends", () => {
    expect(parse(restoreYaml({ ...BASE, overwrite: true, dryRun: true }))).toEqual(restoreObject({ ...BASE, overwrite: true, dryRun: true }));
    expect(restoreObject({ ...BASE, overwrite: true }).spec).toMatchObject({ overwrite: true });
  });
  it("restores everything when nothing, or /, is chosen", () => {
    expect(restoreObject({ ...BASE, include: [] }).spec).not.toHaveProperty("include");
    expect(restoreObject({ ...BASE, include: ["/", "/etc"] }).spec).not.toHaveProperty("include");
  });
  it("writes a claim instead of a node", () => {
    const spec = restoreObject({ ...BASE, target: { persistentVolumeClaim: "data", path: "/" } }).spec as any;
    expect(spec.target).toEqual({ persistentVolumeClaim: "data", path: "/" });
  });
});

describe("includeList", () => {
  it("keeps each path once, drops paths under another, and keeps siblings that share a prefix", () => {
    expect(includeList(["/etc/ssh", "/etc", "/etc", "/etcd", "/etc/hosts"])).toEqual(["/etc", "/etcd"]);
  });
});

describe("restoreName", () => {
  it("is a Kubernetes name of at most 63 characters", () => {
    expect(restoreName("node-a", "20261203T031502Z-9f3c")).toBe("restore-node-a-20261203t0315");
    const long = restoreName("Node_With.A.Very-Long-Name-".repeat(4), "20261203T031502Z-9f3c");
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).toMatch(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/);
  });
});
