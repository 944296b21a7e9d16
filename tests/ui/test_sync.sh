#!/usr/bin/env bash
# The page's pure logic (web/src/sync.ts: the form and the YAML in step; restore.ts: a Restore's YAML; buckets.ts:
# the retention timeline's columns; diags.ts: which errors are shown) under
# Vitest, counted as tests/run.sh counts: one closing "N passed, M failed" line.
cd "$(dirname "$0")/../../web" || exit 2
if ! command -v npx >/dev/null || [ ! -d node_modules/vitest ]; then
    echo "not ok - Node.js and web/node_modules (npm ci in web/) are needed for the page's unit tests"
    echo "0 passed, 1 failed"
    exit 1
fi
# Colour off, and any escape that still comes stripped: CI sets CI=true, under which
# Vitest colours its summary and the counts below would not be found.
out=$(NO_COLOR=1 FORCE_COLOR=0 npx vitest run --reporter=verbose 2>&1)
rc=$?
out=$(sed -E 's/\x1b\[[0-9;]*[A-Za-z]//g' <<<"$out")
echo "$out"
p=$(grep -Eo 'Tests +([0-9]+ failed \| )?[0-9]+ passed' <<<"$out" | grep -Eo '[0-9]+ passed' | grep -Eo '[0-9]+')
f=$(grep -Eo 'Tests +[0-9]+ failed' <<<"$out" | grep -Eo '[0-9]+')
echo "${p:-0} passed, ${f:-0} failed"
[ "$rc" -eq 0 ]
