#!/usr/bin/env bash
# Tool tests of the publisher: dig and kdig queries, named-checkzone on the
# output of `zone`, and BIND 9, Knot DNS and CoreDNS as secondaries (AXFR,
# NOTIFY, IXFR where they do it, answers byte for byte; BIND also follows
# writes made through the admin API of `serve --store`). Installs what it
# needs on Debian when run as root (CoreDNS with go install, which takes a
# few minutes the first time; later runs reuse the binary in .ci/bin), then
# requires every tool (a missing one fails instead of skipping).
# Listens on 127.0.0.1 only. Takes about 20 seconds once the tools are in.
set -euo pipefail
cd "$(dirname "$0")/../.."

need=()
command -v dig >/dev/null || need+=(dnsutils)
command -v kdig >/dev/null || need+=(knot-dnsutils)
command -v named >/dev/null || need+=(bind9)
command -v named-checkzone >/dev/null || need+=(bind9-utils)
command -v knotd >/dev/null || need+=(knot)
command -v delv >/dev/null || need+=(bind9-dnsutils)
command -v dnssec-verify >/dev/null || need+=(bind9-utils)
command -v ldns-verify-zone >/dev/null || need+=(ldnsutils)
command -v unbound >/dev/null || need+=(unbound)
if ((${#need[@]})); then
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "tooltest: missing ${need[*]}: install them (Debian/Ubuntu packages) or run this script as root" >&2
		exit 1
	fi
	echo "tooltest: installing ${need[*]}" >&2
	# Keep the packages' own services (named on port 53) from starting.
	made_policy=
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		made_policy=1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	[[ -n $made_policy ]] && rm -f /usr/sbin/policy-rc.d
fi

COREDNS_VERSION=v1.15.0
export GOBIN="${GOBIN:-$PWD/.ci/bin}"
export PATH="$GOBIN:$PATH"
if ! coredns -version 2>/dev/null | grep -q "CoreDNS-${COREDNS_VERSION#v}"; then
	echo "tooltest: building CoreDNS $COREDNS_VERSION (go install; a few minutes)" >&2
	go install "github.com/coredns/coredns@$COREDNS_VERSION"
fi

TOOLTEST_REQUIRE=1 exec go test -tags tooltest -count=1 -timeout 180s -v ./dnspub/tooltest/ "$@"
