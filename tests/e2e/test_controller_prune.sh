#!/usr/bin/env bash
# The controller's forget after a backup (docs/operator.md, "After a backup"), on the local
# control plane of tests/env with versitygw, as an operator would check it:
#   - a Backup that turns Succeeded makes the controller forget, on that host, exactly what
#     `lode forget --policy FILE --host H --dry-run` says; the .incomplete mark of a forgotten
#     snapshot goes, a .suspicious snapshot stays, and neighbours whose names are prefixes of
#     each other (host n-0 / n-0-1, policy web / web-1, namespace NS / NS-1) are untouched;
#   - the Backup records it (status.retention: result, kept, forgotten, reasons), the policy
#     gets one Forgot Event naming the Backup and the forgotten snapshots (paced and combined
#     with its like), and the counter lodestore_snapshots_forgotten_total counts them;
#   - once per Backup: a restarted controller does not forget again for it;
#   - through the fault proxy (tests/e2e/s3/faultproxy.c), a listing cut short deletes
#     nothing (Failed, a ForgetFailed Event, lodestore_forget_errors_total), refused keys make
#     it Partial with the key named; with the faults cleared the next Backup forgets;
#   - a listing that has not reached the snapshot the Backup reported deletes nothing; one
#     that was forgotten already does not stop the forget;
#   - a repository that is not Ready or missing, a credentials Secret that is gone and an
#     invalid policy are skipped with a note, and nothing is listed;
#   - with the repository key (docs/security.md, "A bucket writer"): a manifest copied under a
#     newer id, garbage under a snapshot's name and a pin made without the key keep no slot,
#     so the forget keeps the real snapshots the rules keep (as lode forget --key-file does),
#     does not delete them, and names each in an ObjectIgnored Event on the policy and the
#     log; a later forget reads only the new snapshot's manifest; a Secret without the key is
#     skipped, a wrong key, a missing config.json and a manifest that cannot be read delete
#     nothing.
# Snapshots are written by tests/e2e/s3/repo_fixture.c and aged through their files' mtime
# (versitygw's posix backend takes LastModified from it). Every wait is bounded.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
LODE=${LODE:-$ROOT/build/lode}
case "$LODE" in /*) ;; *) LODE="$ROOT/$LODE" ;; esac
case "$CTL" in /*) ;; *) CTL="$ROOT/$CTL" ;; esac
out=$ROOT/build/e2e
mkdir -p "$out"
NS=e2e-prune-$(openssl rand -hex 3)
PIDS=()
PROXY_PID=
cleanup() {
    env_stop_pids
    [[ -n $PROXY_PID ]] && kill "$PROXY_PID" 2>/dev/null
    kc delete ns "$NS" --wait=false >/dev/null 2>&1
    env_delete_nodes "$NS-n" >/dev/null 2>&1
    env_kwok_clear >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap cleanup EXIT

if [[ -x $LODE && -x $CTL && -f $ROOT/build/liblode.a ]] &&
    env_build_tool repo_fixture 2>"$T_TMP/cc.log" && env_build_tool faultproxy 2>>"$T_TMP/cc.log"; then
    pass "build repo_fixture and faultproxy (lode, lode-controller and build/liblode.a from make)"
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

stop_controller() { # LOG: a graceful stop exits 0 (with LODE_CONTROLLER built with ASan: no leak)
    kill "$CTL_PID" 2>/dev/null
    wait "$CTL_PID" 2>/dev/null
    local rc=$?
    PIDS=()
    [[ $rc == 0 ]] && pass "the controller ($1) stops cleanly" ||
        fail "the controller ($1) stops cleanly" "exit $rc; $(grep -A30 -m1 'Sanitizer' "$T_TMP/$1.log")"
}
metric() { # NAME POLICY
    curl -s "http://127.0.0.1:$CTL_PORT/metrics" | awk -v m="$1{policy=\"$2\"}" '$1 == m {print $2}'
}
events() { # REASON OBJECT-NAME: messages of Events of that reason about the object
    kc -n "$NS" get events --field-selector "reason=$1,involvedObject.name=$2" \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}
# has_ret NAME reads the Backup's status.retention into a file, and ret NAME FIELD a field of
# what it read last: the controller writes the record once, whole, so one read serves every
# check of it (a kubectl call costs seconds on a loaded machine).
has_ret() {
    kc -n "$NS" get backup "$1" -o json | jq '.status.retention // {}' >"$T_TMP/ret-$1.json" &&
        [[ -n $(ret "$1" result) ]]
}
ret() { jq -r --arg f "$2" '.[$f] // empty' "$T_TMP/ret-$1.json" 2>/dev/null; }
phase_is() { [[ $(env_get -n "$NS" "backup/$1" '{.status.phase}') == "$2" ]]; }
# succeed NAME POLICY HOST [nojob|-] [SNAPSHOT-ID]: a Backup, marked Succeeded (KWOK nodes run
# no agent) once the controller has written it Running (its Job's pod hangs), so that write
# cannot come after ours; with nojob (a repository that is not Ready: no Job) at once. With
# SNAPSHOT-ID, status.snapshot.id says the run wrote that snapshot, as the agent reports it.
succeed() {
    kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: $1}
spec: {policy: $2, host: $3}
EOF
    [[ ${4:-} == nojob ]] || env_wait 60 "$1 to run" phase_is "$1" Running ||
        fail "$1 runs" "$(env_get -n "$NS" "backup/$1" '{.status}')"
    kc -n "$NS" patch backup "$1" --subresource=status --type=merge \
        -p "$(jq -cn --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg id "${5:-}" \
            '{status: ({phase: "Succeeded", completionTime: $t} + if $id == "" then {} else {snapshot: {id: $id}} end)}')" >/dev/null
}

env_crds
kc create namespace "$NS" >/dev/null
env_create_nodes 2 "$NS-n" "role=$NS"
# Every Job pod of this script hangs: one stage per node (each waits for KWOK to load it),
# whose names are this namespace's own.
env_kwok_result hang "lodestore.io/host=$NS-n-0"
env_kwok_result hang "lodestore.io/host=$NS-n-1"
env_repository "$NS" main
env_repository "$NS" broken lode-no-such-bucket-e2e
kc -n "$NS" get secret main-s3 -o json | jq '.metadata = {name: "flaky-s3"}' | kc -n "$NS" apply -f - >/dev/null
# The same repository through Secrets without the repository key, and with a wrong one.
kc -n "$NS" get secret main-s3 -o json | jq '.metadata = {name: "nokey-s3"} | del(.data["repository-key"])' |
    kc -n "$NS" apply -f - >/dev/null
kc -n "$NS" get secret main-s3 -o json | jq --arg k "$(printf 'not-the-key' | base64)" \
    '.metadata = {name: "wrongkey-s3"} | .data["repository-key"] = $k' | kc -n "$NS" apply -f - >/dev/null
for r in nokey wrongkey; do
    kc -n "$NS" get backuprepository main -o json |
        jq --arg r "$r" '{apiVersion, kind, metadata: {name: $r}, spec: (.spec + {credentialsSecret: {name: ($r + "-s3")}})}' |
        kc -n "$NS" apply -f - >/dev/null
done
# A place in the bucket with no repository (no config.json), with main's Secret.
kc -n "$NS" get backuprepository main -o json |
    jq --arg p "e2e/$NS/empty" '{apiVersion, kind, metadata: {name: "empty"}, spec: (.spec + {prefix: $p})}' |
    kc -n "$NS" apply -f - >/dev/null
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupRepository
metadata: {name: flaky}
spec:
  endpoint: $PROXY
  bucket: $S3_BUCKET
  prefix: e2e/$NS/main
  credentialsSecret: {name: flaky-s3}
EOF
policy() { # NAME REPOSITORY KEEPLAST
    cat <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: $1, namespace: $NS}
spec:
  repository: $2
  paths: [/etc]
  nodeSelector: {role: $NS}
  retention: {keepLast: $3}
EOF
}
policy web main 2 >"$T_TMP/web.yaml"
policy flaky flaky 1 >"$T_TMP/flaky.yaml"
policy many main 1 >"$T_TMP/many.yaml"
policy trust main 2 >"$T_TMP/trust.yaml"
for p in web flaky many trust; do kc apply -f "$T_TMP/$p.yaml" >/dev/null; done
policy nokeyp nokey 1 | kc apply -f - >/dev/null
policy wrongp wrongkey 1 | kc apply -f - >/dev/null
policy emptyp empty 1 | kc apply -f - >/dev/null
policy stale broken 1 | kc apply -f - >/dev/null
policy orphan nosuch 1 | kc apply -f - >/dev/null
policy lostp lost 1 | kc apply -f - >/dev/null
{
    policy bad main 1
    echo '  schedule: {cron: "0 0 30 2 *"}' # valid for the schema, never due: the validator refuses it
} | kc apply -f - >/dev/null
kc -n "$NS" get secret main-s3 -o json | jq '.metadata = {name: "lost-s3"}' | kc -n "$NS" apply -f - >/dev/null
kc -n "$NS" get backuprepository main -o json |
    jq '{apiVersion, kind, metadata: {name: "lost"}, spec: (.spec + {credentialsSecret: {name: "lost-s3"}})}' |
    kc -n "$NS" apply -f - >/dev/null

# ---- the snapshots ----
env_lode_s3
export LODE_REPOSITORY=s3:${S3_ENDPOINT%/}/$S3_BUCKET/e2e/$NS/main
printf 'e2e-main' >"$T_TMP/key"
chmod 600 "$T_TMP/key" # lode refuses a key file open to others (docs/repository.md)
export LODE_KEY_FILE=$T_TMP/key
DATA=$ENV_DIR/s3/data/$S3_BUCKET/e2e/$NS/main
H=$NS-n-0
id() { printf '%sZ-%016x' "$(date -u -d "@$1" +%Y%m%dT%H%M%S)" "${2:-$1}"; }
t0=$(($(date +%s) - 30 * 86400))
{
    echo init
    # web on H: 8 nights; night 0 incomplete, 1 incomplete and suspicious, 2 suspicious,
    # 6 incomplete.
    for i in 0 1 2 3 4 5 6 7; do
        marks=
        ((i == 0)) && marks=incomplete
        ((i == 1)) && marks="incomplete suspicious"
        ((i == 2)) && marks=suspicious
        ((i == 6)) && marks=incomplete
        echo "snap $NS web $H $(id $((t0 + i * 86400))) - 3600 $marks"
    done
    # neighbours whose names are prefixes of each other, where keepLast 2 would forget
    for src in "$NS web $H-1" "$NS web-1 $H" "$NS-1 web $H"; do
        for i in 0 1 2 3; do echo "sealed $src $(id $((t0 + i * 86400)))"; done
    done
    # flaky on H: 4 nights
    for i in 0 1 2 3; do echo "sealed $NS flaky $H $(id $((t0 + i * 86400)))"; done
    # many on H: 13 nights, of which keepLast 1 forgets 11
    for i in $(seq 0 12); do echo "sealed $NS many $H $(id $((t0 + i * 86400)))"; done
    # stale on H: 3 nights (its repository is not Ready: nothing may go)
    for i in 0 1 2; do echo "sealed $NS stale $H $(id $((t0 + i * 86400)))"; done
    # trust on H: 4 real nights (forged objects join them below); wrongp on H: 3
    for i in 0 1 2 3; do echo "sealed $NS trust $H $(id $((t0 + i * 86400)))"; done
    for i in 0 1 2; do echo "sealed $NS wrongp $H $(id $((t0 + i * 86400)))"; done
} >"$T_TMP/fixture"
"$out/repo_fixture" "$T_TMP/key" <"$T_TMP/fixture" >"$T_TMP/fixture.out" 2>&1
check_eq "fixture: the snapshots are written" "$(tail -n 1 "$T_TMP/fixture.out")" "ok 48"
# What a bucket writer without the key puts under trust's host (through S3, so the store
# gives them ETags as for any object): night 0's manifest copied under night 10's id,
# garbage under night 9's, and a pin of night 1 with a tag not made with the key.
TP=/$S3_BUCKET/e2e/$NS/main/snapshots/$NS/trust/$H
cp "$DATA/snapshots/$NS/trust/$H/$(id "$t0").json" "$T_TMP/copy.json"
printf 'not a manifest' >"$T_TMP/garbage"
printf '{"format":2,"reason":"mine","tag":"%s"}' "$(printf '0%.0s' $(seq 56))" >"$T_TMP/pin"
env_s3 PUT "$TP/$(id $((t0 + 10 * 86400))).json" "$T_TMP/copy.json"
c1=$S3_CODE
env_s3 PUT "$TP/$(id $((t0 + 9 * 86400))).json" "$T_TMP/garbage"
c2=$S3_CODE
env_s3 PUT "$TP/$(id $((t0 + 86400))).pinned" "$T_TMP/pin"
check_eq "the forged objects are written through S3" "$c1 $c2 $S3_CODE" "200 200 200"
# LastModified = the night, so the order is the ids' order.
for f in "$DATA"/snapshots/*/*/*/*; do
    b=$(basename "$f")
    touch -d "@$(date -u -d "$(sed -E 's/^([0-9]{4})([0-9]{2})([0-9]{2})T([0-9]{2})([0-9]{2})([0-9]{2})Z.*/\1-\2-\3T\4:\5:\6Z/' <<<"$b")" +%s)" "$f"
