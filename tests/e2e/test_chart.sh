#!/usr/bin/env bash
# The Helm chart (charts/lodestore) with real helm against the real control plane of
# tests/env. Every wait is bounded; the slowest step waits for the next minute boundary
# of a "* * * * *" schedule. Helm and promtool are built from their Go modules by
# tests/chart/build-tool.sh (cached: a warm run costs nothing).
#
# What it checks, as someone installing the chart would:
#   - helm lint (also --strict) passes; values.schema.json refuses values the controller
#     would refuse at start (a log level, a fractional qps, a duration with two units,
#     renewDeadline not shorter than leaseDuration);
#   - helm template renders with the defaults, and with the ServiceMonitor, the
#     PrometheusRule and watchNamespace; the API server accepts every rendered object
#     (kubectl apply --dry-run=server --validate=strict). The monitoring.coreos.com CRDs
#     are not in the test cluster: tests/chart/monitoring-crds.yaml stands in for them
#     (the real group, kinds and field names, no unknown fields preserved);
#   - the pod template passes the "restricted" Pod Security Standard (a dry-run Pod in a
#     namespace that enforces it, which refuses the same pod without its securityContext);
#   - the Deployment's args are flags build/lode-controller accepts: each is in its --help,
#     and the controller started with exactly those args fails on the kubeconfig, not on
#     a flag;
#   - promtool (built from the Prometheus module) loads and lints the PrometheusRule's
#     rules, and evaluates both alerts over made-up series: when they fire, for whom,
#     with which labels and text;
#   - the values in docs/operator.md's table exist, with the defaults it gives;
#   - helm package keeps the CRDs (charts/lodestore/crds is a symlink to crd/);
#   - helm install creates the ServiceAccount, RBAC, Service and Deployment; the
#     ServiceAccount may do what the controller does (kubectl auth can-i for each verb and
#     resource), and no more: no Secrets, no writes to policies' specs, nothing outside
#     the watched namespace when watchNamespace is set;
#   - the real controller, run with the rendered args under a token of the chart's
#     ServiceAccount, takes the Lease, creates a minute slot's Backups and Jobs, writes
#     their status, the policy's status and Events, and hands the Lease over on SIGTERM,
#     without one refused request; likewise for the namespaced install with a Backup
#     made by hand;
#   - helm uninstall removes what the chart made.
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${LODE_CONTROLLER:-$ROOT/build/lode-controller}
CHART=$ROOT/charts/lodestore
HEX=$(openssl rand -hex 3)
NS=chart-$HEX          # release A: the defaults (cluster-wide)
NSB=chart-$HEX-b       # release B: watchNamespace=$WNS
WNS=chart-$HEX-w       # the namespace release B watches
PSA=chart-$HEX-psa     # enforces the restricted Pod Security Standard
REL=lodestore-$HEX     # the release names contain "lodestore", so fullname = release name
RELB=lodestore-$HEX-b
LEASE=lodestore-controller
PIDS=()
STANDIN=()

helm() {
	HELM_CACHE_HOME=$T_TMP/helm/cache HELM_CONFIG_HOME=$T_TMP/helm/config \
		HELM_DATA_HOME=$T_TMP/helm/data KUBECACHEDIR=$T_TMP/helm/kube \
		"$HELM_BIN" --kubeconfig "$KUBECONFIG" --kube-context admin "$@"
}

cleanup() {
	local p
	env_stop_pids
	if [[ -n ${HELM_BIN:-} ]]; then
		helm uninstall "$REL" -n "$NS" --timeout 60s >/dev/null 2>&1
		helm uninstall "$RELB" -n "$NSB" --timeout 60s >/dev/null 2>&1
	fi
	kc delete clusterrole,clusterrolebinding -l "app.kubernetes.io/instance in ($REL,$RELB)" >/dev/null 2>&1
	kc delete ns "$NS" "$NSB" "$WNS" "$PSA" --wait=false >/dev/null 2>&1
	env_delete_nodes "$NS-n" >/dev/null 2>&1
	for p in "${STANDIN[@]}"; do kc delete crd "$p" --timeout 30s >/dev/null 2>&1; done
	rm -rf "$T_TMP"
}
trap cleanup EXIT

# ---- helm itself ----
if ! HELM_BIN=$("$ROOT/tests/chart/build-tool.sh" helm | tail -n 1) || [[ ! -x $HELM_BIN ]]; then
	HELM_BIN=
	fail "build helm (tests/chart/build-tool.sh helm)"
	finish
	exit 1
fi
want_version=$(awk '$1 == "helm.sh/helm/v3" { print $2 }' "$ROOT/tests/chart/tools/helm/go.mod")
check_contains "helm is the pinned release" "$(helm version --short)" "$want_version"

# ---- lint and the values schema ----
out=$(helm lint "$CHART" 2>&1) && pass "helm lint" || fail "helm lint" "$out"
out=$(helm lint --strict "$CHART" 2>&1) && pass "helm lint --strict" || fail "helm lint --strict" "$out"
MON=(--set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true
	--set "watchNamespace=$WNS")
out=$(helm lint --strict "$CHART" "${MON[@]}" 2>&1) &&
	pass "helm lint --strict with the monitoring objects and watchNamespace" ||
	fail "helm lint --strict with the monitoring objects and watchNamespace" "$out"

refused() { # NAME NEEDLE HELM-TEMPLATE-ARGS...: helm template fails and says NEEDLE
	local name=$1 needle=$2 out
	shift 2
	if out=$(helm template x "$CHART" "$@" 2>&1); then
		fail "$name" "helm template accepted $*"
	else
		check_contains "$name" "$out" "$needle"
	fi
}
refused "schema: logLevel is error, info or debug" logLevel --set logLevel=verbose
refused "schema: apiQPS is a whole number (the controller's --qps)" apiQPS --set apiQPS=0.5
refused "schema: jobTTL has one unit (the controller's durations)" jobTTL --set jobTTL=1h30m
refused "schema: backupHistory is 1 to 1000" backupHistory --set backupHistory=0
refused "schema: an unknown value is refused, not ignored" apiQps --set apiQps=5
refused "renewDeadline must be shorter than leaseDuration" renewDeadline \
	--set leaderElection.renewDeadline=1m --set leaderElection.leaseDuration=30s
