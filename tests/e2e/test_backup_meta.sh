#!/usr/bin/env bash
# What a re-run costs (docs/repository.md, "What a snapshot costs"), against versitygw
# of tests/env/ (TLS, SigV4, posix backend). Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_backup_meta.sh
# Without a running environment it fails (lib.sh refuses): it never counts a skip.
#
# What a user checks, on a tree of 100,000 small files and one of 10,000: the first
# backup restores byte for byte and passes `lode check --read-data`; an unchanged
# re-run adds at most 414 bytes to the bucket (restic 0.18.1's snapshot on the same
# kind of tree, docs/benchmarks.md), run record and manifest included, and no object
# but those two (no metadata pack: every metadata chunk is its parent's); a re-run
# after one file changed adds at most 70,414 bytes (restic's) and one metadata pack;
# an unchanged re-run makes as many requests for 100,000 files as for 10,000
# (counted by tests/e2e/s3/faultproxy.c in front of versitygw); the snapshot of the
# one-change run restores the changed file; `lode gc` after forgetting the first
# snapshot keeps every metadata pack a remaining snapshot's trees name (check passes);
# a re-run's new data is compressed harder than a first backup's (zstd level 3 and 1).
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
prefix=meta-e2e-$$-$RANDOM
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
export LODE_KEY_FILE=$T_TMP/key
head -c 32 /dev/urandom | base64 >"$LODE_KEY_FILE"
chmod 600 "$LODE_KEY_FILE"
DATA=$ENV_DIR/s3/data/$S3_BUCKET/$prefix

# policy and run (OUT/ERR/RC)
# shellcheck source=tests/e2e/backup/lib.sh
source "$here/backup/lib.sh"

