#!/usr/bin/env bash
# The storage benchmark (make bench; docs/benchmarks.md, "Forget and garbage
# collection against restic"): lode and restic 0.18.1 (bench/tools) each build the
# same history in their own bucket of one versitygw (127.0.0.1, plain HTTP, posix
# backend), then forget and collect garbage, in one run:
#   - the history: N backups (BENCH_SNAPSHOTS, default 1,002) of a tiny tree of ten
#     4 KiB files, one of which gets new random bytes before each backup, so every
#     snapshot brings new data (a pack of its own: lode's and restic's packs are
#     closed at the end of each backup). restic's snapshots get hourly times with
#     --time; lode's times are the server's. Both histories are built at once (not
#     measured) and kept under $BENCH_HISTORY for the next runs (building them
#     takes about a second a backup); then every object is aged two days (versitygw's posix backend
#     takes LastModified from the file's mtime), past lode gc's safety window;
#   - forget: keep the last 2, forget N - 2 (1,000): `lode forget --policy` against
#     `restic forget --keep-last 2`: requests, wall time, peak RSS;
#   - garbage collection of what the forgotten snapshots alone used: `lode gc`
#     against `restic prune`: wall, peak RSS, requests, objects deleted; and a
#     backup started while each runs (when its first request is in the access
#     log): restic's is refused by prune's exclusive lock, lode's must succeed;
#   - lode check --read-data and restic check after the collection.
# The targets (issue 13) are printed with the figures. Exits 1 when lode's
# commands are missing (restic's side is still measured) or any command fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
N=${BENCH_SNAPSHOTS:-1002}
out=$(realpath -m "${BENCH_OUT:-build/bench/storage}")
mkdir -p "$out"
# shellcheck disable=SC1091
source bench/backup/lib.sh
bench_tools

work=$(mktemp -d /tmp/lode-bench-storage.XXXXXX)
BENCH_WORK=$work
BENCH_RESULTS=$out/results.txt
: >"$BENCH_RESULTS"
: >"$BENCH_RESULTS.ops"
trap 'bench_vgw_stop; [[ -n ${VGW_LOG:-} ]] && cp "$VGW_LOG" "$out/access.log"; rm -rf "$work"' EXIT
# Fixed: restic's history is kept between runs (below).
export RESTIC_PASSWORD=bench-password
head -c 32 /dev/urandom | base64 >"$work/lode.key"
chmod 600 "$work/lode.key"
export LODE_KEY_FILE=$work/lode.key

bench_machine | tee "$out/machine.txt"
bench_vgw_start "$work"
echo "versitygw on $S3_ENDPOINT; history of $N snapshots each"
bench_bucket restic
bench_bucket lode
status=0
# lode_hist: lode can build its history (init, backup); lode_ok: it can also be
# measured (forget's storage mode, gc, check).
lode_hist=1
for c in init backup; do
	bench_lode_has "$c" || { echo "lode has no '$c' command in this build"; lode_hist=0; }
done
lode_ok=$lode_hist
for c in gc check; do
	bench_lode_has "$c" || { echo "lode has no '$c' command in this build"; lode_ok=0; }
done
# forget --policy is the storage mode; the older --snapshots mode exists without it.
if ! "$LODE" forget --help 2>&1 | grep -q -- '--host'; then
	echo "lode forget has no storage mode (--policy P --host H) in this build"
	lode_ok=0
fi
[[ $lode_ok == 1 ]] || echo "lode's side is not measured"
cat >"$work/policy.yaml" <<'EOF'
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: bench, namespace: bench}
spec:
  repository: main
  paths: [/tree]
  retention: {keepLast: 2}
  limits: {maxRuntime: 1h}
EOF
RREPO=(-r "s3:$S3_ENDPOINT/restic" --cache-dir "$work/cache-restic")
export LODE_REPOSITORY=s3:$S3_ENDPOINT/lode

