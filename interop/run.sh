#!/usr/bin/env bash
# The interop suite: our publisher (`grpc-config-dns serve`) publishes the
# records of interop/runner/cases.go, a grpc-go test backend serves on
# 127.0.0.1 and ::1, and four gRPC clients run against them: grpc-go's
# built-in dns resolver, our dnsconfig resolver, grpc-js (npm, pinned by
# interop/node/package-lock.json) and Python grpcio (Debian's
# python3-grpcio, gRPC C-core). It prints one line per check and
# "N passed, M failed", and exits non-zero on any failure.
#
# Installs what it needs on Debian when run as root (python3-grpcio,
# dnsutils; the npm packages with `npm ci`), then requires every client.
# Listens on 127.0.0.1 and ::1 only; takes about 30 seconds.
#
#   interop/run.sh                          run the suite
#   interop/run.sh -readme README.md        and write the compatibility table
#   interop/run.sh -check-readme README.md  and fail if the table is stale (CI)
#   interop/run.sh -hold                    serve everything, print the targets
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
/usr/bin/python3 -c 'import grpc' 2>/dev/null || need+=(python3-grpcio)
command -v dig >/dev/null || need+=(dnsutils)
if ((${#need[@]})); then
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "interop: missing ${need[*]}: install them (Debian/Ubuntu packages) or run this script as root" >&2
		exit 1
	fi
	echo "interop: installing ${need[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "interop: Node.js and npm are needed for the grpc-js client" >&2
	exit 1
fi
(cd interop/node && npm ci --no-audit --no-fund --loglevel=error)

exec go run ./interop/runner "$@"
