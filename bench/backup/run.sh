#!/usr/bin/env bash
# The backup benchmark (make bench; docs/benchmarks.md, "Backup against restic"):
# restic 0.14 (Debian's), restic 0.18.1 (bench/tools) and lode on the same tree
# against the same versitygw (127.0.0.1, plain HTTP, posix backend), one bucket
# each, in one run:
#   - the tree: a copy of /usr/share and /usr/local/go (814 MB in 58,814 files
#     on the machine of docs/benchmarks.md), made once under $BENCH_TREE_ROOT (default /tmp/lode-bench-tree) and
#     read once before the runs so that every tool reads it from the page cache;
#   - per tool: first backup, unchanged re-run, restore of the re-run's snapshot
#     (each restore compared with the tree by diff -r), with wall, CPU, peak RSS,
#     requests and bytes uploaded (versitygw's access log) and versitygw's share
#     of the machine;
#   - memory per file: first backup and re-run of two generated trees of small
#     files (58,800 and 588,000 files), lode and restic 0.18.1; the slope of peak
#     RSS between them is the memory each file costs;
#   - the CPU throughput of lode's chunking, hashing, compression and encryption
#     per core (bench_pipeline.c) on the first 256 MiB of the tree.
# The targets (issue 12) are checked against the faster restic and printed.
# BENCH_VERIFY=0 skips the restore comparison; BENCH_GEN=0 the generated trees;
# BENCH_MAIN=0 the copied tree and the per-core steps (only the generated trees are
# measured); BENCH_GEN_TOOLS="lode" measures the generated trees with lode alone.
# BENCH_KEEP=DIR works in DIR and keeps it (repositories, keys, restic's caches); a
# later run with the same BENCH_KEEP finds the backups there and measures the three
# restores again (and nothing else), the peers still side by side in one run.
# Run as root, each restore goes into an ext4 file system made for it (a loop image);
# BENCH_RESTORE_FS=dir restores into directories of the work directory instead.
# Exits 1 when lode's storage commands are not all in this build (the others' figures are
# still printed) or any command fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
out=$(realpath -m "${BENCH_OUT:-build/bench/backup}")
mkdir -p "$out"
# shellcheck disable=SC1091
source bench/backup/lib.sh
bench_tools

tree_root=${BENCH_TREE_ROOT:-/tmp/lode-bench-tree}
gen_n=${BENCH_GEN_FILES:-58800}
reuse=0
if [[ -n ${BENCH_KEEP:-} ]]; then
	work=$(realpath -m "$BENCH_KEEP")
	mkdir -p "$work"
	[[ -f $work/backups.done ]] && reuse=1
else
	work=$(mktemp -d /tmp/lode-bench-backup.XXXXXX)
fi
BENCH_WORK=$work
BENCH_RESULTS=$out/results.txt
: >"$BENCH_RESULTS"
: >"$BENCH_RESULTS.ops"
: >"$out/gen.txt"
: >"$out/stored.txt"
# unmount_restores: a restore's file system left mounted by a run that stopped early.
unmount_restores() {
	local m
	for m in "$work"/restore-*; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	rm -f "$work"/restore-*.img
}
trap 'unmount_restores; bench_vgw_stop; [[ -n ${VGW_LOG:-} ]] && cp "$VGW_LOG" "$out/access.log"; [[ -n ${BENCH_KEEP:-} ]] || rm -rf "$work"' EXIT
[[ -f $work/restic.pass ]] || echo "bench-password-$$" >"$work/restic.pass"
RESTIC_PASSWORD=$(cat "$work/restic.pass")
export RESTIC_PASSWORD
[[ -f $work/lode.key ]] || head -c 32 /dev/urandom | base64 >"$work/lode.key"
chmod 600 "$work/lode.key"
export LODE_KEY_FILE=$work/lode.key

main=${BENCH_MAIN:-1}
if [[ $main == 1 ]]; then
	cc -O2 -std=c17 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinternal -o "$out/bench_pipeline" \
		bench/backup/bench_pipeline.c "$BUILD"/liblode.a $(pkg-config --libs libuv libcurl openssl expat jansson yaml-0.1 libzstd) -lm
fi
# The tree, copied once; the stamp records what it holds.
if [[ $main == 1 && ! -f $tree_root/.complete ]]; then
	echo "== copying /usr/share and /usr/local/go to $tree_root/tree"
	rm -rf "$tree_root"
	mkdir -p "$tree_root/tree"
	cp -a /usr/share "$tree_root/tree/share"
	cp -a /usr/local/go "$tree_root/tree/go"
	touch "$tree_root/.complete"
fi
bench_machine | tee "$out/machine.txt"
if [[ $main == 1 ]]; then
	read -r files bytes dirs links < <(bench_tree_facts "$tree_root/tree")
	echo "tree: $files files, $bytes bytes ($(du -sh "$tree_root/tree" | cut -f1) on disk), $dirs directories, $links symlinks" |
		tee "$out/tree.txt"
	# Every tool then reads the tree from the page cache.
	tar cf - -C "$tree_root" tree | cat >/dev/null