# tiny DIR K: the tree before backup K (file K mod 10 gets new bytes).
tiny() {
	local i
	if [[ ! -d $1/tree ]]; then
		mkdir -p "$1/tree"
		for i in $(seq 0 9); do head -c 4096 /dev/urandom >"$1/tree/f$i"; done
	fi
	head -c 4096 /dev/urandom >"$1/tree/f$(($2 % 10))"
}
# restic's history takes about a second a snapshot to build, so it is built once
# and kept under $BENCH_HISTORY (the bucket's objects, versitygw's sidecar metadata
# of them, restic's local cache and the tiny tree), then copied into each run's
# bucket. lode's is built in each run, from this build's lode.
hist=${BENCH_HISTORY:-/tmp/lode-bench-history}/restic-$N
history_restic() {
	local k start
	if [[ -f $hist/.complete ]]; then
		cp -a "$hist/data/." "$VGW_DATA/restic/"
		cp -a "$hist/meta/." "$work/vgw-meta/restic/"
		cp -a "$hist/cache" "$work/cache-restic"
		cp -a "$hist/tiny" "$work/tiny-restic"
		echo "restic's history copied from $hist"
		return 0
	fi
	start=$(($(date +%s) - N * 3600))
	"$RESTIC018" "${RREPO[@]}" init >/dev/null
	for ((k = 0; k < N; k++)); do
		tiny "$work/tiny-restic" "$k"
		(cd "$work/tiny-restic" && "$RESTIC018" "${RREPO[@]}" backup -q --host bench \
			--time "$(date -u -d "@$((start + k * 3600))" '+%Y-%m-%d %H:%M:%S')" tree) ||
			return 1
	done
	rm -rf "$hist"
	mkdir -p "$hist"
	cp -a "$VGW_DATA/restic" "$hist/data"
	cp -a "$work/vgw-meta/restic" "$hist/meta"
	cp -a "$work/cache-restic" "$hist/cache"
	cp -a "$work/tiny-restic" "$hist/tiny"
	touch "$hist/.complete"
}
# lode's history is kept the same way, with the repository key and the commit of
# the lode that wrote it ($BENCH_HISTORY/lode-N/built-by); lode check --read-data
# after the collection shows that this build reads it.
# Keyed by the repository format too, so that a new format builds a new history.
lhist=${BENCH_HISTORY:-/tmp/lode-bench-history}/lode-$N-format$(awk '$2 == "REPO_FORMAT" { print $3 }' internal/repo/repo.h)
history_lode() {
	local k
	if [[ -f $lhist/.complete ]]; then
		cp -a "$lhist/data/." "$VGW_DATA/lode/"
		cp -a "$lhist/meta/." "$work/vgw-meta/lode/"
		cp -a "$lhist/tiny" "$work/tiny-lode"
		cp "$lhist/lode.key" "$LODE_KEY_FILE"
		echo "lode's history copied from $lhist (written by $(cat "$lhist/built-by"))"
		return 0
	fi
	"$LODE" init >/dev/null
	for ((k = 0; k < N; k++)); do
		tiny "$work/tiny-lode" "$k"
		"$LODE" backup --policy "$work/policy.yaml" --host bench --root "$work/tiny-lode" \
			>/dev/null || return 1
	done
	rm -rf "$lhist"
	mkdir -p "$lhist"
	cp -a "$VGW_DATA/lode" "$lhist/data"
	cp -a "$work/vgw-meta/lode" "$lhist/meta"
	cp -a "$work/tiny-lode" "$lhist/tiny"
	cp "$LODE_KEY_FILE" "$lhist/lode.key"
	"$LODE" version | head -n 1 >"$lhist/built-by"
	touch "$lhist/.complete"
}
echo "== building the histories (not measured)"
# BENCH_HISTORY_ONLY=restic|lode builds (or finds) that history alone and stops.
t0=$SECONDS
only=${BENCH_HISTORY_ONLY:-}
hr= hl=
if [[ $only != lode ]]; then
	history_restic >"$work/history-restic.log" 2>&1 &
	hr=$!
fi
if [[ $only != restic && $lode_hist == 1 ]]; then
	history_lode >"$work/history-lode.log" 2>&1 &
	hl=$!
fi
if [[ -n $hl ]] && ! wait "$hl"; then
	echo "lode's history failed:"
	tail -n 5 "$work/history-lode.log"
	status=1
	lode_ok=0
fi
if [[ -n $hr ]] && ! wait "$hr"; then
	echo "restic's history failed:"
	tail -n 5 "$work/history-restic.log"
	exit 1
fi
cat "$work"/history-*.log
echo "  built in $((SECONDS - t0)) s"
if [[ -n $only ]]; then
	exit $status
fi
find "$VGW_DATA" -exec touch -h -d '2 days ago' {} +
objects() { find "$VGW_DATA/$1" -type f | wc -l; }
packs_restic() { find "$VGW_DATA/restic/data" -type f | wc -l; }
packs_lode() { find "$VGW_DATA/lode/data" -type f | wc -l; }
echo "  restic: $(objects restic) objects, $(packs_restic) packs" | tee "$out/history.txt"
[[ $lode_ok == 1 ]] && echo "  lode: $(objects lode) objects, $(packs_lode) packs" | tee -a "$out/history.txt"

echo "== forget: keep the last 2 of $N"
bench_run restic-forget restic "$RESTIC018" "${RREPO[@]}" forget --keep-last 2 --host bench || status=1
echo "  restic: $(("$RESTIC018" "${RREPO[@]}" snapshots --json 2>/dev/null || echo '[]') | jq length) snapshots left"
if [[ $lode_ok == 1 ]]; then
	bench_run lode-forget lode "$LODE" forget --policy "$work/policy.yaml" --host bench --output json || status=1
	echo "  lode: forgot $(jq '[.hosts[].forget[]] | length' "$work/lode-forget.out" 2>/dev/null || echo '?'), $("$LODE" snapshots --output json 2>/dev/null | jq '.snapshots | length') snapshots left"
fi

