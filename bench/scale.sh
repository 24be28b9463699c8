#!/usr/bin/env bash
# Scale benchmark of the publisher against Knot DNS and NSD, one after the
# other in one run, on the same zone of N services (an address and a ~300
# byte service config each, from bench/fleetgen; `grpc-config-dns zone`
# prints it for the other two). Run by hand, not in CI.
#
# Ours is measured in the shapes users run (SHAPES) and the ways it is fed
# (MODES), one row per shape and mode; Knot and NSD serve the zone file of
# the plain YAML fleet (they have no shapes: their records are the same).
#
#   SHAPES   how the fleet is written (default "yaml json policies"):
#            yaml           block YAML, as before
#            json           the same fleet as JSON
#            policies       YAML with three policies (zone-wide, by label:
#                           every tenth service, by name), fleetgen -policies
#            json-policies  JSON with the three policies
#   MODES    how ours is fed (default "file embedded etcd"):
#            file           serve --config FILE (reloads: the file renamed
#                           over, then SIGHUP)
#            embedded       serve --store DIR, loaded by `import`
#            etcd           serve --store etcd://…, loaded by `import`; an
#                           etcd (Debian's etcd-server, installed by
#                           internal/etcdtest/install.sh) is started here
#                           on 127.0.0.1 with its data in a temporary
#                           directory, and stopped at exit
#
# For each N and row it measures:
#   import    store modes: `import` of the whole fleet into a fresh store
#             (a new directory, or a new etcd prefix) → the command done
#             (every batch acknowledged); the log line after the table
#             also gives → the last service's TXT answered
#   start     process start → the last service's TXT answered: the
#             median of STARTS first starts (default 5), all rows taking
#             turns, as the machine's load comes and goes. Store modes:
#             serve --store started on the loaded store
#   peak      memory when the last service is answered (PSS of the
#             server's processes; ours on etcd: without etcd's)
#   rss       memory 3 s later: ours gives a start's garbage back to the
#             system in the background, after it serves
#   change    one service changed → its new TXT answered (ours, file:
#             the config renamed over and SIGHUP; ours, store: a PUT of
#             the service with curl, the object from fleetgen -object;
#             Knot: knotc zone-reload; NSD: SIGHUP)
#   rss10     memory after 10 such changes
#   load      dnsperf at LOAD_QPS on random TXT names, 10 changes
#             meanwhile: queries answered per second and queries lost
#   restart   stopped, then started again: → the last service's TXT
#             answered (ours reads the config or the store again, as Knot
#             and NSD read their zone file again)
#   rssR      memory 3 s after that restart
#   put p99   store modes: PUT sent → the new TXT answered, p99 of
#             PUT_SAMPLES PUTs one at a time (bench/storebench -ops dns on
#             the row's store, after the rest; 0 skips it)
# then prints each figure of ours as a ratio to Knot's (and NSD's), each
# figure of a json/policies row as a ratio to the yaml row of its mode,
# and which of issue's targets each row misses (start and rss ≤ 2× Knot;
# file: change ≤ 0.1 s, rss10 ≤ 1.1× its rss; store: put p99 ≤ 50 ms,
# import ≤ 10 s embedded, ≤ 60 s etcd; 0 queries lost; other shapes
# within 1.3× of the yaml row).
#
# About 15 minutes for N=100000 with the defaults on two busy cores, and a
# third of that for N=10000.
#
#   bench/scale.sh                       # SIZES="10000 100000", every row
#   SIZES=1000 RELOADS=3 STARTS=1 bench/scale.sh  # a quick look
#   SHAPES=yaml MODES=file bench/scale.sh         # the rows before shapes
#   SIZES=100000 MODES="embedded etcd" SHAPES="yaml json-policies" bench/scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-10000 100000}
SHAPES=${SHAPES:-yaml json policies}
MODES=${MODES:-file embedded etcd}
RELOADS=${RELOADS:-10}
STARTS=${STARTS:-5}
LOAD_QPS=${LOAD_QPS:-20000}
PUT_SAMPLES=${PUT_SAMPLES:-200}
SERVERS=${SERVERS:-grpc-config-dns knot nsd}

