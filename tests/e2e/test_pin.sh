#!/usr/bin/env bash
# Pinned snapshots end to end (docs/retention.md, "Pinned snapshots") against versitygw of
# tests/env/: a snapshot made with lode backup --pin survives a forget (keepLast 1) that
# forgets its neighbour, with its reason shown by lode snapshots and lode forget --dry-run;
# lode mark --pin changes the reason, --unpin gives it back to the rules, and the next
# forget forgets it. A pin a bucket writer makes without the key (docs/retention.md) keeps
# nothing: snapshots and forget ignore it, naming it, and check names it as damage. A
# manifest copied under a newer id (docs/repository.md) takes no slot from a real
# snapshot when forget has the key, and lode snapshots skips it with a warning.
# Run it as  tests/env/with-cluster.sh bash tests/e2e/test_pin.sh
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"
LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
trap 'rm -rf "$T_TMP"' EXIT

prefix=pin-e2e-$(openssl rand -hex 4)
export LODE_REPOSITORY=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
env_lode_s3
DATA=$ENV_DIR/s3/data/$S3_BUCKET/$prefix
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
mkdir -p "$T_TMP/node/data"
policy=$T_TMP/policy.yaml
cat >"$policy" <<'EOF'
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: p, namespace: default}
spec:
  repository: main
  paths: [/data]
  retention: {keepLast: 1}
EOF
run init "$LODE" init
check_eq "lode init exits 0" "$RC" 0
ids=()
for i in 1 2 3 4; do
	echo "$i" >"$T_TMP/node/data/f"
	pin=()
	[[ $i == 1 ]] && pin=(--pin "before the 3.2 upgrade")
	run "b$i" "$LODE" backup --policy "$policy" --host h1 --root "$T_TMP/node" --output json "${pin[@]}"
	check_eq "backup $i exits 0" "$RC" 0
	ids+=("$(jq -r .snapshot.id <<<"$OUT")")
done
check_eq "the first backup says it is pinned" "$(jq -r .snapshot.pinned "$T_TMP/b1.out")" "before the 3.2 upgrade"
check_contains "the pin carries a tag" "$(cat "$DATA/snapshots/default/p/h1/${ids[0]}.pinned")" '"tag":'
run snaps "$LODE" snapshots
check_contains "lode snapshots shows the pin's reason" "$OUT" "pinned: before the 3.2 upgrade"
check_eq "and only for the pinned one" "$(grep -c 'pinned:' <<<"$OUT")" 1
run snapsj "$LODE" snapshots --output json
check_eq "its JSON keeps the contract's keys (no pinned)" \
	"$(jq -c '[.snapshots[] | has("pinned")] | unique' <<<"$OUT")" "[false]"

run dry "$LODE" forget --policy "$policy" --dry-run
check_eq "forget --dry-run exits 0" "$RC" 0
check_contains "it shows the pinned snapshot with its reason" "$OUT" \
	"pinned on host h1: ${ids[0]}: before the 3.2 upgrade"
run forget "$LODE" forget --policy "$policy" --output json
check_eq "forget exits 0" "$RC" 0
check_eq "the pinned one is kept for its pin alone" \
	"$(jq -c --arg id "${ids[0]}" '.hosts[0].keep[] | select(.id == $id) | .reasons' <<<"$OUT")" '["pinned"]'
check_eq "its neighbour is forgotten (keepLast 1 and the two newest good keep the rest)" \
	"$(jq -c '[.hosts[0].forget[].id]' <<<"$OUT")" "[\"${ids[1]}\"]"
run snaps2 "$LODE" snapshots --output json
check_eq "three snapshots are left, the pinned one among them" \
	"$(jq -c '[.snapshots[].id] | length' <<<"$OUT")" 3

run repin "$LODE" mark "${ids[0]}" --pin "kept for the audit" --output json
check_eq "a second --pin changes the reason" "$(jq -c '[.pinned, .reason, .changed]' <<<"$OUT")" \
	'[true,"kept for the audit",true]'
