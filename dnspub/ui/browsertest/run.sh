#!/usr/bin/env bash
# Browser test of the web view (GET /ui/): headless Chromium against a
# running serve. Installs Debian's chromium when run as root and it is
# missing, then requires it. Listens on 127.0.0.1 only. Screenshots are
# kept in $CI_ARTIFACTS/ui (default .ci/artifacts/ui).
set -euo pipefail
cd "$(dirname "$0")/../../.."

if ! command -v chromium >/dev/null; then
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "browsertest: chromium is missing: install Debian's chromium package, or run this script as root" >&2
		exit 1
	fi
	echo "browsertest: installing chromium" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

export CI_ARTIFACTS="${CI_ARTIFACTS:-$PWD/.ci/artifacts}"
BROWSERTEST=1 exec go test -count=1 -timeout 300s -v ./dnspub/ui/browsertest/ "$@"
