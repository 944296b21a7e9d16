#!/usr/bin/env bash
# Runs every fuzz target in DIR over its committed seed corpus once (-runs=0: no
# search), so a parser change that crashes on a known input fails the tests.
# Prints "tests: N passed, M failed", one test per target.
set -u
dir=${1:-build/fuzz}
passed=0
failed=0
for src in tests/fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    bin=$dir/$name
    corpus=tests/fuzz/corpus/$name
    if [ ! -x "$bin" ]; then
        echo "not ok - $name: not built ($bin)"
        failed=$((failed + 1))
        continue
    fi
    if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
        echo "not ok - $name: no seed corpus in $corpus"
        failed=$((failed + 1))
        continue
    fi
    if "$bin" -runs=0 "$corpus" >"$dir/$name.check.log" 2>&1; then
        echo "ok - $name ($(ls "$corpus" | wc -l) seeds)"
        passed=$((passed + 1))
    else
        echo "not ok - $name"
        tail -n 20 "$dir/$name.check.log"
        failed=$((failed + 1))
    fi
done
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
