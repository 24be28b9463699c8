#!/usr/bin/env bash
# Scale benchmark of the publisher against Knot DNS and NSD, one after the
# other in one run, on the same zone of N services (an address and a ~300
# byte service config each, from bench/fleetgen; `grpc-config-dns zone`
# prints it for the other two). Run by hand, not in CI.
#
# For each N and server it measures:
#   start     process start → the last service's TXT answered: the
#             median of STARTS first starts (default 5), the servers
#             taking turns, as the machine's load comes and goes
#   peak      memory when the last service is answered (PSS of the
#             server's processes)
#   rss       memory 3 s later: ours gives a start's garbage back to the
#             system in the background, after it serves
#   reload    one service changed (ours: the config renamed over; Knot:
#             knotc zone-reload; NSD: SIGHUP) → its new TXT answered
#   rss10     memory after 10 such reloads
#   load      dnsperf at LOAD_QPS on random TXT names, 10 reloads
#             meanwhile: queries answered per second and queries lost
#   restart   stopped, then started again on the same config: → the last
#             service's TXT answered (ours answers from the answers the
#             last run kept, a warm start; Knot and NSD read the zone
#             file again)
#   rssR      memory after that restart, once ours has read the config
#             in the background (3 s later for the others)
# then prints each figure of ours as a ratio to Knot's (and NSD's).
#
#   bench/scale.sh                       # SIZES="10000 100000"
#   SIZES=1000 RELOADS=3 bench/scale.sh  # a quick look
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-10000 100000}
RELOADS=${RELOADS:-10}
STARTS=${STARTS:-5}
LOAD_QPS=${LOAD_QPS:-20000}
SERVERS=${SERVERS:-grpc-config-dns knot nsd}