done
files() { (cd "$DATA/snapshots/$1" 2>/dev/null && find . -type f | sed 's|^\./||' | sort); }
neighbours() { for s in "$NS/web/$H-1" "$NS/web-1/$H" "$NS-1/web/$H" "$NS/stale/$H"; do files "$s"; done | md5sum; }
neighbours_before=$(neighbours)

# What lode forget would do, before the controller does it.
"$LODE" forget --policy "$T_TMP/web.yaml" --host "$H" --dry-run --output json >"$T_TMP/want.json" 2>"$T_TMP/want.err"
want_keep=$(jq -r '.hosts[0].keep[].id' "$T_TMP/want.json" | sort)
want_forget=$(jq -r '.hosts[0].forget[].id' "$T_TMP/want.json" | sort)
check_eq "lode forget --dry-run: keeps 5 (7 and 6 last, 7 and 5 newest good, 1 and 2 suspicious), forgets 3" \
    "$(jq -c '[(.hosts[0].keep | length), (.hosts[0].forget | length)]' "$T_TMP/want.json")" "[5,3]"
check_eq "lode forget --dry-run: it forgets nights 0 (incomplete), 3 and 4" "$want_forget" \
    "$(printf '%s\n' "$(id "$t0")" "$(id $((t0 + 3 * 86400)))" "$(id $((t0 + 4 * 86400)))" | sort)"

