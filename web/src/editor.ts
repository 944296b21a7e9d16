// The policy editor: the form (one input per field, labelled with its YAML path)
// beside the YAML in CodeMirror, kept in step both ways, with the validator's
// errors in the editor, beside their field and in a live list; and apply with a
// server-side dry run first.

import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { yaml as yamlLang } from "@codemirror/lang-yaml";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { linter, lintGutter, setDiagnostics, type Diagnostic } from "@codemirror/lint";
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers, highlightActiveLine } from "@codemirror/view";
import { tags } from "@lezer/highlight";
import { ApiError, el, post, type Diag, type ValidateDoc } from "./api";
import { shownErrors } from "./diags";
import { FIELDS, fieldForPath, type Field } from "./fields";
import { addItem, offsetOf, readFields, removeItem, writeField, type WriteResult } from "./sync";

const FILE = "policy.yaml";

// Colours through CSS variables, so the light and dark themes both apply.
const highlight = HighlightStyle.define([
  { tag: tags.propertyName, color: "var(--syn-key)" },
  { tag: [tags.string, tags.content], color: "var(--syn-str)" },
  { tag: tags.number, color: "var(--syn-num)" },
  { tag: tags.comment, color: "var(--syn-comment)", fontStyle: "italic" },
  { tag: [tags.keyword, tags.bool, tags.null], color: "var(--syn-kw)" },
]);

export const EXAMPLE = `apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata:
  name: etc-and-home
spec:
  repository: main
  paths:
  - /etc
  - /home
  schedule:
    cron: 30 2 * * *
    timezone: Europe/Kyiv
    jitter: 15m
    catchUpWindow: 24h
  retention:
    keepLast: 3
    keepDaily: 7
    keepWeekly: 4
    keepMonthly: 6
  limits:
    uploadRate: 50MiB/s
    nice: 10
    ioniceClass: best-effort
    ioniceLevel: 4
    maxRuntime: 12h
  alerts:
    maxAge: 36h
`;

export interface Editor {
  text(): string;
  onChange(cb: (text: string) => void): void;
  // The validator's answer for the text now in the editor (one request per text):
  // the other views ask it before theirs, so an invalid policy costs no failed
  // request (which the browser would log as an error).
  check(): Promise<ValidateDoc>;
}

// Typing or inserting over a selection is done here rather than by the browser:
// Chrome's own editing keeps the replaced text's colour as a style attribute on
// the new text, which the page's Content-Security-Policy refuses (an error in the
// console on every such edit). Composition (IME) input is left to the browser and
// CodeMirror, as a cancelled composition would lose text.
const replaceSelectionInput = EditorView.domEventHandlers({
  beforeinput(e, view) {
    if (e.isComposing || (e.inputType !== "insertText" && e.inputType !== "insertReplacementText")) return false;
    if (view.state.selection.ranges.every((r) => r.empty)) return false;
    const insert = e.data ?? e.dataTransfer?.getData("text/plain") ?? null;
    if (insert === null) return false;
    e.preventDefault();
    view.dispatch(view.state.replaceSelection(insert), { scrollIntoView: true, userEvent: "input.type" });
    return true;
  },
});

function fieldId(path: string): string {
  return "f-" + path.replace(/[.[\]]+/g, "-").replace(/-$/, "");
}

