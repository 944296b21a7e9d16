#!/usr/bin/env bash
# The agent's own credentials (docs/security.md, "Roles with their own credentials"):
# against a versitygw of its own with IAM accounts (the environment's has only its root
# account), the keys a node's backup Job gets write a snapshot but cannot delete a
# manifest or a pack, and lode says the storage refused; forget and gc still work with
# the deleting keys. Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_roles.sh
# (it uses the environment's versitygw binary and test CA, not its server).
#
# versitygw's bucket policies cannot say "no overwrite" (it has no s3:if-none-match
# condition key, docs/testing.md): overwriting is refused by Object Lock instead, the
# second part: a bucket with Object Lock enabled, LODE_OBJECT_LOCK on the backup, each
# object's retention read back, a delete and an overwrite refused, forget keeping a
# locked snapshot (reported, exit 0) and gc deleting none of its packs.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"
# shellcheck source=tests/e2e/backup/lib.sh
source "$here/backup/lib.sh"

LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
VGW=$S3_BIN
GW_PID=
cleanup() {
	[[ -n $GW_PID ]] && kill "$GW_PID" 2>/dev/null && wait "$GW_PID" 2>/dev/null
	rm -rf "$T_TMP"
}
trap cleanup EXIT

# A gateway of its own: IAM accounts in a directory, TLS with the environment's
# certificate for 127.0.0.1, a port the kernel picks.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
gw=$T_TMP/gw
mkdir -p "$gw/iam" "$gw/meta" "$gw/data"
ROOT_AK=rolesroot ROOT_SK=$(openssl rand -hex 16)
ROOT_ACCESS_KEY=$ROOT_AK ROOT_SECRET_KEY=$ROOT_SK "$VGW" --port "127.0.0.1:$port" \
	--cert "$ENV_DIR/pki/s3.crt" --key "$ENV_DIR/pki/s3.key" --region us-east-1 \
	--iam-dir "$gw/iam" posix --sidecar "$gw/meta" "$gw/data" >"$T_TMP/gw.log" 2>&1 &
GW_PID=$!
export S3_ENDPOINT=https://127.0.0.1:$port
gw_up() { env_s3_as "$ROOT_AK" "$ROOT_SK" GET /; [[ $S3_CODE == 200 ]]; }
if ! env_wait 20 "versitygw with IAM to answer" gw_up; then
	fail "a versitygw with IAM accounts starts" "$(tail -n 20 "$T_TMP/gw.log")"
	finish
	exit 1
fi
bucket=roles
env_s3_as "$ROOT_AK" "$ROOT_SK" PUT "/$bucket"
check_eq "the bucket is made by the root account" "$S3_CODE" 200

# The agent: an account of role "user" (it owns nothing) with a bucket policy that
# grants what docs/security.md lists for the agent, and no delete.
AGENT_AK=lodeagent AGENT_SK=$(openssl rand -hex 16)
if out=$("$VGW" admin -a "$ROOT_AK" -s "$ROOT_SK" --er "$S3_ENDPOINT" --ai create-user \
	-a "$AGENT_AK" -s "$AGENT_SK" -r user 2>&1); then
	pass "an agent account is created"
else
	fail "an agent account is created" "$out"
fi
cat >"$T_TMP/policy.json" <<EOF
{"Version": "2012-10-17", "Statement": [
 {"Effect": "Allow", "Principal": {"AWS": ["$AGENT_AK"]},
  "Action": ["s3:ListBucket"], "Resource": ["arn:aws:s3:::$bucket"]},
 {"Effect": "Allow", "Principal": {"AWS": ["$AGENT_AK"]},
  "Action": ["s3:GetObject", "s3:PutObject"], "Resource": ["arn:aws:s3:::$bucket/*"]}
]}
EOF
# "?policy=": curl 7.88 signs a bare "?policy" without the "=" S3 expects.
env_s3_as "$ROOT_AK" "$ROOT_SK" PUT "/$bucket?policy=" "$T_TMP/policy.json"
check_eq "the bucket policy is taken" "$S3_CODE" 204

REPO=s3:$S3_ENDPOINT/$bucket/team
key=$T_TMP/key
head -c 32 /dev/urandom | base64 >"$key"
chmod 600 "$key"
export AWS_REGION=us-east-1 LODE_CACERT=$S3_CA_FILE LODE_KEY_FILE=$key LODE_REPOSITORY=$REPO
unset LODE_POLICY_DOCUMENT AWS_SESSION_TOKEN
as_root() { AWS_ACCESS_KEY_ID=$ROOT_AK AWS_SECRET_ACCESS_KEY=$ROOT_SK run "$@"; }
as_agent() { AWS_ACCESS_KEY_ID=$AGENT_AK AWS_SECRET_ACCESS_KEY=$AGENT_SK run "$@"; }

as_root init --repo "$REPO" --key-file "$key"
check_eq "init with the deleting keys" "$RC" 0

