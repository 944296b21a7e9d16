#!/usr/bin/env bash
# Authenticated manifests and marks (docs/repository.md, "Authenticated manifests and
# marks"), against versitygw of tests/env/ (TLS, SigV4, posix backend). Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_tamper.sh
# Without a running environment it fails (lib.sh refuses): it never counts a skip.
#
# What a user checks: a snapshot of node-a, marked with `lode mark --suspicious`,
# restores and checks clean; then, one at a time and put back after each, bytes of its
# binary manifest are changed in the bucket (every byte of its public fields, every
# 16th byte of its sealed part, its last byte; it is cut short; it is replaced by the
# JSON encoding of earlier development builds),
# its mark's tag is edited or emptied, a mark and a pin made without the key are added, the
# manifest is moved to another host's prefix (under its id, and under another id), and
# its run record's sealed parent trees are edited: each is refused by `lode restore`
# (exit 1, nothing restored) and named by `lode check` (exit 1). Deleting the mark the
# detector recorded in the manifest is said by check as a note, not as damage.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
cleanup() { rm -rf "$T_TMP"; }
trap cleanup EXIT

env_lode_s3
unset LODE_POLICY_DOCUMENT LODE_REPOSITORY LODE_KEY_FILE
prefix=tamper-e2e-$$-$RANDOM
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
export LODE_KEY_FILE=$T_TMP/key
head -c 32 /dev/urandom | base64 >"$LODE_KEY_FILE"
chmod 600 "$LODE_KEY_FILE"
DATA=$ENV_DIR/s3/data/$S3_BUCKET/$prefix

# policy and run (OUT/ERR/RC)
# shellcheck source=tests/e2e/backup/lib.sh
source "$here/backup/lib.sh"

mkdir -p "$T_TMP/root/srv"
for i in 1 2 3; do echo "file $i" >"$T_TMP/root/srv/f$i"; done
run init
check_eq "init: exit 0" "$RC" 0
pol=$(policy t '[/srv]')
run backup --policy "$pol" --host node-a --root "$T_TMP/root" --output json
check_eq "first backup: exit 0" "$RC" 0
echo "file 4" >"$T_TMP/root/srv/f4"
run backup --policy "$pol" --host node-a --root "$T_TMP/root" --output json
check_eq "second backup (with a parent): exit 0" "$RC" 0
S=$(jq -r .snapshot.id <<<"$OUT")
run mark "$S" --suspicious
check_eq "lode mark --suspicious: exit 0" "$RC" 0
man=$DATA/snapshots/e2e/t/node-a/$S.json
mark=$DATA/snapshots/e2e/t/node-a/$S.suspicious
rec=$DATA/runs/e2e/t/node-a/$S.json
check_contains "the mark carries a tag" "$(cat "$mark")" '"tag"'

run restore "$S" --target "$T_TMP/r0"
check_eq "untouched: restore exits 0" "$RC" 0
run check
check_eq "untouched: check exits 0" "$RC" 0

# refused NAME: restore refuses (exit 1, nothing restored) and check names WHAT.
n=0
refused() { # NAME WHAT [ID]
	local id=${3:-$S}
	n=$((n + 1))
	run restore "$id" --target "$T_TMP/r$n"
	check_eq "$1: restore refuses (exit 1)" "$RC" 1
	check_eq "$1: ... and restores nothing" "$(find "$T_TMP/r$n" -type f 2>/dev/null | wc -l)" 0
	run check
	check_eq "$1: check finds it (exit 1)" "$RC" 1
	check_contains "$1: ... naming it" "$ERR" "$2"
}
# flip FILE OFFSET: the lowest bit of one byte of FILE changed in place.
flip() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059
	printf "$(printf '\\%03o' $((b ^ 1)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# The manifest is binary (docs/repository.md, "Run records and manifests"): its first
# bytes are the magic, the kind and the flags (incomplete, suspicious, parent), then
# the parent, maxRuntime, the nine counters and the agent in the clear, then the sealed
# part to the end. The first 40 bytes one by one (every public field of this manifest
# lies there), then every 16th byte, and the last (the tag): each changed byte is
# refused.
size=$(stat -c %s "$man")
cp "$man" "$T_TMP/saved"
offsets=$(seq 0 39; seq 40 16 $((size - 2)); echo $((size - 1)))
for off in $offsets; do
	flip "$man" "$off"
	if cmp -s "$man" "$T_TMP/saved"; then
		fail "manifest: byte $off: the edit changes the manifest"
	else
		refused "manifest: byte $off of $size changed" "$S"
	fi
	cp "$T_TMP/saved" "$man"
