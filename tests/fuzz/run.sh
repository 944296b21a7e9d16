#!/usr/bin/env bash
# Runs each fuzz target given for FUZZ_SECONDS seconds, starting from its seed corpus
# (tests/fuzz/corpus/<target>/, committed) and a scratch copy that grows. Any crash,
# leak or timeout fails the run; the reproducer is left in build/fuzz/artifacts/.
set -eu
secs=${FUZZ_SECONDS:-60}
status=0
for bin in "$@"; do
    name=$(basename "$bin")
    seeds=tests/fuzz/corpus/$name
    work=build/fuzz/corpus/$name
    mkdir -p "$work" build/fuzz/artifacts
    [ -d "$seeds" ] && cp -n "$seeds"/* "$work"/ 2>/dev/null || true
    dict=()
    [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
    echo "fuzz: $name for ${secs}s"
    if ! "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=build/fuzz/artifacts/"$name"- "${dict[@]}" "$work" >build/fuzz/"$name".log 2>&1; then
        echo "fuzz: $name FAILED"; tail -n 40 build/fuzz/"$name".log; status=1
    else
        grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' build/fuzz/"$name".log | sed "s/^/fuzz: $name /"
    fi
done
exit $status
