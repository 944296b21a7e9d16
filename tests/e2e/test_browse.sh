#!/usr/bin/env bash
# lode ls, find, diff and dump (docs/browsing.md) against versitygw of tests/env/ (TLS,
# SigV4). Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_browse.sh
# Without a running environment it fails (lib.sh refuses): it never counts a skip.
#
# What a user checks, on a tree with odd names (spaces, a newline, UTF-8, leading
# dashes), symlinks, hard links, a FIFO and 20,000 small files beside them: each
# command's output, text and JSON, against the tree; the number of requests each makes
# (counted by tests/e2e/s3/faultproxy.c in front of versitygw), which does not grow with
# the tree (a directory of 3 entries costs what the docs say, and the diff of two
# identical snapshots reads no metadata chunk at all); and every error: a snapshot that
# does not exist, an id that is not one, a path the snapshot lacks, a dump of a
# directory or a symlink, a wrong key, and a deleted metadata pack.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
PROXY_PID=
cleanup() {
	[[ -n $PROXY_PID ]] && kill "$PROXY_PID" 2>/dev/null
	rm -rf "$T_TMP"
}
trap cleanup EXIT

env_lode_s3
unset LODE_POLICY_DOCUMENT LODE_REPOSITORY LODE_KEY_FILE
prefix=browse-e2e-$$-$RANDOM
REPO=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
export LODE_REPOSITORY=$REPO
export LODE_KEY_FILE=$T_TMP/key
DATA=$ENV_DIR/s3/data/$S3_BUCKET/$prefix

# shellcheck source=tests/e2e/backup/lib.sh
source "$here/backup/lib.sh" # policy, run (OUT ERR RC)

