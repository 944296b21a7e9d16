// Every field of a BackupPolicy the form edits, in the order of docs/policy.md:
// its YAML path (which is also the label a person and a test find it by), its
// kind, the default shown as a placeholder and the allowed range as a hint.

export type FieldKind = "string" | "int" | "list" | "map" | "enum" | "bool" | "records";

export interface Field {
  path: string; // "spec.schedule.cron"
  kind: FieldKind;
  group: string;
  placeholder?: string;
  hint: string;
  options?: string[]; // enum and bool ("" is absent)
  absent?: string; // what the "" option of an enum says
  inputmode?: "numeric" | "text";
  // A list of maps ("records": spec.hooks.before, spec.pod.tolerations): each item
  // is a row of these fields, whose paths are relative to the item ("timeout").
  items?: Field[];
  noun?: string; // "hook": the add and remove buttons' text
}

const HOOK: Field[] = [
  { path: "name", kind: "string", group: "", placeholder: "before[0], after[1], ...", hint: "an RFC 1123 label, shown in logs and the status" },
  { path: "command", kind: "list", group: "", placeholder: "/bin/sh\n-c\npg_dump -U app app > /var/backups/app.sql", hint: "required; the program, then one argument per line (no shell unless you name one)" },
  { path: "timeout", kind: "string", group: "", placeholder: "5m", hint: "1s to 24h; default 5m" },
  { path: "onError", kind: "enum", group: "", options: ["", "fail", "continue"], absent: "(default: fail)", hint: "fail stops the run; continue logs and goes on" },
];

const TOLERATION: Field[] = [
  { path: "key", kind: "string", group: "", placeholder: "any key (with Exists)", hint: "a label key, e.g. node-role.kubernetes.io/control-plane" },
  { path: "operator", kind: "enum", group: "", options: ["", "Exists", "Equal"], absent: "(default: Equal)", hint: "Exists: any value" },
  { path: "value", kind: "string", group: "", placeholder: "none", hint: "a label value; not with Exists" },
  { path: "effect", kind: "enum", group: "", options: ["", "NoSchedule", "PreferNoSchedule", "NoExecute"], absent: "(every effect)", hint: "absent: every effect" },
  { path: "tolerationSeconds", kind: "int", group: "", placeholder: "forever", hint: "0 to 2147483647, only with NoExecute", inputmode: "numeric" },
];