# ---- a Backup turns Succeeded ----
env_controller_start "$NS" first
succeed b1 web "$H" - "$(id $((t0 + 7 * 86400)))"
if env_wait 60 "b1's status.retention" has_ret b1; then
    pass "a Backup that turns Succeeded gets status.retention"
else
    fail "a Backup that turns Succeeded gets status.retention" "$(cat "$T_TMP/first.log")"
fi
check_eq "b1: result, kept, forgotten" "$(ret b1 result) $(ret b1 kept) $(ret b1 forgotten)" "Done 5 3"
check_eq "b1: the reasons summary" "$(ret b1 reasons)" "last 2, newest-good 2, suspicious 2"
check_contains "b1: the message counts what was deleted" "$(ret b1 message)" \
    "deleted 3 manifests and 1 .incomplete mark"
left=$(files "$NS/web/$H" | grep '\.json$' | sed 's/\.json$//' | sort)
check_eq "exactly what lode forget --dry-run forgets is gone" "$left" "$want_keep"
check_eq "the marks left: the kept snapshots' (night 1 incomplete+suspicious, 2 suspicious, 6 incomplete)" \
    "$(files "$NS/web/$H" | grep -v '\.json$' | tr '\n' ' ')" \
    "$(id $((t0 + 86400))).incomplete $(id $((t0 + 86400))).suspicious $(id $((t0 + 2 * 86400))).suspicious $(id $((t0 + 6 * 86400))).incomplete "
