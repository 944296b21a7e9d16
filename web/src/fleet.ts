// The fleet view: every policy and every host, as `lode status` shows them (the
// same code computes both): last good backup, its age against the limit,
// overdue, next run, suspicious snapshots. Sortable by any column; refreshed every
// 10 seconds.

import { ApiError, duration, el, get } from "./api";

interface Row {
  policy: string;
  host: string;
  lastSuccess: string | null;
  ageSeconds: number | null;
  limit: number | null;
  overdue: boolean;
  running: boolean;
  nextRun: string | null;
  selected: boolean | null;
  suspicious: number;
  lastSuspicious: string | null;
}

type Key = keyof Row;

const COLUMNS: [Key, string][] = [
  ["policy", "Policy"],
  ["host", "Host"],
  ["lastSuccess", "Last good backup"],
  ["ageSeconds", "Age"],
  ["limit", "Limit"],
  ["overdue", "Overdue"],
  ["nextRun", "Next run"],
  ["suspicious", "Suspicious"],
];

export function mountFleet(root: HTMLElement) {
  const all = el("input", { id: "fleet-all", type: "checkbox" });
  const live = el("input", { id: "fleet-live", type: "checkbox", checked: "" });
  const status = el("p", { id: "fleet-status", role: "status" });
  const out = el("div", { id: "fleet-out" });
  root.append(
    el("h2", {}, "Fleet"),
    el(
      "div",
      { class: "controls" },
      el("div", { class: "check" }, all, el("label", { for: "fleet-all" }, "Every namespace")),
      el("div", { class: "check" }, live, el("label", { for: "fleet-live" }, "Refresh every 10 seconds")),
    ),
    status,
    out,
  );
  let rows: Row[] = [];
  let sortKey: Key = "overdue";
  let sortDesc = true;
  let timer = 0;
  let active = false;

  async function load() {
    let r: any;
    try {
      // Without a cluster, what to do rather than a request that can only fail.
      const info = await get("/api/info");
      if (!info.cluster.connected) {
        status.textContent = `No cluster: ${info.cluster.error}`;
        out.replaceChildren(noCluster());
        return;
      }
      r = await get(all.checked ? "/api/status/all" : "/api/status");
    } catch (e) {
      status.textContent = (e as ApiError).message;
      out.replaceChildren();
      return;
    }
    rows = [];
    const problems: Node[] = [];
    for (const p of r.policies) {
      if (!p.valid) problems.push(el("li", {}, `${p.policy} is invalid and runs nothing: ${p.errors.map((e: any) => `${e.path}: ${e.message}`).join("; ")}`));
      if (p.hosts.length === 0) problems.push(el("li", {}, `${p.policy}: no node matches its nodeSelector and it has no Backups`));
      for (const h of p.hosts)
        rows.push({ policy: p.policy, host: h.host, lastSuccess: h.lastSuccess, ageSeconds: h.ageSeconds, limit: p.alertLimitSeconds, overdue: h.overdue, running: h.running, nextRun: h.nextRun, selected: h.selected, suspicious: h.suspicious ?? 0, lastSuspicious: h.lastSuspicious ?? null });
    }
    const overdue = rows.filter((x) => x.overdue).length;
    status.textContent =
      `${r.policies.length} polic${r.policies.length === 1 ? "y" : "ies"}, ${rows.length} host${rows.length === 1 ? "" : "s"}, ${overdue} overdue` +
      ` (${r.namespace ? "namespace " + r.namespace : "every namespace"} at ${r.server}, ${new Date(r.time).toLocaleTimeString()})` +
      (r.warning ? `; ${r.warning}` : "");
    out.replaceChildren(render(), ...(problems.length ? [el("ul", { class: "bad" }, ...problems)] : []));
  }

  // lode ui finds the cluster as lode status does (docs/commands.md), once at start
  // for its flags and environment; it opens the kubeconfig again on each refresh.
  function noCluster(): HTMLElement {
    const code = (t: string) => el("code", {}, t);
    return el(
      "div",
      { id: "fleet-help" },
      el("p", {}, "To see the fleet, give lode ui a cluster:"),
      el(
        "ul",
        {},
        el("li", {}, "stop it (Ctrl-C) and start it again with the kubeconfig and its context: ", code("lode ui --kubeconfig PATH --context NAME"), ";"),
        el("li", {}, "or set ", code("KUBECONFIG=PATH"), " for it; without either it reads ", code("~/.kube/config"), " (in a Pod, its service account);"),
        el("li", {}, code("kubectl config get-contexts"), " lists the contexts a kubeconfig has."),
      ),
      el("p", {}, "A kubeconfig that appears at the path lode ui reads is found without a restart: this view checks again every 10 seconds."),
    );
  }

  function render(): HTMLElement {
    const sorted = [...rows].sort((a, b) => {
      const x = a[sortKey];
      const y = b[sortKey];
      const c = x === y ? 0 : x === null ? 1 : y === null ? -1 : x < y ? -1 : 1;
      return (sortDesc ? -c : c) || a.policy.localeCompare(b.policy) || a.host.localeCompare(b.host);
    });
    const head = el("tr");
    for (const [key, name] of COLUMNS) {
      const btn = el("button", { type: "button", class: "sort" }, name);
      btn.addEventListener("click", () => {
        if (sortKey === key) sortDesc = !sortDesc;
        else {
          sortKey = key;
          sortDesc = false;
        }
        out.replaceChild(render(), out.firstChild!);
        (out.querySelector(`th[data-key="${key}"] button`) as HTMLButtonElement | null)?.focus();
      });
      const th = el("th", { scope: "col", "data-key": key }, btn);
      th.setAttribute("aria-sort", sortKey === key ? (sortDesc ? "descending" : "ascending") : "none");
      head.append(th);
    }
    const body = el("tbody");
    for (const r of sorted) {
      body.append(
        el(
          "tr",
          { class: r.overdue ? "overdue" : "" },
          el("td", {}, r.policy),
          el("td", {}, r.host),
          el("td", {}, r.lastSuccess ? r.lastSuccess.replace("T", " ") : "never"),
          el("td", {}, r.ageSeconds === null ? "–" : duration(r.ageSeconds)),
          el("td", {}, r.limit === null ? "none" : duration(r.limit)),
          el("td", {}, r.overdue ? "OVERDUE" : r.limit === null || r.selected === false ? "–" : "no"),
          el("td", {}, (r.nextRun ? r.nextRun.replace("T", " ") : r.selected === false ? "– (not selected)" : "–") + (r.running ? " (running now)" : "")),
          r.suspicious > 0
            ? el("td", { class: "suspicious", title: `newest: ${r.lastSuspicious ?? "unnamed"}` }, `${r.suspicious} (newest ${r.lastSuspicious ?? "unnamed"})`)
            : el("td", {}, "none"),
        ),
      );
    }
    return el("table", { class: "fleet" }, el("caption", {}, "Policies and hosts"), el("thead", {}, head), body);
  }

  function tick() {
    clearTimeout(timer);
    if (active && live.checked) timer = window.setTimeout(async () => {
      await load();
      tick();
    }, 10000);
  }
  all.addEventListener("change", () => load());
  live.addEventListener("change", tick);
  return {
    async show() {
      active = true;
      await load();
      tick();
    },
    hide() {
      active = false;
      clearTimeout(timer);
    },
  };
}
