#!/usr/bin/env bash
# The interop suite: our publisher (`grpc-config-dns serve`) publishes the
# records of interop/runner/cases.go, a grpc-go test backend serves on
# 127.0.0.1 and ::1, and five gRPC clients run against them: grpc-go's
# built-in dns resolver, our dnsconfig resolver, grpc-js (npm, pinned by
# interop/node/package-lock.json), Python grpcio (Debian's
# python3-grpcio, gRPC C-core) and grpc-java (Debian's libgrpc-java). It
# prints one line per check and "N passed, M failed in T s" (with a warning
# when T is over CI's budget of 180 s), and exits non-zero on any failure.
#
# Installs what it needs on Debian when run as root (python3-grpcio,
# dnsutils, libgrpc-java and the jars it needs at run time, a JDK; the npm
# packages with `npm ci`), then requires every client, and compiles the
# grpc-java client (interop/java) into interop/java/classes. grpc-java
# needs root anyway: its JVM runs in a mount namespace of its own with our
# resolv.conf (see interop/README.md). Listens on 127.0.0.1 and ::1 only;
# takes about 30 seconds on 2 cores once installed.
#
#   interop/run.sh                          run the suite
#   interop/run.sh -readme docs/compatibility.md        and write the compatibility table
#   interop/run.sh -check-readme docs/compatibility.md  and fail if the table is stale (CI)
#   interop/run.sh -hold                    serve everything, print the targets
set -euo pipefail
cd "$(dirname "$0")/.."

# The grpc-java client's classpath, from Debian's jars: grpc-java and what
# it needs at run time but does not declare (gson, perfmark, Netty).
javalib=/usr/share/java
declare -A jars=(
	[grpc-api]=libgrpc-java [grpc-context]=libgrpc-java [grpc-core]=libgrpc-java [grpc-netty]=libgrpc-java
	[guava]=libguava-java [gson]=libgoogle-gson-java [perfmark-api]=libperfmark-java
)
for m in buffer codec codec-http codec-http2 codec-socks common handler handler-proxy resolver transport; do
	jars[netty-$m]=libnetty-java
done

need=()
/usr/bin/python3 -c 'import grpc' 2>/dev/null || need+=(python3-grpcio)
command -v dig >/dev/null || need+=(dnsutils)
command -v javac >/dev/null || need+=(default-jdk-headless)
command -v mount >/dev/null || need+=(mount)
for jar in "${!jars[@]}"; do
	[[ -f $javalib/$jar.jar ]] || need+=("${jars[$jar]}")
done
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u | grep .) || true
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

jarpath=$(for jar in "${!jars[@]}"; do echo "$javalib/$jar.jar"; done | sort | paste -sd:)
if [[ ! -f interop/java/classes/ProbeClient.class || interop/java/ProbeClient.java -nt interop/java/classes/ProbeClient.class ]]; then
	rm -rf interop/java/classes
	javac -Xlint:all,-classfile -Werror -d interop/java/classes -cp "$jarpath" interop/java/ProbeClient.java
fi

exec go run ./interop/runner -java-classpath "interop/java/classes:$jarpath" "$@"
