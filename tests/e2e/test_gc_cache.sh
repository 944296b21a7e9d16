#!/usr/bin/env bash
# gc's cache (docs/gc.md, "The cache") against versitygw of tests/env/, through
# tests/e2e/s3/faultproxy.c, which counts requests. Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_gc_cache.sh
# Without a running environment it fails (lib.sh refuses): it never counts a skip.
#
# 100 snapshots of one source (tests/e2e/s3/repo_fixture.c): the first lode gc reads
# every manifest and its trees and stores what it learned in gc/<source>/packs.cache;
# the second reads none of them, so its requests do not grow with the snapshots. A
# cache a bucket writer replaced, or one moved from another source, is said on stderr
# and left out (every tree is read, nothing is deleted that a snapshot uses); a
# manifest written again under its id is read again, not answered from the cache.
# LODE_BEFORE=BINARY also counts another lode's two runs on the same repository (for
# docs/benchmarks.md), as "# before" lines.
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
	env_build_tool faultproxy 2>>"$T_TMP/cc.log" && env_fault_proxy_start; then
	pass "build repo_fixture and faultproxy, start the proxy"
else
	fail "build repo_fixture and faultproxy (run make first)" "$(cat "$T_TMP/cc.log" "$T_TMP/proxy.log" 2>/dev/null)"
	finish
	exit 1
fi

printf 'correct horse battery staple\n' >"$T_TMP/key"
chmod 600 "$T_TMP/key"
export LODE_KEY_FILE=$T_TMP/key
N=100
# repo NAME: a fresh repository of N snapshots of cc/pol/node, each with a pack of its own
# and one shared by all, and three snapshots of cc/pol/node-2.
id() { printf '%sZ-%016x' "$(date -u -d "@$1" +%Y%m%dT%H%M%S)" "$1"; }
repo() {
	prefix=gcc-$1-$(openssl rand -hex 4)
	REPO=s3:$S3_ENDPOINT/$S3_BUCKET/$prefix
	PREPO=s3:$PROXY/$S3_BUCKET/$prefix
	DATA=$ENV_DIR/s3/data/$S3_BUCKET/$prefix
	{
		echo init
		for ((i = 0; i < N; i++)); do echo "snap cc pol node $(id $((1767225600 + i * 3600))) - 3600 base p$i"; done
		for ((i = 0; i < 3; i++)); do echo "snap cc pol node-2 $(id $((1767225600 + i * 3600))) - 3600 q$i"; done
	} | LODE_REPOSITORY=$REPO "$out/repo_fixture" "$T_TMP/key" >"$T_TMP/fixture.out" 2>&1
	check_eq "fixture $1: $N + 3 snapshots written" "$(tail -n 1 "$T_TMP/fixture.out")" "ok $((N + 4))"
	# Two days old, as a repository between collections is (versitygw's posix backend takes
	# LastModified from the file's mtime): run records older than the window are not read.
	find "$DATA" -type f -exec touch -d "@$(($(date +%s) - 2 * 86400))" {} +
}
# gcrun BINARY [ARGS]: lode gc through the proxy; sets OUT ERR RC and REQS.
gcrun() {
	local bin=$1
	shift
	env_fault clear
	OUT=$(LODE_REPOSITORY=$PREPO "$bin" gc "$@" 2>"$T_TMP/err")
	RC=$?
	ERR=$(cat "$T_TMP/err")
	REQS=$(curl -s --max-time 5 "$PROXY/__fault/count")
}

if [[ -n ${LODE_BEFORE:-} ]]; then
	repo before
	gcrun "$LODE_BEFORE"
	r1=$REQS
	gcrun "$LODE_BEFORE"
	echo "# before ($LODE_BEFORE): $N snapshots: first gc $r1 requests, second $REQS"
fi

repo after
gcrun "$LODE"
check_eq "first gc: exit 0" "$RC" 0
check_contains "first gc: every snapshot read" "$OUT" "protected snapshots: $((N + 3)) read, 0 known from gc's cache"
first=$REQS
check_eq "first gc: a cache per source" "$(cd "$DATA/gc" && find . -type f | sort | tr '\n' ' ')" \
	"./cc/pol/node-2/packs.cache ./cc/pol/node/packs.cache "
gcrun "$LODE"
check_eq "second gc: exit 0" "$RC" 0
check_contains "second gc: no snapshot read" "$OUT" "protected snapshots: 0 read, $((N + 3)) known from gc's cache"
second=$REQS
echo "# after: $N snapshots: first gc $first requests, second $second"
# Two sources: per source its LISTs and the cache's GET; plus config.json, gc.json, the
# uploads' listing and each source's newest run record (26 measured), never one per snapshot.
[[ $second -le 30 && $second -lt $((first / 4)) ]] && pass "second gc: $second requests, not one per snapshot" ||
	fail "second gc: at most 30 requests" "$second"
gcrun "$LODE" --output json
check_eq "second gc: nothing deleted, every pack still used" "$(jq -c .packs <<<"$OUT")" '{"total":0,"deleted":0,"kept":0}'

# One new snapshot: only it is read.
echo -e "open\nsnap cc pol node $(id 1800000000) - 3600 base pnew" |
	LODE_REPOSITORY=$REPO "$out/repo_fixture" "$T_TMP/key" >/dev/null
gcrun "$LODE"
check_contains "a new snapshot: only it is read" "$OUT" "protected snapshots: 1 read, $((N + 3)) known"

# A cache replaced in the bucket (without the key): said, left out, every tree read.
printf 'not a cache' >"$DATA/gc/cc/pol/node/packs.cache"
gcrun "$LODE"
check_eq "a forged cache: exit 0" "$RC" 0
check_contains "... named on stderr" "$ERR" "gc/cc/pol/node/packs.cache: too short"
check_contains "... and every snapshot of it read" "$OUT" "protected snapshots: $((N + 1)) read, 3 known"
# node's cache moved onto node-2's place: it does not open there.
cp "$DATA/gc/cc/pol/node/packs.cache" "$DATA/gc/cc/pol/node-2/packs.cache"
gcrun "$LODE"
check_contains "a cache moved from another source: named on stderr" "$ERR" \
	"gc/cc/pol/node-2/packs.cache: it does not open"
check_contains "... and that source's snapshots read" "$OUT" "protected snapshots: 3 read, $((N + 1)) known"

# A manifest written again under its id (another snapshot's copied over it): the listing
# shows another ETag, so it is read, found out of place, and its source is skipped.
s5=$(id $((1767225600 + 5 * 3600)))
s6=$(id $((1767225600 + 6 * 3600)))
cp "$DATA/snapshots/cc/pol/node/$s5.json" "$DATA/snapshots/cc/pol/node/$s6.json"
gcrun "$LODE"
check_eq "a manifest replaced under its id: exit 1" "$RC" 1
check_contains "... not answered from the cache: read and named" "$ERR" \
	"snapshots/cc/pol/node/$s6.json"
check_contains "... nothing of its source deleted" "$ERR" "cc/pol/node: "
finish
