// The page of `lode ui` against the local control plane (tests/e2e/test_ui.sh sets
// it up): apply with its server-side dry run first, the fleet view with an overdue
// host, and the snapshot browser from a suspicious snapshot to an applied Restore
// (tests/ui/snapshots.mjs).
//   node tests/ui/cluster.mjs URL NAMESPACE OVERDUE-HOST SUSPICIOUS-ID PARENT-ID
import fs from "node:fs";
import { check, eq, finish, launch, openPage, pass, require, shot, step } from "./browser.mjs";
import { snapshotSteps } from "./snapshots.mjs";

const [URL_, NS, OVERDUE, SUSPICIOUS, PARENT] = process.argv.slice(2);
const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const browser = await launch();
const { page, seen } = await openPage(browser, URL_);

const POLICY = `apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata:
  name: from-the-page
  namespace: ${NS}
spec:
  repository: main
  paths:
  - /etc
  nodeSelector:
    role: ui
  schedule:
    cron: 30 3 * * *
    timezone: Europe/Kyiv
  retention:
    keepLast: 3
`;

await step("load", async () => {
  await page.goto(URL_);
  await page.waitForSelector("html[data-ready=true]");
  await page.waitForFunction(() => document.getElementById("cluster").innerText.includes("Cluster https://127.0.0.1"), null, { timeout: 30000 });
  pass("the page names the cluster it talks to");
});

await step("apply", async () => {
  await page.locator(".cm-content").focus();
  await page.keyboard.press("Control+A");
  await page.keyboard.insertText(POLICY);
  await page.waitForFunction(() => document.getElementById("errors").innerText.includes("policy.yaml: valid"), null, { timeout: 30000 });
  check("Apply waits for a dry run", await page.locator("#apply").isDisabled());
  await page.locator("#dry-run").click();
  await page.waitForFunction(() => document.getElementById("apply-result").innerText.startsWith("Dry run"), null, { timeout: 30000 });
  const dry = await page.locator("#apply-result").innerText();
  check("the dry run says the policy would be created", dry.includes(`Dry run: the policy would be created in namespace ${NS}`), dry);
  check("and lists its fields", dry.includes("spec.schedule.cron") && dry.includes('"30 3 * * *"'), dry);
  await page.locator("#apply").click();
  await page.waitForFunction(() => document.getElementById("apply-result").innerText.startsWith("Applied"), null, { timeout: 30000 });
  const done = await page.locator("#apply-result").innerText();
  check("Apply applies it", done.includes(`Applied: the policy was created in namespace ${NS}`), done);
  await shot(page, "apply");
  // A change: the dry run shows exactly it.
  await page.getByLabel("spec.retention.keepLast", { exact: true }).fill("5");
  await page.waitForFunction(() => document.querySelector(".cm-content").innerText.includes("keepLast: 5"));
  check("an edit asks for a new dry run", await page.locator("#apply").isDisabled());
  await page.locator("#dry-run").click();
  await page.waitForFunction(() => document.getElementById("apply-result").innerText.includes("would be configured"), null, { timeout: 30000 });
  const diff = await page.locator("#apply-result").innerText();
  check("the dry run shows the one change, old and new", diff.includes("(1 change)") && diff.includes("spec.retention.keepLast: 3 → 5"), diff);
  await shot(page, "apply-diff");
});

await step("fleet", async () => {
  await page.getByRole("tab", { name: "Fleet" }).click();
  await page.waitForSelector("table.fleet tbody tr");
  const row = page.locator("table.fleet tbody tr", { hasText: OVERDUE });
  await row.first().waitFor();
  const text = await row.first().innerText();
  check(`the fleet shows ${OVERDUE} overdue`, text.includes("OVERDUE"), text);
  eq("its row is marked", await row.first().getAttribute("class"), "overdue");
  const first = await page.locator("table.fleet tbody tr").first().innerText();
  check("overdue hosts come first", first.includes("OVERDUE"), first);
  await page.getByRole("button", { name: "Host" }).click();
  eq("sorting by host", await page.locator('th[data-key="host"]').getAttribute("aria-sort"), "ascending");
  const hosts = await page.locator("table.fleet tbody tr td:nth-child(2)").allInnerTexts();
  eq("the rows are in host order", hosts, [...hosts].sort());
  const suspicious = await page.locator("table.fleet tbody tr td.suspicious").allInnerTexts();
  eq("the suspicious snapshot shows on its host's row", suspicious, ["1 (newest 20261203T080000Z-00000000000000aa)"]);
  const status = await page.locator("#fleet-status").innerText();
  check("the summary counts the overdue host", / [1-9][0-9]* overdue/.test(status), status);
  await page.evaluate(axeSource);
  const v = await page.evaluate(async () => (await window.axe.run(document)).violations.filter((x) => x.impact === "serious" || x.impact === "critical").map((x) => x.id));
  eq("axe-core: no serious violations (fleet with data)", v, []);
  await shot(page, "fleet");
});

async function axe(name) {
  await page.evaluate(axeSource);
  const v = await page.evaluate(async () => (await window.axe.run(document)).violations.filter((x) => x.impact === "serious" || x.impact === "critical").map((x) => `${x.id}: ${x.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")}`));
  eq(`axe-core: no serious violations (${name})`, v, []);
}
await snapshotSteps(page, axe, { suspicious: SUSPICIOUS, parent: PARENT, namespace: NS, cluster: true });

eq("no request to any other origin", seen.foreign, []);
await browser.close();
finish();
