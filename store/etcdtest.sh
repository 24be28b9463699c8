#!/usr/bin/env bash
# The tests that need a real etcd: the API conformance and concurrency
# tests on the etcd backend (policies and nested zones too), and replicas
# of serve on one etcd. Installs Debian's etcd-server (etcd 3.4) when run
# as root, then requires it (a missing etcd fails instead of skipping).
# Each test starts its own etcd on 127.0.0.1 with a temporary data
# directory. The concurrency test runs its 8 writers and 8 readers for
# 30 s on each backend (GRPC_CONFIG_DNS_SOAK; 2 s under plain go test).
# About two minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

internal/etcdtest/install.sh

GRPC_CONFIG_DNS_SOAK="${GRPC_CONFIG_DNS_SOAK:-30s}" GRPC_CONFIG_DNS_ETCD=1 exec go test -count=1 -timeout 400s -v \
	-run 'Conformance|Concurrency|Etcd|Replica|Polic|Nested|Batch|History|Snapshot|DryRunEveryWrite|Patch' ./store/... ./dnspub/... ./cmd/grpc-config-dns/ "$@"