for s in $SHAPES; do
	case $s in yaml | json | policies | json-policies) ;; *)
		echo "scale: SHAPES: $s is none of yaml, json, policies, json-policies" >&2
		exit 2
		;;
	esac
done
for m in $MODES; do
	case $m in file | embedded | etcd) ;; *)
		echo "scale: MODES: $m is none of file, embedded, etcd" >&2
		exit 2
		;;
	esac
done
# The rows, in SERVERS' order: ours is one row per mode and shape.
rows=()
for server in $SERVERS; do
	case $server in
	grpc-config-dns)
		for m in $MODES; do
			for s in $SHAPES; do rows+=("ours/$m/$s"); done
		done
		;;
	knot | nsd) rows+=("$server") ;;
	*)
		echo "scale: SERVERS: $server is none of grpc-config-dns, knot, nsd" >&2
		exit 2
		;;
	esac
done
want_etcd=
[[ " ${rows[*]} " == *" ours/etcd/"* ]] && want_etcd=1

need=()
command -v dnsperf >/dev/null || need+=(dnsperf)
command -v knotd >/dev/null || need+=(knot)
command -v nsd >/dev/null || need+=(nsd)
command -v dig >/dev/null || need+=(dnsutils)
command -v curl >/dev/null || need+=(curl)
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
[[ -n $want_etcd ]] && internal/etcdtest/install.sh

tmp=$(mktemp -d)
pid=
etcd_pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null || true
	[[ -n $etcd_pid ]] && kill "$etcd_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/grpc-config-dns" ./cmd/grpc-config-dns
go build -o "$tmp/fleetgen" ./bench/fleetgen
go build -o "$tmp/storebench" ./bench/storebench
echo "scale: commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (and changes not committed)'); $(nproc) cores; $(uptime)" >&2

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
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
stop_server() {
	kill "$pid" && wait "$pid" 2>/dev/null || true
	pid=
}

# shape_flags SHAPE: fleetgen's flags for it; ext SHAPE: its file's.
shape_flags() {
	case $1 in
	yaml) echo "" ;;
	json) echo "-format json" ;;
	policies) echo "-policies" ;;
	json-policies) echo "-format json -policies" ;;
	esac
}
ext() { [[ $1 == json* ]] && echo json || echo yaml; }
# store_loc MODE SHAPE: the store of that row for the current N.
store_loc() {
	case $1 in
	embedded) echo "$tmp/store-$n-$2" ;;
	etcd) echo "etcd://127.0.0.1:$etcd_port/fleet-$n-$2" ;;
	esac
}

if [[ -n $want_etcd ]]; then
	etcd_port=$(free_port)
	etcd_peer=$(free_port)
	etcd --data-dir "$tmp/etcd" --name scale --listen-client-urls "http://127.0.0.1:$etcd_port" \
		--advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" --initial-cluster "scale=http://127.0.0.1:$etcd_peer" \
		--quota-backend-bytes 8589934592 --log-level warn >"$tmp/etcd.log" 2>&1 &
	etcd_pid=$!
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$etcd_port/health" >/dev/null && break
		sleep 0.2
	done
	curl -sf "http://127.0.0.1:$etcd_port/health" >/dev/null || {
		echo "scale: etcd did not start:" >&2
		cat "$tmp/etcd.log" >&2
		exit 1
	}
	echo "scale: $(etcd --version | head -1) on 127.0.0.1:$etcd_port" >&2
fi

