#!/usr/bin/env bash
# docs/operator.md shows what `kubectl get bp` and `kubectl get bk` print: the test
# reads each example table from the page, makes a BackupPolicy and a Backup with the
# values of its row (the status written by hand through the status subresource, no
# controller), asks the real API server of tests/env, and compares header and row
# column by column. AGE is the one column a page cannot hold still: it must be an
# age on both sides.
#
# Run after `make cluster-up`, or as
#   tests/env/with-cluster.sh bash tests/e2e/test_printer_columns.sh
set -u
source "$(dirname "$0")/../env/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DOC=$ROOT/docs/operator.md
NS=columns-$(openssl rand -hex 3)

cleanup() {
	kc delete namespace "$NS" --wait=false >/dev/null 2>&1
	rm -rf "$T_TMP"
}
trap cleanup EXIT

# The two lines of the code block that follows the line containing $1 in the page.
doc_table() {
	awk -v marker="$1" '
		index($0, marker) {found = 1; next}
		found && /^```/ {if (inblock) exit; inblock = 1; next}
		inblock {print}
	' "$DOC"
}
# The cells of a table line, one per line, cut where the header's columns start
# (kubectl aligns every cell under its header, and an empty cell stays empty).
columns() { # header line
	local h=$1 line=$2 starts=() i end cell
	while IFS=: read -r off _; do starts+=("$off"); done < <(grep -boE '[^ ]+( [^ ]+)*' <<<"$h")
	for ((i = 0; i < ${#starts[@]}; i++)); do
		if ((i + 1 < ${#starts[@]})); then end=${starts[i + 1]}; else end=${#line}; fi
		cell=${line:${starts[i]}:$((end - starts[i]))}
		cell=${cell%"${cell##*[! ]}"}
		echo "$cell"
	done
}
# Column $2 (by header name) of the row $3 under header $1.
column_of() {
	local i
	i=$(columns "$1" "$1" | grep -nx -- "$2" | cut -d: -f1)
	[[ -n $i ]] && columns "$1" "$3" | sed -n "${i}p"
}
# Sets doc, dh (its header) and dr (its row) to the page's table of `kubectl get $1`.
read_doc_table() {
	doc=$(doc_table "\`kubectl get $1\` shows")
	dh=$(sed -n 1p <<<"$doc") dr=$(sed -n 2p <<<"$doc")
	if [[ -z $dr ]]; then
		fail "docs/operator.md has a table of kubectl get $1"
		finish
		exit 1
	fi
}
compare_tables() { # what doc-table kubectl-output
	local what=$1 doc=$2 got=$3 dh dr gh gr dage gage
	dh=$(sed -n 1p <<<"$doc") dr=$(sed -n 2p <<<"$doc")
	gh=$(sed -n 1p <<<"$got") gr=$(sed -n 2p <<<"$got")
	check_eq "$what: the header is the page's" "$gh" "$dh"
	check_eq "$what: the row is the page's, but for AGE" \
		"$(columns "$gh" "$gr" | sed '$d' | tr '\n' '|')" "$(columns "$dh" "$dr" | sed '$d' | tr '\n' '|')"
	dage=$(columns "$dh" "$dr" | tail -n 1) gage=$(columns "$gh" "$gr" | tail -n 1)
	if [[ $gage =~ ^[0-9]+[smhdy]$ && $dage =~ ^[0-9]+[smhdy]$ ]]; then
		pass "$what: AGE is an age on both sides"
	else
		fail "$what: AGE is an age on both sides" "page: $dage" "kubectl: $gage"
	fi
}

env_crds
kc create namespace "$NS" >/dev/null

# ---- kubectl get bp ----
read_doc_table bp
name=$(column_of "$dh" NAME "$dr")
cat >"$T_TMP/bp.json" <<EOF
{"apiVersion": "lodestore.io/v1alpha1", "kind": "BackupPolicy",
 "metadata": {"name": "$name", "namespace": "$NS"},
 "spec": {"repository": "main", "paths": ["/etc"],
          "schedule": {"cron": "$(column_of "$dh" SCHEDULE "$dr")", "timezone": "$(column_of "$dh" ZONE "$dr")"}}}
EOF
kc create -f "$T_TMP/bp.json" >/dev/null
kc -n "$NS" patch bp "$name" --subresource=status --type=merge -p "{\"status\": {
	\"hosts\": $(column_of "$dh" HOSTS "$dr"), \"overdue\": $(column_of "$dh" OVERDUE "$dr"),
	\"nextRun\": \"$(column_of "$dh" 'NEXT RUN' "$dr")\",
	\"lastRun\": {\"backup\": \"$name-1\", \"host\": \"node-1\", \"time\": \"2026-12-02T00:30:00Z\",
	              \"phase\": \"$(column_of "$dh" 'LAST RUN' "$dr")\"}}}" >/dev/null
compare_tables "kubectl get bp" "$doc" "$(kc -n "$NS" get bp "$name")"

# ---- kubectl get bk ----
read_doc_table bk
bk=$(column_of "$dh" NAME "$dr")
reason=$(column_of "$dh" REASON "$dr")
cat >"$T_TMP/bk.json" <<EOF
{"apiVersion": "lodestore.io/v1alpha1", "kind": "Backup",
 "metadata": {"name": "$bk", "namespace": "$NS"},
 "spec": {"policy": "$(column_of "$dh" POLICY "$dr")", "host": "$(column_of "$dh" HOST "$dr")",
          "slot": "$(column_of "$dh" SLOT "$dr")", "trigger": "$(column_of "$dh" TRIGGER "$dr")"}}
EOF
kc create -f "$T_TMP/bk.json" >/dev/null
status="{\"phase\": \"$(column_of "$dh" PHASE "$dr")\", \"duration\": \"$(column_of "$dh" DURATION "$dr")\""
[[ -n $reason ]] && status+=", \"reason\": \"$reason\""
kc -n "$NS" patch bk "$bk" --subresource=status --type=merge -p "{\"status\": $status}}" >/dev/null
compare_tables "kubectl get bk" "$doc" "$(kc -n "$NS" get bk "$bk")"

# The page says NEXT RUN is an absolute time in UTC, as the status holds it.
check_contains "the page explains the absolute NEXT RUN" "$(tr '\n' ' ' <"$DOC")" "NEXT RUN is the time in UTC"
finish