fi

bench_vgw_start "$work"
echo "versitygw on $S3_ENDPOINT"
if [[ $reuse == 0 ]]; then
	for b in r014 r018 lode r018-gen1 r018-gen10 lode-gen1 lode-gen10; do
		bench_bucket "$b"
	done
else
	echo "restores only: the backups of the run kept in $work"
fi

# lode_ok: lode can back up (init, backup); lode_restore: it can also restore.
lode_ok=1 lode_restore=1
for c in init backup; do
	if ! bench_lode_has "$c"; then
		echo "lode has no '$c' command in this build: lode's side is not measured"
		lode_ok=0
	fi
done
if ! bench_lode_has restore; then
	echo "lode has no 'restore' command in this build: lode's restore is not measured"
	lode_restore=0
fi
cat >"$work/policy.yaml" <<'EOF'
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: bench, namespace: bench}
spec:
  repository: main
  paths: [/tree]
EOF

status=0
# Commands outside the measured runs (bench_run runs programs, not functions).
restic_cmd() { # BINARY BUCKET ARGS...
	local bin=$1 bucket=$2
	shift 2
	"$bin" -r "s3:$S3_ENDPOINT/$bucket" --cache-dir "$work/cache-$bucket" "$@"
}
# lode_cmd BUCKET ARGS...
lode_cmd() {
	local bucket=$1
	shift
	LODE_REPOSITORY="s3:$S3_ENDPOINT/$bucket" "$LODE" "$@"
}
# run_backup TOOL BUCKET LABEL ROOT: one backup of ROOT/tree.
run_backup() {
	case $1 in
	r014 | r018)
		local bin=$RESTIC014
		[[ $1 == r018 ]] && bin=$RESTIC018
		(cd "$4" && bench_run "$3" "$2" "$bin" -r "s3:$S3_ENDPOINT/$2" --cache-dir "$work/cache-$2" \
			backup -q --host bench tree)
		;;
	lode)
		bench_run "$3" "$2" env LODE_REPOSITORY="s3:$S3_ENDPOINT/$2" "$LODE" backup \
			--policy "$work/policy.yaml" --host bench --root "$4" --output json
		;;
	esac
}
# restored_tree DIR: where a restore into DIR put the tree.
restored_tree() {
	if [[ -d $1/tree ]]; then echo "$1/tree"; else echo "$1$tree_root/tree"; fi
}
verify() { # LABEL DIR
	[[ ${BENCH_VERIFY:-1} == 1 ]] || return 0
	if diff -rq --no-dereference "$tree_root/tree" "$(restored_tree "$2")" >"$work/$1.diff" 2>&1; then
		echo "  $1: the restored tree equals the original (diff -r)"
	else
		echo "  $1: the restored tree DIFFERS: $(wc -l <"$work/$1.diff") lines of diff, first:" >&2
		head -n 5 "$work/$1.diff" >&2
		status=1
	fi
}

tools=(r014 r018)
[[ $lode_ok == 1 ]] && tools+=(lode)
[[ $main == 1 ]] || tools=()
if [[ $reuse == 0 ]]; then
	echo "== init"
	for t in "${tools[@]+"${tools[@]}"}"; do
		case $t in
		r014) restic_cmd "$RESTIC014" r014 init >/dev/null ;;
		r018) restic_cmd "$RESTIC018" r018 init >/dev/null ;;
		lode) lode_cmd lode init >/dev/null || { echo "lode init failed"; status=1; } ;;
		esac
	done
	echo "== first backup"
	for t in "${tools[@]+"${tools[@]}"}"; do run_backup "$t" "$t" "$t-first" "$tree_root" || status=1; done
	echo "== unchanged re-run"
	for t in "${tools[@]+"${tools[@]}"}"; do run_backup "$t" "$t" "$t-rerun" "$tree_root" || status=1; done
	[[ $status == 0 && $main == 1 ]] && touch "$work/backups.done"
fi
echo "== restore of the re-run's snapshot"
# Each tool restores onto a file system in the same state. Making 58,000 files is
# mostly the kernel's inode allocation, whose cost depends on what the file system
# went through before: on the machine of docs/benchmarks.md three runs in a row on the
# same ext4 took 6.0, 14.2 and 20.6 s for lode and 10.0, 20.3 and 25.3 s for restic
# 0.14, each run slower after the last one's removals. So, when this runs as root and
# can mount a loop device, each restore goes into a file system made for it (ext4 with
# mkfs.ext4's defaults, in an image under the work directory, unmounted and removed
# after the comparison); otherwise (BENCH_RESTORE_FS=dir, or no root) into a directory
# of the work directory, the trees removed only after the last restore. The dirty pages
# of the step before are written out (sync) before each restore starts, so no tool's
# time includes another's writeback (lode restore ends with syncfs: it waits for its
# own writes; restic does not).
restore_fs=$(bench_restore_mode "${BENCH_RESTORE_FS:-fresh}")
echo "restores into: $([[ $restore_fs == fresh ]] && echo "a fresh ext4 file system each" || echo "directories of $work")" |
	tee -a "$out/machine.txt"