src=$T_TMP/node
mkdir -p "$src/etc"
printf 'one\n' >"$src/etc/a"
head -c 200000 /dev/urandom >"$src/etc/b"
pol=$(policy roles '[/etc]' 'maxRuntime: 1h')
pol_keep1=$T_TMP/keep1.yaml
sed 's|^spec:|spec:\n  retention: {keepLast: 1}|' "$pol" >"$pol_keep1"

as_agent backup --policy "$pol" --host node-a --root "$src" --output json
check_eq "the agent's keys back up" "$RC" 0
[[ $RC == 0 ]] || echo "$ERR"
first=$(jq -r '.snapshot.id' <<<"$OUT")
printf 'two\n' >"$src/etc/a"
as_agent backup --policy "$pol" --host node-a --root "$src" --output json
check_eq "the agent's keys back up again (reading the parent)" "$RC" 0
as_agent snapshots --policy e2e/roles --output json
check_eq "the agent's keys list snapshots" "$(jq '.snapshots | length' <<<"$OUT")" 2

# What a node's root could try with these keys, object by object (the keys, from the
# gateway's directory).
manifest=$(cd "$gw/data/$bucket" && find team/snapshots -name "$first.json" | head -n 1)
pack=$(cd "$gw/data/$bucket" && find team/data -name '*.pack' | head -n 1)
[[ -n $manifest && -n $pack ]] && pass "a manifest and a pack are found" ||
	fail "a manifest and a pack are found" "manifest=$manifest pack=$pack"
for k in "$manifest" "$pack"; do
	env_s3_as "$AGENT_AK" "$AGENT_SK" DELETE "/$bucket/$k"
	check_eq "the agent's keys cannot delete $k (403)" "$S3_CODE" 403
	env_s3_as "$ROOT_AK" "$ROOT_SK" HEAD "/$bucket/$k" "" -I
	check_eq "... and $k is still there" "$S3_CODE" 200
done
printf '<Delete><Object><Key>%s</Key></Object></Delete>' "$pack" >"$T_TMP/del.xml"
md5=$(openssl md5 -binary "$T_TMP/del.xml" | base64)
env_s3_as "$AGENT_AK" "$AGENT_SK" POST "/$bucket?delete=" "$T_TMP/del.xml" -H "Content-MD5: $md5"
check_contains "DeleteObjects with the agent's keys deletes nothing" "$S3_BODY$S3_CODE" "AccessDenied"

# lode itself, given the agent's keys, says the storage refused.
# Three snapshots: keepLast 1 forgets the oldest (the two newest good ones are always kept).
printf 'three\n' >"$src/etc/a"
head -c 200000 /dev/urandom >"$src/etc/b"
as_agent backup --policy "$pol" --host node-a --root "$src" --output json
check_eq "a third backup with the agent's keys" "$RC" 0
as_agent forget --policy "$pol_keep1" --host node-a
check_eq "forget with the agent's keys fails (exit 2)" "$RC" 2
check_contains "... and says the storage denied it" "$ERR" "AccessDenied"
as_root snapshots --policy e2e/roles --output json
check_eq "the three snapshots are still there" "$(jq '.snapshots | length' <<<"$OUT")" 3

# The deleting keys, as the controller's forget and GC Jobs hold them, still work.
as_root forget --policy "$pol_keep1" --host node-a
check_eq "forget with the deleting keys" "$RC" 0
[[ $RC == 0 ]] || echo "$ERR"
as_root snapshots --policy e2e/roles --output json
check_eq "two snapshots are left" "$(jq '.snapshots | length' <<<"$OUT")" 2
# The first snapshot's packs are unreferenced now; gc deletes only what is older than its
# window (docs/gc.md), so every object is made three days older, in order (versitygw's
# LastModified is the file's mtime).
age() { # DIR
	local f
	while IFS= read -r -d '' f; do
		touch -d "@$(($(stat -c %Y "$f") - 3 * 86400))" "$f"
	done < <(find "$1" -type f -print0)
}
age "$gw/data/$bucket/team"
# gc with the agent's keys cannot free them.
as_agent gc --output json
[[ $RC != 0 && $ERR == *AccessDenied* ]] && pass "gc with the agent's keys fails, saying the storage denied it" ||
	fail "gc with the agent's keys fails, saying the storage denied it" "rc $RC" "$ERR"
as_root gc --output json
check_eq "gc with the deleting keys" "$RC" 0
[[ $RC == 0 ]] || echo "$ERR"
as_root snapshots --policy e2e/roles --output json
kept=$(jq -r '[.snapshots[] | .id] | max' <<<"$OUT")
as_root restore "$kept" --target "$T_TMP/restored"
check_eq "the newest snapshot restores after gc" "$(cat "$T_TMP/restored/etc/a" 2>/dev/null)" three

