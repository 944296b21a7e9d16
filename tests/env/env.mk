# The local test environment (tests/env/, docs/testing.md): etcd, kube-apiserver,
# kube-controller-manager, KWOK and versitygw on 127.0.0.1, built from their Go
# modules into ${LODE_CACHE:-~/.cache/lodestore}/bin and reused from there.
#
#   make env-tools      build the tools, or find them in the cache
#   make cluster-up     start the environment (reuses a healthy running one)
#   make cluster-down   stop it; nothing is left running or listening
#   make env-test       cluster-up, tests/e2e/test_env.sh, cluster-down (always)

.PHONY: env-tools cluster-up cluster-down env-test

env-tools:
	tests/env/build-tools.sh

cluster-up:
	tests/env/cluster-up.sh

cluster-down:
	tests/env/cluster-down.sh

env-test:
	tests/env/with-cluster.sh bash tests/e2e/test_env.sh
