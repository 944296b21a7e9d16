#!/usr/bin/env bash
# The controller's GC Jobs (docs/gc.md, "Run by the controller"), on the local control
# plane of tests/env, as an operator checks them: with spec.gc.schedule "* * * * *" a
# BackupRepository gets a GC Job each minute, running `lode gc` with the largest
# maxRuntime of its policies, the repository by reference, on no particular node and
# without the host's file system; never a second one while one is active; its result
# (the termination message, written here by patching the pod's status, as KWOK runs
# nothing) lands in status.gc with a GarbageCollected Event, a failure with a
# GarbageCollectionFailed one; spec.gc.suspend starts no more Jobs; /metrics carries the
# GC series; a schedule change survives a controller restart (status.gc.scheduleChangedAt).
# Every wait is bounded; the slowest waits for a minute boundary.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
NS=e2e-gc-$(openssl rand -hex 3)
PIDS=()
cleanup() {
	env_stop_pids
	kc delete ns "$NS" --wait=false >/dev/null 2>&1
	rm -rf "$T_TMP"
}
trap cleanup EXIT

env_crds
kc create namespace "$NS" >/dev/null
env_repository "$NS" main
kc -n "$NS" patch backuprepository main --type=merge -p '{"spec":{"gc":{"schedule":"* * * * *"}}}' >/dev/null
# Two policies of main (3h and 1h) and one of another repository (9h): --max-runtime 3h.
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: long}
spec: {repository: main, paths: [/etc], nodeSelector: {role: $NS}, limits: {maxRuntime: 3h}}
---
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: short}
spec: {repository: main, paths: [/etc], nodeSelector: {role: $NS}, limits: {maxRuntime: 1h}}
---
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: other}
spec: {repository: elsewhere, paths: [/etc], nodeSelector: {role: $NS}, limits: {maxRuntime: 9h}}
EOF

env_controller_start "$NS" ctl || exit 1

