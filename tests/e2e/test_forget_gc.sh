#!/usr/bin/env bash
# lode forget (repository mode), lode mark and lode gc against versitygw of tests/env/
# (TLS, SigV4, posix backend), directly and through tests/e2e/s3/faultproxy.c. Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_forget_gc.sh
# Without a running environment it fails (lib.sh refuses): it never counts a skip.
#
# Objects are written by tests/e2e/s3/repo_fixture.c with the internal/repo encoders,
# so each snapshot's packs are known exactly. versitygw's posix backend takes an
# object's LastModified from its file's mtime, so objects are aged with touch(1) in
# its data directory. Neighbours whose names are prefixes of each other (ops/ops-1,
# web/web-1, node/node-1) prove that nothing outside the named scope is touched.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

LODE=${LODE:-$root/build/lode}
[[ $LODE == /* ]] || LODE=$root/$LODE
out=$root/build/e2e
mkdir -p "$out"
PROXY_PID=
cleanup() {
	[[ -n $PROXY_PID ]] && kill "$PROXY_PID" 2>/dev/null
	rm -rf "$T_TMP"
}
trap cleanup EXIT

env_lode_s3
unset LODE_REPOSITORY LODE_KEY_FILE AWS_SESSION_TOKEN

if [[ -x $LODE && -f $root/build/liblode.a ]] && env_build_tool repo_fixture 2>"$T_TMP/cc.log" &&
	env_build_tool faultproxy 2>>"$T_TMP/cc.log"; then
	pass "build repo_fixture and faultproxy (lode and build/liblode.a from make)"
else
	fail "build repo_fixture and faultproxy (run make first)" "$(cat "$T_TMP/cc.log")"
	finish
	exit 1
fi

env_fault_proxy_start || {
	fail "fault proxy listening" "$(cat "$T_TMP/proxy.log")"
	finish
	exit 1
}
proxy_count() { curl -s --max-time 5 "$PROXY/__fault/count"; }

prefix=fgc-$(openssl rand -hex 4)
REPO=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
PREPO=s3:$PROXY/$S3_BUCKET/$prefix
DATA=$ENV_DIR/s3/data/$S3_BUCKET/$prefix
printf 'correct horse battery staple\n' >"$T_TMP/key"
chmod 600 "$T_TMP/key" # lode refuses a key file open to others (docs/repository.md)
export LODE_KEY_FILE=$T_TMP/key

fixture() { LODE_REPOSITORY=$REPO "$out/repo_fixture" "$T_TMP/key"; }
# run ARGS...: lode with the repository; sets OUT, ERR, RC. forget runs without the key:
# the fixture's manifests for retention are empty objects (the listing is what forget
# reads), and forget given the key authenticates the manifests it keeps and leaves out
# those that do not (docs/retention.md; tests/e2e/test_pin.sh runs it with the key).
run() {
	local nokey=()
	[[ $1 == forget ]] && nokey=(-u LODE_KEY_FILE)
	OUT=$(LODE_REPOSITORY=${RUN_REPO:-$REPO} env "${nokey[@]}" "$LODE" "$@" 2>"$T_TMP/err")
	RC=$?
	ERR=$(cat "$T_TMP/err")
}
# files DIR: the object files under DIR in the data directory, one a line, sorted.
files() { (cd "$DATA/$1" 2>/dev/null && find . -type f | sed 's|^\./||' | sort); }
# age T KEY...: sets the LastModified of objects to T (seconds since the epoch).
age() {
	local t=$1 k
	shift
	for k; do touch -d "@$t" "$DATA/$k"; done
}
# id T [SALT]: the snapshot id of a snapshot started at T.
id() { printf '%sZ-%016x' "$(date -u -d "@$1" +%Y%m%dT%H%M%S)" "${2:-$1}"; }

policy() { # FILE NS NAME SPEC-LINE...
	local f=$T_TMP/$1.yaml ns=$2 name=$3
	shift 3
	{
		printf '%s\n' 'apiVersion: lodestore.io/v1alpha1' 'kind: BackupPolicy' \
			"metadata: {name: $name, namespace: $ns}" 'spec:' '  repository: main' '  paths: [/etc]'
		printf '%s\n' "$@"
	} >"$f"
	echo "$f"
}

# ---------------------------------------------------------------- forget -------------
# The page's example: nightly at 02:30 Kyiv, keepLast 3, keepDaily 7, keepWeekly 4,
# keepMonthly 6, over 100 nights from 2026-01-01 (00:30Z in EET, 23:30Z once EEST starts).
WEB=$(policy web ops web '  schedule: {cron: "30 2 * * *", timezone: Europe/Kyiv}' \
	'  retention: {keepLast: 3, keepDaily: 7, keepWeekly: 4, keepMonthly: 6}')
times=()
for ((i = 0; i < 100; i++)); do
	t=$((1767227400 + i * 86400))
	((t >= 1774746000)) && t=$((t - 3600))
	times+=("$t")
done
# Night 10 is incomplete, night 20 incomplete and suspicious, night 30 suspicious: all
# three would be forgotten by the rules.
{
	echo init
	for ((i = 0; i < 100; i++)); do
		t=${times[i]}
		extra=
		((i == 10)) && extra=incomplete
		((i == 20)) && extra="incomplete suspicious"
		((i == 30)) && extra=suspicious
		echo "snap ops web node $(id "$t") - 3600 $extra"
	done
	# neighbours: 5 old nights each, where the rules would forget most of them
	for src in "ops web node-1" "ops web-1 node" "ops-1 web node" "op web node"; do
		for ((i = 0; i < 5; i++)); do echo "manifest $src $(id "${times[i]}")"; done
	done
} >"$T_TMP/forget.fixture"
fixture <"$T_TMP/forget.fixture" >"$T_TMP/fixture.out" 2>&1
check_eq "fixture: 100 snapshots of ops/web/node and 20 neighbours written" "$(tail -n 1 "$T_TMP/fixture.out")" "ok 121"
for ((i = 0; i < 100; i++)); do
	sid=$(id "${times[i]}")
	age "${times[i]}" "snapshots/ops/web/node/$sid.json"
done
for src in ops/web/node-1 ops/web-1/node ops-1/web/node op/web/node; do
	for ((i = 0; i < 5; i++)); do age "${times[i]}" "snapshots/$src/$(id "${times[i]}").json"; done
done
neighbours_before=$(for s in ops/web/node-1 ops/web-1/node ops-1/web/node op/web/node; do files "snapshots/$s"; done | md5sum)

# The same 100 snapshots as a file for `lode forget --snapshots`.
for ((i = 0; i < 100; i++)); do
	inc=false sus=false
	((i == 10 || i == 20)) && inc=true
	((i == 20 || i == 30)) && sus=true
	printf '{"id":"%s","time":"%s","incomplete":%s,"suspicious":%s}\n' "$(id "${times[i]}")" \
		"$(date -u -d "@${times[i]}" +%Y-%m-%dT%H:%M:%SZ)" "$inc" "$sus"
done | jq -s . >"$T_TMP/r100.json"
want=$("$LODE" forget --policy "$WEB" --snapshots "$T_TMP/r100.json" --output json | jq -c .)

before=$(files snapshots/ops/web/node | md5sum)
run forget --policy "$WEB" --host node --dry-run --output json
check_eq "forget --dry-run: exit 0" "$RC" 0
check_eq "forget --dry-run: exactly the contract's keys" \
	"$(jq -c '[keys, (.hosts[0] | keys), (.hosts[0].keep[0] | keys), (.hosts[0].forget[0] | keys)]' <<<"$OUT")" \
	'[["hosts"],["forget","host","keep"],["id","reasons"],["id"]]'
check_eq "forget --dry-run: the same keep/forget (ids, reasons, order) as --snapshots on the same times" \
	"$(jq -c '.hosts[0] | {keep, forget}' <<<"$OUT")" "$want"
check_eq "forget --dry-run: 12 kept by the rules + 2 suspicious, 86 forgotten" \
	"$(jq -c '[.hosts[].host, (.hosts[0].keep | length), (.hosts[0].forget | length)]' <<<"$OUT")" '["node",14,86]'
check_eq "forget --dry-run: the suspicious ones are kept as suspicious" \
	"$(jq -c --arg a "$(id "${times[20]}")" --arg b "$(id "${times[30]}")" \
		'[.hosts[0].keep[] | select(.id == $a or .id == $b) | .reasons]' <<<"$OUT")" '[["suspicious"],["suspicious"]]'
check_eq "forget --dry-run: nothing deleted" "$(files snapshots/ops/web/node | md5sum)" "$before"

doc='{"apiVersion":"lodestore.io/v1alpha1","kind":"BackupPolicy","metadata":{"name":"web","namespace":"ops"},"spec":{"repository":"main","paths":["/etc"],"schedule":{"cron":"30 2 * * *","timezone":"Europe/Kyiv"},"retention":{"keepLast":3,"keepDaily":7,"keepWeekly":4,"keepMonthly":6}}}'
OUT=$(LODE_POLICY_DOCUMENT=$doc LODE_REPOSITORY=$REPO env -u LODE_KEY_FILE "$LODE" forget --policy ops/web --host node --dry-run --output json 2>&1)
check_eq "forget --policy NS/NAME (from LODE_POLICY_DOCUMENT): the same answer" \
	"$(jq -c '.hosts[0] | {keep, forget}' <<<"$OUT" 2>&1)" "$want"

# A deleted policy (docs/retention.md, "Snapshots of a deleted policy"): the cluster has
# no ops/web, its snapshots stay. By name it is refused with what to do; a file that
# names it, with the retention to apply, prunes it (a dry run first).
run forget --policy ops/web --host node --dry-run
check_eq "forget --policy NS/NAME not in the cluster: exit 1" "$RC" 1
check_contains "forget, policy not in the cluster: says so" "$ERR" 'backuppolicy "web" not found in namespace "ops"'
check_contains "forget, policy not in the cluster: says what to do" "$ERR" \
	"if ops/web was deleted, its snapshots are still in the repository; to prune them, give --policy FILE"
check_eq "forget, policy not in the cluster: nothing deleted" "$(files snapshots/ops/web/node | md5sum)" "$before"
ORPHAN=$(policy orphan ops web '  retention: {keepLast: 5}')
want_orphan=$("$LODE" forget --policy "$ORPHAN" --snapshots "$T_TMP/r100.json" --output json | jq -c .)
run forget --policy "$ORPHAN" --host node --dry-run --output json
check_eq "forget --policy FILE naming the deleted policy, keepLast 5: exit 0" "$RC" 0
check_eq "forget, deleted policy by file: 5 last + 2 suspicious kept, 93 forgotten" \
	"$(jq -c '[(.hosts[0].keep | length), (.hosts[0].forget | length)]' <<<"$OUT")" '[7,93]'
check_eq "forget, deleted policy by file: the same decision as --snapshots on the same times" \
	"$(jq -c '.hosts[0] | {keep, forget}' <<<"$OUT")" "$want_orphan"
check_eq "forget, deleted policy by file, --dry-run: nothing deleted" "$(files snapshots/ops/web/node | md5sum)" "$before"

run forget --policy "$WEB" --dry-run --output json
check_eq "forget without --host: each host of the policy decided on its own" \
	"$(jq -c '[.hosts[] | [.host, (.keep | length), (.forget | length)]]' <<<"$OUT")" \
	'[["node",14,86],["node-1",5,0]]'

run forget --policy "$WEB" --host node
check_eq "forget: exit 0" "$RC" 0
check_contains "forget: says what it deleted and in how many requests" "$OUT" \
	"deleted 86 manifests and 1 .incomplete mark in 2 requests"
left=$(files snapshots/ops/web/node)
check_eq "forget: 14 manifests left, the kept ones" "$(grep -c '\.json$' <<<"$left")" 14
check_eq "forget: the forgotten incomplete snapshot's mark is gone" \
	"$(grep -c "$(id "${times[10]}")" <<<"$left")" 0
check_eq "forget: the suspicious ones keep their manifests and marks (.json .incomplete .suspicious, .json .suspicious)" \
	"$(grep -c -e "$(id "${times[20]}")" -e "$(id "${times[30]}")" <<<"$left")" 5
check_eq "forget: the kept ids are the --snapshots mode's" \
	"$(grep '\.json$' <<<"$left" | sed 's/\.json$//' | sort | tr '\n' ' ')" \
	"$(jq -r '.keep[].id' <<<"$want" | sort | tr '\n' ' ')"
check_eq "forget: neighbours node-1, web-1, ops-1 and op untouched" \
	"$(for s in ops/web/node-1 ops/web-1/node ops-1/web/node op/web/node; do files "snapshots/$s"; done | md5sum)" \
	"$neighbours_before"
check_eq "forget: metadata packs, run records and packs stay for gc" "$(files meta/ops/web/node | wc -l)" 100
run forget --policy "$WEB" --host node --output json
check_eq "forget again: nothing more to forget" "$(jq -c '[(.hosts[0].keep | length), (.hosts[0].forget | length)]' <<<"$OUT")" '[14,0]'

# A listing cut short forgets nothing: every attempt's XML is cut in half.
{
	echo open
	for ((i = 0; i < 5; i++)); do echo "manifest ops web node $(id "$((times[0] - 86400 * (i + 1)))")"; done
} | fixture >/dev/null
for ((i = 0; i < 5; i++)); do
	t=$((times[0] - 86400 * (i + 1)))
	age "$t" "snapshots/ops/web/node/$(id "$t").json"
done
before=$(files snapshots/ops/web/node | md5sum)
env_fault clear
env_fault truncate_list/20
RUN_REPO=$PREPO run forget --policy "$WEB" --host node
check_eq "forget, listing cut short: exit 2" "$RC" 2
check_contains "forget, listing cut short: says nothing was deleted" "$ERR" "nothing was deleted"
check_eq "forget, listing cut short: nothing deleted" "$(files snapshots/ops/web/node | md5sum)" "$before"
env_fault clear
env_fault del_denied/2
RUN_REPO=$PREPO run forget --policy "$WEB" --host node
check_eq "forget, two keys refused by DeleteObjects: exit 2" "$RC" 2
check_contains "forget, keys refused: each named" "$ERR" "cannot delete snapshots/ops/web/node/"
env_fault clear
RUN_REPO=$PREPO run forget --policy "$WEB" --host node
check_eq "forget again after the refusal: exit 0 (deleting a key that is gone succeeds)" "$RC" 0
check_eq "forget: of the 5 older nights, December's monthly stays" \
	"$(files snapshots/ops/web/node | grep -c '\.json$') $(files snapshots/ops/web/node | grep -c "$(id "$((times[0] - 86400))")")" "15 1"

run forget --policy "$WEB" --host 'a/b'
check_eq "forget: a host with a '/' is a usage error" "$RC" 2
RUN_REPO=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix-none run forget --policy "$WEB"
check_eq "forget: no repository there: exit 2" "$RC" 2
check_contains "forget: no repository there: says to run lode init" "$ERR" "lode init"

# ---------------------------------------------------------------- mark ---------------
victim=$(id "${times[99]}") # the newest: kept by last/daily/...
run mark "$victim" --suspicious --output json
check_eq "mark --suspicious: exit 0" "$RC" 0
check_eq "mark --suspicious: JSON" "$(jq -c . <<<"$OUT")" \
	"{\"id\":\"$victim\",\"policy\":\"ops/web\",\"host\":\"node\",\"suspicious\":true,\"changed\":true}"
check_contains "mark --suspicious: the mark object is there, with its tag" \
	"$(cat "$DATA/snapshots/ops/web/node/$victim.suspicious" 2>&1)" '"tag"'
run mark "$victim" --suspicious
check_eq "mark --suspicious twice: exit 0" "$RC" 0
check_contains "mark --suspicious twice: says it was already marked" "$OUT" "already marked"
run forget --policy "$WEB" --host node --dry-run --output json
check_eq "mark: forget keeps it as suspicious and forgets nothing" \
	"$(jq -c --arg v "$victim" '[(.hosts[0].keep[] | select(.id == $v) | .reasons), (.hosts[0].forget | length)]' <<<"$OUT")" \
	'[["suspicious"],0]'
run mark "$victim" --clear --output json
check_eq "mark --clear: changed" "$(jq -c '[.suspicious, .changed]' <<<"$OUT")" '[false,true]'
check_eq "mark --clear: the mark object is gone" "$(ls "$DATA/snapshots/ops/web/node/$victim.suspicious" 2>/dev/null | wc -l)" 0
run mark "$victim" --clear
check_eq "mark --clear on an unmarked snapshot: exit 0" "$RC" 0
check_contains "mark --clear on an unmarked snapshot: says so" "$OUT" "was not marked"
run mark "$(id "${times[30]}")" --clear --policy ops/web --host node
check_eq "mark --clear with --policy NS/NAME and --host: exit 0" "$RC" 0
run forget --policy "$WEB" --host node --output json
check_eq "mark --clear: the next forget decides about it like any other (January's monthly again; Jan 30 goes)" \
	"$(jq -c --arg v "$(id "${times[30]}")" --arg w "$(id "${times[29]}")" \
		'[(.hosts[0].keep[] | select(.id == $v) | .reasons), (.hosts[0].forget[] | select(.id == $w) | .id)]' <<<"$OUT")" \
	"[[\"monthly\"],\"$(id "${times[29]}")\"]"
run mark "$(id 1700000000)" --suspicious
check_eq "mark: a snapshot that is not there: exit 1" "$RC" 1
check_contains "mark: a snapshot that is not there: named" "$ERR" "no snapshot $(id 1700000000)"
run mark "$victim" --suspicious --policy ops/web-1
check_eq "mark: --policy narrows the search (not in web-1): exit 1" "$RC" 1
env_fault clear
env_fault 503/40
RUN_REPO=$PREPO run mark "$victim" --suspicious
check_eq "mark: the storage answering 503 to everything: exit 2" "$RC" 2
env_fault clear
run mark "$victim"
check_eq "mark: neither --suspicious nor --clear: exit 2" "$RC" 2
run mark "$victim" --suspicious --clear
check_eq "mark: both: exit 2" "$RC" 2
run mark not-an-id --suspicious
check_eq "mark: a malformed id: exit 2" "$RC" 2
echo "manifest ops web-1 node $victim" | fixture >/dev/null
run mark "$victim" --suspicious
check_eq "mark: the same id in two sources: exit 2" "$RC" 2
check_contains "mark: the same id in two sources: asks for --policy and --host" "$ERR" "give --policy and --host"

# ------------------------------------------------- forgetting 1,000 snapshots ---------
BIG=$(policy big ops big '  retention: {keepLast: 10}')
base=1767225600
{
	echo open
	for ((i = 0; i < 1010; i++)); do echo "manifest ops big node $(id $((base + i * 3600)))"; done
} | fixture >/dev/null
for ((i = 0; i < 1010; i++)); do age $((base + i * 3600)) "snapshots/ops/big/node/$(id $((base + i * 3600))).json"; done
env_fault clear
env_fault drop_token/20
RUN_REPO=$PREPO run forget --policy "$BIG"
check_eq "forget 1,000: a page without its continuation token: exit 2, nothing deleted" \
	"$RC $(files snapshots/ops/big/node | wc -l)" "2 1010"
env_fault clear
t0=$(date +%s%N)
RUN_REPO=$PREPO run forget --policy "$BIG" --output json
t1=$(date +%s%N)
requests=$(proxy_count)
check_eq "forget 1,000: exit 0, 1,000 forgotten, 10 left" \
	"$RC $(jq '.hosts[0].forget | length' <<<"$OUT") $(files snapshots/ops/big/node | wc -l)" "0 1000 10"
if ((requests <= 4)); then
	pass "forget 1,000: $requests requests (config GET, 2 LIST pages, 1 DeleteObjects)"
else
	fail "forget 1,000: at most 4 requests" "got $requests"
fi
echo "# forgetting 1,000 snapshots: $requests requests, $(((t1 - t0) / 1000000)) ms"

# ---------------------------------------------------------------- gc -----------------
# A repository of its own: every manifest here has its metadata pack (the fixture
# writes one per snapshot, ID.0.meta, which only that snapshot's trees name).
prefix=fgc-$(openssl rand -hex 4)
REPO=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
PREPO=s3:$PROXY/$S3_BUCKET/$prefix
DATA=$ENV_DIR/s3/data/$S3_BUCKET/$prefix
echo init | fixture >/dev/null
# bytes KEY...: the sum of the objects' sizes.
bytes() { (cd "$DATA" && stat -c %s "$@" | awk '{s += $1} END {print s + 0}'); }
# Source gc/pol/node: S1{p1,p2} <- S2{p2,p3} <- S3{p3,p4} <- S4{p4}, p5 used by none;
# all ten days old. keepLast 1 forgets S1 and S2 (S3 is the second newest good).
# Neighbour gc/pol-1/node has a pack with p1's very name, used by its snapshot N1.
GCP=$(policy gcp gc pol '  retention: {keepLast: 1}')
now=$(date +%s)
old=$((now - 10 * 86400))
S1=$(id $((old - 4000)) 1) S2=$(id $((old - 3000)) 2) S3=$(id $((old - 2000)) 3) S4=$(id $((old - 1000)) 4)
N1=$(id $((old - 500)) 5) R=$(id "$now" 6) L=$(id "$now" 7)
{
	echo open
	for p in p1 p2 p3 p4 p5; do echo "pack gc pol node $p 1000"; done
	echo "pack gc pol-1 node p1 1000"
	echo "snap gc pol node $S1 - 3600 p1 p2"
	echo "snap gc pol node $S2 $S1 3600 p2 p3"
	echo "snap gc pol node $S3 $S2 3600 p3 p4"
	echo "snap gc pol node $S4 $S3 3600 p4"
	echo "snap gc pol-1 node $N1 - 3600 p1"
} | fixture >/dev/null
find "$DATA/data/gc" "$DATA/meta/gc" "$DATA/runs/gc" "$DATA/snapshots/gc" -type f -exec touch -d "@$old" {} +
hex() { echo "hex $1" | fixture | head -n 1; }
P1=$(hex p1) P2=$(hex p2) P3=$(hex p3) P4=$(hex p4) P5=$(hex p5) P6=$(hex p6)
# A backup running now (its run record is young, no manifest yet) whose parent is S2,
# started before S2 was forgotten (its run record names S2's trees, as lode backup's
# does), and a young pack p6 that nothing references yet.
{
	echo open
	echo "pack gc pol node p6 1000"
	echo "snap gc pol node $R $S2 3600 nomanifest"
} | fixture >/dev/null
run forget --policy "$GCP" --output json
check_eq "gc setup: forget drops S1 and S2" "$(jq -c '[.hosts[0].forget[].id]' <<<"$OUT")" "[\"$S2\",\"$S1\"]"
packs_before=$(files data/gc/pol/node)

freed1=$(bytes "meta/gc/pol/node/$S1.0.meta" "runs/gc/pol/node/$S1.json")
freed1=$((freed1 + 2000))
run gc --dry-run --output json
check_eq "gc --dry-run: exit 0" "$RC" 0
check_eq "gc --dry-run: the contract's JSON: p1 and p5 would go (p2 is S2's, whose child R runs), p6 is young; bytes of packs, S1's meta and run record" \
	"$(jq -c . <<<"$OUT")" "{\"packs\":{\"total\":7,\"deleted\":2,\"kept\":5},\"bytesFreed\":$freed1}"
check_eq "gc --dry-run: nothing deleted" "$(files data/gc/pol/node)" "$packs_before"
run gc --dry-run
check_contains "gc --dry-run: lists what it would delete" "$OUT" "would delete data/gc/pol/node/$P1.pack"

# A live run record anywhere in the repository widens W for every source.
echo -e "open\nsnap gc pol-1 node $L - 2592000 nomanifest" | fixture >/dev/null
run gc --dry-run --output json
check_eq "gc: a live run record with maxRuntime 30d makes ten-day-old objects young" \
	"$(jq -c .packs.deleted <<<"$OUT")" 0
env_s3 DELETE "/$S3_BUCKET/$prefix/runs/gc/pol-1/node/$L.json"
run gc --dry-run --max-runtime 15d --output json
check_eq "gc --max-runtime 15d: W = 15d + 1h, nothing ten days old goes" "$(jq -c .packs.deleted <<<"$OUT")" 0
run gc --max-runtime 0s
check_eq "gc --max-runtime 0s: usage error" "$RC" 2

env_fault clear
env_fault truncate_list/40
RUN_REPO=$PREPO run gc --output json
check_eq "gc, listings cut short: exit non-zero" "$([[ $RC -ne 0 ]] && echo yes)" yes
check_eq "gc, listings cut short: nothing deleted" "$(files data/gc/pol/node)" "$packs_before"
env_fault clear

# The figures are printed, not asserted; /usr/bin/time (Debian's time) is used when present.
timer=()
[[ -x /usr/bin/time ]] && timer=(/usr/bin/time -f '%e %M' -o "$T_TMP/time")
"${timer[@]}" "$LODE" gc --output json --repo "$REPO" >"$T_TMP/gc.json" 2>"$T_TMP/gc.err"
RC=$?
OUT=$(cat "$T_TMP/gc.json")
check_eq "gc: exit 0" "$RC" 0
check_eq "gc: deletes p1 and p5" "$(jq -c . <<<"$OUT")" "{\"packs\":{\"total\":7,\"deleted\":2,\"kept\":5},\"bytesFreed\":$freed1}"
check_eq "gc: the packs left are p2 p3 p4 p6" "$(files data/gc/pol/node | tr '\n' ' ')" \
	"$(printf '%s.pack\n' "$P2" "$P3" "$P4" "$P6" | sort | tr '\n' ' ')"
check_eq "gc: S1's meta and run record are gone; S2's (R's parent) stay" \
	"$(files meta/gc/pol/node | grep -c "$S1") $(files runs/gc/pol/node | grep -c "$S1") $(files meta/gc/pol/node | grep -c "$S2")" \
	"0 0 1"
check_eq "gc: the neighbour's pack named like p1 stays" "$(files data/gc/pol-1/node)" "$P1.pack"
check_eq "gc: kept snapshots' objects stay (S3, S4: meta and run records)" \
	"$(files meta/gc/pol/node | grep -c -e "$S3" -e "$S4") $(files runs/gc/pol/node | grep -c -e "$S3" -e "$S4")" "2 2"
if [[ -s $T_TMP/time ]]; then
	read -r wall rss < <(tail -n 1 "$T_TMP/time")
	echo "# gc of $(find "$DATA" -type f | wc -l) objects: ${wall}s wall, ${rss} KiB peak RSS"
fi

# The backup R is long over: its record ages past the window and protects S2 no more.
age "$old" "runs/gc/pol/node/$R.json" "meta/gc/pol/node/$R.0.meta"
freed2=$(bytes meta/gc/pol/node/"$S2".0.meta runs/gc/pol/node/"$S2".json meta/gc/pol/node/"$R".0.meta runs/gc/pol/node/"$R".json)
freed2=$((freed2 + 1000))
run gc --output json
check_eq "gc after R aged: p2 goes (only forgotten S1 and S2 used it)" \
	"$(jq -c . <<<"$OUT")" "{\"packs\":{\"total\":5,\"deleted\":1,\"kept\":4},\"bytesFreed\":$freed2}"
check_eq "gc after R aged: packs p3 p4 p6 left" "$(files data/gc/pol/node | tr '\n' ' ')" \
	"$(printf '%s.pack\n' "$P3" "$P4" "$P6" | sort | tr '\n' ' ')"
check_eq "gc after R aged: S2's and R's meta and run records gone" \
	"$(files meta/gc/pol/node | grep -c -e "$S2" -e "$R") $(files runs/gc/pol/node | grep -c -e "$S2" -e "$R")" "0 0"
check_eq "gc after R aged: the snapshots left are S3 and S4" "$(files snapshots/gc/pol/node | tr '\n' ' ')" "$S3.json $S4.json "
run gc --output json --termination-log "$T_TMP/gc.termlog"
check_eq "gc again: nothing more" "$(jq -c .packs.deleted <<<"$OUT")" 0
check_eq "gc --termination-log: the printed JSON and error null, for the controller" \
	"$(jq -c . "$T_TMP/gc.termlog")" "$(jq -c '. + {error: null}' <<<"$OUT")"
run gc --output json --termination-log "$T_TMP/nodir/gc.termlog"
check_eq "gc --termination-log in a missing directory: gc still exits 0" "$RC" 0
check_contains "gc --termination-log in a missing directory: said" "$ERR" "cannot write --termination-log"

# A key DeleteObjects refuses is named, and the run exits 2.
printf 'open\npack gc pol node p7 10\n' | fixture >/dev/null
age "$old" "data/gc/pol/node/$(hex p7).pack"
env_fault clear
env_fault del_denied/1
RUN_REPO=$PREPO run gc --output json
check_eq "gc, a key refused by DeleteObjects: exit 2" "$RC" 2
check_contains "gc, a key refused by DeleteObjects: named" "$ERR" "cannot delete data/gc/pol/node/$(hex p7).pack"
env_fault clear
env_fault 503/40
RUN_REPO=$PREPO run gc --output json
check_eq "gc, the storage answering 503 to everything: exit 2, and it says nothing was deleted" \
	"$RC $(grep -c 'nothing was deleted' <<<"$ERR")" "2 1"
RUN_REPO=$PREPO run gc --output json --termination-log "$T_TMP/gc503.termlog"
check_eq "gc --termination-log, storage failing: the error is in it, nothing counted deleted" \
	"$(jq -r '(.error | test("nothing was deleted")), .packs.deleted' "$T_TMP/gc503.termlog" | tr '\n' ' ')" "true 0 "
env_fault clear

# A protected snapshot whose metadata pack is gone: its source is skipped, the rest goes on.
# gc reads the trees only of snapshots its cache does not answer for (docs/gc.md, "The
# cache"), so the source's cache goes first: a first run's read is what finds the hole.
env_s3 DELETE "/$S3_BUCKET/$prefix/meta/gc/pol-1/node/$N1.0.meta"
env_s3 DELETE "/$S3_BUCKET/$prefix/gc/gc/pol-1/node/packs.cache"
echo -e "open\npack gc pol-1 node p9 10" | fixture >/dev/null
age "$old" "data/gc/pol-1/node/$(hex p9).pack"
run gc --output json
check_eq "gc, a metadata pack missing: exit 1" "$RC" 1
check_contains "gc, a metadata pack missing: names it" "$ERR" "meta/gc/pol-1/node/$N1.0.meta is missing"
check_eq "gc, a metadata pack missing: nothing of that source deleted" "$(files data/gc/pol-1/node | wc -l)" 2

run gc --key-file /dev/null
check_eq "gc without a usable key: exit 2" "$RC" 2

# ------------------------------------------------- gc after real backups -------------
# lode init and four lode backups of one tree: S1 {A, B}, S2 replaces A, S3 replaces B,
# S4 adds D. keepLast 1 keeps S4 and S3 (the second newest good) and forgets S1 and S2:
# the packs holding the first A and B are used by forgotten snapshots only.
prefix=fgc-$(openssl rand -hex 4)
REPO=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
DATA=$ENV_DIR/s3/data/$S3_BUCKET/$prefix
run init
check_eq "real: lode init" "$RC" 0
BK=$(policy bk gc bk '  paths: [/data]' '  retention: {keepLast: 1}')
sed -i '/^  paths: \[\/etc\]$/d' "$BK"
tree=$T_TMP/tree
mkdir -p "$tree/data"
head -c 3000000 /dev/urandom >"$tree/data/a"
head -c 3000000 /dev/urandom >"$tree/data/b"
ids=()
for step in 1 2 3 4; do
	case $step in
	2) head -c 3000000 /dev/urandom >"$tree/data/a" ;;
	3) head -c 3000000 /dev/urandom >"$tree/data/b" ;;
	4) head -c 3000000 /dev/urandom >"$tree/data/d" ;;
	esac
	run backup --policy "$BK" --host node --root "$tree" --output json
	[[ $RC == 0 ]] || echo "$ERR"
	ids+=("$(jq -r .snapshot.id <<<"$OUT")")
done
check_eq "real: four backups" "$(run snapshots --policy "$BK" --output json; jq '.snapshots | length' <<<"$OUT")" 4
find "$DATA" -type f -exec touch -d "@$old" {} +
for k in 0 1 2 3; do age $((old + 60 * k)) "snapshots/gc/bk/node/${ids[k]}.json"; done
packs_of() { printf 'open\npacks gc bk node %s\n' "$@" | fixture | grep -v '^ok'; }
forgotten=$(packs_of "${ids[0]}" "${ids[1]}" | sort -u)
kept=$(packs_of "${ids[2]}" "${ids[3]}" | sort -u)
only_forgotten=$(comm -23 <(echo "$forgotten") <(echo "$kept"))
n_only=$(grep -c . <<<"$only_forgotten")
((n_only > 0)) && pass "real: $n_only pack(s) used only by S1 and S2" || fail "real: some pack used only by S1 and S2"
run forget --policy "$BK" --output json
check_eq "real: forget drops S1 and S2" "$(jq -c '[.hosts[0].forget[].id]' <<<"$OUT")" "[\"${ids[1]}\",\"${ids[0]}\"]"
total=$(files "data/gc/bk/node" | wc -l)
run gc --output json
check_eq "real: gc exit 0" "$RC" 0
check_eq "real: gc deletes exactly the packs only S1 and S2 used" \
	"$(jq -c '.packs' <<<"$OUT")" "{\"total\":$total,\"deleted\":$n_only,\"kept\":$((total - n_only))}"
check_eq "real: the packs left are exactly those S3 and S4 use" \
	"$(files data/gc/bk/node | sed 's/\.pack$//' | sort | tr '\n' ' ')" "$(tr '\n' ' ' <<<"$kept")"
check_eq "real: S1's and S2's meta objects and run records are gone, S3's and S4's stay" \
	"$(files meta/gc/bk/node | grep -c -e "${ids[0]}" -e "${ids[1]}") $(files runs/gc/bk/node | grep -c -e "${ids[0]}" -e "${ids[1]}") $(files meta/gc/bk/node | grep -c -e "${ids[2]}" -e "${ids[3]}")" \
	"0 0 2"
run check --read-data
check_eq "real: lode check --read-data after gc: clean" "$RC" 0
[[ $RC == 0 ]] || echo "$OUT $ERR"
run restore "${ids[3]}" --target "$T_TMP/r4"
check_eq "real: S4 restores exactly (a', b', d)" "$RC $(diff -r "$tree/data" "$T_TMP/r4/data" >/dev/null && echo same)" "0 same"
run restore "${ids[2]}" --target "$T_TMP/r3"
check_eq "real: S3 restores exactly (a', b')" \
	"$RC $(cmp "$tree/data/a" "$T_TMP/r3/data/a" && cmp "$tree/data/b" "$T_TMP/r3/data/b" && [[ ! -e $T_TMP/r3/data/d ]] && echo same)" "0 same"
run backup --policy "$BK" --host node --root "$tree" --output json
check_eq "real: a backup after gc (parent S4) succeeds" "$RC" 0

# No lock: gc runs again and again while a slow backup (uploadRate 2MiB/s, about 8 s)
# runs beside it; S5 is forgotten meanwhile, so gc has old packs to delete. The
# backup succeeds, and the repository checks clean and restores exactly after.
SLOW=$(policy slow gc bk '  paths: [/data]' '  retention: {keepLast: 1}' '  limits: {uploadRate: 2MiB/s}')
sed -i '/^  paths: \[\/etc\]$/d' "$SLOW"
head -c 3000000 /dev/urandom >"$tree/data/a"
head -c 12000000 /dev/urandom >"$tree/data/e"
printf 'open\npack gc bk node junk 1000\n' | fixture >/dev/null # an old pack nothing uses
find "$DATA" -type f -exec touch -d "@$old" {} +
LODE_REPOSITORY=$REPO "$LODE" backup --policy "$SLOW" --host node --root "$tree" --output json \
	>"$T_TMP/slow.out" 2>"$T_TMP/slow.err" &
slow_pid=$!
gcs=0 gc_failed=0 gc_deleted=0
while kill -0 "$slow_pid" 2>/dev/null; do
	run gc --output json
	[[ $RC == 0 ]] || gc_failed=$((gc_failed + 1))
	gc_deleted=$((gc_deleted + $(jq '.packs.deleted // 0' <<<"$OUT")))
	gcs=$((gcs + 1))
	((gcs == 1)) && run forget --policy "$BK"
done
wait "$slow_pid"
slow_rc=$?
check_eq "real: the slow backup beside $gcs gc runs succeeds, and every gc run exits 0" "$slow_rc $gc_failed" "0 0"
((gcs >= 2 && gc_deleted >= 1)) && pass "real: gc ran $gcs times while the backup ran, deleting $gc_deleted pack(s)" ||
	fail "real: gc beside the backup" "$gcs runs, $gc_deleted packs deleted"
slow_id=$(jq -r .snapshot.id "$T_TMP/slow.out")
run check --read-data
check_eq "real: after gc beside a backup, lode check --read-data is clean" "$RC" 0
[[ $RC == 0 ]] || echo "$OUT $ERR"
run restore "$slow_id" --target "$T_TMP/r6"
check_eq "real: the backup made beside gc restores exactly" \
	"$RC $(diff -r "$tree/data" "$T_TMP/r6/data" >/dev/null && echo same)" "0 same"
finish
