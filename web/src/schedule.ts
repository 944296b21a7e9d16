// The schedule view: the alert limit with how it was derived, a year calendar
// marking every day on which a slot is shifted, repeated or skipped, and each
// host's next runs (local and UTC, with its jitter offset). The calendar comes
// before the run tables, which are folded but for the first host: three hosts'
// tables are thousands of pixels that would push the year out of sight.

import { ApiError, duration, el, post } from "./api";
import { invalidText } from "./diags";
import type { Editor } from "./editor";

interface Run {
  slot: string;
  slotTime: string;
  runTime: string;
  runLocal: string;
  abbrev: string;
  note: string | null;
}

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
// Monday first, as ISO 8601 weeks and the calendar's rows.
const WEEKDAYS: [string, string][] = [
  ["Mo", "Monday"],
  ["Tu", "Tuesday"],
  ["We", "Wednesday"],
  ["Th", "Thursday"],
  ["Fr", "Friday"],
  ["Sa", "Saturday"],
  ["Su", "Sunday"],
];

export function mountSchedule(root: HTMLElement, editor: Editor) {
  const hosts = el("textarea", { id: "sched-hosts", rows: "2" }, "node-1\nnode-2\nnode-3");
  const from = el("input", { id: "sched-from", type: "date" });
  const days = el("input", { id: "sched-days", type: "number", min: "1", max: "366", value: "14" });
  const out = el("div", { id: "sched-out", "aria-live": "polite" });
  const controls = el(
    "form",
    { class: "controls", "aria-label": "Schedule preview" },
    el("div", { class: "field" }, el("label", { for: "sched-hosts" }, "Hosts (one node name per line)"), hosts),
    el("div", { class: "field" }, el("label", { for: "sched-from" }, "From (UTC date; empty: now)"), from),
    el("div", { class: "field" }, el("label", { for: "sched-days" }, "Days of runs"), days),
  );
  controls.addEventListener("submit", (e) => e.preventDefault());
  root.append(el("h2", {}, "Schedule"), controls, out);
  let timer = 0;
  for (const i of [hosts, from, days]) i.addEventListener("input", () => refresh());

  async function load() {
    const names = hosts.value.split(/[\s,]+/).filter((h) => h !== "");
    const body: any = { yaml: editor.text(), hosts: names.length ? names : ["node-1"], days: Number(days.value) || 14 };
    if (from.value) body.from = `${from.value}T00:00:00Z`;
    let r: any;
    try {
      const v = await editor.check();
      if (!v.valid) {
        out.replaceChildren(el("p", { class: "bad" }, invalidText(v)));
        return;
      }
      r = await post("/api/schedule", body);
    } catch (e) {
      const err = e as ApiError;
      out.replaceChildren(el("p", { class: "bad" }, err.status === 422 ? "The policy is invalid: fix the errors in the editor first." : err.message));
      return;
    }
    const parts: Node[] = [];
    parts.push(el("p", {}, `Policy ${r.policy}, times in ${r.timezone} (tz database ${r.tzdataVersion}).`));
    parts.push(limitText(r.limit));
    if (r.suspended)
      parts.push(el("p", { id: "sched-suspended", class: "bad" }, "Suspended (spec.suspend: true): none of these runs starts until the policy is resumed; then the last slot missed runs once if it is within the catch-up window. The alert limit still holds."));
    if (r.hosts[0].runs.length === 0) parts.push(el("p", {}, "This policy has no schedule: it runs only when started by hand."));
    parts.push(calendar(r.calendar));
    const runs = el("section", { class: "runs", "aria-labelledby": "runs-title" }, el("h3", { id: "runs-title" }, "Next runs per host"));
    r.hosts.forEach((h: any, i: number) => runs.append(hostTable(h, i === 0)));
    parts.push(runs);
    out.replaceChildren(...parts);
  }
  function refresh() {
    clearTimeout(timer);
    timer = window.setTimeout(load, 150);
  }
  return { refresh };
}

function limitText(l: any): HTMLElement {
  let text: string;
  if (l.source === "none") text = "No alert limit: without a schedule or alerts.maxAge a host is never overdue.";
  else if (l.source === "alerts.maxAge") text = `Alert limit ${duration(l.seconds)}, from alerts.maxAge.`;
  else
    text =
      `Alert limit ${duration(l.seconds)}: twice the longest gap between slots over the next year ` +
      `(2 × ${duration(l.longestGapSeconds)}) plus the jitter (${duration(l.jitterSeconds)}). ` +
      `A host with no successful backup for longer is overdue.`;
  return el("p", { id: "sched-limit" }, text);
}