# ---- the tree: /data on a node whose / is $node ----
node=$T_TMP/node
d=$node/data
mkdir -p "$d/with space" "$d/-dir" "$d/empty" "$d/sub/deeper"
echo one >"$d/one"
echo spaced >"$d/with space/a file"
echo newline >"$d/new"$'\n'"line"
echo utf8 >"$d/été-日本.txt"
echo dash >"$d/-dash"
echo in-dash-dir >"$d/-dir/--x"
echo deep >"$d/sub/deeper/file"
head -c 3M /dev/urandom >"$d/big.bin"
ln -s one "$d/link"
ln -s "with space/a file" "$d/link-spaced"
ln "$d/one" "$d/sub/hard"
mkfifo "$d/fifo"
chmod 0640 "$d/one"
touch -d '2021-05-06 07:08:09' "$d/-dash"
python3 - "$d/many" <<'EOF'
import os, sys
for i in range(20000):
    p = os.path.join(sys.argv[1], "d%02d" % (i // 1000))
    os.makedirs(p, exist_ok=True)
    with open(os.path.join(p, "f%05d" % i), "w") as f:
        f.write("%d\n" % i)
EOF
nentries=$(find "$d" -printf x | wc -c) # one name holds a newline

"$LODE" init --generate-key >/dev/null 2>&1 || true
[[ -s $LODE_KEY_FILE ]] && pass "init --generate-key" || fail "init --generate-key" "no key file"
pol=$(policy browse '[/data]')
snap() { # HOST: a backup of $node, its id in $SNAP
	run backup --policy "$pol" --host "$1" --root "$node" --output json
	SNAP=$(jq -r .snapshot.id <<<"$OUT" 2>/dev/null)
	[[ $RC == 0 && $SNAP =~ ^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{16}$ ]] && pass "backup of $1: $SNAP" ||
		fail "backup of $1" "$RC $ERR"
}
snap h1
A=$SNAP

# ---- lode ls ----
run ls "$A" /data
check_eq "ls /data: exit 0" "$RC" 0
check_eq "ls /data: one line per entry, the newline escaped" "$(wc -l <<<"$OUT")" 13
check_contains "ls: a name with a newline is one line" "$OUT" '/data/new\nline'
check_contains "ls: a symlink and its target" "$OUT" "/data/link-spaced -> with space/a file"
check_contains "ls: mode, owner, size, time" "$OUT" "$(printf -- '-rw-r----- %6u %6u %12u %s /data/one' "$(id -u)" "$(id -g)" 4 "$(date -u -r "$d/one" +%FT%TZ)")"
check_contains "ls: a FIFO" "$OUT" "prw-r--r--"
check_contains "ls: UTF-8 as is" "$OUT" "/data/été-日本.txt"
check_contains "ls: a time in UTC" "$OUT" "2021-05-06T07:08:09Z /data/-dash"
run ls "$A" /data/sub
check_contains "ls: a hard link names its first path" "$OUT" "/data/sub/hard (hard link to /data/one)"
run ls "$A" /data --output json
check_eq "ls --output json: exit 0" "$RC" 0
check_eq "ls json: the names, in path order" "$(jq -r '[.entries[].name] | @json' <<<"$OUT")" \
	'["-dash","-dir","big.bin","empty","fifo","link","link-spaced","many","new\nline","one","sub","with space","été-日本.txt"]'
check_eq "ls json: a symlink" "$(jq -c '.entries[] | select(.name == "link") | [.type, .target, .size]' <<<"$OUT")" \
	'["symlink","one",0]'
check_eq "ls json: a file" "$(jq -c '.entries[] | select(.name == "one") | [.type, .mode, .size, .link]' <<<"$OUT")" \
	'["file","0640",4,null]'
check_eq "ls json: keys of an entry" "$(jq -c '.entries[0] | keys_unsorted' <<<"$OUT")" \
	'["path","name","type","mode","uid","gid","size","mtime","target","link"]'
check_eq "ls json: snapshot and path" "$(jq -c '[.snapshot, .path]' <<<"$OUT")" "[\"$A\",\"/data\"]"
run ls "$A" /data/-dir/
check_eq "ls of a directory with a leading dash (and a trailing /)" "$OUT" \
	"$(printf -- '-rw-r--r-- %6u %6u %12u %s /data/-dir/--x' "$(id -u)" "$(id -g)" 12 "$(date -u -r "$d/-dir/--x" +%FT%TZ)")"
run ls "$A" "/data/with space/a file"
check_eq "ls of a file: its own entry" "$(wc -l <<<"$OUT"),$RC" "1,0"
run ls "$A"
check_contains "ls /: the policy's path" "$OUT" " /data"
check_eq "ls /: one entry" "$(wc -l <<<"$OUT")" 1
run ls -R "$A" /data --output json
check_eq "ls -R: every entry under /data" "$(jq '.entries | length' <<<"$OUT")" "$((nentries - 1))"
check_eq "ls -R: no path twice" "$(jq '[.entries[].path] | unique | length' <<<"$OUT")" "$((nentries - 1))"

# ---- lode dump ----
"$LODE" dump "$A" /data/big.bin >"$T_TMP/big.out" 2>"$T_TMP/err"
check_eq "dump big.bin: exit 0" "$?" 0
cmp -s "$T_TMP/big.out" "$d/big.bin" && pass "dump: 3 MiB come back byte for byte" ||
	fail "dump: byte for byte" "$(cmp "$T_TMP/big.out" "$d/big.bin" 2>&1)"
run dump "$A" "/data/new"$'\n'"line"
check_eq "dump of a name with a newline" "$OUT,$RC" "newline,0"
run dump "$A" /data/-dir/--x
check_eq "dump of a name with leading dashes" "$OUT,$RC" "in-dash-dir,0"
run dump "$A" /data/sub/hard
check_eq "dump of a hard link" "$OUT,$RC" "one,0"

# ---- a second snapshot, and lode diff ----
echo changed >>"$d/one"                   # content (and the hard link with it)
chmod 0600 "$d/with space/a file"         # mode
rm "$d/-dash"                             # removed
echo new >"$d/-dir/added"                 # added
ln -sfn sub "$d/link"                     # a symlink's target
echo 99999 >"$d/many/d07/f07007"           # one of 20,000
echo more >>"$d/new"$'\n'"line"
snap h1
B=$SNAP
run diff "$A" "$B" --output json
check_eq "diff: exit 0" "$RC" 0
check_eq "diff json: counts" "$(jq -c '[.added, .removed, .changed, .from, .to]' <<<"$OUT")" \
	"[1,1,8,\"$A\",\"$B\"]"
check_eq "diff json: changes in path order, with what changed" \
	"$(jq -c '[.changes[] | [.path, .change, (.what - ["inode", "mtime"])]]' <<<"$OUT")" \
	'[["/data","changed",[]],["/data/-dash","removed",[]],["/data/-dir","changed",[]],["/data/-dir/added","added",[]],["/data/link","changed",["target"]],["/data/many/d07/f07007","changed",["content"]],["/data/new\nline","changed",["content"]],["/data/one","changed",["content"]],["/data/sub/hard","changed",["content"]],["/data/with space/a file","changed",["mode"]]]'
check_eq "diff json: sizes before and after" \
	"$(jq -c '.changes[] | select(.path == "/data/one") | [.before.size, .after.size]' <<<"$OUT")" '[4,12]'
check_eq "diff json: an added entry has no before" \
	"$(jq -c '.changes[] | select(.change == "added") | [.before, .after.size]' <<<"$OUT")" '[null,4]'
run diff "$A" "$B"
check_contains "diff text: removed, with its size" "$OUT" "$(printf -- '- %12u  /data/-dash' 5)"
check_contains "diff text: added, with its size" "$OUT" "$(printf -- '+ %12u  /data/-dir/added' 4)"
check_contains "diff text: changed, with both sizes" "$OUT" "$(printf -- 'M %12u  (was 4) /data/one  (content' 12)"
check_contains "diff text: the counts" "$OUT" "1 added, 1 removed, 8 changed"
run diff "$B" "$A" --output json
check_eq "diff B A: the reverse" "$(jq -c '[.added, .removed, .changed]' <<<"$OUT")" "[1,1,8]"
run diff "$A" "$A"
check_eq "diff of a snapshot with itself: nothing" "$OUT" "0 added, 0 removed, 0 changed; 0 bytes added, 0 removed"

# ---- lode find ----
snap h2 # another host, same tree as B
C=$SNAP
run find /data/-dir/added
check_eq "find a path: exit 0" "$RC" 0
check_eq "find: the snapshots that hold it, newest first" "$(cut -d' ' -f1 <<<"$OUT" | tr '\n' ' ')" "$C $B "
run find /data/-dash --output json
check_eq "find json: only the first snapshot had it" "$(jq -c '[.snapshots[] | [.id, .host, (.entries | length)]]' <<<"$OUT")" \
	"[[\"$A\",\"h1\",1]]"
run find /data/-dir/added --host h1
check_eq "find --host" "$(cut -d' ' -f1 <<<"$OUT")" "$B"
run find '*.txt' --policy e2e/browse --output json
check_eq "find a pattern: each snapshot's matches" "$(jq -c '[.snapshots[] | [.id, [.entries[].name]]]' <<<"$OUT")" \
	"[[\"$C\",[\"été-日本.txt\"]],[\"$B\",[\"été-日本.txt\"]],[\"$A\",[\"été-日本.txt\"]]]"
run find '/data/many/d1*/f1000?'
check_eq "find an anchored pattern: 10 files in 3 snapshots" "$(wc -l <<<"$OUT")" 30
run find /data/nowhere
check_eq "find: no snapshot holds it: exit 1" "$RC" 1
check_contains "find: says so" "$ERR" "no snapshot holds /data/nowhere (3 searched)"
run find '/data/['
check_eq "find: a pattern that is not one: exit 2" "$RC" 2

# ---- requests: counted by the fault proxy ----
snap h1 # unchanged since B: the same file list, every chunk of it B's
D=$SNAP
if env_build_tool faultproxy 2>"$T_TMP/cc.log" && env_fault_proxy_start; then
	count() { # LABEL MAX ARGS...: runs lode through the proxy; its requests in N
		local label=$1 max=$2
		shift 2
		env_fault clear
		LODE_REPOSITORY=s3:$PROXY/$S3_BUCKET/$prefix run "$@"
		N=$(curl -s --max-time 5 "$PROXY/__fault/count")
		[[ $RC == 0 && $N -le $max ]] && pass "$label: $N requests (at most $max)" ||
			fail "$label: at most $max requests" "rc $RC, $N requests" "$ERR"
	}
	# config.json, the catalog's LIST and the manifest: 3; then the file list's search:
	# its root, and at each level a binary search over the index chunks under it whose
	# probes read the leftmost chunks under a child, one GET a level (a list of 20,000
	# files has three or four levels of chunks of about 1 KiB), and at the second level
	# the chunks under it and their leaves (two GETs). Measured 15, 15 and 23; a bound
	# a little above, as the cut points are keyed and the tree's shape differs from run
	# to run. A GET a leaf would be over 1,000 for the ls -R.
	count "ls of a directory of 3 entries" 20 ls "$A" /data/sub
	count "ls of one file" 20 ls "$A" /data/one
	count "ls -R of 20,000 files" 30 ls -R "$A" /data/many
	# Two LISTs (each id as lode restore finds it) and two manifests, nothing else.
	count "diff of a snapshot with itself" 5 diff "$A" "$A"
	count "diff of B and D (unchanged since B)" 5 diff "$B" "$D"
	# Another host's snapshot of the same tree holds the same leaves, but the index
	# chunks above them name where each leaf is stored (that host's own metadata packs):
	# those are read, one ranged GET a level a side (four or five levels of index chunks
	# of about 1 KiB above 20,000 files: measured 15); no leaf is.
	count "diff of B and C (another host, the same tree)" 18 diff "$B" "$C"
	check_eq "diff of B and C: nothing differs" "$OUT" "0 added, 0 removed, 0 changed; 0 bytes added, 0 removed"
	count "diff of A and B (10 changes)" 24 diff "$A" "$B"
	# One LIST, three manifests, a few chunks each.
	count "find of a path in 4 snapshots" 70 find /data/one
	count "dump of a small file" 22 dump "$A" /data/one
	kill "$PROXY_PID" 2>/dev/null
	PROXY_PID=
else
	fail "start the fault proxy" "$(cat "$T_TMP/cc.log" "$T_TMP/proxy.log" 2>/dev/null | tail -5)"
fi

# ---- errors ----
missing=20200101T000000Z-0123456789abcdef
for cmd in "ls $missing" "dump $missing /data/one" "diff $A $missing" "diff $missing $A"; do
	# shellcheck disable=SC2086
	run $cmd
	check_eq "$cmd: a snapshot that does not exist: exit 1" "$RC" 1
	check_contains "$cmd: says so" "$ERR" "no snapshot $missing"
done
run ls not-an-id
check_eq "ls of an id that is not one: exit 2" "$RC" 2
check_contains "ls of an id that is not one: says so" "$ERR" "not a snapshot id"
run ls "$A" /data/nowhere
check_eq "ls of a path the snapshot lacks: exit 1" "$RC" 1
check_contains "ls of a path the snapshot lacks: says so" "$ERR" "snapshot $A has no /data/nowhere"
run ls "$A" data
check_eq "ls of a relative path: exit 2" "$RC" 2
run dump "$A" /data/nowhere
check_eq "dump of a path the snapshot lacks: exit 1" "$RC" 1
run dump "$A" /data/sub
check_eq "dump of a directory: exit 1" "$RC" 1
check_contains "dump of a directory: says so" "$ERR" "/data/sub is a directory"
run dump "$A" /data/link
check_eq "dump of a symlink: exit 1, not followed" "$RC" 1
check_contains "dump of a symlink: says so" "$ERR" "not a regular file"
run ls "$A" /data extra
check_eq "ls with too many arguments: exit 2" "$RC" 2
run diff "$A"
check_eq "diff of one snapshot: exit 2" "$RC" 2
"$LODE" init --repo "s3:$S3_ENDPOINT/$S3_BUCKET/$prefix-other" --generate-key --key-file "$T_TMP/other-key" >/dev/null 2>&1
for cmd in "ls $A" "dump $A /data/one" "diff $A $B" "find /data/one"; do
	# shellcheck disable=SC2086
	LODE_KEY_FILE=$T_TMP/other-key run $cmd
	check_eq "$cmd with a wrong key: exit 1" "$RC" 1
	check_contains "$cmd with a wrong key: says so" "$ERR" "key"
done
# A deleted metadata pack: damage, named.
rm -f "$DATA"/meta/e2e/browse/h1/"$A".*.meta
run ls "$A" /data
check_eq "ls with its metadata pack deleted: exit 1" "$RC" 1
check_contains "ls with its metadata pack deleted: names it" "$ERR" "is missing"
run diff "$A" "$B"
check_eq "diff with a metadata pack deleted: exit 1" "$RC" 1

finish
