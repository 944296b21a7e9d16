#!/usr/bin/env bash
# spec.exclude end to end (docs/policy.md, "spec.exclude") against versitygw of tests/env/:
# a tree with what each rule leaves out (anchored and unanchored globs, "**", a
# directories-only pattern, a cache directory with CACHEDIR.TAG and one whose tag lacks
# the signature, a file over largerThan, a tmpfs mounted inside) is backed up, the
# summary counts each rule's entries and bytes, and the restored tree is the expected
# one byte for byte. Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_backup_exclude.sh
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"
LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
treesum() { python3 "$here/restore/treesum.py" "$@"; }
trap 'umount "$T_TMP/node/data/mnt" 2>/dev/null; rm -rf "$T_TMP"' EXIT

export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/exclude-e2e-$(openssl rand -hex 4)
env_lode_s3
export LODE_KEY_FILE=$T_TMP/key
printf 'correct horse battery staple\n' >"$LODE_KEY_FILE"
chmod 600 "$LODE_KEY_FILE" # lode refuses a key file open to others
run() { # NAME: runs the rest, keeps stdout/stderr/exit in OUT ERR RC
	local name=$1
	shift
	"$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.err"
	RC=$?
	OUT=$(cat "$T_TMP/$name.out")
	ERR=$(cat "$T_TMP/$name.err")
}

node=$T_TMP/node
d=$node/data
mkdir -p "$d/keep/sub" "$d/logs/old" "$d/app/node_modules/pkg" "$d/tmp-file-not-dir" \
	"$d/cache/blobs" "$d/fakecache" "$d/mnt"
echo keep >"$d/keep/a.txt"
echo keep >"$d/keep/sub/b.conf"
printf '12345' >"$d/keep/x.tmp"              # *.tmp, unanchored: 5 bytes
printf '123' >"$d/keep/sub/y.tmp"            # *.tmp at depth: 3 bytes
echo old >"$d/logs/old/1.log"                # /data/logs/**/1.log: 4 bytes
echo new >"$d/logs/now.log"
echo js >"$d/app/node_modules/pkg/index.js"  # node_modules/ (directories only)
echo f >"$d/tmp-file-not-dir/node_modules"   # a file named node_modules: kept
printf 'Signature: 8a477f597d28d172789f06886806bc55\n# a cache\n' >"$d/cache/CACHEDIR.TAG"
head -c 100000 /dev/urandom >"$d/cache/blobs/b1"
printf 'Signature: not the one\n' >"$d/fakecache/CACHEDIR.TAG"
echo kept >"$d/fakecache/kept"
head -c 300000 /dev/urandom >"$d/keep/big.bin"  # over largerThan 200KiB
head -c 100000 /dev/urandom >"$d/keep/small.bin"
mount -t tmpfs -o size=1m tmpfs "$d/mnt" || fail "mount a tmpfs inside the tree"
echo other >"$d/mnt/on-tmpfs"

# The expected tree: the same, less what is excluded. The cache and the mount point stay
# as (empty) directories: recorded, not entered.
exp=$T_TMP/expected
mkdir -p "$exp"
cp -a "$d" "$exp/data" 2>/dev/null
rm -rf "$exp/data/keep/x.tmp" "$exp/data/keep/sub/y.tmp" "$exp/data/logs/old/1.log" \
	"$exp/data/app/node_modules" "$exp/data/keep/big.bin"
rm -rf "${exp:?}/data/cache/"* "${exp:?}/data/mnt/"*
touch -r "$d/cache" "$exp/data/cache"
touch -r "$d/mnt" "$exp/data/mnt"
for p in keep keep/sub logs/old app; do touch -r "$d/$p" "$exp/data/$p"; done
want=$(treesum "$exp/data")

policy=$T_TMP/policy.yaml
cat >"$policy" <<'EOF'
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: p, namespace: default}
spec:
  repository: main
  paths: [/data]
  exclude:
    patterns: ["*.tmp", "/data/logs/**/1.log", "node_modules/"]
    caches: true
    largerThan: 200KiB
EOF
run validate "$LODE" validate "$policy"
check_eq "the policy is valid" "$RC" 0
run init "$LODE" init
check_eq "lode init exits 0" "$RC" 0
run backup "$LODE" backup --policy "$policy" --host h1 --root "$node" --output json
check_eq "lode backup exits 0" "$RC" 0
id=$(jq -r .snapshot.id <<<"$OUT")
ex() { jq -c ".snapshot.excluded.$1 | [.entries, .bytes]" <<<"$OUT"; }
# patterns: x.tmp (5), y.tmp (3), logs/old/1.log (4), node_modules (a directory: one entry)
check_eq "excluded by pattern: 4 entries, 12 bytes" "$(ex pattern)" "[4,12]"
check_eq "excluded as a cache: 1 directory" "$(ex cache)" "[1,0]"
check_eq "excluded by size: 1 file of 300000 bytes" "$(ex largerThan)" "[1,300000]"
check_eq "another file system: 1 mount point" "$(ex otherFileSystem)" "[1,0]"
check_eq "the files counted are those kept" "$(jq .snapshot.files <<<"$OUT")" \
	"$(find "$exp/data" -type f | wc -l)"

run restore "$LODE" restore "$id" --target "$T_TMP/r"
check_eq "restore exits 0" "$RC" 0
got=$(treesum "$T_TMP/r/data")
if [[ $got == "$want" ]]; then
	pass "the restored tree is the tree less what was excluded, byte for byte"
else
	fail "the restored tree is the expected one" "$(diff <(echo "$want") <(echo "$got") | head -20)"
fi

# A pattern that can never match under the paths is refused before anything runs.
sed -i 's|"/data/logs/|"/opt/logs/|' "$policy"
run validate2 "$LODE" validate "$policy"
check_eq "a pattern outside spec.paths: invalid" "$RC" 1
check_contains "it says why" "$OUT" "spec.exclude.patterns[1]: the pattern can never match"
finish
