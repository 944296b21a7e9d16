// The page of `lode ui` (docs/ui.md): five views behind tabs, the cluster line,
// and the theme switch. Everything it shows comes from the lode binary that
// served it; it makes no other request.

import "./style.css";
import { el, get } from "./api";
import { mountEditor } from "./editor";
import { mountFleet } from "./fleet";
import { mountRetention } from "./retention";
import { mountSchedule } from "./schedule";
import { mountSnapshots } from "./snapshots";

const editor = mountEditor();
const schedule = mountSchedule(document.getElementById("view-schedule")!, editor);
const retention = mountRetention(document.getElementById("view-retention")!, editor);
const fleet = mountFleet(document.getElementById("view-fleet")!);
const snapshots = mountSnapshots(document.getElementById("view-snapshots")!);

// ---- tabs: arrow keys move between them, as the ARIA tabs pattern says ----
const tabs = Array.from(document.querySelectorAll<HTMLButtonElement>('[role="tab"]'));
function select(tab: HTMLButtonElement, focus: boolean) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    document.getElementById(t.getAttribute("aria-controls")!)!.hidden = !on;
  }
  if (focus) tab.focus();
  history.replaceState(null, "", "#" + tab.id.slice(4));
  if (tab.id === "tab-schedule") schedule.refresh();
  if (tab.id === "tab-retention") retention.refresh();
  if (tab.id === "tab-snapshots") snapshots.refresh();
  if (tab.id === "tab-fleet") fleet.show();
  else fleet.hide();
}
for (const t of tabs) {
  t.addEventListener("click", () => select(t, false));
  t.addEventListener("keydown", (e) => {
    const i = tabs.indexOf(t);
    const next = e.key === "ArrowRight" ? tabs[(i + 1) % tabs.length] : e.key === "ArrowLeft" ? tabs[(i + tabs.length - 1) % tabs.length] : e.key === "Home" ? tabs[0] : e.key === "End" ? tabs[tabs.length - 1] : null;
    if (next) {
      e.preventDefault();
      select(next, true);
    }
  });
}
const start = tabs.find((t) => "#" + t.id.slice(4) === location.hash);
if (start) select(start, false);
editor.onChange(() => {
  const cur = tabs.find((t) => t.getAttribute("aria-selected") === "true");
  if (cur?.id === "tab-schedule") schedule.refresh();
});

// ---- theme: auto (the system's), light or dark; remembered ----
const themeBtn = document.getElementById("theme") as HTMLButtonElement;
const THEMES = ["auto", "light", "dark"];
function applyTheme(t: string) {
  if (t === "auto") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = t;
  themeBtn.textContent = `Theme: ${t}`;
  localStorage.setItem("lode-ui-theme", t);
}
applyTheme(localStorage.getItem("lode-ui-theme") ?? "auto");
themeBtn.addEventListener("click", () => {
  const cur = localStorage.getItem("lode-ui-theme") ?? "auto";
  applyTheme(THEMES[(THEMES.indexOf(cur) + 1) % THEMES.length]);
});

// ---- the cluster line ----
get("/api/info")
  .then((info) => {
    const c = info.cluster;
    document.getElementById("cluster")!.replaceChildren(
      el("span", { class: c.connected ? "ok" : "bad" }, c.connected ? `Cluster ${c.server}, namespace ${c.namespace}` : `No cluster: ${c.error} (the Fleet view says what to do)`),
      ` · tz database ${info.tzdataVersion}`,
    );
  })
  .catch((e) => {
    document.getElementById("cluster")!.textContent = `lode ui is not answering: ${e.message}`;
  });
// When the editor, the form and every view are built: the page is usable.
document.documentElement.dataset.readyMs = performance.now().toFixed(1);
document.documentElement.dataset.ready = "true";
