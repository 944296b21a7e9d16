#!/usr/bin/env bash
# lode restore and lode check against versitygw of tests/env/ (TLS, SigV4), on a
# repository that lode init and lode backup wrote. Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_restore.sh
# Without a running environment it fails (lib.sh refuses): it never counts a skip.
#
# What a user checks: a backed-up tree comes back byte for byte with its modes,
# times, owners (the test runs as root), symlinks, xattrs, empty files and
# directories and odd names; --include; a non-empty target is refused; a restore
# killed mid-way leaves no half file under a real name (with O_TMPFILE and, forced off
# by LODE_RESTORE_NO_TMPFILE=1, with temporary names); check finds a flipped byte
# in a pack, a deleted pack and a deleted meta object, naming each; a wrong key is
# a clear error. versitygw's posix backend keeps each object as a file under
# $ENV_DIR/s3/data/BUCKET/KEY, which is where the damage is done.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"
LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
treesum() { python3 "$here/restore/treesum.py" "$@"; }
trap 'umount "$T_TMP/small" 2>/dev/null; rm -rf "$T_TMP"' EXIT

prefix=restore-e2e-$(openssl rand -hex 4)
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
env_lode_s3
export LODE_KEY_FILE=$T_TMP/key
objects=$ENV_DIR/s3/data/$S3_BUCKET/$prefix
printf 'correct horse battery staple\n' >"$LODE_KEY_FILE"
printf 'not the key\n' >"$T_TMP/wrong-key"
chmod 600 "$LODE_KEY_FILE" "$T_TMP/wrong-key" # lode refuses a key file open to others

run() { # NAME: runs the rest, keeps stdout/stderr/exit in OUT ERR RC
	local name=$1
	shift
	"$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.err"
	RC=$?
	OUT=$(cat "$T_TMP/$name.out")
	ERR=$(cat "$T_TMP/$name.err")
}

# ---- the tree: /data on a "node" whose / is $node ----
node=$T_TMP/node
d=$node/data
mkdir -p "$d/sub/deeper/x/y" "$d/empty-dir" "$d/ro-dir" "$d/setgid" "$d/sticky"
: >"$d/empty"
printf x >"$d/one"
seq 1 400000 >"$d/text.txt"
head -c 24M /dev/urandom >"$d/big.bin"
head -c 2M /dev/urandom >"$d/dup1.bin"
cp "$d/dup1.bin" "$d/sub/dup2.bin"
echo deep >"$d/sub/deeper/x/y/file"
echo spaced >"$d/with space"
echo newline >"$d/new"$'\n'"line"
echo utf8 >"$d/été-日本.txt"
echo dash >"$d/-dash"
echo hidden >"$d/.hidden"
echo inside >"$d/ro-dir/inside"
printf '#!/bin/sh\n' >"$d/exec.sh"
echo secret >"$d/secret"
echo ro >"$d/ro.txt"
ln -s sub/deeper "$d/link-rel"
ln -s /etc/passwd "$d/link-abs"
ln -s nowhere "$d/link-dangling"
mkfifo "$d/fifo"
chmod 0755 "$d/exec.sh"
chmod 0600 "$d/secret"
chmod 0444 "$d/ro.txt"
chmod 2775 "$d/setgid"
chmod 1777 "$d/sticky"
chown 1234:5678 "$d/secret" "$d/sub"
chown -h 4321:8765 "$d/link-rel"
python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.comment", b"kept\0bytes")
os.setxattr(sys.argv[1], "trusted.lode", b"root only"); os.setxattr(sys.argv[2], "user.dir", b"d")' \
	"$d/one" "$d/sub"
touch -d '2021-05-06 07:08:09.123456789' "$d/one" "$d/big.bin" "$d/empty"
touch -h -d '2019-01-02 03:04:05.5' "$d/link-rel"
touch -d '2020-02-29 12:00:00.000000001' "$d/sub/deeper" "$d/empty-dir"
chmod 0555 "$d/ro-dir"
want=$(treesum "$d")

