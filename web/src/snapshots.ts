// The snapshot browser (docs/ui.md, "Snapshots"): the repository's snapshots, a
// tree of one snapshot (one directory per request, as `lode ls`), its difference
// from its parent (`lode diff`; for a suspicious snapshot, the files the anomaly
// rules counted first), and the YAML of a Restore for the chosen files, applied with
// a server-side dry run first as a policy is.

import { parse } from "yaml";
import { ApiError, el, get, post } from "./api";
import { restoreName, restoreObject, restoreYaml, type RestoreChoice } from "./restore";

interface Snap {
  id: string;
  namespace: string;
  policy: string;
  host: string;
  time: string;
  incomplete: boolean;
  suspicious: boolean;
  pinned: boolean;
}

interface Entry {
  path: string;
  name: string;
  type: string;
  mode: string;
  size: number;
  mtime: string | null; // null: a directory above a path, which the backup did not record
  target?: string | null;
  change?: string;
  counted?: boolean;
  what?: string[];
  oldSize?: number;
}

function fmtSize(n: number): string {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${u[i]}`;
}

function field(id: string, label: string, input: HTMLInputElement | HTMLSelectElement, hint: string): HTMLElement {
  input.id = id;
  input.setAttribute("aria-describedby", id + "-hint");
  return el("div", { class: "field" }, el("label", { for: id }, el("code", {}, label)), input, el("span", { id: id + "-hint", class: "hint" }, hint));
}

export function mountSnapshots(root: HTMLElement) {
  const status = el("p", { id: "snap-status", role: "status" });
  const list = el("div", { id: "snap-list" });
  const opened = el("section", { id: "snap-open", "aria-labelledby": "snap-title", hidden: "" });
  root.append(el("h2", {}, "Snapshots"), status, list, opened);

  let snaps: Snap[] = [];
  let current: Snap | null = null;
  let parent: string | null = null;
  // The files chosen for a Restore, and the snapshot they are chosen from.
  const chosen = new Set<string>();
  let chosenFrom = "";
  let loaded = false;
  let keyed = false;

  // ---- the list ----
  async function load() {
    status.textContent = "Reading the repository's catalog…";
    let r: any;
    try {
      // Without a repository, how to give one rather than a request that can only fail.
      const info = await get("/api/info");
      if (info.repository === null) {
        status.replaceChildren(
          "lode ui was started without a repository. Start it again with ",
          el("code", {}, "lode ui --repo REPO --key-file FILE"),
          " (or LODE_REPOSITORY and LODE_KEY_FILE, with the S3 credentials in the environment) to browse its snapshots.",
        );
        return;
      }
      keyed = info.repositoryKey;
      r = await post("/api/browse/snapshots", {});
    } catch (e) {
      status.replaceChildren(el("span", { class: "bad" }, (e as ApiError).message));
      return;
    }
    snaps = r.snapshots;
    loaded = true;
    status.textContent = `${snaps.length} snapshot${snaps.length === 1 ? "" : "s"} in ${r.repository}${r.truncated ? " (the newest 3,000)" : ""}, newest first.`;
    const table = el("table", { class: "snapshots-list" }, el("caption", {}, "Snapshots of the repository"));
    table.append(el("thead", {}, el("tr", {}, ...["Snapshot", "Time", "Policy", "Host", "Marks"].map((h) => el("th", { scope: "col" }, h)))));
    const body = el("tbody");
    for (const s of snaps.slice(0, 500)) {
      const open = el("button", { type: "button", class: "linkish" }, s.id);
      open.addEventListener("click", () => openSnapshot(s));
      const marks = [s.suspicious ? "suspicious" : "", s.incomplete ? "incomplete" : "", s.pinned ? "pinned" : ""].filter(Boolean).join(", ");
      body.append(
        el(
          "tr",
          { class: s.suspicious ? "suspicious" : "" },
          el("td", {}, open),
          el("td", {}, s.time),
          el("td", {}, `${s.namespace}/${s.policy}`),
          el("td", {}, s.host),
          el("td", { class: s.suspicious ? "suspicious" : "" }, marks),
        ),
      );
    }
    table.append(body);
    list.replaceChildren(table);
    if (snaps.length > 500) list.append(el("p", { class: "hint" }, `The newest 500 of ${snaps.length} are listed.`));
  }

  // ---- one snapshot ----
  const title = el("h3", { id: "snap-title", tabindex: "-1" });
  const facts = el("p", { id: "snap-facts" });
  const tree = el("ul", { id: "snap-tree", class: "tree", "aria-label": "Files of the snapshot" });
  const diffOut = el("div", { id: "snap-diff" });
  const restoreOut = el("div", { id: "snap-restore" });
  opened.append(
    title,
    facts,
    el("div", { class: "snap-grid" }, el("div", {}, el("h4", {}, "Files"), el("p", { class: "hint" }, "Open a directory to list it; tick what to restore."), tree), el("div", {}, el("h4", {}, "Changes since the parent"), diffOut)),
    el("h4", {}, "Restore"),
    restoreOut,
  );

  function choose(path: string, from: string, on: boolean) {
    if (from !== chosenFrom) {
      chosen.clear();
      chosenFrom = from;
      for (const c of opened.querySelectorAll<HTMLInputElement>("input.pick")) if (c.dataset.from !== from) c.checked = false;
    }
    if (on) chosen.add(path);
    else chosen.delete(path);
    renderChosen();
  }

  function pickBox(path: string, from: string, label: string): HTMLInputElement {
    const box = el("input", { type: "checkbox", class: "pick", "aria-label": label });
    box.dataset.path = path;
    box.dataset.from = from;
    box.checked = chosenFrom === from && chosen.has(path);
    box.addEventListener("change", () => choose(path, from, box.checked));
    return box;
  }

  function entryItem(s: Snap, e: Entry): HTMLLIElement {
    const li = el("li", { class: `entry type-${e.type}` });
    const meta = el("span", { class: "meta" }, `${e.mode} ${e.type === "file" ? fmtSize(e.size) : e.type} ${e.mtime ?? "-"}${e.target ? ` → ${e.target}` : ""}`);
    const box = pickBox(e.path, s.id, `Restore ${e.path}`);
    if (e.type === "dir") {
      const btn = el("button", { type: "button", class: "dir", "aria-expanded": "false" }, e.name + "/");
      btn.dataset.path = e.path;
      const kids = el("ul", { class: "tree", hidden: "" });
      btn.addEventListener("click", async () => {
        const open = btn.getAttribute("aria-expanded") === "true";
        if (open) {
          btn.setAttribute("aria-expanded", "false");
          kids.hidden = true;
          return;
        }
        btn.setAttribute("aria-expanded", "true");
        kids.hidden = false;
        if (kids.dataset.loaded) return;
        kids.replaceChildren(el("li", { class: "hint" }, "Reading…"));
        await listInto(s, e.path, kids);
        kids.dataset.loaded = "1";
      });
      li.append(box, btn, " ", meta, kids);
    } else {
      li.append(box, el("span", { class: "name" }, e.name), " ", meta);
    }
    return li;
  }

  async function listInto(s: Snap, path: string, into: HTMLElement) {
    try {
      const r = await post("/api/browse/ls", { snapshot: s.id, path });
      const items: HTMLElement[] = (r.entries as Entry[]).map((e) => entryItem(s, e));
      if (items.length === 0) items.push(el("li", { class: "hint" }, "(empty)"));
      if (r.truncated) items.push(el("li", { class: "hint" }, `The first ${r.entries.length} of ${r.count} entries are listed.`));
      into.replaceChildren(...items);
    } catch (e) {
      into.replaceChildren(el("li", { class: "bad" }, (e as ApiError).message));
    }
  }

  async function openSnapshot(s: Snap) {
    current = s;
    parent = null;
    opened.hidden = false;
    title.textContent = `Snapshot ${s.id}`;
    facts.textContent = `${s.namespace}/${s.policy} on ${s.host}, ${s.time}${s.suspicious ? " — suspicious" : ""}`;
    chosen.clear();
    chosenFrom = s.id;
    renderRestore();
    if (!keyed) {
      const why = "Looking inside a snapshot needs the repository key: start lode ui with --key-file FILE (or LODE_KEY_FILE).";
      tree.replaceChildren(el("li", { class: "bad" }, why));
      diffOut.replaceChildren(el("p", { class: "bad" }, why));
      title.focus();
      return;
    }
    tree.replaceChildren(el("li", { class: "hint" }, "Reading…"));
    diffOut.replaceChildren(el("p", { class: "hint" }, "Reading…"));
    await listInto(s, "/", tree);
    await showDiff(s);
    title.focus();
  }

  async function showDiff(s: Snap) {
    let r: any;
    try {
      r = await post("/api/browse/diff", { snapshot: s.id });
    } catch (e) {
      diffOut.replaceChildren(el("p", { class: "bad" }, (e as ApiError).message));
      return;
    }
    if (current?.id !== s.id) return;
    facts.textContent = `${s.namespace}/${s.policy} on ${s.host}, ${s.time}: ${r.snapshot.files} files, ${fmtSize(r.snapshot.bytes)}${s.suspicious ? " — suspicious" : ""}`;
    if (r.against === null) {
      diffOut.replaceChildren(el("p", {}, "This snapshot has no parent: it is its host's first, so there is nothing to compare it with."));
      return;
    }
    parent = r.against.id;
    const c = r.counts;
    const out: HTMLElement[] = [el("p", { id: "diff-summary" }, `Against its parent ${r.against.id}: ${c.added} added, ${c.removed} removed, ${c.changed} changed${r.truncated ? " (the first 5,000 are listed)" : ""}.`)];
    const all = r.changes as Entry[];
    const counted = all.filter((e) => e.counted);
    if (s.suspicious) {
      const ac = r.againstCounters;
      out.push(
        el(
          "div",
          { class: "suspicious-box", id: "diff-counted-note" },
          el("strong", {}, "Suspicious: "),
          `the anomaly rules counted ${c.counted} files of the parent's ${ac.files}: changed or deleted (${r.counters.changedFiles} changed and ${r.counters.deletedFiles} deleted by the manifest's counters). Those are listed first; the Backup's Suspicious condition names the rules that fired. To put them back as they were, restore them from the parent.`,
        ),
      );
      const fromParent = el("button", { type: "button", id: "diff-restore-parent" }, `Choose these ${counted.length} files from the parent`);
      fromParent.addEventListener("click", () => {
        chosen.clear();
        chosenFrom = parent!;
        for (const e of counted) chosen.add(e.path);
        for (const b of opened.querySelectorAll<HTMLInputElement>("input.pick")) b.checked = b.dataset.from === chosenFrom && chosen.has(b.dataset.path!);
        renderChosen();
      });
      out.push(fromParent);
    }
    const ordered = s.suspicious ? [...counted, ...all.filter((e) => !e.counted)] : all;
    const table = el("table", { class: "diff", id: "diff-table" }, el("caption", {}, s.suspicious ? "Changes, what the rules counted first" : "Changes"));
    table.append(el("thead", {}, el("tr", {}, ...["Restore", "Change", "Path", "What", "Size"].map((h) => el("th", { scope: "col" }, h)))));
    const body = el("tbody");
    for (const e of ordered) {
      // A removed file is in the parent only: it is chosen from there.
      const from = e.change === "removed" ? (parent ?? s.id) : s.id;
      const size = e.change === "changed" && e.oldSize !== undefined && e.oldSize !== e.size ? `${fmtSize(e.oldSize)} → ${fmtSize(e.size)}` : fmtSize(e.size);
      body.append(
        el(
          "tr",
          { class: `change-${e.change}${e.counted ? " counted" : ""}` },
          el("td", {}, pickBox(e.path, from, `Restore ${e.path} from ${from === s.id ? "this snapshot" : "the parent"}`)),
          el("td", {}, e.change!),
          el("td", {}, el("code", {}, e.path)),
          el("td", {}, (e.what ?? []).join(", ")),
          el("td", {}, size),
        ),
      );
    }
    table.append(body);
    out.push(all.length ? table : el("p", {}, "Nothing changed."));
    diffOut.replaceChildren(...out);
  }

  // ---- the Restore ----
  const chosenList = el("ul", { id: "restore-chosen" });
  const name = el("input", { type: "text", autocomplete: "off", spellcheck: "false" });
  const ns = el("input", { type: "text", autocomplete: "off", spellcheck: "false" });
  const repo = el("input", { type: "text", autocomplete: "off", spellcheck: "false", placeholder: "main" });
  const kind = el("select");
  kind.append(el("option", { value: "node" }, "a directory of a node"), el("option", { value: "pvc" }, "a PersistentVolumeClaim"));
  const node = el("input", { type: "text", autocomplete: "off", spellcheck: "false" });
  const pvc = el("input", { type: "text", autocomplete: "off", spellcheck: "false" });
  const tpath = el("input", { type: "text", autocomplete: "off", spellcheck: "false" });
  const overwrite = el("input", { type: "checkbox" });
  const dry = el("input", { type: "checkbox" });
  const write = el("button", { type: "button", id: "restore-write" }, "Write the Restore's YAML");
  const yamlBox = el("textarea", { id: "restore-yaml", rows: "14", spellcheck: "false" });
  const preview = el("button", { type: "button", id: "restore-dry-run" }, "Preview apply (server-side dry run)");
  const apply = el("button", { type: "button", id: "restore-apply", disabled: "" }, "Apply to the cluster");
  const result = el("div", { id: "restore-result", role: "status", "aria-live": "polite" });
  const nodeRow = field("restore-node", "spec.target.node", node, "the node to restore onto; it may be another than the one backed up");
  const pvcRow = field("restore-pvc", "spec.target.persistentVolumeClaim", pvc, "a claim in the Restore's namespace");
  pvcRow.hidden = true;
  restoreOut.append(
    el("p", { id: "restore-from" }),
    chosenList,
    el(
      "form",
      { class: "policy-form restore-form", "aria-label": "Restore" },
      field("restore-name", "metadata.name", name, "a new name: a Restore's spec cannot change"),
      field("restore-ns", "metadata.namespace", ns, "the namespace of the BackupRepository (the snapshot's policy's)"),
      field("restore-repo", "spec.repository", repo, "the BackupRepository that holds the snapshot"),
      field("restore-kind", "spec.target", kind, "where the files go"),
      nodeRow,
      pvcRow,
      field("restore-path", "spec.target.path", tpath, "a directory, made when missing; a target that holds files is refused unless overwrite"),
      el("div", { class: "check" }, overwrite, el("label", { for: "restore-overwrite" }, el("code", {}, "spec.overwrite"), ": replace what is in the way")),
      el("div", { class: "check" }, dry, el("label", { for: "restore-dryrun" }, el("code", {}, "spec.dryRun"), ": list what would be written, write nothing")),
    ),
    write,
    el("label", { for: "restore-yaml", class: "block" }, "Restore YAML"),
    yamlBox,
    el("div", { class: "apply" }, preview, apply, result),
  );
  overwrite.id = "restore-overwrite";
  dry.id = "restore-dryrun";
  kind.addEventListener("change", () => {
    nodeRow.hidden = kind.value !== "node";
    pvcRow.hidden = kind.value !== "pvc";
  });
  const form = restoreOut.querySelector("form")!;
  form.addEventListener("submit", (e) => e.preventDefault());

  function renderChosen() {
    const from = chosenFrom === current?.id ? "this snapshot" : `the parent ${chosenFrom}`;
    document.getElementById("restore-from")!.textContent = chosen.size
      ? `${chosen.size} path${chosen.size === 1 ? "" : "s"} chosen from ${from}:`
      : `Nothing chosen: the Restore brings back the whole snapshot ${chosenFrom}. Tick files or directories above to restore only those.`;
    chosenList.replaceChildren(...[...chosen].sort().map((p) => el("li", {}, el("code", {}, p))));
  }

  function renderRestore() {
    if (!current) return;
    name.value = restoreName(current.host, current.id);
    ns.value = current.namespace;
    node.value = current.host;
    tpath.value = `/var/restore/${current.host}`;
    yamlBox.value = "";
    result.replaceChildren();
    renderChosen();
  }

  function choice(): RestoreChoice {
    return {
      name: name.value.trim(),
      namespace: ns.value.trim(),
      repository: repo.value.trim(),
      snapshot: chosenFrom,
      include: [...chosen],
      target: kind.value === "pvc" ? { persistentVolumeClaim: pvc.value.trim(), path: tpath.value.trim() } : { node: node.value.trim(), path: tpath.value.trim() },
      overwrite: overwrite.checked,
      dryRun: dry.checked,
    };
  }

  let dryRunText = "";
  write.addEventListener("click", () => {
    yamlBox.value = restoreYaml(choice());
    yamlBox.dispatchEvent(new Event("input"));
  });
  yamlBox.addEventListener("input", () => {
    if (yamlBox.value !== dryRunText) apply.disabled = true;
  });

  async function applyCall(dryRun: boolean) {
    const text = yamlBox.value;
    let object: unknown;
    try {
      object = text.trim() === "" ? restoreObject(choice()) : parse(text);
    } catch (e) {
      result.replaceChildren(el("p", { class: "bad" }, `The Restore's YAML does not parse: ${(e as Error).message}`));
      return;
    }
    result.replaceChildren(dryRun ? "Asking the API server for a dry run…" : "Applying…");
    try {
      // Without a cluster, why, rather than a request that can only fail.
      const info = await get("/api/info");
      if (!info.cluster.connected) {
        result.replaceChildren(el("p", { class: "bad" }, `no cluster: ${info.cluster.error} (the Fleet view says what to do)`));
        return;
      }
      const r = await post("/api/restore", { object, dryRun });
      const verb = dryRun ? `Dry run: the Restore would be ${r.action}` : `Applied: the Restore was ${r.action}`;
      result.replaceChildren(el("p", {}, `${verb} in namespace ${r.namespace}.${dryRun ? "" : " The controller runs it now: kubectl get restores -n " + r.namespace}`));
      if (dryRun) {
        dryRunText = text;
        apply.disabled = false;
      } else {
        apply.disabled = true;
      }
    } catch (e) {
      const err = e as ApiError;
      const lines = [err.message];
      if (err.body?.causes) for (const c of err.body.causes) lines.push(`${c.field}: ${c.message}`);
      result.replaceChildren(el("p", { class: "bad" }, lines.join("\n")));
    }
  }
  preview.addEventListener("click", () => {
    if (yamlBox.value.trim() === "") write.click();
    applyCall(true);
  });
  apply.addEventListener("click", () => applyCall(false));

  return {
    refresh() {
      if (!loaded) load();
    },
  };
}