check_eq "neighbours (host, policy, namespace prefixes; another repository's policy) untouched" \
    "$(neighbours)" "$neighbours_before"
check_eq "one Forgot Event on the policy, naming every forgotten snapshot" \
    "$(events Forgot web | grep -o '[0-9]\{8\}T[0-9]\{6\}Z-[0-9a-f]\{16\}' | sort)" "$want_forget"
check_contains "it names the host and the Backup" "$(events Forgot web)" "forgot 3 snapshots of host $H (Backup b1): "
check_eq "no Forgot Event on the Backup itself" "$(events Forgot b1 | wc -l)" 0
check_eq "lodestore_snapshots_forgotten_total counts them" "$(metric lodestore_snapshots_forgotten_total "$NS/web")" 3
check_eq "a forget that finished is no error" "$(metric lodestore_forget_errors_total "$NS/web")" 0

# ---- once per Backup ----
stamp=$(ret b1 time)
old=$(id $((t0 - 86400)))
printf 'open\nsealed %s web %s %s\n' "$NS" "$H" "$old" | "$out/repo_fixture" "$T_TMP/key" >/dev/null 2>&1
touch -d "@$((t0 - 86400))" "$DATA/snapshots/$NS/web/$H/$old.json"
stop_controller first
since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
env_controller_start "$NS" second
# Backups reach the cache before "caches synced": a forget for b1 would have begun by now.
check_eq "a restarted controller does not forget again for b1" \
    "$(grep -c "after Backup $NS/b1\$" "$T_TMP/second.log")" 0
