import { describe, expect, it } from "vitest";
import { addItem, offsetOf, readFields, removeItem, scalarSource, writeField } from "../../src/sync";
import { FIELDS, fieldAt, fieldForPath } from "../../src/fields";

const PAGE = `apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata:
  name: etc-and-home
spec:
  repository: main
  paths:
  - /etc
  - /home
  schedule:
    cron: 30 2 * * * # nightly
    timezone: Europe/Kyiv
    jitter: 15m
    catchUpWindow: 24h
  retention:
    keepLast: 3
    keepDaily: 7
  # limits come later
  alerts:
    maxAge: 36h
`;

describe("readFields", () => {
  it("reads every field of the page's example", () => {
    const r = readFields(PAGE);
    expect(r.error).toBeUndefined();
    expect(r.values["spec.schedule.cron"]).toBe("30 2 * * *");
    expect(r.values["spec.paths"]).toBe("/etc\n/home");
    expect(r.values["spec.retention.keepLast"]).toBe("3");
    expect(r.values["spec.limits.nice"]).toBe("");
    expect(Object.keys(r.values)).toHaveLength(FIELDS.length);
  });
  it("reads a node selector as label=value lines", () => {
    const r = readFields(PAGE.replace("  paths:", "  nodeSelector:\n    role: db\n    zone: a\n  paths:"));
    expect(r.values["spec.nodeSelector"]).toBe("role=db\nzone=a");
  });
  it("reports a YAML that does not parse and reads nothing", () => {
    const r = readFields("spec:\n  paths: [\n");
    expect(r.error).toBeTruthy();
    expect(r.values).toEqual({});
  });
});

describe("writeField", () => {
  it("replaces a scalar in place: comments, order and the rest untouched", () => {
    const r = writeField(PAGE, "spec.schedule.cron", "0 4 * * 1");
    expect(r.error).toBeUndefined();
    expect(r.text).toBe(PAGE.replace("cron: 30 2 * * * # nightly", "cron: 0 4 * * 1 # nightly"));
  });
  it("quotes a cron that starts with * or @", () => {
    expect(writeField(PAGE, "spec.schedule.cron", "*/15 * * * *").text).toContain('cron: "*/15 * * * *" # nightly');
    expect(writeField(PAGE, "spec.schedule.cron", "@hourly").text).toContain('cron: "@hourly"');
  });
  it("writes integers plain and other text in an integer field as a string", () => {
    expect(writeField(PAGE, "spec.retention.keepLast", "5").text).toContain("keepLast: 5\n");
    expect(writeField(PAGE, "spec.retention.keepLast", "five").text).toContain("keepLast: five\n");
    expect(writeField(PAGE, "spec.retention.keepLast", "7: x").text).toContain('keepLast: "7: x"\n');
  });
  it("adds a new field in its block, keeping comments and sequence style", () => {
    const r = writeField(PAGE, "spec.limits.nice", "10");
    expect(r.text).toContain("  limits:\n    nice: 10\n");
    expect(r.text).toContain("# limits come later");
    expect(r.text).toContain("# nightly");
    expect(r.text).toContain("  paths:\n  - /etc\n  - /home\n");
  });
  it("removes an emptied field and the block it leaves empty", () => {
    const r = writeField(PAGE, "spec.alerts.maxAge", "");
    expect(r.text).not.toContain("maxAge");
    expect(r.text).not.toContain("alerts:");
    expect(r.text).toContain("keepDaily: 7");
  });
  it("writes lists and maps from lines", () => {
    const r = writeField(PAGE, "spec.paths", "/etc\n/var/lib\n");
    expect(r.text).toContain("  paths:\n  - /etc\n  - /var/lib\n");
    const m = writeField(PAGE, "spec.nodeSelector", "role=db");
    expect(readFields(m.text).values["spec.nodeSelector"]).toBe("role=db");
  });
  it("round-trips: what is written reads back", () => {
    for (const [path, v] of [
      ["spec.schedule.timezone", "America/New_York"],
      ["spec.limits.uploadRate", "50MiB/s"],
      ["spec.limits.ioniceClass", "best-effort"],
      ["metadata.namespace", "ops"],
      ["spec.repository", "NO"],
    ]) {
      expect(readFields(writeField(PAGE, path, v).text).values[path]).toBe(v);
    }
  });
  it("refuses to rewrite a document that does not parse", () => {
    const bad = PAGE + "  oops: [\n";
    const r = writeField(bad, "spec.schedule.cron", "@daily");
    expect(r.text).toBe(bad);
    expect(r.error).toMatch(/does not parse/);
  });
});

describe("helpers", () => {
  it("maps error paths to form fields", () => {
    expect(fieldForPath("spec.paths[1]")?.path).toBe("spec.paths");
    expect(fieldForPath("spec.schedule.cron")?.path).toBe("spec.schedule.cron");
    expect(fieldForPath("spec.retension")).toBeUndefined();
  });
  it("turns line:col into an offset, counting characters", () => {
    const t = "a: 1\nbé: 2\n";
    expect(offsetOf(t, 2, 1)).toBe(5);
    expect(offsetOf(t, 2, 3)).toBe(7);
    expect(offsetOf(t, 9, 1)).toBe(t.length);
  });
  it("quotes only where YAML needs it", () => {
    const f = FIELDS.find((x) => x.path === "spec.schedule.cron")!;
    expect(scalarSource(f, "30 2 * * *")).toBe("30 2 * * *");
    expect(scalarSource(f, "#x")).not.toBe("#x");
  });
});