for t in "${tools[@]+"${tools[@]}"}"; do
	mountpoint -q "$work/restore-$t" 2>/dev/null && umount "$work/restore-$t"
	rm -rf "$work/restore-$t" "$work/restore-$t.img"
done
for t in "${tools[@]+"${tools[@]}"}"; do
	[[ $t != lode || $lode_restore == 1 ]] || continue
	target=$(bench_restore_target "$restore_fs" "$t") || { echo "  $t: cannot make its restore file system" >&2; status=1; continue; }
	sync
	case $t in
	r014 | r018)
		bin=$RESTIC014
		[[ $t == r018 ]] && bin=$RESTIC018
		bench_run "$t-restore" "$t" "$bin" -r "s3:$S3_ENDPOINT/$t" --cache-dir "$work/cache-$t" \
			restore latest --target "$target" || status=1
		;;
	lode)
		id=$(jq -r .snapshot.id "$work/lode-rerun.out" 2>/dev/null || true)
		if [[ -z $id || $id == null ]]; then
			echo "  lode: no snapshot id from the re-run" >&2
			status=1
			bench_restore_done "$restore_fs" "$t"
			continue
		fi
		bench_run "$t-restore" "$t" env LODE_REPOSITORY="s3:$S3_ENDPOINT/lode" "$LODE" restore "$id" \
			--target "$target" || status=1
		;;
	esac
	verify "$t-restore" "$target"
	bench_restore_done "$restore_fs" "$t"
done
for t in "${tools[@]+"${tools[@]}"}"; do rm -rf "$work/restore-$t"; done
for t in "${tools[@]+"${tools[@]}"}"; do
	echo "stored $t: $(du -sb "$VGW_DATA/$t" | cut -f1) bytes" | tee -a "$out/stored.txt"
done

if [[ ${BENCH_GEN:-1} == 1 && $reuse == 0 ]]; then
	echo "== memory per file: generated trees of $gen_n and $((gen_n * 10)) small files"
	bench_gen_tree "$tree_root/gen1" "$gen_n"
	bench_gen_tree "$tree_root/gen10" "$((gen_n * 10))"
	for g in gen1 gen10; do
		read -r gf gb _ _ < <(bench_tree_facts "$tree_root/$g/tree")
		echo "  $g: $gf files, $gb bytes"
		echo "$g $gf $gb" >>"$out/gen.txt"
		tar cf - -C "$tree_root/$g" tree | cat >/dev/null
	done
	gen_want=${BENCH_GEN_TOOLS:-r018 lode}
	gen_tools=()
	if [[ " $gen_want " == *" r018 "* ]]; then
		restic_cmd "$RESTIC018" r018-gen1 init >/dev/null
		restic_cmd "$RESTIC018" r018-gen10 init >/dev/null
		gen_tools+=(r018)
	fi
	if [[ $lode_ok == 1 && " $gen_want " == *" lode "* ]]; then
		gen_tools+=(lode)
		lode_cmd lode-gen1 init >/dev/null || status=1
		lode_cmd lode-gen10 init >/dev/null || status=1
	fi
	for t in "${gen_tools[@]}"; do
		for g in gen1 gen10; do
			run_backup "$t" "$t-$g" "$t-$g-first" "$tree_root/$g" || status=1
			run_backup "$t" "$t-$g" "$t-$g-rerun" "$tree_root/$g" || status=1
		done
	done
fi

if [[ $main == 1 && $reuse == 0 ]]; then
	echo "== lode's steps, per core, on the first 256 MiB of the tree and on random bytes"
	tar cf - -C "$tree_root" tree | head -c $((256 << 20)) >"$work/sample.bin" || true
	head -c $((64 << 20)) /dev/urandom >"$work/random.bin"
	"$out/bench_pipeline" tree "$work/sample.bin" | tee "$out/pipeline.txt"
	"$out/bench_pipeline" random "$work/random.bin" | tee -a "$out/pipeline.txt"
fi

echo "== summary (wall s, CPU s, peak RSS MiB, requests, uploaded MB, versitygw share)"
bench/backup/summary.sh "$BENCH_RESULTS" "$out/gen.txt" | tee "$out/summary.txt"
if [[ $lode_ok != 1 || $lode_restore != 1 ]]; then
	echo "lode's storage commands are missing from this build: lode's side is incomplete"
	status=1
fi
exit $status
