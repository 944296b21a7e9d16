// The YAML of a Restore (docs/restoring.md) for the files chosen in the snapshot
// browser. Pure: no DOM. The Restore's rules are the API server's (the CRD's schema
// and rules); the page writes what the person chose and lets the server-side dry run
// say what is wrong, as it does for a policy.

import { stringify } from "yaml";

export interface RestoreChoice {
  name: string;
  namespace: string;
  repository: string;
  snapshot: string; // an id
  include: string[]; // absolute paths; none: everything
  target: { node?: string; persistentVolumeClaim?: string; path: string };
  overwrite: boolean;
  dryRun: boolean;
}

// A Kubernetes name for a Restore of a snapshot: "restore-node-a-20261203t0315",
// lowercase, at most 63 characters, ending with a letter or digit.
export function restoreName(host: string, id: string): string {
  const stamp = id.slice(0, 13).toLowerCase();
  const base = `restore-${host}`.toLowerCase().replace(/[^a-z0-9-]+/g, "-");
  return `${base.slice(0, 63 - stamp.length - 1)}-${stamp}`.replace(/-+/g, "-").replace(/^-|-$/g, "");
}

// Paths in order, each once, without those inside another chosen path (the Restore
// brings a path back with everything under it).
export function includeList(paths: Iterable<string>): string[] {
  const sorted = [...new Set(paths)].sort();
  const out: string[] = [];
  for (const p of sorted) {
    if (out.some((o) => o === "/" || p === o || p.startsWith(o + "/"))) continue;
    out.push(p);
  }
  return out;
}

// The Restore as an object (what the page sends the API server) and as YAML (what it
// shows): only the fields that say something, in the order of docs/restoring.md.
export function restoreObject(c: RestoreChoice): Record<string, unknown> {
  const spec: Record<string, unknown> = { snapshot: { id: c.snapshot } };
  if (c.repository) spec.repository = c.repository;
  const include = includeList(c.include);
  if (include.length > 0 && !include.includes("/")) spec.include = include;
  const target: Record<string, string> = {};
  if (c.target.persistentVolumeClaim) target.persistentVolumeClaim = c.target.persistentVolumeClaim;
  else if (c.target.node) target.node = c.target.node;
  if (c.target.path) target.path = c.target.path;
  spec.target = target;
  if (c.overwrite) spec.overwrite = true;
  if (c.dryRun) spec.dryRun = true;
  const metadata: Record<string, string> = { name: c.name };
  if (c.namespace) metadata.namespace = c.namespace;
  return { apiVersion: "lodestore.io/v1alpha1", kind: "Restore", metadata, spec };
}

export function restoreYaml(c: RestoreChoice): string {
  return stringify(restoreObject(c), { lineWidth: 0 });
}
