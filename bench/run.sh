#!/usr/bin/env bash
# Load benchmark of the publisher against CoreDNS (file plugin) and Knot DNS,
# one after another in one run, on the same zone (bench/publisher.yaml,
# printed by `grpc-config-dns zone` for the other two). Run by hand, not in
# CI; it takes about 4 x 3 x DURATION seconds plus the CoreDNS build.
#
# Each server is pinned to one core (SERVER_CPU) and dnsperf to another
# (CLIENT_CPU). For each test it prints dnsperf's queries per second and the
# server's CPU time per answered query, from the utime+stime of
# /proc/PID/stat before and after. Tests: A; TXT of 1.3 KB with EDNS 4096
# (every server may answer up to 4096 bytes over UDP); the same TXT without
# EDNS (answered TC=1); the TXT over TCP.
#
# CoreDNS is built from the Go module proxy into a temporary folder and
# deleted afterwards; nothing of it is kept.
#
# BEFORE=REV also builds the publisher at git revision REV and measures it
# in the same run, as server "before", to show what a change did to the
# answer path; SERVERS chooses which servers run (CoreDNS is built only
# when it is one of them).
#
#   bench/run.sh                 # DURATION=10 per test
#   DURATION=30 bench/run.sh
#   BEFORE=c58c471 SERVERS="grpc-config-dns before knot" bench/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
CLIENTS=${CLIENTS:-4}
OUTSTANDING=${OUTSTANDING:-200}
SERVERS=${SERVERS:-grpc-config-dns coredns knot${BEFORE:+ before}}
BEFORE=${BEFORE:-}

