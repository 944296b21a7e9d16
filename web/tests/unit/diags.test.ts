import { describe, expect, it } from "vitest";
import { invalidText, shownErrors } from "../../src/diags";

// What /api/validate answers for a policy whose line 2 is indented by mistake: the
// value cut short by the syntax error reads as a wrong kind, before the syntax error.
const BROKEN = [
  { line: 2, column: 7, path: "kind", message: 'must be "BackupPolicy", not "BackupPolicy foo"' },
  { line: 3, column: 6, path: "", message: "YAML syntax error: mapping values are not allowed in this context" },
];

describe("shownErrors", () => {
  it("a YAML syntax error is shown alone", () => {
    expect(shownErrors(BROKEN)).toEqual([BROKEN[1]]);
  });
  it("errors of a YAML that parses are all shown, in order", () => {
    const errs = [BROKEN[0], { line: 9, column: 3, path: "spec.x", message: "unknown field" }];
    expect(shownErrors(errs)).toEqual(errs);
    expect(shownErrors([])).toEqual([]);
  });
});

describe("invalidText", () => {
  it("names the error to fix first, at its line and column", () => {
    expect(invalidText({ file: "policy.yaml", valid: false, errors: BROKEN })).toBe(
      "The policy is invalid: fix the errors in the editor first (policy.yaml:3:6: YAML syntax error: mapping values are not allowed in this context).",
    );
  });
});