done
head -c $((size - 1)) "$T_TMP/saved" >"$man"
refused "manifest: its last byte cut off" "$S"
# The JSON encoding earlier development builds wrote is refused by name.
printf '{"format": 2, "id": "%s"}\n' "$S" >"$man"
refused "manifest: in the old JSON encoding" "$S"
check_contains "... saying which encoding and what to do" "$ERR" "JSON encoding of format 2"
cp "$T_TMP/saved" "$man"
run check
check_eq "every edit put back: check exits 0" "$RC" 0

# The mark: its tag changed, emptied; a mark made without the key.
cp "$mark" "$T_TMP/saved.mark"
# The tag's first character is replaced by another (A, or B where it was A): a change
# that copied a neighbour could leave it as it was.
sed -i 's/"tag": "A/"tag": "B/; t; s/"tag": "./"tag": "A/' "$mark"
refused "a mark whose tag was changed" "$S.suspicious"
: >"$mark"
refused "an empty mark" "$S.suspicious"
cp "$T_TMP/saved.mark" "$mark"
: >"$DATA/snapshots/e2e/t/node-a/$S.incomplete"
refused "an .incomplete mark made without the key" "$S.incomplete"
env_s3 DELETE "/$S3_BUCKET/$prefix/snapshots/e2e/t/node-a/$S.incomplete"
# A pin made without the key (docs/retention.md, "Pinned snapshots"): it keeps nothing, so
# restore is not refused for it, but check names it.
printf '{"reason":"mine"}' >"$DATA/snapshots/e2e/t/node-a/$S.pinned"
run check
check_eq "a pin made without the key: check exits 1" "$RC" 1
check_contains "... naming it" "$ERR" "snapshots/e2e/t/node-a/$S.pinned: the .pinned mark of $S"
run restore "$S" --target "$T_TMP/rpin"
check_eq "... and restore is not refused for it" "$RC" 0
env_s3 DELETE "/$S3_BUCKET/$prefix/snapshots/e2e/t/node-a/$S.pinned"
run check
check_eq "marks put back: check exits 0" "$RC" 0

# Moved to another host's prefix, under its id and under another.
mkdir -p "$DATA/snapshots/e2e/t/node-b"
mv "$man" "$DATA/snapshots/e2e/t/node-b/$S.json"
mv "$mark" "$DATA/snapshots/e2e/t/node-b/$S.suspicious"
refused "the manifest moved to node-b" "node-b/$S.json"
run snapshots
check_eq "the manifest moved to node-b: lode snapshots still lists (exit 0)" "$RC" 0
check_contains "... skipping it with a warning naming it" "$ERR" "skipping snapshots/e2e/t/node-b/$S.json"
mv "$DATA/snapshots/e2e/t/node-b/$S.json" "$man"
mv "$DATA/snapshots/e2e/t/node-b/$S.suspicious" "$mark"
T=${S%-*}-00000000000000aa
cp "$man" "$DATA/snapshots/e2e/t/node-b/$T.json"
refused "the manifest copied to node-b under another id" "node-b/$T.json" "$T"
rm "$DATA/snapshots/e2e/t/node-b/$T.json"

# The run record's sealed parent trees (what gc protects for a running backup): a byte
# near its end (inside the seal).
cp "$rec" "$T_TMP/saved.rec"
flip "$rec" $(($(stat -c %s "$rec") - 20))
run check
check_eq "run record: edited parent trees: check exit 1" "$RC" 1
check_contains "run record: ... naming it" "$ERR" "runs/e2e/t/node-a/$S.json"
cp "$T_TMP/saved.rec" "$rec"

# The mark the detector recorded, deleted: a note, not damage (lode mark --clear does it).
run mark "$S" --clear
check_eq "lode mark --clear: exit 0" "$RC" 0
run check
check_eq "a cleared mark the manifest did not record: check exits 0" "$RC" 0
run restore "$S" --target "$T_TMP/rlast"
check_eq "all put back: restore exits 0" "$RC" 0
check_eq "all put back: the files come back" "$(find "$T_TMP/rlast" -type f | wc -l)" 4

finish
