#!/usr/bin/env bash
# Browser test of the web view (GET /ui/): headless Chromium against a
# running serve (a config file, and a store behind a token), and HTML Tidy
# as a validator. Installs Debian's chromium
# and tidy when run as root and they are missing, then requires them. Listens on 127.0.0.1 only. Screenshots are
# kept in $CI_ARTIFACTS/ui (default .ci/artifacts/ui).
set -euo pipefail
cd "$(dirname "$0")/../../.."

need=()
command -v chromium >/dev/null || need+=(chromium)
command -v tidy >/dev/null || need+=(tidy)
if ((${#need[@]})); then
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "browsertest: missing ${need[*]}: install them (Debian packages), or run this script as root" >&2
		exit 1
	fi
	echo "browsertest: installing ${need[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

export CI_ARTIFACTS="${CI_ARTIFACTS:-$PWD/.ci/artifacts}"
BROWSERTEST=1 exec go test -count=1 -timeout 300s -v ./dnspub/ui/browsertest/ "$@"
