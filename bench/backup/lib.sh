# Shared by bench/backup/run.sh and bench/storage/run.sh (sourced, not run): one
# versitygw on 127.0.0.1 with its access log, the peers' binaries, and a wrapper
# that runs one command and records what it cost.
#
# Every request versitygw answers is one line of its access log, with the bucket,
# the operation and (for PutObject and UploadPart) the body's length, so a
# command's requests and uploaded bytes are the log lines it added for its bucket.
# versitygw's CPU time comes from /proc/PID/stat; divided by the wall time of the
# command and the number of CPUs it is the share of the machine the server used.

# shellcheck disable=SC1091
source tests/env/common.sh

# bench_tools: sets VGW, RESTIC014, RESTIC018 and LODE, or fails saying what is missing.
bench_tools() {
	VGW=$(tests/env/build-tools.sh --dir versitygw)/versitygw
	[[ -x $VGW ]] || { echo "bench: versitygw is not built (tests/env/build-tools.sh versitygw)" >&2; return 1; }
	RESTIC014=${RESTIC014:-/usr/bin/restic}
	[[ -x $RESTIC014 ]] || { echo "bench: Debian's restic 0.14 is missing (make setup)" >&2; return 1; }
	RESTIC018=$(bench/tools/build-restic.sh) || return 1
	LODE=${LODE:-$BUILD/lode}
	[[ -x $LODE ]] || { echo "bench: $LODE is not built (make all)" >&2; return 1; }
}

# bench_lode_has CMD: whether this lode has the storage command CMD.
bench_lode_has() {
	local o
	o=$("$LODE" "$1" --help 2>&1 || true)
	[[ $o != *"unknown command"* ]]
}

# bench_vgw_start WORKDIR: versitygw over a posix directory in WORKDIR, plain HTTP,
# keep-alive on: versitygw closes every connection by default, which AWS S3 and the other
# stores do not do (since 2026-12-05; the figures before paid a TCP connection a request,
# both tools alike).
# Sets S3_ENDPOINT, VGW_PID, VGW_LOG, VGW_DATA and the credentials of both tools.
bench_vgw_start() {
	local work=$1 port
	mkdir -p "$work/vgw-data" "$work/vgw-meta"
	read -r port <<<"$(env_free_ports 1)"
	export AWS_ACCESS_KEY_ID=benchaccess AWS_SECRET_ACCESS_KEY=benchsecret$$ AWS_REGION=us-east-1
	export AWS_DEFAULT_REGION=us-east-1
	S3_ENDPOINT=http://127.0.0.1:$port
	VGW_LOG=$work/access.log
	VGW_DATA=$work/vgw-data
	ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY "$VGW" \
		--port "127.0.0.1:$port" --region us-east-1 --keep-alive --access-log "$VGW_LOG" \
		posix --sidecar "$work/vgw-meta" "$work/vgw-data" >"$work/versitygw.out" 2>&1 &
	VGW_PID=$!
	# An unsigned GET / is refused (403) but answered: that is enough.
	if ! env_wait 30 "versitygw on port $port" curl -s -o /dev/null "$S3_ENDPOINT/"; then
		cat "$work/versitygw.out" >&2
		return 1
	fi
}

bench_vgw_stop() {
	[[ -n ${VGW_PID:-} ]] || return 0
	kill "$VGW_PID" 2>/dev/null || true
	wait "$VGW_PID" 2>/dev/null || true
	VGW_PID=
}

# bench_bucket NAME: creates a bucket (each tool gets its own, so that the access
# log's bucket field tells whose request a line is).
bench_bucket() {
	local code empty=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
	code=$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" \
		--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H "x-amz-content-sha256: $empty" \
		-X PUT "$S3_ENDPOINT/$1")
	[[ $code == 200 ]] || { echo "bench: creating bucket $1 answered $code" >&2; return 1; }
}

# The CPU seconds versitygw has used so far (user + system).
bench_vgw_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' \
		"/proc/$VGW_PID/stat"
}

# bench_log_count BUCKET FROM_LINE: "requests put_bytes deletes" in the access log
# after line FROM_LINE for BUCKET. Fields: owner bucket [date zone] ip requester
# request-id s3_operation key uri status error bytes-sent object-size ...
bench_log_count() {
	tail -n +"$(($2 + 1))" "$VGW_LOG" | awk -v b="$1" '
		$2 == b { n++; op = $8; sub(/^s3_/, "", op)
			if (op == "PutObject" || op == "UploadPart") put += $14
			if (op == "DeleteObject" || op == "DeleteObjects") del++ }
		END { printf "%d %d %d\n", n, put, del }'
}