need=()
command -v dnsperf >/dev/null || need+=(dnsperf)
command -v knotd >/dev/null || need+=(knot)
command -v nsd >/dev/null || need+=(nsd)
command -v dig >/dev/null || need+=(dnsutils)
if ((${#need[@]})); then
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "scale: missing ${need[*]}: install them or run as root on Debian" >&2
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
pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/grpc-config-dns" ./cmd/grpc-config-dns
go build -o "$tmp/fleetgen" ./bench/fleetgen

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
now() { date +%s.%N; }
# pss PID: the proportional memory of PID and its descendants, in MB.
pss() {
	local total=0 p
	for p in $1 $(pgrep -P "$1" || true); do
		total=$((total + $(awk '/^Pss:/ {s += $2} END {print s+0}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)))
	done
	echo $((total / 1024))
}
# wait_txt PORT NAME REGEX: polls from one process (bench/answered.py)
# every millisecond until NAME's TXT answer matches: a dig per poll costs
# 20 ms of CPU, which a starting server on two cores pays for.
wait_txt() {
	python3 bench/answered.py "$1" "$2" "$3" -- true >/dev/null || {
		echo "scale: $2 never answered with $3" >&2
		exit 1
	}
}

start_server() { # SERVER PORT N
	local server=$1 port=$2 n=$3
	case $server in
	grpc-config-dns)
		"$tmp/grpc-config-dns" serve --config "$tmp/fleet.yaml" --listen "127.0.0.1:$port" \
			--state "$tmp/fleet.serial" --log-level info >/dev/null 2>"$tmp/ours.log" &
		;;
	knot)
		rm -rf "$tmp/knot" && mkdir -p "$tmp/knot"
		cat >"$tmp/knot.conf" <<KNOT
server:
    rundir: "$tmp/knot"
    listen: 127.0.0.1@$port
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
control:
    listen: "$tmp/knot/knot.sock"
database:
    storage: "$tmp/knot"
log:
  - target: stderr
    any: warning
zone:
  - domain: fleet.test
    file: "$tmp/fleet.test.zone"
    journal-content: none
    zonefile-sync: -1
KNOT
		knotd -c "$tmp/knot.conf" >/dev/null 2>"$tmp/knot.log" &
		;;
	nsd)
		rm -rf "$tmp/nsd" && mkdir -p "$tmp/nsd"
		cat >"$tmp/nsd.conf" <<NSD
server:
    ip-address: 127.0.0.1@$port
    server-count: 1
    username: ""
    zonesdir: "$tmp"
    database: ""
    pidfile: "$tmp/nsd/nsd.pid"
    xfrdfile: "$tmp/nsd/xfrd.state"
    zonelistfile: "$tmp/nsd/zone.list"
    logfile: "$tmp/nsd.log"
zone:
    name: fleet.test
    zonefile: fleet.test.zone
NSD
		nsd -d -c "$tmp/nsd.conf" >/dev/null 2>>"$tmp/nsd.log" &
		;;
	esac
	pid=$!
}

# first_start SERVER N: starts SERVER on version a of the fleet of N, with
# no state (a first start), on a new port ($port), and adds the seconds to
# its last service's TXT answer to STARTED[SERVER].
first_start() {
	local server=$1 n=$2 t0 t1
	rm -f "$tmp/fleet.serial" "$tmp/fleet.answers"
	cp "$tmp/fleet-a.yaml" "$tmp/fleet.yaml"
	cp "$tmp/fleet-a.zone" "$tmp/fleet.test.zone"
	port=$(free_port)
	t0=$(now)
	start_server "$server" "$port" "$n"
	wait_txt "$port" "_grpc_config.svc$((n - 1)).fleet.test" "Service$((n - 1))"
	t1=$(now)
	STARTED[$server]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') "
}

# prepare SERVER VERSION: write, untimed, the config (ours) or zone file
# (Knot, NSD) of version V beside the live one: even versions have every
# timeout 1s, odd ones service N/2 at 2s; the zone files carry serial V+1.
prepare() {
	local server=$1 v=$2 src=a
	((v % 2)) && src=b
	case $server in
	grpc-config-dns) cp "$tmp/fleet-$src.yaml" "$tmp/next" ;;
	*) sed "0,/ 1 *; serial/s// $((v + 1)) ; serial/" "$tmp/fleet-$src.zone" >"$tmp/next" ;;
	esac
}

# publish SERVER: put the prepared version live and tell the server.
publish() {
	case $1 in
	grpc-config-dns)
		mv "$tmp/next" "$tmp/fleet.yaml"
		kill -HUP "$pid"
		;;
	knot)
		mv "$tmp/next" "$tmp/fleet.test.zone"
		knotc -c "$tmp/knot.conf" zone-reload fleet.test >/dev/null
		;;
	nsd)
		mv "$tmp/next" "$tmp/fleet.test.zone"
		kill -HUP "$pid"
		;;
	esac
}