# start_server ROW PORT: starts ROW answering DNS on PORT (ours in a store
# mode: its admin API on $admin).
start_server() {
	local row=$1 port=$2 mode shape
	case $row in
	ours/file/*)
		shape=${row#ours/file/}
		"$tmp/grpc-config-dns" serve --config "$tmp/live-$shape.$(ext "$shape")" --listen "127.0.0.1:$port" \
			--state "$tmp/live-$shape.serial" --log-level info >/dev/null 2>"$tmp/ours.log" &
		;;
	ours/*)
		IFS=/ read -r _ mode shape <<<"$row"
		"$tmp/grpc-config-dns" serve --store "$(store_loc "$mode" "$shape")" --listen "127.0.0.1:$port" \
			--admin "127.0.0.1:$admin" --log-level info >/dev/null 2>"$tmp/ours.log" &
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

# import_fleet ROW: a fresh store of a store row, loaded by `import` of
# version a of its shape; sets IMPORTED[ROW] to the seconds the import
# took, or SKIPPED[ROW] to why the row cannot be measured.
import_fleet() {
	local row=$1 mode shape t0 took served
	IFS=/ read -r _ mode shape <<<"$row"
	[[ $mode == embedded ]] && rm -rf "$(store_loc "$mode" "$shape")"
	port=$(free_port)
	admin=$(free_port)
	start_server "$row" "$port"
	for _ in $(seq 300); do
		curl -sf "http://127.0.0.1:$admin/readyz" >/dev/null && break
		sleep 0.1
	done
	t0=$(now)
	if ! "$tmp/grpc-config-dns" import --config "$tmp/fleet-$shape-a.$(ext "$shape")" --server "http://127.0.0.1:$admin" >"$tmp/import.log" 2>&1; then
		took=$(since "$t0")
		SKIPPED[$row]="import failed after ${took}s: $(grep -v '^services/\|created (version' "$tmp/import.log" | head -3 | tr '\n' ' ')"
		echo "scale: $row: ${SKIPPED[$row]}" >&2
		tail -5 "$tmp/import.log" >&2
		stop_server
		return
	fi
	took=$(since "$t0")
	wait_txt "$port" "$last" "Service$((n - 1))"
	served=$(since "$t0")
	echo "scale: $row: import ${took}s, the last service answered ${served}s after the import started ($(tail -1 "$tmp/import.log"))" >&2
	IMPORTED[$row]=$took
	stop_server
}

# first_start ROW: starts ROW on version a of the fleet of N, with no
# state (a first start; a store row: on its loaded store), on a new port
# ($port), and adds the seconds to its last service's TXT answer to
# STARTED[ROW].
first_start() {
	local row=$1 shape t0
	case $row in
	ours/file/*)
		shape=${row#ours/file/}
		rm -f "$tmp/live-$shape.serial"
		cp "$tmp/fleet-$shape-a.$(ext "$shape")" "$tmp/live-$shape.$(ext "$shape")"
		;;
	knot | nsd) cp "$tmp/fleet-yaml-a.zone" "$tmp/fleet.test.zone" ;;
	esac
	port=$(free_port)
	admin=$(free_port)
	t0=$(now)
	start_server "$row" "$port"
	wait_txt "$port" "$last" "Service$((n - 1))"
	STARTED[$row]+="$(since "$t0") "
}

# prepare ROW VERSION: write, untimed, the config (ours, file), the
# service's object (ours, store) or zone file (Knot, NSD) of version V
# beside the live one: even versions have every timeout 1s, odd ones
# service N/2 at 2s; the zone files carry serial V+1.
prepare() {
	local row=$1 v=$2 src=a shape=${1##*/}
	((v % 2)) && src=b
	case $row in
	ours/file/*) cp "$tmp/fleet-$shape-$src.$(ext "$shape")" "$tmp/next" ;;
	ours/*) cp "$tmp/object-$shape-$src.json" "$tmp/next" ;;
	*) sed "0,/ 1 *; serial/s// $((v + 1)) ; serial/" "$tmp/fleet-yaml-$src.zone" >"$tmp/next" ;;
	esac
}

# publish ROW: put the prepared version live and tell the server (run in
# a shell of its own by answered.py: it reads tmp, pid, admin and half).
publish() {
	case $1 in
	ours/file/*)
		mv "$tmp/next" "$tmp/live-${1#ours/file/}.$([[ $1 == */json* ]] && echo json || echo yaml)"
		kill -HUP "$pid"
		;;
	ours/*)
		curl -sSf -o /dev/null -X PUT --data-binary @"$tmp/next" "http://127.0.0.1:$admin/v1/zones/fleet.test/services/svc$half"
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

# label ROW: how the table names it.
label() {
	case $1 in
	ours/*)
		local mode shape
		IFS=/ read -r _ mode shape <<<"$1"
		printf '%-16s %-9s %-13s' grpc-config-dns "$mode" "$shape"
		;;
	*) printf '%-16s %-9s %-13s' "$1" - - ;;
	esac
}

declare -A R NOT
header=$(printf '%-8s %-16s %-9s %-13s %8s %9s %7s %7s %9s %7s %10s %6s %9s %7s %8s' N server mode shape import start peak rss change rss10 "qps(load)" lost restart rssR "put p99")
echo "$header" >&2
for n in $SIZES; do
	half=$((n / 2))
	changed="_grpc_config.svc$half.fleet.test"
	last="_grpc_config.svc$((n - 1)).fleet.test"
	awk -v n="$n" 'BEGIN { srand(1); for (i = 0; i < 100000; i++) printf "_grpc_config.svc%d.fleet.test TXT\n", int(rand() * n) }' >"$tmp/queries"
	for shape in yaml $SHAPES; do
		for v in a b; do
			change=-1
			[[ $v == b ]] && change=$half
			# shellcheck disable=SC2046 # the flags are words
			"$tmp/fleetgen" -n "$n" -change "$change" $(shape_flags "$shape") >"$tmp/fleet-$shape-$v.$(ext "$shape")"
			"$tmp/fleetgen" -n "$n" -change "$change" -object "$half" $(shape_flags "$shape") >"$tmp/object-$shape-$v.json"
		done
	done
	for v in a b; do
		"$tmp/grpc-config-dns" zone --config "$tmp/fleet-yaml-$v.yaml" --serial 1 >"$tmp/fleet-yaml-$v.zone" 2>/dev/null
	done
	declare -A IMPORTED=() STARTED=() SKIPPED=()
	for row in "${rows[@]}"; do
		case $row in ours/embedded/* | ours/etcd/*) import_fleet "$row" ;; esac
	done
	# First starts, the rows taking turns: all but the last of each row's
	# are here, the last starts the run below.
	for ((i = 1; i < STARTS; i++)); do
		for row in "${rows[@]}"; do
			[[ -z ${SKIPPED[$row]:-} ]] || continue
			first_start "$row"
			stop_server
		done
	done
	for row in "${rows[@]}"; do
		if [[ -n ${SKIPPED[$row]:-} ]]; then
			printf '%-8s %s  not measured: %s\n' "$n" "$(label "$row")" "${SKIPPED[$row]}" >&2
			NOT[$n,$row]=${SKIPPED[$row]}
			continue
		fi
		first_start "$row"
		start=$(tr ' ' '\n' <<<"${STARTED[$row]}" | sort -n | awk 'NF { v[++n] = $1 } END { printf "%.2f", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }')
		echo "scale: $row first starts (s): ${STARTED[$row]}" >&2
		peak=$(pss "$pid")
		sleep 3
		rss=$(pss "$pid")
		# One change alone, timed by one process that publishes and then
		# asks every millisecond (a dig per poll costs 20 ms).
		prepare "$row" 1
		reload=$(python3 bench/answered.py "$port" "$changed" 'timeout[^0-9]{1,8}2(\.0+)?s' -- \
			env tmp="$tmp" pid="$pid" admin="$admin" half="$half" bash -c "$(declare -f publish); publish $row")
		# Changes under load. dnsperf's sockets get 4 MiB buffers (-b), as
		# the servers' have: with the default, the answers it had not read
		# yet while a reload took both cores overflowed them, and dnsperf
		# counted them lost (62 and 92 in two runs of ours/file/yaml;
		# /proc/net/udp showed the drops on dnsperf's sockets, none on the
		# server's).
		dnsperf -b 4096 -s 127.0.0.1 -p "$port" -d "$tmp/queries" -Q "$LOAD_QPS" -l $((RELOADS * 3 + 2)) -c 4 -q 500 >"$tmp/dnsperf.out" 2>&1 &
		perf=$!
		sleep 1
		for v in $(seq 2 $((RELOADS + 1))); do
			prepare "$row" "$v"
			publish "$row"
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
		[[ -n $qps && -n $lost ]] || echo "scale: $row: dnsperf said nothing of its queries:" "$(tail -3 "$tmp/dnsperf.out")" >&2
		qps=${qps:--} lost=${lost:--}
		stop_server
		# A restart: on the same config, or the same store.
		t0=$(now)
		start_server "$row" "$port"
		wait_txt "$port" "$last" "Service$((n - 1))"
		restart=$(since "$t0")
		sleep 3
		rssR=$(pss "$pid")
		[[ $row == ours/etcd/* ]] && echo "scale: $row: etcd's own memory (PSS) $(pss "$etcd_pid")MB" >&2
		stop_server
		imported=- putp99=-
		case $row in
		ours/embedded/* | ours/etcd/*)
			imported=${IMPORTED[$row]}
			if ((PUT_SAMPLES > 0)); then
				IFS=/ read -r _ mode shape <<<"$row"
				if "$tmp/storebench" -bin "$tmp/grpc-config-dns" -n "$n" -store "$(store_loc "$mode" "$shape")" \
					-ops dns -dns-samples "$PUT_SAMPLES" >"$tmp/storebench.out" 2>&1; then
					putp99=$(awk '$1 == "PUTDNS" { printf "%.1f", $6 }' "$tmp/storebench.out")
					echo "scale: $row:" $(grep -E '^(DNS|PUTDNS)' "$tmp/storebench.out" | tr -s ' ') >&2
				else
					echo "scale: $row: storebench failed:" "$(tail -3 "$tmp/storebench.out")" >&2
				fi
			fi
			if [[ $row == ours/embedded/* ]]; then rm -rf "$(store_loc "$mode" "$shape")"; fi
			;;
		esac
		printf '%-8s %s %8s %8ss %5sMB %5sMB %8ss %5sMB %10s %6s %8ss %5sMB %8s\n' "$n" "$(label "$row")" \
			"$([[ $imported == - ]] && echo - || echo "${imported}s")" "$start" "$peak" "$rss" "$reload" "$rss10" "$qps" "$lost" \
			"$restart" "$rssR" "$([[ $putp99 == - || -z $putp99 ]] && echo - || echo "${putp99}ms")" >&2
		R[$n,$row]="$start $rss $reload $rss10 $qps $peak $restart $rssR $imported ${putp99:--} $lost"
	done
done
echo "scale: done; $(uptime)" >&2

# ratio A B: A/B with two decimals, - when either is missing.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }

echo
echo "ratios, grpc-config-dns / Knot (/ NSD); lower is better but for qps:"
for n in $SIZES; do
	for row in "${rows[@]}"; do
		[[ $row == ours/* && -n ${R[$n,$row]:-} ]] || continue
		for other in knot nsd; do
			[[ -n ${R[$n,$other]:-} ]] || continue
			read -r s1 r1 l1 m1 q1 p1 t1 u1 _ <<<"${R[$n,$row]}"
			read -r s2 r2 l2 m2 q2 p2 t2 u2 _ <<<"${R[$n,$other]}"
			printf '  N=%-7s %-22s vs %-5s start x%s  peak x%s  rss x%s  change x%s  rss after changes x%s (x%s its own rss)  qps under changes x%s  restart x%s  rss after restart x%s\n' \
				"$n" "${row#ours/}" "$other" "$(ratio "$s1" "$s2")" "$(ratio "$p1" "$p2")" "$(ratio "$r1" "$r2")" "$(ratio "$l1" "$l2")" \
				"$(ratio "$m1" "$m2")" "$(ratio "$m1" "$r1")" "$(ratio "$q1" "$q2")" "$(ratio "$t1" "$t2")" "$(ratio "$u1" "$u2")"
		done
	done
done
echo
echo "ratios, each shape / the yaml row of its mode:"
for n in $SIZES; do
	for row in "${rows[@]}"; do
		[[ $row == ours/* && $row != */yaml && -n ${R[$n,$row]:-} ]] || continue
		base=${row%/*}/yaml
		[[ -n ${R[$n,$base]:-} ]] || continue
		read -r s1 r1 l1 m1 q1 p1 t1 u1 i1 d1 _ <<<"${R[$n,$row]}"
		read -r s2 r2 l2 m2 q2 p2 t2 u2 i2 d2 _ <<<"${R[$n,$base]}"
		printf '  N=%-7s %-22s import x%s  start x%s  peak x%s  rss x%s  change x%s  rss after changes x%s  qps x%s  restart x%s  rss after restart x%s  put p99 x%s\n' \
			"$n" "${row#ours/}" "$(ratio "$i1" "$i2")" "$(ratio "$s1" "$s2")" "$(ratio "$p1" "$p2")" "$(ratio "$r1" "$r2")" "$(ratio "$l1" "$l2")" \
			"$(ratio "$m1" "$m2")" "$(ratio "$q1" "$q2")" "$(ratio "$t1" "$t2")" "$(ratio "$u1" "$u2")" "$(ratio "$d1" "$d2")"
	done
done
echo
echo "targets (issue): start, rss ≤ 2× Knot; file: change ≤ 0.1 s, rss10 ≤ 1.1× rss; store: put p99 ≤ 50 ms,"
echo "import ≤ 10 s (embedded), ≤ 60 s (etcd); 0 lost; json/policies: import, start, rss, change, rss10, put p99 ≤ 1.3× yaml"
for n in $SIZES; do
	for row in "${rows[@]}"; do
		if [[ -n ${NOT[$n,$row]:-} ]]; then
			printf '  N=%-7s %-22s not measured: %s\n' "$n" "${row#ours/}" "${NOT[$n,$row]}"
			continue
		fi
		[[ $row == ours/* && -n ${R[$n,$row]:-} ]] || continue
		IFS=/ read -r _ mode shape <<<"$row"
		base=ours/$mode/yaml
		miss=()
		read -r s1 r1 l1 m1 _ _ _ _ i1 d1 lost <<<"${R[$n,$row]}"
		if [[ -n ${R[$n,knot]:-} ]]; then
			read -r s2 r2 _ <<<"${R[$n,knot]}"
			awk -v r="$(ratio "$s1" "$s2")" 'BEGIN { exit !(r > 2) }' && miss+=("start x$(ratio "$s1" "$s2") Knot")
			awk -v r="$(ratio "$r1" "$r2")" 'BEGIN { exit !(r > 2) }' && miss+=("rss x$(ratio "$r1" "$r2") Knot")
		else
			miss+=("(no Knot row)")
		fi
		[[ $lost =~ ^[0-9]+$ ]] && ((lost > 0)) && miss+=("$lost lost")
		if [[ $mode == file ]]; then
			awk -v v="$l1" 'BEGIN { exit !(v > 0.1) }' && miss+=("change ${l1}s")
			awk -v r="$(ratio "$m1" "$r1")" 'BEGIN { exit !(r > 1.1) }' && miss+=("rss10 x$(ratio "$m1" "$r1") rss")
		else
			[[ $d1 == - ]] && miss+=("(no put p99)")
			awk -v v="$d1" 'BEGIN { exit !(v != "-" && v > 50) }' && miss+=("put p99 ${d1}ms")
			limit=10
			[[ $mode == etcd ]] && limit=60
			awk -v v="$i1" -v l="$limit" 'BEGIN { exit !(v > l) }' && miss+=("import ${i1}s")
		fi
		if [[ $shape != yaml && -n ${R[$n,$base]:-} ]]; then
			read -r s2 r2 l2 m2 _ _ _ _ i2 d2 _ <<<"${R[$n,$base]}"
			for f in "import $i1 $i2" "start $s1 $s2" "rss $r1 $r2" "change $l1 $l2" "rss10 $m1 $m2" "put-p99 $d1 $d2"; do
				read -r name a b <<<"$f"
				r=$(ratio "$a" "$b")
				awk -v r="$r" 'BEGIN { exit !(r != "-" && r > 1.3) }' && miss+=("$name x$r yaml")
			done
		fi
		if ((${#miss[@]})); then
			printf '  N=%-7s %-22s misses: %s\n' "$n" "${row#ours/}" "$(IFS=';'; echo "${miss[*]}" | sed 's/;/; /g')"
		else
			printf '  N=%-7s %-22s all met\n' "$n" "${row#ours/}"
		fi
	done
done
