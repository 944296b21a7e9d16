#!/usr/bin/env bash
# The browsing benchmark (make bench; docs/benchmarks.md, "Looking inside a snapshot"):
# lode ls and lode diff against restic 0.18.1's ls and diff, on the same generated tree
# against the same versitygw (127.0.0.1, plain HTTP, posix backend, bench/backup/lib.sh),
# one bucket each, in one run:
#   - the tree: BENCH_BROWSE_FILES small files (default 100,000) in directories of
#     1,000; snapshot A of it, then 1,000 files spread over the tree changed (a line
#     appended), snapshot B;
#   - lode ls of one directory (1,000 entries) of A, and lode diff A B; restic's ls of
#     the same directory and diff of its two snapshots, with its local cache (as the
#     backups left it: restic's usual case) and without (--no-cache: nothing on the
#     machine, as lode, which keeps no cache); each three times, wall time, CPU, peak
#     RSS and requests (versitygw's access log) of each run;
#   - lode's repository key is a generated one (lode init --generate-key), so no command
#     spends time on scrypt; restic derives its key (scrypt) in every command, which is
#     in its figures. docs/benchmarks.md says what a passphrase key adds to lode's.
# The target (issue 23): lode at most 0.2x restic's wall time (the median of three),
# against restic with its cache. Exits 1 when a command fails or the outputs disagree
# (each tool's diff must name the 1,000 changed files).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
out=$(realpath -m "${BENCH_OUT:-build/bench/browse}")
mkdir -p "$out"
# shellcheck disable=SC1091
source bench/backup/lib.sh
bench_tools
n=${BENCH_BROWSE_FILES:-100000}
work=$(mktemp -d /tmp/lode-bench-browse.XXXXXX)
BENCH_WORK=$work
BENCH_RESULTS=$out/results.txt
: >"$BENCH_RESULTS"
: >"$BENCH_RESULTS.ops"
trap 'bench_vgw_stop; [[ -n ${VGW_LOG:-} ]] && cp "$VGW_LOG" "$out/access.log"; rm -rf "$work"' EXIT

bench_machine | tee "$out/machine.txt"
echo "== a tree of $n small files"
python3 - "$work/root/tree" "$n" <<'EOF'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(n)
for i in range(n):
    d = os.path.join(root, "d%04d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d)
    with open(os.path.join(d, "f%04d.txt" % (i % 1000)), "w") as f:
        f.write("%d %x\n" % (i, rng.getrandbits(64)) * (1 + rng.randrange(8)))
EOF
dir=/tree/d$(printf %04d $((n / 2000))) # a directory in the middle of the tree

bench_vgw_start "$work"
bench_bucket lode
bench_bucket r018
export RESTIC_PASSWORD=bench-password-$$ LODE_KEY_FILE=$work/lode.key
cat >"$work/policy.yaml" <<'EOF'
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: bench, namespace: bench}
spec:
  repository: main
  paths: [/tree]
EOF
lode() { LODE_REPOSITORY="s3:$S3_ENDPOINT/lode" "$LODE" "$@"; }
restic() { "$RESTIC018" -r "s3:$S3_ENDPOINT/r018" --cache-dir "$work/cache" "$@"; }
lode init --generate-key >/dev/null
restic init >/dev/null
snapshots() { # LABEL: backs up the tree with both tools
	lode backup --policy "$work/policy.yaml" --host bench --root "$work/root" --output json |
		jq -r .snapshot.id >"$work/lode-$1"
	(cd "$work/root" && restic backup -q --host bench --json tree | jq -r 'select(.message_type == "summary") | .snapshot_id') >"$work/r018-$1"
}
echo "== snapshot A (both tools)"
snapshots A
python3 - "$work/root/tree" "$n" <<'EOF'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in random.Random(7).sample(range(n), 1000):
    with open(os.path.join(root, "d%04d" % (i // 1000), "f%04d.txt" % (i % 1000)), "a") as f:
        f.write("changed\n")
EOF
echo "== 1,000 files changed; snapshot B (both tools)"
snapshots B
la=$(cat "$work/lode-A") lb=$(cat "$work/lode-B") ra=$(cat "$work/r018-A") rb=$(cat "$work/r018-B")

status=0
for i in 1 2 3; do
	bench_run "lode-ls-$i" lode env LODE_REPOSITORY="s3:$S3_ENDPOINT/lode" "$LODE" ls "$la" "$dir" || status=1
	bench_run "r018-ls-$i" r018 "$RESTIC018" -r "s3:$S3_ENDPOINT/r018" --cache-dir "$work/cache" ls "$ra" "$dir" || status=1
	bench_run "r018nc-ls-$i" r018 "$RESTIC018" -r "s3:$S3_ENDPOINT/r018" --no-cache ls "$ra" "$dir" || status=1
	bench_run "lode-diff-$i" lode env LODE_REPOSITORY="s3:$S3_ENDPOINT/lode" "$LODE" diff "$la" "$lb" || status=1
	bench_run "r018-diff-$i" r018 "$RESTIC018" -r "s3:$S3_ENDPOINT/r018" --cache-dir "$work/cache" diff "$ra" "$rb" || status=1
	bench_run "r018nc-diff-$i" r018 "$RESTIC018" -r "s3:$S3_ENDPOINT/r018" --no-cache diff "$ra" "$rb" || status=1
done
# The outputs agree: 1,000 entries of the directory, 1,000 changed files (each tool also
# reports the changed directories above them).
lode_ls=$(wc -l <"$work/lode-ls-1.out") r_ls=$(grep -c "^$dir/" "$work/r018-ls-1.out" || true)
lode_m=$(grep -c '^M .*/f[0-9]*\.txt' "$work/lode-diff-1.out" || true)
r_m=$(grep -c '^M .*/f[0-9]*\.txt' "$work/r018-diff-1.out" || true)
echo "entries listed: lode $lode_ls, restic $r_ls; changed files: lode $lode_m, restic $r_m"
[[ $lode_ls == 1000 && $r_ls == 1000 && $lode_m == 1000 && $r_m == 1000 ]] || {
	echo "bench: the outputs disagree" >&2
	status=1
}

echo
echo "| run | wall s (median of 3) | CPU s | RSS MiB | requests |"
echo "|---|--:|--:|--:|--:|"
med() { # LABEL FIELD: the median of the three runs
	for i in 1 2 3; do bench_get "$1-$i" "$2"; done | sort -g | sed -n 2p
}
for l in lode-ls r018-ls r018nc-ls lode-diff r018-diff r018nc-diff; do
	printf '| %s | %.2f | %.2f | %.1f | %d |\n' "$l" "$(med "$l" wall)" "$(med "$l" cpu)" \
		"$(awk -v k="$(med "$l" rss)" 'BEGIN { print k / 1024 }')" "$(med "$l" requests)"
done | tee "$out/table.md"
for c in ls diff; do
	ratio=$(awk -v a="$(med "lode-$c" wall)" -v b="$(med "r018-$c" wall)" 'BEGIN { printf "%.3f", a / b }')
	if awk -v r="$ratio" 'BEGIN { exit !(r <= 0.2) }'; then v=met; else v="NOT met"; fi
	echo "lode $c: ${ratio}x restic 0.18.1's wall time (with its cache); target at most 0.2x: $v" |
		tee -a "$out/table.md"
done
exit $status