refused "a ServiceMonitor needs the metrics Service" metrics.service.enabled \
	--set metrics.serviceMonitor.enabled=true --set metrics.service.enabled=false

# ---- render ----
helm template "$REL" "$CHART" -n "$NS" >"$T_TMP/default.yaml" 2>"$T_TMP/err" &&
	pass "helm template with the defaults" || fail "helm template with the defaults" "$(cat "$T_TMP/err")"
helm template "$REL" "$CHART" -n "$NS" "${MON[@]}" >"$T_TMP/full.yaml" 2>"$T_TMP/err" &&
	pass "helm template with ServiceMonitor, PrometheusRule and watchNamespace" ||
	fail "helm template with ServiceMonitor, PrometheusRule and watchNamespace" "$(cat "$T_TMP/err")"
crds=$(helm template "$REL" "$CHART" -n "$NS" --include-crds 2>/dev/null |
	awk '/^kind: CustomResourceDefinition/ { c = 1 } /^  name: / && c { print $2; c = 0 }' | sort | tr '\n' ' ')
check_eq "the chart carries the four CRDs" "$crds" \
	"backuppolicies.lodestore.io backuprepositories.lodestore.io backups.lodestore.io restores.lodestore.io "

# ---- every rendered object, checked by the API server ----
kc apply --server-side -f "$ROOT/crd/" >/dev/null
kc create namespace "$NS" >/dev/null
kc create namespace "$NSB" >/dev/null
kc create namespace "$WNS" >/dev/null
for crd in servicemonitors.monitoring.coreos.com prometheusrules.monitoring.coreos.com; do
	if ! kc get crd "$crd" >/dev/null 2>&1; then
		STANDIN+=("$crd")
	fi
