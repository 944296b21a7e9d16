#!/usr/bin/env bash
# lode restore's flags for a Restore's Job (docs/restoring.md, "By hand"), without an S3
# server: the target is looked at before any request, a refusal and a repository that
# cannot be reached each give their reason in the JSON and the termination log, a
# staged restore leaves nothing behind when it fails or is stopped by SIGTERM, and the
# stage of a restore killed outright is removed by the next one.
source "$(dirname "$0")/lib.sh"

export AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s AWS_REGION=us-east-1
export LODE_KEY_FILE=$T_TMP/key
head -c 32 /dev/urandom | base64 >"$LODE_KEY_FILE"
chmod 600 "$LODE_KEY_FILE" # lode refuses a key file open to others
ID=20261203T031502Z-9f3c2a1b7d4e6058

# ---- flags ----
run restore "$ID" --target "$T_TMP/x" --output yaml
check_rc "--output yaml: usage error" 2
check_contains "... saying what to give" "$ERR" "--output yaml: give text or json"

# ---- a target that holds files: refused before any request ----
mkdir -p "$T_TMP/full/.lode-restore-staging-999/etc"
echo here >"$T_TMP/full/kept"
echo half >"$T_TMP/full/.lode-restore-staging-999/etc/hosts"
export LODE_REPOSITORY=s3:http://127.0.0.1:1/bucket LODE_ALLOW_PLAIN_HTTP=true
run restore "$ID" --target "$T_TMP/full" --dry-run --output json --termination-log "$T_TMP/term"
check_rc "dry run into a target that holds files: exit 2" 2
check_eq "... the reason, and no request was made (the repository is not reachable)" \
    "$(jq -c '[.dryRun, .error.reason]' <<<"$OUT")" '[true,"TargetNotEmpty"]'
check_eq "... the termination log holds the same object" "$(jq -c . "$T_TMP/term")" "$(jq -c . <<<"$OUT")"
check_eq "... a dry run removes nothing, not even an old stage" \
    "$(cd "$T_TMP/full" && find . | sort | tr '\n' ' ')" \
    ". ./.lode-restore-staging-999 ./.lode-restore-staging-999/etc ./.lode-restore-staging-999/etc/hosts ./kept "
run restore "$ID" --target "$T_TMP/full" --staged --output json
check_rc "staged into a target that holds files: exit 2" 2
check_eq "... TargetNotEmpty, with how to go on" "$(jq -r '.error.reason' <<<"$OUT")" TargetNotEmpty
check_contains "... the message" "$(jq -r '.error.message' <<<"$OUT")" "set overwrite (--overwrite)"
check_eq "... the old stage was removed, the rest left alone" \
    "$(cd "$T_TMP/full" && find . | sort | tr '\n' ' ')" ". ./kept "

# ---- a target that is a file: TargetUnusable, not TargetNotEmpty ----
echo "a file" >"$T_TMP/afile"
for how in --dry-run --staged; do
    run restore "$ID" --target "$T_TMP/afile" $how --output json
    check_rc "$how onto a regular file: exit 2" 2
    check_eq "... TargetUnusable, saying it is not a directory" \
        "$(jq -r '.error.reason' <<<"$OUT") $(jq -r '.error.message' <<<"$OUT" | grep -c 'is not a directory')" \
        "TargetUnusable 1"
    check_eq "... the file is left as it was" "$(cat "$T_TMP/afile")" "a file"
done

# A file system's empty lost+found does not count, as for lode restore.
mkdir -p "$T_TMP/fs/lost+found"
run restore "$ID" --target "$T_TMP/fs" --dry-run --output json
check_eq "an empty lost+found does not make the target refused" \
    "$(jq -r '.error.reason' <<<"$OUT")" RepositoryUnavailable

# ---- a repository that cannot be reached: the stage goes ----
run restore "$ID" --target "$T_TMP/new/dir" --staged --output json --termination-log "$T_TMP/term2"
check_rc "staged, repository unreachable: exit 2" 2
check_eq "... RepositoryUnavailable in the JSON and the termination log" \
    "$(jq -r '.error.reason' <<<"$OUT") $(jq -r '.error.reason' "$T_TMP/term2")" \
    "RepositoryUnavailable RepositoryUnavailable"
check_eq "... the target was made, and is empty" "$(ls -A "$T_TMP/new/dir" 2>&1)" ""

# ---- SIGTERM while it runs: the stage goes, exit 143 ----
# A server that accepts and never answers keeps the restore waiting on its first request.
python3 - "$T_TMP/port" <<'EOF' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
conns = []
end = time.time() + 180
while time.time() < end:
    s.settimeout(1)
    try:
        conns.append(s.accept()[0])
    except socket.timeout:
        pass
EOF
srv=$!
for _ in $(seq 300); do [ -s "$T_TMP/port" ] && break; sleep 0.1; done # up to 30 s
export LODE_REPOSITORY=s3:http://127.0.0.1:$(cat "$T_TMP/port")/bucket LODE_ALLOW_PLAIN_HTTP=true
mkdir "$T_TMP/term-target"
"$LODE" restore "$ID" --target "$T_TMP/term-target" --staged --output json \
    --termination-log "$T_TMP/term3" >"$T_TMP/out3" 2>"$T_TMP/err3" &
pid=$!
staged=0
# Up to 60 s: the sanitizer build on a loaded 2-core machine can take seconds to start.
for _ in $(seq 600); do
    if [ -n "$(find "$T_TMP/term-target" -maxdepth 1 -name '.lode-restore-staging-*')" ]; then
        staged=1
        break
    fi
    sleep 0.1
done
check_eq "staged: the stage exists while the restore waits" "$staged" 1
kill -TERM "$pid"
wait "$pid"
check_eq "SIGTERM: exit 143" "$?" 143
check_eq "... nothing is left in the target" "$(ls -A "$T_TMP/term-target")" ""
check_contains "... it says so" "$(cat "$T_TMP/err3")" "nothing of this restore was left in the target"
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
finish
