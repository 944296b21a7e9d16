#!/usr/bin/env bash
# A file list uploaded in parts, against versitygw of tests/env/ (TLS, SigV4, posix
# backend). Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_backup_list.sh
# Without a running environment it fails (lib.sh refuses): it never counts a skip.
#
# What a user checks: a backup of 100,000 files with long names, whose file list
# (about 16 MB) goes up as a multipart upload of several 5 MiB parts, restores byte
# for byte, passes `lode check --read-data`, and an unchanged re-run reads it back as
# its parent; a backup stopped by SIGTERM or at maxRuntime, or whose parts the storage refuses
# (tests/e2e/s3/faultproxy.c), while its list is uploading aborts the upload and
# writes no snapshot; a backup killed (SIGKILL) while its list is uploading leaves an
# unfinished upload and no snapshot; `lode gc` keeps that upload while it is younger
# than G - W (dry run or not), and once it is older (aged with touch(1): versitygw's
# posix backend takes an upload's initiation time from its directory's mtime) a dry
# run only reports it and gc aborts it; `lode gc --output json` keeps its shape.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
agent_pid=
PROXY_PID=
cleanup() {
	[[ -n $agent_pid ]] && kill -9 "$agent_pid" 2>/dev/null
	[[ -n $PROXY_PID ]] && kill "$PROXY_PID" 2>/dev/null
	rm -rf "$T_TMP"
}
trap cleanup EXIT

env_lode_s3
unset LODE_POLICY_DOCUMENT LODE_REPOSITORY LODE_KEY_FILE
prefix=list-e2e-$$-$RANDOM
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
export LODE_KEY_FILE=$T_TMP/key
head -c 32 /dev/urandom | base64 >"$LODE_KEY_FILE"
chmod 600 "$LODE_KEY_FILE"
DATA=$ENV_DIR/s3/data/$S3_BUCKET
# The uploads of this prefix: versitygw keeps one directory per upload under
# .sgwtmp/multipart/<hash of the key>/<upload id>; the hash is of prefix/meta/....
uploads() { find "$DATA/.sgwtmp/multipart" -mindepth 2 -maxdepth 2 -type d 2>/dev/null | grep -v '\.inprogress$' | sort; }
before=$(uploads)
our_uploads() { comm -13 <(echo "$before") <(uploads) | sed '/^$/d'; }

# policy and run (OUT/ERR/RC)
# shellcheck source=tests/e2e/backup/lib.sh
source "$here/backup/lib.sh"

# 100,000 files of distinct small contents, names of 200 random hex digits (about 140
# bytes a file in the list once compressed), in directories of 1,000.
python3 - "$T_TMP/root/tree" <<'EOF'
import os, random, sys
root = sys.argv[1]
rng = random.Random(12)
for d in range(100):
    dd = os.path.join(root, "d%03d" % d)
    os.makedirs(dd)
    for i in range(1000):
        name = "%0200x" % rng.getrandbits(800)
        with open(os.path.join(dd, name), "w") as f:
            f.write("%d.%d\n" % (d, i))
EOF
check_eq "tree: 100,000 files" "$(find "$T_TMP/root/tree" -type f | wc -l)" 100000

run init
check_eq "init: exit 0" "$RC" 0

# ---- a list of several parts: backup, restore, check, re-run ----
pol=$(policy big '[/tree]')
run backup --policy "$pol" --host node --root "$T_TMP/root" --output json
check_eq "backup of 100,000 files: exit 0" "$RC" 0
id=$(jq -r .snapshot.id <<<"$OUT")
check_eq "backup: 100,000 files counted" "$(jq -r .snapshot.files <<<"$OUT")" 100000
# The list's headers (a HEAD): a multipart object's ETag ends in -<parts>.
headers=$(curl -s --max-time 30 --cacert "$S3_CA_FILE" --aws-sigv4 "aws:amz:$S3_REGION:s3" \
	--user "$S3_ACCESS_KEY:$S3_SECRET_KEY" -H "x-amz-content-sha256: $(printf '' | sha256sum | cut -d' ' -f1)" \
	-I "$S3_ENDPOINT/$S3_BUCKET/$prefix/meta/e2e/big/node/$id.files")
