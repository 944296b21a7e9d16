// The retention view: a timeline of snapshots (a simulated history from the
// schedule, the repository's real snapshots of the host when lode ui was given a
// repository, or a list pasted as for `lode forget --snapshots`) marked keep or
// forget, with every rule that keeps each one.

import { ApiError, el, post } from "./api";

export function mountRetention(root: HTMLElement, yaml: () => string) {
  const source = el("select", { id: "ret-source" }, el("option", { value: "sim" }, "a simulated history from the schedule"), el("option", { value: "list" }, "a snapshot list (JSON, as for lode forget)"), el("option", { value: "catalog" }, "the repository's snapshots of the host (lode ui --repo)"));
  const days = el("input", { id: "ret-days", type: "number", min: "1", max: "3660", value: "400" });
  const host = el("input", { id: "ret-host", type: "text", value: "node-1" });
  const list = el("textarea", { id: "ret-list", rows: "4", placeholder: '[{"id":"…","time":"2026-03-01T01:00:00Z"}]' });
  const out = el("div", { id: "ret-out", "aria-live": "polite" });
  const controls = el(
    "form",
    { class: "controls", "aria-label": "Retention preview" },
    el("div", { class: "field" }, el("label", { for: "ret-source" }, "Snapshots"), source),
    el("div", { class: "field" }, el("label", { for: "ret-days" }, "Days of simulated history"), days),
    el("div", { class: "field" }, el("label", { for: "ret-host" }, "Host"), host),
    el("div", { class: "field wide" }, el("label", { for: "ret-list" }, "Snapshot list"), list),
  );
  controls.addEventListener("submit", (e) => e.preventDefault());
  root.append(el("h2", {}, "Retention"), controls, out);
  let timer = 0;
  for (const i of [source, days, host, list]) i.addEventListener("input", () => refresh());

  async function load() {
    const body: any = { yaml: yaml() };
    if (source.value === "sim") body.simulate = { days: Number(days.value) || 400, host: host.value || "node-1" };
    else if (source.value === "catalog") body.catalog = { host: host.value || "node-1" };
    else {
      try {
        body.snapshots = JSON.parse(list.value || "[]");
      } catch (e) {
        out.replaceChildren(el("p", { class: "bad" }, `The snapshot list is not JSON: ${(e as Error).message}`));
        return;
      }
    }
    let r: any;
    try {
      r = await post("/api/retention", body);
    } catch (e) {
      const err = e as ApiError;
      out.replaceChildren(el("p", { class: "bad" }, err.status === 422 ? "The policy is invalid: fix the errors in the editor first." : err.message));
      return;
    }
    out.replaceChildren(
      el("p", {}, `${r.keep.length} kept, ${r.forget.length} forgotten, periods counted in ${r.timezone}${r.simulated ? " (a simulated history: one snapshot a minute after each run)" : r.source === "catalog" ? ` (the repository's snapshots of ${host.value || "node-1"}, as the controller's retention sees them)` : ""}.`),
      timeline(r.snapshots),
      table(r.snapshots),
    );
  }
  function refresh() {
    clearTimeout(timer);
    timer = window.setTimeout(load, 150);
  }
  return { refresh };
}

function timeline(snaps: any[]): HTMLElement {
  const wrap = el("div", { class: "timeline", role: "img" });
  if (snaps.length === 0) return wrap;
  const t = snaps.map((s) => Date.parse(s.time));
  const lo = Math.min(...t);
  const hi = Math.max(...t);
  const kept = snaps.filter((s) => s.keep).length;
  wrap.setAttribute("aria-label", `Timeline of ${snaps.length} snapshots, ${kept} kept, newest on the right`);
  snaps.forEach((s, i) => {
    const x = hi === lo ? 100 : ((t[i] - lo) / (hi - lo)) * 100;
    const dot = el("span", { class: "dot " + (s.keep ? "keep" : "forget") + (s.suspicious ? " suspicious" : "") });
    dot.style.left = `${x.toFixed(3)}%`;
    dot.title = `${s.local} ${s.keep ? "keep: " + s.reasons.join(", ") : "forget"}`;
    wrap.append(dot);
  });
  return wrap;
}

function table(snaps: any[]): HTMLElement {
  const body = el("tbody");
  for (const s of snaps) {
    body.append(
      el(
        "tr",
        { class: s.keep ? "keep" : "forget" },
        el("td", {}, el("code", {}, s.id)),
        el("td", {}, s.local.replace("T", " ")),
        el("td", {}, s.keep ? "keep" : "forget"),
        el("td", {}, s.reasons.join(", ") + (s.incomplete ? " (incomplete)" : "")),
      ),
    );
  }
  return el(
    "table",
    { class: "snapshots" },
    el("caption", {}, "Snapshots, newest first"),
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Id"), el("th", { scope: "col" }, "Received (local)"), el("th", { scope: "col" }, "Decision"), el("th", { scope: "col" }, "Kept by"))),
    body,
  );
}
