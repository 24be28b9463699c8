#!/usr/bin/env bash
# Benchmark of the admin API of `serve --store` (bench/storebench): N
# services loaded, then PUT, GET, a 500-item list page with NotOlderThan
# (and the pages after it) and the delay from an acknowledged PUT to its
# new TXT answered, each at p50/p99, one request at a time. Runs on the
# embedded store, then on etcd (Debian's etcd-server, started here on
# 127.0.0.1 with its data in a temporary directory). By hand, not in CI:
# about 15 minutes for N=100000.
#
#   bench/store.sh                 # N=100000
#   N=10000 bench/store.sh         # a quick look
#   BACKENDS=etcd bench/store.sh
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-100000}
BACKENDS=${BACKENDS:-embedded etcd}
SAMPLES=${SAMPLES:-2000}

tmp=$(mktemp -d)
etcd_pid=
cleanup() {
	[[ -n $etcd_pid ]] && kill "$etcd_pid" 2>/dev/null && wait "$etcd_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/grpc-config-dns" ./cmd/grpc-config-dns
go build -o "$tmp/storebench" ./bench/storebench
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"

for backend in $BACKENDS; do
	echo "== $backend, $N services"
	case $backend in
	embedded)
		"$tmp/storebench" -bin "$tmp/grpc-config-dns" -n "$N" -samples "$SAMPLES" -store "$tmp/store"
		;;
	etcd)
		internal/etcdtest/install.sh
		etcd --version | head -1
		etcd --data-dir "$tmp/etcd" --name bench --listen-client-urls http://127.0.0.1:23790 \
			--advertise-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23800 \
			--initial-advertise-peer-urls http://127.0.0.1:23800 --initial-cluster bench=http://127.0.0.1:23800 \
			--quota-backend-bytes 8589934592 --log-level warn >"$tmp/etcd.log" 2>&1 &
		etcd_pid=$!
		sleep 2
		"$tmp/storebench" -bin "$tmp/grpc-config-dns" -n "$N" -samples "$SAMPLES" -store etcd://127.0.0.1:23790/bench
		kill "$etcd_pid"; wait "$etcd_pid" 2>/dev/null || true; etcd_pid=
		;;
	*)
		echo "unknown backend $backend: embedded or etcd" >&2; exit 2
		;;
	esac
done
