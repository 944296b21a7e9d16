// The form and the YAML, kept in step both ways (docs/ui.md).
//
// YAML -> form: the text is parsed with the `yaml` package (comments, order and
// positions kept) and each field's value read out as the text a form input shows.
// Form -> YAML: a field whose scalar is already in the text is replaced where it
// stands, so everything around it (comments, key order, quoting, blank lines) is
// untouched; a field that is new, removed, or a list or map is set through the
// document model, which keeps comments and order and re-prints the document in the
// style the text already uses (sequence indentation). A document that does not
// parse is never rewritten: the edit is refused with the parser's message.

import { Document, isMap, isScalar, isSeq, parseDocument, stringify } from "yaml";
import { FIELDS, fieldAt, type Field } from "./fields";

export type FormValues = Record<string, string>;

// "spec.hooks.before[1].timeout" -> ["spec", "hooks", "before", 1, "timeout"].
function parts(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const p of path.split(".")) {
    const m = /^(.*?)((?:\[\d+\])+)$/.exec(p);
    if (!m) {
      out.push(p);
      continue;
    }
    out.push(m[1]);
    for (const i of m[2].matchAll(/\[(\d+)\]/g)) out.push(Number(i[1]));
  }
  return out;
}

function parse(text: string): Document.Parsed {
  return parseDocument(text, { keepSourceTokens: true, uniqueKeys: false });
}

// The value a field's input shows for the document's node at its path.
function show(node: unknown, f: Field): string {
  if (node === undefined || node === null) return "";
  if (isScalar(node)) {
    return node.value === null || node.value === undefined ? "" : String(node.value);
  }
  if (f.kind === "list" && isSeq(node)) {
    return node.items.map((i) => (isScalar(i) ? String(i.value ?? "") : stringify(i).trim())).join("\n");
  }
  if (f.kind === "map" && isMap(node)) {
    return node.items
      .map((p) => `${isScalar(p.key) ? String(p.key.value) : String(p.key)}=${isScalar(p.value) ? String(p.value.value ?? "") : ""}`)
      .join("\n");
  }
  return stringify(node).trim();
}

export interface ReadResult {
  values: FormValues;
  error?: string; // the YAML does not parse: the form keeps its last values
}

export function readFields(text: string): ReadResult {
  const doc = parse(text);
  if (doc.errors.length > 0) return { values: {}, error: doc.errors[0].message };
  const values: FormValues = {};
  for (const f of FIELDS) {
    const node = doc.getIn(parts(f.path), true);
    if (f.kind !== "records") {
      values[f.path] = show(node, f);
      continue;
    }
    // A list of maps: its number of items, then each item's fields by their paths.
    const n = isSeq(node) ? node.items.length : 0;
    values[f.path] = String(n);
    for (let i = 0; i < n; i++) {
      const item = (node as any).items[i];
      for (const sub of f.items ?? []) {
        values[`${f.path}[${i}].${sub.path}`] = isMap(item) ? show(item.get(sub.path, true), sub) : "";
      }
    }
  }
  return { values };
}

// The YAML source of a scalar value for a field: integers plain when they are
// plain digits, everything else a string quoted only when YAML needs it (a cron
// that starts with * or @ is quoted, "NO" stays plain: the validator reads it as
// the string it is).
export function scalarSource(f: Field, value: string): string {
  if (f.kind === "int" && /^[0-9]+$/.test(value)) return value;
  // A boolean is written plain: the validator refuses a quoted "true".
  if (f.kind === "bool" && (value === "true" || value === "false")) return value;
  return stringify(value, { lineWidth: 0 }).trimEnd();
}

