#!/usr/bin/env bash
# The layering of cli/ (README.md, "Layout"): cli/ holds the commands and the answers
# they share; the work on a repository is agent/'s. A file of cli/ may therefore not
#   - include a header of internal/s3, internal/chunker or internal/gc, nor
#   - call the functions that read or write a repository's objects: s3_*, chunker_*,
#     gc_* (the collection's rule), repo_pack_*, repo_blob_*, repo_seal/repo_unseal,
#     repo_files_*, repo_chunkset_*, repo_merge_*.
# It reaches the repository through agent/*.h (storage_*, backup_*, rx_*, ck_*,
# gcrun_*, forget_*) and may use internal/repo's names, keys and catalog as data.
# Comments are stripped first, so a sentence may name anything.
set -u
cd "$(dirname "$0")/.."
status=0
incl='^[[:space:]]*#[[:space:]]*include[[:space:]]*"(s3|chunker|gc)/'
calls='\b(s3|chunker|gc|repo_pack|repo_blob|repo_files|repo_chunkset|repo_merge)_[a-z0-9_]+[[:space:]]*\(|\brepo_(seal|unseal)[a-z_]*[[:space:]]*\('
files=$(git ls-files --cached --others --exclude-standard 'cli/*.c' 'cli/*.h')
hits=$(for f in $files; do
    sed -E 's://.*$::' "$f" | perl -0pe 's{/\*.*?\*/}{ "\n" x (($& =~ tr/\n//)) }gse' |
        grep -nE "$incl|$calls" | sed "s|^|$f:|"
done)
if [ -n "$hits" ]; then
    echo "lint: engine code in cli/ (it belongs in agent/; scripts/lint_cli.sh says why):"
    printf '%s\n' "$hits"
    status=1
fi
exit $status
