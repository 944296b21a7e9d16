#!/usr/bin/env bash
# lode gc, lode mark and lode forget's repository mode: flags, usage errors and a
# missing repository, without any storage (tests/e2e/test_forget_gc.sh runs them
# against versitygw).
source "$(dirname "$0")/lib.sh"
unset LODE_REPOSITORY LODE_KEY_FILE LODE_CACERT

printf '%s\n' 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' \
    'metadata: {name: web, namespace: ops}' 'spec:' '  repository: main' '  paths: [/etc]' \
    '  retention: {keepLast: 3}' >"$T_TMP/web.yaml"
printf '[]\n' >"$T_TMP/none.json"
ID=20261202T170127Z-9f3c2a1b7d4e6058

# ---- gc ----
run gc --help
check_rc "gc --help: exit 0" 0
check_contains "gc --help: the usage line" "$OUT" "usage: lode gc [--dry-run] [--output text|json] [--max-runtime D]"
check_contains "gc --help: names the rule's page" "$OUT" "docs/gc.md"
run gc
check_rc "gc without a repository: exit 2" 2
check_contains "gc without a repository: says how to name one" "$ERR" "LODE_REPOSITORY"
run gc --max-runtime 0s
check_rc "gc --max-runtime 0s: exit 2" 2
run gc --max-runtime soon
check_rc "gc --max-runtime soon: exit 2" 2
check_contains "gc --max-runtime soon: names the flag" "$ERR" "--max-runtime"
run gc --output yaml
check_rc "gc --output yaml: exit 2" 2
run gc extra
check_rc "gc with an argument: exit 2" 2
check_contains "gc with an argument: names it" "$ERR" 'unexpected argument "extra"'
run gc --repo ftp://example/bucket
check_rc "gc with a repository that is not s3: exit 2" 2

# ---- mark ----
run mark --help
check_rc "mark --help: exit 0" 0
check_contains "mark --help: the usage line" "$OUT" "usage: lode mark ID (--suspicious | --clear | --pin REASON | --unpin)"
run mark
check_rc "mark without an id: exit 2" 2
check_contains "mark without an id: says so" "$ERR" "snapshot ID is required"
run mark "$ID"
check_rc "mark without --suspicious or --clear: exit 2" 2
run mark "$ID" --clear --suspicious
check_rc "mark with both: exit 2" 2
run mark 20261202-nope --suspicious
check_rc "mark with a malformed id: exit 2" 2
check_contains "mark with a malformed id: says what an id is" "$ERR" "YYYYMMDDTHHMMSSZ"
run mark "$ID" "$ID" --suspicious
check_rc "mark with two ids: exit 2" 2
run mark "$ID" --suspicious --host a/b
check_rc "mark --host with a '/': exit 2" 2
run mark "$ID" --suspicious --policy 'a/b/c'
check_rc "mark --policy that is neither a file nor NS/NAME: exit 2" 2
run mark "$ID" --suspicious
check_rc "mark without a repository: exit 2" 2
check_contains "mark without a repository: says how to name one" "$ERR" "LODE_REPOSITORY"

# ---- forget, repository mode ----
run forget --help
check_contains "forget --help: both forms" "$OUT" "lode forget --policy FILE|NS/NAME [--host H]"
run forget --policy "$T_TMP/web.yaml" --snapshots "$T_TMP/none.json" --host node
check_rc "forget --snapshots with --host: exit 2" 2
check_contains "forget --snapshots with --host: says why" "$ERR" "not for --snapshots FILE"
run forget --policy "$T_TMP/web.yaml" --repo s3:https://127.0.0.1:9/bucket --host 'a/b'
check_rc "forget --host with a '/': exit 2" 2
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
run forget --policy "$T_TMP/web.yaml" --repo s3:https://127.0.0.1:1/bucket --dry-run
check_rc "forget with nothing listening: exit 2" 2
check_contains "forget with nothing listening: nothing was deleted" "$ERR" "nothing was deleted"
run forget --policy "$T_TMP/web.yaml"
check_rc "forget with neither --snapshots nor a repository: exit 2" 2
check_contains "forget with neither: names both" "$ERR" "--snapshots FILE is required, or a repository"

finish