check_contains "the file list is there" "$headers" " 200"
etag=$(grep -i '^etag:' <<<"$headers" | tr -d '\r"' | awk '{print $2}')
parts=${etag##*-}
if [[ $etag == *-* && $parts -ge 2 ]]; then
	pass "the file list went up as a multipart upload of $parts parts (ETag $etag)"
else
	fail "the file list went up as a multipart upload of 2 parts or more" "ETag: $etag"
fi
size=$(grep -i '^content-length:' <<<"$headers" | tr -d '\r' | awk '{print $2}')
[[ $size -gt $((10 << 20)) ]] && pass "the file list is over 10 MiB ($size bytes)" ||
	fail "the file list is over 10 MiB" "size: $size"
check_eq "no upload left open after the backup" "$(our_uploads)" ""

run restore "$id" --target "$T_TMP/restored"
check_eq "restore: exit 0" "$RC" 0
if diff -r --no-dereference "$T_TMP/root/tree" "$T_TMP/restored/tree" >"$T_TMP/diff" 2>&1; then
	pass "restore: the tree comes back byte for byte (diff -r)"
else
	fail "restore: the tree comes back byte for byte (diff -r)" "$(head -5 "$T_TMP/diff")"
fi
rm -rf "$T_TMP/restored"
run check --read-data
check_eq "check --read-data: exit 0" "$RC" 0

run backup --policy "$pol" --host node --root "$T_TMP/root" --output json
check_eq "unchanged re-run: exit 0" "$RC" 0
check_eq "unchanged re-run: no new bytes" "$(jq -r .snapshot.newBytes <<<"$OUT")" 0
[[ $ERR != *"parent's file list"* && $ERR != *"without a parent"* ]] &&
	pass "unchanged re-run: the parent's list (several parts) read back as its parent" ||
	fail "unchanged re-run: the parent's list read back as its parent" "$ERR"

# ---- stopped while the list uploads ----
# slow_backup NAME [REPO]: starts a backup paced at 1 MiB/s in the background (its
# output in $T_TMP/NAME.out) and waits until its file list's upload holds a part.
slow_backup() {
	local pol
	pol=$(policy "$1" '[/tree]' "uploadRate: 1MiB/s")
	LODE_REPOSITORY=${2:-$LODE_REPOSITORY} "$LODE" backup --policy "$pol" --host node \
		--root "$T_TMP/root" >"$T_TMP/$1.out" 2>&1 &
	agent_pid=$!
	env_wait 240 "a part of $1's file list" has_part
}
has_part() {
	local u
	u=$(our_uploads)
	[[ -n $u && -n $(find "$u" -maxdepth 1 -type f -name '[0-9]*') ]]
}
# agent_wait: the background backup's exit code.
agent_wait() {
	{ wait "$agent_pid"; } 2>/dev/null
	AGENT_RC=$?
	agent_pid=
}

# SIGTERM: the backup aborts its upload and writes no snapshot.
if slow_backup term; then
	kill -TERM "$agent_pid"
	agent_wait
	check_eq "SIGTERM with the list's upload open: exit 1" "$AGENT_RC" 1
	check_contains "SIGTERM: says why" "$(cat "$T_TMP/term.out")" "stopped by a signal"
	check_eq "SIGTERM: the upload is aborted" "$(our_uploads)" ""
else
	fail "SIGTERM: a part of the list went up" "$(cat "$T_TMP/term.out")"
fi

# maxRuntime passing while the list uploads: paced at 512 KiB/s the list alone takes
# about 32 s and its first part is up 10 s after the walk begins, so a maxRuntime of
# 25 s falls while the upload is open even when a loaded machine walks slowly. The
# backup stops, aborts its upload and writes no snapshot.
pol=$(policy maxrt '[/tree]' "uploadRate: 512KiB/s")
"$LODE" backup --policy "$pol" --host node --root "$T_TMP/root" --max-runtime 25s \
	>"$T_TMP/maxrt.out" 2>&1 &
agent_pid=$!
seen=0
env_wait 60 "a part of maxrt's file list" has_part && seen=1
agent_wait
check_eq "maxRuntime: the list's upload was open before it passed" "$seen" 1
check_eq "maxRuntime with the list's upload open: exit 1" "$AGENT_RC" 1
check_contains "maxRuntime: says why" "$(cat "$T_TMP/maxrt.out")" "maxRuntime"
check_eq "maxRuntime: the upload is aborted" "$(our_uploads)" ""

# Parts failing (503 for every attempt): the backup fails and aborts its upload.
if env_build_tool faultproxy 2>"$T_TMP/cc.log" && env_fault_proxy_start; then
	if slow_backup fault "s3:$PROXY/$S3_BUCKET/$prefix"; then
		env_fault 503/6
		agent_wait
		check_eq "the storage refusing a part 6 times: exit 1" "$AGENT_RC" 1
		check_contains "refused part: says which object" "$(cat "$T_TMP/fault.out")" "file list"
		check_eq "refused part: the upload is aborted" "$(our_uploads)" ""
	else
		fail "fault: a part of the list went up" "$(cat "$T_TMP/fault.out")"
	fi
	kill "$PROXY_PID" 2>/dev/null
else
	fail "build and start the fault proxy" "$(cat "$T_TMP/cc.log" "$T_TMP/proxy.log" 2>/dev/null)"
fi
run snapshots --output json
check_eq "stopped and failed backups: no snapshot of them" \
	"$(jq '[.snapshots[] | select(.policy == "e2e/term" or .policy == "e2e/fault" or .policy == "e2e/maxrt")] | length' <<<"$OUT")" 0

# ---- killed while the list uploads: the upload stays, gc aborts it only once old ----
if slow_backup slow && kill -9 "$agent_pid"; then
	pass "a backup killed (SIGKILL) with its file list's upload open"
else
	fail "a backup killed (SIGKILL) with its file list's upload open" "$(cat "$T_TMP/slow.out")"
fi
agent_wait
upload=$(our_uploads)
check_eq "killed: one unfinished upload" "$(wc -l <<<"$upload")" 1
run snapshots --output json
check_eq "killed: no snapshot of it" "$(jq '[.snapshots[] | select(.policy == "e2e/slow")] | length' <<<"$OUT")" 0

run gc --dry-run
check_eq "gc --dry-run, young upload: exit 0" "$RC" 0
check_contains "gc --dry-run, young upload: kept" "$OUT" "unfinished uploads: 1, would abort 0, kept 1"
run gc
check_eq "gc, young upload: exit 0" "$RC" 0
check_contains "gc, young upload: kept" "$OUT" "unfinished uploads: 1, aborted 0, kept 1"
check_eq "gc, young upload: still there" "$(our_uploads)" "$upload"

# Begun ten days ago: older than G - W (W is the largest maxRuntime plus an hour).
touch -d "@$(($(date +%s) - 10 * 86400))" "$upload"
run gc --dry-run
check_contains "gc --dry-run, old upload: would abort it" "$OUT" "would abort the unfinished upload of meta/e2e/slow/node/"
check_contains "gc --dry-run, old upload: counted" "$OUT" "unfinished uploads: 1, would abort 1, kept 0"
check_eq "gc --dry-run, old upload: still there" "$(our_uploads)" "$upload"
run gc --output json
check_eq "gc --output json, old upload: exit 0" "$RC" 0
check_eq "gc --output json: the same keys as ever" "$(jq -c 'keys, (.packs | keys)' <<<"$OUT" | tr '\n' ' ')" \
	'["bytesFreed","packs"] ["deleted","kept","total"] '
check_contains "gc --output json: the aborted upload said on stderr" "$ERR" "unfinished uploads: 1, aborted 1, kept 0"
check_eq "gc, old upload: aborted" "$(our_uploads)" ""
run check
check_eq "check after gc: exit 0" "$RC" 0

finish