done
if [[ ${#STANDIN[@]} -gt 0 ]]; then
	kc apply -f "$ROOT/tests/chart/monitoring-crds.yaml" >/dev/null
	kc wait --for condition=established --timeout=30s crd/servicemonitors.monitoring.coreos.com \
		crd/prometheusrules.monitoring.coreos.com >/dev/null
fi

# dry_run NAME FILE OUT: the server's answer to every object of FILE as one JSON object
# per line in OUT (server-side defaults applied, nothing stored).
dry_run() {
	if kc apply --dry-run=server --validate=strict -f "$2" -o json >"$T_TMP/dry.json" 2>"$T_TMP/err"; then
		jq -c 'if .kind == "List" then .items[] else . end' "$T_TMP/dry.json" >"$3"
		pass "$1"
	else
		: >"$3"
		fail "$1" "$(cat "$T_TMP/err")"
	fi
}
dry_run "the API server accepts every object of the default render" "$T_TMP/default.yaml" "$T_TMP/default.json"
dry_run "the API server accepts every object of the monitoring/watchNamespace render" \
	"$T_TMP/full.yaml" "$T_TMP/full.json"
# Release B's render, for its controller below.
helm template "$RELB" "$CHART" -n "$NSB" --set "watchNamespace=$WNS" --set "repositorySecrets={main-s3}" >"$T_TMP/b.yaml" 2>/dev/null
dry_run "the API server accepts every object of release B's render" "$T_TMP/b.yaml" "$T_TMP/b.json"
helm template "$REL" "$CHART" -n "$NS" --include-crds 2>/dev/null |
	kc apply --server-side --dry-run=server --field-manager lodestore-chart-test -f - >/dev/null 2>"$T_TMP/err" &&
	pass "the API server accepts the chart's CRDs" || fail "the API server accepts the chart's CRDs" "$(cat "$T_TMP/err")"

kinds() { jq -r '"\(.kind)/\(.metadata.namespace // "-")"' "$1" | sort | tr '\n' ' '; }
check_eq "the default render: what and where" "$(kinds "$T_TMP/default.json")" \
	"ClusterRole/- ClusterRoleBinding/- Deployment/$NS NetworkPolicy/$NS Role/$NS RoleBinding/$NS Service/$NS ServiceAccount/$NS "
check_eq "with watchNamespace: the namespaced rights are a Role there" "$(kinds "$T_TMP/full.json")" \
	"ClusterRole/- ClusterRoleBinding/- Deployment/$NS NetworkPolicy/$NS PrometheusRule/$NS Role/$NS Role/$WNS RoleBinding/$NS RoleBinding/$WNS Service/$NS ServiceAccount/$NS ServiceMonitor/$NS "

# The NetworkPolicy: the controller's pods, the metrics port only, from anywhere by
# default and from the given peers when set; egress open unless egressTo is set.
np=$(jq -c 'select(.kind == "NetworkPolicy")' "$T_TMP/default.json")
check_eq "the NetworkPolicy selects the controller's pods" \
	"$(jq -c '.spec.podSelector.matchLabels' <<<"$np")" \
	"$(jq -c 'select(.kind == "Deployment") | .spec.selector.matchLabels' "$T_TMP/default.json")"
check_eq "... and lets in the metrics port only, egress open" \
	"$(jq -c '[.spec.policyTypes, .spec.ingress]' <<<"$np")" '[["Ingress"],[{"ports":[{"port":"metrics","protocol":"TCP"}]}]]'
helm template "$REL" "$CHART" -n "$NS" --set-json 'networkPolicy.metricsFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]' \
	--set-json 'networkPolicy.egressTo=[{"ports":[{"port":443}]}]' >"$T_TMP/np.yaml" 2>/dev/null
dry_run "the API server accepts the NetworkPolicy with peers and egress" "$T_TMP/np.yaml" "$T_TMP/np.json"
check_eq "... which admits the metrics port from those peers only and restricts egress" \
	"$(jq -c 'select(.kind == "NetworkPolicy") | [.spec.policyTypes, .spec.ingress[0].from[0].namespaceSelector.matchLabels, .spec.egress]' "$T_TMP/np.json")" \
	'[["Ingress","Egress"],{"kubernetes.io/metadata.name":"monitoring"},[{"ports":[{"port":443,"protocol":"TCP"}]}]]'

# The stand-in CRDs must be able to refuse: a misspelt field and a bad duration.
jq -c 'select(.kind == "ServiceMonitor") | .spec.endpoints[0].intervall = "30s"' "$T_TMP/full.json" |
	kc apply --dry-run=server --validate=strict -f - >/dev/null 2>&1 &&
	fail "the ServiceMonitor stand-in refuses an unknown field" ||
	pass "the ServiceMonitor stand-in refuses an unknown field"
jq -c 'select(.kind == "PrometheusRule") | .spec.groups[0].rules[0].for = "5 minutes"' "$T_TMP/full.json" |
	kc apply --dry-run=server --validate=strict -f - >/dev/null 2>&1 &&
	fail "the PrometheusRule stand-in refuses a duration Prometheus would not parse" ||
	pass "the PrometheusRule stand-in refuses a duration Prometheus would not parse"

# ---- monitoring objects: what they select and alert on ----
dep() { jq -c 'select(.kind == "Deployment")' "$1"; }
pod_labels=$(dep "$T_TMP/full.json" | jq -c '.spec.template.metadata.labels')
svc_sel=$(jq -c 'select(.kind == "Service") | .spec.selector' "$T_TMP/full.json")
check_eq "the Service selects the controller's pods" \
	"$(jq -n --argjson p "$pod_labels" --argjson s "$svc_sel" '$s | to_entries | all($p[.key] == .value)')" true
sm=$(jq -c 'select(.kind == "ServiceMonitor")' "$T_TMP/full.json")
svc_labels=$(jq -c 'select(.kind == "Service") | .metadata.labels' "$T_TMP/full.json")
check_eq "the ServiceMonitor selects the metrics Service" \
	"$(jq -n --argjson l "$svc_labels" --argjson sm "$sm" '$sm.spec.selector.matchLabels | to_entries | all($l[.key] == .value)')" true
check_eq "the ServiceMonitor scrapes the Service's port by name" \
	"$(jq -r '.spec.endpoints[0].port + " " + .spec.endpoints[0].path' <<<"$sm")" \
	"$(jq -r 'select(.kind == "Service") | .spec.ports[0].name' "$T_TMP/full.json") /metrics"
rules=$(jq -r 'select(.kind == "PrometheusRule") | .spec.groups[].rules[] | "\(.alert) \(.for) \(.expr)"' "$T_TMP/full.json")
check_contains "the overdue alert fires after metrics.prometheusRule.for" "$rules" \
	"LodestoreNoRecentBackup 5m lodestore_host_overdue == 1"
check_contains "the controller-down alert names this release's scrape job" "$rules" \
	"up{job=\"$REL-metrics\",namespace=\"$NS\"}"

# ---- the alert rules, as Prometheus loads and evaluates them (promtool) ----
# A PrometheusRule's spec is a Prometheus rule file (groups:); the server's answer is
# JSON, which is YAML. promtool checks and lints it, then evaluates both alerts over
# series made up here: when each starts pending and fires, with which labels and text.
if PROMTOOL=$("$ROOT/tests/chart/build-tool.sh" promtool | tail -n 1) && [[ -x $PROMTOOL ]]; then
	want=$(awk '$1 == "github.com/prometheus/prometheus" { sub(/^v0\./, "", $2); print $2 }' \
		"$ROOT/tests/chart/tools/promtool/go.mod")
	want="$((${want%%.*} / 100)).$((${want%%.*} % 100)).${want#*.}"
	check_contains "promtool is the pinned release" "$("$PROMTOOL" --version 2>&1 | head -n 1)" "version $want"
	jq 'select(.kind == "PrometheusRule") | .spec' "$T_TMP/full.json" >"$T_TMP/rules.json"
	if out=$("$PROMTOOL" check rules --lint=all --lint-fatal "$T_TMP/rules.json" 2>&1); then
		check_contains "promtool check rules --lint=all: the four rules load, nothing to lint" "$out" \
			"SUCCESS: 4 rules found"
	else
		fail "promtool check rules --lint=all: the four rules load, nothing to lint" "$out"
	fi
	# The check can fail: the same file with one expression Prometheus cannot parse.
	jq '.groups[0].rules[0].expr = "lodestore_host_overdue =="' "$T_TMP/rules.json" >"$T_TMP/bad-rules.json"
	if out=$("$PROMTOOL" check rules "$T_TMP/bad-rules.json" 2>&1); then
		fail "promtool refuses a rule file with a broken expression" "$out"
	else
		check_contains "promtool refuses a rule file with a broken expression" "$out" "parse error"
	fi
	# Minute by minute: n1 is overdue from minute 2, n2 never; this release's
	# controller is scraped until minute 5, then its target is down (another job's
	# target stays up, and must not hide it).
	cat >"$T_TMP/rules-test.yaml" <<EOF
rule_files: [rules.json]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'lodestore_host_overdue{policy="team/etc",host="n1"}'
        values: '0 0 1x20'
      - series: 'lodestore_host_overdue{policy="team/etc",host="n2"}'
        values: '0x22'
      - series: 'lodestore_gc_last_failed{repository="team/main"}'
        values: '0 0 0 1x3 0x15'
      - series: 'lodestore_gc_last_failed{repository="team/other"}'
        values: '0 1x20'
      - series: 'lodestore_gc_overdue{repository="team/main"}'
        values: '0x10 1x11'
      - series: 'up{job="$REL-metrics",namespace="$NS"}'
        values: '1x5 0x16'
      - series: 'up{job="someone-else",namespace="$NS"}'
        values: '1x22'
    alert_rule_test:
      - {eval_time: 6m, alertname: LodestoreNoRecentBackup, exp_alerts: []}
      - eval_time: 7m
        alertname: LodestoreNoRecentBackup
        exp_alerts:
          - exp_labels: {severity: warning, policy: team/etc, host: n1}
            exp_annotations:
              summary: No recent backup of n1 by policy team/etc
              description: The last successful backup is older than the policy's alert limit. See \`lode status team/etc\`.
      - eval_time: 8m
        alertname: LodestoreGarbageCollectionFailed
        exp_alerts:
          - exp_labels: {severity: warning, repository: team/other}
            exp_annotations:
              summary: Garbage collection of repository team/other failed
              description: "The last GC Job failed; space is not being freed. See status.gc.message: \`kubectl get backuprepository -o yaml\`."
      - {eval_time: 15m, alertname: LodestoreGarbageCollectionOverdue, exp_alerts: []}
      - eval_time: 16m
        alertname: LodestoreGarbageCollectionOverdue
        exp_alerts:
          - exp_labels: {severity: warning, repository: team/main}
            exp_annotations:
              summary: No successful garbage collection of repository team/main for too long
              description: No GC Job of the repository has succeeded within twice the longest gap of its spec.gc.schedule; its storage only grows. See status.gc.
      - {eval_time: 15m, alertname: LodestoreControllerDown, exp_alerts: []}
      - eval_time: 16m
        alertname: LodestoreControllerDown
        exp_alerts:
          - exp_labels: {severity: warning}
            exp_annotations:
              summary: Lodestore's controller is not being scraped; overdue hosts would go unnoticed.
EOF
	name="promtool test rules: the overdue alert fires after 5m for the overdue host only, the GC alerts after 5m for the failing (a 4-minute failure does not fire) and the overdue repository, the controller-down alert after 10m of failed scrapes"
	if out=$(cd "$T_TMP" && "$PROMTOOL" test rules rules-test.yaml 2>&1); then pass "$name"; else fail "$name" "$out"; fi
	# And the test can fail: with the overdue alert expected a minute early it must.
	sed 's/eval_time: 7m/eval_time: 6m/' "$T_TMP/rules-test.yaml" >"$T_TMP/rules-early.yaml"
	name="promtool test rules fails when the alert is expected a minute early"
	if out=$(cd "$T_TMP" && "$PROMTOOL" test rules rules-early.yaml 2>&1); then fail "$name" "$out"; else pass "$name"; fi
else
	fail "build promtool (tests/chart/build-tool.sh promtool)"
fi

# ---- the pod passes the restricted Pod Security Standard ----
kc create namespace "$PSA" >/dev/null
kc label namespace "$PSA" pod-security.kubernetes.io/enforce=restricted \
	pod-security.kubernetes.io/enforce-version=latest >/dev/null
as_pod() { jq -c --arg ns "$PSA" '{apiVersion: "v1", kind: "Pod",
	metadata: {name: "chart-pod", namespace: $ns, labels: .spec.template.metadata.labels},
	spec: .spec.template.spec}'; }
dep "$T_TMP/default.json" | as_pod | kc create --dry-run=server -f - >/dev/null 2>"$T_TMP/err" &&
	pass "the controller's pod is admitted under the restricted Pod Security Standard" ||
	fail "the controller's pod is admitted under the restricted Pod Security Standard" "$(cat "$T_TMP/err")"
dep "$T_TMP/default.json" | as_pod | jq -c 'del(.spec.securityContext, .spec.containers[0].securityContext)' |
	kc create --dry-run=server -f - >/dev/null 2>&1 &&
	fail "the same pod without its securityContext is refused there (the check can fail)" ||
	pass "the same pod without its securityContext is refused there (the check can fail)"

# ---- the Deployment's args against the real controller ----
mapfile -t known < <("$CTL" --help | grep -Eo -- '--[a-z][a-z-]*' | sort -u)
check_args() { # NAME JSON-FILE
	local name=$1 a unknown=() args
	mapfile -t args < <(dep "$2" | jq -r '.spec.template.spec.containers[0].args[]')
	for a in "${args[@]}"; do
		if [[ $a != --* ]] || ! printf '%s\n' "${known[@]}" | grep -qx -- "${a%%=*}"; then
			unknown+=("$a")
		fi
	done
	check_eq "$name: every arg is a flag of lode-controller --help" "${unknown[*]}" ""
	local out rc
	out=$(timeout 10 "$CTL" "${args[@]}" --kubeconfig /nonexistent 2>&1)
	rc=$?
	check_eq "$name: the controller takes the args and stops at the kubeconfig (exit 1)" "$rc" 1
	check_eq "$name: ... and only the kubeconfig is wrong" "$out" \
		"lode-controller: kubeconfig: /nonexistent: cannot open: No such file or directory"
}
check_args "default args" "$T_TMP/default.json"
check_args "watchNamespace args" "$T_TMP/full.json"
check_eq "default args: what the values say" \
	"$(dep "$T_TMP/default.json" | jq -r '.spec.template.spec.containers[0].args | join(" ")')" \
	"--metrics-addr=\$(POD_IP):8080 --agent-image=ghcr.io/lodestore/lodestore:0.1.0 --agent-cache-dir=/var/cache/lodestore --qps=20 --burst=30 --job-ttl=1h --backup-history=5 --log-level=info --allow-node-backups=$NS --leader-elect --leader-election-namespace=$NS --lease-name=lodestore-controller --lease-duration=15s --renew-deadline=10s --retry-period=2s"
check_contains "watchNamespace reaches --namespace" \
	"$(dep "$T_TMP/full.json" | jq -r '.spec.template.spec.containers[0].args | join(" ")')" "--namespace=$WNS"
check_contains "... and node backups are allowed there only" \
	"$(dep "$T_TMP/full.json" | jq -r '.spec.template.spec.containers[0].args | join(" ")')" "--allow-node-backups=$WNS"
d=$(dep "$T_TMP/default.json")
check_eq "probes: /healthz and /readyz on the metrics port" \
	"$(jq -r '.spec.template.spec.containers[0] | "\(.livenessProbe.httpGet.path) \(.readinessProbe.httpGet.path) \(.livenessProbe.httpGet.port) \(.ports[0].name)=\(.ports[0].containerPort)"' <<<"$d")" \
	"/healthz /readyz metrics metrics=8080"
check_eq "non-root, read-only root, no capabilities" \
	"$(jq -r '.spec.template.spec | "\(.securityContext.runAsNonRoot) \(.securityContext.runAsUser) \(.containers[0].securityContext.readOnlyRootFilesystem) \(.containers[0].securityContext.allowPrivilegeEscalation) \(.containers[0].securityContext.capabilities.drop)"' <<<"$d")" \
	'true 65532 true false ["ALL"]'
check_eq "resources: requests and a memory limit" \
	"$(jq -c '.spec.template.spec.containers[0].resources' <<<"$d")" \
	'{"limits":{"memory":"128Mi"},"requests":{"cpu":"50m","memory":"32Mi"}}'
check_eq "the identity for the Lease comes from the pod name" \
	"$(jq -r '.spec.template.spec.containers[0].env[] | select(.name == "POD_NAME") | .valueFrom.fieldRef.fieldPath' <<<"$d")" \
	metadata.name
# /metrics and the probes listen on the pod's IP only (metrics.bindAddress, docs/operator.md).
check_eq "the metrics address is the pod's IP, from the downward API" \
	"$(jq -r '.spec.template.spec.containers[0].env[] | select(.name == "POD_IP") | .valueFrom.fieldRef.fieldPath' <<<"$d")" \
	status.podIP
check_eq "metrics.bindAddress names another address (IPv6 in brackets)" \
	"$(helm template "$REL" "$CHART" -n "$NS" --set metrics.bindAddress=fd00::7 | grep -o -- '--metrics-addr=[^"]*')" \
	"--metrics-addr=[fd00::7]:8080"
out=$(helm template "$REL" "$CHART" -n "$NS" --set metrics.bindAddress=127.0.0.1 2>&1)
check_eq "a loopback metrics.bindAddress is refused (the kubelet probes the pod's IP)" \
	"$? $(grep -c "bindAddress" <<<"$out")" "1 1"

# ---- packaging keeps the CRDs the symlink points at ----
helm package "$CHART" -d "$T_TMP/pkg" >/dev/null 2>"$T_TMP/err" || fail "helm package" "$(cat "$T_TMP/err")"
check_eq "helm package: the CRDs are in the archive" \
	"$(tar -tzf "$T_TMP"/pkg/lodestore-*.tgz 2>/dev/null | grep '/crds/' | sort | tr '\n' ' ')" \
	"lodestore/crds/backuppolicies.yaml lodestore/crds/backuprepositories.yaml lodestore/crds/backups.yaml lodestore/crds/restores.yaml "

# ---- install ----
helm install "$REL" "$CHART" -n "$NS" --timeout 60s >"$T_TMP/install.log" 2>&1 &&
	pass "helm install (defaults)" || fail "helm install (defaults)" "$(cat "$T_TMP/install.log")"
check_contains "the cluster-wide install's notes say it may read every Secret" \
	"$(cat "$T_TMP/install.log")" "may read every Secret of every namespace"
helm install "$RELB" "$CHART" -n "$NSB" --set "watchNamespace=$WNS" --set "repositorySecrets={main-s3}" --timeout 60s >"$T_TMP/install.log" 2>&1 &&
	pass "helm install (watchNamespace)" || fail "helm install (watchNamespace)" "$(cat "$T_TMP/install.log")"
check_eq "the narrow install's notes have no such warning" \
	"$(grep -c 'may read every Secret' "$T_TMP/install.log")" 0
check_eq "release A: its objects in its namespace" \
	"$(kc -n "$NS" get deployment,serviceaccount,service,role,rolebinding -l "app.kubernetes.io/instance=$REL" -o name | sort | tr '\n' ' ')" \
	"deployment.apps/$REL role.rbac.authorization.k8s.io/$REL-leader-election rolebinding.rbac.authorization.k8s.io/$REL-leader-election service/$REL-metrics serviceaccount/$REL "
check_eq "release A: its cluster-wide RBAC" \
	"$(kc get clusterrole,clusterrolebinding -l "app.kubernetes.io/instance=$REL" -o name | sort | tr '\n' ' ')" \
	"clusterrole.rbac.authorization.k8s.io/$REL clusterrolebinding.rbac.authorization.k8s.io/$REL "
check_eq "release B: its Role in the watched namespace" \
	"$(kc -n "$WNS" get role,rolebinding -l "app.kubernetes.io/instance=$RELB" -o name | sort | tr '\n' ' ')" \
	"role.rbac.authorization.k8s.io/$RELB rolebinding.rbac.authorization.k8s.io/$RELB "
check_eq "the Deployment runs as the chart's ServiceAccount" \
	"$(env_get -n "$NS" "deployment/$REL" '{.spec.template.spec.serviceAccountName}')" "$REL"
check_eq "the CRDs are there" \
	"$(kc get crd backuppolicies.lodestore.io backups.lodestore.io backuprepositories.lodestore.io -o name | wc -l)" 3

# ---- the chart's values and docs/operator.md's table ----
helm get values "$REL" -n "$NS" --all -o json >"$T_TMP/values.json" 2>/dev/null
# Each row: value names (the first a full path, the next ones siblings unless dotted)
# and defaults; a default in backquotes is compared with the chart's, by position.
doc_rows=$(awk '/^### Chart values/ { t = 1; next } t && /^\| `/ { print } t && /^$/ && n++ > 0 { exit }' \
	"$ROOT/docs/operator.md")
missing=() wrong=() ndoc=0
while IFS= read -r row; do
	IFS='|' read -r _ names defaults _ <<<"$row"
	mapfile -t nl < <(grep -o '`[^`]*`' <<<"$names" | tr -d '`')
	IFS=',' read -ra dl <<<"$defaults"
	first=${nl[0]}
	for i in "${!nl[@]}"; do
		n=${nl[$i]}
		[[ $n == *.* || $first != *.* ]] || n=${first%.*}.$n
		ndoc=$((ndoc + 1))
		if ! jq -e --arg p "$n" 'getpath($p | split(".")) != null' "$T_TMP/values.json" >/dev/null; then
			missing+=("$n")
			continue
		fi
		if [[ ${#dl[@]} -eq ${#nl[@]} && ${dl[$i]} =~ ^\ *\`([^\`]*)\`\ *$ ]]; then
			got=$(jq -r --arg p "$n" 'getpath($p | split(".")) | tostring' "$T_TMP/values.json")
			[[ $got == "${BASH_REMATCH[1]}" ]] || wrong+=("$n=$got (docs: ${BASH_REMATCH[1]})")
		fi
	done
done <<<"$doc_rows"
[[ $ndoc -ge 20 ]] && pass "docs/operator.md lists $ndoc chart values" ||
	fail "docs/operator.md's value table was read" "only $ndoc values found"
check_eq "every value in docs/operator.md is a value of the chart" "${missing[*]}" ""
check_eq "the defaults docs/operator.md gives are the chart's" "${wrong[*]}" ""

# ---- what the ServiceAccounts may do ----
# can WANT SA-NAMESPACE SA KUBECTL-AUTH-CAN-I-ARGS...: "yes" or "no" from the API server.
# The authorizer learns each RBAC object from its own watch, so a right can arrive a
# moment after another (and a loaded API server can time a question out): an answer
# other than the one expected is asked again until a 15 s deadline.
answer_is() { # WANT SA-NAMESPACE SA VERB...
	local want=$1 sans=$2 sa=$3
	shift 3
	[[ $(kc auth can-i "$@" --as "system:serviceaccount:$sans:$sa" 2>/dev/null) == "$want" ]]
}
can() {
	local want=$1 sans=$2 sa=$3 got word
	shift 3
	env_wait 15 "$sa: can-i $* = $want" answer_is "$want" "$sans" "$sa" "$@"
	got=$(kc auth can-i "$@" --as "system:serviceaccount:$sans:$sa" 2>/dev/null)
	[[ $want == yes ]] && word=may || word="may not"
	check_eq "$sa $word $*" "${got:-error}" "$want"
}
# The API server's authorizer learns of new RBAC objects from a watch: wait until the
# last rule each release installed is in force before asking about the rest.
may() { [[ $(kc auth can-i "${@:3}" --as "system:serviceaccount:$1:$2" 2>/dev/null) == yes ]]; }
env_wait 20 "the RBAC of $REL" may "$NS" "$REL" patch "leases.coordination.k8s.io/$LEASE" -n "$NS"
env_wait 20 "the RBAC of $RELB" may "$NSB" "$RELB" create jobs.batch -n "$WNS"
env_wait 20 "the RBAC of $RELB" may "$NSB" "$RELB" patch "leases.coordination.k8s.io/$LEASE" -n "$NSB"
A=(yes "$NS" "$REL")
N=(no "$NS" "$REL")
ELSE=chart-$HEX-elsewhere # any namespace: release A acts in all of them
for v in get list watch; do can "${A[@]}" "$v" backuppolicies.lodestore.io -n "$ELSE"; done
for v in get list watch create delete; do can "${A[@]}" "$v" backups.lodestore.io -n "$ELSE"; done
can "${A[@]}" patch backuppolicies.lodestore.io --subresource status -n "$ELSE"
can "${A[@]}" patch backups.lodestore.io --subresource status -n "$ELSE"
for v in get list watch create delete; do can "${A[@]}" "$v" jobs.batch -n "$ELSE"; done
for v in get list watch; do can "${A[@]}" "$v" nodes; done
can "${A[@]}" create events -n "$ELSE"
for v in get update patch; do can "${A[@]}" "$v" "leases.coordination.k8s.io/$LEASE" -n "$NS"; done
can "${A[@]}" create leases.coordination.k8s.io -n "$NS"
for v in get list watch; do can "${A[@]}" "$v" backuprepositories.lodestore.io -n "$ELSE"; done
can "${A[@]}" patch backuprepositories.lodestore.io --subresource status -n "$ELSE"
# The cluster-wide install without repositorySecrets may get any Secret (NOTES.txt warns).
can "${A[@]}" get secrets -n "$ELSE"
for v in get list watch; do can "${A[@]}" "$v" restores.lodestore.io -n "$ELSE"; done
can "${A[@]}" patch restores.lodestore.io --subresource status -n "$ELSE"
# ... and no more.
for v in create update patch delete; do can "${N[@]}" "$v" restores.lodestore.io -n "$ELSE"; done
for v in list watch create update patch delete; do can "${N[@]}" "$v" secrets -n "$ELSE"; done
can "${N[@]}" list secrets --all-namespaces
can "${N[@]}" update backuprepositories.lodestore.io --subresource status -n "$ELSE"
for v in create update patch delete; do can "${N[@]}" "$v" backuppolicies.lodestore.io -n "$ELSE"; done
for v in update patch; do can "${N[@]}" "$v" backups.lodestore.io -n "$ELSE"; done
can "${N[@]}" update backups.lodestore.io --subresource status -n "$ELSE"
for v in create update patch delete; do can "${N[@]}" "$v" backuprepositories.lodestore.io -n "$ELSE"; done
for v in update patch; do can "${N[@]}" "$v" jobs.batch -n "$ELSE"; done
for v in create update patch delete; do can "${N[@]}" "$v" nodes; done
can "${A[@]}" list pods -n "$ELSE" # a backup Job's pods: how the agent ended (its result)
can "${A[@]}" watch pods -n "$ELSE"
for v in get create delete; do can "${N[@]}" "$v" pods -n "$ELSE"; done
for v in update patch delete; do can "${N[@]}" "$v" events -n "$ELSE"; done
can "${N[@]}" get "leases.coordination.k8s.io/$LEASE" -n "$ELSE"
can "${N[@]}" update leases.coordination.k8s.io/other-lease -n "$NS"
can "${N[@]}" delete "leases.coordination.k8s.io/$LEASE" -n "$NS"
can "${N[@]}" create deployments.apps -n "$NS"
can "${N[@]}" '*' '*' --all-namespaces
# Release B: the namespaced rights in $WNS only; nodes cluster-wide; its Lease at home.
B=(yes "$NSB" "$RELB")
NB=(no "$NSB" "$RELB")
for v in get list watch; do can "${B[@]}" "$v" backuppolicies.lodestore.io -n "$WNS"; done
for v in get list watch create delete; do can "${B[@]}" "$v" backups.lodestore.io -n "$WNS"; done
can "${B[@]}" patch backuppolicies.lodestore.io --subresource status -n "$WNS"
can "${B[@]}" patch backups.lodestore.io --subresource status -n "$WNS"
for v in get list watch; do can "${B[@]}" "$v" restores.lodestore.io -n "$WNS"; done
can "${NB[@]}" list restores.lodestore.io -n "$ELSE"
for v in get list watch create delete; do can "${B[@]}" "$v" jobs.batch -n "$WNS"; done
can "${B[@]}" create events -n "$WNS"
for v in get list watch; do can "${B[@]}" "$v" nodes; done
for v in get update patch; do can "${B[@]}" "$v" "leases.coordination.k8s.io/$LEASE" -n "$NSB"; done
for v in list watch; do can "${NB[@]}" "$v" backuppolicies.lodestore.io -n "$ELSE"; done
for v in list create; do can "${NB[@]}" "$v" backups.lodestore.io -n "$ELSE"; done
can "${NB[@]}" list backups.lodestore.io --all-namespaces
can "${NB[@]}" create jobs.batch -n "$ELSE"
can "${NB[@]}" create events -n "$ELSE"
# The narrow install (docs/security.md, "What the controller may read"): the one Secret its
# BackupRepository names, in the watched namespace, and no other.
can "${B[@]}" get secrets/main-s3 -n "$WNS"
can "${NB[@]}" get secrets/someone-elses -n "$WNS"
can "${NB[@]}" get secrets -n "$WNS"
can "${NB[@]}" get secrets/main-s3 -n "$ELSE"
can "${NB[@]}" get secrets/main-s3 -n "$NSB"
can "${B[@]}" list pods -n "$WNS"
can "${NB[@]}" list pods -n "$ELSE"
can "${NB[@]}" get secrets -n "$ELSE"
can "${NB[@]}" list secrets -n "$WNS"

# ---- the real controller as the chart's ServiceAccount ----
server=$(kc config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')
ca=$(kc config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority}')
# sa_kubeconfig SA-NAMESPACE SA FILE: a kubeconfig holding a token of the ServiceAccount.
sa_kubeconfig() {
	local token
	token=$(kc create token "$2" -n "$1" --duration 20m) || return 1
	cat >"$3" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: env
    cluster:
      server: $server
      certificate-authority: $ca
users:
  - name: $2
    user:
      token: $token
contexts:
  - name: sa
    context:
      cluster: env
      user: $2
      namespace: $1
current-context: sa
EOF
}
# start_chart_controller NAME JSON-FILE KUBECONFIG: the rendered args, but metrics on a free
# local port; POD_NAME as the Deployment sets it. Sets PID_<NAME> and PORT_<NAME>.
start_chart_controller() {
	local name=$1 args a run=() port
	mapfile -t args < <(dep "$2" | jq -r '.spec.template.spec.containers[0].args[]')
	for a in "${args[@]}"; do
		[[ $a == --metrics-addr=* ]] && a=--metrics-addr=127.0.0.1:0
		run+=("$a")
	done
	POD_NAME=$name-pod "$CTL" "${run[@]}" --kubeconfig "$3" >>"$T_TMP/$name.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$name=$!"
	env_wait 20 "controller $name to listen" grep -q 'metrics on 127.0.0.1:' "$T_TMP/$name.log" || {
		cat "$T_TMP/$name.log"
		return 1
	}
	port=$(grep -o 'metrics on 127.0.0.1:[0-9]*' "$T_TMP/$name.log" | tail -n 1 | cut -d: -f2)
	eval "PORT_$name=$port"
}
count() { kc -n "$1" get backups -l "$2" -o name | wc -l; }
backups_are() { [[ $(count "$1" "$2") -eq $3 ]]; }
phase_count() { # NS SELECTOR PHASE
	kc -n "$1" get backups -l "$2" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c "^$3\$"
}
all_succeeded() { [[ $(phase_count "$1" "$2" Succeeded) -eq $3 ]]; }
cond_is() { [[ $(env_get -n "$1" "backuppolicy/$2" "{.status.conditions[?(@.type==\"$3\")].status}") == "$4" ]]; }
phase_is() { [[ $(env_get -n "$1" "backup/$2" '{.status.phase}') == "$3" ]]; }
holder() { env_get -n "$1" "lease/$LEASE" '{.spec.holderIdentity}'; }
holder_is() { [[ $(holder "$1") == "$2" ]]; }
exited() { ! kill -0 "$1" 2>/dev/null; }
readyz() { curl -fsS -o /dev/null "http://127.0.0.1:$1/readyz"; }
# check_api NAME PORT: the controller's own count of API answers (/metrics) has its
# creates answered 201 and not one request refused (401, 403).
check_api() {
	local api
	api=$(curl -fsS "http://127.0.0.1:$2/metrics" | grep -E '^lodestore_api_requests_total\{')
	check_contains "$1: its creates were answered 201 (lodestore_api_requests_total)" "$api" \
		'verb="CREATE",code="201"'
	# Release A watches every namespace, so it also sees what earlier scripts left in
	# namespaces still being deleted: the API server refuses writes there with 403 ("is
	# being terminated"), which the controller counts as code="terminating", not as a
	# refusal (docs/operator.md), so every 401 or 403 here is one.
	local refused
	refused=$(grep -E 'code="40[13]"' <<<"$api")
	check_eq "$1: no request refused (lodestore_api_requests_total)" "$(printf '%s' "$refused" | tr '\n' ' ')" ""
}
# refusals NAME: the lines of the controller's log that name a refused request (a write
# into a namespace being deleted is logged as such, without the API server's words).
refusals() {
	grep -Ei 'forbidden|unauthori[sz]ed|\b40[13]\b' "$T_TMP/$1.log" | head -n 3
}
# stop_chart_controller NAME LEASE-NAMESPACE: SIGTERM; the leader hands the Lease over (a
# merge patch), so the holder is empty afterwards.
stop_chart_controller() {
	local pid rc
	eval "pid=\$PID_$1"
	kill -TERM "$pid"
	if env_wait 30 "controller $1 to exit" exited "$pid"; then
		wait "$pid"
		rc=$?
		check_eq "$1: exits 0 on SIGTERM" "$rc" 0
	else
		fail "$1: exits on SIGTERM within 30 s"
	fi
	check_eq "$1: the Lease was handed over on SIGTERM (lease patch allowed)" "$(holder "$2")" ""
	check_eq "$1: its log names no refused request" "$(refusals "$1")" ""
}

env_create_nodes 2 "$NS-n" "chart-test=$HEX"
sa_kubeconfig "$NS" "$REL" "$T_TMP/a.kubeconfig" || fail "a token for $REL"
env_repository "$NS" main # policies run only with their repository Ready
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: chart}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {chart-test: "$HEX"}
  schedule: {cron: "* * * * *", jitter: 0s}
EOF
if start_chart_controller a "$T_TMP/default.json" "$T_TMP/a.kubeconfig"; then
	env_wait 30 "controller a to take the Lease" holder_is "$NS" a-pod &&
		pass "a: takes the Lease in the release namespace" ||
		fail "a: takes the Lease in the release namespace" "holder: $(holder "$NS")" "$(tail -n 5 "$T_TMP/a.log")"
	env_wait 90 "the two Backups of the next slot" backups_are "$NS" lodestore.io/policy=chart 2 &&
		pass "a: creates the slot's Backups" || fail "a: creates the slot's Backups" "$(tail -n 5 "$T_TMP/a.log")"
	# The slot's label, so that a later slot cannot change the counts below.
	sel=lodestore.io/policy=chart,lodestore.io/slot=$(kc -n "$NS" get backups -l lodestore.io/policy=chart \
		-o jsonpath='{.items[0].metadata.labels.lodestore\.io/slot}')
	env_wait 60 "the two Backups to succeed" all_succeeded "$NS" "$sel" 2 &&
		pass "a: creates the Jobs and writes the Backups' status" ||
		fail "a: creates the Jobs and writes the Backups' status" "$(tail -n 5 "$T_TMP/a.log")"
	check_eq "a: one Job per Backup" "$(kc -n "$NS" get jobs -l "$sel" -o name | wc -l)" 2
	env_wait 30 "policy Ready=True" cond_is "$NS" chart Ready True &&
		pass "a: writes the policy's status" || fail "a: writes the policy's status"
	# BackupStarted, or CaughtUp when the slot passed between the policy's creation and
	# the controller's start (a run the controller was down for).
	# Events are paced (docs/operator.md): wait for them with a deadline.
	started_events() { env_get -n "$NS" events '{range .items[*]}{.reason}{"\n"}{end}' | grep -cE '^(BackupStarted|CaughtUp)$'; }
	env_wait 30 "the slot's Events" eval '[[ $(started_events) -ge 2 ]]'
	started=$(started_events)
	[[ $started -ge 2 ]] && pass "a: creates Events" || fail "a: creates Events" "BackupStarted or CaughtUp: $started"
	env_wait 10 "/readyz" readyz "$PORT_a" && pass "a: /readyz answers 200 (every list allowed)" ||
		fail "a: /readyz answers 200"
	check_api a "$PORT_a"
	stop_chart_controller a "$NS"
else
	fail "a: the controller starts as the chart's ServiceAccount"
fi

# Release B: a policy without a schedule in the watched namespace and a Backup made by
# hand, so no minute boundary is waited for.
sa_kubeconfig "$NSB" "$RELB" "$T_TMP/b.kubeconfig" || fail "a token for $RELB"
env_repository "$WNS" main
kc -n "$WNS" apply -f - >/dev/null <<EOF
apiVersion: lodestore.io/v1alpha1
kind: BackupPolicy
metadata: {name: by-hand}
spec:
  repository: main
  paths: [/etc]
  nodeSelector: {chart-test: "$HEX"}
---
apiVersion: lodestore.io/v1alpha1
kind: Backup
metadata: {name: by-hand-now}
spec: {policy: by-hand, host: $NS-n-1}
EOF
if start_chart_controller b "$T_TMP/b.json" "$T_TMP/b.kubeconfig"; then
	env_wait 30 "controller b to take the Lease" holder_is "$NSB" b-pod &&
		pass "b: takes the Lease in its release namespace" || fail "b: takes the Lease in its release namespace"
	env_wait 60 "the hand-made Backup to succeed" phase_is "$WNS" by-hand-now Succeeded &&
		pass "b: runs a Backup made by hand in the watched namespace (Job, status)" ||
		fail "b: runs a Backup made by hand in the watched namespace" "$(tail -n 5 "$T_TMP/b.log")"
	env_wait 30 "policy Ready=True" cond_is "$WNS" by-hand Ready True &&
		pass "b: writes the policy's status" || fail "b: writes the policy's status"
	env_wait 10 "/readyz" readyz "$PORT_b" && pass "b: /readyz answers 200 (every list allowed)" ||
		fail "b: /readyz answers 200"
	check_api b "$PORT_b"
	stop_chart_controller b "$NSB"
else
	fail "b: the controller starts as the chart's ServiceAccount"
fi

# ---- uninstall ----
helm uninstall "$REL" -n "$NS" --wait --timeout 60s >"$T_TMP/un.log" 2>&1 &&
	pass "helm uninstall (defaults)" || fail "helm uninstall (defaults)" "$(cat "$T_TMP/un.log")"
helm uninstall "$RELB" -n "$NSB" --wait --timeout 60s >"$T_TMP/un.log" 2>&1 &&
	pass "helm uninstall (watchNamespace)" || fail "helm uninstall (watchNamespace)" "$(cat "$T_TMP/un.log")"
check_eq "nothing of the releases is left" \
	"$(
		kc get clusterrole,clusterrolebinding -l "app.kubernetes.io/instance in ($REL,$RELB)" -o name
		kc get deployment,serviceaccount,service,role,rolebinding -A -l "app.kubernetes.io/instance in ($REL,$RELB)" -o name
	)" ""
check_eq "helm knows no release" "$(helm list -A -q | grep -c "^lodestore-$HEX")" 0

finish
