#!/usr/bin/env bash
# The main job until the controller lands: build lode, validate the example policy,
# show a policy with mistakes being rejected, the next runs of the example on a host,
# and what its retention keeps of a generated history.
set -euo pipefail
cd "$(dirname "$0")/.."
lode=build/lode
example=docs/examples/etc-and-home.yaml

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "lode version"
$lode version

step "lode validate $example"
$lode validate "$example" && echo "valid"

step "a policy with mistakes: every error in one run, each with its line and column"
bad=$(mktemp --suffix=.yaml)
trap 'rm -f "$bad"' EXIT
sed -e 's/^  retention:/  retension:/' -e 's/nice: 10/nice: 20/' -e 's/jitter: 15m/jitter: 1h30m/' "$example" >"$bad"
$lode validate "$bad" || echo "(exit $?: invalid, as expected)"

step "lode schedule: the next runs for host node-1, across the spring DST change in Kyiv"
$lode schedule "$example" --host node-1 --from 2026-03-26T00:00:00Z --count 5

step "lode forget: what the example's retention keeps of 100 nightly snapshots"
$lode forget --dry-run --policy "$example" --snapshots docs/examples/snapshots.json | tail -n 20
