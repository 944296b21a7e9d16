#!/usr/bin/env bash
# lode backup's node cache (docs/repository.md, "The node's cache"), against a versitygw of
# its own on 127.0.0.1 (tests/env/build-tools.sh builds it when missing; no cluster), its
# requests counted from versitygw's access log:
#   - a re-run with a warm cache makes the same requests for 1,000 files and for 10,000,
#     with a history of one snapshot or of five: no GET of a metadata pack or a manifest,
#     and fewer requests than the same re-run with --no-cache;
#   - a cached file changed or cut short is found ("does not verify"), deleted, read from
#     the bucket again (one GET more) and rewritten; the backup succeeds and lode check
#     finds no damage;
#   - a pack the bucket lost is not taken from the cache: the run goes without a parent;
#   - a temporary file of a process that died is removed once old; entries no snapshot
#     needs are evicted; directories are mode 700 and files 600;
#   - the flags: --cache-dir with --no-cache, an empty --cache-dir, a cache that cannot
#     be made (the run goes on without it).
source "$(dirname "$0")/lib.sh"
cd "$LODE_ROOT" || exit 1
unset LODE_REPOSITORY LODE_KEY_FILE LODE_CACERT LODE_POLICY_DOCUMENT
BUILD=${BUILD:-build}
# shellcheck source=bench/backup/lib.sh
source bench/backup/lib.sh
if ! tests/env/build-tools.sh versitygw >"$T_TMP/build.log" 2>&1; then
	fail "versitygw is built (tests/env/build-tools.sh versitygw)" "$(tail -n 5 "$T_TMP/build.log")"
	finish
	exit 1
fi
VGW=$(tests/env/build-tools.sh --dir versitygw)/versitygw
trap 'bench_vgw_stop; rm -rf "$T_TMP"' EXIT
bench_vgw_start "$T_TMP" || {
	fail "versitygw starts"
	finish
	exit 1
}
bench_bucket lode-cache-test
export LODE_REPOSITORY=s3:$S3_ENDPOINT/lode-cache-test
export LODE_KEY_FILE=$T_TMP/key
head -c 32 /dev/urandom | base64 >"$LODE_KEY_FILE"
chmod 600 "$LODE_KEY_FILE"
CACHE=$T_TMP/cache
DATA=$VGW_DATA/lode-cache-test
printf '%s\n' 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' \
	'metadata: {name: web, namespace: ops}' 'spec:' '  repository: main' '  paths: [/tree]' \
	>"$T_TMP/policy.yaml"