# bench_run LABEL BUCKET CMD...: runs CMD (stdout to $BENCH_WORK/LABEL.out, stderr to
# LABEL.err) and appends one line of figures to $BENCH_RESULTS:
#   label wall_s cpu_s peak_rss_kib requests put_bytes deletes vgw_cpu_s vgw_share status
# vgw_share is versitygw's CPU time over (wall x CPUs). Returns CMD's status.
bench_run() {
	local label=$1 bucket=$2 from t0 t1 c0 c1 st u s rss line
	shift 2
	from=$(wc -l <"$VGW_LOG")
	c0=$(bench_vgw_cpu)
	t0=$(date +%s.%N)
	st=0
	/usr/bin/time -f '%U %S %M' -o "$BENCH_WORK/$label.time" "$@" \
		>"$BENCH_WORK/$label.out" 2>"$BENCH_WORK/$label.err" || st=$?
	t1=$(date +%s.%N)
	c1=$(bench_vgw_cpu)
	read -r u s rss < <(tail -n 1 "$BENCH_WORK/$label.time")
	read -r req put del < <(bench_log_count "$bucket" "$from")
	# Which requests: "label operation count" lines beside the results.
	tail -n +"$((from + 1))" "$VGW_LOG" | awk -v b="$bucket" -v l="$label" '
		$2 == b { op = $8; sub(/^s3_/, "", op); c[op]++ }
		END { for (op in c) print l, op, c[op] }' | sort >>"$BENCH_RESULTS.ops"
	line=$(awk -v l="$label" -v t0="$t0" -v t1="$t1" -v u="$u" -v s="$s" -v rss="$rss" \
		-v req="$req" -v put="$put" -v del="$del" -v c0="$c0" -v c1="$c1" -v ncpu="$(nproc)" \
		-v st="$st" 'BEGIN { w = t1 - t0; printf "%s %.2f %.2f %d %d %d %d %.2f %.3f %d\n",
			l, w, u + s, rss, req, put, del, c1 - c0, (c1 - c0) / (w * ncpu), st }')
	echo "$line" >>"$BENCH_RESULTS"
	echo "  $line"
	if [[ $st != 0 ]]; then
		echo "  $label exited $st; last lines of its stderr:" >&2
		tail -n 5 "$BENCH_WORK/$label.err" >&2
	fi
	return "$st"
}

# bench_get LABEL FIELD: a figure of a recorded run (fields as bench_run prints them).
bench_get() {
	awk -v l="$1" -v f="$2" '
		BEGIN { split("label wall cpu rss requests put deletes vgw_cpu vgw_share status", h)
			for (i in h) col[h[i]] = i }
		$1 == l { v = $(col[f]) } END { print v }' "$BENCH_RESULTS"
}

# bench_machine: the facts a reader needs to weigh the figures.
bench_machine() {
	echo "machine: $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work shares this machine)"
	echo "$("$LODE" version | head -n 1); $("$RESTIC014" version | cut -d' ' -f1-2); $("$RESTIC018" version | cut -d' ' -f1-2); versitygw $(basename "$(dirname "$VGW")")"
}

# bench_gen_tree DIR N: N small files (64 to 1,087 bytes of distinct text each) in
# directories of 1,000 under DIR/tree, made once (DIR/.complete records it).
bench_gen_tree() {
	[[ -f $1/.complete ]] && return 0
	rm -rf "$1"
	python3 - "$1" "$2" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(n)
for i in range(n):
    d = os.path.join(root, "tree", "d%04d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d)
    body = ("%d %x\n" % (i, rng.getrandbits(64))) * (1 + rng.randrange(48))
    with open(os.path.join(d, "f%04d.txt" % (i % 1000)), "w") as f:
        f.write(body[: 64 + rng.randrange(1024)])
PY
	touch "$1/.complete"
}

# bench_tree_facts DIR: "files bytes dirs symlinks" of DIR.
bench_tree_facts() {
	find "$1" -type f -printf 'f %s\n' -o -type d -printf 'd 0\n' -o -type l -printf 'l 0\n' |
		awk '{ c[$1]++; b += $2 } END { printf "%d %d %d %d\n", c["f"], b, c["d"], c["l"] }'
}

# Restores. Making many files is mostly the kernel's inode allocation, whose cost
# depends on what the file system went through before (docs/benchmarks.md, "Backup
# against restic"), so as root each restore goes into an ext4 file system made for it
# (a loop image under $BENCH_WORK); otherwise into a directory of $BENCH_WORK.
# bench_restore_mode [MODE]: prints "fresh" or "dir" (MODE, default fresh, falls back
# to dir without root or mkfs.ext4).
bench_restore_mode() {
	local m=${1:-fresh}
	if [[ $m == fresh ]] && ! { [[ $(id -u) == 0 ]] && command -v mkfs.ext4 >/dev/null; }; then
		m=dir
	fi
	echo "$m"
}
# bench_restore_target MODE NAME [SIZE]: prepares and prints the directory NAME restores
# into (an image of SIZE, default 4G, in fresh mode).
bench_restore_target() {
	local d=$BENCH_WORK/restore-$2
	mkdir -p "$d"
	if [[ $1 == fresh ]]; then
		# Their output goes to stderr: this function's stdout is the path.
		truncate -s "${3:-4G}" "$BENCH_WORK/restore-$2.img" >&2
		# One inode per 2 KiB: ext4's default of one per 16 KiB gives a 4 GiB image
		# 262,144 inodes, and a million-file restore ran out of them.
		mkfs.ext4 -q -F -i 2048 "$BENCH_WORK/restore-$2.img" >&2
		mount -o loop "$BENCH_WORK/restore-$2.img" "$d" >&2
	fi
	echo "$d"
}
# bench_restore_done MODE NAME: unmounts and removes NAME's file system (fresh mode).
bench_restore_done() {
	if [[ $1 == fresh ]]; then
		umount "$BENCH_WORK/restore-$2" && rm -f "$BENCH_WORK/restore-$2.img"
	fi
}
