#!/usr/bin/env bash
# The differential test of `lode forget` against restic 0.14 (about 30 seconds):
# tests/run.sh runs tests/cli/test_*.sh, so this is its entry point. See
# tests/diff/restic/run.sh for the recipe and its knobs (LODE_DIFF_*).
exec bash "$(dirname "$0")/../diff/restic/run.sh"
