#!/usr/bin/env bash
# The tests that need a real etcd: the API conformance and concurrency
# tests on the etcd backend, and replicas of serve on one etcd. Installs
# Debian's etcd-server (etcd 3.4) when run as root, then requires it (a
# missing etcd fails instead of skipping). Each test starts its own etcd
# on 127.0.0.1 with a temporary data directory. About a minute.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v etcd >/dev/null; then
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "etcdtest: etcd is missing: install Debian's etcd-server package, or run this script as root" >&2
		exit 1
	fi
	echo "etcdtest: installing etcd-server" >&2
	# Keep the package's own etcd service from starting.
	made_policy=
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		made_policy=1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >/dev/null
	[[ -n $made_policy ]] && rm -f /usr/sbin/policy-rc.d
fi

GRPC_CONFIG_DNS_ETCD=1 exec go test -count=1 -timeout 300s -v -run 'Conformance|Concurrency|Etcd|Replica' \
	./store/... ./dnspub/... ./cmd/grpc-config-dns/ "$@"
