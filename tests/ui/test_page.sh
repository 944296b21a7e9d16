#!/usr/bin/env bash
# The page of lode ui in Debian's chromium (tests/ui/page.mjs), without a cluster.
# Needs the page built into lode (npm) and chromium (make setup); either missing is
# a failure, never a skip. Screenshots go to build/ui-artifacts/.
source "$(dirname "$0")/../cli/lib.sh"
cd "$LODE_ROOT" || exit 2
export KUBECONFIG=$T_TMP/no-such-kubeconfig
if ! command -v node >/dev/null || [ ! -d web/node_modules/playwright-core ]; then
    fail "Node.js and web/node_modules (npm ci in web/) are needed for the browser tests"
    finish
    exit 1
fi
"$LODE" ui --listen 127.0.0.1:0 >"$T_TMP/ui.out" 2>"$T_TMP/ui.err" &
UI_PID=$!
trap 'kill $UI_PID 2>/dev/null; wait $UI_PID 2>/dev/null; rm -rf "$T_TMP"' EXIT
for _ in $(seq 100); do
    grep -q '^http://' "$T_TMP/ui.out" 2>/dev/null && break
    kill -0 $UI_PID 2>/dev/null || break
    sleep 0.1
done
URL=$(head -n1 "$T_TMP/ui.out")
if [ "$(curl -s -H "Authorization: Bearer ${URL##*token=}" "${URL%%/?token=*}/api/info" | jq .pageBuilt)" != true ]; then
    fail "this lode was built with the page (npm was missing when it was built?)" "$(cat "$T_TMP/ui.err")"
    finish
    exit 1
fi
mkdir -p build/ui-artifacts
LODE_UI_PERF=build/ui-artifacts/perf.json timeout 300 node tests/ui/page.mjs "$URL"