# gc_metric NAME [EXTRA-LABELS]: the value of main's series on the running controller's /metrics.
gc_metric() {
	local port
	port=$(grep -ho 'metrics on 127.0.0.1:[0-9]*' "$T_TMP"/ctl*.log | tail -n 1 | cut -d: -f2)
	curl -s --max-time 5 "http://127.0.0.1:$port/metrics" |
		awk -v m="$1{repository=\"$NS/main\"${2:+,$2}}" '$1 == m { print $2 }'
}
gcjobs() { kc -n "$NS" get jobs -l lodestore.io/repository=main -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'; }
gc_field() { env_get -n "$NS" backuprepository/main "{.status.gc.$1}"; }
active_is() { [[ -n $1 && $(gc_field activeJob) == "$1" ]]; }
has_jobs() { [[ $(gcjobs | grep -c .) -ge $1 ]]; }
events() { # REASON: messages of Events of that reason about the repository
	kc -n "$NS" get events --field-selector "reason=$1,involvedObject.name=main,involvedObject.kind=BackupRepository" \
		-o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}
has_event() { [[ -n $(events "$1") ]]; }
pod_of() { kc -n "$NS" get pods -l "job-name=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
has_pod() { [[ -n $(pod_of "$1") ]]; }
# finish JOB MESSAGE PHASE: the GC container ends with that termination message.
finish_pod() {
	local pod now patch code=0
	pod=$(pod_of "$1")
	[[ $3 == Failed ]] && code=2
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	patch=$(jq -cn --arg m "$2" --arg t "$now" --arg p "$3" --argjson c "$code" '{status: {phase: $p,
		containerStatuses: [{name: "gc", image: "lodestore.invalid/agent:e2e", imageID: "",
		ready: false, restartCount: 0, started: false, state: {terminated: {exitCode: $c,
		reason: "Completed", message: $m, startedAt: $t, finishedAt: $t}}}]}}')
	kc -n "$NS" patch pod "$pod" --subresource=status --type=merge -p "$patch" >/dev/null
}
# past T: the clock is past the RFC 3339 time T plus 8 s (a controller tick and then some).
past() { [[ $(date +%s) -gt $(($(date -d "$1" +%s) + 8)) ]]; }

# ---- the first GC Job ----
if ! env_wait 75 "a GC Job of main" has_jobs 1; then
	fail "a GC Job starts on the schedule" "$(tail -n 30 "$T_TMP/ctl.log")"
	finish
	exit
fi
pass "a GC Job starts on spec.gc.schedule"
job1=$(gcjobs | head -n 1)
kc -n "$NS" get job "$job1" -o json >"$T_TMP/job.json"
check_eq "it runs lode gc with the largest maxRuntime of the repository's policies (3h), its result to the termination log" \
	"$(jq -c '.spec.template.spec.containers[0] | [.command, .args]' "$T_TMP/job.json")" \
	'[["/usr/local/bin/lode","gc"],["--output","json","--max-runtime","10800s","--termination-log","/dev/termination-log"]]'
check_eq "not pinned to a node, no host file system" \
	"$(jq -c '[.spec.template.spec.nodeName, ([.spec.template.spec.volumes[] | select(.hostPath)] | length)]' "$T_TMP/job.json")" '[null,0]'
envj() { jq -c --arg n "$1" '.spec.template.spec.containers[0].env[] | select(.name == $n) | del(.name)' "$T_TMP/job.json"; }
check_eq "the repository by value, its keys by reference" \
	"$(envj LODE_REPOSITORY) $(envj AWS_SECRET_ACCESS_KEY)" \
	"{\"value\":\"s3:${S3_ENDPOINT%/}/$S3_BUCKET/e2e/$NS/main\"} {\"valueFrom\":{\"secretKeyRef\":{\"key\":\"AWS_SECRET_ACCESS_KEY\",\"name\":\"main-s3\"}}}"
check_eq "no secret value in the Job" "$(grep -c "$S3_SECRET_KEY" "$T_TMP/job.json")" 0
check_eq "owned by the BackupRepository" "$(jq -r '.metadata.ownerReferences[0].kind' "$T_TMP/job.json")" BackupRepository
env_wait 20 "status.gc.activeJob" active_is "$job1" &&
	pass "status.gc.activeJob names it" || fail "status.gc.activeJob names it" "$(gc_field activeJob)"

# ---- never two at once: the next slot passes while it is active ----
next=$(gc_field nextRun)
[[ -n $next ]] && pass "status.gc.nextRun is set ($next)" || fail "status.gc.nextRun is set"
env_wait 75 "the next slot ($next) to pass" past "$next"
check_eq "never two at once: the next slot passed and still one GC Job" "$(gcjobs | grep -c .)" 1

# ---- its result ----
env_wait 30 "the GC Job's pod" has_pod "$job1" || fail "the Job controller made the GC pod"
finish_pod "$job1" '{"packs":{"total":7,"deleted":2,"kept":5},"bytesFreed":4096,"error":null}' Succeeded
result_is() { [[ "$(gc_field result) $(gc_field lastJob)" == "$1" ]]; }
if env_wait 60 "status.gc.result Succeeded" result_is "Succeeded $job1"; then
	pass "the result lands in status.gc"
else
	fail "the result lands in status.gc" "$(kc -n "$NS" get backuprepository main -o json | jq -c .status.gc)"
fi
check_eq "packsDeleted, bytesFreed, lastRun, a duration" \
	"$(kc -n "$NS" get backuprepository main -o json | jq -c '.status.gc | [.packsDeleted, .bytesFreed, (.lastRun | length > 0), (.durationSeconds >= 0)]')" \
	'[2,4096,true,true]'
env_wait 20 "a GarbageCollected Event" has_event GarbageCollected &&
	pass "a GarbageCollected Event" || fail "a GarbageCollected Event"
check_contains "the Event says what was freed" "$(events GarbageCollected)" "deleted 2 of 7 packs, 4096 bytes freed"
check_eq "metrics: a success counted, 2 packs and 4096 bytes, not failed, limit 120 s, not overdue" \
	"$(gc_metric lodestore_gc_runs_total 'result="succeeded"') $(gc_metric lodestore_gc_packs_deleted_total) $(gc_metric lodestore_gc_bytes_freed_total) $(gc_metric lodestore_gc_last_failed) $(gc_metric lodestore_gc_alert_limit_seconds) $(gc_metric lodestore_gc_overdue)" \
	"1 2 4096 0 120 0"
last_success=$(gc_field lastSuccess)
check_eq "metrics: the last success is status.gc.lastSuccess" \
	"$(gc_metric lodestore_gc_last_success_timestamp_seconds)" "$(date -d "$last_success" +%s)"
check_eq "the printer column Last GC" \
	"$(kc -n "$NS" get backuprepository main | head -n 1 | grep -c 'LAST GC')" 1

# ---- the next slot runs a new Job; a failure is said ----
if env_wait 75 "a second GC Job" has_jobs 2; then
	pass "the next slot after it ended starts a new GC Job"
else
	fail "the next slot after it ended starts a new GC Job" "$(tail -n 20 "$T_TMP/ctl.log")"
fi
job2=$(gcjobs | grep -v "^$job1\$" | head -n 1)
env_wait 20 "status.gc.activeJob" active_is "$job2" || fail "status.gc.activeJob names the second Job"
kc -n "$NS" patch backuprepository main --type=merge -p '{"spec":{"gc":{"suspend":true}}}' >/dev/null
env_wait 30 "the second GC Job's pod" has_pod "$job2" || fail "the Job controller made the second GC pod"
finish_pod "$job2" '{"packs":{"total":0,"deleted":0,"kept":0},"bytesFreed":0,"error":"storage answered 503; nothing was deleted"}' Failed
if env_wait 60 "status.gc.result Failed" result_is "Failed $job2"; then
	pass "a failed GC is recorded Failed, even once suspended"
else
	fail "a failed GC is recorded Failed" "$(kc -n "$NS" get backuprepository main -o json | jq -c .status.gc)"
fi
check_contains "status.gc.message carries lode gc's error" "$(gc_field message)" "storage answered 503"
env_wait 20 "a GarbageCollectionFailed Event" has_event GarbageCollectionFailed &&
	pass "a GarbageCollectionFailed Event" || fail "a GarbageCollectionFailed Event"
check_eq "metrics: the failure counted, lodestore_gc_last_failed 1, the last success kept" \
	"$(gc_metric lodestore_gc_runs_total 'result="failed"') $(gc_metric lodestore_gc_last_failed) $(gc_metric lodestore_gc_last_success_timestamp_seconds)" \
	"1 1 $(date -d "$last_success" +%s)"

# ---- suspended: no more Jobs ----
suspended() { [[ -z $(gc_field nextRun) && $(gc_field message) == *suspended* ]]; }
env_wait 20 "nextRun null and the message saying suspended" suspended &&
	pass "suspended: no nextRun, and status.gc.message says so" ||
	fail "suspended: no nextRun" "$(kc -n "$NS" get backuprepository main -o json | jq -c .status.gc)"
later=$(date -u -d '+61 seconds' +%Y-%m-%dT%H:%M:%SZ)
env_wait 80 "a whole minute to pass" past "$later"
check_eq "suspended: no GC Job started for a minute" "$(gcjobs | grep -c .)" 2
# Resumed on a yearly schedule: nextRun is New Year's midnight, and the note gives way to
# the last run's message again.
kc -n "$NS" patch backuprepository main --type=merge \
	-p '{"spec":{"gc":{"suspend":false,"schedule":"0 0 1 1 *"}}}' >/dev/null
new_year=$(date -u -d "$(($(date -u +%Y) + 1))-01-01" +%Y-%m-%dT00:00:00Z)
resumed() { [[ $(gc_field nextRun) == "$new_year" && $(gc_field message) == *"storage answered 503"* ]]; }
env_wait 20 "nextRun $new_year and the last run's message back" resumed &&
	pass "resumed: nextRun on the new schedule, the last run's message kept" ||
	fail "resumed: nextRun on the new schedule" "$(kc -n "$NS" get backuprepository main -o json | jq -c .status.gc)"

# ---- a schedule change survives a controller restart ----
# A daily schedule whose time passed a minute ago: changed now, that slot does not count
# (docs/schedule.md); a restarted controller must not count it either, though it is
# after the repository's creation and within the 24-hour catch-up.
target=$(($(date +%s) / 60 * 60 - 60))
kc -n "$NS" patch backuprepository main --type=merge \
	-p "{\"spec\":{\"gc\":{\"schedule\":\"$(date -u -d "@$target" +'%-M %-H') * * *\"}}}" >/dev/null
tomorrow=$(date -u -d "@$((target + 86400))" +%Y-%m-%dT%H:%M:%SZ)
changed() { [[ $(gc_field nextRun) == "$tomorrow" && -n $(gc_field scheduleChangedAt) ]]; }
env_wait 20 "nextRun $tomorrow and scheduleChangedAt" changed &&
	pass "a daily schedule changed after its time: nextRun tomorrow, status.gc.scheduleChangedAt set" ||
	fail "a daily schedule changed after its time: nextRun tomorrow" "$(kc -n "$NS" get backuprepository main -o json | jq -c .status.gc)"
changed_at=$(gc_field scheduleChangedAt)
kill "${PIDS[0]}" && wait "${PIDS[0]}" 2>/dev/null
"$CTL" --kubeconfig "$KUBECONFIG" --context operator --metrics-addr 127.0.0.1:0 \
	--namespace "$NS" --agent-image lodestore.invalid/agent:e2e --log-level debug \
	>>"$T_TMP/ctl2.log" 2>&1 &
PIDS=($!)
looked() { grep -q "GC of $NS/main: schedule" "$T_TMP/ctl2.log"; }
env_wait 40 "the restarted controller to look at main's GC" looked ||
	fail "the restarted controller looks at main's GC" "$(tail -n 20 "$T_TMP/ctl2.log")"
# Two more ticks for a Job it would start.
seen=$(date -u +%Y-%m-%dT%H:%M:%SZ)
env_wait 20 "two GC ticks" past "$seen"
check_eq "after a restart: no GC Job for the slot before the change" "$(gcjobs | grep -c .)" 2
check_eq "after a restart: nextRun still tomorrow, scheduleChangedAt kept" \
	"$(gc_field nextRun) $(gc_field scheduleChangedAt)" "$tomorrow $changed_at"
check_eq "after a restart, metrics from status.gc: last failed, the last success, a daily limit; counters from 0" \
	"$(gc_metric lodestore_gc_last_failed) $(gc_metric lodestore_gc_last_success_timestamp_seconds) $(gc_metric lodestore_gc_alert_limit_seconds) $(gc_metric lodestore_gc_runs_total 'result="failed"')" \
	"1 $(date -d "$last_success" +%s) 172800 0"
check_contains "the restarted controller counts slots from the change" "$(grep "GC of $NS/main: schedule" "$T_TMP/ctl2.log")" \
	"slots count from $changed_at"
check_eq "the controller logged no error about GC" "$(cat "$T_TMP/ctl.log" "$T_TMP/ctl2.log" | grep -c 'GC of .*fail\|GC of .*not written')" 0
finish