# gc_with_backup LABEL BUCKET OP KEY_RE -- GC... -- BACKUP...: runs GC measured and,
# once the access log shows its first OP request on a key matching KEY_RE, one
# backup beside it.
gc_with_backup() {
	local label=$1 bucket=$2 op=$3 re=$4 from gc=() bk=() gcpid bst=0
	shift 4
	[[ $1 == -- ]] && shift
	while [[ $1 != -- ]]; do gc+=("$1"); shift; done
	shift
	bk=("$@")
	from=$(wc -l <"$VGW_LOG")
	bench_run "$label" "$bucket" "${gc[@]}" &
	gcpid=$!
	if env_wait 120 "$label's first $op" bash -c \
		"tail -n +$((from + 1)) '$VGW_LOG' | awk -v b=$bucket -v op=$op -v re='$re' '\$2 == b && \$8 == op && \$9 ~ re { f = 1 } END { exit !f }'"; then
		"${bk[@]}" >"$work/$label-backup.out" 2>&1 || bst=$?
		if kill -0 "$gcpid" 2>/dev/null; then
			echo "  a backup started while $label ran exited $bst$( ((bst != 0)) && echo ": $(grep -m1 -i 'lock\|error' "$work/$label-backup.out")")"
		else
			echo "  a backup started while $label ran exited $bst (the collection ended before the backup did)"
		fi
		echo "$label $bst" >>"$out/concurrent.txt"
	fi
	wait "$gcpid"
}
echo "== garbage collection"
: >"$out/concurrent.txt"
tiny "$work/tiny-restic" "$N"
before=$(packs_restic)
# restic's prune holds its exclusive lock from its first locks/ object on.
gc_with_backup restic-prune restic s3_PutObject '^locks/' -- "$RESTIC018" "${RREPO[@]}" prune -- \
	bash -c "cd '$work/tiny-restic' && exec '$RESTIC018' -r 's3:$S3_ENDPOINT/restic' --cache-dir '$work/cache-restic' backup -q --host bench tree" ||
	status=1
echo "  restic: packs $before -> $(packs_restic)" | tee -a "$out/history.txt"
bench_run restic-check restic "$RESTIC018" "${RREPO[@]}" check || status=1
if [[ $lode_ok == 1 ]]; then
	tiny "$work/tiny-lode" "$N"
	before=$(packs_lode)
	gc_with_backup lode-gc lode s3_ListObjectsV2 . -- "$LODE" gc --output json -- \
		"$LODE" backup --policy "$work/policy.yaml" --host bench --root "$work/tiny-lode" ||
		status=1
	echo "  lode: packs $before -> $(packs_lode) ($(jq -c . "$work/lode-gc.out" 2>/dev/null))" | tee -a "$out/history.txt"
	bench_run lode-check lode "$LODE" check --read-data || status=1
fi

echo "== summary"
awk '
{ wall[$1] = $2; cpu[$1] = $3; rss[$1] = $4; req[$1] = $5; del[$1] = $7; st[$1] = $10 }
function row(l) {
	if (!(l in wall)) return
	printf "| %-14s | %8.2f | %7.2f | %8.1f | %8d | %7d |%s\n", l, wall[l], cpu[l], rss[l] / 1024,
		req[l], del[l], st[l] ? " exit " st[l] : ""
}
function verdict(ok) { return ok ? "met" : "NOT met" }
END {
	print "| run            |   wall s |   CPU s |  RSS MiB | requests | deletes |"
	print "|----------------|---------:|--------:|---------:|---------:|--------:|"
	split("restic-forget lode-forget restic-prune lode-gc restic-check lode-check", l)
	for (i = 1; i <= 6; i++) row(l[i])
	print ""
	if (("lode-forget" in wall) && !st["lode-forget"]) {
		r = req["restic-forget"] / req["lode-forget"]; w = wall["restic-forget"] / wall["lode-forget"]
		printf "forget: %.0fx fewer requests (target >= 100x: %s), %.1fx less wall time (target >= 20x: %s)\n",
			r, verdict(r >= 100), w, verdict(w >= 20)
	}
	if (("lode-gc" in wall) && !st["lode-gc"]) {
		m = rss["restic-prune"] / rss["lode-gc"]
		printf "gc: peak RSS %.1f MiB against %.1f MiB, 1/%.1f of restic prune'"'"'s (target <= 1/4: %s); wall %.2fx restic'"'"'s; requests %.2fx\n",
			rss["lode-gc"] / 1024, rss["restic-prune"] / 1024, m, verdict(m >= 4),
			wall["lode-gc"] / wall["restic-prune"], req["lode-gc"] / req["restic-prune"]
	}
}' "$BENCH_RESULTS" | tee "$out/summary.txt"
while read -r label bst; do
	case $label in
	lode-gc) if [[ $bst == 0 ]]; then echo "a backup during lode gc: succeeded (target: no backup blocked: met)"; else
		echo "a backup during lode gc: exited $bst (target: no backup blocked: NOT met)"; status=1; fi ;;
	restic-prune) echo "a backup during restic prune: exited $bst" ;;
	esac
done <"$out/concurrent.txt" | tee -a "$out/summary.txt"
if [[ $lode_ok != 1 ]]; then
	echo "lode's storage commands are missing from this build: only restic was measured"
	status=1
fi
exit $status
