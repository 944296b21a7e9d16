#!/usr/bin/env bash
# lode validate: human and JSON output (docs/policy.md), exit codes 0/1/2, stdin,
# unreadable files, flags, and the golden output of every bad fixture.
source "$(dirname "$0")/lib.sh"
cd "$LODE_ROOT" || exit 2
FIX=tests/fixtures/policies
PAGE=docs/examples/etc-and-home.yaml

# The page's example is valid.
run validate "$PAGE"
check_rc "page example: exit 0" 0
check_eq "page example: one line saying valid" "$OUT" "$PAGE: valid"
check_eq "page example: nothing on stderr" "$ERR" ""

for f in "$FIX"/good/*.yaml; do
    run validate "$f"
    check_rc "good fixture $(basename "$f"): exit 0" 0
done

# The issue's acceptance line: retension at line 15, column 3.
sed 's/^  retention:/  retension:/' "$PAGE" >"$T_TMP/typo.yaml"
run validate "$T_TMP/typo.yaml"
check_rc "retension: exit 1" 1
check_eq "retension: the exact line" "$OUT" \
    "$T_TMP/typo.yaml:15:3: error: spec.retension: unknown field (did you mean \"retention\"?)"
check_eq "retension: errors go to stdout, not stderr" "$ERR" ""

# Ten mistakes, ten lines, in document order.
run validate "$FIX/bad/ten-mistakes.yaml"
check_rc "ten mistakes: exit 1" 1
check_eq "ten mistakes: ten lines" "$(wc -l <<<"$OUT")" 10
check_eq "ten mistakes: lines in document order" \
    "$(cut -d: -f2 <<<"$OUT" | tr '\n' ' ')" "1 4 8 10 11 12 13 16 17 19 "
check_eq "ten mistakes: every line has the form FILE:LINE:COL: error: PATH: message" \
    "$(grep -cE '^tests/fixtures/policies/bad/ten-mistakes\.yaml:[0-9]+:[0-9]+: error: [][A-Za-z0-9.]+: .+' <<<"$OUT")" 10

# Every bad fixture gives exactly its golden output (run from the fixture directory).
for f in "$FIX"/bad/*.yaml; do
    name=$(basename "$f" .yaml)
    (cd "$FIX" && "$LODE" validate "bad/$name.yaml" >"$T_TMP/out" 2>"$T_TMP/err")
    rc=$?
    check_eq "golden $name: exit 1" "$rc" 1
    check_eq "golden $name: output" "$(cat "$T_TMP/out")" "$(cat "$FIX/bad/$name.out")"
done

# The quoting hint for a cron that starts with '*'.
run validate "$FIX/bad/cron-star.yaml"
check_eq "cron hint" "$OUT" \
    "$FIX/bad/cron-star.yaml:9:11: error: spec.schedule.cron: a cron that starts with \"*\" must be quoted: cron: \"*/15 * * * *\""

# JSON output: the exact shape.
run validate --output json "$PAGE"
check_rc "json valid: exit 0" 0
check_eq "json valid: document" "$(jq -c . <<<"$OUT")" \
    "{\"files\":[{\"file\":\"$PAGE\",\"valid\":true,\"errors\":[]}]}"

run validate --output json "$T_TMP/typo.yaml"
check_rc "json invalid: exit 1" 1
check_eq "json invalid: document" "$(jq -c . <<<"$OUT")" \
    "{\"files\":[{\"file\":\"$T_TMP/typo.yaml\",\"valid\":false,\"errors\":[{\"line\":15,\"column\":3,\"path\":\"spec.retension\",\"message\":\"unknown field (did you mean \\\"retention\\\"?)\"}]}]}"

run validate --output json "$FIX/bad/ten-mistakes.yaml"
check_eq "json ten mistakes: ten errors" "$(jq '.files[0].errors | length' <<<"$OUT")" 10
check_eq "json ten mistakes: lines in order" "$(jq -c '[.files[0].errors[].line]' <<<"$OUT")" \
    "[1,4,8,10,11,12,13,16,17,19]"
