#!/usr/bin/env bash
# Signed-zone benchmark of the publisher against Knot DNS, one after the
# other in one run, on the same fleet of N services (bench/fleetgen):
# ECDSA P-256, one combined signing key, NSEC. Run by hand, not in CI.
#
# For each server: the time from its start to a signed answer (with an
# RRSIG) for the last service's config, and its RSS 3 s later; for ours,
# also the time from a changed service written (config file, SIGHUP) to
# its signed answer, over CHANGES changes; then, both servers pinned to
# one core, the CPU time per answered query of DO=1 TXT queries for
# random services (dnsperf -D), DURATION seconds each, ours and Knot's in
# turn, ROUNDS times (the ratio is the median of the rounds').
#
#   bench/signed.sh              # N=100000
#   N=20000 DURATION=5 bench/signed.sh
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-100000}
DURATION=${DURATION:-10}
CHANGES=${CHANGES:-5}
ROUNDS=${ROUNDS:-5}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}

need=()
command -v dnsperf >/dev/null || need+=(dnsperf)
command -v knotd >/dev/null || need+=(knot)
command -v dig >/dev/null || need+=(dnsutils)
if ((${#need[@]})); then
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "signed: missing ${need[*]}: install them or run as root on Debian" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

tmp=$(mktemp -d)
pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null || true
	kill $(jobs -p) 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/grpc-config-dns" ./cmd/grpc-config-dns
go build -o "$tmp/fleetgen" ./bench/fleetgen
"$tmp/fleetgen" -n "$N" | sed 's/^    ttl: 300$/    ttl: 300\n    dnssec: {}/' >"$tmp/fleet.yaml"
grep -q 'dnssec: {}' "$tmp/fleet.yaml"
# Knot's zone: the same records, unsigned (Knot signs them itself).
sed '/dnssec: {}/d' "$tmp/fleet.yaml" >"$tmp/plain.yaml"
"$tmp/grpc-config-dns" zone --config "$tmp/plain.yaml" --state - >"$tmp/fleet.test.zone"

last="_grpc_config.svc$((N - 1)).fleet.test"
port=$((20000 + RANDOM % 20000))
now() { date +%s.%N; }
rss() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# signed_answer NAME: waits (at most 10 minutes) for a signed answer.
signed_answer() {
	for _ in $(seq 30000); do
		if dig +dnssec +tcp +time=1 +tries=1 @127.0.0.1 -p "$port" TXT "$1" 2>/dev/null | grep -q 'RRSIG.TXT'; then
			return 0
		fi
		sleep 0.02
	done
	echo "signed: no signed answer for $1" >&2
	exit 1
}

for i in $(seq 2000); do echo "_grpc_config.svc$((RANDOM * 32768 % N + RANDOM % N)).fleet.test TXT"; done | awk -v n="$N" '{ sub(/svc[0-9]+/, "svc" (NR * 7919 % n)); print }' >"$tmp/queries"

qcpu() { # qcpu PID PORT: CPU microseconds per answered DO TXT query
	local before after out done
	before=$(cpu_ticks "$1")
	out=$(taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$2" -d "$tmp/queries" -l "$DURATION" -D -c 4 -q 200 2>&1)
	after=$(cpu_ticks "$1")
	done=$(awk '/Queries completed/ {print $3}' <<<"$out")
	awk -v t=$((after - before)) -v hz="$hz" -v n="$done" 'BEGIN { printf "%.2f", n ? t / hz * 1e6 / n : 0 }'
}

declare -A R PID PORT
for server in grpc-config-dns knot; do
	port=$((20000 + RANDOM % 20000))
	start=$(now)
	case $server in
	grpc-config-dns)
		rm -rf "$tmp/fleet.yaml.keys" "$tmp/fleet.yaml.serial"
		taskset -c "$SERVER_CPU,$CLIENT_CPU" "$tmp/grpc-config-dns" serve --config "$tmp/fleet.yaml" --listen "127.0.0.1:$port" 2>"$tmp/ours.log" &
		;;
	knot)
		mkdir -p "$tmp/knot"
		cat >"$tmp/knot.conf" <<KNOT
server:
    rundir: "$tmp/knot"
    listen: 127.0.0.1@$port
control:
    listen: "$tmp/knot/knot.sock"
database:
    storage: "$tmp/knot"
log:
  - target: stderr
    any: warning
policy:
  - id: bench
    algorithm: ecdsap256sha256
    single-type-signing: on
    nsec3: off
zone:
  - domain: fleet.test
    file: "$tmp/fleet.test.zone"
    dnssec-signing: on
    dnssec-policy: bench
    journal-content: none
    zonefile-sync: -1
KNOT
		taskset -c "$SERVER_CPU,$CLIENT_CPU" knotd -c "$tmp/knot.conf" 2>"$tmp/knot.log" &
		;;
	esac
	pid=$!
	signed_answer "$last"
	took=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
	sleep 3
	mem=$(rss "$pid")
	change=-
	if [[ $server == grpc-config-dns ]]; then
		total=0
		for c in $(seq "$CHANGES"); do
			svc=$((c * 997 % N))
			# The fleet with that service's timeout 2s (the one before it
			# back to 1s), written by rename as an editor does.
			"$tmp/fleetgen" -n "$N" -change "$svc" | sed 's/^    ttl: 300$/    ttl: 300\n    dnssec: {}/' >"$tmp/next.yaml"
			mv "$tmp/next.yaml" "$tmp/fleet.yaml"
			# SIGHUP, then one process polls every millisecond (a dig
			# per poll costs 20 ms, more than what it measures) until
			# the answer to DO=1 holds the new timeout and an RRSIG
			# (type 46) after it.
			took1=$(python3 bench/answered.py --do "$port" "_grpc_config.svc$svc.fleet.test" 'timeout":"2s.*\x00\x2e\x00\x01' -- kill -HUP "$pid")
			total=$(awk -v s="$total" -v t="$took1" 'BEGIN { print s + t }')
		done
		change=$(awk -v s="$total" -v n="$CHANGES" 'BEGIN { printf "%.3f", s / n }')
	fi
	taskset -a -pc "$SERVER_CPU" "$pid" >/dev/null
	R[$server]="$took $mem $change"
	PID[$server]=$pid
	PORT[$server]=$port
	printf '%-16s start→signed %7s s   rss %5s MB   change→signed %6s s\n' "$server" "$took" "$mem" "$change"
done
# CPU per query: both servers up, pinned to the same core, queried in
# turn ROUNDS times (ours, Knot, ours, …), so that the machine's drift
# over minutes (a shared VM: one server's figure moves 5-10% between
# two back-to-back runs) falls on both; the ratio is the median of the
# rounds'.
ratios=()
for r in $(seq "$ROUNDS"); do
	u1=$(qcpu "${PID[grpc-config-dns]}" "${PORT[grpc-config-dns]}")
	u2=$(qcpu "${PID[knot]}" "${PORT[knot]}")
	ratios+=("$(awk -v a="$u1" -v b="$u2" 'BEGIN { printf "%.3f", a / b }')")
	printf 'round %d: DO TXT CPU per query: grpc-config-dns %s us, Knot %s us, ratio %s\n' "$r" "$u1" "$u2" "${ratios[-1]}"
done
for server in grpc-config-dns knot; do
	kill "${PID[$server]}"
	wait "${PID[$server]}" 2>/dev/null || true
done
pid=
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
read -r s1 r1 _ <<<"${R[grpc-config-dns]}"
read -r s2 r2 _ <<<"${R[knot]}"
awk -v s1="$s1" -v s2="$s2" -v r1="$r1" -v r2="$r2" -v u="$median" 'BEGIN {
	printf "ratios, grpc-config-dns / Knot: start→signed %.2f (target ≤ 0.5), rss %.2f (≤ 2), DO TXT CPU/query %.2f, median of the rounds (≤ 1.0)\n", s1 / s2, r1 / r2, u }'