succeed b1x web "$NS-n-1" # another host: its forget ends after any that began with it
env_wait 60 "b1x's status.retention" has_ret b1x || fail "b1x's status.retention"
has_ret b1 # read again
check_eq "b1's record is unchanged" "$(ret b1 time)" "$stamp"
check_eq "the older snapshot written since is still there" \
    "$(files "$NS/web/$H" | grep -c "^$old.json\$")" 1

# ---- faults ----
checked_since() { [[ ! $(env_get -n "$NS" backuprepository/flaky '{.status.lastCheckTime}') < $since ]]; }
env_wait 30 "the flaky repository checked by this controller" checked_since ||
    fail "the flaky repository is checked"
check_eq "the repository through the fault proxy is Ready" \
    "$(env_get -n "$NS" backuprepository/flaky '{.status.conditions[?(@.type=="Ready")].status}')" True
flaky_before=$(files "$NS/flaky/$H" | md5sum)
env_fault clear
env_fault truncate_list/40
succeed b2 flaky "$H"
env_wait 90 "b2's status.retention" has_ret b2 || fail "b2's status.retention" "$(tail -n 20 "$T_TMP/second.log")"
check_eq "a listing cut short: Failed, no counts" "$(ret b2 result) $(ret b2 forgotten)" "Failed "
check_contains "b2: the message says nothing was deleted" "$(ret b2 message)" "nothing was deleted"
check_eq "a listing cut short deletes nothing" "$(files "$NS/flaky/$H" | md5sum)" "$flaky_before"
check_contains "a ForgetFailed Event says so" "$(events ForgetFailed b2)" "nothing was deleted"
check_eq "lodestore_forget_errors_total counts it" "$(metric lodestore_forget_errors_total "$NS/flaky")" 1
env_fault clear
env_fault del_denied/1
succeed b3 flaky "$H"
env_wait 90 "b3's status.retention" has_ret b3 || fail "b3's status.retention"
check_eq "a refused key: Partial, 1 of 2 deleted" "$(ret b3 result) $(ret b3 forgotten)" "Partial 1"
check_contains "b3: the refused key is named" "$(ret b3 message)" "cannot delete snapshots/$NS/flaky/$H/"
check_contains "b3: with the store's answer" "$(ret b3 message)" "AccessDenied"
env_fault clear
succeed b4 flaky "$H"
env_wait 90 "b4's status.retention" has_ret b4 || fail "b4's status.retention"
# del_denied rewrites the reply of a delete the store did: the key is gone, and the next
# forget finds nothing left to delete.
check_eq "with the faults gone, the next Backup's forget is Done" "$(ret b4 result) $(ret b4 forgotten)" "Done 0"
check_eq "flaky keeps its newest two (keepLast 1 and the two newest good)" \
    "$(files "$NS/flaky/$H" | tr '\n' ' ')" "$(id $((t0 + 2 * 86400))).json $(id $((t0 + 3 * 86400))).json "

