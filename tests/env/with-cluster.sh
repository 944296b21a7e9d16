#!/usr/bin/env bash
# with-cluster.sh CMD...: brings the local environment up, runs CMD, and brings
# it down again whatever happened (exit, failure, Ctrl-C). Exits with CMD's
# status, or 1 if the environment did not come up or did not go down cleanly.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
on_exit() {
	local rc=$?
	bash "$here/cluster-down.sh" || rc=1
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM
bash "$here/cluster-up.sh" || exit 1
"$@"
