// Shared by the browser tests: Debian's chromium through playwright-core (no
// browser download), the "ok - / not ok -" lines tests/run.sh counts, and
// screenshots kept as test artifacts.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

// The packages are web/'s (npm ci there), so the tests use the locked versions.
export const require = createRequire(new URL("../../web/package.json", import.meta.url));
const { chromium } = require("playwright-core");

export const CHROMIUM = process.env.LODE_CHROMIUM || "/usr/bin/chromium";
export const ARTIFACTS = process.env.LODE_UI_ARTIFACTS || new URL("../../build/ui-artifacts", import.meta.url).pathname;
fs.mkdirSync(ARTIFACTS, { recursive: true });

let passed = 0;
let failed = 0;
export function pass(name) {
  passed++;
  console.log(`ok - ${name}`);
}
export function fail(name, ...why) {
  failed++;
  console.log(`not ok - ${name}`);
  for (const w of why) console.log(`    ${w}`);
}
export function check(name, cond, ...why) {
  cond ? pass(name) : fail(name, ...why);
}
export function eq(name, got, want) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  g === w ? pass(name) : fail(name, `got:  ${g}`, `want: ${w}`);
}
// The page's own requests, kept so that a step that times out says which request
// was slow, failed or never answered: the browser's view of the server.
const traced = [];
function traceRequests(page) {
  const t0 = Date.now();
  page.on("request", (r) => traced.push({ r, url: r.method() + " " + r.url().replace(/[?&]token=[^&]*/, ""), start: Date.now() - t0, end: null, how: "pending" }));
  const done = (how) => (r) => {
    const e = traced.find((x) => x.r === r && x.end === null);
    if (e) {
      e.end = Date.now() - t0;
      e.how = how === "failed" ? `failed: ${r.failure()?.errorText}` : how;
    }
  };
  page.on("requestfinished", done("finished"));
  page.on("requestfailed", done("failed"));
}
function requestLog() {
  return traced.slice(-12).map((e) => `${e.url} at ${e.start} ms: ${e.end === null ? "no answer yet" : `${e.how} after ${e.end - e.start} ms`}`);
}

// Runs one step of a test; then the page it watches (openPage) must have logged
// no console error, uncaught exception or Content-Security-Policy violation while
// it ran: each is a check of its own, named for the step.
export async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    fail(name, ...String(e && e.stack ? e.stack : e).split("\n").slice(0, 6), "the page's last requests:", ...requestLog());
  }
  await consoleClean(`during "${name}"`);
}

let watched = null;
// Every console error and CSP violation since the last call, as one check.
export async function consoleClean(when) {
  if (!watched) return;
  let csp;
  try {
    csp = await watched.page.evaluate(() => window.__csp.splice(0));
  } catch (e) {
    csp = [`the page's violations could not be read: ${e}`];
  }
  const errors = watched.seen.console.splice(0);
  eq(`no console error or CSP violation ${when}`, [...errors, ...csp.map((c) => `CSP violation: ${c}`)], []);
}

export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

// A browser, failing loudly when Debian's chromium is missing: a skipped browser
// test would be a pass that tested nothing.
export async function launch() {
  if (!fs.existsSync(CHROMIUM)) {
    fail(`chromium at ${CHROMIUM}`, "not installed: run `make setup` (Debian's chromium package)");
    finish();
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
}

// A fresh page that records Content-Security-Policy violations, requests to any
// other origin, console errors and uncaught exceptions: every step checks the
// console and the violations (step), the test the requests at its end.
export async function openPage(browser, url, opts = {}) {
  const origin = new URL(url).origin;
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, colorScheme: opts.colorScheme || "light" });
  const page = await context.newPage();
  const seen = { csp: [], foreign: [], console: [] };
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener("securitypolicyviolation", (e) => {
      const t = e.target;
      window.__csp.push(`${e.violatedDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber} on ${t && t.outerHTML ? t.outerHTML.slice(0, 120) : t}`);
    });
  });
  traceRequests(page);
  page.on("request", (r) => {
    const u = r.url();
    if (!u.startsWith(origin + "/") && !u.startsWith("data:")) seen.foreign.push(u);
  });
  page.on("console", (m) => {
    if (m.type() === "error") seen.console.push(m.text());
  });
  page.on("pageerror", (e) => seen.console.push(`uncaught: ${e.message}`));
  watched = { page, seen };
  return { context, page, seen };
}

export async function shot(page, name) {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: false });
}
