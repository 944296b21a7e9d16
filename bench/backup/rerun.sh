#!/usr/bin/env bash
# The re-run benchmark (docs/benchmarks.md, "What a re-run adds: repository format 2";
# the targets of issue 21): lode and restic 0.18.1 (bench/tools) on trees of N small
# files, each tool in its own bucket of one versitygw (127.0.0.1, plain HTTP, posix
# backend), side by side in one run. For each N in BENCH_RERUN_FILES (default
# "100000 1000000"):
#   - the tree: N files of 64 to 1,087 bytes in directories of 1,000 (bench_gen_tree),
#     made once under $BENCH_TREE_ROOT (default /tmp/lode-bench-rerun) and read once
#     before the runs, so every tool reads it from the page cache;
#   - per tool: first backup, unchanged re-run, and a re-run after one line was appended
#     to one file; then, for N in BENCH_RERUN_RESTORE (default 100000), a restore of
#     the last snapshot, compared with the tree by diff -r;
#   - per run: bytes added (the growth of the tool's bucket: the sizes of its objects),
#     requests (versitygw's access log), wall, CPU, peak RSS and peak RSS per file.
# restic has a cache directory of its own, kept between its runs (its normal use), and so
# has lode (--cache-dir, its node cache of metadata: docs/repository.md); BENCH_LODE_CACHE=0
# runs lode with --no-cache (every re-run reads its parent's metadata from the bucket).
# The targets are printed with the figures, and the slope of peak RSS between the
# smallest and largest tree (the memory a file costs, without the fixed part).
# The size "copied" is the copied /usr/share + Go tree of bench/backup/run.sh (under
# BENCH_COPIED_ROOT, default /tmp/lode-bench-tree; run.sh makes it), whose one change is a
# line appended to tree/share/common-licenses/GPL-3: e.g. BENCH_RERUN_FILES="100000 copied".
# BENCH_RERUN_TOOLS="lode" measures lode alone (to compare two builds: LODE=path);
# BENCH_RERUN_CHECK=1 runs lode check on each repository after its runs.
# Exits 1 when any command fails or a restore differs from the tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
out=$(realpath -m "${BENCH_OUT:-build/bench/rerun}")
mkdir -p "$out"
# shellcheck disable=SC1091
source bench/backup/lib.sh
bench_tools

