#!/usr/bin/env bash
# End-to-end tests of internal/s3 against versitygw of tests/env/ (127.0.0.1, TLS,
# SigV4), directly and through tests/e2e/s3/faultproxy.c. Run it as
#   tests/env/with-cluster.sh bash tests/e2e/test_s3.sh
# Without a running environment it fails (lib.sh refuses): it never counts a skip.
#
# It builds s3_e2e*.c with the s3, http and util sources (ASan and UBSan on, so a leak
# or a bad access is a failure) and the fault proxy, starts the proxy on an ephemeral
# loopback port in front of versitygw, runs the program, and stops the proxy. The
# program's "N passed, M failed" is added to this script's own checks.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/env/lib.sh
source "$root/tests/env/lib.sh"

out=$root/build/e2e
mkdir -p "$out"
PROXY_PID=
cleanup() {
	[[ -n $PROXY_PID ]] && kill "$PROXY_PID" 2>/dev/null
	rm -rf "$T_TMP"
}
trap cleanup EXIT

flags=(-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I"$root/internal" -std=c17 -Wall -Wextra
	-Werror -Wno-unused-parameter -Wno-format-truncation -g -O1)
# shellcheck disable=SC2046
if cc "${flags[@]}" -fsanitize=address,undefined -fno-sanitize-recover=all -o "$out/s3_e2e" \
	"$here"/s3/s3_e2e*.c "$root"/internal/s3/*.c "$root"/internal/http/*.c "$root"/internal/util/*.c \
	$(pkg-config --cflags --libs libuv libcurl openssl expat) -lm 2>"$T_TMP/cc.log" &&
	env_build_tool faultproxy 2>>"$T_TMP/cc.log"; then
	pass "build s3_e2e and faultproxy"
else
	fail "build s3_e2e and faultproxy" "$(cat "$T_TMP/cc.log")"
	finish
	exit 1
fi

if env_fault_proxy_start; then
	pass "fault proxy listening on 127.0.0.1:$PROXY_PORT"
else
	fail "fault proxy listening" "$(cat "$T_TMP/proxy.log")"
	finish
	exit 1
fi

PROXY_PORT=$PROXY_PORT timeout 600 "$out/s3_e2e" ${S3_E2E_ONLY:-} >"$T_TMP/e2e.log" 2>&1
rc=$?
cat "$T_TMP/e2e.log"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T_TMP/e2e.log" | tail -n 1)
if [[ -z $line ]]; then
	fail "s3_e2e ran to the end (exit $rc)"
else
	T_PASSED=$((T_PASSED + ${line%% passed*}))
	f=${line#*passed, }
	T_FAILED=$((T_FAILED + ${f%% failed*}))
	[[ $rc -eq 0 || ${f%% failed*} -gt 0 ]] || fail "s3_e2e exited $rc without a failed check"
fi
finish
