#!/usr/bin/env bash
# The project's lint: functions we ban; the layer rules (lint_layers.sh: no controller/
# file calls a file above it in ctl_int.h's list; lint_cli.sh: no engine code in cli/);
# strict YAML (lint_yaml.sh: no repeated key in what the project ships); clang-format.
#
# Banned, because each has hurt C programs like this one: strtok (hidden state,
# not reentrant), sprintf/strcpy/strcat/gets (no bound), atoi/atol (no error
# report), localtime/gmtime/mktime and their _r forms, tzset and setting TZ (the C
# library's global zone state: Lodestore reads the tz database itself), asctime/
# ctime. Tests may call localtime_r, which serves there as an oracle only.
set -u
cd "$(dirname "$0")/.."
status=0
banned='\b(strtok|strtok_r|sprintf|vsprintf|strcpy|strcat|gets|atoi|atol|atoll|localtime|localtime_r|gmtime|gmtime_r|mktime|timegm|tzset|asctime|ctime)[[:space:]]*\('
files=$(git ls-files --cached --others --exclude-standard 'internal/*.c' 'internal/*.h' 'agent/*.c' 'agent/*.h' 'cli/*.c' 'cli/*.h' 'controller/*.c' 'controller/*.h' 'bench/*.c')
if [ -n "$files" ]; then
    # Comments are stripped first so that a sentence may name a banned function.
    hits=$(for f in $files; do
        sed -E 's://.*$::' "$f" | perl -0pe 's{/\*.*?\*/}{ "\n" x (($& =~ tr/\n//)) }gse' |
            grep -nE "$banned" | sed "s|^|$f:|"
    done)
    tzhits=$(grep -nE 'setenv[[:space:]]*\([[:space:]]*"TZ"|putenv[[:space:]]*\([[:space:]]*"TZ=' $files)
    if [ -n "$hits$tzhits" ]; then
        echo "lint: banned functions:"; printf '%s\n' "$hits" "$tzhits" | sed '/^$/d'
        status=1
    fi
fi
scripts/lint_layers.sh || status=1
scripts/lint_cli.sh || status=1
all=$(git ls-files --cached --others --exclude-standard '*.c' '*.h')
if command -v clang-format >/dev/null; then
    bad=$(for f in $all; do clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
    if [ -n "$bad" ]; then
        echo "lint: not formatted (run 'make format'):"; printf '  %s\n' $bad
        status=1
    fi
else
    echo "lint: clang-format is missing (make setup)"; status=1
fi
bash scripts/lint_yaml.sh || status=1
[ $status -eq 0 ] && echo "lint: ok"
exit $status