# The bytes and the objects under the repository, as a listing of the bucket gives them.
bytes() { find "$DATA" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
objects() { find "$DATA" -type f | wc -l; }
metapacks() { find "$DATA/meta" -type f -name '*.meta' | wc -l; }

# Trees of small files of distinct contents, in directories of 1,000.
mktree() { # DIR N
	python3 - "$1" "$2" <<'EOF'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(n)
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // 1000))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "file-%05d.txt" % (i % 1000)), "w") as f:
        f.write("%d %x\n" % (i, rng.getrandbits(64)))
EOF
}
mktree "$T_TMP/big/tree" 100000
mktree "$T_TMP/small/tree" 10000
check_eq "trees: 100,000 and 10,000 files" \
	"$(find "$T_TMP/big/tree" -type f | wc -l),$(find "$T_TMP/small/tree" -type f | wc -l)" "100000,10000"

run init
check_eq "init: exit 0" "$RC" 0
pol=$(policy meta '[/tree]')

# ---- first backups, restore, check ----
for t in big small; do
	run backup --policy "$pol" --host "$t" --root "$T_TMP/$t" --output json
	check_eq "$t: first backup: exit 0" "$RC" 0
done
id=$(jq -r .snapshot.id <<<"$OUT")
run restore "$id" --target "$T_TMP/restored"
check_eq "small: restore: exit 0" "$RC" 0
if diff -r --no-dereference "$T_TMP/small/tree" "$T_TMP/restored/tree" >"$T_TMP/diff" 2>&1; then
	pass "small: the tree comes back byte for byte (diff -r)"
else
	fail "small: the tree comes back byte for byte (diff -r)" "$(head -5 "$T_TMP/diff")"
fi
rm -rf "$T_TMP/restored"
run check --read-data
check_eq "check --read-data: exit 0" "$RC" 0

# ---- an unchanged re-run of 100,000 files ----
b0=$(bytes) o0=$(objects) m0=$(metapacks)
run backup --policy "$pol" --host big --root "$T_TMP/big" --output json
check_eq "big: unchanged re-run: exit 0" "$RC" 0
check_eq "big: unchanged re-run: no new bytes of data" "$(jq -r .snapshot.newBytes <<<"$OUT")" 0
added=$(($(bytes) - b0))
[[ $added -le 414 ]] && pass "big: unchanged re-run adds $added bytes to the bucket (at most restic's 414)" ||
	fail "big: unchanged re-run adds at most 414 bytes" "added $added"
check_eq "big: unchanged re-run adds two objects (run record and manifest)" "$(($(objects) - o0))" 2
check_eq "big: unchanged re-run adds no metadata pack" "$(($(metapacks) - m0))" 0
[[ $ERR != *"without a parent"* ]] && pass "big: the re-run read its parent" ||
	fail "big: the re-run read its parent" "$ERR"

# ---- requests of an unchanged re-run: the same for 10,000 and 100,000 files ----
# Both sources have the same history here (two snapshots each, whose trees are in one
# metadata pack): the anomaly detector reads up to seven recent manifests, and a parent
# whose trees span several metadata packs is one GET per pack.
run backup --policy "$pol" --host small --root "$T_TMP/small" --output json
check_eq "small: unchanged re-run: exit 0" "$RC" 0
if env_build_tool faultproxy 2>"$T_TMP/cc.log" && env_fault_proxy_start; then
	declare -A reqs distinct
	for t in big small; do
		env_fault clear
		LODE_REPOSITORY=s3:$PROXY/$S3_BUCKET/$prefix run backup --policy "$pol" --host "$t" \
			--root "$T_TMP/$t" --output json
		check_eq "$t: unchanged re-run through the proxy: exit 0" "$RC" 0
		reqs[$t]=$(curl -s --max-time 5 "$PROXY/__fault/count")
		# A request curl sent again (a reused connection that died, a stall on a loaded
		# machine) is the same request: the comparison counts the different ones.
		distinct[$t]=$(curl -s --max-time 5 "$PROXY/__fault/distinct")
		curl -s --max-time 5 "$PROXY/__fault/log" >"$T_TMP/requests-$t.txt"
	done
	if [[ ${distinct[big]} == "${distinct[small]}" ]]; then
		pass "requests per unchanged re-run: 100,000 files as many as 10,000 (${distinct[small]} different, ${reqs[big]} and ${reqs[small]} sent)"
	else
		fail "requests per unchanged re-run: 100,000 files as many as 10,000" \
			"big: ${distinct[big]} different of ${reqs[big]}: $(sed 's/?.*//' "$T_TMP/requests-big.txt" | tr '\n' ';')" \
			"small: ${distinct[small]} different of ${reqs[small]}: $(sed 's/?.*//' "$T_TMP/requests-small.txt" | tr '\n' ';')"
	fi
	[[ ${reqs[big]} -le 16 ]] && pass "requests per unchanged re-run: a handful (${reqs[big]})" ||
		fail "requests per unchanged re-run: at most 16" "${reqs[big]}"
	kill "$PROXY_PID" 2>/dev/null
	PROXY_PID=
else
	fail "start the fault proxy" "$(cat "$T_TMP/cc.log" "$T_TMP/proxy.log" 2>/dev/null | tail -5)"
fi

# ---- one file changed ----
echo "changed" >>"$T_TMP/big/tree/d050/file-00500.txt"
b0=$(bytes) m0=$(metapacks)
run backup --policy "$pol" --host big --root "$T_TMP/big" --output json
check_eq "big: one change: exit 0" "$RC" 0
changed_id=$(jq -r .snapshot.id <<<"$OUT")
added=$(($(bytes) - b0))
[[ $added -le 70414 ]] && pass "big: a re-run after one file changed adds $added bytes (at most restic's 70,414)" ||
	fail "big: a re-run after one file changed adds at most 70,414 bytes" "added $added"
check_eq "big: one change: one metadata pack" "$(($(metapacks) - m0))" 1
run restore "$changed_id" --target "$T_TMP/restored" --include /tree/d050/file-00500.txt
check_eq "big: restore of the changed file: exit 0" "$RC" 0
check_eq "big: the changed file comes back changed" \
	"$(tail -n 1 "$T_TMP/restored/tree/d050/file-00500.txt")" "changed"
rm -rf "$T_TMP/restored"

# ---- a re-run's data at zstd level 3, a first backup's at level 1 (docs/repository.md) ----
# The GPL-3 text (35 KB) compresses to about 13.3 KB at level 1 and 12.6 KB at level 3:
# the re-run after a line was appended stores a smaller pack than the first backup did,
# where at one level it would store a larger one.
datapacks() { find "$DATA/data/e2e/meta/lic" -type f -name '*.pack' | sort; }
mkdir -p "$T_TMP/lic/tree"
cp /usr/share/common-licenses/GPL-3 "$T_TMP/lic/tree/COPYING"
run backup --policy "$pol" --host lic --root "$T_TMP/lic" --output json
check_eq "lic: first backup: exit 0" "$RC" 0
datapacks >"$T_TMP/lic-before"
check_eq "lic: first backup: one data pack" "$(wc -l <"$T_TMP/lic-before")" 1
echo "one more line" >>"$T_TMP/lic/tree/COPYING"
run backup --policy "$pol" --host lic --root "$T_TMP/lic" --output json
check_eq "lic: re-run after a change: exit 0" "$RC" 0
datapacks >"$T_TMP/lic-after"
first_pack=$(stat -c %s "$(head -n 1 "$T_TMP/lic-before")")
rerun_pack=$(comm -13 "$T_TMP/lic-before" "$T_TMP/lic-after" | head -n 1 | xargs -r stat -c %s)
if [[ -n $rerun_pack && $((rerun_pack + 300)) -lt $first_pack ]]; then
	pass "lic: the re-run's pack ($rerun_pack B) is smaller than the first's ($first_pack B): level 3 against 1"
else
	fail "lic: the re-run's data at level 3, the first backup's at level 1" \
		"first pack $first_pack B, re-run pack ${rerun_pack:-none} B"
fi

# ---- gc keeps what the remaining snapshots' trees name ----
first=$(LODE_REPOSITORY=$LODE_REPOSITORY "$LODE" snapshots --host big --output json | jq -r '.snapshots[-1].id')
env_s3 DELETE "/$S3_BUCKET/$prefix/snapshots/e2e/meta/big/$first.json"
check_eq "forget the first snapshot of big (its manifest deleted)" "$S3_CODE" 204
# Every object is made older than any window: gc judges by references alone.
find "$DATA" -type f -exec touch -d '3 days ago' {} +
run gc --output json
check_eq "gc: exit 0" "$RC" 0
run check
check_eq "check after gc: exit 0 (every remaining snapshot whole)" "$RC" 0
check_eq "gc kept the first run's metadata pack (later snapshots' trees name it)" \
	"$(find "$DATA/meta/e2e/meta/big" -name "$first.0.meta" | wc -l)" 1
run restore "$changed_id" --target "$T_TMP/restored"
check_eq "restore after gc: exit 0" "$RC" 0
check_eq "restore after gc: 100,000 files" "$(find "$T_TMP/restored/tree" -type f | wc -l)" 100000

finish