tree_root=${BENCH_TREE_ROOT:-/tmp/lode-bench-rerun}
copied_root=${BENCH_COPIED_ROOT:-/tmp/lode-bench-tree}
# dir_of N: the directory holding tree N's "tree"; changed_of N: the file its change appends to.
dir_of() { if [[ $1 == copied ]]; then echo "$copied_root"; else echo "$tree_root/gen-$1"; fi; }
changed_of() {
	if [[ $1 == copied ]]; then echo "$copied_root/tree/share/common-licenses/GPL-3"; else echo "$tree_root/gen-$1/tree/d0000/f0000.txt"; fi
}
sizes=${BENCH_RERUN_FILES:-100000 1000000}
restore_sizes=" ${BENCH_RERUN_RESTORE:-100000} "
tools=${BENCH_RERUN_TOOLS:-r018 lode}
work=$(mktemp -d /tmp/lode-bench-rerun-work.XXXXXX)
BENCH_WORK=$work
BENCH_RESULTS=$out/results.txt
: >"$BENCH_RESULTS"
: >"$BENCH_RESULTS.ops"
: >"$out/added.txt"
: >"$out/files.txt"
restore_fs=$(bench_restore_mode "${BENCH_RESTORE_FS:-fresh}")
cleanup() {
	local m
	for m in "$work"/restore-*; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	bench_vgw_stop
	[[ -n ${VGW_LOG:-} ]] && cp "$VGW_LOG" "$out/access.log"
	cp "$work"/*.err "$out"/ 2>/dev/null; rm -rf "$work"
}
trap cleanup EXIT
export RESTIC_PASSWORD=bench-password-$$
head -c 32 /dev/urandom | base64 >"$work/lode.key"
chmod 600 "$work/lode.key"
export LODE_KEY_FILE=$work/lode.key
cat >"$work/policy.yaml" <<'EOF'
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: bench, namespace: bench}
spec:
  repository: main
  paths: [/tree]
EOF

echo "start: $(date -u '+%F %T') UTC, uptime: $(uptime)" | tee "$out/machine.txt"
bench_machine | tee -a "$out/machine.txt"
echo "restores into: $([[ $restore_fs == fresh ]] && echo "a fresh ext4 file system each" || echo "directories of $work")" |
	tee -a "$out/machine.txt"
bench_vgw_start "$work"
echo "versitygw on $S3_ENDPOINT"

# stored BUCKET: the bytes of the bucket's objects.
stored() { find "$VGW_DATA/$1" -type f -printf '%s\n' | awk '{ b += $1 } END { print b + 0 }'; }
# backup TOOL N LABEL: one backup of tree N, its bytes added recorded in added.txt.
backup() {
	local tool=$1 n=$2 label=$3 bucket=$1-$2 before st=0
	before=$(stored "$bucket")
	touch "$work/stamp-$label"
	case $tool in
	r018)
		(cd "$(dir_of "$n")" && bench_run "$label" "$bucket" "$RESTIC018" -r "s3:$S3_ENDPOINT/$bucket" \
			--cache-dir "$work/cache-$bucket" backup -q --host bench tree) || st=$?
		;;
	lode)
		local cache=(--cache-dir "$work/cache-$bucket")
		[[ ${BENCH_LODE_CACHE:-1} == 0 ]] && cache=(--no-cache)
		bench_run "$label" "$bucket" env LODE_REPOSITORY="s3:$S3_ENDPOINT/$bucket" "$LODE" backup \
			--policy "$work/policy.yaml" --host bench --root "$(dir_of "$n")" --output json \
			"${cache[@]}" || st=$?
		;;
	esac
	echo "$label $(($(stored "$bucket") - before))" >>"$out/added.txt"
	# What the run added, object by object (the bytes above, where they went).
	(cd "$VGW_DATA/$bucket" && find . -type f -newer "$work/stamp-$label" -printf '%s %P\n' | sort -k2) \
		>"$out/objects-$label.txt"
	return $st
}
# restore TOOL N LABEL: restores the last snapshot and compares it with the tree.
restore() {
	local tool=$1 n=$2 label=$3 bucket=$1-$2 target id st=0 got
	target=$(bench_restore_target "$restore_fs" "$label" 8G) || return 1
	sync
	case $tool in
	r018)
		bench_run "$label" "$bucket" "$RESTIC018" -r "s3:$S3_ENDPOINT/$bucket" --cache-dir "$work/cache-$bucket" \
			restore latest --target "$target" || st=$?
		;;
	lode)
		id=$(jq -r .snapshot.id "$work/lode-$n-changed.out")
		bench_run "$label" "$bucket" env LODE_REPOSITORY="s3:$S3_ENDPOINT/$bucket" "$LODE" restore "$id" \
			--target "$target" || st=$?
		;;
	esac
	got=$target/tree
	[[ -d $got ]] || got=$target$(dir_of "$n")/tree
	if [[ $st == 0 ]] && diff -rq --no-dereference "$(dir_of "$n")/tree" "$got" >"$work/$label.diff" 2>&1; then
		echo "  $label: the restored tree equals the original (diff -r)"
		echo "$label equal" >>"$out/verify.txt"
	else
		echo "  $label: the restored tree DIFFERS (or the restore failed): $(wc -l <"$work/$label.diff") lines of diff" >&2
		head -n 5 "$work/$label.diff" >&2
		echo "$label differs" >>"$out/verify.txt"
		st=1
	fi
	bench_restore_done "$restore_fs" "$label"
	rm -rf "$target"
	return $st
}

status=0
: >"$out/verify.txt"
: >"$out/trees.txt"
for n in $sizes; do
	echo "== $n files"
	dir=$(dir_of "$n")
	chg=$(changed_of "$n")
	if [[ $n == copied ]]; then
		[[ -f $copied_root/.complete && -f $chg ]] ||
			{ echo "bench: no copied tree under $copied_root (bench/backup/run.sh makes it)" >&2; exit 1; }
	else
		bench_gen_tree "$dir" "$n"
	fi
	# Each tree gets its one change again from the start: a kept tree is as it was made.
	if [[ -f $dir/changed ]]; then
		truncate -s "$(cat "$dir/changed")" "$chg"
		rm "$dir/changed"
	fi
	read -r gf gb gd _ < <(bench_tree_facts "$dir/tree")
	echo "  tree: $gf files, $gb bytes, $gd directories" | tee -a "$out/trees.txt"
	echo "$n $gf" >>"$out/files.txt"
	tar cf - -C "$dir" tree | cat >/dev/null
	for t in $tools; do
		bench_bucket "$t-$n"
		case $t in
		r018) "$RESTIC018" -r "s3:$S3_ENDPOINT/$t-$n" --cache-dir "$work/cache-$t-$n" init >/dev/null ;;
		lode) LODE_REPOSITORY="s3:$S3_ENDPOINT/$t-$n" "$LODE" init >/dev/null ;;
		esac
	done
	for t in $tools; do backup "$t" "$n" "$t-$n-first" || status=1; done
	for t in $tools; do backup "$t" "$n" "$t-$n-unchanged" || status=1; done
	stat -c %s "$chg" >"$dir/changed"
	echo "one more line" >>"$chg"
	for t in $tools; do backup "$t" "$n" "$t-$n-changed" || status=1; done
	if [[ $restore_sizes == *" $n "* ]]; then
		for t in $tools; do restore "$t" "$n" "$t-$n-restore" || status=1; done
	fi
	# BENCH_RERUN_CHECK=1: lode check reads every snapshot's trees back (not measured).
	if [[ ${BENCH_RERUN_CHECK:-0} == 1 && " $tools " == *" lode "* ]]; then
		LODE_REPOSITORY="s3:$S3_ENDPOINT/lode-$n" "$LODE" check >"$out/check-$n.txt" 2>&1 || status=1
		echo "  lode check: $(tail -n 1 "$out/check-$n.txt")"
	fi
	truncate -s "$(cat "$dir/changed")" "$chg"
	rm "$dir/changed"
	for t in $tools; do
		echo "  stored $t-$n: $(stored "$t-$n") bytes" | tee -a "$out/trees.txt"
		rm -rf "${VGW_DATA:?}/$t-$n" "$work/cache-$t-$n"
	done
done
echo "end: $(date -u '+%F %T') UTC, uptime: $(uptime)" | tee -a "$out/machine.txt"

echo "== summary"
awk -v sizes="$sizes" '
FILENAME ~ /added/ { add[$1] = $2; next }
FILENAME ~ /files/ { nf[$1] = $2; next }
FILENAME ~ /trees/ { next }
{ wall[$1] = $2; cpu[$1] = $3; rss[$1] = $4; req[$1] = $5; st[$1] = $10 }
function v(ok) { return ok ? "met" : "NOT met" }
END {
	ns = split(sizes, n, " ")
	print "| run | bytes added | requests | wall s | CPU s | peak RSS MiB | RSS B/file |"
	print "|---|---:|---:|---:|---:|---:|---:|"
	for (i = 1; i <= ns; i++)
		for (s = 1; s <= 4; s++) {
			step = s == 1 ? "first" : s == 2 ? "unchanged" : s == 3 ? "changed" : "restore"
			for (t = 1; t <= 2; t++) {
				l = (t == 1 ? "r018" : "lode") "-" n[i] "-" step
				if (!(l in wall)) continue
				printf "| %s | %s | %d | %.2f | %.2f | %.1f | %.0f |%s\n", l,
					(l in add) ? add[l] : "-", req[l], wall[l], cpu[l], rss[l] / 1024,
					rss[l] * 1024 / nf[n[i]], st[l] ? " exit " st[l] : ""
			}
		}
	print ""
	print "targets (issue 21):"
	for (i = 1; i <= ns; i++) {
		r = "r018-" n[i] "-"; l = "lode-" n[i] "-"
		for (s = 1; s <= 2; s++) {
			step = s == 1 ? "unchanged" : "changed"
			printf "  %s files, bytes added by the %s re-run: lode %d, restic %d (at most restic'"'"'s: %s)\n",
				n[i], step, add[l step], add[r step], v(add[l step] <= add[r step])
		}
		printf "  %s files, first backup wall: %.2f / %.2f s = %.2fx (at most 0.6x: %s)\n", n[i],
			wall[l "first"], wall[r "first"], wall[l "first"] / wall[r "first"], v(wall[l "first"] <= 0.6 * wall[r "first"])
		printf "  %s files, unchanged re-run wall: %.2f / %.2f s = %.2fx (at most 0.5x: %s)\n", n[i],
			wall[l "unchanged"], wall[r "unchanged"], wall[l "unchanged"] / wall[r "unchanged"],
			v(wall[l "unchanged"] <= 0.5 * wall[r "unchanged"])
		if ((l "restore") in wall)
			printf "  %s files, restore wall: %.2f / %.2f s = %.2fx (at most 0.8x: %s)\n", n[i],
				wall[l "restore"], wall[r "restore"], wall[l "restore"] / wall[r "restore"],
				v(wall[l "restore"] <= 0.8 * wall[r "restore"])
		m = 0
		for (s = 1; s <= 4; s++) {
			step = s == 1 ? "first" : s == 2 ? "unchanged" : s == 3 ? "changed" : "restore"
			if (((l step) in rss) && rss[l step] > m) m = rss[l step]
		}
		printf "  %s files, lode peak RSS: %.1f MiB, %.0f B/file (at most 64 MiB: %s; at most 64 B/file: %s)\n",
			n[i], m / 1024, m * 1024 / nf[n[i]], v(m <= 65536), v(m * 1024 / nf[n[i]] <= 64)
		printf "  %s files, requests per unchanged re-run: lode %d, restic %d\n", n[i], req[l "unchanged"], req[r "unchanged"]
	}
	# The slopes: between the smallest and the largest generated tree.
	a = b = ""
	for (i = 1; i <= ns; i++)
		if (n[i] != "copied") { if (a == "") a = n[i]; b = n[i] }
	if (a != "" && a != b) {
		for (s = 1; s <= 3; s++) {
			step = s == 1 ? "first" : s == 2 ? "unchanged" : "changed"
			for (t = 1; t <= 2; t++) {
				tool = t == 1 ? "r018" : "lode"
				x = tool "-" a "-" step; y = tool "-" b "-" step
				if ((x in rss) && (y in rss))
					printf "  peak RSS per file between %d and %d files, %s %s: %.1f B%s\n", a, b, tool, step,
						(rss[y] - rss[x]) * 1024 / (b - a), tool == "lode" ? " (at most 64 B: " v((rss[y] - rss[x]) * 1024 / (b - a) <= 64) ")" : ""
			}
		}
		printf "  requests per unchanged re-run, %d then %d files: lode %d then %d (independent of the files: %s)\n",
			a, b, req["lode-" a "-unchanged"], req["lode-" b "-unchanged"],
			v(req["lode-" a "-unchanged"] == req["lode-" b "-unchanged"])
	}
}' "$out/added.txt" "$out/files.txt" "$out/trees.txt" "$BENCH_RESULTS" | tee "$out/summary.txt"
grep -q differs "$out/verify.txt" && status=1
exit $status