# ---- Object Lock (docs/security.md, "Object Lock") ----
locked=locked
env_s3_as "$ROOT_AK" "$ROOT_SK" PUT "/$locked" "" -H "x-amz-bucket-object-lock-enabled: true"
check_eq "a bucket with Object Lock enabled" "$S3_CODE" 200
LREPO=s3:$S3_ENDPOINT/$locked/team
export LODE_REPOSITORY=$LREPO
as_root init --repo "$LREPO" --key-file "$key"
check_eq "init of the locked repository" "$RC" 0
ids=()
for content in one two three; do
	printf '%s\n' "$content" >"$src/etc/a"
	head -c 50000 /dev/urandom >"$src/etc/b"
	LODE_OBJECT_LOCK=GOVERNANCE:2 as_root backup --policy "$pol" --host node-a --root "$src" --output json
	check_eq "a backup with LODE_OBJECT_LOCK=GOVERNANCE:2 ($content)" "$RC" 0
	ids+=("$(jq -r '.snapshot.id' <<<"$OUT")")
done
LODE_OBJECT_LOCK=KEEP:2 as_root snapshots --policy e2e/roles
check_contains "a malformed LODE_OBJECT_LOCK is refused, named" "$ERR" "LODE_OBJECT_LOCK"
lman=$(cd "$gw/data/$locked" && find team/snapshots -name "${ids[0]}.json")
lpack=$(cd "$gw/data/$locked" && find team/data -name '*.pack' | head -n 1)
now=$(date -u +%s)
for k in "$lman" "$lpack" "$(cd "$gw/data/$locked" && find team/meta -name "${ids[0]}.*.meta" | head -n 1)"; do
	env_s3_as "$ROOT_AK" "$ROOT_SK" GET "/$locked/$k?retention="
	check_contains "$k: retained in GOVERNANCE mode" "$S3_BODY" "<Mode>GOVERNANCE</Mode>"
	until=$(grep -o '<RetainUntilDate>[^<]*' <<<"$S3_BODY" | sed 's/<RetainUntilDate>//')
	left=$(($(date -u -d "$until" +%s 2>/dev/null || echo 0) - now))
	[[ $left -gt $((2 * 86400 - 600)) && $left -le $((2 * 86400 + 60)) ]] &&
		pass "$k: retained until two days after its upload" ||
		fail "$k: retained until two days after its upload" "RetainUntilDate $until"
done
env_s3_as "$ROOT_AK" "$ROOT_SK" GET "/$locked/team/config.json?retention="
check_contains "config.json (written without the lock) has no retention" "$S3_BODY" "NoSuchObjectLockConfiguration"
for k in "$lman" "$lpack"; do
	env_s3_as "$ROOT_AK" "$ROOT_SK" DELETE "/$locked/$k"
	check_eq "a locked $k cannot be deleted, even by the bucket's owner (403)" "$S3_CODE" 403
	printf 'forged' >"$T_TMP/forged"
	env_s3_as "$ROOT_AK" "$ROOT_SK" PUT "/$locked/$k" "$T_TMP/forged"
	check_eq "... nor overwritten (403)" "$S3_CODE" 403
done
as_root forget --policy "$pol_keep1" --host node-a
check_eq "forget of a locked snapshot: exit 0" "$RC" 0
# Which of the three it forgets depends on their order, and the three may share a second
# (the snapshot time has a second's resolution): the one it would forget, named, kept.
check_eq "... saying Object Lock kept the one it would forget" \
	"$(grep -Ec "^lode forget: kept snapshots/e2e/roles/node-a/($(IFS='|'; echo "${ids[*]}")).json: Object Lock retains it" <<<"$ERR")" 1
as_root snapshots --policy e2e/roles --output json
check_eq "the locked snapshot is still there" \
	"$(jq -r --arg id "${ids[0]}" '[.snapshots[] | select(.id == $id)] | length' <<<"$OUT")" 1
# An unreferenced pack under lock (as an interrupted backup leaves one), aged past gc's
# window: gc tries to delete it, the storage refuses, gc keeps it and says why.
orphan=team/data/e2e/roles/node-a/$(openssl rand -hex 32).pack
head -c 1000 /dev/urandom >"$T_TMP/orphan"
env_s3_as "$ROOT_AK" "$ROOT_SK" PUT "/$locked/$orphan" "$T_TMP/orphan" \
	-H "x-amz-object-lock-mode: GOVERNANCE" \
	-H "x-amz-object-lock-retain-until-date: $(date -u -d '+2 days' +%Y-%m-%dT%H:%M:%SZ)"
check_eq "a locked, unreferenced pack is put" "$S3_CODE" 200
age "$gw/data/$locked/team"
as_root gc --output json
check_eq "gc with a locked unreferenced pack: exit 0 (kept, not failed)" "$RC" 0
check_contains "... saying Object Lock kept it" "$ERR" "kept ${orphan#team/}: Object Lock retains it"
check_eq "... and deleting nothing" "$(jq '.packs.deleted' <<<"$OUT")" 0
env_s3_as "$ROOT_AK" "$ROOT_SK" HEAD "/$locked/$orphan" "" -I
check_eq "... which is still there" "$S3_CODE" 200
as_root restore "${ids[0]}" --target "$T_TMP/restored-locked"
check_eq "the locked snapshot restores" "$(cat "$T_TMP/restored-locked/etc/a" 2>/dev/null)" one

finish