need=()
command -v dnsperf >/dev/null || need+=(dnsperf)
command -v knotd >/dev/null || need+=(knot)
command -v dig >/dev/null || need+=(dnsutils)
command -v taskset >/dev/null || need+=(util-linux)
if ((${#need[@]})); then
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "bench: missing ${need[*]}: install them or run as root on Debian" >&2
		exit 1
	fi
	made_policy=
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made_policy=1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	[[ -n $made_policy ]] && rm -f /usr/sbin/policy-rc.d
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "building grpc-config-dns into $tmp ..." >&2
go build -o "$tmp/grpc-config-dns" ./cmd/grpc-config-dns
if [[ " $SERVERS " == *" coredns "* ]]; then
	echo "building CoreDNS $COREDNS_VERSION (module proxy) ..." >&2
	GOBIN="$tmp/bin" go install "github.com/coredns/coredns@$COREDNS_VERSION"
fi
if [[ " $SERVERS " == *" before "* ]]; then
	[[ -n $BEFORE ]] || { echo "bench: server 'before' needs BEFORE=REV" >&2; exit 1; }
	echo "building grpc-config-dns at $BEFORE ..." >&2
	mkdir "$tmp/before-src"
	git archive "$BEFORE" | tar -x -C "$tmp/before-src"
	(cd "$tmp/before-src" && go build -o "$tmp/grpc-config-dns-before" ./cmd/grpc-config-dns)
fi
"$tmp/grpc-config-dns" zone --config bench/publisher.yaml --serial 1 >"$tmp/example.test.zone" 2>/dev/null

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# --- servers -------------------------------------------------------------
start_ours() {
	local port=$1 bin=${2:-$tmp/grpc-config-dns}
	taskset -c "$SERVER_CPU" "$bin" serve --config bench/publisher.yaml \
		--listen "127.0.0.1:$port" --state - --log-level warn >/dev/null 2>"$tmp/ours.log" &
	echo $!
}
start_coredns() {
	local port=$1
	cat >"$tmp/Corefile" <<CORE
example.test:$port {
	bind 127.0.0.1
	file $tmp/example.test.zone
}
CORE
	taskset -c "$SERVER_CPU" "$tmp/bin/coredns" -conf "$tmp/Corefile" -quiet >/dev/null 2>"$tmp/coredns.log" &
	echo $!
}
start_knot() {
	local port=$1
	mkdir -p "$tmp/knot"
	cat >"$tmp/knot.conf" <<KNOT
server:
    rundir: "$tmp/knot"
    listen: 127.0.0.1@$port
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
    udp-max-payload: 4096
database:
    storage: "$tmp/knot"
log:
  - target: stderr
    any: warning
zone:
  - domain: example.test
    file: "$tmp/example.test.zone"
    journal-content: none
    zonefile-sync: -1
KNOT
	taskset -c "$SERVER_CPU" knotd -c "$tmp/knot.conf" >/dev/null 2>"$tmp/knot.log" &
	echo $!
}

echo "echo.example.test A" >"$tmp/q-a"
echo "_grpc_config.big.example.test TXT" >"$tmp/q-txt"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# measure SERVER PID PORT TEST QUERYFILE DNSPERF-FLAGS...
results=()
measure() {
	local server=$1 pid=$2 port=$3 test=$4 qfile=$5
	shift 5
	local before after out qps done lost
	before=$(cpu_ticks "$pid")
	out=$(taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$qfile" -l "$DURATION" \
		-c "$CLIENTS" -q "$OUTSTANDING" "$@" 2>&1)
	after=$(cpu_ticks "$pid")
	qps=$(awk '/Queries per second/ {print $4}' <<<"$out")
	done=$(awk '/Queries completed/ {print $3}' <<<"$out")
	lost=$(awk '/Queries lost/ {print $3}' <<<"$out")
	local us
	us=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$done" 'BEGIN { printf "%.2f", n ? t / hz * 1e6 / n : 0 }')
	printf '%-22s %-16s %12.0f %10s %8s\n' "$test" "$server" "$qps" "$us" "$lost" >&2
	results+=("$test|$server|$qps|$us")
}

check() {
	local server=$1 port=$2
	for i in $(seq 50); do
		dig +short +time=1 +tries=1 @127.0.0.1 -p "$port" A echo.example.test 2>/dev/null | grep -q 127.0.0.1 && break
		sleep 0.1
	done
	local a txt tc
	a=$(dig +short @127.0.0.1 -p "$port" A echo.example.test)
	txt=$(dig +bufsize=4096 +ignore @127.0.0.1 -p "$port" TXT _grpc_config.big.example.test | grep -c '^[^;].*IN.TXT' || true)
	tc=$(dig +noedns +ignore @127.0.0.1 -p "$port" TXT _grpc_config.big.example.test | grep -c 'flags:.* tc' || true)
	if [[ $a != 127.0.0.1 || $txt != 1 || $tc != 1 ]]; then
		echo "bench: $server does not answer as expected (A=$a, full TXT at 4096=$txt, TC without EDNS=$tc)" >&2
		exit 1
	fi
}

printf '%-22s %-16s %12s %10s %8s\n' test server qps "CPU us/q" lost >&2
for server in $SERVERS; do
	port=$(free_port)
	case $server in
	grpc-config-dns) pid=$(start_ours "$port") ;;
	before) pid=$(start_ours "$port" "$tmp/grpc-config-dns-before") ;;
	coredns) pid=$(start_coredns "$port") ;;
	knot) pid=$(start_knot "$port") ;;
	esac
	pids+=("$pid")
	check "$server" "$port"
	measure "$server" "$pid" "$port" "A/UDP" "$tmp/q-a"
	measure "$server" "$pid" "$port" "TXT1.3K/UDP/EDNS4096" "$tmp/q-txt" -e
	measure "$server" "$pid" "$port" "TXT1.3K/UDP/noEDNS(TC)" "$tmp/q-txt"
	measure "$server" "$pid" "$port" "TXT1.3K/TCP" "$tmp/q-txt" -m tcp
	kill "$pid"
	wait "$pid" 2>/dev/null || true
done

echo
echo "ratios (grpc-config-dns / other; qps higher is better, CPU lower is better):"
for test in "A/UDP" "TXT1.3K/UDP/EDNS4096" "TXT1.3K/UDP/noEDNS(TC)" "TXT1.3K/TCP"; do
	declare -A q=() c=()
	for r in "${results[@]}"; do
		IFS='|' read -r t s qq cc <<<"$r"
		[[ $t == "$test" ]] && q[$s]=$qq && c[$s]=$cc
	done
	line=$(printf '  %-22s' "$test")
	for other in $SERVERS; do
		[[ $other == grpc-config-dns ]] && continue
		line+=$(awk -v o="$other" -v qo="${q[grpc-config-dns]:-0}" -v qx="${q[$other]:-0}" \
			-v co="${c[grpc-config-dns]:-0}" -v cx="${c[$other]:-0}" 'BEGIN {
			if (qx == 0 || cx == 0) { printf "   %s: -", o; exit }
			printf "   qps x%.2f, CPU/query x%.2f %s", qo/qx, co/cx, o }')
	done
	echo "$line"
done
