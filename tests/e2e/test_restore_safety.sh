#!/usr/bin/env bash
# The repository-side trust rules against versitygw of tests/env/ (TLS, SigV4), on a
# repository that lode init and lode backup wrote. Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_restore_safety.sh
# Without a running environment it fails (lib.sh refuses): it never counts a skip.
#
# What a user checks (docs/repository.md):
# - a key file open to others is refused before it is read; chmod 600 is enough;
# - a config.json whose scrypt cost was raised to N = 2^20 is refused in well under a
#   second and under 64 MiB of peak memory (measured with /usr/bin/time); the default
#   cost of a new repository (scrypt-15-8-3) is measured too;
# - hard links (across directories, of a FIFO), a FIFO, a socket and a device node come
#   back: links share their inode (stat), nothing is dropped silently;
# - restoring as root withholds set-id bits, device nodes and security.*/trusted.*
#   xattrs unless --setid, --devices, --system-xattrs, and says what it withheld;
# - a chunk set grown in the bucket is reported as damaged, not read into memory.
# LODE_ENV_DIR may name another environment holding only versitygw (state.env giving
# S3_ENV, s3.env as cluster-up writes it): nothing here needs the API server.
# The test runs as root (device nodes, trusted.* xattrs, owners).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"
LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE

prefix=safety-e2e-$(openssl rand -hex 4)
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
env_lode_s3
export LODE_KEY_FILE=$T_TMP/key
objects=$ENV_DIR/s3/data/$S3_BUCKET/$prefix

run() { # NAME CMD...: runs CMD, keeps stdout/stderr/exit in OUT ERR RC
	local name=$1
	shift
	"$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.err"
	RC=$?
	OUT=$(cat "$T_TMP/$name.out")
	ERR=$(cat "$T_TMP/$name.err")
}
# timed NAME CMD...: as run, under /usr/bin/time; SECS and RSS_KB hold its wall time and
# peak resident memory.
timed() {
	local name=$1
	shift
	/usr/bin/time -f '%e %M' -o "$T_TMP/$name.time" "$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.err"
	RC=$?
	OUT=$(cat "$T_TMP/$name.out")
	ERR=$(cat "$T_TMP/$name.err")
	# The last line: time puts "Command exited with non-zero status N" before it.
	read -r SECS RSS_KB < <(tail -n 1 "$T_TMP/$name.time")
}

# ---- the key file ----
printf 'correct horse battery staple\n' >"$LODE_KEY_FILE"
chmod 0644 "$LODE_KEY_FILE"
run init-open "$LODE" init
check_eq "a key file readable by others is refused (exit 2)" "$RC" 2
check_contains "... naming the fix" "$ERR" "run chmod 600 $LODE_KEY_FILE"
check_eq "... before anything is written" "$(ls -A "$objects" 2>/dev/null | wc -l)" 0
chmod 0640 "$LODE_KEY_FILE"
run init-group "$LODE" init
check_eq "a key file readable by the group is refused too" "$RC" 2
chmod 0600 "$LODE_KEY_FILE"
run init "$LODE" init
check_eq "lode init with a 0600 key file exits 0" "$RC" 0

# ---- the KDF ----
config=$objects/config.json
check_contains "a new passphrase repository's cost is scrypt-15-8-3" \
	"$(jq -c '.kdf | [.N, .r, .p]' "$config")" "[32768,8,3]"
timed check-default "$LODE" check
check_eq "lode check opens it (exit 0)" "$RC" 0
echo "# the default scrypt cost: lode check took ${SECS} s, peak RSS ${RSS_KB} KiB"
cp "$config" "$T_TMP/config.json"
jq '.kdf.N = 1048576' "$T_TMP/config.json" >"$config"
timed check-costly "$LODE" check
check_eq "config.json with N = 2^20: refused (exit 1, as a key that does not open it)" "$RC" 1
check_contains "... saying why" "$ERR" "scrypt cost N=1048576, r=8, p=3 is not one lode accepts"
if awk -v s="$SECS" 'BEGIN { exit !(s < 1.0) }'; then
	pass "... in well under a second ($SECS s)"
else
	fail "... in well under a second" "took $SECS s"
fi
if ((RSS_KB < 64 * 1024)); then
	pass "... under 64 MiB of peak memory ($RSS_KB KiB)"
else
	fail "... under 64 MiB of peak memory" "peak $RSS_KB KiB"
fi
jq '.kdf.N = 1048576 | .kdf.r = 32 | .kdf.p = 16' "$T_TMP/config.json" >"$config"
run snapshots-costly "$LODE" snapshots
check_eq "lode snapshots (no key) refuses that config.json too (exit 2)" "$RC" 2
check_contains "... with the reason" "$ERR" "is not one lode accepts"
cp "$T_TMP/config.json" "$config"

# ---- the tree ----
node=$T_TMP/node
d=$node/data
mkdir -p "$d/a" "$d/b" "$d/c"
printf 'shared bytes\n' >"$d/a/one"
ln "$d/a/one" "$d/a/two"    # a link in the same directory
ln "$d/a/one" "$d/b/three"  # and across directories
ln "$d/a/one" "$d/c/four"
mkfifo "$d/a/fifo"
ln "$d/a/fifo" "$d/b/fifo-link"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$d/a/sock"
mknod "$d/a/null" c 1 3
chmod 0666 "$d/a/null"
printf '#!/bin/sh\n' >"$d/a/suid"
chmod 4755 "$d/a/suid"
mkdir "$d/shared"
chmod 2775 "$d/shared"
python3 -c 'import os,sys; os.setxattr(sys.argv[1], "trusted.lode", b"root only")' "$d/a/suid"
cat >"$T_TMP/policy.yaml" <<'EOF'
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: p, namespace: default}
spec:
  repository: main
  paths: [/data]
  schedule: {cron: "0 3 * * *"}