// Whether the text writes a sequence's items at its key's own indentation
// ("paths:\n- /etc"), so a re-printed document keeps that style.
function seqIndented(text: string): boolean {
  const m = /^( *)[^\s#][^\n]*:[ \t]*\n\1( *)- /m.exec(text);
  return !m || m[2].length > 0;
}

function listValue(f: Field, value: string): unknown {
  const lines = value.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  if (f.kind === "list") return lines;
  const map: Record<string, string> = {};
  for (const l of lines) {
    const eq = l.indexOf("=");
    if (eq < 0) map[l] = "";
    else map[l.slice(0, eq).trim()] = l.slice(eq + 1).trim();
  }
  return map;
}

export interface WriteResult {
  text: string;
  error?: string;
}

// Removes the now-empty maps and lists above a removed field (spec.alerts when
// maxAge goes, spec.hooks when its last hook goes), never spec or metadata
// themselves, and never an item of a list: a hook whose fields were all emptied
// stays as {} (its row stays in the form, and the validator says what it lacks).
function pruneEmpty(doc: Document.Parsed, path: (string | number)[]) {
  for (let n = path.length - 1; n > 1; n--) {
    if (typeof path[n - 1] === "number") break;
    const parent = doc.getIn(path.slice(0, n), true);
    if ((isMap(parent) || isSeq(parent)) && parent.items.length === 0) doc.deleteIn(path.slice(0, n));
    else break;
  }
}

function print(doc: Document.Parsed, text: string): string {
  return doc.toString({ lineWidth: 0, indentSeq: seqIndented(text) });
}

function parsedOrError(text: string): Document.Parsed | WriteResult {
  const doc = parse(text);
  if (doc.errors.length > 0) {
    return { text, error: `the YAML does not parse, so the form cannot change it: ${doc.errors[0].message}` };
  }
  return doc;
}

// Appends an empty item ({}) to a list of maps (spec.hooks.before), making the
// list (and the maps above it) when absent.
export function addItem(text: string, path: string): WriteResult {
  const f = FIELDS.find((x) => x.path === path && x.kind === "records");
  if (!f) return { text, error: `no list of maps ${path}` };
  const doc = parsedOrError(text);
  if (!(doc instanceof Document)) return doc;
  const p = parts(path);
  const node = doc.getIn(p, true);
  if (isSeq(node)) node.items.push(doc.createNode({}));
  else doc.setIn(p, doc.createNode([{}]));
  return { text: print(doc, text) };
}

// Removes item i of a list of maps, and the list when it was the last.
export function removeItem(text: string, path: string, i: number): WriteResult {
  const f = FIELDS.find((x) => x.path === path && x.kind === "records");
  if (!f) return { text, error: `no list of maps ${path}` };
  const doc = parsedOrError(text);
  if (!(doc instanceof Document)) return doc;
  const p = [...parts(path), i];
  if (doc.getIn(p, true) === undefined) return { text };
  doc.deleteIn(p);
  pruneEmpty(doc, p);
  return { text: print(doc, text) };
}

export function writeField(text: string, path: string, value: string): WriteResult {
  const f = fieldAt(path);
  if (!f || f.kind === "records") return { text, error: `no form field ${path}` };
  const doc = parsedOrError(text);
  if (!(doc instanceof Document)) return doc;
  const p = parts(path);
  // An item's field needs its item to be a map already (the form adds items).
  if (typeof p[p.length - 2] === "number" && !isMap(doc.getIn(p.slice(0, -1), true))) {
    return { text, error: `${path.replace(/\.[A-Za-z]+$/, "")} is not a map in the YAML: edit it there` };
  }
  // An item the form added is "{}"; its first field makes it a block map.
  const item = doc.getIn(p.slice(0, -1), true);
  if (isMap(item) && item.items.length === 0) item.flow = false;
  const node = doc.getIn(p, true);
  const empty = value.trim() === "";
  if (f.kind !== "list" && f.kind !== "map" && !empty && isScalar(node) && node.range) {
    // In place: only the scalar's own characters change.
    const src = scalarSource(f, f.kind === "int" ? value.trim() : value);
    const [start, end] = node.range;
    return { text: text.slice(0, start) + src + text.slice(end) };
  }
  if (empty) {
    if (node === undefined) return { text };
    doc.deleteIn(p);
    pruneEmpty(doc, p);
  } else if (f.kind === "list" || f.kind === "map") {
    doc.setIn(p, doc.createNode(listValue(f, value)));
  } else if (f.kind === "bool" && (value === "true" || value === "false")) {
    doc.setIn(p, doc.createNode(value === "true"));
  } else if (f.kind === "int" && /^[0-9]+$/.test(value.trim())) {
    doc.setIn(p, doc.createNode(Number(value.trim())));
  } else {
    doc.setIn(p, doc.createNode(value));
  }
  return { text: print(doc, text) };
}

// Line and column (1-based, columns in characters) to an offset in the text.
export function offsetOf(text: string, line: number, column: number): number {
  let off = 0;
  for (let l = 1; l < line; l++) {
    const nl = text.indexOf("\n", off);
    if (nl < 0) return text.length;
    off = nl + 1;
  }
  const end = text.indexOf("\n", off);
  const lineText = text.slice(off, end < 0 ? text.length : end);
  // Columns count characters (code points); JavaScript strings count UTF-16 units.
  const chars = Array.from(lineText).slice(0, Math.max(0, column - 1)).join("");
  return Math.min(off + chars.length, end < 0 ? text.length : end);
}
