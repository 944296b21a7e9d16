#!/usr/bin/env bash
# The S3 client (make bench): against versitygw from the tool cache, started here on
# 127.0.0.1 over plain HTTP (both clients then measure their own cost, not TLS's), with
# a posix backend in a scratch directory, keep-alive on (versitygw closes every
# connection by default; AWS S3, MinIO and Ceph RGW keep them, and a connection per
# request would weigh the kernel's TCP setup equally on both clients) and request
# logging off. Reports, in one run:
#   - requests: a catalog of 10,000 keys (LIST) and forgetting 1,000 (DeleteObjects);
#   - PUT and GET of 1,000 objects of 1 KiB and of 1 GiB as 64 objects of 16 MiB, one at
#     a time, lode's client and `curl --aws-sigv4` (one curl process for all requests,
#     keep-alive) side by side: wall and CPU seconds of the client process; both are
#     given the body's SHA-256 (bench_s3 also prints what hashing it would add), and
#     curl's fixed cost (start-up, one request) is printed on its own;
#   - peak RSS of listing 10,000 and 100,000 keys (it must not grow with the count).
# SMALL_N (1000), LARGE_N (64), BIG_LIST (100000) change the sizes. Bounded: every wait
# has a deadline; the server is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
SMALL_N=${SMALL_N:-1000}
LARGE_N=${LARGE_N:-64}
BIG_LIST=${BIG_LIST:-100000}
out=${BENCH_OUT:-build/bench/s3}
mkdir -p "$out"
# shellcheck disable=SC1091
source tests/env/common.sh

cc -O2 -std=c17 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinternal -o "$out/bench_s3" \
	bench/s3/bench_s3.c "$BUILD"/liblode.a $(pkg-config --libs libuv libcurl openssl expat jansson yaml-0.1) -lm

vgw=$(env_tool_dir versitygw)/versitygw
[[ -x $vgw ]] || { echo "bench/s3: versitygw is not built (tests/env/build-tools.sh versitygw)"; exit 1; }
work=$(mktemp -d /tmp/lode-bench-s3.XXXXXX)
mkdir -p "$work/data" "$work/meta"
read -r port <<<"$(env_free_ports 1)"
export S3_ACCESS_KEY=benchaccess S3_SECRET_KEY=benchsecret$$ S3_BUCKET=bench
export S3_ENDPOINT=http://127.0.0.1:$port
ROOT_ACCESS_KEY=$S3_ACCESS_KEY ROOT_SECRET_KEY=$S3_SECRET_KEY "$vgw" --port "127.0.0.1:$port" \
	--region us-east-1 --keep-alive --quiet posix --sidecar "$work/meta" "$work/data" >"$work/versitygw.log" 2>&1 &
vpid=$!
trap 'kill $vpid 2>/dev/null; wait $vpid 2>/dev/null; rm -rf "$work"' EXIT
sig=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3_ACCESS_KEY:$S3_SECRET_KEY")
empty=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
for _ in $(seq 100); do
	code=$(curl -s -o /dev/null -w '%{http_code}' "${sig[@]}" -H "x-amz-content-sha256: $empty" \
		-X PUT "$S3_ENDPOINT/$S3_BUCKET" || true)
	[[ $code == 200 ]] && break
	sleep 0.1
done
[[ $code == 200 ]] || { echo "bench/s3: versitygw did not come up"; cat "$work/versitygw.log"; exit 1; }
echo "versitygw $("$vgw" --version 2>/dev/null | head -n 1) on 127.0.0.1:$port"

echo "== requests"
"$out/bench_s3" fill snap10k 10000
"$out/bench_s3" list snap10k | tee "$out/list10k.txt"
"$out/bench_s3" forget snap10k 1000 | tee "$out/forget.txt"

# curl_run NAME CONFIG: one curl process for the whole config; prints wall and CPU.
curl_run() {
	local t0 t1
	t0=$(date +%s.%N)
	/usr/bin/time -f '%U %S' -o "$work/time.txt" curl -s -K "$2" >/dev/null
	t1=$(date +%s.%N)
	read -r u s <"$work/time.txt"
	printf '%s wall=%.3f cpu=%.3f\n' "$1" "$(echo "$t1 - $t0" | bc)" "$(echo "$u + $s" | bc)"
}
# curl_config DIR N FILE HASH: PUT and GET configs for N objects of FILE.
curl_config() {
	local dir=$1 n=$2 file=$3 hash=$4 i
	: >"$work/put.cfg"
	: >"$work/get.cfg"
	for ((i = 0; i < n; i++)); do
		if ((i > 0)); then echo next >>"$work/put.cfg"; echo next >>"$work/get.cfg"; fi
		printf 'url = "%s/%s/%s/obj%05d"\nupload-file = "%s"\naws-sigv4 = "aws:amz:us-east-1:s3"\nuser = "%s:%s"\nheader = "x-amz-content-sha256: %s"\nheader = "Expect:"\nfail\n' \
			"$S3_ENDPOINT" "$S3_BUCKET" "$dir" "$i" "$file" "$S3_ACCESS_KEY" "$S3_SECRET_KEY" "$hash" >>"$work/put.cfg"
		printf 'url = "%s/%s/%s/obj%05d"\noutput = "/dev/null"\naws-sigv4 = "aws:amz:us-east-1:s3"\nuser = "%s:%s"\nheader = "x-amz-content-sha256: %s"\nfail\n' \
			"$S3_ENDPOINT" "$S3_BUCKET" "$dir" "$i" "$S3_ACCESS_KEY" "$S3_SECRET_KEY" "$empty" >>"$work/get.cfg"
	done
}

echo "== $SMALL_N objects of 1 KiB, one at a time"
"$out/bench_s3" small "$SMALL_N" 1024 | tee "$out/small.txt"
head -c 1024 /dev/urandom >"$work/small.bin"
curl_config curl-one 1 "$work/small.bin" "$(sha256sum "$work/small.bin" | cut -d' ' -f1)"
curl_run "curl one request (its fixed cost)" "$work/put.cfg" | tee "$out/curl-one.txt"
curl_config curl-small "$SMALL_N" "$work/small.bin" "$(sha256sum "$work/small.bin" | cut -d' ' -f1)"
curl_run "curl put" "$work/put.cfg" | tee "$out/curl-small-put.txt"
curl_run "curl get" "$work/get.cfg" | tee "$out/curl-small-get.txt"

echo "== $LARGE_N objects of 16 MiB, one at a time"
"$out/bench_s3" large "$LARGE_N" $((16 << 20)) | tee "$out/large.txt"
head -c $((16 << 20)) /dev/urandom >"$work/large.bin"
curl_config curl-large "$LARGE_N" "$work/large.bin" "$(sha256sum "$work/large.bin" | cut -d' ' -f1)"
curl_run "curl put" "$work/put.cfg" | tee "$out/curl-large-put.txt"
curl_run "curl get" "$work/get.cfg" | tee "$out/curl-large-get.txt"

echo "== listing memory: 10,000 and $BIG_LIST keys"
"$out/bench_s3" fill big "$BIG_LIST"
"$out/bench_s3" list snap10k | tee "$out/rss10k.txt"
"$out/bench_s3" list big | tee "$out/rss-big.txt"