export const FIELDS: Field[] = [
  { path: "metadata.name", kind: "string", group: "Policy", hint: "required; a Kubernetes name" },
  { path: "metadata.namespace", kind: "string", group: "Policy", placeholder: "default", hint: "absent: the namespace lode ui works in" },
  { path: "spec.repository", kind: "string", group: "Policy", hint: "required; a BackupRepository in the same namespace" },
  { path: "spec.paths", kind: "list", group: "Policy", placeholder: "/etc\n/home", hint: "required; one absolute path per line" },
  { path: "spec.suspend", kind: "bool", group: "Policy", options: ["", "true", "false"], hint: "true: no scheduled backup starts (the alert limit stays); resuming runs one catch-up within the window" },
  { path: "spec.nodeSelector", kind: "map", group: "Policy", placeholder: "all nodes", hint: "optional; one label=value per line" },
  { path: "spec.exclude.patterns", kind: "list", group: "Exclude", placeholder: "*.tmp\n/var/cache/**", hint: "optional; one glob per line: / first anchors it at the root, ** is any number of directories" },
  { path: "spec.exclude.caches", kind: "bool", group: "Exclude", options: ["", "true", "false"], hint: "true: leave out what directories holding a CACHEDIR.TAG contain" },
  { path: "spec.exclude.largerThan", kind: "string", group: "Exclude", placeholder: "no limit", hint: "leave out files larger than this, e.g. 4GiB" },
  { path: "spec.hooks.before", kind: "records", group: "Hooks", items: HOOK, noun: "before-hook", hint: "at most 8, run in order before the backup; only in namespaces the operator allows" },
  { path: "spec.hooks.after", kind: "records", group: "Hooks", items: HOOK, noun: "after-hook", hint: "at most 8, run in order after the backup, whether it succeeded or not" },
  { path: "spec.pod.priorityClassName", kind: "string", group: "Pod", placeholder: "none", hint: "a PriorityClass for the backup Job's pod" },
  { path: "spec.pod.imagePullSecrets", kind: "list", group: "Pod", placeholder: "none", hint: "one Secret name per line, in the policy's namespace" },
  { path: "spec.pod.tolerations", kind: "records", group: "Pod", items: TOLERATION, noun: "toleration", hint: "at most 16; absent: the Job tolerates every taint" },
  { path: "spec.pod.resources.requests.cpu", kind: "string", group: "Pod", placeholder: "chart default", hint: "a quantity such as 100m" },
  { path: "spec.pod.resources.requests.memory", kind: "string", group: "Pod", placeholder: "chart default", hint: "a quantity such as 128Mi" },
  { path: "spec.pod.resources.limits.cpu", kind: "string", group: "Pod", placeholder: "chart default", hint: "a quantity such as 1" },
  { path: "spec.pod.resources.limits.memory", kind: "string", group: "Pod", placeholder: "chart default", hint: "a quantity such as 1Gi; under 256Mi risks an OOM kill on a large tree" },
  { path: "spec.schedule.cron", kind: "string", group: "Schedule", placeholder: "30 2 * * *", hint: "required in schedule; five fields, or @hourly, @daily, @weekly, @monthly" },
  { path: "spec.schedule.timezone", kind: "string", group: "Schedule", placeholder: "UTC", hint: "an IANA zone such as Europe/Kyiv; default UTC" },
  { path: "spec.schedule.jitter", kind: "string", group: "Schedule", placeholder: "15m", hint: "0s to 24h; default 15m" },
  { path: "spec.schedule.catchUpWindow", kind: "string", group: "Schedule", placeholder: "24h", hint: "1m to 30d; default 24h" },
  { path: "spec.retention.keepLast", kind: "int", group: "Retention", placeholder: "none", hint: "1 to 2147483647", inputmode: "numeric" },
  { path: "spec.retention.keepWithin", kind: "string", group: "Retention", placeholder: "none", hint: "a duration of at least 1m" },
  { path: "spec.retention.keepDaily", kind: "int", group: "Retention", placeholder: "none", hint: "1 to 2147483647", inputmode: "numeric" },
  { path: "spec.retention.keepWeekly", kind: "int", group: "Retention", placeholder: "none", hint: "1 to 2147483647", inputmode: "numeric" },
  { path: "spec.retention.keepMonthly", kind: "int", group: "Retention", placeholder: "none", hint: "1 to 2147483647", inputmode: "numeric" },
  { path: "spec.limits.uploadRate", kind: "string", group: "Limits", placeholder: "unlimited", hint: "at least 1KiB/s, e.g. 50MiB/s; default unlimited" },
  { path: "spec.limits.nice", kind: "int", group: "Limits", placeholder: "host default", hint: "0 to 19; higher is gentler", inputmode: "numeric" },
  { path: "spec.limits.ioniceClass", kind: "enum", group: "Limits", options: ["", "best-effort", "idle"], hint: "system default when absent" },
  { path: "spec.limits.ioniceLevel", kind: "int", group: "Limits", placeholder: "none", hint: "0 to 7, only with best-effort", inputmode: "numeric" },
  { path: "spec.limits.maxRuntime", kind: "string", group: "Limits", placeholder: "12h", hint: "1h to 7d; default 12h" },
  { path: "spec.alerts.maxAge", kind: "string", group: "Alerts", placeholder: "derived from the schedule", hint: "1h to 365d; default: twice the longest gap between slots, plus the jitter" },
];

// The field of a path, indexed items included: "spec.hooks.before[0].timeout" is
// the before-hooks' "timeout", returned with that whole path.
export function fieldAt(path: string): Field | undefined {
  const top = FIELDS.find((f) => f.path === path);
  if (top) return top;
  const m = /^(.*)\[(\d+)\]\.([A-Za-z]+)$/.exec(path);
  if (!m) return undefined;
  const sub = FIELDS.find((f) => f.path === m[1] && f.kind === "records")?.items?.find((i) => i.path === m[3]);
  return sub ? { ...sub, path } : undefined;
}

// The form field an error belongs to: "spec.paths[2]" -> "spec.paths",
// "spec.hooks.before[1].command[0]" -> "spec.hooks.before[1].command" (the input
// of that item), "spec.hooks.before" -> the list itself.
export function fieldForPath(path: string): Field | undefined {
  let best: Field | undefined;
  for (const f of FIELDS) {
    if (path === f.path || path.startsWith(f.path + "[") || path.startsWith(f.path + ".")) {
      if (!best || f.path.length > best.path.length) best = f;
    }
  }
  if (best?.kind === "records") {
    const m = /^\[(\d+)\]\.([A-Za-z]+)/.exec(path.slice(best.path.length));
    const sub = m && best.items?.find((i) => i.path === m[2]);
    if (m && sub) return { ...sub, path: `${best.path}[${m[1]}].${m[2]}` };
  }
  return best;
}
