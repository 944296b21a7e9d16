// What the page shows of the validator's errors (docs/ui.md). Pure: no DOM.

import type { Diag, ValidateDoc } from "./api";

const FILE = "policy.yaml";
// The message prefix of the validator's YAML syntax errors (docs/policy.md).
const SYNTAX = "YAML syntax error";

// What the list shows: while the YAML does not parse, its syntax error alone. The
// validator also reports what it read before the error, and a value cut short by
// the error reads as a wrong type (kind "BackupPolicy foo"), which sends a
// person to the wrong line; the rest is checked again once the YAML parses.
export function shownErrors(errors: Diag[]): Diag[] {
  const syntax = errors.filter((d) => d.message.startsWith(SYNTAX));
  return syntax.length ? syntax : errors;
}

// What the other views say instead of their answer while the policy is invalid.
export function invalidText(v: ValidateDoc): string {
  const first = shownErrors(v.errors)[0];
  const where = first ? ` (${FILE}:${first.line}:${first.column}: ${first.path ? first.path + ": " : ""}${first.message})` : "";
  return `The policy is invalid: fix the errors in the editor first${where}.`;
}

