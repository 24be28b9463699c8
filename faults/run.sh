#!/usr/bin/env bash
# The fault-injection suite (see faults/doc.go): the real binary, killed,
# starved of disk, and fed hostile answers, on 127.0.0.1 only. Needs root
# for the tmpfs mounts and installs etcd (Debian's etcd-server) for the
# replica test; as root every test must run. About two minutes (the
# appending writer waits out the 30 s settle period).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -eq 0 ]]; then
	export FAULTS_REQUIRE=1
	internal/etcdtest/install.sh
	export GRPC_CONFIG_DNS_ETCD=1
fi
exec go test -tags faults -count=1 -timeout 300s -v ./faults/ "$@"