declare -A R
printf '%-8s %-16s %9s %8s %8s %9s %8s %12s %8s %9s %8s\n' N server start peak rss reload rss10 "qps(load)" lost restart rssR >&2
for n in $SIZES; do
	changed="_grpc_config.svc$((n / 2)).fleet.test"
	last="_grpc_config.svc$((n - 1)).fleet.test"
	awk -v n="$n" 'BEGIN { srand(1); for (i = 0; i < 100000; i++) printf "_grpc_config.svc%d.fleet.test TXT\n", int(rand() * n) }' >"$tmp/queries"
	"$tmp/fleetgen" -n "$n" >"$tmp/fleet-a.yaml"
	"$tmp/fleetgen" -n "$n" -change $((n / 2)) >"$tmp/fleet-b.yaml"
	for v in a b; do
		"$tmp/grpc-config-dns" zone --config "$tmp/fleet-$v.yaml" --serial 1 >"$tmp/fleet-$v.zone" 2>/dev/null
	done
	# First starts, the servers taking turns: all but the last of each
	# server's are here, the last starts the run below.
	declare -A STARTED=()
	for ((i = 1; i < STARTS; i++)); do
		for server in $SERVERS; do
			first_start "$server" "$n"
			kill "$pid" && wait "$pid" 2>/dev/null || true
			pid=
		done
	done
	for server in $SERVERS; do
		first_start "$server" "$n"
		start=$(tr ' ' '\n' <<<"${STARTED[$server]}" | sort -n | awk 'NF { v[++n] = $1 } END { printf "%.2f", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }')
		echo "scale: $server first starts (s): ${STARTED[$server]}" >&2
		peak=$(pss "$pid")
		sleep 3
		rss=$(pss "$pid")
		# One reload alone, timed by one process that publishes and then
		# asks every millisecond (a dig per poll costs 20 ms).
		prepare "$server" 1
		reload=$(python3 bench/answered.py "$port" "$changed" 'timeout[^0-9]{1,8}2(\.0+)?s' -- \
			env tmp="$tmp" pid="$pid" bash -c "$(declare -f publish); publish $server")
		# Reloads under load.
		dnsperf -s 127.0.0.1 -p "$port" -d "$tmp/queries" -Q "$LOAD_QPS" -l $((RELOADS * 3 + 2)) -c 4 -q 500 >"$tmp/dnsperf.out" 2>&1 &
		perf=$!
		sleep 1
		for v in $(seq 2 $((RELOADS + 1))); do
			prepare "$server" "$v"
			publish "$server"
			if ((v % 2)); then
				wait_txt "$port" "$changed" 'timeout[^0-9]{1,8}2(\.0+)?s'
			else
				wait_txt "$port" "$changed" 'timeout[^0-9]{1,8}1(\.0+)?s'
			fi
			sleep 1
		done
		wait "$perf" || true
		rss10=$(pss "$pid")
		qps=$(awk '/Queries per second/ {printf "%.0f", $4}' "$tmp/dnsperf.out")
		lost=$(awk '/Queries lost/ {print $3}' "$tmp/dnsperf.out")
		kill "$pid" && wait "$pid" 2>/dev/null || true
		pid=
		# A restart on the same config.
		t0=$(now)
		start_server "$server" "$port" "$n"
		wait_txt "$port" "$last" "Service$((n - 1))"
		t1=$(now)
		restart=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
		if [[ $server == grpc-config-dns ]]; then
			grep -q 'answering from the answers kept' "$tmp/ours.log" || echo "scale: the restart was not warm:" "$(grep -m1 'not starting from' "$tmp/ours.log")" >&2
			for _ in $(seq 1200); do
				grep -q 'msg="config loaded".*why=start' "$tmp/ours.log" && break
				sleep 0.1
			done
		fi
		sleep 3
		rssR=$(pss "$pid")
		kill "$pid" && wait "$pid" 2>/dev/null || true
		pid=
		printf '%-8s %-16s %8ss %6sMB %6sMB %8ss %6sMB %12s %8s %8ss %6sMB\n' "$n" "$server" "$start" "$peak" "$rss" "$reload" "$rss10" "$qps" "$lost" "$restart" "$rssR" >&2
		R[$n,$server]="$start $rss $reload $rss10 $qps $peak $restart $rssR"
	done
done

echo
echo "ratios, grpc-config-dns / Knot (/ NSD); lower is better but for qps:"
for n in $SIZES; do
	for other in knot nsd; do
		[[ -n ${R[$n,$other]:-} && -n ${R[$n,grpc-config-dns]:-} ]] || continue
		read -r s1 r1 l1 m1 q1 p1 t1 u1 <<<"${R[$n,grpc-config-dns]}"
		read -r s2 r2 l2 m2 q2 p2 t2 u2 <<<"${R[$n,$other]}"
		awk -v n="$n" -v o="$other" -v s1="$s1" -v s2="$s2" -v r1="$r1" -v r2="$r2" -v l1="$l1" -v l2="$l2" \
			-v m1="$m1" -v m2="$m2" -v q1="$q1" -v q2="$q2" -v p1="$p1" -v p2="$p2" -v t1="$t1" -v t2="$t2" -v u1="$u1" -v u2="$u2" 'BEGIN {
			printf "  N=%-7s vs %-5s start x%.2f  peak x%.2f  rss x%.2f  reload x%.2f  rss after reloads x%.2f (x%.2f its own rss)  qps under reloads x%.2f  restart x%.2f  rss after restart x%.2f\n",
				n, o, s1/s2, p1/p2, r1/r2, l1/l2, m1/m2, m1/r1, q1/q2, t1/t2, u1/u2 }'
	done
done