# ---- many forgotten: one Event lists them ----
succeed b6 many "$H"
env_wait 60 "b6's status.retention" has_ret b6 || fail "b6's status.retention"
check_eq "b6: 11 forgotten" "$(ret b6 result) $(ret b6 forgotten)" "Done 11"
check_eq "11 forgotten: one Forgot Event" "$(events Forgot many | wc -l)" 1
check_eq "that Event names all 11 ids" \
    "$(events Forgot many | grep -o '[0-9]\{8\}T[0-9]\{6\}Z-[0-9a-f]\{16\}' | sort | tr '\n' ' ')" \
    "$(for i in $(seq 0 10); do id $((t0 + i * 86400)); echo; done | sort | tr '\n' ' ')"
check_contains "and says how many" "$(events Forgot many)" "forgot 11 snapshots of host $H (Backup b6)"

# ---- a listing that has not reached the backup's own snapshot decides nothing ----
older=$(id $((t0 - 2 * 86400)))
printf 'open\nsealed %s many %s %s\n' "$NS" "$H" "$older" | "$out/repo_fixture" "$T_TMP/key" >/dev/null 2>&1
touch -d "@$((t0 - 2 * 86400))" "$DATA/snapshots/$NS/many/$H/$older.json"
many_before=$(files "$NS/many/$H" | md5sum)
late=$(id "$(date +%s)")
succeed b7 many "$H" - "$late"
env_wait 60 "b7's status.retention" has_ret b7 || fail "b7's status.retention"
check_eq "a reported snapshot newer than the listing: Failed" "$(ret b7 result)" Failed
check_contains "b7: the message names it" "$(ret b7 message)" \
    "the listing does not show snapshot $late, which the backup reported; nothing was deleted"
check_eq "b7: nothing was deleted" "$(files "$NS/many/$H" | md5sum)" "$many_before"
succeed b8 many "$H" - "$(id "$t0")" # forgotten by b6 already: older than the listing's newest
env_wait 60 "b8's status.retention" has_ret b8 || fail "b8's status.retention"
check_eq "a reported snapshot forgotten already does not stop the forget" \
    "$(ret b8 result) $(ret b8 forgotten)" "Done 1"
check_eq "b8: the older snapshot is gone" "$(files "$NS/many/$H" | grep -c "^$older")" 0

# ---- a repository that is not Ready ----
succeed b5 stale "$H" nojob
env_wait 90 "b5's status.retention" has_ret b5 || fail "b5's status.retention"
check_eq "a repository that is not Ready: Skipped" "$(ret b5 result)" Skipped
check_contains "b5: the note names the repository and its reason" "$(ret b5 message)" \
    "the BackupRepository broken is not Ready: BucketMissing"
check_contains "a ForgetSkipped Event" "$(events ForgetSkipped b5)" "broken"
check_eq "stale's snapshots untouched" "$(files "$NS/stale/$H" | wc -l)" 3

# ---- nothing to forget with: no repository, no Secret, an invalid policy ----
succeed b9 orphan "$H" nojob
env_wait 60 "b9's status.retention" has_ret b9 || fail "b9's status.retention"
check_eq "a policy whose repository does not exist: Skipped, named" \
    "$(ret b9 result): $(ret b9 message)" \
    "Skipped: the BackupRepository nosuch is missing; nothing was forgotten"