describe("spec.suspend", () => {
  it("writes a plain boolean, never a quoted string, and reads it back", () => {
    const w = writeField(PAGE, "spec.suspend", "true");
    expect(w.error).toBeUndefined();
    expect(w.text).toMatch(/\n {2}suspend: true\n/);
    expect(readFields(w.text).values["spec.suspend"]).toBe("true");
    const back = writeField(w.text, "spec.suspend", "false");
    expect(back.text).toMatch(/\n {2}suspend: false\n/);
    expect(scalarSource(FIELDS.find((f) => f.path === "spec.suspend")!, "true")).toBe("true");
    const gone = writeField(back.text, "spec.suspend", "");
    expect(gone.text).not.toContain("suspend");
  });
});

describe("spec.exclude", () => {
  it("writes patterns as a list, caches as a boolean, and reads them back", () => {
    let t = writeField(PAGE, "spec.exclude.patterns", "*.tmp\n/var/cache/**").text;
    t = writeField(t, "spec.exclude.caches", "true").text;
    t = writeField(t, "spec.exclude.largerThan", "4GiB").text;
    const v = readFields(t).values;
    expect(v["spec.exclude.patterns"]).toBe("*.tmp\n/var/cache/**");
    expect(v["spec.exclude.caches"]).toBe("true");
    expect(v["spec.exclude.largerThan"]).toBe("4GiB");
    expect(t).toMatch(/\n {4}caches: true\n/);
    expect(fieldForPath("spec.exclude.patterns[1]")?.path).toBe("spec.exclude.patterns");
  });
});

describe("lists of maps (hooks, tolerations)", () => {
  it("reads the number of items and each item's fields", () => {
    const r = readFields(PAGE + "  hooks:\n    before:\n    - name: dump\n      command: [/bin/sh, -c, pg_dump]\n      timeout: 10m\n    - command: [sync]\n");
    expect(r.values["spec.hooks.before"]).toBe("2");
    expect(r.values["spec.hooks.after"]).toBe("0");
    expect(r.values["spec.hooks.before[0].name"]).toBe("dump");
    expect(r.values["spec.hooks.before[0].command"]).toBe("/bin/sh\n-c\npg_dump");
    expect(r.values["spec.hooks.before[1].timeout"]).toBe("");
    expect(r.values["spec.pod.tolerations"]).toBe("0");
  });
  it("adds an item, then its fields, into a block map", () => {
    let t = addItem(PAGE, "spec.hooks.before").text;
    expect(t).toContain("  hooks:\n    before:\n    - {}\n");
    t = writeField(t, "spec.hooks.before[0].command", "/bin/sh\n-c\npg_dump > /var/backups/a.sql").text;
    t = writeField(t, "spec.hooks.before[0].onError", "continue").text;
    expect(t).toContain("    before:\n    - command:\n      - /bin/sh\n      - -c\n      - pg_dump > /var/backups/a.sql\n      onError: continue\n");
    expect(t).toContain("cron: 30 2 * * * # nightly");
    t = writeField(t, "spec.hooks.before[0].timeout", "10m").text;
    t = writeField(t, "spec.hooks.before[0].timeout", "20m").text;
    expect(t).toContain("      timeout: 20m\n");
  });
  it("writes a toleration's seconds as an integer", () => {
    let t = addItem(PAGE, "spec.pod.tolerations").text;
    t = writeField(t, "spec.pod.tolerations[0].effect", "NoExecute").text;
    t = writeField(t, "spec.pod.tolerations[0].tolerationSeconds", "30").text;
    expect(t).toContain("  pod:\n    tolerations:\n    - effect: NoExecute\n      tolerationSeconds: 30\n");
  });
  it("keeps an item whose last field is emptied, and removes the list with its last item", () => {
    let t = addItem(PAGE, "spec.hooks.after").text;
    t = writeField(t, "spec.hooks.after[0].name", "notify").text;
    t = writeField(t, "spec.hooks.after[0].name", "").text;
    expect(t).toContain("  hooks:\n    after:\n    - {}\n");
    t = removeItem(t, "spec.hooks.after", 0).text;
    expect(t).toBe(PAGE);
  });
  it("removes the item asked for", () => {
    const t = PAGE + "  hooks:\n    after:\n    - name: a\n    - name: b\n";
    expect(removeItem(t, "spec.hooks.after", 0).text).toBe(PAGE + "  hooks:\n    after:\n    - name: b\n");
  });
  it("refuses an item's field when the item is not a map", () => {
    const r = writeField(PAGE + "  hooks:\n    before:\n    - oops\n", "spec.hooks.before[0].name", "x");
    expect(r.error).toContain("spec.hooks.before[0] is not a map");
  });
  it("maps an item's error to its input, and a list's to the list", () => {
    expect(fieldForPath("spec.hooks.before[1].command[0]")?.path).toBe("spec.hooks.before[1].command");
    expect(fieldForPath("spec.pod.tolerations[0].operator")?.path).toBe("spec.pod.tolerations[0].operator");
    expect(fieldForPath("spec.hooks.before")?.path).toBe("spec.hooks.before");
    expect(fieldForPath("spec.hooks.before[9]")?.path).toBe("spec.hooks.before");
    expect(fieldAt("spec.hooks.after[3].onError")?.kind).toBe("enum");
    expect(fieldAt("spec.hooks.after[3].nope")).toBeUndefined();
  });
});