mktree() { # DIR N: N small files of distinct contents in directories of 1,000
	python3 - "$1" "$2" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "tree", "d%03d" % (i // 1000))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d" % (i % 1000)), "w") as f:
        f.write("file %d of %d\n" % (i, n))
EOF
}
mktree "$T_TMP/small" 1000
mktree "$T_TMP/big" 10000

# backup HOST ROOT [FLAGS...]: one backup; leaves RC, OUT, ERR, REQS (requests) and
# GETS (GETs of metadata packs and manifests) of it.
backup() {
	local host=$1 root=$2 before
	shift 2
	before=$(wc -l <"$VGW_LOG")
	run backup --policy "$T_TMP/policy.yaml" --host "$host" --root "$root" --output json "$@"
	REQS=$(($(wc -l <"$VGW_LOG") - before))
	GETS=$(tail -n +"$((before + 1))" "$VGW_LOG" | awk '$8 == "s3_GetObject" && ($9 ~ /^meta\// || $9 ~ /^snapshots\//)' | wc -l)
}

run init
check_rc "init: exit 0" 0

# ---- a history of one snapshot, then of five, for 1,000 and 10,000 files ----
declare -A warm
for host in small big; do
	backup "$host" "$T_TMP/$host" --cache-dir "$CACHE"
	check_rc "$host: first backup: exit 0" 0
	backup "$host" "$T_TMP/$host" --cache-dir "$CACHE"
	check_rc "$host: re-run: exit 0" 0
	warm[$host-1]=$REQS
	check_eq "$host: a warm re-run reads no metadata pack and no manifest" "$GETS" 0
	for _ in 1 2 3; do backup "$host" "$T_TMP/$host" --cache-dir "$CACHE"; done
	backup "$host" "$T_TMP/$host" --cache-dir "$CACHE"
	check_rc "$host: fifth re-run: exit 0" 0
	warm[$host-5]=$REQS
	check_eq "$host: a warm re-run after five snapshots reads no metadata pack and no manifest" "$GETS" 0
done
check_eq "warm re-runs: 1,000 and 10,000 files, one and five snapshots: the same requests" \
	"${warm[small-1]} ${warm[small-5]} ${warm[big-1]}" "${warm[big-5]} ${warm[big-5]} ${warm[big-5]}"
[[ ${warm[big-5]} -le 8 ]] && pass "a warm unchanged re-run: ${warm[big-5]} requests (at most 8)" ||
	fail "a warm unchanged re-run: at most 8 requests" "${warm[big-5]}"
backup big "$T_TMP/big" --no-cache
check_rc "big: --no-cache: exit 0" 0
[[ $REQS -gt ${warm[big-5]} && $GETS -ge 2 ]] &&
	pass "big: --no-cache reads the parent's metadata and the manifests ($REQS requests, $GETS of them those GETs)" ||
	fail "big: --no-cache makes more requests" "$REQS requests, $GETS GETs, warm ${warm[big-5]}"
# The --no-cache run's manifest is not cached: the next run reads it once.
backup big "$T_TMP/big" --cache-dir "$CACHE"
check_eq "big: after a --no-cache run, the cache reads its manifest once" "$GETS" 1
[[ -d $CACHE/meta ]] && pass "the cache is under DIR/meta" || fail "the cache is under DIR/meta" "$(ls -R "$CACHE" | head)"
src=$(find "$CACHE/meta" -type d -path '*/ops/web/big')
check_eq "one directory per source: ops/web/big" "$(wc -l <<<"$src")" 1
check_eq "directories mode 700" "$(find "$CACHE" -type d ! -perm 700 | wc -l)" 0
check_eq "files mode 600" "$(find "$CACHE" -type f ! -perm 600 | wc -l)" 0
# What stays after a run: the packs of the newest snapshot's trees and the manifests read.
check_eq "evicted: at most eight manifests stay" "$(($(find "$src" -name '*.manifest' | wc -l) <= 8))" 1
check_eq "evicted: one metadata pack (the first run's) stays" "$(find "$src" -name '*.meta' | wc -l)" 1

# ---- a damaged cache: found, read again, rewritten; the backup succeeds ----
pack=$(find "$src" -name '*.meta')
printf 'X' | dd of="$pack" bs=1 seek=100 conv=notrunc status=none
backup big "$T_TMP/big" --cache-dir "$CACHE"
check_rc "a changed metadata pack in the cache: the backup succeeds" 0
check_contains "... it says the file does not verify" "$ERR" "does not verify"
check_eq "... and reads the pack from the bucket once (one request more)" "$REQS" "$((warm[big-5] + 1))"
[[ $ERR != *"without a parent"* ]] && pass "... and keeps its parent" || fail "... and keeps its parent" "$ERR"
backup big "$T_TMP/big" --cache-dir "$CACHE"
check_eq "... then the rewritten copy serves the next run" "$REQS $GETS" "${warm[big-5]} 0"
truncate -s -10 "$pack"
# The newest manifest, the parent's, which the next run reads for certain (an older one
# is read only by the anomaly check, and only when its snapshot counts there).
m=$(find "$src" -name '*.manifest' | sort | tail -n 1)
truncate -s 20 "$m"
backup big "$T_TMP/big" --cache-dir "$CACHE"
check_rc "a pack and a manifest cut short: the backup succeeds" 0
check_eq "... both are found" "$(grep -c "does not verify" <<<"$ERR")" 2
run check
check_rc "lode check after the damaged caches: exit 0" 0

# ---- a process that died mid-write, a file of no snapshot, another key ----
echo partial >"$src/x.0.meta.tmp.0011223344556677"
echo partial >"$src/y.0.meta.tmp.8899aabbccddeeff"
touch -d '2 hours ago' "$src/x.0.meta.tmp.0011223344556677"
echo stale >"$src/20200101T000000Z-0000000000000000.0.meta"
backup big "$T_TMP/big" --cache-dir "$CACHE"
check_rc "temporary files beside the entries: the backup succeeds" 0
check_eq "an old temporary file is removed, a young one kept, an entry of no snapshot evicted" \
	"$(ls "$src" | grep -c -e 'x.0.meta.tmp' -e 'y.0.meta.tmp' -e '20200101T000000Z')" 1
head -c 32 /dev/urandom | base64 >"$T_TMP/key2"
chmod 600 "$T_TMP/key2"
bench_bucket lode-cache-other
LODE_REPOSITORY=s3:$S3_ENDPOINT/lode-cache-other LODE_KEY_FILE=$T_TMP/key2 run init
LODE_REPOSITORY=s3:$S3_ENDPOINT/lode-cache-other LODE_KEY_FILE=$T_TMP/key2 \
	run backup --policy "$T_TMP/policy.yaml" --host big --root "$T_TMP/big" --cache-dir "$CACHE"
check_rc "another repository beside it in the same cache: exit 0" 0
check_eq "... in a directory of its own" "$(find "$CACHE/meta" -mindepth 1 -maxdepth 1 -type d | wc -l)" 2

# ---- a pack the bucket lost is not taken from the cache ----
lost=$(basename "$(find "$src" -name '*.meta' | head -n 1)")
rm "$DATA/meta/ops/web/big/$lost"
backup big "$T_TMP/big" --cache-dir "$CACHE"
check_rc "a metadata pack gone from the bucket but cached: the backup succeeds" 0
check_contains "... without a parent (the cache does not vouch for the bucket)" "$ERR" "without a parent"
check_eq "... and its trees are stored again (a new metadata pack)" \
	"$(find "$DATA/meta/ops/web/big" -name "$(jq -r .snapshot.id <<<"$OUT").*.meta" | wc -l)" 1

# ---- flags ----
run backup --policy "$T_TMP/policy.yaml" --host big --root "$T_TMP/big" --cache-dir "$CACHE" --no-cache
check_rc "--cache-dir with --no-cache: exit 2" 2
check_contains "... says why" "$ERR" "exclude each other"
run backup --policy "$T_TMP/policy.yaml" --host big --root "$T_TMP/big" --cache-dir ""
check_rc "an empty --cache-dir: exit 2" 2
: >"$T_TMP/a-file"
backup small "$T_TMP/small" --cache-dir "$T_TMP/a-file"
check_rc "a cache that cannot be made: the backup succeeds" 0
check_contains "... and says it goes on without it" "$ERR" "going on without it"
run backup --help
check_contains "backup --help: the cache flags" "$OUT" "[--cache-dir DIR | --no-cache]"

finish