export function mountEditor(): Editor {
  const form = document.getElementById("form") as HTMLFormElement;
  const errorsEl = document.getElementById("errors")!;
  const listeners: ((t: string) => void)[] = [];
  const inputs = new Map<string, HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>();
  let fromForm = false; // the next document change is the form's own
  let yamlTimer = 0;
  let validateTimer = 0;
  let validateSeq = 0;
  let lastValid = false;

  // ---- the form ----
  // One labelled row: the input, its hint and its error (the validator's).
  function fieldRow(f: Field): HTMLElement {
    const id = fieldId(f.path);
    const hintId = id + "-hint";
    const errId = id + "-err";
    let input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement;
    if (f.kind === "list" || f.kind === "map") {
      input = el("textarea", { rows: "2" });
    } else if (f.kind === "enum" || f.kind === "bool") {
      input = el("select");
      const absent = f.kind === "bool" ? "(absent: false)" : (f.absent ?? "(system default)");
      for (const o of f.options ?? []) input.append(el("option", { value: o }, o === "" ? absent : o));
    } else {
      input = el("input", { type: "text", autocomplete: "off", spellcheck: "false" });
      if (f.inputmode) input.setAttribute("inputmode", f.inputmode);
      if (f.path === "spec.schedule.timezone") input.setAttribute("list", "zones");
    }
    input.id = id;
    input.name = f.path;
    input.dataset.path = f.path;
    input.setAttribute("aria-describedby", `${hintId} ${errId}`);
    if (f.placeholder && !(input instanceof HTMLSelectElement)) input.placeholder = f.placeholder;
    const label = el("label", { for: id }, el("code", {}, f.path));
    inputs.set(f.path, input);
    input.addEventListener("input", () => formEdited(f.path, input.value));
    return el(
      "div",
      { class: "field" },
      label,
      input,
      el("span", { id: hintId, class: "hint" }, f.hint),
      el("span", { id: errId, class: "field-error" }),
    );
  }

  // A list of maps (spec.hooks.before, spec.pod.tolerations): one group of rows per
  // item, labelled with the item's paths, and buttons that add and remove items.
  // The items are rebuilt from the YAML whenever their number changes.
  const records = new Map<string, { f: Field; list: HTMLElement; n: number }>();
  function recordsBlock(f: Field): HTMLElement {
    const id = fieldId(f.path);
    const list = el("div", { class: "items" });
    const add = el("button", { type: "button", class: "add-item" }, `Add ${f.noun}`);
    add.setAttribute("aria-describedby", `${id}-hint`);
    add.addEventListener("click", () => {
      const n = records.get(f.path)!.n;
      if (applyWrite(addItem(text(), f.path), id + "-err")) {
        yamlToForm();
        inputs.get(`${f.path}[${n}].${f.items![0].path}`)?.focus();
      }
    });
    records.set(f.path, { f, list, n: 0 });
    return el(
      "div",
      { class: "records", id, role: "group", "aria-labelledby": `${id}-label` },
      el("div", { class: "records-head" }, el("code", { id: `${id}-label` }, f.path), add),
      el("span", { id: `${id}-hint`, class: "hint" }, f.hint),
      el("span", { id: `${id}-err`, class: "field-error" }),
      list,
    );
  }
  function renderItems(path: string, n: number) {
    const r = records.get(path)!;
    if (r.n === n) return;
    for (const key of [...inputs.keys()]) if (key.startsWith(path + "[")) inputs.delete(key);
    r.list.replaceChildren();
    for (let i = 0; i < n; i++) {
      const base = `${path}[${i}]`;
      const head = el("code", { id: fieldId(base) + "-label" }, base);
      const remove = el("button", { type: "button", class: "remove-item" }, `Remove ${r.f.noun} ${i + 1}`);
      remove.addEventListener("click", () => {
        if (applyWrite(removeItem(text(), path, i), fieldId(path) + "-err")) {
          yamlToForm();
          (document.getElementById(fieldId(path))?.querySelector(".add-item") as HTMLElement | null)?.focus();
        }
      });
      const item = el("div", { class: "item", role: "group", "aria-labelledby": fieldId(base) + "-label" }, el("div", { class: "records-head" }, head, remove));
      for (const sub of r.f.items ?? []) item.append(fieldRow({ ...sub, path: `${base}.${sub.path}` }));
      r.list.append(item);
    }
    r.n = n;
  }

  let fieldset: HTMLFieldSetElement | null = null;
  let group = "";
  for (const f of FIELDS) {
    if (f.group !== group) {
      group = f.group;
      fieldset = el("fieldset", {}, el("legend", {}, group));
      form.append(fieldset);
    }
    fieldset!.append(f.kind === "records" ? recordsBlock(f) : fieldRow(f));
  }
  // The zone suggestions (about 430) are built when the zone field is first used,
  // not while the page loads.
  const zones = el("datalist", { id: "zones" });
  form.append(zones);
  inputs.get("spec.schedule.timezone")!.addEventListener(
    "focus",
    () => {
      try {
        for (const z of (Intl as any).supportedValuesOf("timeZone") as string[]) zones.append(el("option", { value: z }));
      } catch {
        /* an old browser: no suggestions */
      }
    },
    { once: true },
  );
  form.addEventListener("submit", (e) => e.preventDefault());

  // ---- the YAML ----
  const view = new EditorView({
    parent: document.getElementById("yaml")!,
    state: EditorState.create({
      doc: localStorage.getItem("lode-ui-yaml") ?? EXAMPLE,
      extensions: [
        lineNumbers(),
        history(),
        highlightActiveLine(),
        keymap.of([...defaultKeymap, ...historyKeymap]),
        yamlLang(),
        syntaxHighlighting(highlight),
        linter(null),
        lintGutter(),
        replaceSelectionInput,
        EditorView.contentAttributes.of({ "aria-label": "YAML", "aria-labelledby": "yaml-label" }),
        // The per-page nonce lode ui put into index.html: CodeMirror's <style> carries it.
        EditorView.cspNonce.of(document.querySelector('meta[name="lode-csp-nonce"]')?.getAttribute("content") ?? ""),
        EditorView.updateListener.of((u) => {
          if (!u.docChanged) return;
          const text = u.state.doc.toString();
          localStorage.setItem("lode-ui-yaml", text);
          if (fromForm) fromForm = false;
          else scheduleYamlToForm();
          scheduleValidate();
          for (const cb of listeners) cb(text);
        }),
      ],
    }),
  });

  // For the browser tests, which time the YAML -> form path from the editor's change.
  (window as any).__lodeEditor = view;

  function text(): string {
    return view.state.doc.toString();
  }

  // Form -> YAML: at once (the text is small; the in-place edit is a slice).
  function formEdited(path: string, value: string) {
    applyWrite(writeField(text(), path, value), fieldId(path) + "-err");
  }
  // Puts the form's edit into the editor, or its refusal beside the field; true
  // when the text is as the form wants it.
  function applyWrite(r: WriteResult, errId: string): boolean {
    if (r.error) {
      document.getElementById(errId)!.textContent = r.error;
      return false;
    }
    if (r.text === text()) return true;
    fromForm = true;
    // The smallest change, so the cursor and undo history stay sensible.
    const old = text();
    let a = 0;
    while (a < old.length && a < r.text.length && old[a] === r.text[a]) a++;
    let b = 0;
    while (b < old.length - a && b < r.text.length - a && old[old.length - 1 - b] === r.text[r.text.length - 1 - b]) b++;
    view.dispatch({ changes: { from: a, to: old.length - b, insert: r.text.slice(a, r.text.length - b) } });
    return true;
  }

  // YAML -> form: 60 ms after the last keystroke, well inside the 200 ms promise.
  function scheduleYamlToForm() {
    clearTimeout(yamlTimer);
    yamlTimer = window.setTimeout(yamlToForm, 60);
  }
  function yamlToForm() {
    const r = readFields(text());
    if (r.error) return; // the list shows the syntax error; the form keeps its values
    for (const path of records.keys()) renderItems(path, Number(r.values[path] ?? 0));
    for (const [path, input] of inputs) {
      if (document.activeElement === input) continue;
      const v = r.values[path] ?? "";
      if (input.value !== v) input.value = v;
    }
  }

  // Validation: the server's validator, 120 ms after the last change.
  function scheduleValidate() {
    clearTimeout(validateTimer);
    validateTimer = window.setTimeout(validate, 120);
  }
  let checked: { text: string; answer: Promise<ValidateDoc> } | null = null;
  function check(): Promise<ValidateDoc> {
    const t = text();
    if (checked?.text !== t) {
      checked = { text: t, answer: post("/api/validate", { yaml: t }) };
      // A failed request is asked again next time rather than remembered.
      const mine = checked;
      mine.answer.catch(() => {
        if (checked === mine) checked = null;
      });
    }
    return checked.answer;
  }
  async function validate() {
    const seq = ++validateSeq;
    const t = text();
    let doc: ValidateDoc;
    try {
      doc = await check();
    } catch (e) {
      if (seq !== validateSeq) return;
      showErrors([{ line: 0, column: 0, path: "", message: `cannot validate: ${(e as Error).message}` }], t);
      return;
    }
    if (seq !== validateSeq) return; // a newer text is being checked
    lastValid = doc.valid;
    showErrors(shownErrors(doc.errors), t);
  }

  function showErrors(errors: Diag[], t: string) {
    const diags: Diagnostic[] = [];
    errorsEl.replaceChildren();
    for (const input of inputs.values()) input.removeAttribute("aria-invalid");
    for (const span of form.querySelectorAll(".field-error")) span.textContent = "";
    for (const d of errors) {
      const from = d.line > 0 ? offsetOf(t, d.line, d.column) : 0;
      const lineEnd = t.indexOf("\n", from);
      const to = Math.max(from + 1, lineEnd < 0 ? t.length : lineEnd);
      const msg = `${d.path ? d.path + ": " : ""}${d.message}`;
      diags.push({ from, to: Math.min(to, t.length), severity: "error", message: msg });
      const entry = `${FILE}:${d.line}:${d.column}: ${msg}`;
      const btn = el("button", { type: "button", class: "error-entry" }, entry);
      btn.addEventListener("click", () => {
        view.dispatch({ selection: { anchor: from }, scrollIntoView: true });
        view.focus();
      });
      errorsEl.append(el("li", {}, btn));
      const f = fieldForPath(d.path);
      const span = f && document.getElementById(fieldId(f.path) + "-err");
      if (f && span) {
        inputs.get(f.path)?.setAttribute("aria-invalid", "true");
        span.textContent = (span.textContent ? span.textContent + "; " : "") + `${FILE}:${d.line}:${d.column}: ${d.message}`;
      }
    }
    if (errors.length === 0) errorsEl.append(el("li", { class: "ok" }, `${FILE}: valid`));
    view.dispatch(setDiagnostics(view.state, diags));
    (document.getElementById("apply") as HTMLButtonElement).disabled = !lastValid || !dryRunOk;
  }

  // ---- apply ----
  const result = document.getElementById("apply-result")!;
  let dryRunOk = false;
  let dryRunText = "";
  listeners.push((t) => {
    if (t !== dryRunText) {
      dryRunOk = false;
      (document.getElementById("apply") as HTMLButtonElement).disabled = true;
    }
  });
  async function applyCall(dryRun: boolean) {
    const t = text();
    result.replaceChildren(dryRun ? "Asking the API server for a dry run…" : "Applying…");
    try {
      const r = await post("/api/apply", { yaml: t, dryRun });
      const verb = dryRun ? `Dry run: the policy would be ${r.action}` : `Applied: the policy was ${r.action}`;
      const list = el("ul", { class: "changes" });
      for (const c of r.changes as { path: string; old: unknown; new: unknown }[]) {
        list.append(
          el(
            "li",
            {},
            el("code", {}, c.path),
            ": ",
            el("del", {}, c.old === null || c.old === undefined ? "(absent)" : JSON.stringify(c.old)),
            " → ",
            el("ins", {}, c.new === null || c.new === undefined ? "(absent)" : JSON.stringify(c.new)),
          ),
        );
      }
      result.replaceChildren(el("p", {}, `${verb} in namespace ${r.namespace} (${r.changes.length} change${r.changes.length === 1 ? "" : "s"}).`), list);
      if (dryRun) {
        dryRunOk = true;
        dryRunText = t;
        (document.getElementById("apply") as HTMLButtonElement).disabled = !lastValid;
      }
    } catch (e) {
      const err = e as ApiError;
      const lines = [err.message];
      if (err.body?.errors) for (const d of shownErrors(err.body.errors as Diag[])) lines.push(`${FILE}:${d.line}:${d.column}: ${d.path}: ${d.message}`);
      if (err.body?.causes) for (const c of err.body.causes) lines.push(`${c.field}: ${c.message}`);
      result.replaceChildren(el("p", { class: "bad" }, lines.join("\n")));
    }
  }
  document.getElementById("dry-run")!.addEventListener("click", () => applyCall(true));
  document.getElementById("apply")!.addEventListener("click", () => applyCall(false));

  yamlToForm();
  validate();
  return {
    text,
    check,
    onChange(cb) {
      listeners.push(cb);
    },
  };
}
