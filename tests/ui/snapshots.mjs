// The snapshot browser of `lode ui --repo --key-file` in Chromium (docs/ui.md,
// "Snapshots"), as steps a caller runs on its page: open a suspicious snapshot, open
// a directory, see the difference from the parent with the files the anomaly rules
// counted first, choose them from the parent, write a Restore's YAML and preview it
// with the API server's dry run (apply when a cluster is there).
//   opts: {suspicious, parent: the ids; namespace; cluster: true when a cluster answers}
import { check, eq, pass, shot, step } from "./browser.mjs";

export async function snapshotSteps(page, axe, opts) {
  await step("snapshots: the repository's list", async () => {
    await page.getByRole("tab", { name: "Snapshots" }).click();
    await page.waitForSelector("table.snapshots-list tbody tr", { timeout: 30000 });
    const row = page.locator("table.snapshots-list tbody tr", { hasText: opts.suspicious });
    eq("the suspicious snapshot is listed, marked", await row.locator("td").last().innerText(), "suspicious");
  });

  await step("snapshots: open a snapshot and a directory", async () => {
    await page.getByRole("button", { name: opts.suspicious, exact: true }).click();
    await page.waitForSelector("#snap-tree button.dir", { timeout: 30000 });
    eq("the tree starts at the snapshot's top directories", await page.locator("#snap-tree > li > button.dir").allInnerTexts(), ["etc/", "home/"]);
    const etc = page.locator('#snap-tree button.dir[data-path="/etc"]');
    await etc.click();
    eq("opening /etc expands it", await etc.getAttribute("aria-expanded"), "true");
    await page.waitForFunction(() => [...document.querySelectorAll("#snap-tree .name")].some((n) => n.textContent === "f1.conf"), null, { timeout: 30000 });
    const names = await page.locator("#snap-tree li:has(> button[data-path='/etc']) > ul > li .name").allInnerTexts();
    check("its files are listed with the snapshot's names", names.includes("f1.conf") && names.includes("f60.conf") && !names.includes("f55.conf"), names.join(" "));
    const ssh = page.locator('#snap-tree button.dir[data-path="/etc/ssh"]');
    await ssh.click();
    await page.waitForFunction(() => [...document.querySelectorAll("#snap-tree .name")].some((n) => n.textContent === "sshd_config"), null, { timeout: 30000 });
    pass("a directory inside it opens too");
    await etc.click();
    eq("and closes", await etc.getAttribute("aria-expanded"), "false");
  });

  await step("snapshots: the diff of a suspicious snapshot", async () => {
    await page.waitForSelector("#diff-table tbody tr", { timeout: 30000 });
    const summary = await page.locator("#diff-summary").innerText();
    check("against its parent, with counts", summary.includes(`Against its parent ${opts.parent}`) && summary.includes("1 added, 11 removed"), summary);
    const note = await page.locator("#diff-counted-note").innerText();
    check("the suspicious note counts what the rules counted: 44 changed and 11 deleted", note.includes("counted 55 files of the parent's 61") && note.includes("44 changed and 11 deleted"), note);
    const rows = await page.locator("#diff-table tbody tr").evaluateAll((trs) => trs.map((t) => t.className));
    const firstOther = rows.findIndex((c) => !c.includes("counted"));
    eq("the 55 counted files come first", [rows.slice(0, 55).every((c) => c.includes("counted")), firstOther], [true, 55]);
    const removed = await page.locator("#diff-table tbody tr.change-removed td:nth-child(3)").allInnerTexts();
    check("the deleted files are named", removed.includes("/etc/f55.conf") && removed.length === 11, removed.join(" "));
    await axe("Snapshots, a suspicious snapshot open");
    await shot(page, "snapshots-diff");
  });

  await step("snapshots: a Restore's YAML", async () => {
    await page.locator("#diff-restore-parent").click();
    const from = await page.locator("#restore-from").innerText();
    check("the counted files are chosen from the parent", from.startsWith("55 paths chosen from the parent " + opts.parent), from);
    await page.locator("#snap-restore").getByLabel("spec.repository", { exact: true }).fill("main");
    await page.locator("#snap-restore").getByLabel("spec.target.path", { exact: true }).fill("/var/restore/ui-test");
    await page.locator("#restore-write").click();
    const y = await page.locator("#restore-yaml").inputValue();
    check("the YAML names the parent, the repository and the target", y.includes(`kind: Restore`) && y.includes(`  snapshot:\n    id: ${opts.parent}\n`) && y.includes("  repository: main\n") && y.includes("  target:\n    node: ") && y.includes("    path: /var/restore/ui-test\n"), y);
    check("and includes the deleted file and a changed one", y.includes("    - /etc/f55.conf\n") && y.includes("    - /etc/f1.conf\n"), y);
    check("in the snapshot's namespace", y.includes(`  namespace: ${opts.namespace}\n`), y);
    check("Apply waits for a dry run", await page.locator("#restore-apply").isDisabled());
    await page.locator("#restore-dry-run").click();
    await page.waitForFunction(() => document.getElementById("restore-result").innerText.length > 0 && !document.getElementById("restore-result").innerText.startsWith("Asking"), null, { timeout: 30000 });
    const r = await page.locator("#restore-result").innerText();
    if (opts.cluster) {
      check("the API server's dry run would create the Restore", r.includes(`Dry run: the Restore would be created in namespace ${opts.namespace}`), r);
      check("then Apply is enabled", !(await page.locator("#restore-apply").isDisabled()));
      await page.locator("#restore-apply").click();
      await page.waitForFunction(() => document.getElementById("restore-result").innerText.startsWith("Applied"), null, { timeout: 30000 });
      const done = await page.locator("#restore-result").innerText();
      check("Apply creates it", done.includes(`Applied: the Restore was created in namespace ${opts.namespace}`), done);
    } else {
      check("without a cluster the dry run says why", r.startsWith("no cluster"), r);
      check("and Apply stays disabled", await page.locator("#restore-apply").isDisabled());
    }
    await shot(page, "snapshots-restore");
  });
}