EOF
run backup "$LODE" backup --policy "$T_TMP/policy.yaml" --host h1 --root "$node" --output json
check_eq "lode backup exits 0" "$RC" 0
id=$(jq -r .snapshot.id <<<"$OUT")
check_contains "... and gives the snapshot id" "$id" "Z-"
inode() { stat -c %i "$1"; }

# ---- restore as root, with nothing asked ----
r=$T_TMP/r1
run restore "$LODE" restore "$id" --target "$r"
check_eq "restore exits 0" "$RC" 0
check_eq "hard links share the first path's inode (same directory, across three)" \
	"$(inode "$r/data/a/two") $(inode "$r/data/b/three") $(inode "$r/data/c/four")" \
	"$(inode "$r/data/a/one") $(inode "$r/data/a/one") $(inode "$r/data/a/one")"
check_eq "... with the link count of the original" "$(stat -c %h "$r/data/a/one")" 4
check_eq "... and the contents" "$(cat "$r/data/c/four")" "shared bytes"
check_eq "a FIFO's hard link shares its inode" "$(inode "$r/data/b/fifo-link")" "$(inode "$r/data/a/fifo")"
check_eq "the FIFO is a FIFO" "$(stat -c %F "$r/data/a/fifo")" fifo
check_eq "the socket is a socket" "$(stat -c %F "$r/data/a/sock")" socket
check_contains "the summary counts the hard links" "$OUT" "4 hard links"
text=$OUT err=$ERR
run restorej "$LODE" restore "$id" --target "$T_TMP/r1j" --output json
check_eq "... and so does --output json (hardLinks, the device in notMade)" \
	"$(jq -c '[.hardLinks, .notMade]' <<<"$OUT")" "[4,1]"
OUT=$text ERR=$err
check_eq "the device node is withheld" "$(ls -A "$r/data/a" | grep -c '^null$')" 0
check_contains "... and named on stderr" "$ERR" "not restored: /data/a/null (a device node; --devices makes it)"
check_contains "... and counted" "$OUT" "not made: 1 device nodes (--devices makes them)"
check_eq "set-id bits are cleared" "$(stat -c %a "$r/data/a/suid") $(stat -c %a "$r/data/shared")" "755 775"
check_contains "... and counted" "$OUT" "withheld: set-id bits of 2 entries (--setid restores them)"
check_eq "the trusted.* xattr is not set" \
	"$(python3 -c 'import os,sys; print(len(os.listxattr(sys.argv[1])))' "$r/data/a/suid")" 0
check_contains "... and counted" "$OUT" "withheld: 1 security.* and trusted.* xattrs"

# ---- restore as root, asking for everything ----
r=$T_TMP/r2
run restore-all "$LODE" restore "$id" --target "$r" --setid --devices --system-xattrs
check_eq "restore --setid --devices --system-xattrs exits 0" "$RC" 0
check_eq "... makes the device node" "$(stat -c '%F %t,%T %a' "$r/data/a/null")" "character special file 1,3 666"
check_eq "... keeps set-id bits" "$(stat -c %a "$r/data/a/suid") $(stat -c %a "$r/data/shared")" "4755 2775"
check_eq "... sets the trusted.* xattr" \
	"$(python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "trusted.lode").decode())' "$r/data/a/suid")" "root only"
check_eq "... and withholds nothing" "$(grep -c withheld <<<"$OUT")" 0

# ---- --include without the first path: the later one is a file of its own ----
r=$T_TMP/r3
run restore-inc "$LODE" restore "$id" --target "$r" --include /data/c
check_eq "restore --include /data/c exits 0" "$RC" 0
check_eq "... brings the link back as a whole file" "$(cat "$r/data/c/four") $(stat -c %h "$r/data/c/four")" "shared bytes 1"

# ---- a metadata pack grown in the bucket ----
# Format 2 reads each metadata chunk with a ranged GET of the length its authenticated
# reference gives, so bytes added to a pack are never fetched (docs/repository.md,
# "Restoring"); an edited chunk is damage (tests/e2e/test_tamper.sh).
metapack=$(find "$objects/meta" -name "$id.*.meta" | head -n 1)
cp "$metapack" "$T_TMP/meta.orig"
# Sparse: versitygw serves 1 GiB of zeros, which a restore that read it would hold.
truncate -s 1G "$metapack"
timed grown "$LODE" restore "$id" --target "$T_TMP/r4"
check_eq "a metadata pack grown to 1 GiB: restore still succeeds (exit 0)" "$RC" 0
if ((RSS_KB < 256 * 1024)); then
	pass "... without reading what was added (peak $RSS_KB KiB, the object 1 GiB)"
else
	fail "... without reading what was added" "peak $RSS_KB KiB"
fi
cp "$T_TMP/meta.orig" "$metapack"

finish