check_eq "json ten mistakes: paths" "$(jq -r '.files[0].errors[].path' <<<"$OUT" | tr '\n' ' ')" \
    "apiVersion metadata.name spec.paths[0] spec.schedule.cron spec.schedule.timezone spec.schedule.jitter spec.retension spec.limits.uploadRate spec.limits.nice spec.limits.ioniceLevel "
check_eq "json: the keys of an error, in order" \
    "$(jq -c '.files[0].errors[0] | keys_unsorted' <<<"$OUT")" '["line","column","path","message"]'
check_eq "json: the keys of a file, in order" "$(jq -c '.files[0] | keys_unsorted' <<<"$OUT")" \
    '["file","valid","errors"]'
# The human output carries the same errors as the JSON.
run validate "$FIX/bad/ten-mistakes.yaml"
human=$OUT
run validate --output json "$FIX/bad/ten-mistakes.yaml"
check_eq "json and human agree" \
    "$(jq -r '.files[0] as $f | $f.errors[] | "\($f.file):\(.line):\(.column): error: \(.path): \(.message)"' <<<"$OUT")" \
    "$human"

# Several files: one document, one entry per file in order; exit 1 if any is invalid.
run validate --output json "$PAGE" "$T_TMP/typo.yaml" "$FIX/good/minimal.yaml"
check_rc "json several: exit 1" 1
check_eq "json several: files and validity" \
    "$(jq -c '[.files[] | [.file, .valid]]' <<<"$OUT")" \
    "[[\"$PAGE\",true],[\"$T_TMP/typo.yaml\",false],[\"$FIX/good/minimal.yaml\",true]]"
run validate "$PAGE" "$T_TMP/typo.yaml"
check_rc "human several: exit 1" 1
check_eq "human several: both files reported" "$(wc -l <<<"$OUT")" 2

# Flags after the files work too.
run validate "$PAGE" --output json
check_rc "flag after file: exit 0" 0
check_eq "flag after file: JSON" "$(jq -r '.files[0].valid' <<<"$OUT")" true

# Standard input: "-", shown as <stdin> to people and as "-" in JSON.
"$LODE" validate - <"$T_TMP/typo.yaml" >"$T_TMP/out" 2>&1
check_eq "stdin: exit 1" "$?" 1
check_eq "stdin: shown as <stdin>" "$(cat "$T_TMP/out")" \
    "<stdin>:15:3: error: spec.retension: unknown field (did you mean \"retention\"?)"
"$LODE" validate --output json - <"$PAGE" >"$T_TMP/out" 2>&1
check_eq "stdin json: exit 0" "$?" 0
check_eq "stdin json: file is -" "$(jq -c '.files[0] | [.file, .valid]' <"$T_TMP/out")" '["-",true]'
printf '' | "$LODE" validate - >"$T_TMP/out" 2>&1
check_eq "stdin empty: exit 1" "$?" 1
check_contains "stdin empty: says so" "$(cat "$T_TMP/out")" "<stdin>:1:1: error: the file is empty"

# A file that cannot be read: exit 2, a message on stderr; JSON still reports every file.
run validate "$T_TMP/nope.yaml"
check_rc "missing file: exit 2" 2
check_eq "missing file: nothing on stdout" "$OUT" ""
check_contains "missing file: stderr names it" "$ERR" "$T_TMP/nope.yaml: cannot open"
run validate --output json "$T_TMP/typo.yaml" "$T_TMP/nope.yaml" "$PAGE"
check_rc "json missing file: exit 2 wins over 1" 2
check_eq "json missing file: three entries" "$(jq -c '[.files[] | .valid]' <<<"$OUT")" \
    "[false,false,true]"
check_eq "json missing file: its error" "$(jq -c '.files[1].errors[0]' <<<"$OUT")" \
    '{"line":0,"column":0,"path":"","message":"cannot open: No such file or directory"}'
run validate "$T_TMP"
check_rc "a directory: exit 2" 2
check_contains "a directory: says it cannot be read" "$ERR" "cannot read"

