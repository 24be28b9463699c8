#!/usr/bin/env bash
# ZONEMD's cost (docs/dnssec.md): for a signed zone of N services of
# bench/fleetgen (ECDSA P-256, one CSK), ZONEMD off then on in one run,
# the start → a signed answer for the last service, the RSS 3 s later,
# and one changed service → its signed answer as bench/signed.sh
# measures it (config rewritten by rename, SIGHUP, dig polling
# included), CHANGES times, with the reload's time as the server logs
# it. Run by hand, not in CI.
#
#   bench/zonemd.sh              # N=100000
#   N=20000 CHANGES=5 bench/zonemd.sh
#   MODES="on off" bench/zonemd.sh   # the other order
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100000}
CHANGES=${CHANGES:-10}
MODES=${MODES:-off on}
command -v dig >/dev/null || { echo "zonemd: needs dig (Debian: dnsutils)" >&2; exit 1; }
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
port=$((20000 + RANDOM % 20000))
now() { date +%s.%N; }
rss() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
last="_grpc_config.svc$((N - 1)).fleet.test"
for mode in $MODES; do
	dnssec='dnssec: {}'
	[[ $mode == on ]] && dnssec='dnssec: {zonemd: true}'
	"$tmp/fleetgen" -n "$N" | sed "s/^    ttl: 300\$/    ttl: 300\n    $dnssec/" >"$tmp/fleet.yaml"
	rm -rf "$tmp/fleet.yaml.serial"
	start=$(now)
	"$tmp/grpc-config-dns" serve --config "$tmp/fleet.yaml" --listen "127.0.0.1:$port" 2>"$tmp/ours.$mode.log" &
	pid=$!
	for _ in $(seq 30000); do
		dig +dnssec +tcp +time=1 +tries=1 @127.0.0.1 -p "$port" TXT "$last" 2>/dev/null | grep -q 'RRSIG.TXT' && break
		sleep 0.02
	done
	took=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
	sleep 3
	mem=$(rss "$pid")
	times=()
	for c in $(seq "$CHANGES"); do
		svc=$((c * 997 % N))
		"$tmp/fleetgen" -n "$N" -change "$svc" | sed "s/^    ttl: 300\$/    ttl: 300\n    $dnssec/" >"$tmp/next.yaml"
		mv "$tmp/next.yaml" "$tmp/fleet.yaml"
		t0=$(now)
		kill -HUP "$pid"
		for _ in $(seq 5000); do
			out=$(dig +dnssec +tcp +time=1 +tries=1 @127.0.0.1 -p "$port" TXT "_grpc_config.svc$svc.fleet.test" 2>/dev/null || true)
			[[ $out == *'timeout\":\"2s'* && $out == *RRSIG* ]] && break
			sleep 0.005
		done
		times+=("$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')")
	done
	took_reload=$(grep 'why=reload took=' "$tmp/ours.$mode.log" | sed 's/.*took=//' | awk '{ v=$1; if (v ~ /ms$/) { sub(/ms$/, "", v); v/=1000 } else { sub(/s$/, "", v) } s+=v; n++ } END { if (n) printf "%.3f", s/n }')
	md=$(dig +short +tcp @127.0.0.1 -p "$port" ZONEMD fleet.test | cut -c1-40)
	printf 'zonemd=%-3s start→signed %6s s  rss %4s MB  change→signed: mean %s s, each %s (reload in the server: mean %s s)  ZONEMD: %s\n' "$mode" "$took" "$mem" \
		"$(printf '%s\n' "${times[@]}" | awk '{s+=$1} END {printf "%.3f", s/NR}')" "${times[*]}" "$took_reload" "${md:-none}"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
done