// One host's runs, folded into a <details> (open for the first host).
function hostTable(h: any, open: boolean): HTMLElement {
  const what = `${h.host}: runs ${duration(h.offsetSeconds) || "0s"} after each slot (jitter offset)`;
  const caption = el("caption", {}, what);
  const head = el("tr", {}, el("th", { scope: "col" }, "Slot (local)"), el("th", { scope: "col" }, "Runs (local)"), el("th", { scope: "col" }, "Runs (UTC)"), el("th", { scope: "col" }, "Note"));
  const body = el("tbody");
  for (const r of h.runs as Run[]) {
    body.append(
      el(
        "tr",
        r.note ? { class: "note-" + r.note } : {},
        el("td", {}, r.slot.replace("T", " ")),
        el("td", {}, `${r.runLocal.slice(0, 19).replace("T", " ")} ${r.abbrev}`),
        el("td", {}, r.runTime.replace("T", " ")),
        el("td", {}, r.note ?? ""),
      ),
    );
  }
  const notes = (h.notes as { slot: string }[]).map((n) => el("li", {}, `${n.slot.replace("T", " ")} does not exist and is skipped`));
  const count = `${h.runs.length} run${h.runs.length === 1 ? "" : "s"}`;
  const wrap = el("details", { class: "host-runs" }, el("summary", {}, `${h.host}: ${count}`), el("table", {}, caption, el("thead", {}, head), body));
  wrap.open = open;
  if (h.truncated) wrap.append(el("p", { class: "hint" }, "Only the first 500 runs are shown."));
  if (notes.length) wrap.append(el("ul", { class: "skips" }, ...notes));
  return wrap;
}

function calendar(c: any): HTMLElement {
  const byDate = new Map<string, { kind: string; text: string }[]>();
  for (const d of c.days) {
    if (!byDate.has(d.date)) byDate.set(d.date, []);
    byDate.get(d.date)!.push(d);
  }
  const start = new Date(c.from);
  const wrap = el("section", { class: "calendar", "aria-labelledby": "cal-title" });
  wrap.append(el("h3", { id: "cal-title" }, "The year ahead: days with a shifted, repeated or skipped slot"));
  const grid = el("div", { class: "months" });
  for (let m = 0; m < 13; m++) {
    const y = start.getUTCFullYear() + Math.floor((start.getUTCMonth() + m) / 12);
    const mo = (start.getUTCMonth() + m) % 12;
    const head = el("tr");
    // The two letters for the eye, the day's name for a screen reader.
    for (const [short, long] of WEEKDAYS) head.append(el("th", { scope: "col" }, el("span", { "aria-hidden": "true" }, short), el("span", { class: "sr-only" }, long)));
    const table = el("table", { class: "month" }, el("caption", {}, `${MONTHS[mo]} ${y}`), el("thead", {}, head));
    const tb = el("tbody");
    const first = new Date(Date.UTC(y, mo, 1));
    const lead = (first.getUTCDay() + 6) % 7; // Monday first
    const len = new Date(Date.UTC(y, mo + 1, 0)).getUTCDate();
    let row = el("tr");
    for (let i = 0; i < lead; i++) row.append(el("td"));
    for (let d = 1; d <= len; d++) {
      const date = `${y}-${String(mo + 1).padStart(2, "0")}-${String(d).padStart(2, "0")}`;
      const notes = byDate.get(date);
      const cell = el("td", {}, String(d));
      if (notes) {
        cell.className = "day-" + notes[0].kind;
        cell.title = notes.map((n) => `${n.kind}: ${n.text}`).join("\n");
        cell.setAttribute("aria-label", `${date}: ${notes.map((n) => n.kind).join(", ")}`);
      }
      row.append(cell);
      if ((lead + d) % 7 === 0) {
        tb.append(row);
        row = el("tr");
      }
    }
    if (row.children.length) tb.append(row);
    table.append(tb);
    grid.append(table);
  }
  wrap.append(grid);
  const list = el("ul", { class: "cal-notes", id: "cal-notes" });
  for (const d of c.days) list.append(el("li", { class: "day-" + d.kind }, el("strong", {}, `${d.date} ${d.kind}`), `: ${d.text}`));
  if (c.days.length === 0) list.append(el("li", {}, "No slot is shifted, repeated or skipped in this year."));
  wrap.append(list);
  return wrap;
}