# Usage errors: exit 2 with a hint on stderr.
run validate
check_rc "no file: exit 2" 2
check_contains "no file: says so" "$ERR" "no file given"
run validate --output yaml "$PAGE"
check_rc "bad --output: exit 2" 2
check_contains "bad --output: says which values" "$ERR" "\"text\" or \"json\""
run validate --frobnicate "$PAGE"
check_rc "unknown flag: exit 2" 2
check_contains "unknown flag: names it" "$ERR" "--frobnicate"
run validate "$PAGE" --output
check_rc "flag without value: exit 2" 2
run validate --help
check_rc "--help: exit 0" 0
check_contains "--help: usage on stdout" "$OUT" "usage: lode validate"
check_contains "--help: documents the JSON" "$OUT" '"files"'

# Time zones are checked against the database given.
mkdir -p "$T_TMP/zi/Etc"
cp /usr/share/zoneinfo/UTC "$T_TMP/zi/UTC"
run validate --zoneinfo "$T_TMP/zi" "$PAGE"
check_rc "zone missing from --zoneinfo: exit 1" 1
check_contains "zone missing from --zoneinfo: says which" "$OUT" \
    "$PAGE:12:15: error: spec.schedule.timezone: unknown time zone \"Europe/Kyiv\""
LODE_ZONEINFO="$T_TMP/zi" run validate "$PAGE"
check_rc "LODE_ZONEINFO is honoured: exit 1" 1
run validate --zoneinfo "$T_TMP/zi" "$FIX/good/minimal.yaml"
check_rc "no schedule, no zone needed: exit 0" 0
run validate --zoneinfo "$T_TMP/none" "$PAGE"
check_rc "no such zoneinfo: exit 2" 2
check_contains "no such zoneinfo: says so" "$ERR" "zoneinfo"

# Hostile input costs time in proportion to its size (docs/policy.md): 1 MiB of unknown
# aliases on one line, and on a line each, were quadratic (a 360 KB file took 8.8 s, 1 MiB
# ran past two minutes). cpu_seconds prints the CPU seconds (user + system) of one run.
cpu_seconds() {
    local TIMEFORMAT='%3U %3S' t
    t=$({ time "$LODE" validate "$1" >/dev/null 2>&1; } 2>&1)
    awk '{print $1 + $2}' <<<"$t"
}
aliases_file() { # path bytes per-line
    python3 - "$@" <<'PY'
import sys
path, size, per_line = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
head = "apiVersion: lodestore.io/v1alpha1\nkind: BackupPolicy\nmetadata:\n  name: x\nspec:\n"
if per_line:
    body, i = [], 0
    while len(head) + sum(map(len, body)) < size - 32:
        body.append("  k%d: *z\n" % i)
        i += 1
    doc = head + "".join(body)
else:
    n = (size - len(head) - 16) // 4
    doc = head + "  paths: [" + ", ".join(["*z"] * n) + "]\n"
open(path, "w").write(doc[:size])
PY
}
for shape in 0 1; do
    aliases_file "$T_TMP/big.yaml" 1048000 $shape
    aliases_file "$T_TMP/quarter.yaml" 262000 $shape
    run validate "$T_TMP/big.yaml"
    check_rc "1 MiB of aliases (one per line: $shape): exit 1" 1
    check_contains "1 MiB of aliases (one per line: $shape): reported" "$OUT" "spec."
    big=$(cpu_seconds "$T_TMP/big.yaml")
    quarter=$(cpu_seconds "$T_TMP/quarter.yaml")
    # Linear: four times the input costs about four times the CPU (quadratic: sixteen).
    # The bound is loose for the sanitiser build and a busy machine (0.3 s measured
    # without sanitisers); the quadratic reader took minutes.
    if awk -v b="$big" -v q="$quarter" 'BEGIN { exit !(b < 10 && b < 8 * (q + 0.05)) }'; then
        pass "1 MiB of aliases (one per line: $shape): linear (${big}s, a quarter ${quarter}s)"
    else
        fail "1 MiB of aliases (one per line: $shape): linear" "1 MiB: ${big}s CPU, 256 KiB: ${quarter}s"
    fi
done

# The top-level help lists the command.
run --help
check_rc "lode --help: exit 0" 0
check_contains "lode --help: lists validate" "$OUT" "validate"

finish