lost_ready() { [[ $(env_get -n "$NS" backuprepository/lost '{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
env_wait 60 "the repository lost to be Ready" lost_ready || fail "the repository lost is Ready"
kc -n "$NS" delete secret lost-s3 >/dev/null
succeed b10 lostp "$H"
env_wait 60 "b10's status.retention" has_ret b10 || fail "b10's status.retention"
check_eq "a credentials Secret that is gone: Skipped" "$(ret b10 result)" Skipped
check_contains "b10: the note says so" "$(ret b10 message)" "the repository's credentials Secret cannot be read"
succeed b11 bad "$H" nojob
env_wait 60 "b11's status.retention" has_ret b11 || fail "b11's status.retention"
check_eq "an invalid policy: Skipped, said" "$(ret b11 result): $(ret b11 message)" \
    "Skipped: the policy is not valid"
check_eq "lodestore_forget_errors_total counts skipped forgets" \
    "$(metric lodestore_forget_errors_total "$NS/orphan") $(metric lodestore_forget_errors_total "$NS/lostp")" "1 1"

# ---- with the key: forged objects keep no slot ----
trust_json() { files "$NS/trust/$H" | grep '\.json$' | sed 's/\.json$//' | sort; }
"$LODE" forget --policy "$T_TMP/trust.yaml" --host "$H" --dry-run --output json \
    >"$T_TMP/trust-want.json" 2>"$T_TMP/trust-want.err"
check_eq "lode forget --key-file --dry-run: keeps the real nights 3 and 2, forgets 0 and 1" \
    "$(jq -r '[.hosts[0].keep[].id] | sort | join(" ")' "$T_TMP/trust-want.json") / $(jq -r '[.hosts[0].forget[].id] | sort | join(" ")' "$T_TMP/trust-want.json")" \
    "$(id $((t0 + 2 * 86400))) $(id $((t0 + 3 * 86400))) / $(id "$t0") $(id $((t0 + 86400)))"
env -u LODE_KEY_FILE "$LODE" forget --policy "$T_TMP/trust.yaml" --host "$H" --dry-run --output json \
    >"$T_TMP/trust-nokey.json" 2>/dev/null
check_eq "without the key the forged objects would take the slots (the hole this closes)" \
    "$(jq -r '[.hosts[0].forget[].id] | sort | join(" ")' "$T_TMP/trust-nokey.json")" \
    "$(id "$t0") $(id $((t0 + 2 * 86400))) $(id $((t0 + 3 * 86400)))"
succeed t1 trust "$H" - "$(id $((t0 + 3 * 86400)))"
env_wait 60 "t1's status.retention" has_ret t1 || fail "t1's status.retention" "$(tail -n 30 "$T_TMP/second.log")"
check_eq "t1: Done, 2 kept (the real nights 3 and 2), 2 forgotten" \
    "$(ret t1 result) $(ret t1 kept) $(ret t1 forgotten)" "Done 2 2"
check_contains "t1: the message counts the objects ignored" "$(ret t1 message)" \
    "ignored 3 objects that the repository key does not authenticate"
check_eq "what is left: the real nights 2 and 3, and the forged objects (never deleted)" \
    "$(trust_json | tr '\n' ' ')" \
    "$(printf '%s\n' "$(id $((t0 + 2 * 86400)))" "$(id $((t0 + 3 * 86400)))" "$(id $((t0 + 9 * 86400)))" "$(id $((t0 + 10 * 86400)))" | sort | tr '\n' ' ')"
check_eq "the forged pin is not deleted either" "$(files "$NS/trust/$H" | grep -c '\.pinned$')" 1
ignored_all() {
    local ev
    ev=$(events ObjectIgnored trust)
    [[ $ev == *"$(id $((t0 + 10 * 86400))).json"* && $ev == *"$(id $((t0 + 9 * 86400))).json"* &&
        $ev == *"$(id $((t0 + 86400))).pinned"* ]]
}
if env_wait 60 "ObjectIgnored Events naming the three objects" ignored_all; then
    pass "an ObjectIgnored Warning on the policy names each forged object"
else
    fail "an ObjectIgnored Warning on the policy names each forged object" "$(events ObjectIgnored trust)"
fi
check_eq "ObjectIgnored is a Warning" \
    "$(kc -n "$NS" get events --field-selector reason=ObjectIgnored,involvedObject.name=trust -o jsonpath='{.items[0].type}')" Warning
check_contains "the copied manifest: it is not in its place" "$(events ObjectIgnored trust)" \
    "ignored snapshots/$NS/trust/$H/$(id $((t0 + 10 * 86400))).json"
check_eq "the log names each too" \
    "$(grep -c "forget after a backup ignored snapshots/$NS/trust/$H/" "$T_TMP/second.log")" 3
# A later backup: the new snapshot's manifest is the one read; the forged objects, known by
# their ETags, and night 3, read before, are not read again.
printf 'open\nsealed %s trust %s %s\n' "$NS" "$H" "$(id $((t0 + 4 * 86400)))" | "$out/repo_fixture" "$T_TMP/key" >/dev/null 2>&1
touch -d "@$((t0 + 4 * 86400))" "$DATA/snapshots/$NS/trust/$H/$(id $((t0 + 4 * 86400))).json"
succeed t2 trust "$H" - "$(id $((t0 + 4 * 86400)))"
env_wait 60 "t2's status.retention" has_ret t2 || fail "t2's status.retention"
check_eq "t2: Done, night 2 forgotten" "$(ret t2 result) $(ret t2 forgotten)" "Done 1"
check_contains "t2: one LIST, one GET (the new manifest), one DeleteObjects" "$(ret t2 message)" \
    "in 3 requests; ignored 2 objects"
check_eq "t2: nights 3 and 4 and the forged objects are left" "$(trust_json | wc -l)" 4

# ---- with the key: what stops a forget ----
succeed k1 nokeyp "$H"
env_wait 60 "k1's status.retention" has_ret k1 || fail "k1's status.retention"
check_eq "a Secret without the repository key: Skipped" "$(ret k1 result)" Skipped
check_contains "k1: the note names the Secret and the key" "$(ret k1 message)" \
    "the credentials Secret nokey-s3 holds no repository key (repository-key)"
wrongp_before=$(files "$NS/wrongp/$H" | md5sum)
succeed k2 wrongp "$H"
env_wait 90 "k2's status.retention" has_ret k2 || fail "k2's status.retention"
check_eq "a wrong repository key: Failed" "$(ret k2 result)" Failed
check_contains "k2: the note says the key does not open the repository" "$(ret k2 message)" \
    "does not open the repository"
check_eq "k2: nothing was deleted" "$(files "$NS/wrongp/$H" | md5sum)" "$wrongp_before"
succeed k3 wrongp "$H"
env_wait 60 "k3's status.retention" has_ret k3 || fail "k3's status.retention"
check_eq "the wrong key is remembered: derived once, not per forget" \
    "$(ret k3 result) $(grep -c "repository $NS/wrongkey: the credentials Secret's repository key does not open it" "$T_TMP/second.log")" "Failed 1"
succeed k6 emptyp "$H"
env_wait 60 "k6's status.retention" has_ret k6 || fail "k6's status.retention"
check_eq "no config.json where the repository should be: Failed" "$(ret k6 result)" Failed
check_contains "k6: the note says config.json cannot be read" "$(ret k6 message)" \
    "cannot read the repository's config.json, so the snapshots kept cannot be checked; nothing was deleted"
check_eq "the key of main was unlocked once for all its forgets" \
    "$(grep -c "repository $NS/main: repository key unlocked" "$T_TMP/second.log")" 1
# A kept manifest that cannot be read (403 through the fault proxy): nothing is deleted.
printf 'open\nsealed %s flaky %s %s\n' "$NS" "$H" "$(id $((t0 + 4 * 86400)))" | "$out/repo_fixture" "$T_TMP/key" >/dev/null 2>&1
touch -d "@$((t0 + 4 * 86400))" "$DATA/snapshots/$NS/flaky/$H/$(id $((t0 + 4 * 86400))).json"
flaky_before=$(files "$NS/flaky/$H" | md5sum)
env_fault clear
env_fault snap_denied/1
succeed k4 flaky "$H"
env_wait 90 "k4's status.retention" has_ret k4 || fail "k4's status.retention"
check_eq "a kept manifest's GET refused: Failed" "$(ret k4 result)" Failed
check_contains "k4: the note names the object and the store's answer" "$(ret k4 message)" \
    "cannot read snapshots/$NS/flaky/$H/$(id $((t0 + 4 * 86400))).json"
check_contains "k4: and says nothing was deleted" "$(ret k4 message)" "nothing was deleted"
check_eq "k4: nothing was deleted" "$(files "$NS/flaky/$H" | md5sum)" "$flaky_before"
env_fault clear
succeed k5 flaky "$H"
env_wait 90 "k5's status.retention" has_ret k5 || fail "k5's status.retention"
check_eq "with the fault gone: Done, night 2 forgotten" "$(ret k5 result) $(ret k5 forgotten)" "Done 1"
stop_controller second
finish
