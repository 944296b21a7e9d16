#!/usr/bin/env bash
# Runs every benchmark (make bench): each bench/<name>/run.sh in turn, with BUILD
# pointing at the unsanitised build. A benchmark that fails makes the run fail,
# after the others have run.
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
status=0
for b in bench/*/run.sh; do
    [ -e "$b" ] || continue
    echo "== $b"
    if ! bash "$b"; then
        echo "== $b FAILED"
        status=1
    fi
    echo
done
exit $status