policy=$T_TMP/policy.yaml
cat >"$policy" <<'EOF'
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: p, namespace: default}
spec:
  repository: main
  paths: [/data]
  schedule: {cron: "0 3 * * *"}
EOF

mkdir -p "$root/build/e2e"
# The snapshots are written by `lode backup` when the binary has it, else by
# restore/mkrepo.c, a second writer of the format through internal/repo alone.
if "$LODE" backup --help >/dev/null 2>&1; then
	writer="lode backup"
	backup() { # prints the snapshot id
		"$LODE" backup --policy "$policy" --host h1 --root "$node" --output json | jq -r .snapshot.id
		return "${PIPESTATUS[0]}"
	}
	run init "$LODE" init
	check_eq "lode init exits 0" "$RC" 0
else
	writer="tests/e2e/restore/mkrepo.c"
	if cc -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I"$root/internal" -std=c17 -Wall -Wextra \
		-Werror -Wno-unused-parameter -Wno-format-truncation -g -O1 -o "$root/build/e2e/mkrepo" \
		"$here/restore/mkrepo.c" "$root"/internal/{repo,s3,http,util}/*.c \
		$(pkg-config --cflags --libs libuv libcurl openssl expat libzstd jansson) -lm 2>"$T_TMP/cc.log"; then
		pass "build restore/mkrepo.c"
	else
		fail "build restore/mkrepo.c" "$(cat "$T_TMP/cc.log")"
	fi
	backup() { "$root/build/e2e/mkrepo" "$node" default p h1 /data; }
fi
echo "# snapshots written by $writer"
run backup backup
check_eq "$writer exits 0" "$RC" 0
id=$OUT
if [[ ! $id =~ ^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{16}$ ]]; then
	fail "$writer gives a snapshot id" "$OUT" "$ERR"
	finish
	exit 1
fi
pass "$writer gives snapshot $id"

# ---- round trip ----
# Set-id bits and trusted.* xattrs are withheld unless asked for (docs/repository.md,
# "What a restore withholds"); this test asks, since it compares everything.
r=$T_TMP/r1
run restore "$LODE" restore "$id" --setid --system-xattrs --target "$r"
check_eq "restore exits 0" "$RC" 0
check_contains "restore says what it did" "$OUT" "restored $id (default/p/h1) into $r"
got=$(treesum "$r/data")
if [[ $got == "$want" ]]; then
	pass "the tree comes back byte for byte with modes, owners, mtimes, symlinks, xattrs, odd names"
else
	fail "the tree comes back alike" "$(diff <(echo "$want") <(echo "$got") | head -20)"
fi
check_eq "nothing but the snapshot's paths under the target" "$(ls -A "$r")" data
check_eq "no temporary file is left" "$(find "$r" -name '.lode-restore-*' | wc -l)" 0

# ---- --include ----
r=$T_TMP/r2
run include "$LODE" restore "$id" --target "$r" --include /data/sub --include /data/one
check_eq "restore --include exits 0" "$RC" 0
check_eq "--include: only the included paths and their parents" \
	"$(cd "$r" && find . -mindepth 1 | LC_ALL=C sort | tr '\n' ' ')" \
	"./data ./data/one ./data/sub ./data/sub/deeper ./data/sub/deeper/x ./data/sub/deeper/x/y ./data/sub/deeper/x/y/file ./data/sub/dup2.bin "
check_eq "--include: a directory comes with its subtree, as it was" \
	"$(treesum "$r/data/sub")" "$(treesum "$d/sub")"
run include-none "$LODE" restore "$id" --target "$T_TMP/r3" --include /data/nope
check_eq "--include of a path the snapshot lacks exits 1" "$RC" 1
check_contains "... and names it" "$ERR" "--include /data/nope: snapshot $id has no such path"
check_eq "... and writes nothing" "$(ls -A "$T_TMP/r3" 2>/dev/null | wc -l)" 0
run include-rel "$LODE" restore "$id" --target "$T_TMP/r3" --include data/sub
check_eq "a relative --include is a usage error" "$RC" 2

# ---- the target ----
r=$T_TMP/r4
mkdir -p "$r/data"
echo mine >"$r/keep-me"
echo old >"$r/data/one"
run nonempty "$LODE" restore "$id" --target "$r"
check_eq "a non-empty target is refused (exit 2)" "$RC" 2
check_contains "... with a message that says how" "$ERR" "is not empty"
check_eq "... and is left alone" "$(cat "$r/data/one")" old
run overwrite "$LODE" restore "$id" --setid --system-xattrs --target "$r" --overwrite
check_eq "--overwrite restores into it" "$RC" 0
check_eq "--overwrite: files in the way are replaced" "$(treesum "$r/data")" "$want"
check_eq "--overwrite: other files are kept" "$(cat "$r/keep-me")" mine
run overwrite-again "$LODE" restore "$id" --setid --system-xattrs --target "$r" --overwrite
check_eq "--overwrite over an identical restore (read-only dirs, FIFOs) works" "$RC:$(treesum "$r/data")" "0:$want"

# A file system just made for the restore and mounted as the target holds an empty
# lost+found: that target counts as empty; a lost+found with something in it does not.
r=$T_TMP/r-fresh-fs
mkdir -p "$r/lost+found"
run fresh-fs "$LODE" restore "$id" --setid --system-xattrs --target "$r"
check_eq "a target holding only an empty lost+found is restored into" "$RC:$(treesum "$r/data")" "0:$want"
check_eq "... and lost+found is left there" "$(ls -A "$r/lost+found" | wc -l)" 0
r=$T_TMP/r-lost-found-full
mkdir -p "$r/lost+found"
echo piece >"$r/lost+found/#1234"
run lost-found-full "$LODE" restore "$id" --target "$r"
check_eq "a lost+found holding something is refused (exit 2)" "$RC" 2
check_contains "... and named" "$ERR" 'holds "lost+found"'

# ---- symlinks already in the target are not followed ----
r=$T_TMP/r-links
mkdir -p "$r/data" "$T_TMP/outside"
ln -s "$T_TMP/outside" "$r/data/sub"
ln -s "$T_TMP/outside/one" "$r/data/one"
run links "$LODE" restore "$id" --setid --system-xattrs --target "$r" --overwrite
check_eq "--overwrite over symlinks where the snapshot has a directory and a file" "$RC" 0
check_eq "... writes nothing through them" "$(ls -A "$T_TMP/outside" | wc -l)" 0
check_eq "... and puts the snapshot's entries in their place" "$(treesum "$r/data")" "$want"

# ---- not as root: no owners, no trusted.* xattrs, the rest as it was ----
nr=$(mktemp -d /tmp/lode-restore-nr.XXXXXX)
chmod 0755 "$nr"
cp "$LODE_KEY_FILE" "$nr/key"
cp "$S3_CA_FILE" "$nr/ca.crt"
chmod 0644 "$nr/key" "$nr/ca.crt"
install -d -o 65534 -g 65534 "$nr/out"
run nobody setpriv --reuid=65534 --regid=65534 --clear-groups env LODE_KEY_FILE="$nr/key" \
	LODE_CACERT="$nr/ca.crt" "$LODE" restore "$id" --setid --system-xattrs --target "$nr/out"
check_eq "restore as uid 65534 exits 0" "$RC" 0
check_contains "... and says owners were not restored" "$OUT" "owners were not restored"
check_contains "... and that the trusted.* xattr was not set" "$OUT" "not set: 1 xattrs"
check_eq "... every entry belongs to the user who restored" \
	"$(find "$nr/out/data" ! -user 65534 | wc -l)" 0
check_eq "... with contents, modes, times, links and user.* xattrs as they were" \
	"$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$here/restore/treesum.py" "$nr/out/data" --no-owner)" \
	"$(treesum "$d" --no-owner | sed 's/ trusted\.lode=b.root only.//')"
rm -rf "$nr"

# ---- a full disk: stop at once, no half file, no temporary file ----
small=$T_TMP/small
mkdir -p "$small"
if mount -t tmpfs -o size=8m tmpfs "$small"; then
	run full "$LODE" restore "$id" --target "$small/t"
	check_eq "a target that fills up: exit 2" "$RC" 2
	check_contains "... saying so" "$ERR" "No space left on device"
	half=0
	while IFS= read -r -d '' f; do
		rel=${f#"$small/t"/}
		cmp -s "$f" "$node/$rel" || half=$((half + 1))
	done < <(find "$small/t" -type f -print0)
	check_eq "... no file under its real name differs from the original" "$half" 0
	check_eq "... and no temporary file is left" "$(find "$small/t" -name '.lode-restore-*' | wc -l)" 0
	umount "$small"
else
	fail "mount an 8 MiB tmpfs for the full-disk case (the test runs as root)"
fi

# ---- S3 faults (tests/e2e/s3/faultproxy.c between lode and versitygw) ----
if env_build_tool faultproxy 2>"$T_TMP/cc-proxy.log"; then
	env_fault_proxy_start || fail "fault proxy listening" "$(cat "$T_TMP/proxy.log")"
	via=s3:$PROXY/$S3_BUCKET/$prefix
	env_fault clear
	env_fault 503/2 # the client tries 6 times: 4 faults in a row are retried
	env_fault reset_mid/2
	run faults "$LODE" restore "$id" --setid --system-xattrs --target "$T_TMP/rf1" --repo "$via"
	check_eq "503s and replies broken mid-body are retried: the restore completes" \
		"$RC:$(treesum "$T_TMP/rf1/data" 2>/dev/null)" "0:$want"
	env_fault clear
	env_fault 503/30
	run down "$LODE" restore "$id" --target "$T_TMP/rf2" --repo "$via"
	check_eq "S3 answering 503 past the retries: exit 2" "$RC" 2
	check_contains "... naming what could not be read" "$ERR" "cannot read config.json"
	check_eq "... and nothing is written" "$(ls -A "$T_TMP/rf2" 2>/dev/null | wc -l)" 0
	run check-down "$LODE" check --repo "$via"
	check_eq "check against S3 that keeps failing: exit 2, not damage" "$RC" 2
	env_fault clear
	env_fault exit
	wait "$PROXY_PID" 2>/dev/null
else
	fail "build faultproxy" "$(cat "$T_TMP/cc-proxy.log")"
fi

# ---- usage ----
run u1 "$LODE" restore --target "$T_TMP/u"
check_eq "no snapshot id: exit 2" "$RC" 2
run u2 "$LODE" restore "$id"
check_eq "no --target: exit 2" "$RC" 2
run u3 "$LODE" restore not-an-id --target "$T_TMP/u"
check_eq "a malformed id: exit 2" "$RC" 2
run u4 "$LODE" restore 20200101T000000Z-0000000000000000 --target "$T_TMP/u"
check_eq "an id the repository lacks: exit 1" "$RC" 1
check_contains "... named" "$ERR" "no snapshot 20200101T000000Z-0000000000000000"

# ---- wrong key ----
run wk "$LODE" restore "$id" --target "$T_TMP/wk" --key-file "$T_TMP/wrong-key"
check_eq "a wrong key: restore exits 1" "$RC" 1
check_contains "... with a clear message" "$ERR" "key"
check_eq "... and writes nothing" "$(ls -A "$T_TMP/wk" 2>/dev/null | wc -l)" 0
run wkc "$LODE" check --key-file "$T_TMP/wrong-key"
check_eq "a wrong key: check exits 1" "$RC" 1

# ---- check on a whole repository ----
run check "$LODE" check
check_eq "check of a whole repository exits 0" "$RC" 0
check_contains "... and says so" "$OUT" "no damage found"
run check-data "$LODE" check --read-data
check_eq "check --read-data of a whole repository exits 0" "$RC" 0

# ---- interrupted restore ----
mkdir -p "$T_TMP/r5/data"
: >"$T_TMP/r5/data/.lode-restore-1-1" # pid 1 runs: a live restore's file is left alone
head -c 96M /dev/urandom >"$d/huge.bin"
run backup2 backup
id2=$OUT
check_eq "a second backup with a 96 MiB file exits 0" "$RC" 0
# half_unnamed PID DIR: PID holds a file under DIR that has no name yet (O_TMPFILE: its
# /proc link reads "DIR/.../#INODE (deleted)") and has bytes in it.
half_unnamed() {
	local fd l
	for fd in /proc/"$1"/fd/*; do
		l=$(readlink "$fd" 2>/dev/null) || continue
		[[ $l == "$2"/*" (deleted)" && -s $fd ]] && return 0
	done
	return 1
}
# half_named DIR: a temporary file with bytes in it is under DIR.
half_named() { [[ -n $(find "$1" -name '.lode-restore-*' -size +0 2>/dev/null | head -n 1) ]]; }
# kill_mid WHEN DIR ENV...: starts a restore of id2 into DIR (--overwrite) with ENV, kills it
# with SIGKILL as soon as WHEN (half_unnamed or half_named) holds; says whether it did.
kill_mid() {
	local when=$1 dir=$2 pid
	shift 2
	env "$@" "$LODE" restore "$id2" --setid --system-xattrs --target "$dir" --overwrite >"$T_TMP/kill.out" 2>&1 &
	pid=$!
	killed=no
	for _ in $(seq 3000); do # up to 30 s
		if { [[ $when == half_unnamed ]] && half_unnamed "$pid" "$dir"; } ||
			{ [[ $when == half_named ]] && half_named "$dir"; }; then
			kill -9 "$pid" 2>/dev/null && killed=yes
			break
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.01
	done
	wait "$pid" 2>/dev/null
}
# differing DIR: how many files under DIR (temporary ones aside) differ from the node's.
differing() {
	local f rel half=0
	while IFS= read -r -d '' f; do
		rel=${f#"$1"/}
		cmp -s "$f" "$node/$rel" || {
			half=$((half + 1))
			echo "    differs: $rel" >&2
		}
	done < <(find "$1" -type f ! -name '.lode-restore-*' -print0)
	echo "$half"
}
r=$T_TMP/r5
kill_mid half_unnamed "$r"
check_eq "a restore is killed (SIGKILL) while an unnamed (O_TMPFILE) file is half written" "$killed" yes
check_eq "no file under its real name differs from the original" "$(differing "$r")" 0
check_eq "... and the killed restore left no temporary file (unnamed files go with it)" \
	"$(cd "$r" && find . -name '.lode-restore-*')" "./data/.lode-restore-1-1"
run resume "$LODE" restore "$id2" --setid --system-xattrs --target "$r" --overwrite
check_eq "restoring again with --overwrite completes it" "$RC:$(treesum "$r/data" --skip-tmp)" "0:$(treesum "$d")"

# Where O_TMPFILE is not used (LODE_RESTORE_NO_TMPFILE=1, as on a file system that
# refuses it), files are written under temporary names: the same promises hold.
r=$T_TMP/r5b
mkdir -p "$r/data"
: >"$r/data/.lode-restore-1-1"
kill_mid half_named "$r" LODE_RESTORE_NO_TMPFILE=1
check_eq "without O_TMPFILE: a restore is killed while a temporary file is half written" "$killed" yes
check_eq "... no file under its real name differs from the original" "$(differing "$r")" 0
run resume-named env LODE_RESTORE_NO_TMPFILE=1 "$LODE" restore "$id2" --setid --system-xattrs --target "$r" --overwrite
check_eq "... restoring again with --overwrite completes it" "$RC:$(treesum "$r/data" --skip-tmp)" "0:$(treesum "$d")"
check_eq "... and removes the killed restore's temporary files, not a running one's" \
	"$(cd "$r" && find . -name '.lode-restore-*')" "./data/.lode-restore-1-1"
r=$T_TMP/r5c
run named "env" LODE_RESTORE_NO_TMPFILE=1 "$LODE" restore "$id" --setid --system-xattrs --target "$r"
check_eq "without O_TMPFILE: the tree comes back alike" "$RC:$(treesum "$r/data")" "0:$want"
check_eq "... with no temporary file left" "$(find "$r" -name '.lode-restore-*' | wc -l)" 0
run named-over env LODE_RESTORE_NO_TMPFILE=1 "$LODE" restore "$id" --setid --system-xattrs --target "$r" --overwrite
check_eq "... and --overwrite over it works" "$RC:$(treesum "$r/data")" "0:$want"

# ---- damage ----
pack=$(find "$objects/data" -name '*.pack' -size +16M -printf '%s %p\n' | sort -n | tail -n 1 | cut -d' ' -f2)
[[ -n $pack ]] || pack=$(find "$objects/data" -name '*.pack' | head -n 1)
pkey=${pack#"$objects"/}
size=$(stat -c %s "$pack")
flip() { # FILE OFFSET: xor one byte with 0x01
	python3 -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2]))
f.write(bytes([b[0] ^ 1])); f.close()' "$1" "$2"
}
flip "$pack" $((size / 2))
run flipped "$LODE" check --read-data
check_eq "check --read-data finds a flipped byte in a pack (exit 1)" "$RC" 1
check_contains "... naming the pack" "$ERR" "$pkey"
run flipped-restore "$LODE" restore "$id2" --target "$T_TMP/r6"
check_eq "restore of a snapshot with a damaged chunk exits 1" "$RC" 1
check_contains "... naming the pack" "$ERR" "damaged: $pkey"
check_contains "... and the file not restored" "$ERR" "not restored: /data/"
check_eq "... while the rest is restored" "$(cmp -s "$T_TMP/r6/data/text.txt" "$d/text.txt" && echo same)" same
check_eq "... and no temporary file is left" "$(find "$T_TMP/r6" -name '.lode-restore-*' | wc -l)" 0
flip "$pack" $((size / 2))
run unflipped "$LODE" check --read-data
check_eq "the byte put back: check --read-data exits 0" "$RC" 0

files=$objects/meta/default/p/h1/$id.0.meta
mv "$files" "$T_TMP/saved.meta"
run nometa "$LODE" check
check_eq "check finds a deleted metadata pack (exit 1)" "$RC" 1
check_contains "... naming it" "$ERR" "meta/default/p/h1/$id.0.meta is missing"
run nometa-restore "$LODE" restore "$id" --target "$T_TMP/r7"
check_eq "restore of that snapshot exits 1" "$RC" 1
check_contains "... naming it" "$ERR" "meta/default/p/h1/$id.0.meta is missing"
mv "$T_TMP/saved.meta" "$files"

damage_one() { # NAME KEY HOW (truncate|flip): check and restore name KEY; then it is put back
	local f=$objects/$2
	[[ -f $f ]] || f=$objects/meta/default/p/h1/$2
	cp "$f" "$T_TMP/saved"
	if [[ $3 == truncate ]]; then truncate -s $(($(stat -c %s "$f") / 2)) "$f"; else flip "$f" 40; fi
	run "$1" "$LODE" check
	check_eq "check finds a damaged $1 (exit 1)" "$RC" 1
	check_contains "... naming it" "$ERR" "$2"
	if [[ $1 != "run record" ]]; then
		run "$1-restore" "$LODE" restore "$id" --target "$T_TMP/r-$1"
		check_eq "restore of a snapshot with a damaged $1 exits 1" "$RC" 1
		check_contains "... naming it" "$ERR" "$2"
	fi
	cp "$T_TMP/saved" "$f"
}
damage_one "run record" "runs/default/p/h1/$id.json" truncate
damage_one "manifest" "snapshots/default/p/h1/$id.json" truncate
damage_one "metadata pack" "$id.0.meta" flip
run whole-again "$LODE" check
check_eq "everything put back: check exits 0" "$RC" 0

rm "$pack"
run nopack "$LODE" check
check_eq "check finds a deleted pack (exit 1)" "$RC" 1
check_contains "... naming it" "$ERR" "$pkey is missing"
run nopack-restore "$LODE" restore "$id2" --target "$T_TMP/r8"
check_eq "restore with a pack gone exits 1" "$RC" 1
check_contains "... naming it" "$ERR" "$pkey is missing"

finish