run badpin "$LODE" mark "${ids[0]}" --pin ""
check_eq "an empty reason is a usage error" "$RC" 2
run unpin "$LODE" mark "${ids[0]}" --unpin
check_contains "unpinned" "$OUT" "unpinned"
run unpin2 "$LODE" mark "${ids[0]}" --unpin
check_contains "unpinning again changes nothing" "$OUT" "was not pinned"
run forget2 "$LODE" forget --policy "$policy" --output json
check_eq "unpinned, the next forget forgets it" "$(jq -c '[.hosts[0].forget[].id]' <<<"$OUT")" "[\"${ids[0]}\"]"

# A pin made without the key: the body lode wrote before pins had tags.
backup_more() { # N: N more backups, their ids appended to ids
	for ((k = 0; k < $1; k++)); do
		echo "more $k $RANDOM" >"$T_TMP/node/data/f"
		run more "$LODE" backup --policy "$policy" --host h1 --root "$T_TMP/node" --output json
		check_eq "another backup exits 0" "$RC" 0
		ids+=("$(jq -r .snapshot.id <<<"$OUT")")
		# Ids order as the backups ran, in the same second too (docs/repository.md).
		check_eq "... its id is larger than the one before" \
			"$([[ ${ids[-1]} > ${ids[-2]} ]] && echo larger)" larger
	done
}
backup_more 2 # ids 4 and 5: keepLast 1 and the two newest good keep them, not 2 and 3
forged=$DATA/snapshots/default/p/h1/${ids[2]}.pinned
printf '{"reason":"mine"}' >"$forged"
run fsnaps "$LODE" snapshots
check_eq "a forged pin: lode snapshots exits 0" "$RC" 0
check_contains "... and warns, naming it" "$ERR" "ignoring a pin: snapshots/default/p/h1/${ids[2]}.pinned"
check_eq "... and shows no pin" "$(grep -c 'pinned:' <<<"$OUT")" 0
run fsnapsk env -u LODE_KEY_FILE "$LODE" snapshots
check_contains "without the key the listing shows the pin as the bucket holds it" "$OUT" "pinned: mine"
run fcheck "$LODE" check
check_eq "a forged pin: lode check exits 1" "$RC" 1
check_contains "... naming it" "$ERR" "the .pinned mark of ${ids[2]}"
run fforget "$LODE" forget --policy "$policy" --output json
check_eq "a forged pin: forget exits 0" "$RC" 0
check_contains "... says it ignores the pin" "$ERR" "ignoring a pin: snapshots/default/p/h1/${ids[2]}.pinned"
check_eq "... and forgets the snapshot it claimed to keep" \
	"$(jq -c '[.hosts[0].forget[].id] | sort' <<<"$OUT")" "$(jq -nc --arg a "${ids[2]}" --arg b "${ids[3]}" '[$a, $b] | sort')"
rm -f "$forged"

# A manifest copied under a newer id: it would take keepLast's slot and a newest-good one.
backup_more 1 # ids 6
X=${ids[4]%%T*}T235959Z-00000000000000aa
cp "$DATA/snapshots/default/p/h1/${ids[4]}.json" "$DATA/snapshots/default/p/h1/$X.json"
touch -d "@$(($(date +%s) + 3600))" "$DATA/snapshots/default/p/h1/$X.json"
run xdry env -u LODE_KEY_FILE "$LODE" forget --policy "$policy" --dry-run --output json
check_eq "without the key the copy takes keepLast's slot (the bucket is trusted)" \
	"$(jq -c --arg x "$X" '.hosts[0].keep[] | select(.id == $x) | .reasons | index("last") != null' <<<"$OUT")" true
run xsnaps "$LODE" snapshots
check_eq "a copied manifest: lode snapshots exits 0" "$RC" 0
check_contains "... and names it on stderr" "$ERR" "skipping snapshots/default/p/h1/$X.json"
check_eq "... and lists the real ones only" "$(grep -c "$X" <<<"$OUT")" 0
run xforget "$LODE" forget --policy "$policy" --output json
check_eq "a copied manifest: forget with the key exits 0" "$RC" 0
check_contains "... names it" "$ERR" "ignoring snapshots/default/p/h1/$X.json"
check_eq "... and keeps what the rules keep without it (6 last, 6 and 5 newest good)" \
	"$(jq -c '[.hosts[0].forget[].id]' <<<"$OUT")" "[\"${ids[4]}\"]"
check_eq "... and deletes not the copy (lode check names it)" \
	"$(test -e "$DATA/snapshots/default/p/h1/$X.json" && echo kept)" kept
finish
