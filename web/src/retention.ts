// The retention view: a timeline of snapshots (a simulated history from the
// schedule, the repository's real snapshots of the host when lode ui was given a
// repository, or a list pasted as for `lode forget --snapshots`) marked keep or
// forget, with every rule that keeps each one. Only the controls of the chosen
// source are shown.

import { ApiError, el, get, post } from "./api";
import { buckets, unitFor, type Unit } from "./buckets";
import { invalidText } from "./diags";
import type { Editor } from "./editor";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

export function mountRetention(root: HTMLElement, editor: Editor) {
  const source = el("select", { id: "ret-source" }, el("option", { value: "sim" }, "a simulated history from the schedule"), el("option", { value: "list" }, "a snapshot list (JSON, as for lode forget)"), el("option", { value: "catalog" }, "the repository's snapshots of the host (lode ui --repo)"));
  const days = el("input", { id: "ret-days", type: "number", min: "1", max: "3660", value: "400" });
  const host = el("input", { id: "ret-host", type: "text", value: "node-1" });
  const list = el("textarea", { id: "ret-list", rows: "4", placeholder: '[{"id":"…","time":"2026-03-01T01:00:00Z"}]' });
  const out = el("div", { id: "ret-out", "aria-live": "polite" });
  const daysField = el("div", { class: "field" }, el("label", { for: "ret-days" }, "Days of simulated history"), days);
  const hostField = el("div", { class: "field" }, el("label", { for: "ret-host" }, "Host"), host);
  const listField = el("div", { class: "field wide" }, el("label", { for: "ret-list" }, "Snapshot list"), list);
  const controls = el("form", { class: "controls", "aria-label": "Retention preview" }, el("div", { class: "field" }, el("label", { for: "ret-source" }, "Snapshots"), source), daysField, hostField, listField);
  controls.addEventListener("submit", (e) => e.preventDefault());
  root.append(el("h2", {}, "Retention"), controls, out);
  let timer = 0;
  for (const i of [source, days, host, list]) i.addEventListener("input", () => refresh());
  // The repository lode ui was started with, or null; asked once.
  let repository: Promise<string | null> | null = null;

  // The controls the chosen source reads, and none other.
  function showControls() {
    daysField.hidden = source.value !== "sim";
    hostField.hidden = source.value === "list";
    listField.hidden = source.value !== "list";
  }
  showControls();
  source.addEventListener("input", showControls);

  async function load() {
    const body: any = { yaml: editor.text() };
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
      if (source.value === "catalog") {
        repository ??= get("/api/info").then((i) => i.repository ?? null);
        if ((await repository) === null) {
          out.replaceChildren(
            el(
              "p",
              { class: "bad" },
              "lode ui was started without a repository, so there are no real snapshots to show. Start it again with ",
              el("code", {}, "lode ui --repo REPO"),
              " (or with LODE_REPOSITORY set; S3 credentials from the environment, as for ",
              el("code", {}, "lode snapshots"),
              "). Listing needs no repository key.",
            ),
          );
          return;
        }
      }
      const v = await editor.check();
      if (!v.valid) {
        out.replaceChildren(el("p", { class: "bad" }, invalidText(v)));
        return;
      }
      r = await post("/api/retention", body);
    } catch (e) {
      repository = null;
      const err = e as ApiError;
      out.replaceChildren(el("p", { class: "bad" }, err.status === 422 ? "The policy is invalid: fix the errors in the editor first." : err.message));
      return;
    }
    out.replaceChildren(
      el("p", {}, `${r.keep.length} kept, ${r.forget.length} forgotten, periods counted in ${r.timezone}${r.simulated ? " (a simulated history: one snapshot a minute after each run)" : r.source === "catalog" ? ` (the repository's snapshots of ${host.value || "node-1"}, as the controller's retention sees them)` : ""}.`),
      timeline(r.snapshots, r.timezone),
      table(r.snapshots),
    );
  }
  function refresh() {
    clearTimeout(timer);
    timer = window.setTimeout(load, 150);
  }
  return { refresh };
}

const UNIT_WORDS: Record<Unit, string> = { day: "day", week: "week (Monday to Sunday)", month: "month" };

// One column per day, week or month (buckets.ts): its height the number of
// snapshots, the kept ones green at the bottom with their number above, the
// forgotten grey; a red mark under a column with a suspicious snapshot. The
// columns keep a minimum width and the strip scrolls sideways past the page's.
function timeline(snaps: any[], zone: string): HTMLElement {
  const fig = el("figure", { class: "timeline-wrap" });
  if (snaps.length === 0) return fig;
  const days = snaps.map((s) => (s.local as string).slice(0, 10)).sort();
  const unit = unitFor(days[0], days[days.length - 1]);
  const cols = buckets(snaps, unit);
  const most = Math.max(...cols.map((c) => c.total));
  const kept = snaps.filter((s) => s.keep).length;
  const strip = el("div", { class: "timeline", id: "ret-timeline", role: "img", tabindex: "0", "data-unit": unit });
  strip.setAttribute("aria-label", `Timeline of ${snaps.length} snapshots in ${cols.length} ${unit}s, ${kept} kept, oldest on the left; the table below lists each one`);
  let lastMonth = "";
  let lastLabelAt = -1;
  let lastLabelLen = 0;
  cols.forEach((c, i) => {
    const col = el("div", { class: "bucket" + (c.suspicious ? " suspicious" : ""), "data-start": c.start, "data-total": String(c.total), "data-kept": String(c.kept) });
    const when = unit === "day" ? c.start : unit === "week" ? `the week of ${c.start}` : c.start.slice(0, 7);
    col.title = `${when}: ${c.total} snapshot${c.total === 1 ? "" : "s"}, ${c.kept} kept` + (c.suspicious ? `, ${c.suspicious} suspicious` : "");
    const bar = el("div", { class: "bar" });
    const height = c.total === 0 ? 0 : Math.max(3, Math.round((c.total / most) * 56));
    const keptHeight = c.total === 0 ? 0 : Math.round((c.kept / c.total) * height);
    const forgot = el("span", { class: height > keptHeight ? "forgot" : "forgot none" });
    const keep = el("span", { class: "kept" });
    // CSSOM writes, which the Content-Security-Policy allows (a style attribute it would not).
    forgot.style.height = `${height - keptHeight}px`;
    keep.style.height = `${keptHeight}px`;
    bar.append(forgot, keep);
    // A month's first column is labelled (with the year in January and at the
    // start), unless the label before it would still be running into it.
    const month = c.start.slice(0, 7);
    let label = "";
    const first = lastLabelAt < 0;
    if (unit === "month") label = c.start.slice(5, 7) === "01" || first ? c.start.slice(0, 4) : "";
    else if (month !== lastMonth) label = MONTHS[Number(c.start.slice(5, 7)) - 1] + (c.start.slice(5, 7) === "01" || first ? " " + c.start.slice(0, 4) : "");
    lastMonth = month;
    if (label && !first && (i - lastLabelAt) * 18 < lastLabelLen * 7 + 4) label = "";
    if (label) {
      lastLabelAt = i;
      lastLabelLen = label.length;
    }
    col.append(el("span", { class: "count" }, c.kept ? String(c.kept) : ""), bar, el("span", { class: "mark" }), el("span", { class: "tick" }, label));
    strip.append(col);
  });
  fig.append(
    el("figcaption", {}, `Each column is one ${UNIT_WORDS[unit]} in ${zone}: its height is the number of snapshots, the solid green part and the number above it the kept ones, the outlined part the forgotten; a red mark under a column: a suspicious snapshot.`),
    strip,
  );
  return fig;
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
